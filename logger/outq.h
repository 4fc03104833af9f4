/*
 * outq.h - a queue of byte chunks waiting for one file descriptor (psrun's stdout, its
 * stderr, or the psid socket).
 *
 * Each chunk remembers whose data it holds (a rank, or LG_NO_RANK) and how many of the
 * rank's output bytes it stands for (`raw`: labels and added newlines excluded). When a
 * chunk has been written completely, the done callback gets (rank, raw): that is when psrun
 * acknowledges output to psid, so a slow reader of psrun's stdout slows the tasks down.
 *
 * lg_outq_write does one writev(2) of at most `max` bytes. The caller polls the descriptor
 * for POLLOUT first; a small `max` (PIPE_BUF) keeps a blocking pipe or terminal from
 * blocking psrun's loop, which must never set O_NONBLOCK on a descriptor it shares with
 * its parent shell.
 */
#ifndef PSCLUSTER_LOGGER_OUTQ_H
#define PSCLUSTER_LOGGER_OUTQ_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define LG_NO_RANK 0xffffffffu

struct lg_chunk;

struct lg_outq {
    struct lg_chunk *head, *tail;
    size_t bytes; /* waiting to be written */
};

typedef void (*lg_done_fn)(void *ctx, uint32_t rank, size_t raw);

/* Queue a copy of p[0..n) (n may be 0 for an acknowledgement only). 0, or -1 (ENOMEM). */
int lg_outq_push(struct lg_outq *q, uint32_t rank, size_t raw, const void *p, size_t n);
/* Queue the malloc'ed buffer p (the queue frees it). On failure p is freed. */
int lg_outq_push_take(struct lg_outq *q, uint32_t rank, size_t raw, void *p, size_t n);
/* Write up to max bytes (0: no limit). Returns bytes written (0: nothing waiting), or -1 and
 * errno from writev (EAGAIN, EPIPE, ...). done is called for every chunk finished. */
ssize_t lg_outq_write(struct lg_outq *q, int fd, size_t max, lg_done_fn done, void *ctx);
/* Throw everything away, calling done for every chunk (output nobody can read any more is
 * acknowledged all the same, so the tasks do not block). */
void lg_outq_drop(struct lg_outq *q, lg_done_fn done, void *ctx);
static inline int lg_outq_empty(const struct lg_outq *q)
{
    return q->head == NULL;
}
void lg_outq_free(struct lg_outq *q);

#endif
