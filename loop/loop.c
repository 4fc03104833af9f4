/*
 * loop.c - the event loop of psid, rdpbench and psrun (see psloop.h): epoll for descriptors, a
 * binary min-heap of timers.
 * Timers are cancelled lazily: a cancelled entry stays in the heap and is skipped (and
 * dropped before the loop sleeps when it is the earliest, so that it wakes nobody). The wait
 * has no timeout: a timerfd in the epoll set, armed at the earliest deadline before the loop
 * sleeps and left alone when that moves a little later (lazytimer.h), wakes the loop, which
 * saves reprogramming a timer at every wait.
 *
 * A descriptor epoll refuses (EPERM: a regular file, /dev/null) is always ready, as poll(2)
 * has it: the loop keeps it aside and calls it in every round with the events it was watched
 * for, and does not sleep while there is one (psrun's stdin and stdout may be such files).
 */
#include "psloop.h"

#include "lazytimer.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

struct watch {
    int fd;
    loop_fd_fn fn;
    void *ctx;
    uint32_t events;
    bool always; /* epoll refused it: ready in every round */
};

struct timer {
    uint64_t at, id;
    loop_timer_fn fn;
    void *ctx;
};

struct loop {
    int ep;
    struct lazytimer wake;
    bool stop;
    struct watch **w; /* indexed by fd */
    int nw;
    int nalways; /* watches that are always ready */
    struct timer *heap;
    size_t nheap, capheap;
    uint64_t next_id;
    uint64_t *cancelled; /* ids cancelled but still in the heap */
    size_t ncancel, capcancel;
    uint64_t (*src_deadline)(void *);
    void (*src_due)(void *);
    void *src_ctx;
    void (*before_wait)(void *);
    void *before_ctx;
};

uint64_t loop_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

struct loop *loop_new(void)
{
    struct loop *l = calloc(1, sizeof *l);
    if (!l) return NULL;
    l->ep = epoll_create1(EPOLL_CLOEXEC);
    if (l->ep < 0) {
        free(l);
        return NULL;
    }
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = -1}; /* -1: the wake-up timer */
    if (lazytimer_open(&l->wake) < 0 || epoll_ctl(l->ep, EPOLL_CTL_ADD, l->wake.fd, &ev) < 0) {
        int e = errno;
        lazytimer_close(&l->wake);
        close(l->ep);
        free(l);
        errno = e;
        return NULL;
    }
    return l;
}

void loop_free(struct loop *l)
{
    if (!l) return;
    for (int i = 0; i < l->nw; i++) free(l->w[i]);
    free(l->w);
    free(l->heap);
    free(l->cancelled);
    lazytimer_close(&l->wake);
    close(l->ep);
    free(l);
}

int loop_fd(struct loop *l, int fd, uint32_t events, loop_fd_fn fn, void *ctx)
{
    if (fd < 0) {
        errno = EBADF;
        return -1;
    }
    if (fd >= l->nw) {
        int n = l->nw ? l->nw : 64;
        while (n <= fd) n *= 2;
        struct watch **w = realloc(l->w, (size_t)n * sizeof *w);
        if (!w) return -1;
        memset(w + l->nw, 0, (size_t)(n - l->nw) * sizeof *w);
        l->w = w;
        l->nw = n;
    }
    bool add = !l->w[fd];
    if (!add && l->w[fd]->events == events && l->w[fd]->fn == fn && l->w[fd]->ctx == ctx)
        return 0; /* as it is: no system call (level-triggered, so nothing is lost) */
    if (add && !(l->w[fd] = malloc(sizeof *l->w[fd]))) return -1;
    bool always = !add && l->w[fd]->always;
    *l->w[fd] = (struct watch){fd, fn, ctx, events, always};
    if (always) return 0;
    struct epoll_event ev = {.events = events, .data.fd = fd};
    if (epoll_ctl(l->ep, add ? EPOLL_CTL_ADD : EPOLL_CTL_MOD, fd, &ev) < 0) {
        if (add && errno == EPERM) { /* a regular file or the like: always ready */
            l->w[fd]->always = true;
            l->nalways++;
            return 0;
        }
        if (add) {
            free(l->w[fd]);
            l->w[fd] = NULL;
        }
        return -1;
    }
    return 0;
}

void loop_fd_del(struct loop *l, int fd)
{
    if (fd < 0 || fd >= l->nw || !l->w[fd]) return;
    if (l->w[fd]->always)
        l->nalways--;
    else
        epoll_ctl(l->ep, EPOLL_CTL_DEL, fd, NULL);
    free(l->w[fd]);
    l->w[fd] = NULL;
}

static void heap_swap(struct loop *l, size_t a, size_t b)
{
    struct timer t = l->heap[a];
    l->heap[a] = l->heap[b];
    l->heap[b] = t;
}

static bool before(const struct timer *a, const struct timer *b)
{
    return a->at < b->at || (a->at == b->at && a->id < b->id);
}

uint64_t loop_timer(struct loop *l, uint64_t at, loop_timer_fn fn, void *ctx)
{
    if (l->nheap == l->capheap) {
        size_t n = l->capheap ? l->capheap * 2 : 64;
        struct timer *h = realloc(l->heap, n * sizeof *h);
        if (!h) return 0;
        l->heap = h;
        l->capheap = n;
    }
    size_t i = l->nheap++;
    l->heap[i] = (struct timer){at, ++l->next_id, fn, ctx};
    while (i && before(&l->heap[i], &l->heap[(i - 1) / 2])) {
        heap_swap(l, i, (i - 1) / 2);
        i = (i - 1) / 2;
    }
    return l->next_id;
}

static struct timer heap_pop(struct loop *l)
{
    struct timer top = l->heap[0];
    l->heap[0] = l->heap[--l->nheap];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1, m = i;
        if (c < l->nheap && before(&l->heap[c], &l->heap[m])) m = c;
        if (c + 1 < l->nheap && before(&l->heap[c + 1], &l->heap[m])) m = c + 1;
        if (m == i) break;
        heap_swap(l, i, m);
        i = m;
    }
    return top;
}

static bool take_cancelled(struct loop *l, uint64_t id)
{
    for (size_t i = 0; i < l->ncancel; i++)
        if (l->cancelled[i] == id) {
            l->cancelled[i] = l->cancelled[--l->ncancel];
            return true;
        }
    return false;
}

void loop_timer_cancel(struct loop *l, uint64_t id)
{
    if (!id) return;
    bool pending = false;
    for (size_t i = 0; i < l->nheap && !pending; i++) pending = l->heap[i].id == id;
    if (!pending) return;
    if (l->ncancel == l->capcancel) {
        size_t n = l->capcancel ? l->capcancel * 2 : 16;
        uint64_t *c = realloc(l->cancelled, n * sizeof *c);
        if (!c) return;
        l->cancelled = c;
        l->capcancel = n;
    }
    l->cancelled[l->ncancel++] = id;
}

void loop_set_timer_source(struct loop *l, uint64_t (*deadline)(void *ctx), void (*due)(void *ctx),
                           void *ctx)
{
    l->src_deadline = deadline;
    l->src_due = due;
    l->src_ctx = ctx;
}

void loop_set_before_wait(struct loop *l, void (*fn)(void *ctx), void *ctx)
{
    l->before_wait = fn;
    l->before_ctx = ctx;
}

void loop_stop(struct loop *l)
{
    l->stop = true;
}

static void run_timers(struct loop *l)
{
    uint64_t now = loop_now();
    while (l->nheap && l->heap[0].at <= now && !l->stop) {
        struct timer t = heap_pop(l);
        if (take_cancelled(l, t.id)) continue;
        t.fn(t.ctx);
    }
}

static void dispatch(struct loop *l, const struct epoll_event *ev, int n)
{
    for (int i = 0; i < n && !l->stop; i++) {
        int fd = ev[i].data.fd;
        if (fd < 0)
            lazytimer_fired(&l->wake);
        else if (fd < l->nw && l->w[fd])
            l->w[fd]->fn(l->w[fd]->ctx, ev[i].events);
    }
}

/* The watches epoll refused, each with the events it was watched for (a callback may remove
 * or add watches: each fd is looked up when its turn comes). */
static void dispatch_always(struct loop *l)
{
    for (int fd = 0; fd < l->nw && l->nalways && !l->stop; fd++)
        if (l->w[fd] && l->w[fd]->always)
            l->w[fd]->fn(l->w[fd]->ctx, l->w[fd]->events & (EPOLLIN | EPOLLOUT));
}

int loop_once(struct loop *l)
{
    struct epoll_event ev[64];
    run_timers(l);
    if (l->before_wait) l->before_wait(l->before_ctx);
    int n = epoll_wait(l->ep, ev, 64, 0);
    if (n < 0) return errno == EINTR ? 0 : -1;
    dispatch(l, ev, n);
    dispatch_always(l);
    if (l->before_wait) l->before_wait(l->before_ctx);
    return n;
}

int loop_step(struct loop *l, uint64_t until)
{
    struct epoll_event ev[64];
    run_timers(l);
    if (l->before_wait) l->before_wait(l->before_ctx);
    if (l->stop) return 0;
    /* a cancelled timer on top would set the wake-up for nothing (cancelled is lazy) */
    while (l->nheap && l->ncancel && take_cancelled(l, l->heap[0].id)) heap_pop(l);
    uint64_t d = l->nheap && l->heap[0].at < until ? l->heap[0].at : until;
    uint64_t src = l->src_deadline ? l->src_deadline(l->src_ctx) : UINT64_MAX;
    if (src < d) d = src;
    int n = l->nalways ? epoll_wait(l->ep, ev, 64, 0) /* never sleep past a ready one */
                       : lazytimer_wait(&l->wake, l->ep, ev, 64, d);
    if (n < 0) return errno == EINTR ? 0 : -1;
    dispatch(l, ev, n);
    dispatch_always(l);
    if (l->src_due && src != UINT64_MAX && src <= loop_now()) l->src_due(l->src_ctx);
    return n;
}

int loop_run(struct loop *l)
{
    l->stop = false;
    while (!l->stop)
        if (loop_step(l, UINT64_MAX) < 0) return -1;
    return 0;
}
