/*
 * endpoint.c - the public face of librdp: opening an endpoint, the peer table, the
 * processing round (rdp_process), timers and statistics. The protocol itself lives in
 * conn.c (state machine), send.c, recv.c and io.c; see internal.h for the map.
 *
 * A round: read every waiting datagram (in batches), run due timers, send the ACKs the
 * round made necessary, and flush the transmit batch with one sendmmsg.
 */
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

uint64_t rdp_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t realtime_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void rdp_config_defaults(struct rdp_config *c)
{
    memset(c, 0, sizeof *c);
    c->mtu = 1500;
    c->rto_min_us = 2000;
    c->rto_max_us = 200000;
    c->rto_init_us = 20000;
    c->max_retrans = 10;
    c->ack_delay_us = 100;
    c->sndbuf = 4u << 20;
    c->rcvbuf = 4u << 20;
    c->sock_buf = 8u << 20;
    c->offload = 1;
    c->mac = RDP_MAC_AUTO;
    c->mac_impl = RDP_MAC_IMPL_BEST;
}

static bool config_ok(const struct rdp_config *c)
{
    return c->node_id < RDP_MAX_NODES && c->mtu >= RDP_MTU_MIN && c->mtu <= RDP_MTU_MAX &&
           c->rto_min_us >= RDP_RTO_MIN_US_MIN && c->rto_min_us <= c->rto_max_us &&
           c->max_retrans >= RDP_MAX_RETRANS_MIN && c->max_retrans <= RDP_MAX_RETRANS_MAX &&
           (!c->persist_max_us ||
            (c->persist_max_us >= c->rto_max_us && c->persist_max_us <= RDP_PERSIST_MAX_US)) &&
           c->sndbuf >= RDP_BUF_MIN && c->rcvbuf >= RDP_BUF_MIN &&
           (c->mac == RDP_MAC_CHACHA20POLY1305 || c->mac == RDP_MAC_AES256GCM ||
            c->mac == RDP_MAC_AUTO) &&
           (c->offload == 0 || c->offload == 1);
}

struct rdp_peer *rdp_peer_get(const rdp_t *ep, uint32_t id)
{
    return rdp_peers_get(&ep->peers, id);
}

const uint8_t *rdp_peer_hkey(const rdp_t *ep, const struct rdp_peer *p)
{
    return p->own_hkey ? p->hkey : ep->hkey;
}

void rdp_mark_dirty(rdp_t *ep, struct rdp_peer *p)
{
    if (p->dirty || ep->ndirty >= ep->nactive) return;
    p->dirty = true;
    ep->dirty[ep->ndirty++] = p;
}

bool rdp_addr_equal(const struct sockaddr_storage *a, const struct sockaddr *b)
{
    if (a->ss_family != b->sa_family) return false;
    if (a->ss_family == AF_INET) {
        const struct sockaddr_in *x = (const void *)a, *y = (const void *)b;
        return x->sin_port == y->sin_port && x->sin_addr.s_addr == y->sin_addr.s_addr;
    }
    if (a->ss_family == AF_INET6) {
        const struct sockaddr_in6 *x = (const void *)a, *y = (const void *)b;
        return x->sin6_port == y->sin6_port &&
               memcmp(&x->sin6_addr, &y->sin6_addr, sizeof x->sin6_addr) == 0;
    }
    return false;
}

void rdp_count_drop(rdp_t *ep, struct rdp_peer *p, enum rdp_drop_reason why)
{
    ep->st.drops[why]++;
    if (p) p->st.drops[why]++;
}

rdp_t *rdp_open(const struct rdp_config *cfg, const struct rdp_callbacks *cb)
{
    if (!cfg || !config_ok(cfg)) {
        errno = EINVAL;
        return NULL;
    }
    if (sodium_init() < 0) {
        errno = ENOSYS;
        return NULL;
    }
    rdp_t *ep = calloc(1, sizeof *ep);
    if (!ep) return NULL;
    /* ep->mac only chooses the implementation: packets are signed with the connections'
     * keys, the handshakes with hkey; the configured key is kept nowhere else */
    uint8_t any[RDP_KEY_BYTES];
    randombytes_buf(any, sizeof any);
    int r = rdp_mac_init_impl(&ep->mac, cfg->mac, any, cfg->mac_impl);
    sodium_memzero(any, sizeof any);
    if (r < 0) {
        free(ep);
        return NULL;
    }
    rdp_hs_key(cfg->key, ep->hkey);
    ep->cfg = *cfg;
    sodium_memzero(ep->cfg.key, sizeof ep->cfg.key);
    if (cb) ep->cb = *cb;
    ep->fd = -1;
    ep->rx_dirty = RDP_RX_BATCH;
    unsigned ipudp = cfg->bind.ss_family == AF_INET6 ? 48 : 28;
    ep->max_dgram = cfg->mtu - ipudp > RDP_MAX_DGRAM ? RDP_MAX_DGRAM : cfg->mtu - ipudp;
    ep->payload = ep->max_dgram - RDP_OVERHEAD;
    ep->incarnation = cfg->incarnation ? cfg->incarnation : realtime_ns();
    rdp_pool_init(&ep->pool, ep->max_dgram);
    ep->scratch = malloc(RDP_MAX_MSG);
    if (!ep->scratch || rdp_io_socket(ep) < 0) {
        int e = errno;
        rdp_close(ep);
        errno = e;
        return NULL;
    }
    return ep;
}

static void peer_free(rdp_t *ep, struct rdp_peer *p)
{
    rdp_conn_free(ep, p); /* its packets go back to the pool */
    sodium_memzero(p->hkey, sizeof p->hkey);
    free(p->tx);
    rdp_recvq_free(p);
    free(p);
}

void rdp_close(rdp_t *ep)
{
    if (!ep) return;
    rdp_io_flush(ep);
    while (ep->nheld) rdp_io_flush(ep); /* the injector's held-back packets */
    for (uint32_t i = 0; i < ep->nactive; i++) {
        struct rdp_peer *p = ep->active[i];
        peer_free(ep, p);
    }
    for (unsigned i = 0; i < RDP_RX_BATCH; i++) free(ep->rxbuf[i]);
    free(ep->grobuf);
    if (ep->fd >= 0) close(ep->fd);
    rdp_pool_destroy(&ep->pool);
    rdp_mac_free(&ep->mac);
    sodium_memzero(ep->hkey, sizeof ep->hkey);
    rdp_peers_free(&ep->peers);
    free(ep->active);
    free(ep->dirty);
    free(ep->scratch);
    free(ep);
}

int rdp_fd(const rdp_t *ep)
{
    return ep->fd;
}

int rdp_add_peer(rdp_t *ep, uint32_t node, const struct sockaddr *sa, socklen_t len)
{
    return rdp_add_peer_key(ep, node, sa, len, NULL);
}

int rdp_add_peer_key(rdp_t *ep, uint32_t node, const struct sockaddr *sa, socklen_t len,
                     const unsigned char *key)
{
    if (!sa || len > sizeof(struct sockaddr_storage) || sa->sa_family != ep->family ||
        len <
            (sa->sa_family == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6))) {
        errno = EINVAL;
        return -1;
    }
    if (rdp_peer_get(ep, node)) {
        errno = EEXIST;
        return -1;
    }
    if (ep->nactive == ep->active_cap) {
        uint32_t n = ep->active_cap ? ep->active_cap * 2 : 16;
        struct rdp_peer **na = realloc(ep->active, n * sizeof *na);
        struct rdp_peer **nd = realloc(ep->dirty, n * sizeof *nd);
        if (na) ep->active = na;
        if (nd) ep->dirty = nd;
        if (!na || !nd) return -1;
        ep->active_cap = n;
    }
    struct rdp_peer *p = calloc(1, sizeof *p);
    if (!p) return -1;
    p->node = node;
    if (key) {
        rdp_hs_key(key, p->hkey);
        p->own_hkey = true;
    }
    memcpy(&p->addr, sa, len);
    p->addrlen = len;
    p->payload = ep->payload;
    rdp_rtt_init(&p->rtt, ep->cfg.rto_init_us, ep->cfg.rto_min_us, ep->cfg.rto_max_us);
    if (rdp_sendq_init(ep, p) < 0 || rdp_recvq_init(ep, p) < 0) {
        free(p->tx);
        free(p->rx);
        free(p);
        errno = ENOMEM;
        return -1;
    }
    rdp_sendq_reset(ep, p, 0);
    if (rdp_peers_put(&ep->peers, p) < 0) {
        peer_free(ep, p);
        return -1;
    }
    ep->active[ep->nactive++] = p;
    return 0;
}

int rdp_disconnect(rdp_t *ep, uint32_t node)
{
    struct rdp_peer *p = rdp_peer_get(ep, node);
    if (!p) {
        errno = ENOENT;
        return -1;
    }
    if (!ep->in_process) ep->now = rdp_now_ns();
    rdp_conn_lost(ep, p, RDP_LOST_CLOSED);
    return 0;
}

int rdp_remove_peer(rdp_t *ep, uint32_t node)
{
    if (rdp_disconnect(ep, node) < 0) return -1;
    struct rdp_peer *p = rdp_peer_get(ep, node);
    rdp_io_flush(ep); /* nothing in the batch may point at the peer's address */
    rdp_io_forget_peer(ep, p);
    for (uint32_t i = 0; i < ep->ndirty; i++)
        if (ep->dirty[i] == p) ep->dirty[i] = ep->dirty[--ep->ndirty];
    for (uint32_t i = 0; i < ep->nactive; i++)
        if (ep->active[i] == p) ep->active[i] = ep->active[--ep->nactive];
    rdp_peers_del(&ep->peers, node);
    peer_free(ep, p);
    return 0;
}

uint64_t rdp_next_deadline(const rdp_t *ep)
{
    uint64_t d = UINT64_MAX;
    for (uint32_t i = 0; i < ep->nactive; i++) {
        const struct rdp_peer *p = ep->active[i];
        if (p->rto_at && p->rto_at < d) d = p->rto_at;
        if (p->ack_at && p->ack_at < d) d = p->ack_at;
        if (p->rack_at && p->rack_at < d) d = p->rack_at;
    }
    return d;
}

static void run_timers(rdp_t *ep)
{
    for (uint32_t i = 0; i < ep->nactive; i++) {
        struct rdp_peer *p = ep->active[i];
        if (p->ack_at && p->ack_at <= ep->now) {
            p->ack_at = 0;
            if (p->state == RDP_ESTABLISHED && p->ack_pending) {
                p->interactive = false; /* no answer came to carry it */
                rdp_send_ctl(ep, p, RDP_T_ACK);
            }
        }
        if (p->rack_at && p->rack_at <= ep->now) rdp_detect_losses(ep, p);
        if (p->rto_at && p->rto_at <= ep->now) rdp_on_rto(ep, p);
    }
}

/* Acknowledge what the batch made necessary and send everything queued. */
static void end_batch(rdp_t *ep)
{
    for (uint32_t i = 0; i < ep->ndirty; i++) {
        struct rdp_peer *p = ep->dirty[i];
        p->dirty = false;
        rdp_flush_ack(ep, p);
    }
    ep->ndirty = 0;
    rdp_io_flush(ep);
}

void rdp_flush(rdp_t *ep)
{
    ep->now = rdp_now_ns();
    for (uint32_t i = 0; i < ep->nactive; i++) {
        struct rdp_peer *p = ep->active[i];
        if (p->state != RDP_ESTABLISHED || !p->ack_pending) continue;
        p->ack_now = true;
        rdp_mark_dirty(ep, p);
    }
    end_batch(ep); /* inside rdp_io_receive too: it touches only what is sent */
}

int rdp_process(rdp_t *ep)
{
    return rdp_process_from(ep, 0);
}

/* rdp_process after a batch of n datagrams already read into the slots (rdp_rx_wait) */
int rdp_process_from(rdp_t *ep, int n)
{
    ep->in_process = true;
    int r = 0, err = 0;
    /* ACK after every batch, not after draining the socket: the sender's window must not
     * empty while the receiver reads */
    ep->now = rdp_now_ns(); /* one clock read for a round that reads one batch */
    for (int batch = 0; batch < 16; batch++) {
        if (batch) ep->now = rdp_now_ns();
        if (!batch && n > 0) {
            rdp_io_handle(ep, n); /* read by rdp_rx_wait */
            r = n;
        } else {
            r = rdp_io_receive(ep);
        }
        err = errno;
        if (r <= 0) break;
        end_batch(ep);
        if (r < RDP_RX_BATCH) break;
    }
    run_timers(ep);
    end_batch(ep);
    if (ep->tx_error) {
        ep->tx_error = false;
        rdp_io_errqueue(ep);
        rdp_io_flush(ep);
    }
    ep->in_process = false;
    if (r < 0) {
        errno = err;
        return -1;
    }
    return 0;
}

int rdp_peer_stats(const rdp_t *ep, uint32_t node, struct rdp_peer_stats *st)
{
    const struct rdp_peer *p = rdp_peer_get(ep, node);
    if (!p) {
        errno = ENOENT;
        return -1;
    }
    *st = p->st;
    st->state = p->state;
    st->srtt_us = p->rtt.srtt_us;
    st->rttvar_us = p->rtt.rttvar_us;
    st->rto_us = p->rtt.rto_us;
    st->cwnd = p->cwnd;
    st->peer_wnd = p->peer_wnd;
    st->inflight = rdp_inflight(p);
    st->queued = p->queued;
    st->interactive = p->interactive;
    st->stalled = p->stalled;
    st->mac = p->mac_tx;
    st->payload = p->payload;
    st->rcv_wnd = rdp_rcv_wnd(p);
    st->held = p->rx_held;
    return 0;
}

void rdp_stats(const rdp_t *ep, struct rdp_stats *st)
{
    *st = ep->st;
    st->inj_drop = ep->inj.drop;
    st->inj_dup = ep->inj.dup;
    st->inj_reorder = ep->inj.reorder;
    st->inj_corrupt = ep->inj.corrupt;
}

static const char *const mac_alg_names[] = {
    [RDP_MAC_CHACHA20POLY1305] = "chacha20poly1305",
    [RDP_MAC_AES256GCM] = "aes256gcm",
    [RDP_MAC_AUTO] = "auto",
};
static const char *const mac_impl_names[] = {
    [RDP_MAC_IMPL_BEST] = "best",
    [RDP_MAC_IMPL_PORTABLE] = "portable",
    [RDP_MAC_IMPL_IPSECMB] = "ipsec-mb",
};

/* index of name in names[n], or -1 */
static int name_index(const char *name, const char *const *names, int n)
{
    for (int i = 0; name && i < n; i++)
        if (strcmp(name, names[i]) == 0) return i;
    return -1;
}

#define NNAMES(a) ((int)(sizeof a / sizeof a[0]))

const char *rdp_mac_alg_name(enum rdp_mac_alg alg)
{
    return (int)alg >= 0 && (int)alg < NNAMES(mac_alg_names) ? mac_alg_names[alg] : "unknown";
}

int rdp_mac_alg_parse(const char *name, enum rdp_mac_alg *alg)
{
    int i = name_index(name, mac_alg_names, NNAMES(mac_alg_names));
    if (i >= 0) *alg = (enum rdp_mac_alg)i;
    return i >= 0 ? 0 : -1;
}

const char *rdp_mac_impl_choice_name(enum rdp_mac_impl impl)
{
    return (int)impl >= 0 && (int)impl < NNAMES(mac_impl_names) ? mac_impl_names[impl] : "unknown";
}

int rdp_mac_impl_parse(const char *name, enum rdp_mac_impl *impl)
{
    int i = name_index(name, mac_impl_names, NNAMES(mac_impl_names));
    if (i >= 0) *impl = (enum rdp_mac_impl)i;
    return i >= 0 ? 0 : -1;
}

const char *rdp_mac_impl(const rdp_t *ep)
{
    return rdp_mac_impl_name(&ep->mac);
}

int rdp_set_faults(rdp_t *ep, const struct rdp_faults *f)
{
    if (!f || f->drop < 0 || f->drop > 1 || f->dup < 0 || f->dup > 1 || f->reorder < 0 ||
        f->reorder > 1 || f->corrupt < 0 || f->corrupt > 1 || (f->dir & ~RDP_FAULT_BOTH)) {
        errno = EINVAL;
        return -1;
    }
    rdp_injector_set(&ep->inj, f);
    return 0;
}

const char *rdp_drop_reason_name(enum rdp_drop_reason r)
{
    static const char *const names[RDP_DROP__COUNT] = {
        [RDP_DROP_SHORT] = "short",         [RDP_DROP_VERSION] = "version",
        [RDP_DROP_MALFORMED] = "malformed", [RDP_DROP_UNKNOWN] = "unknown-peer",
        [RDP_DROP_ADDRESS] = "address",     [RDP_DROP_MAC] = "bad-mac",
        [RDP_DROP_REPLAY] = "replay",       [RDP_DROP_STALE] = "stale-connection",
        [RDP_DROP_DUPLICATE] = "duplicate", [RDP_DROP_WINDOW] = "beyond-window",
        [RDP_DROP_NOBUF] = "no-buffer",
    };
    return (unsigned)r < RDP_DROP__COUNT ? names[r] : "?";
}

const char *rdp_lost_reason_name(enum rdp_lost_reason r)
{
    switch (r) {
    case RDP_LOST_TIMEOUT:
        return "timeout";
    case RDP_LOST_UNREACH:
        return "unreachable";
    case RDP_LOST_RESTART:
        return "peer restarted";
    case RDP_LOST_CLOSED:
        return "closed";
    }
    return "?";
}

int rdp_set_endpoint(rdp_t *ep, uint32_t node, uint16_t endpoint)
{
    if (ep->peers.n) {
        errno = EBUSY;
        return -1;
    }
    ep->cfg.node_id = node;
    ep->cfg.endpoint = endpoint;
    return 0;
}

int rdp_move_fd(rdp_t *ep, int min)
{
    int fd = fcntl(ep->fd, F_DUPFD_CLOEXEC, min);
    if (fd < 0) return -1;
    close(ep->fd);
    ep->fd = fd;
    return 0;
}
