/*
 * membership.c - which nodes are up: heartbeats out, heartbeats in, and declaring nodes
 * unreachable and down.
 *
 * Every interval this daemon sends one heartbeat (node id, incarnation, load, CPUs its tasks
 * hold, CPUs):
 * to the multicast group, or to every other node in unicast mode (loopback clusters, or
 * when joining the group fails). A heartbeat counts only under the heartbeat key (derived
 * from the cluster key, hbwire.h) and from the configured address of the node it claims to
 * be, also in multicast mode, where the source is the sender's interface address
 * (membership_sender); every drop is counted by reason.
 *
 * A node is up from its first valid heartbeat on. It is unreachable when it has been
 * silent for dead_limit intervals, or when RDP has had messages waiting for it unanswered
 * for RDP's configured bound (rdp_silent): no new ranks go there, but its tasks count as
 * running and messages to it wait (rdplink.c raises RDP's retransmissions so that RDP does
 * not give up within the grace). Valid heartbeats of the same incarnation (and RDP answers
 * again, if RDP's silence was the cause) make it up again, with nothing lost. It is down
 * after down_grace_ms unreachable, or at once on authenticated evidence: a heartbeat with a
 * new incarnation (it restarted: the old incarnation is down, the new one up), a heartbeat
 * saying it leaves, RDP giving up (its messages were not delivered: RDP_LOST_TIMEOUT, or
 * ICMP unreachable while connecting), or RDP_LOST_RESTART: it replaced our connection,
 * which it does only after it dropped its side (it declared us down, or it restarted).
 * A tick that runs late because this daemon itself was stopped or blocked judges no
 * heartbeat silence: the others were not silent, we were not listening.
 *
 * In heartbeat.mode "swim" no heartbeats go out: swim.c (docs/swim.md) probes one node per
 * interval on the heartbeat socket, and its verdicts drive the same states. Its packets are
 * MACed under the SWIM key (a subkey of the heartbeat key's KDF context) and checked against
 * a per-sender replay window; the sender's configured address is checked here first, and
 * every drop is counted in hb_drops like a heartbeat's. A dead verdict makes the node
 * unreachable (down after the grace, or at once when the node itself said it leaves), a
 * new boot (psid's incarnation) makes the old one down at once, a refutation or a packet
 * of a live member makes it up again. Load, task count and CPUs ride in the 16-byte info
 * of every SWIM packet (the heartbeat's bytes 24..39), so they cost no packet; each node
 * hears them from any other about every n/2 intervals, and task counts also come by RDP.
 *
 * Going down drops the RDP connection, so that its pending messages are reported
 * undeliverable and a returning node gets a fresh connection. Every message between two
 * daemons about their jobs travels on that one connection, so the rule that keeps a job
 * from hanging is: whenever one side drops the connection, both sides run the down actions
 * (jobs hear "node lost", tasks of the other's jobs end, notifications fire). The side that
 * dropped it ran them in set_down; when the node is heard again with the same incarnation,
 * this side sends it a PSM_D_HELLO on a new connection, and the node, which still held the
 * old one, sees RDP_LOST_RESTART and runs them too. A rank can thus never be ended on one
 * node while its home waits for its exit.
 */
#include "daemon.h"
#include "module.h"
#include "hbwire.h"
#include "bebytes.h"
#include "swim.h"
#include "log.h"
#include "psmsg.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sodium.h>
#include <sys/socket.h>
#include <unistd.h>

struct psid_node *psid_node(struct psid *d, uint32_t id)
{
    const struct psconf_node *n = psconf_node_by_id(&d->conf, id);
    return n ? &d->nodes[n - d->conf.nodes] : NULL;
}

static uint64_t interval_ns(const struct psid *d)
{
    return (uint64_t)d->conf.hb_interval_ms * 1000000ull;
}

bool membership_alive(const struct psid_node *n)
{
    return n->state != PSNODE_DOWN;
}

/* drop_conn: drop the RDP connection too (not when RDP itself just replaced or lost it), and
 * tell the node so once it is heard again (hello_due). */
static void set_down(struct psid *d, struct psid_node *n, const char *why, bool drop_conn)
{
    if (n->state == PSNODE_DOWN) return;
    n->state = PSNODE_DOWN;
    n->used = n->inflight = 0; /* its tasks are dead to everyone */
    n->hello_due = drop_conn;
    log_notice("node %u (%s) down: %s", n->conf->id, n->conf->name, why);
    if (drop_conn && d->rdp) rdp_disconnect(d->rdp, n->conf->id);
    /* its tasks are dead to everyone: jobs here hear "node lost", tasks here whose job
     * lived there end, messages waiting for it are dropped */
    send_node_lost(d, n->conf->id);
    modules_node_lost(d, n->conf->id);
}

static void set_unreachable(struct psid *d, struct psid_node *n, const char *why, bool rdp,
                            uint64_t now)
{
    if (n->state != PSNODE_UP) return;
    n->state = PSNODE_UNREACHABLE;
    n->unreachable_since = now;
    n->unreachable_rdp = rdp;
    if (d->conf.hb_down_grace_ms == 0) {
        set_down(d, n, why, true);
        return;
    }
    log_notice("node %u (%s) unreachable: %s; down in %u ms unless heard again", n->conf->id,
               n->conf->name, why, d->conf.hb_down_grace_ms);
}

static void send_hello(struct psid *d, uint32_t node)
{
    struct psmsg_buf b = {0};
    psmsg_begin(&b, PSM_D_HELLO, 0);
    psmsg_put_u32(&b, PSF_NODE_ID, d->self->id);
    psmsg_put_u64(&b, PSF_INCARNATION, d->incarnation);
    psid_send(d, node, &b);
    psmsg_buf_free(&b);
}

static void set_up(struct psid *d, struct psid_node *n)
{
    if (n->state == PSNODE_UP) return;
    if (n->state == PSNODE_UNREACHABLE)
        log_notice("node %u (%s) up again after %llu ms unreachable", n->conf->id, n->conf->name,
                   (unsigned long long)((loop_now() - n->unreachable_since) / 1000000));
    else
        log_notice("node %u (%s) up", n->conf->id, n->conf->name);
    n->state = PSNODE_UP;
    n->rdp_progress = loop_now();
    if (n->hello_due) { /* it may still hold the connection we dropped: show it it is gone */
        n->hello_due = false;
        send_hello(d, n->conf->id);
    }
}

void membership_tasks(struct psid *d, uint32_t node, uint32_t used, uint32_t epoch)
{
    struct psid_node *n = psid_node(d, node);
    if (!n || n->conf == d->self || epoch <= n->task_epoch) return;
    n->task_epoch = epoch;
    n->used = used;
}

void membership_rdp_lost(struct psid *d, uint32_t node, enum rdp_lost_reason why)
{
    struct psid_node *n = psid_node(d, node);
    if (!n || why == RDP_LOST_CLOSED) return;
    if (why == RDP_LOST_RESTART) { /* the new connection stays: RDP has put it in place */
        set_down(d, n, "it replaced our RDP connection (it dropped its side)", false);
        return;
    }
    set_down(d, n, rdp_lost_reason_name(why), false);
    /* RDP gave up on an established connection: the node may still hold its side. (An ICMP
     * error fails only an attempt, of which the node holds nothing.) */
    if (why == RDP_LOST_TIMEOUT) n->hello_due = true;
}

static uint32_t load_milli(void)
{
    double l[1];
    return getloadavg(l, 1) == 1 && l[0] >= 0 ? (uint32_t)(l[0] * 1000 + 0.5) : 0;
}

static void send_beat(struct psid *d, enum hb_type type)
{
    struct psid_node *me = psid_node(d, d->self->id);
    struct hb h = {.type = (uint8_t)type,
                   .node = d->self->id,
                   .incarnation = d->incarnation,
                   .seq = ++d->hb_seq,
                   .load_milli = load_milli(),
                   .used = me->used,
                   .cpus = d->self->cpus,
                   .task_epoch = d->task_epoch};
    me->load_milli = h.load_milli;
    uint8_t pkt[HB_LEN];
    hb_encode(pkt, &h, d->hb_key);
    if (d->hb_multicast) {
        struct sockaddr_in to = d->conf.hb_group;
        to.sin_port = htons((uint16_t)d->conf.hb_port);
        d->hb_sent++;
        if (sendto(d->hb_fd, pkt, sizeof pkt, 0, (struct sockaddr *)&to, sizeof to) < 0)
            log_debug("heartbeat to the group: %s", strerror(errno));
        return;
    }
    for (size_t i = 0; i < d->conf.nnodes; i++) {
        const struct psconf_node *n = &d->conf.nodes[i];
        if (n == d->self) continue;
        struct sockaddr_in to;
        memcpy(&to, &n->addr, sizeof to);
        to.sin_port = htons((uint16_t)d->conf.hb_port);
        /* errors (a node not running yet: ECONNREFUSED) are what heartbeats detect */
        d->hb_sent++;
        (void)sendto(d->hb_fd, pkt, sizeof pkt, MSG_DONTWAIT, (struct sockaddr *)&to, sizeof to);
    }
}

static void tick(void *ctx);

/* What every SWIM packet carries of us: the heartbeat's load, CPUs used, CPUs, task epoch. */
static void swim_info(struct psid *d)
{
    struct psid_node *me = psid_node(d, d->self->id);
    uint8_t info[SWIM_INFO];
    me->load_milli = load_milli();
    be_put32(info, me->load_milli);
    be_put32(info + 4, me->used);
    be_put32(info + 8, d->self->cpus);
    be_put32(info + 12, d->task_epoch);
    swim_set_info(d->swim, info);
}

/* Whether RDP has had messages waiting for node n, unanswered, for longer than its own
 * configured bound (the time after which it used to give up). */
static bool rdp_silent(struct psid *d, struct psid_node *n, uint64_t now)
{
    struct rdp_peer_stats ps;
    if (!d->rdp || rdp_peer_stats(d->rdp, n->conf->id, &ps) < 0) return false;
    if (ps.pkts_recv != n->rdp_pkts_recv || ps.queued == 0) {
        n->rdp_pkts_recv = ps.pkts_recv;
        n->rdp_progress = now;
        return false;
    }
    return now - n->rdp_progress > d->rdp_silent_ns;
}

/* late: this tick ran long after it was due (this daemon was stopped or blocked), so
 * silence says nothing about the others this time. */
static void check_nodes(struct psid *d, uint64_t now, bool late)
{
    uint64_t limit = interval_ns(d) * d->conf.hb_dead_limit;
    uint64_t grace = (uint64_t)d->conf.hb_down_grace_ms * 1000000ull;
    for (size_t i = 0; i < d->conf.nnodes; i++) {
        struct psid_node *n = &d->nodes[i];
        if (n->conf == d->self || n->state == PSNODE_DOWN) continue;
        if (late) {
            n->rdp_progress = now;
            continue;
        }
        /* swim: silent is SWIM's dead verdict (swim_change makes it unreachable at once) */
        bool silent = d->swim ? swim_member_state(d->swim, (uint32_t)i) == SWIM_DEAD
                              : now - n->last_heard > limit;
        bool rdp = rdp_silent(d, n, now);
        if (n->state == PSNODE_UP && (silent || rdp))
            set_unreachable(
                d, n, silent ? (d->swim ? "SWIM dead verdict" : "no heartbeat") : "RDP unanswered",
                !silent, now);
        else if (n->state == PSNODE_UNREACHABLE && !silent && !rdp)
            set_up(d, n);
        else if (n->state == PSNODE_UNREACHABLE && now >= n->unreachable_since &&
                 now - n->unreachable_since >= grace)
            set_down(d, n, "unreachable for down_grace_ms", true);
    }
}

/* The periodic work: our beat (or SWIM's piggybacked info), then every node judged.
 * d->hb_next: when this round was due. */
static void beat(struct psid *d, uint64_t now)
{
    if (d->swim)
        swim_info(d);
    else
        send_beat(d, HB_BEAT);
    bool late = now > d->hb_next && now - d->hb_next > interval_ns(d) * d->conf.hb_dead_limit / 2;
    if (late)
        log_info("heartbeat tick %llu ms late (this daemon was stopped or blocked): no node is "
                 "judged by it",
                 (unsigned long long)((now - d->hb_next) / 1000000));
    check_nodes(d, now, late);
}

/* Heartbeat modes: beat on a timer of its own (swim: at the start of each of SWIM's
 * periods, in swim_timer's wake-up) */
static void tick(void *ctx)
{
    struct psid *d = ctx;
    if (d->stopping) return;
    uint64_t now = loop_now();
    beat(d, now);
    /* a fixed rhythm: the next beat is due one interval after the last one was */
    d->hb_next += interval_ns(d);
    if (d->hb_next <= now) d->hb_next = now + interval_ns(d);
    loop_timer(d->loop, d->hb_next, tick, d);
}

bool membership_addr_ok(const struct psid_node *n, const struct sockaddr_in *from)
{
    const struct sockaddr_in *a = (const struct sockaddr_in *)&n->conf->addr;
    return n->conf->addr.ss_family == AF_INET && from->sin_family == AF_INET &&
           a->sin_addr.s_addr == from->sin_addr.s_addr;
}

const char *hb_drop_name(enum hb_drop why)
{
    static const char *const names[HB_DROP__COUNT] = {"malformed", "mac", "unknown node", "address",
                                                      "stale"};
    return why < HB_DROP__COUNT ? names[why] : "?";
}

static void drop(struct psid *d, enum hb_drop why, const struct sockaddr_in *from, const char *what)
{
    char a[INET_ADDRSTRLEN];
    d->hb_drops[why]++;
    log_info("heartbeat from %s dropped: %s%s%s", inet_ntop(AF_INET, &from->sin_addr, a, sizeof a),
             hb_drop_name(why), what ? ": bad " : "", what ? what : "");
}

struct psid_node *membership_sender(struct psid *d, uint32_t id, const struct sockaddr_in *from,
                                    enum hb_drop *why)
{
    struct psid_node *n = psid_node(d, id);
    if (!n || n->conf == d->self) return *why = HB_DROP_UNKNOWN, NULL;
    if (!membership_addr_ok(n, from)) return *why = HB_DROP_ADDRESS, NULL;
    return n;
}

static void accept_beat(struct psid *d, const struct hb *h, const struct sockaddr_in *from)
{
    enum hb_drop why;
    struct psid_node *n = membership_sender(d, h->node, from, &why);
    if (!n) {
        drop(d, why, from, NULL);
        return;
    }
    /* an older incarnation, or a beat already seen: a replay */
    if (h->incarnation < n->incarnation ||
        (h->incarnation == n->incarnation && h->seq <= n->last_seq)) {
        d->hb_drops[HB_DROP_STALE]++;
        log_debug("heartbeat of node %u dropped: stale", h->node);
        return;
    }
    if (h->incarnation > n->incarnation && n->incarnation) {
        set_down(d, n, "restarted", true);
        log_info("node %u restarted (incarnation %llu)", h->node,
                 (unsigned long long)h->incarnation);
    }
    if (h->incarnation != n->incarnation) {
        n->task_epoch = 0;
        n->hello_due = false; /* a new incarnation holds no connection of ours */
    }
    n->incarnation = h->incarnation;
    n->last_seq = h->seq;
    if (h->type == HB_LEAVING) {
        set_down(d, n, "left", true);
        return;
    }
    n->last_heard = loop_now();
    n->load_milli = h->load_milli;
    membership_tasks(d, h->node, h->used, h->task_epoch);
    n->cpus = h->cpus;
    /* unreachable for RDP's silence: up again when RDP answers too (check_nodes) */
    if (n->state != PSNODE_UNREACHABLE || !n->unreachable_rdp) set_up(d, n);
}

static void swim_recv_one(struct psid *d, const uint8_t *buf, size_t len,
                          const struct sockaddr_in *from);
static void swim_arm(struct psid *d);

static void on_hb_readable(void *ctx, uint32_t events)
{
    struct psid *d = ctx;
    (void)events;
    for (int i = 0; i < 256; i++) {
        uint8_t buf[SWIM_MAX_PKT + 1];
        struct sockaddr_in from;
        socklen_t fl = sizeof from;
        ssize_t r =
            recvfrom(d->hb_fd, buf, sizeof buf, MSG_DONTWAIT, (struct sockaddr *)&from, &fl);
        if (r < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK) return;
            if (errno == EINTR || errno == ECONNREFUSED) continue; /* ICMP for a beat we sent */
            log_warn("heartbeat socket: %s", strerror(errno));
            return;
        }
        d->hb_recv++;
        if (d->swim) {
            swim_recv_one(d, buf, (size_t)r, &from);
            continue;
        }
        struct hb h;
        const char *why;
        if (hb_decode(buf, (size_t)r, &h, d->hb_key, &why) < 0) {
            drop(d, strcmp(why, "mac") ? HB_DROP_MALFORMED : HB_DROP_MAC, &from, why);
            continue;
        }
        accept_beat(d, &h, &from);
    }
}

/* ---- heartbeat.mode "swim" ---- */

static void swim_send(void *ctx, uint32_t to, const uint8_t *pkt, size_t len)
{
    struct psid *d = ctx;
    struct sockaddr_in a;
    memcpy(&a, &d->conf.nodes[to].addr, sizeof a);
    a.sin_port = htons((uint16_t)d->conf.hb_port);
    d->hb_sent++;
    /* errors (a node not running: ECONNREFUSED) are what the probes detect */
    (void)sendto(d->hb_fd, pkt, len, MSG_DONTWAIT, (struct sockaddr *)&a, sizeof a);
}

/* SWIM holds member n alive (or suspect) at boot: the node is up at that incarnation,
 * unless RDP's silence made it unreachable (then up again when RDP answers, check_nodes). */
static void swim_node_up(struct psid *d, struct psid_node *n, uint64_t boot)
{
    if (!boot) return;
    if (n->incarnation != boot) {
        n->incarnation = boot;
        n->task_epoch = 0;
        n->hello_due = false; /* a new incarnation holds no connection of ours */
    }
    if (n->state != PSNODE_UNREACHABLE || !n->unreachable_rdp) set_up(d, n);
}

static void swim_change(void *ctx, uint32_t m, enum swim_state from, enum swim_state to,
                        bool restarted)
{
    struct psid *d = ctx;
    struct psid_node *n = &d->nodes[m];
    uint64_t boot = swim_member_boot(d->swim, m);
    if (restarted) { /* authenticated evidence: the old incarnation is gone */
        set_down(d, n, "restarted", true);
        log_info("node %u restarted (incarnation %llu)", n->conf->id, (unsigned long long)boot);
        n->incarnation = 0; /* swim_node_up takes the new one */
    }
    if (to == SWIM_DEAD) {
        if (swim_member_by(d->swim, m) == m)
            set_down(d, n, "left", true);
        else
            set_unreachable(d, n, "SWIM dead verdict (probes unanswered, suspicion not refuted)",
                            false, loop_now());
        return;
    }
    /* suspicions stay with the few members whose probes failed (docs/swim.md): worth a line */
    if (to == SWIM_SUSPECT && from == SWIM_ALIVE)
        log_info("node %u (%s) suspected", n->conf->id, n->conf->name);
    if (to == SWIM_ALIVE && from == SWIM_SUSPECT)
        log_info("node %u (%s): suspicion refuted", n->conf->id, n->conf->name);
    if (from == SWIM_DEAD || restarted) swim_node_up(d, n, boot);
}

static void swim_heard(void *ctx, uint32_t m, uint64_t boot, const uint8_t info[SWIM_INFO])
{
    struct psid *d = ctx;
    struct psid_node *n = &d->nodes[m];
    if (boot != swim_member_boot(d->swim, m)) return; /* an older boot's last word */
    n->last_heard = loop_now();
    n->load_milli = be_get32(info);
    n->cpus = be_get32(info + 8);
    if (swim_member_state(d->swim, m) == SWIM_DEAD) return; /* it refutes first */
    swim_node_up(d, n, boot);
    membership_tasks(d, n->conf->id, be_get32(info + 4), be_get32(info + 12));
}

static void swim_timer(void *ctx)
{
    struct psid *d = ctx;
    d->swim_timer = 0;
    if (d->stopping || !d->swim) return;
    uint64_t now = loop_now(), due = swim_period_next(d->swim);
    swim_tick(d->swim, now);
    /* a period began: the daemon's own round in the same wake-up (on a timer of its own, at
     * another phase, it was a second wake-up each period) */
    if (swim_period_next(d->swim) != due) {
        d->hb_next = due;
        beat(d, loop_now()); /* (not now: swim_tick's verdicts are stamped later) */
    }
    swim_arm(d);
}

/* The timer at swim_next: moved earlier when a packet made something due sooner, and later
 * when one made the earliest unnecessary (the ack of our probe, which comes well before its
 * timeout): a timer left there woke the loop for nothing once a period, a quarter of an idle
 * daemon's wake-ups. */
static void swim_arm(struct psid *d)
{
    uint64_t at = swim_next(d->swim);
    if (d->swim_timer && at == d->swim_timer_at) return;
    if (d->swim_timer) loop_timer_cancel(d->loop, d->swim_timer);
    d->swim_timer_at = at;
    d->swim_timer = loop_timer(d->loop, at, swim_timer, d);
}

static void swim_recv_one(struct psid *d, const uint8_t *buf, size_t len,
                          const struct sockaddr_in *from)
{
    /* the claimed sender's address first (the MAC is swim_recv's): a member number outside
     * the configuration, or ourselves, is swim_recv's "member" drop */
    if (len >= 8 && buf[0] == SWIM_VERSION) {
        uint32_t m = be_get32(buf + 4);
        if (m < d->conf.nnodes && &d->conf.nodes[m] != d->self &&
            !membership_addr_ok(&d->nodes[m], from)) {
            drop(d, HB_DROP_ADDRESS, from, NULL);
            return;
        }
    }
    struct swim_stats before = *swim_stats(d->swim);
    if (swim_recv(d->swim, buf, len, loop_now()) == 0) {
        swim_arm(d);
        return;
    }
    static const enum hb_drop map[SWIM_DROP__COUNT] = {
        [SWIM_DROP_MALFORMED] = HB_DROP_MALFORMED,
        [SWIM_DROP_MAC] = HB_DROP_MAC,
        [SWIM_DROP_MEMBER] = HB_DROP_UNKNOWN,
        [SWIM_DROP_STALE] = HB_DROP_STALE,
    };
    const struct swim_stats *after = swim_stats(d->swim);
    for (int k = 0; k < SWIM_DROP__COUNT; k++) {
        if (after->drops[k] == before.drops[k]) continue;
        if (map[k] == HB_DROP_STALE) { /* a replay, as accept_beat counts it */
            d->hb_drops[HB_DROP_STALE]++;
            log_debug("SWIM packet dropped: stale (replayed or of an older boot)");
        } else {
            drop(d, map[k], from, swim_drop_name((enum swim_drop)k));
        }
    }
}

static int swim_start(struct psid *d)
{
    uint32_t self = (uint32_t)(d->self - d->conf.nodes);
    struct swim_config c;
    uint64_t period = interval_ns(d);
    swim_config_default(&c, (uint32_t)d->conf.nnodes, self);
    c.period_ns = period;
    c.ack_timeout_ns = period * 3 / 10;
    /* a suspicion ends in a verdict after 3 intervals with enough confirmations, after
     * dead_limit intervals with none (the heartbeats' bound) */
    c.suspect_min_ns = 3 * period;
    c.suspect_max_ns = (uint64_t)d->conf.hb_dead_limit * period;
    uint8_t key[32];
    swim_key_derive(d->conf.key, key);
    uint64_t seed;
    randombytes_buf(&seed, sizeof seed);
    static const struct swim_io io = {
        .send = swim_send, .change = swim_change, .heard = swim_heard};
    d->swim = swim_new(&c, key, d->incarnation, seed, &io, d, loop_now());
    sodium_memzero(key, sizeof key);
    if (!d->swim) return -1;
    swim_info(d);
    /* everyone hears our boot now, and we theirs from the acks (n - 1 packets, once) */
    swim_announce(d->swim);
    swim_arm(d);
    return 0;
}

static int open_unicast(struct psid *d)
{
    struct sockaddr_in a;
    memcpy(&a, &d->self->addr, sizeof a);
    a.sin_port = htons((uint16_t)d->conf.hb_port);
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    if (bind(fd, (struct sockaddr *)&a, sizeof a) < 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

static int open_multicast(struct psid *d)
{
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    int one = 1;
    unsigned char ttl = 1, loop = 0;
    struct sockaddr_in self, bindto = d->conf.hb_group;
    memcpy(&self, &d->self->addr, sizeof self);
    bindto.sin_port = htons((uint16_t)d->conf.hb_port);
    struct ip_mreqn mr = {.imr_multiaddr = d->conf.hb_group.sin_addr, .imr_address = self.sin_addr};
    if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0 ||
        bind(fd, (struct sockaddr *)&bindto, sizeof bindto) < 0 ||
        setsockopt(fd, IPPROTO_IP, IP_ADD_MEMBERSHIP, &mr, sizeof mr) < 0 ||
        setsockopt(fd, IPPROTO_IP, IP_MULTICAST_IF, &mr, sizeof mr) < 0 ||
        setsockopt(fd, IPPROTO_IP, IP_MULTICAST_TTL, &ttl, sizeof ttl) < 0 ||
        setsockopt(fd, IPPROTO_IP, IP_MULTICAST_LOOP, &loop, sizeof loop) < 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

int membership_start(struct psid *d)
{
    hb_key_derive(d->conf.key, d->hb_key);
    d->nodes = calloc(d->conf.nnodes, sizeof *d->nodes);
    if (!d->nodes) return -1;
    for (size_t i = 0; i < d->conf.nnodes; i++) {
        d->nodes[i].conf = &d->conf.nodes[i];
        d->nodes[i].cpus = d->conf.nodes[i].cpus;
        d->nodes[i].rdp_progress = loop_now();
    }
    struct psid_node *me = psid_node(d, d->self->id);
    me->state = PSNODE_UP;
    me->incarnation = d->incarnation;
    d->hb_seq = d->incarnation;

    d->hb_multicast = d->conf.hb_mode == PSCONF_HB_MULTICAST;
    d->hb_fd = -1;
    d->swim = NULL;
    d->swim_timer = 0;
    if (d->hb_multicast) {
        d->hb_fd = open_multicast(d);
        if (d->hb_fd < 0) {
            log_warn("multicast heartbeats on %s: %s; falling back to unicast", d->self->addr_str,
                     strerror(errno));
            d->hb_multicast = false;
        }
    }
    if (d->hb_fd < 0 && (d->hb_fd = open_unicast(d)) < 0) {
        log_err("heartbeat socket %s:%u: %s", d->self->addr_str, d->conf.hb_port, strerror(errno));
        return -1;
    }
    if (loop_fd(d->loop, d->hb_fd, EPOLLIN, on_hb_readable, d) < 0) return -1;
    d->hb_start = loop_now();
    if (d->conf.hb_mode == PSCONF_HB_SWIM) {
        if (swim_start(d) < 0) {
            log_err("SWIM membership: out of memory");
            return -1;
        }
        log_info("SWIM membership: a probe every %u ms, suspicion %u..%u ms, down after %u ms "
                 "unreachable",
                 d->conf.hb_interval_ms, 3 * d->conf.hb_interval_ms,
                 d->conf.hb_dead_limit * d->conf.hb_interval_ms, d->conf.hb_down_grace_ms);
        d->hb_next = loop_now();
        beat(d, d->hb_next); /* then at each period's start (swim_timer) */
        return 0;
    }
    log_info("heartbeats every %u ms (%s), unreachable after %u silent intervals, down after "
             "%u ms unreachable",
             d->conf.hb_interval_ms, d->hb_multicast ? "multicast" : "unicast",
             d->conf.hb_dead_limit, d->conf.hb_down_grace_ms);
    d->hb_next = loop_now();
    tick(d);
    return 0;
}

void membership_leave(struct psid *d)
{
    if (d->hb_fd < 0) return;
    if (d->swim) {
        swim_leave(d->swim); /* our own verdict, flooded: the others see us down at once */
        if (d->swim_timer) loop_timer_cancel(d->loop, d->swim_timer);
        d->swim_timer = 0;
    } else {
        send_beat(d, HB_LEAVING);
    }
    double secs = (double)(loop_now() - d->hb_start) / 1e9;
    log_notice("membership (%s): %llu packets sent, %llu received in %.1f s",
               psconf_hb_mode_name(d->conf.hb_mode), (unsigned long long)d->hb_sent,
               (unsigned long long)d->hb_recv, secs);
    swim_free(d->swim);
    d->swim = NULL;
    loop_fd_del(d->loop, d->hb_fd);
    close(d->hb_fd);
    d->hb_fd = -1;
    free(d->nodes);
    d->nodes = NULL;
}
