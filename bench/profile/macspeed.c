/*
 * macspeed.c - how fast can this CPU authenticate one RDP packet? Throughput of the libsodium
 * constructions RDP could use as its per-packet MAC, each over a whole packet passed as
 * associated data (empty plaintext, as rdp/auth.c does), at the packet sizes of loopback
 * (64 KiB), jumbo (MTU 9000) and Ethernet (MTU 1500) RDP datagrams. Hot cache, one core.
 *
 * Built and run by bench/profile/rdp-perf.sh (case "mac"):
 *   cc -O2 -o macspeed bench/profile/macspeed.c -lsodium && ./macspeed
 * Prints one line per size: GB/s for ChaCha20-Poly1305 (RDP's default), plain Poly1305,
 * AES-256-GCM (if the CPU has AES-NI and PCLMUL), keyed BLAKE2b-128 and SipHash-2-4-128.
 */
#include <sodium.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define ROUND_BYTES 500000000.0 /* bytes per construction and size */

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int main(void)
{
    static unsigned char buf[65536], mac[64], key[32], nonce[32], none[1];
    /* MACed bytes = datagram (MTU - 28) minus the 16-byte MAC: header + payload */
    static const size_t sizes[] = {65507 - 16, 9000 - 28 - 16, 1500 - 28 - 16};
    if (sodium_init() < 0) return 1;
    randombytes_buf(buf, sizeof buf);
    randombytes_buf(key, sizeof key);
    memset(nonce, 0, sizeof nonce);
    int gcm = crypto_aead_aes256gcm_is_available();
    unsigned long long wl;
    for (int i = 0; i < 5000; i++) /* warm-up: caches, clock frequency */
        crypto_aead_chacha20poly1305_ietf_encrypt_detached(none, mac, &wl, NULL, 0, buf, sizeof buf,
                                                           NULL, nonce, key);
    printf("MACed bytes | chacha20poly1305 | poly1305 | aes256gcm | blake2b-keyed | siphashx24 "
           "(GB/s)\n");
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        size_t len = sizes[k];
        long iters = (long)(ROUND_BYTES / (double)len);
        double t[6];
        unsigned long long ml;
        t[0] = now();
        for (long i = 0; i < iters; i++)
            crypto_aead_chacha20poly1305_ietf_encrypt_detached(none, mac, &ml, NULL, 0, buf, len,
                                                               NULL, nonce, key);
        t[1] = now();
        for (long i = 0; i < iters; i++) crypto_onetimeauth_poly1305(mac, buf, len, key);
        t[2] = now();
        if (gcm)
            for (long i = 0; i < iters; i++)
                crypto_aead_aes256gcm_encrypt_detached(none, mac, &ml, NULL, 0, buf, len, NULL,
                                                       nonce, key);
        t[3] = now();
        for (long i = 0; i < iters; i++) crypto_generichash(mac, 16, buf, len, key, 32);
        t[4] = now();
        for (long i = 0; i < iters; i++) crypto_shorthash_siphashx24(mac, buf, len, key);
        t[5] = now();
        double gb = (double)len * (double)iters / 1e9;
        char g[16] = "n/a";
        if (gcm) snprintf(g, sizeof g, "%.2f", gb / (t[3] - t[2]));
        printf("%12zu | %16.2f | %8.2f | %9s | %13.2f | %10.2f\n", len, gb / (t[1] - t[0]),
               gb / (t[2] - t[1]), g, gb / (t[4] - t[3]), gb / (t[5] - t[4]));
    }
    return 0;
}
