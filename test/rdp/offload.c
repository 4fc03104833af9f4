/*
 * offload.c - UDP GSO/GRO in RDP (suite rdp_offload).
 *
 *  test_offload_modes  a stream of messages of 1 B .. 200 KiB (so that runs of full-sized
 *                      packets end in a shorter one) from A to B and back at MTU 1500, four
 *                      times: offload on both sides, off on both, and on one side only. Every
 *                      message arrives complete, in order, exactly once in each mode; with
 *                      offload the sender's GSO and the receiver's GRO counters show that
 *                      datagrams really left and arrived coalesced; without it they stay 0.
 *  test_offload_fallback  a socket on which the kernel refuses GSO sends (SO_NO_CHECK: EINVAL):
 *                      the endpoint falls back to one datagram per send and loses nothing.
 *  test_offload_loopback  at MTU 65536 (64 KiB datagrams) offload is not used at all.
 *  test_offload_faults  with GRO, datagrams are handled in place inside the coalesced read
 *                      and copied only when kept: faults injected on receive at both ends
 *                      (drop, dup, reorder, corrupt) make packets arrive ahead of gaps, twice,
 *                      late and broken; everything still arrives complete, in order, once.
 *                      Both ends receive in pieces (recvv): the datagrams of a message are
 *                      copied out of the coalesced reads into place, those kept ahead of a
 *                      gap or duplicated stay pieces of their own.
 *
 * Endpoints: A = node 1 on 127.0.0.1, B = node 2 on 127.0.0.2.
 */
#include "harness.h"
#include "unit.h"

#include <stdio.h>
#include <sys/socket.h>
#include <stdlib.h>

/* The duplex streams between endpoints with offload oa and ob at mtu. */
static int run_streams(int oa, int ob, unsigned mtu, uint64_t n, struct rdp_stats *sa,
                       struct rdp_stats *sb)
{
    struct rdp_config ca, cb;
    h_config(&ca);
    ca.mtu = mtu;
    cb = ca;
    ca.offload = oa;
    cb.offload = ob;
    struct rdp_stats st[2];
    struct rdp_peer_stats ps[2];
    if (h_duplex_run(&ca, &cb, n, 200 << 10, st, ps) < 0) return -1;
    *sa = st[0];
    *sb = st[1];
    if (getenv("RDP_TEST_VERBOSE"))
        fprintf(stderr, "offload %d/%d: A gso %llu gro %llu pkts %llu, B gso %llu gro %llu\n", oa,
                ob, (unsigned long long)sa->gso_sends, (unsigned long long)sa->gro_reads,
                (unsigned long long)sa->pkts_sent, (unsigned long long)sb->gso_sends,
                (unsigned long long)sb->gro_reads);
    return 0;
}

static void test_offload_modes(void)
{
    const uint64_t n = h_scale(400);
    struct rdp_stats sa, sb;
    /* both on: A's data leaves in GSO sends and reaches B in GRO reads, and back */
    if (run_streams(1, 1, 1500, n, &sa, &sb) == 0) {
        CU_ASSERT(sa.gso_sends > 0 && sb.gso_sends > 0);
        CU_ASSERT(sa.gro_reads > 0 && sb.gro_reads > 0);
    }
    /* both off */
    if (run_streams(0, 0, 1500, n, &sa, &sb) == 0) {
        CU_ASSERT_EQUAL(sa.gso_sends + sb.gso_sends + sa.gro_reads + sb.gro_reads, 0);
    }
    /* only A: its GSO sends are cut by the kernel for B, which reads datagram by datagram */
    if (run_streams(1, 0, 1500, n, &sa, &sb) == 0) {
        CU_ASSERT(sa.gso_sends > 0);
        CU_ASSERT_EQUAL(sb.gso_sends + sb.gro_reads + sa.gro_reads, 0);
    }
    /* only B */
    if (run_streams(0, 1, 1500, n, &sa, &sb) == 0) {
        CU_ASSERT(sb.gso_sends > 0);
        CU_ASSERT_EQUAL(sa.gso_sends + sa.gro_reads + sb.gro_reads, 0);
    }
}

static void test_offload_loopback(void)
{
    struct rdp_stats sa, sb;
    if (run_streams(1, 1, 65536, h_scale(100), &sa, &sb) == 0)
        CU_ASSERT_EQUAL(sa.gso_sends + sb.gso_sends + sa.gro_reads + sb.gro_reads, 0);
}

/* A kernel or device that refuses a GSO send (here: SO_NO_CHECK, for which the kernel
 * answers EINVAL, as it answers EIO for a device that can't segment): the endpoint turns GSO
 * off and sends datagram by datagram; nothing is lost. */
static void test_offload_fallback(void)
{
    unsigned char key[RDP_KEY_BYTES];
    h_key(key, 41);
    struct rdp_config cfg;
    h_config(&cfg);
    cfg.mtu = 1500;
    struct h_ep a, b;
    struct h_net net;
    if (h_open_pair(&net, &a, &b, key, key, &cfg) < 0) return;
    int one = 1;
    CU_ASSERT_EQUAL(setsockopt(rdp_fd(a.rdp), SOL_SOCKET, SO_NO_CHECK, &one, sizeof one), 0);
    h_oneway(&net, &a, &b, 200, 50000);
    struct rdp_stats sa, sb;
    rdp_stats(a.rdp, &sa);
    rdp_stats(b.rdp, &sb);
    CU_ASSERT_EQUAL(sa.gso_sends, 0);
    CU_ASSERT(sb.pkts_recv >= 200 * 36); /* 36 datagrams per 50000-byte message */
    h_ep_free(&a);
    h_ep_free(&b);
}

static void test_offload_faults(void)
{
    unsigned char key[RDP_KEY_BYTES];
    h_key(key, 42);
    struct rdp_config cfg;
    h_config(&cfg);
    cfg.mtu = 1500;
    cfg.max_retrans = 30;
    struct h_ep a, b;
    struct h_net net;
    if (h_open_pair_pieces(&net, &a, &b, key, key, &cfg, &cfg) < 0) return;
    struct rdp_faults f = {.drop = 0.05,
                           .dup = 0.05,
                           .reorder = 0.05,
                           .corrupt = 0.01,
                           .dir = RDP_FAULT_RX,
                           .seed = 9};
    CU_ASSERT_EQUAL(rdp_set_faults(a.rdp, &f), 0);
    f.seed = 10;
    CU_ASSERT_EQUAL(rdp_set_faults(b.rdp, &f), 0);
    struct h_duplex c = {.a = &a, .b = &b};
    h_stream_init(&c.ab, &a, 2, h_scale(300), 1, 200 << 10);
    h_stream_init(&c.ba, &b, 1, h_scale(100), 1, 200 << 10);
    CU_ASSERT_EQUAL(h_run(&net, h_duplex_done, &c, H_S(30)), 1);
    CU_ASSERT_EQUAL(c.failed, 0);
    CU_ASSERT(h_check_recv_seq(&b, 1, 0, c.ab.total));
    CU_ASSERT(h_check_recv_seq(&a, 2, 0, c.ba.total));
    struct rdp_stats sb;
    struct rdp_peer_stats pb;
    rdp_stats(b.rdp, &sb);
    CU_ASSERT_EQUAL(rdp_peer_stats(b.rdp, 1, &pb), 0);
    CU_ASSERT(sb.gro_reads > 0);    /* the views were of coalesced reads */
    CU_ASSERT(pb.out_of_order > 0); /* some were kept (copied) ahead of a gap */
    CU_ASSERT(sb.inj_dup > 0 && sb.inj_reorder > 0 && sb.inj_corrupt > 0);
    CU_ASSERT(pb.drops[RDP_DROP_MAC] > 0); /* corrupted in place, caught by the MAC */
    /* datagrams of coalesced reads are copied into one run; duplicated and reordered ones
     * were copied into buffers of their own and are kept as pieces of their own */
    CU_ASSERT(b.multi_piece > 0);
    CU_ASSERT_EQUAL(a.bad_pieces + b.bad_pieces + a.bad_content + b.bad_content, 0);
    h_ep_free(&a);
    h_ep_free(&b);
}

UNIT_SUITE(rdp_offload, UNIT_TEST(test_offload_modes), UNIT_TEST(test_offload_loopback),
           UNIT_TEST(test_offload_fallback), UNIT_TEST(test_offload_faults))
