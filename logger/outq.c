/*
 * outq.c - chunk queue for one descriptor, with completion callbacks (see outq.h).
 */
#include "outq.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#define MAX_IOV 64

struct lg_chunk {
    struct lg_chunk *next;
    uint32_t rank;
    size_t raw;
    size_t len, off;
    uint8_t *data;
};

int lg_outq_push_take(struct lg_outq *q, uint32_t rank, size_t raw, void *p, size_t n)
{
    struct lg_chunk *c = malloc(sizeof *c);
    if (!c) {
        free(p);
        return -1;
    }
    c->next = NULL;
    c->rank = rank;
    c->raw = raw;
    c->len = n;
    c->off = 0;
    c->data = p;
    if (q->tail)
        q->tail->next = c;
    else
        q->head = c;
    q->tail = c;
    q->bytes += n;
    return 0;
}

int lg_outq_push(struct lg_outq *q, uint32_t rank, size_t raw, const void *p, size_t n)
{
    void *copy = NULL;
    if (n) {
        if (!(copy = malloc(n))) return -1;
        memcpy(copy, p, n);
    }
    return lg_outq_push_take(q, rank, raw, copy, n);
}

static void pop(struct lg_outq *q, lg_done_fn done, void *ctx)
{
    struct lg_chunk *c = q->head;
    q->head = c->next;
    if (!q->head) q->tail = NULL;
    q->bytes -= c->len - c->off;
    if (done) done(ctx, c->rank, c->raw);
    free(c->data);
    free(c);
}

ssize_t lg_outq_write(struct lg_outq *q, int fd, size_t max, lg_done_fn done, void *ctx)
{
    /* chunks with nothing left to write (acknowledgements only) finish at once */
    while (q->head && q->head->off == q->head->len) pop(q, done, ctx);
    if (!q->head) return 0;
    if (!max) max = SIZE_MAX;
    struct iovec iov[MAX_IOV];
    int n = 0;
    size_t total = 0;
    for (struct lg_chunk *c = q->head; c && n < MAX_IOV && total < max; c = c->next) {
        size_t len = c->len - c->off;
        if (!len) continue;
        if (len > max - total) len = max - total;
        iov[n].iov_base = c->data + c->off;
        iov[n].iov_len = len;
        total += len;
        n++;
    }
    ssize_t w;
    do w = writev(fd, iov, n);
    while (w < 0 && errno == EINTR);
    if (w < 0) return -1;
    size_t left = (size_t)w;
    while (q->head) {
        struct lg_chunk *c = q->head;
        size_t len = c->len - c->off;
        if (len > left) {
            c->off += left;
            q->bytes -= left;
            break;
        }
        left -= len;
        q->bytes -= len;
        c->off = c->len;
        pop(q, done, ctx);
    }
    return w;
}

void lg_outq_drop(struct lg_outq *q, lg_done_fn done, void *ctx)
{
    while (q->head) pop(q, done, ctx);
}

void lg_outq_free(struct lg_outq *q)
{
    lg_outq_drop(q, NULL, NULL);
}
