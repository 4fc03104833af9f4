/*
 * swim.h - SWIM membership (Das, Gupta, Motivala 2002) with Lifeguard's local health and
 * dynamic suspicion, as a pure state machine: no sockets, no clock. The caller passes the
 * time in (swim_tick, swim_recv), a seed for the randomness, and gets packets to send and
 * state changes through callbacks. docs/swim.md describes the protocol and its choices.
 *
 * Members are the configured nodes, numbered 0..n-1 (the caller maps them to node ids and
 * addresses). Each member has a boot (a number that grows with every start: psid's
 * incarnation, CLOCK_REALTIME ns at start) and an incarnation counter inc, raised only by
 * the member itself to refute a suspicion; (boot, inc) orders what is said about it.
 *
 * Packet (big-endian), 72 + 24 x nupd bytes, nupd <= SWIM_MAX_UPD:
 *
 *   off size field
 *     0    1 version (0x53, 'S': never a heartbeat's version 2)
 *     1    1 type: 1 ping, 2 ack, 3 ping-req, 4 nack, 5 gossip
 *     2    1 flags (0)
 *     3    1 nupd: updates that follow the header
 *     4    4 sender member
 *     8    8 sender boot
 *    16    8 seq: increasing per sender boot (replay window of 64 at the receiver)
 *    24    4 sender inc
 *    28    4 target: ping: the receiver; ack/nack: the member probed; ping-req: the
 *             member to probe; gossip: 0
 *    32    4 probe number (the prober's; an ack carries the ping's)
 *    36    4 reserved (0)
 *    40   16 info: the sender's own data, opaque to SWIM (psid: its load and CPUs used,
 *             membership.c), handed to the receiver's heard callback
 *    56   24 x nupd: member u32, state u8 (1 alive, 2 suspect, 3 dead), 3 x 0, inc u32,
 *             by u32 (who suspects, for Lifeguard's confirmations), boot u64 (0: not
 *             known to the sender yet; the update is about the current boot)
 *  last   16 MAC: BLAKE2b-128 keyed with the SWIM key over everything before it
 *
 * The SWIM key is derived from the cluster key like the heartbeat key (hbwire.h: its own
 * subkey of the same context), so neither kind of packet passes as the other.
 */
#ifndef PSCLUSTER_PSID_SWIM_H
#define PSCLUSTER_PSID_SWIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SWIM_VERSION 0x53
#define SWIM_HDR     56
#define SWIM_INFO    16
#define SWIM_UPD     24
#define SWIM_MAC     16
#define SWIM_MAX_UPD 8
#define SWIM_MAX_PKT (SWIM_HDR + SWIM_UPD * SWIM_MAX_UPD + SWIM_MAC)

enum swim_type { SWIM_PING = 1, SWIM_ACK, SWIM_PING_REQ, SWIM_NACK, SWIM_GOSSIP };
enum swim_state { SWIM_ALIVE = 1, SWIM_SUSPECT, SWIM_DEAD };

struct swim_upd {
    uint32_t member;
    uint8_t state;
    uint32_t inc, by;
    uint64_t boot;
};

struct swim_pkt {
    uint8_t type, nupd;
    uint32_t sender, inc, target, probe;
    uint64_t boot, seq;
    uint8_t info[SWIM_INFO];
    struct swim_upd upd[SWIM_MAX_UPD];
};

void swim_key_derive(const uint8_t cluster_key[32], uint8_t swim_key[32]);
/* The packet's length. */
size_t swim_encode(uint8_t out[SWIM_MAX_PKT], const struct swim_pkt *p, const uint8_t key[32]);
/* 0, or -1 with *why: "length", "version", "type", "reserved", "count", "state", "mac".
 * Member numbers are not checked here (swim_recv checks them against n). */
int swim_decode(const uint8_t *buf, size_t n, struct swim_pkt *p, const uint8_t key[32],
                const char **why);

struct swim_config {
    uint32_t n, self;
    uint64_t period_ns;      /* one direct probe per period (scaled by local health) */
    uint64_t ack_timeout_ns; /* then indirect probes through indirect_k members */
    uint32_t indirect_k;
    uint64_t suspect_min_ns, suspect_max_ns; /* Lifeguard: max with no confirmation, min */
    uint32_t suspect_confirm;                /* with this many independent suspicions */
    uint32_t lhm_max;                        /* local health multiplier's ceiling */
    uint32_t retransmit_mult;                /* an update rides on mult x ceil(log2(n+1)) */
    uint32_t gossip_fanout; /* extra gossip packets per period while updates are pending */
    /* classic SWIM: suspicions (and their refutations) are spread to all; else they stay
     * with the members whose own probes failed (docs/swim.md: update capacity) */
    bool spread_suspicion;
};
/* Defaults for n members: 100 ms period, 30 ms ack timeout, 3 indirect probes, suspicion
 * 300..800 ms (3 confirmations), health up to 4, 3 x log2 retransmissions, fanout 2. */
void swim_config_default(struct swim_config *c, uint32_t n, uint32_t self);

struct swim_io {
    void (*send)(void *ctx, uint32_t to, const uint8_t *pkt, size_t len);
    /* member's state changed; restarted: a new boot replaced an older one (the old one is
     * gone: down at once) */
    void (*change)(void *ctx, uint32_t member, enum swim_state from, enum swim_state to,
                   bool restarted);
    /* optional: an authentic, fresh packet came from member itself (after what it says was
     * applied), with its boot and the info it sends (swim_set_info) */
    void (*heard)(void *ctx, uint32_t member, uint64_t boot, const uint8_t info[SWIM_INFO]);
};

enum swim_drop {
    SWIM_DROP_MALFORMED,
    SWIM_DROP_MAC,
    SWIM_DROP_MEMBER, /* sender or a member named is not configured, or is us */
    SWIM_DROP_STALE,  /* an older boot, or a seq already seen or below the window */
    SWIM_DROP__COUNT
};

struct swim_stats {
    uint64_t sent, recv, drops[SWIM_DROP__COUNT], probes, indirect, suspicions, refutes;
};

struct swim;

struct swim *swim_new(const struct swim_config *c, const uint8_t key[32], uint64_t boot,
                      uint64_t seed, const struct swim_io *io, void *ctx, uint64_t now);
void swim_free(struct swim *s);
/* Run what is due at now. */
void swim_tick(struct swim *s, uint64_t now);
/* When swim_tick is next due. */
uint64_t swim_next(const struct swim *s);
/* When the next protocol period starts (a probe is sent): the daemon's own periodic work
 * shares that wake-up. */
uint64_t swim_period_next(const struct swim *s);
/* A packet that arrived; 0, or -1 when dropped (counted in the stats by reason). */
int swim_recv(struct swim *s, const uint8_t *buf, size_t len, uint64_t now);
/* The caller was stopped or blocked until now: silence over that time says nothing of the
 * others, so probes in flight are forgotten and suspicions started by us restart. */
void swim_resync(struct swim *s, uint64_t now);
/* The info every packet from now on carries (zeros until set). */
void swim_set_info(struct swim *s, const uint8_t info[SWIM_INFO]);
/* Ping every other member once (at start: each learns our boot, and we theirs from the acks,
 * at once rather than when the round robins come to us; n - 1 packets, once). */
void swim_announce(struct swim *s);
/* We leave: our own dead verdict, by us, pushed to fanout + 1 members, who flood it. */
void swim_leave(struct swim *s);
/* Who made the member's current verdict (for a dead member: itself when it left). */
uint32_t swim_member_by(const struct swim *s, uint32_t m);
enum swim_state swim_member_state(const struct swim *s, uint32_t m);
uint32_t swim_member_inc(const struct swim *s, uint32_t m);
uint64_t swim_member_boot(const struct swim *s, uint32_t m);
uint32_t swim_self_inc(const struct swim *s);
uint32_t swim_health(const struct swim *s);
const struct swim_stats *swim_stats(const struct swim *s);
const char *swim_drop_name(enum swim_drop why);

#endif
