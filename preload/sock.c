/*
 * sock.c - the wrapped socket calls: where a connection is decided (connect, accept,
 * listen), and the calls that must know about accelerated descriptors (close, dup*, fcntl
 * F_DUPFD*, close_range, closefrom, syscall's close family, fclose, shutdown, setsockopt
 * SO_LINGER, getsockopt SO_ERROR, ioctl FIONREAD). The real kernel call always happens: the
 * program's descriptor is and stays the kernel's TCP socket, so errors (ECONNREFUSED,
 * EADDRINUSE, ...) are the kernel's. What each descriptor number is to us, and the order of
 * a close, are the descriptor table's (fdtable.c).
 */
#include "psp.h"

#include <dlfcn.h>
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

/* Cancellation (wait.c, "Cancellation"): connect and accept are cancellation points in
 * their sleeps, as the kernel's are; a cancellation there drops our hold on the connection
 * (track's reference, held as a wrapper's: fdt_release_held), and the socket goes on
 * connecting, as after the kernel's cancelled connect. */
static int sleep_connect(int fd, const struct sockaddr *sa, socklen_t len)
{
    int r = -1;
    PSP_SLEEP_IN(NULL, NULL, r = real.connect(fd, sa, len));
    return r;
}

static int sleep_poll1(struct pollfd *p, int ms)
{
    int r = -1;
    PSP_SLEEP_IN(NULL, NULL, r = real.poll(p, 1, ms));
    return r;
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
        int n = sleep_poll1(&p, left);
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

/* What a connector's record is made with (its fields are set before the progress thread,
 * which walks psp.all, can see it) */
struct track_as {
    uint32_t id;
    bool same, xns;
    bool slot; /* a hidden slot kept for its doorbell (same-node: shm_reserve) */
};

/* A record for the program's descriptor fd, with a hidden descriptor of the socket (the
 * guard), and a reference for the caller, held as a wrapper's (fdt_put drops it); a
 * connector's if as; NULL when there is no descriptor left for it. */
static struct conn *track(int fd, enum conn_state st, const struct track_as *as)
{
    int kfd = fdt_hidden_dup(fd);
    if (kfd < 0) return NULL;
    int slot = as && as->slot ? shm_reserve(kfd) : -1;
    pthread_mutex_lock(&psp.lock);
    struct conn *c = conn_new(kfd, st);
    if (c) {
        if (as) {
            c->connector = true;
            c->id = as->id;
            c->same = as->same;
            c->xns = as->xns;
        }
        c->shm_slot = slot;
        conn_attach(c, fd);
        fdt_ref(c);
    }
    pthread_mutex_unlock(&psp.lock);
    if (!c) {
        fdt_close_hidden(kfd);
        fdt_close_hidden(slot);
    }
    fdt_hold(c);
    return c;
}

static void untrack(int fd)
{
    pthread_mutex_lock(&psp.lock);
    struct conn *c = psp_conn_of(fd);
    if (c) {
        conn_enter(c, CS_TCP); /* destroyed without a word to a peer */
        conn_detach(fd);
    }
    pthread_mutex_unlock(&psp.lock);
}

/* A number the kernel has just handed out (socket, accept): a record the table still has
 * for it is of a descriptor closed behind our back, and goes. */
static void fresh(int fd)
{
    if (psp_in || !psp_conn_of(fd)) return;
    pthread_mutex_lock(&psp.lock);
    if (psp_conn_of(fd)) conn_detach(fd);
    pthread_mutex_unlock(&psp.lock);
}

int socket(int domain, int type, int proto)
{
    real_ready();
    int fd = real.socket(domain, type, proto);
    if (fd >= 0 && psp.byfd) fresh(fd);
    return fd;
}

static int connect_in(int fd, const struct sockaddr *sa, socklen_t len)
{
    if (!sa || psp_conn_of(fd) || !inet_tcp(fd, sa, len)) return sleep_connect(fd, sa, len);
    if (!psp_ready()) {
        if (psp.refused) psp_count_tcp(PSP_R_LIMIT); /* psid had no room for us */
        return sleep_connect(fd, sa, len);
    }
    struct sockaddr_storage peer;
    socklen_t pl = sizeof peer;
    if (getpeername(fd, (struct sockaddr *)&peer, &pl) == 0 || errno != ENOTCONN)
        return sleep_connect(fd, sa, len); /* connected, or connecting: the kernel's */
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
        struct track_as as = {.id = id, .same = same, .xns = xns};
        struct conn *c = track(fd, CS_PLAIN, &as);
        int r = sleep_connect(fd, sa, len), e = errno;
        pthread_mutex_lock(&psp.lock);
        bool ok = r == 0 || e == EINPROGRESS || e == EINTR || e == EALREADY;
        bool now = c && ok && psp_conn_of(fd) == c && conn_plain(c) < 0;
        pthread_mutex_unlock(&psp.lock);
        if (now) { /* PSP_SYNC (to another namespace): its negotiation at once */
            conn_negotiate(c);
            if (r == 0) conn_settle(c);
        }
        if (c && !ok) untrack(fd); /* the kernel's answer, on TCP */
        if (!c) psp_count_tcp(PSP_R_LIMIT);
        fdt_put(c);
        errno = e;
        return r;
    }
    if (why == PSP_R__COUNT) {
        pthread_mutex_lock(&psp.lock);
        uint32_t id = ++psp.next_conn_id ? psp.next_conn_id : ++psp.next_conn_id;
        pthread_mutex_unlock(&psp.lock);
        struct track_as as = {.id = id, .same = same, .slot = same};
        struct conn *c = track(fd, CS_CONNECTING, &as);
        if (!c) {
            why = PSP_R_LIMIT;
        } else {
            pthread_mutex_lock(&psp.lock);
            int e = same && c->shm_slot < 0 ? ENFILE : 0;
            pthread_mutex_unlock(&psp.lock);
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
                r = sleep_connect(fd, sa, len);
                ce = errno;
            }
            if (!same && e) {
                untrack(fd);
                if (e < 0) { /* the connect failed at once: as without the library */
                    fdt_put(c);
                    errno = ce;
                    return r;
                }
                psp_count_tcp(why); /* the connect is under way: on TCP */
                if (psp.strict) {   /* psid waited for here: the refusal fails the connect */
                    fprintf(stderr, "pspreload: strict: a connection between nodes would stay "
                                    "on TCP\n");
                    fdt_put(c);
                    errno = ENETUNREACH;
                    return -1;
                }
                if (block && r < 0) r = connect_wait(fd);
                ce = errno;
                fdt_put(c);
                errno = ce;
                return r;
            }
            if (!e) { /* the TCP phase: the kernel's socket until the outcome (conn.c) */
                if (block && r < 0) { /* the program's connect blocks until it is done */
                    r = connect_wait(fd);
                    ce = errno;
                }
                if (r < 0 && ce != EINPROGRESS && ce != EINTR && ce != EALREADY) untrack(fd);
                if (r == 0) conn_settle(c); /* PSP_SYNC: the outcome first */
                fdt_put(c);
                errno = ce;
                return r;
            }
            untrack(fd);
            fdt_put(c);
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
    int r = sleep_connect(fd, sa, len);
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

/* A cancellation point, as the kernel's: a pending cancellation acts at the start, and one
 * in its sleeps (the kernel's connect, the wait for it, the wait for the negotiation); the
 * rest runs with cancellation disabled (it takes psp.lock and psi_lock). */
int connect(int fd, const struct sockaddr *sa, socklen_t len)
{
    int cancel = psp_cancel_entry();
    int r = connect_in(fd, sa, len);
    psp_cancel_on(cancel);
    return r;
}

int listen(int fd, int backlog)
{
    int r = real.listen(fd, backlog);
    if (r < 0 || !inet_tcp(fd, NULL, 0)) return r;
    int cancel = psp_cancel_off(); /* psid is asked (psi_lock) */
    if (psp_ready() && fd < psp.nbyfd && !psp.listener[fd] && psp_endpoint() == 0 &&
        neg_listen(fd) == 0) {
        psp.listener[fd] = true;
        fdt_note(fd);
    }
    psp_cancel_on(cancel);
    return r;
}

static int accepted(int lfd, int fd)
{
    if (fd < 0 || !psp.byfd) return fd;
    fresh(fd);
    if (lfd < 0 || lfd >= psp.nbyfd || !psp.listener || !psp.listener[lfd]) return fd;
    struct conn *c = track(fd, CS_ACCEPTED, NULL);
    if (c) {
        fdt_put(c);
    } else { /* no descriptor left for ours: TCP, and the connector told at once */
        psp_count_tcp(PSP_R_LIMIT);
        neg_refuse(fd);
    }
    return fd;
}

static int sleep_accept(int lfd, struct sockaddr *sa, socklen_t *sl, int flags, bool four)
{
    int fd = -1;
    PSP_SLEEP_IN(NULL, NULL,
                 fd = four ? real.accept4(lfd, sa, sl, flags) : real.accept(lfd, sa, sl));
    return fd;
}

/* A cancellation point in the kernel's accept only; the record and a decline run with
 * cancellation disabled (psp.lock, psi_lock). */
static int accept_any(int lfd, struct sockaddr *sa, socklen_t *sl, int flags, bool four)
{
    int cancel = psp_cancel_entry();
    int fd = accepted(lfd, sleep_accept(lfd, sa, sl, flags, four));
    psp_cancel_on(cancel);
    return fd;
}

int accept(int lfd, struct sockaddr *sa, socklen_t *sl)
{
    return accept_any(lfd, sa, sl, 0, false);
}

int accept4(int lfd, struct sockaddr *sa, socklen_t *sl, int flags)
{
    return accept_any(lfd, sa, sl, flags, true);
}

static bool listening(int fd)
{
    return fd >= 0 && fd < psp.nbyfd && psp.listener && psp.listener[fd];
}

static void forget_listener(int fd)
{
    if (!listening(fd)) return;
    psp.listener[fd] = false;
    struct sockaddr_storage ss;
    socklen_t l = sizeof ss;
    if (getsockname(fd, (struct sockaddr *)&ss, &l) < 0) return;
    uint16_t port = ntohs(ss.ss_family == AF_INET ? ((struct sockaddr_in *)&ss)->sin_port
                                                  : ((struct sockaddr_in6 *)&ss)->sin6_port);
    neg_unlisten(port);
}

/* Whether fd is nothing to the library: neither a connection's (or being closed), nor ours,
 * nor a registered listener. One load or two: every close of a file passes here. */
static bool not_ours(int fd)
{
    return !psp.byfd || fd < 0 || fd >= psp.nbyfd ||
           (!__atomic_load_n(&psp.byfd[fd], __ATOMIC_ACQUIRE) && !listening(fd));
}

/* The program closes fd, which is something to the library: the record goes first, then the
 * kernel's close (see fdtable.c). A cancellation point only at its start: one that acted in
 * the kernel's close (or under a lock) would leave the record and the descriptor apart. */
static int close_ours(int fd)
{
    if (fdt_hidden(fd)) {
        errno = EBADF; /* ours: as if it were not open */
        return -1;
    }
    int cancel = psp_cancel_entry();
    forget_listener(fd);
    fdt_close_begin(fd);
    int r = real.close(fd);
    fdt_close_end(fd);
    psp_cancel_on(cancel);
    return r;
}

int close(int fd)
{
    real_ready();
    if (psp_in) return real.close(fd);
    epoll_set_closed(fd); /* (one load, unless the program has epoll sets of ours) */
    return not_ours(fd) ? real.close(fd) : close_ours(fd);
}

/* newfd now refers to what oldfd does (after a successful dup, F_DUPFD or dup2). */
static int duped(int oldfd, int newfd)
{
    /* psp_in: the library's own call (rdp_move_fd, with psp.lock held) */
    if (psp_in || newfd < 0 || newfd >= psp.nbyfd || !psp.byfd) return newfd;
    if (psp_conn_of(oldfd) || psp_conn_of(newfd)) {
        int cancel = psp_cancel_off();
        pthread_mutex_lock(&psp.lock);
        struct conn *c = psp_conn_of(oldfd);
        if (c)
            conn_attach(c, newfd);
        else
            conn_detach(newfd); /* a record of a number closed behind our back */
        fdt_clear(newfd, FDT_CLOSING);
        pthread_mutex_unlock(&psp.lock);
        psp_cancel_on(cancel);
    }
    if (listening(oldfd)) {
        psp.listener[newfd] = true;
        fdt_note(newfd);
    }
    return newfd;
}

int dup(int fd)
{
    if (!psp_in && psp_is_hidden(fd)) {
        errno = EBADF;
        return -1;
    }
    return duped(fd, real.dup(fd));
}

/* dup2/dup3 onto a descriptor: what it referred to is closed first, as the kernel does, and
 * our record of it goes before (fdtable.c); after another thread's close of it, if one is
 * under way. */
static int replace(int oldfd, int newfd, int flags, bool three)
{
    if (psp_in) return three ? real.dup3(oldfd, newfd, flags) : real.dup2(oldfd, newfd);
    if (psp_is_hidden(newfd)) {
        errno = EBUSY;
        return -1;
    }
    if (psp_is_hidden(oldfd)) {
        errno = EBADF;
        return -1;
    }
    if (oldfd == newfd) return three ? (errno = EINVAL, -1) : real.dup2(oldfd, newfd);
    if (not_ours(newfd)) { /* nothing of ours is replaced (but an epoll set, perhaps) */
        if (epoll_sets_held() && real.fcntl(oldfd, F_GETFD) >= 0) epoll_set_closed(newfd);
        int r = three ? real.dup3(oldfd, newfd, flags) : real.dup2(oldfd, newfd);
        return r < 0 ? r : duped(oldfd, r);
    }
    /* the kernel's own refusals first, which leave newfd as it was: then the dup cannot
     * fail once our record of newfd is gone */
    if (real.fcntl(oldfd, F_GETFD) < 0) return -1; /* EBADF */
    if (three && (flags & ~O_CLOEXEC)) {
        errno = EINVAL;
        return -1;
    }
    int cancel = psp_cancel_off();
    fdt_wait_closed(newfd);
    epoll_set_closed(newfd);
    forget_listener(newfd);
    fdt_close_begin(newfd);
    int r = three ? real.dup3(oldfd, newfd, flags) : real.dup2(oldfd, newfd);
    int e = errno;
    if (r < 0) fdt_close_end(newfd);
    psp_cancel_on(cancel);
    errno = e;
    return r < 0 ? r : duped(oldfd, r);
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
        if (!psp_in && psp_is_hidden(fd)) {
            errno = EBADF;
            r = -1;
            break;
        }
        /* fall through */
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

static long sys_close_range(unsigned first, unsigned last, int flags)
{
    return real.syscall(SYS_close_range, first, last, flags);
}

/* close_range, closefrom and syscall(SYS_close_range): every route by which a program closes
 * a range reaches here (glibc's closefrom calls the system call inside the C library, never
 * close_range's symbol, so closefrom is wrapped too). Our records of the connections and
 * listeners in the range go first; then the kernel closes the range around our hidden
 * descriptors, which stay. CLOSE_RANGE_CLOEXEC is the kernel's alone: ours are close-on-exec
 * already. */
int close_range(unsigned first, unsigned last, int flags);
int close_range(unsigned first, unsigned last, int flags)
{
    real_ready();
    if (!psp.inited || !psp.byfd || first > last || (flags & CLOSE_RANGE_CLOEXEC))
        return (int)sys_close_range(first, last, flags);
    int cancel = psp_cancel_off();
    epoll_sets_closed(first, last);
    unsigned top = (unsigned)fdt_top(), end = last < top ? last + 1 : top; /* [first, end) */
    for (unsigned fd = first; fd < end; fd++)
        if (!psp_in && (psp_conn_of((int)fd) || listening((int)fd))) {
            forget_listener((int)fd);
            fdt_close_begin((int)fd);
        }
    long r = 0;
    int e = 0;
    unsigned from = first; /* the kernel's, between our hidden ones */
    for (unsigned fd = first; fd < end; fd++) {
        if (!fdt_hidden((int)fd)) continue;
        if (fd > from && sys_close_range(from, fd - 1, flags) < 0 && !e) e = errno;
        from = fd + 1;
    }
    if (from <= last && sys_close_range(from, last, flags) < 0 && !e) e = errno;
    for (unsigned fd = first; fd < end; fd++) fdt_close_end((int)fd);
    if (r == 0 && e) r = -1;
    psp_cancel_on(cancel);
    if (r < 0) errno = e;
    return (int)r;
}

void closefrom(int lowfd);
void closefrom(int lowfd)
{
    if (lowfd < 0) lowfd = 0;
    if (close_range((unsigned)lowfd, ~0u, 0) == 0) return;
    /* a kernel without close_range (before 5.9): one by one, as glibc falls back to */
    long max = sysconf(_SC_OPEN_MAX);
    for (long fd = lowfd; fd < max; fd++)
        if (!psp_is_hidden((int)fd)) close((int)fd);
}

/* syscall(2) as a program calls it for what the C library lacked a function for: the
 * calls that close or replace descriptors are ours, as their functions are; everything
 * else is the C library's. Six arguments are passed on, as the C library's syscall takes
 * them (a caller that gave fewer leaves registers and stack words that nobody reads: not
 * AddressSanitizer's business, hence no_sanitize). */
__attribute__((no_sanitize_address)) long syscall(long nr, ...)
{
    va_list ap;
    va_start(ap, nr);
    long a = va_arg(ap, long), b = va_arg(ap, long), c = va_arg(ap, long), d = va_arg(ap, long),
         e = va_arg(ap, long), f = va_arg(ap, long);
    va_end(ap);
    real_ready();
    switch (nr) {
    case SYS_close:
        return close((int)a);
    case SYS_close_range:
        return close_range((unsigned)a, (unsigned)b, (int)c);
    case SYS_dup2:
        return dup2((int)a, (int)b);
    case SYS_dup3:
        return dup3((int)a, (int)b, (int)c);
    default:
        return real.syscall(nr, a, b, c, d, e, f);
    }
}

/* fclose of a stream on a connection's descriptor (fdopen): the C library closes the
 * descriptor inside itself, so our record goes first here, as close's. (The stream's own
 * reads and writes are the C library's inside calls too, which no preload library sees:
 * docs/preload-design.md, "What is not intercepted".) */
int fclose(FILE *f)
{
    static int (*next)(FILE *);
    if (!next) next = (__typeof__(next))dlsym(RTLD_NEXT, "fclose");
    int fd = f ? fileno(f) : -1;
    if (psp_in || not_ours(fd) || fdt_hidden(fd)) return next(f);
    int cancel = psp_cancel_entry();
    forget_listener(fd);
    fdt_close_begin(fd);
    epoll_set_closed(fd);
    int r = next(f);
    fdt_close_end(fd);
    psp_cancel_on(cancel);
    return r;
}

int shutdown(int fd, int how)
{
    struct conn *c = fdt_get(fd);
    if (!c) return real.shutdown(fd, how);
    int cancel = psp_cancel_off(); /* its claim asks psid (psi_lock), and psp.lock */
    int r;
    if (cs_unclaimed(c->st)) conn_claim(c);
    if (cs_kernel_only(c->st)) {
        r = real.shutdown(fd, how);
    } else if (how != SHUT_RD && how != SHUT_WR && how != SHUT_RDWR) {
        errno = EINVAL;
        r = -1;
    } else {
        r = conn_shutdown(c, how);
    }
    psp_cancel_on(cancel);
    fdt_put(c);
    return r;
}

int setsockopt(int fd, int level, int opt, const void *val, socklen_t len)
{
    struct conn *c = fdt_get(fd);
    int r;
    if (c && alive_setsockopt(c, fd, level, opt, val, len, &r)) { /* keepalive */
        int e = errno;
        fdt_put(c);
        errno = e;
        return r;
    }
    r = real.setsockopt(fd, level, opt, val, len);
    if (r < 0 || !c) {
        int e = errno;
        fdt_put(c);
        errno = e;
        return r;
    }
    int cancel = psp_cancel_off();
    if (level == IPPROTO_TCP && opt == TCP_CORK && val && len >= sizeof(int))
        conn_cork(c, *(const int *)val != 0);
    pthread_mutex_lock(&psp.lock);
    if (level == SOL_SOCKET && (opt == SO_RCVTIMEO || opt == SO_SNDTIMEO))
        c->timeo[opt == SO_SNDTIMEO] = -2; /* looked up again at the next wait */
    if (level == SOL_SOCKET && opt == SO_LINGER && len >= sizeof(struct linger)) {
        const struct linger *l = val;
        c->linger0 = l->l_onoff && l->l_linger == 0;
    }
    pthread_mutex_unlock(&psp.lock);
    psp_cancel_on(cancel);
    fdt_put(c);
    return r;
}

int getsockopt(int fd, int level, int opt, void *val, socklen_t *len)
{
    struct conn *c = fdt_get(fd);
    if (c && cs_fast(c->st) && level == SOL_SOCKET && opt == SO_ERROR && val && len &&
        *len >= sizeof(int)) {
        pthread_mutex_lock(&psp.lock);
        if (c->ops->sync) c->ops->sync(c);
        int e = c->err && !c->err_reported ? c->err : 0;
        if (e) c->err_reported = true;
        pthread_mutex_unlock(&psp.lock);
        fdt_put(c);
        *(int *)val = e;
        *len = sizeof(int);
        return 0;
    }
    int r;
    bool ka = c && alive_getsockopt(c, fd, level, opt, val, len, &r); /* keepalive */
    int e = errno;
    fdt_put(c);
    errno = e;
    return ka ? r : real.getsockopt(fd, level, opt, val, len);
}

int ioctl(int fd, unsigned long req, ...)
{
    va_list ap;
    va_start(ap, req);
    void *arg = va_arg(ap, void *);
    va_end(ap);
    struct conn *c = req == FIONREAD || req == SIOCOUTQ ? fdt_get(fd) : NULL;
    if (c && cs_fast(c->st)) {
        pthread_mutex_lock(&psp.lock);
        if (c->ops->sync) c->ops->sync(c);
        size_t n = c->rx_bytes;
        int k = 0; /* the peer's bytes still on the kernel socket come first */
        if (c->krx && real.ioctl(c->kfd, FIONREAD, &k) == 0) {
            uint64_t left = c->peer_up ? c->peer_ktx - c->k_rx : UINT64_MAX;
            n = (uint64_t)k >= left ? (size_t)left + c->rx_bytes : (size_t)k;
        }
        *(int *)arg = req == FIONREAD ? (n > INT32_MAX ? INT32_MAX : (int)n) : 0;
        pthread_mutex_unlock(&psp.lock);
        fdt_put(c);
        return 0;
    }
    fdt_put(c);
    int r = real.ioctl(fd, req, arg);
    if (req == FIONBIO && r == 0) conn_flags_changed(fd);
    return r;
}
