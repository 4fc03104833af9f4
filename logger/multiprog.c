/*
 * multiprog.c - srun's --multi-prog file, and the script that runs it (see multiprog.h).
 */
#include "multiprog.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define UNSET 0xffffffffu

/* Split one line into words (quotes, backslashes). 0, or -1 with why. */
static int split(const char *s, struct lg_strv *w, char *why, size_t whylen)
{
    struct lg_bytes cur = {0};
    bool in_word = false;
    for (;;) {
        char c = *s;
        if (c == 0 || c == ' ' || c == '\t' || c == '\r') {
            if (in_word) {
                lg_bytes_put(&cur, "", 1);
                if (lg_strv_add(w, (const char *)cur.p) < 0) goto oom;
                cur.len = 0;
                in_word = false;
            }
            if (!c) break;
            s++;
            continue;
        }
        in_word = true;
        if (c == '\\') {
            if (!s[1]) {
                snprintf(why, whylen, "a backslash at the end of the line");
                goto bad;
            }
            lg_bytes_put(&cur, s + 1, 1);
            s += 2;
        } else if (c == '\'' || c == '"') {
            const char *e = strchr(s + 1, c);
            if (!e) {
                snprintf(why, whylen, "an unterminated %c", c);
                goto bad;
            }
            lg_bytes_put(&cur, s + 1, (size_t)(e - s - 1));
            s = e + 1;
        } else {
            lg_bytes_put(&cur, s, 1);
            s++;
        }
    }
    lg_bytes_free(&cur);
    return 0;
oom:
    snprintf(why, whylen, "out of memory");
bad:
    lg_bytes_free(&cur);
    return -1;
}

/* Mark the ranks of spec for line ln. 0, or -1 with why. */
static int take_ranks(const char *spec, uint32_t ln, struct lg_mprog *mp, char *why, size_t whylen)
{
    if (strcmp(spec, "*") == 0) {
        uint32_t off = 0;
        for (uint32_t r = 0; r < mp->np; r++)
            if (mp->line[r] == UNSET) {
                mp->line[r] = ln | 0x80000000u; /* claimed by '*': others may still take it */
                mp->offset[r] = off++;
            }
        return 0;
    }
    uint32_t off = 0;
    const char *p = spec;
    while (*p) {
        char *end;
        errno = 0;
        unsigned long a = strtoul(p, &end, 10), b = a;
        if (end == p || errno || *p == '-' || *p == '+') goto bad;
        if (*end == '-') {
            const char *q = end + 1;
            b = strtoul(q, &end, 10);
            if (end == q || errno || *q == '-' || *q == '+' || b < a) goto bad;
        }
        if (*end && *end != ',') goto bad;
        if (b >= mp->np) {
            snprintf(why, whylen, "rank %lu is not in the job (0..%" PRIu32 ")", b, mp->np - 1);
            return -1;
        }
        for (unsigned long r = a; r <= b; r++) {
            if (mp->line[r] != UNSET && !(mp->line[r] & 0x80000000u)) {
                snprintf(why, whylen, "rank %lu has a line already (%" PRIu32 ")", r,
                         mp->line[r] + 1);
                return -1;
            }
            mp->line[r] = ln;
            mp->offset[r] = off++;
        }
        p = *end ? end + 1 : end;
        if (*end == ',' && !*p) goto bad;
    }
    return 0;
bad:
    snprintf(why, whylen, "'%s' is not a list of ranks (0,2-4) or *", spec);
    return -1;
}

int lg_mprog_parse(const char *text, uint32_t np, struct lg_mprog *mp, char *err, size_t errsz)
{
    memset(mp, 0, sizeof *mp);
    mp->np = np;
    mp->line = malloc((np ? np : 1) * sizeof *mp->line);
    mp->offset = calloc(np ? np : 1, sizeof *mp->offset);
    if (!mp->line || !mp->offset) {
        snprintf(err, errsz, "out of memory");
        lg_mprog_free(mp);
        return -1;
    }
    memset(mp->line, 0xff, (np ? np : 1) * sizeof *mp->line);
    /* '*' lines are applied after the others: remember them */
    size_t lineno = 0;
    const char *p = text;
    char why[256];
    uint32_t *stars = NULL;
    size_t nstars = 0;
    while (*p) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        lineno++;
        char *line = strndup(p, len);
        p += len + (nl ? 1 : 0);
        if (line && line[strspn(line, " \t")] == '#') { /* a comment: not split (its quotes) */
            free(line);
            continue;
        }
        struct lg_strv w = {0};
        if (!line || split(line, &w, why, sizeof why) < 0) {
            if (!line) snprintf(why, sizeof why, "out of memory");
            free(line);
            lg_strv_free(&w);
            goto bad;
        }
        free(line);
        if (w.n == 0 || w.v[0][0] == '#') {
            lg_strv_free(&w);
            continue;
        }
        if (w.n < 2) {
            snprintf(why, sizeof why, "ranks without a program");
            lg_strv_free(&w);
            goto bad;
        }
        struct lg_strv *nv = realloc(mp->argv, (mp->nlines + 1) * sizeof *nv);
        if (!nv) {
            lg_strv_free(&w);
            snprintf(why, sizeof why, "out of memory");
            goto bad;
        }
        mp->argv = nv;
        uint32_t ln = (uint32_t)mp->nlines++;
        char *spec = w.v[0];
        /* the line's words without the ranks */
        mp->argv[ln] = (struct lg_strv){0};
        for (size_t i = 1; i < w.n; i++)
            if (lg_strv_add(&mp->argv[ln], w.v[i]) < 0) {
                snprintf(why, sizeof why, "out of memory");
                lg_strv_free(&w);
                goto bad;
            }
        if (strcmp(spec, "*") == 0) {
            uint32_t *ns = realloc(stars, (nstars + 1) * sizeof *ns);
            if (!ns) {
                snprintf(why, sizeof why, "out of memory");
                lg_strv_free(&w);
                goto bad;
            }
            stars = ns;
            if (nstars) {
                snprintf(why, sizeof why, "a second '*' line");
                lg_strv_free(&w);
                goto bad;
            }
            stars[nstars++] = ln;
        } else if (take_ranks(spec, ln, mp, why, sizeof why) < 0) {
            lg_strv_free(&w);
            goto bad;
        }
        lg_strv_free(&w);
    }
    if (nstars) take_ranks("*", stars[0], mp, why, sizeof why);
    free(stars);
    stars = NULL;
    for (uint32_t r = 0; r < np; r++) {
        if (mp->line[r] == UNSET) {
            snprintf(err, errsz, "rank %" PRIu32 " has no line (and there is no '*' line)", r);
            lg_mprog_free(mp);
            return -1;
        }
        mp->line[r] &= 0x7fffffffu;
    }
    return 0;
bad:
    free(stars);
    snprintf(err, errsz, "line %zu: %s", lineno, why);
    lg_mprog_free(mp);
    return -1;
}

/* s with %t and %o of rank r expanded, into b */
static void expand(const char *s, uint32_t r, uint32_t off, struct lg_bytes *b)
{
    char num[16];
    for (; *s; s++) {
        if (s[0] == '%' && (s[1] == 't' || s[1] == 'o')) {
            int n = snprintf(num, sizeof num, "%" PRIu32, s[1] == 't' ? r : off);
            lg_bytes_put(b, num, (size_t)n);
            s++;
        } else {
            lg_bytes_put(b, s, 1);
        }
    }
}

int lg_mprog_argv(const struct lg_mprog *mp, uint32_t r, struct lg_strv *out)
{
    const struct lg_strv *a = &mp->argv[mp->line[r]];
    for (size_t i = 0; i < a->n; i++) {
        struct lg_bytes b = {0};
        expand(a->v[i], r, mp->offset[r], &b);
        lg_bytes_put(&b, "", 1);
        int rc = b.p ? lg_strv_add(out, (const char *)b.p) : -1;
        lg_bytes_free(&b);
        if (rc < 0) return -1;
    }
    return 0;
}

/* 'word' for sh: single quotes, a quote inside as '\'' */
static void sh_quote(const char *s, struct lg_bytes *b)
{
    lg_bytes_put(b, "'", 1);
    for (; *s; s++)
        if (*s == '\'')
            lg_bytes_put(b, "'\\''", 4);
        else
            lg_bytes_put(b, s, 1);
    lg_bytes_put(b, "'", 1);
}

char *lg_mprog_script(const struct lg_mprog *mp)
{
    struct lg_bytes b = {0};
    int rc = lg_bytes_put(&b, "case $PSI_RANK in\n", strlen("case $PSI_RANK in\n"));
    for (uint32_t r = 0; r < mp->np && rc == 0; r++) {
        struct lg_strv a = {0};
        char head[24];
        int n = snprintf(head, sizeof head, "%" PRIu32 ") exec", r);
        rc = lg_mprog_argv(mp, r, &a) | lg_bytes_put(&b, head, (size_t)n);
        for (size_t i = 0; i < a.n; i++) {
            lg_bytes_put(&b, " ", 1);
            sh_quote(a.v[i], &b);
        }
        rc |= lg_bytes_put(&b, ";;\n", 3);
        lg_strv_free(&a);
    }
    static const char tail[] =
        "esac\necho \"psrun: rank $PSI_RANK has no program\" >&2\nexit 127\n";
    if (rc < 0 || lg_bytes_put(&b, tail, sizeof tail) < 0) { /* the NUL too */
        lg_bytes_free(&b);
        return NULL;
    }
    return (char *)b.p;
}

void lg_mprog_free(struct lg_mprog *mp)
{
    for (size_t i = 0; i < mp->nlines; i++) lg_strv_free(&mp->argv[i]);
    free(mp->argv);
    free(mp->line);
    free(mp->offset);
    memset(mp, 0, sizeof *mp);
}
