/*
 * test_lazytimer.c - the lazily armed wake-up timer (include/lazytimer.h) and psid's event
 * loop on top of it (loop/loop.c), whose wait has no timeout of its own:
 *   - a later deadline leaves the timer at the earlier one while over half the span it was
 *     set for is ahead, else moves it; an earlier one always moves it;
 *   - a time already past fires at once; a read of an unfired timer changes nothing;
 *   - lazytimer_wait sets the timer only when nothing is ready, and then sleeps until it; a
 *     timer that serves as it is stays;
 *   - the loop runs its heap timers in order, an outside timer source (RDP's) when due, and
 *     file descriptors, woken by nothing but the timer when no descriptor is ready;
 *   - one round of it (loop_step) returns at its limit, or at once for a ready descriptor;
 *   - a descriptor epoll refuses (a regular file) is always ready, as poll has it.
 * Waits are bounded (poll timeouts, alarm) so that a broken timer fails instead of hanging.
 */
#include "psloop.h"
#include "lazytimer.h"
#include "unit.h"

#include <poll.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <unistd.h>

#define MS 1000000ull

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static bool readable(int fd, int timeout_ms)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    return poll(&p, 1, timeout_ms) == 1 && (p.revents & POLLIN);
}

static void test_later_keeps_earlier(void)
{
    struct lazytimer t;
    CU_ASSERT_EQUAL_FATAL(lazytimer_open(&t), 0);
    uint64_t t0 = now_ns();
    CU_ASSERT_EQUAL(lazytimer_arm(&t, t0 + 1000 * MS), 0);
    CU_ASSERT_EQUAL(lazytimer_arm(&t, t0 + 1500 * MS), 0); /* set is over half-way there */
    CU_ASSERT_EQUAL(t.at, t0 + 1000 * MS);
    CU_ASSERT(readable(t.fd, 5000)); /* at the earlier deadline, not the later one */
    uint64_t took = now_ns() - t0;
    CU_ASSERT(took >= 1000 * MS);
    CU_ASSERT(took < 1450 * MS);
    CU_ASSERT(lazytimer_fired(&t));
    CU_ASSERT_EQUAL(t.at, 0);
    CU_ASSERT_FALSE(readable(t.fd, 0)); /* cleared */
    /* once fired, a later deadline sets it again */
    CU_ASSERT_EQUAL(lazytimer_arm(&t, now_ns() + 20 * MS), 0);
    CU_ASSERT(t.at != 0);
    CU_ASSERT(readable(t.fd, 3000));
    lazytimer_close(&t);
    CU_ASSERT_EQUAL(t.fd, -1);
}

static void test_later_moves_past_half_span(void)
{
    struct lazytimer t;
    CU_ASSERT_EQUAL_FATAL(lazytimer_open(&t), 0);
    uint64_t t0 = now_ns();
    CU_ASSERT_EQUAL(lazytimer_arm(&t, t0 + 1000 * MS), 0);
    /* just set: a much later deadline leaves it (the rule until 2026-11-22 moved it) */
    CU_ASSERT_EQUAL(lazytimer_arm(&t, t0 + 10000 * MS), 0);
    CU_ASSERT_EQUAL(t.at, t0 + 1000 * MS);
    CU_ASSERT_FALSE_FATAL(readable(t.fd, 600));             /* over half its span has passed */
    CU_ASSERT_EQUAL(lazytimer_arm(&t, t0 + 10000 * MS), 0); /* under half is left: moved */
    CU_ASSERT_EQUAL(t.at, t0 + 10000 * MS);
    CU_ASSERT_FALSE(readable(t.fd, 700)); /* no early wake-up at 1000 ms */
    lazytimer_close(&t);
}

static void test_earlier_moves(void)
{
    struct lazytimer t;
    CU_ASSERT_EQUAL_FATAL(lazytimer_open(&t), 0);
    uint64_t t0 = now_ns();
    CU_ASSERT_EQUAL(lazytimer_arm(&t, t0 + 10000 * MS), 0);
    CU_ASSERT_EQUAL(lazytimer_arm(&t, t0 + 20 * MS), 0);
    CU_ASSERT_EQUAL(t.at, t0 + 20 * MS);
    CU_ASSERT(readable(t.fd, 3000));
    CU_ASSERT(lazytimer_fired(&t));
    lazytimer_close(&t);
}

static void test_past_and_spurious(void)
{
    struct lazytimer t;
    CU_ASSERT_EQUAL_FATAL(lazytimer_open(&t), 0);
    CU_ASSERT_FALSE(lazytimer_fired(&t));              /* nothing set: nothing to read */
    CU_ASSERT_EQUAL(lazytimer_arm(&t, UINT64_MAX), 0); /* no deadline */
    CU_ASSERT_EQUAL(t.at, 0);
    uint64_t far = now_ns() + 10000 * MS;
    CU_ASSERT_EQUAL(lazytimer_arm(&t, far), 0);
    CU_ASSERT_FALSE(lazytimer_fired(&t)); /* set, not yet fired: stays set */
    CU_ASSERT_EQUAL(t.at, far);
    CU_ASSERT_EQUAL(lazytimer_arm(&t, 0), 0); /* long past */
    CU_ASSERT(readable(t.fd, 1000));
    CU_ASSERT(lazytimer_fired(&t));
    lazytimer_close(&t);
}

static void test_wait_arms_only_to_sleep(void)
{
    struct lazytimer t;
    CU_ASSERT_EQUAL_FATAL(lazytimer_open(&t), 0);
    int ep = epoll_create1(EPOLL_CLOEXEC), p[2];
    CU_ASSERT_FATAL(ep >= 0);
    CU_ASSERT_EQUAL_FATAL(pipe(p), 0);
    struct epoll_event e = {.events = EPOLLIN, .data.fd = p[0]}, got[4];
    CU_ASSERT_EQUAL(epoll_ctl(ep, EPOLL_CTL_ADD, p[0], &e), 0);
    e.data.fd = t.fd;
    CU_ASSERT_EQUAL(epoll_ctl(ep, EPOLL_CTL_ADD, t.fd, &e), 0);
    /* something is ready: returned at once, the timer is not set */
    CU_ASSERT_EQUAL(write(p[1], "x", 1), 1);
    CU_ASSERT_EQUAL(lazytimer_wait(&t, ep, got, 4, now_ns() + 20 * MS), 1);
    CU_ASSERT_EQUAL(got[0].data.fd, p[0]);
    CU_ASSERT_EQUAL(t.at, 0);
    char c;
    CU_ASSERT_EQUAL(read(p[0], &c, 1), 1);
    /* nothing is ready: set, slept on, and the timer is what wakes it */
    alarm(20);
    uint64_t t0 = now_ns();
    CU_ASSERT_EQUAL(lazytimer_wait(&t, ep, got, 4, t0 + 20 * MS), 1);
    alarm(0);
    CU_ASSERT_EQUAL(got[0].data.fd, t.fd);
    CU_ASSERT(now_ns() - t0 >= 20 * MS);
    CU_ASSERT(lazytimer_fired(&t));
    /* a timer that serves as it is: not set again, whether or not something is ready */
    uint64_t far = now_ns() + 10000 * MS;
    CU_ASSERT_EQUAL(lazytimer_arm(&t, far), 0);
    CU_ASSERT(lazytimer_serves(&t, far + 1000 * MS));
    CU_ASSERT_FALSE(lazytimer_serves(&t, far - 1));    /* earlier: must move */
    CU_ASSERT(lazytimer_serves(&t, far + 30000 * MS)); /* however much later */
    CU_ASSERT_EQUAL(write(p[1], "y", 1), 1);
    CU_ASSERT_EQUAL(lazytimer_wait(&t, ep, got, 4, far + 1000 * MS), 1);
    CU_ASSERT_EQUAL(got[0].data.fd, p[0]);
    CU_ASSERT_EQUAL(t.at, far);
    CU_ASSERT_EQUAL(read(p[0], &c, 1), 1);
    close(p[0]);
    close(p[1]);
    close(ep);
    lazytimer_close(&t);
}

struct loop_rec {
    struct loop *l;
    int order[8], n;
    uint64_t src_at;
    int src_due, pipe_rd;
};

static void rec_timer_a(void *ctx)
{
    struct loop_rec *r = ctx;
    r->order[r->n++] = 'a';
}

static void rec_timer_b(void *ctx)
{
    struct loop_rec *r = ctx;
    r->order[r->n++] = 'b';
}

static void rec_timer_last(void *ctx)
{
    struct loop_rec *r = ctx;
    r->order[r->n++] = 'z';
    loop_stop(r->l);
}

static uint64_t rec_deadline(void *ctx)
{
    struct loop_rec *r = ctx;
    return r->src_due ? UINT64_MAX : r->src_at;
}

static void rec_due(void *ctx)
{
    struct loop_rec *r = ctx;
    if (!r->src_due) r->order[r->n++] = 's';
    r->src_due++;
}

static void rec_fd(void *ctx, uint32_t events)
{
    struct loop_rec *r = ctx;
    char c;
    if ((events & EPOLLIN) && read(r->pipe_rd, &c, 1) == 1) r->order[r->n++] = c;
}

/* A loop that records into r, watching the read end of the new pipe p. */
static void rec_open(struct loop_rec *r, int p[2])
{
    r->l = loop_new();
    CU_ASSERT_PTR_NOT_NULL_FATAL(r->l);
    CU_ASSERT_EQUAL_FATAL(pipe(p), 0);
    r->pipe_rd = p[0];
    CU_ASSERT_EQUAL(loop_fd(r->l, p[0], EPOLLIN, rec_fd, r), 0);
}

static void rec_close(struct loop_rec *r, int p[2])
{
    loop_free(r->l);
    close(p[0]);
    close(p[1]);
}

static void test_loop_wakes_by_timer(void)
{
    alarm(20); /* a loop that is never woken fails the run instead of hanging it */
    struct loop_rec r = {0};
    int p[2];
    rec_open(&r, p);
    CU_ASSERT_EQUAL(write(p[1], "f", 1), 1);
    uint64_t t0 = loop_now();
    /* armed out of order; the later ones first, so each earlier one must move the timer */
    CU_ASSERT(loop_timer(r.l, t0 + 120 * MS, rec_timer_last, &r) > 0);
    CU_ASSERT(loop_timer(r.l, t0 + 80 * MS, rec_timer_a, &r) > 0);
    uint64_t cancelled = loop_timer(r.l, t0 + 60 * MS, rec_timer_a, &r);
    loop_timer_cancel(r.l, cancelled);
    CU_ASSERT(loop_timer(r.l, t0 + 30 * MS, rec_timer_b, &r) > 0);
    r.src_at = t0 + 50 * MS;
    loop_set_timer_source(r.l, rec_deadline, rec_due, &r);
    CU_ASSERT_EQUAL(loop_run(r.l), 0);
    uint64_t took = loop_now() - t0;
    alarm(0);
    CU_ASSERT_EQUAL(r.n, 5);
    CU_ASSERT_EQUAL(r.order[0], 'f');
    CU_ASSERT_EQUAL(r.order[1], 'b');
    CU_ASSERT_EQUAL(r.order[2], 's');
    CU_ASSERT_EQUAL(r.order[3], 'a');
    CU_ASSERT_EQUAL(r.order[4], 'z');
    CU_ASSERT_EQUAL(r.src_due, 1);
    CU_ASSERT(took >= 120 * MS);
    CU_ASSERT(took < 10000 * MS);
    rec_close(&r, p);
}

/* loop_step, a round at a time (rdpbench's use): it returns at its limit when nothing
 * happens, handles a ready descriptor without waiting for the limit, and the timer source
 * and heap timers run in the round they are due. */
static void test_loop_step(void)
{
    alarm(20);
    struct loop_rec r = {0};
    int p[2];
    rec_open(&r, p);
    uint64_t t0 = loop_now();
    CU_ASSERT_EQUAL(loop_step(r.l, t0 + 30 * MS), 1); /* nothing but the wake-up timer */
    uint64_t took = loop_now() - t0;
    CU_ASSERT(took >= 30 * MS);
    CU_ASSERT(took < 5000 * MS);
    CU_ASSERT_EQUAL(r.n, 0);

    CU_ASSERT_EQUAL(write(p[1], "g", 1), 1);
    t0 = loop_now();
    CU_ASSERT(loop_step(r.l, t0 + 5000 * MS) >= 1); /* the descriptor, at once */
    CU_ASSERT(loop_now() - t0 < 2000 * MS);
    CU_ASSERT_EQUAL(r.n, 1);
    CU_ASSERT_EQUAL(r.order[0], 'g');

    t0 = loop_now();
    r.src_at = t0 + 20 * MS;
    loop_set_timer_source(r.l, rec_deadline, rec_due, &r);
    CU_ASSERT(loop_timer(r.l, t0 + 40 * MS, rec_timer_a, &r) > 0);
    /* a round runs the timers due at its start, then waits: a caller that waits for what a
     * timer does gives each round a limit */
    while (r.n < 3 && loop_now() - t0 < 5000 * MS)
        CU_ASSERT(loop_step(r.l, loop_now() + 10 * MS) >= 0);
    alarm(0);
    CU_ASSERT_EQUAL(r.n, 3);
    CU_ASSERT_EQUAL(r.order[1], 's'); /* the source's deadline came first */
    CU_ASSERT_EQUAL(r.order[2], 'a');
    CU_ASSERT(loop_now() - t0 >= 40 * MS);
    rec_close(&r, p);
}

struct stopper {
    struct loop *l;
    int ran;
};

static void ran_and_stop(void *ctx)
{
    struct stopper *s = ctx;
    s->ran++;
    loop_stop(s->l);
}

/* A cancelled timer that was the earliest wakes nobody: the round sleeps until the next
 * live one (cancelling is lazy: the entry stays in the heap, and the wake-up timer used to
 * be set at it, a round for nothing; SWIM's ack timeout, cancelled by the ack, was a
 * quarter of an idle psid's wake-ups). */
static void test_loop_cancelled_wakes_nobody(void)
{
    alarm(20);
    struct loop *l = loop_new();
    CU_ASSERT_PTR_NOT_NULL_FATAL(l);
    struct stopper s = {l, 0};
    uint64_t t0 = loop_now();
    uint64_t early = loop_timer(l, t0 + 20 * MS, ran_and_stop, &s);
    CU_ASSERT(loop_timer(l, t0 + 60 * MS, ran_and_stop, &s) > 0);
    loop_timer_cancel(l, early);
    CU_ASSERT(loop_step(l, t0 + 5000 * MS) >= 0); /* sleeps until the live one is due */
    CU_ASSERT(loop_now() - t0 >= 60 * MS);
    CU_ASSERT_EQUAL(s.ran, 0);
    CU_ASSERT_EQUAL(loop_step(l, t0 + 5000 * MS), 0); /* runs it (which stops the loop) */
    CU_ASSERT_EQUAL(s.ran, 1);
    CU_ASSERT(loop_now() - t0 < 5000 * MS);
    alarm(0);
    loop_free(l);
}

static void count_calls(void *ctx, uint32_t events)
{
    int *n = ctx;
    if (events == EPOLLIN) (*n)++;
}

/* A descriptor epoll refuses (a regular file) is always ready, as poll has it: called in
 * every round, the round does not sleep; removed, the loop sleeps again. */
static void test_loop_always_ready(void)
{
    alarm(20);
    struct loop *l = loop_new();
    CU_ASSERT_PTR_NOT_NULL_FATAL(l);
    int fd = memfd_create("plain", MFD_CLOEXEC), calls = 0;
    CU_ASSERT_FATAL(fd >= 0);
    CU_ASSERT_EQUAL(loop_fd(l, fd, EPOLLIN, count_calls, &calls), 0);
    uint64_t t0 = loop_now();
    CU_ASSERT(loop_step(l, t0 + 5000 * MS) >= 0);
    CU_ASSERT(loop_step(l, t0 + 5000 * MS) >= 0);
    CU_ASSERT_EQUAL(calls, 2);
    CU_ASSERT(loop_now() - t0 < 2000 * MS);
    CU_ASSERT_EQUAL(loop_fd(l, fd, EPOLLIN | EPOLLOUT, count_calls, &calls), 0); /* changed */
    CU_ASSERT(loop_step(l, t0 + 5000 * MS) >= 0);
    CU_ASSERT_EQUAL(calls, 2); /* called with both events now */
    loop_fd_del(l, fd);
    t0 = loop_now();
    CU_ASSERT(loop_step(l, t0 + 30 * MS) >= 0);
    CU_ASSERT(loop_now() - t0 >= 30 * MS);
    CU_ASSERT_EQUAL(calls, 2);
    alarm(0);
    close(fd);
    loop_free(l);
}

UNIT_SUITE(lazytimer, UNIT_TEST(test_later_keeps_earlier),
           UNIT_TEST(test_later_moves_past_half_span), UNIT_TEST(test_earlier_moves),
           UNIT_TEST(test_past_and_spurious), UNIT_TEST(test_wait_arms_only_to_sleep),
           UNIT_TEST(test_loop_wakes_by_timer), UNIT_TEST(test_loop_step),
           UNIT_TEST(test_loop_always_ready), UNIT_TEST(test_loop_cancelled_wakes_nobody))
