/*
 * buf.c - growing byte buffers and string lists (see buf.h).
 */
#include "buf.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int lg_bytes_reserve(struct lg_bytes *b, size_t n)
{
    if (n <= b->cap - b->len) return 0;
    if (n > SIZE_MAX / 2 - b->len) {
        errno = ENOMEM;
        return -1;
    }
    size_t cap = b->cap ? b->cap : 256;
    while (cap - b->len < n) cap *= 2;
    uint8_t *p = realloc(b->p, cap);
    if (!p) return -1;
    b->p = p;
    b->cap = cap;
    return 0;
}

int lg_bytes_put(struct lg_bytes *b, const void *p, size_t n)
{
    if (!n) return 0;
    if (lg_bytes_reserve(b, n) < 0) return -1;
    memcpy(b->p + b->len, p, n);
    b->len += n;
    return 0;
}

void lg_bytes_free(struct lg_bytes *b)
{
    free(b->p);
    b->p = NULL;
    b->len = b->cap = 0;
}

static int strv_push(struct lg_strv *s, char *str)
{
    if (!str) return -1;
    if (s->n + 2 > s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 16;
        char **v = realloc(s->v, cap * sizeof *v);
        if (!v) {
            free(str);
            return -1;
        }
        s->v = v;
        s->cap = cap;
    }
    s->v[s->n++] = str;
    s->v[s->n] = NULL;
    return 0;
}

int lg_strv_add(struct lg_strv *s, const char *str)
{
    return strv_push(s, strdup(str));
}

int lg_strv_addn(struct lg_strv *s, const char *str, size_t n)
{
    return strv_push(s, strndup(str, n));
}

int lg_strv_addf(struct lg_strv *s, const char *fmt, ...)
{
    char *str;
    va_list ap;
    va_start(ap, fmt);
    int r = vasprintf(&str, fmt, ap);
    va_end(ap);
    if (r < 0) return -1;
    return strv_push(s, str);
}

void lg_strv_free(struct lg_strv *s)
{
    for (size_t i = 0; i < s->n; i++) free(s->v[i]);
    free(s->v);
    s->v = NULL;
    s->n = s->cap = 0;
}
