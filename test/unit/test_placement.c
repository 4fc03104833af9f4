/*
 * test_placement.c - unit tests for rank placement: spreading by free CPUs, a busy node
 * avoided, ppn, overbooking, blocks of ranks per node in partition order, refusals.
 */
#include "../../psid/placement.h"
#include "unit.h"

#include <string.h>

static void test_spread(void)
{
    struct place_node n[4] = {{0, 2, 0, 0}, {1, 2, 0, 0}, {2, 2, 0, 0}, {3, 2, 0, 0}};
    uint32_t out[8];
    char why[128];
    CU_ASSERT_EQUAL_FATAL(place_ranks(n, 4, 8, 0, false, out, why, sizeof why), 0);
    uint32_t want[8] = {0, 0, 1, 1, 2, 2, 3, 3}; /* two per node, in blocks */
    CU_ASSERT_EQUAL(memcmp(out, want, sizeof want), 0);
    CU_ASSERT_EQUAL(place_ranks(n, 4, 9, 0, false, out, why, sizeof why), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(why, "overbook"));
    uint32_t many[9];
    CU_ASSERT_EQUAL(place_ranks(n, 4, 9, 0, true, many, why, sizeof why), 0);
    /* overbooked evenly: the ninth rank goes to the first of the equally busy nodes */
    uint32_t want9[9] = {0, 0, 0, 1, 1, 2, 2, 3, 3};
    CU_ASSERT_EQUAL(memcmp(many, want9, sizeof want9), 0);
}

static void test_busy_avoided(void)
{
    /* node 1 runs a CPU-bound program (load 2.0): a 2-rank job goes elsewhere */
    struct place_node n[3] = {{0, 2, 0, 0}, {1, 2, 0, 2000}, {2, 2, 0, 0}};
    uint32_t out[2];
    char why[128];
    CU_ASSERT_EQUAL_FATAL(place_ranks(n, 3, 2, 0, false, out, why, sizeof why), 0);
    CU_ASSERT(out[0] != 1 && out[1] != 1);
    /* tasks already there (or in flight) count too */
    struct place_node m[2] = {{5, 4, 3, 0}, {6, 4, 0, 0}};
    CU_ASSERT_EQUAL_FATAL(place_ranks(m, 2, 2, 0, false, out, why, sizeof why), 0);
    CU_ASSERT_EQUAL(out[0], 6);
    CU_ASSERT_EQUAL(out[1], 6);
}

static void test_ppn_and_order(void)
{
    struct place_node n[3] = {{7, 8, 0, 0}, {3, 8, 0, 0}, {9, 8, 0, 0}};
    uint32_t out[5];
    char why[128];
    CU_ASSERT_EQUAL_FATAL(place_ranks(n, 3, 5, 2, false, out, why, sizeof why), 0);
    uint32_t want[5] = {7, 7, 3, 3, 9}; /* at most 2 per node, partition order */
    CU_ASSERT_EQUAL(memcmp(out, want, sizeof want), 0);
    CU_ASSERT_EQUAL(place_ranks(n, 3, 7, 2, true, out, why, sizeof why), -1);
    CU_ASSERT_EQUAL(place_ranks(n, 0, 1, 0, false, out, why, sizeof why), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(why, "no node"));
}

UNIT_SUITE(placement, UNIT_TEST(test_spread), UNIT_TEST(test_busy_avoided),
           UNIT_TEST(test_ppn_and_order))
