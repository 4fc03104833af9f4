/*
 * test_rdp_peer.c - RDP against a scripted peer: the test plays node 1 with a plain UDP
 * socket, decodes what the endpoint under test sends and answers with hand-made, correctly
 * signed packets (the handshake key's MAC on the SYNACK, the connection's direction keys,
 * derived from both halves of the handshake, on data and ACKs, packet numbers from 1). This
 * pins down behaviour no black-box test sees exactly: the handshake fields, fragmentation, which
 * packets a SACK makes the sender retransmit (only the holes), reassembly from fragments that
 * arrive out of order, and the SACK bitmap the receiver sends. Also rdp_open's configuration
 * limits: the constants of rdp.h, exactly (rdpbench checks its options against them).
 */
#include "../../rdp/auth.h"
#include "../../rdp/wire.h"
#include "unit.h"

#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define KEYBYTE 0x5a

struct script {
    rdp_t *ep;
    int sock; /* node 1 */
    struct sockaddr_in ep_addr, my_addr;
    uint32_t my_conn, ep_conn, my_seq, ep_iseq;
    uint64_t pn;
    uint8_t key[32];
    uint8_t hkey[32];            /* the handshake key, from key */
    uint8_t k_in[32], k_out[32]; /* endpoint -> us, us -> endpoint */
    uint8_t ep_rand[RDP_HS_RAND];
    /* what the endpoint delivered to us */
    uint8_t got[1 << 20];
    size_t got_len;
    int got_msgs;
};

static void on_recv(void *ctx, uint32_t node, const void *msg, size_t len)
{
    struct script *s = ctx;
    (void)node;
    memcpy(s->got, msg, len);
    s->got_len = len;
    s->got_msgs++;
}

static int bind_any(struct sockaddr_in *a, const char *ip)
{
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    for (int tries = 0; tries < 50; tries++) {
        memset(a, 0, sizeof *a);
        a->sin_family = AF_INET;
        inet_pton(AF_INET, ip, &a->sin_addr);
        a->sin_port = htons((uint16_t)(30000 + (getpid() * 7 + tries * 131) % 20000));
        if (bind(fd, (struct sockaddr *)a, sizeof *a) == 0) return fd;
    }
    close(fd);
    return -1;
}

static int setup(struct script *s)
{
    memset(s, 0, sizeof *s);
    memset(s->key, KEYBYTE, sizeof s->key);
    s->sock = bind_any(&s->my_addr, "127.0.0.2");
    if (s->sock < 0) return -1;
    /* find a free port for the endpoint, then let it bind there */
    int probe = bind_any(&s->ep_addr, "127.0.0.1");
    if (probe < 0) return -1;
    close(probe);
    struct rdp_config c;
    rdp_config_defaults(&c);
    c.node_id = 0;
    c.mtu = 1500;
    /* the tail-loss probe waits at least 2 * ack_delay: 200 ms, so a test descheduled on a
     * loaded machine still gets its scripted SACK in before any probe */
    c.ack_delay_us = 100000;
    memcpy(&c.bind, &s->ep_addr, sizeof s->ep_addr);
    memcpy(c.key, s->key, sizeof c.key);
    struct rdp_callbacks cb = {.ctx = s, .recv = on_recv};
    s->ep = rdp_open(&c, &cb);
    if (!s->ep) return -1;
    s->pn = 1;
    rdp_hs_key(s->key, s->hkey);
    return rdp_add_peer(s->ep, 1, (struct sockaddr *)&s->my_addr, sizeof s->my_addr);
}

static void teardown(struct script *s)
{
    rdp_close(s->ep);
    close(s->sock);
}

/* Run the endpoint until our socket has a datagram, up to timeout_ms. */
static ssize_t next_packet(struct script *s, uint8_t *buf, struct rdp_hdr *h, int timeout_ms)
{
    uint64_t end = rdp_now_ns() + (uint64_t)timeout_ms * 1000000;
    while (rdp_now_ns() < end) {
        ssize_t n = recv(s->sock, buf, RDP_MAX_DGRAM, MSG_DONTWAIT);
        if (n > 0) {
            enum rdp_drop_reason why;
            CU_ASSERT_TRUE_FATAL(rdp_hdr_decode(buf, (size_t)n, h, &why));
            bool hs = h->type != RDP_T_DATA && h->type != RDP_T_ACK;
            CU_ASSERT_TRUE(hs ? rdp_hs_verify(s->hkey, buf, RDP_HDR_LEN + h->len)
                              : rdp_mac_verify(s->k_in, 0, 1, h->pn, buf, RDP_HDR_LEN + h->len));
            return n;
        }
        struct pollfd p[2] = {{rdp_fd(s->ep), POLLIN, 0}, {s->sock, POLLIN, 0}};
        poll(p, 2, 1);
        rdp_process(s->ep);
    }
    return -1;
}

static void send_pkt(struct script *s, struct rdp_hdr *h, const void *payload)
{
    uint8_t buf[2048];
    h->version = RDP_VERSION;
    h->src_node = 1;
    h->dst_node = 0;
    bool hs = h->type != RDP_T_DATA && h->type != RDP_T_ACK;
    h->pn = hs ? 0 : s->pn++;
    rdp_hdr_encode(buf, h);
    if (h->len) memcpy(buf + RDP_HDR_LEN, payload, h->len);
    if (hs)
        rdp_hs_sign(s->hkey, buf, RDP_HDR_LEN + h->len);
    else
        rdp_mac_sign(s->k_out, 1, 0, h->pn, buf, RDP_HDR_LEN + h->len);
    sendto(s->sock, buf, RDP_OVERHEAD + h->len, 0, (struct sockaddr *)&s->ep_addr,
           sizeof s->ep_addr);
}

/* Let the endpoint open the connection (by sending to us) and answer its SYN. */
static void handshake(struct script *s, const void *msg, size_t len)
{
    uint8_t buf[RDP_MAX_DGRAM];
    struct rdp_hdr h;
    CU_ASSERT_EQUAL_FATAL(rdp_send(s->ep, 1, msg, len), 0);
    CU_ASSERT_FATAL(next_packet(s, buf, &h, 1000) > 0);
    CU_ASSERT_EQUAL_FATAL(h.type, RDP_T_SYN);
    CU_ASSERT_EQUAL(h.dst_conn, 0);
    CU_ASSERT_EQUAL(h.len, RDP_HS_LEN);
    s->ep_conn = h.src_conn;
    s->ep_iseq = h.seq;
    struct rdp_hs ephs;
    rdp_hs_decode(buf + RDP_HDR_LEN, &ephs);
    s->my_conn = 0xc0ffee01;
    s->my_seq = 0xfffffffd; /* our data will wrap around zero */
    /* both halves give the connection's keys */
    struct rdp_half ep_half = {.id = 0, .conn = s->ep_conn, .iseq = s->ep_iseq};
    struct rdp_half my_half = {.id = 1, .conn = s->my_conn, .iseq = s->my_seq};
    memcpy(ep_half.rand, ephs.rand, RDP_HS_RAND);
    memset(my_half.rand, 0x33, RDP_HS_RAND);
    rdp_session_keys(s->hkey, &my_half, &ep_half, s->k_out, s->k_in);
    uint8_t hs[RDP_HS_LEN];
    struct rdp_hs mine = {.incarnation = 1, .max_payload = 1400};
    memcpy(mine.rand, my_half.rand, RDP_HS_RAND);
    rdp_hs_encode(hs, &mine);
    struct rdp_hdr a = {.type = RDP_T_SYNACK,
                        .src_conn = s->my_conn,
                        .dst_conn = s->ep_conn,
                        .seq = s->my_seq,
                        .ack = s->ep_iseq,
                        .wnd = 256,
                        .len = RDP_HS_LEN};
    send_pkt(s, &a, hs);
}

static void send_ack(struct script *s, uint32_t ack, const uint8_t *sack, uint16_t sack_len)
{
    struct rdp_hdr a = {.type = RDP_T_ACK,
                        .src_conn = s->my_conn,
                        .dst_conn = s->ep_conn,
                        .seq = s->my_seq,
                        .ack = ack,
                        .wnd = 256,
                        .len = sack_len};
    send_pkt(s, &a, sack);
}

/* A 5-fragment message; we "receive" fragments 0, 3 and 4: exactly 1 and 2 come again. */
static void test_sack_retransmits_only_holes(void)
{
    struct script *s = malloc(sizeof *s);
    CU_ASSERT_FATAL(setup(s) == 0);
    static uint8_t msg[5 * 1400];
    for (size_t i = 0; i < sizeof msg; i++) msg[i] = (uint8_t)(i * 31 + 7);
    handshake(s, msg, sizeof msg);

    uint8_t buf[RDP_MAX_DGRAM];
    struct rdp_hdr h;
    size_t off = 0;
    int frags = 0;
    while (next_packet(s, buf, &h, 200) > 0 && h.type == RDP_T_DATA) {
        CU_ASSERT_EQUAL(h.seq, s->ep_iseq + (uint32_t)frags);
        CU_ASSERT_EQUAL(h.dst_conn, s->my_conn);
        CU_ASSERT_EQUAL(h.ack, s->my_seq);
        CU_ASSERT_EQUAL(h.msg_len, sizeof msg);
        CU_ASSERT_EQUAL(!!(h.flags & RDP_F_FIRST), frags == 0);
        CU_ASSERT_EQUAL(!!(h.flags & RDP_F_LAST), off + h.len == sizeof msg);
        CU_ASSERT_EQUAL(memcmp(buf + RDP_HDR_LEN, msg + off, h.len), 0);
        off += h.len;
        frags++;
        if (off == sizeof msg) break;
    }
    CU_ASSERT_EQUAL_FATAL(off, sizeof msg);
    CU_ASSERT(frags >= 5);

    /* cumulative ack = iseq+1; bitmap bit i = iseq+2+i: say we hold all from iseq+3 on */
    uint8_t sack[1] = {0};
    for (int i = 1; i <= frags - 3; i++) sack[0] |= (uint8_t)(1 << i);
    send_ack(s, s->ep_iseq + 1, sack, 1);
    int resent[2] = {0, 0}, other = 0;
    uint64_t end = rdp_now_ns() + 500000000ull;
    while ((!resent[0] || !resent[1]) && rdp_now_ns() < end) {
        if (next_packet(s, buf, &h, 100) <= 0 || h.type != RDP_T_DATA) continue;
        uint32_t k = h.seq - s->ep_iseq;
        if (k == 1 || k == 2)
            resent[k - 1]++;
        else
            other++;
    }
    CU_ASSERT_EQUAL(resent[0], 1);
    CU_ASSERT_EQUAL(resent[1], 1);
    CU_ASSERT_EQUAL(other, 0); /* nothing SACKed or acknowledged was sent again */

    send_ack(s, s->ep_iseq + (uint32_t)frags, NULL, 0);
    struct rdp_peer_stats st;
    for (int i = 0; i < 50; i++) {
        struct pollfd p = {rdp_fd(s->ep), POLLIN, 0};
        poll(&p, 1, 2);
        rdp_process(s->ep);
        rdp_peer_stats(s->ep, 1, &st);
        if (!st.queued) break;
    }
    CU_ASSERT_EQUAL(st.queued, 0);
    CU_ASSERT_EQUAL(st.inflight, 0);
    CU_ASSERT_EQUAL(st.retransmits, 2);
    teardown(s);
    free(s);
}

/* We send a 3-fragment message to the endpoint out of order (2, 0, 1), across the
 * wrap-around of our sequence numbers: it is delivered once, whole, and the ACK after
 * fragment 2 carries a SACK bit for it. */
static void test_reassembly_out_of_order(void)
{
    struct script *s = malloc(sizeof *s);
    CU_ASSERT_FATAL(setup(s) == 0);
    handshake(s, "x", 1);
    uint8_t buf[RDP_MAX_DGRAM];
    struct rdp_hdr h;
    /* swallow the endpoint's DATA "x" and acknowledge it */
    while (next_packet(s, buf, &h, 200) > 0 && h.type != RDP_T_DATA) {
    }
    send_ack(s, s->ep_iseq + 1, NULL, 0);

    static uint8_t msg[3000];
    for (size_t i = 0; i < sizeof msg; i++) msg[i] = (uint8_t)(i ^ (i >> 8));
    const size_t part[3] = {1200, 1200, 600};
    int order[3] = {2, 0, 1};
    for (int k = 0; k < 3; k++) {
        int f = order[k];
        struct rdp_hdr d = {.type = RDP_T_DATA,
                            .flags = (f == 0 ? RDP_F_FIRST : 0) | (f == 2 ? RDP_F_LAST : 0),
                            .src_conn = s->my_conn,
                            .dst_conn = s->ep_conn,
                            .seq = s->my_seq + (uint32_t)f,
                            .ack = s->ep_iseq + 1,
                            .wnd = 256,
                            .msg_len = sizeof msg,
                            .len = (uint16_t)part[f]};
        send_pkt(s, &d, msg + 1200 * f);
        if (k == 0) {
            /* the endpoint reports the out-of-order packet: ack = my_seq, bit 1 set */
            CU_ASSERT_FATAL(next_packet(s, buf, &h, 500) > 0);
            CU_ASSERT_EQUAL(h.type, RDP_T_ACK);
            CU_ASSERT_EQUAL(h.ack, s->my_seq);
            CU_ASSERT_FATAL(h.len >= 1);
            CU_ASSERT_EQUAL(buf[RDP_HDR_LEN] & 0x3, 0x2);
            CU_ASSERT_EQUAL(s->got_msgs, 0);
        }
    }
    uint64_t end = rdp_now_ns() + 500000000ull;
    while (s->got_msgs == 0 && rdp_now_ns() < end) {
        struct pollfd p = {rdp_fd(s->ep), POLLIN, 0};
        poll(&p, 1, 5);
        rdp_process(s->ep);
    }
    CU_ASSERT_EQUAL(s->got_msgs, 1);
    CU_ASSERT_EQUAL(s->got_len, sizeof msg);
    CU_ASSERT_EQUAL(memcmp(s->got, msg, sizeof msg), 0);
    /* and the cumulative ACK covers all three */
    uint32_t want = s->my_seq + 3;
    bool acked = false;
    while (!acked && next_packet(s, buf, &h, 300) > 0)
        if (h.type == RDP_T_ACK && h.ack == want) acked = true;
    CU_ASSERT_TRUE(acked);
    teardown(s);
    free(s);
}

/* 1 if rdp_open takes c; else 0, and it said EINVAL */
static int opens(const struct rdp_config *c)
{
    errno = 0;
    rdp_t *ep = rdp_open(c, NULL);
    if (ep) {
        rdp_close(ep);
        return 1;
    }
    CU_ASSERT_EQUAL(errno, EINVAL);
    return 0;
}

/* each limit of rdp.h: rdp_open takes the value at it and refuses the one past it */
#define LIMIT(field, at, past)                                                                     \
    do {                                                                                           \
        struct rdp_config c_ = base;                                                               \
        c_.field = (at);                                                                           \
        CU_ASSERT_EQUAL(opens(&c_), 1);                                                            \
        c_.field = (past);                                                                         \
        CU_ASSERT_EQUAL(opens(&c_), 0);                                                            \
    } while (0)

static void test_config_limits(void)
{
    struct rdp_config base;
    rdp_config_defaults(&base);
    struct sockaddr_in *a = (struct sockaddr_in *)&base.bind;
    a->sin_family = AF_INET;
    a->sin_addr.s_addr = htonl(INADDR_LOOPBACK); /* port 0: any */
    CU_ASSERT_EQUAL(opens(&base), 1);
    LIMIT(mtu, RDP_MTU_MIN, RDP_MTU_MIN - 1);
    LIMIT(mtu, RDP_MTU_MAX, RDP_MTU_MAX + 1);
    LIMIT(rto_min_us, RDP_RTO_MIN_US_MIN, RDP_RTO_MIN_US_MIN - 1);
    LIMIT(rto_min_us, base.rto_max_us, base.rto_max_us + 1); /* at most rto_max_us */
    LIMIT(max_retrans, RDP_MAX_RETRANS_MIN, RDP_MAX_RETRANS_MIN - 1);
    LIMIT(max_retrans, RDP_MAX_RETRANS_MAX, RDP_MAX_RETRANS_MAX + 1);
    LIMIT(sndbuf, RDP_BUF_MIN, RDP_BUF_MIN - 1);
    LIMIT(rcvbuf, RDP_BUF_MIN, RDP_BUF_MIN - 1);
}

UNIT_SUITE(rdp_scripted_peer, UNIT_TEST(test_sack_retransmits_only_holes),
           UNIT_TEST(test_reassembly_out_of_order), UNIT_TEST(test_config_limits))
