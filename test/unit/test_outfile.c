/*
 * test_outfile.c - unit tests for logger/outfile.c: srun's filename patterns (every letter,
 * padding, %%, the literal form, unknown ones), its IO modes, and the routes of a job's
 * ranks to distinct files (per rank, per node, shared, stderr following stdout).
 */
#include "../../logger/outfile.h"
#include "unit.h"

#include <errno.h>
#include <string.h>

static const struct lg_patvals vals = {
    .job = "3:1700", .user = "alice", .name = "a.out", .node = "n7", .rank = 12, .nodeidx = 5};

static const char *expand(const char *pat)
{
    static char out[256];
    char err[256];
    CU_ASSERT_FATAL(lg_pat_check(pat, err, sizeof err) >= 0);
    CU_ASSERT_FATAL(lg_pat_expand(pat, &vals, out, sizeof out) == 0);
    return out;
}

static void test_patterns(void)
{
    CU_ASSERT_STRING_EQUAL(expand("plain.txt"), "plain.txt");
    CU_ASSERT_STRING_EQUAL(expand("o-%j.txt"), "o-3:1700.txt");
    CU_ASSERT_STRING_EQUAL(expand("%J"), "3:1700.0");
    CU_ASSERT_STRING_EQUAL(expand("%s-%t-%n-%N"), "0-12-5-n7");
    CU_ASSERT_STRING_EQUAL(expand("%u/%x/%%t"), "alice/a.out/%t");
    CU_ASSERT_STRING_EQUAL(expand("%4t.%2n.%3s"), "0012.05.000");
    CU_ASSERT_STRING_EQUAL(expand("%1t"), "12"); /* a width never cuts */
    CU_ASSERT_STRING_EQUAL(expand("\\\\dir/%t\\"), "dir/%t");
    char err[256];
    CU_ASSERT_EQUAL(lg_pat_check("a%tb", err, sizeof err), LG_PAT_RANK);
    CU_ASSERT_EQUAL(lg_pat_check("%N", err, sizeof err), LG_PAT_NODE);
    CU_ASSERT_EQUAL(lg_pat_check("%n-%t", err, sizeof err), LG_PAT_NODE | LG_PAT_RANK);
    CU_ASSERT_EQUAL(lg_pat_check("%j%%", err, sizeof err), 0);
    /* the value that does not fit */
    char small[8];
    CU_ASSERT_EQUAL(lg_pat_expand("%j-%t", &vals, small, sizeof small), -1);
    CU_ASSERT_EQUAL(errno, ENAMETOOLONG);
}

static void test_bad_patterns(void)
{
    char err[256];
    const char *bad[] = {"%q", "x%", "%A", "a%a", "%12z", "%123456t", ""};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = 0;
        CU_ASSERT_EQUAL(lg_pat_check(bad[i], err, sizeof err), -1);
        CU_ASSERT(err[0] != 0);
    }
    lg_pat_check("o-%q", err, sizeof err);
    CU_ASSERT(strstr(err, "unknown pattern %q") != NULL);
    lg_pat_check("%A", err, sizeof err);
    CU_ASSERT(strstr(err, "array") != NULL);
}

static void test_modes(void)
{
    struct lg_outspec o;
    char err[256];
    CU_ASSERT(lg_outspec_parse("all", &o, err, sizeof err) == 0 && o.kind == LG_OUT_ALL);
    CU_ASSERT(lg_outspec_parse("none", &o, err, sizeof err) == 0 && o.kind == LG_OUT_NONE);
    CU_ASSERT(lg_outspec_parse("3", &o, err, sizeof err) == 0 && o.kind == LG_OUT_RANK &&
              o.rank == 3);
    CU_ASSERT(lg_outspec_parse("3x", &o, err, sizeof err) == 0 && o.kind == LG_OUT_FILE);
    CU_ASSERT(lg_outspec_parse("out-%t", &o, err, sizeof err) == 0 && o.kind == LG_OUT_FILE);
    CU_ASSERT_EQUAL(lg_outspec_parse("out-%y", &o, err, sizeof err), -1);
    CU_ASSERT_EQUAL(lg_outspec_parse("99999999999", &o, err, sizeof err), -1);
}

static const char *name_of(void *ctx, uint32_t id)
{
    static const char *names[] = {"n0", "n1", "n2", "n3"};
    (void)ctx;
    return id < 4 ? names[id] : NULL;
}

static void test_routes(void)
{
    /* 6 ranks, cyclic over nodes 2, 0, 3 */
    const uint32_t node[] = {2, 0, 3, 2, 0, 3};
    struct lg_jobfacts f = {
        .np = 6, .node = node, .node_name = name_of, .job = "1:5", .user = "u", .name = "prog"};
    struct lg_outspec out, err;
    struct lg_routes r;
    char e[256];

    /* per node: three files in the order of first use; %n numbers them so; stderr follows */
    CU_ASSERT_FATAL(lg_outspec_parse("%n-%N", &out, e, sizeof e) == 0);
    CU_ASSERT_FATAL(lg_routes_build(&out, NULL, &f, &r, e, sizeof e) == 0);
    CU_ASSERT_EQUAL(r.paths.n, 3);
    CU_ASSERT_STRING_EQUAL(r.paths.v[0], "0-n2");
    CU_ASSERT_STRING_EQUAL(r.paths.v[1], "1-n0");
    CU_ASSERT_STRING_EQUAL(r.paths.v[2], "2-n3");
    for (uint32_t k = 0; k < 6; k++) {
        CU_ASSERT_EQUAL(r.route[0][k], k % 3);
        CU_ASSERT_EQUAL(r.route[1][k], k % 3);
    }
    lg_routes_free(&r);

    /* per rank, stderr to one shared file and to psrun's stream */
    CU_ASSERT_FATAL(lg_outspec_parse("r%t", &out, e, sizeof e) == 0);
    CU_ASSERT_FATAL(lg_outspec_parse("errors", &err, e, sizeof e) == 0);
    CU_ASSERT_FATAL(lg_routes_build(&out, &err, &f, &r, e, sizeof e) == 0);
    CU_ASSERT_EQUAL(r.paths.n, 7);
    for (uint32_t k = 0; k < 6; k++) {
        CU_ASSERT_EQUAL(r.route[0][k], k);
        CU_ASSERT_EQUAL(r.route[1][k], 6);
    }
    lg_routes_free(&r);
    CU_ASSERT_FATAL(lg_outspec_parse("all", &err, e, sizeof e) == 0);
    CU_ASSERT_FATAL(lg_routes_build(&out, &err, &f, &r, e, sizeof e) == 0);
    CU_ASSERT_EQUAL(r.route[1][5], LG_ROUTE_STD);
    lg_routes_free(&r);

    /* -o and -e naming the same file share it */
    CU_ASSERT_FATAL(lg_outspec_parse("same", &out, e, sizeof e) == 0);
    CU_ASSERT_FATAL(lg_outspec_parse("same", &err, e, sizeof e) == 0);
    CU_ASSERT_FATAL(lg_routes_build(&out, &err, &f, &r, e, sizeof e) == 0);
    CU_ASSERT_EQUAL(r.paths.n, 1);
    CU_ASSERT_EQUAL(r.route[1][3], 0);
    lg_routes_free(&r);

    /* srun's modes: a rank, none; without -e stderr follows them */
    CU_ASSERT_FATAL(lg_outspec_parse("4", &out, e, sizeof e) == 0);
    CU_ASSERT_FATAL(lg_routes_build(&out, NULL, &f, &r, e, sizeof e) == 0);
    CU_ASSERT_EQUAL(r.paths.n, 0);
    for (uint32_t k = 0; k < 6; k++)
        for (int s = 0; s < 2; s++)
            CU_ASSERT_EQUAL(r.route[s][k], k == 4 ? LG_ROUTE_STD : LG_ROUTE_NONE);
    lg_routes_free(&r);
    CU_ASSERT_FATAL(lg_outspec_parse("none", &out, e, sizeof e) == 0);
    CU_ASSERT_FATAL(lg_routes_build(&out, NULL, &f, &r, e, sizeof e) == 0);
    CU_ASSERT_EQUAL(r.route[1][0], LG_ROUTE_NONE);
    lg_routes_free(&r);

    /* a name that does not fit */
    static char longpat[5000];
    memset(longpat, 'x', sizeof longpat - 1);
    CU_ASSERT_FATAL(lg_outspec_parse(longpat, &out, e, sizeof e) == 0);
    CU_ASSERT_EQUAL(lg_routes_build(&out, NULL, &f, &r, e, sizeof e), -1);
    CU_ASSERT(strstr(e, "too long") != NULL);
}

/* many ranks, many nodes: the routes are built in linear time (a file per rank) */
static void test_routes_many(void)
{
    enum { NP = 200000 };
    static uint32_t node[NP];
    for (uint32_t k = 0; k < NP; k++) node[k] = k / 4;
    struct lg_jobfacts f = {.np = NP, .node = node, .job = "0:1", .user = "u", .name = "p"};
    struct lg_outspec out;
    struct lg_routes r;
    char e[256];
    CU_ASSERT_FATAL(lg_outspec_parse("%n/%t", &out, e, sizeof e) == 0);
    CU_ASSERT_FATAL(lg_routes_build(&out, NULL, &f, &r, e, sizeof e) == 0);
    CU_ASSERT_EQUAL(r.paths.n, NP);
    CU_ASSERT_STRING_EQUAL(r.paths.v[NP - 1], "49999/199999");
    lg_routes_free(&r);
}

UNIT_SUITE(logger_outfile, UNIT_TEST(test_patterns), UNIT_TEST(test_bad_patterns),
           UNIT_TEST(test_modes), UNIT_TEST(test_routes), UNIT_TEST(test_routes_many))
