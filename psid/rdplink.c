/*
 * rdplink.c - this daemon's RDP endpoint: every other configured node is a peer. Incoming
 * messages are decoded (psmsg) and dispatched by type; RDP's losses feed membership (its
 * retransmissions are raised to outlast heartbeat.down_grace_ms: retrans_for_grace). RDP's
 * timers run from the event loop's timer source. The endpoint's counters and each
 * connection's are encoded here for `psstat rdp` (PSM_RDP_REPLY).
 */
#include "daemon.h"
#include "log.h"
#include "psmsg.h"

#include <errno.h>
#include <string.h>
#include <sys/epoll.h>

static void on_recv(void *ctx, uint32_t node, const void *buf, size_t len)
{
    struct psid *d = ctx;
    struct psmsg m;
    if (psmsg_parse(buf, len, &m) < 0) {
        log_warn("malformed message from node %u dropped (%zu bytes): %s", node, len,
                 strerror(errno));
        return;
    }
    psid_dispatch(d, node, &m);
}

static void on_can_send(void *ctx, uint32_t node)
{
    send_can_continue(ctx, node);
}

static void on_connected(void *ctx, uint32_t node)
{
    (void)ctx;
    log_debug("rdp: connected to node %u", node);
}

static void on_lost(void *ctx, uint32_t node, enum rdp_lost_reason why)
{
    struct psid *d = ctx;
    log_info("rdp: connection to node %u lost: %s", node, rdp_lost_reason_name(why));
    membership_rdp_lost(d, node, why);
}

static void on_undeliverable(void *ctx, uint32_t node, const void *msg, size_t len)
{
    (void)ctx;
    (void)msg;
    log_debug("rdp: %zu-byte message to node %u undeliverable", len, node);
}

static void process(void *ctx)
{
    struct psid *d = ctx;
    if (rdp_process(d->rdp) < 0) log_err("rdp: %s", strerror(errno));
}

static void on_readable(void *ctx, uint32_t events)
{
    (void)events;
    process(ctx);
}

static uint64_t deadline(void *ctx)
{
    struct psid *d = ctx;
    return rdp_next_deadline(d->rdp);
}

/* RDP gives up on a silent peer after max_retrans retransmissions, and a connection given
 * up loses its messages, so the node would be down. A node is only unreachable until
 * heartbeat.down_grace_ms has passed: RDP must keep retransmitting (every rto_max_us, once
 * backed off) at least that long after the node became unreachable, which is the
 * heartbeats' bound or RDP's configured one (membership.c rdp_silent) after it fell silent,
 * plus two more retransmissions for the heartbeat tick's granularity. */
static void retrans_for_grace(struct psid *d, struct rdp_config *rc)
{
    d->rdp_silent_ns = rdp_lost_bound_us(rc) * 1000;
    uint64_t hb_us = (uint64_t)d->conf.hb_interval_ms * (d->conf.hb_dead_limit + 1) * 1000;
    uint64_t silent_us = rdp_lost_bound_us(rc) + (uint64_t)d->conf.hb_interval_ms * 1000;
    uint64_t need_us =
        (uint64_t)d->conf.hb_down_grace_ms * 1000 + (hb_us > silent_us ? hb_us : silent_us);
    uint64_t n = (need_us + rc->rto_max_us - 1) / rc->rto_max_us + 2;
    for (uint64_t rto = rc->rto_min_us; rto < rc->rto_max_us; rto *= 2)
        n++; /* the backoff's expiries below rto_max_us */
    if (n <= rc->max_retrans) return;
    if (n > RDP_MAX_RETRANS_MAX) {
        n = RDP_MAX_RETRANS_MAX;
        log_warn("rdp: even %u retransmissions of %u us do not cover heartbeat.down_grace_ms "
                 "(%u ms): RDP may give up on a node (down) before its grace is over",
                 RDP_MAX_RETRANS_MAX, rc->rto_max_us, d->conf.hb_down_grace_ms);
    }
    log_info("rdp: %llu retransmissions before giving up on a node (max_retrans %u), to cover "
             "down_grace_ms",
             (unsigned long long)n, rc->max_retrans);
    rc->max_retrans = (unsigned)n;
}

int rdplink_start(struct psid *d)
{
    struct rdp_config rc;
    if (psconf_rdp_config(&d->conf, d->self->id, &rc) < 0) return -1;
    rc.incarnation = d->incarnation; /* one incarnation for the node, heartbeats and RDP */
    retrans_for_grace(d, &rc);
    struct rdp_callbacks cb = {.ctx = d,
                               .recv = on_recv,
                               .connected = on_connected,
                               .lost = on_lost,
                               .undeliverable = on_undeliverable,
                               .can_send = on_can_send};
    d->rdp = rdp_open(&rc, &cb);
    explicit_bzero(rc.key, sizeof rc.key); /* RDP keeps only what it derived */
    if (!d->rdp) {
        log_err("rdp on %s:%u: %s", d->self->addr_str, d->conf.rdp_port, strerror(errno));
        return -1;
    }
    for (size_t i = 0; i < d->conf.nnodes; i++) {
        const struct psconf_node *n = &d->conf.nodes[i];
        if (n == d->self) continue;
        struct sockaddr_storage a = n->addr;
        ((struct sockaddr_in *)&a)->sin_port = htons((uint16_t)d->conf.rdp_port);
        if (rdp_add_peer(d->rdp, n->id, (struct sockaddr *)&a, n->addrlen) < 0) {
            log_err("rdp peer %u: %s", n->id, strerror(errno));
            return -1;
        }
    }
    if (loop_fd(d->loop, rdp_fd(d->rdp), EPOLLIN, on_readable, d) < 0) return -1;
    loop_set_timer_source(d->loop, deadline, process, d);
    return 0;
}

void rdplink_stop(struct psid *d)
{
    if (!d->rdp) return;
    loop_set_timer_source(d->loop, NULL, NULL, NULL);
    loop_fd_del(d->loop, rdp_fd(d->rdp));
    rdp_close(d->rdp);
    d->rdp = NULL;
}

/* PSF_DROP records for the reasons with packets dropped. */
static void put_drops(struct psmsg_buf *b, const uint64_t *drops)
{
    for (int r = 0; r < RDP_DROP__COUNT; r++) {
        if (!drops[r]) continue;
        psmsg_record_begin(b, PSF_DROP);
        psmsg_put_str(b, PSF_TEXT, rdp_drop_reason_name((enum rdp_drop_reason)r));
        psmsg_put_u64(b, PSF_N, drops[r]);
        psmsg_record_end(b);
    }
}

static uint32_t peer_state(enum rdp_conn_state s)
{
    return s == RDP_ESTABLISHED ? PSRDP_ESTABLISHED
           : s == RDP_SYN_SENT  ? PSRDP_CONNECTING
                                : PSRDP_CLOSED;
}

void rdplink_put_stats(const struct psid *d, struct psmsg_buf *b)
{
    struct rdp_stats es;
    rdp_stats(d->rdp, &es);
    psmsg_put_str(b, PSF_MAC_IMPL, rdp_mac_impl(d->rdp));
    psmsg_put_u64(b, PSF_PKTS_SENT, es.pkts_sent);
    psmsg_put_u64(b, PSF_PKTS_RECV, es.pkts_recv);
    psmsg_put_u64(b, PSF_RETRANSMITS, es.retransmits);
    put_drops(b, es.drops); /* all of them: also those of no connection */
    for (size_t i = 0; i < d->conf.nnodes; i++) {
        const struct psconf_node *n = &d->conf.nodes[i];
        struct rdp_peer_stats ps;
        if (n == d->self || rdp_peer_stats(d->rdp, n->id, &ps) < 0) continue;
        psmsg_record_begin(b, PSF_PEER);
        psmsg_put_u32(b, PSF_NODE_ID, n->id);
        psmsg_put_u32(b, PSF_STATE, peer_state(ps.state));
        psmsg_put_u64(b, PSF_PKTS_SENT, ps.pkts_sent);
        psmsg_put_u64(b, PSF_PKTS_RECV, ps.pkts_recv);
        psmsg_put_u64(b, PSF_MSGS_SENT, ps.msgs_sent);
        psmsg_put_u64(b, PSF_MSGS_RECV, ps.msgs_recv);
        psmsg_put_u64(b, PSF_RETRANSMITS, ps.retransmits);
        psmsg_put_u64(b, PSF_TIMEOUTS, ps.timeouts);
        psmsg_put_u64(b, PSF_OUT_OF_ORDER, ps.out_of_order);
        psmsg_put_u64(b, PSF_CONNECTS, ps.connects);
        psmsg_put_u64(b, PSF_LOSSES, ps.losses);
        psmsg_put_u32(b, PSF_SRTT_US, ps.srtt_us);
        psmsg_put_u32(b, PSF_RTTVAR_US, ps.rttvar_us);
        psmsg_put_u32(b, PSF_RTO_US, ps.rto_us);
        psmsg_put_u32(b, PSF_CWND, ps.cwnd);
        psmsg_put_u32(b, PSF_PEER_WND, ps.peer_wnd);
        psmsg_put_u32(b, PSF_RCV_WND, ps.rcv_wnd);
        psmsg_put_u32(b, PSF_INFLIGHT, ps.inflight);
        psmsg_put_u64(b, PSF_QUEUED, ps.queued);
        psmsg_put_u32(b, PSF_PAYLOAD, ps.payload);
        if (ps.state == RDP_ESTABLISHED) psmsg_put_str(b, PSF_MAC, rdp_mac_alg_name(ps.mac));
        put_drops(b, ps.drops);
        psmsg_record_end(b);
    }
}
