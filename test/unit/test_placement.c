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

/* All nodes share one loaded machine (pslocal) or carry the same outside load, above our
 * tasks: the ranks still spread by our tasks, not pile onto the first node. */
static void test_equal_load_spreads(void)
{
    struct place_node n[2] = {{0, 4, 2, 50000}, {1, 4, 0, 50000}};
    uint32_t out[4];
    char why[128];
    CU_ASSERT_EQUAL_FATAL(place_ranks(n, 2, 2, 0, false, out, why, sizeof why), 0);
    CU_ASSERT_EQUAL(out[0], 1); /* node 1 has none of ours yet */
    CU_ASSERT_EQUAL(out[1], 1);
    struct place_node m[2] = {{0, 4, 0, 50000}, {1, 4, 0, 50000}};
    struct place_opts o = {.nmin = 2, .nmax = 2};
    CU_ASSERT_EQUAL_FATAL(place_job(m, 2, 4, &o, out, why, sizeof why), 0);
    unsigned on0 = 0;
    for (int r = 0; r < 4; r++) on0 += out[r] == 0;
    CU_ASSERT_EQUAL(on0, 2); /* 2 and 2, not 3 and 1 */
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

/* srun's -m: block, cyclic, plane=N numbering of the same counts */
static void test_distribution(void)
{
    const uint32_t ids[3] = {5, 6, 7}, count[3] = {3, 2, 3};
    uint32_t out[8];
    place_number(ids, count, 3, 8, PLACE_BLOCK, 0, out);
    uint32_t block[8] = {5, 5, 5, 6, 6, 7, 7, 7};
    CU_ASSERT_EQUAL(memcmp(out, block, sizeof out), 0);
    place_number(ids, count, 3, 8, PLACE_CYCLIC, 0, out);
    uint32_t cyclic[8] = {5, 6, 7, 5, 6, 7, 5, 7}; /* a node that is full is skipped */
    CU_ASSERT_EQUAL(memcmp(out, cyclic, sizeof out), 0);
    place_number(ids, count, 3, 8, PLACE_PLANE, 2, out);
    uint32_t plane[8] = {5, 5, 6, 6, 7, 7, 5, 7};
    CU_ASSERT_EQUAL(memcmp(out, plane, sizeof out), 0);
    /* through place_job: 8 ranks on 4 free nodes of 2 CPUs, cyclic */
    struct place_node n[4] = {{0, 2, 0, 0}, {1, 2, 0, 0}, {2, 2, 0, 0}, {3, 2, 0, 0}};
    struct place_opts o = {.dist = PLACE_CYCLIC};
    char why[160];
    CU_ASSERT_EQUAL_FATAL(place_job(n, 4, 8, &o, out, why, sizeof why), 0);
    uint32_t want[8] = {0, 1, 2, 3, 0, 1, 2, 3};
    CU_ASSERT_EQUAL(memcmp(out, want, sizeof want), 0);
}

/* srun's -N: the fewest of the least busy nodes in [min, max], a rank on each */
static void test_node_count(void)
{
    struct place_node n[4] = {{0, 2, 1, 0}, {1, 2, 0, 0}, {2, 2, 0, 0}, {3, 4, 0, 0}};
    uint32_t out[6];
    char why[160];
    struct place_opts o = {.nmin = 2, .nmax = 2};
    /* two ranks on two nodes: the least busy (1, 2: node 0 has a task; 3 ties 1 and 2 per
     * CPU but comes later), a rank each, in partition order */
    CU_ASSERT_EQUAL_FATAL(place_job(n, 4, 2, &o, out, why, sizeof why), 0);
    CU_ASSERT(out[0] == 1 && out[1] == 2);
    /* 6 ranks on 1 to 3 nodes: two nodes cannot hold them (2 + 2 free), three can */
    o = (struct place_opts){.nmin = 1, .nmax = 3};
    CU_ASSERT_EQUAL_FATAL(place_job(n, 4, 6, &o, out, why, sizeof why), 0);
    uint32_t used[4] = {0};
    for (int r = 0; r < 6; r++) used[out[r]]++;
    CU_ASSERT(used[0] == 0 && used[1] + used[2] + used[3] == 6);
    /* more nodes than ranks, and a count no node set holds */
    o = (struct place_opts){.nmin = 3, .nmax = 3};
    CU_ASSERT_EQUAL(place_job(n, 4, 2, &o, out, why, sizeof why), -1);
    o = (struct place_opts){.nmin = 1, .nmax = 1};
    CU_ASSERT_EQUAL(place_job(n, 4, 5, &o, out, why, sizeof why), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(why, "do not fit 1 to 1 nodes"));
}

/* --exclusive: only nodes that run nothing */
static void test_exclusive(void)
{
    struct place_node n[3] = {{0, 2, 1, 0}, {1, 2, 0, 0}, {2, 2, 1, 0}};
    uint32_t out[3];
    char why[160];
    struct place_opts o = {.exclusive = true};
    CU_ASSERT_EQUAL_FATAL(place_job(n, 3, 2, &o, out, why, sizeof why), 0);
    CU_ASSERT(out[0] == 1 && out[1] == 1);
    CU_ASSERT_EQUAL(place_job(n, 3, 3, &o, out, why, sizeof why), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(why, "--exclusive"));
}

/* -c: used counts CPUs, and a rank placed adds its K CPUs to its node's use, so that a rank
 * of -c 2 on an empty node weighs as much as two CPUs already used elsewhere */
static void test_cpus_per_task(void)
{
    struct place_node n[2] = {{0, 8, 2, 0}, {1, 8, 0, 0}};
    uint32_t out[2];
    char why[160];
    struct place_opts o = {.cpt = 2};
    CU_ASSERT_EQUAL_FATAL(place_job(n, 2, 2, &o, out, why, sizeof why), 0);
    CU_ASSERT(out[0] == 0 && out[1] == 1); /* block numbering: node 0's rank first */
    /* a node with 6 of 8 CPUs held takes one more rank of -c 2, not four */
    struct place_node full[1] = {{0, 8, 6, 0}};
    uint32_t one[2];
    CU_ASSERT_EQUAL(place_job(full, 1, 1, &o, one, why, sizeof why), 0);
    CU_ASSERT_EQUAL(place_job(full, 1, 2, &o, one, why, sizeof why), -1);
}

UNIT_SUITE(placement, UNIT_TEST(test_spread), UNIT_TEST(test_busy_avoided),
           UNIT_TEST(test_equal_load_spreads), UNIT_TEST(test_ppn_and_order),
           UNIT_TEST(test_distribution), UNIT_TEST(test_node_count), UNIT_TEST(test_exclusive),
           UNIT_TEST(test_cpus_per_task))
