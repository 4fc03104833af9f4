/*
 * io.c - RDP's UDP socket: setup, the receive loop (recvmmsg), the transmit batch
 * (sendmmsg), ICMP errors from the error queue (IP_RECVERR), and the fault injector, which
 * sits exactly here so that everything above it sees a lossy network.
 *
 * Packets to send are collected in a batch during a round and sent with one sendmmsg at its
 * end. A buffer in the batch is marked in_tx so that an ACK arriving in the same round can't
 * recycle it before the kernel has copied it.
 */
#include "internal.h"

#include <errno.h>
#include <linux/errqueue.h>
#include <netinet/ip.h>
#include <string.h>
#include <unistd.h>

static void set_buf(int fd, int force, int plain, size_t size)
{
    int v = size > (size_t)INT32_MAX / 2 ? INT32_MAX / 2 : (int)size;
    /* SO_*BUFFORCE passes the sysctl limits when we have CAP_NET_ADMIN; else take what the
     * limits allow */
    if (setsockopt(fd, SOL_SOCKET, force, &v, sizeof v) < 0)
        (void)setsockopt(fd, SOL_SOCKET, plain, &v, sizeof v);
}

int rdp_io_socket(rdp_t *ep)
{
    const struct rdp_config *c = &ep->cfg;
    ep->family = c->bind.ss_family;
    if (ep->family != AF_INET && ep->family != AF_INET6) {
        errno = EAFNOSUPPORT;
        return -1;
    }
    int fd = socket(ep->family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    int one = 1;
    if (ep->family == AF_INET)
        setsockopt(fd, IPPROTO_IP, IP_RECVERR, &one, sizeof one);
    else
        setsockopt(fd, IPPROTO_IPV6, IPV6_RECVERR, &one, sizeof one);
    set_buf(fd, SO_RCVBUFFORCE, SO_RCVBUF, c->sock_buf);
    set_buf(fd, SO_SNDBUFFORCE, SO_SNDBUF, c->sock_buf);
    socklen_t len = c->bind_len;
    if (!len)
        len = ep->family == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6);
    if (bind(fd, (const struct sockaddr *)&c->bind, len) < 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    ep->fd = fd;
    return 0;
}

static void batch_add(rdp_t *ep, struct rdp_peer *p, struct rdp_buf *b, bool reorder)
{
    if (ep->ntx == RDP_TX_BATCH) rdp_io_flush(ep);
    unsigned i = ep->ntx++;
    ep->txiov[i].iov_base = b->data;
    ep->txiov[i].iov_len = b->len;
    memset(&ep->txm[i].msg_hdr, 0, sizeof ep->txm[i].msg_hdr);
    ep->txm[i].msg_hdr.msg_name = &p->addr;
    ep->txm[i].msg_hdr.msg_namelen = p->addrlen;
    ep->txm[i].msg_hdr.msg_iov = &ep->txiov[i];
    ep->txm[i].msg_hdr.msg_iovlen = 1;
    ep->txbuf[i] = b;
    ep->tx_reorder[i] = reorder;
    b->in_tx = true;
    p->st.pkts_sent++;
    ep->st.pkts_sent++;
    ep->st.bytes_sent += b->len;
}

/* A private copy for the injector to corrupt, so the queued original stays intact. */
static struct rdp_buf *copy_buf(rdp_t *ep, const struct rdp_buf *b)
{
    struct rdp_buf *c = rdp_pool_get(&ep->pool);
    if (!c) return NULL;
    memcpy(c->data, b->data, b->len);
    c->len = b->len;
    return c;
}

void rdp_io_queue(rdp_t *ep, struct rdp_peer *p, struct rdp_buf *b)
{
    struct rdp_fault_verdict v = rdp_injector_decide(&ep->inj, RDP_FAULT_TX);
    if (v.drop) {
        p->st.pkts_sent++;
        return;
    }
    if (v.corrupt) {
        struct rdp_buf *c = copy_buf(ep, b);
        if (c) {
            c->data[(v.bit / 8) % c->len] ^= (uint8_t)(1u << (v.bit % 8));
            batch_add(ep, p, c, v.reorder);
            rdp_pool_put(&ep->pool, c); /* freed once sent */
            b = NULL;
        }
    }
    if (b) batch_add(ep, p, b, v.reorder);
    if (v.dup && b) batch_add(ep, p, b, false);
    if (!ep->in_process) rdp_io_flush(ep);
}

void rdp_io_sign_queue(rdp_t *ep, struct rdp_peer *p, struct rdp_buf *b)
{
    uint64_t pn = p->pn_next++;
    be_put64(b->data + RDP_OFF_PN, pn);
    rdp_mac_sign_ctx(&ep->mac, ep->cfg.node_id, p->node, pn, b->data, b->len);
    b->len += RDP_MAC_LEN;
    rdp_io_queue(ep, p, b);
}

/* The injector's reorder: move the marked packets behind the others of the batch. */
static void apply_reorder(rdp_t *ep)
{
    unsigned n = ep->ntx, k = 0;
    struct mmsghdr m[RDP_TX_BATCH];
    struct rdp_buf *bufs[RDP_TX_BATCH];
    for (int pass = 0; pass < 2; pass++)
        for (unsigned i = 0; i < n; i++)
            if (ep->tx_reorder[i] == (pass == 1)) {
                m[k] = ep->txm[i];
                bufs[k++] = ep->txbuf[i];
            }
    memcpy(ep->txm, m, n * sizeof m[0]);
    memcpy(ep->txbuf, bufs, n * sizeof bufs[0]);
}

static bool is_icmp_errno(int e)
{
    return e == ECONNREFUSED || e == EHOSTUNREACH || e == ENETUNREACH || e == EHOSTDOWN ||
           e == EPROTO || e == ENOPROTOOPT || e == EMSGSIZE;
}

void rdp_io_flush(rdp_t *ep)
{
    unsigned n = ep->ntx, done = 0, tries = 0;
    if (!n) return;
    if (ep->inj.on) apply_reorder(ep);
    while (done < n && tries++ < 2 * RDP_TX_BATCH) {
        int r = sendmmsg(ep->fd, ep->txm + done, n - done, 0);
        if (r > 0) {
            done += r;
            continue;
        }
        if (r < 0 && errno == EINTR) continue;
        if (r < 0 && is_icmp_errno(errno)) {
            /* a pending ICMP error surfaced here and this packet was not sent; read the
             * error queue later, and try the packet once more */
            ep->tx_error = true;
            continue;
        }
        break; /* EAGAIN, ENOBUFS: the rest is lost; retransmission recovers it */
    }
    for (unsigned i = 0; i < n; i++) {
        struct rdp_buf *b = ep->txbuf[i];
        if (!b->in_tx) continue; /* the same buffer twice (duplicated) */
        b->in_tx = false;
        if (b->release) rdp_pool_put(&ep->pool, b);
    }
    ep->ntx = 0;
}

void rdp_io_errqueue(rdp_t *ep)
{
    for (int i = 0; i < 64; i++) {
        struct sockaddr_storage to;
        char ctl[512];
        uint8_t dummy[64];
        struct iovec iov = {dummy, sizeof dummy};
        struct msghdr m = {.msg_name = &to,
                           .msg_namelen = sizeof to,
                           .msg_iov = &iov,
                           .msg_iovlen = 1,
                           .msg_control = ctl,
                           .msg_controllen = sizeof ctl};
        if (recvmsg(ep->fd, &m, MSG_ERRQUEUE | MSG_DONTWAIT) < 0) return;
        for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c)) {
            if (!((c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_RECVERR) ||
                  (c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_RECVERR)))
                continue;
            struct sock_extended_err ee;
            memcpy(&ee, CMSG_DATA(c), sizeof ee);
            if (ee.ee_origin != SO_EE_ORIGIN_ICMP && ee.ee_origin != SO_EE_ORIGIN_ICMP6) continue;
            if (!is_icmp_errno((int)ee.ee_errno) || ee.ee_errno == EMSGSIZE) continue;
            ep->st.icmp_errors++;
            for (uint32_t k = 0; k < ep->nactive; k++) {
                struct rdp_peer *p = rdp_peer_get(ep, ep->active[k]);
                if (p && rdp_addr_equal(&p->addr, (struct sockaddr *)&to)) {
                    if (p->state != RDP_CLOSED) rdp_conn_lost(ep, p, RDP_LOST_UNREACH);
                    break;
                }
            }
        }
    }
}

/* Deliver one received datagram (after the injector) to the protocol. */
static void deliver(rdp_t *ep, unsigned i)
{
    ep->st.pkts_recv++;
    ep->st.bytes_recv += ep->rxbuf[i]->len;
    rdp_handle_packet(ep, &ep->rxbuf[i], (struct sockaddr *)&ep->rxaddr[i]);
    if (!ep->rxbuf[i]) ep->rxbuf[i] = rdp_pool_get(&ep->pool); /* the protocol kept it */
}

static int fill_rx(rdp_t *ep)
{
    for (unsigned i = 0; i < RDP_RX_BATCH; i++) {
        if (!ep->rxbuf[i] && !(ep->rxbuf[i] = rdp_pool_get(&ep->pool))) return -1;
        ep->rxiov[i].iov_base = ep->rxbuf[i]->data;
        ep->rxiov[i].iov_len = ep->max_dgram;
        memset(&ep->rxm[i].msg_hdr, 0, sizeof ep->rxm[i].msg_hdr);
        ep->rxm[i].msg_hdr.msg_name = &ep->rxaddr[i];
        ep->rxm[i].msg_hdr.msg_namelen = sizeof ep->rxaddr[i];
        ep->rxm[i].msg_hdr.msg_iov = &ep->rxiov[i];
        ep->rxm[i].msg_hdr.msg_iovlen = 1;
    }
    return 0;
}

/* Read one batch (up to RDP_RX_BATCH datagrams). Returns datagrams read: 0 when nothing is
 * waiting, -1 on a fatal socket error. */
int rdp_io_receive(rdp_t *ep)
{
    for (int tries = 0; tries < 8; tries++) {
        if (fill_rx(ep) < 0) return 0;
        int n = recvmmsg(ep->fd, ep->rxm, RDP_RX_BATCH, MSG_DONTWAIT, NULL);
        if (n < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK) return 0;
            if (errno == EINTR) continue;
            if (is_icmp_errno(errno)) {
                rdp_io_errqueue(ep);
                continue;
            }
            return -1;
        }
        unsigned later[RDP_RX_BATCH], nlater = 0;
        for (int i = 0; i < n; i++) {
            struct rdp_buf *b = ep->rxbuf[i];
            b->len = ep->rxm[i].msg_len;
            if (ep->rxm[i].msg_hdr.msg_flags & MSG_TRUNC) {
                ep->st.pkts_recv++;
                rdp_count_drop(ep, NULL, RDP_DROP_MALFORMED);
                continue;
            }
            struct rdp_fault_verdict v = rdp_injector_decide(&ep->inj, RDP_FAULT_RX);
            if (v.drop) continue;
            if (v.corrupt && b->len) b->data[(v.bit / 8) % b->len] ^= (uint8_t)(1u << (v.bit % 8));
            if (v.dup) {
                struct rdp_buf *c = copy_buf(ep, b);
                if (c) {
                    ep->st.pkts_recv++;
                    rdp_handle_packet(ep, &c, (struct sockaddr *)&ep->rxaddr[i]);
                    if (c) rdp_pool_put(&ep->pool, c);
                }
            }
            if (v.reorder) {
                later[nlater++] = (unsigned)i;
                continue;
            }
            deliver(ep, (unsigned)i);
        }
        for (unsigned k = 0; k < nlater; k++) deliver(ep, later[k]);
        if (ep->tx_error) {
            ep->tx_error = false;
            rdp_io_errqueue(ep);
        }
        return n;
    }
    return 0;
}
