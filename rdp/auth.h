/*
 * auth.h - packet authentication and replay protection.
 *
 * MAC: an AEAD over header and payload as associated data with an empty plaintext:
 * ChaCha20-Poly1305 (IETF), which every node verifies, or AES-256-GCM (a GMAC), ~2x faster per
 * packet up to a few KiB, used toward a peer when both sides have AES-NI and allow it (the
 * handshake says which MACs a node verifies; the header says which MAC a packet carries).
 *
 * Keys (as WireGuard): the cluster key (or, for the preload, a key psid hands out) never
 * signs a data packet. From it comes the handshake key (rdp_hs_key), which authenticates
 * SYN, SYNACK and RST with keyed BLAKE2b: no nonce, so nothing to reuse. Each connection then
 * has a key per direction, derived by rdp_session_keys from the handshake key and both
 * halves of the handshake (endpoint ids, connection ids, initial sequence numbers and 32
 * fresh random bytes from each side). Under a direction key each algorithm has its own
 * subkey (crypto_kdf), so one key never serves two algorithms. The 96-bit nonce is src_node
 * (16 bits) | dst_node (16 bits) | pn (64 bits), where pn counts the packets of the
 * connection in that direction from 1: a key is used for one connection and direction only,
 * so a nonce is never used twice under a key, whatever the clocks do and however many
 * endpoints a node has. Retransmissions get a new pn.
 *
 * Implementations (enum rdp_mac_impl), all producing the same tags (a unit test checks them
 * against each other), so the choice is local and never on the wire:
 *  - Intel IPsec-MB (mac_ipsecmb.c), where it is built in: both algorithms at every size,
 *    2-5x faster than the others on AVX2/AVX-512 CPUs.
 *  - portable: libsodium below RDP_MAC_BIG bytes (no EVP call overhead) and OpenSSL's
 *    libcrypto at and above it (its AVX2/AVX-512 Poly1305 and GHASH are 2-4x faster than
 *    libsodium's for large packets).
 * The MAC of 64 KiB datagrams was the largest single cost of the loopback stream, and of
 * 1.4 KB datagrams the receiver's largest cost at MTU 1500.
 *
 * Replay: the receiver keeps, per connection, the highest pn seen and a 4096-packet window
 * below it (the scheme of IPsec and WireGuard); a pn seen before or older than the window is
 * dropped. The window is updated only after the MAC verified. Packets of an older connection
 * fail the MAC of the new one. Handshake packets carry pn 0 and are not counted: a replayed
 * SYN gets a SYNACK, but a connection needs the initiator's answer under the new keys (conn.c).
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
#define RDP_MAC_BIG     2048 /* bytes from which libcrypto computes the MAC (portable) */

struct rdp_mb;

struct rdp_mac {
    bool aes;                           /* AES-256-GCM usable: the CPU has it, config allows */
    struct rdp_mb *mb;                  /* IPsec-MB context; NULL: the portable path */
    uint8_t kc[RDP_KEY_BYTES];          /* ChaCha20-Poly1305 subkey */
    crypto_aead_aes256gcm_state aes_st; /* AES-256-GCM subkey, expanded (portable only) */
    EVP_CIPHER_CTX *big[2]; /* libcrypto contexts by algorithm (portable, large packets) */
};

struct rdp_replay {
    uint64_t top; /* highest pn accepted; 0: none yet */
    uint64_t bits[RDP_REPLAY_BITS / 64];
};

/* Derive both subkeys from the cluster key. pref (rdp_config.mac) says whether AES-256-GCM may
 * be used: RDP_MAC_CHACHA20POLY1305 never, RDP_MAC_AUTO where the CPU has it,
 * RDP_MAC_AES256GCM likewise but it is an error (ENOTSUP) if the CPU lacks it.
 * 0, or -1 and errno: ENOTSUP, ENOMEM, EINVAL (unknown pref). */
int rdp_mac_init(struct rdp_mac *m, enum rdp_mac_alg pref, const uint8_t *key);
/* The same with a given implementation (tests compare them). -1 and ENOTSUP also if impl is
 * not built in or cannot run on this CPU. */
int rdp_mac_init_impl(struct rdp_mac *m, enum rdp_mac_alg pref, const uint8_t *key,
                      enum rdp_mac_impl impl);
/* The implementation in use: "ipsec-mb/avx512", "ipsec-mb/avx2", ..., or "portable". */
const char *rdp_mac_impl_name(const struct rdp_mac *m);
void rdp_mac_free(struct rdp_mac *m);
/* The subkey of alg (RDP_MAC_CHACHA20POLY1305 or RDP_MAC_AES256GCM). */
void rdp_mac_subkey(const uint8_t *key, enum rdp_mac_alg alg, uint8_t sub[RDP_KEY_BYTES]);
/* pkt holds body_len bytes (header + payload); the MAC is written at pkt + body_len. alg is
 * RDP_MAC_CHACHA20POLY1305, or RDP_MAC_AES256GCM if m->aes. */
void rdp_mac_sign_ctx(const struct rdp_mac *m, enum rdp_mac_alg alg, uint32_t src, uint32_t dst,
                      uint64_t pn, uint8_t *pkt, size_t body_len);
/* Whether rdp_mac_sign_split can sign body_len bytes (header and payload) with alg: IPsec-MB's
 * GMAC, or libcrypto at RDP_MAC_BIG bytes and more; not libsodium, nor IPsec-MB's
 * ChaCha20-Poly1305, which take the data in one piece. */
bool rdp_mac_can_split(const struct rdp_mac *m, enum rdp_mac_alg alg, size_t body_len);
/* The tag rdp_mac_sign_ctx computes over hlen bytes at hdr followed by plen bytes at payload,
 * from the two pieces (hlen a multiple of 16): the sender signs a packet whose payload still
 * lies in the caller's buffer. Only where rdp_mac_can_split says so. */
void rdp_mac_sign_split(const struct rdp_mac *m, enum rdp_mac_alg alg, uint32_t src, uint32_t dst,
                        uint64_t pn, const uint8_t *hdr, size_t hlen, const uint8_t *payload,
                        size_t plen, uint8_t tag[16]);
/* false also for an algorithm m can't verify. */
bool rdp_mac_verify_ctx(const struct rdp_mac *m, enum rdp_mac_alg alg, uint32_t src, uint32_t dst,
                        uint64_t pn, const uint8_t *pkt, size_t body_len);

/* A MAC for another key with the same implementation and algorithms as `like` (sharing its
 * IPsec-MB manager, which must outlive it): a connection's direction keys. */
int rdp_mac_init_like(struct rdp_mac *m, const struct rdp_mac *like, const uint8_t *key);

/* The handshake key from the configured key; the handshake MAC (keyed BLAKE2b, 16 bytes,
 * written at pkt + body_len) and its check. */
#define RDP_HS_RAND 32
void rdp_hs_key(const uint8_t *key, uint8_t hkey[RDP_KEY_BYTES]);
void rdp_hs_sign(const uint8_t *hkey, uint8_t *pkt, size_t body_len);
bool rdp_hs_verify(const uint8_t *hkey, const uint8_t *pkt, size_t body_len);

/* One side's half of a handshake: its endpoint id (node | ep << 16), connection id, initial
 * sequence number and random bytes. */
struct rdp_half {
    uint32_t id, conn, iseq;
    uint8_t rand[RDP_HS_RAND];
};
/* The two direction keys of the connection between halves a and b (the same whichever side
 * computes them). */
void rdp_session_keys(const uint8_t *hkey, const struct rdp_half *a, const struct rdp_half *b,
                      uint8_t a_to_b[RDP_KEY_BYTES], uint8_t b_to_a[RDP_KEY_BYTES]);

/* A 64-bit fingerprint of a key (keyed BLAKE2b of a constant): both ends of a connection
 * can compare their keys without showing them. */
uint64_t rdp_key_id(const uint8_t key[RDP_KEY_BYTES]);

/* ChaCha20-Poly1305 with the given key (its subkey derived on each call; tests and tools). */
void rdp_mac_sign(const uint8_t *key, uint32_t src, uint32_t dst, uint64_t pn, uint8_t *pkt,
                  size_t body_len);
bool rdp_mac_verify(const uint8_t *key, uint32_t src, uint32_t dst, uint64_t pn, const uint8_t *pkt,
                    size_t body_len);

/* true if pn may be accepted (not seen, not too old). */
bool rdp_replay_check(const struct rdp_replay *r, uint64_t pn);
/* Record pn as seen (call after rdp_replay_check and the MAC succeeded). */
void rdp_replay_update(struct rdp_replay *r, uint64_t pn);

#endif
