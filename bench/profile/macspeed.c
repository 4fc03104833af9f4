/*
 * macspeed.c - how fast can this CPU authenticate one RDP packet? The two MACs RDP uses
 * (ChaCha20-Poly1305 and AES-256-GCM, each over the whole packet as associated data with an
 * empty plaintext, as rdp/auth.c does), each computed by libsodium, by OpenSSL's libcrypto
 * (rdp/auth.c's portable path switches from the one to the other at RDP_MAC_BIG, 2 KiB) and,
 * where its header is installed, by Intel IPsec-MB (rdp/mac_ipsecmb.c, the default there), at
 * sizes around 2 KiB and at the sizes of Ethernet (MTU 1500), jumbo (MTU 9000) and loopback
 * (64 KiB) datagrams. Hot cache, one core; microseconds per packet and GB/s.
 *
 * Built and run by bench/profile/rdp-perf.sh (case "mac"):
 *   cc -O2 -DHAVE_IPSEC_MB -o macspeed bench/profile/macspeed.c -lsodium -lcrypto -lIPSec_MB
 */
#ifdef HAVE_IPSEC_MB
#include <intel-ipsec-mb.h>
#endif
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

#ifdef HAVE_IPSEC_MB
static IMB_MGR *mb;
static DECLARE_ALIGNED(struct gcm_key_data mb_gk, 64);

static void mb_cc(size_t len)
{
    struct chacha20_poly1305_context_data c;
    IMB_CHACHA20_POLY1305_INIT(mb, key, &c, nonce, buf, len);
    IMB_CHACHA20_POLY1305_ENC_FINALIZE(mb, &c, tag, 16);
}

/* one call, as rdp/mac_ipsecmb.c MACs a packet in one piece (the GMAC calls that take it in
 * pieces, for a payload still in the sender's buffer, take ~20 ns more per packet) */
static void mb_gcm(size_t len)
{
    struct gcm_context_data c;
    IMB_AES256_GCM_ENC(mb, &mb_gk, &c, NULL, NULL, 0, nonce, buf, len, tag, 16);
}
#endif

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
    /* columns: ChaCha20-Poly1305 by libsodium, libcrypto, IPsec-MB; then AES-256-GCM */
    void (*fn[6])(size_t) = {
        sodium_cc, ossl_cc, NULL, gcm ? sodium_gcm : NULL, gcm ? ossl_gcm : NULL, NULL};
#ifdef HAVE_IPSEC_MB
    IMB_ARCH arch;
    if ((mb = alloc_mb_mgr(0))) {
        init_mb_mgr_auto(mb, &arch);
        fn[2] = mb_cc;
        if (gcm) {
            IMB_AES256_GCM_PRE(mb, key, &mb_gk);
            fn[5] = mb_gcm;
        }
    }
#endif
    run(sodium_cc, sizeof buf - 16); /* warm-up: caches, clock frequency */
    printf("MACed bytes | chacha20poly1305 us (GB/s): libsodium  libcrypto  ipsec-mb | "
           "aes256gcm us (GB/s): libsodium  libcrypto  ipsec-mb\n");
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        size_t len = sizes[k];
        printf("%11zu |", len);
        for (int i = 0; i < 6; i++) {
            if (i == 3) printf(" |");
            double t = fn[i] ? run(fn[i], len) : 0;
            if (t > 0)
                printf("  %7.3f (%5.2f)", t, (double)len / t / 1e3);
            else
                printf("  %15s", "n/a");
        }
        printf("\n");
    }
    EVP_CIPHER_CTX_free(ctx[0]);
    EVP_CIPHER_CTX_free(ctx[1]);
    return 0;
}
