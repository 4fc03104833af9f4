/*
 * test_cpus.c - unit tests for psi/cpus.c (CPU lists, srun's map_cpu and mask_cpu lists,
 * --cpu-bind's words, memory sizes with suffixes), logger/stats.c's sacct formats and
 * placement with CPUs per rank (-c).
 */
#include "../../logger/stats.h"
#include "../../psid/placement.h"
#include "pscpus.h"
#include "unit.h"

#include <string.h>

static const char *list_of(const struct pscpuset *s)
{
    static char out[256];
    CU_ASSERT_FATAL(pscpu_format_list(s, out, sizeof out) == 0);
    return out;
}

static void test_lists(void)
{
    struct pscpuset s;
    char why[200];
    CU_ASSERT_EQUAL(pscpu_parse_list("0-3,8,10-11", &s, why, sizeof why), 0);
    CU_ASSERT_EQUAL(pscpu_count(&s), 7);
    CU_ASSERT_STRING_EQUAL(list_of(&s), "0-3,8,10-11");
    CU_ASSERT_EQUAL(pscpu_parse_list("5", &s, why, sizeof why), 0);
    CU_ASSERT_STRING_EQUAL(list_of(&s), "5");
    CU_ASSERT_EQUAL(pscpu_parse_list("1023", &s, why, sizeof why), 0);
    CU_ASSERT_STRING_EQUAL(list_of(&s), "1023");
    const char *bad[] = {"", "1024", "3-1", "1,", ",1", "a", "1-", "1--2", "-1", "0x1", "1 2"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        why[0] = 0;
        CU_ASSERT_EQUAL(pscpu_parse_list(bad[i], &s, why, sizeof why), -1);
        CU_ASSERT(why[0] != 0);
    }
    memset(&s, 0, sizeof s);
    CU_ASSERT_STRING_EQUAL(list_of(&s), "");
    char small[4];
    CU_ASSERT_EQUAL(pscpu_parse_list("0-3,8", &s, why, sizeof why), 0);
    CU_ASSERT_EQUAL(pscpu_format_list(&s, small, sizeof small), -1);
    struct pscpuset a, b;
    pscpu_parse_list("1,3", &a, NULL, 0);
    pscpu_parse_list("0-2", &b, NULL, 0);
    CU_ASSERT_FALSE(pscpu_subset(&a, &b));
    CU_ASSERT_EQUAL(pscpu_first_outside(&a, &b), 3);
    pscpu_parse_list("0-3", &b, NULL, 0);
    CU_ASSERT_TRUE(pscpu_subset(&a, &b));
}

static void test_maps(void)
{
    struct pscpuset s, all;
    char why[200];
    CU_ASSERT_EQUAL(pscpu_map_check("0,2,4", false, &all, why, sizeof why), 3);
    CU_ASSERT_STRING_EQUAL(list_of(&all), "0,2,4");
    CU_ASSERT_EQUAL(pscpu_map_entry("0,2,4", false, 1, &s), 0);
    CU_ASSERT_STRING_EQUAL(list_of(&s), "2");
    CU_ASSERT_EQUAL(pscpu_map_entry("0,2,4", false, 4, &s), 0); /* rank 4: entry 1 again */
    CU_ASSERT_STRING_EQUAL(list_of(&s), "2");
    CU_ASSERT_EQUAL(pscpu_map_check("0x10,1*3", false, NULL, why, sizeof why), 4);
    CU_ASSERT_EQUAL(pscpu_map_entry("0x10,1*3", false, 0, &s), 0);
    CU_ASSERT_STRING_EQUAL(list_of(&s), "16");
    CU_ASSERT_EQUAL(pscpu_map_entry("0x10,1*3", false, 3, &s), 0);
    CU_ASSERT_STRING_EQUAL(list_of(&s), "1");
    /* masks: always hexadecimal, 0x optional */
    CU_ASSERT_EQUAL(pscpu_map_check("0x3,c,F0*2", true, &all, why, sizeof why), 4);
    CU_ASSERT_STRING_EQUAL(list_of(&all), "0-7");
    CU_ASSERT_EQUAL(pscpu_map_entry("0x3,c,F0*2", true, 1, &s), 0);
    CU_ASSERT_STRING_EQUAL(list_of(&s), "2-3");
    CU_ASSERT_EQUAL(pscpu_map_entry("0x3,c,F0*2", true, 3, &s), 0);
    CU_ASSERT_STRING_EQUAL(list_of(&s), "4-7");
    CU_ASSERT_EQUAL(pscpu_map_check("10", true, &all, why, sizeof why), 1); /* 0x10: CPU 4 */
    CU_ASSERT_STRING_EQUAL(list_of(&all), "4");
    const char *badmap[] = {"", "1,", "x", "1024", "0x400", "1*0", "1*", "*2", "-1", "1,,2"};
    for (size_t i = 0; i < sizeof badmap / sizeof badmap[0]; i++)
        CU_ASSERT_EQUAL(pscpu_map_check(badmap[i], false, NULL, why, sizeof why), -1);
    const char *badmask[] = {"", "0", "0x0", "g", "0x", "1" /* ok */};
    for (size_t i = 0; i + 1 < sizeof badmask / sizeof badmask[0]; i++)
        CU_ASSERT_EQUAL(pscpu_map_check(badmask[i], true, NULL, why, sizeof why), -1);
    char big[300]; /* a mask past CPU 1023 */
    memset(big, 'f', 257);
    big[257] = 0;
    CU_ASSERT_EQUAL(pscpu_map_check(big, true, NULL, why, sizeof why), -1);
    big[256] = 0;
    CU_ASSERT_EQUAL(pscpu_map_check(big, true, &all, why, sizeof why), 1);
    CU_ASSERT_EQUAL(pscpu_count(&all), 1024);
    CU_ASSERT_EQUAL(pscpu_map_check("1*1024,2", false, NULL, why, sizeof why), -1);
}

static void test_bind(void)
{
    uint32_t mode;
    const char *list;
    char why[300];
    CU_ASSERT_EQUAL(pscpu_parse_bind("cores", &mode, &list, why, sizeof why), 0);
    CU_ASSERT_EQUAL(mode, PSBIND_CORES);
    CU_ASSERT_PTR_NULL(list);
    CU_ASSERT_EQUAL(pscpu_parse_bind("verbose,threads", &mode, &list, why, sizeof why), 0);
    CU_ASSERT_EQUAL(mode, PSBIND_THREADS | PSBIND_VERBOSE);
    CU_ASSERT_EQUAL(pscpu_parse_bind("none", &mode, &list, why, sizeof why), 0);
    CU_ASSERT_EQUAL(mode, PSBIND_NONE);
    CU_ASSERT_EQUAL(pscpu_parse_bind("verbose", &mode, &list, why, sizeof why), 0);
    CU_ASSERT_EQUAL(mode, PSBIND_AUTO | PSBIND_VERBOSE);
    CU_ASSERT_EQUAL(pscpu_parse_bind("v,map_cpu:0,1", &mode, &list, why, sizeof why), -1);
    CU_ASSERT_EQUAL(pscpu_parse_bind("verbose,map_cpu:0,1", &mode, &list, why, sizeof why), 0);
    CU_ASSERT_EQUAL(mode, PSBIND_MAP_CPU | PSBIND_VERBOSE);
    CU_ASSERT_STRING_EQUAL(list, "0,1");
    CU_ASSERT_EQUAL(pscpu_parse_bind("mask_cpu:0x3,0xc", &mode, &list, why, sizeof why), 0);
    CU_ASSERT_EQUAL(mode, PSBIND_MASK_CPU);
    CU_ASSERT_STRING_EQUAL(list, "0x3,0xc");
    const char *bad[] = {"sockets",         "cores,threads", "map_cpu:",   "mask_cpu:0",
                         "cores,map_cpu:1", "ldoms",         "map_cpu:1,x"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        why[0] = 0;
        CU_ASSERT_EQUAL(pscpu_parse_bind(bad[i], &mode, &list, why, sizeof why), -1);
        CU_ASSERT(why[0] != 0);
    }
    CU_ASSERT_PTR_NOT_NULL(strstr((pscpu_parse_bind("sockets", &mode, &list, why, sizeof why), why),
                                  "'sockets' is not"));
}

static void test_sizes(void)
{
    uint64_t v;
    const uint64_t M = 1ull << 20;
    CU_ASSERT_EQUAL(ps_parse_size("100", M, &v), 0);
    CU_ASSERT_EQUAL(v, 100 * M);
    CU_ASSERT_EQUAL(ps_parse_size("2G", M, &v), 0);
    CU_ASSERT_EQUAL(v, 2ull << 30);
    CU_ASSERT_EQUAL(ps_parse_size("512k", M, &v), 0);
    CU_ASSERT_EQUAL(v, 512ull << 10);
    CU_ASSERT_EQUAL(ps_parse_size("1T", M, &v), 0);
    CU_ASSERT_EQUAL(v, 1ull << 40);
    CU_ASSERT_EQUAL(ps_parse_size("3GiB", M, &v), 0);
    CU_ASSERT_EQUAL(v, 3ull << 30);
    CU_ASSERT_EQUAL(ps_parse_size("0", M, &v), 0); /* psrun refuses 0 itself */
    CU_ASSERT_EQUAL(v, 0);
    const char *bad[] = {"",         "G", "-1", "1.5G", "12Q", "1GG", "2 G", "99999999999999999999",
                         "20000000T"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CU_ASSERT_EQUAL(ps_parse_size(bad[i], M, &v), -1);
    char out[32];
    ps_format_size(2ull << 30, out, sizeof out);
    CU_ASSERT_STRING_EQUAL(out, "2 GiB");
    ps_format_size(3 * M / 2, out, sizeof out);
    CU_ASSERT_STRING_EQUAL(out, "1.5 MiB");
    ps_format_size(512, out, sizeof out);
    CU_ASSERT_STRING_EQUAL(out, "512 B");
}

static void test_sacct_formats(void)
{
    char out[32];
    lg_fmt_elapsed(1500000, out, sizeof out);
    CU_ASSERT_STRING_EQUAL(out, "00:00:01");
    lg_fmt_elapsed((uint64_t)(86400 + 3 * 3600 + 4 * 60 + 5) * 1000000, out, sizeof out);
    CU_ASSERT_STRING_EQUAL(out, "1-03:04:05");
    lg_fmt_cpu(1003000, out, sizeof out);
    CU_ASSERT_STRING_EQUAL(out, "00:01.003");
    lg_fmt_cpu(3600000000ull, out, sizeof out);
    CU_ASSERT_STRING_EQUAL(out, "01:00:00.000");
    lg_fmt_kib(1025, out, sizeof out);
    CU_ASSERT_STRING_EQUAL(out, "2K");
    lg_fmt_mib(10485760, out, sizeof out);
    CU_ASSERT_STRING_EQUAL(out, "10.00M");
}

/* -c: a node's free CPUs hold free / cpt ranks */
static void test_place_cpt(void)
{
    struct place_node nodes[2] = {{0, 4, 0, 0}, {1, 4, 1, 0}};
    uint32_t out[4];
    char why[200];
    struct place_opts o = {.cpt = 2};
    CU_ASSERT_EQUAL(place_job(nodes, 2, 3, &o, out, why, sizeof why), 0);
    unsigned on0 = 0;
    for (int r = 0; r < 3; r++) on0 += out[r] == 0;
    CU_ASSERT_EQUAL(on0, 2); /* node 1 has 3 free CPUs: one rank of 2 */
    CU_ASSERT_EQUAL(place_job(nodes, 2, 4, &o, out, why, sizeof why), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(why, "-c"));
    o.overbook = true;
    CU_ASSERT_EQUAL(place_job(nodes, 2, 4, &o, out, why, sizeof why), 0);
}

UNIT_SUITE(cpus, UNIT_TEST(test_lists), UNIT_TEST(test_maps), UNIT_TEST(test_bind),
           UNIT_TEST(test_sizes), UNIT_TEST(test_sacct_formats), UNIT_TEST(test_place_cpt))
