/*
 * epoll.c - accelerated connections in the program's epoll sets: epoll_ctl, epoll_wait,
 * epoll_pwait and epoll_pwait2.
 *
 * The set is the kernel's; an accelerated connection is represented in it by two
 * doorbells of its own, eventfds: bell_in is readable exactly when the connection is
 * (data, EOF, error), bell_out writable exactly when it is (credit); bells.c keeps them so.
 * So any number of epoll sets can hold a connection at once, nested sets work, and EPOLLET,
 * EPOLLONESHOT, EPOLLEXCLUSIVE and EPOLL_CTL_MOD act on the doorbells as the kernel makes
 * them act (bell_ctl; a registration without EPOLLIN and EPOLLOUT has a third, bell_hup:
 * hup_ctl). Each registration (struct epreg, pollint.h) has an index in regs[]; the
 * doorbells carry a tag of ours in their epoll data (PSP_TAG and the index: a value no
 * user-space pointer or small integer has), and epoll_wait translates a tagged event back
 * into the program's descriptor's events and data (translate). A connection that falls
 * back to TCP has its registrations moved to the kernel socket itself (epoll_conn_to_tcp).
 *
 * A connection negotiating (the TCP phase, conn.c) is the kernel socket's: its epoll
 * registrations are the program's own descriptor in the program's sets, recorded (kern) to
 * be moved to the bells when it moves up (epoll_conn_up). While the peer's bytes are still
 * to be read from the kernel socket (krx), that socket sits in the sets beside the bells
 * (edge-triggered, tagged: kbell_ctl).
 *
 * A set that holds a doorbell holds the RDP socket too, and psid's connection, so that the
 * thread waiting there takes what comes itself (rdp_in_set). On the same-node path a
 * connection's doorbell (shm.c) joins its sets too (doorbell_ctl), and one registered in a
 * single set is armed lazily: epoll_wait looks at its ring itself and nobody rings while
 * the program is awake (bells.c, "Lazy arming").
 */
#include "pollint.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#define PSP_TAG      0xb5e1000000000000ull
#define PSP_TAG_MASK 0xffff000000000000ull

static struct epreg **regs; /* by index (the tag's low bits) */
static unsigned nregs, capregs;
#define RDP_IDX   0xffffffffu  /* the tag of the RDP socket in a program's epoll set */
#define PSI_IDX   0xfffffffeu  /* the tag of the psid connection in a program's epoll set */
#define BELL_BIT  (1ull << 32) /* in a tag: the registration's doorbell (same-node path) */
#define KBELL_BIT (1ull << 33) /* in a tag: the kernel socket, while the peer's bytes are there */
static int *rdp_sets;          /* the program's epoll sets that hold the RDP socket */
static unsigned nrdp_sets;     /* (looked at without psp.lock: written as an atomic) */

/* The sleep itself, in a frame of its own (the cleanup is a setjmp: poll.c) */
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

bool regs_any(void)
{
    return PEEK(nregs) != 0;
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
uint32_t reg_events(struct epreg *r, short s)
{
    uint32_t ready = epoll_bits(s) & (r->events | EPOLLHUP | EPOLLERR);
    if (ready && (r->events & EPOLLET) && r->c->st == CS_SHM) ready &= et_edge(r);
    return ready;
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
    if (cs_unclaimed(c->st)) conn_claim(c);
    conn_settle(c);
    if (cs_kernel_only(c->st)) return real.epoll_ctl(epfd, op, fd, ev);
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
    if (cs_tcp_phase(c->st)) {
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
    if (bells_any_due()) { /* what a doorbell reported and the program left unread rings its bell */
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
        if (lazy_any() || (wait && (PEEK(nregs) || PEEK(nrdp_sets)))) {
            pthread_mutex_lock(&psp.lock);
            /* a thread that will sleep on the RDP socket takes its datagrams (not when it
             * only looks: the progress thread keeps listening meanwhile) */
            in_set = wait && nrdp_sets && set_has_rdp(epfd);
            unsigned mine = 0;
            int k = lazy_any() && max > 0 ? lazy_scan(epfd, ev, max, &mine) : 0;
            if (!k && wait && lazy_any() && max > 0) k = lazy_spin(epfd, ev, max, mine);
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
