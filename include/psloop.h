/*
 * psloop.h - the event loop of psid, rdpbench and psrun (loop/loop.c, libpsloop): one epoll set for
 * file descriptors and a timer heap, with nanosecond deadlines on CLOCK_MONOTONIC (a timerfd,
 * lazytimer.h), and an outside timer source (RDP's deadlines). Everything psid does runs
 * from a callback of this loop; nothing blocks. A daemon runs it (loop_run); a program that
 * waits for one thing after another (rdpbench), or sets what it waits for anew before each
 * round (psrun), takes one round at a time (loop_step), as redis-benchmark drives Redis's ae.
 */
#ifndef PSCLUSTER_PSLOOP_H
#define PSCLUSTER_PSLOOP_H

#include <stdbool.h>
#include <stdint.h>

struct loop;
typedef void (*loop_fd_fn)(void *ctx, uint32_t events);
typedef void (*loop_timer_fn)(void *ctx);

struct loop *loop_new(void);
void loop_free(struct loop *l);
/* Watch fd for events (EPOLLIN, EPOLLOUT...); re-adding an fd changes its events. A
 * descriptor epoll refuses (a regular file, /dev/null) is taken as always ready, as poll(2)
 * has it: its callback runs in every round with the events it is watched for (EPOLLIN,
 * EPOLLOUT), and the loop does not sleep while it is watched. */
int loop_fd(struct loop *l, int fd, uint32_t events, loop_fd_fn fn, void *ctx);
void loop_fd_del(struct loop *l, int fd);
/* A one-shot timer at absolute time `at` (loop_now ns); returns an id > 0, or 0 on error. */
uint64_t loop_timer(struct loop *l, uint64_t at, loop_timer_fn fn, void *ctx);
void loop_timer_cancel(struct loop *l, uint64_t id);
/* An outside timer source (RDP): deadline() is asked before each wait; due() runs after a
 * wake-up once that deadline has passed. */
void loop_set_timer_source(struct loop *l, uint64_t (*deadline)(void *ctx), void (*due)(void *ctx),
                           void *ctx);
/* A function run in every iteration before the loop waits (after the timers), when no other
 * callback is running: the place for work deferred out of callbacks (freeing dead clients).
 * One; NULL removes it. */
void loop_set_before_wait(struct loop *l, void (*fn)(void *ctx), void *ctx);
uint64_t loop_now(void);
/* One round without waiting: due timers, the before-wait function, the descriptors that are
 * ready now, the before-wait function again (tests and fuzz targets drive psid so).
 * The number of descriptors handled, or -1 on an epoll error. */
int loop_once(struct loop *l);
/* One round: due timers, the before-wait function, then (unless loop_stop was called) a
 * wait for descriptors until the earliest of the timers, the timer source and until (a
 * loop_now time; UINT64_MAX: none), the ready descriptors, the timer source if due. A caller
 * that waits for what a heap timer does gives until: the timers run before the wait. The
 * number of events handled (the wake-up timer's included; 0 when a signal cut the wait
 * short), or -1 on an epoll error. */
int loop_step(struct loop *l, uint64_t until);
/* Run until loop_stop (loop_step without a limit). -1 on an epoll error. */
int loop_run(struct loop *l);
void loop_stop(struct loop *l);

#endif
