/*
 * spinrule.h - whether a waiting thread should spin or sleep at once: the
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
 * that woke for a moment) gives SPIN_DOUBT, which spins as SPIN_FULL does until the next
 * sample says which way. (A SPIN_DOUBT that yielded the CPU at each look, ParaStation's
 * hand-off, was tried: with it exec_rdp and spawn of preload_lowfd.sh failed 3 runs in 4,
 * not understood; without it they pass. docs/preload-design.md.)
 */
#ifndef PSCLUSTER_PRELOAD_SPINRULE_H
#define PSCLUSTER_PRELOAD_SPINRULE_H

#include <stddef.h>

enum spin_mode {
    SPIN_FULL,  /* spin as long as the adaptive budget says (shm.c) */
    SPIN_DOUBT, /* one sample against the mode: spin as SPIN_FULL until the next */
    SPIN_SLEEP, /* do not spin: arm and sleep at once */
};

/* The mode after a sample of RUNNABLE threads on a node of NCPU CPUs, from CUR. No
 * information (either 0) keeps CUR. */
enum spin_mode spin_rule(enum spin_mode cur, unsigned runnable, unsigned ncpu);

/* The runnable threads in /proc/loadavg's text (LEN bytes, not NUL-terminated):
 * "0.52 0.41 0.30 3/120 4567" gives 3; 0 when the text is not that. */
unsigned spin_runnable(const char *text, size_t len);

#endif
