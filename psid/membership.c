/*
 * membership.c - which nodes are up: heartbeats out, heartbeats in, and declaring nodes dead.
 *
 * Every interval this daemon sends one heartbeat (node id, incarnation, load, tasks, CPUs):
 * to the multicast group, or to every other node in unicast mode (loopback clusters, or
 * when joining the group fails). A heartbeat counts only under the heartbeat key (derived
 * from the cluster key, hbwire.h) and from the configured address of the node it claims to
 * be, also in multicast mode, where the source is the sender's interface address
 * (membership_sender); every drop is counted by reason. A node is up from its first valid
 * heartbeat on; it is declared down when it has been silent for dead_limit intervals, when
 * it says it is leaving, or when RDP gives up on it (timeout or ICMP unreachable). A
 * heartbeat with a new incarnation means the node restarted: its old incarnation is gone
 * (down, then up).
 * Going down also drops the RDP connection, so that its pending messages are reported
 * undeliverable and a returning node gets a fresh connection.
 */
#include "daemon.h"
#include "hbwire.h"
#include "log.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
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

static void set_down(struct psid *d, struct psid_node *n, const char *why)
{
    if (n->state != PSNODE_UP) return;
    n->state = PSNODE_DOWN;
    n->tasks = n->inflight = 0; /* its tasks are dead to everyone */
    log_notice("node %u (%s) down: %s", n->conf->id, n->conf->name, why);
    if (d->rdp) rdp_disconnect(d->rdp, n->conf->id);
    /* its tasks are dead to everyone: jobs here hear "node lost", tasks here whose job
     * lived there end, messages waiting for it are dropped */
    send_node_lost(d, n->conf->id);
    jobs_node_lost(d, n->conf->id);
    tasks_home_lost(d, n->conf->id);
    notify_node_lost(d, n->conf->id);
    preload_node_lost(d, n->conf->id);
}

static void set_up(struct psid_node *n)
{
    if (n->state == PSNODE_UP) return;
    n->state = PSNODE_UP;
    log_notice("node %u (%s) up", n->conf->id, n->conf->name);
}

void membership_tasks(struct psid *d, uint32_t node, uint32_t tasks, uint32_t epoch)
{
    struct psid_node *n = psid_node(d, node);
    if (!n || n->conf == d->self || epoch <= n->task_epoch) return;
    n->task_epoch = epoch;
    n->tasks = tasks;
}

void membership_rdp_lost(struct psid *d, uint32_t node, enum rdp_lost_reason why)
{
    struct psid_node *n = psid_node(d, node);
    if (!n || why == RDP_LOST_CLOSED || why == RDP_LOST_RESTART) return;
    set_down(d, n, rdp_lost_reason_name(why));
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
                   .tasks = me->tasks,
                   .cpus = d->self->cpus,
                   .task_epoch = d->task_epoch};
    me->load_milli = h.load_milli;
    uint8_t pkt[HB_LEN];
    hb_encode(pkt, &h, d->hb_key);
    if (d->hb_multicast) {
        struct sockaddr_in to = d->conf.hb_group;
        to.sin_port = htons((uint16_t)d->conf.hb_port);
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
        (void)sendto(d->hb_fd, pkt, sizeof pkt, MSG_DONTWAIT, (struct sockaddr *)&to, sizeof to);
    }
}

static void tick(void *ctx);

static void check_silence(struct psid *d, uint64_t now)
{
    uint64_t limit = interval_ns(d) * d->conf.hb_dead_limit;
    for (size_t i = 0; i < d->conf.nnodes; i++) {
        struct psid_node *n = &d->nodes[i];
        if (n->conf == d->self || n->state != PSNODE_UP) continue;
        if (now - n->last_heard > limit) set_down(d, n, "no heartbeat");
    }
}

static void tick(void *ctx)
{
    struct psid *d = ctx;
    if (d->stopping) return;
    send_beat(d, HB_BEAT);
    uint64_t now = loop_now();
    check_silence(d, now);
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
        set_down(d, n, "restarted");
        log_info("node %u restarted (incarnation %llu)", h->node,
                 (unsigned long long)h->incarnation);
    }
    if (h->incarnation != n->incarnation) n->task_epoch = 0;
    n->incarnation = h->incarnation;
    n->last_seq = h->seq;
    if (h->type == HB_LEAVING) {
        set_down(d, n, "left");
        return;
    }
    n->last_heard = loop_now();
    n->load_milli = h->load_milli;
    membership_tasks(d, h->node, h->tasks, h->task_epoch);
    n->cpus = h->cpus;
    set_up(n);
}

static void on_hb_readable(void *ctx, uint32_t events)
{
    struct psid *d = ctx;
    (void)events;
    for (int i = 0; i < 256; i++) {
        uint8_t buf[HB_LEN + 1];
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
        struct hb h;
        const char *why;
        if (hb_decode(buf, (size_t)r, &h, d->hb_key, &why) < 0) {
            drop(d, strcmp(why, "mac") ? HB_DROP_MALFORMED : HB_DROP_MAC, &from, why);
            continue;
        }
        accept_beat(d, &h, &from);
    }
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
    }
    struct psid_node *me = psid_node(d, d->self->id);
    me->state = PSNODE_UP;
    me->incarnation = d->incarnation;
    d->hb_seq = d->incarnation;

    d->hb_multicast = d->conf.hb_mode == PSCONF_HB_MULTICAST;
    d->hb_fd = -1;
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
    log_info("heartbeats every %u ms (%s), dead after %u silent intervals", d->conf.hb_interval_ms,
             d->hb_multicast ? "multicast" : "unicast", d->conf.hb_dead_limit);
    d->hb_next = loop_now();
    tick(d);
    return 0;
}

void membership_leave(struct psid *d)
{
    if (d->hb_fd < 0) return;
    send_beat(d, HB_LEAVING);
    loop_fd_del(d->loop, d->hb_fd);
    close(d->hb_fd);
    d->hb_fd = -1;
    free(d->nodes);
    d->nodes = NULL;
}
