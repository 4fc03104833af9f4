/*
 * hostlist.c - expansion of hostlists and id ranges, host files (see psi_hostlist.h).
 *
 * An item is split at its first bracket group: prefix, the group's ranges, and the rest,
 * which is expanded recursively for each value; this gives the cartesian product of
 * several groups in the order Slurm prints them.
 */
#include "psi_hostlist.h"

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Append the first len bytes of s (a copy). 0, or -1 (ENOMEM). */
static int names_addn(struct psi_names *l, const char *s, size_t len)
{
    if (l->n + 1 >= l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 16;
        char **v = realloc(l->v, cap * sizeof *v);
        if (!v) return -1;
        l->v = v;
        l->cap = cap;
    }
    char *c = strndup(s, len);
    if (!c) return -1;
    l->v[l->n++] = c;
    l->v[l->n] = NULL;
    return 0;
}

void psi_names_free(struct psi_names *l)
{
    for (size_t i = 0; i < l->n; i++) free(l->v[i]);
    free(l->v);
    memset(l, 0, sizeof *l);
}

static int too_many(struct psi_names *out, char *err, size_t errsz)
{
    if (out->n < PSI_HOSTLIST_MAX) return 0;
    snprintf(err, errsz, "more than %d names", PSI_HOSTLIST_MAX);
    return -1;
}

/* parse an unsigned decimal at *p (advances), with its digit count */
static int number(const char **p, unsigned long *v, int *width)
{
    const char *s = *p;
    if (!isdigit((unsigned char)*s)) return -1;
    unsigned long x = 0;
    while (isdigit((unsigned char)*s)) {
        if (x > 100000000ul) return -1;
        x = x * 10 + (unsigned long)(*s - '0');
        s++;
    }
    *width = (int)(s - *p);
    *v = x;
    *p = s;
    return 0;
}

static int expand_item(const char *item, size_t len, struct psi_names *out, char *err,
                       size_t errsz);

/* item = prefix[ranges]rest: expand ranges, recurse on rest */
static int expand_group(const char *item, size_t len, const char *lb, struct psi_names *out,
                        char *err, size_t errsz)
{
    const char *end = item + len;
    const char *rb = memchr(lb, ']', (size_t)(end - lb));
    if (!rb) {
        snprintf(err, errsz, "'%.*s': '[' without ']'", (int)len, item);
        return -1;
    }
    const char *rest = rb + 1;
    size_t restlen = (size_t)(end - rest);
    const char *p = lb + 1;
    if (p == rb) {
        snprintf(err, errsz, "'%.*s': empty brackets", (int)len, item);
        return -1;
    }
    while (p < rb) {
        unsigned long lo, hi;
        int wlo, whi;
        if (number(&p, &lo, &wlo) < 0) goto bad;
        hi = lo;
        if (*p == '-') {
            p++;
            if (number(&p, &hi, &whi) < 0 || hi < lo) goto bad;
        }
        if (p < rb && *p != ',') goto bad;
        if (*p == ',') {
            p++;
            if (p == rb) goto bad;
        }
        int width = wlo; /* n[01-10]: n01 .. n10 */
        for (unsigned long v = lo; v <= hi; v++) {
            char *name;
            if (asprintf(&name, "%.*s%0*lu%.*s", (int)(lb - item), item, width, v, (int)restlen,
                         rest) < 0)
                return -1;
            int r = expand_item(name, strlen(name), out, err, errsz);
            free(name);
            if (r < 0) return -1;
        }
    }
    return 0;
bad:
    snprintf(err, errsz, "'%.*s': bad range in brackets", (int)len, item);
    return -1;
}

static int expand_item(const char *item, size_t len, struct psi_names *out, char *err, size_t errsz)
{
    const char *lb = memchr(item, '[', len);
    if (lb) return expand_group(item, len, lb, out, err, errsz);
    if (memchr(item, ']', len)) {
        snprintf(err, errsz, "'%.*s': ']' without '['", (int)len, item);
        return -1;
    }
    /* an id range "3-5" */
    const char *p = item;
    unsigned long lo, hi;
    int w;
    if (number(&p, &lo, &w) == 0 && *p == '-' && p < item + len) {
        p++;
        if (number(&p, &hi, &w) == 0 && p == item + len) {
            if (hi < lo) {
                snprintf(err, errsz, "'%.*s': empty range", (int)len, item);
                return -1;
            }
            for (unsigned long v = lo; v <= hi; v++) {
                char num[24];
                snprintf(num, sizeof num, "%lu", v);
                if (too_many(out, err, errsz) < 0 || names_addn(out, num, strlen(num)) < 0)
                    return -1;
            }
            return 0;
        }
    }
    if (too_many(out, err, errsz) < 0) return -1;
    return names_addn(out, item, len);
}

int psi_hostlist_expand(const char *s, struct psi_names *out, char *err, size_t errsz)
{
    const char *p = s;
    if (errsz) *err = '\0';
    for (;;) {
        while (*p == ',' || isspace((unsigned char)*p)) p++;
        if (!*p) return 0;
        /* an item ends at a separator outside brackets */
        const char *q = p;
        int depth = 0;
        while (*q && (depth || (*q != ',' && !isspace((unsigned char)*q)))) {
            if (*q == '[') {
                if (depth) {
                    snprintf(err, errsz, "'%s': nested brackets", s);
                    return -1;
                }
                depth = 1;
            } else if (*q == ']') {
                depth = 0;
            }
            q++;
        }
        if (expand_item(p, (size_t)(q - p), out, err, errsz) < 0) {
            if (errno == ENOMEM && !*err) snprintf(err, errsz, "out of memory");
            return -1;
        }
        p = q;
    }
}

int psi_hostfile_read(const char *path, struct psi_names *out, char *err, size_t errsz)
{
    FILE *f = fopen(path, "re");
    if (!f) {
        snprintf(err, errsz, "%s: %s", path, strerror(errno));
        return -1;
    }
    char *line = NULL;
    size_t cap = 0;
    int rc = 0;
    unsigned lineno = 0;
    while (getline(&line, &cap, f) >= 0) {
        lineno++;
        char *hash = strchr(line, '#');
        if (hash) *hash = '\0';
        char msg[200] = "";
        if (psi_hostlist_expand(line, out, msg, sizeof msg) < 0) {
            snprintf(err, errsz, "%s:%u: %s", path, lineno, msg);
            rc = -1;
            break;
        }
    }
    if (rc == 0 && ferror(f)) {
        snprintf(err, errsz, "%s: %s", path, strerror(errno));
        rc = -1;
    }
    free(line);
    fclose(f);
    return rc;
}
