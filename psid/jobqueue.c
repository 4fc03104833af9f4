/*
 * jobqueue.c - the spawn requests that wait for a row of the gang matrix (jobqueue.h): a
 * singly linked FIFO of copies of the requests, at most JOBQ_MAX on a node and JOBQ_PER_UID
 * of one user, one per client, and at most JOBQ_BYTES of request bodies on a node and
 * JOBQ_BYTES_PER_UID of one user. Counting a user's entries and bytes walks the queue: it
 * holds at most JOBQ_MAX, and is only walked when a spawn is queued.
 */
#include "jobqueue.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

unsigned jobq_of_uid(const struct jobq *q, uint32_t uid)
{
    unsigned n = 0;
    for (const struct jobq_entry *e = q->head; e; e = e->next) n += e->uid == uid;
    return n;
}

size_t jobq_bytes_of_uid(const struct jobq *q, uint32_t uid)
{
    size_t n = 0;
    for (const struct jobq_entry *e = q->head; e; e = e->next)
        if (e->uid == uid) n += e->len;
    return n;
}

size_t jobq_room(const struct jobq *q, uint32_t uid)
{
    size_t mine = jobq_bytes_of_uid(q, uid);
    size_t user = mine < JOBQ_BYTES_PER_UID ? JOBQ_BYTES_PER_UID - mine : 0;
    size_t node = q->bytes < JOBQ_BYTES ? JOBQ_BYTES - q->bytes : 0;
    return user < node ? user : node;
}

int jobq_add(struct jobq *q, struct client *c, uint32_t uid, const struct psmsg *m, uint64_t now_ns)
{
    if (q->n >= JOBQ_MAX || jobq_of_uid(q, uid) >= JOBQ_PER_UID) {
        errno = ENOBUFS;
        return -1;
    }
    if (m->body.len > jobq_room(q, uid)) {
        errno = ENOSPC;
        return -1;
    }
    struct jobq_entry *e = calloc(1, sizeof *e);
    uint8_t *body = malloc(m->body.len ? m->body.len : 1);
    if (!e || !body) {
        free(e);
        free(body);
        errno = ENOMEM;
        return -1;
    }
    memcpy(body, m->body.p, m->body.len);
    *e = (struct jobq_entry){.c = c,
                             .uid = uid,
                             .since_ns = now_ns,
                             .type = m->type,
                             .id = m->id,
                             .body = body,
                             .len = m->body.len};
    if (q->tail)
        q->tail->next = e;
    else
        q->head = e;
    q->tail = e;
    q->bytes += e->len;
    return (int)++q->n;
}

struct jobq_entry *jobq_of_client(const struct jobq *q, const struct client *c)
{
    for (struct jobq_entry *e = q->head; e; e = e->next)
        if (e->c == c) return e;
    return NULL;
}

struct psmsg jobq_msg(const struct jobq_entry *e)
{
    return (struct psmsg){.type = e->type,
                          .id = e->id,
                          .length = (uint32_t)(PSMSG_HDR + e->len),
                          .body = {e->body, e->len}};
}

void jobq_del(struct jobq *q, struct jobq_entry *e)
{
    struct jobq_entry **pp = &q->head, *prev = NULL;
    while (*pp && *pp != e) {
        prev = *pp;
        pp = &(*pp)->next;
    }
    if (!*pp) return;
    *pp = e->next;
    if (q->tail == e) q->tail = prev;
    q->n--;
    q->bytes -= e->len;
    free(e->body);
    free(e);
}

void jobq_free(struct jobq *q)
{
    while (q->head) jobq_del(q, q->head);
}
