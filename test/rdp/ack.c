/*
 * ack.c - when RDP acknowledges (suite rdp_ack).
 *
 *  test_ack_piggyback  request/response with messages of three packets at MTU 1500: once
 *                      the connection has seen an answer follow a request, the answer carries
 *                      the ACK of the request and no pure ACK is sent (each would wake the
 *                      peer for nothing), in either direction; every message arrives.
 *  test_pipe_slices    on the interactive connection a 44-packet answer leaves in two
 *                      slices (sends) of about 32 KiB; sent one way, one at a time, the same
 *                      messages leave in one GSO send each.
 *  test_ack_long       64 KiB requests and answers (47 packets each, two slices): once the
 *                      congestion window has grown past a message, the answer carries the
 *                      ACK of a whole request: no pure ACK in either direction.
 *  test_ack_window     200 KiB requests and answers through a receive window of 32 packets:
 *                      the last packet a full window lets out asks for an ACK (ACKREQ), which
 *                      the receiver sends at once although on an interactive connection it
 *                      otherwise holds ACKs back for the answer, also mid-message. The
 *                      delayed ACK and the RTO are 30 s, so a receiver that waited would
 *                      stall the exchange past its deadline.
 *  test_ack_stream     a one-way stream of the same messages: the receiver, which never
 *                      answers, acknowledges at once. The delayed ACK and the RTO are 30 s,
 *                      so a receiver that waited would stall the stream past its 10 s
 *                      deadline, and a lone message after it would stay unacknowledged
 *                      past 2 s.
 *  test_ack_credit_stream  a stream of 64 KiB messages whose receiver returns a 12-byte
 *                      word for each (as the preload library's credit): that word is no
 *                      answer, so the receiver acknowledges as a stream's does (every second
 *                      packet), instead of holding its ACKs back for an answer that never
 *                      carries them in time (under loss the stream then stalled on it).
 *  test_flush_in_callback  lone messages with a delayed ACK and RTO of 30 s: rdp_flush
 *                      called inside the receiver's callback sends one ACK then and there
 *                      (and the sender has all acknowledged); without it nothing leaves
 *                      during the callback.
 *
 * Endpoints: A = node 1 on 127.0.0.1, B = node 2 on 127.0.0.2.
 */
#include "harness.h"
#include "unit.h"

#include <stdio.h>

#define MSG_LEN 4000 /* three packets at MTU 1500 */

struct pp_ctx {
    struct h_ep *a, *b;
    uint64_t rounds, sent_a, sent_b;
    size_t len;
};

/* A sends request k once B answered k-1; B answers each request it got. */
static int pp_step(void *p)
{
    struct pp_ctx *c = p;
    uint64_t got_b = h_count(c->b, H_RECV, 1), got_a = h_count(c->a, H_RECV, 2);
    if (c->sent_b < got_b && h_send(c->b, 1, c->sent_b, c->len) == 0) c->sent_b++;
    if (c->sent_a == got_a && c->sent_a < c->rounds && h_send(c->a, 2, c->sent_a, c->len) == 0)
        c->sent_a++;
    return got_a == c->rounds;
}

/* A and B at MTU 1500 with the given delayed ACK (and RTO, if rto_us). 0, or -1 after a
 * CUnit failure. */
static int open_1500(struct h_net *net, struct h_ep *a, struct h_ep *b, uint64_t seed,
                     unsigned ack_delay_us, unsigned rto_us)
{
    unsigned char key[RDP_KEY_BYTES];
    h_key(key, seed);
    struct rdp_config cfg;
    h_config(&cfg);
    cfg.mtu = 1500;
    cfg.ack_delay_us = ack_delay_us;
    if (rto_us) cfg.rto_min_us = cfg.rto_init_us = cfg.rto_max_us = rto_us;
    return h_open_pair(net, a, b, key, key, &cfg);
}

/* rounds of request (A) and answer (B) of len bytes each; all must arrive. */
static void pingpong(struct h_net *net, struct h_ep *a, struct h_ep *b, uint64_t rounds, size_t len)
{
    struct pp_ctx c = {a, b, rounds, 0, 0, len};
    CU_ASSERT_EQUAL(h_run(net, pp_step, &c, H_S(20)), 1);
    CU_ASSERT(h_check_recv_seq(b, 1, 0, rounds));
    CU_ASSERT(h_check_recv_seq(a, 2, 0, rounds));
}

static void test_ack_piggyback(void)
{
    struct h_ep a, b;
    struct h_net net;
    /* a delayed ACK of 2 ms: room for a slow scheduler between delivery and answer; an RTO
     * of 1 s, so that a test process descheduled under load (ASan, other tests) does not
     * retransmit: what is counted here is ACKs riding on answers, not loss recovery */
    if (open_1500(&net, &a, &b, 50, 2000, 1000000) < 0) return;
    const uint64_t rounds = 200;
    pingpong(&net, &a, &b, rounds, MSG_LEN);
    struct rdp_stats sa, sb;
    rdp_stats(a.rdp, &sa);
    rdp_stats(b.rdp, &sb);
    /* 3 data packets per message; the first exchanges (handshake, before the connection is
     * known as interactive) and the final ACK of the last answer may add a few */
    uint64_t data = 3 * rounds;
    CU_ASSERT(sa.pkts_sent >= data && sa.pkts_sent <= data + 6);
    CU_ASSERT(sb.pkts_sent >= data && sb.pkts_sent <= data + 6);
    CU_ASSERT_EQUAL(sa.retransmits + sb.retransmits, 0);
    struct rdp_peer_stats pb;
    CU_ASSERT(rdp_peer_stats(b.rdp, 1, &pb) == 0 && pb.interactive); /* B answers */
    if (sa.pkts_sent > data + 6 || sb.pkts_sent > data + 6)
        fprintf(stderr, "ack: %llu rounds of %d B: A sent %llu packets, B %llu (data: %llu each)\n",
                (unsigned long long)rounds, MSG_LEN, (unsigned long long)sa.pkts_sent,
                (unsigned long long)sb.pkts_sent, (unsigned long long)data);
    h_ep_free(&a);
    h_ep_free(&b);
}

static void test_ack_long(void)
{
    const size_t len = 65536; /* 47 packets of 1408 bytes at MTU 1500 */
    const uint64_t warm = 50, rounds = 200;
    struct h_ep a, b;
    struct h_net net;
    if (open_1500(&net, &a, &b, 53, 2000, 0) < 0) return;
    struct pp_ctx c = {&a, &b, warm, 0, 0, len};
    CU_ASSERT_EQUAL_FATAL(h_run(&net, pp_step, &c, H_S(20)), 1);
    struct rdp_stats a0, b0, a1, b1;
    rdp_stats(a.rdp, &a0);
    rdp_stats(b.rdp, &b0);
    c.rounds = rounds;
    CU_ASSERT_EQUAL_FATAL(h_run(&net, pp_step, &c, H_S(20)), 1);
    CU_ASSERT(h_check_recv_seq(&b, 1, 0, rounds));
    CU_ASSERT(h_check_recv_seq(&a, 2, 0, rounds));
    rdp_stats(a.rdp, &a1);
    rdp_stats(b.rdp, &b1);
    uint64_t data = 47 * (rounds - warm), sa = a1.pkts_sent - a0.pkts_sent,
             sb = b1.pkts_sent - b0.pkts_sent;
    /* a stray ACK or two (a slow scheduler past the 2 ms delayed ACK) is no failure */
    CU_ASSERT(sa >= data && sa <= data + 4);
    CU_ASSERT(sb >= data && sb <= data + 4);
    if (sa > data + 4 || sb > data + 4)
        fprintf(stderr,
                "ack_long: %llu rounds of 64 KiB: A sent %llu packets, B %llu (data %llu)\n",
                (unsigned long long)(rounds - warm), (unsigned long long)sa, (unsigned long long)sb,
                (unsigned long long)data);
    h_ep_free(&a);
    h_ep_free(&b);
}

static void test_ack_window(void)
{
    unsigned char key[RDP_KEY_BYTES];
    h_key(key, 54);
    struct rdp_config cfg;
    h_config(&cfg);
    cfg.mtu = 1500;
    cfg.ack_delay_us = cfg.rto_min_us = cfg.rto_init_us = cfg.rto_max_us = 30000000;
    cfg.rcvbuf = 65536; /* a receive window of 32 packets, below RDP_ACK_DEFER_MAX */
    struct h_ep a, b;
    struct h_net net;
    if (h_open_pair(&net, &a, &b, key, key, &cfg) < 0) return;
    pingpong(&net, &a, &b, 20, 200 << 10);
    struct rdp_stats sa, sb;
    rdp_stats(a.rdp, &sa);
    rdp_stats(b.rdp, &sb);
    CU_ASSERT_EQUAL(sa.retransmits + sb.retransmits, 0);
    h_ep_free(&a);
    h_ep_free(&b);
}

/* Condition: A has nothing unacknowledged towards B. */
static int a_all_acked(void *p)
{
    struct h_ep *a = p;
    struct rdp_peer_stats ps;
    return rdp_peer_stats(a->rdp, 2, &ps) == 0 && ps.queued == 0 && ps.inflight == 0;
}

static void test_ack_stream(void)
{
    struct h_ep a, b;
    struct h_net net;
    /* a delayed ACK or a retransmission timeout of 30 s would stall the stream past the
     * deadline */
    if (open_1500(&net, &a, &b, 51, 30000000, 30000000) < 0) return;
    h_oneway(&net, &a, &b, 2000, MSG_LEN);
    /* A full window asks for its ACK (ACKREQ), so a stream moves even past a receiver that
     * held its ACKs back: a lone message after it, which fills no window, is what shows
     * that the receiver acknowledges without being asked */
    CU_ASSERT_EQUAL_FATAL(h_send(&a, 2, 2000, MSG_LEN), 0);
    CU_ASSERT_EQUAL(h_run(&net, a_all_acked, &a, H_S(2)), 1);
    struct rdp_stats sa;
    rdp_stats(a.rdp, &sa);
    CU_ASSERT_EQUAL(sa.retransmits, 0);
    h_ep_free(&a);
    h_ep_free(&b);
}

/* The stream's receiver answers each message with a small word of its own. */
struct credit_ctx {
    struct h_stream s;
    struct h_ep *b;
    uint64_t n, words;
};

static int credit_step(void *p)
{
    struct credit_ctx *c = p;
    if (h_stream_pump(&c->s) < 0) return -1;
    while (c->words < h_count(c->b, H_RECV, 1) && h_send(c->b, 1, c->words, 12) == 0) c->words++;
    return h_count(c->b, H_RECV, 1) == c->n && c->words == c->n;
}

static void test_ack_credit_stream(void)
{
    struct h_ep a, b;
    struct h_net net;
    /* the preload library's delayed ACK: 1 ms */
    if (open_1500(&net, &a, &b, 55, 1000, 0) < 0) return;
    struct credit_ctx c = {.b = &b, .n = 300};
    h_stream_init(&c.s, &a, 2, c.n, 65536, 65536);
    CU_ASSERT_EQUAL_FATAL(h_run(&net, credit_step, &c, H_S(20)), 1);
    CU_ASSERT(h_check_recv_seq(&b, 1, 0, c.n));
    /* B does not take it for request/response: its words are no answers */
    struct rdp_peer_stats pb;
    CU_ASSERT_EQUAL_FATAL(rdp_peer_stats(b.rdp, 1, &pb), 0);
    CU_ASSERT(!pb.interactive);
    h_ep_free(&a);
    h_ep_free(&b);
}

/* An interactive connection sends a long message in slices of RDP_PIPE_BYTES (so the
 * receiver starts on the first while the sender signs the next); a stream does not. */
static void test_pipe_slices(void)
{
    /* 44 packets of 1448 bytes (1464 with the MAC): one GSO send can take them all (65,000
     * bytes at most); sliced at 32 KiB, they are two: 23 and 21 */
    const size_t len = 44 * 1400;
    struct h_ep a, b;
    struct h_net net;
    if (open_1500(&net, &a, &b, 52, 2000, 0) < 0) return;
    const uint64_t rounds = 100;
    pingpong(&net, &a, &b, rounds, len);
    struct rdp_stats sb;
    rdp_stats(b.rdp, &sb);
    /* B answers every request at once: interactive from its first answer on */
    CU_ASSERT(sb.gso_sends >= 2 * (rounds - 1));
    h_ep_free(&a);
    h_ep_free(&b);

    /* the same messages one way, one at a time (the receiver never answers): one send each */
    if (open_1500(&net, &a, &b, 52, 2000, 0) < 0) return;
    uint64_t sent = 0;
    for (; sent < rounds; sent++) {
        CU_ASSERT_EQUAL_FATAL(h_send(&a, 2, sent, len), 0);
        struct h_wait_recv w = {&b, 1, sent + 1};
        if (h_run(&net, h_cond_recv, &w, H_S(5)) != 1) break;
    }
    CU_ASSERT_EQUAL(sent, rounds);
    struct rdp_stats sa;
    rdp_stats(a.rdp, &sa);
    CU_ASSERT(sa.gso_sends <= rounds + 5); /* a few split while the windows grow */
    if (sb.gso_sends < 2 * (rounds - 1) || sa.gso_sends > rounds + 5)
        fprintf(stderr, "pipe: answers in %llu GSO sends, stream in %llu (100 messages each)\n",
                (unsigned long long)sb.gso_sends, (unsigned long long)sa.gso_sends);
    h_ep_free(&a);
    h_ep_free(&b);
}

/* B's recv callback: the packets B sent during it, with rdp_flush (flush_on) or without. */
static int flush_on;
static uint64_t flush_sent, flush_calls;

static void flush_in_recv(struct h_ep *ep, uint32_t node)
{
    (void)node;
    struct rdp_stats s0, s1;
    rdp_stats(ep->rdp, &s0);
    if (flush_on) rdp_flush(ep->rdp);
    rdp_stats(ep->rdp, &s1);
    flush_sent += s1.pkts_sent - s0.pkts_sent;
    flush_calls++;
}

static void test_flush_in_callback(void)
{
    for (flush_on = 0; flush_on < 2; flush_on++) {
        struct h_ep a, b;
        struct h_net net;
        /* a delayed ACK and an RTO of 30 s: only rdp_flush acknowledges a lone message */
        if (open_1500(&net, &a, &b, 53, 30000000, 30000000) < 0) return;
        b.on_recv = flush_in_recv;
        flush_sent = flush_calls = 0;
        const uint64_t n = 5;
        for (uint64_t k = 0; k < n; k++) {
            CU_ASSERT_EQUAL_FATAL(h_send(&a, 2, k, 100), 0);
            struct h_wait_recv w = {&b, 1, k + 1};
            CU_ASSERT_EQUAL(h_run(&net, h_cond_recv, &w, H_S(5)), 1);
        }
        CU_ASSERT_EQUAL(flush_calls, n);
        if (flush_on) {
            /* one ACK per message, sent from inside the callback; A has them all */
            CU_ASSERT_EQUAL(flush_sent, n);
            CU_ASSERT_EQUAL(h_run(&net, a_all_acked, &a, H_S(2)), 1);
        } else {
            CU_ASSERT_EQUAL(flush_sent, 0); /* the ACK waits for the end of the round */
        }
        struct rdp_stats sa;
        rdp_stats(a.rdp, &sa);
        CU_ASSERT_EQUAL(sa.retransmits, 0);
        h_ep_free(&a);
        h_ep_free(&b);
    }
}

UNIT_SUITE(rdp_ack, UNIT_TEST(test_ack_piggyback), UNIT_TEST(test_ack_long),
           UNIT_TEST(test_ack_window), UNIT_TEST(test_ack_stream),
           UNIT_TEST(test_ack_credit_stream), UNIT_TEST(test_pipe_slices),
           UNIT_TEST(test_flush_in_callback))
