/*
 * outfile.c - srun's IO modes and filename patterns for psrun's -o and -e (see outfile.h).
 */
#include "outfile.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PAT_LETTERS "%jJstnNux"

int lg_pat_check(const char *pat, char *err, size_t errsz)
{
    int dep = 0;
    if (!*pat) {
        snprintf(err, errsz, "an empty file name");
        return -1;
    }
    if (pat[0] == '\\') return 0; /* taken literally */
    for (const char *p = pat; *p; p++) {
        if (*p != '%') continue;
        const char *q = p + 1;
        while (*q >= '0' && *q <= '9') q++;
        if (q - p > 5) {
            snprintf(err, errsz, "'%s': a padding width over 9999", pat);
            return -1;
        }
        if (!*q || !strchr(PAT_LETTERS, *q)) {
            if (*q == 'A' || *q == 'a')
                snprintf(err, errsz, "'%s': %%%c is a job array's, and psrun runs no arrays", pat,
                         *q);
            else
                snprintf(err, errsz,
                         "'%s': unknown pattern %%%.*s (known: %%j %%J %%s %%t %%n %%N %%u %%x "
                         "%%%%)",
                         pat, *q ? 1 : 0, q);
            return -1;
        }
        if (*q == 't') dep |= LG_PAT_RANK;
        if (*q == 'n' || *q == 'N') dep |= LG_PAT_NODE;
        p = q;
    }
    return dep;
}

int lg_outspec_parse(const char *arg, struct lg_outspec *o, char *err, size_t errsz)
{
    memset(o, 0, sizeof *o);
    if (strcmp(arg, "all") == 0) return 0;
    if (strcmp(arg, "none") == 0) {
        o->kind = LG_OUT_NONE;
        return 0;
    }
    if (*arg >= '0' && *arg <= '9' && strspn(arg, "0123456789") == strlen(arg)) {
        char *end;
        errno = 0;
        unsigned long v = strtoul(arg, &end, 10);
        if (errno || v >= 0xfffffffeul) {
            snprintf(err, errsz, "'%s': not a rank", arg);
            return -1;
        }
        o->kind = LG_OUT_RANK;
        o->rank = (uint32_t)v;
        return 0;
    }
    if (lg_pat_check(arg, err, errsz) < 0) return -1;
    o->kind = LG_OUT_FILE;
    o->pat = arg;
    return 0;
}

/* append s to out at *len; false if it does not fit */
static bool put(char *out, size_t outsz, size_t *len, const char *s, size_t n)
{
    if (*len + n >= outsz) return false;
    memcpy(out + *len, s, n);
    *len += n;
    out[*len] = 0;
    return true;
}

int lg_pat_expand(const char *pat, const struct lg_patvals *v, char *out, size_t outsz)
{
    size_t len = 0;
    if (!outsz) return errno = ENAMETOOLONG, -1;
    out[0] = 0;
    if (pat[0] == '\\') { /* literal: the backslashes go */
        for (const char *p = pat; *p; p++)
            if (*p != '\\' && !put(out, outsz, &len, p, 1)) return errno = ENAMETOOLONG, -1;
        return 0;
    }
    for (const char *p = pat; *p; p++) {
        if (*p != '%') {
            if (!put(out, outsz, &len, p, 1)) return errno = ENAMETOOLONG, -1;
            continue;
        }
        int width = 0;
        const char *q = p + 1;
        while (*q >= '0' && *q <= '9') width = width * 10 + (*q++ - '0');
        char num[32];
        const char *s = num;
        switch (*q) {
        case '%':
            s = "%";
            break;
        case 'j':
            s = v->job;
            break;
        case 'J':
            snprintf(num, sizeof num, "%s.0", v->job);
            break;
        case 's':
            snprintf(num, sizeof num, "%0*d", width, 0);
            break;
        case 't':
            snprintf(num, sizeof num, "%0*" PRIu32, width, v->rank);
            break;
        case 'n':
            snprintf(num, sizeof num, "%0*" PRIu32, width, v->nodeidx);
            break;
        case 'N':
            s = v->node;
            break;
        case 'u':
            s = v->user;
            break;
        case 'x':
            s = v->name;
            break;
        default:
            return errno = EINVAL, -1;
        }
        if (!s) s = "";
        if (!put(out, outsz, &len, s, strlen(s))) return errno = ENAMETOOLONG, -1;
        p = q;
    }
    return 0;
}

/* The distinct names: an open-addressing set of indices into r->paths. */
struct pathset {
    uint32_t *slot; /* index + 1; 0 empty */
    size_t cap;
};

static uint64_t hash(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) h = (h ^ (uint8_t)*s) * 1099511628211ull;
    return h;
}

/* the index of name in r->paths, added if new; LG_ROUTE_NONE on ENOMEM */
static uint32_t intern(struct pathset *ps, struct lg_routes *r, const char *name)
{
    if ((r->paths.n + 1) * 2 > ps->cap) {
        size_t cap = ps->cap ? ps->cap * 2 : 64;
        uint32_t *slot = calloc(cap, sizeof *slot);
        if (!slot) return LG_ROUTE_NONE;
        for (size_t i = 0; i < ps->cap; i++) {
            if (!ps->slot[i]) continue;
            size_t k = hash(r->paths.v[ps->slot[i] - 1]) & (cap - 1);
            while (slot[k]) k = (k + 1) & (cap - 1);
            slot[k] = ps->slot[i];
        }
        free(ps->slot);
        ps->slot = slot;
        ps->cap = cap;
    }
    size_t k = hash(name) & (ps->cap - 1);
    for (; ps->slot[k]; k = (k + 1) & (ps->cap - 1))
        if (strcmp(r->paths.v[ps->slot[k] - 1], name) == 0) return ps->slot[k] - 1;
    if (lg_strv_add(&r->paths, name) < 0) return LG_ROUTE_NONE;
    ps->slot[k] = (uint32_t)r->paths.n;
    return (uint32_t)(r->paths.n - 1);
}

static int route_one(const struct lg_outspec *o, const struct lg_jobfacts *f,
                     const uint32_t *nodeidx, struct pathset *ps, struct lg_routes *r, int s,
                     char *err, size_t errsz)
{
    char name[4096], nn[64];
    for (uint32_t k = 0; k < f->np; k++) {
        uint32_t to = LG_ROUTE_STD;
        if (o->kind == LG_OUT_NONE || (o->kind == LG_OUT_RANK && o->rank != k)) {
            to = LG_ROUTE_NONE;
        } else if (o->kind == LG_OUT_FILE) {
            const char *node = f->node_name ? f->node_name(f->ctx, f->node[k]) : NULL;
            if (!node) {
                snprintf(nn, sizeof nn, "%" PRIu32, f->node[k]);
                node = nn;
            }
            struct lg_patvals v = {.job = f->job,
                                   .user = f->user,
                                   .name = f->name,
                                   .node = node,
                                   .rank = k,
                                   .nodeidx = nodeidx[k]};
            if (lg_pat_expand(o->pat, &v, name, sizeof name) < 0) {
                snprintf(err, errsz, "the file name of rank %" PRIu32 " is too long: '%s'", k,
                         o->pat);
                return -1;
            }
            if ((to = intern(ps, r, name)) == LG_ROUTE_NONE) {
                snprintf(err, errsz, "out of memory");
                return -1;
            }
        }
        r->route[s][k] = to;
    }
    return 0;
}

int lg_routes_build(const struct lg_outspec *out, const struct lg_outspec *err,
                    const struct lg_jobfacts *f, struct lg_routes *r, char *err_text, size_t errsz)
{
    memset(r, 0, sizeof *r);
    struct pathset ps = {0};
    uint32_t *nodeidx = calloc(f->np ? f->np : 1, sizeof *nodeidx);
    r->route[0] = calloc(f->np ? f->np : 1, sizeof *r->route[0]);
    r->route[1] = calloc(f->np ? f->np : 1, sizeof *r->route[1]);
    int rc = -1;
    if (!nodeidx || !r->route[0] || !r->route[1]) {
        snprintf(err_text, errsz, "out of memory");
        goto out;
    }
    /* %n: nodes numbered in the order of their first rank (by id through a table when the
     * ids are small, as configured ids are) */
    uint32_t seen = 0, maxid = 0;
    for (uint32_t k = 0; k < f->np; k++)
        if (f->node[k] > maxid) maxid = f->node[k];
    uint32_t *byid = maxid < (1u << 20) ? malloc(((size_t)maxid + 1) * sizeof *byid) : NULL;
    if (byid) memset(byid, 0xff, ((size_t)maxid + 1) * sizeof *byid);
    for (uint32_t k = 0; k < f->np; k++) {
        if (byid) {
            if (byid[f->node[k]] == UINT32_MAX) byid[f->node[k]] = seen++;
            nodeidx[k] = byid[f->node[k]];
            continue;
        }
        uint32_t q = 0;
        while (q < k && f->node[q] != f->node[k]) q++;
        nodeidx[k] = q < k ? nodeidx[q] : seen++;
    }
    free(byid);
    if (route_one(out, f, nodeidx, &ps, r, 0, err_text, errsz) < 0) goto out;
    if (!err && out->kind != LG_OUT_ALL)
        memcpy(r->route[1], r->route[0], f->np * sizeof *r->route[1]);
    else if (route_one(err ? err : &(struct lg_outspec){0}, f, nodeidx, &ps, r, 1, err_text,
                       errsz) < 0)
        goto out;
    rc = 0;
out:
    free(ps.slot);
    free(nodeidx);
    if (rc < 0) lg_routes_free(r);
    return rc;
}

void lg_routes_free(struct lg_routes *r)
{
    free(r->route[0]);
    free(r->route[1]);
    r->route[0] = r->route[1] = NULL;
    lg_strv_free(&r->paths);
}
