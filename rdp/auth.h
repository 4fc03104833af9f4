/*
 * auth.h - packet authentication and replay protection.
 *
 * MAC: an AEAD over header and payload as associated data with an empty plaintext, keyed
 * with the cluster key: ChaCha20-Poly1305 (IETF) by default, AES-256-GCM (a GMAC) where
 * configured and the CPU has AES-NI. The 96-bit nonce is src_node (16 bits) | dst_node
 * (16 bits) | pn (64 bits): every sender numbers the packets to each destination with a
 * counter that starts at CLOCK_REALTIME in ns when the endpoint opens, so a nonce is never
 * used twice, also across restarts (as long as the clock does not step back by more than the
 * downtime). Retransmissions get a new pn.
 *
 * Two implementations of the same algorithm: libsodium below RDP_MAC_BIG bytes and OpenSSL's
 * libcrypto at and above it. They produce the same tag (a unit test checks it), so the choice
 * is local and never on the wire. libsodium is faster for small packets (no EVP call
 * overhead); libcrypto's AVX2/AVX-512 Poly1305 and GHASH are 2-4x faster for large ones, and
 * a 64 KiB datagram's MAC was the largest single cost of the loopback stream.
 *
 * Replay: the receiver keeps the highest pn seen from each peer and a 4096-packet window
 * below it (the scheme of IPsec and WireGuard); a pn seen before or older than the window is
 * dropped. The window is updated only after the MAC verified.
 */
#ifndef PSCLUSTER_RDP_AUTH_H
#define PSCLUSTER_RDP_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rdp.h"

#include <openssl/evp.h>
#include <sodium.h>

#define RDP_REPLAY_BITS 4096
#define RDP_MAC_BIG     2048 /* bytes from which libcrypto computes the MAC */

struct rdp_mac {
    enum rdp_mac_alg alg;
    uint8_t key[RDP_KEY_BYTES];
    crypto_aead_aes256gcm_state aes; /* expanded AES key */
    EVP_CIPHER_CTX *big;             /* libcrypto context keyed for alg (large packets) */
};

struct rdp_replay {
    uint64_t top; /* highest pn accepted; 0: none yet */
    uint64_t bits[RDP_REPLAY_BITS / 64];
};

/* 0, or -1 and errno: ENOTSUP if alg cannot run on this CPU, ENOMEM. */
int rdp_mac_init(struct rdp_mac *m, enum rdp_mac_alg alg, const uint8_t *key);
void rdp_mac_free(struct rdp_mac *m);
void rdp_mac_sign_ctx(const struct rdp_mac *m, uint32_t src, uint32_t dst, uint64_t pn,
                      uint8_t *pkt, size_t body_len);
bool rdp_mac_verify_ctx(const struct rdp_mac *m, uint32_t src, uint32_t dst, uint64_t pn,
                        const uint8_t *pkt, size_t body_len);

/* ChaCha20-Poly1305 with a raw key (tests and tools). pkt holds body_len bytes (header + payload);
 * the MAC is written at pkt + body_len. */
void rdp_mac_sign(const uint8_t *key, uint32_t src, uint32_t dst, uint64_t pn, uint8_t *pkt,
                  size_t body_len);
bool rdp_mac_verify(const uint8_t *key, uint32_t src, uint32_t dst, uint64_t pn, const uint8_t *pkt,
                    size_t body_len);

/* true if pn may be accepted (not seen, not too old). */
bool rdp_replay_check(const struct rdp_replay *r, uint64_t pn);
/* Record pn as seen (call after rdp_replay_check and the MAC succeeded). */
void rdp_replay_update(struct rdp_replay *r, uint64_t pn);

#endif
