/*
 * test_rdpbench_ctl.c - unit tests for rdpbench's control protocol (rdpbench/ctl.c): every
 * frame and body round-trips, and malformed input is refused: a frame header with another
 * magic, version, reserved field or an oversized length, bodies one byte short or long,
 * HELLO values out of range, statistics of another build's shape.
 */
#include "../../rdpbench/ctl.h"
#include "unit.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>

static void test_frame(void)
{
    uint8_t f[RB_CTL_HDR + RB_CTL_MAX_BODY], type;
    uint32_t len;
    char why[128];
    size_t n = rb_ctl_frame(f, CT_DONE, "0123456789abcdef", 16);
    CU_ASSERT_EQUAL(n, RB_CTL_HDR + 16);
    for (size_t k = 0; k < n; k++) /* a partial frame wants more */
        CU_ASSERT_EQUAL(rb_ctl_frame_parse(f, k, &type, &len, why, sizeof why), 0);
    CU_ASSERT_EQUAL(rb_ctl_frame_parse(f, n, &type, &len, why, sizeof why), 1);
    CU_ASSERT_EQUAL(type, CT_DONE);
    CU_ASSERT_EQUAL(len, 16);
    CU_ASSERT_EQUAL(memcmp(f + RB_CTL_HDR, "0123456789abcdef", 16), 0);
    /* a body over the limit is cut to it */
    static uint8_t big[RB_CTL_MAX_BODY + 100];
    CU_ASSERT_EQUAL(rb_ctl_frame(f, CT_ERR, big, sizeof big), RB_CTL_HDR + RB_CTL_MAX_BODY);

    /* malformed headers: magic, version, reserved, length */
    const size_t at[] = {0, 4, 6, 8};
    for (size_t k = 0; k < sizeof at / sizeof at[0]; k++) {
        uint8_t g[RB_CTL_HDR];
        rb_ctl_frame(g, CT_FIN, NULL, 0);
        g[at[k]] = 0xff;
        why[0] = '\0';
        CU_ASSERT_EQUAL(rb_ctl_frame_parse(g, sizeof g, &type, &len, why, sizeof why), -1);
        CU_ASSERT(strstr(why, "bad frame header") != NULL);
    }
    uint8_t g[RB_CTL_HDR];
    rb_ctl_frame(g, CT_FIN, NULL, 0);
    g[10] = (RB_CTL_MAX_BODY + 1) >> 8; /* one byte over the limit */
    g[11] = (RB_CTL_MAX_BODY + 1) & 0xff;
    CU_ASSERT_EQUAL(rb_ctl_frame_parse(g, sizeof g, &type, &len, why, sizeof why), -1);
}

static struct rb_hello hello_v4(void)
{
    struct rb_hello h = {.mode = RB_MODE_STREAM,
                         .flags = RB_HELLO_F_VSTCP,
                         .mac = 2,
                         .smin = 1,
                         .smax = 65536,
                         .count = 1000,
                         .warmup = 7,
                         .seed = 0x0102030405060708ull,
                         .mtu = 1500,
                         .timeout_s = 30};
    struct sockaddr_in *s = (struct sockaddr_in *)&h.addr;
    s->sin_family = AF_INET;
    s->sin_port = htons(4711);
    s->sin_addr.s_addr = htonl(0x7f000002);
    h.addrlen = sizeof *s;
    memset(h.key_check, 0xa5, sizeof h.key_check);
    return h;
}

static void test_hello(void)
{
    struct rb_hello h = hello_v4(), d;
    uint8_t p[RB_HELLO_LEN + 1];
    char why[128];
    rb_hello_encode(&h, p);
    CU_ASSERT_EQUAL_FATAL(rb_hello_decode(p, RB_HELLO_LEN, &d, why, sizeof why), 0);
    CU_ASSERT_EQUAL(d.mode, h.mode);
    CU_ASSERT_EQUAL(d.flags, h.flags);
    CU_ASSERT_EQUAL(d.mac, h.mac);
    CU_ASSERT_EQUAL(d.smax, 65536);
    CU_ASSERT_EQUAL(d.count, 1000);
    CU_ASSERT_EQUAL(d.warmup, 7);
    CU_ASSERT_EQUAL(d.seed, h.seed);
    CU_ASSERT_EQUAL(d.mtu, 1500);
    CU_ASSERT_EQUAL(d.timeout_s, 30);
    CU_ASSERT_EQUAL(d.addrlen, sizeof(struct sockaddr_in));
    CU_ASSERT_EQUAL(memcmp(&d.addr, &h.addr, sizeof(struct sockaddr_in)), 0);
    CU_ASSERT_EQUAL(memcmp(d.key_check, h.key_check, sizeof d.key_check), 0);

    /* IPv6 */
    struct rb_hello h6 = hello_v4();
    struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&h6.addr;
    memset(&h6.addr, 0, sizeof h6.addr);
    s6->sin6_family = AF_INET6;
    s6->sin6_port = htons(9);
    s6->sin6_addr = in6addr_loopback;
    rb_hello_encode(&h6, p);
    CU_ASSERT_EQUAL_FATAL(rb_hello_decode(p, RB_HELLO_LEN, &d, why, sizeof why), 0);
    CU_ASSERT_EQUAL(d.addrlen, sizeof(struct sockaddr_in6));
    CU_ASSERT_EQUAL(((struct sockaddr_in6 *)&d.addr)->sin6_port, htons(9));

    /* wrong lengths */
    rb_hello_encode(&h, p);
    CU_ASSERT_EQUAL(rb_hello_decode(p, RB_HELLO_LEN - 1, &d, why, sizeof why), -1);
    CU_ASSERT(strstr(why, "HELLO of 79 bytes") != NULL);
    CU_ASSERT_EQUAL(rb_hello_decode(p, RB_HELLO_LEN + 1, &d, why, sizeof why), -1);
    CU_ASSERT_EQUAL(rb_hello_decode(p, 0, &d, why, sizeof why), -1);

    /* values out of range, one at a time */
    struct {
        struct rb_hello h;
        const char *why;
    } bad[8];
    for (int k = 0; k < 8; k++) bad[k].h = hello_v4();
    bad[0].h.mode = 3, bad[0].why = "bad mode";
    bad[1].h.mode = 0, bad[1].why = "bad mode";
    bad[2].h.smin = 0, bad[2].why = "bad sizes";
    bad[3].h.smin = 10, bad[3].h.smax = 9, bad[3].why = "bad sizes";
    bad[4].h.smax = RDP_MAX_MSG + 1, bad[4].why = "bad sizes";
    bad[5].h.count = 0, bad[5].why = "bad count";
    bad[6].h.count = RB_COUNT_MAX + 1, bad[6].why = "bad count";
    bad[7].h.warmup = RB_COUNT_MAX + 1, bad[7].why = "bad count";
    for (int k = 0; k < 8; k++) {
        rb_hello_encode(&bad[k].h, p);
        why[0] = '\0';
        CU_ASSERT_EQUAL(rb_hello_decode(p, RB_HELLO_LEN, &d, why, sizeof why), -1);
        CU_ASSERT(strstr(why, bad[k].why) != NULL);
    }
    rb_hello_encode(&h, p);
    p[45] = 5; /* address family 5 */
    CU_ASSERT_EQUAL(rb_hello_decode(p, RB_HELLO_LEN, &d, why, sizeof why), -1);
    CU_ASSERT(strstr(why, "bad address family 5") != NULL);
}

static void test_bodies(void)
{
    uint8_t p[RB_STATS_LEN + 1];
    struct rb_ready r = {.data_port = 4242, .faults = true, .mtu = 9000}, rd;
    rb_ready_encode(&r, p);
    CU_ASSERT_EQUAL_FATAL(rb_ready_decode(p, RB_READY_LEN, &rd), 0);
    CU_ASSERT_EQUAL(rd.data_port, 4242);
    CU_ASSERT(rd.faults);
    CU_ASSERT_EQUAL(rd.mtu, 9000);
    CU_ASSERT_EQUAL(rb_ready_decode(p, RB_READY_LEN - 1, &rd), -1);
    CU_ASSERT_EQUAL(rb_ready_decode(p, RB_READY_LEN + 1, &rd), -1);

    uint64_t c, b;
    rb_done_encode(300, 1u << 20, p);
    CU_ASSERT_EQUAL(rb_done_decode(p, RB_DONE_LEN, &c, &b), 0);
    CU_ASSERT_EQUAL(c, 300);
    CU_ASSERT_EQUAL(b, 1u << 20);
    CU_ASSERT_EQUAL(rb_done_decode(p, RB_DONE_LEN - 1, &c, &b), -1);

    uint32_t st;
    rb_tcp_result_encode(3, 77, p);
    CU_ASSERT_EQUAL(rb_tcp_result_decode(p, RB_TCP_RESULT_LEN, &st, &c), 0);
    CU_ASSERT_EQUAL(st, 3);
    CU_ASSERT_EQUAL(c, 77);
    CU_ASSERT_EQUAL(rb_tcp_result_decode(p, RB_TCP_RESULT_LEN + 1, &st, &c), -1);

    struct rb_stats s, sd;
    for (int k = 0; k < RB_STAT_FIELDS; k++) s.f[k] = 1000u + (uint64_t)k;
    for (int k = 0; k < RDP_DROP__COUNT; k++) s.drops[k] = (uint64_t)k << 33;
    rb_stats_encode(&s, p);
    CU_ASSERT_EQUAL_FATAL(rb_stats_decode(p, RB_STATS_LEN, &sd), 0);
    CU_ASSERT_EQUAL(memcmp(&s, &sd, sizeof s), 0);
    CU_ASSERT_EQUAL(rb_stats_decode(p, RB_STATS_LEN - 1, &sd), -1);
    CU_ASSERT_EQUAL(rb_stats_decode(p, 0, &sd), -1);
    p[1]++; /* another build's number of fields */
    CU_ASSERT_EQUAL(rb_stats_decode(p, RB_STATS_LEN, &sd), -1);
    p[1]--;
    p[3]++; /* another build's number of drop reasons */
    CU_ASSERT_EQUAL(rb_stats_decode(p, RB_STATS_LEN, &sd), -1);

    char t[RB_CTL_ERR_MAX + 1];
    CU_ASSERT_STRING_EQUAL(rb_err_text((const uint8_t *)"bad\n\x01x", 6, t), "bad??x");
    static uint8_t long_err[RB_CTL_ERR_MAX + 50];
    memset(long_err, 'e', sizeof long_err);
    CU_ASSERT_EQUAL(strlen(rb_err_text(long_err, sizeof long_err, t)), RB_CTL_ERR_MAX);
}

UNIT_SUITE(rdpbench_ctl, UNIT_TEST(test_frame), UNIT_TEST(test_hello), UNIT_TEST(test_bodies))
