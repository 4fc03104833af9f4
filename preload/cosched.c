/*
 * cosched.c - whether spinning pays on this node now (issue 32 point 3): the mode of the
 * spin rule (spinrule.h) that every spin of the library asks for before it starts (shm_spin,
 * the epoll sets' lazy spin, PSP_BUSY_POLL's busy poll in poll, select, epoll and a
 * blocking read or write: psp_busy_until).
 *
 * The input is the number of runnable threads on the node, the fourth field of
 * /proc/loadavg (nr_running, the kernel's count at that moment, the reader included),
 * against the CPUs online. It is sampled at most every SAMPLE_NS (1 ms) per process, by
 * whichever thread asks when the last sample is older than that (one at a time: the others
 * keep the mode they find), with one pread of a descriptor kept open (hidden, close-on-exec,
 * shared with a fork's children): a few microseconds a millisecond at most, and nothing
 * while nothing waits. The descriptor is opened with the library's others, when its
 * endpoint is made (psp_spin_init), not at the first sample: a program that counts its
 * descriptors around its waits would see it come (plsem threadfds). A process that cannot
 * open it spins as before.
 *
 * Under PSP_STATS the samples and the spins not done because of the rule are counted
 * (spin_samples, spin_skipped). PSP_SPIN_RULE=always turns the rule off (Onload's
 * EF_POLL_USEC spins regardless): for processes pinned to cores of their own, where other
 * threads on the node take nothing from them, and for measurements of something else.
 */
#include "psp.h"
#include "spinrule.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SAMPLE_NS 1000000ull

static struct {
    uint64_t due;  /* rdp_now_ns when the next sample is due */
    int sampling;  /* a thread is sampling */
    int fd;        /* /proc/loadavg: 0 not yet opened, -1 not to be had, else fd + 1 */
    unsigned ncpu; /* online CPUs, at the first sample */
    int mode;      /* enum spin_mode */
} co;

void psp_spin_init(void)
{
    if (co.fd || !(psp.busy_poll_us || (!psp.shm_off && psp.shm_spin_ns))) return;
    const char *rule = getenv("PSP_SPIN_RULE"); /* "always": spin whatever the node's load */
    if (rule && strcmp(rule, "always") == 0) {
        co.fd = -1; /* no sample: the mode stays spin, as for a process that cannot read */
        return;
    }
    int fd = psp_hide(open("/proc/loadavg", O_RDONLY | O_CLOEXEC));
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    co.ncpu = n > 0 ? (unsigned)n : 0;
    co.fd = fd < 0 ? -1 : fd + 1;
}

static void sample(void)
{
    if (co.fd <= 0) return;
    char b[128];
    ssize_t n = pread(co.fd - 1, b, sizeof b, 0);
    if (n <= 0) return;
    __atomic_fetch_add(&psp.spin_samples, 1, __ATOMIC_RELAXED);
    unsigned runnable = spin_runnable(b, (size_t)n);
    int m = (int)spin_rule((enum spin_mode)__atomic_load_n(&co.mode, __ATOMIC_RELAXED), runnable,
                           co.ncpu);
    __atomic_store_n(&co.mode, m, __ATOMIC_RELAXED);
}

int psp_spin_mode(void)
{
    uint64_t now = rdp_now_ns();
    if (now >= __atomic_load_n(&co.due, __ATOMIC_RELAXED) &&
        !__atomic_exchange_n(&co.sampling, 1, __ATOMIC_ACQUIRE)) {
        sample();
        __atomic_store_n(&co.due, now + SAMPLE_NS, __ATOMIC_RELAXED);
        __atomic_store_n(&co.sampling, 0, __ATOMIC_RELEASE);
    }
    return __atomic_load_n(&co.mode, __ATOMIC_RELAXED);
}

void psp_spin_fork_child(void)
{
    /* a thread of the parent may have been sampling: the child's threads sample anew */
    co.sampling = 0;
    co.due = 0;
}

uint64_t psp_busy_until(void)
{
    if (!psp.busy_poll_us) return 0;
    if (psp_spin_mode() == SPIN_SLEEP) {
        __atomic_fetch_add(&psp.spin_skipped, 1, __ATOMIC_RELAXED);
        return 0;
    }
    return rdp_now_ns() + psp.busy_poll_us * 1000ull;
}
