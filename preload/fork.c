/*
 * fork.c - the channel between a process under the library and the children it forks.
 *
 * A fork's child gets the program's descriptors, not the RDP endpoint: the parent's
 * connections on RDP are orphans in the child (CS_ORPHAN). When the child first uses one
 * (a read, a write, poll, epoll_ctl, shutdown, or exec with it), it asks the parent, the
 * endpoint's owner, to move the connection back to its kernel socket (conn.c, "The move
 * to TCP"), waits for the answer, and from then on both use the kernel socket as without
 * the library. A child that never uses them costs nothing but the channel: redis forks
 * for BGSAVE, and every connection stays on RDP.
 *
 * The channel is a SOCK_SEQPACKET socketpair made at fork when the parent has connections
 * on RDP: the parent's end sits in the progress thread's epoll (PSP_TAG_KID), the child's
 * is kept for its asks (a grandchild keeps it too: the owner is the one to ask). A request
 * names the connection as the parent knows it (peer, id, connector: 9 bytes); the answer
 * is one byte, an errno value (0: on TCP now; EAGAIN: ask again). The parent marks every
 * connection on RDP at that fork as shared (forked): closing it then moves it to TCP, so
 * the child can go on with it.
 */
#include "psp.h"

#include "bebytes.h"

#include <errno.h>
#include <poll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define KIDS_MAX 64
#define ASK_MS   6000

static int kids[KIDS_MAX]; /* the parent's ends of its children's channels */
static int nkids;
static int parent_fd = -1;        /* a child's end: to the endpoint's owner */
static int pending[2] = {-1, -1}; /* made in fork_prepare, split after the fork */
static pthread_mutex_t ask_lock = PTHREAD_MUTEX_INITIALIZER;

void fork_prepare(void)
{
    if (!psp.rdp || psp.epfd < 0 || nkids >= KIDS_MAX) return;
    bool any = false;
    for (struct conn *c = psp.all; c && !any; c = c->lnext) any = cs_endpoint_bound(c->st);
    int sp[2];
    if (!any || socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0) return;
    pending[0] = psp_hide(sp[0]);
    pending[1] = psp_hide(sp[1]);
}

void fork_parent(void)
{
    fdt_close_hidden(pending[1]);
    if (pending[0] >= 0) {
        struct epoll_event ev = {.events = EPOLLIN, .data.u64 = PSP_TAG_KID + (uint64_t)pending[0]};
        if (real.epoll_ctl(psp.epfd, EPOLL_CTL_ADD, pending[0], &ev) == 0) {
            kids[nkids++] = pending[0];
            for (struct conn *c = psp.all; c; c = c->lnext)
                if (cs_endpoint_bound(c->st)) c->forked = true;
        } else {
            fdt_close_hidden(pending[0]);
        }
    }
    pending[0] = pending[1] = -1;
}

void fork_child(void)
{
    for (int i = 0; i < nkids; i++) fdt_close_hidden(kids[i]); /* our siblings' channels */
    nkids = 0;
    fdt_close_hidden(pending[0]);
    if (pending[1] >= 0) {
        fdt_close_hidden(parent_fd);
        parent_fd = pending[1];
    }
    pending[0] = pending[1] = -1;
    pthread_mutex_init(&ask_lock, NULL);
    psp_spin_fork_child();
}

int fork_ask_switch(struct conn *c)
{
    uint8_t req[9], ans = EIO;
    be_put32(req, c->peer);
    be_put32(req + 4, !c->peer && c->tag ? c->tag : c->id); /* one negotiating: its tag */
    req[8] = c->connector;
    pthread_mutex_lock(&ask_lock);
    for (int tries = 0; parent_fd >= 0 && tries < 100; tries++) {
        ans = EIO;
        if (real.send(parent_fd, req, sizeof req, MSG_NOSIGNAL) != sizeof req) break;
        struct pollfd pf = {.fd = parent_fd, .events = POLLIN};
        int p;
        do p = real.poll(&pf, 1, ASK_MS);
        while (p < 0 && errno == EINTR);
        if (p != 1 || real.recv(parent_fd, &ans, 1, 0) != 1) {
            ans = EIO;
            break;
        }
        if (ans != EAGAIN) break;
        struct timespec ts = {0, 10000000};
        nanosleep(&ts, NULL);
    }
    pthread_mutex_unlock(&ask_lock);
    if (ans) {
        errno = EIO;
        return -1;
    }
    return 0;
}

static void kid_gone(int fd)
{
    real.epoll_ctl(psp.epfd, EPOLL_CTL_DEL, fd, NULL);
    fdt_close_hidden(fd);
    for (int i = 0; i < nkids; i++)
        if (kids[i] == fd) kids[i] = kids[--nkids];
    conn_kid_gone(fd);
}

/* Under psp.lock (the progress thread). */
void fork_kid_ready(int fd)
{
    uint8_t req[16];
    ssize_t n = real.recv(fd, req, sizeof req, MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
        kid_gone(fd); /* the child exited, or exec'd */
        return;
    }
    if (n != 9) return;
    /* as the child knows it: a connection still negotiating has no peer yet, and an
     * acceptor's is named by its tag until the answer (which gave it the connector's id) */
    uint32_t peer = be_get32(req), id = be_get32(req + 4);
    bool connector = req[8] != 0;
    struct conn *c = psp.all;
    while (c && !(c->connector == connector && (peer ? c->peer == peer && c->id == id
                                                     : (connector ? c->id == id : c->tag == id))))
        c = c->lnext;
    if (!c) { /* gone here: closed and moved to TCP already */
        uint8_t ok = 0;
        (void)!real.send(fd, &ok, 1, MSG_DONTWAIT | MSG_NOSIGNAL);
        return;
    }
    if (cs_fast(c->st)) conn_switch(c);          /* CS_CONNECTING: at its outcome */
    if (c->st == CS_PLAIN) conn_plain_to_tcp(c); /* not negotiated: never now */
    conn_switch_notify(c, fd);
}
