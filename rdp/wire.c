/*
 * wire.c - encoding and validating decoding of the RDP header (layout in wire.h).
 *
 * The decoder is the first code to touch bytes from the network: it checks every length
 * before it reads and rejects anything the state machine would have to guess about.
 * Fuzz target: test/fuzz/fuzz_rdp_decode.c.
 */
#include "wire.h"

#include <string.h>

void rdp_hdr_encode(uint8_t *b, const struct rdp_hdr *h)
{
    b[0] = h->version;
    b[1] = h->type;
    be_put16(b + 2, h->flags);
    be_put16(b + 4, (uint16_t)h->src_node);
    be_put16(b + 6, h->src_ep);
    be_put16(b + 8, (uint16_t)h->dst_node);
    be_put16(b + 10, h->dst_ep);
    be_put32(b + 12, h->src_conn);
    be_put32(b + 16, h->dst_conn);
    be_put32(b + 20, h->seq);
    be_put32(b + 24, h->ack);
    be_put32(b + 28, h->wnd);
    be_put64(b + 32, h->pn);
    be_put32(b + 40, h->msg_len);
    be_put16(b + 44, h->len);
    be_put16(b + RDP_OFF_MAC, h->mac);
}

void rdp_hdr_patch(uint8_t *b, uint32_t ack, uint32_t wnd, uint64_t pn)
{
    be_put32(b + RDP_OFF_ACK, ack);
    be_put32(b + RDP_OFF_WND, wnd);
    be_put64(b + RDP_OFF_PN, pn);
}

static bool fail(enum rdp_drop_reason *why, enum rdp_drop_reason r)
{
    *why = r;
    return false;
}

bool rdp_hdr_decode(const uint8_t *b, size_t n, struct rdp_hdr *h, enum rdp_drop_reason *why)
{
    if (n < RDP_OVERHEAD) return fail(why, RDP_DROP_SHORT);
    if (n > RDP_MAX_DGRAM) return fail(why, RDP_DROP_MALFORMED);
    h->version = b[0];
    if (h->version != RDP_VERSION) return fail(why, RDP_DROP_VERSION);
    h->type = b[1];
    h->flags = be_get16(b + 2);
    h->src_node = be_get16(b + 4);
    h->src_ep = be_get16(b + 6);
    h->dst_node = be_get16(b + 8);
    h->dst_ep = be_get16(b + 10);
    h->src_conn = be_get32(b + 12);
    h->dst_conn = be_get32(b + 16);
    h->seq = be_get32(b + 20);
    h->ack = be_get32(b + 24);
    h->wnd = be_get32(b + 28);
    h->pn = be_get64(b + 32);
    h->msg_len = be_get32(b + 40);
    h->len = be_get16(b + 44);
    h->mac = be_get16(b + RDP_OFF_MAC);
    if (h->mac != RDP_MAC_CHACHA20POLY1305 && h->mac != RDP_MAC_AES256GCM)
        return fail(why, RDP_DROP_MALFORMED);
    if ((size_t)h->len + RDP_OVERHEAD != n) return fail(why, RDP_DROP_MALFORMED);
    if (h->src_conn == 0) return fail(why, RDP_DROP_MALFORMED);
    /* data and ACKs count from 1 under their connection's keys; handshakes carry no number */
    bool hs = h->type == RDP_T_SYN || h->type == RDP_T_SYNACK || h->type == RDP_T_RST;
    if (hs ? h->pn != 0 : h->pn == 0) return fail(why, RDP_DROP_MALFORMED);

    switch (h->type) {
    case RDP_T_DATA:
        if (h->flags & ~(RDP_F_FIRST | RDP_F_LAST | RDP_F_ACKREQ))
            return fail(why, RDP_DROP_MALFORMED);
        if (h->len == 0 || h->msg_len == 0 || h->msg_len > RDP_MAX_MSG || h->len > h->msg_len)
            return fail(why, RDP_DROP_MALFORMED);
        /* a message that fits one packet must be FIRST|LAST */
        if ((h->flags & RDP_F_FIRST) && (h->flags & RDP_F_LAST) && h->len != h->msg_len)
            return fail(why, RDP_DROP_MALFORMED);
        if (h->dst_conn == 0) return fail(why, RDP_DROP_MALFORMED);
        break;
    case RDP_T_ACK:
        if (h->flags || h->msg_len || h->dst_conn == 0) return fail(why, RDP_DROP_MALFORMED);
        break;
    case RDP_T_SYN:
        if (h->flags || h->mac || h->msg_len || h->len != RDP_HS_LEN || h->dst_conn != 0)
            return fail(why, RDP_DROP_MALFORMED);
        break;
    case RDP_T_SYNACK:
    case RDP_T_RST:
        if (h->flags || h->mac || h->msg_len || h->len != RDP_HS_LEN || h->dst_conn == 0)
            return fail(why, RDP_DROP_MALFORMED);
        break;
    default:
        return fail(why, RDP_DROP_MALFORMED);
    }
    if (hs) {
        uint32_t max_payload = be_get32(b + RDP_HDR_LEN + 8);
        if (max_payload < RDP_MIN_PAYLOAD || max_payload > RDP_MAX_DGRAM - RDP_OVERHEAD)
            return fail(why, RDP_DROP_MALFORMED);
    }
    return true;
}

void rdp_hs_encode(uint8_t *p, const struct rdp_hs *hs)
{
    be_put64(p, hs->incarnation);
    be_put32(p + 8, hs->max_payload);
    be_put32(p + 12, hs->macs);
    memcpy(p + 16, hs->rand, sizeof hs->rand);
}

void rdp_hs_decode(const uint8_t *p, struct rdp_hs *hs)
{
    hs->incarnation = be_get64(p);
    hs->max_payload = be_get32(p + 8);
    hs->macs = be_get32(p + 12);
    memcpy(hs->rand, p + 16, sizeof hs->rand);
}
