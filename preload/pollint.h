/*
 * pollint.h - what the readiness wrappers share among themselves: poll.c (poll, select, and
 * the sleeps' cancellation), epoll.c (the epoll calls and the registrations of connections in
 * the program's sets) and bells.c (the doorbells and the lazy arming). The rest of the
 * library calls them through psp.h; nothing here is for it.
 *
 * Each file owns its state (epoll.c the registrations and the sets holding the RDP socket,
 * bells.c the due and lazy lists and the count of sleepers); the others ask through the
 * functions below.
 */
#ifndef PSCLUSTER_PRELOAD_POLLINT_H
#define PSCLUSTER_PRELOAD_POLLINT_H

#include "psp.h"

#include <time.h>

/* One registration of a connection in an epoll set of the program's (epoll.c) */
struct epreg {
    int epfd, fd;
    uint32_t events; /* the program's */
    epoll_data_t data;
    struct conn *c;
    unsigned idx;
    bool disarmed;          /* EPOLLONESHOT fired */
    bool dormant;           /* the program deleted it: its bells stay in the set with no events, to
                             * be taken up again by the next ADD (event loops that delete and add a
                             * descriptor per request, as redis-benchmark's, cost one call each) */
    uint32_t in_ev, out_ev; /* the events its bell_in and bell_out are in the set with */
    bool hup;   /* bell_hup is in the set for it (events without EPOLLIN and EPOLLOUT) */
    bool kern;  /* the TCP phase: the program's descriptor itself is in the set */
    bool kbell; /* the kernel socket is in the set for it (krx) */
    uint64_t et_in, et_out; /* EPOLLET, same-node path: the ring positions last reported */
    struct epreg *next;
};

/* nregs (epoll.c), nlazy and nlater (bells.c) are looked at without psp.lock (a glance, to
 * skip work; each is read again under it), so they are written, under it, as atomics */
#define PEEK(v)   __atomic_load_n(&(v), __ATOMIC_RELAXED)
#define SET(v, x) __atomic_store_n(&(v), (x), __ATOMIC_RELAXED)

static inline uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* --- poll.c --- */
/* What a sleep in poll, select or epoll_wait set up, undone if the thread is cancelled in
 * it (wait.c, "Cancellation"): its waiters, its counts, poll_any's references to the
 * connections, and what poll_any and select_any allocated for large sets */
#define POLL_BUFS 6
struct poll_sleep {
    bool entered, sleeper;
    struct conn **cs;
    int ncs;
    struct waiter *ws;
    bool held; /* cs[] are references of poll_any's */
    void *bufs[POLL_BUFS];
};
void poll_cancelled(void *arg); /* the handler of a sleep (PSP_SLEEP_IN) with a poll_sleep */

/* --- epoll.c --- */
bool regs_any(void); /* whether any registration exists (a glance, without psp.lock) */
/* The events of registration r for its connection's state s (conn_poll). Under psp.lock. */
uint32_t reg_events(struct epreg *r, short s);

/* --- bells.c --- */
int bells(struct conn *c); /* c's bell_in and bell_out, made if not yet: 0, or -1 */
/* A doorbell reported c: its bells are brought up to date before the next wait (bells_due) */
void bells_later(struct conn *c);
bool bells_any_due(void); /* a glance, without psp.lock */
void bells_due(void);
/* A thread about to sleep where an epoll set may be among what it waits on: sleeper_add
 * under psp.lock; sleep_enter takes it (and counts the thread only if may_sleep and there
 * are registrations: what it returns goes to sleep_leave, after the sleep) */
void sleeper_add(void);
bool sleep_enter(bool may_sleep);
void sleep_leave(bool counted);
/* The lazy list, under psp.lock but lazy_any (a glance) */
bool lazy_any(void);
void lazy_flush(void);
int lazy_scan(int epfd, struct epoll_event *ev, int max, unsigned *mine);
int lazy_spin(int epfd, struct epoll_event *ev, int max, unsigned mine);

#endif
