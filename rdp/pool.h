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
    uint8_t *data;        /* the bytes: the buffer's own storage, which follows it */
    uint32_t len;         /* bytes used at data (with ext: the datagram's length) */
    const uint8_t *ext;   /* a packet whose payload still lies in the caller's buffer, during
                             rdp_send only: data holds the header and, behind it, the MAC;
                             the payload is copied in before rdp_send returns */
    bool in_tx;           /* referenced by the unsent transmit batch */
    bool release;         /* return to the pool once the batch is sent */
    bool borrowed;        /* a view of a datagram inside a coalesced (GRO) read, not from
                             the pool: valid during its handling only; to keep it, copy it
                             (rdp_buf_keep) */
};

struct rdp_pool {
    size_t bufsize; /* capacity of data[] */
    struct rdp_buf *free;
    size_t total, nfree;
};

void rdp_pool_init(struct rdp_pool *p, size_t bufsize);
void rdp_pool_destroy(struct rdp_pool *p);
struct rdp_buf *rdp_pool_get(struct rdp_pool *p); /* NULL when out of memory */
/* Return b; if it still sits in the transmit batch, it goes back after the batch is sent.
 * A borrowed view is not the pool's: nothing happens. */
void rdp_pool_put(struct rdp_pool *p, struct rdp_buf *b);
/* rdp_pool_put each buffer of a chain linked through next (NULL-terminated). */
void rdp_pool_put_chain(struct rdp_pool *p, struct rdp_buf *chain);
/* A pool buffer with a copy of b's contents; NULL when out of memory. */
struct rdp_buf *rdp_pool_copy(struct rdp_pool *p, const struct rdp_buf *b);
/* A buffer the caller may keep with b's contents: b itself if it is from the pool, else a
 * pool copy of the borrowed view. NULL when out of memory. */
struct rdp_buf *rdp_buf_keep(struct rdp_pool *p, struct rdp_buf *b);

#endif
