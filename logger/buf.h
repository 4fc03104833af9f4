/*
 * buf.h - the two containers libpslogger's modules share: a growing byte buffer (lg_bytes)
 * and a growing list of owned strings (lg_strv, always NULL-terminated so it can serve as
 * an argv/envp). Errors are ENOMEM only; both are plain values that start zeroed.
 */
#ifndef PSCLUSTER_LOGGER_BUF_H
#define PSCLUSTER_LOGGER_BUF_H

#include <stddef.h>
#include <stdint.h>

struct lg_bytes {
    uint8_t *p;
    size_t len, cap;
};

/* Make room for n more bytes. 0, or -1 (ENOMEM). */
int lg_bytes_reserve(struct lg_bytes *b, size_t n);
int lg_bytes_put(struct lg_bytes *b, const void *p, size_t n);
void lg_bytes_free(struct lg_bytes *b);

struct lg_strv {
    char **v; /* v[n] == NULL once anything was added */
    size_t n, cap;
};

/* Append a copy of s (or of its first n bytes for lg_strv_addn). 0, or -1 (ENOMEM). */
int lg_strv_add(struct lg_strv *s, const char *str);
int lg_strv_addn(struct lg_strv *s, const char *str, size_t n);
/* Append a formatted string. */
int lg_strv_addf(struct lg_strv *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void lg_strv_free(struct lg_strv *s);

#endif
