/*
 * hbwire.c - heartbeat encoding and validating decoding (layout in hbwire.h).
 * Fuzz target: test/fuzz/fuzz_hbwire.c.
 */
#include "hbwire.h"

#include "bebytes.h"

#include <sodium.h>
#include <string.h>

void hb_mac(uint8_t out[16], const uint8_t *body, size_t len, const uint8_t key[32])
{
    crypto_generichash(out, 16, body, len, key, 32);
}

void hb_key_derive(const uint8_t cluster_key[32], uint8_t hb_key[32])
{
    crypto_kdf_derive_from_key(hb_key, 32, 1, "pshbeat1", cluster_key);
}

void hb_encode(uint8_t out[HB_LEN], const struct hb *h, const uint8_t key[32])
{
    memset(out, 0, HB_LEN);
    out[0] = HB_VERSION;
    out[1] = h->type;
    be_put32(out + 4, h->node);
    be_put64(out + 8, h->incarnation);
    be_put64(out + 16, h->seq);
    be_put32(out + 24, h->load_milli);
    be_put32(out + 28, h->used);
    be_put32(out + 32, h->cpus);
    be_put32(out + 36, h->task_epoch);
    hb_mac(out + 40, out, 40, key);
}

int hb_decode(const uint8_t *b, size_t n, struct hb *h, const uint8_t key[32], const char **why)
{
    uint8_t m[16];
    if (n != HB_LEN) return *why = "length", -1;
    if (b[0] != HB_VERSION) return *why = "version", -1;
    if (b[1] != HB_BEAT && b[1] != HB_LEAVING) return *why = "type", -1;
    if (b[2] || b[3]) return *why = "reserved", -1;
    hb_mac(m, b, 40, key);
    if (sodium_memcmp(m, b + 40, 16) != 0) return *why = "mac", -1;
    h->type = b[1];
    h->node = be_get32(b + 4);
    h->incarnation = be_get64(b + 8);
    h->seq = be_get64(b + 16);
    h->load_milli = be_get32(b + 24);
    h->used = be_get32(b + 28);
    h->cpus = be_get32(b + 32);
    h->task_epoch = be_get32(b + 36);
    return 0;
}
