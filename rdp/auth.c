/*
 * auth.c - packet MAC (ChaCha20-Poly1305 or AES-256-GCM over associated data) and the
 * anti-replay window. The design is explained in auth.h.
 */
#include "auth.h"
#include "mac_ipsecmb.h"
#include "wire.h"

#include <errno.h>
#include <sodium.h>
#include <string.h>

static void nonce(uint8_t n[12], uint32_t src, uint32_t dst, uint64_t pn)
{
    be_put16(n, (uint16_t)src);
    be_put16(n + 2, (uint16_t)dst);
    be_put64(n + 4, pn);
}

void rdp_mac_subkey(const uint8_t *key, enum rdp_mac_alg alg, uint8_t sub[RDP_KEY_BYTES])
{
    /* subkey ids 1 and 2 under the context "rdp-mac1" */
    crypto_kdf_derive_from_key(sub, RDP_KEY_BYTES, alg == RDP_MAC_AES256GCM ? 2 : 1, "rdp-mac1",
                               key);
}

void rdp_mac_sign(const uint8_t *key, uint32_t src, uint32_t dst, uint64_t pn, uint8_t *pkt,
                  size_t body_len)
{
    uint8_t n[12], none[1], sub[RDP_KEY_BYTES];
    unsigned long long maclen;
    nonce(n, src, dst, pn);
    rdp_mac_subkey(key, RDP_MAC_CHACHA20POLY1305, sub);
    crypto_aead_chacha20poly1305_ietf_encrypt_detached(none, pkt + body_len, &maclen, NULL, 0, pkt,
                                                       body_len, NULL, n, sub);
    sodium_memzero(sub, sizeof sub);
}

bool rdp_mac_verify(const uint8_t *key, uint32_t src, uint32_t dst, uint64_t pn, const uint8_t *pkt,
                    size_t body_len)
{
    uint8_t n[12], none[1] = {0}, sub[RDP_KEY_BYTES];
    nonce(n, src, dst, pn);
    rdp_mac_subkey(key, RDP_MAC_CHACHA20POLY1305, sub);
    bool ok = crypto_aead_chacha20poly1305_ietf_decrypt_detached(
                  none, NULL, none, 0, pkt + body_len, pkt, body_len, n, sub) == 0;
    sodium_memzero(sub, sizeof sub);
    return ok;
}

int rdp_mac_available(enum rdp_mac_alg alg)
{
    if (sodium_init() < 0) return 0;
    if (alg == RDP_MAC_CHACHA20POLY1305 || alg == RDP_MAC_AUTO) return 1;
    return alg == RDP_MAC_AES256GCM && crypto_aead_aes256gcm_is_available();
}

int rdp_mac_impl_available(enum rdp_mac_impl impl)
{
    if (impl == RDP_MAC_IMPL_BEST || impl == RDP_MAC_IMPL_PORTABLE) return 1;
    if (impl != RDP_MAC_IMPL_IPSECMB) return 0;
    static const uint8_t zero[RDP_KEY_BYTES];
    struct rdp_mb *mb = rdp_mb_new(zero, NULL);
    rdp_mb_free(mb);
    return mb != NULL;
}

int rdp_mac_init(struct rdp_mac *m, enum rdp_mac_alg pref, const uint8_t *key)
{
    return rdp_mac_init_impl(m, pref, key, RDP_MAC_IMPL_BEST);
}

/* The key schedules of both subkeys of key: on `with`'s IPsec-MB manager where it has one,
 * else the portable path's (libsodium's AES state, libcrypto's contexts). */
static int mac_keys(struct rdp_mac *m, const struct rdp_mb *with, enum rdp_mac_impl impl,
                    const uint8_t *key)
{
    uint8_t ka[RDP_KEY_BYTES];
    rdp_mac_subkey(key, RDP_MAC_CHACHA20POLY1305, m->kc);
    rdp_mac_subkey(key, RDP_MAC_AES256GCM, ka);
    if (with) {
        m->mb = rdp_mb_new_shared(with, m->kc, m->aes ? ka : NULL);
        if (!m->mb) {
            sodium_memzero(ka, sizeof ka);
            return -1;
        }
    } else if (impl != RDP_MAC_IMPL_PORTABLE) {
        m->mb = rdp_mb_new(m->kc, m->aes ? ka : NULL);
        if (!m->mb && (impl == RDP_MAC_IMPL_IPSECMB || errno != ENOTSUP)) {
            sodium_memzero(ka, sizeof ka);
            return -1;
        }
    }
    /* the portable path's key schedules, only where it is the one used: no unused key copies */
    if (m->aes && !m->mb) crypto_aead_aes256gcm_beforenm(&m->aes_st, ka);
    const EVP_CIPHER *c[2] = {EVP_chacha20_poly1305(), EVP_aes_256_gcm()};
    const uint8_t *k[2] = {m->kc, ka};
    bool ok = true;
    for (int i = 0; !m->mb && i < (m->aes ? 2 : 1); i++) {
        m->big[i] = EVP_CIPHER_CTX_new();
        ok = ok && m->big[i] && EVP_EncryptInit_ex(m->big[i], c[i], NULL, k[i], NULL) == 1;
    }
    sodium_memzero(ka, sizeof ka);
    if (!ok) errno = ENOMEM;
    return ok ? 0 : -1;
}

int rdp_mac_init_impl(struct rdp_mac *m, enum rdp_mac_alg pref, const uint8_t *key,
                      enum rdp_mac_impl impl)
{
    memset(m, 0, sizeof *m);
    if ((pref != RDP_MAC_CHACHA20POLY1305 && pref != RDP_MAC_AES256GCM && pref != RDP_MAC_AUTO) ||
        (impl != RDP_MAC_IMPL_BEST && impl != RDP_MAC_IMPL_PORTABLE &&
         impl != RDP_MAC_IMPL_IPSECMB)) {
        errno = EINVAL;
        return -1;
    }
    if (!rdp_mac_available(pref)) {
        errno = ENOTSUP;
        return -1;
    }
    m->aes = pref != RDP_MAC_CHACHA20POLY1305 && rdp_mac_available(RDP_MAC_AES256GCM);
    if (mac_keys(m, NULL, impl, key) < 0) {
        int e = errno;
        rdp_mac_free(m);
        errno = e;
        return -1;
    }
    return 0;
}

int rdp_mac_init_like(struct rdp_mac *m, const struct rdp_mac *like, const uint8_t *key)
{
    memset(m, 0, sizeof *m);
    m->aes = like->aes;
    if (mac_keys(m, like->mb, RDP_MAC_IMPL_PORTABLE, key) < 0) {
        int e = errno;
        rdp_mac_free(m);
        errno = e;
        return -1;
    }
    return 0;
}

void rdp_mac_free(struct rdp_mac *m)
{
    rdp_mb_free(m->mb);
    m->mb = NULL;
    for (int i = 0; i < 2; i++) {
        EVP_CIPHER_CTX_free(m->big[i]);
        m->big[i] = NULL;
    }
    sodium_memzero(m->kc, sizeof m->kc);
    sodium_memzero(&m->aes_st, sizeof m->aes_st);
}

/* The tag of body_len bytes at pkt with libcrypto: the AEAD of an empty plaintext with pkt as
 * associated data, exactly as libsodium computes it. false only if libcrypto fails. */
static bool big_tag(EVP_CIPHER_CTX *x, const uint8_t n[12], const uint8_t *pkt, size_t body_len,
                    uint8_t tag[RDP_MAC_LEN])
{
    int outl;
    uint8_t none[16];
    return body_len <= INT32_MAX && EVP_EncryptInit_ex(x, NULL, NULL, NULL, n) == 1 &&
           EVP_EncryptUpdate(x, NULL, &outl, pkt, (int)body_len) == 1 &&
           EVP_EncryptFinal_ex(x, none, &outl) == 1 &&
           EVP_CIPHER_CTX_ctrl(x, EVP_CTRL_AEAD_GET_TAG, RDP_MAC_LEN, tag) == 1;
}

void rdp_mac_sign_ctx(const struct rdp_mac *m, enum rdp_mac_alg alg, uint32_t src, uint32_t dst,
                      uint64_t pn, uint8_t *pkt, size_t body_len)
{
    uint8_t n[12], none[1];
    unsigned long long maclen;
    nonce(n, src, dst, pn);
    bool aes = alg == RDP_MAC_AES256GCM && m->aes;
    if (m->mb) {
        rdp_mb_tag(m->mb, aes, n, pkt, body_len, pkt + body_len);
        return;
    }
    if (body_len >= RDP_MAC_BIG && big_tag(m->big[aes], n, pkt, body_len, pkt + body_len)) return;
    if (aes)
        crypto_aead_aes256gcm_encrypt_detached_afternm(none, pkt + body_len, &maclen, NULL, 0, pkt,
                                                       body_len, NULL, n, &m->aes_st);
    else
        crypto_aead_chacha20poly1305_ietf_encrypt_detached(none, pkt + body_len, &maclen, NULL, 0,
                                                           pkt, body_len, NULL, n, m->kc);
}

_Static_assert(RDP_MAC_LEN == crypto_verify_16_BYTES, "tags are compared with crypto_verify_16");

bool rdp_mac_can_split(const struct rdp_mac *m, enum rdp_mac_alg alg, size_t body_len)
{
    bool aes = alg == RDP_MAC_AES256GCM;
    if (aes && !m->aes) return false;
    if (m->mb) return aes; /* IPsec-MB's ChaCha20-Poly1305 takes its data in one piece */
    return body_len >= RDP_MAC_BIG && body_len <= INT32_MAX;
}

void rdp_mac_sign_split(const struct rdp_mac *m, enum rdp_mac_alg alg, uint32_t src, uint32_t dst,
                        uint64_t pn, const uint8_t *hdr, size_t hlen, const uint8_t *payload,
                        size_t plen, uint8_t tag[16])
{
    uint8_t n[12], none[16];
    int outl;
    nonce(n, src, dst, pn);
    bool aes = alg == RDP_MAC_AES256GCM;
    if (m->mb) {
        rdp_mb_gmac2(m->mb, n, hdr, hlen, payload, plen, tag);
        return;
    }
    /* libcrypto takes associated data in several updates before the (empty) plaintext */
    EVP_CIPHER_CTX *x = m->big[aes];
    if (EVP_EncryptInit_ex(x, NULL, NULL, NULL, n) != 1 ||
        EVP_EncryptUpdate(x, NULL, &outl, hdr, (int)hlen) != 1 ||
        EVP_EncryptUpdate(x, NULL, &outl, payload, (int)plen) != 1 ||
        EVP_EncryptFinal_ex(x, none, &outl) != 1 ||
        EVP_CIPHER_CTX_ctrl(x, EVP_CTRL_AEAD_GET_TAG, RDP_MAC_LEN, tag) != 1)
        memset(tag, 0, RDP_MAC_LEN); /* libcrypto failed: the receiver drops the packet */
}

bool rdp_mac_verify_ctx(const struct rdp_mac *m, enum rdp_mac_alg alg, uint32_t src, uint32_t dst,
                        uint64_t pn, const uint8_t *pkt, size_t body_len)
{
    uint8_t n[12], none[1] = {0}, tag[RDP_MAC_LEN];
    if (alg == RDP_MAC_AES256GCM && !m->aes) return false;
    bool aes = alg == RDP_MAC_AES256GCM;
    nonce(n, src, dst, pn);
    if (m->mb) {
        rdp_mb_tag(m->mb, aes, n, pkt, body_len, tag);
        return crypto_verify_16(tag, pkt + body_len) == 0; /* constant time */
    }
    if (body_len >= RDP_MAC_BIG && big_tag(m->big[aes], n, pkt, body_len, tag))
        return crypto_verify_16(tag, pkt + body_len) == 0; /* constant time */
    if (aes)
        return crypto_aead_aes256gcm_decrypt_detached_afternm(none, NULL, none, 0, pkt + body_len,
                                                              pkt, body_len, n, &m->aes_st) == 0;
    return crypto_aead_chacha20poly1305_ietf_decrypt_detached(none, NULL, none, 0, pkt + body_len,
                                                              pkt, body_len, n, m->kc) == 0;
}

void rdp_hs_key(const uint8_t *key, uint8_t hkey[RDP_KEY_BYTES])
{
    crypto_kdf_derive_from_key(hkey, RDP_KEY_BYTES, 1, "rdp-hs-1", key);
}

void rdp_hs_sign(const uint8_t *hkey, uint8_t *pkt, size_t body_len)
{
    crypto_generichash(pkt + body_len, RDP_MAC_LEN, pkt, body_len, hkey, RDP_KEY_BYTES);
}

bool rdp_hs_verify(const uint8_t *hkey, const uint8_t *pkt, size_t body_len)
{
    uint8_t tag[RDP_MAC_LEN];
    crypto_generichash(tag, sizeof tag, pkt, body_len, hkey, RDP_KEY_BYTES);
    return crypto_verify_16(tag, pkt + body_len) == 0;
}

void rdp_session_keys(const uint8_t *hkey, const struct rdp_half *a, const struct rdp_half *b,
                      uint8_t a_to_b[RDP_KEY_BYTES], uint8_t b_to_a[RDP_KEY_BYTES])
{
    /* both ends hash the same transcript: the half of the lower id first */
    bool swap = b->id < a->id || (b->id == a->id && b->conn < a->conn);
    const struct rdp_half *lo = swap ? b : a, *hi = swap ? a : b;
    uint8_t t[16 + 2 * (12 + RDP_HS_RAND)], okm[2 * RDP_KEY_BYTES], *q = t;
    memcpy(q, "rdp session v2\0\0", 16);
    q += 16;
    for (int i = 0; i < 2; i++) {
        const struct rdp_half *h = i ? hi : lo;
        be_put32(q, h->id);
        be_put32(q + 4, h->conn);
        be_put32(q + 8, h->iseq);
        memcpy(q + 12, h->rand, RDP_HS_RAND);
        q += 12 + RDP_HS_RAND;
    }
    crypto_generichash(okm, sizeof okm, t, sizeof t, hkey, RDP_KEY_BYTES);
    /* okm's first half keys lo -> hi, its second half hi -> lo */
    memcpy(a_to_b, okm + (swap ? RDP_KEY_BYTES : 0), RDP_KEY_BYTES);
    memcpy(b_to_a, okm + (swap ? 0 : RDP_KEY_BYTES), RDP_KEY_BYTES);
    sodium_memzero(okm, sizeof okm);
}

uint64_t rdp_key_id(const uint8_t key[RDP_KEY_BYTES])
{
    uint8_t out[8];
    crypto_generichash(out, sizeof out, (const uint8_t *)"rdp-key-id", 10, key, RDP_KEY_BYTES);
    return be_get64(out);
}

const char *rdp_mac_impl_name(const struct rdp_mac *m)
{
    return m->mb ? rdp_mb_arch(m->mb) : "portable";
}

#define WORDS (RDP_REPLAY_BITS / 64)

bool rdp_replay_check(const struct rdp_replay *r, uint64_t pn)
{
    if (pn == 0) return false;
    if (pn > r->top) return true;
    /* one word of the ring is the one top lives in, so the usable depth is a word less */
    if (r->top - pn >= RDP_REPLAY_BITS - 64) return false;
    return !(r->bits[(pn / 64) % WORDS] >> (pn % 64) & 1);
}

void rdp_replay_update(struct rdp_replay *r, uint64_t pn)
{
    if (pn > r->top) {
        /* clear the words that slide into the window between the old and new top */
        uint64_t from = r->top / 64 + 1, to = pn / 64;
        if (r->top == 0 || to - from + 1 >= WORDS)
            memset(r->bits, 0, sizeof r->bits);
        else
            for (uint64_t w = from; w <= to; w++) r->bits[w % WORDS] = 0;
        r->top = pn;
    }
    r->bits[(pn / 64) % WORDS] |= 1ull << (pn % 64);
}
