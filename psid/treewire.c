/*
 * treewire.c - the launch tree's messages: see treewire.h.
 */
#include "treewire.h"

#include "psproto.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool tree_under(uint64_t q, uint64_t p, uint32_t k)
{
    if (!k) return q == p;
    while (q > p) q = (q - 1) / k;
    return q == p;
}

bool tree_common_field(uint16_t tag)
{
    return tag != PSF_PART && tag != PSF_TREE_WIDTH;
}

size_t tree_part_find(const struct tree_part *parts, size_t lo, size_t hi, uint32_t pos)
{
    size_t end = hi;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (parts[mid].pos < pos)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < end && parts[lo].pos == pos ? lo : end;
}

void tree_spawn_free(struct tree_spawn *t)
{
    free(t->parts);
    memset(t, 0, sizeof *t);
}

static int fail(struct tree_spawn *t, const char **why, const char *text)
{
    tree_spawn_free(t);
    *why = text;
    return -1;
}

int tree_spawn_decode(const struct psmsg_view *body, uint32_t self, struct tree_spawn *t,
                      const char **why)
{
    memset(t, 0, sizeof *t);
    if (psmsg_get_u64(body, PSF_JOB, &t->job) < 0) return fail(t, why, "no job");
    if (psmsg_get_u32(body, PSF_TREE_WIDTH, &t->width) < 0 || t->width < 1 ||
        t->width > TREE_WIDTH_MAX)
        return fail(t, why, "no tree width, or out of range");
    size_t pos = 0, n = 0;
    struct psmsg_field f;
    while (psmsg_next(body, &pos, &f))
        if (f.tag == PSF_PART && ++n > TREE_PARTS_MAX) return fail(t, why, "too many parts");
    if (!n) return fail(t, why, "no part");
    if (!(t->parts = calloc(n, sizeof *t->parts))) return fail(t, why, "out of memory");
    for (pos = 0; psmsg_next(body, &pos, &f);) {
        if (f.tag != PSF_PART) continue;
        struct tree_part *p = &t->parts[t->n];
        p->rec = psmsg_record(&f);
        if (psmsg_get_u32(&p->rec, PSF_NODE_ID, &p->node) < 0 ||
            psmsg_get_u32(&p->rec, PSF_TREE_POS, &p->pos) < 0 || p->pos < 1)
            return fail(t, why, "a part without node or place");
        size_t rp = 0;
        struct psmsg_field rf;
        uint32_t r;
        while (psmsg_next(&p->rec, &rp, &rf))
            if (rf.tag == PSF_RANK) {
                if (psmsg_field_u32(&rf, &r) < 0) return fail(t, why, "a rank that is no u32");
                p->nranks++;
            }
        if (!p->nranks) return fail(t, why, "a part without ranks");
        if (t->n && p->pos <= t->parts[t->n - 1].pos)
            return fail(t, why, "parts not in increasing place");
        if (t->n && !tree_under(p->pos, t->parts[0].pos, t->width))
            return fail(t, why, "a part outside the receiver's subtree");
        t->n++;
    }
    /* connected: every part's parent is a part too (parts are sorted: a binary search) */
    for (size_t i = 1; i < t->n; i++) {
        uint32_t up = (t->parts[i].pos - 1) / t->width;
        if (tree_part_find(t->parts, 0, i, up) == i)
            return fail(t, why, "a part whose parent is missing");
    }
    if (t->parts[0].node != self) return fail(t, why, "its first part is not the receiver's");
    for (size_t i = 1; i < t->n; i++)
        if (t->parts[i].node == self) return fail(t, why, "the receiver has two parts");
    return 0;
}

void tree_put_local(struct psmsg_buf *b, const struct psmsg_view *body, const struct tree_part *p)
{
    size_t pos = 0;
    struct psmsg_field f;
    while (psmsg_next(body, &pos, &f))
        if (tree_common_field(f.tag)) psmsg_put_bytes(b, f.tag, f.val, f.len);
    for (pos = 0; psmsg_next(&p->rec, &pos, &f);)
        if (f.tag != PSF_NODE_ID && f.tag != PSF_TREE_POS) psmsg_put_bytes(b, f.tag, f.val, f.len);
}

void tree_lost_text(char *buf, size_t len, uint32_t node, const char *name)
{
    snprintf(buf, len,
             "node %u (%s) of the launch tree was lost during the launch: the starts of its "
             "subtree are unknown",
             node, name ? name : "?");
}

int tree_start_decode(const struct psmsg_view *rec, struct tree_start *s, const char **why)
{
    memset(s, 0, sizeof *s);
    if (psmsg_get_u32(rec, PSF_RANK, &s->rank) < 0 ||
        psmsg_get_u32(rec, PSF_NODE_ID, &s->node) < 0) {
        *why = "no rank or node";
        return -1;
    }
    struct psmsg_field f;
    if (psmsg_get_u64(rec, PSF_TID, &s->tid) == 0) {
        s->ok = true;
        if (psmsg_find(rec, PSF_CPU_LIST, &f) && psmsg_field_str(&f, s->cpus, sizeof s->cpus) < 0) {
            *why = "a CPU list that is no string or too long";
            return -1;
        }
        return 0;
    }
    if (psmsg_get_u32(rec, PSF_ERRNO, &s->err) < 0 || !s->err) {
        *why = "neither a tid nor an errno";
        return -1;
    }
    if (!psmsg_find(rec, PSF_TEXT, &f) || psmsg_field_str(&f, s->text, sizeof s->text) < 0) {
        *why = "a failure without a text that fits";
        return -1;
    }
    return 0;
}

int tree_start_next(const struct psmsg_view *body, size_t *pos, struct tree_start *s,
                    const char **why)
{
    struct psmsg_field f;
    while (psmsg_next(body, pos, &f))
        if (f.tag == PSF_START) {
            struct psmsg_view rec = psmsg_record(&f);
            return tree_start_decode(&rec, s, why) < 0 ? -1 : 1;
        }
    return 0;
}

void tree_start_put(struct psmsg_buf *b, const struct tree_start *s)
{
    psmsg_record_begin(b, PSF_START);
    psmsg_put_u32(b, PSF_RANK, s->rank);
    psmsg_put_u32(b, PSF_NODE_ID, s->node);
    if (s->ok) {
        psmsg_put_u64(b, PSF_TID, s->tid);
        if (s->cpus[0]) psmsg_put_str(b, PSF_CPU_LIST, s->cpus);
    } else {
        psmsg_put_u32(b, PSF_ERRNO, s->err);
        psmsg_put_str(b, PSF_TEXT, s->text);
    }
    psmsg_record_end(b);
}

bool tree_exit_urgent(const struct psmsg_view *rec)
{
    uint32_t status = 0, pmi = PSPMI_NONE;
    psmsg_get_u32(rec, PSF_STATUS, &status);
    psmsg_get_u32(rec, PSF_PMI_STATE, &pmi);
    return status != 0 || pmi == PSPMI_INIT;
}

int tree_exit_decode(const struct psmsg_view *rec, struct tree_exit *e, const char **why)
{
    uint64_t tid;
    *e = (struct tree_exit){.rec = *rec};
    if (psmsg_get_u32(rec, PSF_RANK, &e->rank) < 0 ||
        psmsg_get_u32(rec, PSF_NODE_ID, &e->node) < 0 || psmsg_get_u64(rec, PSF_TID, &tid) < 0 ||
        psmsg_get_u32(rec, PSF_STATUS, &e->status) < 0) {
        *why = "an end without its rank, node, task id or status";
        return -1;
    }
    if (PSTID_NODE(tid) != e->node) {
        *why = "an end whose task id is not of its node";
        return -1;
    }
    e->urgent = tree_exit_urgent(rec);
    return 0;
}

int tree_exit_next(const struct psmsg_view *body, size_t *pos, struct tree_exit *e,
                   const char **why)
{
    struct psmsg_field f;
    while (psmsg_next(body, pos, &f))
        if (f.tag == PSF_EXIT) {
            struct psmsg_view rec = psmsg_record(&f);
            return tree_exit_decode(&rec, e, why) < 0 ? -1 : 1;
        }
    return 0;
}
