/*
 * poll.c - readiness of accelerated connections in poll, select and epoll.
 *
 * poll/ppoll/select/pselect: when a set holds an accelerated connection, its readiness
 * comes from the library (conn_poll) and the rest from the kernel, in one wait: the
 * kernel's poll gets the other descriptors plus the calling thread's wake-up eventfd, and
 * the thread is a waiter of every connection in the set.
 *
 * epoll: the set is the kernel's; an accelerated connection is represented in it by two
 * doorbells of its own, eventfds: bell_in is readable exactly when the connection is
 * (data, EOF, error), bell_out writable exactly when it is (credit). So any number of epoll
 * sets can hold a connection at once, nested sets work, and EPOLLET, EPOLLONESHOT,
 * EPOLLEXCLUSIVE and EPOLL_CTL_MOD act on the doorbells as the kernel makes them act.
 * The doorbells carry a tag of ours in their epoll data (PSP_TAG: a value no user-space
 * pointer or small integer has); epoll_wait translates a tagged event back into the
 * program's descriptor's events and data. A connection that falls back to TCP has its
 * registrations moved to the kernel socket itself.
 *
 * A connection negotiating (the TCP phase, conn.c) is the kernel socket's: poll and select
 * ask the kernel about it (and wake when it moves up), and its epoll registrations are
 * the program's own descriptor in the program's sets, recorded (kern) to be moved to the
 * bells when it moves up. While the peer's bytes are still to be read from the kernel
 * socket (krx), that socket sits in the sets beside the bells (edge-triggered, tagged).
 *
 * On the same-node path a connection's doorbell (shm.c) joins its sets too, and a
 * level-triggered one is armed lazily: the waits look at its ring themselves and ring
 * nobody while the program is awake (see "Lazy arming" below).
 */
#include "psp.h"
#include "spinrule.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

void __chk_fail(void) __attribute__((noreturn)); /* glibc's */

/* glibc declares poll's array write-only (for fortify): reading the program's events from
 * it is what poll does, so the warning that follows from that declaration is wrong here */
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#define PSP_TAG      0xb5e1000000000000ull
#define PSP_TAG_MASK 0xffff000000000000ull
#define BELL_FULL    0xfffffffffffffffeull /* an eventfd at this count is not writable */

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

/* nregs, nlazy and nlater are looked at without psp.lock (a glance, to skip work; each is
 * read again under it), so they are written, under it, as atomics */
#define PEEK(v)   __atomic_load_n(&(v), __ATOMIC_RELAXED)
#define SET(v, x) __atomic_store_n(&(v), (x), __ATOMIC_RELAXED)

static struct epreg **regs; /* by index (the tag's low bits) */
static unsigned nregs, capregs;
#define RDP_IDX   0xffffffffu  /* the tag of the RDP socket in a program's epoll set */
#define PSI_IDX   0xfffffffeu  /* the tag of the psid connection in a program's epoll set */
#define BELL_BIT  (1ull << 32) /* in a tag: the registration's doorbell (same-node path) */
#define KBELL_BIT (1ull << 33) /* in a tag: the kernel socket, while the peer's bytes are there */
static int *rdp_sets;          /* the program's epoll sets that hold the RDP socket */
static unsigned nrdp_sets;     /* (looked at without psp.lock: written as an atomic) */
/* the lazy list (bells_update) */
#define LAZY_MAX 256
static struct conn **lazy;
static unsigned nlazy, caplazy, lazy_at;
static int ep_sleepers; /* threads in a wait that may sleep on an epoll set (atomic) */
static void lazy_flush(void);

/* A thread about to sleep where an epoll set of the program's may be among what it waits on
 * (the set itself, another holding it, poll or select on its descriptor): the lazy list is
 * armed first, and the thread counted while it sleeps (bells_update). Under psp.lock. */
static void sleeper_add(void)
{
    lazy_flush();
    __atomic_fetch_add(&ep_sleepers, 1, __ATOMIC_RELAXED);
}

static bool sleep_enter(bool may_sleep)
{
    if (!may_sleep || !PEEK(nregs)) return false;
    pthread_mutex_lock(&psp.lock);
    sleeper_add();
    pthread_mutex_unlock(&psp.lock);
    return true;
}

static void lazy_unflush(void);

static void sleep_leave(bool counted)
{
    if (!counted) return;
    int e = errno;
    pthread_mutex_lock(&psp.lock);
    __atomic_fetch_sub(&ep_sleepers, 1, __ATOMIC_RELAXED);
    lazy_unflush();
    pthread_mutex_unlock(&psp.lock);
    errno = e;
}

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

static void poll_cancelled(void *arg)
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

static int sleep_epoll(struct poll_sleep *s, int epfd, struct epoll_event *ev, int max, int wait,
                       const sigset_t *m, bool pwait)
{
    int n = -1;
    PSP_SLEEP_IN(poll_cancelled, s,
                 n = pwait ? real.epoll_pwait(epfd, ev, max, wait, m)
                           : real.epoll_wait(epfd, ev, max, wait));
    return n;
}

/* An epoll set of the program that holds a doorbell holds the RDP socket too, so that the
 * thread waiting in it takes the datagrams itself (no hop through the progress thread). */
static void rdp_in_set(int epfd)
{
    if (!psp.rdp) return;
    for (unsigned i = 0; i < nrdp_sets; i++)
        if (rdp_sets[i] == epfd) return;
    int *v = realloc(rdp_sets, (nrdp_sets + 1) * sizeof *v);
    if (!v) return;
    rdp_sets = v;
    struct epoll_event ev = {.events = EPOLLIN, .data.u64 = PSP_TAG | RDP_IDX};
    if (real.epoll_ctl(epfd, EPOLL_CTL_ADD, rdp_fd(psp.rdp), &ev) == 0 || errno == EEXIST) {
        rdp_sets[nrdp_sets] = epfd;
        __atomic_store_n(&nrdp_sets, nrdp_sets + 1, __ATOMIC_RELEASE);
    }
    /* and the psid connection, edge-triggered: an outcome wakes the thread that waits for
     * it (a connect's first bytes are held until then), not only the progress thread;
     * while another thread holds it, its holder takes what came (psi_unlock) */
    ev = (struct epoll_event){.events = EPOLLIN | EPOLLET, .data.u64 = PSP_TAG | PSI_IDX};
    if (psp.psi_open) real.epoll_ctl(epfd, EPOLL_CTL_ADD, psi_fd(&psp.psi), &ev);
}

static bool set_has_rdp(int epfd)
{
    for (unsigned i = 0; i < nrdp_sets; i++)
        if (rdp_sets[i] == epfd) return true;
    return false;
}

/* In a fork's child: the parent's threads asleep in a wait are not the child's (a count
 * inherited from them would keep the child's connections armed for good). */
void epoll_fork_child(void)
{
    ep_sleepers = 0;
}

static void reg_free(struct conn *c, struct epreg *r);

/* The program closes a descriptor (not under psp.lock; before the kernel's close, so that
 * nothing of ours acts on the number once it may be another's): if it is one of its epoll
 * sets holding connections of ours (each holds the RDP socket too: rdp_in_set), the set is
 * forgotten, and the registrations in it with it (the kernel's go with the set). */
void epoll_sets_closed(unsigned first, unsigned last)
{
    if (!__atomic_load_n(&nrdp_sets, __ATOMIC_ACQUIRE)) return; /* (every close passes here) */
    pthread_mutex_lock(&psp.lock);
    for (unsigned i = 0; i < nrdp_sets; i++) {
        int epfd = rdp_sets[i];
        if ((unsigned)epfd < first || (unsigned)epfd > last) continue;
        rdp_sets[i--] = rdp_sets[nrdp_sets - 1];
        __atomic_store_n(&nrdp_sets, nrdp_sets - 1, __ATOMIC_RELEASE);
        for (unsigned k = 0; k < nregs; k++)
            if (regs[k] && regs[k]->epfd == epfd) reg_free(regs[k]->c, regs[k]);
    }
    pthread_mutex_unlock(&psp.lock);
}

bool epoll_sets_held(void)
{
    return __atomic_load_n(&nrdp_sets, __ATOMIC_ACQUIRE) != 0;
}

void epoll_set_closed(int epfd)
{
    if (epfd >= 0) epoll_sets_closed((unsigned)epfd, (unsigned)epfd);
}

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* --- poll --- */

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
        if (c->st == CS_ACCEPTED || c->st == CS_ORPHAN) conn_claim(c);
        conn_settle(c);
        if (c->st == CS_TCP || c->st == CS_ORPHAN) {
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
    return c && c->st != CS_TCP && c->st != CS_ORPHAN && c->st != CS_ACCEPTED &&
           c->st != CS_CONNECTING && c->st != CS_PLAIN;
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
        bool sleeper = wait && nregs; /* (an epoll set among the kernel's) */
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
    return may_sleep && PEEK(nregs);
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

/* --- epoll --- */

static int bells(struct conn *c)
{
    if (c->bell_in >= 0) return 0;
    int a = psp_hide(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
    int b = a < 0 ? -1 : psp_hide(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
    if (b < 0) {
        fdt_close_hidden(a);
        return -1;
    }
    c->bell_in = a;
    c->bell_out = b;
    c->bell_in_on = false;
    c->bell_out_on = true; /* an eventfd at 0 is writable */
    bells_update(c);
    return 0;
}

/* A doorbell's event is reported by translate at once; the connection's own bells are
 * brought up to date before the program's next wait (bells_due), which for a request
 * the program answered at once costs nothing: its bell never went up. A connection in
 * several epoll sets has its bells rung at once (the other sets wait on them). */
static struct conn **later;
static unsigned nlater, caplater;

static bool grow_later(void)
{
    unsigned cap = caplater ? caplater * 2 : 64;
    struct conn **v = realloc(later, cap * sizeof *v);
    if (!v) return false;
    later = v;
    caplater = cap;
    return true;
}

static void bells_later(struct conn *c)
{
    bool other = false;
    for (struct epreg *r = c->regs; r && !other; r = r->next) other = r->epfd != c->regs->epfd;
    if (c->bells_later) return;
    if (other || (nlater == caplater && !grow_later())) {
        bells_update(c);
        return;
    }
    later[nlater] = c;
    SET(nlater, nlater + 1);
    c->bells_later = true;
}

static void bells_due(void)
{
    for (unsigned i = 0; i < nlater; i++) {
        later[i]->bells_later = false;
        bells_update(later[i]);
    }
    SET(nlater, 0);
}

void bells_forget(struct conn *c)
{
    for (unsigned i = 0; c->lazy && i < nlazy; i++)
        if (lazy[i] == c) {
            SET(nlazy, nlazy - 1);
            lazy[i--] = lazy[nlazy];
        }
    c->lazy = c->lazy_armed = false;
    if (!c->bells_later) return;
    for (unsigned i = 0; i < nlater; i++)
        if (later[i] == c) {
            SET(nlater, nlater - 1);
            later[i--] = later[nlater];
        }
    c->bells_later = false;
}

static uint32_t epoll_bits(short p)
{
    uint32_t e = 0;
    if (p & POLLIN) e |= EPOLLIN;
    if (p & POLLOUT) e |= EPOLLOUT;
    if (p & POLLRDHUP) e |= EPOLLRDHUP;
    if (p & POLLHUP) e |= EPOLLHUP;
    if (p & POLLERR) e |= EPOLLERR;
    return e;
}

/* Lazy arming (the same-node path in epoll). A connection whose only registration is in
 * one set, without EPOLLONESHOT or EPOLLEXCLUSIVE, in a process that has not forked since
 * it came, is not armed when the program has read what there was: it joins the lazy list,
 * and the program's next epoll_wait on its set looks at its ring itself (lazy_scan) and
 * reports it from there, as the kernel's epoll would (EPOLLET: when something came since
 * its last report, et_edge), with what the kernel has ready at once. A wait that finds
 * none of them ready spins on them a while if it would sleep (lazy_spin), then arms the
 * whole list (lazy_flush), and disarms it after the sleep (lazy_unflush) unless another
 * thread still sleeps. A wait that may sleep elsewhere where a set may be among what it
 * waits on (another set, which may nest this one; poll or select on a set's descriptor)
 * arms the list first too, and while any such thread sleeps (ep_sleepers) connections are
 * armed at once, as before. So a busy event loop that finds requests in its rings at each
 * wait takes them with no doorbell on either side: wake-ups only when the reader sleeps.
 * The list is bounded (LAZY_MAX: past it, armed at once), and a connection idle for
 * LAZY_IDLE_NS leaves it. */
static bool lazy_ok(const struct conn *c)
{
    const struct epreg *r = c->regs;
    return c->st == CS_SHM && r && !r->next && !r->kern && !r->kbell && !c->nb_shared &&
           !c->forked && !(r->events & (EPOLLONESHOT | EPOLLEXCLUSIVE)) &&
           !__atomic_load_n(&ep_sleepers, __ATOMIC_RELAXED);
}

static bool lazy_add(struct conn *c)
{
    if (c->lazy) return true;
    if (nlazy == caplazy) {
        unsigned cap = caplazy ? caplazy * 2 : 16;
        struct conn **v = cap <= LAZY_MAX ? realloc(lazy, cap * sizeof *v) : NULL;
        if (!v) return false;
        lazy = v;
        caplazy = cap;
    }
    lazy[nlazy] = c;
    SET(nlazy, nlazy + 1);
    c->lazy = true;
    c->lazy_seen = rdp_now_ns();
    return true;
}

static void bells_set(struct conn *c, bool arm);

/* Arm every lazy connection (a thread is about to sleep): its bells are exact again. One
 * that has not been found ready for LAZY_IDLE_NS stays armed and leaves the list (an idle
 * connection costs nothing armed: nobody rings it); its next read brings it back. */
#define LAZY_IDLE_NS 2000000ull
static void lazy_flush(void)
{
    uint64_t now = nlazy ? rdp_now_ns() : 0;
    for (unsigned i = 0; i < nlazy; i++) {
        struct conn *c = lazy[i];
        c->lazy_armed = true;
        bells_set(c, true);
        if (now - c->lazy_seen > LAZY_IDLE_NS) {
            c->lazy = c->lazy_armed = false;
            SET(nlazy, nlazy - 1);
            lazy[i--] = lazy[nlazy];
        }
    }
}

/* The sleep is over, and no other thread sleeps: the lazy connections are disarmed again,
 * so that the peer's next bytes do not ring a program that is awake (the next wait looks).
 * Not one a thread sleeps on in a read, a write or a poll (it armed it for itself). */
static void lazy_unflush(void)
{
    if (__atomic_load_n(&ep_sleepers, __ATOMIC_RELAXED)) return;
    for (unsigned i = 0; i < nlazy; i++) {
        struct conn *c = lazy[i];
        if (c->lazy_armed && !c->waiters) shm_disarm(c);
        c->lazy_armed = false;
    }
}

/* EPOLLET on the same-node path, where the waits look at the rings themselves: the events
 * that have an edge since the registration's last report (bytes, flags or room that came
 * since), which are noted as reported. Under psp.lock. */
static uint32_t et_edge(struct epreg *r)
{
    uint64_t in, out;
    shm_positions(r->c, &in, &out);
    uint32_t e = (in != r->et_in ? EPOLLIN | EPOLLRDHUP | EPOLLPRI : 0) |
                 (out != r->et_out ? EPOLLOUT : 0) | EPOLLHUP | EPOLLERR;
    r->et_in = in;
    r->et_out = out;
    return e;
}

/* The events of registration r for its connection's state s: what it asks for that is
 * there, and under EPOLLET on the same-node path only what has an edge (et_edge). */
static uint32_t reg_events(struct epreg *r, short s)
{
    uint32_t ready = epoll_bits(s) & (r->events | EPOLLHUP | EPOLLERR);
    if (ready && (r->events & EPOLLET) && r->c->st == CS_SHM) ready &= et_edge(r);
    return ready;
}

/* The events of the lazy connections registered in epfd, into ev[0..max) (marked, for
 * translate's duplicate check); how many, and in *mine how many are epfd's. Fair: each scan
 * starts after the last one reported. Under psp.lock. */
static int lazy_scan(int epfd, struct epoll_event *ev, int max, unsigned *mine)
{
    for (unsigned i = 0; i < nlazy; i++) /* those that cannot wait lazily any more: armed */
        if (!lazy_ok(lazy[i])) {
            struct conn *c = lazy[i];
            c->lazy = c->lazy_armed = false;
            SET(nlazy, nlazy - 1);
            lazy[i--] = lazy[nlazy];
            bells_set(c, true);
        }
    int k = 0;
    unsigned n = nlazy, at = n ? lazy_at % n : 0;
    uint64_t now = 0;
    *mine = 0;
    for (unsigned j = 0; j < n && k < max; j++) {
        unsigned i = (at + j) % n;
        struct conn *c = lazy[i];
        short s = conn_poll(c); /* (it may have gone to TCP: its registration moved) */
        struct epreg *r = lazy_ok(c) ? c->regs : NULL;
        if (!r || r->epfd != epfd || r->dormant || r->disarmed) continue;
        ++*mine;
        uint32_t ready = reg_events(r, s);
        if (!ready) continue;
        ev[k].events = ready | 0x80000000u;
        ev[k].data = r->data;
        k++;
        lazy_at = i + 1;
        c->lazy_seen = now ? now : (now = rdp_now_ns());
    }
    return k;
}

/* A wait that found nothing in the lazy rings of its set spins on them a while before it
 * arms them and sleeps (adaptive, as a read's spin; shm.c): a busy peer's next request
 * comes within microseconds, sooner than a doorbell and a wake-up. Under psp.lock, which
 * it leaves between looks. */
static int lazy_spin(int epfd, struct epoll_event *ev, int max, unsigned mine)
{
    static struct spin sp;
    static bool init;
    if (!init) {
        sp.ns = psp.shm_spin_ns;
        init = true;
    }
    if (!mine) return 0;
    int mode = psp_spin_mode(); /* an oversubscribed node: sleep at once (cosched.c) */
    if (mode == SPIN_SLEEP) {
        __atomic_fetch_add(&psp.spin_skipped, 1, __ATOMIC_RELAXED);
        return 0;
    }
    unsigned budget = spin_budget(&sp);
    if (!budget) return 0;
    uint64_t end = rdp_now_ns() + budget;
    int k = 0;
    for (bool over = false; !k && !over && nlazy;) {
        pthread_mutex_unlock(&psp.lock);
        for (int i = 0; i < 64; i++) __builtin_ia32_pause();
        over = rdp_now_ns() >= end;
        pthread_mutex_lock(&psp.lock);
        k = nlazy ? lazy_scan(epfd, ev, max, &mine) : 0;
    }
    spin_adapt(&sp, budget, k > 0);
    return k;
}

void bells_update(struct conn *c)
{
    bells_set(c, false);
}

/* Bring c's bells to its state; arm its ring for what its sets wait for and is not there
 * (arm, or when it cannot wait lazily). */
static void bells_set(struct conn *c, bool arm)
{
    if (c->bell_in < 0) return;
    short s = conn_poll(c);
    if (c->st == CS_SHM && c->regs) { /* what the sets wait for and is not there: ring me */
        short want = 0, edge = 0;     /* edge: what EPOLLET registrations wait for, there or not */
        for (struct epreg *r = c->regs; r; r = r->next) {
            short w = (short)((r->events & (EPOLLIN | EPOLLRDHUP) ? POLLIN : 0) |
                              (r->events & EPOLLOUT ? POLLOUT : 0));
            want |= w;
            if (r->events & EPOLLET) edge |= w;
        }
        if (((want & ~s) || edge) && (arm || !lazy_ok(c) || !lazy_add(c))) {
            if (edge) shm_want(c, edge);
            if (want & ~s) shm_arm(c, want & ~s);
            s = conn_poll(c);
        }
    }
    uint64_t x;
    if (s & (POLLIN | POLLRDHUP | POLLHUP | POLLERR)) {
        /* an edge for EPOLLET too, for RDP's data (the same-node path's come from its
         * doorbell) */
        if (!c->bell_in_on || c->st != CS_SHM) (void)!real.write(c->bell_in, &(uint64_t){1}, 8);
        c->bell_in_on = true;
    } else if (c->bell_in_on) {
        (void)!real.read(c->bell_in, &x, 8);
        c->bell_in_on = false;
    }
    if (c->bell_hup >= 0) {
        bool hup = s & (POLLHUP | POLLERR);
        if (hup) {
            (void)!real.write(c->bell_hup, &(uint64_t){1}, 8);
        } else if (c->bell_hup_on) {
            (void)!real.read(c->bell_hup, &x, 8);
        }
        c->bell_hup_on = hup;
    }
    bool out = s & (POLLOUT | POLLHUP | POLLERR);
    if (out && !c->bell_out_on) {
        (void)!real.read(c->bell_out, &x, 8);
        c->bell_out_on = true;
    } else if (!out && c->bell_out_on) {
        (void)!real.write(c->bell_out, &(uint64_t){BELL_FULL}, 8);
        c->bell_out_on = false;
    }
}

static uint32_t in_mask(uint32_t ev)
{
    uint32_t flags = ev & (EPOLLET | EPOLLONESHOT | EPOLLEXCLUSIVE | EPOLLWAKEUP);
    return flags | (ev & (EPOLLIN | EPOLLRDHUP | EPOLLPRI) ? EPOLLIN : 0);
}

static uint32_t out_mask(uint32_t ev)
{
    uint32_t flags = ev & (EPOLLET | EPOLLONESHOT | EPOLLEXCLUSIVE | EPOLLWAKEUP);
    return flags | (ev & EPOLLOUT ? EPOLLOUT : 0);
}

static struct epreg *reg_find(struct conn *c, int epfd, int fd)
{
    for (struct epreg *r = c->regs; r; r = r->next)
        if (r->epfd == epfd && r->fd == fd) return r;
    return NULL;
}

static void reg_free(struct conn *c, struct epreg *r)
{
    for (struct epreg **p = &c->regs; *p; p = &(*p)->next)
        if (*p == r) {
            *p = r->next;
            break;
        }
    regs[r->idx] = NULL;
    free(r);
}

/* A registration with neither EPOLLIN nor EPOLLOUT still gets EPOLLHUP and EPOLLERR from
 * the kernel; an eventfd raises neither, so such a registration has a third bell, readable
 * on those alone (bell_in would wake the set for every byte that nobody asked about). */
static int hup_ctl(int epfd, int op, struct epreg *r)
{
    struct conn *c = r->c;
    bool want = op != EPOLL_CTL_DEL && !r->dormant &&
                !(r->events & (EPOLLIN | EPOLLRDHUP | EPOLLPRI | EPOLLOUT));
    if (!want) {
        if (r->hup) real.epoll_ctl(epfd, EPOLL_CTL_DEL, c->bell_hup, NULL);
        r->hup = false;
        return 0;
    }
    if (c->bell_hup < 0) {
        c->bell_hup = psp_hide(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
        if (c->bell_hup < 0) return -1;
        c->bell_hup_on = false;
        bells_update(c);
    }
    uint32_t flags = r->events & (EPOLLET | EPOLLONESHOT | EPOLLEXCLUSIVE | EPOLLWAKEUP);
    struct epoll_event h = {.events = flags | EPOLLIN, .data.u64 = PSP_TAG | r->idx};
    if (real.epoll_ctl(epfd, r->hup ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, c->bell_hup, &h) < 0)
        return -1;
    r->hup = true;
    return 0;
}

/* The same-node path: the connection's doorbell is in the set too, so that the thread
 * waiting there wakes when the peer publishes (translate empties it and rings the bells). */
static void doorbell_ctl(int epfd, int op, struct epreg *r)
{
    int fd = op == EPOLL_CTL_DEL ? shm_bell_fd(r->c) : r->c->st == CS_SHM ? shm_bell(r->c) : -1;
    if (fd < 0 || op == EPOLL_CTL_MOD) return;
    struct epoll_event e = {.events = EPOLLIN, .data.u64 = PSP_TAG | BELL_BIT | r->idx};
    real.epoll_ctl(epfd, op, fd, op == EPOLL_CTL_DEL ? NULL : &e); /* EEXIST: a dup's */
}

/* The kernel socket in the set beside the bells while the peer's bytes are still there
 * (edge-triggered: each arrival is reported once, as the bells' event). */
static void kbell_ctl(int op, struct epreg *r)
{
    struct conn *c = r->c;
    if (op == EPOLL_CTL_DEL) {
        if (r->kbell && c->kfd >= 0) real.epoll_ctl(r->epfd, EPOLL_CTL_DEL, c->kfd, NULL);
        r->kbell = false;
        return;
    }
    if (r->kbell || !c->krx || c->kfd < 0) return;
    struct epoll_event e = {.events = EPOLLIN | EPOLLRDHUP | EPOLLET,
                            .data.u64 = PSP_TAG | KBELL_BIT | r->idx};
    r->kbell = real.epoll_ctl(r->epfd, EPOLL_CTL_ADD, c->kfd, &e) == 0; /* EEXIST: a dup's */
}

void epoll_conn_krx_done(struct conn *c)
{
    for (struct epreg *r = c->regs; r; r = r->next) kbell_ctl(EPOLL_CTL_DEL, r);
}

void epoll_conn_unbell(struct conn *c)
{
    for (struct epreg *r = c->regs; r; r = r->next) doorbell_ctl(r->epfd, EPOLL_CTL_DEL, r);
}

void epoll_conn_to_shm(struct conn *c)
{
    for (struct epreg *r = c->regs; r; r = r->next) doorbell_ctl(r->epfd, EPOLL_CTL_ADD, r);
}

static int bell_ctl(int epfd, int op, struct epreg *r)
{
    struct epoll_event a = {.events = in_mask(r->events), .data.u64 = PSP_TAG | r->idx};
    struct epoll_event b = {.events = out_mask(r->events), .data.u64 = PSP_TAG | r->idx};
    if (op == EPOLL_CTL_DEL) {
        real.epoll_ctl(epfd, op, r->c->bell_in, NULL);
        real.epoll_ctl(epfd, op, r->c->bell_out, NULL);
        hup_ctl(epfd, op, r);
        doorbell_ctl(epfd, op, r);
        kbell_ctl(op, r);
        return 0;
    }
    doorbell_ctl(epfd, op, r);
    /* a MOD that changes nothing for a bell leaves it (level-triggered, not one-shot: the
     * kernel's MOD would change nothing either) */
    bool keep = op == EPOLL_CTL_MOD && !(r->events & (EPOLLET | EPOLLONESHOT));
    if (!(keep && a.events == r->in_ev) && real.epoll_ctl(epfd, op, r->c->bell_in, &a) < 0)
        return -1;
    r->in_ev = a.events;
    bool b_ok = keep && b.events == r->out_ev;
    if (!b_ok) b_ok = real.epoll_ctl(epfd, op, r->c->bell_out, &b) == 0;
    if (b_ok) r->out_ev = b.events;
    if (!b_ok || hup_ctl(epfd, op, r) < 0) {
        int e = errno;
        if (op == EPOLL_CTL_ADD) {
            real.epoll_ctl(epfd, EPOLL_CTL_DEL, r->c->bell_in, NULL);
            real.epoll_ctl(epfd, EPOLL_CTL_DEL, r->c->bell_out, NULL);
        }
        errno = e;
        return -1;
    }
    return 0;
}

/* A new registration record of c in epfd for fd (not yet in regs[]); NULL without memory. */
static struct epreg *reg_new(struct conn *c, int epfd, int fd, const struct epoll_event *ev)
{
    unsigned idx = 0;
    while (idx < nregs && regs[idx]) idx++;
    if (idx == capregs) {
        unsigned cap = capregs ? capregs * 2 : 64;
        struct epreg **v = realloc(regs, cap * sizeof *v);
        if (!v) return NULL;
        memset(v + capregs, 0, (cap - capregs) * sizeof *v);
        regs = v;
        capregs = cap;
    }
    struct epreg *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    *r = (struct epreg){.epfd = epfd,
                        .fd = fd,
                        .events = ev->events,
                        .data = ev->data,
                        .c = c,
                        .idx = idx,
                        .et_in = UINT64_MAX, /* (EPOLLET reports what is there at first) */
                        .et_out = UINT64_MAX,
                        .next = c->regs};
    return r;
}

static void reg_add(struct conn *c, struct epreg *r)
{
    regs[r->idx] = r;
    if (r->idx == nregs) SET(nregs, nregs + 1);
    c->regs = r;
}

/* The TCP phase: the kernel's call on the program's descriptor, and its record. */
static int kern_ctl(struct conn *c, int epfd, int op, int fd, struct epoll_event *ev)
{
    struct epreg *r = reg_find(c, epfd, fd);
    if (r && !r->kern) { /* (a registration of before: cannot be, but not the kernel's) */
        errno = EEXIST;
        return -1;
    }
    struct epreg *n = op == EPOLL_CTL_ADD && ev && !r ? reg_new(c, epfd, fd, ev) : NULL;
    if (op == EPOLL_CTL_ADD && ev && !r && !n) {
        errno = ENOMEM;
        return -1;
    }
    int ret = real.epoll_ctl(epfd, op, fd, ev);
    if (ret < 0) {
        free(n);
        return -1;
    }
    if (n) {
        n->kern = true;
        reg_add(c, n);
    } else if (r && op == EPOLL_CTL_DEL) {
        reg_free(c, r);
    } else if (r && op == EPOLL_CTL_MOD && ev) {
        r->events = ev->events;
        r->data = ev->data;
    }
    return 0;
}

static int ep_ctl(struct conn *c, int epfd, int op, int fd, struct epoll_event *ev);

/* Not a cancellation point; what it does runs with cancellation disabled (the claim asks
 * psid, and psp.lock is taken). */
int epoll_ctl(int epfd, int op, int fd, struct epoll_event *ev)
{
    struct conn *c = fdt_get(fd);
    if (!c) return real.epoll_ctl(epfd, op, fd, ev);
    int cancel = psp_cancel_off();
    int r = ep_ctl(c, epfd, op, fd, ev);
    psp_cancel_on(cancel);
    fdt_put(c);
    return r;
}

static int ep_ctl(struct conn *c, int epfd, int op, int fd, struct epoll_event *ev)
{
    if (c->st == CS_ACCEPTED || c->st == CS_ORPHAN) conn_claim(c);
    conn_settle(c);
    if (c->st == CS_TCP || c->st == CS_ORPHAN) return real.epoll_ctl(epfd, op, fd, ev);
    if (psp_is_hidden(epfd)) {
        errno = EBADF;
        return -1;
    }
    pthread_mutex_lock(&psp.lock);
    if (c->st == CS_TCP) { /* it went TCP since we looked (its outcome, on another thread) */
        pthread_mutex_unlock(&psp.lock);
        return real.epoll_ctl(epfd, op, fd, ev);
    }
    int ret = -1;
    if (c->st == CS_CONNECTING || c->st == CS_PLAIN) {
        ret = kern_ctl(c, epfd, op, fd, ev);
        pthread_mutex_unlock(&psp.lock);
        return ret;
    }
    struct epreg *r = reg_find(c, epfd, fd);
    if (op == EPOLL_CTL_ADD && r && r->dormant && ev) { /* deleted before: taken up again */
        r->dormant = false;
        r->events = ev->events;
        r->data = ev->data;
        r->disarmed = false;
        r->et_in = r->et_out = UINT64_MAX;
        ret = bell_ctl(epfd, EPOLL_CTL_MOD, r);
        if (c->st == CS_SHM) bells_update(c);
        goto out;
    }
    if (r && r->dormant) r = NULL; /* deleted, as far as the program knows */
    if (op == EPOLL_CTL_ADD) {
        if (r) {
            errno = EEXIST;
            goto out;
        }
        if (!ev) {
            errno = EFAULT;
            goto out;
        }
        /* the kernel's checks on epfd (EBADF, EINVAL, ELOOP) come from adding our bells */
        if (bells(c) < 0) goto out;
        r = reg_new(c, epfd, fd, ev);
        if (!r) goto out;
        if (bell_ctl(epfd, EPOLL_CTL_ADD, r) < 0) {
            free(r);
            goto out;
        }
        reg_add(c, r);
        kbell_ctl(EPOLL_CTL_ADD, r);
        rdp_in_set(epfd);
        if (c->st == CS_SHM) bells_update(c); /* the peer rings us from now on */
        ret = 0;
    } else if (op == EPOLL_CTL_MOD || op == EPOLL_CTL_DEL) {
        if (!r) {
            errno = ENOENT;
            goto out;
        }
        if (op == EPOLL_CTL_DEL) { /* dormant: no events, until an ADD or the close */
            r->dormant = true;
            r->events = 0;
            r->disarmed = false;
            if (bell_ctl(epfd, EPOLL_CTL_MOD, r) < 0) {
                bell_ctl(epfd, EPOLL_CTL_DEL, r);
                reg_free(c, r);
            }
            ret = 0;
        } else {
            if (!ev) {
                errno = EFAULT;
                goto out;
            }
            r->events = ev->events;
            r->data = ev->data;
            r->disarmed = false;
            r->et_in = r->et_out = UINT64_MAX; /* a MOD reports what is there, once */
            ret = bell_ctl(epfd, EPOLL_CTL_MOD, r);
            if (c->st == CS_SHM) bells_update(c); /* what it waits for changed */
        }
    } else {
        errno = EINVAL;
    }
out:
    pthread_mutex_unlock(&psp.lock);
    return ret;
}

/* Translate our events in ev[k..k+n) in place, after k of ours reported already (marked);
 * the number in all. Under psp.lock. */
static int translate(struct epoll_event *ev, int k0, int n)
{
    int out = k0;
    for (int i = k0; i < k0 + n; i++) {
        uint64_t t = ev[i].data.u64;
        if ((t & PSP_TAG_MASK) != PSP_TAG) {
            ev[out++] = ev[i];
            continue;
        }
        unsigned idx = (unsigned)(t & 0xffffffffu);
        if (idx == RDP_IDX) { /* datagrams: the doorbells they ring show in the next wait */
            psp_rdp_process();
            continue;
        }
        struct epreg *r = idx < nregs ? regs[idx] : NULL;
        if (t & KBELL_BIT) { /* the peer's bytes on the kernel socket: as its bells would be */
            if (!r || r->kern) continue;
            wake_conn(r->c);
            bells_later(r->c);
        }
        if (r && r->kern)
            continue;       /* (cannot be: the kernel's registrations carry the
                             * program's data) */
        if (t & BELL_BIT) { /* the peer published: reported now, as its bells would be */
            if (!r || r->c->st != CS_SHM) continue;
            shm_bell_drain(r->c);
            if (shm_hup(r->c)) epoll_conn_unbell(r->c); /* the peer is gone: never again */
            wake_conn(r->c); /* threads waiting on it elsewhere look too */
            bells_later(r->c);
        }
        if (!r || r->disarmed || r->dormant) continue;
        bool dup = false; /* the other bell of the same registration, in this batch */
        for (int k = 0; k < out; k++)
            if (ev[k].data.u64 == r->data.u64 && ev[k].events & 0x80000000u) dup = true;
        if (dup) continue;
        /* (EPOLLET on the same-node path: an edge is what came into the rings since the
         * last report, whichever bell woke the set; bell_in goes up again when a read
         * leaves bytes there, which is no edge) */
        uint32_t ready = reg_events(r, conn_poll(r->c));
        if (!ready) continue;
        if (r->events & EPOLLONESHOT) {
            r->disarmed = true;
            struct epoll_event off = {.events = 0, .data.u64 = PSP_TAG | r->idx};
            real.epoll_ctl(r->epfd, EPOLL_CTL_MOD, r->c->bell_in, &off);
            real.epoll_ctl(r->epfd, EPOLL_CTL_MOD, r->c->bell_out, &off);
            if (r->hup) real.epoll_ctl(r->epfd, EPOLL_CTL_MOD, r->c->bell_hup, &off);
        }
        ev[out].events = ready | 0x80000000u; /* marked: ours, for the duplicate check */
        ev[out].data = r->data;
        out++;
    }
    for (int k = 0; k < out; k++) ev[k].events &= ~0x80000000u;
    return out;
}

/* The kernel's events in ev[k..k+n) translated after k of ours (lazy_scan), psid's taken:
 * the number in all. */
static int ep_events(struct epoll_event *ev, int k, int n)
{
    for (int i = k; i < k + n; i++) /* psid's events first (psi_lock comes before psp.lock) */
        if (ev[i].data.u64 == (PSP_TAG | PSI_IDX)) {
            ev[i--] = ev[k + --n];
            neg_events(false);
        }
    if (k + n == 0) return 0;
    pthread_mutex_lock(&psp.lock);
    k = translate(ev, k, n);
    pthread_mutex_unlock(&psp.lock);
    return k;
}

static int ep_wait_in(int epfd, struct epoll_event *ev, int max, int timeout, const sigset_t *m,
                      bool pwait)
{
    real_ready();
    if (PEEK(nlater)) { /* what a doorbell reported and the program left unread rings its bell */
        pthread_mutex_lock(&psp.lock);
        bells_due();
        pthread_mutex_unlock(&psp.lock);
    }
    uint64_t deadline = timeout > 0 ? now_ms() + (uint64_t)timeout : 0;
    uint64_t busy = PEEK(nregs) ? psp_busy_until() : 0; /* PSP_BUSY_POLL */
    for (;;) {
        int wait = timeout;
        if (busy && wait && rdp_now_ns() < busy) wait = 0;
        /* the lazy connections first: what they have is reported without a doorbell, with
         * the kernel's events that are there; a wait that finds none there arms them all,
         * and one that may sleep is counted */
        bool sleeper = false, in_set = false;
        if (PEEK(nlazy) || (wait && (PEEK(nregs) || PEEK(nrdp_sets)))) {
            pthread_mutex_lock(&psp.lock);
            /* a thread that will sleep on the RDP socket takes its datagrams (not when it
             * only looks: the progress thread keeps listening meanwhile) */
            in_set = wait && nrdp_sets && set_has_rdp(epfd);
            unsigned mine = 0;
            int k = nlazy && max > 0 ? lazy_scan(epfd, ev, max, &mine) : 0;
            if (!k && wait && nlazy && max > 0) k = lazy_spin(epfd, ev, max, mine);
            sleeper = !k && wait;
            if (sleeper)
                sleeper_add();
            else if (!k)
                lazy_flush();
            pthread_mutex_unlock(&psp.lock);
            if (k) {
                int n = max > k ? pwait ? real.epoll_pwait(epfd, ev + k, max - k, 0, m)
                                        : real.epoll_wait(epfd, ev + k, max - k, 0)
                                : 0;
                return ep_events(ev, k, n > 0 ? n : 0);
            }
        }
        bool mine = in_set && psp_poller_enter();
        struct poll_sleep ps = {.entered = mine, .sleeper = sleeper};
        int n = sleep_epoll(&ps, epfd, ev, max, wait, m, pwait);
        if (mine) {
            int e = errno;
            psp_poller_leave(true);
            errno = e;
        }
        sleep_leave(sleeper);
        if (n < 0 || (n == 0 && wait == timeout) || !PEEK(nregs)) return n;
        int k = ep_events(ev, 0, n);
        if (k || timeout == 0) return k;
        if (timeout > 0) {
            int64_t left = (int64_t)(deadline - now_ms());
            if (left <= 0) return 0;
            timeout = (int)left;
        }
    }
}

/* A cancellation point, as the kernel's call is; a cancellation acts at the start or in the
 * sleep only (wait.c, "Cancellation") */
static int ep_wait(int epfd, struct epoll_event *ev, int max, int timeout, const sigset_t *m,
                   bool pwait)
{
    int cancel = psp_cancel_entry();
    int n = ep_wait_in(epfd, ev, max, timeout, m, pwait);
    psp_cancel_on(cancel);
    return n;
}

int epoll_wait(int epfd, struct epoll_event *ev, int max, int timeout)
{
    return ep_wait(epfd, ev, max, timeout, NULL, false);
}

int epoll_pwait(int epfd, struct epoll_event *ev, int max, int timeout, const sigset_t *m)
{
    return ep_wait(epfd, ev, max, timeout, m, true);
}

int epoll_pwait2(int epfd, struct epoll_event *ev, int max, const struct timespec *ts,
                 const sigset_t *m);
int epoll_pwait2(int epfd, struct epoll_event *ev, int max, const struct timespec *ts,
                 const sigset_t *m)
{
    int t = ts ? (int)(ts->tv_sec * 1000 + (ts->tv_nsec + 999999) / 1000000) : -1;
    return ep_wait(epfd, ev, max, t, m, true);
}

void epoll_fd_closed(struct conn *c, int fd)
{
    for (struct epreg *r = c->regs, *n; r; r = n) {
        n = r->next;
        if (r->fd != fd) continue;
        if (!r->kern) bell_ctl(r->epfd, EPOLL_CTL_DEL, r);
        /* (the kernel's registration of a closed descriptor ends with the socket: ours is
         * closed with it in the TCP phase, conn.c) */
        reg_free(c, r);
    }
}

void epoll_conn_gone(struct conn *c)
{
    while (c->regs) reg_free(c, c->regs);
}

void epoll_conn_to_tcp(struct conn *c)
{
    while (c->regs) {
        struct epreg *r = c->regs;
        if (!r->kern) { /* (the TCP phase's are the kernel's already) */
            bell_ctl(r->epfd, EPOLL_CTL_DEL, r);
            struct epoll_event ev = {.events = r->events, .data = r->data};
            if (!r->dormant) real.epoll_ctl(r->epfd, EPOLL_CTL_ADD, r->fd, &ev);
        }
        reg_free(c, r);
    }
}

int epoll_conn_reserve(struct conn *c)
{
    for (struct epreg *r = c->regs; r; r = r->next)
        if (r->kern) return bells(c);
    return 0;
}

void epoll_conn_up(struct conn *c)
{
    bool any = false;
    for (struct epreg *r = c->regs; r && !any; r = r->next) any = r->kern;
    if (!any) return;
    if (bells(c) < 0) { /* no descriptors for its bells: back to TCP, the switch's way */
        c->sw_epoll = true;
        return;
    }
    for (struct epreg *r = c->regs, *n; r; r = n) {
        n = r->next;
        if (!r->kern) continue;
        real.epoll_ctl(r->epfd, EPOLL_CTL_DEL, r->fd, NULL);
        r->kern = false;
        if (bell_ctl(r->epfd, EPOLL_CTL_ADD, r) < 0) { /* the set is gone */
            reg_free(c, r);
            continue;
        }
        kbell_ctl(EPOLL_CTL_ADD, r);
        rdp_in_set(r->epfd);
    }
    bells_update(c);
}
