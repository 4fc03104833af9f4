/*
 * sock.c - the wrapped socket calls: where a connection is decided (connect, accept,
 * listen), and the calls that must know about accelerated descriptors (close, dup*, fcntl
 * F_DUPFD*, close_range, shutdown, setsockopt SO_LINGER, getsockopt SO_ERROR, ioctl
 * FIONREAD). The real kernel call always happens: the program's descriptor is and stays the
 * kernel's TCP socket, so errors (ECONNREFUSED, EADDRINUSE, ...) are the kernel's.
 */
#include "psp.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/sockios.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

extern __thread int psp_in;

static bool inet_tcp(int fd, const struct sockaddr *sa, socklen_t len)
{
    if (sa &&
        (len < sizeof(sa_family_t) || (sa->sa_family != AF_INET && sa->sa_family != AF_INET6)))
        return false;
    if (sa && sa->sa_family == AF_INET && len < sizeof(struct sockaddr_in)) return false;
    if (sa && sa->sa_family == AF_INET6 && len < sizeof(struct sockaddr_in6)) return false;
    int type = 0, proto = 0;
    socklen_t l = sizeof type;
    if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &l) < 0 || type != SOCK_STREAM) return false;
    l = sizeof proto;
    if (getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &proto, &l) < 0 || proto != IPPROTO_TCP)
        return false;
    if (!sa) {
        int dom = 0;
        l = sizeof dom;
        return getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &dom, &l) == 0 &&
               (dom == AF_INET || dom == AF_INET6);
    }
    return true;
}

/* The socket's local port (0: not bound yet), or -1; its address in *ss. */
static int local_port(int fd, struct sockaddr_storage *ss)
{
    socklen_t l = sizeof *ss;
    if (getsockname(fd, (struct sockaddr *)ss, &l) < 0) return -1;
    return ntohs(ss->ss_family == AF_INET ? ((struct sockaddr_in *)ss)->sin_port
                                          : ((struct sockaddr_in6 *)ss)->sin6_port);
}

/* Bind an unbound socket to the node's address, so that psid and the peer see the
 * connection as coming from this node. The port is left to the kernel's connect
 * (IP_BIND_ADDRESS_NO_PORT), which may reuse a port towards another destination, or one in
 * TIME_WAIT as its rules allow: a bind to port 0 could do neither, and a program that makes
 * many short connections would run out of ports. */
static int bind_node(int fd)
{
    struct sockaddr_storage ss, b;
    int port = local_port(fd, &ss);
    if (port) return port < 0 ? -1 : 0; /* the program bound it: psid checks the address */
    socklen_t l;
    memset(&b, 0, sizeof b);
    if (ss.ss_family == psp.node_addr.ss_family) {
        memcpy(&b, &psp.node_addr, psp.node_addr_len);
        l = psp.node_addr_len;
    } else if (ss.ss_family == AF_INET6 && psp.node_addr.ss_family == AF_INET) {
        struct sockaddr_in6 *in6 = (void *)&b;
        in6->sin6_family = AF_INET6;
        in6->sin6_addr.s6_addr[10] = in6->sin6_addr.s6_addr[11] = 0xff;
        memcpy(in6->sin6_addr.s6_addr + 12, &((struct sockaddr_in *)&psp.node_addr)->sin_addr, 4);
        l = sizeof *in6;
    } else {
        errno = EAFNOSUPPORT;
        return -1;
    }
    int one = 1;
    (void)real.setsockopt(fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof one);
    return bind(fd, (struct sockaddr *)&b, l);
}

/* The kernel's connect of a socket the program made blocking, started nonblocking (so that
 * psid is asked while the SYN is out) and waited for here as the kernel would: SO_SNDTIMEO
 * (then EINPROGRESS, the connect goes on), a signal (EINTR unless every handler restarts),
 * and the connect's own error from SO_ERROR. */
static int connect_wait(int fd)
{
    struct timeval tv = {0, 0};
    socklen_t tl = sizeof tv;
    int tmo = -1;
    if (real.getsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, &tl) == 0 && (tv.tv_sec || tv.tv_usec))
        tmo = (int)(tv.tv_sec * 1000 + (tv.tv_usec + 999) / 1000);
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        int left = tmo;
        if (tmo >= 0) {
            struct timespec t;
            clock_gettime(CLOCK_MONOTONIC, &t);
            long spent = (t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000;
            left = spent >= tmo ? 0 : tmo - (int)spent;
        }
        struct pollfd p = {fd, POLLOUT, 0};
        int n = real.poll(&p, 1, left);
        if (n > 0) break;
        if (n == 0) {
            errno = EINPROGRESS;
            return -1;
        }
        if (errno != EINTR || !signals_all_restart()) return -1;
    }
    int e = 0;
    socklen_t el = sizeof e;
    if (real.getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &el) == 0 && e) {
        errno = e;
        return -1;
    }
    return 0;
}

static struct conn *track(int fd, enum conn_state st)
{
    int kfd = real.fcntl(fd, F_DUPFD_CLOEXEC, psp.hidden_base);
    if (kfd < 0) return NULL;
    pthread_mutex_lock(&psp.lock);
    struct conn *c = conn_new(kfd, st);
    if (c) conn_attach(c, fd);
    pthread_mutex_unlock(&psp.lock);
    if (!c) real.close(kfd);
    return c;
}

static void untrack(int fd)
{
    pthread_mutex_lock(&psp.lock);
    struct conn *c = psp_conn_of(fd);
    if (c) {
        c->st = CS_TCP; /* destroyed without a word to a peer */
        conn_detach(fd);
    }
    pthread_mutex_unlock(&psp.lock);
}

int connect(int fd, const struct sockaddr *sa, socklen_t len)
{
    if (!sa || psp_conn_of(fd) || !inet_tcp(fd, sa, len)) return real.connect(fd, sa, len);
    if (!psp_ready()) {
        if (psp.refused) psp_count_tcp(PSP_R_LIMIT); /* psid had no room for us */
        return real.connect(fd, sa, len);
    }
    struct sockaddr_storage peer;
    socklen_t pl = sizeof peer;
    if (getpeername(fd, (struct sockaddr *)&peer, &pl) == 0 || errno != ENOTCONN)
        return real.connect(fd, sa, len); /* connected, or connecting: the kernel answers */
    uint32_t node;
    enum psp_reason why = PSP_R__COUNT;
    /* same node: by the node table, or any address of this machine */
    bool same = neg_node_of(sa, &node) == 0 ? node == psp.node : neg_local_addr(sa);
    /* an address of no cluster node, not ours: maybe another network namespace of this
     * machine whose programs are our psid's clients (a container on this node); psid
     * knows its listeners, and says "not a cluster address" otherwise */
    bool xns = !same && neg_node_of(sa, &node) < 0;
    if (xns && psp.shm_off)
        why = PSP_R_NOT_CLUSTER;
    else if (same && psp.shm_off)
        why = PSP_R_SAME_NODE;
    else if (!psp_rules_allow(sa))
        why = PSP_R_RULE;
    else if (psp_endpoint() < 0 || (!same && !xns && (psp.shm_only || bind_node(fd) < 0)))
        why = PSP_R_ERROR; /* (shm_only: this namespace lacks the node's address) */
    same = same || xns;
    /* the TCP phase first; always for a connection whose peer psid finds by its addresses
     * (the connector's are known once it is connected): from another namespace, or to one */
    if (why == PSP_R__COUNT && ((!psp.sync && psp.upgrade_ns) || xns || psp.shm_only)) {
        /* the kernel's connect as it is, the negotiation once the connection lived
         * PSP_UPGRADE_US (conn.c, "The TCP phase"): a short one never asks psid */
        pthread_mutex_lock(&psp.lock);
        uint32_t id = ++psp.next_conn_id ? psp.next_conn_id : ++psp.next_conn_id;
        pthread_mutex_unlock(&psp.lock);
        struct conn *c = track(fd, CS_PLAIN);
        if (c) {
            c->connector = true;
            c->id = id;
            c->same = same;
            c->xns = xns;
        }
        int r = real.connect(fd, sa, len), e = errno;
        pthread_mutex_lock(&psp.lock);
        bool ok = r == 0 || e == EINPROGRESS || e == EINTR || e == EALREADY;
        if (c && ok && psp_conn_of(fd) == c) conn_plain(c);
        pthread_mutex_unlock(&psp.lock);
        if (c && !ok) untrack(fd); /* the kernel's answer, on TCP */
        if (!c) psp_count_tcp(PSP_R_LIMIT);
        errno = e;
        return r;
    }
    if (why == PSP_R__COUNT) {
        pthread_mutex_lock(&psp.lock);
        uint32_t id = ++psp.next_conn_id ? psp.next_conn_id : ++psp.next_conn_id;
        pthread_mutex_unlock(&psp.lock);
        struct conn *c = track(fd, CS_CONNECTING);
        if (!c) {
            why = PSP_R_LIMIT;
        } else {
            c->connector = true;
            c->id = id;
            c->same = same;
            if (same) c->shm_slot = shm_reserve(c->kfd);
            int e = same && c->shm_slot < 0 ? ENFILE : 0;
            if (e == ENFILE) why = PSP_R_LIMIT;
            /* between nodes, the kernel's connect goes first: it picks the port, and psid
             * reads it from the socket (the acceptor may claim before psid forwarded the
             * request: its psid asks ours, see psid/preload.c); on this node psid keeps the
             * socket by its inode, and the request goes before the SYN */
            int fl = same ? 0 : real.fcntl(fd, F_GETFL);
            bool block = !same && fl >= 0 && !(fl & O_NONBLOCK);
            int r = -1, ce = 0;
            if (!e && !same) {
                if (block) real.fcntl(fd, F_SETFL, fl | O_NONBLOCK);
                r = real.connect(fd, sa, len);
                ce = errno;
                if (block) real.fcntl(fd, F_SETFL, fl);
                if (r < 0 && ce != EINPROGRESS) e = -1; /* the kernel's answer, on TCP */
            }
            if (!e) e = neg_connect(fd, sa, id, same, &why);
            if (!e && same) {
                r = real.connect(fd, sa, len);
                ce = errno;
            }
            if (!same && e) {
                untrack(fd);
                if (e < 0) { /* the connect failed at once: as without the library */
                    errno = ce;
                    return r;
                }
                psp_count_tcp(why); /* the connect is under way: on TCP */
                if (psp.strict) {   /* psid waited for here: the refusal fails the connect */
                    fprintf(stderr, "pspreload: strict: a connection between nodes would stay "
                                    "on TCP\n");
                    errno = ENETUNREACH;
                    return -1;
                }
                if (block && r < 0) return connect_wait(fd);
                errno = ce;
                return r;
            }
            if (!e) { /* the TCP phase: the kernel's socket until the outcome (conn.c) */
                if (block && r < 0) { /* the program's connect blocks until it is done */
                    r = connect_wait(fd);
                    ce = errno;
                    if (r < 0 && ce != EINPROGRESS && ce != EINTR) untrack(fd);
                    if (r == 0) conn_settle(c); /* PSP_SYNC: the outcome first */
                    errno = ce;
                    return r;
                }
                if (r < 0 && ce != EINPROGRESS && ce != EINTR && ce != EALREADY) untrack(fd);
                if (r == 0) conn_settle(c);
                errno = ce;
                return r;
            }
            untrack(fd);
        }
    }
    /* strict: a connection to a cluster node's address, or one to this machine whose
     * listener runs under the library, that stays on TCP (a local service without the
     * library, on a loopback address, is not a cluster connection) */
    bool cluster = (neg_node_of(sa, &node) == 0 && node != psp.node) || why != PSP_R_NO_LIBRARY;
    if (why != PSP_R_NOT_CLUSTER && cluster && psp.strict) {
        fprintf(stderr, "pspreload: strict: a connection between nodes would stay on TCP\n");
        psp_count_tcp(why);
        errno = ENETUNREACH;
        return -1;
    }
    psp_count_tcp(why);
    int r = real.connect(fd, sa, len);
    int e = errno;
    /* a connection left on TCP is still followed, without a descriptor of ours, so that its
     * bytes are counted (PSP_STATS: tcp_tx_bytes, tcp_rx_bytes) */
    if ((r == 0 || e == EINPROGRESS || e == EINTR) && !psp_conn_of(fd)) {
        pthread_mutex_lock(&psp.lock);
        struct conn *c = conn_new(-1, CS_TCP);
        if (c) conn_attach(c, fd);
        pthread_mutex_unlock(&psp.lock);
    }
    errno = e;
    return r;
}

int listen(int fd, int backlog)
{
    int r = real.listen(fd, backlog);
    if (r < 0 || !inet_tcp(fd, NULL, 0) || !psp_ready() || fd >= psp.nbyfd || psp.listener[fd])
        return r;
    if (psp_endpoint() == 0 && neg_listen(fd) == 0) psp.listener[fd] = true;
    return r;
}

static int accepted(int lfd, int fd)
{
    if (fd < 0 || lfd < 0 || lfd >= psp.nbyfd || !psp.listener || !psp.listener[lfd]) return fd;
    if (!track(fd, CS_ACCEPTED)) psp_count_tcp(PSP_R_LIMIT);
    return fd;
}

int accept(int lfd, struct sockaddr *sa, socklen_t *sl)
{
    return accepted(lfd, real.accept(lfd, sa, sl));
}

int accept4(int lfd, struct sockaddr *sa, socklen_t *sl, int flags)
{
    return accepted(lfd, real.accept4(lfd, sa, sl, flags));
}

static void forget_listener(int fd)
{
    if (fd < 0 || fd >= psp.nbyfd || !psp.listener || !psp.listener[fd]) return;
    psp.listener[fd] = false;
    struct sockaddr_storage ss;
    socklen_t l = sizeof ss;
    if (getsockname(fd, (struct sockaddr *)&ss, &l) < 0) return;
    uint16_t port = ntohs(ss.ss_family == AF_INET ? ((struct sockaddr_in *)&ss)->sin_port
                                                  : ((struct sockaddr_in6 *)&ss)->sin6_port);
    neg_unlisten(port);
}

int close(int fd)
{
    if (!psp_in && psp_is_hidden(fd)) {
        errno = EBADF;
        return -1;
    }
    forget_listener(fd);
    struct conn *c = psp_conn_of(fd);
    int r = real.close(fd);
    if (r == 0 && psp.rdp) {
        pthread_mutex_lock(&psp.lock);
        epoll_set_closed(fd);
        pthread_mutex_unlock(&psp.lock);
    }
    if (c) {
        pthread_mutex_lock(&psp.lock);
        if (psp_conn_of(fd) == c) conn_detach(fd);
        pthread_mutex_unlock(&psp.lock);
    }
    return r;
}

/* newfd now refers to what oldfd does (after a successful dup*). */
static int duped(int oldfd, int newfd)
{
    /* psp_in: the library's own call (rdp_move_fd, with psp.lock held) */
    if (psp_in || newfd < 0 || newfd >= psp.nbyfd) return newfd;
    pthread_mutex_lock(&psp.lock);
    struct conn *c = psp_conn_of(oldfd);
    if (c && psp_conn_of(newfd) != c) conn_attach(c, newfd);
    pthread_mutex_unlock(&psp.lock);
    if (psp.listener && oldfd >= 0 && oldfd < psp.nbyfd && psp.listener[oldfd])
        psp.listener[newfd] = true;
    return newfd;
}

int dup(int fd)
{
    return duped(fd, real.dup(fd));
}

/* dup2/dup3 onto a descriptor: what it referred to is closed first, as the kernel does. */
static int replace(int oldfd, int newfd, int flags, bool three)
{
    if (psp_is_hidden(newfd)) {
        errno = EBUSY;
        return -1;
    }
    if (oldfd == newfd) return three ? (errno = EINVAL, -1) : real.dup2(oldfd, newfd);
    struct conn *old = psp_conn_of(newfd);
    int r = three ? real.dup3(oldfd, newfd, flags) : real.dup2(oldfd, newfd);
    if (r < 0) return r;
    if (old) {
        pthread_mutex_lock(&psp.lock);
        if (psp_conn_of(newfd) == old) conn_detach(newfd);
        pthread_mutex_unlock(&psp.lock);
    }
    if (psp.listener && newfd < psp.nbyfd) psp.listener[newfd] = false;
    return duped(oldfd, r);
}

int dup2(int oldfd, int newfd)
{
    return replace(oldfd, newfd, 0, false);
}

int dup3(int oldfd, int newfd, int flags)
{
    return replace(oldfd, newfd, flags, true);
}

/* The third argument is an int for some commands and a pointer for others; read as the
 * wrong one, an int's register may carry garbage in its upper half (F_DUPFD would then ask
 * for an impossible minimum), so it is read by the command's type, as glibc does. */
int fcntl(int fd, int cmd, ...)
{
    va_list ap;
    va_start(ap, cmd);
    int r;
    switch (cmd) {
    case F_GETFD:
    case F_GETFL:
    case F_GETOWN:
    case F_GETSIG:
    case F_GETLEASE:
    case F_GETPIPE_SZ:
    case F_GET_SEALS:
        r = real.fcntl(fd, cmd);
        break;
    case F_DUPFD:
    case F_DUPFD_CLOEXEC:
    case F_SETFD:
    case F_SETFL:
    case F_SETOWN:
    case F_SETSIG:
    case F_SETLEASE:
    case F_NOTIFY:
    case F_SETPIPE_SZ:
    case F_ADD_SEALS:
        r = real.fcntl(fd, cmd, va_arg(ap, int));
        break;
    default:
        r = real.fcntl(fd, cmd, va_arg(ap, void *));
    }
    va_end(ap);
    if ((cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC) && r >= 0) duped(fd, r);
    if (cmd == F_SETFL && r >= 0) conn_flags_changed(fd);
    return r;
}
int fcntl64(int fd, int cmd, ...) __attribute__((alias("fcntl")));

int close_range(unsigned first, unsigned last, int flags);
int close_range(unsigned first, unsigned last, int flags)
{
    real_ready();
    /* ours lie at psp.hidden_base and above: the kernel's call for what lies below, one by
     * one above (the program's descriptors there, if any) */
    unsigned base = psp.inited && psp.hidden_base > 0 ? (unsigned)psp.hidden_base : ~0u;
    int r = 0;
    for (unsigned fd = first; fd <= last && fd < base && fd < (unsigned)psp.nbyfd; fd++)
        if (psp_conn_of((int)fd) || (psp.listener && psp.listener[fd])) {
            if (!(flags & CLOSE_RANGE_CLOEXEC)) close((int)fd);
        }
    if (first < base) {
        unsigned top = last < base ? last : base - 1;
        r = (int)syscall(SYS_close_range, first, top, flags);
        if (r < 0) return r;
    }
    for (unsigned fd = first > base ? first : base; fd <= last && fd < (unsigned)psp.nbyfd; fd++) {
        if (psp_is_hidden((int)fd) || real.fcntl((int)fd, F_GETFD) < 0) continue;
        if (flags & CLOSE_RANGE_CLOEXEC)
            real.fcntl((int)fd, F_SETFD, FD_CLOEXEC);
        else
            close((int)fd);
    }
    return r;
}

int shutdown(int fd, int how)
{
    struct conn *c = psp_conn_of(fd);
    if (!c) return real.shutdown(fd, how);
    if (c->st == CS_ACCEPTED || c->st == CS_ORPHAN) conn_claim(c);
    if (c->st == CS_TCP || c->st == CS_ORPHAN) return real.shutdown(fd, how);
    if (how != SHUT_RD && how != SHUT_WR && how != SHUT_RDWR) {
        errno = EINVAL;
        return -1;
    }
    return conn_shutdown(c, how);
}

int setsockopt(int fd, int level, int opt, const void *val, socklen_t len)
{
    struct conn *c = psp_conn_of(fd);
    int r;
    if (c && alive_setsockopt(c, fd, level, opt, val, len, &r)) return r; /* keepalive */
    r = real.setsockopt(fd, level, opt, val, len);
    if (r == 0 && c && level == SOL_SOCKET && (opt == SO_RCVTIMEO || opt == SO_SNDTIMEO))
        c->timeo[opt == SO_SNDTIMEO] = -2; /* looked up again at the next wait */
    if (r == 0 && c && level == IPPROTO_TCP && opt == TCP_CORK && val && len >= sizeof(int))
        conn_cork(c, *(const int *)val != 0);
    if (r == 0 && c && level == SOL_SOCKET && opt == SO_LINGER && len >= sizeof(struct linger)) {
        const struct linger *l = val;
        c->linger0 = l->l_onoff && l->l_linger == 0;
    }
    return r;
}

int getsockopt(int fd, int level, int opt, void *val, socklen_t *len)
{
    struct conn *c = psp_conn_of(fd);
    if (c && (c->st == CS_RDP || c->st == CS_SHM) && level == SOL_SOCKET && opt == SO_ERROR &&
        val && len && *len >= sizeof(int)) {
        pthread_mutex_lock(&psp.lock);
        if (c->st == CS_SHM) shm_sync(c);
        int e = c->err && !c->err_reported ? c->err : 0;
        if (e) c->err_reported = true;
        pthread_mutex_unlock(&psp.lock);
        *(int *)val = e;
        *len = sizeof(int);
        return 0;
    }
    int r;
    if (c && alive_getsockopt(c, fd, level, opt, val, len, &r)) return r; /* keepalive */
    return real.getsockopt(fd, level, opt, val, len);
}

int ioctl(int fd, unsigned long req, ...)
{
    va_list ap;
    va_start(ap, req);
    void *arg = va_arg(ap, void *);
    va_end(ap);
    struct conn *c = psp_conn_of(fd);
    if (c && (c->st == CS_RDP || c->st == CS_SHM) && (req == FIONREAD || req == SIOCOUTQ)) {
        pthread_mutex_lock(&psp.lock);
        if (c->st == CS_SHM) shm_sync(c);
        size_t n = c->rx_bytes;
        int k = 0; /* the peer's bytes still on the kernel socket come first */
        if (c->krx && real.ioctl(c->kfd, FIONREAD, &k) == 0) {
            uint64_t left = c->peer_up ? c->peer_ktx - c->k_rx : UINT64_MAX;
            n = (uint64_t)k >= left ? (size_t)left + c->rx_bytes : (size_t)k;
        }
        *(int *)arg = req == FIONREAD ? (n > INT32_MAX ? INT32_MAX : (int)n) : 0;
        pthread_mutex_unlock(&psp.lock);
        return 0;
    }
    int r = real.ioctl(fd, req, arg);
    if (req == FIONBIO && r == 0) conn_flags_changed(fd);
    return r;
}
