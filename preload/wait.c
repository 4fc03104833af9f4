/*
 * wait.c - a program thread blocked on an accelerated connection (a read with nothing to
 * read, a write without credit) sleeps in a real system call on an eventfd of its own, so
 * that signals behave as on a socket: a handler with SA_RESTART resumes the wait inside the
 * kernel, one without it ends the wait with EINTR, and a timeout (SO_RCVTIMEO, SO_SNDTIMEO)
 * makes the wait a poll, which a signal always ends with EINTR, as the kernel does for a
 * socket with a timeout. Wakers (the progress thread, or another program thread) write to
 * the eventfd of every thread waiting on the connection that changed.
 *
 * A connection on the same-node path has a doorbell of its own (shm.c), which the peer
 * process rings when it publishes what a sleeper armed for: the wait sleeps on it too.
 *
 * A thread that waits alone for RDP connections, without a timeout, sleeps in the read of
 * the RDP socket itself (direct_wait): one system call, as a thread blocked in a TCP
 * socket's recv, where poll on its eventfd and the socket, then the read, cost two and
 * about a tenth of a small round trip (bench/RESULTS.md 8.9, 8.10). Its wake-ups come as
 * datagrams then: a waker sends the RDP socket a datagram of no bytes (kick), which RDP
 * counts and ignores. Nothing else reads the socket meanwhile (rdp_rx_claim), so neither a
 * datagram nor a kick that comes before the thread is in the kernel is lost. A thread that
 * is about to wait on the socket some other way (another wait, poll, epoll) ends such a
 * sleep first (wait_direct_end, from psp_poller_enter) and waits until it is over.
 *
 * Busy polling (PSP_BUSY_POLL=MICROSECONDS, opt-in, as VMA's): before sleeping, a waiting
 * thread looks for its datagrams and its wake-up without sleeping for that long, so that
 * an answer arriving meanwhile costs no wake-up. Signals during the spin run their handlers
 * and the spin goes on, as after SA_RESTART (the sleep after it behaves as described).
 * The spin rule (cosched.c) may forbid the spin (an oversubscribed node: psp_busy_until says
 * 0).
 */
#include "psp.h"

#include <arpa/inet.h>
#include <errno.h>
#include <sys/eventfd.h>
#include <unistd.h>

static __thread int my_efd = -1;
static __thread pid_t my_pid;
/* A waiting thread that takes the datagrams itself (progress_wait): a wake-up for it is
 * noted here instead of written to its own eventfd, which would cost a write, another poll
 * and a read to take back */
static __thread int taking = -1;
static __thread bool woke_self;
/* This thread's waiters while it sleeps in the RDP socket's read: a signal handler that runs
 * on top of that read and waits itself (a read in a handler) finds them here */
static __thread struct waiter *direct_mine;

/* Made at the thread's first wait, closed when the thread ends (fdtable.c: a thread key's
 * destructor); a fork's child makes its own. */
int wait_fd(void)
{
    if (my_efd >= 0 && my_pid == psp.pid) return my_efd;
    my_efd = fdt_thread_fd(psp_hide(eventfd(0, EFD_CLOEXEC)));
    my_pid = psp.pid;
    return my_efd;
}

void waiters_add(struct conn **cs, int n, struct waiter *w, int fd)
{
    for (int i = 0; i < n; i++) {
        w[i].efd = fd;
        w[i].direct = w[i].kicked = false;
        w[i].next = cs[i]->waiters;
        cs[i]->waiters = &w[i];
    }
}

void waiters_del(struct conn **cs, int n, struct waiter *w)
{
    for (int i = 0; i < n; i++)
        for (struct waiter **p = &cs[i]->waiters; *p; p = &(*p)->next)
            if (*p == &w[i]) {
                *p = w[i].next;
                break;
            }
}

/* The socket that kicks, and where to: made before a thread first sleeps in the read, so
 * that a kick never needs a descriptor the process may not have then (under psp.lock). */
static bool kick_ready(void)
{
    if (psp.kick_fd >= 0) return true;
    socklen_t l = sizeof psp.kick_addr;
    if (getsockname(rdp_fd(psp.rdp), (struct sockaddr *)&psp.kick_addr, &l) < 0) return false;
    psp.kick_len = l;
    if (psp.kick_addr.ss_family == AF_INET) { /* bound to any address: loopback */
        struct sockaddr_in *a = (struct sockaddr_in *)&psp.kick_addr;
        if (a->sin_addr.s_addr == htonl(INADDR_ANY)) a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    } else {
        struct sockaddr_in6 *a = (struct sockaddr_in6 *)&psp.kick_addr;
        if (IN6_IS_ADDR_UNSPECIFIED(&a->sin6_addr)) a->sin6_addr = in6addr_loopback;
    }
    int fam = psp.kick_addr.ss_family;
    psp.kick_fd = psp_hide(real.socket(fam, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    return psp.kick_fd >= 0;
}

/* A datagram of no bytes to the RDP socket: wakes the thread asleep in its read (under
 * psp.lock). A kick lost to a full receive queue needs no other: a full queue ends the
 * read as well, and the thread looks at its connections before it sleeps again. */
static void kick(void)
{
    if (psp.kick_fd >= 0) /* (there before any thread slept in the read: kick_ready) */
        (void)!real.sendto(psp.kick_fd, "", 0, MSG_DONTWAIT, (struct sockaddr *)&psp.kick_addr,
                           psp.kick_len);
}

void waiter_wake(struct waiter *w)
{
    if (w->direct) { /* (first: a handler on top of its read has the same eventfd) */
        if (!w->kicked) kick();
        w->kicked = true;
    } else if (w->efd == taking) {
        woke_self = true;
    } else {
        (void)!real.write(w->efd, &(uint64_t){1}, 8);
    }
}

void wake_conn(struct conn *c)
{
    for (struct waiter *w = c->waiters; w; w = w->next) waiter_wake(w);
}

/* Cancellation (pthread_cancel): a blocked read or write of a socket, poll and epoll_wait
 * are cancellation points, so the library's waits are too, but only in their sleep: the
 * rest of a wrapped call runs with cancellation disabled (psp_cancel_off: it holds psp.lock
 * at times, and a cancellation there would leave it held); a wrapper honours one that is
 * pending when it starts (pthread_testcancel, before any lock), as the call would. A thread
 * cancelled in its sleep leaves nothing behind (a cleanup handler per sleep: here wait_cancelled,
 * in poll.c poll_cancelled): not its waiters, the connections' users, its count as a poller or
 * sleeper, or the claim on the RDP socket's read that would make every other wait wait for it. */
static __thread int cancel_depth, cancel_prog;

int psp_cancel_off(void)
{
    int s;
#ifdef PSP_LOCK_CHECK
    fdt_thread_enter(); /* the checker looks at this thread when it ends */
#endif
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &s);
    if (!cancel_depth++) cancel_prog = s;
    return s;
}

#if defined(__SANITIZE_ADDRESS__)
static void unwinding(void *arg)
{
    (void)arg;
    psp_unwinding();
}
#endif

void psp_testcancel(void)
{
#if defined(__SANITIZE_ADDRESS__)
    pthread_cleanup_push(unwinding, NULL);
    pthread_testcancel();
    pthread_cleanup_pop(0);
#else
    pthread_testcancel();
#endif
}

int psp_cancel_entry(void)
{
    psp_testcancel();
    return psp_cancel_off();
}

void psp_cancel_on(int state)
{
    int e = errno;
    cancel_depth--;
    pthread_setcancelstate(state, NULL);
    errno = e;
}

int psp_cancel_prog(void)
{
    return cancel_depth ? cancel_prog : PTHREAD_CANCEL_DISABLE;
}

void psp_sleep_cancelled(void *cleanup)
{
    const struct psp_cleanup *cl = cleanup;
    psp_unwinding();
    if (cl->fn) cl->fn(cl->arg);
    fdt_release_held();
}

struct wait_state {
    struct conn **cs;
    int n;
    struct waiter *w;
    bool direct;  /* asleep in the RDP socket's read */
    bool entered; /* counted as a poller (progress_wait) */
};

/* The end of a sleep in the RDP socket's read: got datagrams read (or -1), under psp.lock */
static void direct_leave(struct wait_state *st, int got)
{
    __atomic_store_n(&psp.direct, NULL, __ATOMIC_SEQ_CST);
    direct_mine = NULL;
    pthread_cond_broadcast(&psp.direct_gone);
    for (int i = 0; i < st->n; i++) st->w[i].direct = false;
    rdp_rx_done(psp.rdp, got);
    if (rdp_next_deadline(psp.rdp) < psp.armed) psp_arm_timer();
    psp_poller_leave(true);
    st->direct = false;
}

static void wait_cancelled(void *arg)
{
    struct wait_state *st = arg;
    if (st->entered) psp_poller_leave(true);
    pthread_mutex_lock(&psp.lock);
    if (st->direct) direct_leave(st, -1);
    waiters_del(st->cs, st->n, st->w);
    for (int i = 0; i < st->n; i++) fdt_put_locked(st->cs[i]);
    pthread_mutex_unlock(&psp.lock);
}

/* The sleeps themselves, each in a frame of its own (the cleanup is a setjmp) */
static int sleep_poll(struct wait_state *st, struct pollfd *pf, nfds_t n, int timeout_ms)
{
    int p = -1;
    PSP_SLEEP_IN(wait_cancelled, st, p = real.poll(pf, n, timeout_ms));
    return p;
}

static ssize_t sleep_read(struct wait_state *st, int fd)
{
    uint64_t x;
    ssize_t r = -1;
    PSP_SLEEP_IN(wait_cancelled, st, r = real.read(fd, &x, 8));
    return r;
}

static int sleep_rdp(struct wait_state *st)
{
    int n = -1;
    PSP_SLEEP_IN(wait_cancelled, st, n = rdp_rx_wait(psp.rdp));
    return n;
}

/* Sleep on our eventfd alone: a blocking read, restarted by the kernel after a handler with
 * SA_RESTART; a poll when there is a timeout. */
static int plain_wait(int fd, int timeout_ms, struct wait_state *st)
{
    uint64_t x;
    if (timeout_ms < 0) return sleep_read(st, fd) < 0 ? -1 : 0;
    struct pollfd pf = {.fd = fd, .events = POLLIN};
    int p = sleep_poll(st, &pf, 1, timeout_ms);
    if (p == 0) errno = EAGAIN;
    if (p <= 0) return -1;
    (void)!real.read(fd, &x, 8);
    return 0;
}

/* Sleep on our eventfd, the RDP socket and the doorbells of cs[0..n) on the same-node path:
 * a datagram for us is taken by this thread, with no hop through the progress thread
 * (which leaves the socket to us meanwhile); a doorbell is emptied. */
/* What progress_wait sleeps on, pf[0 .. 4+n): made under psp.lock (the connections'
 * channels and states may change once it is let go). */
static void progress_fds(struct pollfd *pf, int fd, struct conn **cs, int n, int kfd, short kev,
                         bool outcome)
{
    pf[0] = (struct pollfd){.fd = fd, .events = POLLIN};
    pf[1] = (struct pollfd){.fd = psp.rdp ? rdp_fd(psp.rdp) : -1, .events = POLLIN};
    for (int i = 0; i < n; i++)
        pf[2 + i] = (struct pollfd){.fd = shm_bell(cs[i]), .events = POLLIN};
    /* a connection waiting for its outcome: psid's event is taken here too, without the
     * hop through the progress thread */
    pf[2 + n] =
        (struct pollfd){.fd = outcome && psp.psi_open ? psi_fd(&psp.psi) : -1, .events = POLLIN};
    /* a kernel socket: the TCP phase's bytes or room, or the peer's still to read there */
    pf[3 + n] = (struct pollfd){.fd = kfd, .events = kev};
}

static int progress_wait(int fd, int timeout_ms, struct conn **cs, int n, struct pollfd *pf,
                         struct wait_state *st)
{
    bool entered = psp_poller_enter();
    st->entered = entered;
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int r = -1, wait = timeout_ms;
    uint64_t busy = psp_busy_until(); /* PSP_BUSY_POLL: look without sleeping until then */
    for (;;) {
        bool spin = busy && rdp_now_ns() < busy;
        int p = sleep_poll(st, pf, (nfds_t)(4 + n), spin ? 0 : wait);
        if (p < 0 && errno == EINTR && timeout_ms < 0 && signals_all_restart()) continue;
        if (p < 0) break;
        if (p == 0 && spin) continue;
        if (p == 0) {
            errno = EAGAIN;
            break;
        }
        bool bell = false;
        for (int i = 0; i < n; i++) bell |= pf[2 + i].revents != 0;
        if (bell) { /* the peer published: drain, and the caller looks */
            pthread_mutex_lock(&psp.lock);
            for (int i = 0; i < n; i++)
                if (pf[2 + i].revents && cs[i]->shm) {
                    shm_bell_drain(cs[i]);
                    /* the ring may have been for another thread waiting on it (a reader
                     * and a writer): it looks again too */
                    for (struct waiter *w = cs[i]->waiters; w; w = w->next)
                        if (w->efd != fd) waiter_wake(w);
                }
            pthread_mutex_unlock(&psp.lock);
            r = 0;
            if (!pf[0].revents) break;
        }
        if (pf[2 + n].revents) {
            neg_events(false); /* an outcome wakes us through conn_changed */
            pf[2 + n].fd = -1; /* once: the progress thread has it if we could not */
        }
        bool woke = false;
        if (pf[1].revents && psp.rdp) {
            pthread_mutex_lock(&psp.lock);
            taking = fd;
            woke_self = false;
            psp_rdp_process();
            taking = -1;
            woke = woke_self;
            pthread_mutex_unlock(&psp.lock);
        }
        if (pf[0].revents) {
            uint64_t x;
            (void)!real.read(fd, &x, 8);
            r = 0;
            break;
        }
        if (woke) { /* what we took changed a connection we wait on: the caller looks */
            r = 0;
            break;
        }
        if (pf[3 + n].revents) { /* the kernel socket is ready: the caller looks */
            r = 0;
            break;
        }
        if (timeout_ms > 0) {
            struct timespec t1;
            clock_gettime(CLOCK_MONOTONIC, &t1);
            long spent = (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
            wait = spent >= timeout_ms ? 0 : timeout_ms - (int)spent;
        }
    }
    int e = errno;
    st->entered = false;
    psp_poller_leave(entered); /* the progress thread listens again: a datagram that came
                                * after our last look is reported to it at once */
    errno = e;
    return r;
}

/* Under psp.lock: may the thread waiting on cs[0..n) (waiters w) sleep in the RDP
 * socket's read? Only one that waits alone on connections that only RDP can change: no
 * timeout (a read cannot have one of its own), no kernel socket, doorbell, negotiation or
 * busy poll. It is counted as a poller (the progress thread leaves the socket to it) and
 * holds the claim on the socket's reads when this says yes. */
static bool direct_enter(struct conn **cs, int n, struct waiter *w, int timeout_ms, int kfd)
{
    if (timeout_ms >= 0 || kfd >= 0 || n < 1 || psp.busy_poll_us || psp.direct_off || !psp.rdp ||
        psp.direct || !conn_rdp_peers() || psp.epfd < 0)
        return false;
    for (int i = 0; i < n; i++)
        if (cs[i]->st != CS_RDP) return false;
    if (__atomic_load_n(&psp.app_pollers, __ATOMIC_SEQ_CST) != 0) return false;
    if (!kick_ready()) return false; /* (no descriptor left: the wake-ups need one) */
    if (!psp_poller_enter_alone()) return false;
    /* a thread that starts waiting on the socket from now on sees us (psp_poller_enter);
     * one that started before we counted is seen here: we step back */
    for (int i = 0; i < n; i++) w[i].direct = true;
    __atomic_store_n(&psp.direct, w, __ATOMIC_SEQ_CST);
    direct_mine = w;
    if (__atomic_load_n(&psp.app_pollers, __ATOMIC_SEQ_CST) != 1 || rdp_rx_claim(psp.rdp) < 0) {
        __atomic_store_n(&psp.direct, NULL, __ATOMIC_SEQ_CST);
        direct_mine = NULL;
        for (int i = 0; i < n; i++) w[i].direct = false;
        pthread_cond_broadcast(&psp.direct_gone);
        psp_poller_leave(true);
        return false;
    }
    return true;
}

/* Sleep in the RDP socket's read (direct_enter said yes). Called and returns under
 * psp.lock. 0: look again; -1 and EINTR: a handler without SA_RESTART ran (the kernel
 * resumes the read after one with it, as a socket's recv). */
static int direct_wait(int fd, struct wait_state *st)
{
    st->direct = true;
    pthread_mutex_unlock(&psp.lock);
    int got = sleep_rdp(st), e = errno;
    pthread_mutex_lock(&psp.lock);
    taking = fd; /* a wake-up for us from what we take: noted, not written */
    direct_leave(st, got);
    taking = -1;
    psp.rdp_sleeps++;
    if (got < 0 && e != EINTR) psp.direct_off = true; /* a socket error: not this way again */
    if (got < 0 && e == EINTR) {
        errno = EINTR;
        return -1;
    }
    return 0;
}

void wait_direct_end(void)
{
    struct waiter *d = __atomic_load_n(&psp.direct, __ATOMIC_SEQ_CST);
    if (!d || d == direct_mine) return; /* (our own, under a handler: psp_rdp_process) */
    pthread_mutex_lock(&psp.lock);
    while (psp.direct) {
        waiter_wake(psp.direct);
        pthread_cond_wait(&psp.direct_gone, &psp.lock);
    }
    pthread_mutex_unlock(&psp.lock);
}

void psp_rdp_process(void)
{
    if (!psp.rdp) return;
    if (!direct_mine || psp.direct != direct_mine) {
        rdp_process(psp.rdp);
    } else {
        /* A signal handler on top of this thread's own read of the socket (which the
         * kernel left to run it, and resumes after it with SA_RESTART): the datagrams are
         * ours to take, and the claim is ours to keep for that read. What the read's wait
         * was kicked for is kicked again, for the resumed read. */
        rdp_rx_done(psp.rdp, 0);
        rdp_rx_claim(psp.rdp);
        if (direct_mine->kicked) kick();
    }
    if (rdp_next_deadline(psp.rdp) < psp.armed) psp_arm_timer();
}

int wait_conns(struct conn **cs, int n, int timeout_ms)
{
    return wait_conns_k(cs, n, timeout_ms, -1, 0);
}

int wait_conns_k(struct conn **cs, int n, int timeout_ms, int kfd, short kev)
{
    int fd = wait_fd();
    if (fd < 0) return -1;
    struct waiter w[n > 0 ? n : 1];
    struct wait_state st = {.cs = cs, .n = n, .w = w};
    int cancel = psp_cancel_off();
    waiters_add(cs, n, w, fd);
    bool shm = false;
    for (int i = 0; i < n; i++) {
        shm |= cs[i]->shm != NULL;
        fdt_ref(cs[i]); /* it stays while we sleep, closed or not */
    }
    int r;
    if (direct_enter(cs, n, w, timeout_ms, kfd)) {
        r = direct_wait(fd, &st);
    } else {
        bool negotiating = false;
        for (int i = 0; i < n; i++) negotiating |= cs[i]->st == CS_CONNECTING;
        bool progress = psp.rdp || shm || kfd >= 0 || negotiating;
        struct pollfd pf[4 + n];
        if (progress) progress_fds(pf, fd, cs, n, kfd, kev, negotiating);
        pthread_mutex_unlock(&psp.lock);
        r = progress ? progress_wait(fd, timeout_ms, cs, n, pf, &st)
                     : plain_wait(fd, timeout_ms, &st);
        int e = errno;
        pthread_mutex_lock(&psp.lock);
        errno = e;
    }
    waiters_del(cs, n, w); /* (errno stays: neither this nor psp_cancel_on touch it) */
    int e = errno;
    for (int i = 0; i < n; i++) fdt_put_locked(cs[i]);
    errno = e;
    psp_cancel_on(cancel);
    return r;
}
