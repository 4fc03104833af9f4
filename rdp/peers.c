/*
 * peers.c - the peer table: which peer (node and endpoint, RDP_PEER) is which struct
 * rdp_peer. An open-addressing hash table with linear probing, a power-of-two size kept at
 * most half full, and backward-shift deletion (no tombstones), so a lookup on the receive
 * path is a multiply and, almost always, one probe. The table of a daemon holds a few
 * hundred nodes; a process under the preload library its handful of peers: it grows with
 * the peers, never with the size of the id space (the old table was an array indexed by
 * node id).
 */
#include "internal.h"

#include <errno.h>
#include <stdlib.h>

static uint32_t slot_of(const struct rdp_peers *t, uint32_t id)
{
    return (uint32_t)((id * 0x9e3779b1u) >> 7) & (t->cap - 1); /* Fibonacci hashing */
}

struct rdp_peer *rdp_peers_get(const struct rdp_peers *t, uint32_t id)
{
    if (!t->cap) return NULL;
    for (uint32_t i = slot_of(t, id);; i = (i + 1) & (t->cap - 1)) {
        struct rdp_peer *p = t->v[i];
        if (!p || p->node == id) return p;
    }
}

static int grow(struct rdp_peers *t)
{
    uint32_t cap = t->cap ? t->cap * 2 : 16;
    struct rdp_peer **v = calloc(cap, sizeof *v);
    if (!v) return -1;
    struct rdp_peers n = {v, cap, 0};
    for (uint32_t i = 0; i < t->cap; i++)
        if (t->v[i]) rdp_peers_put(&n, t->v[i]);
    free(t->v);
    *t = n;
    return 0;
}

int rdp_peers_put(struct rdp_peers *t, struct rdp_peer *p)
{
    if (2 * (t->n + 1) > t->cap && grow(t) < 0) {
        errno = ENOMEM;
        return -1;
    }
    uint32_t i = slot_of(t, p->node);
    while (t->v[i]) i = (i + 1) & (t->cap - 1);
    t->v[i] = p;
    t->n++;
    return 0;
}

void rdp_peers_del(struct rdp_peers *t, uint32_t id)
{
    if (!t->cap) return;
    uint32_t i = slot_of(t, id), m = t->cap - 1;
    while (t->v[i] && t->v[i]->node != id) i = (i + 1) & m;
    if (!t->v[i]) return;
    t->v[i] = NULL;
    t->n--;
    /* shift back the entries of the run after i that may not stay behind the hole */
    for (uint32_t j = (i + 1) & m; t->v[j]; j = (j + 1) & m) {
        uint32_t home = slot_of(t, t->v[j]->node);
        /* j's entry may move to i if its home is not in the cyclic range (i, j] */
        if ((j > i && (home <= i || home > j)) || (j < i && home <= i && home > j)) {
            t->v[i] = t->v[j];
            t->v[j] = NULL;
            i = j;
        }
    }
}

void rdp_peers_free(struct rdp_peers *t)
{
    free(t->v);
    *t = (struct rdp_peers){0};
}
