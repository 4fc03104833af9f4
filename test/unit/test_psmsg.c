/*
 * test_psmsg.c - unit tests for the psid message codec: round trips (integers, strings,
 * bytes, nested records), framing, and every kind of malformed message.
 */
#include "psmsg.h"
#include "psproto.h"
#include "unit.h"

#include <errno.h>
#include <string.h>

static void test_roundtrip(void)
{
    struct psmsg_buf b = {0};
    psmsg_begin(&b, PSM_NODES_REPLY, 77);
    psmsg_put_u32(&b, PSF_SELF, 3);
    psmsg_put_u64(&b, PSF_INCARNATION, 0x0102030405060708ull);
    psmsg_put_str(&b, PSF_TEXT, "hello");
    psmsg_put_bytes(&b, 999, "\0\1\2", 3);
    for (uint32_t i = 0; i < 3; i++) {
        psmsg_record_begin(&b, PSF_NODE);
        psmsg_put_u32(&b, PSF_NODE_ID, i);
        psmsg_put_str(&b, PSF_NAME, i == 1 ? "n1" : "node");
        psmsg_record_end(&b);
    }
    CU_ASSERT_EQUAL_FATAL(psmsg_end(&b), 0);
    CU_ASSERT_EQUAL(psmsg_frame_len(b.data, b.len), b.len);

    struct psmsg m;
    CU_ASSERT_EQUAL_FATAL(psmsg_parse(b.data, b.len, &m), 0);
    CU_ASSERT_EQUAL(m.type, PSM_NODES_REPLY);
    CU_ASSERT_EQUAL(m.id, 77);
    uint32_t u;
    uint64_t u64;
    char s[16];
    CU_ASSERT_EQUAL(psmsg_get_u32(&m.body, PSF_SELF, &u), 0);
    CU_ASSERT_EQUAL(u, 3);
    CU_ASSERT_EQUAL(psmsg_get_u64(&m.body, PSF_INCARNATION, &u64), 0);
    CU_ASSERT_EQUAL(u64, 0x0102030405060708ull);
    CU_ASSERT_EQUAL(psmsg_get_str(&m.body, PSF_TEXT, s, sizeof s), 0);
    CU_ASSERT_STRING_EQUAL(s, "hello");
    CU_ASSERT_EQUAL(psmsg_get_str(&m.body, PSF_TEXT, s, 5), -1);   /* does not fit */
    CU_ASSERT_EQUAL(psmsg_get_str(&m.body, 999, s, sizeof s), -1); /* holds a NUL */
    CU_ASSERT_EQUAL(psmsg_get_u32(&m.body, PSF_TEXT, &u), -1);     /* wrong size */
    CU_ASSERT_EQUAL(psmsg_get_u32(&m.body, 12345, &u), -1);        /* missing */
    size_t pos = 0;
    struct psmsg_field f;
    uint32_t nodes = 0;
    while (psmsg_next(&m.body, &pos, &f)) {
        if (f.tag != PSF_NODE) continue;
        struct psmsg_view v = psmsg_record(&f);
        CU_ASSERT_EQUAL(psmsg_get_u32(&v, PSF_NODE_ID, &u), 0);
        CU_ASSERT_EQUAL(u, nodes);
        nodes++;
    }
    CU_ASSERT_EQUAL(nodes, 3);
    /* a plain field is not a record */
    CU_ASSERT_TRUE(psmsg_find(&m.body, PSF_TEXT, &f));
    CU_ASSERT_EQUAL(psmsg_record(&f).len, 0);
    /* a client numbers a finished request as it sends it */
    psmsg_set_id(&b, 0x01020304u);
    CU_ASSERT_EQUAL_FATAL(psmsg_parse(b.data, b.len, &m), 0);
    CU_ASSERT_EQUAL(m.id, 0x01020304u);
    CU_ASSERT_EQUAL(m.type, PSM_NODES_REPLY);
    psmsg_buf_free(&b);
}

static void test_build_errors(void)
{
    struct psmsg_buf b = {0};
    psmsg_begin(&b, 1, 1);
    psmsg_record_begin(&b, PSF_NAME); /* not a record tag */
    errno = 0;
    CU_ASSERT_EQUAL(psmsg_end(&b), -1);
    CU_ASSERT_EQUAL(errno, EINVAL);
    psmsg_begin(&b, 1, 1);
    psmsg_record_begin(&b, PSF_NODE); /* never closed */
    CU_ASSERT_EQUAL(psmsg_end(&b), -1);
    psmsg_begin(&b, 1, 1);
    static uint8_t big[PSMSG_MAX];
    psmsg_put_bytes(&b, 5, big, sizeof big); /* over the limit */
    psmsg_put_u32(&b, 6, 1);                 /* and more after it */
    CU_ASSERT_EQUAL(psmsg_end(&b), -1);
    CU_ASSERT_EQUAL(errno, EMSGSIZE);
    /* what it would have taken, for the error message */
    CU_ASSERT_EQUAL(b.need, PSMSG_HDR + PSMSG_FHDR + sizeof big + PSMSG_FHDR + 4);
    psmsg_begin(&b, 1, 1); /* the buffer is usable again */
    psmsg_put_u32(&b, 5, 5);
    CU_ASSERT_EQUAL(psmsg_end(&b), 0);
    CU_ASSERT_EQUAL(b.need, b.len);
    psmsg_buf_free(&b);
}

static void test_malformed(void)
{
    struct psmsg_buf b = {0};
    psmsg_begin(&b, 10, 1);
    psmsg_put_u32(&b, 1, 2);
    psmsg_record_begin(&b, PSF_NODE);
    psmsg_put_str(&b, PSF_NAME, "abc");
    psmsg_record_end(&b);
    CU_ASSERT_EQUAL_FATAL(psmsg_end(&b), 0);
    uint8_t buf[256];
    size_t n = b.len;
    memcpy(buf, b.data, n);
    struct psmsg m;
    CU_ASSERT_EQUAL(psmsg_parse(buf, n, &m), 0);

    for (size_t k = 0; k < n; k++) { /* every truncation */
        errno = 0;
        CU_ASSERT_EQUAL(psmsg_parse(buf, k, &m), -1);
    }
#define BAD(off, val, err)                                                                         \
    do {                                                                                           \
        uint8_t c[256];                                                                            \
        memcpy(c, buf, n);                                                                         \
        c[off] = (val);                                                                            \
        errno = 0;                                                                                 \
        CU_ASSERT_EQUAL(psmsg_parse(c, n, &m), -1);                                                \
        CU_ASSERT_EQUAL(errno, err);                                                               \
    } while (0)
    BAD(0, 2, EPROTO);                 /* version */
    BAD(1, 1, EBADMSG);                /* flags */
    BAD(7, (uint8_t)(n + 1), EBADMSG); /* length field disagrees */
    BAD(12 + 2, 1, EBADMSG);           /* field reserved bytes */
    BAD(12 + 7, 200, EBADMSG);         /* field length past the end */
    BAD(12 + 12 + 7, 99, EBADMSG);     /* record length past the end */
    BAD(12 + 12 + 8 + 7, 50, EBADMSG); /* field inside the record overruns it */
    CU_ASSERT_EQUAL(psmsg_frame_len(buf, 11), 0);
    uint8_t c[16] = {1, 0, 0, 1, 0, 0x10, 0, 1, 0, 0, 0, 0}; /* claims 1 MiB + 1 */
    CU_ASSERT_EQUAL(psmsg_frame_len(c, 12), 0);
    uint8_t d[16] = {1, 0, 0, 1, 0, 0, 0, 11, 0, 0, 0, 0}; /* shorter than a header */
    CU_ASSERT_EQUAL(psmsg_frame_len(d, 12), 0);

    /* records nested deeper than PSMSG_DEPTH are refused */
    uint8_t deep[12 + 8 * 5];
    memset(deep, 0, sizeof deep);
    deep[0] = 1;
    deep[7] = sizeof deep;
    for (int i = 0; i < 5; i++) {
        uint8_t *f = deep + 12 + 8 * i;
        f[0] = 0x80;
        f[1] = 1;
        f[7] = (uint8_t)(8 * (4 - i));
    }
    CU_ASSERT_EQUAL(psmsg_parse(deep, sizeof deep, &m), -1);
    psmsg_buf_free(&b);
#undef BAD
}

UNIT_SUITE(psmsg, UNIT_TEST(test_roundtrip), UNIT_TEST(test_build_errors),
           UNIT_TEST(test_malformed))
