/*
 * conn.c - one TCP connection of the program, as the library carries it (psp.h).
 *
 * States: an acceptor's connection waits in CS_ACCEPTED until the first process that uses
 * it claims it (so that a child of a prefork server takes what its parent accepted); a
 * connector's, and a claimed one, negotiate in CS_CONNECTING while their bytes travel on the
 * kernel socket ("The TCP phase" below); then CS_RDP or CS_SHM, or CS_TCP when the answer is
 * no (the states and their moves: lifecycle.c). What differs by the path the bytes take is
 * the transport's (xport.h), called through c->ops: the kernel socket's (xkernel.c), RDP's
 * messages (xrdp.c), the same-node rings (shm.c); here is what is common: the receive queue
 * and what is held, credit, corks, the read and write loops, readiness, the moves.
 *
 * Flow control is per connection: the sender may have at most psp.window bytes that the
 * receiving program has not read yet; the receiver returns credit as the program reads. So
 * a reader that stops reading one connection stops only that one, and a receiver holds at
 * most a window per connection.
 *
 * Ending: close sends CLOSE (or RST with SO_LINGER 0) and keeps the kernel socket, the
 * guard, open until RDP has delivered everything before it (at most LINGER_NS); so the
 * peer's guard sees the kernel's FIN only after the CLOSE, and a FIN without a CLOSE means
 * the peer process died, its last bytes perhaps with it: after GUARD_GRACE_NS the
 * connection reads ECONNRESET after what came, never a clean end (and writes fail). The
 * guard's error (a reset; ETIMEDOUT when its keepalive probes went unanswered, alive.c) is
 * the connection's. A peer that stops answering is kept (alive.c).
 */
#include "psp.h"
#include "wire.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#define LINGER_NS      10000000000ull
#define GUARD_GRACE_NS 200000000ull

extern __thread int psp_in;

static void kids_tell(struct conn *c, uint8_t err);
static void to_tcp(struct conn *c);
static void guard_check(struct conn *c);
static void plain_del(struct conn *c);

struct conn *conn_new(int kfd, enum conn_state st)
{
    struct conn *c = fdt_conn_alloc();
    if (!c) return NULL;
    c->kfd = kfd;
    conn_enter(c, st);
    c->rxq_tail = &c->rxq;
    c->hold_tail = &c->hold;
    c->bell_in = c->bell_out = c->bell_hup = -1;
    c->ret_tail = &c->ret;
    for (int i = 0; i < 4; i++) c->sw_kids[i] = -1;
    c->timeo[0] = c->timeo[1] = -2;
    c->nb = -1;
    c->hold_max = psp.window;
    c->shm_slot = -1;
    c->lnext = psp.all;
    psp.all = c;
    __atomic_add_fetch(&psp.nconns, 1, __ATOMIC_RELAXED);
    return c;
}

void conn_attach(struct conn *c, int fd)
{
    struct conn *o = psp_conn_of(fd);
    if (o == c) return;
    if (o) conn_detach(fd); /* a record of a number closed behind our back: stale */
    fdt_attach(fd, c);
    c->nfds++;
}

/* Chunks of 4 KiB and more come from free lists by power-of-two size (4 KiB .. 64 KiB of
 * data), kept under POOL_MAX bytes in all: a stream's 64 KiB messages, malloc'ed and freed
 * one by one, made glibc give the pages back and fault them in again (a quarter of the
 * receiver's time in a profile of iperf3). Smaller chunks are malloc's (its caches serve
 * them). Under psp.lock. */
#define POOL_MIN_SHIFT 12
#define POOL_CLASSES   5 /* 4, 8, 16, 32, 64 KiB */
#define POOL_MAX       (4u << 20)
static struct chunk *pool[POOL_CLASSES];
static size_t pool_bytes;

static int pool_class(size_t n)
{
    if (n < (1u << POOL_MIN_SHIFT) || n > PLW_MAX_DATA) return -1;
    int k = 0;
    while (((size_t)1 << (POOL_MIN_SHIFT + k)) < n) k++;
    return k < POOL_CLASSES ? k : -1;
}

struct chunk *chunk_new(size_t n)
{
    int k = pool_class(n);
    struct chunk *ch;
    if (k >= 0 && pool[k]) {
        ch = pool[k];
        pool[k] = ch->next;
        pool_bytes -= (size_t)1 << (POOL_MIN_SHIFT + k);
    } else {
        ch = malloc(sizeof *ch + (k >= 0 ? (size_t)1 << (POOL_MIN_SHIFT + k) : n));
        if (!ch) return NULL;
    }
    ch->next = NULL;
    ch->len = n;
    ch->off = 0;
    return ch;
}

void chunk_free(struct chunk *ch)
{
    int k = pool_class(ch->len);
    size_t cap = k >= 0 ? (size_t)1 << (POOL_MIN_SHIFT + k) : 0;
    if (k < 0 || pool_bytes + cap > POOL_MAX) {
        free(ch);
        return;
    }
    ch->next = pool[k];
    pool[k] = ch;
    pool_bytes += cap;
}

void free_chunks(struct chunk *ch)
{
    while (ch) {
        struct chunk *n = ch->next;
        chunk_free(ch);
        ch = n;
    }
}

/* The connection ends: out of every list, its descriptors closed, its buffers freed. Its
 * memory goes once nobody holds it (conn_release): a call of the program still inside it
 * (another thread's, which the program's close raced with) is woken and finds it ended. */
void conn_destroy(struct conn *c)
{
    if (__atomic_load_n(&c->doomed, __ATOMIC_ACQUIRE)) return;
    /* (sequentially consistent, as fdt_put's count then flag: of the destroy's look at the
     * count and the last put's look at the flag, one sees the other's) */
    __atomic_store_n(&c->doomed, true, __ATOMIC_SEQ_CST);
    xrdp_unhash(c);
    for (struct conn **p = &psp.all; *p; p = &(*p)->lnext)
        if (*p == c) {
            *p = c->lnext;
            break;
        }
    __atomic_sub_fetch(&psp.nconns, 1, __ATOMIC_RELAXED);
    if (c->guard_fired) psp.guards--;
    if (c->st == CS_PLAIN) plain_del(c);
    if (!c->counted && cs_tcp_phase(c->st))
        psp_count_tcp(psp_short_reason(c)); /* it ended before its negotiation, or its answer */
    if (c->cork_until) psp.corks--;
    alive_end(c);
    psp_guard_del(c);
    epoll_conn_gone(c);
    bells_forget(c);
    shm_free(c);
    fdt_close_hidden(c->shm_slot);
    fdt_close_hidden(c->kfd);
    fdt_close_hidden(c->bell_in);
    fdt_close_hidden(c->bell_out);
    fdt_close_hidden(c->bell_hup);
    free_chunks(c->rxq);
    free_chunks(c->hold);
    free_chunks(c->ret);
    c->rxq = c->hold = c->ret = NULL;
    c->rxq_tail = &c->rxq;
    c->hold_tail = &c->hold;
    c->ret_tail = &c->ret;
    c->rx_bytes = c->hold_bytes = c->ret_bytes = c->credit = 0;
    c->kfd = c->shm_slot = c->bell_in = c->bell_out = c->bell_hup = -1;
    kids_tell(c, EIO);
    wake_conn(c);
    conn_release(c);
}

void conn_release(struct conn *c)
{
    if (!__atomic_load_n(&c->freed, __ATOMIC_RELAXED) &&
        __atomic_load_n(&c->doomed, __ATOMIC_SEQ_CST) &&
        __atomic_load_n(&c->refs, __ATOMIC_SEQ_CST) == 0)
        fdt_conn_free(c);
}

/* TCP_CORK and MSG_MORE, as the kernel does them: what the program writes while corked
 * waits in c->hold until the cork is taken off, a write comes without MSG_MORE (and
 * without TCP_CORK), CORK_FULL bytes wait (a full segment goes out), CORK_NS passed since
 * the first, or the connection ends. On the same-node path bytes are held only while
 * they and the new ones fit in the ring's free space, so that they always go in at once. */
#define CORK_NS   200000000ull /* the kernel's ceiling */
#define CORK_FULL (64u << 10)

void conn_uncork(struct conn *c)
{
    if (!c->cork_until) return;
    c->cork_until = 0;
    psp.corks--;
    if (cs_fast(c->st)) c->ops->flush(c);
}

void conn_send_owed(struct conn *c)
{
    c->ops->send_owed(c);
}

void conn_cork(struct conn *c, bool on)
{
    pthread_mutex_lock(&psp.lock);
    c->cork_on = on;
    if (!on && c->cork_until) {
        conn_uncork(c);
        conn_changed(c);
    }
    pthread_mutex_unlock(&psp.lock);
}

void conn_changed(struct conn *c)
{
    wake_conn(c);
    bells_update(c);
}

/* n bytes of c->hold went out: off the chunks. */
void hold_consume(struct conn *c, size_t n)
{
    while (n) {
        struct chunk *ch = c->hold;
        size_t l = ch->len - ch->off;
        if (l > n) {
            ch->off += n;
            break;
        }
        n -= l;
        c->hold = ch->next;
        chunk_free(ch);
    }
    if (!c->hold) c->hold_tail = &c->hold;
}

/* --- The TCP phase ---
 *
 * A connection starts on its kernel socket, whatever the library decides for it: connect
 * asks psid without waiting, an accepted connection's first use claims it without waiting,
 * and meanwhile the program's reads and writes go to the kernel socket (under psp.lock,
 * never blocking there: a call that must wait sleeps in wait_conns_k on the socket and on
 * the negotiation's answer). So a short connection never waits for psid, and a peer
 * without the library, or a server that speaks first, sees plain TCP from the first byte.
 * Each side counts what its program wrote to the kernel socket (k_tx) and read from it
 * (k_rx).
 *
 * When the answer is yes, each side moves up on its own (conn_up): it sends UP with its
 * k_tx as its first message on the fast path (on the same-node path: the ring's header)
 * and writes there from then on; the kernel socket is never written again. The other side
 * reads its kernel socket until it has read the peer's k_tx bytes, then the fast path
 * (krx). No byte is injected into the TCP stream, none is lost or doubled, and the two
 * sides need not move at the same moment. When the answer is no, nothing changes: CS_TCP.
 *
 * A connection closed while it negotiates (a zombie) closes its kernel socket at once, as
 * without the library; if the answer is yes after all, the peer is told CLOSE (RST with
 * SO_LINGER 0) instead of UP: it reads on to the kernel's end of the stream. */

/* The slice [off, off+n) of the program's iov in out[0..max): the number of entries; *got
 * the bytes they hold (fewer than n when max entries do not reach). */
int iov_slice(const struct iovec *iov, int iovcnt, size_t off, size_t n, struct iovec *out, int max,
              size_t *got)
{
    int vi = 0, nv = 0;
    size_t left = n;
    while (vi < iovcnt && off >= iov[vi].iov_len) off -= iov[vi++].iov_len;
    for (; left && vi < iovcnt && nv < max; vi++, off = 0) {
        size_t l = iov[vi].iov_len - off;
        if (l > left) l = left;
        if (l) out[nv++] = (struct iovec){(uint8_t *)iov[vi].iov_base + off, l};
        left -= l;
    }
    *got = n - left;
    return nv;
}

void conn_krx_check(struct conn *c)
{
    if (!c->krx || !c->peer_up || c->k_rx < c->peer_ktx) return;
    c->krx = false; /* the peer's kernel bytes are read: the fast path from now on */
    epoll_conn_krx_done(c);
    if (c->guard_fired && !c->guard_eof) guard_check(c); /* its FIN came meanwhile */
    conn_changed(c);
}

/* c has its fast path (its RDP peer, or its channel mapped): our bytes go there from now on,
 * after UP; the peer's are read from the kernel socket until its UP's count. */
void conn_up(struct conn *c)
{
    c->counted = true;
    c->krx = true;
    psp.accelerated++;
    c->ops->up(c);
    psp_guard_add(c);
    conn_send_owed(c); /* UP, and a FIN the program made on the kernel socket before */
    if (c->sw_kids[0] >= 0 || (!c->nfds && c->forked) || c->sw_epoll)
        conn_switch(c); /* a child needs it; or its epoll sets could not take it */
    conn_changed(c);
}

/* The negotiation's answer for c (connector or acceptor): the fast path, or TCP. */
static void conn_answer(struct conn *c, int err, const struct neg_peer *p, enum psp_reason why)
{
    if (!err && p && p->shm_ring) {
        c->id = p->conn;
        if (c->zombie) {
            shm_refuse(p->shm_fds, c->connector, c->linger0);
            c->counted = true;
            psp_count_tcp(PSP_R_SHORT);
            conn_destroy(c);
            return;
        }
        if (shm_attach(c, c->connector, p->shm_ring, p->shm_fds) == 0) conn_up(c);
        conn_changed(c);
        return;
    }
    if (!err && p && xrdp_begin(c, p) >= 0) return;
    if (c->zombie) { /* closed on TCP, and on TCP it would have stayed (an error now is
                      * most likely of its closing: its socket was gone) */
        c->counted = true;
        psp_count_tcp(err && why != PSP_R_ERROR ? why : PSP_R_SHORT);
        conn_destroy(c);
        return;
    }
    conn_fallback(c, err ? why : PSP_R_ERROR);
}

void conn_outcome(uint32_t id, int err, const struct neg_peer *p)
{
    struct conn *c;
    for (c = psp.all; c; c = c->lnext)
        if (c->connector && c->id == id && c->st == CS_CONNECTING) break;
    if (!c) { /* gone meanwhile */
        if (p && p->shm_ring) shm_refuse(p->shm_fds, true, false);
        return;
    }
    conn_answer(c, err, p, neg_reason(err));
}

void conn_accepted(uint32_t tag, int err, const struct neg_peer *p)
{
    struct conn *c;
    for (c = psp.all; c; c = c->lnext)
        if (!c->connector && c->tag == tag && c->st == CS_CONNECTING) break;
    if (!c) {
        if (p && p->shm_ring) shm_refuse(p->shm_fds, false, false);
        return;
    }
    /* ENOENT: no request came for it. The connector has no library, or its connection
     * ended before it asked (short): UCX's tcp transport, connecting both ways at once,
     * closes the duplicate a few ms after its handshake, and an acceptor that outlived it
     * was counted "no_library" although both ends run under the library. The peer's end on
     * the kernel socket (or our own close: a zombie's socket is gone) tells the two apart. */
    enum psp_reason why = neg_reason(err);
    if (err == ENOENT)
        why = c->zombie || (kernel_poll(c, POLLRDHUP) & (POLLRDHUP | POLLHUP | POLLERR))
                  ? PSP_R_SHORT
                  : PSP_R_NO_LIBRARY;
    conn_answer(c, err, p, why);
}

/* CS_PLAIN: a queue by age (every one waits PSP_UPGRADE_US from its start, so the order of
 * arrival is the order of their times); the progress thread's timer looks at its head.
 * Doubly linked (pprev: the pointer that points at it), so that a connection closed before
 * its time leaves in O(1): a burst of short connections used to walk the queue each. */
static void plain_del(struct conn *c)
{
    if (!c->pprev) return;
    *c->pprev = c->pnext;
    if (c->pnext)
        c->pnext->pprev = c->pprev;
    else
        psp.plain_tail = c->pprev;
    c->pnext = NULL;
    c->pprev = NULL;
}

/* c at the queue's end, due PSP_UPGRADE_US from now */
static void plain_add(struct conn *c)
{
    c->plain_at = rdp_now_ns() + psp.upgrade_ns;
    c->pnext = NULL;
    if (!psp.plain) psp.plain_tail = &psp.plain;
    c->pprev = psp.plain_tail;
    *psp.plain_tail = c;
    psp.plain_tail = &c->pnext;
    if (psp.plain == c) psp_arm_timer();
}

int conn_plain(struct conn *c)
{
    if (__atomic_load_n(&c->doomed, __ATOMIC_RELAXED)) return 0; /* closed meanwhile */
    conn_enter(c, CS_PLAIN);
    if (psp.sync || !psp.upgrade_ns) {
        fdt_ref(c); /* conn_negotiate's, at once */
        return -1;
    }
    plain_add(c);
    return 0;
}

int conn_plain_due(struct conn **out, int max)
{
    uint64_t now = rdp_now_ns();
    int n = 0;
    while (n < max && psp.plain && psp.plain->plain_at <= now) {
        struct conn *c = psp.plain;
        plain_del(c);
        fdt_ref(c);
        out[n++] = c;
    }
    return n;
}

void conn_plain_to_tcp(struct conn *c)
{
    plain_del(c);
    if (!c->counted) psp_count_tcp(psp_short_reason(c));
    c->counted = true;
    conn_enter(c, CS_TCP);
    epoll_conn_to_tcp(c);
    kids_tell(c, 0);
    conn_changed(c);
}

void conn_negotiate(struct conn *c)
{
    pthread_mutex_lock(&psp.lock);
    int fd = -1, slot = -1;
    bool refuse = false;
    struct sockaddr_storage dst;
    socklen_t dl = sizeof dst;
    bool go = c->st == CS_PLAIN && c->kfd >= 0 && psp.rdp;
    if (go) { /* psid gets a descriptor of its own: the program may close its socket now */
        fd = fdt_hidden_dup(c->kfd);
        go = fd >= 0;
        if (!go) { /* no descriptor for it: TCP (an acceptor's connector told at once) */
            if (!c->counted) psp_count_tcp(PSP_R_LIMIT);
            c->counted = true;
            conn_plain_to_tcp(c);
            refuse = !c->connector;
        }
    }
    if (go && c->connector && getpeername(fd, (struct sockaddr *)&dst, &dl) < 0) {
        go = false; /* its connect is still under way: later */
        if (errno == ENOTCONN && c->nfds) plain_add(c);
    }
    uint32_t id = 0;
    bool connector = c->connector, same = c->same, xns = c->xns;
    if (go) {
        conn_enter(c, CS_CONNECTING);
        if (!connector) c->tag = ++psp.next_conn_id ? psp.next_conn_id : ++psp.next_conn_id;
        id = connector ? c->id : c->tag;
    }
    pthread_mutex_unlock(&psp.lock);
    if (go && !psp.shm_off && (!connector || same) && c->shm_slot < 0) slot = shm_reserve(fd);
    int e = 0;
    enum psp_reason why = PSP_R_ERROR;
    if (go) {
        pthread_mutex_lock(&psp.lock);
        if (c->shm_slot < 0) {
            c->shm_slot = slot;
            slot = -1;
        }
        bool shm = c->shm_slot >= 0;
        /* the bells of its epoll registrations now: one that cannot have them stays on
         * TCP for that limit, instead of moving up and back (counted "switched") */
        bool bells = epoll_conn_reserve(c) == 0;
        pthread_mutex_unlock(&psp.lock);
        if ((connector && same && !shm) || !bells) {
            e = ENFILE; /* no descriptor for the channel's doorbell, or for its bells */
            why = PSP_R_LIMIT;
            if (!connector) neg_decline_limit(fd); /* its connector is told at once */
        } else if (connector) {
            e = neg_connect(fd, (struct sockaddr *)&dst, id, xns ? 2 : same, &why);
        } else {
            e = neg_accept(fd, shm, id);
        }
    }
    fdt_close_hidden(fd);
    fdt_close_hidden(slot);
    if (refuse) neg_refuse(c->kfd); /* (c is held: its kfd stays) */
    pthread_mutex_lock(&psp.lock);
    if (go && e && c->st == CS_CONNECTING && c->connector == connector)
        conn_answer(c, e, NULL, connector || why == PSP_R_LIMIT ? why : neg_reason(e));
    fdt_put_locked(c);
    pthread_mutex_unlock(&psp.lock);
}

#define SETTLE_MS 12000 /* the longest a negotiation takes: not accepted in time, and more */

void conn_settle(struct conn *c)
{
    if (!psp.sync || c->st != CS_CONNECTING) return;
    pthread_mutex_lock(&psp.lock);
    for (int i = 0; c->st == CS_CONNECTING && i < SETTLE_MS / 100; i++) wait_conns(&c, 1, 100);
    pthread_mutex_unlock(&psp.lock);
}

void conn_fallback(struct conn *c, enum psp_reason r)
{
    if (!c->counted) psp_count_tcp(r);
    c->counted = true;
    /* strict: but a local service without the library is no cluster connection */
    if (psp.strict && !(c->same && r == PSP_R_NO_LIBRARY) && r != PSP_R_NOT_CLUSTER) {
        static const char *why[] = {"not a cluster address",
                                    "no library there",
                                    "not accepted in time",
                                    "same node",
                                    "disabled by rule",
                                    "resource limit",
                                    "error"};
        fprintf(stderr, "pspreload: strict: a connection stays on TCP: %s\n", why[r]);
        conn_enter(c, CS_RDP); /* with no peer: every call fails */
        c->peer = 0;
        c->err = ENETUNREACH;
        conn_changed(c);
        return;
    }
    if (drain_hold(c)) {
        to_tcp(c);
    } else {
        conn_enter(c, CS_DRAIN); /* conn_guard_event ends it with to_tcp */
        guard_out(c);
    }
    conn_changed(c);
}

/* --- The move to TCP (fork, exec) ---
 *
 * A connection on RDP moves back to its kernel socket when a process other than the
 * endpoint's owner needs it (a fork's child uses it; fork.c asks the owner), when the owner
 * closes it while a child still holds the socket, or before the owner execs with it. The
 * kernel's stream is unused so far, so each direction can continue there from the point
 * where its RDP stream ends, with no byte lost or doubled:
 *  - the initiator (SW_INIT) sends SWITCH after its last DATA; its program waits;
 *  - the responder (SW_RESP) answers SWITCH_ACK after its last DATA; its program reads what
 *    came before the SWITCH, then the kernel socket; it holds what its program writes;
 *  - the initiator, once the peer's RDP stream ended, returns what its program did not
 *    read (RETURN ..., RETURN_END): the bytes must be readable by whichever process reads
 *    the kernel socket first, as in the kernel's one queue; then it is on TCP;
 *  - the responder writes the returned bytes to its kernel socket first, then what it
 *    held, then the program's writes go to the kernel as they come.
 * Both asking at once: each treats the other's SWITCH as the end of its stream and both
 * return. A SHUT_WR the program made before carries over (shutdown of the kernel socket).
 * A switch not over within SWITCH_NS resets the connection.
 *
 * On the same-node path the ring holds what the program did not read, so nothing is
 * returned by message: SWITCH and SWITCH_ACK are flags after the last byte of each ring
 * (psshm.h); the side that sees the peer's SWITCH takes back from its own ring what the
 * peer did not read (the peer reads the ring no more) and writes it to its kernel socket
 * first. The responder reads its ring to the end, then the kernel socket. While it moves,
 * the progress thread watches the doorbell, so that an idle program does not stall it. */
#define SWITCH_NS 5000000000ull

static void kids_tell(struct conn *c, uint8_t err)
{
    for (int i = 0; i < 4; i++)
        if (c->sw_kids[i] >= 0) {
            (void)!real.send(c->sw_kids[i], &err, 1, MSG_DONTWAIT | MSG_NOSIGNAL);
            c->sw_kids[i] = -1;
        }
}

/* The kernel socket is the connection's from now on. */
static void to_tcp(struct conn *c)
{
    alive_end(c); /* the program's keepalive settings are the socket's again */
    psp_guard_del(c);
    conn_enter(c, CS_TCP);
    epoll_conn_to_tcp(c);
    /* a SHUT_WR made before (while it moved, or waited for its outcome) carries over */
    if (c->tx_fin && c->nfds) real.shutdown(c->kfd, SHUT_WR);
    if (c->sw != SW_NONE) psp.switched++;
    kids_tell(c, 0);
    conn_changed(c);
}

/* A move back failed: the fast path it was on again, reset (the peer told too). */
void conn_sw_fail(struct conn *c, int err)
{
    conn_enter(c, c->ops->state); /* its error is the program's answer from now on */
    c->sw_failed = true;
    if (!c->err) c->err = err;
    c->rx_fin = c->peer_closed = true;
    kids_tell(c, EIO);
    c->ops->reset(c);
    conn_changed(c);
}

/* Into CS_SWITCH as the side that asks (SW_INIT) or answers (SW_RESP). */
void conn_sw_begin(struct conn *c, enum conn_sw role)
{
    psp_guard_del(c);
    conn_enter(c, CS_SWITCH);
    c->sw = role;
    c->sw_at = rdp_now_ns();
    c->sw_ack_owed = true; /* SWITCH or SWITCH_ACK */
    c->ret_tail = &c->ret;
    psp_kick(); /* its timer: SWITCH_NS */
}

void conn_sw_progress(struct conn *c)
{
    if (c->st == CS_SWITCH) c->ops->sw_progress(c);
}

void conn_sw_end(struct conn *c)
{
    if (c->hold) {
        conn_enter(c, CS_DRAIN); /* conn_guard_event ends it with to_tcp */
        guard_out(c);
        conn_changed(c);
        return;
    }
    to_tcp(c);
}

void conn_switch(struct conn *c)
{
    if (cs_fast(c->st) && !c->err) c->ops->sw_init(c);
}

void conn_to_tcp_now(struct conn *c)
{
    pthread_mutex_lock(&psp.lock);
    if (c->st == CS_PLAIN) conn_plain_to_tcp(c); /* not negotiated yet: never */
    for (int i = 0; c->st == CS_CONNECTING && i < 100; i++) wait_conns(&c, 1, 100);
    if (cs_fast(c->st)) conn_switch(c);
    for (int i = 0; c->st == CS_SWITCH && i < 100; i++) wait_conns(&c, 1, 100);
    pthread_mutex_unlock(&psp.lock);
    if (c->st == CS_ORPHAN) conn_claim(c); /* a fork's child: the owner moves it */
}

bool conn_switched(const struct conn *c)
{
    return cs_on_tcp(c->st) || c->sw_failed;
}

void conn_switch_notify(struct conn *c, int kid)
{
    if (conn_switched(c) || (c->st != CS_SWITCH && c->st != CS_CONNECTING)) {
        uint8_t e = cs_on_tcp(c->st) ? 0 : EIO;
        (void)!real.send(kid, &e, 1, MSG_DONTWAIT | MSG_NOSIGNAL);
        return;
    }
    for (int i = 0; i < 4; i++)
        if (c->sw_kids[i] < 0 || c->sw_kids[i] == kid) {
            c->sw_kids[i] = kid;
            return;
        }
    uint8_t e = EAGAIN; /* more children waiting at once than we keep: ask again */
    (void)!real.send(kid, &e, 1, MSG_DONTWAIT | MSG_NOSIGNAL);
}

void conn_kid_gone(int kid)
{
    for (struct conn *c = psp.all; c; c = c->lnext)
        for (int i = 0; i < 4; i++)
            if (c->sw_kids[i] == kid) c->sw_kids[i] = -1;
}

void conn_guard_event(struct conn *c)
{
    if (c->st == CS_DRAIN) {
        if (drain_hold(c))
            to_tcp(c);
        else
            guard_out(c);
        conn_changed(c);
        return;
    }
    if (c->st == CS_SWITCH) { /* the responder writes what it held */
        if (c->hold && !drain_hold(c)) guard_out(c);
        conn_sw_progress(c);
        conn_changed(c);
        return;
    }
    if (!cs_fast(c->st) || c->guard_fired) return;
    c->guard_fired = true; /* once is enough: EPOLLRDHUP stays up */
    psp.guards++;
    c->guard_at = rdp_now_ns();
    psp_guard_del(c);
    psp_arm_timer();    /* its grace */
    if (c->krx) return; /* the peer's kernel bytes come first: looked at once they are read */
    guard_check(c);
}

/* The guard fired (its FIN or reset) and the kernel socket holds nothing of the peer's to
 * read: no byte there is ours to take, so a peek tells FIN from reset. */
static void guard_check(struct conn *c)
{
    char b;
    ssize_t r = real.recv(c->kfd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
    if (r > 0) return; /* bytes on TCP: not ours to read */
    if (r < 0 && (errno == EAGAIN || errno == EINTR)) return;
    c->guard_eof = true;
    c->guard_at = rdp_now_ns();
    if (r < 0) {
        c->guard_rst = true;
        c->guard_err = errno;
    }
    psp_arm_timer(); /* its grace */
}

#define LINGER_STALLED_NS 120000000000ull /* a closed connection waits for a stalled peer */

void conn_timers(void)
{
    uint64_t now = rdp_now_ns();
    alive_check(now);
    xrdp_timers(now);
    for (struct conn *c = psp.all, *n; c; c = n) {
        n = c->lnext;
        if (c->st == CS_SWITCH && now - c->sw_at > SWITCH_NS) conn_sw_fail(c, ECONNRESET);
        if (c->st == CS_SWITCH) continue;
        if (c->cork_until && now >= c->cork_until) {
            conn_uncork(c);
            conn_changed(c);
        }
        if (cs_fast(c->st) && c->guard_fired && c->ops->sync)
            c->ops->sync(c); /* a clean end shows in the rings */
        /* the peer's kernel socket closed while its kernel bytes are still to read here: a
         * peer on the fast path closes it only after its CLOSE (or FIN) went, so without one
         * it died: writes fail (reads take what is left first, then the kernel's end); a
         * peer not yet up closed it before moving, or died: its CLOSE will come, or the
         * doorbell's other end is gone */
        if (cs_fast(c->st) && c->guard_fired && c->krx && !c->rx_fin && !c->peer_closed &&
            now - c->guard_at > GUARD_GRACE_NS && (c->peer_up || shm_hup(c))) {
            c->peer_closed = true;
            conn_changed(c);
        }
        if (cs_fast(c->st) && c->guard_eof && !c->rx_fin && now - c->guard_at > GUARD_GRACE_NS) {
            /* the peer process is gone without its CLOSE: what it wrote last may have died
             * with it (under the kernel's TCP it was in the peer's kernel), so the stream is
             * not known whole: an error, never a clean end (ETIMEDOUT: its kernel is gone) */
            c->rx_fin = c->peer_closed = true;
            if (!c->err)
                c->err = c->guard_rst && c->guard_err == ETIMEDOUT ? ETIMEDOUT : ECONNRESET;
            conn_changed(c);
        }
        if (c->nfds) continue;
        /* closed by the program: linger until RDP delivered it, then close the guard; at
         * most LINGER_NS, or, while the peer is stalled (a stopped process: a dead one
         * shows on the guard), LINGER_STALLED_NS, about as long as Linux keeps a closed
         * socket's bytes for a peer that does not take them (its persist timer with
         * tcp_orphan_retries' 8 probes): the peer takes them when it runs again */
        uint64_t linger = alive_is_stalled(c->peer) ? LINGER_STALLED_NS : LINGER_NS;
        bool done = c->st != CS_RDP || !c->peer || c->err || now - c->closed_at > linger ||
                    xrdp_delivered(c);
        if ((c->st == CS_CONNECTING || c->st == CS_DRAIN) && now - c->closed_at < LINGER_NS)
            done = false; /* bytes the program wrote are still to go out */
        if (done) conn_destroy(c);
    }
}

/* The program closed its last descriptor of c. */
static void conn_close(struct conn *c)
{
    c->closed_at = rdp_now_ns();
    if (cs_fast(c->st) && c->ops->close(c)) return; /* its transport's end */
    if (c->st == CS_SWITCH) return;                 /* conn_timers destroys it once it is over */
    if (c->st == CS_PLAIN) {                        /* never negotiated: as the kernel's close */
        plain_del(c);
        psp_count_tcp(psp_short_reason(c));
        c->counted = true;
        conn_enter(c, CS_TCP);
        conn_destroy(c); /* (or conn_negotiate, when it lets it go) */
        return;
    }
    if (c->st == CS_CONNECTING && c->forked) return; /* a child goes on: moved at the answer */
    if (c->st == CS_CONNECTING) { /* the kernel's close now; the answer gets CLOSE */
        psp_guard_del(c);
        fdt_close_hidden(c->kfd);
        c->kfd = -1;
        c->zombie = true;
        return;
    }
    conn_destroy(c);
}

void conn_detach(int fd)
{
    struct conn *c = psp_conn_of(fd);
    if (!c) return;
    fdt_clear(fd, c);
    epoll_fd_closed(c, fd);
    if (--c->nfds == 0) conn_close(c);
}

/* --- the data path --- */

/* Whether a call that would wait returns EAGAIN instead: MSG_DONTWAIT, or O_NONBLOCK, which
 * the kernel keeps per open file. A fcntl(F_GETFL) per wait was one system call in seven of
 * a ping-pong round trip (bench/RESULTS.md 8.7): the answer is kept (under psp.lock, which
 * conn_flags_changed takes after the change) until the program changes the flags through us,
 * or a fork lets another process change them. */
static bool nonblocking(struct conn *c, int fd, int flags)
{
    if (flags & MSG_DONTWAIT) return true;
    if (c->nb >= 0 && !c->nb_shared) return c->nb;
    int fl = real.fcntl(fd, F_GETFL);
    bool nb = fl >= 0 && (fl & O_NONBLOCK);
    c->nb = fl >= 0 ? nb : -1;
    return nb;
}

void conn_flags_changed(int fd)
{
    if (!psp_conn_of(fd)) return;
    pthread_mutex_lock(&psp.lock);
    struct conn *c = psp_conn_of(fd);
    if (c) c->nb = -1;
    pthread_mutex_unlock(&psp.lock);
}

/* The end of a read or write that stops on error e (psp.lock held, released here): what was
 * moved so far if anything, as a stream call reports it, else -1 with errno e */
static ssize_t io_end(size_t done, int e)
{
    pthread_mutex_unlock(&psp.lock);
    if (done) return (ssize_t)done;
    errno = e;
    return -1;
}

/* SO_RCVTIMEO or SO_SNDTIMEO in ms, -1 for none; looked up once (setsockopt forgets it) */
static int timeout_of(struct conn *c, int opt)
{
    int *t = &c->timeo[opt == SO_SNDTIMEO];
    if (*t != -2) return *t;
    struct timeval tv;
    socklen_t l = sizeof tv;
    if (c->kfd < 0 || real.getsockopt(c->kfd, SOL_SOCKET, opt, &tv, &l) < 0 ||
        (!tv.tv_sec && !tv.tv_usec))
        return *t = -1;
    long ms = tv.tv_sec * 1000 + (tv.tv_usec + 999) / 1000;
    return *t = ms > 0x7fffffff ? 0x7fffffff : (int)ms;
}

static void give_credit(struct conn *c, size_t n)
{
    c->rx_unacked += n;
    if (c->rx_unacked >= psp.window / 4 || (!c->rx_bytes && c->rx_unacked >= 16384)) {
        c->credit_owed = true;
        conn_send_owed(c);
    }
}

/* Copy up to want bytes from the receive queue into iov at offset done. */
/* MSG_PEEK leaves the bytes; MSG_TRUNC takes them without copying (TCP's discard). */
size_t conn_rxq_read(struct conn *c, const struct iovec *iov, int iovcnt, size_t done, size_t want,
                     int flags)
{
    bool peek = flags & MSG_PEEK, trunc = flags & MSG_TRUNC;
    size_t got = 0, vi_off = done;
    int vi = 0;
    while (vi < iovcnt && vi_off >= iov[vi].iov_len) vi_off -= iov[vi++].iov_len;
    struct chunk *ch = c->rxq;
    size_t choff = ch ? ch->off : 0;
    while (got < want && ch && vi < iovcnt) {
        size_t n = ch->len - choff, room = iov[vi].iov_len - vi_off;
        if (n > room) n = room;
        if (n > want - got) n = want - got;
        if (!trunc) memcpy((uint8_t *)iov[vi].iov_base + vi_off, ch->data + choff, n);
        got += n;
        choff += n;
        vi_off += n;
        if (vi_off == iov[vi].iov_len) {
            vi++;
            vi_off = 0;
        }
        if (choff == ch->len) {
            struct chunk *next = ch->next;
            if (!peek) {
                c->rxq = next;
                if (!next) c->rxq_tail = &c->rxq;
                chunk_free(ch);
            }
            ch = next;
            choff = ch ? ch->off : 0;
        } else if (!peek) {
            ch->off = choff;
        }
    }
    if (!peek) {
        c->rx_bytes -= got;
        give_credit(c, got);
    }
    return got;
}

ssize_t conn_read(int fd, struct conn *c, const struct iovec *iov, int iovcnt, int flags)
{
    size_t want = 0;
    for (int i = 0; i < iovcnt; i++) want += iov[i].iov_len;
    size_t done = 0;
    int tmo = -2;
    short kwait = 0; /* a wait is for the kernel socket's bytes too */
    bool kpast = false;
    pthread_mutex_lock(&psp.lock);
    for (;;) {
        if (!c->nfds || __atomic_load_n(&c->doomed, __ATOMIC_RELAXED))
            return io_end(done, EBADF); /* closed under this call, by another thread */
        if (c->ops->sync) c->ops->sync(c);
        enum conn_state st = c->st;
        if (cs_on_tcp(st) || cs_unclaimed(st)) {
            pthread_mutex_unlock(&psp.lock);
            errno = st == CS_ORPHAN ? EIO : EXDEV; /* EXDEV: the caller passes through */
            return done ? (ssize_t)done : -1;
        }
        kwait = 0;
        /* the TCP phase, and the peer's bytes still on the kernel socket: from there first
         * (up to the peer's UP count, once it is known); then, in the same call, what the
         * fast path has, as one receive queue would give it (kpast: a peek saw all of the
         * kernel's part) */
        bool kphase = cs_tcp_phase(c->st);
        if ((kphase || c->krx) && want && !kpast) {
            size_t lim = want - done;
            bool upto = !kphase && c->peer_up;
            if (upto && c->peer_ktx - c->k_rx < lim) lim = (size_t)(c->peer_ktx - c->k_rx);
            if (!lim) { /* read to the peer's count: its fast path from now on */
                conn_krx_check(c);
                continue;
            }
            ssize_t r = kernel_io(c, false, iov, iovcnt, done, lim, flags & (MSG_PEEK | MSG_TRUNC));
            if (r > 0) {
                done += (size_t)r;
                if (flags & MSG_PEEK) { /* the fast path's bytes follow the whole part */
                    if (!upto || (size_t)r < lim || done == want) break;
                    kpast = true;
                    continue;
                }
                conn_krx_check(c);
                if (done == want || (c->krx && !(flags & MSG_WAITALL))) break;
                continue;
            }
            if (r == 0) break; /* the kernel's end of the stream: the peer closed before UP */
            if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
                return io_end(done, errno); /* the kernel's error (a reset) */
            if (done && !(flags & MSG_WAITALL)) break;
            kwait = POLLIN;
            goto wait;
        }
        /* moving to TCP: the initiator's program waits (what came is returned); the
         * responder's reads what came before the switch, then waits for the end */
        bool sw_wait = c->st == CS_SWITCH && (c->sw == SW_INIT || !c->rx_bytes);
        if (sw_wait && done) break;
        if (sw_wait) goto wait;
        if (c->rx_bytes && want) {
            size_t n = c->ops->read(c, iov, iovcnt, done, want - done, flags);
            done += n;
            if (done == want || !(flags & MSG_WAITALL) || (flags & MSG_PEEK)) break;
            continue;
        }
        if (!want) break;       /* the kernel answers 0 at once, whatever the state */
        if (c->fin_seen) break; /* EOF comes before an error that came after it */
        if (c->err && !c->err_reported) {
            c->err_reported = true;
            errno = c->err;
            pthread_mutex_unlock(&psp.lock);
            return done ? (ssize_t)done : -1;
        }
        if (c->rx_fin || c->rd_shut) break;
        if (done && !(flags & MSG_WAITALL)) break;
    wait:
        if (nonblocking(c, fd, flags)) return io_end(done, EAGAIN);
        if (cs_fast(c->st) && c->ops->await && c->ops->await(c, POLLIN, !kwait))
            continue; /* (UP, if kwait) */
        if (tmo == -2) tmo = timeout_of(c, SO_RCVTIMEO);
        if (wait_conns_k(&c, 1, tmo, kwait ? c->kfd : -1, kwait) < 0) return io_end(done, errno);
    }
    if (done && !(flags & MSG_PEEK)) {
        c->rx_read += done;
        if (c->st == CS_SWITCH && !c->rx_bytes) conn_sw_progress(c); /* read up to the switch */
        bells_update(c); /* no longer readable, perhaps */
    }
    pthread_mutex_unlock(&psp.lock);
    return (ssize_t)done;
}

static void pipe_signal(int flags)
{
    if (!(flags & MSG_NOSIGNAL)) pthread_kill(pthread_self(), SIGPIPE);
}

ssize_t conn_write(int fd, struct conn *c, const struct iovec *iov, int iovcnt, int flags)
{
    size_t want = 0;
    for (int i = 0; i < iovcnt; i++) want += iov[i].iov_len;
    size_t done = 0;
    int tmo = -2;
    pthread_mutex_lock(&psp.lock);
    for (;;) {
        if (!c->nfds || __atomic_load_n(&c->doomed, __ATOMIC_RELAXED))
            return io_end(done, EBADF); /* closed under this call, by another thread */
        if (c->ops->sync) c->ops->sync(c);
        enum conn_state st = c->st;
        if (st == CS_TCP || cs_unclaimed(st)) {
            pthread_mutex_unlock(&psp.lock);
            errno = st == CS_ORPHAN ? EIO : EXDEV;
            return done ? (ssize_t)done : -1;
        }
        if (cs_tcp_phase(c->st)) { /* the TCP phase: the kernel's, without blocking there */
            if (done == want) break;
            ssize_t r = kernel_io(c, true, iov, iovcnt, done, want - done,
                                  flags & (MSG_NOSIGNAL | MSG_MORE));
            if (r > 0) {
                done += (size_t)r;
                continue;
            }
            /* the kernel's error (EPIPE: it raised SIGPIPE as it would) */
            if (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
                return io_end(done, errno);
            if (nonblocking(c, fd, flags)) return io_end(done, EAGAIN);
            if (tmo == -2) tmo = timeout_of(c, SO_SNDTIMEO);
            if (wait_conns_k(&c, 1, tmo, c->kfd, POLLOUT) < 0) return io_end(done, errno);
            continue;
        }
        if (c->kmore && !(flags & MSG_MORE)) kernel_push(c);
        bool on = cs_fast(c->st); /* connected, not negotiating */
        if (done && on && (c->err || c->tx_fin || c->peer_closed)) {
            /* some of it went before the end showed: that much, as the kernel returns a
             * short count; the end is the next call's (its write after the close, or its
             * error) */
            bells_update(c);
            pthread_mutex_unlock(&psp.lock);
            return (ssize_t)done;
        }
        int e = 0;
        if (c->err && on)
            e = c->err_reported || c->err == ECONNRESET ? (c->err_reported ? EPIPE : c->err)
                                                        : c->err;
        else if (c->tx_fin)
            e = EPIPE;
        else if (c->peer_closed && on) {
            /* The kernel takes the first write after the peer closed; the peer's kernel
             * answers it with a reset, which leaves EPIPE pending (a reset in CLOSE_WAIT)
             * and the socket shut both ways. Our peer reads no more: the bytes go nowhere. */
            c->err = EPIPE;
            c->err_reported = false;
            c->tx_fin = c->tx_fin_sent = true;
            c->tx_bytes += want;
            conn_changed(c);
            pthread_mutex_unlock(&psp.lock);
            return (ssize_t)want;
        }
        if (e) {
            if (c->err) c->err_reported = true;
            pthread_mutex_unlock(&psp.lock);
            if (done) return (ssize_t)done;
            if (e == EPIPE) pipe_signal(flags);
            errno = e;
            return -1;
        }
        /* TCP_CORK or MSG_MORE: held (see CORK_NS), while what is held fits */
        bool fits = c->st != CS_SHM || c->hold_bytes + (want - done) <= c->credit;
        bool corking =
            (c->cork_on || (flags & MSG_MORE)) && on && c->hold_bytes < CORK_FULL && fits;
        /* the cork comes off: past a full segment, or where the ring could not take it all,
         * at once; else these bytes join what it held, and all go at once (one message, or
         * one write into the ring), as one segment would */
        if (!corking && c->cork_until && on && (c->hold_bytes >= CORK_FULL || !fits))
            conn_uncork(c);
        if (done == want) {
            if (!corking && c->cork_until && on) conn_uncork(c);
            bells_update(c); /* no longer writable, perhaps */
            break;
        }
        size_t room;
        if ((c->st == CS_SWITCH && c->sw == SW_INIT) || c->up_owed)
            room = 0; /* until it is over; until our UP went */
        else if (c->st == CS_DRAIN || c->st == CS_SWITCH || c->hold || corking)
            room = c->st == CS_DRAIN ? 0 : c->hold_max - c->hold_bytes;
        else
            room = c->credit;
        if (room && on && !c->hold && !corking) { /* straight to the transport */
            ssize_t r =
                c->ops->write(c, iov, iovcnt, done, want - done < room ? want - done : room);
            if (r >= 0) {
                done += (size_t)r;
                continue;
            }
            if (errno != EAGAIN) return io_end(done, errno);
        } else if (room) { /* held: a cork's, or for the kernel socket (a move back) */
            size_t n = want - done;
            if (n > room) n = room;
            if (n > PLW_MAX_DATA) n = PLW_MAX_DATA;
            /* the slice [done, done+n) of the program's iov (found from done each time: the
             * kernel's part of this call, before a move up, counts too) */
            struct iovec v[64];
            int nv = iov_slice(iov, iovcnt, done, n, v, 64, &n);
            struct chunk *ch = chunk_new(n);
            if (ch) {
                ch->next = NULL;
                ch->len = n;
                ch->off = 0;
                size_t at = 0;
                for (int k = 0; k < nv; k++) {
                    memcpy(ch->data + at, v[k].iov_base, v[k].iov_len);
                    at += v[k].iov_len;
                }
                *c->hold_tail = ch;
                c->hold_tail = &ch->next;
                c->hold_bytes += n;
                if (c->st == CS_SWITCH) conn_sw_progress(c); /* to the socket, when it may */
                if (corking && !c->cork_until) {             /* the first byte a cork holds */
                    c->cork_until = rdp_now_ns() + CORK_NS;
                    psp.corks++;
                    psp_kick(); /* the progress thread's timer: its deadline */
                }
                done += n;
                c->tx_bytes += n;
                continue;
            }
            if (errno != EAGAIN) return io_end(done, errno);
        }
        /* no room: credit, RDP's queue, the ring, or the hold */
        if (nonblocking(c, fd, flags)) return io_end(done, EAGAIN);
        if (cs_fast(c->st) && c->ops->await && c->ops->await(c, POLLOUT, true)) continue;
        if (tmo == -2) tmo = timeout_of(c, SO_SNDTIMEO);
        if (wait_conns(&c, 1, tmo) < 0) return io_end(done, errno);
    }
    pthread_mutex_unlock(&psp.lock);
    return (ssize_t)done;
}

int conn_shutdown(struct conn *c, int how)
{
    pthread_mutex_lock(&psp.lock);
    /* the kernel's socket is CLOSED once both FINs went (or a reset came): ENOTCONN, after
     * the shutdown flags are set all the same */
    if (cs_tcp_phase(c->st)) { /* the kernel's; a FIN follows UP */
        int r = real.shutdown(c->kfd, how);
        int e = errno;
        if (r == 0 && how != SHUT_RD) c->tx_fin = true;
        if (r == 0 && how != SHUT_WR) c->rd_shut = true;
        pthread_mutex_unlock(&psp.lock);
        errno = e;
        return r;
    }
    if (c->ops->sync) c->ops->sync(c);
    bool closed = cs_fast(c->st) && ((c->rx_fin && c->tx_fin) || c->err);
    if (how == SHUT_RD || how == SHUT_RDWR) c->rd_shut = true;
    if ((how == SHUT_WR || how == SHUT_RDWR) && !c->tx_fin) {
        c->tx_fin = true;
        conn_send_owed(c);
    }
    conn_changed(c);
    pthread_mutex_unlock(&psp.lock);
    if (closed) {
        errno = ENOTCONN;
        return -1;
    }
    return 0;
}

short conn_poll(struct conn *c)
{
    short r = 0;
    enum conn_state st = c->st;
    if (cs_tcp_phase(st) || st == CS_ACCEPTED)
        return kernel_poll(c, POLLIN | POLLOUT | POLLRDHUP | POLLPRI);
    if (c->ops->sync) c->ops->sync(c);
    if (c->st == CS_DRAIN) return 0;
    /* the peer's bytes on the kernel socket come first: its data or its end there */
    short k = c->krx ? kernel_poll(c, POLLIN | POLLRDHUP) : 0;
    bool kin = k & (POLLIN | POLLHUP | POLLERR);
    if (c->st == CS_SWITCH) /* the initiator's program waits; the responder's reads first */
        return c->sw == SW_INIT ? 0
                                : (short)((c->rx_bytes || kin ? POLLIN : 0) |
                                          (c->hold_bytes < psp.window ? POLLOUT : 0));
    bool rx_end = c->rx_fin && !c->krx; /* the fast path's end, once it is the reader's */
    if (c->krx ? kin || c->rd_shut : c->rx_bytes || c->rx_fin || c->rd_shut) r |= POLLIN;
    if (c->err) r |= POLLIN;
    if (rx_end || c->rd_shut || (c->krx && !c->peer_up && (k & POLLRDHUP))) r |= POLLRDHUP;
    if (c->err && !c->err_reported) r |= POLLERR; /* until a call returned it */
    if ((rx_end && c->tx_fin) || c->err) r |= POLLHUP;
    if ((c->credit && !c->tx_fin && !c->rdp_full && !c->up_owed) || c->err || c->peer_closed)
        r |= POLLOUT;
    if (c->peer_closed && c->tx_fin) r |= POLLHUP;
    return r;
}

int conn_claim(struct conn *c)
{
    if (c->st == CS_ORPHAN) { /* a fork's child: the owner moves it to TCP (fork.c) */
        int r = fork_ask_switch(c);
        pthread_mutex_lock(&psp.lock);
        if (r == 0 && c->st == CS_ORPHAN) {
            conn_enter(c, CS_TCP); /* its epoll registrations were the parent's: not ours */
            c->regs = NULL;
        }
        conn_changed(c);
        pthread_mutex_unlock(&psp.lock);
        return 0;
    }
    /* this process's from now on (a prefork server's child); on the kernel socket, its
     * claim sent later (CS_PLAIN) or now, and not waited for: it goes on over the kernel
     * socket until the answer (conn_accepted), unless PSP_SYNC */
    if (psp_endpoint() < 0) {
        pthread_mutex_lock(&psp.lock);
        if (c->st == CS_ACCEPTED) conn_fallback(c, PSP_R_ERROR);
        pthread_mutex_unlock(&psp.lock);
        return 0;
    }
    pthread_mutex_lock(&psp.lock);
    int now = 0;
    if (c->st == CS_ACCEPTED) {
        c->connector = false;
        now = conn_plain(c);
    }
    pthread_mutex_unlock(&psp.lock);
    if (now) conn_negotiate(c);
    conn_settle(c);
    return 0;
}

/* In a fork's child: our endpoint stays the parent's. */
void conn_fork_child(void)
{
    xrdp_fork_child();
    for (struct conn *c = psp.all; c; c = c->lnext) {
        c->waiters = NULL;
        c->forked = false;
        c->nb_shared = true; /* the parent's open file: it may change its flags */
        for (int i = 0; i < 4; i++) c->sw_kids[i] = -1;
        enum conn_state st = c->st;
        if (cs_endpoint_bound(st) || st == CS_DRAIN) conn_enter(c, CS_ORPHAN);
    }
}
