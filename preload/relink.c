/*
 * relink.c - psid restarts under live connections (psp.h; docs/preload-design.md, "psid
 * restarts").
 *
 * An established connection does not need psid: its data path is process to process, its
 * pair key in the process. What psid keeps for a process is its endpoint and its
 * listening sockets, and those die with the psid that held them. So when the connection
 * to psid ends (psid crashed, was killed, restarts), the library:
 *  - forgets the connection (negotiations under way go TCP, as before), and, if it has an
 *    endpoint, tries to reach psid again: at once, then after 20 ms, doubling to at most
 *    500 ms (with a little jitter, so that a node's processes do not knock in step), from the
 *    progress thread; any thread that needs psid meanwhile tries too;
 *  - on a fresh connection opens its endpoint again with the same UDP socket: psid names an
 *    endpoint by its socket (its port is the id, its cookie makes the incarnation), so the
 *    new psid gives it the same id and the same pair keys, and the connections it has keep
 *    their names and keys; a different name (a psid that names endpoints otherwise) leaves
 *    new connections between nodes on TCP (`error`) rather than speak under two names;
 *  - registers again every listening socket it had registered (or had tried to while psid
 *    was away), each the very socket it registered (its cookie checked), so that a server
 *    started before the restart is accelerated after it.
 * The claim rule holds throughout: every registration carries the socket itself, and psid
 * believes only what the kernel says of it (docs/security.md).
 * Everything here runs under psp.psi_lock but relink_deadline and relink_try (atomic).
 */
#include "psp.h"

#include <arpa/inet.h>
#include <errno.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#define RELINK_FIRST_NS 20000000ull  /* the second try, after the one at once */
#define RELINK_MAX_NS   500000000ull /* the longest wait between tries */

struct relisten {
    int fd;          /* the program's descriptor of it */
    uint64_t cookie; /* the socket it was when registered */
    uint16_t port;
};

static struct relisten *lis;
static unsigned nlis, caplis;
static pid_t lis_pid;       /* whose registrations (a fork's child has none) */
static uint64_t relink_at;  /* the next try (0: none due) */
static uint64_t relink_gap; /* the wait after it */
static bool stale;          /* the new psid named the endpoint otherwise */

static uint64_t cookie_of(int fd)
{
    uint64_t c = 0;
    socklen_t l = sizeof c;
    return real.getsockopt(fd, SOL_SOCKET, SO_COOKIE, &c, &l) == 0 ? c : 0;
}

static uint16_t port_of(int fd)
{
    struct sockaddr_storage ss;
    socklen_t l = sizeof ss;
    if (getsockname(fd, (struct sockaddr *)&ss, &l) < 0) return 0;
    return ntohs(ss.ss_family == AF_INET ? ((struct sockaddr_in *)&ss)->sin_port
                                         : ((struct sockaddr_in6 *)&ss)->sin6_port);
}

static bool mine(void)
{
    if (lis_pid == psp.pid) return true;
    nlis = 0; /* a fork's child: the parent's registrations are the parent's */
    lis_pid = psp.pid;
    return false;
}

void relink_listen(int fd)
{
    mine();
    uint64_t cookie = cookie_of(fd);
    for (unsigned i = 0; i < nlis; i++)
        if (lis[i].cookie == cookie && lis[i].fd == fd) return;
    if (nlis == caplis) {
        unsigned cap = caplis ? 2 * caplis : 8;
        struct relisten *n = realloc(lis, cap * sizeof *n);
        if (!n) return; /* not registered again after a restart: TCP for it then */
        lis = n;
        caplis = cap;
    }
    lis[nlis++] = (struct relisten){fd, cookie, port_of(fd)};
}

void relink_unlisten(uint16_t port)
{
    if (!mine()) return;
    for (unsigned i = 0; i < nlis;)
        if (lis[i].port == port)
            lis[i] = lis[--nlis];
        else
            i++;
}

bool relink_stale(void)
{
    return __atomic_load_n(&stale, __ATOMIC_RELAXED);
}

uint64_t relink_deadline(void)
{
    uint64_t at = __atomic_load_n(&relink_at, __ATOMIC_RELAXED);
    return at ? at : UINT64_MAX;
}

/* The next try after this one failed: the wait doubles, with up to a quarter more. */
static void again(void)
{
    uint64_t gap = relink_gap ? relink_gap : RELINK_FIRST_NS;
    relink_gap = gap * 2 > RELINK_MAX_NS ? RELINK_MAX_NS : gap * 2;
    uint64_t at = rdp_now_ns() + gap + randombytes_uniform((uint32_t)(gap / 4000 + 1)) * 1000ull;
    __atomic_store_n(&relink_at, at, __ATOMIC_RELAXED);
}

void relink_lost(void)
{
    if (!psp.rdp) return; /* nothing of ours was registered */
    relink_gap = 0;
    __atomic_store_n(&relink_at, rdp_now_ns(), __ATOMIC_RELAXED); /* at once */
}

/* A reply's errno, or the call's */
static int errno_of(int r, const struct psmsg *rep)
{
    if (r < 0) return errno ? errno : EIO;
    uint32_t err = EPROTO;
    psmsg_get_u32(&rep->body, PSF_ERRNO, &err);
    return (int)err;
}

int relink_open(void)
{
    if (!psp.rdp) return 0;
    struct psmsg_buf req = {0};
    struct psmsg rep;
    psmsg_begin(&req, PSM_PL_OPEN, 0); /* the same socket: the same name, the same keys */
    if (psp.shm_only) psmsg_put_u32(&req, PSF_SAME_NODE, 1);
    int r = psi_call_fd(&psp.psi, &req, rdp_fd(psp.rdp), &rep);
    psmsg_buf_free(&req);
    int e = errno_of(r, &rep);
    uint32_t node = 0, ep = 0;
    if (!e && (psmsg_get_u32(&rep.body, PSF_NODE_ID, &node) < 0 ||
               psmsg_get_u32(&rep.body, PSF_ENDPOINT, &ep) < 0))
        e = EPROTO;
    /* gone again; or the old endpoint not yet let go (psid ended our old connection itself,
     * and has not reaped it): again later */
    if (e == EPIPE || e == ECONNRESET || e == ENOTCONN || e == EADDRINUSE) return -1;
    if (e || node != psp.node || ep != psp.endpoint)
        __atomic_store_n(&stale, true, __ATOMIC_RELAXED);
    if (mine())
        for (unsigned i = 0; i < nlis;) {
            struct relisten *l = &lis[i];
            bool same = l->fd < psp.nbyfd && psp.listener[l->fd] && cookie_of(l->fd) == l->cookie;
            if (!same) { /* closed, or another socket by now */
                *l = lis[--nlis];
                continue;
            }
            if (psi_pl_listen(&psp.psi, l->fd) < 0 &&
                (errno == EPIPE || errno == ECONNRESET || errno == ENOTCONN))
                return -1;
            i++;
        }
    __atomic_store_n(&relink_at, 0, __ATOMIC_RELAXED);
    relink_gap = 0;
    return 0;
}

void relink_try(void)
{
    uint64_t at = __atomic_load_n(&relink_at, __ATOMIC_RELAXED);
    if (at && rdp_now_ns() >= at) neg_reconnect();
}

void relink_tried(bool ok)
{
    if (!ok) {
        again();
        return;
    }
    /* connected: registered again (here, or by another thread first), or nothing of this
     * process's was registered (a fork's child) */
    __atomic_store_n(&relink_at, 0, __ATOMIC_RELAXED);
    relink_gap = 0;
}
