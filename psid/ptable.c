/*
 * ptable.c - the bounded table of pending entries (see ptable.h). Keys are chained in
 * nbuckets buckets (max rounded up to a power of two: one entry per bucket on average at
 * the bound); the count per uid is an open-addressing table (linear probing, deletion by
 * shifting back) of twice the room of the most uids there can be, so every operation is
 * O(1) on average; a list of all entries, newest first, is there for the walks that
 * need it (a node lost, a client gone).
 */
#include "ptable.h"

#include "psloop.h"

#include <errno.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>

#define UID_FREE UINT32_MAX /* (no client has it: SO_PEERCRED's overflow uid is 65534) */

static unsigned pow2(unsigned n)
{
    unsigned p = 1;
    while (p < n) p <<= 1;
    return p;
}

int ptable_init(struct ptable *t, struct loop *loop, unsigned max, unsigned per_uid,
                void (*expire)(struct pt_entry *e))
{
    memset(t, 0, sizeof *t);
    t->loop = loop;
    t->max = max;
    t->per_uid = per_uid;
    t->expire = expire;
    randombytes_buf(t->hkey, sizeof t->hkey);
    t->nbuckets = pow2(max ? max : 1);
    t->nuidslots = 2 * t->nbuckets;
    t->buckets = calloc(t->nbuckets, sizeof *t->buckets);
    t->uids = malloc(t->nuidslots * sizeof *t->uids);
    if (!t->buckets || !t->uids) {
        free(t->buckets);
        free(t->uids);
        errno = ENOMEM;
        return -1;
    }
    for (unsigned i = 0; i < t->nuidslots; i++) t->uids[i] = (struct pt_uid){UID_FREE, 0};
    return 0;
}

void ptable_fini(struct ptable *t)
{
    for (struct pt_entry *e = t->all; e; e = e->next)
        if (e->timer) loop_timer_cancel(t->loop, e->timer);
    free(t->buckets);
    free(t->uids);
    memset(t, 0, sizeof *t);
}

uint64_t ptable_key(const struct ptable *t, const void *bytes, size_t len)
{
    uint8_t out[crypto_shorthash_BYTES];
    crypto_shorthash(out, bytes, len, t->hkey);
    uint64_t k;
    memcpy(&k, out, sizeof k);
    return k;
}

/* The slot of uid in the count table: its own, or the free one where it would go. */
static unsigned uid_slot(const struct ptable *t, uint32_t uid)
{
    unsigned mask = t->nuidslots - 1, i = (uid * 2654435761u) & mask;
    while (t->uids[i].uid != UID_FREE && t->uids[i].uid != uid) i = (i + 1) & mask;
    return i;
}

unsigned ptable_of_uid(const struct ptable *t, uint32_t uid)
{
    const struct pt_uid *u = &t->uids[uid_slot(t, uid)];
    return u->uid == uid ? u->n : 0;
}

bool ptable_room(const struct ptable *t, uint32_t uid)
{
    if (t->n >= t->max) return false;
    return uid == 0 || !t->per_uid || ptable_of_uid(t, uid) < t->per_uid;
}

static void uid_sub(struct ptable *t, uint32_t uid)
{
    unsigned mask = t->nuidslots - 1, i = uid_slot(t, uid);
    if (t->uids[i].uid != uid || --t->uids[i].n) return;
    /* the slot empties: the ones after it that probed past it shift back */
    t->uids[i].uid = UID_FREE;
    for (unsigned j = (i + 1) & mask; t->uids[j].uid != UID_FREE; j = (j + 1) & mask) {
        unsigned home = (t->uids[j].uid * 2654435761u) & mask;
        /* j's entry may move to i when its home is not in (i, j] (cyclically) */
        bool stays = i <= j ? (home > i && home <= j) : (home > i || home <= j);
        if (stays) continue;
        t->uids[i] = t->uids[j];
        t->uids[j].uid = UID_FREE;
        i = j;
    }
}

static void expired(void *ctx)
{
    struct pt_entry *e = ctx;
    e->timer = 0;
    e->t->expire(e);
}

int ptable_add(struct ptable *t, struct pt_entry *e, uint64_t key, uint32_t uid, uint64_t deadline)
{
    if (uid == UID_FREE) { /* the free slot's mark: no entry may claim it */
        errno = EINVAL;
        return -1;
    }
    if (!ptable_room(t, uid)) {
        errno = ENOBUFS;
        return -1;
    }
    struct pt_uid *u = &t->uids[uid_slot(t, uid)];
    u->uid = uid;
    u->n++;
    struct pt_entry **b = &t->buckets[key & (t->nbuckets - 1)];
    *e = (struct pt_entry){.key = key, .uid = uid, .t = t, .hnext = *b, .next = t->all};
    *b = e;
    if (t->all) t->all->prev = e;
    t->all = e;
    t->n++;
    if (deadline) e->timer = loop_timer(t->loop, deadline, expired, e);
    return 0;
}

void ptable_del(struct pt_entry *e)
{
    struct ptable *t = e->t;
    if (!t) return;
    if (e->timer) loop_timer_cancel(t->loop, e->timer);
    for (struct pt_entry **pp = &t->buckets[e->key & (t->nbuckets - 1)]; *pp; pp = &(*pp)->hnext)
        if (*pp == e) {
            *pp = e->hnext;
            break;
        }
    if (e->prev)
        e->prev->next = e->next;
    else
        t->all = e->next;
    if (e->next) e->next->prev = e->prev;
    uid_sub(t, e->uid);
    t->n--;
    e->t = NULL;
    e->timer = 0;
}

void ptable_rearm(struct pt_entry *e, uint64_t deadline)
{
    if (e->timer) loop_timer_cancel(e->t->loop, e->timer);
    e->timer = deadline ? loop_timer(e->t->loop, deadline, expired, e) : 0;
}

struct pt_entry *ptable_find(const struct ptable *t, uint64_t key)
{
    struct pt_entry *e = t->buckets ? t->buckets[key & (t->nbuckets - 1)] : NULL;
    while (e && e->key != key) e = e->hnext;
    return e;
}

struct pt_entry *ptable_find_next(const struct pt_entry *e)
{
    struct pt_entry *n = e->hnext;
    while (n && n->key != e->key) n = n->hnext;
    return n;
}
