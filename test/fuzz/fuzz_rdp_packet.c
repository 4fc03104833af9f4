/*
 * fuzz_rdp_packet.c - libFuzzer target for the whole receive path of an RDP endpoint.
 *
 * The input is a sequence of packets (2-byte length, then header and payload). Each packet
 * is made authentic before it is handed to rdp_handle_packet, so the fuzzer reaches past
 * authentication into the state machine (handshakes, offers of a restarted peer, RSTs,
 * data, reassembly, SACKs): a handshake gets the handshake key's MAC; a DATA or ACK whose
 * connection ids are 1 gets the ids of the endpoint's connection (or of a kept offer, for a
 * dst_conn of 2), a fresh packet number and a valid MAC under that connection's key (of the
 * algorithm its header names). The endpoint's own packets go to a
 * socket nobody reads. Nothing may crash, leak or trip the sanitizers.
 */
#include "../../rdp/internal.h"

#include <arpa/inet.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint8_t key[32];

static void on_recv(void *ctx, uint32_t node, const void *msg, size_t len)
{
    (void)ctx;
    (void)node;
    volatile uint8_t x = len ? ((const uint8_t *)msg)[len - 1] : 0;
    (void)x;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct rdp_config c;
    rdp_config_defaults(&c);
    c.mtu = 1500;
    c.offload = 0; /* packets go straight to rdp_handle_packet; no GRO buffers to set up */
    struct sockaddr_in *a = (struct sockaddr_in *)&c.bind;
    a->sin_family = AF_INET;
    a->sin_addr.s_addr = htonl(0x7f000001);
    memcpy(c.key, key, sizeof key);
    struct rdp_callbacks cb = {.recv = on_recv};
    rdp_t *ep = rdp_open(&c, &cb);
    if (!ep) return 0;
    struct sockaddr_in peer = {.sin_family = AF_INET, .sin_port = htons(9)};
    peer.sin_addr.s_addr = htonl(0x7f000001);
    rdp_add_peer(ep, 1, (struct sockaddr *)&peer, sizeof peer);
    if (size && data[0] & 1) rdp_send(ep, 1, "hello", 5); /* start from SYN_SENT sometimes */

    uint64_t pn = 1;
    ep->in_process = true;
    while (size >= 2) {
        size_t n = (size_t)data[0] << 8 | data[1];
        data += 2;
        size -= 2;
        if (n > size) n = size;
        if (n > ep->max_dgram) n = ep->max_dgram;
        struct rdp_buf *b = rdp_pool_get(&ep->pool);
        if (!b) break;
        memcpy(b->data, data, n);
        b->len = (uint32_t)n;
        data += n;
        size -= n;
        if (n >= RDP_OVERHEAD) {
            /* make it authentic: sender node 1, to us */
            be_put16(b->data + 4, 1);
            be_put16(b->data + 6, 0);
            be_put16(b->data + 8, 0);
            be_put16(b->data + 10, 0);
            uint8_t type = b->data[1];
            struct rdp_peer *p = rdp_peer_get(ep, 1);
            if (type != RDP_T_DATA && type != RDP_T_ACK) {
                be_put64(b->data + RDP_OFF_PN, 0);
                rdp_hs_sign(ep->hkey, b->data, n - RDP_MAC_LEN);
            } else if (p) {
                bool offer = p->cand && be_get32(b->data + 16) == 2;
                const struct rdp_mac *k = offer ? &p->cand->rx : p->keyed ? &p->key_rx : NULL;
                if (be_get32(b->data + 12) == 1)
                    be_put32(b->data + 12, offer ? p->cand->theirs.conn : p->peer_conn);
                if (be_get32(b->data + 16) == 1 || offer)
                    be_put32(b->data + 16, offer ? p->cand->mine.conn : p->my_conn);
                be_put64(b->data + RDP_OFF_PN, pn);
                /* with the MAC the header names (AES-256-GCM too, where this CPU has it) */
                enum rdp_mac_alg alg =
                    be_get16(b->data + RDP_OFF_MAC) == RDP_MAC_AES256GCM && ep->mac.aes
                        ? RDP_MAC_AES256GCM
                        : RDP_MAC_CHACHA20POLY1305;
                if (k) rdp_mac_sign_ctx(k, alg, 1, 0, pn, b->data, n - RDP_MAC_LEN);
                pn++;
            }
        }
        ep->now = rdp_now_ns();
        rdp_handle_packet(ep, &b, (struct sockaddr *)&peer);
        if (b) rdp_pool_put(&ep->pool, b);
        for (uint32_t i = 0; i < ep->ndirty; i++) {
            ep->dirty[i]->dirty = false;
            rdp_flush_ack(ep, ep->dirty[i]);
        }
        ep->ndirty = 0;
        rdp_io_flush(ep);
    }
    ep->in_process = false;
    rdp_close(ep);
    return 0;
}
