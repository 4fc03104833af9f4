/*
 * unit.h - registration of CUnit suites for the test binaries.
 *
 * Each test file declares its suites with UNIT_SUITE(name, tests...) at file scope; main.c
 * runs every registered suite, or only those named on its command line.
 */
#ifndef PSCLUSTER_TEST_UNIT_H
#define PSCLUSTER_TEST_UNIT_H

#include <CUnit/CUnit.h>

struct unit_test {
    const char *name;
    CU_TestFunc fn;
};

void unit_register(const char *suite, const struct unit_test *tests);

#define UNIT_TEST(fn)                                                                              \
    {                                                                                              \
#fn, fn                                                                                    \
    }

/* UNIT_SUITE(suite_name, UNIT_TEST(a), UNIT_TEST(b), ...) */
#define UNIT_SUITE(sname, ...)                                                                     \
    static const struct unit_test sname##_tests[] = {__VA_ARGS__, {0, 0}};                         \
    __attribute__((constructor)) static void sname##_register(void)                                \
    {                                                                                              \
        unit_register(#sname, sname##_tests);                                                      \
    }

#endif
