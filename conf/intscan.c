/*
 * intscan.c - catch integer literals that libconfig silently truncates.
 *
 * libconfig 1.5 (Debian 12) stores an integer literal without an L suffix in an int and
 * keeps only its low 32 bits: "port = 4294972182;" reads as 4886, a valid port. To refuse
 * such values, each file that holds an integer setting is scanned once with a small lexer
 * that knows libconfig's comments, strings, names and number forms, and notes every
 * L-less integer literal that does not fit in an int (decimal) or 31 bits (hex, which
 * libconfig would turn negative). When the schema reads an integer setting, it asks here
 * whether that setting's value came from such a literal (same file, same line or just
 * below, same truncated value); any literal no setting claimed is reported at the end.
 */
#include "internal.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SCAN_MAX_BYTES (64u << 20)

static int add_big(struct conf_intscan *s, const char *file, unsigned line, const char *text,
                   size_t len, int truncated)
{
    struct conf_bigint *nb = realloc(s->big, (s->nbig + 1) * sizeof *nb);
    if (!nb) return -1;
    s->big = nb;
    struct conf_bigint *b = &nb[s->nbig++];
    memset(b, 0, sizeof *b);
    b->file = file;
    b->line = line;
    b->truncated = truncated;
    if (len < sizeof b->text) {
        memcpy(b->text, text, len);
    } else {
        memcpy(b->text, text, sizeof b->text - 4);
        memcpy(b->text + sizeof b->text - 4, "...", 4);
    }
    return 0;
}

static int is_name_char(int ch)
{
    return isalnum(ch) || ch == '_' || ch == '-' || ch == '*';
}

/* A number starting at t[*i]; records it if it is an L-less integer libconfig truncates. */
static int scan_number(struct conf_intscan *s, const char *file, unsigned line, const char *t,
                       size_t *i)
{
    size_t st = *i, p = st;
    int sign = (t[p] == '-' || t[p] == '+');
    if (sign) p++;
    int hex = !sign && t[p] == '0' && (t[p + 1] == 'x' || t[p + 1] == 'X');
    if (hex) {
        p += 2;
        while (isxdigit((unsigned char)t[p])) p++;
    } else {
        while (isdigit((unsigned char)t[p])) p++;
        if (t[p] == '.' || t[p] == 'e' || t[p] == 'E') { /* a float: skip it */
            while (isdigit((unsigned char)t[p]) || t[p] == '.' || t[p] == 'e' || t[p] == 'E' ||
                   ((t[p] == '-' || t[p] == '+') && (t[p - 1] == 'e' || t[p - 1] == 'E')))
                p++;
            *i = p;
            return 0;
        }
    }
    *i = p;
    if (t[p] == 'L') { /* 64-bit literal: libconfig keeps it whole */
        *i = p + (t[p + 1] == 'L' ? 2 : 1);
        return 0;
    }
    errno = 0;
    unsigned long long bits;
    int big;
    if (hex) {
        unsigned long long v = strtoull(t + st, NULL, 16);
        big = errno == ERANGE || v > INT_MAX;
        bits = v;
    } else {
        long long v = strtoll(t + st, NULL, 10);
        big = errno == ERANGE || v > INT_MAX || v < INT_MIN;
        bits = (unsigned long long)v;
    }
    if (!big) return 0;
    uint32_t low = (uint32_t)bits;
    int truncated;
    memcpy(&truncated, &low, sizeof truncated);
    return add_big(s, file, line, t + st, p - st, truncated);
}

/* Scan NUL-terminated text t of the file named file. */
static int scan_text(struct conf_intscan *s, const char *file, const char *t)
{
    unsigned line = 1;
    size_t i = 0;
    while (t[i]) {
        char ch = t[i];
        if (ch == '\n') {
            line++;
            i++;
        } else if (ch == '#' || (ch == '/' && t[i + 1] == '/')) {
            while (t[i] && t[i] != '\n') i++;
        } else if (ch == '/' && t[i + 1] == '*') {
            i += 2;
            while (t[i] && !(t[i] == '*' && t[i + 1] == '/')) {
                if (t[i] == '\n') line++;
                i++;
            }
            if (t[i]) i += 2;
        } else if (ch == '"') {
            i++;
            while (t[i] && t[i] != '"') {
                if (t[i] == '\\' && t[i + 1]) i++;
                if (t[i] == '\n') line++;
                i++;
            }
            if (t[i]) i++;
        } else if (isalpha((unsigned char)ch) || ch == '*' || ch == '@') {
            i++;
            while (is_name_char((unsigned char)t[i])) i++;
        } else if (isdigit((unsigned char)ch) ||
                   ((ch == '-' || ch == '+') && isdigit((unsigned char)t[i + 1]))) {
            if (scan_number(s, file, line, t, &i) < 0) return -1;
        } else if (ch == '.' && isdigit((unsigned char)t[i + 1])) {
            i++;
            while (isdigit((unsigned char)t[i]) || t[i] == 'e' || t[i] == 'E' ||
                   ((t[i] == '-' || t[i] == '+') && (t[i - 1] == 'e' || t[i - 1] == 'E')))
                i++;
        } else {
            i++;
        }
    }
    return 0;
}

/* Scan the file libconfig calls name, once. Failures to read are ignored: libconfig has
 * read the file, and this is only a second look. */
static void scan_file(struct conf_ctx *x, const char *name)
{
    struct conf_intscan *s = &x->ints;
    for (size_t i = 0; i < s->nfiles; i++)
        if (strcmp(s->files[i], name) == 0) return;
    char **nf = realloc(s->files, (s->nfiles + 1) * sizeof *nf);
    if (!nf) return;
    s->files = nf;
    char *copy = strdup(name);
    if (!copy) return;
    s->files[s->nfiles++] = copy;

    char path[PATH_MAX];
    int r;
    if (strcmp(name, x->path) == 0 || name[0] == '/' || strcmp(x->dir, ".") == 0)
        r = snprintf(path, sizeof path, "%s", name);
    else
        r = snprintf(path, sizeof path, "%s/%s", x->dir, name);
    if (r < 0 || (size_t)r >= sizeof path) return;
    FILE *f = fopen(path, "re");
    if (!f) return;
    char *text = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (len + 4096 + 1 > cap) {
            if (cap > SCAN_MAX_BYTES) break;
            char *nt = realloc(text, cap = cap ? 2 * cap : 8192);
            if (!nt) break;
            text = nt;
        }
        size_t got = fread(text + len, 1, cap - len - 1, f);
        len += got;
        if (got == 0) break;
    }
    fclose(f);
    if (!text) return;
    text[len] = '\0';
    scan_text(s, copy, text);
    free(text);
}

struct conf_bigint *conf_intscan_match(struct conf_ctx *x, const config_setting_t *st)
{
    const char *file = config_setting_source_file(st);
    if (!file) return NULL;
    scan_file(x, file);
    unsigned line = config_setting_source_line(st);
    int v = config_setting_get_int(st);
    struct conf_bigint *best = NULL;
    for (size_t i = 0; i < x->ints.nbig; i++) {
        struct conf_bigint *b = &x->ints.big[i];
        if (b->used || b->truncated != v || b->line < line || strcmp(b->file, file) != 0) continue;
        if (!best || b->line < best->line) best = b;
    }
    if (best) best->used = 1;
    return best;
}

int conf_intscan_leftover(struct conf_ctx *x)
{
    for (size_t i = 0; i < x->ints.nbig; i++) {
        const struct conf_bigint *b = &x->ints.big[i];
        if (!b->used)
            return conf_error(x, b->file, b->line, NULL,
                              "integer %s does not fit in 32 bits (libconfig would cut it off; "
                              "add an L suffix for a 64-bit integer)",
                              b->text);
    }
    return 0;
}

void conf_intscan_free(struct conf_intscan *s)
{
    for (size_t i = 0; i < s->nfiles; i++) free(s->files[i]);
    free(s->files);
    free(s->big);
    memset(s, 0, sizeof *s);
}
