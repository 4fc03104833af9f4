/*
 * endpoints.c - many endpoints of one node (suite rdp_endpoints). The preload library gives
 * every process of a node an endpoint of its own; they all talk to the same peers, over
 * their own UDP ports, with their own connections and keys.
 *
 *  test_many_endpoints  eight endpoints of node 1 and node 2's endpoint 0 exchange messages
 *                    (1 B .. 64 KiB) both ways at once: each arrives once, in order, from the
 *                    right peer id; no packet of any endpoint is dropped as a replay, a bad
 *                    MAC or a stale connection (with keys or replay state per node, they
 *                    would be); every connection has its own pair of keys (fingerprints:
 *                    one end's tx is the other's rx, and all 16 differ).
 *  test_nonce_unique  four endpoints of node 1 send a million one-packet messages to node 2
 *                    (a tenth in the quick run). The MAC nonce is src_node | dst_node | pn,
 *                    and every connection counts pn from 1, so the four send the same nonces:
 *                    what keeps them apart is that each connection has its own key. All
 *                    arrive, none is dropped as a replay or for its MAC, and the four tx keys
 *                    differ from each other and from node 2's.
 *  test_peer_keys   B talks to endpoints A1 and A2 of node 1 under a key of each pair (as a
 *                    daemon hands them out), not the endpoints' own: both pairs work, with
 *                    keys no other pair has. A3 holds the key every endpoint was opened with
 *                    and A1's pair key, but B knows A3 under a third key: nothing of A3's is
 *                    ever taken (MAC drops), and A3 never connects.
 *  test_endpoint_ids  a packet to another endpoint of the node, or from an endpoint not in
 *                    the peer table, is dropped as unknown-peer; the same node's endpoint 0
 *                    and endpoint 1 are different peers.
 *
 * This file runs its own small loop over the endpoints rather than the harness's, whose logs
 * are indexed by node.
 */
#include "harness.h"
#include "unit.h"

#include <arpa/inet.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXE 9

struct node_ep {
    rdp_t *rdp;
    struct sockaddr_in addr;
    uint32_t self;          /* its own peer id */
    uint64_t next_in[MAXE]; /* next message index expected from each sender (by slot) */
    uint64_t bad;           /* out of order, wrong sender or wrong bytes */
    uint64_t got;           /* messages received */
    uint32_t slot_of[MAXE]; /* peer id of each slot */
    int nslots;
};

/* Message k from peer id `from`: its first 12 bytes say who and which, the rest follows. */
static void fill(uint8_t *b, size_t len, uint32_t from, uint64_t k)
{
    for (size_t i = 0; i < len; i++) b[i] = (uint8_t)(from * 7 + k * 13 + i);
    if (len >= 12) {
        memcpy(b, &from, 4);
        memcpy(b + 4, &k, 8);
    }
}

static int slot(const struct node_ep *e, uint32_t id)
{
    for (int i = 0; i < e->nslots; i++)
        if (e->slot_of[i] == id) return i;
    return -1;
}

static void on_recv(void *ctx, uint32_t peer, const void *msg, size_t len)
{
    struct node_ep *e = ctx;
    int s = slot(e, peer);
    e->got++;
    if (s < 0 || len < 12) {
        e->bad++;
        return;
    }
    uint32_t from;
    uint64_t k;
    memcpy(&from, msg, 4);
    memcpy(&k, (const uint8_t *)msg + 4, 8);
    static uint8_t want[1 << 16];
    if (from != peer || k != e->next_in[s] || len > sizeof want) {
        e->bad++;
        return;
    }
    fill(want, len, from, k);
    if (memcmp(want, msg, len) != 0) e->bad++;
    e->next_in[s]++;
}

static int open_ep(struct node_ep *e, uint32_t node, uint16_t epid, int host,
                   const unsigned char *key)
{
    memset(e, 0, sizeof *e);
    struct rdp_config c;
    h_config(&c);
    c.node_id = node;
    c.endpoint = epid;
    memcpy(c.key, key, RDP_KEY_BYTES);
    struct rdp_callbacks cb = {.ctx = e, .recv = on_recv};
    for (int tries = 0; tries < 20 && !e->rdp; tries++) {
        h_addr(&e->addr, host, h_free_port(host));
        memcpy(&c.bind, &e->addr, sizeof e->addr);
        e->rdp = rdp_open(&c, &cb);
    }
    e->self = RDP_PEER(node, epid);
    return e->rdp ? 0 : -1;
}

static int add(struct node_ep *e, const struct node_ep *peer)
{
    e->slot_of[e->nslots++] = peer->self;
    return rdp_add_peer(e->rdp, peer->self, (const struct sockaddr *)&peer->addr,
                        sizeof peer->addr);
}

/* Node 2's endpoint 0 (b) and n endpoints of node 1 (a[0..n), endpoints 1..n), each a in
 * b's peer table and b in each a's; all[] lists them, b last. 0, or -1 after a failure. */
static int open_star(struct node_ep *a, int n, struct node_ep *b, struct node_ep **all,
                     uint64_t keyseed)
{
    unsigned char key[RDP_KEY_BYTES];
    h_key(key, keyseed);
    if (open_ep(b, 2, 0, 2, key) < 0) {
        CU_FAIL("open node 2");
        return -1;
    }
    for (int i = 0; i < n; i++) {
        if (open_ep(&a[i], 1, (uint16_t)(i + 1), 1, key) < 0) {
            CU_FAIL("open an endpoint of node 1");
            return -1;
        }
        CU_ASSERT_EQUAL(add(&a[i], b), 0);
        CU_ASSERT_EQUAL(add(b, &a[i]), 0);
        all[i] = &a[i];
    }
    all[n] = b;
    return 0;
}

/* One round over every endpoint: wait up to 1 ms for any socket, then process all. */
static void round_all(struct node_ep **e, int n)
{
    struct pollfd pf[MAXE + 1];
    for (int i = 0; i < n; i++) pf[i] = (struct pollfd){rdp_fd(e[i]->rdp), POLLIN, 0};
    poll(pf, (nfds_t)n, 1);
    for (int i = 0; i < n; i++) rdp_process(e[i]->rdp);
}

static uint64_t drops(const struct node_ep *e, enum rdp_drop_reason r)
{
    struct rdp_stats st;
    rdp_stats(e->rdp, &st);
    return st.drops[r];
}

static void test_many_endpoints(void)
{
    enum { NA = 8 };
    const uint64_t msgs = h_scale(300);
    struct node_ep a[NA], b;
    struct node_ep *all[NA + 1];
    if (open_star(a, NA, &b, all, 41) < 0) return;
    static uint8_t buf[1 << 16];
    uint64_t sent_a[NA] = {0}, sent_b[NA] = {0};
    uint64_t end = rdp_now_ns() + H_S(30);
    bool done = false;
    while (!done && rdp_now_ns() < end) {
        for (int i = 0; i < NA; i++) {
            /* sizes 1 B .. 64 KiB, log-spread; a full queue (EAGAIN) is tried again later */
            while (sent_a[i] < msgs) {
                size_t len = h_msg_size(a[i].self, sent_a[i], 12, sizeof buf);
                fill(buf, len, a[i].self, sent_a[i]);
                if (rdp_send(a[i].rdp, b.self, buf, len) < 0) break;
                sent_a[i]++;
            }
            while (sent_b[i] < msgs) {
                size_t len = h_msg_size(b.self ^ a[i].self, sent_b[i], 12, sizeof buf);
                fill(buf, len, b.self, sent_b[i]);
                if (rdp_send(b.rdp, a[i].self, buf, len) < 0) break;
                sent_b[i]++;
            }
        }
        round_all(all, NA + 1);
        done = b.got == NA * msgs;
        for (int i = 0; i < NA; i++) done = done && a[i].got == msgs;
    }
    CU_ASSERT_TRUE(done);
    uint64_t fp[2 * NA];
    for (int i = 0; i < NA; i++) {
        CU_ASSERT_EQUAL(a[i].bad, 0);
        CU_ASSERT_EQUAL(b.next_in[slot(&b, a[i].self)], msgs);
        CU_ASSERT_EQUAL(a[i].next_in[0], msgs);
        CU_ASSERT_EQUAL(drops(&a[i], RDP_DROP_REPLAY) + drops(&a[i], RDP_DROP_MAC) +
                            drops(&a[i], RDP_DROP_STALE) + drops(&a[i], RDP_DROP_UNKNOWN),
                        0);
        struct rdp_peer_stats pa, pb;
        CU_ASSERT_EQUAL(rdp_peer_stats(a[i].rdp, b.self, &pa), 0);
        CU_ASSERT_EQUAL(rdp_peer_stats(b.rdp, a[i].self, &pb), 0);
        CU_ASSERT(pa.key_tx_id != 0 && pa.key_tx_id == pb.key_rx_id);
        CU_ASSERT(pb.key_tx_id != 0 && pb.key_tx_id == pa.key_rx_id);
        fp[2 * i] = pa.key_tx_id;
        fp[2 * i + 1] = pb.key_tx_id;
    }
    CU_ASSERT_EQUAL(b.bad, 0);
    CU_ASSERT_EQUAL(drops(&b, RDP_DROP_REPLAY) + drops(&b, RDP_DROP_MAC) +
                        drops(&b, RDP_DROP_STALE) + drops(&b, RDP_DROP_UNKNOWN),
                    0);
    int same = 0;
    for (int i = 0; i < 2 * NA; i++)
        for (int j = 0; j < i; j++) same += fp[i] == fp[j];
    CU_ASSERT_EQUAL(same, 0);
    if (!done)
        fprintf(stderr, "endpoints: B got %llu of %llu\n", (unsigned long long)b.got,
                (unsigned long long)(NA * msgs));
    for (int i = 0; i <= NA; i++) rdp_close(all[i]->rdp);
}

static void test_nonce_unique(void)
{
    enum { NA = 4 };
    const uint64_t total = h_quick() ? 100000 : 1000000, per = total / NA;
    struct node_ep a[NA], b;
    struct node_ep *all[NA + 1];
    if (open_star(a, NA, &b, all, 42) < 0) return;
    uint8_t buf[64];
    uint64_t sent[NA] = {0};
    uint64_t end = rdp_now_ns() + H_S(120);
    while (b.got < total && rdp_now_ns() < end) {
        for (int i = 0; i < NA; i++)
            while (sent[i] < per) {
                fill(buf, sizeof buf, a[i].self, sent[i]);
                if (rdp_send(a[i].rdp, b.self, buf, sizeof buf) < 0) break;
                sent[i]++;
            }
        round_all(all, NA + 1);
    }
    CU_ASSERT_EQUAL(b.got, total);
    CU_ASSERT_EQUAL(b.bad, 0);
    CU_ASSERT_EQUAL(drops(&b, RDP_DROP_REPLAY) + drops(&b, RDP_DROP_MAC), 0);
    uint64_t fp[2 * NA], pkts = 0;
    for (int i = 0; i < NA; i++) {
        struct rdp_peer_stats pa, pb;
        CU_ASSERT_EQUAL(rdp_peer_stats(a[i].rdp, b.self, &pa), 0);
        CU_ASSERT_EQUAL(rdp_peer_stats(b.rdp, a[i].self, &pb), 0);
        CU_ASSERT(pa.key_tx_id == pb.key_rx_id && pa.connects == 1 && pa.losses == 0);
        fp[2 * i] = pa.key_tx_id;
        fp[2 * i + 1] = pb.key_tx_id;
        pkts += pb.pkts_recv;
    }
    CU_ASSERT(pkts >= total); /* every message one packet, plus handshakes */
    int same = 0;
    for (int i = 0; i < 2 * NA; i++)
        for (int j = 0; j < i; j++) same += fp[i] == fp[j];
    CU_ASSERT_EQUAL(same, 0);
    for (int i = 0; i <= NA; i++) rdp_close(all[i]->rdp);
}

static void test_endpoint_ids(void)
{
    unsigned char key[RDP_KEY_BYTES];
    h_key(key, 43);
    struct node_ep a0, a1, b;
    CU_ASSERT_EQUAL_FATAL(open_ep(&b, 2, 0, 2, key), 0);
    CU_ASSERT_EQUAL_FATAL(open_ep(&a0, 1, 0, 1, key), 0);
    CU_ASSERT_EQUAL_FATAL(open_ep(&a1, 1, 1, 1, key), 0);
    /* B knows only endpoint 1 of node 1; a0 knows B */
    CU_ASSERT_EQUAL(add(&b, &a1), 0);
    CU_ASSERT_EQUAL(add(&a0, &b), 0);
    CU_ASSERT_EQUAL(add(&a1, &b), 0);
    CU_ASSERT(rdp_add_peer(b.rdp, a1.self, (struct sockaddr *)&a1.addr, sizeof a1.addr) < 0);
    struct node_ep *all[3] = {&a0, &a1, &b};
    uint8_t m[16];
    fill(m, sizeof m, a0.self, 0);
    CU_ASSERT_EQUAL(rdp_send(a0.rdp, b.self, m, sizeof m), 0); /* a SYN B cannot place */
    fill(m, sizeof m, a1.self, 0);
    CU_ASSERT_EQUAL(rdp_send(a1.rdp, b.self, m, sizeof m), 0);
    uint64_t end = rdp_now_ns() + H_S(2);
    while ((b.got < 1 || drops(&b, RDP_DROP_UNKNOWN) < 1) && rdp_now_ns() < end) round_all(all, 3);
    CU_ASSERT_EQUAL(b.got, 1);
    CU_ASSERT_EQUAL(b.bad, 0);
    CU_ASSERT(drops(&b, RDP_DROP_UNKNOWN) >= 1);
    struct rdp_peer_stats ps;
    CU_ASSERT_EQUAL(rdp_peer_stats(b.rdp, RDP_PEER(1, 0), &ps), -1);
    CU_ASSERT_EQUAL(rdp_peer_stats(b.rdp, RDP_PEER(1, 1), &ps), 0);
    CU_ASSERT_EQUAL(ps.state, RDP_ESTABLISHED);
    for (int i = 0; i < 3; i++) rdp_close(all[i]->rdp);
}

static int add_key(struct node_ep *e, const struct node_ep *peer, const unsigned char *key)
{
    e->slot_of[e->nslots++] = peer->self;
    return rdp_add_peer_key(e->rdp, peer->self, (const struct sockaddr *)&peer->addr,
                            sizeof peer->addr, key);
}

static void test_peer_keys(void)
{
    unsigned char key[RDP_KEY_BYTES], k1[RDP_KEY_BYTES], k2[RDP_KEY_BYTES], k3[RDP_KEY_BYTES];
    h_key(key, 44);
    h_key(k1, 45);
    h_key(k2, 46);
    h_key(k3, 47);
    struct node_ep a[3], b;
    CU_ASSERT_EQUAL_FATAL(open_ep(&b, 2, 0, 2, key), 0);
    for (int i = 0; i < 3; i++)
        CU_ASSERT_EQUAL_FATAL(open_ep(&a[i], 1, (uint16_t)(i + 1), 1, key), 0);
    CU_ASSERT_EQUAL(add_key(&b, &a[0], k1), 0);
    CU_ASSERT_EQUAL(add_key(&a[0], &b, k1), 0);
    CU_ASSERT_EQUAL(add_key(&b, &a[1], k2), 0);
    CU_ASSERT_EQUAL(add_key(&a[1], &b, k2), 0);
    CU_ASSERT_EQUAL(add_key(&b, &a[2], k3), 0);
    CU_ASSERT_EQUAL(add_key(&a[2], &b, k1), 0); /* a key of another pair */
    struct node_ep *all[4] = {&a[0], &a[1], &a[2], &b};
    uint8_t m[32];
    for (int i = 0; i < 3; i++) {
        fill(m, sizeof m, a[i].self, 0);
        CU_ASSERT_EQUAL(rdp_send(a[i].rdp, b.self, m, sizeof m), 0);
    }
    fill(m, sizeof m, b.self, 0);
    CU_ASSERT_EQUAL(rdp_send(b.rdp, a[0].self, m, sizeof m), 0);
    CU_ASSERT_EQUAL(rdp_send(b.rdp, a[1].self, m, sizeof m), 0);
    uint64_t end = rdp_now_ns() + H_S(2);
    while ((b.got < 2 || a[0].got < 1 || a[1].got < 1 || drops(&b, RDP_DROP_MAC) < 2) &&
           rdp_now_ns() < end)
        round_all(all, 4);
    CU_ASSERT_EQUAL(b.got, 2);
    CU_ASSERT_EQUAL(b.next_in[slot(&b, a[0].self)], 1);
    CU_ASSERT_EQUAL(b.next_in[slot(&b, a[1].self)], 1);
    CU_ASSERT_EQUAL(b.next_in[slot(&b, a[2].self)], 0);
    CU_ASSERT_EQUAL(a[0].got + a[1].got, 2);
    CU_ASSERT_EQUAL(a[0].bad + a[1].bad + b.bad, 0);
    CU_ASSERT(drops(&b, RDP_DROP_MAC) >= 2); /* A3's SYN and its retransmission */
    struct rdp_peer_stats p0, p1, p2;
    CU_ASSERT_EQUAL(rdp_peer_stats(b.rdp, a[0].self, &p0), 0);
    CU_ASSERT_EQUAL(rdp_peer_stats(b.rdp, a[1].self, &p1), 0);
    CU_ASSERT_EQUAL(rdp_peer_stats(a[2].rdp, b.self, &p2), 0);
    CU_ASSERT(p0.key_tx_id && p1.key_tx_id && p0.key_tx_id != p1.key_tx_id);
    CU_ASSERT_NOT_EQUAL(p2.state, RDP_ESTABLISHED);
    CU_ASSERT_EQUAL(p2.connects, 0);
    for (int i = 0; i < 4; i++) rdp_close(all[i]->rdp);
}

UNIT_SUITE(rdp_endpoints, UNIT_TEST(test_many_endpoints), UNIT_TEST(test_nonce_unique),
           UNIT_TEST(test_peer_keys), UNIT_TEST(test_endpoint_ids))
