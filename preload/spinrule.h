/*
 * spinrule.h - whether a waiting thread should spin, spin yielding, or sleep at once: the
 * rule behind the library's spins (shm_spin, the epoll sets' lazy spin, PSP_BUSY_POLL),
 * kept apart from its sampling (cosched.c) so that it is a pure function, unit-tested.
 *
 * A spin pays only when the peer runs meanwhile on another CPU. When the node has more
 * runnable threads than CPUs, a spinning thread holds a CPU that the peer (or anyone) is
 * waiting for, and the answer comes later than after a sleep and a wake-up (the kernel
 * lets a woken thread preempt a CPU hog; it does not do that for a spinner). So each
 * sample of the node's runnable threads (/proc/loadavg's fourth field, the sampler itself
 * counted) moves the mode one step: toward SPIN_SLEEP when they outnumber the CPUs, toward
 * SPIN_FULL when not. Two samples in a row are needed to go all the way; one (a thread
 * that woke for a moment) gives SPIN_YIELD, a spin that hands the CPU over with
 * sched_yield at each look (ParaStation's hand-off), so that the newcomer runs at once and
 * the spin still sees its answer if the newcomer leaves.
 */
#ifndef PSCLUSTER_PRELOAD_SPINRULE_H
#define PSCLUSTER_PRELOAD_SPINRULE_H

#include <stddef.h>

enum spin_mode {
    SPIN_FULL,  /* spin as long as the adaptive budget says (shm.c) */
    SPIN_YIELD, /* spin that long, but sched_yield at each look */
    SPIN_SLEEP, /* do not spin: arm and sleep at once */
};

/* The mode after a sample of RUNNABLE threads on a node of NCPU CPUs, from CUR. No
 * information (either 0) keeps CUR. */
enum spin_mode spin_rule(enum spin_mode cur, unsigned runnable, unsigned ncpu);

/* The runnable threads in /proc/loadavg's text (LEN bytes, not NUL-terminated):
 * "0.52 0.41 0.30 3/120 4567" gives 3; 0 when the text is not that. */
unsigned spin_runnable(const char *text, size_t len);

#endif
