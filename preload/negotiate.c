/*
 * negotiate.c - the library's requests to its node's psid (psproto.h, "Preload
 * negotiation"): the node table, the endpoint, listening sockets, and per connection the
 * decision before any byte. psp.psi_lock serialises the connection to psid; psp.lock is
 * taken inside it, never around it (a request may wait for another node's psid).
 * Outcomes arrive as events, read by the progress thread (neg_events) or queued by libpsi
 * while a request waited for its reply, and handed to conn.c.
 */
#include "psp.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

__thread int psp_in; /* inside the library: our own close() calls pass */

/* psid is gone (its connection failed): negotiations waiting for it go TCP, and the
 * endpoint and listeners are registered again once a psid answers (relink.c). Under
 * psi_lock. */
static void psi_drop(void)
{
    if (!psp.psi_open) return;
    pthread_mutex_lock(&psp.lock);
    for (struct conn *c = psp.all; c; c = c->lnext)
        if (cs_tcp_phase(c->st)) {
            if (c->st == CS_PLAIN)
                conn_plain_to_tcp(c);
            else
                conn_fallback(c, PSP_R_ERROR);
        }
    pthread_mutex_unlock(&psp.lock);
    psp_in++; /* closing it leaves every epoll set it was in */
    psi_close(&psp.psi);
    psp_in--;
    psp.psi_open = false;
    relink_lost();
    psp_kick(); /* the progress thread's timer: the first try */
}

/* errno values of a call that mean the connection to psid is gone */
static bool psi_gone(int e)
{
    return e == EPIPE || e == ECONNRESET || e == ENOTCONN;
}

/* The psid connection, opened again in a forked child, or after psid went away: then the
 * endpoint and listeners are registered again first (relink.c). Under psi_lock. */
static int psi_ensure(void)
{
    if (psp.psi_open) return 0;
    struct psi fresh;
    if (psi_open(&fresh, NULL) < 0) return -1;
    int h = psp_hide(fresh.fd);
    if (h < 0) return -1;
    fresh.fd = h;
    psp.psi = fresh;
    psp.psi.evq_tail = &psp.psi.evq; /* the queue's tail pointed into fresh */
    psp.psi_open = true;
    if (!psp.rdp) return 0;
    if (relink_open() < 0) {
        psi_drop();
        errno = ECONNRESET;
        return -1;
    }
    struct epoll_event ev = {.events = EPOLLIN, .data.u64 = PSP_TAG_PSI};
    if (psp.epfd >= 0) real.epoll_ctl(psp.epfd, EPOLL_CTL_ADD, psi_fd(&psp.psi), &ev);
    return 0;
}

void neg_reconnect(void)
{
    pthread_mutex_lock(&psp.psi_lock);
    relink_tried(psi_ensure() == 0);
    psi_unlock();
}

static int to_sockaddr(const char *addr, uint16_t port, struct sockaddr_storage *ss, socklen_t *len)
{
    memset(ss, 0, sizeof *ss);
    struct sockaddr_in *in = (void *)ss;
    struct sockaddr_in6 *in6 = (void *)ss;
    if (inet_pton(AF_INET, addr, &in->sin_addr) == 1) {
        in->sin_family = AF_INET;
        in->sin_port = htons(port);
        *len = sizeof *in;
        return 0;
    }
    if (inet_pton(AF_INET6, addr, &in6->sin6_addr) == 1) {
        in6->sin6_family = AF_INET6;
        in6->sin6_port = htons(port);
        *len = sizeof *in6;
        return 0;
    }
    return -1;
}

int neg_nodes(void)
{
    struct psmsg_buf req = {0};
    struct psmsg rep;
    psmsg_begin(&req, PSM_NODES, 0);
    int r = psi_call(&psp.psi, &req, &rep), e = errno;
    psmsg_buf_free(&req);
    if (r < 0) errno = e; /* (EUSERS: psid's limit of clients) */
    if (r < 0 || psi_nodetab_parse(&rep, &psp.nodes) < 0) return -1;
    uint32_t mtu = 0; /* the cluster's link MTU: RDP's datagrams as psid's */
    if (psmsg_get_u32(&rep.body, PSF_MTU, &mtu) == 0 && mtu >= RDP_MTU_MIN && mtu <= RDP_MTU_MAX)
        psp.mtu = mtu;
    const struct psi_node *me = psi_nodetab_id(&psp.nodes, psp.nodes.self);
    if (!me || to_sockaddr(me->addr, 0, &psp.node_addr, &psp.node_addr_len) < 0) return -1;
    psp.node = me->id;
    return 0;
}

/* The node whose address sa is (a v4-mapped IPv6 address counts as its IPv4 address). */
int neg_node_of(const struct sockaddr *sa, uint32_t *node)
{
    char a[INET6_ADDRSTRLEN];
    if (sa->sa_family == AF_INET) {
        inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, a, sizeof a);
    } else {
        const struct in6_addr *x = &((const struct sockaddr_in6 *)sa)->sin6_addr;
        if (IN6_IS_ADDR_V4MAPPED(x))
            inet_ntop(AF_INET, x->s6_addr + 12, a, sizeof a);
        else
            inet_ntop(AF_INET6, x, a, sizeof a);
    }
    for (size_t i = 0; i < psp.nodes.n; i++)
        if (!strcmp(psp.nodes.v[i].addr, a)) {
            *node = psp.nodes.v[i].id;
            return 0;
        }
    return -1;
}

/* The addresses of this machine's interfaces, looked up once. */
static struct sockaddr_storage *local_addrs;
static unsigned nlocal_addrs;
static pthread_once_t local_once = PTHREAD_ONCE_INIT;

static void local_lookup(void)
{
    struct ifaddrs *ifa;
    if (getifaddrs(&ifa) < 0) return;
    unsigned n = 0;
    for (struct ifaddrs *i = ifa; i; i = i->ifa_next) n++;
    local_addrs = calloc(n ? n : 1, sizeof *local_addrs);
    for (struct ifaddrs *i = ifa; i && local_addrs; i = i->ifa_next)
        if (i->ifa_addr &&
            (i->ifa_addr->sa_family == AF_INET || i->ifa_addr->sa_family == AF_INET6))
            memcpy(&local_addrs[nlocal_addrs++], i->ifa_addr,
                   i->ifa_addr->sa_family == AF_INET ? sizeof(struct sockaddr_in)
                                                     : sizeof(struct sockaddr_in6));
    freeifaddrs(ifa);
}

bool neg_local_addr(const struct sockaddr *sa)
{
    struct in_addr v4 = {0};
    const struct in6_addr *x = NULL;
    if (sa->sa_family == AF_INET) {
        v4 = ((const struct sockaddr_in *)sa)->sin_addr;
    } else {
        x = &((const struct sockaddr_in6 *)sa)->sin6_addr;
        if (IN6_IS_ADDR_LOOPBACK(x)) return true;
        if (IN6_IS_ADDR_V4MAPPED(x)) {
            memcpy(&v4, x->s6_addr + 12, 4);
            x = NULL;
        }
    }
    if (!x && (ntohl(v4.s_addr) >> 24) == 127) return true;
    pthread_once(&local_once, local_lookup);
    for (unsigned i = 0; i < nlocal_addrs; i++) {
        const struct sockaddr_storage *l = &local_addrs[i];
        if (!x && l->ss_family == AF_INET &&
            ((const struct sockaddr_in *)l)->sin_addr.s_addr == v4.s_addr)
            return true;
        if (x && l->ss_family == AF_INET6 &&
            !memcmp(&((const struct sockaddr_in6 *)l)->sin6_addr, x, sizeof *x))
            return true;
    }
    return false;
}

/* A request and its reply's errno (0: success); *rep valid until the next request. */
static int call(struct psmsg_buf *req, int fd, struct psmsg *rep)
{
    if (psi_ensure() < 0) {
        psmsg_buf_free(req);
        return errno ? errno : EIO;
    }
    int r = psi_call_fd(&psp.psi, req, fd, rep);
    int e = r < 0 ? errno : 0;
    psmsg_buf_free(req);
    if (r < 0 && psi_gone(e)) psi_drop();
    if (r < 0) return e ? e : EIO;
    uint32_t err = EPROTO;
    psmsg_get_u32(&rep->body, PSF_ERRNO, &err);
    return (int)err;
}

int neg_open(int udp_fd, bool shm_only, uint32_t *node, uint16_t *ep)
{
    struct psmsg_buf req = {0};
    struct psmsg rep;
    psmsg_begin(&req, PSM_PL_OPEN, 0); /* the socket itself: psid reads its port */
    if (shm_only) psmsg_put_u32(&req, PSF_SAME_NODE, 1);
    int e = call(&req, udp_fd, &rep);
    uint32_t n, id;
    if (!e && (psmsg_get_u32(&rep.body, PSF_NODE_ID, &n) < 0 ||
               psmsg_get_u32(&rep.body, PSF_ENDPOINT, &id) < 0 || !id || id > 0xfffe))
        e = EPROTO;
    if (!e) {
        *node = n;
        *ep = (uint16_t)id;
    }
    return e;
}

/* libpsi's typed call for a request that carries a socket and nothing else (psi.h); its
 * reply's errno; *away: psid could not be reached (none, or it went). Under psi_lock. */
static int fd_call(int (*typed)(struct psi *, int), int fd, bool *away)
{
    *away = psi_ensure() < 0;
    int e = *away ? (errno ? errno : EIO) : typed(&psp.psi, fd) < 0 ? errno : 0;
    if (!*away && psi_gone(e)) {
        psi_drop();
        *away = true;
    }
    return e;
}

static int fd_request(int (*typed)(struct psi *, int), int fd)
{
    bool away;
    pthread_mutex_lock(&psp.psi_lock);
    int e = fd_call(typed, fd, &away);
    psi_unlock();
    return e;
}

/* A listener registered, or to be once a psid answers again (its registration is kept for
 * that: relink.c). */
int neg_listen(int fd)
{
    bool away;
    pthread_mutex_lock(&psp.psi_lock);
    int e = fd_call(psi_pl_listen, fd, &away);
    if (!e || (away && psp.rdp)) relink_listen(fd);
    psi_unlock();
    return away && psp.rdp ? 0 : e;
}

int neg_decline(int fd)
{
    return fd_request(psi_pl_decline, fd);
}

int neg_decline_limit(int fd)
{
    struct psmsg_buf req = {0};
    psmsg_begin(&req, PSM_PL_DECLINE, 0);
    psmsg_put_u32(&req, PSF_ERRNO, ENOBUFS); /* why: its connector counts a limit */
    pthread_mutex_lock(&psp.psi_lock);
    int e = psi_ensure() < 0 || !psi_send_fd(&psp.psi, &req, fd) ? (errno ? errno : EIO) : 0;
    psi_unlock();
    psmsg_buf_free(&req);
    return e;
}

/* An accepted connection we cannot take (no descriptor left for its record or its claim):
 * the connector is told at once that the acceptor is at a limit, instead of after
 * PSI_PL_ACCEPT_MS (psid finds the connection by the socket passed, on this node or
 * another). errno is kept. */
void neg_refuse(int fd)
{
    int e = errno;
    neg_decline_limit(fd);
    errno = e;
}

static enum psp_reason reason_of(int e)
{
    switch (e) {
    case EHOSTUNREACH:
        return PSP_R_NOT_CLUSTER;
    case ECONNREFUSED:
        return PSP_R_NO_LIBRARY;
    case EXDEV:
        return PSP_R_SAME_NODE;
    case ETIMEDOUT:
    case ENOENT: /* the acceptor took it on TCP before the request came */
        return PSP_R_NOT_ACCEPTED;
    case ENOBUFS:
    case EMFILE:
    case ENFILE:
    case EUSERS:
    case EAGAIN:
        return PSP_R_LIMIT;
    default:
        return PSP_R_ERROR;
    }
}

enum psp_reason neg_reason(int e)
{
    return reason_of(e);
}

int neg_connect(int fd, const struct sockaddr *dst, uint32_t conn_id, int same,
                enum psp_reason *why)
{
    char a[INET6_ADDRSTRLEN];
    uint16_t port;
    if (dst->sa_family == AF_INET) {
        const struct sockaddr_in *in = (const void *)dst;
        inet_ntop(AF_INET, &in->sin_addr, a, sizeof a);
        port = ntohs(in->sin_port);
    } else {
        const struct sockaddr_in6 *in6 = (const void *)dst;
        if (IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr))
            inet_ntop(AF_INET, in6->sin6_addr.s6_addr + 12, a, sizeof a);
        else
            inet_ntop(AF_INET6, &in6->sin6_addr, a, sizeof a);
        port = ntohs(in6->sin6_port);
    }
    struct psmsg_buf req = {0};
    psmsg_begin(&req, PSM_PL_CONNECT, 0);
    psmsg_put_str(&req, PSF_ADDR, a);
    psmsg_put_u32(&req, PSF_PORT, port);
    psmsg_put_u32(&req, PSF_CONN, conn_id);
    if (same) { /* 2: to an address of another namespace, maybe (psid decides) */
        psmsg_put_u32(&req, PSF_SAME_NODE, (uint32_t)same);
        psmsg_put_u32(&req, PSF_SHM_RING, psp.shm_ring);
    }
    if (relink_stale() && !same) { /* psid knows our endpoint by another name now */
        psmsg_buf_free(&req);
        *why = PSP_R_ERROR;
        return EADDRNOTAVAIL;
    }
    if (!same && psp.strict) { /* a refusal fails the connect itself: wait for the answer */
        struct psmsg rep;
        pthread_mutex_lock(&psp.psi_lock);
        int e = call(&req, fd, &rep);
        psi_unlock();
        if (e) *why = reason_of(e);
        return e;
    }
    /* psid answers with the outcome (a refusal too): no wait here */
    pthread_mutex_lock(&psp.psi_lock);
    int e = psi_ensure() < 0 || !psi_send_fd(&psp.psi, &req, fd) ? (errno ? errno : EIO) : 0;
    if (psi_gone(e)) psi_drop();
    psi_unlock();
    psmsg_buf_free(&req);
    if (e) *why = PSP_R_ERROR;
    return e;
}

/* A same-node answer: the ring size and the channel's three descriptors, which came with
 * the message (taken now: libpsi closes what is not taken before the next message). */
static int get_shm(const struct psmsg *m, struct neg_peer *p)
{
    int n = 0;
    while (n < 2 && (p->shm_fds[n] = psi_take_fd(&psp.psi)) >= 0) n++;
    for (int x; (x = psi_take_fd(&psp.psi)) >= 0;) real.close(x); /* more than ours */
    psmsg_get_u32(&m->body, PSF_CONN, &p->conn);
    if (n == 2) return 0;
    while (n > 0) real.close(p->shm_fds[--n]);
    p->shm_ring = 0;
    return -1;
}

static int get_peer(const struct psmsg *m, struct neg_peer *p)
{
    struct psmsg_field k;
    memset(p, 0, sizeof *p);
    if (psmsg_get_u32(&m->body, PSF_SHM_RING, &p->shm_ring) == 0 && p->shm_ring)
        return get_shm(m, p);
    if (psmsg_get_u32(&m->body, PSF_NODE_ID, &p->node) < 0 ||
        psmsg_get_u32(&m->body, PSF_ENDPOINT, &p->ep) < 0 || !p->ep || p->ep > 0xffff ||
        psmsg_get_u32(&m->body, PSF_UDP_PORT, &p->udp_port) < 0 || !p->udp_port ||
        p->udp_port > 0xffff || psmsg_get_str(&m->body, PSF_ADDR, p->addr, sizeof p->addr) < 0 ||
        !psmsg_find(&m->body, PSF_KEY, &k) || k.len != 32)
        return -1;
    memcpy(p->key, k.val, 32);
    psmsg_get_u32(&m->body, PSF_CONN, &p->conn);
    return 0;
}

int neg_accept(int fd, bool shm, uint32_t tag)
{
    if (relink_stale()) return EADDRNOTAVAIL; /* psid knows our endpoint by another name */
    struct psmsg_buf req = {0};
    psmsg_begin(&req, PSM_PL_ACCEPT, 0);
    psmsg_put_u32(&req, PSF_SHM_RING, shm);
    psmsg_put_u32(&req, PSF_TAG, tag);
    pthread_mutex_lock(&psp.psi_lock);
    int e = psi_ensure() < 0 || !psi_send_fd(&psp.psi, &req, fd) ? (errno ? errno : EIO) : 0;
    if (psi_gone(e)) psi_drop();
    psi_unlock();
    psmsg_buf_free(&req);
    return e;
}

/* "ADDR:PORT" of a socket address ([ADDR]:PORT for IPv6) */
static void sa_text(const struct sockaddr_storage *ss, char *out, size_t n)
{
    char a[INET6_ADDRSTRLEN] = "?";
    if (ss->ss_family == AF_INET) {
        const struct sockaddr_in *in = (const void *)ss;
        inet_ntop(AF_INET, &in->sin_addr, a, sizeof a);
        snprintf(out, n, "%s:%u", a, ntohs(in->sin_port));
    } else {
        const struct sockaddr_in6 *in6 = (const void *)ss;
        inet_ntop(AF_INET6, &in6->sin6_addr, a, sizeof a);
        snprintf(out, n, "[%s]:%u", a, ntohs(in6->sin6_port));
    }
}

/* psstat sockets asked (PSM_PL_QUERY): our accelerated connections. Under psi_lock. */
static void report(uint32_t num)
{
    struct psmsg_buf b = {0};
    psmsg_begin(&b, PSM_PL_REPORT, 0);
    psmsg_put_u32(&b, PSF_REQ, num);
    pthread_mutex_lock(&psp.lock);
    for (struct conn *c = psp.all; c; c = c->lnext) {
        if (!((c->st == CS_RDP && c->peer) || (c->st == CS_SHM && c->shm)) || !c->nfds) continue;
        struct sockaddr_storage l, r;
        socklen_t ll = sizeof l, rl = sizeof r;
        char ls[80], rs[80];
        if (getsockname(c->kfd, (struct sockaddr *)&l, &ll) < 0 ||
            getpeername(c->kfd, (struct sockaddr *)&r, &rl) < 0)
            continue;
        sa_text(&l, ls, sizeof ls);
        sa_text(&r, rs, sizeof rs);
        psmsg_record_begin(&b, PSF_SOCKET);
        psmsg_put_str(&b, PSF_LOCAL, ls);
        psmsg_put_str(&b, PSF_REMOTE, rs);
        psmsg_put_str(&b, PSF_PATH, c->ops->name);
        psmsg_put_u64(&b, PSF_TX_BYTES, c->tx_bytes);
        psmsg_put_u64(&b, PSF_RX_BYTES, c->rx_total);
        psmsg_record_end(&b);
    }
    pthread_mutex_unlock(&psp.lock);
    psi_send(&psp.psi, &b); /* no reply comes; one that did would be dropped */
    psmsg_buf_free(&b);
}

/* While another thread holds the psid connection (a request waiting for its reply), the
 * progress thread must not spin on its readable socket: it stops listening (muted), and
 * the holder, at psi_unlock, listens again and takes what came. The order (mute, then try
 * the lock once more; unlock, then unmute) leaves no moment where neither listens. */
static bool psi_muted;

static void psi_listen(bool on)
{
    if (psp.epfd < 0 || !psp.psi_open) return;
    struct epoll_event ev = {.events = on ? EPOLLIN : 0, .data.u64 = PSP_TAG_PSI};
    real.epoll_ctl(psp.epfd, EPOLL_CTL_MOD, psi_fd(&psp.psi), &ev);
}

void psi_unlock(void)
{
    /* events read along with our reply sit in libpsi's buffers, where no epoll sees them */
    bool pending = psp.psi_open && psi_event_pending(&psp.psi);
    pthread_mutex_unlock(&psp.psi_lock);
    if (__atomic_exchange_n(&psi_muted, false, __ATOMIC_ACQ_REL)) psi_listen(true);
    if (pending) neg_events(false); /* what is still on the socket wakes the progress thread */
}

void neg_events(bool progress)
{
    if (pthread_mutex_trylock(&psp.psi_lock) != 0) {
        if (!progress) return; /* its holder takes them at psi_unlock */
        psi_listen(false);
        __atomic_store_n(&psi_muted, true, __ATOMIC_RELEASE);
        if (pthread_mutex_trylock(&psp.psi_lock) != 0) return;
    }
    if (!psp.psi_open) {
        pthread_mutex_unlock(&psp.psi_lock);
        return;
    }
    struct psmsg ev;
    int r;
    while ((r = psi_next_event(&psp.psi, &ev, 0)) > 0) {
        uint32_t num;
        if (ev.type == PSM_PL_QUERY && psmsg_get_u32(&ev.body, PSF_REQ, &num) == 0) {
            report(num);
            continue;
        }
        if (ev.type == PSM_PL_POKED) { /* a peer moves a channel back to TCP: answer it */
            pthread_mutex_lock(&psp.lock);
            for (struct conn *c = psp.all; c; c = c->lnext)
                if (c->st == CS_SHM && c->shm && shm_peer_switch(c)) conn_shm_look(c);
            pthread_mutex_unlock(&psp.lock);
            continue;
        }
        if (ev.type == PSM_PL_NODE_LOST && psmsg_get_u32(&ev.body, PSF_NODE_ID, &num) == 0) {
            pthread_mutex_lock(&psp.lock);
            alive_node_lost(num); /* a doubt, put to each connection's kernel socket */
            pthread_mutex_unlock(&psp.lock);
            continue;
        }
        if (ev.type != PSM_PL_OUTCOME && ev.type != PSM_PL_ACCEPTED) continue;
        bool acc = ev.type == PSM_PL_ACCEPTED;
        uint32_t id, err = EPROTO;
        if (psmsg_get_u32(&ev.body, acc ? PSF_TAG : PSF_CONN, &id) < 0) continue;
        psmsg_get_u32(&ev.body, PSF_ERRNO, &err);
        struct neg_peer p;
        bool ok = err == 0 && get_peer(&ev, &p) == 0 &&
                  psmsg_find(&ev.body, PSF_CONN, &(struct psmsg_field){0});
        if (!ok && err == 0 && p.shm_ring)
            for (int i = 0; i < 2; i++) real.close(p.shm_fds[i]);
        int e = ok ? 0 : (err ? (int)err : EPROTO);
        pthread_mutex_lock(&psp.lock);
        if (acc)
            conn_accepted(id, e, ok ? &p : NULL);
        else
            conn_outcome(id, e, ok ? &p : NULL);
        pthread_mutex_unlock(&psp.lock);
    }
    if (r < 0 && errno != EINTR) {
        psi_drop(); /* psid is gone: negotiations go TCP; a new psid is looked for */
        pthread_mutex_unlock(&psp.psi_lock);
        return;
    }
    pthread_mutex_unlock(&psp.psi_lock);
    if (__atomic_exchange_n(&psi_muted, false, __ATOMIC_ACQ_REL)) psi_listen(true);
}

void neg_poke(uint32_t pid)
{
    struct psmsg_buf b = {0};
    psmsg_begin(&b, PSM_PL_POKE, 0);
    psmsg_put_u32(&b, PSF_PID, pid);
    pthread_mutex_lock(&psp.psi_lock);
    if (psp.psi_open) psi_send(&psp.psi, &b); /* no reply comes */
    psi_unlock();
    psmsg_buf_free(&b);
}

void neg_unlisten(uint16_t port)
{
    if (!psp.inited || psp.broken) return;
    struct psmsg_buf req = {0};
    struct psmsg rep;
    psmsg_begin(&req, PSM_PL_UNLISTEN, 0);
    psmsg_put_u32(&req, PSF_PORT, port);
    pthread_mutex_lock(&psp.psi_lock);
    relink_unlisten(port);
    if (psp.psi_open)
        call(&req, -1, &rep);
    else
        psmsg_buf_free(&req);
    psi_unlock();
}
