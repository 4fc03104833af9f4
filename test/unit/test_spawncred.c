/*
 * test_spawncred.c - unit tests for the spawn credential (psid/spawncred.c): its encoding
 * round trip; every byte altered, a wrong length, another version or key refused; the
 * checks of target, job, user, program and time; the book that refuses a replay beyond the
 * credential's ranks and forgets it once it expired; and the digest of a program, which
 * tells arguments from environment and depends on every part.
 */
#include "../../psid/spawncred.h"
#include "psproto.h"
#include "unit.h"

#include <string.h>

#define SEC 1000000000ull
static const uint8_t key[32] = "spawn key spawn key spawn key 1";
static const uint64_t t0 = 1700000000ull * SEC;

static struct spawncred cred(void)
{
    struct spawncred c = {.origin = 2,
                          .target = 5,
                          .uid = 1000,
                          .gid = 100,
                          .nranks = 2,
                          .job = PSTID(2, 77),
                          .issued = t0};
    memset(c.nonce, 0xab, sizeof c.nonce);
    memset(c.digest, 0x5c, sizeof c.digest);
    return c;
}

static struct spawncred_want want(void)
{
    struct spawncred_want w = {.node = 5, .uid = 1000, .gid = 100, .job = PSTID(2, 77)};
    memset(w.digest, 0x5c, sizeof w.digest);
    return w;
}

static void test_roundtrip(void)
{
    struct spawncred c = cred(), d;
    uint8_t b[SPAWNCRED_LEN];
    const char *why;
    spawncred_encode(&c, key, b);
    CU_ASSERT_EQUAL(b[0], SPAWNCRED_VERSION);
    CU_ASSERT_EQUAL_FATAL(spawncred_decode(b, sizeof b, key, &d, &why), 0);
    CU_ASSERT(c.origin == d.origin && c.target == d.target && c.uid == d.uid && c.gid == d.gid &&
              c.nranks == d.nranks && c.job == d.job && c.issued == d.issued);
    CU_ASSERT_EQUAL(memcmp(c.nonce, d.nonce, sizeof c.nonce), 0);
    CU_ASSERT_EQUAL(memcmp(c.digest, d.digest, sizeof c.digest), 0);
    /* every byte altered, MAC included: refused */
    for (size_t i = 0; i < sizeof b; i++) {
        uint8_t x[SPAWNCRED_LEN];
        memcpy(x, b, sizeof x);
        x[i] ^= 0x10;
        CU_ASSERT_EQUAL(spawncred_decode(x, sizeof x, key, &d, &why), -1);
    }
    CU_ASSERT_EQUAL(spawncred_decode(b, sizeof b - 1, key, &d, &why), -1);
    CU_ASSERT_EQUAL(spawncred_decode(b, 0, key, &d, &why), -1);
    uint8_t other[32];
    memcpy(other, key, sizeof other);
    other[0] ^= 1;
    CU_ASSERT_EQUAL(spawncred_decode(b, sizeof b, other, &d, &why), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(why, "MAC"));
}

/* A MAC made with the right key over another version is still refused. */
static void test_version(void)
{
    struct spawncred c = cred(), d;
    uint8_t b[SPAWNCRED_LEN], m[32];
    const char *why;
    spawncred_encode(&c, key, b);
    b[0] = 2;
    crypto_generichash(m, 32, b, SPAWNCRED_LEN - 32, key, 32);
    memcpy(b + SPAWNCRED_LEN - 32, m, 32);
    CU_ASSERT_EQUAL(spawncred_decode(b, sizeof b, key, &d, &why), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(why, "version"));
}

static int check(const struct spawncred *c, const struct spawncred_want *w, uint64_t now,
                 uint64_t mono, struct spawncred_book *bk, char *why)
{
    uint8_t b[SPAWNCRED_LEN];
    spawncred_encode(c, key, b);
    return spawncred_check(b, sizeof b, key, w, now, mono, bk, why, 200);
}

static void test_check_fields(void)
{
    struct spawncred_book *bk = spawncred_book_new();
    CU_ASSERT_PTR_NOT_NULL_FATAL(bk);
    char why[200];
    struct spawncred c = cred();
    struct spawncred_want w = want();
    w.node = 6;
    CU_ASSERT_EQUAL(check(&c, &w, t0, 1, bk, why), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(why, "for node 5"));
    w = want();
    w.uid = 0;
    CU_ASSERT_EQUAL(check(&c, &w, t0, 1, bk, why), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(why, "uid 1000 gid 100, not uid 0"));
    w = want();
    w.gid = 0;
    CU_ASSERT_EQUAL(check(&c, &w, t0, 1, bk, why), -1);
    w = want();
    w.job = PSTID(2, 78);
    CU_ASSERT_EQUAL(check(&c, &w, t0, 1, bk, why), -1);
    w = want();
    w.digest[31] ^= 1;
    CU_ASSERT_EQUAL(check(&c, &w, t0, 1, bk, why), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(why, "another program"));
    /* a job whose id is not its origin's */
    c.origin = 3;
    w = want();
    CU_ASSERT_EQUAL(check(&c, &w, t0, 1, bk, why), -1);
    c = cred();
    /* time: within the TTL, within the skew before */
    CU_ASSERT_EQUAL(check(&c, &w, t0 + SPAWNCRED_TTL_NS + 1, 1, bk, why), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(why, "expired"));
    CU_ASSERT_EQUAL(check(&c, &w, t0 - SPAWNCRED_SKEW_NS - 1, 1, bk, why), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(why, "future"));
    CU_ASSERT_EQUAL(spawncred_book_size(bk), 0); /* nothing refused was counted */
    CU_ASSERT_EQUAL(check(&c, &w, t0 - SPAWNCRED_SKEW_NS, 1, bk, why), 0);
    c.nonce[0] ^= 1;
    CU_ASSERT_EQUAL(check(&c, &w, t0 + SPAWNCRED_TTL_NS, 1, bk, why), 0);
    c.nonce[0] ^= 2;
    c.nranks = 0;
    CU_ASSERT_EQUAL(check(&c, &w, t0, 1, bk, why), -1);
    CU_ASSERT_EQUAL(spawncred_check(NULL, 0, key, &w, t0, 1, bk, why, sizeof why), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(why, "no spawn credential"));
    spawncred_book_free(bk);
}

/* A credential starts its nranks ranks, then no more until it is forgotten, which is not
 * before it could have expired. */
static void test_replay(void)
{
    struct spawncred_book *bk = spawncred_book_new();
    char why[200];
    struct spawncred c = cred();
    struct spawncred_want w = want();
    CU_ASSERT_EQUAL(check(&c, &w, t0, 10, bk, why), 0);
    CU_ASSERT_EQUAL(check(&c, &w, t0, 11, bk, why), 0);
    CU_ASSERT_EQUAL(check(&c, &w, t0 + SEC, 12, bk, why), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(why, "replayed"));
    /* the same job's other credential (another nonce) is its own */
    struct spawncred c2 = cred();
    c2.nonce[15] = 1;
    c2.nranks = 1;
    CU_ASSERT_EQUAL(check(&c2, &w, t0, 12, bk, why), 0);
    CU_ASSERT_EQUAL(check(&c2, &w, t0, 13, bk, why), -1);
    /* the same nonce from another origin is another credential */
    struct spawncred c3 = cred();
    c3.origin = 7;
    c3.job = PSTID(7, 77);
    w.job = c3.job;
    CU_ASSERT_EQUAL(check(&c3, &w, t0, 13, bk, why), 0);
    CU_ASSERT_EQUAL(spawncred_book_size(bk), 3);
    /* remembered as long as a copy could still be taken, then forgotten */
    w = want();
    uint64_t life = SPAWNCRED_TTL_NS + SPAWNCRED_SKEW_NS;
    CU_ASSERT_EQUAL(check(&c, &w, t0, 10 + life - 1, bk, why), -1);
    CU_ASSERT_EQUAL(spawncred_book_size(bk), 3);
    CU_ASSERT_EQUAL(check(&c, &w, t0 + SEC, 13 + life, bk, why), 0); /* book expired */
    CU_ASSERT_EQUAL(spawncred_book_size(bk), 1);
    spawncred_book_free(bk);
}

/* The book is bounded: past SPAWNCRED_BOOK_MAX credentials in their life, a new one waits. */
static void test_book_full(void)
{
    struct spawncred_book *bk = spawncred_book_new();
    char why[200];
    struct spawncred c = cred();
    struct spawncred_want w = want();
    for (uint32_t i = 0; i < SPAWNCRED_BOOK_MAX; i++) {
        memcpy(c.nonce, &i, sizeof i);
        if (check(&c, &w, t0, 1, bk, why) != 0) {
            CU_FAIL("a credential refused before the book was full");
            break;
        }
    }
    c.nonce[15] = 0xee;
    CU_ASSERT_EQUAL(check(&c, &w, t0, 2, bk, why), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(why, "in use"));
    CU_ASSERT_EQUAL(check(&c, &w, t0, 1 + SPAWNCRED_TTL_NS + SPAWNCRED_SKEW_NS, bk, why), 0);
    CU_ASSERT_EQUAL(spawncred_book_size(bk), 1);
    spawncred_book_free(bk);
}

static void digest(const char *const *argv, const char *const *env, const char *cwd, uint32_t umask,
                   uint8_t out[32])
{
    struct spawncred_hash h;
    spawncred_hash_init(&h);
    for (size_t i = 0; argv[i]; i++) spawncred_hash_arg(&h, argv[i], strlen(argv[i]));
    for (size_t i = 0; env[i]; i++) spawncred_hash_env(&h, env[i], strlen(env[i]));
    spawncred_hash_final(&h, cwd, umask, out);
}

static void test_digest(void)
{
    const char *argv[] = {"/bin/sh", "-c", "echo", NULL}, *env[] = {"A=1", "B=2", NULL};
    const char *argv2[] = {"/bin/sh", "-c", NULL}, *env2[] = {"echo", "A=1", "B=2", NULL};
    const char *env3[] = {"A=1", "B=3", NULL}, *none[] = {NULL};
    uint8_t a[32], b[32];
    digest(argv, env, "/tmp", 022, a);
    digest(argv, env, "/tmp", 022, b);
    CU_ASSERT_EQUAL(memcmp(a, b, 32), 0);
    digest(argv2, env2, "/tmp", 022, b); /* an argument is not a variable */
    CU_ASSERT_NOT_EQUAL(memcmp(a, b, 32), 0);
    digest(argv, env3, "/tmp", 022, b);
    CU_ASSERT_NOT_EQUAL(memcmp(a, b, 32), 0);
    digest(argv, env, "/tmp/", 022, b);
    CU_ASSERT_NOT_EQUAL(memcmp(a, b, 32), 0);
    digest(argv, env, "/tmp", 077, b);
    CU_ASSERT_NOT_EQUAL(memcmp(a, b, 32), 0);
    digest(argv, env, "/tmp", 01022, b); /* the umask's bits beyond 0777 are not a umask's */
    CU_ASSERT_EQUAL(memcmp(a, b, 32), 0);
    digest(argv, none, NULL, 022, a);
    digest(argv, none, "", 022, b); /* no directory is an empty one */
    CU_ASSERT_EQUAL(memcmp(a, b, 32), 0);
    /* --output-on-node: the patterns, the mode and the job's name count, each apart */
    struct spawncred_hash h0, h;
    uint8_t o[32];
    spawncred_hash_init(&h0);
    spawncred_hash_arg(&h0, "/bin/true", 9);
    spawncred_hash_final(&h0, "/tmp", 022, a);
    const char *pats[][3] = {
        {"o-%t", NULL, "x"}, {NULL, "o-%t", "x"}, {"o-%t", NULL, "y"}, {"o-%t", "o-%t", "x"}};
    for (size_t i = 0; i < sizeof pats / sizeof pats[0]; i++) {
        h = h0;
        spawncred_hash_out(&h, pats[i][0], pats[i][1], 0, pats[i][2]);
        spawncred_hash_final(&h, "/tmp", 022, b);
        CU_ASSERT_NOT_EQUAL(memcmp(a, b, 32), 0);
        h = h0;
        spawncred_hash_out(&h, pats[i][0], pats[i][1], 1, pats[i][2]);
        spawncred_hash_final(&h, "/tmp", 022, o);
        CU_ASSERT_NOT_EQUAL(memcmp(o, b, 32), 0); /* append is not truncate */
        for (size_t k = 0; k < i; k++) {
            uint8_t p[32];
            h = h0;
            spawncred_hash_out(&h, pats[k][0], pats[k][1], 0, pats[k][2]);
            spawncred_hash_final(&h, "/tmp", 022, p);
            CU_ASSERT_NOT_EQUAL(memcmp(p, b, 32), 0);
        }
    }
    uint8_t k1[32], k2[32], ck[32] = {1};
    spawncred_key(ck, k1);
    ck[0] = 2;
    spawncred_key(ck, k2);
    CU_ASSERT_NOT_EQUAL(memcmp(k1, k2, 32), 0);
    CU_ASSERT_NOT_EQUAL(memcmp(k1, ck, 32), 0);
}

UNIT_SUITE(spawncred, UNIT_TEST(test_roundtrip), UNIT_TEST(test_version),
           UNIT_TEST(test_check_fields), UNIT_TEST(test_replay), UNIT_TEST(test_book_full),
           UNIT_TEST(test_digest))
