/*
 * runner.c - the CUnit runner shared by unit-tests and rdp-tests.
 *
 * usage: unit-tests|rdp-tests [SUITE...]   runs every registered suite, or the named ones.
 * Exits 0 only if every test passed; CUnit's basic interface prints the summary.
 */
#include "unit.h"

#include <CUnit/Basic.h>
#include <stdio.h>
#include <string.h>

#define MAX_SUITES 128

static struct {
    const char *name;
    const struct unit_test *tests;
} suites[MAX_SUITES];
static int nsuites;

void unit_register(const char *suite, const struct unit_test *tests)
{
    if (nsuites == MAX_SUITES) {
        fprintf(stderr, "unit-tests: more than %d suites\n", MAX_SUITES);
        return;
    }
    suites[nsuites].name = suite;
    suites[nsuites].tests = tests;
    nsuites++;
}

static int wanted(const char *name, int argc, char **argv)
{
    if (argc < 2) return 1;
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], name) == 0) return 1;
    return 0;
}

int main(int argc, char **argv)
{
    if (CU_initialize_registry() != CUE_SUCCESS) return 1;
    for (int i = 0; i < nsuites; i++) {
        if (!wanted(suites[i].name, argc, argv)) continue;
        CU_pSuite s = CU_add_suite(suites[i].name, NULL, NULL);
        if (!s) return 1;
        for (const struct unit_test *t = suites[i].tests; t->name; t++)
            if (!CU_add_test(s, t->name, t->fn)) return 1;
    }
    CU_basic_set_mode(CU_BRM_VERBOSE);
    CU_basic_run_tests();
    unsigned failed = CU_get_number_of_failures() + CU_get_number_of_tests_failed();
    unsigned run = CU_get_number_of_tests_run();
    CU_cleanup_registry();
    return (failed || run == 0) ? 1 : 0;
}
