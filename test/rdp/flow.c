/*
 * flow.c - RDP flow control tests (suite rdp_flow).
 *
 *  test_flow_control     a sender with a small sndbuf (256 KiB) and a receiver with a small
 *                        rcvbuf send without pause: rdp_send reports EAGAIN, can_send follows
 *                        each EAGAIN episode exactly once, every message arrives in order, the
 *                        queue never holds more than sndbuf plus the message just accepted, and
 *                        the sender never has more in flight than the receiver's window (and
 *                        no WINDOW drops).
 *  test_cansend_after_lost
 *                        a sender blocked by EAGAIN towards a peer that vanished gets can_send
 *                        once the loss has emptied its queue (else a caller that waits for
 *                        can_send, as the API asks, would never send to that node again), and
 *                        rdp_send is accepted again.
 *
 *  test_send_buffer_reuse
 *                        the caller's buffer is RDP's only until rdp_send returns (RDP sends
 *                        large fragments straight from it and copies them afterwards): A
 *                        overwrites its buffer after every send, B echoes every message from
 *                        inside its recv callback out of a copy in three pieces (rdp_sendv)
 *                        it overwrites and frees at once, and both receive windows are small,
 *                        so that most fragments wait in the queue when rdp_send returns. Both
 *                        receive in pieces (recvv), without offload, so the packets kept for
 *                        a message are the read buffers themselves. Every message and every
 *                        echo arrives intact.
 *
 *  test_pieces_small_packets
 *                        a sender with a smaller MTU than the receiver's: the receiver keeps
 *                        at most its bound of pieces per message and joins the rest; every
 *                        message of 5 KB..1 MiB arrives intact.
 *
 *  test_mtu_mismatch     a sender with a larger MTU than the receiver's (65536 against 1500):
 *                        packets carry the smaller payload, learnt from the handshake, and the
 *                        messages queued before it (up to 1 MiB: 16 packets at the sender's
 *                        size, 745 at the receiver's) are cut again. Every message arrives
 *                        intact, both ways, none is dropped as too large or reported lost;
 *                        the larger side sends and reads the small packets coalesced (UDP
 *                        GSO and GRO).
 *  test_mtu_mismatch_peer_opens
 *                        the same when the side with the smaller MTU opens the connection, and
 *                        the other learns its size with nothing queued: messages of 1 MiB
 *                        still fit its send queue.
 *  test_mtu_mismatch_window
 *                        a stream from the smaller-MTU side to the larger, which drops 5 % of
 *                        what it reads: its window counts the small packets (rcvbuf of them,
 *                        as for a peer of its own size), but it never holds more packets out
 *                        of order than rcvbuf of its own 64 KiB buffers; all arrives intact.
 *
 * Endpoints: A = node 1 on 127.0.0.1, B = node 2 on 127.0.0.2.
 */
#include "harness.h"
#include "unit.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

struct flow_ctx {
    struct h_stream s;
    struct h_ep *a, *b;
    size_t max_queued_loop; /* largest queued seen between rounds */
    uint32_t over_window;   /* most packets in flight beyond the peer's window seen */
    uint32_t max_inflight;
    int failed;
};

static int flow_done(void *p)
{
    struct flow_ctx *c = p;
    if (h_stream_pump(&c->s) < 0) c->failed = 1;
    struct rdp_peer_stats ps;
    if (rdp_peer_stats(c->a->rdp, 2, &ps) == 0) {
        if (ps.queued > c->max_queued_loop) c->max_queued_loop = ps.queued;
        /* packets in flight beyond the receiver's window (on a lossless path none is
         * SACKed, so inflight is all that was sent past the cumulative ACK) */
        if (ps.inflight > ps.peer_wnd && ps.inflight - ps.peer_wnd > c->over_window)
            c->over_window = ps.inflight - ps.peer_wnd;
        if (ps.inflight > c->max_inflight) c->max_inflight = ps.inflight;
    }
    if (c->failed || h_count(c->a, H_LOST, 2)) return 1;
    return h_count(c->b, H_RECV, 1) >= c->s.total;
}

static void test_flow_control(void)
{
    unsigned char key[RDP_KEY_BYTES];
    h_key(key, 9);
    struct rdp_config cfg;
    h_config(&cfg);
    cfg.sndbuf = 256 << 10;
    cfg.rcvbuf = 64 << 10; /* the smallest allowed: a window of a few dozen packets */
    struct h_ep a, b;
    struct h_net net;
    if (h_open_pair(&net, &a, &b, key, key, &cfg) < 0) return;

    struct flow_ctx c = {.a = &a, .b = &b};
    const size_t max_len = 128 << 10;
    h_stream_init(&c.s, &a, 2, h_scale(3000), 1, max_len);
    int r = h_run(&net, flow_done, &c, H_S(60));
    CU_ASSERT_EQUAL(r, 1);
    CU_ASSERT_EQUAL(c.failed, 0);
    CU_ASSERT(h_check_recv_seq(&b, 1, 0, c.s.total));
    CU_ASSERT_EQUAL(b.bad_content, 0);
    CU_ASSERT(c.s.eagains > 0);
    /* the stream stops at the first EAGAIN and goes on only after can_send: one each */
    CU_ASSERT_EQUAL(h_count(&a, H_CANSEND, 2), c.s.eagains);
    CU_ASSERT(c.s.max_queued <= cfg.sndbuf + max_len);
    CU_ASSERT(c.s.max_queued_slack <= cfg.sndbuf);
    CU_ASSERT(c.max_queued_loop <= cfg.sndbuf + max_len);
    CU_ASSERT_EQUAL(h_count(&a, H_LOST, 2), 0);
    struct rdp_stats sb;
    rdp_stats(b.rdp, &sb);
    CU_ASSERT_EQUAL(sb.drops[RDP_DROP_WINDOW], 0);
    CU_ASSERT_EQUAL(sb.drops[RDP_DROP_NOBUF], 0);
    /* in order and lossless, a sender past the window would not be dropped for it: what it
     * had in flight is what shows it kept to the window, which it did fill (32 packets) */
    CU_ASSERT_EQUAL(c.over_window, 0);
    CU_ASSERT(c.max_inflight >= 16);
    if (r != 1 || c.failed || !c.s.eagains || c.s.max_queued > cfg.sndbuf + max_len ||
        sb.drops[RDP_DROP_WINDOW] || c.over_window) {
        fprintf(stderr,
                "flow: sent %llu/%llu, eagain %llu, can_send %llu, blocked %d, max queued %zu "
                "(after send) %zu (between rounds), sndbuf %zu\n",
                (unsigned long long)c.s.next, (unsigned long long)c.s.total,
                (unsigned long long)c.s.eagains, (unsigned long long)h_count(&a, H_CANSEND, 2),
                c.s.blocked, c.s.max_queued, c.max_queued_loop, cfg.sndbuf);
        h_dump(&a, "flow");
        h_dump(&b, "flow");
    }
    h_ep_free(&a);
    h_ep_free(&b);
}

struct cansend_ctx {
    struct h_ep *a;
};

static int lost_then_cansend(void *p)
{
    struct cansend_ctx *c = p;
    const struct h_event *lost = h_find(c->a, H_LOST, 2, 0);
    if (!lost) return 0;
    for (uint64_t i = 0;; i++) {
        const struct h_event *e = h_find(c->a, H_CANSEND, 2, i);
        if (!e) return 0;
        if (e > lost) return 1;
    }
}

static void test_cansend_after_lost(void)
{
    unsigned char key[RDP_KEY_BYTES];
    h_key(key, 10);
    struct rdp_config cfg;
    h_config(&cfg);
    cfg.rto_min_us = 2000;
    cfg.rto_init_us = 5000;
    cfg.rto_max_us = 20000;
    cfg.max_retrans = 3;
    cfg.sndbuf = 64 << 10;
    struct h_ep a;
    struct h_net net;
    if (h_open_one(&net, &a, key, &cfg) < 0) return;
    /* a silent peer: bound, never read, so no ICMP; the connection can't even open */
    struct sockaddr_in sb;
    int fd = h_silent_peer(&a, &sb);
    if (fd < 0) {
        h_ep_free(&a);
        return;
    }

    /* fill the queue until EAGAIN */
    uint64_t k = 0;
    int r = 0;
    while (k < 100 && (r = h_send(&a, 2, k, 20000)) == 0) k++;
    CU_ASSERT_EQUAL(r, -1);
    CU_ASSERT_EQUAL(errno, EAGAIN);
    CU_ASSERT(k >= 3);

    struct cansend_ctx c = {&a};
    uint64_t bound = rdp_lost_bound_us(&cfg) * 1000;
    int ok = h_run(&net, lost_then_cansend, &c, bound * 2 + H_S(1));
    CU_ASSERT_EQUAL(ok, 1);
    CU_ASSERT_EQUAL(h_count(&a, H_LOST, 2), 1);
    CU_ASSERT_EQUAL(h_count(&a, H_UNDELIV, 2), k);
    if (ok != 1) {
        fprintf(stderr,
                "cansend_after_lost: %llu messages queued before EAGAIN, lost %llu, "
                "can_send %llu\n",
                (unsigned long long)k, (unsigned long long)h_count(&a, H_LOST, 2),
                (unsigned long long)h_count(&a, H_CANSEND, 2));
        h_dump(&a, "can_send after loss");
    }
    /* and the queue takes messages again */
    CU_ASSERT_EQUAL(h_send(&a, 2, k, 20000), 0);
    close(fd);
    h_ep_free(&a);
}

static int echo_done(void *p)
{
    struct flow_ctx *c = p;
    if (h_stream_pump(&c->s) < 0) c->failed = 1;
    if (c->failed || h_count(c->a, H_LOST, 2) || h_count(c->b, H_LOST, 1)) return 1;
    return h_count(c->a, H_RECV, 2) >= c->s.total;
}

static void test_send_buffer_reuse(void)
{
    unsigned char key[RDP_KEY_BYTES];
    h_key(key, 11);
    struct rdp_config ca, cb;
    h_config(&ca);
    ca.sndbuf = 1 << 20;
    ca.mtu = 9000;        /* fragments large enough to be sent from the caller's buffer */
    ca.rcvbuf = 64 << 10; /* the smallest window (32 packets): fragments wait in the queue */
    ca.offload = 0;       /* one read per datagram: the receiver keeps the read buffers */
    cb = ca;
    cb.sndbuf = 256u << 20; /* room to echo the whole stream: an echo never meets EAGAIN */
    struct h_ep a, b;
    struct h_net net;
    /* messages arrive in pieces and B echoes them with rdp_sendv */
    if (h_open_pair_pieces(&net, &a, &b, key, key, &ca, &cb) < 0) return;
    b.echo = 1;
    a.rx_seed[2] = a.tx_seed[2]; /* the echo carries A's own messages back */

    struct flow_ctx c = {.a = &a, .b = &b};
    h_stream_init(&c.s, &a, 2, h_scale(300), 1, RDP_MAX_MSG);
    int r = h_run(&net, echo_done, &c, H_S(60));
    CU_ASSERT_EQUAL(r, 1);
    CU_ASSERT_EQUAL(c.failed, 0);
    CU_ASSERT(h_check_recv_seq(&b, 1, 0, c.s.total));
    CU_ASSERT(h_check_recv_seq(&a, 2, 0, c.s.total));
    CU_ASSERT_EQUAL(a.bad_content, 0);
    CU_ASSERT_EQUAL(b.bad_content, 0);
    CU_ASSERT_EQUAL(b.echo_errors, 0);
    CU_ASSERT(a.multi_piece > c.s.total / 4 && b.multi_piece > c.s.total / 4);
    CU_ASSERT_EQUAL(a.bad_pieces + b.bad_pieces, 0);
    /* the windows did hold fragments back, in both directions */
    CU_ASSERT(c.s.max_queued > 2 * RDP_MAX_MSG / 3);
    /* every packet left with its MAC over the bytes it carried: a batch sent after the
     * payloads were copied in would carry stale MACs, which retransmissions would hide */
    struct rdp_stats sa, sb;
    rdp_stats(a.rdp, &sa);
    rdp_stats(b.rdp, &sb);
    CU_ASSERT_EQUAL(sa.drops[RDP_DROP_MAC], 0);
    CU_ASSERT_EQUAL(sb.drops[RDP_DROP_MAC], 0);
    if (r != 1 || c.failed || a.bad_content || b.bad_content || b.echo_errors) {
        fprintf(stderr, "send_buffer_reuse: sent %llu/%llu, echo errors %llu\n",
                (unsigned long long)c.s.next, (unsigned long long)c.s.total,
                (unsigned long long)b.echo_errors);
        h_dump(&a, "send buffer reuse");
        h_dump(&b, "send buffer reuse");
    }
    h_ep_free(&a);
    h_ep_free(&b);
}

/* A sender that cuts smaller packets than the receiver would (MTU 1500 against 9000): a
 * message of 1 MiB is 745 packets, more than the receiver keeps as pieces (it sizes its list
 * for its own packets), so it joins the rest of such a message. */
static void test_pieces_small_packets(void)
{
    unsigned char key[RDP_KEY_BYTES];
    h_key(key, 12);
    struct rdp_config ca, cb;
    h_config(&ca);
    ca.offload = 0; /* one read per datagram: every packet could be kept as it is */
    cb = ca;
    ca.mtu = 1500;
    cb.mtu = 9000;
    struct h_ep a, b;
    struct h_net net;
    if (h_open_pair_pieces(&net, &a, &b, key, key, &ca, &cb) < 0) return;
    /* B keeps RDP_MAX_MSG / 8908 + 2 = 119 pieces (docs/rdp-protocol.md): messages up to
     * 119 packets of A's 1408 bytes come in as many pieces, longer ones are joined */
    const int bound = RDP_MAX_MSG / (9000 - 28 - 64) + 2;
    const size_t sizes[] = {
        5000, 118 * 1408, (size_t)bound * 1408, ((size_t)bound + 1) * 1408, RDP_MAX_MSG, 100000};
    const uint64_t n = sizeof sizes / sizeof sizes[0];
    for (uint64_t k = 0; k < 2 * n; k++) {
        CU_ASSERT_EQUAL_FATAL(h_send(&a, 2, k, sizes[k % n]), 0);
        struct h_wait_recv w = {&b, 1, k + 1};
        CU_ASSERT_EQUAL_FATAL(h_run(&net, h_cond_recv, &w, H_S(10)), 1);
    }
    CU_ASSERT(h_check_recv_seq(&b, 1, 0, 2 * n));
    CU_ASSERT_EQUAL(b.bad_content + b.bad_pieces, 0);
    CU_ASSERT_EQUAL(b.max_pieces, bound);
    if (b.max_pieces != bound || b.bad_content)
        fprintf(stderr, "pieces_small_packets: at most %d pieces (bound %d), %llu bad\n",
                b.max_pieces, bound, (unsigned long long)b.bad_content);
    h_ep_free(&a);
    h_ep_free(&b);
}

/* payloads: the largest IPv4 UDP datagram, or the MTU less IP and UDP, less RDP's 64 */
#define MTU_BIG   (65507 - 64)
#define MTU_SMALL (1500 - 28 - 64)

/* A at MTU 65536 (a 1 MiB message is 16 packets), B at 1500 (745). */
static int open_mtu_pair(struct h_net *net, struct h_ep *a, struct h_ep *b)
{
    unsigned char key[RDP_KEY_BYTES];
    h_key(key, 13);
    struct rdp_config ca, cb;
    h_config(&ca);
    cb = ca;
    ca.mtu = 65536;
    cb.mtu = 1500;
    return h_open_pair_cfg(net, a, b, key, key, &ca, &cb);
}

static void test_mtu_mismatch(void)
{
    const uint32_t big = MTU_BIG, small = MTU_SMALL;
    struct h_ep a, b;
    struct h_net net;
    if (open_mtu_pair(&net, &a, &b) < 0) return;
    b.echo = 1;
    a.rx_seed[2] = a.tx_seed[2]; /* the echo carries A's own messages back */

    const size_t sizes[] = {1, 5000, small, small + 1, 65536, RDP_MAX_MSG, 100000, big + 1};
    const uint64_t n = sizeof sizes / sizeof sizes[0];
    /* queued before the handshake, cut at A's own size */
    for (uint64_t k = 0; k < n; k++) CU_ASSERT_EQUAL_FATAL(h_send(&a, 2, k, sizes[k]), 0);
    struct rdp_peer_stats pa, pb;
    CU_ASSERT_EQUAL(rdp_peer_stats(a.rdp, 2, &pa), 0);
    CU_ASSERT_EQUAL(pa.payload, big);
    struct h_wait_recv w = {&a, 2, n};
    CU_ASSERT_EQUAL(h_run(&net, h_cond_recv, &w, H_S(20)), 1);
    /* and once the sizes are known */
    for (uint64_t k = n; k < 2 * n; k++) CU_ASSERT_EQUAL_FATAL(h_send(&a, 2, k, sizes[k - n]), 0);
    w.n = 2 * n;
    CU_ASSERT_EQUAL(h_run(&net, h_cond_recv, &w, H_S(20)), 1);

    CU_ASSERT(h_check_recv_seq(&b, 1, 0, 2 * n));
    CU_ASSERT(h_check_recv_seq(&a, 2, 0, 2 * n));
    CU_ASSERT_EQUAL(a.bad_content + b.bad_content + b.echo_errors, 0);
    CU_ASSERT_EQUAL(h_count(&a, H_LOST, 2) + h_count(&b, H_LOST, 1), 0);
    CU_ASSERT_EQUAL(h_count(&a, H_UNDELIV, 2), 0);
    CU_ASSERT_EQUAL(rdp_peer_stats(a.rdp, 2, &pa), 0);
    CU_ASSERT_EQUAL(rdp_peer_stats(b.rdp, 1, &pb), 0);
    CU_ASSERT_EQUAL(pa.payload, small);
    CU_ASSERT_EQUAL(pb.payload, small);
    CU_ASSERT_EQUAL(pb.drops[RDP_DROP_MALFORMED], 0);
    struct rdp_stats sb;
    rdp_stats(b.rdp, &sb);
    CU_ASSERT_EQUAL(sb.drops[RDP_DROP_MALFORMED], 0); /* a datagram larger than B takes */
    struct rdp_stats sa;
    rdp_stats(a.rdp, &sa);
    CU_ASSERT(sa.gso_sends > 0); /* A's 1500-byte packets to B leave coalesced, as B's do */
    CU_ASSERT(sa.gro_reads > 0); /* and A reads B's coalesced, as B reads A's */
    if (h_count(&a, H_RECV, 2) != 2 * n || sb.drops[RDP_DROP_MALFORMED]) {
        fprintf(stderr, "mtu_mismatch: %llu/%llu echoes, %llu too large at B\n",
                (unsigned long long)h_count(&a, H_RECV, 2), (unsigned long long)(2 * n),
                (unsigned long long)sb.drops[RDP_DROP_MALFORMED]);
        h_dump(&a, "mtu mismatch");
    }
    h_ep_free(&a);
    h_ep_free(&b);
}

struct window_ctx {
    struct h_stream s;
    struct h_ep *rx;
    uint32_t max_peer_wnd; /* the largest window the sender saw */
    uint32_t max_held;     /* the most packets the receiver held out of order at once */
    int failed;
};

static int window_done(void *p)
{
    struct window_ctx *c = p;
    if (h_stream_pump(&c->s) < 0) c->failed = 1;
    struct rdp_peer_stats ps;
    if (rdp_peer_stats(c->s.ep->rdp, c->s.to, &ps) == 0 && ps.peer_wnd > c->max_peer_wnd)
        c->max_peer_wnd = ps.peer_wnd;
    if (rdp_peer_stats(c->rx->rdp, 2, &ps) == 0 && ps.held > c->max_held) c->max_held = ps.held;
    if (c->failed || h_count(c->s.ep, H_LOST, c->s.to)) return 1;
    return h_count(c->rx, H_RECV, 2) >= c->s.total;
}

/* The largest power of two packets of `payload` bytes within rcvbuf. */
static uint32_t pow2_packets(size_t rcvbuf, uint32_t payload)
{
    uint32_t n = 1;
    while ((uint64_t)n * 2 <= rcvbuf / payload) n *= 2;
    return n;
}

static void test_mtu_mismatch_window(void)
{
    struct h_ep a, b;
    struct h_net net;
    if (open_mtu_pair(&net, &a, &b) < 0) return;
    /* A (65536) drops 5 % of what it reads, so it holds packets ahead of gaps */
    struct rdp_faults f = {.drop = 0.05, .dir = RDP_FAULT_RX, .seed = 11};
    CU_ASSERT_EQUAL(rdp_set_faults(a.rdp, &f), 0);
    struct window_ctx c = {.rx = &a};
    h_stream_init(&c.s, &b, 1, h_scale(400), 1000, 256 << 10);
    CU_ASSERT_EQUAL(h_run(&net, window_done, &c, H_S(60)), 1);
    CU_ASSERT_EQUAL(c.failed, 0);
    CU_ASSERT(h_check_recv_seq(&a, 2, 0, c.s.total));
    CU_ASSERT_EQUAL(a.bad_content, 0);
    struct rdp_peer_stats pa;
    CU_ASSERT_EQUAL(rdp_peer_stats(a.rdp, 2, &pa), 0);
    struct rdp_config cfg;
    h_config(&cfg);
    /* the window counts B's packets: rcvbuf of them, as for any peer (power of two) */
    uint32_t want = pow2_packets(cfg.rcvbuf, MTU_SMALL);
    CU_ASSERT_EQUAL(pa.rcv_wnd, want);
    CU_ASSERT_EQUAL(c.max_peer_wnd, want);
    /* what A holds is bounded by its own 64 KiB buffers: rcvbuf of them */
    uint32_t bound = pow2_packets(cfg.rcvbuf, MTU_BIG);
    CU_ASSERT(c.max_held > 0);
    CU_ASSERT(c.max_held <= bound);
    if (c.max_peer_wnd != want || c.max_held > bound)
        fprintf(stderr, "mtu_mismatch_window: window %u (want %u), held at most %u (bound %u)\n",
                c.max_peer_wnd, want, c.max_held, bound);
    h_ep_free(&a);
    h_ep_free(&b);
}

struct cwnd_wait {
    struct h_wait_recv w;
    struct h_ep *tx;
    uint32_t to;
    uint32_t max_cwnd; /* the largest congestion window of tx towards node `to` seen */
};

static int cwnd_recv(void *p)
{
    struct cwnd_wait *c = p;
    struct rdp_peer_stats ps;
    if (rdp_peer_stats(c->tx->rdp, c->to, &ps) == 0 && ps.cwnd > c->max_cwnd) c->max_cwnd = ps.cwnd;
    return h_cond_recv(&c->w);
}

/* The same when the side with the smaller MTU opens the connection: A learns the size from
 * B's SYN with nothing queued, and must still make room for a 1 MiB message of B's size. */
static void test_mtu_mismatch_peer_opens(void)
{
    struct h_ep a, b;
    struct h_net net;
    if (open_mtu_pair(&net, &a, &b) < 0) return;
    CU_ASSERT_EQUAL_FATAL(h_send(&b, 1, 0, 1000), 0);
    struct h_wait_recv wa = {&a, 2, 1};
    CU_ASSERT_EQUAL(h_run(&net, h_cond_recv, &wa, H_S(10)), 1);
    struct rdp_peer_stats pa;
    CU_ASSERT_EQUAL(rdp_peer_stats(a.rdp, 2, &pa), 0);
    CU_ASSERT_EQUAL(pa.payload, MTU_SMALL);

    const size_t sizes[] = {RDP_MAX_MSG, 65536, 1, RDP_MAX_MSG};
    const uint64_t n = sizeof sizes / sizeof sizes[0];
    for (uint64_t k = 0; k < n; k++) CU_ASSERT_EQUAL_FATAL(h_send(&a, 2, k, sizes[k]), 0);
    struct cwnd_wait cw = {{&b, 1, n}, &a, 2, 0};
    CU_ASSERT_EQUAL(h_run(&net, cwnd_recv, &cw, H_S(20)), 1);
    CU_ASSERT(h_check_recv_seq(&b, 1, 0, n));
    CU_ASSERT(h_check_recv_seq(&a, 2, 0, 1));
    /* slow start went on past the first ring's size (128 packets), unless a timeout cut it
     * short (as under the sanitizers, whose slowness can fire the retransmission timer) */
    CU_ASSERT_EQUAL(rdp_peer_stats(a.rdp, 2, &pa), 0);
    if (pa.timeouts == 0) CU_ASSERT(cw.max_cwnd > 256);
    CU_ASSERT_EQUAL(a.bad_content + b.bad_content, 0);
    CU_ASSERT_EQUAL(h_count(&a, H_LOST, 2) + h_count(&b, H_LOST, 1), 0);
    CU_ASSERT_EQUAL(h_count(&a, H_UNDELIV, 2), 0);
    struct rdp_stats sb;
    rdp_stats(b.rdp, &sb);
    CU_ASSERT_EQUAL(sb.drops[RDP_DROP_MALFORMED], 0);
    h_ep_free(&a);
    h_ep_free(&b);
}

UNIT_SUITE(rdp_flow, UNIT_TEST(test_flow_control), UNIT_TEST(test_cansend_after_lost),
           UNIT_TEST(test_send_buffer_reuse), UNIT_TEST(test_pieces_small_packets),
           UNIT_TEST(test_mtu_mismatch), UNIT_TEST(test_mtu_mismatch_peer_opens),
           UNIT_TEST(test_mtu_mismatch_window))
