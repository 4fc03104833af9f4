/*
 * auth.c - packet MAC (ChaCha20-Poly1305 over associated data) and the anti-replay window.
 * The design is explained in auth.h.
 */
#include "auth.h"
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

void rdp_mac_sign(const uint8_t *key, uint32_t src, uint32_t dst, uint64_t pn, uint8_t *pkt,
                  size_t body_len)
{
    uint8_t n[12];
    unsigned long long maclen;
    nonce(n, src, dst, pn);
    uint8_t none[1];
    crypto_aead_chacha20poly1305_ietf_encrypt_detached(none, pkt + body_len, &maclen, NULL, 0, pkt,
                                                       body_len, NULL, n, key);
}

bool rdp_mac_verify(const uint8_t *key, uint32_t src, uint32_t dst, uint64_t pn, const uint8_t *pkt,
                    size_t body_len)
{
    uint8_t n[12];
    nonce(n, src, dst, pn);
    uint8_t none[1] = {0};
    return crypto_aead_chacha20poly1305_ietf_decrypt_detached(none, NULL, none, 0, pkt + body_len,
                                                              pkt, body_len, n, key) == 0;
}

int rdp_mac_available(enum rdp_mac_alg alg)
{
    if (sodium_init() < 0) return 0;
    if (alg == RDP_MAC_CHACHA20POLY1305) return 1;
    return alg == RDP_MAC_AES256GCM && crypto_aead_aes256gcm_is_available();
}

int rdp_mac_init(struct rdp_mac *m, enum rdp_mac_alg alg, const uint8_t *key)
{
    memset(m, 0, sizeof *m);
    if (!rdp_mac_available(alg)) {
        errno = ENOTSUP;
        return -1;
    }
    m->alg = alg;
    memcpy(m->key, key, sizeof m->key);
    if (alg == RDP_MAC_AES256GCM) crypto_aead_aes256gcm_beforenm(&m->aes, key);
    const EVP_CIPHER *c = alg == RDP_MAC_AES256GCM ? EVP_aes_256_gcm() : EVP_chacha20_poly1305();
    m->big = EVP_CIPHER_CTX_new();
    if (!m->big || EVP_EncryptInit_ex(m->big, c, NULL, key, NULL) != 1) {
        rdp_mac_free(m);
        errno = ENOMEM;
        return -1;
    }
    return 0;
}

void rdp_mac_free(struct rdp_mac *m)
{
    EVP_CIPHER_CTX_free(m->big);
    m->big = NULL;
    sodium_memzero(m->key, sizeof m->key);
    sodium_memzero(&m->aes, sizeof m->aes);
}

/* The tag of body_len bytes at pkt with libcrypto: the AEAD of an empty plaintext with pkt as
 * associated data, exactly as libsodium computes it. false only if libcrypto fails. */
static bool big_tag(const struct rdp_mac *m, const uint8_t n[12], const uint8_t *pkt,
                    size_t body_len, uint8_t tag[RDP_MAC_LEN])
{
    int outl;
    uint8_t none[16];
    return body_len <= INT32_MAX && EVP_EncryptInit_ex(m->big, NULL, NULL, NULL, n) == 1 &&
           EVP_EncryptUpdate(m->big, NULL, &outl, pkt, (int)body_len) == 1 &&
           EVP_EncryptFinal_ex(m->big, none, &outl) == 1 &&
           EVP_CIPHER_CTX_ctrl(m->big, EVP_CTRL_AEAD_GET_TAG, RDP_MAC_LEN, tag) == 1;
}

void rdp_mac_sign_ctx(const struct rdp_mac *m, uint32_t src, uint32_t dst, uint64_t pn,
                      uint8_t *pkt, size_t body_len)
{
    uint8_t n[12], none[1];
    unsigned long long maclen;
    nonce(n, src, dst, pn);
    if (body_len >= RDP_MAC_BIG && big_tag(m, n, pkt, body_len, pkt + body_len)) return;
    if (m->alg == RDP_MAC_CHACHA20POLY1305)
        crypto_aead_chacha20poly1305_ietf_encrypt_detached(none, pkt + body_len, &maclen, NULL, 0,
                                                           pkt, body_len, NULL, n, m->key);
    else
        crypto_aead_aes256gcm_encrypt_detached_afternm(none, pkt + body_len, &maclen, NULL, 0, pkt,
                                                       body_len, NULL, n, &m->aes);
}

bool rdp_mac_verify_ctx(const struct rdp_mac *m, uint32_t src, uint32_t dst, uint64_t pn,
                        const uint8_t *pkt, size_t body_len)
{
    uint8_t n[12], none[1] = {0}, tag[RDP_MAC_LEN];
    nonce(n, src, dst, pn);
    if (body_len >= RDP_MAC_BIG && big_tag(m, n, pkt, body_len, tag))
        return sodium_memcmp(tag, pkt + body_len, RDP_MAC_LEN) == 0;
    if (m->alg == RDP_MAC_CHACHA20POLY1305)
        return crypto_aead_chacha20poly1305_ietf_decrypt_detached(
                   none, NULL, none, 0, pkt + body_len, pkt, body_len, n, m->key) == 0;
    return crypto_aead_aes256gcm_decrypt_detached_afternm(none, NULL, none, 0, pkt + body_len, pkt,
                                                          body_len, n, &m->aes) == 0;
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
