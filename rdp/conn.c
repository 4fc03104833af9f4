/*
 * conn.c - the RDP connection state machine: where a received packet is checked (decode,
 * peer, address, MAC, replay) and dispatched, and where connections open, restart and die.
 *
 * The handshake is three-way, and every connection has keys of its own (auth.h):
 *  - SYN: the opener's half (random connection id, initial sequence number, 32 random
 *    bytes, incarnation, payload and MACs it accepts), under the handshake key.
 *  - SYNACK: the answerer's half, naming the opener's connection id and initial sequence
 *    number. Both sides now derive the connection's two direction keys from both halves.
 *  - The opener, on a SYNACK that answers its own SYN, is ESTABLISHED and sends an ACK at
 *    once under the new key: the third message. The answerer is ESTABLISHED only when a
 *    packet under the new key arrives, so a recorded SYN replayed later (after a restart,
 *    say) gets a SYNACK and nothing more: no connection is reported, none is torn down.
 *  - A side that answered a SYN (SYN_SENT with peer_known) retransmits a SYN of its own with
 *    the same half until that happens; the other side answers it with a SYNACK like any SYN
 *    whose connection it already has, so a lost third message costs a round trip.
 *  - Simultaneous SYNs: each side answers the other's SYN with its own half (the same as in
 *    its SYN), so both derive the same keys; the SYNACKs establish both.
 *  - A SYN while ESTABLISHED with another connection id: the peer restarted (or the SYN is a
 *    replay). The offer is kept aside (struct rdp_cand) and answered; the old connection
 *    goes on until a packet under the offer's keys arrives, then it is reported lost
 *    (restart), its pending messages undeliverable, and the offer takes its place.
 *  - Data and ACKs must carry both connection ids of the current connection and verify
 *    under its key; anything else is stale. A DATA/ACK for a connection this side does not
 *    have, while we have none with the peer, makes us open one (rate-limited): the peer
 *    takes it as its restart once the handshake completes. Nothing is answered to stale
 *    packets otherwise, since their MAC cannot be checked.
 * Incarnations are carried for information only: no decision depends on a clock, so a node
 * whose clock stepped back rejoins at once.
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
    p->peer_known = false;
    p->st.connects++;
    if (ep->cb.connected) ep->cb.connected(ep->cb.ctx, p->node);
}

static void keys_free(struct rdp_peer *p)
{
    if (p->keyed) {
        rdp_mac_free(&p->key_tx);
        rdp_mac_free(&p->key_rx);
    }
    p->keyed = false;
    p->st.key_tx_id = p->st.key_rx_id = 0;
}

static void cand_free(struct rdp_peer *p)
{
    if (!p->cand) return;
    rdp_mac_free(&p->cand->rx);
    sodium_memzero(p->cand, sizeof *p->cand);
    free(p->cand);
    p->cand = NULL;
}

/* This side's half of the connection (attempt) p holds. */
static struct rdp_half my_half(const rdp_t *ep, const struct rdp_peer *p)
{
    struct rdp_half h = {
        .id = RDP_PEER(ep->cfg.node_id, ep->cfg.endpoint), .conn = p->my_conn, .iseq = p->my_iseq};
    memcpy(h.rand, p->my_rand, sizeof h.rand);
    return h;
}

static struct rdp_half peer_half(const struct rdp_peer *p, const struct rdp_hdr *h,
                                 const struct rdp_hs *hs)
{
    struct rdp_half t = {.id = p->node, .conn = h->src_conn, .iseq = h->seq};
    memcpy(t.rand, hs->rand, sizeof t.rand);
    return t;
}

/* The direction keys of the connection between halves mine and theirs, and their
 * fingerprints (ids[0] tx, ids[1] rx). */
static int derive(rdp_t *ep, const struct rdp_peer *p, const struct rdp_half *mine,
                  const struct rdp_half *theirs, struct rdp_mac *tx, uint8_t tx_key[RDP_KEY_BYTES],
                  struct rdp_mac *rx, uint64_t ids[2])
{
    uint8_t kt[RDP_KEY_BYTES], kr[RDP_KEY_BYTES];
    rdp_session_keys(rdp_peer_hkey(ep, p), mine, theirs, kt, kr);
    ids[0] = rdp_key_id(kt);
    ids[1] = rdp_key_id(kr);
    int r = rdp_mac_init_like(rx, &ep->mac, kr);
    if (r == 0 && tx && (r = rdp_mac_init_like(tx, &ep->mac, kt)) < 0) rdp_mac_free(rx);
    if (tx_key) memcpy(tx_key, kt, RDP_KEY_BYTES);
    sodium_memzero(kt, sizeof kt);
    sodium_memzero(kr, sizeof kr);
    return r;
}

/* p's keys for its connection with the peer's half theirs. false if out of memory. */
static bool key_conn(rdp_t *ep, struct rdp_peer *p, const struct rdp_half *theirs)
{
    keys_free(p);
    struct rdp_half mine = my_half(ep, p);
    uint64_t ids[2];
    if (derive(ep, p, &mine, theirs, &p->key_tx, NULL, &p->key_rx, ids) < 0) {
        rdp_count_drop(ep, p, RDP_DROP_NOBUF);
        return false;
    }
    p->keyed = true;
    p->st.key_tx_id = ids[0];
    p->st.key_rx_id = ids[1];
    p->pn_next = 1;
    memset(&p->replay, 0, sizeof p->replay);
    return true;
}

/* Fresh local half of a connection: new id, new initial sequence number, new random bytes,
 * empty queues, no keys. */
static void conn_init(rdp_t *ep, struct rdp_peer *p)
{
    p->my_conn = random_nonzero();
    p->my_iseq = randombytes_random();
    randombytes_buf(p->my_rand, sizeof p->my_rand);
    p->peer_conn = 0;
    p->peer_known = false;
    p->syn_sends = 0;
    p->syn_sent_ns = 0;
    p->rto_fails = 0;
    p->mac_tx = RDP_MAC_CHACHA20POLY1305;
    keys_free(p);
    rdp_sendq_reset(ep, p, p->my_iseq);
}

/* A control packet carrying the given connection ids. */
static void send_ctl_ids(rdp_t *ep, struct rdp_peer *p, uint8_t type, uint32_t src_conn,
                         uint32_t dst_conn)
{
    struct rdp_buf *b = rdp_pool_get(&ep->pool);
    if (!b) return;
    struct rdp_hdr h = {
        .version = RDP_VERSION,
        .type = type,
        .src_node = ep->cfg.node_id,
        .dst_node = RDP_PEER_NODE(p->node),
        .src_ep = ep->cfg.endpoint,
        .dst_ep = RDP_PEER_EP(p->node),
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
        memcpy(hs.rand, p->my_rand, sizeof hs.rand);
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

/* The peer's side of the connection, from its SYN or SYNACK (or a kept offer). */
static void learn_peer(rdp_t *ep, struct rdp_peer *p, const struct rdp_half *theirs, uint32_t wnd,
                       const struct rdp_hs *hs)
{
    fit_payload(ep, p, hs->max_payload);
    p->peer_conn = theirs->conn;
    p->peer_inc = hs->incarnation;
    p->peer_inc_known = true;
    p->peer_wnd = wnd;
    /* the fastest MAC both sides verify */
    p->mac_tx =
        ep->mac.aes && (hs->macs & RDP_MACS_AES) ? RDP_MAC_AES256GCM : RDP_MAC_CHACHA20POLY1305;
    rdp_recvq_reset(ep, p, theirs->iseq);
}

/* Free everything a connection holds and return the queued messages, chained. */
static struct rdp_buf *conn_teardown(rdp_t *ep, struct rdp_peer *p)
{
    struct rdp_buf *pending = rdp_sendq_detach(p);
    rdp_recvq_reset(ep, p, 0);
    p->state = RDP_CLOSED;
    p->rto_at = p->ack_at = p->rack_at = 0;
    p->stalled = false;
    p->ack_pending = 0;
    p->ack_now = false;
    p->peer_conn = 0;
    p->peer_known = false;
    keys_free(p);
    return pending;
}

/* Tell the application: the loss, then each pending message undeliverable. */
static void report_lost(rdp_t *ep, struct rdp_peer *p, enum rdp_lost_reason why,
                        struct rdp_buf *pending)
{
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

void rdp_conn_lost(rdp_t *ep, struct rdp_peer *p, enum rdp_lost_reason why)
{
    if (p->state == RDP_CLOSED) return;
    cand_free(p);
    report_lost(ep, p, why, conn_teardown(ep, p));
}

void rdp_conn_free(rdp_t *ep, struct rdp_peer *p)
{
    rdp_pool_put_chain(&ep->pool, conn_teardown(ep, p));
    cand_free(p);
}

/* The connection is up on this side: ACK at once (the opener's third message), send what
 * waits. */
static void establish(rdp_t *ep, struct rdp_peer *p, bool ack)
{
    if (p->syn_sends == 1 && p->syn_sent_ns)
        rdp_rtt_sample(&p->rtt, (uint32_t)((ep->now - p->syn_sent_ns) / 1000));
    p->rto_at = 0;
    p->rto_fails = 0;
    connected(ep, p);
    if (ack) p->ack_now = true;
    rdp_try_transmit(ep, p);
}

/* The kept offer proved itself: it takes the old connection's place, then the old one is
 * reported lost (restart) with its pending messages, and the new one connected. Whatever the
 * application sends from the lost callback goes on the new connection. */
static void promote(rdp_t *ep, struct rdp_peer *p)
{
    struct rdp_cand *c = p->cand;
    p->cand = NULL;
    struct rdp_buf *pending = conn_teardown(ep, p);
    p->my_conn = c->mine.conn;
    p->my_iseq = c->mine.iseq;
    memcpy(p->my_rand, c->mine.rand, sizeof p->my_rand);
    p->syn_sends = 0;
    p->syn_sent_ns = 0;
    p->rto_fails = 0;
    rdp_sendq_reset(ep, p, p->my_iseq);
    learn_peer(ep, p, &c->theirs, c->peer_wnd, &c->hs);
    p->key_rx = c->rx;
    p->keyed = rdp_mac_init_like(&p->key_tx, &ep->mac, c->tx_key) == 0;
    if (!p->keyed) rdp_mac_free(&p->key_rx);
    p->replay = c->replay;
    p->pn_next = 1;
    p->st.key_tx_id = c->ids[0];
    p->st.key_rx_id = c->ids[1];
    uint32_t conn = p->my_conn;
    sodium_memzero(c, sizeof *c);
    free(c);
    if (p->keyed) p->state = RDP_ESTABLISHED;
    report_lost(ep, p, RDP_LOST_RESTART, pending);
    if (p->state == RDP_ESTABLISHED && p->my_conn == conn) establish(ep, p, false);
}

/* A SYN for a new connection while ours is established: keep the offer aside, answer it. */
static void offer(rdp_t *ep, struct rdp_peer *p, const struct rdp_hdr *h, const struct rdp_hs *hs)
{
    struct rdp_half theirs = peer_half(p, h, hs);
    struct rdp_cand *c = p->cand;
    if (!c || c->theirs.conn != theirs.conn) { /* a new offer replaces an older one */
        cand_free(p);
        if (!(c = calloc(1, sizeof *c))) return;
        c->mine.id = RDP_PEER(ep->cfg.node_id, ep->cfg.endpoint);
        c->mine.conn = random_nonzero();
        c->mine.iseq = randombytes_random();
        randombytes_buf(c->mine.rand, sizeof c->mine.rand);
        c->theirs = theirs;
        c->hs = *hs;
        c->peer_wnd = h->wnd;
        if (derive(ep, p, &c->mine, &c->theirs, NULL, c->tx_key, &c->rx, c->ids) < 0) {
            sodium_memzero(c, sizeof *c);
            free(c);
            return;
        }
        p->cand = c;
    }
    /* the SYNACK of the offer: its ids and half, not the current connection's */
    struct rdp_buf *b = rdp_pool_get(&ep->pool);
    if (!b) return;
    struct rdp_hdr sa = {.version = RDP_VERSION,
                         .type = RDP_T_SYNACK,
                         .src_node = ep->cfg.node_id,
                         .dst_node = RDP_PEER_NODE(p->node),
                         .src_ep = ep->cfg.endpoint,
                         .dst_ep = RDP_PEER_EP(p->node),
                         .src_conn = c->mine.conn,
                         .dst_conn = c->theirs.conn,
                         .seq = c->mine.iseq,
                         .ack = c->theirs.iseq,
                         .wnd = rdp_rcv_wnd(p),
                         .len = RDP_HS_LEN};
    struct rdp_hs mine = {.incarnation = ep->incarnation,
                          .max_payload = ep->payload,
                          .macs = RDP_MACS_CHACHA | (ep->mac.aes ? RDP_MACS_AES : 0)};
    memcpy(mine.rand, c->mine.rand, sizeof mine.rand);
    rdp_hs_encode(b->data + RDP_HDR_LEN, &mine);
    rdp_hdr_encode(b->data, &sa);
    b->len = RDP_HDR_LEN + RDP_HS_LEN;
    rdp_io_sign_queue(ep, p, b);
    rdp_pool_put(&ep->pool, b);
}

static void handle_syn(rdp_t *ep, struct rdp_peer *p, const struct rdp_hdr *h,
                       const struct rdp_hs *hs)
{
    if (p->state == RDP_ESTABLISHED) {
        if (h->src_conn == p->peer_conn) { /* our SYNACK was lost, or the peer awaits proof */
            rdp_count_drop(ep, p, RDP_DROP_DUPLICATE);
            rdp_send_ctl(ep, p, RDP_T_SYNACK);
        } else {
            offer(ep, p, h, hs); /* a restart of the peer, or a replay */
        }
        return;
    }
    /* CLOSED: a new connection from the peer. SYN_SENT: both opened at once (or we answered
     * an older SYN of the peer); our half stays the one of our SYN. */
    if (p->state == RDP_CLOSED) {
        conn_init(ep, p);
        p->state = RDP_SYN_SENT;
        p->syn_sends = 1;
        p->syn_sent_ns = 0; /* no RTT sample from an answer to our retransmitted SYN */
        p->rto_at = ep->now + (uint64_t)p->rtt.rto_us * 1000;
    }
    if (!p->peer_known || h->src_conn != p->peer_conn) { /* not a duplicate */
        struct rdp_half theirs = peer_half(p, h, hs);
        if (!key_conn(ep, p, &theirs)) return;
        learn_peer(ep, p, &theirs, h->wnd, hs);
        p->peer_known = true;
    }
    rdp_send_ctl(ep, p, RDP_T_SYNACK);
}

static void handle_synack(rdp_t *ep, struct rdp_peer *p, const struct rdp_hdr *h,
                          const struct rdp_hs *hs)
{
    if (p->state == RDP_ESTABLISHED && h->src_conn == p->peer_conn && h->dst_conn == p->my_conn) {
        rdp_count_drop(ep, p, RDP_DROP_DUPLICATE);
        p->ack_now = true; /* the peer may be waiting for our third message */
        return;
    }
    if (p->state != RDP_SYN_SENT || h->dst_conn != p->my_conn || h->ack != p->my_iseq) {
        rdp_count_drop(ep, p, RDP_DROP_STALE);
        return;
    }
    /* the answer to our SYN: its half is the peer's, whatever a SYN said before */
    struct rdp_half theirs = peer_half(p, h, hs);
    if (!key_conn(ep, p, &theirs)) return;
    learn_peer(ep, p, &theirs, h->wnd, hs);
    establish(ep, p, true);
}

/* Nothing sends RSTs any more (see handle_stale); one from an older version still ends only
 * the connection it names, under the handshake key. */
static void handle_rst(rdp_t *ep, struct rdp_peer *p, const struct rdp_hdr *h,
                       const struct rdp_hs *hs)
{
    if (p->state != RDP_ESTABLISHED || h->dst_conn != p->my_conn) {
        rdp_count_drop(ep, p, RDP_DROP_STALE);
        return;
    }
    /* the peer does not know our connection: it restarted or gave up on us */
    p->peer_inc = hs->incarnation;
    rdp_conn_lost(ep, p, RDP_LOST_RESTART);
}

/* A DATA or ACK that belongs to no connection of ours (its MAC cannot be checked: we have
 * no key for it). With a connection of our own, or one being opened, it is dropped. Without
 * one, the peer holds a connection we lost (we restarted): we open a new one, whose
 * handshake replaces the peer's old connection once it completes. Answering with anything
 * the peer would act on alone would let a forged or corrupted packet end a connection. */
static void handle_stale(rdp_t *ep, struct rdp_peer *p, const struct rdp_hdr *h)
{
    (void)h;
    rdp_count_drop(ep, p, RDP_DROP_STALE);
    if (p->state != RDP_CLOSED || ep->now - p->rst_sent_ns < RDP_RST_GAP_NS) return;
    p->rst_sent_ns = ep->now;
    rdp_conn_open(ep, p);
}

/* Which keys check a DATA or ACK: the connection's (established, or answered and waiting
 * for this proof), or the kept offer's. NULL: none of ours. */
static const struct rdp_mac *keys_for(struct rdp_peer *p, const struct rdp_hdr *h,
                                      struct rdp_replay **replay, bool *is_offer)
{
    *is_offer = false;
    if (p->keyed && h->dst_conn == p->my_conn && h->src_conn == p->peer_conn &&
        (p->state == RDP_ESTABLISHED || p->peer_known)) {
        *replay = &p->replay;
        return &p->key_rx;
    }
    if (p->cand && h->dst_conn == p->cand->mine.conn && h->src_conn == p->cand->theirs.conn) {
        *replay = &p->cand->replay;
        *is_offer = true;
        return &p->cand->rx;
    }
    return NULL;
}

static void handle_handshake(rdp_t *ep, struct rdp_peer *p, const struct rdp_hdr *h,
                             const uint8_t *pkt)
{
    if (!rdp_hs_verify(rdp_peer_hkey(ep, p), pkt, RDP_HDR_LEN + h->len)) {
        rdp_count_drop(ep, p, RDP_DROP_MAC);
        return;
    }
    p->st.pkts_recv++;
    struct rdp_hs hs;
    rdp_hs_decode(pkt + RDP_HDR_LEN, &hs);
    if (h->type == RDP_T_SYN)
        handle_syn(ep, p, h, &hs);
    else if (h->type == RDP_T_SYNACK)
        handle_synack(ep, p, h, &hs);
    else
        handle_rst(ep, p, h, &hs);
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
    struct rdp_peer *p = rdp_peer_get(ep, RDP_PEER(h.src_node, h.src_ep));
    if (h.dst_node != ep->cfg.node_id || h.dst_ep != ep->cfg.endpoint || !p) {
        rdp_count_drop(ep, NULL, RDP_DROP_UNKNOWN);
        return;
    }
    if (!rdp_addr_equal(&p->addr, from)) {
        rdp_count_drop(ep, p, RDP_DROP_ADDRESS);
        return;
    }
    if (h.type == RDP_T_SYN || h.type == RDP_T_SYNACK || h.type == RDP_T_RST) {
        handle_handshake(ep, p, &h, b->data);
        rdp_mark_dirty(ep, p);
        return;
    }
    struct rdp_replay *replay;
    bool is_offer;
    const struct rdp_mac *k = keys_for(p, &h, &replay, &is_offer);
    if (!k) {
        handle_stale(ep, p, &h);
        return;
    }
    if (!rdp_replay_check(replay, h.pn)) {
        rdp_count_drop(ep, p, RDP_DROP_REPLAY);
        return;
    }
    if (!rdp_mac_verify_ctx(k, (enum rdp_mac_alg)h.mac, h.src_node, h.dst_node, h.pn, b->data,
                            RDP_HDR_LEN + h.len)) {
        rdp_count_drop(ep, p, RDP_DROP_MAC);
        return;
    }
    rdp_replay_update(replay, h.pn);
    p->st.pkts_recv++;
    if (is_offer) {
        promote(ep, p); /* the offer's replay window comes along */
        if (p->state != RDP_ESTABLISHED) return;
    } else if (p->state != RDP_ESTABLISHED) {
        establish(ep, p, false); /* the third message: the opener holds the keys */
        if (p->state != RDP_ESTABLISHED) return;
    }
    const uint8_t *payload = b->data + RDP_HDR_LEN;
    if (h.type == RDP_T_ACK) {
        rdp_handle_ack(ep, p, h.ack, h.wnd, payload, h.len);
    } else {
        rdp_handle_ack(ep, p, h.ack, h.wnd, NULL, 0);
        if (p->state == RDP_ESTABLISHED) rdp_handle_data(ep, p, &h, bufp);
    }
    rdp_mark_dirty(ep, p);
}
