/*
 * pool.c - the packet buffer free list (see pool.h).
 */
#include "pool.h"

#include <stdlib.h>
#include <string.h>

void rdp_pool_init(struct rdp_pool *p, size_t bufsize)
{
    p->bufsize = bufsize;
    p->free = NULL;
    p->total = p->nfree = 0;
}

void rdp_pool_destroy(struct rdp_pool *p)
{
    while (p->free) {
        struct rdp_buf *b = p->free;
        p->free = b->next;
        free(b);
    }
    p->total = p->nfree = 0;
}

struct rdp_buf *rdp_pool_get(struct rdp_pool *p)
{
    struct rdp_buf *b = p->free;
    if (b) {
        p->free = b->next;
        p->nfree--;
    } else {
        b = malloc(sizeof *b + p->bufsize);
        if (!b) return NULL;
        b->data = (uint8_t *)(b + 1);
        p->total++;
    }
    b->next = NULL;
    b->len = 0;
    b->ext = NULL;
    b->in_tx = b->release = b->borrowed = false;
    return b;
}

struct rdp_buf *rdp_pool_copy(struct rdp_pool *p, const struct rdp_buf *b)
{
    struct rdp_buf *c = rdp_pool_get(p);
    if (!c) return NULL;
    memcpy(c->data, b->data, b->len);
    c->len = b->len;
    return c;
}

struct rdp_buf *rdp_buf_keep(struct rdp_pool *p, struct rdp_buf *b)
{
    return b->borrowed ? rdp_pool_copy(p, b) : b;
}

void rdp_pool_put(struct rdp_pool *p, struct rdp_buf *b)
{
    if (!b || b->borrowed) return;
    if (b->in_tx) {
        b->release = true;
        return;
    }
    b->next = p->free;
    p->free = b;
    p->nfree++;
}

void rdp_pool_put_chain(struct rdp_pool *p, struct rdp_buf *chain)
{
    while (chain) {
        struct rdp_buf *b = chain;
        chain = b->next;
        rdp_pool_put(p, b);
    }
}
