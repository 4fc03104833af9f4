/*
 * test_pmiwire.c - the PMI wires (include/pmiwire.h, pmi/wire.c) and psid's PMI store
 * (psid/pmikvs.c): framing at and over the limits, parsing of good and malformed input
 * (every rejection with its reason), writing with PMI-2 escapes and sticky overflow,
 * PMI_process_mapping's cliques, and the store's counts, replacement and walk.
 */
#include "../../psid/pmi.h"
#include "pmiwire.h"
#include "unit.h"

#include <stdlib.h>
#include <string.h>

static void test_pmi1_frame(void)
{
    static char buf[PMI1_LINE_MAX + 100];
    size_t len = 0;
    CU_ASSERT_EQUAL(pmi1_frame("cmd=get_maxes", 13, &len), 0); /* no newline yet */
    CU_ASSERT_EQUAL(pmi1_frame("cmd=get_maxes\ncmd=x", 19, &len), 1);
    CU_ASSERT_EQUAL(len, 13);
    memset(buf, 'a', sizeof buf);
    buf[PMI1_LINE_MAX - 1] = '\n'; /* 1024 bytes with the newline: allowed */
    CU_ASSERT_EQUAL(pmi1_frame(buf, sizeof buf, &len), 1);
    CU_ASSERT_EQUAL(len, PMI1_LINE_MAX - 1);
    buf[PMI1_LINE_MAX - 1] = 'a';
    buf[PMI1_LINE_MAX] = '\n'; /* 1025: over */
    CU_ASSERT_EQUAL(pmi1_frame(buf, sizeof buf, &len), -1);
    CU_ASSERT_EQUAL(pmi1_frame(buf, PMI1_LINE_MAX - 1, &len), 0);
}

static void test_pmi1_parse(void)
{
    struct pmi_cmd c;
    const char *why = NULL;
    const char *l = "cmd=put kvsname=kvs_0_1  key=-bcast-1-0 value=a=b";
    CU_ASSERT_EQUAL(pmi1_parse(l, strlen(l), &c, &why), 0);
    CU_ASSERT_EQUAL(c.n, 4);
    CU_ASSERT_TRUE(pmi_is(pmi_get(&c, "cmd"), "put"));
    CU_ASSERT_TRUE(pmi_is(pmi_get(&c, "key"), "-bcast-1-0"));
    CU_ASSERT_TRUE(pmi_is(pmi_get(&c, "value"), "a=b")); /* '=' in a value */
    CU_ASSERT_PTR_NULL(pmi_get(&c, "nothere"));
    char out[8];
    CU_ASSERT_EQUAL(pmi_copy(pmi_get(&c, "value"), out, sizeof out), 0);
    CU_ASSERT_STRING_EQUAL(out, "a=b");
    CU_ASSERT_EQUAL(pmi_copy(pmi_get(&c, "kvsname"), out, 7), -1); /* does not fit */
    /* value= takes the rest of the line, spaces (leading, inner, trailing) included */
    l = "cmd=put kvsname=k key=x value= a b=c  ";
    CU_ASSERT_EQUAL(pmi1_parse(l, strlen(l), &c, &why), 0);
    CU_ASSERT_EQUAL(c.n, 4);
    CU_ASSERT_TRUE(pmi_is(pmi_get(&c, "value"), " a b=c  "));
    l = "cmd=get_result rc=0 value=";
    CU_ASSERT_EQUAL(pmi1_parse(l, strlen(l), &c, &why), 0);
    CU_ASSERT_TRUE(pmi_is(pmi_get(&c, "value"), ""));
    l = "cmd=put value=a b\tc"; /* a control character stays an error */
    CU_ASSERT_EQUAL(pmi1_parse(l, strlen(l), &c, &why), -1);
    l = "cmd=put xvalue=a b"; /* only the key value */
    CU_ASSERT_EQUAL(pmi1_parse(l, strlen(l), &c, &why), -1);
    const struct {
        const char *line, *why;
    } bad[] = {
        {"cmd=init garbage", "a word without '='"},
        {"=1", "an empty key"},
        {"cmd=a\tb=1", "a control character in the line"},
        {"", "an empty line"},
        {"   ", "an empty line"},
        {"kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk=1",
         "a key longer than 64 bytes"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        why = NULL;
        CU_ASSERT_EQUAL(pmi1_parse(bad[i].line, strlen(bad[i].line), &c, &why), -1);
        CU_ASSERT_PTR_NOT_NULL_FATAL(why);
        CU_ASSERT_STRING_EQUAL(why, bad[i].why);
    }
    CU_ASSERT_EQUAL(pmi1_parse("a=1\0b=2", 7, &c, &why), -1); /* a NUL is a control character */
    /* more pairs than PMI_MAX_PAIRS: the first ones, marked truncated */
    char many[PMI_MAX_PAIRS * 8 + 64] = "";
    for (int i = 0; i < PMI_MAX_PAIRS + 3; i++) sprintf(many + strlen(many), "k%d=%d ", i, i);
    CU_ASSERT_EQUAL(pmi1_parse(many, strlen(many), &c, &why), 0);
    CU_ASSERT_EQUAL(c.n, PMI_MAX_PAIRS);
    CU_ASSERT_TRUE(c.truncated);
}

static void test_pmi_get_int(void)
{
    struct pmi_cmd c;
    const char *l = "a=12 b=-3 c=x d= e=99999999999999999999 f=2147483648 g=-";
    CU_ASSERT_EQUAL_FATAL(pmi1_parse(l, strlen(l), &c, NULL), 0);
    long v = 0;
    CU_ASSERT_EQUAL(pmi_get_int(&c, "a", 0, 100, &v), 0);
    CU_ASSERT_EQUAL(v, 12);
    CU_ASSERT_EQUAL(pmi_get_int(&c, "a", 0, 10, &v), -1); /* out of range */
    CU_ASSERT_EQUAL(pmi_get_int(&c, "b", -10, 10, &v), 0);
    CU_ASSERT_EQUAL(v, -3);
    CU_ASSERT_EQUAL(pmi_get_int(&c, "c", 0, 100, &v), -1);
    CU_ASSERT_EQUAL(pmi_get_int(&c, "d", 0, 100, &v), -1);
    CU_ASSERT_EQUAL(pmi_get_int(&c, "e", 0, 2147483647L, &v), -1);
    CU_ASSERT_EQUAL(pmi_get_int(&c, "f", 0, 2147483647L, &v), -1);
    CU_ASSERT_EQUAL(pmi_get_int(&c, "g", -10, 10, &v), -1);
    CU_ASSERT_EQUAL(pmi_get_int(&c, "z", 0, 100, &v), -1);
}

static void test_pmi2_frame_parse(void)
{
    size_t len = 0;
    const char *why = NULL;
    CU_ASSERT_EQUAL(pmi2_frame("12", 2, &len, &why), 0);
    CU_ASSERT_EQUAL(pmi2_frame("9     cmd=", 10, &len, &why), 0); /* not whole yet */
    CU_ASSERT_EQUAL(pmi2_frame("9     cmd=a;b=;", 15, &len, &why), 1);
    CU_ASSERT_EQUAL(len, 9);
    CU_ASSERT_EQUAL(pmi2_frame("x     ", 6, &len, &why), -1);
    CU_ASSERT_EQUAL(pmi2_frame("1 2   ", 6, &len, &why), -1);
    CU_ASSERT_EQUAL(pmi2_frame("999999", 6, &len, &why), -1); /* over PMI2_FRAME_MAX */
    CU_ASSERT_STRING_EQUAL(why, "a command longer than 65536 bytes");

    struct pmi_cmd c;
    char scratch[256];
    const char *b = "cmd=kvs-put;key=k;value=a;;b;;;empty=;";
    CU_ASSERT_EQUAL(pmi2_parse(b, strlen(b), scratch, sizeof scratch, &c, &why), 0);
    CU_ASSERT_EQUAL(c.n, 4);
    CU_ASSERT_TRUE(pmi_is(pmi_get(&c, "value"), "a;b;"));
    CU_ASSERT_TRUE(pmi_is(pmi_get(&c, "empty"), ""));
    const struct {
        const char *body, *why;
    } bad[] = {
        {"cmd=x", "a pair not ended by ';'"},
        {"cmd", "a pair without '='"},
        {"cmd;x=1;", "a pair without '='"},
        {"=1;", "an empty key"},
        {"", "an empty command"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        why = NULL;
        CU_ASSERT_EQUAL(
            pmi2_parse(bad[i].body, strlen(bad[i].body), scratch, sizeof scratch, &c, &why), -1);
        CU_ASSERT_PTR_NOT_NULL_FATAL(why);
        CU_ASSERT_STRING_EQUAL(why, bad[i].why);
    }
    CU_ASSERT_EQUAL(pmi2_parse("a=\0;", 4, scratch, sizeof scratch, &c, &why), -1);
    CU_ASSERT_EQUAL(pmi2_parse("cmd=abc;", 8, scratch, 4, &c, &why), -1); /* no room */
    /* a value of 1025 bytes */
    char *big = malloc(2048), *sc = malloc(2048);
    CU_ASSERT_PTR_NOT_NULL_FATAL(big);
    CU_ASSERT_PTR_NOT_NULL_FATAL(sc);
    strcpy(big, "v=");
    memset(big + 2, 'x', PMI_VAL_MAX + 1);
    strcpy(big + 2 + PMI_VAL_MAX + 1, ";");
    CU_ASSERT_EQUAL(pmi2_parse(big, strlen(big), sc, 2048, &c, &why), -1);
    CU_ASSERT_STRING_EQUAL(why, "a value longer than 1024 bytes");
    big[2 + PMI_VAL_MAX] = ';'; /* 1024: allowed */
    big[2 + PMI_VAL_MAX + 1] = 0;
    CU_ASSERT_EQUAL(pmi2_parse(big, strlen(big), sc, 2048, &c, &why), 0);
    free(big);
    free(sc);
}

static void test_pmi_out(void)
{
    char buf[128];
    struct pmi_out o;
    pmi_out_begin(&o, buf, sizeof buf, false, "get_result");
    pmi_out_add(&o, "rc", "0");
    pmi_out_addi(&o, "size", -4);
    size_t n = pmi_out_end(&o);
    CU_ASSERT_EQUAL(n, strlen("cmd=get_result rc=0 size=-4\n"));
    CU_ASSERT_NSTRING_EQUAL(buf, "cmd=get_result rc=0 size=-4\n", n);
    pmi_out_begin(&o, buf, sizeof buf, true, "kvs-get-response");
    pmi_out_add(&o, "value", "a;b");
    n = pmi_out_end(&o);
    const char *want = "32    cmd=kvs-get-response;value=a;;b;";
    CU_ASSERT_EQUAL(n, strlen(want));
    CU_ASSERT_NSTRING_EQUAL(buf, want, n);
    /* what it wrote parses back */
    size_t len;
    struct pmi_cmd c;
    char scratch[64];
    CU_ASSERT_EQUAL(pmi2_frame(buf, n, &len, NULL), 1);
    CU_ASSERT_EQUAL(pmi2_parse(buf + PMI2_LEN_DIGITS, len, scratch, sizeof scratch, &c, NULL), 0);
    CU_ASSERT_TRUE(pmi_is(pmi_get(&c, "value"), "a;b"));
    /* no room: 0, and it stays failed */
    pmi_out_begin(&o, buf, 12, false, "universe_size");
    pmi_out_add(&o, "rc", "0");
    CU_ASSERT_EQUAL(pmi_out_end(&o), 0);
    CU_ASSERT_TRUE(o.failed);
}

static void test_pmi_map(void)
{
    long cl[8];
    /* 2 nodes of 2 ranks: ranks 0,1 on node 0, 2,3 on node 1 */
    CU_ASSERT_EQUAL(pmi_map_clique("(vector,(0,2,2))", 4, 3, cl, 8), 2);
    CU_ASSERT_EQUAL(cl[0], 2);
    CU_ASSERT_EQUAL(cl[1], 3);
    CU_ASSERT_EQUAL(pmi_map_clique("(vector,(0,2,2))", 4, 0, cl, 8), 2);
    CU_ASSERT_EQUAL(cl[1], 1);
    /* uneven blocks: 3 ranks on node 0, then 1 on node 1 */
    CU_ASSERT_EQUAL(pmi_map_clique("(vector,(0,1,3),(1,1,1))", 4, 3, cl, 8), 1);
    CU_ASSERT_EQUAL(cl[0], 3);
    /* the vector repeats (cyclic placement): 0,2 on node 0, 1,3 on node 1 */
    CU_ASSERT_EQUAL(pmi_map_clique("(vector,(0,2,1))", 4, 2, cl, 8), 2);
    CU_ASSERT_EQUAL(cl[0], 0);
    CU_ASSERT_EQUAL(cl[1], 2);
    /* max smaller than the clique: the count, only max written */
    CU_ASSERT_EQUAL(pmi_map_clique("(vector,(0,1,4))", 4, 0, cl, 2), 4);
    const char *bad[] = {"",
                         "(vector)",
                         "(vector,(0,2))",
                         "(vector,(0,0,2))",
                         "(vector,(0,2,2)",
                         "(list,(0,2,2))",
                         "(vector,(0,2,x))"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CU_ASSERT_EQUAL(pmi_map_clique(bad[i], 4, 0, cl, 8), -1);
    CU_ASSERT_EQUAL(pmi_map_clique("(vector,(0,2,2))", 4, 4, cl, 8), -1); /* no such rank */
}

static void test_pmikvs(void)
{
    struct pmikvs k;
    pmikvs_init(&k);
    size_t vl = 0;
    CU_ASSERT_PTR_NULL(pmikvs_get(&k, "a", 1, &vl));
    char key[16], val[16];
    for (int i = 0; i < 1000; i++) {
        int kl = snprintf(key, sizeof key, "key%d", i), l = snprintf(val, sizeof val, "v%d", i);
        CU_ASSERT_EQUAL_FATAL(pmikvs_put(&k, key, (size_t)kl, val, (size_t)l), 0);
    }
    CU_ASSERT_EQUAL(k.n, 1000);
    const char *v = pmikvs_get(&k, "key517", 6, &vl);
    CU_ASSERT_PTR_NOT_NULL_FATAL(v);
    CU_ASSERT_STRING_EQUAL(v, "v517");
    CU_ASSERT_EQUAL(vl, 4);
    size_t bytes = k.bytes;
    CU_ASSERT_EQUAL(pmikvs_put(&k, "key517", 6, "longer value", 12), 0); /* replaced */
    CU_ASSERT_EQUAL(k.n, 1000);
    CU_ASSERT_EQUAL(k.bytes, bytes - 4 + 12);
    CU_ASSERT_STRING_EQUAL(pmikvs_get(&k, "key517", 6, &vl), "longer value");
    CU_ASSERT_PTR_NULL(pmikvs_get(&k, "key5170", 7, &vl)); /* never put */
    CU_ASSERT_PTR_NULL(pmikvs_get(&k, "key517", 3, &vl));  /* "key": a prefix is not a key */
    struct pmikvs_it it = {0};
    const char *kk, *vv;
    size_t kl2, vl2, seen = 0;
    while (pmikvs_next(&k, &it, &kk, &kl2, &vv, &vl2)) seen++;
    CU_ASSERT_EQUAL(seen, 1000);
    CU_ASSERT_EQUAL(pmikvs_next(&k, &it, &kk, &kl2, &vv, &vl2), 0); /* stays at the end */
    pmikvs_free(&k);
    CU_ASSERT_EQUAL(k.n, 0);
    CU_ASSERT_EQUAL(k.bytes, 0);
    CU_ASSERT_PTR_NULL(pmikvs_get(&k, "key1", 4, &vl));
    CU_ASSERT_EQUAL(pmikvs_put(&k, "again", 5, "1", 1), 0); /* usable after free */
    pmikvs_free(&k);
}

UNIT_SUITE(pmiwire, UNIT_TEST(test_pmi1_frame), UNIT_TEST(test_pmi1_parse),
           UNIT_TEST(test_pmi_get_int), UNIT_TEST(test_pmi2_frame_parse), UNIT_TEST(test_pmi_out),
           UNIT_TEST(test_pmi_map), UNIT_TEST(test_pmikvs))
