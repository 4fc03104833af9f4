/*
 * bells.c - the doorbells of accelerated connections in the program's epoll sets, and the
 * lazy arming of the same-node path there.
 *
 * A connection's first registration in a set (epoll.c) makes its bells, eventfds (bells):
 * bell_in, readable exactly when the connection is (data, EOF, error), and bell_out,
 * writable exactly when it is (credit; an eventfd at BELL_FULL is not writable); bell_hup,
 * readable on POLLHUP and POLLERR alone, is made by epoll.c for a registration that asks
 * for neither input nor output. bells_set brings them to the connection's state
 * (conn_poll) wherever that may have changed (bells_update: conn_changed, a read, a write,
 * a registration). On the same-node path it also arms the ring for what the sets wait for
 * and is not there, so that the peer rings the doorbell (shm.c).
 *
 * A doorbell's event is reported by epoll_wait at once; the connection's own bells are
 * brought up to date before the program's next wait (bells_later, bells_due), so a request
 * the program answers at once costs no bell.
 *
 * A same-node connection registered in one set only (not EPOLLONESHOT, not EPOLLEXCLUSIVE)
 * is not armed while the program is awake: its set's epoll_wait looks at its ring itself
 * (see "Lazy arming" below). A thread about to sleep where a set may be among what it
 * waits on (epoll_wait, poll, select) arms the lazy list first and counts as a sleeper
 * meanwhile (sleeper_add, sleep_enter, sleep_leave).
 */
#include "pollint.h"
#include "spinrule.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

#define BELL_FULL 0xfffffffffffffffeull /* an eventfd at this count is not writable */

/* the lazy list (bells_update) */
#define LAZY_MAX 256
static struct conn **lazy;
static unsigned nlazy, caplazy, lazy_at;
static int ep_sleepers; /* threads in a wait that may sleep on an epoll set (atomic) */

bool lazy_any(void)
{
    return PEEK(nlazy) != 0;
}

/* A thread about to sleep where an epoll set of the program's may be among what it waits on
 * (the set itself, another holding it, poll or select on its descriptor): the lazy list is
 * armed first, and the thread counted while it sleeps (bells_update). Under psp.lock. */
void sleeper_add(void)
{
    lazy_flush();
    __atomic_fetch_add(&ep_sleepers, 1, __ATOMIC_RELAXED);
}

bool sleep_enter(bool may_sleep)
{
    if (!may_sleep || !regs_any()) return false;
    pthread_mutex_lock(&psp.lock);
    sleeper_add();
    pthread_mutex_unlock(&psp.lock);
    return true;
}

static void lazy_unflush(void);

void sleep_leave(bool counted)
{
    if (!counted) return;
    int e = errno;
    pthread_mutex_lock(&psp.lock);
    __atomic_fetch_sub(&ep_sleepers, 1, __ATOMIC_RELAXED);
    lazy_unflush();
    pthread_mutex_unlock(&psp.lock);
    errno = e;
}

/* In a fork's child: the parent's threads asleep in a wait are not the child's (a count
 * inherited from them would keep the child's connections armed for good). */
void epoll_fork_child(void)
{
    ep_sleepers = 0;
}

int bells(struct conn *c)
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

bool bells_any_due(void)
{
    return PEEK(nlater) != 0;
}

static bool grow_later(void)
{
    unsigned cap = caplater ? caplater * 2 : 64;
    struct conn **v = realloc(later, cap * sizeof *v);
    if (!v) return false;
    later = v;
    caplater = cap;
    return true;
}

void bells_later(struct conn *c)
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

void bells_due(void)
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

/* Lazy arming (the same-node path in epoll). A connection whose only registration is in
 * one set, without EPOLLONESHOT or EPOLLEXCLUSIVE, in a process that has not forked since
 * it came, is not armed when the program has read what there was: it joins the lazy list,
 * and the program's next epoll_wait on its set looks at its ring itself (lazy_scan) and
 * reports it from there, as the kernel's epoll would (EPOLLET: when something came since
 * its last report, et_edge in epoll.c), with what the kernel has ready at once. A wait
 * that finds none of them ready spins on them a while if it would sleep (lazy_spin), then
 * arms the whole list (lazy_flush), and disarms it after the sleep (lazy_unflush) unless
 * another thread still sleeps. A wait that may sleep elsewhere where a set may be among what it
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
void lazy_flush(void)
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

/* The events of the lazy connections registered in epfd, into ev[0..max) (marked, for
 * translate's duplicate check); how many, and in *mine how many are epfd's. Fair: each scan
 * starts after the last one reported. Under psp.lock. */
int lazy_scan(int epfd, struct epoll_event *ev, int max, unsigned *mine)
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
int lazy_spin(int epfd, struct epoll_event *ev, int max, unsigned mine)
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
