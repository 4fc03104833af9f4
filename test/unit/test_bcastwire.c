/*
 * test_bcastwire.c - unit tests for the file broadcast's messages (psid/bcastwire.c), the
 * outcome's decoder and the destination helpers of libpsi (psi/bcast.c), and the privileged
 * child's PRIV_BCAST_OPEN decoder (psid/privwire.c): good input, each field missing or out of
 * range, parts out of order, outside the subtree, without a parent, a node twice, every
 * truncation of a good open; the chunk arithmetic; the credential's digest.
 */
#include "../../psid/bcastwire.h"
#include "../../psid/privsep.h"
#include "../../psid/treewire.h"
#include "psi_bcast.h"
#include "psproto.h"
#include "unit.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void test_dest_and_digest(void)
{
    char err[400];
    CU_ASSERT_EQUAL(bcast_dest_check("/tmp/%N/x.%j.%n.%u", err, sizeof err), 0);
    CU_ASSERT_EQUAL(bcast_dest_check("/tmp/100%%", err, sizeof err), 0);
    CU_ASSERT_EQUAL(bcast_dest_check("tmp/x", err, sizeof err), -1);   /* relative */
    CU_ASSERT_EQUAL(bcast_dest_check("/tmp/x/", err, sizeof err), -1); /* a directory */
    CU_ASSERT_EQUAL(bcast_dest_check("/tmp/%t", err, sizeof err), -1); /* a rank */
    CU_ASSERT(strstr(err, "%t") != NULL);
    CU_ASSERT_EQUAL(bcast_dest_check("/tmp/%q", err, sizeof err), -1); /* not a pattern */
    char big[PSBCAST_DEST_MAX + 2];
    memset(big, 'a', sizeof big - 1);
    big[0] = '/';
    big[sizeof big - 1] = 0;
    CU_ASSERT_EQUAL(bcast_dest_check(big, err, sizeof err), -1);
    uint8_t a[32], b[32];
    bcast_digest("/x", 0, 0755, 10, a);
    bcast_digest("/x", PSBCAST_F_PRESERVE, 0755, 10, b); /* times are not bound */
    CU_ASSERT_EQUAL(memcmp(a, b, 32), 0);
    bcast_digest("/y", 0, 0755, 10, b);
    CU_ASSERT_NOT_EQUAL(memcmp(a, b, 32), 0);
    bcast_digest("/x", PSBCAST_F_FORCE, 0755, 10, b);
    CU_ASSERT_NOT_EQUAL(memcmp(a, b, 32), 0);
    bcast_digest("/x", 0, 0700, 10, b);
    CU_ASSERT_NOT_EQUAL(memcmp(a, b, 32), 0);
    bcast_digest("/x", 0, 0755, 11, b);
    CU_ASSERT_NOT_EQUAL(memcmp(a, b, 32), 0);
    CU_ASSERT_EQUAL(bcast_nchunks(0, 4096), 0);
    CU_ASSERT_EQUAL(bcast_nchunks(1, 4096), 1);
    CU_ASSERT_EQUAL(bcast_nchunks(4096, 4096), 1);
    CU_ASSERT_EQUAL(bcast_nchunks(4097, 4096), 2);
    CU_ASSERT_EQUAL(bcast_chunk_len(4097, 4096, 0), 4096);
    CU_ASSERT_EQUAL(bcast_chunk_len(4097, 4096, 1), 1);
    CU_ASSERT_EQUAL(bcast_chunk_len(4097, 4096, 2), 0);
    CU_ASSERT_EQUAL(bcast_chunk_len(10, 0, 0), 0);
}

struct part {
    uint32_t node, pos;
    bool cred;
};

/* Which of the open's fields to leave out or spoil. */
enum spoil {
    S_NONE,
    S_NO_ID,
    S_NO_UID,
    S_UID_ALL1,
    S_NO_DEST,
    S_REL_DEST,
    S_NO_SIZE,
    S_BIG_SIZE,
    S_FLAGS,
    S_MODE,
    S_CHUNK_SMALL,
    S_CHUNK_BIG,
    S_WIDTH0,
    S_NO_INDEX,
    S_SHORT_MTIME,
};

static int build(struct psmsg_buf *b, struct psmsg *m, enum spoil sp, const struct part *p,
                 size_t n)
{
    psmsg_begin(b, PSM_D_BCAST_OPEN, 0);
    if (sp != S_NO_ID) psmsg_put_u64(b, PSF_BCAST_ID, 0x0000000200000009ull);
    if (sp != S_NO_UID) psmsg_put_u32(b, PSF_UID, sp == S_UID_ALL1 ? UINT32_MAX : 1000);
    psmsg_put_u32(b, PSF_GID, 100);
    if (sp != S_NO_DEST) psmsg_put_str(b, PSF_BCAST_DEST, sp == S_REL_DEST ? "x/%N" : "/t/%N");
    if (sp != S_NO_SIZE)
        psmsg_put_u64(b, PSF_BYTES, sp == S_BIG_SIZE ? BCAST_SIZE_MAX + 1 : 1000000);
    psmsg_put_u32(b, PSF_BCAST_MODE, sp == S_MODE ? 04755 : 0755);
    psmsg_put_u32(b, PSF_BCAST_FLAGS, sp == S_FLAGS ? 8 : PSBCAST_F_FORCE);
    psmsg_put_u32(b, PSF_BCAST_CHUNK,
                  sp == S_CHUNK_SMALL ? 100
                  : sp == S_CHUNK_BIG ? PSBCAST_CHUNK_MAX + 1
                                      : 65536);
    psmsg_put_u32(b, PSF_TREE_WIDTH, sp == S_WIDTH0 ? 0 : 2);
    if (sp == S_SHORT_MTIME) psmsg_put_u32(b, PSF_BCAST_MTIME, 1);
    for (size_t i = 0; i < n; i++) {
        psmsg_record_begin(b, PSF_PART);
        psmsg_put_u32(b, PSF_NODE_ID, p[i].node);
        psmsg_put_u32(b, PSF_TREE_POS, p[i].pos);
        if (sp != S_NO_INDEX) psmsg_put_u32(b, PSF_NODE_INDEX, p[i].pos + 100);
        if (p[i].cred) psmsg_put_bytes(b, PSF_CRED, "cred", 4);
        psmsg_record_end(b);
    }
    if (psmsg_end(b) < 0) return -1;
    return psmsg_parse(b->data, b->len, m);
}

static int decode(enum spoil sp, const struct part *p, size_t n, uint32_t self)
{
    struct psmsg_buf b = {0};
    struct psmsg m;
    struct bcast_open o;
    const char *why = NULL;
    int rc = -2;
    if (build(&b, &m, sp, p, n) == 0) {
        rc = bcast_open_decode(&m.body, self, &o, &why);
        if (rc == 0) bcast_open_free(&o);
        if (rc < 0) CU_ASSERT_PTR_NOT_NULL(why);
    }
    psmsg_buf_free(&b);
    return rc;
}

static void test_open_decode(void)
{
    /* node 11 at place 1 (k = 2): children 3 (node 13) and 4 (node 14); 7, 8 under 3; 9
     * under 4; node 13 relays only (no credential) */
    const struct part ok[] = {{11, 1, true}, {13, 3, false}, {14, 4, true},
                              {17, 7, true}, {18, 8, true},  {19, 9, true}};
    struct psmsg_buf b = {0};
    struct psmsg m;
    struct bcast_open o;
    const char *why = NULL;
    CU_ASSERT_EQUAL_FATAL(build(&b, &m, S_NONE, ok, 6), 0);
    CU_ASSERT_EQUAL_FATAL(bcast_open_decode(&m.body, 11, &o, &why), 0);
    CU_ASSERT_EQUAL(o.id, 0x0000000200000009ull);
    CU_ASSERT_EQUAL(o.uid, 1000);
    CU_ASSERT_EQUAL(o.gid, 100);
    CU_ASSERT_STRING_EQUAL(o.dest, "/t/%N");
    CU_ASSERT_EQUAL(o.size, 1000000);
    CU_ASSERT_EQUAL(o.mode, 0755);
    CU_ASSERT_EQUAL(o.flags, PSBCAST_F_FORCE);
    CU_ASSERT_EQUAL(o.chunk, 65536);
    CU_ASSERT_EQUAL(o.nchunks, 16);
    CU_ASSERT_EQUAL(o.width, 2);
    CU_ASSERT_EQUAL(o.n, 6);
    CU_ASSERT_EQUAL(o.parts[0].nodeidx, 101);
    CU_ASSERT_PTR_NOT_NULL(o.parts[0].cred);
    CU_ASSERT_EQUAL(o.parts[0].credlen, 4);
    CU_ASSERT_PTR_NULL(o.parts[1].cred);
    uint32_t kid_of[6], kids[6];
    CU_ASSERT_EQUAL(bcast_kids(&o, kid_of, kids), 2);
    CU_ASSERT_EQUAL(kids[0], 1); /* place 3 */
    CU_ASSERT_EQUAL(kids[1], 2); /* place 4 */
    CU_ASSERT_EQUAL(kid_of[1], 0);
    CU_ASSERT_EQUAL(kid_of[2], 1);
    CU_ASSERT_EQUAL(kid_of[3], 0); /* 7 under 3 */
    CU_ASSERT_EQUAL(kid_of[4], 0); /* 8 under 3 */
    CU_ASSERT_EQUAL(kid_of[5], 1); /* 9 under 4 */
    bcast_open_free(&o);
    for (size_t len = 0; len < m.body.len; len++) { /* never past the end */
        struct psmsg_view v = {m.body.p, len};
        if (bcast_open_decode(&v, 11, &o, &why) == 0) bcast_open_free(&o);
    }
    psmsg_buf_free(&b);

    const enum spoil bad[] = {S_NO_ID,     S_NO_UID,   S_UID_ALL1, S_NO_DEST,    S_REL_DEST,
                              S_NO_SIZE,   S_BIG_SIZE, S_FLAGS,    S_MODE,       S_CHUNK_SMALL,
                              S_CHUNK_BIG, S_WIDTH0,   S_NO_INDEX, S_SHORT_MTIME};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CU_ASSERT_EQUAL(decode(bad[i], ok, 6, 11), -1);
    CU_ASSERT_EQUAL(decode(S_NONE, ok, 0, 11), -1); /* no part */
    CU_ASSERT_EQUAL(decode(S_NONE, ok, 6, 13), -1); /* not the receiver's first */
    const struct part order[] = {{11, 1, true}, {14, 4, true}, {13, 3, true}};
    CU_ASSERT_EQUAL(decode(S_NONE, order, 3, 11), -1);
    const struct part outside[] = {{11, 1, true}, {15, 5, true}};
    CU_ASSERT_EQUAL(decode(S_NONE, outside, 2, 11), -1);
    const struct part orphan[] = {{11, 1, true}, {17, 7, true}}; /* 7's parent 3 missing */
    CU_ASSERT_EQUAL(decode(S_NONE, orphan, 2, 11), -1);
    const struct part twice[] = {{11, 1, true}, {13, 3, true}, {13, 4, true}};
    CU_ASSERT_EQUAL(decode(S_NONE, twice, 3, 11), -1);
    const struct part place0[] = {{11, 0, true}};
    CU_ASSERT_EQUAL(decode(S_NONE, place0, 1, 11), -1);
    const struct part alone[] = {{11, 6, true}};
    CU_ASSERT_EQUAL(decode(S_NONE, alone, 1, 11), 0);
}

static void test_data_end(void)
{
    struct psmsg_buf b = {0};
    struct psmsg m;
    uint64_t id;
    uint32_t idx;
    struct psmsg_field f;
    uint8_t sum[32];
    psmsg_begin(&b, PSM_D_BCAST_DATA, 0);
    psmsg_put_u64(&b, PSF_BCAST_ID, 7);
    psmsg_put_u32(&b, PSF_N, 3);
    psmsg_put_bytes(&b, PSF_DATA, "abc", 3);
    CU_ASSERT_EQUAL_FATAL(psmsg_end(&b), 0);
    CU_ASSERT_EQUAL_FATAL(psmsg_parse(b.data, b.len, &m), 0);
    CU_ASSERT_EQUAL(bcast_data_decode(&m.body, &id, &idx, &f), 0);
    CU_ASSERT_EQUAL(id, 7);
    CU_ASSERT_EQUAL(idx, 3);
    CU_ASSERT_EQUAL(f.len, 3);
    CU_ASSERT_EQUAL(bcast_end_decode(&m.body, &id, sum), -1); /* no sum */
    psmsg_buf_free(&b);
    psmsg_begin(&b, PSM_D_BCAST_END, 0);
    psmsg_put_u64(&b, PSF_BCAST_ID, 7);
    psmsg_put_bytes(&b, PSF_BCAST_SUM, "short", 5);
    CU_ASSERT_EQUAL_FATAL(psmsg_end(&b), 0);
    CU_ASSERT_EQUAL_FATAL(psmsg_parse(b.data, b.len, &m), 0);
    CU_ASSERT_EQUAL(bcast_end_decode(&m.body, &id, sum), -1);       /* a sum not of 32 bytes */
    CU_ASSERT_EQUAL(bcast_data_decode(&m.body, &id, &idx, &f), -1); /* no number, no data */
    psmsg_buf_free(&b);
    uint8_t s32[32] = {1, 2, 3};
    psmsg_begin(&b, PSM_D_BCAST_END, 0);
    psmsg_put_u32(&b, PSF_BCAST_ID, 7); /* an id that is no u64 */
    psmsg_put_bytes(&b, PSF_BCAST_SUM, s32, 32);
    CU_ASSERT_EQUAL_FATAL(psmsg_end(&b), 0);
    CU_ASSERT_EQUAL_FATAL(psmsg_parse(b.data, b.len, &m), 0);
    CU_ASSERT_EQUAL(bcast_end_decode(&m.body, &id, sum), -1);
    psmsg_buf_free(&b);
}

/* an outcome: ok, failed, and nrec failure records (errno err, a text of textlen bytes) */
static int outcome(bool counts, uint32_t ok, uint32_t failed, size_t nrec, uint32_t err,
                   size_t textlen, struct psi_bcast_result *r)
{
    struct psmsg_buf b = {0};
    struct psmsg m;
    char *text = calloc(1, textlen + 1);
    memset(text, 'x', textlen);
    psmsg_begin(&b, PSM_BCAST_DONE, 0);
    psmsg_put_u64(&b, PSF_BCAST_ID, 5);
    if (counts) {
        psmsg_put_u32(&b, PSF_COUNT, ok);
        psmsg_put_u32(&b, PSF_N, failed);
    }
    for (size_t i = 0; i < nrec; i++) {
        psmsg_record_begin(&b, PSF_BCAST_FAIL);
        psmsg_put_u32(&b, PSF_NODE_ID, (uint32_t)i);
        psmsg_put_u32(&b, PSF_ERRNO, err);
        psmsg_put_str(&b, PSF_TEXT, text);
        psmsg_record_end(&b);
    }
    psmsg_put_u64(&b, PSF_ELAPSED_US, 42);
    const char *why = NULL;
    int rc = -2;
    if (psmsg_end(&b) == 0 && psmsg_parse(b.data, b.len, &m) == 0)
        rc = psi_bcast_result_parse(&m.body, r, &why);
    if (rc == -1) CU_ASSERT_PTR_NOT_NULL(why);
    psmsg_buf_free(&b);
    free(text);
    return rc;
}

static void test_outcome(void)
{
    struct psi_bcast_result r;
    CU_ASSERT_EQUAL(outcome(true, 5, 2, 2, ENOENT, 10, &r), 0);
    CU_ASSERT_EQUAL(r.ok, 5);
    CU_ASSERT_EQUAL(r.failed, 2);
    CU_ASSERT_EQUAL(r.nfails, 2);
    CU_ASSERT_EQUAL(r.fails[1].node, 1);
    CU_ASSERT_EQUAL(r.fails[1].err, ENOENT);
    CU_ASSERT_EQUAL(strlen(r.fails[1].text), 10);
    CU_ASSERT_EQUAL(r.id, 5);
    CU_ASSERT_EQUAL(r.elapsed_us, 42);
    CU_ASSERT_EQUAL(outcome(true, 0, 100, PSBCAST_FAILS, EIO, 5, &r), 0); /* more than named */
    CU_ASSERT_EQUAL(outcome(false, 5, 2, 2, ENOENT, 10, &r), -1);         /* no counts */
    CU_ASSERT_EQUAL(outcome(true, 5, 1, 2, ENOENT, 10, &r), -1); /* fewer counted than named */
    CU_ASSERT_EQUAL(outcome(true, 5, 2, 2, 0, 10, &r), -1);      /* errno 0 */
    CU_ASSERT_EQUAL(outcome(true, 5, 2, 2, 5000, 10, &r), -1);   /* not an errno */
    CU_ASSERT_EQUAL(outcome(true, 5, 2, 2, EIO, sizeof r.fails[0].text, &r), -1); /* too long */
    CU_ASSERT_EQUAL(outcome(true, 0, 100, PSBCAST_FAILS + 1, EIO, 5, &r), -1);    /* too many */
    /* the record encoder and the decoder agree */
    struct psmsg_buf b = {0};
    struct psmsg m;
    const char *why;
    psmsg_begin(&b, PSM_D_BCAST_DONE, 0);
    psmsg_put_u32(&b, PSF_COUNT, 0);
    psmsg_put_u32(&b, PSF_N, 1);
    psi_bcast_fail_put(&b, 9, EACCES, "no");
    CU_ASSERT_EQUAL_FATAL(psmsg_end(&b), 0);
    CU_ASSERT_EQUAL_FATAL(psmsg_parse(b.data, b.len, &m), 0);
    CU_ASSERT_EQUAL(psi_bcast_result_parse(&m.body, &r, &why), 0);
    CU_ASSERT_EQUAL(r.fails[0].node, 9);
    CU_ASSERT_EQUAL(r.fails[0].err, EACCES);
    CU_ASSERT_STRING_EQUAL(r.fails[0].text, "no");
    psmsg_buf_free(&b);
}

static void test_dest_helpers(void)
{
    char out[64];
    CU_ASSERT_EQUAL(psi_bcast_escape("a%b", out, sizeof out), 0);
    CU_ASSERT_STRING_EQUAL(out, "a%%b");
    CU_ASSERT_EQUAL(psi_bcast_escape("abcd", out, 4), -1);
    CU_ASSERT_EQUAL(psi_bcast_escape("%", out, 2), -1);
    CU_ASSERT_EQUAL(psi_bcast_dest(NULL, "p", out, sizeof out), 0);
    CU_ASSERT_STRING_EQUAL(out, "/tmp/p");
    CU_ASSERT_EQUAL(psi_bcast_dest("/d/", "p", out, sizeof out), 0);
    CU_ASSERT_STRING_EQUAL(out, "/d/p");
    CU_ASSERT_EQUAL(psi_bcast_dest("/d/f", "p", out, sizeof out), 0);
    CU_ASSERT_STRING_EQUAL(out, "/d/f");
    char cwd[4096], want[4200];
    CU_ASSERT_PTR_NOT_NULL_FATAL(getcwd(cwd, sizeof cwd));
    char big[8192];
    snprintf(want, sizeof want, "%s/rel/p", cwd);
    CU_ASSERT_EQUAL(psi_bcast_dest("rel/", "p", big, sizeof big), 0);
    CU_ASSERT_STRING_EQUAL(big, want);
    CU_ASSERT_EQUAL(psi_bcast_dest("/a/very/long/destination/", "name", out, 8), -1);
    CU_ASSERT_EQUAL(errno, ENAMETOOLONG);
}

static int priv_open(bool full, const char *dest, uint32_t flags, uint32_t mode, uint32_t uid,
                     struct priv_bcast_open *o)
{
    struct psmsg_buf b = {0};
    struct psmsg m;
    char why[300];
    psmsg_begin(&b, PRIV_BCAST_OPEN, 1);
    psmsg_put_u64(&b, PRIV_F_JOB, 3);
    psmsg_put_u32(&b, PRIV_F_UID, uid);
    psmsg_put_u32(&b, PRIV_F_GID, 100);
    if (dest) psmsg_put_str(&b, PRIV_F_DEST, dest);
    psmsg_put_u32(&b, PRIV_F_NODE_IDX, 2);
    psmsg_put_u32(&b, PRIV_F_FLAGS, flags);
    psmsg_put_u32(&b, PRIV_F_MODE, mode);
    if (full) psmsg_put_u64(&b, PRIV_F_SIZE, 10);
    psmsg_put_bytes(&b, PRIV_F_CRED, "c", 1);
    int rc = -2;
    if (psmsg_end(&b) == 0 && psmsg_parse(b.data, b.len, &m) == 0)
        rc = priv_decode_bcast_open(&m, o, why, sizeof why);
    psmsg_buf_free(&b);
    return rc;
}

static void test_priv_open(void)
{
    struct priv_bcast_open o;
    CU_ASSERT_EQUAL(priv_open(true, "/d/%N", PSBCAST_F_KEEP, 0700, 7, &o), 0);
    CU_ASSERT_EQUAL(o.id, 3);
    CU_ASSERT_EQUAL(o.uid, 7);
    CU_ASSERT_EQUAL(o.nodeidx, 2);
    CU_ASSERT_EQUAL(o.size, 10);
    CU_ASSERT_EQUAL(o.credlen, 1);
    CU_ASSERT_STRING_EQUAL(o.dest, "/d/%N");
    CU_ASSERT_EQUAL(priv_open(false, "/d/%N", 0, 0700, 7, &o), -1);         /* no size */
    CU_ASSERT_EQUAL(priv_open(true, NULL, 0, 0700, 7, &o), -1);             /* no dest */
    CU_ASSERT_EQUAL(priv_open(true, "d/%N", 0, 0700, 7, &o), -1);           /* relative */
    CU_ASSERT_EQUAL(priv_open(true, "/d/%t", 0, 0700, 7, &o), -1);          /* a rank */
    CU_ASSERT_EQUAL(priv_open(true, "/d/%N", 16, 0700, 7, &o), -1);         /* flags */
    CU_ASSERT_EQUAL(priv_open(true, "/d/%N", 0, 04700, 7, &o), -1);         /* setuid */
    CU_ASSERT_EQUAL(priv_open(true, "/d/%N", 0, 0700, UINT32_MAX, &o), -1); /* uid -1 */
}

UNIT_SUITE(bcastwire, UNIT_TEST(test_dest_and_digest), UNIT_TEST(test_open_decode),
           UNIT_TEST(test_data_end), UNIT_TEST(test_outcome), UNIT_TEST(test_dest_helpers),
           UNIT_TEST(test_priv_open))
