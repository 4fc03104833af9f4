/*
 * mac_ipsecmb.h - the packet MAC computed by Intel's IPsec-MB library (x86-64 only).
 *
 * The same two MACs as auth.c's portable path (ChaCha20-Poly1305 and AES-256-GCM over the
 * packet as associated data, empty plaintext), the same tags bit for bit, but 2-5x faster at
 * every packet size on CPUs with AVX2 or AVX-512: IPsec-MB multiplies four GHASH blocks per
 * VPCLMULQDQ and runs Poly1305 on 512-bit registers, where libsodium 1.0.18 and OpenSSL 3.0
 * use 128-bit code (bench/RESULTS.md has the figures). The library is built in when its
 * header was found at build time (HAVE_IPSEC_MB; scripts/install-deps.sh installs
 * libipsec-mb-dev on amd64); without it rdp_mb_new fails with ENOTSUP and auth.c uses
 * libsodium and libcrypto.
 */
#ifndef PSCLUSTER_RDP_MAC_IPSECMB_H
#define PSCLUSTER_RDP_MAC_IPSECMB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct rdp_mb;

/* A context for the ChaCha20-Poly1305 subkey kc and, if ka is not NULL, the AES-256-GCM
 * subkey ka (both 32 bytes). NULL and errno: ENOTSUP (not built in, or the library cannot run
 * on this CPU), ENOMEM. */
struct rdp_mb *rdp_mb_new(const uint8_t *kc, const uint8_t *ka);
/* The same keys' context on the library manager of `with` (allocated once per endpoint: a
 * manager is large, a key schedule small), which must outlive it. */
struct rdp_mb *rdp_mb_new_shared(const struct rdp_mb *with, const uint8_t *kc, const uint8_t *ka);
/* Wipes the keys. NULL is fine. */
void rdp_mb_free(struct rdp_mb *mb);
/* The 16-byte tag of len bytes at data under nonce n; aes only if the context has ka. */
void rdp_mb_tag(const struct rdp_mb *mb, bool aes, const uint8_t n[12], const uint8_t *data,
                size_t len, uint8_t tag[16]);
/* The AES-256-GCM tag (the context must have ka) of the alen bytes at a followed by the blen
 * bytes at b, without joining them: the sender's MAC over a header and a payload that still
 * lies in the caller's buffer. alen must be a multiple of 16 unless blen is 0. */
void rdp_mb_gmac2(const struct rdp_mb *mb, const uint8_t n[12], const uint8_t *a, size_t alen,
                  const uint8_t *b, size_t blen, uint8_t tag[16]);
/* The library and the code path it chose for this CPU: "ipsec-mb/avx512", "ipsec-mb/avx2",
 * ...; "none" without a context. */
const char *rdp_mb_arch(const struct rdp_mb *mb);

#endif
