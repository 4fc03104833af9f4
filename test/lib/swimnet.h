/*
 * swimnet.h - many SWIM members (psid/swim.h) in one process over a simulated network:
 * a discrete-event loop with loss, delay and jitter, members that can be killed (silent
 * from then on) or paused (their timers and packets wait until they resume, as for a
 * stopped process). Used by the unit tests (test_swim.c) and the simulation build
 * (test/tools/swimsim.c).
 */
#ifndef PSCLUSTER_TEST_SWIMNET_H
#define PSCLUSTER_TEST_SWIMNET_H

#include "../../psid/swim.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct sn_ev {
    uint64_t t, order;
    uint32_t member; /* tick: its; deliver: the receiver */
    uint32_t len;    /* 0: a tick */
    uint8_t *pkt;
};

struct sn_member {
    struct swimnet *net;
    uint32_t id;
    struct swim *s;
    bool killed;
    uint64_t paused_until, tick_at, killed_at;
    uint64_t sent, recv;
};

struct swimnet {
    uint32_t n;
    struct swim_config proto;
    struct sn_member *m;
    struct sn_ev *heap;
    size_t nheap, cap;
    uint64_t now, order, rng;
    double loss;
    uint64_t delay_ns, jitter_ns;
    /* what the members concluded: first and last time a killed member was declared dead
     * by someone, by how many; dead declarations of members that were not killed */
    uint64_t *first_dead, *last_dead;
    uint32_t *ndead;
    uint64_t false_dead, false_suspect, refuted;
};

static inline uint64_t sn_rand(struct swimnet *w)
{
    uint64_t z = (w->rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static inline void sn_push(struct swimnet *w, struct sn_ev e)
{
    if (w->nheap == w->cap) {
        w->cap = w->cap ? w->cap * 2 : 1024;
        w->heap = realloc(w->heap, w->cap * sizeof *w->heap);
        if (!w->heap) abort();
    }
    e.order = w->order++;
    size_t i = w->nheap++;
    while (i) {
        size_t p = (i - 1) / 2;
        struct sn_ev *q = &w->heap[p];
        if (q->t < e.t || (q->t == e.t && q->order < e.order)) break;
        w->heap[i] = *q;
        i = p;
    }
    w->heap[i] = e;
}

static inline struct sn_ev sn_pop(struct swimnet *w)
{
    struct sn_ev top = w->heap[0], last = w->heap[--w->nheap];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= w->nheap) break;
        if (c + 1 < w->nheap &&
            (w->heap[c + 1].t < w->heap[c].t ||
             (w->heap[c + 1].t == w->heap[c].t && w->heap[c + 1].order < w->heap[c].order)))
            c++;
        if (last.t < w->heap[c].t || (last.t == w->heap[c].t && last.order < w->heap[c].order))
            break;
        w->heap[i] = w->heap[c];
        i = c;
    }
    if (w->nheap) w->heap[i] = last;
    return top;
}

static inline void sn_send(void *ctx, uint32_t to, const uint8_t *pkt, size_t len)
{
    struct sn_member *me = ctx;
    struct swimnet *w = me->net;
    me->sent++;
    if (w->loss > 0 && (double)(sn_rand(w) >> 11) / 9007199254740992.0 < w->loss) return;
    uint8_t *copy = malloc(len);
    if (!copy) abort();
    memcpy(copy, pkt, len);
    uint64_t d = w->delay_ns + (w->jitter_ns ? sn_rand(w) % w->jitter_ns : 0);
    sn_push(w, (struct sn_ev){.t = w->now + d, .member = to, .len = (uint32_t)len, .pkt = copy});
}

static inline void sn_change(void *ctx, uint32_t member, enum swim_state from, enum swim_state to,
                             bool restarted)
{
    struct sn_member *me = ctx;
    struct swimnet *w = me->net;
    (void)restarted;
    struct sn_member *x = &w->m[member];
    if (to == SWIM_SUSPECT && !x->killed) w->false_suspect++;
    if (from == SWIM_SUSPECT && to == SWIM_ALIVE) w->refuted++;
    if (to != SWIM_DEAD) return;
    if (!x->killed) {
        w->false_dead++;
        return;
    }
    if (!w->first_dead[member]) w->first_dead[member] = w->now;
    w->last_dead[member] = w->now;
    w->ndead[member]++;
}

static inline void sn_schedule(struct sn_member *x)
{
    uint64_t t = swim_next(x->s);
    if (t < x->net->now) t = x->net->now;
    if (t == x->tick_at) return;
    x->tick_at = t;
    sn_push(x->net, (struct sn_ev){.t = t, .member = x->id});
}

static const uint8_t sn_key[32] = {0x5a};
static const struct swim_io sn_io = {.send = sn_send, .change = sn_change};

static inline struct swimnet *swimnet_new(uint32_t n, const struct swim_config *proto,
                                          uint64_t seed)
{
    struct swimnet *w = calloc(1, sizeof *w);
    if (!w) abort();
    w->n = n;
    w->proto = *proto;
    w->rng = seed;
    w->now = 1000000000ull;
    w->delay_ns = 100000; /* 0.1 ms, a LAN */
    w->jitter_ns = 100000;
    w->m = calloc(n, sizeof *w->m);
    w->first_dead = calloc(n, sizeof *w->first_dead);
    w->last_dead = calloc(n, sizeof *w->last_dead);
    w->ndead = calloc(n, sizeof *w->ndead);
    if (!w->m || !w->first_dead || !w->last_dead || !w->ndead) abort();
    for (uint32_t i = 0; i < n; i++) {
        struct swim_config c = *proto;
        c.n = n;
        c.self = i;
        w->m[i] = (struct sn_member){.net = w, .id = i, .tick_at = UINT64_MAX};
        w->m[i].s = swim_new(&c, sn_key, 1000 + i, sn_rand(w), &sn_io, &w->m[i], w->now);
        if (!w->m[i].s) abort();
        sn_schedule(&w->m[i]);
    }
    return w;
}

static inline void swimnet_free(struct swimnet *w)
{
    for (size_t i = 0; i < w->nheap; i++) free(w->heap[i].pkt);
    for (uint32_t i = 0; i < w->n; i++) swim_free(w->m[i].s);
    free(w->heap);
    free(w->m);
    free(w->first_dead);
    free(w->last_dead);
    free(w->ndead);
    free(w);
}

/* Run until time `until`. */
static inline void swimnet_run(struct swimnet *w, uint64_t until)
{
    while (w->nheap && w->heap[0].t <= until) {
        struct sn_ev e = sn_pop(w);
        w->now = e.t;
        struct sn_member *x = &w->m[e.member];
        if (x->killed) {
            free(e.pkt);
            continue;
        }
        if (e.t < x->paused_until) { /* a stopped process: it all waits */
            if (!e.len && e.t != x->tick_at) continue;
            if (!e.len) x->tick_at = x->paused_until;
            e.t = x->paused_until;
            sn_push(w, e);
            continue;
        }
        if (e.len) {
            x->recv++;
            swim_recv(x->s, e.pkt, e.len, w->now);
            free(e.pkt);
        } else {
            if (e.t != x->tick_at) continue; /* superseded */
            x->tick_at = UINT64_MAX;
            swim_tick(x->s, w->now);
        }
        sn_schedule(x);
    }
    if (w->now < until) w->now = until;
}

static inline void swimnet_kill(struct swimnet *w, uint32_t i)
{
    w->m[i].killed = true;
    w->m[i].killed_at = w->now;
}

/* A killed member starts again with a new boot. */
static inline void swimnet_restart(struct swimnet *w, uint32_t i, uint64_t boot)
{
    struct sn_member *x = &w->m[i];
    struct swim_config c = w->proto;
    c.n = w->n;
    c.self = i;
    swim_free(x->s);
    x->s = swim_new(&c, sn_key, boot, sn_rand(w), &sn_io, x, w->now);
    if (!x->s) abort();
    x->killed = false;
    x->tick_at = UINT64_MAX;
    sn_schedule(x);
}

static inline void swimnet_pause(struct swimnet *w, uint32_t i, uint64_t ns)
{
    w->m[i].paused_until = w->now + ns;
}

/* Live members that hold member i dead. */
static inline uint32_t swimnet_dead_views(const struct swimnet *w, uint32_t i)
{
    uint32_t c = 0;
    for (uint32_t j = 0; j < w->n; j++)
        if (j != i && !w->m[j].killed && swim_member_state(w->m[j].s, i) == SWIM_DEAD) c++;
    return c;
}

static inline uint32_t swimnet_live(const struct swimnet *w)
{
    uint32_t c = 0;
    for (uint32_t j = 0; j < w->n; j++) c += !w->m[j].killed;
    return c;
}

#endif
