/*
 * macspeed.c - how fast can this CPU authenticate one RDP packet? The two MACs RDP uses
 * (ChaCha20-Poly1305 and AES-256-GCM, each over the whole packet as associated data with an
 * empty plaintext, as rdp/auth.c does), each computed by libsodium and by OpenSSL's
 * libcrypto, at packet sizes around rdp/auth.c's switch-over (RDP_MAC_BIG, 2 KiB) and at the
 * sizes of Ethernet (MTU 1500), jumbo (MTU 9000) and loopback (64 KiB) datagrams.
 * Hot cache, one core; microseconds per packet and GB/s.
 *
 * Built and run by bench/profile/rdp-perf.sh (case "mac"):
 *   cc -O2 -o macspeed bench/profile/macspeed.c -lsodium -lcrypto && ./macspeed
 */
#include <openssl/evp.h>
#include <sodium.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define ROUND_BYTES 300000000.0 /* bytes per implementation and size */

static unsigned char buf[65536], tag[16], key[32], nonce[12], none[16];
static crypto_aead_aes256gcm_state aes;

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void sodium_cc(size_t len)
{
    unsigned long long ml;
    crypto_aead_chacha20poly1305_ietf_encrypt_detached(none, tag, &ml, NULL, 0, buf, len, NULL,
                                                       nonce, key);
}

static void sodium_gcm(size_t len)
{
    unsigned long long ml;
    crypto_aead_aes256gcm_encrypt_detached_afternm(none, tag, &ml, NULL, 0, buf, len, NULL, nonce,
                                                   &aes);
}

static EVP_CIPHER_CTX *ctx[2];

static void evp(int which, size_t len)
{
    int outl;
    EVP_EncryptInit_ex(ctx[which], NULL, NULL, NULL, nonce);
    EVP_EncryptUpdate(ctx[which], NULL, &outl, buf, (int)len);
    EVP_EncryptFinal_ex(ctx[which], none, &outl);
    EVP_CIPHER_CTX_ctrl(ctx[which], EVP_CTRL_AEAD_GET_TAG, 16, tag);
}

static void ossl_cc(size_t len)
{
    evp(0, len);
}
static void ossl_gcm(size_t len)
{
    evp(1, len);
}

/* microseconds per packet */
static double run(void (*fn)(size_t), size_t len)
{
    long iters = (long)(ROUND_BYTES / (double)len);
    double t0 = now();
    for (long i = 0; i < iters; i++) {
        nonce[0] = (unsigned char)i;
        fn(len);
    }
    return (now() - t0) / (double)iters * 1e6;
}

int main(void)
{
    /* MACed bytes = datagram minus the 16-byte MAC: header + payload */
    static const size_t sizes[] = {1024, 2048, 1500 - 28 - 16, 9000 - 28 - 16, 65507 - 16};
    if (sodium_init() < 0) return 1;
    randombytes_buf(buf, sizeof buf);
    randombytes_buf(key, sizeof key);
    int gcm = crypto_aead_aes256gcm_is_available();
    if (gcm) crypto_aead_aes256gcm_beforenm(&aes, key);
    ctx[0] = EVP_CIPHER_CTX_new();
    ctx[1] = EVP_CIPHER_CTX_new();
    if (!ctx[0] || !ctx[1] ||
        !EVP_EncryptInit_ex(ctx[0], EVP_chacha20_poly1305(), NULL, key, NULL) ||
        !EVP_EncryptInit_ex(ctx[1], EVP_aes_256_gcm(), NULL, key, NULL))
        return 1;
    run(sodium_cc, sizeof buf - 16); /* warm-up: caches, clock frequency */
    printf("MACed bytes | chacha20poly1305 us (GB/s): libsodium  libcrypto | aes256gcm us (GB/s): "
           "libsodium  libcrypto\n");
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        size_t len = sizes[k];
        double t[4] = {run(sodium_cc, len), run(ossl_cc, len), gcm ? run(sodium_gcm, len) : 0,
                       gcm ? run(ossl_gcm, len) : 0};
        printf("%11zu |", len);
        for (int i = 0; i < 4; i++) {
            if (i == 2) printf(" |");
            if (t[i] > 0)
                printf("  %7.3f (%5.2f)", t[i], (double)len / t[i] / 1e3);
            else
                printf("  %15s", "n/a");
        }
        printf("\n");
    }
    EVP_CIPHER_CTX_free(ctx[0]);
    EVP_CIPHER_CTX_free(ctx[1]);
    return 0;
}
