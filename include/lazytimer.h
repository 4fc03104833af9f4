/*
 * lazytimer.h - the wake-up timer of an event loop that sleeps in epoll: one timerfd in the
 * epoll set, armed at the loop's earliest deadline when the loop is about to sleep, and left
 * alone when the deadline moves a little later.
 *
 * Why not a timeout on the wait: every epoll_pwait2 or ppoll with a timeout arms a
 * high-resolution timer and cancels it when data wakes the thread first. Both reprogram the
 * CPU's timer device, which in a virtual machine traps to the hypervisor. A loop whose
 * deadline moves a little later every round (RDP re-arms its retransmission timer for each
 * message) pays that on every wait: a 16-byte UDP ping-pong on this project's VM took
 * 18.7 us with a 1 ms timeout on each wait, 16.1 us without one, 16.5 us with this timer
 * (bench/profile/waitcost.c; bench/RESULTS.md, "waiting without a timeout").
 *
 * A later deadline leaves the timer where it is while over half the span it was set for is
 * still ahead: the timer fires early, the loop finds nothing due, and the next lazytimer_arm
 * sets it to the real deadline. A busy loop never gets that far: it waits again long before
 * the timer is due, and moves it once under half its span is left. So a deadline that moves
 * a little later every round (RDP re-arms its retransmission timer for each message), or
 * goes away for a round (nothing in flight: only the loop's own housekeeping, far ahead),
 * costs a setting about once per half span instead of once per round. The price: a timer
 * that went stale early in its span (a delayed ACK that an answer made unnecessary) fires
 * once for nothing if the loop sleeps through the rest of it.
 *
 * The half is measured against the span the timer was set for, not against the new deadline:
 * measured against the new deadline, the timer was moved far out whenever RDP had nothing
 * due, and back at the next message, twice per round trip in 64 KiB ping-pong at MTU 1500,
 * each timerfd_settime ~3 us in this VM (bench/RESULTS.md, "waiting without a timeout").
 *
 * The timer is only set when the loop is about to sleep: where it must be set, lazytimer_wait
 * first takes what is ready without waiting (a busy loop often finds the next packet there
 * already, and setting a timer it would not need cost more than that extra call: 64 KiB
 * ping-pong at MTU 1500, RDP/TCP 1.80 when arming before every wait against 1.67 like this,
 * and 1.67 with a timeout on every wait). Where the timer serves as it is, the wait is one
 * call.
 *
 * Use: lazytimer_open, add fd to the epoll set for EPOLLIN; wait with lazytimer_wait(&t, ep,
 * ..., earliest deadline); when fd is readable, lazytimer_fired, then run what is due. Times
 * are CLOCK_MONOTONIC nanoseconds (rdp_now_ns, loop_now).
 */
#ifndef PSCLUSTER_LAZYTIMER_H
#define PSCLUSTER_LAZYTIMER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

struct lazytimer {
    int fd;
    uint64_t at;  /* when it is set to fire; 0: not set (or fired) */
    uint64_t set; /* when it was set */
};

static inline uint64_t lazytimer_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* 0, or -1 and errno from timerfd_create. */
static inline int lazytimer_open(struct lazytimer *t)
{
    t->at = t->set = 0;
    t->fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    return t->fd < 0 ? -1 : 0;
}

static inline void lazytimer_close(struct lazytimer *t)
{
    if (t->fd >= 0) close(t->fd);
    t->fd = -1;
    t->at = 0;
}

/* Whether the timer as set serves a deadline of `at` (UINT64_MAX: none): it fires no later,
 * and over half the span it was set for is still ahead. */
static inline bool lazytimer_serves(const struct lazytimer *t, uint64_t at)
{
    if (at == UINT64_MAX) return true;
    if (!t->at || t->at > at) return false;
    uint64_t now = lazytimer_now();
    return t->at > now && t->at - now >= (t->at - t->set) / 2;
}

/* Set the timer to `at`, whatever it was (lazytimer_arm and lazytimer_wait decide). */
static inline int lazytimer_set_(struct lazytimer *t, uint64_t at)
{
    if (!at) at = 1; /* an all-zero it_value would disarm */
    struct itimerspec it = {.it_value = {(time_t)(at / 1000000000u), (long)(at % 1000000000u)}};
    if (timerfd_settime(t->fd, TFD_TIMER_ABSTIME, &it, NULL) < 0) return -1;
    t->set = lazytimer_now();
    t->at = at;
    return 0;
}

/* Make sure the timer fires no later than `at` (UINT64_MAX: no deadline, nothing to do); a
 * timer that serves it stays (lazytimer_serves), else it is set to `at`. A time already past
 * fires at once. 0, or -1 and errno from timerfd_settime. */
static inline int lazytimer_arm(struct lazytimer *t, uint64_t at)
{
    return lazytimer_serves(t, at) ? 0 : lazytimer_set_(t, at);
}

/* epoll_wait on ep for up to max events, the timer serving `at`. Where it must be set, the
 * events ready now are taken first, and it is set only if there are none. Returns what
 * epoll_wait returns. */
static inline int lazytimer_wait(struct lazytimer *t, int ep, struct epoll_event *ev, int max,
                                 uint64_t at)
{
    if (!lazytimer_serves(t, at)) {
        int n = epoll_wait(ep, ev, max, 0);
        if (n != 0) return n;
        if (lazytimer_set_(t, at) < 0) return -1; /* it did not serve, and time only went on */
    }
    return epoll_wait(ep, ev, max, -1);
}

/* Call when fd is readable: clears it. False if it had not fired after all (the timer stays
 * set). */
static inline bool lazytimer_fired(struct lazytimer *t)
{
    uint64_t n;
    if (read(t->fd, &n, sizeof n) != (ssize_t)sizeof n) return false;
    t->at = 0;
    return true;
}

#endif
