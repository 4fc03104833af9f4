/*
 * send.c - the send side of an RDP connection: messages are cut into packets when queued,
 * transmitted as window allows, and retransmitted until acknowledged.
 *
 *  - Flow control: at most the receiver's advertised window beyond snd_una; at most sndbuf
 *    bytes queued (a full queue gives EAGAIN, and can_send once it has drained to half).
 *  - Congestion control: a packet window (cwnd) that grows per acknowledged packet (slow
 *    start, then one per window), shrinks to 70% once per loss episode and falls to
 *    RDP_MIN_CWND on a timeout, so that a burst does not overrun the receiver's socket buffer.
 *  - Loss recovery: SACK bitmaps mark packets received out of order; a packet is resent at
 *    once when one sent after it has been delivered (time-based, see detect_losses; no
 *    go-back-N). The retransmission timer (RTO from measured RTT, doubled on each
 *    expiry) resends what is outstanding; max_retrans+1 expiries in a row without any
 *    progress (no new packet acknowledged) mean the peer is lost, or, with persist_max_us,
 *    stalled (see rdp_on_rto).
 *  - Copies: a large fragment is sent from the caller's buffer (rdp_buf.ext) and copied into
 *    its packet right after that send, before rdp_send returns (own_payloads), so the copy
 *    for retransmission is not on the way to the receiver.
 */
#include "internal.h"
#include "trace.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static void transmit(rdp_t *ep, struct rdp_peer *p, uint32_t seq);
static void transmit_req(rdp_t *ep, struct rdp_peer *p, uint32_t seq, bool ackreq);
static void resend_oldest(rdp_t *ep, struct rdp_peer *p);
static void stall_end(rdp_t *ep, struct rdp_peer *p);

static uint32_t pow2_at_least(uint64_t v)
{
    uint32_t c = 16;
    while (c < v && c < (1u << 30)) c <<= 1;
    return c;
}

/* Slots for sndbuf worth of packets plus one message of maximum size, at the peer's
 * packet size. */
static uint32_t txcap_for(const rdp_t *ep, const struct rdp_peer *p)
{
    return pow2_at_least(ep->cfg.sndbuf / p->payload + RDP_MAX_MSG / p->payload + 2);
}

int rdp_sendq_init(rdp_t *ep, struct rdp_peer *p)
{
    p->txcap = txcap_for(ep, p);
    p->txmask = p->txcap - 1;
    p->tx = calloc(p->txcap, sizeof *p->tx);
    return p->tx ? 0 : -1;
}

static struct rdp_txslot *slot(struct rdp_peer *p, uint32_t seq)
{
    return &p->tx[seq & p->txmask];
}

void rdp_sendq_reset(rdp_t *ep, struct rdp_peer *p, uint32_t iseq)
{
    (void)ep;
    p->snd_rel = p->snd_una = p->snd_tx = p->snd_nxt = iseq;
    p->nsacked = 0;
    p->queued = 0;
    p->cwnd = RDP_INIT_CWND;
    p->ssthresh = p->txcap;
    p->cwnd_acc = 0;
    p->peer_wnd = RDP_INIT_CWND;
    p->in_recovery = false;
    p->rto_at = 0;
    p->rack_ns = p->rack_at = 0;
    p->rack_seq = iseq;
    p->probed = false;
}

/* Unlink every queued packet, oldest first, as a chain through buf->next. */
struct rdp_buf *rdp_sendq_detach(struct rdp_peer *p)
{
    struct rdp_buf *head = NULL, **tail = &head;
    for (uint32_t s = p->snd_rel; s != p->snd_nxt; s++) {
        struct rdp_txslot *t = slot(p, s);
        if (!t->buf) continue;
        *tail = t->buf;
        tail = &t->buf->next;
        t->buf->next = NULL;
        memset(t, 0, sizeof *t);
    }
    p->snd_rel = p->snd_una = p->snd_tx = p->snd_nxt;
    p->nsacked = 0;
    p->queued = 0;
    p->rto_at = 0;
    return head;
}

size_t rdp_sendq_join(rdp_t *ep, struct rdp_buf *chain, struct rdp_buf **last)
{
    size_t len = 0;
    for (struct rdp_buf *b = chain; b; b = b->next) {
        uint16_t plen = be_get16(b->data + 44);
        if (len + plen <= RDP_MAX_MSG) memcpy(ep->scratch + len, b->data + RDP_HDR_LEN, plen);
        len += plen;
        *last = b;
        if (be_get16(b->data + 2) & RDP_F_LAST) break;
    }
    return len;
}

uint32_t rdp_inflight(const struct rdp_peer *p)
{
    return p->snd_tx - p->snd_una - p->nsacked;
}

/* The retransmission timer first fires as a tail-loss probe after about two RTTs (and no
 * later than the RTO), then as the RTO itself. Only on an established connection: a SYN is
 * never probed (rdp_on_rto), so a SYN_SENT after a lost connection, whose RTT is sampled,
 * would otherwise retransmit every two RTTs and give up on the peer within milliseconds. */
static void arm_rto(rdp_t *ep, struct rdp_peer *p)
{
    uint64_t rto = (uint64_t)p->rtt.rto_us * 1000;
    if (p->state == RDP_ESTABLISHED && !p->probed && p->rtt.sampled) {
        /* the receiver may hold back the ACK of the newest packet that long */
        bool lone = true;
        if (p->snd_tx != p->snd_una) {
            unsigned f = be_get16(slot(p, p->snd_tx - 1)->buf->data + 2); /* its flags */
            lone = (f & (RDP_F_FIRST | RDP_F_LAST)) == (RDP_F_FIRST | RDP_F_LAST);
        }
        uint64_t pto = 2ull * p->rtt.srtt_us * 1000 +
                       2ull * rdp_ack_delay_us(ep, lone || p->interactive) * 1000;
        if (pto < 200000) pto = 200000;
        if (pto < rto) rto = pto;
    }
    p->rto_at = ep->now + rto;
}

/* Resend the newest outstanding packet so that its ACK tells what is missing. */
static bool probe(rdp_t *ep, struct rdp_peer *p)
{
    p->probed = true;
    p->last_rexmit_ns = ep->now;
    for (uint32_t s = p->snd_tx - 1; s != p->snd_una - 1; s--)
        if (!slot(p, s)->sacked) {
            transmit_req(ep, p, s, true); /* its ACK is the point */
            return true;
        }
    return false;
}

/* Send (again) packet seq. ackreq: ask the receiver to acknowledge at once (the window is
 * full after this packet, so the rest of the message waits for an ACK). */
static void transmit_req(rdp_t *ep, struct rdp_peer *p, uint32_t seq, bool ackreq)
{
    struct rdp_txslot *t = slot(p, seq);
    struct rdp_buf *b = t->buf;
    if (b->in_tx) return; /* already in this round's batch */
    if (t->sends) {
        p->st.retransmits++;
        ep->st.retransmits++;
    }
    t->sends++;
    t->sent_ns = ep->now;
    uint16_t plen = be_get16(b->data + 44);
    b->len = RDP_HDR_LEN + plen;
    be_put32(b->data + 16, p->peer_conn);
    uint16_t flags = be_get16(b->data + 2) & (uint16_t)~RDP_F_ACKREQ;
    be_put16(b->data + 2, ackreq ? flags | RDP_F_ACKREQ : flags);
    rdp_hdr_patch(b->data, p->rcv_nxt, rdp_rcv_wnd(p), 0);
    rdp_ack_sent(p); /* the cumulative ACK rides along */
    rdp_io_sign_queue(ep, p, b);
}

static void transmit(rdp_t *ep, struct rdp_peer *p, uint32_t seq)
{
    transmit_req(ep, p, seq, false);
}

void rdp_try_transmit(rdp_t *ep, struct rdp_peer *p)
{
    if (p->state != RDP_ESTABLISHED) return;
    uint32_t wnd = p->peer_wnd < p->txcap ? p->peer_wnd : p->txcap;
    /* On an interactive connection someone waits for the whole message: send it in slices
     * of about RDP_PIPE_BYTES, so that the receiver checks the first slice while this side
     * still computes the MACs of the next. A stream keeps its big batches. */
    size_t slice = 0;
    while (p->snd_tx != p->snd_nxt && p->snd_tx - p->snd_una < wnd && rdp_inflight(p) < p->cwnd) {
        slice += slot(p, p->snd_tx)->buf->len;
        /* the last packet the windows allow while more is queued asks for an ACK: a
         * receiver may hold its ACK back for an answer (rdp_flush_ack) */
        bool full = p->snd_tx + 1 != p->snd_nxt &&
                    (p->snd_tx + 1 - p->snd_una >= wnd || rdp_inflight(p) + 1 >= p->cwnd);
        transmit_req(ep, p, p->snd_tx, full);
        p->snd_tx++;
        if (!p->rto_at) arm_rto(ep, p);
        if (p->interactive && slice >= RDP_PIPE_BYTES && p->snd_tx != p->snd_nxt) {
            rdp_io_flush(ep);
            slice = 0;
        }
    }
}

/* Copy the payloads of packets first..last from the caller's buffer into the packets. */
static void own_payloads(struct rdp_peer *p, uint32_t first, uint32_t last)
{
    for (uint32_t s = first; s != last + 1; s++) {
        struct rdp_buf *b = slot(p, s)->buf;
        if (!b->ext) continue;
        memcpy(b->data + RDP_HDR_LEN, b->ext, be_get16(b->data + 44));
        b->ext = NULL;
    }
}

/* The message's bytes as the caller gave them: pieces, read front to back. */
struct gather {
    const struct iovec *iov;
    int n, i;   /* pieces; the current one */
    size_t off; /* bytes of the current piece already taken */
};

/* The next len bytes: a pointer into the piece that holds them all, or NULL after copying
 * them into out (they span pieces, or contig is false). */
static const uint8_t *gather_take(struct gather *g, size_t len, bool contig, uint8_t *out)
{
    for (size_t done = 0; done < len;) {
        while (g->off == g->iov[g->i].iov_len) { /* the piece is used up (or empty) */
            g->i++;
            g->off = 0;
        }
        if (!done && contig && g->iov[g->i].iov_len - g->off >= len) {
            g->off += len;
            return (const uint8_t *)g->iov[g->i].iov_base + g->off - len;
        }
        size_t n = g->iov[g->i].iov_len - g->off;
        if (n > len - done) n = len - done;
        memcpy(out + done, (const uint8_t *)g->iov[g->i].iov_base + g->off, n);
        g->off += n;
        done += n;
    }
    return NULL;
}

/* Cut the message (len bytes from src) into nfrag packets and queue them; ext: leave the
 * payloads in the caller's buffer (rdp_buf.ext) until own_payloads. */
static int cut_msg(rdp_t *ep, struct rdp_peer *p, struct gather *src, size_t len, uint32_t nfrag,
                   bool ext)
{
    uint32_t last = p->snd_nxt + nfrag - 1;
    size_t frag = (len + nfrag - 1) / nfrag;
    for (uint32_t i = 0; i < nfrag; i++) {
        struct rdp_buf *b = rdp_pool_get(&ep->pool);
        if (!b) {
            /* out of memory midway: unqueue the fragments of this message */
            while (p->snd_nxt != last - nfrag + 1) {
                struct rdp_txslot *t = slot(p, --p->snd_nxt);
                rdp_pool_put(&ep->pool, t->buf);
                memset(t, 0, sizeof *t);
            }
            errno = ENOMEM;
            return -1;
        }
        /* fragments of equal size (the last may be shorter), so that a 64 KiB message on
         * loopback is two halves, not a full datagram and a 93-byte tail */
        size_t off = (size_t)i * frag;
        size_t n = len - off < frag ? len - off : frag;
        struct rdp_hdr h = {
            .version = RDP_VERSION,
            .type = RDP_T_DATA,
            .flags = (i == 0 ? RDP_F_FIRST : 0) | (i == nfrag - 1 ? RDP_F_LAST : 0),
            .src_node = ep->cfg.node_id,
            .dst_node = RDP_PEER_NODE(p->node),
            .src_ep = ep->cfg.endpoint,
            .dst_ep = RDP_PEER_EP(p->node),
            .src_conn = p->my_conn,
            .seq = p->snd_nxt,
            .msg_len = (uint32_t)len,
            .len = (uint16_t)n,
        };
        rdp_hdr_encode(b->data, &h);
        b->ext = gather_take(src, n, ext, b->data + RDP_HDR_LEN);
        b->len = RDP_HDR_LEN + n;
        struct rdp_txslot *t = slot(p, p->snd_nxt++);
        *t = (struct rdp_txslot){.buf = b, .msg_last = last};
    }
    p->queued += len;
    return 0;
}

static uint32_t frags_of(const struct rdp_peer *p, size_t len)
{
    return (uint32_t)((len + p->payload - 1) / p->payload);
}

/* Whether nfrag more packets fit the send ring. */
static bool ring_has_room(const struct rdp_peer *p, uint32_t nfrag)
{
    return p->snd_nxt + nfrag - p->snd_rel <= p->txcap;
}

/* Queue the message and send what the windows allow. */
static int queue_msg(rdp_t *ep, struct rdp_peer *p, struct gather *src, size_t len, uint32_t nfrag)
{
    if (p->state == RDP_CLOSED) rdp_conn_open(ep, p);
    /* an answer: not a small word back to a bulk sender (a receiver's credit), nor a bulk
     * message while more than a packet of ours is unacknowledged (a stream's next) */
    bool bulk_in = p->delivered_len > p->payload, bulk_out = nfrag > 1;
    if (p->delivered_ns && ep->now - p->delivered_ns <= (uint64_t)ep->cfg.ack_delay_us * 1000 &&
        !(bulk_in && !bulk_out) && !(bulk_out && p->queued > p->payload))
        p->interactive = true;

    uint32_t first = p->snd_nxt, last = first + nfrag - 1;
    size_t frag = (len + nfrag - 1) / nfrag;
    /* Large fragments go out straight from the caller's buffer and are copied into their
     * packets only after the send (own_payloads): the copy is then off the path to the
     * receiver. That needs a MAC over header and payload in two pieces, and no injector
     * (which copies packets to corrupt them). */
    bool ext = frag >= RDP_EXT_MIN && p->state == RDP_ESTABLISHED && !ep->inj.on &&
               rdp_mac_can_split(&ep->mac, p->mac_tx, RDP_HDR_LEN + frag);
    if (cut_msg(ep, p, src, len, nfrag, ext) < 0) return -1;
    p->st.msgs_sent++;
    p->st.bytes_sent += len;
    rdp_try_transmit(ep, p);
    if (ext) {
        rdp_io_flush(ep); /* also inside a round: the caller's buffer is gone after this */
        own_payloads(p, first, last);
    }
    return 0;
}

/* The handshake told that the peer takes smaller packets than the send queue was made for
 * (its MTU is smaller): grow the ring for as many more packets, and cut the queued messages
 * again, at p->payload. Nothing of them has been sent (data waits for the handshake).
 * Returns the packets of the messages that could not be queued again (out of memory),
 * chained as rdp_sendq_detach does, for the caller to report undeliverable. */
struct rdp_buf *rdp_sendq_recut(rdp_t *ep, struct rdp_peer *p)
{
    struct rdp_buf *old = rdp_sendq_detach(p);
    p->snd_rel = p->snd_una = p->snd_tx = p->snd_nxt = p->my_iseq;
    uint32_t cap = txcap_for(ep, p);
    if (cap > p->txcap) { /* the ring is empty now */
        struct rdp_txslot *tx = calloc(cap, sizeof *tx);
        if (tx) {
            free(p->tx);
            p->tx = tx;
            p->txcap = p->ssthresh = cap; /* slow start to the new size, as a fresh queue */
            p->txmask = cap - 1;
        }
    }
    while (old) {
        /* one message: join its fragments, then cut it again */
        struct rdp_buf *end;
        size_t len = rdp_sendq_join(ep, old, &end);
        uint32_t nfrag = frags_of(p, len);
        struct iovec whole = {ep->scratch, len};
        struct gather g = {&whole, 1, 0, 0};
        if (!ring_has_room(p, nfrag) || cut_msg(ep, p, &g, len, nfrag, false)) return old;
        struct rdp_buf *rest = end->next;
        end->next = NULL;
        rdp_pool_put_chain(&ep->pool, old);
        old = rest;
    }
    return NULL;
}

int rdp_send(rdp_t *ep, uint32_t node, const void *msg, size_t len)
{
    struct iovec one = {(void *)(uintptr_t)msg, len};
    return rdp_sendv(ep, node, &one, 1);
}

int rdp_sendv(rdp_t *ep, uint32_t node, const struct iovec *iov, int iovcnt)
{
    if (iovcnt < 0 || (iovcnt > 0 && !iov)) {
        errno = EINVAL;
        return -1;
    }
    size_t len = 0;
    for (int i = 0; i < iovcnt && len <= RDP_MAX_MSG; i++)
        len += iov[i].iov_len > RDP_MAX_MSG ? RDP_MAX_MSG + 1 : iov[i].iov_len;
    if (len > RDP_MAX_MSG || len == 0) {
        errno = len ? EMSGSIZE : EINVAL;
        return -1;
    }
    rdp_trace(RDP_TR_SENDV_IN, (uint32_t)len);
    struct rdp_peer *p = rdp_peer_get(ep, node);
    if (!p) {
        errno = EHOSTUNREACH;
        return -1;
    }
    uint32_t nfrag = frags_of(p, len);
    if (nfrag > p->txcap) { /* only if the slots for a smaller peer MTU were not to be had */
        errno = ENOMEM;
        return -1;
    }
    if ((p->queued && p->queued + len > ep->cfg.sndbuf) || !ring_has_room(p, nfrag)) {
        p->want_can_send = true;
        errno = EAGAIN;
        return -1;
    }
    /* outside rdp_process, a send is a round of its own: its packets leave in one batch */
    bool outer = !ep->in_process;
    if (outer) {
        ep->now = rdp_now_ns();
        ep->in_process = true;
    }
    struct gather g = {iov, iovcnt, 0, 0};
    int r = queue_msg(ep, p, &g, len, nfrag), e = errno;
    if (outer) {
        ep->in_process = false;
        rdp_io_flush(ep);
    }
    rdp_trace(RDP_TR_SENDV_OUT, 0);
    errno = e;
    return r;
}

/* Free the messages whose every fragment is acknowledged. */
static void release_acked(rdp_t *ep, struct rdp_peer *p)
{
    while (p->snd_rel != p->snd_una) {
        uint32_t last = slot(p, p->snd_rel)->msg_last;
        if (!seq_lt(last, p->snd_una)) break;
        for (uint32_t s = p->snd_rel; s != last + 1; s++) {
            struct rdp_txslot *t = slot(p, s);
            p->queued -= be_get16(t->buf->data + 44);
            rdp_pool_put(&ep->pool, t->buf);
            memset(t, 0, sizeof *t);
        }
        p->snd_rel = last + 1;
    }
}

/* One RTT sample per ACK, from the newest packet it newly acknowledges (QUIC's "largest
 * acknowledged"), and only from a packet sent once and after the last timeout or probe: a
 * packet whose ACK was lost is acknowledged only after recovery, and timing it would measure
 * the recovery, not the path (Karn's rule, extended). */
static void rtt_sample(rdp_t *ep, struct rdp_peer *p, const struct rdp_txslot *t)
{
    if (t && t->sends == 1 && t->sent_ns > p->last_rexmit_ns && ep->now > t->sent_ns)
        rdp_rtt_sample(&p->rtt, (uint32_t)((ep->now - t->sent_ns) / 1000));
}

static void grow_cwnd(struct rdp_peer *p, uint32_t acked)
{
    if (p->in_recovery) return;
    if (p->cwnd < p->ssthresh) {
        p->cwnd += acked;
    } else {
        p->cwnd_acc += acked;
        while (p->cwnd_acc >= p->cwnd) {
            p->cwnd_acc -= p->cwnd;
            p->cwnd++;
        }
    }
    if (p->cwnd > p->txcap) p->cwnd = p->txcap;
}

static void enter_recovery(struct rdp_peer *p)
{
    if (p->in_recovery) return;
    uint32_t reduced = p->cwnd * 7 / 10; /* CUBIC's factor: gentler than halving */
    p->ssthresh = reduced > RDP_MIN_CWND ? reduced : RDP_MIN_CWND;
    p->cwnd = p->ssthresh;
    p->in_recovery = true;
    p->recover = p->snd_tx;
}

/* Time-based loss detection (the idea of RACK, RFC 8985): a packet is lost when a packet
 * sent after it has been delivered and it has itself waited an RTT plus a reordering window
 * (a quarter RTT) since it was sent. Works for any number of packets in flight, unlike a
 * duplicate-ACK threshold; a resent packet is judged by its new send time. Packets sent in
 * one round share a timestamp and are ordered by sequence number. */
static bool sent_before(const struct rdp_txslot *t, uint32_t s, const struct rdp_peer *p)
{
    return t->sent_ns < p->rack_ns || (t->sent_ns == p->rack_ns && seq_lt(s, p->rack_seq));
}

void rdp_detect_losses(rdp_t *ep, struct rdp_peer *p)
{
    p->rack_at = 0;
    if (p->state != RDP_ESTABLISHED || !p->rack_ns) return;
    uint64_t srtt = (uint64_t)(p->rtt.sampled ? p->rtt.srtt_us : p->rtt.rto_us) * 1000;
    uint64_t reo = srtt / 4 > 20000 ? srtt / 4 : 20000;
    for (uint32_t s = p->snd_una; s != p->snd_tx; s++) {
        struct rdp_txslot *t = slot(p, s);
        if (!sent_before(t, s, p)) {
            if (t->sends == 1) break; /* first sends go in sequence order: the rest is newer */
            continue;
        }
        if (t->sacked) continue;
        uint64_t due = t->sent_ns + srtt + reo;
        if (due <= ep->now) {
            enter_recovery(p);
            transmit(ep, p, s);
        } else if (!p->rack_at || due < p->rack_at) {
            p->rack_at = due;
        }
    }
}

static void delivered(struct rdp_peer *p, const struct rdp_txslot *t, uint32_t s)
{
    if (t->sent_ns > p->rack_ns || (t->sent_ns == p->rack_ns && seq_gt(s, p->rack_seq))) {
        p->rack_ns = t->sent_ns;
        p->rack_seq = s;
    }
}

void rdp_handle_ack(rdp_t *ep, struct rdp_peer *p, uint32_t ack, uint32_t wnd, const uint8_t *sack,
                    size_t sack_len)
{
    if (seq_gt(ack, p->snd_tx) || seq_lt(ack, p->snd_una)) return; /* nothing we can use */
    p->peer_wnd = wnd;
    uint32_t acked = 0;
    const struct rdp_txslot *newest = NULL; /* newest newly acknowledged, for the RTT */
    for (; p->snd_una != ack; p->snd_una++) {
        struct rdp_txslot *t = slot(p, p->snd_una);
        if (t->sacked) {
            p->nsacked--;
        } else {
            acked++;
            delivered(p, t, p->snd_una);
            if (!newest || t->sent_ns >= newest->sent_ns) newest = t;
        }
    }
    for (size_t i = 0; i < sack_len * 8; i++) {
        if (!(sack[i / 8] >> (i % 8) & 1)) continue;
        uint32_t s = ack + 1 + (uint32_t)i;
        if (!seq_lt(s, p->snd_tx)) break;
        struct rdp_txslot *t = slot(p, s);
        if (t->sacked) continue;
        t->sacked = true;
        p->nsacked++;
        acked++;
        delivered(p, t, s);
        if (!newest || t->sent_ns >= newest->sent_ns) newest = t;
    }
    rtt_sample(ep, p, newest);
    if (p->in_recovery && seq_ge(p->snd_una, p->recover)) p->in_recovery = false;
    if (acked) {
        p->rto_fails = 0;
        p->probed = false;
        rdp_rtt_reset_backoff(&p->rtt);
        grow_cwnd(p, acked);
        if (p->stalled) stall_end(ep, p);
    } else if (p->stalled && p->snd_una != p->snd_tx) {
        /* it answers again, with nothing new: the oldest packet at once, not at the next
         * probe, which may be a second away */
        resend_oldest(ep, p);
        p->persist_us = ep->cfg.rto_max_us;
        p->rto_at = ep->now + (uint64_t)p->persist_us * 1000;
    }
    if (acked && p->snd_una != p->snd_tx) rdp_detect_losses(ep, p);
    release_acked(ep, p);
    if (p->snd_una == p->snd_tx)
        p->rto_at = 0;
    else if (acked)
        arm_rto(ep, p);
    rdp_try_transmit(ep, p);
    if (p->want_can_send && p->queued <= ep->cfg.sndbuf / 2) {
        p->want_can_send = false;
        if (ep->cb.can_send) ep->cb.can_send(ep->cb.ctx, p->node);
    }
}

/* The oldest outstanding packet again, asking for an ACK. */
static void resend_oldest(rdp_t *ep, struct rdp_peer *p)
{
    uint32_t first = p->snd_una;
    while (first != p->snd_tx && slot(p, first)->sacked) first++;
    if (first != p->snd_tx) transmit_req(ep, p, first, true);
}

/* A stalled peer made progress: it was silent, not congested, so the windows it had before
 * the first timeout of the silence come back (the idea of TCP's undo of a spurious
 * timeout). */
static void stall_end(rdp_t *ep, struct rdp_peer *p)
{
    p->stalled = false;
    if (p->cwnd < p->undo_cwnd) p->cwnd = p->undo_cwnd;
    if (p->ssthresh < p->undo_ssthresh) p->ssthresh = p->undo_ssthresh;
    if (ep->cb.stalled) ep->cb.stalled(ep->cb.ctx, p->node, false);
}

/* Persist (rdp_config.persist_max_us): a peer past the bound is kept and probed, at an
 * interval that doubles from rto_max_us up to the bound, as TCP probes a closed window:
 * a stopped process answers when it runs again, from the probes that wait in its socket. */
static void persist(rdp_t *ep, struct rdp_peer *p)
{
    p->st.timeouts++;
    p->last_rexmit_ns = ep->now;
    if (!p->stalled) {
        p->stalled = true;
        p->st.stalls++;
        p->persist_us = ep->cfg.rto_max_us;
        if (ep->cb.stalled) ep->cb.stalled(ep->cb.ctx, p->node, true);
        if (p->state == RDP_CLOSED) return; /* given up (rdp_disconnect) */
    } else {
        uint64_t next = 2ull * p->persist_us;
        p->persist_us = next > ep->cfg.persist_max_us ? ep->cfg.persist_max_us : (uint32_t)next;
    }
    if (p->state == RDP_SYN_SENT) {
        p->st.retransmits++;
        ep->st.retransmits++;
        rdp_send_ctl(ep, p, RDP_T_SYN);
        p->syn_sends++;
    } else if (p->state == RDP_ESTABLISHED) {
        resend_oldest(ep, p);
    }
    if (p->state != RDP_CLOSED) p->rto_at = ep->now + (uint64_t)p->persist_us * 1000;
}

void rdp_on_rto(rdp_t *ep, struct rdp_peer *p)
{
    p->rto_at = 0;
    if (p->rto_fails == 0) { /* the first expiry of a silence: the windows before it */
        p->undo_cwnd = p->cwnd;
        p->undo_ssthresh = p->ssthresh;
    }
    /* Every expiry without progress counts, the tail-loss probe's too: the peer is lost at the
     * expiry after its max_retrans-th retransmission, within rdp_lost_bound_us(). */
    if (++p->rto_fails > ep->cfg.max_retrans) {
        if (ep->cfg.persist_max_us) {
            persist(ep, p);
            return;
        }
        p->st.timeouts++;
        rdp_conn_lost(ep, p, RDP_LOST_TIMEOUT);
        return;
    }
    if (p->state == RDP_ESTABLISHED && !p->probed && p->rtt.sampled && p->snd_una != p->snd_tx &&
        probe(ep, p)) {
        arm_rto(ep, p);
        return;
    }
    p->st.timeouts++;
    p->last_rexmit_ns = ep->now;
    if (p->state == RDP_SYN_SENT) {
        rdp_rtt_backoff(&p->rtt);
        p->st.retransmits++;
        ep->st.retransmits++;
        rdp_send_ctl(ep, p, RDP_T_SYN);
        p->syn_sends++;
        arm_rto(ep, p);
        return;
    }
    if (p->state != RDP_ESTABLISHED || p->snd_una == p->snd_tx) return;
    /* resend only the oldest outstanding packet: a timeout may be spurious (a late ACK), and
     * whatever else is missing shows up as loss once this one is acknowledged */
    resend_oldest(ep, p);
    uint32_t half = p->cwnd / 2;
    p->ssthresh = half > RDP_MIN_CWND ? half : RDP_MIN_CWND;
    p->cwnd = RDP_MIN_CWND;
    p->in_recovery = false;
    rdp_rtt_backoff(&p->rtt);
    arm_rto(ep, p);
}
