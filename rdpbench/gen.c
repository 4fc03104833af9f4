/*
 * gen.c - rdpbench's message generator and verifier (see gen.h).
 */
#include "gen.h"

#include "bebytes.h"

#include <endian.h>
#include <inttypes.h>
#include <math.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

uint64_t rb_mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

int rb_gen_init(struct rb_gen *g, uint64_t seed, uint32_t smin, uint32_t smax)
{
    g->seed = seed;
    g->smin = smin;
    g->smax = smax;
    double r = ((double)smax + 1.0) / (double)smin;
    for (int k = 0; k < 24; k++) g->root[k] = r = sqrt(r);
    g->pat = malloc(RB_PAT_LEN);
    if (!g->pat) return -1;
    uint8_t k[crypto_stream_chacha20_KEYBYTES], s[8], nonce[crypto_stream_chacha20_NONCEBYTES];
    static const char label[] = "rdpbench pattern v1";
    be_put64(s, seed);
    crypto_generichash(k, sizeof k, s, sizeof s, (const unsigned char *)label, sizeof label - 1);
    memset(nonce, 0, sizeof nonce);
    crypto_stream_chacha20(g->pat, RB_PAT_LEN, nonce, k);
    return 0;
}

static uint64_t msg_hash(const struct rb_gen *g, uint64_t i)
{
    return rb_mix64(g->seed ^ rb_mix64(i));
}

size_t rb_msg_len(const struct rb_gen *g, uint64_t i)
{
    if (g->smin == g->smax) return g->smin;
    uint64_t u = rb_mix64(msg_hash(g, i) ^ 0x5a5a5a5a5a5a5a5aull) >> 40; /* 24 fraction bits */
    double v = (double)g->smin;
    for (int k = 0; k < 24; k++)
        if (u & (1ull << (23 - k))) v *= g->root[k];
    uint64_t n = (uint64_t)v;
    if (n < g->smin) n = g->smin;
    if (n > g->smax) n = g->smax;
    return (size_t)n;
}

void rb_msg_fill(const struct rb_gen *g, uint64_t i, uint8_t *buf, size_t len)
{
    uint8_t idx[8];
    be_put64(idx, i);
    if (len < 8) {
        memcpy(buf, idx + 8 - len, len);
        return;
    }
    memcpy(buf, idx, 8);
    uint64_t h = msg_hash(g, i), m = htole64(rb_mix64(h));
    const uint8_t *src = g->pat + (h & 0xffff);
    size_t k = 8;
    for (; k + 8 <= len; k += 8) {
        uint64_t w;
        memcpy(&w, src + k, 8);
        w ^= m;
        memcpy(buf + k, &w, 8);
    }
    for (; k < len; k++) buf[k] = src[k] ^ ((const uint8_t *)&m)[k & 7];
}

/* The first position in [pos, pos + n) at which the bytes at buf (message i's bytes from pos
 * on) differ from message i's pattern, or SIZE_MAX. Bytes 0..7 (the index) are not looked at. */
static size_t pattern_diff(const struct rb_gen *g, uint64_t i, size_t pos, const uint8_t *buf,
                           size_t n)
{
    uint64_t h = msg_hash(g, i), m = htole64(rb_mix64(h)), mk;
    const uint8_t *src = g->pat + (h & 0xffff), *mb = (const uint8_t *)&m;
    size_t k = pos < 8 ? 8 : pos, end = pos + n;
    /* byte k is masked with mb[k & 7]: words from any k on take the mask rotated by k & 7
     * bytes (a piece of a message may start anywhere) */
    uint8_t m2[16];
    memcpy(m2, mb, 8);
    memcpy(m2 + 8, mb, 8);
    memcpy(&mk, m2 + (k & 7), 8);
    for (; k + 8 <= end; k += 8) {
        uint64_t w, x;
        memcpy(&w, src + k, 8);
        memcpy(&x, buf + k - pos, 8);
        if ((w ^ mk) != x) break;
    }
    for (; k < end; k++)
        if (buf[k - pos] != (src[k] ^ mb[k & 7])) return k;
    return SIZE_MAX;
}

bool rb_msg_check_iov(const struct rb_gen *g, uint64_t i, const struct iovec *iov, int n,
                      size_t len, char *why, size_t wl)
{
    size_t want = rb_msg_len(g, i);
    uint8_t idx[8], head[8];
    be_put64(idx, i);
    size_t hl = len < 8 ? len : 8, got = 0;
    for (int k = 0; k < n && got < hl; k++) {
        size_t c = iov[k].iov_len < hl - got ? iov[k].iov_len : hl - got;
        memcpy(head + got, iov[k].iov_base, c);
        got += c;
    }
    if (len >= 8 && want >= 8 && be_get64(head) != i) {
        uint64_t h = be_get64(head);
        if (h < i)
            snprintf(why, wl,
                     "message #%" PRIu64 " expected, got #%" PRIu64
                     " (%zu bytes) again: duplicated or reordered",
                     i, h, len);
        else
            snprintf(why, wl,
                     "message #%" PRIu64 " expected, got #%" PRIu64
                     " (%zu bytes): lost or reordered",
                     i, h, len);
        return false;
    }
    if (len != want) {
        snprintf(why, wl,
                 "message #%" PRIu64 ": %zu bytes, expected %zu (lost, mixed or truncated)", i, len,
                 want);
        return false;
    }
    if (memcmp(head, idx + 8 - hl, hl) != 0) {
        snprintf(why, wl, "message #%" PRIu64 " (%zu bytes): index bytes differ (another message?)",
                 i, len);
        return false;
    }
    size_t pos = 0;
    for (int k = 0; k < n; k++) {
        const uint8_t *buf = iov[k].iov_base;
        size_t at = pattern_diff(g, i, pos, buf, iov[k].iov_len);
        if (at != SIZE_MAX) {
            uint64_t h = msg_hash(g, i), m = htole64(rb_mix64(h));
            uint8_t e = g->pat[(h & 0xffff) + at] ^ ((const uint8_t *)&m)[at & 7];
            snprintf(why, wl,
                     "message #%" PRIu64 " (%zu bytes): byte %zu is 0x%02x, expected 0x%02x "
                     "(corrupted)",
                     i, len, at, buf[at - pos], e);
            return false;
        }
        pos += iov[k].iov_len;
    }
    return true;
}

bool rb_msg_check(const struct rb_gen *g, uint64_t i, const uint8_t *buf, size_t len, char *why,
                  size_t wl)
{
    struct iovec one = {(void *)(uintptr_t)buf, len};
    return rb_msg_check_iov(g, i, &one, 1, len, why, wl);
}
