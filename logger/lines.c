/*
 * lines.c - line assembly with labels (see lines.h).
 */
#include "lines.h"

#include <string.h>

void lg_lines_init(struct lg_lines *l, size_t max)
{
    memset(l, 0, sizeof *l);
    l->max = max ? max : 1;
}

void lg_lines_free(struct lg_lines *l)
{
    lg_bytes_free(&l->tail);
    l->midline = false;
}

size_t lg_lines_pending(const struct lg_lines *l)
{
    return l->tail.len;
}

/* Append the piece a (then b) to out, labelled if it starts a line. */
static int put_piece(struct lg_lines *l, const char *label, const uint8_t *a, size_t na,
                     const uint8_t *b, size_t nb, bool ends_line, struct lg_bytes *out)
{
    if (label && !l->midline && lg_bytes_put(out, label, strlen(label)) < 0) return -1;
    if (lg_bytes_put(out, a, na) < 0 || lg_bytes_put(out, b, nb) < 0) return -1;
    l->midline = !ends_line;
    return 0;
}

ssize_t lg_lines_feed(struct lg_lines *l, const void *data, size_t n, const char *label,
                      struct lg_bytes *out)
{
    const uint8_t *p = data;
    size_t done = 0;
    const uint8_t *nl = n ? memrchr(p, '\n', n) : NULL;
    if (nl) {
        size_t upto = (size_t)(nl - p) + 1; /* bytes of p that end complete lines */
        if (!label) {
            /* one piece: the tail, then every complete line of p */
            if (put_piece(l, NULL, l->tail.p, l->tail.len, p, upto, true, out) < 0) return -1;
        } else {
            const uint8_t *s = p, *end = p + upto;
            const uint8_t *e = memchr(s, '\n', (size_t)(end - s));
            /* first line: the tail and p's first line */
            if (put_piece(l, label, l->tail.p, l->tail.len, s, (size_t)(e - s) + 1, true, out) < 0)
                return -1;
            for (s = e + 1; s < end; s = e + 1) {
                e = memchr(s, '\n', (size_t)(end - s));
                if (put_piece(l, label, s, (size_t)(e - s) + 1, NULL, 0, true, out) < 0) return -1;
            }
        }
        done = l->tail.len + upto;
        l->tail.len = 0;
        p += upto;
        n -= upto;
    }
    if (lg_bytes_put(&l->tail, p, n) < 0) return -1;
    if (l->tail.len >= l->max) {
        /* too long to wait for its end */
        if (put_piece(l, label, l->tail.p, l->tail.len, NULL, 0, false, out) < 0) return -1;
        done += l->tail.len;
        l->tail.len = 0;
    }
    return (ssize_t)done;
}

ssize_t lg_lines_flush(struct lg_lines *l, const char *label, struct lg_bytes *out)
{
    size_t done = l->tail.len;
    if (done && put_piece(l, label, l->tail.p, done, NULL, 0, false, out) < 0) return -1;
    if (label && l->midline && lg_bytes_put(out, "\n", 1) < 0) return -1;
    l->tail.len = 0;
    l->midline = false;
    return (ssize_t)done;
}
