/*
 * pool.h - fixed-size packet buffers, recycled through a free list so that the hot path
 * allocates nothing once the pool has grown to its working size. Memory per peer is bounded
 * by the send and receive limits, not here.
 */
#ifndef PSCLUSTER_RDP_POOL_H
#define PSCLUSTER_RDP_POOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct rdp_buf {
    struct rdp_buf *next; /* free list, or the chain of a pending message */
    uint32_t len;         /* bytes used in data[] */
    bool in_tx;           /* referenced by the unsent transmit batch */
    bool release;         /* return to the pool once the batch is sent */
    uint8_t data[];
};

struct rdp_pool {
    size_t bufsize; /* capacity of data[] */
    struct rdp_buf *free;
    size_t total, nfree;
};

void rdp_pool_init(struct rdp_pool *p, size_t bufsize);
void rdp_pool_destroy(struct rdp_pool *p);
struct rdp_buf *rdp_pool_get(struct rdp_pool *p); /* NULL when out of memory */
/* Return b; if it still sits in the transmit batch, it goes back after the batch is sent. */
void rdp_pool_put(struct rdp_pool *p, struct rdp_buf *b);

#endif
