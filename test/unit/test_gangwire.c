/*
 * test_gangwire.c - unit tests for the gang switch record (psproto.h, psid/gangwire.c):
 * round trip, the exact bytes of a small record, and malformed input (every truncation and
 * extension, a wrong version, reserved bytes set, counts and rows out of range).
 */
#include "../../psid/gangwire.h"
#include "unit.h"

#include <stdlib.h>
#include <string.h>

static struct gang_switch *sample(uint16_t njobs)
{
    struct gang_switch *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->scheduler = 3;
    s->epoch = 0x1122334455667788ull;
    s->seq = 42;
    s->at_ns = 0x0102030405060708ull;
    s->quantum_ms = 100;
    s->row = 1;
    s->rows = 2;
    s->njobs = njobs;
    for (uint16_t i = 0; i < njobs; i++) {
        s->jobs[i].job = (uint64_t)(i % 5) << 32 | (1000u + i);
        s->jobs[i].row = i == 2 ? GANG_ROW_QUEUED : (uint16_t)(i % 2);
    }
    return s;
}

static void test_gang_roundtrip(void)
{
    struct gang_switch *s = sample(3), *d = calloc(1, sizeof *d);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    CU_ASSERT_PTR_NOT_NULL_FATAL(d);
    uint8_t buf[gang_wire_len(3)];
    CU_ASSERT_EQUAL_FATAL(gang_encode(buf, sizeof buf, s), 76);
    /* network byte order, field by field */
    static const uint8_t head[] = {
        1, 0, 0, 3,  0, 0, 0, 3, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0, 0, 0, 0,
        0, 0, 0, 42, 1, 2, 3, 4, 5,    6,    7,    8,    0,    0,    0,    100,  0, 1, 0, 2};
    CU_ASSERT(memcmp(buf, head, sizeof head) == 0);
    static const uint8_t e1[] = {0, 0, 0, 1, 0, 0, 0x03, 0xe9, 0, 1, 0, 0};
    CU_ASSERT(memcmp(buf + 52, e1, sizeof e1) == 0);
    const char *why = NULL;
    CU_ASSERT_EQUAL_FATAL(gang_decode(buf, sizeof buf, d, &why), 0);
    CU_ASSERT_EQUAL(d->scheduler, 3);
    CU_ASSERT_EQUAL(d->epoch, s->epoch);
    CU_ASSERT_EQUAL(d->seq, 42);
    CU_ASSERT_EQUAL(d->at_ns, s->at_ns);
    CU_ASSERT_EQUAL(d->quantum_ms, 100);
    CU_ASSERT_EQUAL(d->row, 1);
    CU_ASSERT_EQUAL(d->rows, 2);
    CU_ASSERT_EQUAL(d->njobs, 3);
    for (int i = 0; i < 3; i++) {
        CU_ASSERT_EQUAL(d->jobs[i].job, s->jobs[i].job);
        CU_ASSERT_EQUAL(d->jobs[i].row, s->jobs[i].row);
    }
    /* the largest record */
    free(s);
    s = sample(GANG_WIRE_MAX_JOBS);
    uint8_t *big = malloc(gang_wire_len(GANG_WIRE_MAX_JOBS));
    CU_ASSERT_PTR_NOT_NULL_FATAL(big);
    size_t n = gang_encode(big, gang_wire_len(GANG_WIRE_MAX_JOBS), s);
    CU_ASSERT_EQUAL(n, gang_wire_len(GANG_WIRE_MAX_JOBS));
    CU_ASSERT_EQUAL(gang_decode(big, n, d, &why), 0);
    CU_ASSERT_EQUAL(d->jobs[GANG_WIRE_MAX_JOBS - 1].job, s->jobs[GANG_WIRE_MAX_JOBS - 1].job);
    /* too small a buffer, or a record that breaks a rule: nothing encoded */
    CU_ASSERT_EQUAL(gang_encode(big, 10, s), 0);
    s->row = 2;
    CU_ASSERT_EQUAL(gang_encode(big, gang_wire_len(GANG_WIRE_MAX_JOBS), s), 0);
    free(big);
    free(s);
    free(d);
}

static void expect_bad(const uint8_t *buf, size_t n, const char *what)
{
    static struct gang_switch d;
    const char *why = NULL;
    CU_ASSERT_EQUAL(gang_decode(buf, n, &d, &why), -1);
    CU_ASSERT_PTR_NOT_NULL(why);
    if (why && strcmp(why, what) != 0) fprintf(stderr, "\n  want %s, got %s\n", what, why);
    CU_ASSERT(why && strcmp(why, what) == 0);
}

static void test_gang_malformed(void)
{
    struct gang_switch *s = sample(2);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    uint8_t buf[gang_wire_len(2) + 16], m[sizeof buf];
    size_t n = gang_encode(buf, sizeof buf, s);
    CU_ASSERT_EQUAL_FATAL(n, 64);
    for (size_t k = 0; k < n; k++) expect_bad(buf, k, "length"); /* every truncation */
    memcpy(m, buf, n);
    memset(m + n, 0, 16);
    for (size_t k = n + 1; k <= n + 16; k++) expect_bad(m, k, "length"); /* trailing bytes */
#define MUTATE(off, val, what)                                                                     \
    do {                                                                                           \
        memcpy(m, buf, n);                                                                         \
        m[off] = (val);                                                                            \
        expect_bad(m, n, what);                                                                    \
    } while (0)
    MUTATE(0, 0, "version");
    MUTATE(0, 2, "version");
    MUTATE(1, 1, "reserved");
    MUTATE(3, 3, "length");   /* 3 entries announced, 2 present */
    MUTATE(3, 1, "length");   /* 1 announced, 2 present */
    MUTATE(2, 0x10, "jobs");  /* 4098 > GANG_WIRE_MAX_JOBS */
    MUTATE(2, 0xff, "jobs");  /* 65282 */
    MUTATE(35, 0, "quantum"); /* quantum 0 */
    MUTATE(32, 0xff, "quantum");
    MUTATE(39, 0, "rows");
    MUTATE(38, 1, "rows"); /* 258 rows */
    MUTATE(37, 2, "row");  /* row 2 of 2 */
    MUTATE(36, 0xff, "row");
    MUTATE(GANG_WIRE_HEAD + 9, 2, "entry row");
    MUTATE(GANG_WIRE_HEAD + 12 + 8, 0x7f, "entry row");
    MUTATE(GANG_WIRE_HEAD + 10, 1, "entry reserved");
    MUTATE(GANG_WIRE_HEAD + 12 + 11, 1, "entry reserved");
#undef MUTATE
    /* a queued entry is valid */
    memcpy(m, buf, n);
    m[GANG_WIRE_HEAD + 8] = 0xff;
    m[GANG_WIRE_HEAD + 9] = 0xff;
    static struct gang_switch d;
    CU_ASSERT_EQUAL(gang_decode(m, n, &d, NULL), 0);
    CU_ASSERT_EQUAL(d.jobs[0].row, GANG_ROW_QUEUED);
    /* no jobs at all: a bare head is a valid switch */
    s->njobs = 0;
    CU_ASSERT_EQUAL(gang_encode(buf, sizeof buf, s), GANG_WIRE_HEAD);
    CU_ASSERT_EQUAL(gang_decode(buf, GANG_WIRE_HEAD, &d, NULL), 0);
    CU_ASSERT_EQUAL(gang_decode(NULL, 0, &d, NULL), -1);
    free(s);
}

UNIT_SUITE(gangwire, UNIT_TEST(test_gang_roundtrip), UNIT_TEST(test_gang_malformed))
