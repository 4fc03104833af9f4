/*
 * xkernel.c - the kernel's TCP as a connection's transport (xport.h): the kernel socket
 * itself, which the library calls without blocking there (a call that must wait sleeps in
 * wait_conns_k on the socket and on whatever else may change, wait.c).
 *
 * The program's calls on a connection that is the kernel's for good pass through
 * (io.c, sock.c, poll.c, epoll.c: CS_TCP); here is what the library does on the socket
 * itself: the TCP phase's reads and writes, counted (conn.c, "The TCP phase"), and the
 * peer's bytes still there after the move up; the readiness of the socket; the bytes the
 * move back held for it (CS_DRAIN, and the responder of a move), written as the guard's
 * EPOLLOUT allows. xkernel_ops is the transport of every state but the fast path's: its
 * bytes go through the program's own calls, so it sends nothing owed but the end of a cork.
 */
#include "psp.h"

#include <errno.h>
#include <netinet/tcp.h>

/* Bytes on the kernel socket (TCP phase, or the peer's still to read), never blocking:
 * what recvmsg or sendmsg returned, counted. */
ssize_t kernel_io(struct conn *c, bool out, const struct iovec *iov, int iovcnt, size_t done,
                  size_t n, int flags)
{
    struct iovec v[64];
    size_t got;
    int nv = iov_slice(iov, iovcnt, done, n, v, 64, &got);
    struct msghdr mh = {.msg_iov = v, .msg_iovlen = (size_t)nv};
    ssize_t r;
    if (out) {
        r = real.sendmsg(c->kfd, &mh, flags | MSG_DONTWAIT);
        if (r > 0) {
            c->k_tx += (uint64_t)r;
            c->tx_bytes += (uint64_t)r;
            c->kmore = flags & MSG_MORE;
            psp.tcp_tx += (uint64_t)r;
            psp.tcp_tx_msgs++;
        }
    } else {
        r = real.recvmsg(c->kfd, &mh, flags | MSG_DONTWAIT);
        if (r > 0 && !(flags & MSG_PEEK)) {
            c->k_rx += (uint64_t)r;
            c->rx_total += (uint64_t)r;
            psp.tcp_rx += (uint64_t)r;
            psp.tcp_rx_msgs++;
        }
    }
    return r;
}

/* Bytes the kernel socket holds back for a MSG_MORE of the TCP phase go out when the next
 * write without it comes, as the kernel would send them then: nothing more is written
 * there to push them, so a cork set and cleared does. (A cork the program set stays on the
 * kernel socket too: its uncork, which the kernel sees as well, pushes them.) */
void kernel_push(struct conn *c)
{
    if (!c->kmore) return;
    c->kmore = false;
    int on = 1, off = 0;
    real.setsockopt(c->kfd, IPPROTO_TCP, TCP_CORK, &on, sizeof on);
    if (!c->cork_on) real.setsockopt(c->kfd, IPPROTO_TCP, TCP_CORK, &off, sizeof off);
}

/* The kernel socket's readiness now (the TCP phase, the peer's bytes still there). */
short kernel_poll(const struct conn *c, short events)
{
    struct pollfd p = {.fd = c->kfd, .events = events};
    return c->kfd >= 0 && real.poll(&p, 1, 0) == 1 ? p.revents : 0;
}

/* Write what is held to the kernel socket, without blocking; true when all is out. */
bool drain_hold(struct conn *c)
{
    while (c->hold) {
        struct chunk *ch = c->hold;
        ssize_t w =
            real.send(c->kfd, ch->data + ch->off, ch->len - ch->off, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (w < 0) {
            if (errno == EAGAIN || errno == EINTR) return false;
            c->err = errno;
            free_chunks(c->hold);
            c->hold = NULL;
            c->hold_tail = &c->hold;
            c->hold_bytes = 0;
            return true;
        }
        psp.tcp_tx += (uint64_t)w;
        psp.tcp_tx_msgs++;
        ch->off += (size_t)w;
        c->hold_bytes -= (size_t)w;
        if (ch->off == ch->len) {
            c->hold = ch->next;
            if (!c->hold) c->hold_tail = &c->hold;
            chunk_free(ch);
        }
    }
    return true;
}

/* the guard's EPOLLOUT, once, for writing held bytes to the kernel socket */
void guard_out(struct conn *c)
{
    if (psp.epfd < 0) return;
    struct epoll_event ev = {.events = EPOLLOUT | EPOLLONESHOT, .data.u64 = 16u + (uint64_t)c->kfd};
    if (real.epoll_ctl(psp.epfd, EPOLL_CTL_MOD, c->kfd, &ev) < 0 && errno == ENOENT)
        real.epoll_ctl(psp.epfd, EPOLL_CTL_ADD, c->kfd, &ev);
}

/* Nothing is owed to a peer on the kernel's path; the end goes after what a cork held. */
static void kernel_send_owed(struct conn *c)
{
    if (c->up_owed) return;
    if (c->tx_fin) conn_uncork(c);
}

const struct conn_ops xkernel_ops = {
    .name = "tcp",
    .state = CS_TCP,
    .read = conn_rxq_read, /* (its queue is empty: the program reads the kernel's) */
    .send_owed = kernel_send_owed,
};
