/*
 * ack.c - when RDP acknowledges (suite rdp_ack).
 *
 *  test_ack_piggyback  request/response with messages of three packets at MTU 1500: once
 *                      the connection has seen an answer follow a request, the answer carries
 *                      the ACK of the request and no pure ACK is sent (each would wake the
 *                      peer for nothing), in either direction; every message arrives.
 *  test_ack_stream     a one-way stream of the same messages: the receiver, which never
 *                      answers, acknowledges at once. The delayed ACK and the RTO are 30 s,
 *                      so a receiver that waited would stall the stream past its 10 s
 *                      deadline.
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
};

/* A sends request k once B answered k-1; B answers each request it got. */
static int pp_step(void *p)
{
    struct pp_ctx *c = p;
    uint64_t got_b = h_count(c->b, H_RECV, 1), got_a = h_count(c->a, H_RECV, 2);
    if (c->sent_b < got_b && h_send(c->b, 1, c->sent_b, MSG_LEN) == 0) c->sent_b++;
    if (c->sent_a == got_a && c->sent_a < c->rounds && h_send(c->a, 2, c->sent_a, MSG_LEN) == 0)
        c->sent_a++;
    return got_a == c->rounds;
}

static void test_ack_piggyback(void)
{
    unsigned char key[RDP_KEY_BYTES];
    h_key(key, 50);
    struct rdp_config cfg;
    h_config(&cfg);
    cfg.mtu = 1500;
    cfg.ack_delay_us = 2000; /* room for a slow scheduler between delivery and answer */
    struct h_ep a, b;
    struct h_net net;
    if (h_open_pair(&net, &a, &b, key, key, &cfg) < 0) return;
    struct pp_ctx c = {&a, &b, 200, 0, 0};
    CU_ASSERT_EQUAL(h_run(&net, pp_step, &c, H_S(20)), 1);
    CU_ASSERT(h_check_recv_seq(&b, 1, 0, c.rounds));
    CU_ASSERT(h_check_recv_seq(&a, 2, 0, c.rounds));
    struct rdp_stats sa, sb;
    rdp_stats(a.rdp, &sa);
    rdp_stats(b.rdp, &sb);
    /* 3 data packets per message; the first exchanges (handshake, before the connection is
     * known as interactive) and the final ACK of the last answer may add a few */
    uint64_t data = 3 * c.rounds;
    CU_ASSERT(sa.pkts_sent >= data && sa.pkts_sent <= data + 6);
    CU_ASSERT(sb.pkts_sent >= data && sb.pkts_sent <= data + 6);
    CU_ASSERT_EQUAL(sa.retransmits + sb.retransmits, 0);
    if (sa.pkts_sent > data + 6 || sb.pkts_sent > data + 6)
        fprintf(stderr, "ack: %llu rounds of %d B: A sent %llu packets, B %llu (data: %llu each)\n",
                (unsigned long long)c.rounds, MSG_LEN, (unsigned long long)sa.pkts_sent,
                (unsigned long long)sb.pkts_sent, (unsigned long long)data);
    h_ep_free(&a);
    h_ep_free(&b);
}

static void test_ack_stream(void)
{
    unsigned char key[RDP_KEY_BYTES];
    h_key(key, 51);
    struct rdp_config cfg;
    h_config(&cfg);
    cfg.mtu = 1500;
    /* a delayed ACK or a retransmission timeout would stall the stream past the deadline */
    cfg.ack_delay_us = 30000000;
    cfg.rto_min_us = cfg.rto_init_us = cfg.rto_max_us = 30000000;
    struct h_ep a, b;
    struct h_net net;
    if (h_open_pair(&net, &a, &b, key, key, &cfg) < 0) return;
    struct h_stream s;
    h_stream_init(&s, &a, 2, 2000, MSG_LEN, MSG_LEN);
    struct h_wait_recv w = {&b, 1, 2000};
    uint64_t t0 = rdp_now_ns();
    while (h_count(&b, H_RECV, 1) < 2000 && rdp_now_ns() - t0 < H_S(10)) {
        CU_ASSERT_FATAL(h_stream_pump(&s) >= 0);
        if (h_run(&net, h_cond_recv, &w, H_MS(1)) < 0) break;
    }
    CU_ASSERT(h_check_recv_seq(&b, 1, 0, 2000));
    struct rdp_stats sa;
    rdp_stats(a.rdp, &sa);
    CU_ASSERT_EQUAL(sa.retransmits, 0);
    if (h_count(&b, H_RECV, 1) < 2000)
        fprintf(stderr, "ack: stream stalled after %llu of 2000 messages in %.1f s\n",
                (unsigned long long)h_count(&b, H_RECV, 1), (double)(rdp_now_ns() - t0) / 1e9);
    h_ep_free(&a);
    h_ep_free(&b);
}

UNIT_SUITE(rdp_ack, UNIT_TEST(test_ack_piggyback), UNIT_TEST(test_ack_stream))
