/*
 * recv.c - the receive side of an RDP connection: in-order delivery through a reorder ring,
 * reassembly of fragmented messages, and acknowledgements.
 *
 * A packet at rcv_nxt is delivered at once (a single-packet message straight from the
 * receive buffer, without a copy); one further ahead, within the window, waits in the ring
 * until the gap before it is filled. The fragments of a longer message are joined in asm_buf
 * (recv), or, for an application that takes messages in pieces (recvv), kept as they were
 * read where that needs no copy (struct rdp_piece).
 *
 * ACKs: the cumulative ACK rides on every DATA we send; an ACK packet with a SACK bitmap goes
 * out at the end of the round whenever something arrived out of order or twice, or two
 * packets are unacknowledged; a lone packet is acknowledged after ack_delay_us unless a reply
 * carries the ACK first.
 */
#include "internal.h"
#include "trace.h"

#include <stdlib.h>
#include <string.h>

static void asm_abort(rdp_t *ep, struct rdp_peer *p);

static uint32_t pow2_at_most(uint64_t v)
{
    uint32_t c = 16;
    while ((uint64_t)c * 2 <= v && c < (1u << 20)) c <<= 1;
    return c;
}

/* Window slots for packets of `payload` bytes: rcvbuf of them, as many as the SACK bitmap of
 * one packet of that size covers. */
static uint32_t window_for(const rdp_t *ep, uint32_t payload)
{
    uint32_t cap = pow2_at_most(ep->cfg.rcvbuf / payload);
    while (cap > 16 && cap / 8 > payload) cap >>= 1;
    return cap;
}

int rdp_recvq_init(rdp_t *ep, struct rdp_peer *p)
{
    /* what may be held out of order is bounded by our own buffers, each of our size */
    p->rx_hold_max = window_for(ep, ep->payload);
    p->rxcap = window_for(ep, p->payload);
    p->rxmask = p->rxcap - 1;
    p->rx = calloc(p->rxcap, sizeof *p->rx);
    return p->rx ? 0 : -1;
}

/* The window in the agreed packet size (a peer with a smaller MTU gets as many bytes in
 * flight as one with ours); the ring must be empty. Without memory it stays as it is. */
static void fit_window(rdp_t *ep, struct rdp_peer *p)
{
    uint32_t cap = window_for(ep, p->payload);
    if (cap == p->rxcap) return;
    struct rdp_buf **rx = calloc(cap, sizeof *rx);
    if (!rx) return;
    free(p->rx);
    p->rx = rx;
    p->rxcap = cap;
    p->rxmask = cap - 1;
}

void rdp_recvq_reset(rdp_t *ep, struct rdp_peer *p, uint32_t iseq)
{
    for (uint32_t i = 0; i < p->rxcap && p->rx_held; i++) {
        if (p->rx[i]) {
            rdp_pool_put(&ep->pool, p->rx[i]);
            p->rx[i] = NULL;
            p->rx_held--;
        }
    }
    p->rx_held = 0;
    fit_window(ep, p);
    p->rcv_nxt = p->rx_high = iseq;
    asm_abort(ep, p);
    p->asm_len = 0;
    p->ack_pending = 0;
    p->ack_now = false;
    p->ack_at = 0;
    p->interactive = false;
    p->delivered_ns = 0;
}

void rdp_recvq_free(struct rdp_peer *p)
{
    free(p->rx);
    free(p->asm_buf);
    free(p->piece);
    free(p->piece_iov);
    p->rx = NULL;
    p->asm_buf = NULL;
    p->piece = NULL;
    p->piece_iov = NULL;
    p->rxcap = p->asm_cap = 0;
    p->piece_cap = p->npiece = 0;
}

uint32_t rdp_rcv_wnd(const struct rdp_peer *p)
{
    return p->rxcap;
}

void rdp_ack_sent(struct rdp_peer *p)
{
    p->ack_pending = 0;
    p->ack_at = 0;
    /* an ACK without SACK information leaves a gap unreported */
    p->ack_now = p->rx_held > 0 && p->ack_now;
}

size_t rdp_sack_build(const struct rdp_peer *p, uint8_t *out, size_t max)
{
    if (!p->rx_held) return 0;
    uint32_t bits = p->rx_high - p->rcv_nxt - 1;
    size_t bytes = (bits + 7) / 8;
    if (bytes > max) bytes = max;
    memset(out, 0, bytes);
    for (uint32_t i = 0; i < bytes * 8; i++)
        if (p->rx[(p->rcv_nxt + 1 + i) & p->rxmask]) out[i / 8] |= (uint8_t)(1u << (i % 8));
    return bytes;
}

static bool grow_asm(struct rdp_peer *p, size_t need)
{
    if (p->asm_cap >= need) return true;
    size_t cap = p->asm_cap ? p->asm_cap : 65536;
    while (cap < need) cap *= 2;
    uint8_t *n = realloc(p->asm_buf, cap);
    if (!n) return false;
    p->asm_buf = n;
    p->asm_cap = cap;
    return true;
}

/* Hand a complete message to the application: in pieces to recvv, else joined (n == 1) to
 * recv. */
static void deliver_msg(rdp_t *ep, struct rdp_peer *p, const struct iovec *iov, int n, size_t len)
{
    p->st.msgs_recv++;
    p->st.bytes_recv += len;
    p->delivered_ns = ep->now;
    p->delivered_len = len;
    rdp_trace(RDP_TR_DELIVER, (uint32_t)len);
    if (ep->cb.recvv)
        ep->cb.recvv(ep->cb.ctx, p->node, iov, n, len);
    else if (ep->cb.recv)
        ep->cb.recv(ep->cb.ctx, p->node, iov[0].iov_base, len);
}

static void deliver_one(rdp_t *ep, struct rdp_peer *p, const uint8_t *msg, size_t len)
{
    struct iovec one = {(void *)(uintptr_t)msg, len};
    deliver_msg(ep, p, &one, 1, len);
}

static void pieces_release(rdp_t *ep, struct rdp_peer *p)
{
    for (uint32_t i = 0; i < p->npiece; i++) rdp_pool_put(&ep->pool, p->piece[i].buf);
    p->npiece = 0;
}

/* Give up the message being assembled. */
static void asm_abort(rdp_t *ep, struct rdp_peer *p)
{
    p->asm_active = false;
    pieces_release(ep, p);
}

/* Room for one more piece. The array is made at the first need, for a message of RDP_MAX_MSG
 * in packets of our own payload size; a peer that cuts smaller packets gets the rest of its
 * message joined instead (pieces_join), so that what is kept stays bounded. */
static bool pieces_room(rdp_t *ep, struct rdp_peer *p)
{
    if (!p->piece) {
        uint32_t cap = RDP_MAX_MSG / ep->payload + 2;
        p->piece = malloc(cap * sizeof *p->piece);
        p->piece_iov = malloc(cap * sizeof *p->piece_iov);
        if (!p->piece || !p->piece_iov) {
            free(p->piece);
            free(p->piece_iov);
            p->piece = NULL;
            p->piece_iov = NULL;
            return false;
        }
        p->piece_cap = cap;
    }
    return p->npiece < p->piece_cap;
}

/* Go on assembling the message by joining: the kept packets' payloads into asm_buf, where
 * the copied pieces already are. */
static void pieces_join(rdp_t *ep, struct rdp_peer *p)
{
    for (uint32_t i = 0; i < p->npiece; i++) {
        const struct rdp_piece *c = &p->piece[i];
        if (c->buf) memcpy(p->asm_buf + c->off, c->buf->data + RDP_HDR_LEN, c->len);
    }
    pieces_release(ep, p);
    p->asm_kept = false;
}

/* Append the in-order fragment *bp (payload: len bytes at data) to the message. Joining, or
 * for a view of a coalesced read (which is gone after its handling), the payload is copied
 * into asm_buf at its place in the message (asm_buf has room for the whole message from its
 * first packet on, so it never moves under a piece); in pieces, a packet buffer of our own
 * is kept as it is (*bp becomes NULL), and a run of copied bytes is one piece. */
static void asm_append(rdp_t *ep, struct rdp_peer *p, struct rdp_buf **bp, const uint8_t *data,
                       uint16_t len)
{
    uint32_t off = (uint32_t)p->asm_len;
    if (p->asm_kept && !(*bp)->borrowed && pieces_room(ep, p)) {
        p->piece[p->npiece++] = (struct rdp_piece){*bp, off, len};
        *bp = NULL;
        return;
    }
    memcpy(p->asm_buf + off, data, len);
    if (!p->asm_kept) return;
    struct rdp_piece *last = p->npiece ? &p->piece[p->npiece - 1] : NULL;
    if (last && !last->buf && last->off + last->len == off)
        last->len += len;
    else if (pieces_room(ep, p))
        p->piece[p->npiece++] = (struct rdp_piece){NULL, off, len};
    else
        pieces_join(ep, p); /* the bytes are in place already */
}

/* The complete message: in pieces, or asm_buf. */
static void asm_deliver(rdp_t *ep, struct rdp_peer *p)
{
    if (!p->asm_kept) {
        deliver_one(ep, p, p->asm_buf, p->asm_len);
        return;
    }
    for (uint32_t i = 0; i < p->npiece; i++) {
        const struct rdp_piece *c = &p->piece[i];
        p->piece_iov[i] =
            (struct iovec){c->buf ? c->buf->data + RDP_HDR_LEN : p->asm_buf + c->off, c->len};
    }
    deliver_msg(ep, p, p->piece_iov, (int)p->npiece, p->asm_len);
    pieces_release(ep, p);
}

/* One in-order packet (rcv_nxt already advanced past it). The fields were validated by
 * the decoder; a fragment that does not continue the message being assembled means a
 * broken peer: the partial message is dropped and counted, the stream goes on. */
static void consume(rdp_t *ep, struct rdp_peer *p, struct rdp_buf **bp)
{
    const uint8_t *pkt = (*bp)->data;
    uint16_t flags = be_get16(pkt + 2);
    uint32_t msg_len = be_get32(pkt + 40);
    uint16_t len = be_get16(pkt + 44);
    const uint8_t *data = pkt + RDP_HDR_LEN;

    if (flags & RDP_F_FIRST) {
        if (p->asm_active) rdp_count_drop(ep, p, RDP_DROP_MALFORMED);
        asm_abort(ep, p);
        if (flags & RDP_F_LAST) {
            deliver_one(ep, p, data, len);
            return;
        }
        p->asm_kept = ep->cb.recvv != NULL;
        if (!grow_asm(p, msg_len)) { /* room for the whole message, also in pieces */
            rdp_count_drop(ep, p, RDP_DROP_NOBUF);
            return;
        }
        p->asm_active = true;
        p->asm_msg_len = msg_len;
        p->asm_len = 0;
    } else if (!p->asm_active || msg_len != p->asm_msg_len) {
        rdp_count_drop(ep, p, RDP_DROP_MALFORMED);
        asm_abort(ep, p);
        return;
    }
    if (p->asm_len + len > p->asm_msg_len ||
        (!(flags & RDP_F_LAST) && p->asm_len + len == p->asm_msg_len)) {
        rdp_count_drop(ep, p, RDP_DROP_MALFORMED);
        asm_abort(ep, p);
        return;
    }
    asm_append(ep, p, bp, data, len);
    p->asm_len += len;
    if (flags & RDP_F_LAST) {
        p->asm_active = false;
        if (p->asm_len != p->asm_msg_len) {
            rdp_count_drop(ep, p, RDP_DROP_MALFORMED);
            pieces_release(ep, p);
            return;
        }
        asm_deliver(ep, p);
    }
}

void rdp_handle_data(rdp_t *ep, struct rdp_peer *p, const struct rdp_hdr *h, struct rdp_buf **bufp)
{
    uint32_t off = h->seq - p->rcv_nxt;
    if (h->flags & RDP_F_ACKREQ) p->ack_now = true; /* the sender waits for it */
    if (seq_lt(h->seq, p->rcv_nxt)) {
        rdp_count_drop(ep, p, RDP_DROP_DUPLICATE);
        p->ack_now = true; /* our ACK was probably lost */
        return;
    }
    if (off >= p->rxcap) {
        rdp_count_drop(ep, p, RDP_DROP_WINDOW);
        p->ack_now = true;
        return;
    }
    if (off > 0) {
        struct rdp_buf **s = &p->rx[h->seq & p->rxmask];
        bool room = p->rx_held < p->rx_hold_max;
        struct rdp_buf *k = *s || !room ? NULL : rdp_buf_keep(&ep->pool, *bufp);
        if (*s) {
            rdp_count_drop(ep, p, RDP_DROP_DUPLICATE);
        } else if (!k) {
            rdp_count_drop(ep, p, RDP_DROP_NOBUF); /* the sender retransmits it */
        } else {
            *s = k; /* keep it until the gap is filled */
            if (k == *bufp) *bufp = NULL;
            p->rx_held++;
            p->st.out_of_order++;
            if (seq_ge(h->seq, p->rx_high)) p->rx_high = h->seq + 1;
        }
        p->ack_now = true;
        return;
    }
    bool gap_filled = p->rx_held > 0;
    p->rcv_nxt++;
    p->ack_pending++;
    p->rx_lone = (h->flags & (RDP_F_FIRST | RDP_F_LAST)) == (RDP_F_FIRST | RDP_F_LAST);
    consume(ep, p, bufp); /* it may take the buffer (*bufp = NULL) */
    /* the callback may have run anything but rdp_close; our state is still ours */
    while (p->rx_held && p->state == RDP_ESTABLISHED) {
        struct rdp_buf **s = &p->rx[p->rcv_nxt & p->rxmask];
        if (!*s) break;
        struct rdp_buf *b = *s;
        *s = NULL;
        p->rx_held--;
        p->rcv_nxt++;
        p->ack_pending++;
        consume(ep, p, &b);
        rdp_pool_put(&ep->pool, b);
    }
    if (!p->rx_held) p->rx_high = p->rcv_nxt;
    if (gap_filled) p->ack_now = true;
}

/* How long a receiver holds back its ACK: ack_delay_us where an answer may carry it (a lone
 * packet, a whole message; or any on an interactive connection), at most
 * RDP_ACK_DELAY_BULK_US for a fragment of a longer message otherwise (a stream: the
 * sender's window waits for it). */
unsigned rdp_ack_delay_us(const rdp_t *ep, bool lone)
{
    unsigned d = ep->cfg.ack_delay_us;
    return lone || d < RDP_ACK_DELAY_BULK_US ? d : RDP_ACK_DELAY_BULK_US;
}

/* End of a round: acknowledge now, or arm the delayed ACK. Two or more packets are
 * acknowledged at once (as TCP does), except on an interactive connection: there the answer
 * is about to carry the ACK, also of a message still arriving, and a pure ACK would only
 * wake the peer for nothing. A sender that cannot go on without an ACK says so (ACKREQ:
 * ack_now), and so does a gap; RDP_ACK_DEFER_MAX bounds what is left unacknowledged. */
void rdp_flush_ack(rdp_t *ep, struct rdp_peer *p)
{
    if (p->state != RDP_ESTABLISHED) return;
    bool defer = p->interactive && p->ack_pending < RDP_ACK_DEFER_MAX;
    if (p->ack_now || (p->ack_pending >= 2 && !defer)) {
        rdp_send_ctl(ep, p, RDP_T_ACK);
        p->ack_now = false;
    } else if (p->ack_pending && !p->ack_at) {
        p->ack_at = ep->now + (uint64_t)rdp_ack_delay_us(ep, p->rx_lone || p->interactive) * 1000;
    }
}
