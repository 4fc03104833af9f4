/*
 * conn.c - the RDP connection state machine: where a received packet is checked (decode,
 * peer, address, replay, MAC) and dispatched, and where connections open, restart and die.
 *
 * States per peer: CLOSED -> SYN_SENT -> ESTABLISHED, and back to CLOSED on loss.
 *  - Each side picks its own random connection id and initial sequence number; a SYN or
 *    SYNACK tells the other side both. A side is ESTABLISHED once it knows the peer's.
 *    Simultaneous SYNs need no tie-break: each answers the other's SYN with a SYNACK.
 *  - Data and ACKs must carry both connection ids of the current connection; anything else
 *    is stale. A DATA/ACK for a connection this side does not have is answered with an RST
 *    (rate-limited), which tells a peer that we restarted.
 *  - A SYN with a new connection id from an incarnation not older than the known one means
 *    the peer restarted (or gave up on us): the old connection is reported lost, its
 *    pending messages undeliverable, and the new one is set up. Nothing of one connection
 *    can be delivered on the other: ids, sequence numbers and reassembly are per connection.
 *  - Every packet is authenticated before it can change state, and packet numbers are
 *    checked against replay, so a forged or replayed SYN cannot tear down a connection.
 */
#include "internal.h"

#include <sodium.h>
#include <string.h>

static uint32_t random_nonzero(void)
{
    uint32_t v;
    do v = randombytes_random();
    while (v == 0);
    return v;
}

static void connected(rdp_t *ep, struct rdp_peer *p)
{
    p->state = RDP_ESTABLISHED;
    p->st.connects++;
    if (ep->cb.connected) ep->cb.connected(ep->cb.ctx, p->node);
}

/* Fresh local half of a connection: new id, new initial sequence number, empty queues. */
static void conn_init(rdp_t *ep, struct rdp_peer *p)
{
    p->my_conn = random_nonzero();
    p->my_iseq = randombytes_random();
    p->peer_conn = 0;
    p->syn_sends = 0;
    p->syn_sent_ns = 0;
    p->rto_fails = 0;
    p->mac_tx = RDP_MAC_CHACHA20POLY1305;
    rdp_sendq_reset(ep, p, p->my_iseq);
}

/* A control packet carrying the given connection ids (an RST answers on ids that are not
 * the current connection's). */
static void send_ctl_ids(rdp_t *ep, struct rdp_peer *p, uint8_t type, uint32_t src_conn,
                         uint32_t dst_conn)
{
    struct rdp_buf *b = rdp_pool_get(&ep->pool);
    if (!b) return;
    struct rdp_hdr h = {
        .version = RDP_VERSION,
        .type = type,
        .src_node = ep->cfg.node_id,
        .dst_node = p->node,
        .src_conn = src_conn,
        .dst_conn = dst_conn,
        .seq = type == RDP_T_ACK ? p->snd_tx : p->my_iseq,
        .ack = p->rcv_nxt,
        .wnd = rdp_rcv_wnd(p),
    };
    size_t max = p->payload; /* the peer's datagrams may be smaller than ours */
    if (type == RDP_T_ACK) {
        h.len = (uint16_t)rdp_sack_build(p, b->data + RDP_HDR_LEN, max);
        rdp_ack_sent(p);
    } else {
        struct rdp_hs hs = {.incarnation = ep->incarnation,
                            .max_payload = ep->payload,
                            .macs = RDP_MACS_CHACHA | (ep->mac.aes ? RDP_MACS_AES : 0)};
        rdp_hs_encode(b->data + RDP_HDR_LEN, &hs);
        h.len = RDP_HS_LEN;
    }
    rdp_hdr_encode(b->data, &h);
    b->len = RDP_HDR_LEN + h.len;
    rdp_io_sign_queue(ep, p, b);
    rdp_pool_put(&ep->pool, b); /* returns to the pool once sent */
}

void rdp_send_ctl(rdp_t *ep, struct rdp_peer *p, uint8_t type)
{
    send_ctl_ids(ep, p, type, p->my_conn, type == RDP_T_SYN ? 0 : p->peer_conn);
}

static void send_syn(rdp_t *ep, struct rdp_peer *p)
{
    if (!p->syn_sends++) p->syn_sent_ns = ep->now;
    rdp_send_ctl(ep, p, RDP_T_SYN);
    p->rto_at = ep->now + (uint64_t)p->rtt.rto_us * 1000;
}

void rdp_conn_open(rdp_t *ep, struct rdp_peer *p)
{
    conn_init(ep, p);
    p->state = RDP_SYN_SENT;
    send_syn(ep, p);
}

/* Report each pending message (a chain of its packets, FIRST to LAST) undeliverable. */
static void report_undeliverable(rdp_t *ep, struct rdp_peer *p, struct rdp_buf *chain)
{
    while (chain) {
        struct rdp_buf *last;
        size_t len = rdp_sendq_join(ep, chain, &last);
        struct rdp_buf *rest = last->next;
        if ((be_get16(last->data + 2) & RDP_F_LAST) && ep->cb.undeliverable && len <= RDP_MAX_MSG)
            ep->cb.undeliverable(ep->cb.ctx, p->node, ep->scratch, len);
        last->next = NULL;
        rdp_pool_put_chain(&ep->pool, chain);
        chain = rest;
    }
}

/* Packets to the peer carry at most what both sides accept: a peer with a smaller MTU gets
 * smaller packets, and messages queued before its handshake are cut again. */
static void fit_payload(rdp_t *ep, struct rdp_peer *p, uint32_t peer_max)
{
    uint32_t payload = peer_max < ep->payload ? peer_max : ep->payload;
    bool smaller = payload < p->payload;
    p->payload = payload;
    if (ep->cfg.offload && !ep->gro && rdp_io_coalescable(p->payload))
        ep->want_gro = true; /* read its packets coalesced too (from the next read on) */
    if (smaller) report_undeliverable(ep, p, rdp_sendq_recut(ep, p));
}

/* The peer's side of the connection, from its SYN or SYNACK. */
static void learn_peer(rdp_t *ep, struct rdp_peer *p, const struct rdp_hdr *h,
                       const struct rdp_hs *hs)
{
    fit_payload(ep, p, hs->max_payload);
    p->peer_conn = h->src_conn;
    p->peer_inc = hs->incarnation;
    p->peer_inc_known = true;
    p->peer_wnd = h->wnd;
    /* the fastest MAC both sides verify */
    p->mac_tx =
        ep->mac.aes && (hs->macs & RDP_MACS_AES) ? RDP_MAC_AES256GCM : RDP_MAC_CHACHA20POLY1305;
    rdp_recvq_reset(ep, p, h->seq);
}

/* Free everything a connection holds and return the queued messages, chained. */
static struct rdp_buf *conn_teardown(rdp_t *ep, struct rdp_peer *p)
{
    struct rdp_buf *pending = rdp_sendq_detach(p);
    rdp_recvq_reset(ep, p, 0);
    p->state = RDP_CLOSED;
    p->rto_at = p->ack_at = p->rack_at = 0;
    p->ack_pending = 0;
    p->ack_now = false;
    p->peer_conn = 0;
    return pending;
}

void rdp_conn_lost(rdp_t *ep, struct rdp_peer *p, enum rdp_lost_reason why)
{
    if (p->state == RDP_CLOSED) return;
    struct rdp_buf *pending = conn_teardown(ep, p);
    p->st.losses++;
    if (ep->cb.lost) ep->cb.lost(ep->cb.ctx, p->node, why);
    report_undeliverable(ep, p, pending);
    /* the loss emptied the queue: a sender that met EAGAIN may go on (a later send opens
     * a new connection) */
    if (p->want_can_send && p->queued <= ep->cfg.sndbuf / 2) {
        p->want_can_send = false;
        if (ep->cb.can_send) ep->cb.can_send(ep->cb.ctx, p->node);
    }
}

void rdp_conn_free(rdp_t *ep, struct rdp_peer *p)
{
    rdp_pool_put_chain(&ep->pool, conn_teardown(ep, p));
}

static void handle_syn(rdp_t *ep, struct rdp_peer *p, const struct rdp_hdr *h,
                       const struct rdp_hs *hs)
{
    if (p->peer_inc_known && hs->incarnation < p->peer_inc) {
        rdp_count_drop(ep, p, RDP_DROP_STALE); /* an older incarnation's SYN */
        return;
    }
    if (p->state == RDP_ESTABLISHED) {
        if (h->src_conn == p->peer_conn) { /* our SYNACK was lost: send it again */
            rdp_send_ctl(ep, p, RDP_T_SYNACK);
            return;
        }
        /* the peer restarted, or dropped the connection and opened a new one */
        rdp_conn_lost(ep, p, RDP_LOST_RESTART);
    }
    if (p->state == RDP_CLOSED) conn_init(ep, p);
    /* CLOSED: a new connection from the peer. SYN_SENT: both opened at once; our SYN stays
     * valid (same id and initial sequence) and the peer will accept it the same way. */
    learn_peer(ep, p, h, hs);
    if (p->syn_sends == 1 && p->syn_sent_ns)
        rdp_rtt_sample(&p->rtt, (uint32_t)((ep->now - p->syn_sent_ns) / 1000));
    p->rto_at = 0;
    rdp_send_ctl(ep, p, RDP_T_SYNACK);
    connected(ep, p);
    rdp_try_transmit(ep, p);
}

static void handle_synack(rdp_t *ep, struct rdp_peer *p, const struct rdp_hdr *h,
                          const struct rdp_hs *hs)
{
    if (p->state == RDP_ESTABLISHED && h->src_conn == p->peer_conn && h->dst_conn == p->my_conn)
        return; /* duplicate, or the answer to our SYN in a simultaneous open */
    if (p->state != RDP_SYN_SENT || h->dst_conn != p->my_conn || h->ack != p->my_iseq ||
        (p->peer_inc_known && hs->incarnation < p->peer_inc)) {
        rdp_count_drop(ep, p, RDP_DROP_STALE);
        return;
    }
    learn_peer(ep, p, h, hs);
    p->rto_fails = 0;
    if (p->syn_sends == 1) rdp_rtt_sample(&p->rtt, (uint32_t)((ep->now - p->syn_sent_ns) / 1000));
    p->rto_at = 0;
    connected(ep, p);
    rdp_try_transmit(ep, p);
}

static void handle_rst(rdp_t *ep, struct rdp_peer *p, const struct rdp_hdr *h,
                       const struct rdp_hs *hs)
{
    if (p->state != RDP_ESTABLISHED || h->dst_conn != p->my_conn ||
        (p->peer_inc_known && hs->incarnation < p->peer_inc)) {
        rdp_count_drop(ep, p, RDP_DROP_STALE);
        return;
    }
    /* the peer does not know our connection: it restarted or gave up on us */
    p->peer_inc = hs->incarnation;
    rdp_conn_lost(ep, p, RDP_LOST_RESTART);
}

/* A DATA or ACK that belongs to no connection of ours. */
static void handle_stale(rdp_t *ep, struct rdp_peer *p, const struct rdp_hdr *h)
{
    rdp_count_drop(ep, p, RDP_DROP_STALE);
    if (p->state == RDP_SYN_SENT && h->dst_conn == p->my_conn)
        return; /* data that overtook the SYNACK: it will come again */
    if (p->state == RDP_ESTABLISHED && h->dst_conn == p->my_conn)
        return; /* ours, but from an older peer connection */
    if (ep->now - p->rst_sent_ns < RDP_RST_GAP_NS) return;
    p->rst_sent_ns = ep->now;
    /* answer on the sender's connection id so that it can match the RST */
    send_ctl_ids(ep, p, RDP_T_RST, p->my_conn ? p->my_conn : random_nonzero(), h->src_conn);
}

void rdp_handle_packet(rdp_t *ep, struct rdp_buf **bufp, const struct sockaddr *from)
{
    struct rdp_buf *b = *bufp;
    struct rdp_hdr h;
    enum rdp_drop_reason why;
    if (!rdp_hdr_decode(b->data, b->len, &h, &why)) {
        rdp_count_drop(ep, NULL, why);
        return;
    }
    struct rdp_peer *p = rdp_peer_get(ep, h.src_node);
    if (h.dst_node != ep->cfg.node_id || !p) {
        rdp_count_drop(ep, NULL, RDP_DROP_UNKNOWN);
        return;
    }
    if (!rdp_addr_equal(&p->addr, from)) {
        rdp_count_drop(ep, p, RDP_DROP_ADDRESS);
        return;
    }
    if (!rdp_replay_check(&p->replay, h.pn)) {
        rdp_count_drop(ep, p, RDP_DROP_REPLAY);
        return;
    }
    size_t body = RDP_HDR_LEN + h.len;
    if (!rdp_mac_verify_ctx(&ep->mac, (enum rdp_mac_alg)h.mac, h.src_node, h.dst_node, h.pn,
                            b->data, body)) {
        rdp_count_drop(ep, p, RDP_DROP_MAC);
        return;
    }
    rdp_replay_update(&p->replay, h.pn);
    p->st.pkts_recv++;

    const uint8_t *payload = b->data + RDP_HDR_LEN;
    if (h.type == RDP_T_SYN || h.type == RDP_T_SYNACK || h.type == RDP_T_RST) {
        struct rdp_hs hs;
        rdp_hs_decode(payload, &hs);
        if (h.type == RDP_T_SYN)
            handle_syn(ep, p, &h, &hs);
        else if (h.type == RDP_T_SYNACK)
            handle_synack(ep, p, &h, &hs);
        else
            handle_rst(ep, p, &h, &hs);
        rdp_mark_dirty(ep, p);
        return;
    }
    if (p->state != RDP_ESTABLISHED || h.dst_conn != p->my_conn || h.src_conn != p->peer_conn) {
        handle_stale(ep, p, &h);
        return;
    }
    if (h.type == RDP_T_ACK) {
        rdp_handle_ack(ep, p, h.ack, h.wnd, payload, h.len);
    } else {
        rdp_handle_ack(ep, p, h.ack, h.wnd, NULL, 0);
        if (p->state == RDP_ESTABLISHED) rdp_handle_data(ep, p, &h, bufp);
    }
    rdp_mark_dirty(ep, p);
}
