/*
 * test_swim.c - unit tests for SWIM membership (psid/swim.c): the packet (round trip, every
 * truncation, every flipped bit, bad fields, another key), what a receiver drops (unknown
 * members, replays), and the protocol on 16 simulated members (test/lib/swimnet.h): a kill
 * seen by all, a paused member refuting its suspicion and declared dead by nobody, a
 * restart taken as evidence at once.
 */
#include "../../psid/hbwire.h"
#include "../../psid/swim.h"
#include "swimnet.h"
#include "unit.h"

#include <sodium.h>
#include <string.h>

static const uint8_t key[32] = {0x5a};

static struct swim_pkt sample(void)
{
    struct swim_pkt p = {.type = SWIM_PING,
                         .nupd = 2,
                         .sender = 3,
                         .boot = 0x1122334455667788ull,
                         .seq = 42,
                         .inc = 7,
                         .target = 5,
                         .probe = 99};
    p.upd[0] = (struct swim_upd){.member = 1, .state = SWIM_SUSPECT, .inc = 4, .by = 3, .boot = 9};
    p.upd[1] = (struct swim_upd){.member = 2, .state = SWIM_DEAD, .inc = 0, .by = 6, .boot = 8};
    return p;
}

static void test_swim_wire(void)
{
    uint8_t buf[SWIM_MAX_PKT + 8], other[32];
    memset(other, 1, sizeof other);
    struct swim_pkt p = sample(), d;
    const char *why = NULL;
    size_t len = swim_encode(buf, &p, key);
    CU_ASSERT_EQUAL_FATAL(len, SWIM_HDR + 2 * SWIM_UPD + SWIM_MAC);
    CU_ASSERT_EQUAL_FATAL(swim_decode(buf, len, &d, key, &why), 0);
    CU_ASSERT_EQUAL(d.type, SWIM_PING);
    CU_ASSERT_EQUAL(d.sender, 3);
    CU_ASSERT_EQUAL(d.boot, p.boot);
    CU_ASSERT_EQUAL(d.seq, 42);
    CU_ASSERT_EQUAL(d.inc, 7);
    CU_ASSERT_EQUAL(d.target, 5);
    CU_ASSERT_EQUAL(d.probe, 99);
    CU_ASSERT_EQUAL(d.nupd, 2);
    CU_ASSERT_EQUAL(d.upd[0].member, 1);
    CU_ASSERT_EQUAL(d.upd[0].state, SWIM_SUSPECT);
    CU_ASSERT_EQUAL(d.upd[0].inc, 4);
    CU_ASSERT_EQUAL(d.upd[0].by, 3);
    CU_ASSERT_EQUAL(d.upd[0].boot, 9);
    CU_ASSERT_EQUAL(d.upd[1].state, SWIM_DEAD);
    CU_ASSERT_EQUAL(d.upd[1].boot, 8);
    CU_ASSERT_EQUAL(swim_decode(buf, len, &d, other, &why), -1);
    CU_ASSERT_STRING_EQUAL(why, "mac");
    for (size_t n = 0; n < len; n++) CU_ASSERT_EQUAL(swim_decode(buf, n, &d, key, &why), -1);
    CU_ASSERT_EQUAL(swim_decode(buf, len + 1, &d, key, &why), -1);
    CU_ASSERT_STRING_EQUAL(why, "length");
    for (size_t bit = 0; bit < len * 8; bit++) {
        buf[bit / 8] ^= (uint8_t)(1 << (bit % 8));
        CU_ASSERT_EQUAL(swim_decode(buf, len, &d, key, &why), -1);
        buf[bit / 8] ^= (uint8_t)(1 << (bit % 8));
    }
    /* bad fields are refused before the MAC is looked at */
    buf[0] = 2;
    CU_ASSERT_EQUAL(swim_decode(buf, len, &d, key, &why), -1);
    CU_ASSERT_STRING_EQUAL(why, "version");
    buf[0] = SWIM_VERSION;
    buf[1] = 0;
    CU_ASSERT_EQUAL(swim_decode(buf, len, &d, key, &why), -1);
    CU_ASSERT_STRING_EQUAL(why, "type");
    buf[1] = SWIM_GOSSIP + 1;
    CU_ASSERT_EQUAL(swim_decode(buf, len, &d, key, &why), -1);
    CU_ASSERT_STRING_EQUAL(why, "type");
    buf[1] = SWIM_PING;
    buf[3] = SWIM_MAX_UPD + 1;
    CU_ASSERT_EQUAL(swim_decode(buf, len, &d, key, &why), -1);
    CU_ASSERT_STRING_EQUAL(why, "count");
    buf[3] = 3; /* claims more updates than there are bytes */
    CU_ASSERT_EQUAL(swim_decode(buf, len, &d, key, &why), -1);
    CU_ASSERT_STRING_EQUAL(why, "length");
    buf[3] = 2;
    buf[37] = 1;
    CU_ASSERT_EQUAL(swim_decode(buf, len, &d, key, &why), -1);
    CU_ASSERT_STRING_EQUAL(why, "reserved");
    buf[37] = 0;
    /* a bad update state, with a valid MAC: refused by the field check */
    p.upd[1].state = 9;
    len = swim_encode(buf, &p, key);
    CU_ASSERT_EQUAL(swim_decode(buf, len, &d, key, &why), -1);
    CU_ASSERT_STRING_EQUAL(why, "state");
    /* the most updates fit, and no more are encoded */
    p = sample();
    p.nupd = SWIM_MAX_UPD + 5;
    len = swim_encode(buf, &p, key);
    CU_ASSERT_EQUAL(len, (size_t)SWIM_MAX_PKT);
    CU_ASSERT_EQUAL(swim_decode(buf, len, &d, key, &why), -1); /* zeroed updates: state 0 */
    CU_ASSERT_STRING_EQUAL(why, "state");
}

/* A heartbeat never passes as a SWIM packet nor the other way round, also not under one key;
 * the SWIM key is the cluster key's, but neither it nor the heartbeat key. */
static void test_swim_key(void)
{
    CU_ASSERT_TRUE_FATAL(sodium_init() >= 0);
    uint8_t cluster[32], hk[32], sk[32], buf[SWIM_MAX_PKT];
    memset(cluster, 0x42, sizeof cluster);
    hb_key_derive(cluster, hk);
    swim_key_derive(cluster, sk);
    CU_ASSERT_NOT_EQUAL(memcmp(hk, sk, 32), 0);
    CU_ASSERT_NOT_EQUAL(memcmp(cluster, sk, 32), 0);
    struct swim_pkt p = sample(), d;
    p.nupd = 0;
    size_t len = swim_encode(buf, &p, sk);
    CU_ASSERT_EQUAL(len, SWIM_HDR + SWIM_MAC);
    struct hb h;
    const char *why = NULL;
    CU_ASSERT_EQUAL(hb_decode(buf, len, &h, sk, &why), -1);
    CU_ASSERT_STRING_EQUAL(why, "length");
    /* cut to a heartbeat's length, the version tells */
    CU_ASSERT_EQUAL(hb_decode(buf, HB_LEN, &h, sk, &why), -1);
    CU_ASSERT_STRING_EQUAL(why, "version");
    CU_ASSERT_EQUAL(swim_decode(buf, len, &d, hk, &why), -1);
    CU_ASSERT_STRING_EQUAL(why, "mac");
    memset(buf, 0, sizeof buf);
    hb_encode(buf, &(struct hb){.type = HB_BEAT, .node = 1, .incarnation = 2, .seq = 3}, sk);
    CU_ASSERT_EQUAL(swim_decode(buf, HB_LEN, &d, sk, &why), -1);
    CU_ASSERT_STRING_EQUAL(why, "length");
    /* padded to a SWIM packet's length, the version tells */
    CU_ASSERT_EQUAL(swim_decode(buf, SWIM_HDR + SWIM_MAC, &d, sk, &why), -1);
    CU_ASSERT_STRING_EQUAL(why, "version");
}

struct capture {
    uint32_t to, n;
    uint8_t pkt[SWIM_MAX_PKT];
    size_t len;
    uint32_t changes;
};

static void cap_send(void *ctx, uint32_t to, const uint8_t *pkt, size_t len)
{
    struct capture *c = ctx;
    c->to = to;
    c->n++;
    memcpy(c->pkt, pkt, len);
    c->len = len;
}

static void cap_change(void *ctx, uint32_t member, enum swim_state from, enum swim_state to,
                       bool restarted)
{
    struct capture *c = ctx;
    (void)member, (void)from, (void)to, (void)restarted;
    c->changes++;
}

/* A receiver answers a ping once: the same packet again (a replay), an older seq outside the
 * window, an older boot, an unknown member, itself as sender: all dropped and counted. */
static void test_swim_drops(void)
{
    struct capture cap = {0};
    struct swim_io io = {.send = cap_send, .change = cap_change};
    struct swim_config c;
    swim_config_default(&c, 4, 0);
    struct swim *s = swim_new(&c, key, 100, 1, &io, &cap, 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    uint8_t buf[SWIM_MAX_PKT];
    struct swim_pkt p = {
        .type = SWIM_PING, .sender = 2, .boot = 50, .seq = 1000, .target = 0, .probe = 1};
    size_t len = swim_encode(buf, &p, key);
    CU_ASSERT_EQUAL(swim_recv(s, buf, len, 1), 0);
    CU_ASSERT_EQUAL(cap.n, 1);
    CU_ASSERT_EQUAL(cap.to, 2);
    struct swim_pkt a;
    const char *why;
    CU_ASSERT_EQUAL_FATAL(swim_decode(cap.pkt, cap.len, &a, key, &why), 0);
    CU_ASSERT_EQUAL(a.type, SWIM_ACK);
    CU_ASSERT_EQUAL(a.probe, 1);
    CU_ASSERT_EQUAL(a.target, 0);
    CU_ASSERT_EQUAL(swim_recv(s, buf, len, 2), -1); /* replayed */
    CU_ASSERT_EQUAL(cap.n, 1);
    CU_ASSERT_EQUAL(swim_stats(s)->drops[SWIM_DROP_STALE], 1);
    p.seq = 990; /* late but new, inside the window: taken */
    len = swim_encode(buf, &p, key);
    CU_ASSERT_EQUAL(swim_recv(s, buf, len, 3), 0);
    CU_ASSERT_EQUAL(swim_recv(s, buf, len, 3), -1);
    p.seq = 900; /* below the window */
    len = swim_encode(buf, &p, key);
    CU_ASSERT_EQUAL(swim_recv(s, buf, len, 3), -1);
    p.seq = 2000, p.boot = 49; /* an older boot */
    len = swim_encode(buf, &p, key);
    CU_ASSERT_EQUAL(swim_recv(s, buf, len, 3), -1);
    CU_ASSERT_EQUAL(swim_stats(s)->drops[SWIM_DROP_STALE], 4);
    p.boot = 50, p.sender = 4; /* not configured */
    len = swim_encode(buf, &p, key);
    CU_ASSERT_EQUAL(swim_recv(s, buf, len, 3), -1);
    p.sender = 0; /* ourselves */
    len = swim_encode(buf, &p, key);
    CU_ASSERT_EQUAL(swim_recv(s, buf, len, 3), -1);
    p.sender = 2, p.nupd = 1; /* an update about a member not configured */
    p.upd[0] = (struct swim_upd){.member = 9, .state = SWIM_DEAD, .boot = 1};
    len = swim_encode(buf, &p, key);
    CU_ASSERT_EQUAL(swim_recv(s, buf, len, 3), -1);
    CU_ASSERT_EQUAL(swim_stats(s)->drops[SWIM_DROP_MEMBER], 3);
    buf[len - 1] ^= 1;
    CU_ASSERT_EQUAL(swim_recv(s, buf, len, 3), -1);
    CU_ASSERT_EQUAL(swim_stats(s)->drops[SWIM_DROP_MAC], 1);
    CU_ASSERT_EQUAL(swim_recv(s, buf, 3, 3), -1);
    CU_ASSERT_EQUAL(swim_stats(s)->drops[SWIM_DROP_MALFORMED], 1);
    CU_ASSERT_EQUAL(cap.n, 2);
    swim_free(s);
}

/* Told it is suspected, a member refutes: its incarnation goes up and its next packet
 * carries it; a dead verdict about an older incarnation then changes nothing. */
static void test_swim_refute(void)
{
    struct capture cap = {0};
    struct swim_io io = {.send = cap_send, .change = cap_change};
    struct swim_config c;
    swim_config_default(&c, 4, 0);
    struct swim *s = swim_new(&c, key, 100, 1, &io, &cap, 0);
    uint8_t buf[SWIM_MAX_PKT];
    struct swim_pkt p = {.type = SWIM_PING, .sender = 1, .boot = 7, .seq = 1, .probe = 5};
    p.nupd = 1;
    p.upd[0] =
        (struct swim_upd){.member = 0, .state = SWIM_SUSPECT, .inc = 0, .by = 1, .boot = 100};
    size_t len = swim_encode(buf, &p, key);
    CU_ASSERT_EQUAL(swim_recv(s, buf, len, 1), 0);
    CU_ASSERT_EQUAL(swim_self_inc(s), 1);
    CU_ASSERT_EQUAL(swim_stats(s)->refutes, 1);
    CU_ASSERT_EQUAL(swim_health(s), 1); /* Lifeguard: being suspected says we may be slow */
    struct swim_pkt a;
    const char *why;
    CU_ASSERT_EQUAL_FATAL(swim_decode(cap.pkt, cap.len, &a, key, &why), 0);
    CU_ASSERT_EQUAL(a.inc, 1); /* the ack's header refutes to the suspecter */
    /* the same suspicion again (another packet): already refuted */
    p.seq = 2;
    len = swim_encode(buf, &p, key);
    CU_ASSERT_EQUAL(swim_recv(s, buf, len, 2), 0);
    CU_ASSERT_EQUAL(swim_self_inc(s), 1);
    /* a dead verdict was spread to all: its refutation rides on our packets too */
    p.seq = 2, p.type = SWIM_GOSSIP;
    p.upd[0] = (struct swim_upd){.member = 0, .state = SWIM_DEAD, .inc = 1, .by = 1, .boot = 100};
    len = swim_encode(buf, &p, key);
    CU_ASSERT_EQUAL(swim_recv(s, buf, len, 2), -1); /* seq 2 again: a replay */
    p.seq = 3;
    len = swim_encode(buf, &p, key);
    CU_ASSERT_EQUAL(swim_recv(s, buf, len, 2), 0);
    CU_ASSERT_EQUAL(swim_self_inc(s), 2);
    CU_ASSERT_EQUAL_FATAL(swim_decode(cap.pkt, cap.len, &a, key, &why), 0);
    bool carried = false;
    for (unsigned i = 0; i < a.nupd; i++)
        carried |= a.upd[i].member == 0 && a.upd[i].state == SWIM_ALIVE && a.upd[i].inc == 2;
    CU_ASSERT_TRUE(carried);
    p.type = SWIM_PING;
    /* about member 2: suspect at inc 3, then alive at 3 does not clear it, alive at 4 does,
     * dead at 3 is too old */
    p.seq = 4;
    p.upd[0] = (struct swim_upd){.member = 2, .state = SWIM_SUSPECT, .inc = 3, .by = 1, .boot = 5};
    len = swim_encode(buf, &p, key);
    swim_recv(s, buf, len, 3);
    CU_ASSERT_EQUAL(swim_member_state(s, 2), SWIM_SUSPECT);
    p.seq = 5;
    p.upd[0].state = SWIM_ALIVE;
    len = swim_encode(buf, &p, key);
    swim_recv(s, buf, len, 4);
    CU_ASSERT_EQUAL(swim_member_state(s, 2), SWIM_SUSPECT);
    p.seq = 6;
    p.upd[0].inc = 4;
    len = swim_encode(buf, &p, key);
    swim_recv(s, buf, len, 5);
    CU_ASSERT_EQUAL(swim_member_state(s, 2), SWIM_ALIVE);
    p.seq = 7;
    p.upd[0].state = SWIM_DEAD, p.upd[0].inc = 3;
    len = swim_encode(buf, &p, key);
    swim_recv(s, buf, len, 6);
    CU_ASSERT_EQUAL(swim_member_state(s, 2), SWIM_ALIVE);
    /* a new boot of member 2 is news whatever it says: alive, and reported restarted */
    uint32_t before = cap.changes;
    p.seq = 8;
    p.upd[0] = (struct swim_upd){.member = 2, .state = SWIM_ALIVE, .inc = 0, .by = 2, .boot = 6};
    len = swim_encode(buf, &p, key);
    swim_recv(s, buf, len, 7);
    CU_ASSERT_EQUAL(swim_member_boot(s, 2), 6);
    CU_ASSERT_EQUAL(cap.changes, before + 1);
    swim_free(s);
}

/* A dead verdict on an older incarnation than ours is not taken, but checked: the member is
 * the next one probed, whatever the round robin's order. */
static void test_swim_verify(void)
{
    struct capture cap = {0};
    struct swim_io io = {.send = cap_send, .change = cap_change};
    struct swim_config c;
    swim_config_default(&c, 64, 0);
    struct swim *s = swim_new(&c, key, 100, 3, &io, &cap, 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    uint8_t buf[SWIM_MAX_PKT];
    struct swim_pkt p = {.type = SWIM_GOSSIP, .sender = 40, .boot = 7, .seq = 1, .inc = 3};
    size_t len = swim_encode(buf, &p, key); /* member 40 speaks: alive at incarnation 3 */
    CU_ASSERT_EQUAL(swim_recv(s, buf, len, 1), 0);
    p = (struct swim_pkt){.type = SWIM_GOSSIP, .sender = 9, .boot = 5, .seq = 1, .nupd = 1};
    p.upd[0] = (struct swim_upd){.member = 40, .state = SWIM_DEAD, .inc = 2, .by = 9, .boot = 7};
    len = swim_encode(buf, &p, key);
    CU_ASSERT_EQUAL(swim_recv(s, buf, len, 2), 0);
    CU_ASSERT_EQUAL(swim_member_state(s, 40), SWIM_ALIVE);
    cap.n = 0;
    swim_tick(s, swim_next(s));
    struct swim_pkt a;
    const char *why;
    CU_ASSERT_TRUE_FATAL(cap.n >= 1);
    CU_ASSERT_EQUAL_FATAL(swim_decode(cap.pkt, cap.len, &a, key, &why), 0);
    CU_ASSERT_EQUAL(a.type, SWIM_PING);
    CU_ASSERT_EQUAL(cap.to, 40);
    CU_ASSERT_EQUAL(a.target, 40);
    /* at the same incarnation the verdict is taken */
    p.seq = 2;
    p.upd[0].inc = 3;
    len = swim_encode(buf, &p, key);
    CU_ASSERT_EQUAL(swim_recv(s, buf, len, 3), 0);
    CU_ASSERT_EQUAL(swim_member_state(s, 40), SWIM_DEAD);
    swim_free(s);
}

/* Classic SWIM (suspicions spread to all) works on the same code: a kill seen by all, no
 * verdict on paused members. */
static void test_swim_classic(void)
{
    struct swim_config c;
    swim_config_default(&c, 16, 0);
    c.spread_suspicion = true;
    struct swimnet *w = swimnet_new(16, &c, 5);
    swimnet_run(w, w->now + 1000000000ull);
    for (int i = 0; i < 5; i++) {
        swimnet_pause(w, (uint32_t)(2 + i), 300000000ull);
        swimnet_run(w, w->now + 800000000ull);
    }
    CU_ASSERT(w->refuted > 0);
    CU_ASSERT_EQUAL(w->false_dead, 0);
    uint64_t t0 = w->now;
    swimnet_kill(w, 9);
    swimnet_run(w, t0 + 1500000000ull);
    CU_ASSERT_EQUAL(swimnet_dead_views(w, 9), 15);
    swimnet_free(w);
}

static struct swimnet *net16(uint64_t seed)
{
    struct swim_config c;
    swim_config_default(&c, 16, 0);
    return swimnet_new(16, &c, seed);
}

/* 16 members: a killed one is dead to every other within 1.5 s, nobody else is. */
static void test_swim_kill(void)
{
    struct swimnet *w = net16(1);
    swimnet_run(w, w->now + 2000000000ull);
    CU_ASSERT_EQUAL(w->false_suspect, 0);
    uint64_t t0 = w->now;
    swimnet_kill(w, 5);
    swimnet_run(w, t0 + 1500000000ull);
    CU_ASSERT_EQUAL(swimnet_dead_views(w, 5), 15);
    CU_ASSERT(w->first_dead[5] && w->first_dead[5] - t0 < 1000000000ull);
    CU_ASSERT_EQUAL(w->false_dead, 0);
    swimnet_free(w);
}

/* A member stopped for 0.3 s (a few times) is suspected, refutes when it resumes, and is
 * declared dead by nobody; with 10 % loss too. */
static void test_swim_pause(void)
{
    struct swimnet *w = net16(2);
    w->loss = 0.1;
    swimnet_run(w, w->now + 1000000000ull);
    for (int i = 0; i < 10; i++) {
        swimnet_pause(w, (uint32_t)(3 + i % 4), 300000000ull);
        swimnet_run(w, w->now + 700000000ull);
    }
    swimnet_run(w, w->now + 2000000000ull);
    CU_ASSERT(w->false_suspect > 0);
    CU_ASSERT(w->refuted > 0);
    CU_ASSERT_EQUAL(w->false_dead, 0);
    for (uint32_t i = 0; i < 16; i++) CU_ASSERT_EQUAL(swimnet_dead_views(w, i), 0);
    swimnet_free(w);
}

struct heard_cap {
    uint32_t n, member;
    uint64_t boot;
    uint8_t info[SWIM_INFO];
    uint32_t dead_member, dead_by, ndead;
};

static void hc_send(void *ctx, uint32_t to, const uint8_t *pkt, size_t len)
{
    (void)ctx, (void)to, (void)pkt, (void)len;
}

static void hc_heard(void *ctx, uint32_t member, uint64_t boot, const uint8_t info[SWIM_INFO])
{
    struct heard_cap *h = ctx;
    h->n++;
    h->member = member;
    h->boot = boot;
    memcpy(h->info, info, SWIM_INFO);
}

static struct swim *hc_swim;
static void hc_change(void *ctx, uint32_t member, enum swim_state from, enum swim_state to,
                      bool restarted)
{
    struct heard_cap *h = ctx;
    (void)from, (void)restarted;
    if (to != SWIM_DEAD) return;
    h->ndead++;
    h->dead_member = member;
    h->dead_by = swim_member_by(hc_swim, member);
}

/* The sender's info rides on every packet and reaches the heard callback with its boot;
 * a replayed packet is not heard again. swim_announce pings every other member once;
 * swim_leave's packets make the receiver hold the leaver dead by its own verdict. */
static void test_swim_info_leave(void)
{
    struct capture cap = {0};
    struct heard_cap hc = {0};
    struct swim_io io = {.send = cap_send, .change = cap_change};
    struct swim_io hio = {.send = hc_send, .change = hc_change, .heard = hc_heard};
    struct swim_config c;
    swim_config_default(&c, 4, 1);
    struct swim *a = swim_new(&c, key, 77, 1, &io, &cap, 0);
    swim_config_default(&c, 4, 2);
    struct swim *b = hc_swim = swim_new(&c, key, 88, 2, &hio, &hc, 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(a);
    CU_ASSERT_PTR_NOT_NULL_FATAL(b);
    uint8_t info[SWIM_INFO];
    for (int i = 0; i < SWIM_INFO; i++) info[i] = (uint8_t)(0xa0 + i);
    swim_set_info(a, info);
    swim_announce(a);
    CU_ASSERT_EQUAL(cap.n, 3); /* members 0, 2, 3 */
    CU_ASSERT_EQUAL(cap.to, 3);
    struct swim_pkt p;
    const char *why;
    CU_ASSERT_EQUAL_FATAL(swim_decode(cap.pkt, cap.len, &p, key, &why), 0);
    CU_ASSERT_EQUAL(p.type, SWIM_PING);
    CU_ASSERT_EQUAL(memcmp(p.info, info, SWIM_INFO), 0);
    /* the same kind of packet to member 2 */
    p.target = 2; /* seq 3 as sent to member 3: b has not seen it */
    uint8_t buf[SWIM_MAX_PKT];
    size_t len = swim_encode(buf, &p, key);
    CU_ASSERT_EQUAL(swim_recv(b, buf, len, 1), 0);
    CU_ASSERT_EQUAL(hc.n, 1);
    CU_ASSERT_EQUAL(hc.member, 1);
    CU_ASSERT_EQUAL(hc.boot, 77);
    CU_ASSERT_EQUAL(memcmp(hc.info, info, SWIM_INFO), 0);
    CU_ASSERT_EQUAL(swim_recv(b, buf, len, 2), -1); /* a replay is not heard */
    CU_ASSERT_EQUAL(hc.n, 1);
    /* a leaves: its packets say it is dead by its own verdict */
    cap.n = 0;
    swim_leave(a);
    CU_ASSERT(cap.n >= 1);
    CU_ASSERT_EQUAL_FATAL(swim_decode(cap.pkt, cap.len, &p, key, &why), 0);
    CU_ASSERT_EQUAL(swim_recv(b, cap.pkt, cap.len, 3), 0);
    CU_ASSERT_EQUAL(hc.ndead, 1);
    CU_ASSERT_EQUAL(hc.dead_member, 1);
    CU_ASSERT_EQUAL(hc.dead_by, 1);
    CU_ASSERT_EQUAL(swim_member_state(b, 1), SWIM_DEAD);
    swim_free(a);
    swim_free(b);
}

UNIT_SUITE(swim, UNIT_TEST(test_swim_wire), UNIT_TEST(test_swim_key), UNIT_TEST(test_swim_drops),
           UNIT_TEST(test_swim_refute), UNIT_TEST(test_swim_verify), UNIT_TEST(test_swim_classic),
           UNIT_TEST(test_swim_kill), UNIT_TEST(test_swim_pause), UNIT_TEST(test_swim_info_leave))
