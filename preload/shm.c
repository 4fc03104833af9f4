/*
 * shm.c - the same-node path: a connection between two processes of one node carried by
 * a shared-memory channel (include/psshm.h) instead of RDP.
 *
 * psid makes the channel when the acceptor claims the connection and hands each end the
 * memfd and its end of the doorbell, a SOCK_SEQPACKET socketpair (psid/shmchan.c);
 * shm_attach maps it. The doorbell goes into a hidden descriptor kept since before the
 * negotiation (shm_reserve), so that a process at its descriptor limit stays on TCP. Then each
 * direction is a byte ring with one producer and one consumer: a write copies the program's bytes
 * in and publishes the head, a read copies them out and publishes the tail; no system call and no
 * thread of ours in between. The connection's state in struct conn (rx_bytes, credit, rx_fin,
 * peer_closed, err) is refreshed from the rings by shm_sync, so conn.c's reads, writes and
 * readiness serve this path as they serve RDP's; what differs is this path's operations
 * (xshm_ops, xport.h), at the end of the file.
 *
 * Waking: a thread that would sleep (a blocking read or write, poll, select, an epoll set
 * where the connection is not ready: lazily there, bells.c) arms the ring (want_data,
 * want_room), looks once more,
 * and sleeps on its end of the doorbell with whatever else it waits for; the other side,
 * after publishing, takes the flag and rings (sends a byte on its end). A doorbell whose
 * other end is closed (POLLHUP) is not slept on again: the flags, or the guard's FIN for a
 * crashed peer, tell the rest. Before arming, a blocking read or write
 * spins on the ring for a while (shm_spin): the answer of a request/response peer comes
 * within microseconds, sooner than a sleep and a wake-up. The spin adapts per connection:
 * it doubles (up to PSP_SHM_SPIN microseconds, 20 by default, or PSP_BUSY_POLL's) when the
 * bytes came within it and halves after four misses in a row, so an idle connection costs
 * nothing; a shrunk spin tries its whole budget every 16th wait (shm_spin). No spin at all
 * while the node has more runnable threads than CPUs (the spin rule, cosched.c): there the
 * spinner would hold the CPU its peer waits for.
 *
 * Everything the other process writes to the mapping is untrusted input: a head or tail
 * out of bounds resets the connection, and no length read from the mapping decides a copy
 * beyond the ring.
 *
 * Ending: shutdown(SHUT_WR) sets FIN, close CLOSE (RST with SO_LINGER 0), each after the
 * last byte; the doorbell is rung. A crashed peer sets nothing: the guard's FIN does it.
 */
#include "psp.h"
#include "psshm.h"
#include "spinrule.h"
#include "wire.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

struct shm_chan {
    struct pshm_hdr *h;
    size_t len;
    struct pshm_ring *tx, *rx;
    uint8_t *txd, *rxd;
    uint32_t ring;
    uint64_t tx_head; /* ours: what we published */
    uint64_t rx_tail;
    int bell;     /* our end of the doorbell: we sleep on it, and ring the peer on it */
    bool hup;     /* the peer's end is closed */
    bool watched; /* in the progress thread's epoll (a move to TCP) */
    struct shm_chan *next_dead;
    int pins;  /* threads spinning on it without psp.lock */
    bool dead; /* freed while pinned: the last pin unmaps */
    struct spin spin;
};

#define SPIN_MIN_NS 2000u
#define SPIN_MISSES 4u
#define SPIN_PROBE  16u

extern __thread int psp_in;

static void unmap(struct shm_chan *s)
{
    if (s->h) munmap(s->h, s->len);
    free(s);
}

/* Mappings of closed connections, unmapped by the progress thread (shm_reap): munmap of
 * a mapping the other threads may have touched costs a TLB shootdown, which a program
 * that opens and closes connections in a loop should not wait for. */
#define DEAD_MAX 64u
static struct shm_chan *dead;
static unsigned ndead;

struct shm_chan *shm_reap(void)
{
    struct shm_chan *s = dead;
    dead = NULL;
    ndead = 0;
    return s;
}

void shm_unmap_all(struct shm_chan *s)
{
    while (s) {
        struct shm_chan *n = s->next_dead;
        unmap(s);
        s = n;
    }
}

static void bury(struct shm_chan *s)
{
    if (ndead >= DEAD_MAX) { /* the progress thread has not come by: this one now */
        unmap(s);
        return;
    }
    s->next_dead = dead;
    dead = s;
    if (ndead++ == 0) psp_kick(); /* it unmaps outside the lock */
}

static void ring_bell(int fd)
{
    if (fd < 0) return;
    (void)!real.send(fd, "", 1, MSG_DONTWAIT | MSG_NOSIGNAL); /* full: it rings */
    __atomic_fetch_add(&psp.shm_bells, 1, __ATOMIC_RELAXED);  /* (PSP_STATS) */
}

/* Flags f into ring i's producer flags through the descriptor (a channel not mapped). */
static void flags_unmapped(int memfd, int i, uint32_t f)
{
    (void)!pwrite(memfd, &f, sizeof f,
                  (off_t)(offsetof(struct pshm_hdr, dir) + (size_t)i * sizeof(struct pshm_ring) +
                          offsetof(struct pshm_ring, pflags)));
}

/* Reset a channel we could not map: both rings say RST, through the descriptor. */
static void reset_unmapped(int memfd, int bell)
{
    for (int i = 0; i < 2; i++) flags_unmapped(memfd, i, PSHM_RST | PSHM_CLOSE);
    ring_bell(bell);
}

void shm_refuse(const int fds[2], bool connector, bool rst)
{
    flags_unmapped(fds[0], connector ? 0 : 1, rst ? PSHM_RST | PSHM_CLOSE : PSHM_CLOSE);
    ring_bell(fds[1]);
    psp_in++;
    real.close(fds[0]);
    real.close(fds[1]);
    psp_in--;
}

int shm_reserve(int any)
{
    return fdt_hidden_dup(any);
}

int shm_attach(struct conn *c, bool connector, uint32_t ring, const int fds[2])
{
    struct shm_chan *s = calloc(1, sizeof *s);
    struct stat st;
    void *m = MAP_FAILED;
    size_t len = (size_t)PSHM_SIZE(ring);
    int bell = -1;
    if (s && fstat(fds[0], &st) == 0 && (uint64_t)st.st_size == PSHM_SIZE(ring) &&
        ring >= PSHM_RING_MIN && ring <= PSHM_RING_MAX && !(ring & (ring - 1)))
        m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fds[0], 0);
    const struct pshm_hdr *h = m;
    bool ok =
        m != MAP_FAILED && h->magic == PSHM_MAGIC && h->version == PSHM_VERSION && h->ring == ring;
    if (ok && c->shm_slot >= 0 && real.dup3(fds[1], c->shm_slot, O_CLOEXEC) == c->shm_slot) {
        bell = c->shm_slot; /* the slot kept for it */
        c->shm_slot = -1;
        real.close(fds[1]);
    } else if (ok) {
        bell = psp_hide(fds[1]);
    }
    ok = ok && bell >= 0;
    psp_in++;
    if (!ok) {
        reset_unmapped(fds[0], bell >= 0 ? bell : fds[1]);
        if (m != MAP_FAILED) munmap(m, len);
        free(s);
        real.close(fds[0]);
        if (bell >= 0)
            fdt_close_hidden(bell);
        else
            real.close(fds[1]);
        psp_in--;
        c->shm = NULL;
        conn_enter(c, CS_SHM);
        c->err = ECONNRESET;
        c->rx_fin = c->peer_closed = true;
        return -1;
    }
    real.close(fds[0]); /* the mapping keeps the memory */
    psp_in--;
    s->h = m;
    s->len = len;
    s->ring = ring;
    int t = connector ? 0 : 1;
    s->tx = &s->h->dir[t];
    s->rx = &s->h->dir[1 - t];
    s->txd = (uint8_t *)m + PSHM_HDR + (size_t)t * ring;
    s->rxd = (uint8_t *)m + PSHM_HDR + (size_t)(1 - t) * ring;
    /* psid made it zeroed: the counters start at 0, and only we move ours */
    s->bell = bell;
    s->spin.ns = psp.shm_spin_ns;
    c->shm = s;
    conn_enter(c, CS_SHM);
    c->credit = ring;
    shm_sync(c);
    return 0;
}

static void broken(struct conn *c)
{
    if (!c->err) c->err = ECONNRESET;
    c->rx_fin = c->peer_closed = true;
    c->rx_bytes = 0;
    c->credit = 0;
    psp.bad_msgs++;
}

uint32_t shm_peer_switch(const struct conn *c)
{
    return c->shm ? __atomic_load_n(&c->shm->rx->pflags, __ATOMIC_ACQUIRE) &
                        (PSHM_SWITCH | PSHM_SWITCH_ACK)
                  : 0;
}

uint32_t shm_peer_pid(const struct conn *c)
{
    return c->shm ? c->shm->h->pid[c->connector ? 1 : 0] : 0;
}

size_t shm_unread(const struct conn *c)
{
    const struct shm_chan *s = c->shm;
    if (!s) return 0;
    /* the peer published its last tail before its SWITCH, which we saw */
    uint64_t tail = __atomic_load_n(&s->tx->tail, __ATOMIC_ACQUIRE);
    return s->tx_head - tail > s->ring ? SIZE_MAX : (size_t)(s->tx_head - tail);
}

void shm_unread_copy(const struct conn *c, size_t at, uint8_t *out, size_t n)
{
    const struct shm_chan *s = c->shm;
    uint64_t from = s->tx_head - shm_unread(c) + at;
    for (size_t done = 0; done < n;) {
        size_t off = (size_t)(from & (s->ring - 1)), m = s->ring - off;
        if (m > n - done) m = n - done;
        memcpy(out + done, s->txd + off, m);
        done += m;
        from += m;
    }
}

void shm_watch(struct conn *c, bool on)
{
    if (!c->shm || psp.epfd < 0 || c->shm->watched == on) return;
    c->shm->watched = on;
    struct epoll_event ev = {.events = EPOLLIN, .data.u64 = PSP_TAG_SHM + (uint64_t)c->kfd};
    real.epoll_ctl(psp.epfd, on ? EPOLL_CTL_ADD : EPOLL_CTL_DEL, c->shm->bell, on ? &ev : NULL);
}

bool shm_hup(const struct conn *c)
{
    return c->shm && c->shm->hup;
}

void shm_sync(struct conn *c)
{
    struct shm_chan *s = c->shm;
    if (!s || c->err == ECONNRESET) return;
    /* flags first: bytes published before them are all there when we read head */
    uint32_t pf = __atomic_load_n(&s->rx->pflags, __ATOMIC_ACQUIRE);
    uint64_t head = __atomic_load_n(&s->rx->head, __ATOMIC_ACQUIRE);
    uint64_t tail = __atomic_load_n(&s->tx->tail, __ATOMIC_ACQUIRE);
    if (head - s->rx_tail > s->ring || s->tx_head - tail > s->ring) {
        broken(c);
        return;
    }
    c->rx_bytes = (size_t)(head - s->rx_tail);
    c->credit = (size_t)(s->ring - (s->tx_head - tail));
    if ((pf & PSHM_UP) && !c->peer_up) { /* its count came before the flag (release) */
        c->peer_up = true;
        c->peer_ktx = __atomic_load_n(&s->rx->ktx, __ATOMIC_RELAXED);
        conn_krx_check(c);
    }
    if (pf & PSHM_RST) {
        c->rx_fin = c->peer_closed = true;
        if (!c->err) c->err = ECONNRESET;
    } else if (pf & (PSHM_FIN | PSHM_CLOSE)) {
        c->rx_fin = c->fin_seen = true;
        if (pf & PSHM_CLOSE) c->peer_closed = true;
    }
    if ((pf & PSHM_SWITCH) && c->st == CS_SHM && !c->err) conn_shm_switched(c); /* we answer */
}

/* After publishing: ring the peer if it armed want (it sleeps on what we published). */
static void ring_if_wanted(struct shm_chan *s, uint32_t *want)
{
    __atomic_thread_fence(__ATOMIC_SEQ_CST); /* against the peer's arm-then-look */
    if (__atomic_load_n(want, __ATOMIC_RELAXED) && __atomic_exchange_n(want, 0, __ATOMIC_ACQ_REL))
        ring_bell(s->bell);
}

/* Publish our side of a ring (a release store), then wake the peer if it sleeps on it. */
static void publish(struct shm_chan *s, uint64_t *field, uint64_t v, uint32_t *want)
{
    __atomic_store_n(field, v, __ATOMIC_RELEASE);
    ring_if_wanted(s, want);
}

size_t shm_read(struct conn *c, const struct iovec *iov, int iovcnt, size_t done, size_t want,
                int flags)
{
    struct shm_chan *s = c->shm;
    if (!s) return 0;
    size_t avail = c->rx_bytes, got = 0, vi_off = done;
    int vi = 0;
    while (vi < iovcnt && vi_off >= iov[vi].iov_len) vi_off -= iov[vi++].iov_len;
    uint64_t at = s->rx_tail;
    while (got < want && got < avail && vi < iovcnt) {
        size_t off = (size_t)(at & (s->ring - 1)), n = s->ring - off;
        if (n > avail - got) n = avail - got;
        if (n > want - got) n = want - got;
        if (n > iov[vi].iov_len - vi_off) n = iov[vi].iov_len - vi_off;
        if (!(flags & MSG_TRUNC)) memcpy((uint8_t *)iov[vi].iov_base + vi_off, s->rxd + off, n);
        got += n;
        at += n;
        vi_off += n;
        if (vi_off == iov[vi].iov_len) {
            vi++;
            vi_off = 0;
        }
    }
    if (got && !(flags & MSG_PEEK)) {
        s->rx_tail = at;
        c->rx_bytes -= got;
        c->rx_total += got;
        psp.shm_rx += got;
        publish(s, &s->rx->tail, at, &s->rx->want_room);
    }
    return got;
}

size_t shm_write(struct conn *c, const struct iovec *iov, int iovcnt, size_t done, size_t n)
{
    struct shm_chan *s = c->shm;
    if (!s) return 0;
    if (n > c->credit) n = c->credit;
    size_t put = 0, vi_off = done;
    int vi = 0;
    while (vi < iovcnt && vi_off >= iov[vi].iov_len) vi_off -= iov[vi++].iov_len;
    uint64_t at = s->tx_head;
    while (put < n && vi < iovcnt) {
        size_t off = (size_t)(at & (s->ring - 1)), k = s->ring - off;
        if (k > n - put) k = n - put;
        if (k > iov[vi].iov_len - vi_off) k = iov[vi].iov_len - vi_off;
        memcpy(s->txd + off, (const uint8_t *)iov[vi].iov_base + vi_off, k);
        put += k;
        at += k;
        vi_off += k;
        if (vi_off == iov[vi].iov_len) {
            vi++;
            vi_off = 0;
        }
    }
    if (put) {
        s->tx_head = at;
        c->credit -= put;
        psp.shm_tx += put;
        psp.shm_tx_msgs++;
        publish(s, &s->tx->head, at, &s->tx->want_data);
    }
    return put;
}

void shm_up(struct conn *c, uint64_t ktx)
{
    struct shm_chan *s = c->shm;
    if (!s) return;
    __atomic_store_n(&s->tx->ktx, ktx, __ATOMIC_RELAXED);
    __atomic_fetch_or(&s->tx->pflags, PSHM_UP, __ATOMIC_RELEASE);
    ring_if_wanted(s, &s->tx->want_data);
}

void shm_end(struct conn *c, uint32_t flag)
{
    struct shm_chan *s = c->shm;
    if (!s) return;
    __atomic_fetch_or(&s->tx->pflags, flag, __ATOMIC_RELEASE);
    __atomic_store_n(&s->tx->want_data, 0, __ATOMIC_RELAXED);
    ring_bell(s->bell); /* whether it sleeps on data or on room */
}

int shm_bell_fd(const struct conn *c)
{
    return c->shm ? c->shm->bell : -1;
}

int shm_bell(const struct conn *c)
{
    return c->shm && !c->shm->hup ? c->shm->bell : -1;
}

void shm_bell_drain(struct conn *c)
{
    char b[8]; /* one packet per ring, and a ring only when armed: one is there, as a rule
                * (another keeps the doorbell readable, and the next look takes it) */
    if (c->shm && real.recv(c->shm->bell, b, sizeof b, MSG_DONTWAIT) == 0)
        c->shm->hup = true; /* the peer's end is closed: never readable again */
}

void shm_want(struct conn *c, short events)
{
    struct shm_chan *s = c->shm;
    if (!s) return;
    if (events & POLLIN) __atomic_store_n(&s->rx->want_data, 1, __ATOMIC_RELAXED);
    if (events & POLLOUT) __atomic_store_n(&s->tx->want_room, 1, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_SEQ_CST); /* against the peer's publish-then-look */
}

short shm_arm(struct conn *c, short events)
{
    short r = conn_poll(c) & events;
    if (!c->shm || r) return r;
    shm_want(c, events);
    return conn_poll(c) & events;
}

void shm_positions(const struct conn *c, uint64_t *in, uint64_t *out)
{
    const struct shm_chan *s = c->shm;
    if (!s) {
        *in = *out = 0;
        return;
    }
    /* as of the last shm_sync: where the peer's head was, with the ends seen, and its tail */
    uint64_t flags = (uint64_t)c->rx_fin | (uint64_t)c->peer_closed << 1 | (uint64_t) !!c->err << 2;
    *in = (s->rx_tail + c->rx_bytes) << 3 | flags;
    *out = s->tx_head - (s->ring - c->credit);
}

void shm_disarm(struct conn *c)
{
    struct shm_chan *s = c->shm;
    if (!s) return;
    __atomic_store_n(&s->rx->want_data, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&s->tx->want_room, 0, __ATOMIC_RELAXED);
}

/* What a spin waits for has come: bytes or flags to read, or room to write (UP, there from
 * the start, is no news). */
static bool spin_ready(const struct shm_chan *s, bool data)
{
    uint32_t f = __atomic_load_n(&s->rx->pflags, __ATOMIC_ACQUIRE) & ~PSHM_UP;
    if (data) return __atomic_load_n(&s->rx->head, __ATOMIC_ACQUIRE) != s->rx_tail || f;
    return s->tx_head - __atomic_load_n(&s->tx->tail, __ATOMIC_ACQUIRE) < s->ring || f;
}

unsigned spin_budget(struct spin *sp)
{
    /* a shrunk spin tries the whole of it every SPIN_PROBE waits: when both sides have
     * shrunk theirs, each wait outlasts the other's sleep and wake-up, and neither would
     * ever see an answer within its spin again (65000 B ping-pong on one node: 19 us
     * against 4.4, depending on how a run started; bench/RESULTS.md 8.8) */
    if (sp->ns && sp->ns < psp.shm_spin_ns && ++sp->probes % SPIN_PROBE == 0)
        return psp.shm_spin_ns;
    return sp->ns;
}

void spin_adapt(struct spin *sp, unsigned budget, bool ok)
{
    /* one wait that outlasts the spin (the peer slept, and its wake-up took longer) says
     * little: both sides spinning answers within it, so the spin shrinks only after
     * SPIN_MISSES in a row (a connection that is idle, or whose peer computes) */
    unsigned max = psp.shm_spin_ns;
    if (ok) {
        sp->misses = 0;
        sp->ns = budget * 2 > max ? max : budget * 2;
    } else if (++sp->misses >= SPIN_MISSES) {
        sp->misses = 0;
        sp->ns = budget / 2 < SPIN_MIN_NS ? SPIN_MIN_NS : budget / 2;
        if (sp->ns > max) sp->ns = max;
    }
}

bool shm_spin(struct conn *c, bool data)
{
    struct shm_chan *s = c->shm;
    if (!s || !s->spin.ns) return false;
    int mode = psp_spin_mode(); /* an oversubscribed node: sleep at once (cosched.c) */
    if (mode == SPIN_SLEEP) {
        __atomic_fetch_add(&psp.spin_skipped, 1, __ATOMIC_RELAXED);
        return false;
    }
    unsigned budget = spin_budget(&s->spin);
    s->pins++;
    fdt_ref(c); /* c and s stay while we spin (conn_timers, shm_free) */
    pthread_mutex_unlock(&psp.lock);
    uint64_t t0 = rdp_now_ns(), end = t0 + budget;
    bool ok = false;
    for (unsigned i = 0;; i++) {
        if (spin_ready(s, data)) {
            ok = true;
            break;
        }
        __builtin_ia32_pause();
        if ((i & 63) == 63 && rdp_now_ns() >= end) break;
    }
    pthread_mutex_lock(&psp.lock);
    s->pins--;
    if (s->dead) { /* closed meanwhile */
        if (!s->pins) unmap(s);
        ok = true;
    } else {
        spin_adapt(&s->spin, budget, ok);
        if (ok) shm_sync(c);
    }
    fdt_put_locked(c); /* (the caller holds one too) */
    return ok;
}

void shm_free(struct conn *c)
{
    struct shm_chan *s = c->shm;
    if (!s) return;
    /* out of every epoll set first: a fork's child may hold the doorbell open */
    shm_watch(c, false);
    epoll_conn_unbell(c);
    c->shm = NULL;
    c->rx_bytes = c->credit = 0; /* a call still inside sees the end */
    c->rx_fin = true;
    fdt_close_hidden(s->bell);
    s->bell = -1;
    if (s->pins)
        s->dead = true;
    else
        bury(s);
}

/* --- the same-node path as a connection's transport (xport.h) --- */

/* What the peer did not read of ours, taken back out of the ring: to the kernel socket
 * first (before anything held). */
static int shm_return(struct conn *c)
{
    size_t n = shm_unread(c), at = 0;
    if (n == SIZE_MAX) return -1;
    struct chunk *head = NULL, **tp = &head;
    while (at < n) {
        size_t k = n - at > PLW_MAX_DATA ? PLW_MAX_DATA : n - at;
        struct chunk *ch = chunk_new(k);
        if (!ch) {
            free_chunks(head);
            return -1;
        }
        shm_unread_copy(c, at, ch->data, k);
        *tp = ch;
        tp = &ch->next;
        at += k;
    }
    if (head) {
        *tp = c->hold;
        if (!c->hold) c->hold_tail = tp;
        c->hold = head;
        c->hold_bytes += n;
    }
    return 0;
}

/* The move back on the same-node path (conn.c, "The move to TCP"): SWITCH and SWITCH_ACK
 * are flags after the last byte of each ring; the side that sees the peer's SWITCH takes
 * back from its own ring what the peer did not read and writes it to its kernel socket
 * first. */
static void sw_progress_shm(struct conn *c)
{
    uint32_t peer = shm_peer_switch(c);
    if (!peer) return;                            /* the peer has not seen ours yet */
    if ((peer & PSHM_SWITCH) && !c->sw_ret_end) { /* it reads no more: take ours back */
        if (shm_return(c) < 0) {
            conn_sw_fail(c, ECONNRESET);
            return;
        }
        c->sw_ret_end = true;
    }
    if (c->sw == SW_RESP && !c->sw_returned) { /* our answer, after our last byte */
        shm_end(c, PSHM_SWITCH_ACK);
        c->sw_returned = true;
    }
    shm_sync(c);
    /* the responder reads its ring to the end (the initiator reads it no more) */
    if (c->sw == SW_RESP && c->rx_bytes) return;
    shm_free(c);
    c->rx_bytes = 0;
    c->rx_fin = c->fin_seen = c->peer_closed = false; /* the kernel socket says from now on */
    if (c->hold) drain_hold(c);
    conn_sw_end(c);
}

/* The rings' state into c; a move to TCP goes on (under way, or the peer's SWITCH). */
static void shm_look(struct conn *c)
{
    if (c->st == CS_SWITCH)
        conn_sw_progress(c);
    else
        shm_sync(c);
}

/* (conn_ops.sync) */
static void xshm_sync(struct conn *c)
{
    if (c->shm) shm_look(c);
}

void conn_shm_look(struct conn *c)
{
    shm_look(c);
    if (shm_hup(c)) shm_watch(c, false); /* the peer is gone: the flags or the guard tell */
    conn_changed(c);
}

/* The peer's SWITCH came: we answer (SW_RESP). Under psp.lock. */
void conn_shm_switched(struct conn *c)
{
    conn_sw_begin(c, SW_RESP);
    shm_watch(c, true);
    conn_sw_progress(c);
}

static ssize_t xshm_write(struct conn *c, const struct iovec *iov, int iovcnt, size_t done,
                          size_t n)
{
    return (ssize_t)shm_write(c, iov, iovcnt, done, n);
}

/* What the program wrote while the connection waited for its outcome (or a cork held)
 * goes into the ring first, in one write (it fits: a same-node connection holds at most a
 * ring, and a cork only what the ring's free space takes). */
static void flush_hold_shm(struct conn *c)
{
    if (c->cork_until) return; /* corked: conn_uncork sends it */
    while (c->hold && c->credit) {
        struct iovec v[16];
        int nv = 0;
        size_t want = 0;
        for (struct chunk *ch = c->hold; ch && nv < 16; ch = ch->next) {
            size_t off = ch == c->hold ? ch->off : 0;
            v[nv++] = (struct iovec){ch->data + off, ch->len - off};
            want += ch->len - off;
        }
        size_t n = shm_write(c, v, nv, 0, want);
        if (!n) return;
        c->hold_bytes -= n;
        hold_consume(c, n);
    }
}

/* The end: flags in the ring, after what a cork held. */
static void xshm_send_owed(struct conn *c)
{
    if (c->tx_fin) conn_uncork(c); /* the end goes after what a cork held */
    if (c->st == CS_SHM && c->tx_fin && !c->tx_fin_sent) {
        shm_end(c, c->nfds ? PSHM_FIN : (c->linger0 ? PSHM_RST : PSHM_CLOSE));
        c->tx_fin_sent = true;
    }
}

/* A blocking read or write spins on the ring first (the answer of a request/response peer
 * comes within microseconds), then arms it and sleeps on the doorbell. */
static bool xshm_await(struct conn *c, short events, bool spin)
{
    return (spin && shm_spin(c, events & POLLIN)) || shm_arm(c, events);
}

/* Our UP in the ring's header; the peer's may be there already. */
static void xshm_up(struct conn *c)
{
    psp.shm_conns++;
    shm_up(c, c->k_tx);
    epoll_conn_up(c);
    epoll_conn_to_shm(c);
    shm_sync(c);       /* the peer's UP may be there already */
    conn_krx_check(c); /* (and shm_attach's look saw it before krx was set) */
}

/* The move back, asked by us: SWITCH after our last byte; the peer's program may not look
 * at its ring, its progress thread will (psid pokes it). */
static void xshm_sw_init(struct conn *c)
{
    if (!c->shm) return;
    conn_sw_begin(c, SW_INIT);
    shm_end(c, PSHM_SWITCH);
    psp_poke(shm_peer_pid(c)); /* its program may not look: its progress thread will */
    shm_watch(c, true);
    conn_sw_progress(c);
    conn_changed(c);
}

static void xshm_reset(struct conn *c)
{
    shm_end(c, PSHM_RST);
}

/* The last close: a child holds the socket and goes on there (the move back); else CLOSE
 * (or RST) in the ring, and the peer reads the rest from the mapping it holds. */
static bool xshm_close(struct conn *c)
{
    if (c->forked && c->shm && !c->err) {
        conn_switch(c); /* a child holds the socket: it goes on there */
        return true;
    }
    c->tx_fin = true;
    c->tx_fin_sent = false;
    xshm_send_owed(c);
    shm_free(c);
    conn_destroy(c); /* (or the last call inside, once it is out) */
    return true;
}

const struct conn_ops xshm_ops = {
    .name = "shm",
    .state = CS_SHM,
    .sync = xshm_sync,
    .read = shm_read,
    .write = xshm_write,
    .flush = flush_hold_shm,
    .send_owed = xshm_send_owed,
    .await = xshm_await,
    .up = xshm_up,
    .sw_init = xshm_sw_init,
    .sw_progress = sw_progress_shm,
    .reset = xshm_reset,
    .close = xshm_close,
};
