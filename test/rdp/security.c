/*
 * security.c - RDP authentication and robustness tests (suite rdp_security).
 *
 *  test_wrong_key    B holds a different key: nothing of A's is ever delivered to B, B counts
 *                    the packets as RDP_DROP_MAC, and A gives B up (RDP_LOST_TIMEOUT) with an
 *                    undeliverable callback per message.
 *  test_garbage      junk sent to A from B's configured address and from a foreign one: empty,
 *                    1..63 bytes (shorter than header + MAC), wrong versions, random 1400-byte
 *                    junk, a bad type, well-formed headers from unknown nodes or to another
 *                    node, and well-formed DATA/SYN with a bad MAC (one with a huge packet
 *                    number, which must not move the replay window). A counts each datagram
 *                    exactly once under the right reason, reports nothing to the application,
 *                    and afterwards exchanges messages with the real B normally.
 *  test_replay       a UDP proxy between A and B forwards everything and re-sends captured
 *                    packets (old SYN, SYNACK, DATA, ACK): during the stream, interleaved with
 *                    live traffic, and again when both sides are idle. Nothing is delivered
 *                    twice, no connection is lost, and each idle-time replay is counted as a
 *                    drop (REPLAY, or DUPLICATE/STALE) by its receiver.
 *  test_syn_replay   the captured SYN (and SYNACK) of the current connection, replayed (only
 *                    answered again, counted as duplicates) and forged (bytes changed, so the
 *                    handshake MAC fails), does not tear down the established connection;
 *                    messages still flow afterwards.
 *  test_syn_replay_restart  B restarts and A's recorded SYN of the old connection reaches B'
 *                    first: B' connects only through a real handshake with A (nothing is
 *                    reported for the replay), and messages flow both ways within a second.
 *  test_handshake_ids  eight fresh pairs, each handshake captured by the proxy: the connection
 *                    ids and initial sequence numbers of every SYN and SYNACK are nonzero, all
 *                    different, and spread over the 32-bit range (not a counter or a constant).
 *
 * Endpoints: A = node 1 on 127.0.0.1, B = node 2 on 127.0.0.2; the proxy listens on
 * 127.0.0.3 (B's address in A's peer table) and 127.0.0.4 (A's address in B's table).
 *
 * Wire layout used to build packets (rdp/wire.h, docs/rdp-protocol.md): a 48-byte header
 * (version 2, type, flags, src_node and src_ep (16 bits each), dst_node and dst_ep, src_conn,
 * dst_conn, seq, ack, wnd, pn, msg_len, len, mac; big-endian), len payload bytes, a 16-byte
 * MAC; a handshake's payload is 48 bytes (incarnation, payload, MACs, 32 random bytes). It is
 * written out here on purpose, not taken from rdp/, so that the test checks the documented format.
 */
#include "harness.h"
#include "unit.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define W_HDR      48
#define W_MAC      16
#define W_VERSION  2
#define W_HS_LEN   48
#define W_SYN      1
#define W_SYNACK   2
#define W_DATA     3
#define W_ACK      4
#define W_F_FIRST  1
#define W_F_LAST   2
#define W_OFF_TYPE 1
#define W_OFF_CONN 12
#define W_OFF_SEQ  20
#define W_OFF_PN   32

static void put16(unsigned char *p, uint16_t v)
{
    p[0] = (unsigned char)(v >> 8);
    p[1] = (unsigned char)v;
}

static void put32(unsigned char *p, uint32_t v)
{
    put16(p, (uint16_t)(v >> 16));
    put16(p + 2, (uint16_t)v);
}

static void put64(unsigned char *p, uint64_t v)
{
    put32(p, (uint32_t)(v >> 32));
    put32(p + 4, (uint32_t)v);
}

static uint32_t get32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static uint64_t get64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v = (v << 8) | p[i];
    return v;
}

struct wpkt {
    uint8_t version, type;
    uint16_t flags;
    uint32_t src, dst, sconn, dconn;
    uint64_t pn;
    uint32_t msg_len;
    uint16_t len;
};

/* Header + len random payload bytes + a random (wrong) MAC. Returns the datagram length. */
static size_t build(unsigned char *buf, const struct wpkt *w, uint64_t *rng)
{
    memset(buf, 0, W_HDR);
    buf[0] = w->version;
    buf[1] = w->type;
    put16(buf + 2, w->flags);
    put16(buf + 4, (uint16_t)w->src);
    put16(buf + 6, 0);
    put16(buf + 8, (uint16_t)w->dst);
    put16(buf + 10, 0);
    put32(buf + 12, w->sconn);
    put32(buf + 16, w->dconn);
    put32(buf + 20, (uint32_t)h_rand(rng));
    put32(buf + 24, (uint32_t)h_rand(rng));
    put32(buf + 28, 64);
    put64(buf + 32, w->pn);
    put32(buf + 40, w->msg_len);
    put16(buf + 44, w->len);
    for (size_t i = W_HDR; i < (size_t)W_HDR + w->len + W_MAC; i++)
        buf[i] = (unsigned char)h_rand(rng);
    return (size_t)W_HDR + w->len + W_MAC;
}

/* ---- wrong key ---- */

static int a_lost(void *p)
{
    struct h_ep *a = p;
    return h_count(a, H_LOST, 2) > 0;
}

static void test_wrong_key(void)
{
    unsigned char ka[RDP_KEY_BYTES], kb[RDP_KEY_BYTES];
    h_key(ka, 11);
    memcpy(kb, ka, sizeof(kb));
    kb[7] ^= 0x01; /* one bit off */
    struct rdp_config cfg;
    h_config(&cfg);
    cfg.rto_min_us = 2000;
    cfg.rto_init_us = 5000;
    cfg.rto_max_us = 20000;
    cfg.max_retrans = 4;
    struct h_ep a, b;
    struct h_net net;
    if (h_open_pair(&net, &a, &b, ka, kb, &cfg) < 0) return;
    CU_ASSERT_EQUAL(h_send(&a, 2, 0, 500), 0);
    CU_ASSERT_EQUAL(h_send(&a, 2, 1, 50000), 0);
    /* B also tries to talk to A: its SYNs must fail at A the same way */
    CU_ASSERT_EQUAL(h_send(&b, 1, 0, 700), 0);
    uint64_t bound = rdp_lost_bound_us(&cfg) * 1000;
    CU_ASSERT_EQUAL(h_run(&net, a_lost, &a, bound * 3 + H_S(1)), 1);
    CU_ASSERT_EQUAL(h_count(&a, H_LOST, 2), 1);
    const struct h_event *lost = h_find(&a, H_LOST, 2, 0);
    CU_ASSERT(lost && lost->reason == RDP_LOST_TIMEOUT);
    CU_ASSERT_EQUAL(h_count(&a, H_UNDELIV, 2), 2);
    const struct h_event *u0 = h_find(&a, H_UNDELIV, 2, 0), *u1 = h_find(&a, H_UNDELIV, 2, 1);
    CU_ASSERT(u0 && u0->idx == 0 && u0->len == 500 && u0->ok);
    CU_ASSERT(u1 && u1->idx == 1 && u1->len == 50000 && u1->ok);
    CU_ASSERT_EQUAL(h_count(&b, H_RECV, 1), 0);
    CU_ASSERT_EQUAL(h_count(&a, H_RECV, 2), 0);
    CU_ASSERT_EQUAL(h_count(&a, H_CONNECTED, 2), 0);
    CU_ASSERT_EQUAL(h_count(&b, H_CONNECTED, 1), 0);
    struct rdp_stats sa, sb;
    rdp_stats(a.rdp, &sa);
    rdp_stats(b.rdp, &sb);
    CU_ASSERT(sb.drops[RDP_DROP_MAC] > 0);
    CU_ASSERT(sa.drops[RDP_DROP_MAC] > 0);
    struct rdp_peer_stats ps;
    CU_ASSERT_EQUAL(rdp_peer_stats(b.rdp, 1, &ps), 0);
    CU_ASSERT(ps.drops[RDP_DROP_MAC] > 0);
    CU_ASSERT_EQUAL(ps.msgs_recv, 0);
    if (!lost || lost->reason != RDP_LOST_TIMEOUT || !sb.drops[RDP_DROP_MAC]) {
        h_dump(&a, "wrong key");
        h_dump(&b, "wrong key");
    }
    h_ep_free(&a);
    h_ep_free(&b);
}

/* ---- garbage ---- */

struct rx_ctx {
    struct h_ep *ep;
    uint64_t want;
};

/* The endpoint has read at least want datagrams (rdp_stats.pkts_recv counts every one). */
static int pkts_read(void *p)
{
    struct rx_ctx *c = p;
    struct rdp_stats st;
    rdp_stats(c->ep->rdp, &st);
    return st.pkts_recv >= c->want;
}

/* Expected drops per datagram class, for one source. */
struct expect {
    uint64_t n[RDP_DROP__COUNT];
    uint64_t total;
    uint64_t wakeups; /* datagrams of no bytes: not packets (rdp_rx_wait) */
};

static void sendg(int fd, const struct sockaddr_in *to, const void *buf, size_t len,
                  struct expect *ex, enum rdp_drop_reason why)
{
    ssize_t n = sendto(fd, buf, len, 0, (const struct sockaddr *)to, sizeof(*to));
    CU_ASSERT_EQUAL(n, (ssize_t)len);
    ex->n[why]++;
    ex->total++;
}

/* The garbage collection, sent by fd to A. right: fd sits on B's configured address. */
static void send_garbage(int fd, const struct sockaddr_in *to, int right, struct expect *ex,
                         uint64_t *rng)
{
    static unsigned char buf[2048];
    /* empty: a wake-up, not a packet */
    CU_ASSERT_EQUAL(sendto(fd, buf, 0, 0, (const struct sockaddr *)to, sizeof(*to)), 0);
    ex->wakeups++;
    /* everything shorter than header + MAC */
    for (size_t len = 1; len < W_HDR + W_MAC; len++) {
        for (size_t i = 0; i < len; i++) buf[i] = (unsigned char)h_rand(rng);
        if (len > 0 && (len % 2)) buf[0] = W_VERSION; /* half of them look like ours */
        sendg(fd, to, buf, len, ex, RDP_DROP_SHORT);
    }
    /* a header-sized buffer with an otherwise fine header but a wrong version */
    struct wpkt w = {.version = W_VERSION,
                     .type = W_DATA,
                     .flags = W_F_FIRST | W_F_LAST,
                     .src = 2,
                     .dst = 1,
                     .sconn = 0x1234567,
                     .dconn = 0x89abcde,
                     .pn = 1000,
                     .msg_len = 0,
                     .len = 0};
    const uint8_t bad_versions[] = {0, 1, 3, 255}; /* 1: the version before per-connection keys */
    for (size_t i = 0; i < sizeof(bad_versions); i++) {
        w.version = bad_versions[i];
        size_t n = build(buf, &w, rng);
        sendg(fd, to, buf, n, ex, RDP_DROP_VERSION);
    }
    w.version = W_VERSION;
    /* random junk: with a random first byte other than the version ... */
    for (int i = 0; i < 16; i++) {
        for (size_t j = 0; j < 1400; j++) buf[j] = (unsigned char)h_rand(rng);
        if (buf[0] == W_VERSION) buf[0] = 0x42;
        sendg(fd, to, buf, 1400, ex, RDP_DROP_VERSION);
    }
    /* ... and with our version byte: the length field can't match (p ~ 2^-32) */
    for (int i = 0; i < 16; i++) {
        for (size_t j = 0; j < 1400; j++) buf[j] = (unsigned char)h_rand(rng);
        buf[0] = W_VERSION;
        if (buf[46] == 0 && buf[47] == 0) buf[47] = 1; /* reserved must be 0: make sure */
        sendg(fd, to, buf, 1400, ex, RDP_DROP_MALFORMED);
    }
    /* a bad type */
    w.type = 9;
    w.msg_len = w.len = 100;
    sendg(fd, to, buf, build(buf, &w, rng), ex, RDP_DROP_MALFORMED);
    /* a length field that disagrees with the datagram */
    w.type = W_DATA;
    size_t n = build(buf, &w, rng);
    sendg(fd, to, buf, n - 1, ex, RDP_DROP_MALFORMED);
    /* well-formed, from a node not in the table, and to a node that is not A */
    w.src = 7;
    sendg(fd, to, buf, build(buf, &w, rng), ex, RDP_DROP_UNKNOWN);
    w.src = 2;
    w.dst = 5;
    sendg(fd, to, buf, build(buf, &w, rng), ex, RDP_DROP_UNKNOWN);
    w.dst = 1;
    /* well-formed with a bad MAC: DATA (of no connection A has: stale, its MAC can't even be
     * checked; A opens a connection of its own instead, which a forger gains nothing from),
     * SYN, and DATA with a huge packet number (if that moved a replay window, B's real
     * packets would all be dropped later) */
    enum rdp_drop_reason data = right ? RDP_DROP_STALE : RDP_DROP_ADDRESS;
    enum rdp_drop_reason hs = right ? RDP_DROP_MAC : RDP_DROP_ADDRESS;
    sendg(fd, to, buf, build(buf, &w, rng), ex, data);
    struct wpkt syn = {.version = W_VERSION,
                       .type = W_SYN,
                       .src = 2,
                       .dst = 1,
                       .sconn = 0x777,
                       .pn = 0,
                       .len = W_HS_LEN};
    n = build(buf, &syn, rng);
    put32(buf + W_HDR + 8, 1408); /* a largest payload a handshake may offer */
    sendg(fd, to, buf, n, ex, hs);
    /* a handshake offering a payload no MTU gives is malformed, MAC or not */
    put32(buf + W_HDR + 8, 100);
    sendg(fd, to, buf, n, ex, RDP_DROP_MALFORMED);
    /* and one with a packet number: handshakes have none */
    put32(buf + W_HDR + 8, 1408);
    put64(buf + W_OFF_PN, 5000);
    sendg(fd, to, buf, n, ex, RDP_DROP_MALFORMED);
    w.pn = UINT64_MAX - 5;
    sendg(fd, to, buf, build(buf, &w, rng), ex, data);
}

static void test_garbage(void)
{
    unsigned char key[RDP_KEY_BYTES];
    h_key(key, 12);
    struct h_ep a, b;
    memset(&b, 0, sizeof(b));
    struct h_net net;
    if (h_open_one(&net, &a, key, NULL) < 0) return;
    /* B's address is held by a plain socket first, which sends the garbage "from B" */
    struct sockaddr_in sb, sw;
    int fb = h_silent_socket(2, &sb);
    int fw = h_silent_socket(3, &sw);
    if (fb < 0 || fw < 0) {
        CU_FAIL("garbage sockets");
        if (fb >= 0) close(fb);
        if (fw >= 0) close(fw);
        h_ep_free(&a);
        return;
    }
    CU_ASSERT_EQUAL(h_add_peer_at(&a, 2, 2, ntohs(sb.sin_port)), 0);

    struct expect right = {{0}, 0, 0}, wrong = {{0}, 0, 0};
    uint64_t rng = 0x9a7ba9e;
    send_garbage(fb, &a.addr, 1, &right, &rng);
    send_garbage(fw, &a.addr, 0, &wrong, &rng);
    struct rx_ctx rc = {&a, right.total + wrong.total};
    CU_ASSERT_EQUAL(h_run(&net, pkts_read, &rc, H_S(5)), 1);

    struct rdp_stats st;
    rdp_stats(a.rdp, &st);
    CU_ASSERT_EQUAL(st.pkts_recv, right.total + wrong.total);
    CU_ASSERT_EQUAL(h_drops_total(&st), right.total + wrong.total);
    CU_ASSERT_EQUAL(st.wakeups, right.wakeups + wrong.wakeups);
    int mismatch = 0;
    for (int r = 0; r < RDP_DROP__COUNT; r++) {
        uint64_t want = right.n[r] + wrong.n[r];
        if (st.drops[r] != want) {
            fprintf(stderr, "garbage: drops[%s] = %llu, expected %llu\n",
                    rdp_drop_reason_name((enum rdp_drop_reason)r), (unsigned long long)st.drops[r],
                    (unsigned long long)want);
            mismatch = 1;
        }
    }
    CU_ASSERT_EQUAL(mismatch, 0);
    CU_ASSERT(st.drops[RDP_DROP_SHORT] > 0 && st.drops[RDP_DROP_VERSION] > 0 &&
              st.drops[RDP_DROP_MAC] > 0);
    CU_ASSERT_EQUAL(a.nev, 0); /* no callback at all */
    struct rdp_peer_stats ps;
    CU_ASSERT_EQUAL(rdp_peer_stats(a.rdp, 2, &ps), 0);
    CU_ASSERT_EQUAL(ps.state, RDP_SYN_SENT); /* the stale DATA: A opened a connection */
    CU_ASSERT(st.pkts_sent >= 1);
    CU_ASSERT_EQUAL(ps.drops[RDP_DROP_MAC], right.n[RDP_DROP_MAC]);
    CU_ASSERT_EQUAL(ps.drops[RDP_DROP_ADDRESS], wrong.n[RDP_DROP_ADDRESS]);

    /* the real B takes its address over; both directions work */
    uint16_t port = ntohs(sb.sin_port);
    close(fb);
    close(fw);
    if (h_ep_open(&b, 2, 2, port, key, NULL) < 0) {
        CU_FAIL("open B");
        h_ep_free(&a);
        return;
    }
    CU_ASSERT_EQUAL(h_add_peer(&b, &a), 0);
    h_net_add(&net, &b);
    for (uint64_t k = 0; k < 5; k++) {
        CU_ASSERT_EQUAL(h_send(&a, 2, k, 1 + k * 3000), 0);
        CU_ASSERT_EQUAL(h_send(&b, 1, k, 10 + k * 5000), 0);
    }
    struct h_wait_recv w1 = {&b, 1, 5}, w2 = {&a, 2, 5};
    CU_ASSERT_EQUAL(h_run(&net, h_cond_recv, &w1, H_S(5)), 1);
    CU_ASSERT_EQUAL(h_run(&net, h_cond_recv, &w2, H_S(5)), 1);
    CU_ASSERT(h_check_recv_seq(&b, 1, 0, 5));
    CU_ASSERT(h_check_recv_seq(&a, 2, 0, 5));
    CU_ASSERT_EQUAL(h_count(&a, H_CONNECTED, 2), 1);
    CU_ASSERT_EQUAL(h_count(&a, H_LOST, 2), 0);
    if (mismatch || h_count(&b, H_RECV, 1) != 5) h_dump(&a, "garbage");
    h_ep_free(&a);
    h_ep_free(&b);
}

/* ---- replay through a proxy ---- */

struct proxied {
    unsigned char key[RDP_KEY_BYTES];
    struct h_ep a, b;
    struct h_proxy px;
    struct h_net net;
};

/* A and B talk only through the proxy: A knows B at 127.0.0.3, B knows A at 127.0.0.4. */
static int proxied_open(struct proxied *s, uint64_t keyseed)
{
    memset(s, 0, sizeof(*s));
    h_key(s->key, keyseed);
    h_net_init(&s->net);
    if (h_ep_open(&s->a, 1, 1, 0, s->key, NULL) < 0) return -1;
    if (h_ep_open(&s->b, 2, 2, 0, s->key, NULL) < 0) {
        h_ep_free(&s->a);
        return -1;
    }
    if (h_proxy_open(&s->px, &s->a, &s->b, 3, 4) < 0) {
        h_ep_free(&s->a);
        h_ep_free(&s->b);
        return -1;
    }
    CU_ASSERT_EQUAL(rdp_add_peer(s->a.rdp, 2, (struct sockaddr *)&s->px.pa, sizeof(s->px.pa)), 0);
    CU_ASSERT_EQUAL(rdp_add_peer(s->b.rdp, 1, (struct sockaddr *)&s->px.pb, sizeof(s->px.pb)), 0);
    h_net_add(&s->net, &s->a);
    h_net_add(&s->net, &s->b);
    h_net_add_proxy(&s->net, &s->px);
    return 0;
}

static void proxied_close(struct proxied *s)
{
    h_proxy_close(&s->px);
    h_ep_free(&s->a);
    h_ep_free(&s->b);
}

static uint64_t replay_drops(const struct h_ep *ep)
{
    struct rdp_stats st;
    rdp_stats(ep->rdp, &st);
    return st.drops[RDP_DROP_REPLAY] + st.drops[RDP_DROP_DUPLICATE] + st.drops[RDP_DROP_STALE];
}

static uint64_t pkts_recv(const struct h_ep *ep)
{
    struct rdp_stats st;
    rdp_stats(ep->rdp, &st);
    return st.pkts_recv;
}

struct idle_ctx {
    struct proxied *s;
};

/* Nothing queued, in flight or waiting to be acknowledged on either side. */
static int idle(void *p)
{
    struct idle_ctx *c = p;
    struct rdp_peer_stats pa, pb;
    if (rdp_peer_stats(c->s->a.rdp, 2, &pa) < 0 || rdp_peer_stats(c->s->b.rdp, 1, &pb) < 0)
        return 0;
    /* no timer due soon: no delayed ACK or retransmission pending (a far-away timer, such
     * as a keepalive, would not be either) */
    uint64_t soon = rdp_now_ns() + H_MS(100);
    return pa.queued == 0 && pa.inflight == 0 && pb.queued == 0 && pb.inflight == 0 &&
           rdp_next_deadline(c->s->a.rdp) > soon && rdp_next_deadline(c->s->b.rdp) > soon;
}

struct drops_ctx {
    struct h_ep *ep[2];
    uint64_t want[2];
};

/* Each endpoint has counted at least its expected replay drops. */
static int drops_reached(void *p)
{
    struct drops_ctx *c = p;
    return replay_drops(c->ep[0]) >= c->want[0] && replay_drops(c->ep[1]) >= c->want[1];
}

/* Replay every captured packet of both directions while both sides are idle, in batches
 * that can't overflow a socket buffer, and check that each one is dropped. A replayed SYN
 * of the current connection is answered with a SYNACK, which its receiver counts as a
 * duplicate too (and answers with an ACK, which is new and taken): one drop more there. */
static void replay_all_idle(struct proxied *s)
{
    struct idle_ctx ic = {s};
    CU_ASSERT_EQUAL(h_run(&s->net, idle, &ic, H_S(10)), 1);
    size_t ncap[2] = {s->px.ncap[0], s->px.ncap[1]};
    struct h_ep *rx[2] = {&s->b, &s->a};
    uint64_t d0[2] = {replay_drops(rx[0]), replay_drops(rx[1])}, want[2] = {ncap[0], ncap[1]};
    for (int dir = 0; dir < 2; dir++)
        for (size_t i = 0; i < ncap[dir]; i++)
            if (s->px.cap[dir][i].data[W_OFF_TYPE] == W_SYN) want[!dir]++;
    uint64_t recv0[2] = {h_count(rx[0], H_RECV, 1), h_count(rx[1], H_RECV, 2)};
    for (int dir = 0; dir < 2; dir++) {
        int inject_failed = 0, wait_failed = 0;
        for (size_t i = 0; i < ncap[dir];) {
            uint64_t p0 = pkts_recv(rx[dir]);
            size_t batch = 0;
            for (; batch < 128 && i < ncap[dir]; batch++, i++)
                inject_failed |= h_proxy_inject(&s->px, dir, i) < 0;
            struct rx_ctx rc = {rx[dir], p0 + batch};
            wait_failed |= h_run(&s->net, pkts_read, &rc, H_S(5)) != 1;
        }
        CU_ASSERT_EQUAL(inject_failed, 0);
        CU_ASSERT_EQUAL(wait_failed, 0);
    }
    struct drops_ctx dc = {{rx[0], rx[1]}, {d0[0] + want[0], d0[1] + want[1]}};
    CU_ASSERT_EQUAL(h_run(&s->net, drops_reached, &dc, H_S(5)), 1);
    CU_ASSERT_EQUAL(h_run(&s->net, idle, &ic, H_S(10)), 1);
    for (int dir = 0; dir < 2; dir++) {
        uint64_t dropped = replay_drops(rx[dir]) - d0[dir];
        CU_ASSERT_EQUAL(dropped, want[dir]);
        CU_ASSERT_EQUAL(h_count(rx[dir], H_RECV, dir == 0 ? 1 : 2), recv0[dir]);
        if (dropped != want[dir])
            fprintf(stderr, "replay: dir %d: %zu packets replayed, %llu dropped, %llu expected\n",
                    dir, ncap[dir], (unsigned long long)dropped, (unsigned long long)want[dir]);
    }
}

struct replay_ctx {
    struct proxied *s;
    struct h_stream ab, ba;
    size_t cursor[2]; /* next captured packet to re-send during the stream */
    uint64_t limit_ab, limit_ba;
    int failed;
};

static int replay_stream(void *p)
{
    struct replay_ctx *c = p;
    c->ab.total = c->limit_ab;
    c->ba.total = c->limit_ba;
    if (h_stream_pump(&c->ab) < 0 || h_stream_pump(&c->ba) < 0) c->failed = 1;
    if (h_count(&c->s->a, H_LOST, 2) || h_count(&c->s->b, H_LOST, 1) || c->s->a.bad_content ||
        c->s->b.bad_content)
        c->failed = 1;
    if (c->failed) return 1;
    return h_count(&c->s->b, H_RECV, 1) >= c->limit_ab &&
           h_count(&c->s->a, H_RECV, 2) >= c->limit_ba;
}

/* Interleave: every round, re-send two old packets of each direction. */
static int replay_stream_mixed(void *p)
{
    struct replay_ctx *c = p;
    for (int dir = 0; dir < 2; dir++)
        for (int k = 0; k < 2 && c->s->px.ncap[dir]; k++) {
            /* old packets only: from the first half of what was captured so far */
            size_t lim = c->s->px.ncap[dir] / 2 + 1;
            h_proxy_inject(&c->s->px, dir, c->cursor[dir] % lim);
            c->cursor[dir] += 7;
        }
    return replay_stream(p);
}

static void test_replay(void)
{
    struct proxied s;
    if (proxied_open(&s, 13) < 0) {
        CU_FAIL("open A, B and the proxy");
        return;
    }
    struct replay_ctx c = {.s = &s};
    uint64_t nab = h_scale(600), nba = h_scale(200);
    h_stream_init(&c.ab, &s.a, 2, nab, 1, 64 << 10);
    h_stream_init(&c.ba, &s.b, 1, nba, 1, 16 << 10);

    /* phase 1: the first third, plain */
    c.limit_ab = nab / 3;
    c.limit_ba = nba / 3;
    CU_ASSERT_EQUAL(h_run(&s.net, replay_stream, &c, H_S(30)), 1);
    /* phase 2: everything captured so far again, while idle, the old handshake first */
    CU_ASSERT(s.px.ncap[0] > 0 && s.px.cap[0][0].data[W_OFF_TYPE] == W_SYN);
    /* both sides send at once: B's first packet is its own SYN or the SYNACK */
    CU_ASSERT(s.px.ncap[1] > 0 && (s.px.cap[1][0].data[W_OFF_TYPE] == W_SYN ||
                                   s.px.cap[1][0].data[W_OFF_TYPE] == W_SYNACK));
    replay_all_idle(&s);
    /* phase 3: the rest of the streams with old packets mixed into the live traffic */
    uint64_t inj0 = s.px.injected[0] + s.px.injected[1];
    c.limit_ab = nab;
    c.limit_ba = nba;
    CU_ASSERT_EQUAL(h_run(&s.net, replay_stream_mixed, &c, H_S(60)), 1);
    CU_ASSERT(s.px.injected[0] + s.px.injected[1] > inj0);
    /* phase 4: all of it once more, idle */
    replay_all_idle(&s);

    CU_ASSERT_EQUAL(c.failed, 0);
    CU_ASSERT(h_check_recv_seq(&s.b, 1, 0, nab));
    CU_ASSERT(h_check_recv_seq(&s.a, 2, 0, nba));
    CU_ASSERT_EQUAL(h_count(&s.a, H_LOST, 2), 0);
    CU_ASSERT_EQUAL(h_count(&s.b, H_LOST, 1), 0);
    CU_ASSERT_EQUAL(h_count(&s.a, H_CONNECTED, 2), 1);
    CU_ASSERT_EQUAL(h_count(&s.b, H_CONNECTED, 1), 1);
    CU_ASSERT_EQUAL(h_count(&s.a, H_UNDELIV, 2), 0);
    CU_ASSERT_EQUAL(h_count(&s.b, H_UNDELIV, 1), 0);
    struct rdp_stats sa, sb;
    rdp_stats(s.a.rdp, &sa);
    rdp_stats(s.b.rdp, &sb);
    CU_ASSERT(sb.drops[RDP_DROP_REPLAY] > 0);
    CU_ASSERT(sa.drops[RDP_DROP_REPLAY] > 0);
    CU_ASSERT_EQUAL(sa.drops[RDP_DROP_MAC] + sb.drops[RDP_DROP_MAC], 0);
    if (c.failed || h_count(&s.a, H_LOST, 2) || h_count(&s.b, H_LOST, 1)) {
        fprintf(stderr, "replay: proxy forwarded %llu/%llu, injected %llu/%llu\n",
                (unsigned long long)s.px.fwd[0], (unsigned long long)s.px.fwd[1],
                (unsigned long long)s.px.injected[0], (unsigned long long)s.px.injected[1]);
        h_dump(&s.a, "replay");
        h_dump(&s.b, "replay");
    }
    proxied_close(&s);
}

/* ---- SYN replay ---- */

static void test_syn_replay(void)
{
    struct proxied s;
    if (proxied_open(&s, 14) < 0) {
        CU_FAIL("open A, B and the proxy");
        return;
    }
    /* establish, and exchange a few messages */
    for (uint64_t k = 0; k < 3; k++) {
        CU_ASSERT_EQUAL(h_send(&s.a, 2, k, 100 + k), 0);
        CU_ASSERT_EQUAL(h_send(&s.b, 1, k, 200 + k), 0);
    }
    struct h_wait_recv wb = {&s.b, 1, 3}, wa = {&s.a, 2, 3};
    CU_ASSERT_EQUAL(h_run(&s.net, h_cond_recv, &wb, H_S(5)), 1);
    CU_ASSERT_EQUAL(h_run(&s.net, h_cond_recv, &wa, H_S(5)), 1);
    struct idle_ctx ic = {&s};
    CU_ASSERT_EQUAL(h_run(&s.net, idle, &ic, H_S(5)), 1);

    /* the captured handshake: A's SYN (to B), B's SYNACK (to A) */
    const struct h_pkt *syn = NULL, *synack = NULL;
    for (size_t i = 0; i < s.px.ncap[0] && !syn; i++)
        if (s.px.cap[0][i].data[W_OFF_TYPE] == W_SYN) syn = &s.px.cap[0][i];
    for (size_t i = 0; i < s.px.ncap[1] && !synack; i++)
        if (s.px.cap[1][i].data[W_OFF_TYPE] == W_SYNACK) synack = &s.px.cap[1][i];
    CU_ASSERT(syn != NULL && synack != NULL);
    if (!syn || !synack) {
        proxied_close(&s);
        return;
    }

    struct rdp_stats sa0, sb0;
    rdp_stats(s.a.rdp, &sa0);
    rdp_stats(s.b.rdp, &sb0);
    uint64_t pa0 = sa0.pkts_recv, pb0 = sb0.pkts_recv;
    int replayed = 0, forged = 0;
    /* replayed as captured, several times */
    for (int i = 0; i < 5; i++) {
        CU_ASSERT_EQUAL(h_proxy_send_raw(&s.px, 0, syn->data, syn->len), 0);
        CU_ASSERT_EQUAL(h_proxy_send_raw(&s.px, 1, synack->data, synack->len), 0);
        replayed++;
    }
    /* forged (the MAC fails): other random bytes, a new connection id (what a restarted peer
     * would send), a newer incarnation */
    unsigned char buf[256];
    const struct h_pkt *orig[2] = {syn, synack};
    for (int dir = 0; dir < 2; dir++) {
        const struct h_pkt *o = orig[dir];
        if (o->len > sizeof(buf)) continue;
        memcpy(buf, o->data, o->len);
        buf[W_HDR + 20] ^= 0x01;
        CU_ASSERT_EQUAL(h_proxy_send_raw(&s.px, dir, buf, o->len), 0);
        memcpy(buf, o->data, o->len);
        buf[W_OFF_CONN + 3] ^= 0x5a;
        CU_ASSERT_EQUAL(h_proxy_send_raw(&s.px, dir, buf, o->len), 0);
        memcpy(buf, o->data, o->len);
        put64(buf + W_HDR, get64(o->data + W_HDR) + 1); /* incarnation */
        CU_ASSERT_EQUAL(h_proxy_send_raw(&s.px, dir, buf, o->len), 0);
    }
    forged = 3;
    struct rx_ctx rb = {&s.b, pb0 + (uint64_t)(replayed + forged)};
    struct rx_ctx ra = {&s.a, pa0 + (uint64_t)(replayed + forged)};
    CU_ASSERT_EQUAL(h_run(&s.net, pkts_read, &rb, H_S(5)), 1);
    CU_ASSERT_EQUAL(h_run(&s.net, pkts_read, &ra, H_S(5)), 1);
    CU_ASSERT_EQUAL(h_run(&s.net, idle, &ic, H_S(5)), 1);

    struct rdp_stats sa, sb;
    rdp_stats(s.a.rdp, &sa);
    rdp_stats(s.b.rdp, &sb);
    /* a replayed handshake of the current connection is only answered again (SYN: the
     * SYNACK; SYNACK: an ACK), counted as a duplicate; the answers change nothing either */
    CU_ASSERT(sb.drops[RDP_DROP_DUPLICATE] - sb0.drops[RDP_DROP_DUPLICATE] >= (uint64_t)replayed);
    CU_ASSERT(sa.drops[RDP_DROP_DUPLICATE] - sa0.drops[RDP_DROP_DUPLICATE] >= (uint64_t)replayed);
    CU_ASSERT_EQUAL(sb.drops[RDP_DROP_MAC] - sb0.drops[RDP_DROP_MAC], (uint64_t)forged);
    CU_ASSERT_EQUAL(sa.drops[RDP_DROP_MAC] - sa0.drops[RDP_DROP_MAC], (uint64_t)forged);

    /* the connection is the same one, and it still carries messages */
    for (uint64_t k = 3; k < 6; k++) {
        CU_ASSERT_EQUAL(h_send(&s.a, 2, k, 3000 * k), 0);
        CU_ASSERT_EQUAL(h_send(&s.b, 1, k, 2000 * k), 0);
    }
    wb.n = wa.n = 6;
    CU_ASSERT_EQUAL(h_run(&s.net, h_cond_recv, &wb, H_S(5)), 1);
    CU_ASSERT_EQUAL(h_run(&s.net, h_cond_recv, &wa, H_S(5)), 1);
    CU_ASSERT(h_check_recv_seq(&s.b, 1, 0, 6));
    CU_ASSERT(h_check_recv_seq(&s.a, 2, 0, 6));
    CU_ASSERT_EQUAL(h_count(&s.a, H_LOST, 2), 0);
    CU_ASSERT_EQUAL(h_count(&s.b, H_LOST, 1), 0);
    CU_ASSERT_EQUAL(h_count(&s.a, H_CONNECTED, 2), 1);
    CU_ASSERT_EQUAL(h_count(&s.b, H_CONNECTED, 1), 1);
    struct rdp_peer_stats ps;
    CU_ASSERT_EQUAL(rdp_peer_stats(s.b.rdp, 1, &ps), 0);
    CU_ASSERT_EQUAL(ps.connects, 1);
    CU_ASSERT_EQUAL(ps.losses, 0);
    if (h_count(&s.a, H_LOST, 2) || h_count(&s.b, H_LOST, 1)) {
        h_dump(&s.a, "syn replay");
        h_dump(&s.b, "syn replay");
    }
    proxied_close(&s);
}

/* ---- a SYN replayed right after a restart ---- */

/* A and B talk; B restarts (B' on the same port) and at once gets A's recorded SYN of the
 * old connection. Before the three-way handshake, B' took it for a connection: it reported
 * it connected and sent on ids A did not have, and its messages hung. Now B' answers and
 * waits for proof; it connects only with A's real answer, and messages flow both ways
 * within a second. */
static void test_syn_replay_restart(void)
{
    struct proxied s;
    if (proxied_open(&s, 15) < 0) {
        CU_FAIL("open A, B and the proxy");
        return;
    }
    CU_ASSERT_EQUAL(h_send(&s.a, 2, 0, 100), 0);
    CU_ASSERT_EQUAL(h_send(&s.b, 1, 0, 200), 0);
    struct h_wait_recv wb = {&s.b, 1, 1}, wa = {&s.a, 2, 1};
    CU_ASSERT_EQUAL(h_run(&s.net, h_cond_recv, &wb, H_S(5)), 1);
    CU_ASSERT_EQUAL(h_run(&s.net, h_cond_recv, &wa, H_S(5)), 1);
    const struct h_pkt *syn = NULL;
    for (size_t i = 0; i < s.px.ncap[0] && !syn; i++)
        if (s.px.cap[0][i].data[W_OFF_TYPE] == W_SYN) syn = &s.px.cap[0][i];
    CU_ASSERT_FATAL(syn != NULL);

    /* B restarts on its port; A's old SYN reaches B' first */
    struct h_ep b2;
    memset(&b2, 0, sizeof b2);
    uint16_t port = ntohs(s.b.addr.sin_port);
    h_ep_close(&s.b);
    if (h_ep_open(&b2, 2, 2, port, s.key, NULL) < 0) {
        CU_FAIL("open B'");
        proxied_close(&s);
        return;
    }
    CU_ASSERT_EQUAL(rdp_add_peer(b2.rdp, 1, (struct sockaddr *)&s.px.pb, sizeof(s.px.pb)), 0);
    h_net_add(&s.net, &b2);
    uint64_t p0 = pkts_recv(&b2);
    CU_ASSERT_EQUAL(h_proxy_send_raw(&s.px, 0, syn->data, syn->len), 0);
    struct rx_ctx rc = {&b2, p0 + 1};
    CU_ASSERT_EQUAL(h_run(&s.net, pkts_read, &rc, H_S(2)), 1);
    /* the replay alone connects nothing */
    CU_ASSERT_EQUAL(h_count(&b2, H_CONNECTED, 1), 0);

    uint64_t t0 = rdp_now_ns();
    CU_ASSERT_EQUAL(h_send(&b2, 1, 0, 300), 0);
    struct h_wait_recv wa2 = {&s.a, 2, 2};
    CU_ASSERT_EQUAL(h_run(&s.net, h_cond_recv, &wa2, H_S(1)), 1);
    CU_ASSERT_EQUAL(h_send(&s.a, 2, 1, 400), 0);
    struct h_wait_recv wb2 = {&b2, 1, 1};
    CU_ASSERT_EQUAL(h_run(&s.net, h_cond_recv, &wb2, H_S(1)), 1);
    CU_ASSERT(rdp_now_ns() - t0 < H_S(1));
    CU_ASSERT_EQUAL(h_count(&b2, H_CONNECTED, 1), 1);
    CU_ASSERT_EQUAL(h_count(&b2, H_LOST, 1), 0);
    const struct h_event *lost = h_find(&s.a, H_LOST, 2, 0);
    CU_ASSERT(lost && lost->reason == RDP_LOST_RESTART);
    CU_ASSERT_EQUAL(s.a.bad_content + b2.bad_content, 0);
    if (h_count(&b2, H_RECV, 1) != 1 || h_count(&s.a, H_RECV, 2) != 2) {
        h_dump(&s.a, "syn replay after restart");
        h_dump(&b2, "syn replay after restart");
    }
    h_ep_free(&b2);
    proxied_close(&s);
}

static int cmp_u32(const void *x, const void *y)
{
    uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
    return (a > b) - (a < b);
}

/* n values, sorted in place: none zero, none twice, and spread far wider than 2^28 (16 values
 * drawn uniformly from 32 bits almost surely are; a counter or a clock is not). */
static int spread_u32(const char *what, uint32_t *v, size_t n)
{
    qsort(v, n, sizeof v[0], cmp_u32);
    size_t zero = 0, same = 0;
    for (size_t i = 0; i < n; i++) {
        zero += v[i] == 0;
        same += i && v[i] == v[i - 1];
    }
    int ok = n > 1 && !zero && !same && v[n - 1] - v[0] > (1u << 28);
    if (!ok)
        fprintf(stderr, "%s: %zu zero, %zu repeated, range %08x..%08x\n", what, zero, same,
                n ? v[0] : 0, n ? v[n - 1] : 0);
    return ok;
}

static void test_handshake_ids(void)
{
    enum { PAIRS = 8 };
    uint32_t conn[PAIRS * 2], seq[PAIRS * 2]; /* of every SYN and SYNACK */
    size_t n = 0;
    for (int i = 0; i < PAIRS; i++) {
        struct proxied s;
        if (proxied_open(&s, 30 + (uint64_t)i) < 0) {
            CU_FAIL("open A, B and the proxy");
            return;
        }
        CU_ASSERT_EQUAL(h_send(&s.a, 2, 0, 10), 0);
        struct h_wait_recv wb = {&s.b, 1, 1};
        CU_ASSERT_EQUAL(h_run(&s.net, h_cond_recv, &wb, H_S(5)), 1);
        for (int dir = 0; dir < 2; dir++) {
            const struct h_pkt *hs = NULL;
            for (size_t k = 0; k < s.px.ncap[dir] && !hs; k++)
                if (s.px.cap[dir][k].data[W_OFF_TYPE] == (dir ? W_SYNACK : W_SYN))
                    hs = &s.px.cap[dir][k];
            CU_ASSERT(hs != NULL);
            if (!hs) continue;
            conn[n] = get32(hs->data + W_OFF_CONN);
            seq[n++] = get32(hs->data + W_OFF_SEQ);
        }
        proxied_close(&s);
    }
    CU_ASSERT_EQUAL(n, PAIRS * 2);
    CU_ASSERT(spread_u32("handshake connection ids", conn, n));
    CU_ASSERT(spread_u32("handshake initial sequence numbers", seq, n));
}

UNIT_SUITE(rdp_security, UNIT_TEST(test_wrong_key), UNIT_TEST(test_garbage), UNIT_TEST(test_replay),
           UNIT_TEST(test_syn_replay), UNIT_TEST(test_syn_replay_restart),
           UNIT_TEST(test_handshake_ids))
