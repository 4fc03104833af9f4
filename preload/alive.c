/*
 * alive.c - whether the peer process of an accelerated connection lives (psp.h;
 * docs/preload-design.md, "Stopped, killed and lost peers").
 *
 * A process that stops answering (SIGSTOP, a debugger at a breakpoint, a swap storm, a
 * frozen cgroup) is not a dead one: TCP keeps its connections for as long as the peer's
 * kernel answers. So does the library:
 *  - RDP persists (rdp_config.persist_max_us): a peer silent past RDP's loss bound is only
 *    stalled, probed on with backoff, and answers from the probes waiting in its socket when
 *    it runs again. No timeout of RDP ends a connection.
 *  - A doubt (RDP stalled on the peer, or psid says its node is down: PSM_PL_NODE_LOST,
 *    which a psid restart sends too) is put to the connection's kernel socket, the guard:
 *    while in doubt it sends TCP keepalive probes, one a second, which the peer's kernel
 *    answers whether or not the process runs. ALIVE_PROBES unanswered in a row, and the
 *    kernel ends the socket with ETIMEDOUT; the guard shows that, and the connection ends
 *    with ETIMEDOUT after the bytes that came (conn.c). A peer process that dies shows on
 *    the guard as its kernel's FIN or reset: ECONNRESET.
 *  - The probes are ours for the time of the doubt only: the program's keepalive settings
 *    are kept aside, shown to its getsockopt and taken from its setsockopt, and put back
 *    when the doubt ends (RDP answers again, and the peer's kernel answered a probe since
 *    the doubt began: TCP_INFO's last ACK) or the connection leaves the fast path.
 *  - A stalled peer that no connection needs any more (all ended) is given up
 *    (rdp_disconnect): nothing is probed for it.
 * Everything here runs under psp.lock.
 */
#include "psp.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>

#define ALIVE_PROBES   5             /* unanswered probes, a second apart: the kernel is gone */
#define ALIVE_CHECK_NS 1000000000ull /* doubts and stalled peers are looked at each second */

static const int ka_opt[4][2] = {{SOL_SOCKET, SO_KEEPALIVE},
                                 {IPPROTO_TCP, TCP_KEEPIDLE},
                                 {IPPROTO_TCP, TCP_KEEPINTVL},
                                 {IPPROTO_TCP, TCP_KEEPCNT}};

static uint32_t *stalled; /* RDP peers stalled now */
static unsigned nstalled, capstalled;
static unsigned ndoubts; /* connections in doubt */
static uint64_t next_check = UINT64_MAX;

static int ka_index(int level, int opt)
{
    for (int i = 0; i < 4; i++)
        if (ka_opt[i][0] == level && ka_opt[i][1] == opt) return i;
    return -1;
}

bool alive_is_stalled(uint32_t peer)
{
    for (unsigned i = 0; i < nstalled; i++)
        if (stalled[i] == peer) return true;
    return false;
}

static void stalled_del(uint32_t peer)
{
    for (unsigned i = 0; i < nstalled; i++)
        if (stalled[i] == peer) {
            stalled[i] = stalled[--nstalled];
            return;
        }
}

static void check_soon(uint64_t at)
{
    if (at < next_check) {
        next_check = at;
        psp_arm_timer();
    }
}

/* Our probes on c's kernel socket: keepalive on, then the interval and count, the idle time
 * last (setting it on a socket idle for longer sends the first probe at once). */
static void ka_ours(struct conn *c)
{
    const int v[4] = {1, 1, 1, ALIVE_PROBES};
    real.setsockopt(c->kfd, ka_opt[0][0], ka_opt[0][1], &v[0], sizeof v[0]);
    for (int i = 3; i >= 1; i--)
        real.setsockopt(c->kfd, ka_opt[i][0], ka_opt[i][1], &v[i], sizeof v[i]);
}

/* The program's settings back: the times first, then whether keepalive is on. */
static void ka_theirs(struct conn *c)
{
    for (int i = 1; i < 4; i++)
        real.setsockopt(c->kfd, ka_opt[i][0], ka_opt[i][1], &c->ka[i], sizeof c->ka[i]);
    real.setsockopt(c->kfd, ka_opt[0][0], ka_opt[0][1], &c->ka[0], sizeof c->ka[0]);
}

/* Put the question to c's guard (again: the probes start over, the first one now). */
static void doubt(struct conn *c)
{
    if (c->kfd < 0 || !cs_rdp_or_switch(c->st) || c->err || !c->peer) return;
    if (!c->ka_mine) {
        for (int i = 0; i < 4; i++) {
            socklen_t l = sizeof c->ka[i];
            if (real.getsockopt(c->kfd, ka_opt[i][0], ka_opt[i][1], &c->ka[i], &l) < 0)
                return; /* nothing to ask (not a TCP socket any more) */
        }
        c->ka_mine = true;
    }
    if (!c->doubt_at) ndoubts++;
    c->doubt_at = rdp_now_ns();
    ka_ours(c);
    check_soon(c->doubt_at + ALIVE_CHECK_NS);
}

void alive_end(struct conn *c)
{
    if (c->doubt_at) {
        c->doubt_at = 0;
        ndoubts--;
    }
    if (c->ka_mine && c->kfd >= 0) ka_theirs(c);
    c->ka_mine = false;
}

/* A connection RDP still has to serve: on the fast path and not ended. */
static bool needs_peer(const struct conn *c, uint32_t peer)
{
    return c->peer == peer && cs_rdp_or_switch(c->st) && !c->err;
}

void alive_stalled(void *ctx, uint32_t peer, bool on)
{
    (void)ctx;
    if (!on) {
        stalled_del(peer);
        check_soon(rdp_now_ns()); /* its doubts may end now */
        return;
    }
    bool any = false;
    for (struct conn *c = psp.all; c; c = c->lnext)
        if (needs_peer(c, peer)) {
            doubt(c);
            any = true;
        }
    if (!any) { /* nothing to keep it for */
        rdp_disconnect(psp.rdp, peer);
        return;
    }
    if (!alive_is_stalled(peer)) {
        if (nstalled == capstalled) {
            unsigned cap = capstalled ? 2 * capstalled : 8;
            uint32_t *n = realloc(stalled, cap * sizeof *n);
            if (!n) return; /* not watched: its connections end by their guards alone */
            stalled = n;
            capstalled = cap;
        }
        stalled[nstalled++] = peer;
    }
    check_soon(rdp_now_ns() + ALIVE_CHECK_NS);
}

void alive_peer_lost(uint32_t peer)
{
    stalled_del(peer);
}

void alive_node_lost(uint32_t node)
{
    for (struct conn *c = psp.all; c; c = c->lnext)
        if (c->peer && RDP_PEER_NODE(c->peer) == node && cs_rdp_or_switch(c->st)) doubt(c);
}

/* Whether c's peer's kernel answered since the doubt began. */
static bool answered(const struct conn *c, uint64_t now)
{
    struct tcp_info ti;
    socklen_t l = sizeof ti;
    memset(&ti, 0, sizeof ti);
    if (real.getsockopt(c->kfd, IPPROTO_TCP, TCP_INFO, &ti, &l) < 0) return false;
    return (uint64_t)ti.tcpi_last_ack_recv * 1000000ull < now - c->doubt_at;
}

void alive_check(uint64_t now)
{
    if (now < next_check) return;
    next_check = ndoubts || nstalled ? now + ALIVE_CHECK_NS : UINT64_MAX;
    for (struct conn *c = ndoubts ? psp.all : NULL; c; c = c->lnext) {
        if (!c->doubt_at) continue;
        bool over = c->err || !cs_rdp_or_switch(c->st);
        if (over || (!alive_is_stalled(c->peer) && answered(c, now))) alive_end(c);
    }
    for (unsigned i = 0; i < nstalled;) { /* stalled peers nobody needs: given up */
        uint32_t peer = stalled[i];
        bool any = false;
        for (struct conn *c = psp.all; c && !any; c = c->lnext) any = needs_peer(c, peer);
        if (any) {
            i++;
            continue;
        }
        stalled[i] = stalled[--nstalled];
        if (psp.rdp) rdp_disconnect(psp.rdp, peer);
    }
}

uint64_t alive_deadline(void)
{
    return ndoubts || nstalled ? next_check : UINT64_MAX;
}

/* The program's keepalive options (get and set) go under psp.lock, so that a doubt that
 * begins or ends meanwhile sees them whole: read from the kernel or kept here, never half.
 * *r: the call's result; false: not such an option (the caller makes the call). */
bool alive_getsockopt(struct conn *c, int fd, int level, int opt, void *val, socklen_t *len, int *r)
{
    int i = ka_index(level, opt);
    if (i < 0) return false;
    pthread_mutex_lock(&psp.lock);
    if (c->ka_mine && val && len && *len <= INT32_MAX) { /* an int, at most its size */
        socklen_t n = *len < sizeof(int) ? *len : (socklen_t)sizeof(int);
        memcpy(val, &c->ka[i], n);
        *len = n;
        *r = 0;
    } else {
        *r = real.getsockopt(fd, level, opt, val, len);
    }
    int e = errno;
    pthread_mutex_unlock(&psp.lock);
    errno = e;
    return true;
}

bool alive_setsockopt(struct conn *c, int fd, int level, int opt, const void *val, socklen_t len,
                      int *r)
{
    int i = ka_index(level, opt);
    if (i < 0) return false;
    pthread_mutex_lock(&psp.lock);
    int e = 0;
    *r = real.setsockopt(fd, level, opt, val, len); /* the kernel checks it */
    if (*r < 0) e = errno;
    if (*r == 0 && c->ka_mine && len >= sizeof(int)) { /* the program's, ours stay on */
        int v;
        memcpy(&v, val, sizeof v);
        c->ka[i] = i == 0 ? v != 0 : v;
        ka_ours(c);
    }
    pthread_mutex_unlock(&psp.lock);
    errno = e;
    return true;
}
