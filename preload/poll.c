/*
 * poll.c - readiness of accelerated connections in poll, ppoll, select and pselect, and the
 * cancellation of the readiness calls' sleeps (epoll.c's too).
 *
 * When a set holds an accelerated connection, its readiness comes from the library
 * (conn_poll) and the rest from the kernel, in one wait: the kernel's poll gets the other
 * descriptors plus the calling thread's wake-up eventfd, and the thread is a waiter of every
 * connection in the set. The RDP socket is in that wait too (the waiting thread takes its
 * datagrams itself), and so are the doorbells of connections on the same-node path (shm.c)
 * and, for input, the kernel sockets of those whose peer's bytes are still there (krx). A
 * poll on one same-node connection alone spins on its ring first, as a read does. select
 * and pselect go through the same wait, their sets made a pollfd array (select_any).
 *
 * A connection negotiating (the TCP phase, conn.c) is the kernel socket's: poll and select
 * ask the kernel about it (and wake when it moves up).
 *
 * A set without connections of ours is the kernel's call as it is; if it may sleep while the
 * program has epoll registrations (one of its descriptors may be an epoll set holding
 * connections), the thread counts as a sleeper and the lazy connections are armed first
 * (bells.c, "Lazy arming"), as in a wait with connections.
 *
 * The readiness wrappers are three files: this one, epoll.c (the epoll calls and the
 * registrations) and bells.c (the doorbells and the lazy arming); what they share is in
 * pollint.h.
 */
#include "pollint.h"

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

void __chk_fail(void) __attribute__((noreturn)); /* glibc's */

/* glibc declares poll's array write-only (for fortify): reading the program's events from
 * it is what poll does, so the warning that follows from that declaration is wrong here */
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

/* A thread cancelled in the sleep of poll, select or epoll_wait: what the sleep set up
 * (struct poll_sleep, pollint.h) is undone */
void poll_cancelled(void *arg)
{
    struct poll_sleep *s = arg;
    psp_poller_leave(s->entered);
    sleep_leave(s->sleeper);
    if (s->ncs) {
        pthread_mutex_lock(&psp.lock);
        waiters_del(s->cs, s->ncs, s->ws);
        pthread_mutex_unlock(&psp.lock);
    }
    for (int i = 0; s->held && i < s->ncs; i++) fdt_unfind(s->cs[i]);
    for (int i = 0; i < POLL_BUFS; i++) free(s->bufs[i]);
}

/* The sleeps themselves, each in a frame of its own (the cleanup is a setjmp) */
static int sleep_ppoll(struct poll_sleep *s, struct pollfd *kp, nfds_t n, const struct timespec *ts,
                       const sigset_t *mask, bool plain)
{
    int r = -1;
    PSP_SLEEP_IN(
        poll_cancelled, s,
        r = plain ? real.poll(kp, n, ts ? (int)(ts->tv_sec * 1000 + ts->tv_nsec / 1000000) : -1)
                  : real.ppoll(kp, n, ts, mask));
    return r;
}

static int sleep_select(struct poll_sleep *s, int nfds, fd_set *r, fd_set *w, fd_set *x,
                        struct timeval *tv, const struct timespec *ts, const sigset_t *m,
                        bool plain)
{
    int rc = -1;
    PSP_SLEEP_IN(poll_cancelled, s,
                 rc = plain ? real.select(nfds, r, w, x, tv) : real.pselect(nfds, r, w, x, ts, m));
    return rc;
}

/* The connections among fds (claimed first where accepted and not yet claimed), each held
 * (fdt_find: dropped at poll_any's end, or by poll_cancelled), and whether each is asked for
 * input (its kernel socket matters then while the peer's bytes are there). */
static int conns_in(struct pollfd *fds, nfds_t n, struct conn **cs, bool *in)
{
    int k = 0;
    if (!__atomic_load_n(&psp.nconns, __ATOMIC_RELAXED)) return 0;
    for (nfds_t i = 0; i < n; i++) {
        struct conn *c = fdt_find(fds[i].fd);
        if (!c) continue;
        if (cs_unclaimed(c->st)) conn_claim(c);
        conn_settle(c);
        if (cs_kernel_only(c->st)) {
            fdt_unfind(c);
            continue;
        }
        in[k] = fds[i].events & (POLLIN | POLLRDHUP);
        cs[k++] = c; /* negotiating: the kernel's, and its move up wakes us */
    }
    return k;
}

/* Whether the library answers for c's readiness (else the kernel socket's is the answer). */
static bool ours(const struct conn *c)
{
    return c && !cs_kernel_ready(c->st);
}

static int poll_any_in(struct pollfd *fds, nfds_t n, int timeout, const sigset_t *mask, void *extra)
{
    struct conn *small[16], **cs = n <= 16 ? small : malloc(n * sizeof *cs);
    bool kern_small[16], *kern = n <= 16 ? kern_small : malloc(n * sizeof *kern);
    bool in_small[16], *in = n <= 16 ? in_small : malloc(n * sizeof *in);
    nfds_t kat_small[16], *kat = n <= 16 ? kat_small : malloc(n * sizeof *kat);
    /* the kernel's: the program's others, our eventfd, the RDP socket, the doorbells and
     * kernel sockets of connections */
    struct pollfd sp[50], *kp = n <= 16 ? sp : malloc((3 * n + 2) * sizeof *kp);
    if (!cs || !kp || !kern || !in || !kat) {
        if (cs != small) free(cs);
        if (kp != sp) free(kp);
        if (kern != kern_small) free(kern);
        if (in != in_small) free(in);
        if (kat != kat_small) free(kat);
        errno = ENOMEM;
        return -1;
    }
    int ncs = conns_in(fds, n, cs, in);
    uint64_t deadline = timeout > 0 ? now_ms() + (uint64_t)timeout : 0;
    uint64_t busy = psp_busy_until(); /* PSP_BUSY_POLL: look without sleeping until then */
    int ret;
    pthread_mutex_lock(&psp.lock);
    for (;;) {
        int ready = 0;
        nfds_t nk = 0;
        for (nfds_t i = 0; i < n; i++) {
            struct conn *c = psp_conn_of(fds[i].fd);
            fds[i].revents = 0;
            kern[i] = false;
            short r = 0;
            if (ours(c)) r = conn_poll(c) & (fds[i].events | POLLHUP | POLLERR);
            /* conn_poll may end a move to TCP (the responder read its ring to the end):
             * from then on the kernel socket is what to wait on, also in this round */
            if (ours(c)) {
                if (!r && !ready && timeout && c->st == CS_SHM) { /* would sleep */
                    /* a poll on this one connection alone spins first, as a read does
                     * (its answer comes within microseconds); then: ring me */
                    if (n == 1 && (fds[i].events & (POLLIN | POLLOUT)) &&
                        shm_spin(c, fds[i].events & POLLIN))
                        r = conn_poll(c) & (fds[i].events | POLLHUP | POLLERR);
                    if (!r) r = shm_arm(c, fds[i].events & (POLLIN | POLLOUT));
                }
                fds[i].revents = r;
                if (r) ready++;
            } else {
                kern[i] = true; /* the kernel's, in kp[nk] */
                kp[nk++] = fds[i];
            }
        }
        int wfd = wait_fd();
        int wait = ready ? 0 : timeout;
        if (timeout > 0 && !ready) {
            int64_t left = (int64_t)(deadline - now_ms());
            wait = left > 0 ? (int)left : 0;
        }
        if (busy && wait && rdp_now_ns() < busy) wait = 0;
        kp[nk] = (struct pollfd){.fd = wfd, .events = POLLIN};
        /* and the RDP socket: its datagrams are taken by this thread (wait.c) */
        kp[nk + 1] = (struct pollfd){.fd = psp.rdp ? rdp_fd(psp.rdp) : -1, .events = POLLIN};
        nfds_t nb = 0; /* the doorbells of connections on the same-node path, and the kernel
                        * sockets of those whose peer's bytes are still there */
        for (int i = 0; i < ncs; i++) {
            kat[i] = 0; /* where its kernel socket is in kp (0: not) */
            if (shm_bell(cs[i]) >= 0)
                kp[nk + 2 + nb++] = (struct pollfd){.fd = shm_bell(cs[i]), .events = POLLIN};
            /* (once it woke us for nothing the program asked for, not again in this call) */
            if (ours(cs[i]) && cs[i]->krx && cs[i]->kfd >= 0 && in[i]) {
                kat[i] = nk + 2 + nb;
                kp[nk + 2 + nb++] = (struct pollfd){.fd = cs[i]->kfd, .events = POLLIN | POLLRDHUP};
            }
        }
        struct waiter ws[ncs > 0 ? ncs : 1];
        waiters_add(cs, ncs, ws, wfd);
        bool sleeper = wait && regs_any(); /* (an epoll set among the kernel's) */
        if (sleeper) sleeper_add();
        pthread_mutex_unlock(&psp.lock);
        struct timespec ts = {wait / 1000, (wait % 1000) * 1000000L};
        bool entered = wait && psp_poller_enter();
        struct poll_sleep ps = {entered, sleeper, cs, ncs, ws, true, {extra}};
        if (cs != small) ps.bufs[1] = cs;
        if (kp != sp) ps.bufs[2] = kp;
        if (kern != kern_small) ps.bufs[3] = kern;
        if (in != in_small) ps.bufs[4] = in;
        if (kat != kat_small) ps.bufs[5] = kat;
        int r = sleep_ppoll(&ps, kp, nk + 2 + nb, wait < 0 ? NULL : &ts, mask, !mask && wait < 0);
        int e = errno;
        psp_poller_leave(entered);
        sleep_leave(sleeper);
        pthread_mutex_lock(&psp.lock);
        waiters_del(cs, ncs, ws);
        int bells = 0;
        for (nfds_t b = 0; r > 0 && b < nb; b++)
            if (kp[nk + 2 + b].revents) bells++;
        if (bells) /* the peers published: drain the doorbells; the states are looked at */
            for (int i = 0; i < ncs; i++)
                if (cs[i]->shm) {
                    shm_bell_drain(cs[i]);
                    wake_conn(cs[i]); /* a ring for another thread waiting on it, perhaps */
                }
        if (r > 0 && kp[nk + 1].revents && psp.rdp) {
            psp_rdp_process();
            if (r == 1 + bells && !ready) continue; /* only datagrams (and bells): look again */
        }
        /* only doorbells or kernel sockets: look again (a kernel socket stays readable: not
         * when this round found something ready already, it ends now) */
        if (r > 0 && r == bells && !ready) {
            for (int i = 0; i < ncs; i++)
                if (kat[i] && kp[kat[i]].revents && !(conn_poll(cs[i]) & (POLLIN | POLLRDHUP)))
                    in[i] = false;
            continue;
        }
        if (r < 0) {
            errno = e;
            ret = -1;
            break;
        }
        if (kp[nk].revents) {
            uint64_t x;
            (void)!real.read(wfd, &x, 8);
        }
        nk = 0;
        for (nfds_t i = 0; i < n; i++) { /* the kernel's answer for what was the kernel's */
            if (!kern[i]) continue;      /* (a connection that went TCP meanwhile: next round) */
            fds[i].revents = kp[nk++].revents;
            if (fds[i].revents) ready++;
        }
        if (ready) {
            /* the connections' state as of now, not as of before the wait */
            ready = 0;
            for (nfds_t i = 0; i < n; i++) {
                struct conn *c = psp_conn_of(fds[i].fd);
                if (ours(c)) fds[i].revents = conn_poll(c) & (fds[i].events | POLLHUP | POLLERR);
                if (fds[i].revents) ready++;
            }
        }
        if (ready || timeout == 0 || (timeout > 0 && now_ms() >= deadline)) {
            ret = ready;
            break;
        }
    }
    pthread_mutex_unlock(&psp.lock);
    for (int i = 0; i < ncs; i++) fdt_unfind(cs[i]);
    if (cs != small) free(cs);
    if (kp != sp) free(kp);
    if (kern != kern_small) free(kern);
    if (in != in_small) free(in);
    if (kat != kat_small) free(kat);
    return ret;
}

/* Cancellation points, as the kernel's calls are; a cancellation acts at the start or in the
 * sleep only (wait.c, "Cancellation") */
static int poll_any(struct pollfd *fds, nfds_t n, int timeout, const sigset_t *mask, void *extra)
{
    int cancel = psp_cancel_entry();
    int r = poll_any_in(fds, n, timeout, mask, extra);
    psp_cancel_on(cancel);
    return r;
}

/* A sleep in the kernel's call alone that counts as a sleeper (an epoll set among the
 * descriptors may hold connections), as a cancellation point */
static bool pass_counted(bool may_sleep)
{
    return may_sleep && regs_any();
}

/* The kernel's poll (plain) or ppoll, counted as a sleeper */
static int poll_pass(struct pollfd *fds, nfds_t n, const struct timespec *ts, const sigset_t *mask,
                     bool plain)
{
    int cancel = psp_cancel_entry();
    struct poll_sleep ps = {.sleeper = sleep_enter(true)};
    int r = sleep_ppoll(&ps, fds, n, ts, mask, plain);
    sleep_leave(ps.sleeper);
    psp_cancel_on(cancel);
    return r;
}

/* The kernel's select (plain) or pselect, counted as a sleeper */
static int select_pass(int nfds, fd_set *r, fd_set *w, fd_set *x, struct timeval *tv,
                       const struct timespec *ts, const sigset_t *m, bool plain)
{
    int cancel = psp_cancel_entry();
    struct poll_sleep ps = {.sleeper = sleep_enter(true)};
    int rc = sleep_select(&ps, nfds, r, w, x, tv, ts, m, plain);
    sleep_leave(ps.sleeper);
    psp_cancel_on(cancel);
    return rc;
}

static bool has_conn(const struct pollfd *fds, nfds_t n)
{
    if (!__atomic_load_n(&psp.nconns, __ATOMIC_RELAXED)) return false;
    for (nfds_t i = 0; i < n; i++) {
        struct conn *c = fdt_find(fds[i].fd);
        bool ours = c && c->st != CS_TCP; /* an orphan is switched first */
        fdt_unfind(c);
        if (ours) return true;
    }
    return false;
}

int poll(struct pollfd *fds, nfds_t n, int timeout)
{
    if (!has_conn(fds, n)) {
        if (!pass_counted(timeout != 0)) return real.poll(fds, n, timeout);
        struct timespec ts = {timeout / 1000, (timeout % 1000) * 1000000L};
        return poll_pass(fds, n, timeout < 0 ? NULL : &ts, NULL, true);
    }
    return poll_any(fds, n, timeout, NULL, NULL);
}

int __poll_chk(struct pollfd *fds, nfds_t n, int timeout, size_t len);
int __poll_chk(struct pollfd *fds, nfds_t n, int timeout, size_t len)
{
    if (len / sizeof *fds < n) __chk_fail();
    return poll(fds, n, timeout);
}

int ppoll(struct pollfd *fds, nfds_t n, const struct timespec *ts, const sigset_t *mask)
{
    if (!has_conn(fds, n)) {
        if (!pass_counted(!ts || ts->tv_sec || ts->tv_nsec)) return real.ppoll(fds, n, ts, mask);
        return poll_pass(fds, n, ts, mask, false);
    }
    int t = ts ? (int)(ts->tv_sec * 1000 + (ts->tv_nsec + 999999) / 1000000) : -1;
    return poll_any(fds, n, t, mask, NULL);
}

int __ppoll_chk(struct pollfd *fds, nfds_t n, const struct timespec *ts, const sigset_t *mask,
                size_t len);
int __ppoll_chk(struct pollfd *fds, nfds_t n, const struct timespec *ts, const sigset_t *mask,
                size_t len)
{
    if (len / sizeof *fds < n) __chk_fail();
    return ppoll(fds, n, ts, mask);
}

/* select and pselect as poll: only when a set holds an accelerated connection (a pending
 * cancellation acts before anything is allocated) */
static int select_any(int nfds, fd_set *r, fd_set *w, fd_set *x, int timeout, const sigset_t *m)
{
    psp_testcancel();
    struct pollfd *p = calloc((size_t)nfds, sizeof *p);
    if (!p) {
        errno = ENOMEM;
        return -1;
    }
    nfds_t n = 0;
    for (int fd = 0; fd < nfds; fd++) {
        short ev = 0;
        if (r && FD_ISSET(fd, r)) ev |= POLLIN;
        if (w && FD_ISSET(fd, w)) ev |= POLLOUT;
        if (x && FD_ISSET(fd, x)) ev |= POLLPRI;
        if (ev) p[n++] = (struct pollfd){.fd = fd, .events = ev};
    }
    int rc = poll_any(p, n, timeout, m, p); /* (p is freed if the thread is cancelled there) */
    if (rc >= 0) {
        if (r) FD_ZERO(r);
        if (w) FD_ZERO(w);
        if (x) FD_ZERO(x);
        rc = 0;
        for (nfds_t i = 0; i < n; i++) {
            short re = p[i].revents;
            if (re & POLLNVAL) {
                free(p);
                errno = EBADF;
                return -1;
            }
            if (r && (p[i].events & POLLIN) && (re & (POLLIN | POLLHUP | POLLERR))) {
                FD_SET(p[i].fd, r);
                rc++;
            }
            if (w && (p[i].events & POLLOUT) && (re & (POLLOUT | POLLERR))) {
                FD_SET(p[i].fd, w);
                rc++;
            }
            if (x && (p[i].events & POLLPRI) && (re & POLLPRI)) {
                FD_SET(p[i].fd, x);
                rc++;
            }
        }
    }
    free(p);
    return rc;
}

static bool sets_have_conn(int nfds, fd_set *r, fd_set *w, fd_set *x)
{
    if (!__atomic_load_n(&psp.nconns, __ATOMIC_RELAXED)) return false;
    for (int fd = 0; fd < nfds && fd < FD_SETSIZE; fd++)
        if ((r && FD_ISSET(fd, r)) || (w && FD_ISSET(fd, w)) || (x && FD_ISSET(fd, x))) {
            struct conn *c = fdt_find(fd);
            bool ours = c && c->st != CS_TCP;
            fdt_unfind(c);
            if (ours) return true;
        }
    return false;
}

int select(int nfds, fd_set *r, fd_set *w, fd_set *x, struct timeval *tv)
{
    if (!sets_have_conn(nfds, r, w, x)) {
        if (!pass_counted(!tv || tv->tv_sec || tv->tv_usec)) return real.select(nfds, r, w, x, tv);
        return select_pass(nfds, r, w, x, tv, NULL, NULL, true);
    }
    int t = tv ? (int)(tv->tv_sec * 1000 + (tv->tv_usec + 999) / 1000) : -1;
    uint64_t t0 = now_ms();
    int rc = select_any(nfds, r, w, x, t, NULL);
    if (tv) { /* Linux leaves the time not slept */
        int64_t left = t - (int64_t)(now_ms() - t0);
        if (left < 0) left = 0;
        tv->tv_sec = left / 1000;
        tv->tv_usec = (left % 1000) * 1000;
    }
    return rc;
}

int pselect(int nfds, fd_set *r, fd_set *w, fd_set *x, const struct timespec *ts, const sigset_t *m)
{
    if (!sets_have_conn(nfds, r, w, x)) {
        if (!pass_counted(!ts || ts->tv_sec || ts->tv_nsec))
            return real.pselect(nfds, r, w, x, ts, m);
        return select_pass(nfds, r, w, x, NULL, ts, m, false);
    }
    int t = ts ? (int)(ts->tv_sec * 1000 + (ts->tv_nsec + 999999) / 1000000) : -1;
    return select_any(nfds, r, w, x, t, m);
}
