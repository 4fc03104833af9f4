/*
 * pmikvs.c - a PMI job's key-value store on one node (pmi.h): a chained hash table that
 * doubles as it fills, keyed with SipHash under a random key of its own, because the keys
 * come from user programs and colliding keys must not stall the daemon. It counts its keys
 * and their bytes; the bounds are the caller's (pmi.c checks them before a put).
 */
#include "pmi.h"

#include <sodium.h>
#include <stdlib.h>
#include <string.h>

struct pmikv {
    struct pmikv *next;
    uint64_t h;
    size_t klen, vlen;
    char data[]; /* key, NUL, value, NUL */
};

static uint64_t hash(const struct pmikvs *k, const char *key, size_t klen)
{
    uint8_t out[crypto_shorthash_BYTES];
    crypto_shorthash(out, (const unsigned char *)key, klen, k->hkey);
    uint64_t h;
    memcpy(&h, out, sizeof h);
    return h;
}

void pmikvs_init(struct pmikvs *k)
{
    memset(k, 0, sizeof *k);
    randombytes_buf(k->hkey, sizeof k->hkey);
}

void pmikvs_free(struct pmikvs *k)
{
    for (size_t i = 0; i < k->nb; i++)
        for (struct pmikv *e = k->b[i], *n; e; e = n) {
            n = e->next;
            free(e);
        }
    free(k->b);
    k->b = NULL;
    k->nb = k->n = k->bytes = 0;
}

static struct pmikv **slot(const struct pmikvs *k, uint64_t h, const char *key, size_t klen)
{
    struct pmikv **pp = &k->b[h & (k->nb - 1)];
    for (; *pp; pp = &(*pp)->next)
        if ((*pp)->h == h && (*pp)->klen == klen && memcmp((*pp)->data, key, klen) == 0) break;
    return pp;
}

const char *pmikvs_get(const struct pmikvs *k, const char *key, size_t klen, size_t *vlen)
{
    if (!k->nb) return NULL;
    struct pmikv *e = *slot(k, hash(k, key, klen), key, klen);
    if (!e) return NULL;
    if (vlen) *vlen = e->vlen;
    return e->data + e->klen + 1;
}

static int grow(struct pmikvs *k)
{
    size_t nb = k->nb ? k->nb * 2 : 64;
    struct pmikv **b = calloc(nb, sizeof *b);
    if (!b) return -1;
    for (size_t i = 0; i < k->nb; i++)
        for (struct pmikv *e = k->b[i], *n; e; e = n) {
            n = e->next;
            e->next = b[e->h & (nb - 1)];
            b[e->h & (nb - 1)] = e;
        }
    free(k->b);
    k->b = b;
    k->nb = nb;
    return 0;
}

int pmikvs_put(struct pmikvs *k, const char *key, size_t klen, const char *val, size_t vlen)
{
    if ((!k->nb || k->n >= k->nb) && grow(k) < 0 && !k->nb) return -1;
    uint64_t h = hash(k, key, klen);
    struct pmikv **pp = slot(k, h, key, klen), *old = *pp;
    struct pmikv *e = malloc(sizeof *e + klen + vlen + 2);
    if (!e) return -1;
    *e = (struct pmikv){.next = old ? old->next : NULL, .h = h, .klen = klen, .vlen = vlen};
    memcpy(e->data, key, klen);
    e->data[klen] = 0;
    memcpy(e->data + klen + 1, val, vlen);
    e->data[klen + 1 + vlen] = 0;
    *pp = e;
    if (old) {
        k->bytes -= old->klen + old->vlen;
        free(old);
    } else {
        k->n++;
    }
    k->bytes += klen + vlen;
    return 0;
}

int pmikvs_next(const struct pmikvs *k, struct pmikvs_it *it, const char **key, size_t *klen,
                const char **val, size_t *vlen)
{
    const struct pmikv *e = it->e ? it->e->next : NULL;
    size_t b = it->e ? it->b + 1 : it->b;
    while (!e && b < k->nb) e = k->b[b++];
    if (!e) {
        it->b = k->nb;
        it->e = NULL;
        return 0;
    }
    if (!it->e || it->e->next != e) it->b = b - 1; /* e came from bucket b - 1 */
    it->e = e;
    *key = e->data;
    *klen = e->klen;
    *val = e->data + e->klen + 1;
    *vlen = e->vlen;
    return 1;
}
