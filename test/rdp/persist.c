/*
 * persist.c - a peer that stops answering is stalled, not lost, when the endpoint persists
 * (rdp_config.persist_max_us; suite rdp_persist): the preload library's endpoints, whose
 * peers are processes that a SIGSTOP, a debugger or a swap storm may stop for any time.
 *
 *  test_persist_stopped  A streams to B; B stops (its socket takes the datagrams, nobody
 *                reads them) for 15 times the loss bound: A reports B stalled once, within
 *                the bound, never lost; its probes back off (few of them). B runs again: A
 *                hears it within a few round trips (resumed), every message arrives once, in
 *                order, and A's congestion window is back where it was before the silence.
 *  test_persist_emptied  the same, but what A sent while B was stopped never reached B (B's
 *                socket emptied): B, running again, has nothing to answer, so A's next probe
 *                (at most persist_max_us away) brings it back; and when B speaks first, A
 *                resends at once on B's first packet instead of waiting for its probe.
 *  test_persist_give_up  a peer that never answers stays stalled (no loss) until the
 *                application gives it up from inside the stalled callback (rdp_disconnect):
 *                then lost (closed), each pending message undeliverable, in order.
 *  test_persist_config  persist_max_us below rto_max_us, or above RDP_PERSIST_MAX_US, is
 *                EINVAL.
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

/* Small timers: the loss bound is (4 + 1) * 20 ms = 100 ms. */
static void persist_config(struct rdp_config *cfg, unsigned persist_max_us)
{
    h_config(cfg);
    cfg->rto_min_us = 2000;
    cfg->rto_init_us = 5000;
    cfg->rto_max_us = 20000;
    cfg->max_retrans = 4;
    cfg->persist_max_us = persist_max_us;
}

struct stop_ctx {
    struct h_stream s;
    struct h_ep *b;
    uint64_t want;
};

static int stream_to(void *p)
{
    struct stop_ctx *c = p;
    if (h_stream_pump(&c->s) < 0) return 1;
    return h_count(c->b, H_RECV, 1) >= c->want;
}

static int stalled(void *p)
{
    struct stop_ctx *c = p;
    h_stream_pump(&c->s);
    return h_count(c->s.ep, H_STALLED, 2) > 0;
}

static int resumed(void *p)
{
    struct h_ep *a = p;
    return h_count(a, H_RESUMED, 2) > 0;
}

/* A streams to B (100 messages of up to 64 KiB) until B got `first`; then B stops for
 * stop_ns while A goes on alone. Returns A's congestion window before the stop; *stall_ns
 * the time from the stop to A's stalled callback. */
static uint32_t stream_then_stop(struct h_net *net, struct h_ep *a, struct h_ep *b,
                                 struct stop_ctx *c, uint64_t first, uint64_t stop_ns,
                                 uint64_t *stall_ns)
{
    h_stream_init(&c->s, a, 2, 100, 1000, 64 << 10);
    c->b = b;
    c->want = first;
    CU_ASSERT_EQUAL(h_run(net, stream_to, c, H_S(10)), 1);
    struct rdp_peer_stats ps;
    CU_ASSERT_EQUAL(rdp_peer_stats(a->rdp, 2, &ps), 0);
    /* B stops: its socket keeps what comes, nobody reads it */
    struct h_net alone;
    h_net_init(&alone);
    h_net_add(&alone, a);
    uint64_t t0 = rdp_now_ns();
    CU_ASSERT_EQUAL(h_run(&alone, stalled, c, stop_ns), 1);
    *stall_ns = rdp_now_ns() - t0;
    h_run(&alone, NULL, NULL, t0 + stop_ns > rdp_now_ns() ? t0 + stop_ns - rdp_now_ns() : 0);
    return ps.cwnd;
}

static void test_persist_stopped(void)
{
    unsigned char key[RDP_KEY_BYTES];
    h_key(key, 41);
    struct rdp_config cfg;
    persist_config(&cfg, 200000);
    struct h_ep a, b;
    struct h_net net;
    if (h_open_pair(&net, &a, &b, key, key, &cfg) < 0) return;
    uint64_t bound = rdp_lost_bound_us(&cfg) * 1000, stall_ns = 0;
    struct stop_ctx c;
    uint32_t cwnd0 = stream_then_stop(&net, &a, &b, &c, 20, 15 * bound, &stall_ns);
    struct rdp_peer_stats ps;
    CU_ASSERT_EQUAL(rdp_peer_stats(a.rdp, 2, &ps), 0);
    CU_ASSERT(ps.stalled);
    CU_ASSERT_EQUAL(ps.stalls, 1);
    CU_ASSERT_EQUAL(ps.state, RDP_ESTABLISHED);
    CU_ASSERT_EQUAL(h_count(&a, H_STALLED, 2), 1);
    CU_ASSERT_EQUAL(h_count(&a, H_LOST, 2), 0);
    CU_ASSERT(stall_ns <= bound + bound / 2);
    /* probes back off: 1.5 s at 20, 40, 80, 160, 200, 200 ... ms is at most a dozen */
    uint64_t probes = ps.timeouts;
    CU_ASSERT(probes <= (uint64_t)cfg.max_retrans + 1 + 12);

    /* B runs again */
    uint64_t t1 = rdp_now_ns();
    CU_ASSERT_EQUAL(h_run(&net, resumed, &a, H_S(2)), 1);
    uint64_t back_ns = rdp_now_ns() - t1;
    c.want = 100;
    CU_ASSERT_EQUAL(h_run(&net, stream_to, &c, H_S(10)), 1);
    CU_ASSERT_EQUAL(h_check_recv_seq(&b, 1, 0, 100), 1);
    CU_ASSERT_EQUAL(rdp_peer_stats(a.rdp, 2, &ps), 0);
    CU_ASSERT(!ps.stalled);
    CU_ASSERT(ps.cwnd >= cwnd0);
    CU_ASSERT_EQUAL(h_count(&a, H_LOST, 2), 0);
    CU_ASSERT_EQUAL(h_count(&a, H_RESUMED, 2), 1);
    CU_ASSERT_EQUAL(a.bad_content + b.bad_content, 0);
    /* within a few round trips, far below a probe interval */
    CU_ASSERT(back_ns < H_MS(100));
    fprintf(stderr,
            "persist_stopped: stalled after %llu ms (bound %llu ms), %llu timeouts; "
            "resumed %llu us after B ran again; cwnd %u, before the stop %u\n",
            (unsigned long long)(stall_ns / 1000000), (unsigned long long)(bound / 1000000),
            (unsigned long long)probes, (unsigned long long)(back_ns / 1000), ps.cwnd, cwnd0);
    h_ep_free(&b);
    h_ep_free(&a);
}

/* Throw away what waits in B's socket (lost on the way while B was stopped). */
static void drain(struct h_ep *b)
{
    char buf[65536];
    while (recv(rdp_fd(b->rdp), buf, sizeof buf, MSG_DONTWAIT) >= 0) {
    }
}

static void test_persist_emptied(void)
{
    unsigned char key[RDP_KEY_BYTES];
    h_key(key, 42);
    struct rdp_config cfg;
    persist_config(&cfg, 400000);
    for (int speak = 0; speak < 2; speak++) {
        struct h_ep a, b;
        struct h_net net;
        if (h_open_pair(&net, &a, &b, key, key, &cfg) < 0) return;
        uint64_t stall_ns = 0;
        struct stop_ctx c;
        /* long enough for the probes to reach the 400 ms ceiling */
        stream_then_stop(&net, &a, &b, &c, 20, H_MS(2000), &stall_ns);
        drain(&b);
        uint64_t t1 = rdp_now_ns();
        if (speak) CU_ASSERT_EQUAL(h_send(&b, 1, 0, 100), 0); /* its ACK rides on it */
        CU_ASSERT_EQUAL(h_run(&net, resumed, &a, H_S(2)), 1);
        uint64_t back_ns = rdp_now_ns() - t1;
        c.want = 100;
        CU_ASSERT_EQUAL(h_run(&net, stream_to, &c, H_S(10)), 1);
        CU_ASSERT_EQUAL(h_check_recv_seq(&b, 1, 0, 100), 1);
        CU_ASSERT_EQUAL(h_count(&a, H_LOST, 2), 0);
        /* silent B: the next probe, at most persist_max_us away; B speaking: at once */
        uint64_t most = speak ? H_MS(100) : cfg.persist_max_us * 1000ull + H_MS(100);
        CU_ASSERT(back_ns <= most);
        fprintf(stderr, "persist_emptied (%s): resumed %llu ms after B ran again\n",
                speak ? "B speaks first" : "B silent", (unsigned long long)(back_ns / 1000000));
        h_ep_free(&b);
        h_ep_free(&a);
    }
}

static void give_up(struct h_ep *ep, uint32_t node, int on)
{
    if (on) CU_ASSERT_EQUAL(rdp_disconnect(ep->rdp, node), 0);
}

static void test_persist_give_up(void)
{
    unsigned char key[RDP_KEY_BYTES];
    h_key(key, 43);
    struct rdp_config cfg;
    persist_config(&cfg, 100000);
    struct h_ep a;
    struct h_net net;
    if (h_open_one(&net, &a, key, &cfg) < 0) return;
    struct sockaddr_in sb;
    int fd = h_silent_peer(&a, &sb);
    if (fd < 0) {
        h_ep_free(&a);
        return;
    }
    static const size_t len[] = {1000, 100000, 20};
    for (size_t i = 0; i < 3; i++) CU_ASSERT_EQUAL(h_send(&a, 2, i, len[i]), 0);
    /* kept: ten loss bounds, stalled and nothing lost */
    uint64_t bound = rdp_lost_bound_us(&cfg) * 1000;
    h_run(&net, NULL, NULL, 10 * bound);
    CU_ASSERT_EQUAL(h_count(&a, H_STALLED, 2), 1);
    CU_ASSERT_EQUAL(h_count(&a, H_LOST, 2), 0);
    /* given up at the next stall (a fresh attempt): from inside the callback */
    CU_ASSERT_EQUAL(rdp_disconnect(a.rdp, 2), 0);
    CU_ASSERT_EQUAL(h_count(&a, H_UNDELIV, 2), 3);
    a.on_stalled = give_up;
    for (size_t i = 0; i < 3; i++) CU_ASSERT_EQUAL(h_send(&a, 2, 3 + i, len[i]), 0);
    struct h_wait_lost c = {&a, 2, 6};
    CU_ASSERT_EQUAL(h_run(&net, h_cond_lost, &c, 5 * bound), 1);
    CU_ASSERT_EQUAL(h_count(&a, H_STALLED, 2), 2);
    CU_ASSERT_EQUAL(h_count(&a, H_LOST, 2), 2);
    const struct h_event *lost = h_find(&a, H_LOST, 2, 1);
    CU_ASSERT(lost && lost->reason == RDP_LOST_CLOSED);
    for (size_t i = 0; i < 3; i++) {
        const struct h_event *e = h_find(&a, H_UNDELIV, 2, 3 + i);
        CU_ASSERT(e && e->idx == 3 + i && e->len == len[i] && e->ok && e > lost);
    }
    struct rdp_peer_stats ps;
    CU_ASSERT_EQUAL(rdp_peer_stats(a.rdp, 2, &ps), 0);
    CU_ASSERT_EQUAL(ps.state, RDP_CLOSED);
    CU_ASSERT(!ps.stalled);
    CU_ASSERT_EQUAL(ps.queued, 0);
    /* nothing more goes out to it */
    uint64_t sent = ps.pkts_sent;
    h_run(&net, NULL, NULL, 3 * bound);
    CU_ASSERT_EQUAL(rdp_peer_stats(a.rdp, 2, &ps), 0);
    CU_ASSERT_EQUAL(ps.pkts_sent, sent);
    close(fd);
    h_ep_free(&a);
}

static void test_persist_config(void)
{
    unsigned char key[RDP_KEY_BYTES];
    h_key(key, 44);
    struct rdp_config cfg;
    persist_config(&cfg, 19999); /* below rto_max_us */
    cfg.node_id = 1;
    memcpy(cfg.key, key, sizeof key);
    struct rdp_callbacks cb = {0};
    errno = 0;
    CU_ASSERT_PTR_NULL(rdp_open(&cfg, &cb));
    CU_ASSERT_EQUAL(errno, EINVAL);
    cfg.persist_max_us = RDP_PERSIST_MAX_US + 1;
    errno = 0;
    CU_ASSERT_PTR_NULL(rdp_open(&cfg, &cb));
    CU_ASSERT_EQUAL(errno, EINVAL);
}

UNIT_SUITE(rdp_persist, UNIT_TEST(test_persist_stopped), UNIT_TEST(test_persist_emptied),
           UNIT_TEST(test_persist_give_up), UNIT_TEST(test_persist_config));
