/*
 * test_logger_exit.c - unit tests for logger/exitcodes.c: wait statuses to exit codes and
 * phrases, spawn errors (127/126), the first failure decides. (Signal names: test_psi_nodes.c.)
 */
#include "../../logger/exitcodes.h"
#include "unit.h"

#include <errno.h>
#include <signal.h>
#include <string.h>

#define EXITED(n)   ((uint32_t)((n) << 8))
#define SIGNALED(n) ((uint32_t)(n))

static void test_status_code(void)
{
    CU_ASSERT_EQUAL(lg_status_code(EXITED(0)), 0);
    CU_ASSERT_EQUAL(lg_status_code(EXITED(3)), 3);
    CU_ASSERT_EQUAL(lg_status_code(EXITED(255)), 255);
    CU_ASSERT_EQUAL(lg_status_code(SIGNALED(SIGSEGV)), 128 + SIGSEGV);
    CU_ASSERT_EQUAL(lg_status_code(SIGNALED(SIGKILL) | 0x80), 128 + SIGKILL);
    CU_ASSERT_EQUAL(lg_spawn_code(ENOENT), 127);
    CU_ASSERT_EQUAL(lg_spawn_code(EACCES), 126);
    CU_ASSERT_EQUAL(lg_spawn_code(ENOEXEC), 126);
    CU_ASSERT_EQUAL(lg_spawn_code(EAGAIN), 1);
}

static void test_status_text(void)
{
    char b[128];
    CU_ASSERT_STRING_EQUAL(lg_status_text(EXITED(3), b, sizeof b), "exited with status 3");
    CU_ASSERT_STRING_EQUAL(lg_status_text(SIGNALED(SIGSEGV), b, sizeof b),
                           "killed by signal 11 (SIGSEGV)");
    CU_ASSERT_STRING_EQUAL(lg_status_text(SIGNALED(SIGABRT) | 0x80, b, sizeof b),
                           "killed by signal 6 (SIGABRT), core dumped");
}

static void test_aggregate(void)
{
    struct lg_exitagg a = {0};
    CU_ASSERT_EQUAL(lg_exitagg_code(&a), 0);
    lg_exitagg_add(&a, 0, 0);
    lg_exitagg_add(&a, 1, 0);
    CU_ASSERT_EQUAL(lg_exitagg_code(&a), 0);
    /* rank 3 segfaults first; the SIGTERMs of the teardown come later and do not count */
    lg_exitagg_add(&a, 3, 128 + SIGSEGV);
    lg_exitagg_add(&a, 2, 128 + SIGTERM);
    lg_exitagg_add(&a, 1, 1);
    CU_ASSERT_EQUAL(lg_exitagg_code(&a), 139);
    CU_ASSERT_EQUAL(a.rank, 3);
    struct lg_exitagg b = {0};
    lg_exitagg_add(&b, 5, LG_EXIT_NOTFOUND);
    CU_ASSERT_EQUAL(lg_exitagg_code(&b), 127);
}

UNIT_SUITE(logger_exit, UNIT_TEST(test_status_code), UNIT_TEST(test_status_text),
           UNIT_TEST(test_aggregate))
