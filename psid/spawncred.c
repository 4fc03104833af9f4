/*
 * spawncred.c - the spawn credential (see spawncred.h): its encoding and MAC, the digest of
 * the program it lets run, and the book in which a checking child counts the ranks started
 * on each credential until it expires, so that none is used twice over.
 */
#include "spawncred.h"

#include "bebytes.h"
#include "psproto.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAC_AT       92
#define BOOK_BUCKETS 4096
#define DIGEST_LABEL "pscluster spawn program v1"

void spawncred_key(const uint8_t cluster_key[32], uint8_t key[32])
{
    crypto_kdf_derive_from_key(key, 32, 2, "psspawn1", cluster_key);
}

static void mac(const uint8_t *in, const uint8_t key[32], uint8_t out[32])
{
    crypto_generichash(out, 32, in, MAC_AT, key, 32);
}

void spawncred_encode(const struct spawncred *c, const uint8_t key[32], uint8_t out[SPAWNCRED_LEN])
{
    memset(out, 0, SPAWNCRED_LEN);
    out[0] = SPAWNCRED_VERSION;
    be_put32(out + 4, c->origin);
    be_put32(out + 8, c->target);
    be_put32(out + 12, c->uid);
    be_put32(out + 16, c->gid);
    be_put32(out + 20, c->nranks);
    be_put64(out + 24, c->job);
    be_put64(out + 36, c->issued);
    memcpy(out + 44, c->nonce, 16);
    memcpy(out + 60, c->digest, 32);
    mac(out, key, out + MAC_AT);
}

int spawncred_decode(const uint8_t *in, size_t len, const uint8_t key[32], struct spawncred *c,
                     const char **why)
{
    static const uint8_t zero[4];
    uint8_t m[32];
    if (len != SPAWNCRED_LEN) {
        *why = "not the length of a spawn credential";
        return -1;
    }
    mac(in, key, m);
    if (crypto_verify_32(m, in + MAC_AT) != 0) {
        *why = "its MAC is wrong: altered, or not made by a psid of this cluster";
        return -1;
    }
    if (in[0] != SPAWNCRED_VERSION || memcmp(in + 1, zero, 3) || memcmp(in + 32, zero, 4)) {
        *why = "an unknown version of spawn credential";
        return -1;
    }
    c->origin = be_get32(in + 4);
    c->target = be_get32(in + 8);
    c->uid = be_get32(in + 12);
    c->gid = be_get32(in + 16);
    c->nranks = be_get32(in + 20);
    c->job = be_get64(in + 24);
    c->issued = be_get64(in + 36);
    memcpy(c->nonce, in + 44, 16);
    memcpy(c->digest, in + 60, 32);
    return 0;
}

static void hash_field(struct spawncred_hash *h, uint8_t tag, const void *p, size_t n)
{
    uint8_t hdr[5] = {tag};
    be_put32(hdr + 1, (uint32_t)n);
    crypto_generichash_update(&h->st, hdr, sizeof hdr);
    crypto_generichash_update(&h->st, p, n);
}

void spawncred_hash_init(struct spawncred_hash *h)
{
    crypto_generichash_init(&h->st, NULL, 0, 32);
    crypto_generichash_update(&h->st, (const uint8_t *)DIGEST_LABEL, sizeof DIGEST_LABEL - 1);
}

void spawncred_hash_arg(struct spawncred_hash *h, const void *p, size_t n)
{
    hash_field(h, 'A', p, n);
}

void spawncred_hash_env(struct spawncred_hash *h, const void *p, size_t n)
{
    hash_field(h, 'E', p, n);
}

void spawncred_hash_out(struct spawncred_hash *h, const char *out_pat, const char *err_pat,
                        uint32_t append, const char *name)
{
    uint8_t a[4];
    be_put32(a, append ? 1 : 0);
    hash_field(h, 'O', out_pat ? out_pat : "", out_pat ? strlen(out_pat) : 0);
    hash_field(h, 'R', err_pat ? err_pat : "", err_pat ? strlen(err_pat) : 0);
    hash_field(h, 'M', a, sizeof a);
    hash_field(h, 'X', name ? name : "", name ? strlen(name) : 0);
}

void spawncred_hash_arg0_pattern(struct spawncred_hash *h)
{
    hash_field(h, 'P', "1", 1);
}

void spawncred_hash_final(const struct spawncred_hash *h, const char *cwd, uint32_t umask,
                          uint8_t out[32])
{
    struct spawncred_hash t = *h;
    uint8_t u[4];
    be_put32(u, umask & 0777);
    hash_field(&t, 'C', cwd ? cwd : "", cwd ? strlen(cwd) : 0);
    hash_field(&t, 'U', u, sizeof u);
    crypto_generichash_final(&t.st, out, 32);
}

/* ---- the book of credentials taken ---- */

struct entry {
    uint32_t origin, used, nranks;
    uint8_t nonce[16];
    uint64_t until; /* monotonic: forgotten then */
    struct entry *chain, *newer;
};

struct spawncred_book {
    struct entry *tab[BOOK_BUCKETS];
    struct entry *oldest, *newest; /* by insertion, which is by expiry */
    size_t n;
};

struct spawncred_book *spawncred_book_new(void)
{
    return calloc(1, sizeof(struct spawncred_book));
}

void spawncred_book_free(struct spawncred_book *b)
{
    if (!b) return;
    while (b->oldest) {
        struct entry *e = b->oldest;
        b->oldest = e->newer;
        free(e);
    }
    free(b);
}

size_t spawncred_book_size(const struct spawncred_book *b)
{
    return b ? b->n : 0;
}

/* Nonces are random (a privileged child made them), but mixed whole all the same. */
static struct entry **bucket(struct spawncred_book *b, const uint8_t nonce[16])
{
    uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */
    for (int i = 0; i < 16; i++) h = (h ^ nonce[i]) * 0x100000001b3ull;
    return &b->tab[(h ^ h >> 32) % BOOK_BUCKETS];
}

static void expire(struct spawncred_book *b, uint64_t now)
{
    while (b->oldest && b->oldest->until <= now) {
        struct entry *e = b->oldest;
        for (struct entry **pp = bucket(b, e->nonce); *pp; pp = &(*pp)->chain)
            if (*pp == e) {
                *pp = e->chain;
                break;
            }
        b->oldest = e->newer;
        if (!b->oldest) b->newest = NULL;
        b->n--;
        free(e);
    }
}

static int refuse(char *why, size_t whylen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int refuse(char *why, size_t whylen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, whylen, fmt, ap);
    va_end(ap);
    return -1;
}

int spawncred_check(const uint8_t *in, size_t len, const uint8_t key[32],
                    const struct spawncred_want *w, uint64_t now_real, uint64_t now_mono,
                    struct spawncred_book *b, char *why, size_t whylen)
{
    struct spawncred c;
    const char *bad;
    if (!in || !len) return refuse(why, whylen, "no spawn credential");
    if (spawncred_decode(in, len, key, &c, &bad) < 0)
        return refuse(why, whylen, "spawn credential refused: %s", bad);
    if (c.target != w->node)
        return refuse(why, whylen, "spawn credential refused: it is for node %u", c.target);
    if (PSTID_NODE(c.job) != c.origin || c.job != w->job)
        return refuse(why, whylen, "spawn credential refused: it is for job %u:%u of node %u",
                      PSTID_NODE(c.job), (unsigned)PSTID_PID(c.job), c.origin);
    if (c.uid != w->uid || c.gid != w->gid)
        return refuse(why, whylen,
                      "spawn credential refused: it is for uid %u gid %u, not uid %u gid %u", c.uid,
                      c.gid, w->uid, w->gid);
    if (sodium_memcmp(c.digest, w->digest, 32) != 0)
        return refuse(why, whylen,
                      "spawn credential refused: it is for another program (arguments, "
                      "environment, directory or umask differ)");
    if (c.issued > now_real + SPAWNCRED_SKEW_NS)
        return refuse(why, whylen,
                      "spawn credential refused: issued %.0f s in the future (node %u's clock?)",
                      (double)(c.issued - now_real) / 1e9, c.origin);
    if (now_real > c.issued + SPAWNCRED_TTL_NS)
        return refuse(why, whylen, "spawn credential refused: expired (issued %.0f s ago)",
                      (double)(now_real - c.issued) / 1e9);
    if (!b) return refuse(why, whylen, "spawn credential refused: no book to count it in");
    expire(b, now_mono);
    struct entry **pp = bucket(b, c.nonce), *e = *pp;
    while (e && (e->origin != c.origin || memcmp(e->nonce, c.nonce, 16))) e = e->chain;
    if (e && e->used >= e->nranks)
        return refuse(why, whylen, "spawn credential refused: replayed (its %u ranks have started)",
                      e->nranks);
    if (e) {
        e->used++;
        return 0;
    }
    if (!c.nranks) return refuse(why, whylen, "spawn credential refused: it is for no rank");
    if (b->n >= SPAWNCRED_BOOK_MAX || !(e = calloc(1, sizeof *e)))
        return refuse(why, whylen, "spawn credential refused: %zu credentials in use here", b->n);
    *e = (struct entry){.origin = c.origin,
                        .used = 1,
                        .nranks = c.nranks,
                        .until = now_mono + SPAWNCRED_TTL_NS + SPAWNCRED_SKEW_NS,
                        .chain = *pp};
    memcpy(e->nonce, c.nonce, 16);
    *pp = e;
    if (b->newest)
        b->newest->newer = e;
    else
        b->oldest = e;
    b->newest = e;
    b->n++;
    return 0;
}
