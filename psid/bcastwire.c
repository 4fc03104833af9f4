/*
 * bcastwire.c - the file broadcast's messages: see bcastwire.h.
 */
#include "bcastwire.h"

#include "bebytes.h"
#include "treewire.h"
#include "../logger/outfile.h"

#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DIGEST_LABEL "pscluster file broadcast v1"

void bcast_digest(const char *dest, uint32_t flags, uint32_t mode, uint64_t size, uint8_t out[32])
{
    crypto_generichash_state st;
    uint8_t hdr[5], v[16];
    size_t n = strlen(dest);
    crypto_generichash_init(&st, NULL, 0, 32);
    crypto_generichash_update(&st, (const uint8_t *)DIGEST_LABEL, sizeof DIGEST_LABEL - 1);
    hdr[0] = 'D';
    be_put32(hdr + 1, (uint32_t)n);
    crypto_generichash_update(&st, hdr, sizeof hdr);
    crypto_generichash_update(&st, (const uint8_t *)dest, n);
    be_put32(v, flags & ~PSBCAST_F_PRESERVE);
    be_put32(v + 4, mode & 0777);
    be_put64(v + 8, size);
    crypto_generichash_update(&st, v, sizeof v);
    crypto_generichash_final(&st, out, 32);
}

int bcast_dest_check(const char *pat, char *err, size_t errsz)
{
    size_t n = strlen(pat);
    if (pat[0] != '/') {
        snprintf(err, errsz, "the destination %s is not an absolute path", pat);
        return -1;
    }
    if (n >= PSBCAST_DEST_MAX) {
        snprintf(err, errsz, "the destination is longer than %u bytes", PSBCAST_DEST_MAX - 1);
        return -1;
    }
    if (pat[n - 1] == '/') {
        snprintf(err, errsz, "the destination %s names a directory, not a file", pat);
        return -1;
    }
    char perr[200];
    int deps = lg_pat_check(pat, perr, sizeof perr);
    if (deps < 0) {
        snprintf(err, errsz, "the destination %s: %s", pat, perr);
        return -1;
    }
    if (deps & LG_PAT_RANK) {
        snprintf(err, errsz, "the destination %s: %%t (a rank) has no meaning for a node's copy",
                 pat);
        return -1;
    }
    return 0;
}

void bcast_open_free(struct bcast_open *o)
{
    free(o->parts);
    memset(o, 0, sizeof *o);
}

static int fail(struct bcast_open *o, const char **why, const char *text)
{
    bcast_open_free(o);
    *why = text;
    return -1;
}

static int by_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

int bcast_open_decode(const struct psmsg_view *body, uint32_t self, struct bcast_open *o,
                      const char **why)
{
    memset(o, 0, sizeof *o);
    const struct psmsg_view *v = body;
    if (psmsg_get_u64(v, PSF_BCAST_ID, &o->id) < 0 || psmsg_get_u32(v, PSF_UID, &o->uid) < 0 ||
        psmsg_get_u32(v, PSF_GID, &o->gid) < 0 || psmsg_get_u64(v, PSF_BYTES, &o->size) < 0 ||
        psmsg_get_u32(v, PSF_BCAST_MODE, &o->mode) < 0 ||
        psmsg_get_u32(v, PSF_BCAST_FLAGS, &o->flags) < 0 ||
        psmsg_get_u32(v, PSF_BCAST_CHUNK, &o->chunk) < 0 ||
        psmsg_get_u32(v, PSF_TREE_WIDTH, &o->width) < 0)
        return fail(o, why, "a field is missing");
    if (o->uid == UINT32_MAX || o->gid == UINT32_MAX) return fail(o, why, "uid or gid");
    if (o->size > BCAST_SIZE_MAX || o->flags & ~PSBCAST_F_ALL || o->mode & ~0777u ||
        o->chunk < BCAST_CHUNK_MIN || o->chunk > PSBCAST_CHUNK_MAX || o->width < 1 ||
        o->width > TREE_WIDTH_MAX)
        return fail(o, why, "size, flags, mode, chunk size or width out of range");
    struct psmsg_field f;
    char err[300];
    if (!psmsg_find(v, PSF_BCAST_DEST, &f) || psmsg_field_str(&f, o->dest, sizeof o->dest) < 0 ||
        bcast_dest_check(o->dest, err, sizeof err) < 0)
        return fail(o, why, "no destination, or not one psid takes");
    if (psmsg_find(v, PSF_BCAST_MTIME, &f) && psmsg_field_u64(&f, &o->mtime) < 0)
        return fail(o, why, "a modification time that is no u64");
    if (psmsg_find(v, PSF_BCAST_ATIME, &f) && psmsg_field_u64(&f, &o->atime) < 0)
        return fail(o, why, "an access time that is no u64");
    o->nchunks = bcast_nchunks(o->size, o->chunk);
    const char *why_text;
    size_t pos = 0, n = 0;
    while (psmsg_next(v, &pos, &f))
        if (f.tag == PSF_PART && ++n > BCAST_PARTS_MAX) return fail(o, why, "too many parts");
    if (!n) return fail(o, why, "no part");
    uint32_t *nodes = NULL, *places = NULL; /* to find a node twice, and each part's parent */
    if (!(o->parts = calloc(n, sizeof *o->parts)) || !(nodes = calloc(n, sizeof *nodes)) ||
        !(places = calloc(n, sizeof *places))) {
        free(nodes);
        return fail(o, why, "out of memory");
    }
    for (pos = 0; psmsg_next(v, &pos, &f);) {
        if (f.tag != PSF_PART) continue;
        struct bcast_part *p = &o->parts[o->n];
        p->rec = psmsg_record(&f);
        struct psmsg_field cf;
        if (psmsg_get_u32(&p->rec, PSF_NODE_ID, &p->node) < 0 ||
            psmsg_get_u32(&p->rec, PSF_TREE_POS, &p->pos) < 0 || p->pos < 1 ||
            psmsg_get_u32(&p->rec, PSF_NODE_INDEX, &p->nodeidx) < 0) {
            why_text = "a part without node, place or index";
            goto bad;
        }
        if (psmsg_find(&p->rec, PSF_CRED, &cf)) {
            p->cred = cf.val;
            p->credlen = cf.len;
        }
        if (o->n && p->pos <= o->parts[o->n - 1].pos) {
            why_text = "parts not in increasing place";
            goto bad;
        }
        if (o->n && !tree_under(p->pos, o->parts[0].pos, o->width)) {
            why_text = "a part outside the receiver's subtree";
            goto bad;
        }
        places[o->n] = p->pos;
        nodes[o->n++] = p->node;
    }
    for (size_t i = 1; i < o->n; i++) { /* connected: each part's parent is a part (sorted) */
        uint32_t up = (o->parts[i].pos - 1) / o->width;
        if (!bsearch(&up, places, i, sizeof *places, by_u32)) {
            why_text = "a part whose parent is missing";
            goto bad;
        }
    }
    qsort(nodes, o->n, sizeof *nodes, by_u32);
    for (size_t i = 1; i < o->n; i++)
        if (nodes[i] == nodes[i - 1]) {
            why_text = "a node in two parts";
            goto bad;
        }
    if (o->parts[0].node != self) {
        why_text = "its first part is not the receiver's";
        goto bad;
    }
    free(nodes);
    free(places);
    return 0;
bad:
    free(nodes);
    free(places);
    return fail(o, why, why_text);
}

size_t bcast_kids(const struct bcast_open *o, uint32_t *kid_of, uint32_t *kids)
{
    size_t nkids = 0;
    uint64_t p0 = o->parts[0].pos, k = o->width;
    for (size_t i = 1; i < o->n; i++) {
        uint64_t q = o->parts[i].pos;
        while ((q - 1) / k != p0) q = (q - 1) / k;
        if (q == o->parts[i].pos) { /* a child: the parts right after the receiver's */
            kid_of[i] = (uint32_t)nkids;
            kids[nkids++] = (uint32_t)i;
            continue;
        }
        size_t lo = 0, hi = nkids; /* its child among those found, by place */
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (o->parts[kids[mid]].pos < q)
                lo = mid + 1;
            else
                hi = mid;
        }
        kid_of[i] = (uint32_t)lo; /* decode made sure the child is there */
    }
    return nkids;
}

int bcast_data_decode(const struct psmsg_view *body, uint64_t *id, uint32_t *idx,
                      struct psmsg_field *data)
{
    if (psmsg_get_u64(body, PSF_BCAST_ID, id) < 0 || psmsg_get_u32(body, PSF_N, idx) < 0 ||
        !psmsg_find(body, PSF_DATA, data))
        return -1;
    return 0;
}

int bcast_end_decode(const struct psmsg_view *body, uint64_t *id, uint8_t sum[32])
{
    struct psmsg_field f;
    if (psmsg_get_u64(body, PSF_BCAST_ID, id) < 0 || !psmsg_find(body, PSF_BCAST_SUM, &f) ||
        f.len != 32)
        return -1;
    memcpy(sum, f.val, 32);
    return 0;
}

uint32_t bcast_nchunks(uint64_t size, uint32_t chunk)
{
    return chunk ? (uint32_t)((size + chunk - 1) / chunk) : 0;
}

size_t bcast_chunk_len(uint64_t size, uint32_t chunk, uint32_t idx)
{
    uint64_t at = (uint64_t)idx * chunk;
    if (!chunk || at >= size) return 0;
    return size - at < chunk ? (size_t)(size - at) : chunk;
}
