/*
 * test_treewire.c - unit tests for the launch tree's messages (psid/treewire.c): the
 * tree's shape, a spawn's decode and the local spawn made from it, and malformed input
 * (no job, bad width, no part, parts out of order, outside the subtree, without a parent,
 * without ranks, the receiver's part not first or twice, every truncation); a start
 * answer's round trip and its malformed forms.
 */
#include "../../psid/treewire.h"
#include "psproto.h"
#include "unit.h"

#include <stdlib.h>
#include <string.h>

static void test_tree_under(void)
{
    /* k = 2: 0 -> 1,2; 1 -> 3,4; 3 -> 7,8 */
    CU_ASSERT(tree_under(7, 3, 2));
    CU_ASSERT(tree_under(7, 1, 2));
    CU_ASSERT(tree_under(7, 0, 2));
    CU_ASSERT(tree_under(3, 3, 2));
    CU_ASSERT(!tree_under(5, 1, 2));
    CU_ASSERT(!tree_under(1, 3, 2));
    CU_ASSERT(tree_under(33, 1, 32)); /* k = 32: 1 -> 33..64 */
    CU_ASSERT(!tree_under(65, 1, 32));
    CU_ASSERT(tree_under(4, 4, 0));
    CU_ASSERT(!tree_under(5, 4, 0));
}

struct part {
    uint32_t node, pos, nranks, rank0;
};

/* a PSM_D_SPAWN_TREE for parts, then parsed into m (buffer in b) */
static int build(struct psmsg_buf *b, struct psmsg *m, bool job, uint32_t width,
                 const struct part *p, size_t n)
{
    psmsg_begin(b, PSM_D_SPAWN_TREE, 0);
    psmsg_put_u32(b, PSF_REQ, 9);
    if (job) psmsg_put_u64(b, PSF_JOB, 0x0000000100000005ull);
    psmsg_put_u32(b, PSF_SIZE, 100);
    psmsg_put_str(b, PSF_ARG, "/bin/true");
    if (width) psmsg_put_u32(b, PSF_TREE_WIDTH, width);
    for (size_t i = 0; i < n; i++) {
        psmsg_record_begin(b, PSF_PART);
        psmsg_put_u32(b, PSF_NODE_ID, p[i].node);
        psmsg_put_u32(b, PSF_TREE_POS, p[i].pos);
        for (uint32_t r = 0; r < p[i].nranks; r++) psmsg_put_u32(b, PSF_RANK, p[i].rank0 + r);
        psmsg_put_u32(b, PSF_NODE_INDEX, p[i].pos);
        psmsg_put_bytes(b, PSF_CRED, "cred", 4);
        psmsg_record_end(b);
    }
    if (psmsg_end(b) < 0) return -1;
    return psmsg_parse(b->data, b->len, m);
}

static int decode(bool job, uint32_t width, const struct part *p, size_t n, uint32_t self,
                  const char **why)
{
    struct psmsg_buf b = {0};
    struct psmsg m;
    struct tree_spawn t;
    int rc = -2;
    if (build(&b, &m, job, width, p, n) == 0) {
        rc = tree_spawn_decode(&m.body, self, &t, why);
        if (rc == 0) tree_spawn_free(&t);
    }
    psmsg_buf_free(&b);
    return rc;
}

static void test_spawn_decode(void)
{
    /* node 11 at place 1 (k = 2) with 3 (node 13), 4 (node 14) and 7 (node 17) below */
    const struct part ok[] = {{11, 1, 2, 2}, {13, 3, 1, 6}, {14, 4, 2, 7}, {17, 7, 1, 9}};
    struct psmsg_buf b = {0};
    struct psmsg m;
    struct tree_spawn t;
    const char *why = NULL;
    CU_ASSERT_EQUAL_FATAL(build(&b, &m, true, 2, ok, 4), 0);
    CU_ASSERT_EQUAL_FATAL(tree_spawn_decode(&m.body, 11, &t, &why), 0);
    CU_ASSERT_EQUAL(t.job, 0x0000000100000005ull);
    CU_ASSERT_EQUAL(t.width, 2);
    CU_ASSERT_EQUAL(t.n, 4);
    CU_ASSERT_EQUAL(t.parts[0].node, 11);
    CU_ASSERT_EQUAL(t.parts[0].nranks, 2);
    CU_ASSERT_EQUAL(t.parts[3].pos, 7);
    CU_ASSERT_EQUAL(tree_part_find(t.parts, 0, 4, 4), 2);
    CU_ASSERT_EQUAL(tree_part_find(t.parts, 0, 4, 7), 3);
    CU_ASSERT_EQUAL(tree_part_find(t.parts, 0, 4, 5), 4); /* none */
    CU_ASSERT_EQUAL(tree_part_find(t.parts, 1, 3, 1), 3); /* outside [1, 3) */
    CU_ASSERT_EQUAL(tree_part_find(t.parts, 2, 2, 4), 2); /* empty */
    /* the local spawn: the common fields and the part's own, not its node or place */
    struct psmsg_buf l = {0};
    psmsg_begin(&l, PSM_D_SPAWN, 0);
    tree_put_local(&l, &m.body, &t.parts[0]);
    struct psmsg lm;
    CU_ASSERT_EQUAL_FATAL(psmsg_end(&l), 0);
    CU_ASSERT_EQUAL_FATAL(psmsg_parse(l.data, l.len, &lm), 0);
    uint32_t u = 0;
    struct psmsg_field f;
    CU_ASSERT_EQUAL(psmsg_get_u32(&lm.body, PSF_REQ, &u), 0);
    CU_ASSERT_EQUAL(u, 9);
    CU_ASSERT(psmsg_find(&lm.body, PSF_ARG, &f));
    CU_ASSERT(psmsg_find(&lm.body, PSF_CRED, &f));
    CU_ASSERT(!psmsg_find(&lm.body, PSF_TREE_POS, &f));
    CU_ASSERT(!psmsg_find(&lm.body, PSF_TREE_WIDTH, &f));
    CU_ASSERT(!psmsg_find(&lm.body, PSF_PART, &f));
    CU_ASSERT(!psmsg_find(&lm.body, PSF_NODE_ID, &f));
    size_t pos = 0, nr = 0;
    while (psmsg_next(&lm.body, &pos, &f)) nr += f.tag == PSF_RANK;
    CU_ASSERT_EQUAL(nr, 2);
    psmsg_buf_free(&l);
    tree_spawn_free(&t);
    /* every truncation of the body is refused or decodes (never reads past it) */
    for (size_t len = 0; len < m.body.len; len++) {
        struct psmsg_view v = {m.body.p, len};
        if (tree_spawn_decode(&v, 11, &t, &why) == 0) tree_spawn_free(&t);
    }
    psmsg_buf_free(&b);

    CU_ASSERT_EQUAL(decode(false, 2, ok, 4, 11, &why), -1); /* no job */
    CU_ASSERT_EQUAL(decode(true, 0, ok, 4, 11, &why), -1);  /* no width */
    CU_ASSERT_EQUAL(decode(true, TREE_WIDTH_MAX + 1, ok, 4, 11, &why), -1);
    CU_ASSERT_EQUAL(decode(true, 2, ok, 0, 11, &why), -1); /* no part */
    CU_ASSERT_EQUAL(decode(true, 2, ok, 4, 13, &why), -1); /* not the receiver's first */
    const struct part order[] = {{11, 1, 1, 0}, {14, 4, 1, 1}, {13, 3, 1, 2}};
    CU_ASSERT_EQUAL(decode(true, 2, order, 3, 11, &why), -1);
    const struct part outside[] = {{11, 1, 1, 0}, {15, 5, 1, 1}};
    CU_ASSERT_EQUAL(decode(true, 2, outside, 2, 11, &why), -1);
    const struct part orphan[] = {{11, 1, 1, 0}, {17, 7, 1, 1}}; /* 7's parent 3 missing */
    CU_ASSERT_EQUAL(decode(true, 2, orphan, 2, 11, &why), -1);
    const struct part noranks[] = {{11, 1, 1, 0}, {13, 3, 0, 0}};
    CU_ASSERT_EQUAL(decode(true, 2, noranks, 2, 11, &why), -1);
    const struct part twice[] = {{11, 1, 1, 0}, {11, 3, 1, 1}};
    CU_ASSERT_EQUAL(decode(true, 2, twice, 2, 11, &why), -1);
    const struct part place0[] = {{11, 0, 1, 0}};
    CU_ASSERT_EQUAL(decode(true, 2, place0, 1, 11, &why), -1);
    const struct part alone[] = {{11, 6, 1, 0}};
    CU_ASSERT_EQUAL(decode(true, 2, alone, 1, 11, &why), 0);
}

static int start_decode(void (*fill)(struct psmsg_buf *), struct tree_start *s, const char **why)
{
    struct psmsg_buf b = {0};
    struct psmsg m;
    int rc = -2;
    psmsg_begin(&b, PSM_D_STARTED, 0);
    psmsg_record_begin(&b, PSF_START);
    fill(&b);
    psmsg_record_end(&b);
    struct psmsg_field f;
    if (psmsg_end(&b) == 0 && psmsg_parse(b.data, b.len, &m) == 0 &&
        psmsg_find(&m.body, PSF_START, &f)) {
        struct psmsg_view rec = psmsg_record(&f);
        rc = tree_start_decode(&rec, s, why);
    }
    psmsg_buf_free(&b);
    return rc;
}

static void f_norank(struct psmsg_buf *b)
{
    psmsg_put_u32(b, PSF_NODE_ID, 3);
    psmsg_put_u64(b, PSF_TID, 1);
}
static void f_neither(struct psmsg_buf *b)
{
    psmsg_put_u32(b, PSF_RANK, 1);
    psmsg_put_u32(b, PSF_NODE_ID, 3);
}
static void f_errno0(struct psmsg_buf *b)
{
    f_neither(b);
    psmsg_put_u32(b, PSF_ERRNO, 0);
    psmsg_put_str(b, PSF_TEXT, "x");
}
static void f_notext(struct psmsg_buf *b)
{
    f_neither(b);
    psmsg_put_u32(b, PSF_ERRNO, 2);
}
static void f_bigtext(struct psmsg_buf *b)
{
    static char big[2000];
    memset(big, 'a', sizeof big - 1);
    f_notext(b);
    psmsg_put_str(b, PSF_TEXT, big);
}
static void f_nulcpus(struct psmsg_buf *b)
{
    f_neither(b);
    psmsg_put_u64(b, PSF_TID, 5);
    psmsg_put_bytes(b, PSF_CPU_LIST, "0\0001", 3);
}
static void f_shorttid(struct psmsg_buf *b)
{
    f_neither(b);
    psmsg_put_u32(b, PSF_TID, 5); /* a u32 where a u64 belongs */
}

/* the answers tree_start_next reads from body: good ones into *n, malformed into *bad */
static void count_starts(const struct psmsg_view *body, size_t *n, size_t *bad)
{
    struct tree_start d;
    const char *why;
    size_t pos = 0;
    int rc;
    *n = *bad = 0;
    while ((rc = tree_start_next(body, &pos, &d, &why)) != 0) *(rc > 0 ? n : bad) += 1;
}

static void test_start(void)
{
    struct tree_start s = {.rank = 7, .node = 3, .ok = true, .tid = 0x300001234ull}, d;
    strcpy(s.cpus, "0-1");
    struct psmsg_buf b = {0};
    struct psmsg m;
    psmsg_begin(&b, PSM_D_STARTED, 0);
    tree_start_put(&b, &s);
    struct tree_start e = {.rank = 8, .node = 4, .err = 2};
    strcpy(e.text, "cannot execute x");
    tree_start_put(&b, &e);
    CU_ASSERT_EQUAL_FATAL(psmsg_end(&b), 0);
    CU_ASSERT_EQUAL_FATAL(psmsg_parse(b.data, b.len, &m), 0);
    size_t pos = 0, n = 0;
    struct psmsg_field f;
    const char *why;
    while (psmsg_next(&m.body, &pos, &f)) {
        struct psmsg_view rec = psmsg_record(&f);
        CU_ASSERT_EQUAL_FATAL(tree_start_decode(&rec, &d, &why), 0);
        if (n++ == 0) {
            CU_ASSERT(d.ok);
            CU_ASSERT_EQUAL(d.tid, s.tid);
            CU_ASSERT_STRING_EQUAL(d.cpus, "0-1");
        } else {
            CU_ASSERT(!d.ok);
            CU_ASSERT_EQUAL(d.err, 2);
            CU_ASSERT_STRING_EQUAL(d.text, "cannot execute x");
        }
    }
    CU_ASSERT_EQUAL(n, 2);
    /* the same through the iterator, a malformed record between them skipped with why */
    size_t bad = 0;
    count_starts(&m.body, &n, &bad);
    CU_ASSERT_EQUAL(n, 2);
    CU_ASSERT_EQUAL(bad, 0);
    psmsg_buf_free(&b);
    psmsg_begin(&b, PSM_D_STARTED, 0);
    tree_start_put(&b, &s);
    psmsg_record_begin(&b, PSF_START);
    psmsg_put_u32(&b, PSF_RANK, 1); /* no node */
    psmsg_record_end(&b);
    tree_start_put(&b, &e);
    CU_ASSERT_EQUAL_FATAL(psmsg_end(&b), 0);
    CU_ASSERT_EQUAL_FATAL(psmsg_parse(b.data, b.len, &m), 0);
    count_starts(&m.body, &n, &bad);
    CU_ASSERT_EQUAL(n, 2);
    CU_ASSERT_EQUAL(bad, 1);
    psmsg_buf_free(&b);
    char text[200];
    tree_lost_text(text, sizeof text, 3, NULL);
    CU_ASSERT(strstr(text, "node 3 (?) of the launch tree was lost") != NULL);
    CU_ASSERT_EQUAL(start_decode(f_norank, &d, &why), -1);
    CU_ASSERT_EQUAL(start_decode(f_neither, &d, &why), -1);
    CU_ASSERT_EQUAL(start_decode(f_errno0, &d, &why), -1);
    CU_ASSERT_EQUAL(start_decode(f_notext, &d, &why), -1);
    CU_ASSERT_EQUAL(start_decode(f_bigtext, &d, &why), -1);
    CU_ASSERT_EQUAL(start_decode(f_nulcpus, &d, &why), -1);
    CU_ASSERT_EQUAL(start_decode(f_shorttid, &d, &why), -1);
}

/* One PSF_EXIT record: rank, node, tid (of node unless tid_node differs), status, [pmi]. */
static void put_exit(struct psmsg_buf *b, uint32_t rank, uint32_t node, uint32_t tid_node,
                     uint32_t status, int pmi)
{
    psmsg_record_begin(b, PSF_EXIT);
    psmsg_put_u64(b, PSF_JOB, 0x100000005ull);
    psmsg_put_u32(b, PSF_RANK, rank);
    psmsg_put_u64(b, PSF_TID, ((uint64_t)tid_node << 32) | 77);
    psmsg_put_u32(b, PSF_NODE_ID, node);
    psmsg_put_u32(b, PSF_STATUS, status);
    if (pmi >= 0) psmsg_put_u32(b, PSF_PMI_STATE, (uint32_t)pmi);
    psmsg_record_end(b);
}

/* PSM_D_EXITS: the records decode with rank, node, status and urgency; malformed ones (no
 * status, a short field, a task id of another node) are skipped with a reason */
static void test_exits(void)
{
    struct psmsg_buf b = {0};
    struct psmsg m;
    psmsg_begin(&b, PSM_D_EXITS, 0);
    psmsg_put_u64(&b, PSF_JOB, 0x100000005ull);
    put_exit(&b, 3, 2, 2, 0, -1);              /* ended well: not urgent */
    put_exit(&b, 4, 2, 2, 0, PSPMI_FINALIZED); /* an MPI rank that finalized */
    put_exit(&b, 5, 6, 6, 1 << 8, -1);         /* exit status 1: urgent */
    put_exit(&b, 6, 6, 6, 0, PSPMI_INIT);      /* left MPI without finalizing: urgent */
    put_exit(&b, 7, 6, 5, 0, -1);              /* a task id of node 5 for node 6: bad */
    psmsg_record_begin(&b, PSF_EXIT);          /* no status: bad */
    psmsg_put_u32(&b, PSF_RANK, 8);
    psmsg_put_u32(&b, PSF_NODE_ID, 6);
    psmsg_put_u64(&b, PSF_TID, 0x600000001ull);
    psmsg_record_end(&b);
    psmsg_record_begin(&b, PSF_EXIT); /* a short status: bad */
    psmsg_put_u32(&b, PSF_RANK, 9);
    psmsg_put_u32(&b, PSF_NODE_ID, 6);
    psmsg_put_u64(&b, PSF_TID, 0x600000001ull);
    psmsg_put_bytes(&b, PSF_STATUS, "\0\0", 2);
    psmsg_record_end(&b);
    CU_ASSERT_EQUAL_FATAL(psmsg_end(&b), 0);
    CU_ASSERT_EQUAL_FATAL(psmsg_parse(b.data, b.len, &m), 0);
    size_t pos = 0, good = 0, bad = 0;
    struct tree_exit e;
    const char *why = NULL;
    const bool urgent[4] = {false, false, true, true};
    for (int rc; (rc = tree_exit_next(&m.body, &pos, &e, &why)) != 0;) {
        if (rc < 0) {
            CU_ASSERT_PTR_NOT_NULL(why);
            bad++;
            continue;
        }
        CU_ASSERT_EQUAL(e.rank, 3 + good);
        CU_ASSERT_EQUAL(e.node, good < 2 ? 2u : 6u);
        CU_ASSERT_EQUAL(e.urgent, urgent[good]);
        CU_ASSERT(e.rec.len > 0);
        good++;
    }
    CU_ASSERT_EQUAL(good, 4);
    CU_ASSERT_EQUAL(bad, 3);
    psmsg_buf_free(&b);
}

UNIT_SUITE(treewire, UNIT_TEST(test_tree_under), UNIT_TEST(test_spawn_decode),
           UNIT_TEST(test_start), UNIT_TEST(test_exits))
