/*
 * io.c - RDP's UDP socket: setup, the receive loop (recvmmsg), the transmit batch
 * (sendmmsg), ICMP errors from the error queue (IP_RECVERR), and the fault injector, which
 * sits exactly here so that everything above it sees a lossy network.
 *
 * Packets to send are collected in a batch during a round and sent with one sendmmsg at its
 * end. A buffer in the batch is marked in_tx so that an ACK arriving in the same round can't
 * recycle it before the kernel has copied it.
 *
 * Offload, where datagrams are MTU-sized (not on loopback's 64 KiB datagrams): a run of
 * equal-sized packets to one peer leaves as one UDP GSO send (UDP_SEGMENT), which the kernel
 * or the NIC cuts into datagrams, and the socket reads with UDP_GRO, so the kernel may hand
 * over up to 64 KiB of same-sized datagrams at once; they are split here. Sending is decided
 * per peer (an endpoint with 64 KiB datagrams still coalesces what it sends to a peer with a
 * smaller MTU); reading coalesced is for the whole endpoint: from the start where its own
 * datagrams are small, else from the first peer with small ones on. Every datagram
 * keeps its own header and MAC: offload changes the cost per datagram, never the wire. A
 * device that can't do GSO (EIO) turns it off for the endpoint.
 */
#include "internal.h"
#include "trace.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/errqueue.h>
#include <netinet/ip.h>
#include <netinet/udp.h>
#include <stdlib.h>
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
    ep->gso = c->offload != 0; /* a send with UDP_SEGMENT says whether the kernel can */
    ep->want_gro = c->offload && rdp_io_coalescable(ep->payload);
    return 0;
}

bool rdp_io_coalescable(uint32_t payload)
{
    return payload + RDP_OVERHEAD <= RDP_GSO_BYTES / 2;
}

/* Read coalesced (UDP_GRO) from now on: from the start where our own datagrams are small, and
 * on an endpoint with large ones once a peer sends small ones (its own large datagrams then
 * take the same way, at the cost of a copy of each one the protocol keeps). Between reads
 * only: the receive slots are rebuilt. Without memory or kernel support it stays as it is. */
static void rx_enable_gro(rdp_t *ep)
{
    ep->want_gro = false;
    if (ep->gro) return;
    int one = 1;
    uint8_t *g = malloc((size_t)RDP_RX_BATCH * RDP_GRO_BUF);
    if (!g || setsockopt(ep->fd, SOL_UDP, UDP_GRO, &one, sizeof one) < 0) {
        free(g);
        return;
    }
    ep->grobuf = g;
    for (unsigned i = 0; i < RDP_RX_BATCH; i++) {
        rdp_pool_put(&ep->pool, ep->rxbuf[i]);
        ep->rxbuf[i] = NULL;
    }
    ep->rx_dirty = RDP_RX_BATCH;
    ep->gro = true;
}

static void batch_add(rdp_t *ep, struct rdp_peer *p, struct rdp_buf *b, bool reorder)
{
    if (ep->ntx == RDP_TX_BATCH) rdp_io_flush(ep);
    ep->tx[ep->ntx++] = (struct rdp_txent){b, p, reorder};
    b->in_tx = true;
    p->st.pkts_sent++;
    ep->st.pkts_sent++;
    ep->st.bytes_sent += b->len;
}

void rdp_io_queue(rdp_t *ep, struct rdp_peer *p, struct rdp_buf *b)
{
    struct rdp_fault_verdict v = rdp_injector_decide(&ep->inj, RDP_FAULT_TX);
    if (v.drop) {
        p->st.pkts_sent++;
        return;
    }
    if (v.corrupt) { /* a private copy to corrupt: the queued original stays intact */
        struct rdp_buf *c = rdp_pool_copy(&ep->pool, b);
        if (c) {
            c->data[(v.bit / 8) % c->len] ^= (uint8_t)(1u << (v.bit % 8));
            batch_add(ep, p, c, v.reorder);
            rdp_pool_put(&ep->pool, c); /* freed once sent */
            b = NULL;
        }
    }
    /* a duplicated packet is not also held back: both copies share the buffer */
    if (b) batch_add(ep, p, b, v.reorder && !v.dup);
    if (v.dup && b) batch_add(ep, p, b, false);
    if (!ep->in_process) rdp_io_flush(ep);
}

void rdp_io_sign_queue(rdp_t *ep, struct rdp_peer *p, struct rdp_buf *b)
{
    uint8_t type = b->data[1];
    if (type != RDP_T_DATA && type != RDP_T_ACK) {
        /* handshakes and resets: pn 0, the handshake key's MAC (the header says 0) */
        be_put64(b->data + RDP_OFF_PN, 0);
        be_put16(b->data + RDP_OFF_MAC, 0);
        rdp_hs_sign(rdp_peer_hkey(ep, p), b->data, b->len);
    } else {
        uint64_t pn = p->pn_next++;
        be_put64(b->data + RDP_OFF_PN, pn);
        enum rdp_mac_alg alg = p->mac_tx;
        be_put16(b->data + RDP_OFF_MAC, (uint16_t)alg);
        if (b->ext) /* the MAC goes behind the header until the payload is copied in */
            rdp_mac_sign_split(&p->key_tx, alg, ep->cfg.node_id, RDP_PEER_NODE(p->node), pn,
                               b->data, RDP_HDR_LEN, b->ext, b->len - RDP_HDR_LEN,
                               b->data + RDP_HDR_LEN);
        else
            rdp_mac_sign_ctx(&p->key_tx, alg, ep->cfg.node_id, RDP_PEER_NODE(p->node), pn, b->data,
                             b->len);
    }
    b->len += RDP_MAC_LEN;
    rdp_io_queue(ep, p, b);
}

/* The injector's reorder: a marked packet is held back until the next flush and leaves behind
 * that flush's packets (alone, if the next flush has none: at the latest at the end of the
 * next rdp_process round), so a packet is reordered even when it is the only one of its
 * batch. Held packets stay in_tx, so they are neither recycled nor queued twice. */
static void injector_reorder(rdp_t *ep)
{
    struct rdp_txent keep[RDP_TX_BATCH], fresh[RDP_TX_BATCH];
    unsigned nk = 0, nf = 0;
    for (unsigned i = 0; i < ep->ntx; i++) {
        if (ep->tx[i].reorder)
            fresh[nf++] = ep->tx[i];
        else
            keep[nk++] = ep->tx[i];
    }
    /* the packets held before go now, behind the others, as far as the batch has room; the
     * rest and then the fresh ones wait (they always fit: see the count below) */
    unsigned take = ep->nheld < RDP_TX_BATCH - nk ? ep->nheld : RDP_TX_BATCH - nk;
    memcpy(keep + nk, ep->held, take * sizeof keep[0]);
    nk += take;
    unsigned rest = ep->nheld - take; /* rest + nf <= nheld + ntx - RDP_TX_BATCH <= nheld */
    memmove(ep->held, ep->held + take, rest * sizeof ep->held[0]);
    for (unsigned i = 0; i < nf; i++) {
        fresh[i].reorder = false;
        ep->held[rest++] = fresh[i];
    }
    ep->nheld = rest;
    memcpy(ep->tx, keep, nk * sizeof keep[0]);
    ep->ntx = nk;
}

/* Forget the held packets to p (it is being removed). */
void rdp_io_forget_peer(rdp_t *ep, struct rdp_peer *p)
{
    unsigned k = 0;
    for (unsigned i = 0; i < ep->nheld; i++) {
        struct rdp_buf *b = ep->held[i].buf;
        if (ep->held[i].peer != p) {
            ep->held[k++] = ep->held[i];
            continue;
        }
        b->in_tx = false;
        if (b->release) rdp_pool_put(&ep->pool, b);
    }
    ep->nheld = k;
}

static bool is_icmp_errno(int e)
{
    return e == ECONNREFUSED || e == EHOSTUNREACH || e == ENETUNREACH || e == EHOSTDOWN ||
           e == EPROTO || e == ENOPROTOOPT || e == EMSGSIZE;
}

/* Whether packets to p may leave coalesced: where its datagrams are MTU-sized, which they are
 * also from an endpoint with larger datagrams (loopback's) to a peer with a smaller MTU. */
static bool gso_to(const rdp_t *ep, const struct rdp_peer *p)
{
    return ep->gso && rdp_io_coalescable(p->payload);
}

/* Group the batch's packets from pkt on into sends, from gsom[at] on: with GSO a run of
 * packets to one peer, all as long as the first but a shorter last, is one send. Returns the
 * number of sends. */
static unsigned build_sends(rdp_t *ep, unsigned pkt, unsigned at)
{
    unsigned n = at;
    for (unsigned i = pkt; i < ep->ntx; n++) {
        struct msghdr *h = &ep->gsom[n].msg_hdr;
        struct rdp_peer *to = ep->tx[i].peer;
        memset(h, 0, sizeof *h);
        h->msg_name = &to->addr;
        h->msg_namelen = to->addrlen;
        h->msg_iov = &ep->txiov[ep->txfirst[i]];
        ep->gsofirst[n] = i;
        size_t seg = ep->tx[i].buf->len, total = seg;
        unsigned j = i + 1;
        while (gso_to(ep, to) && j < ep->ntx && j - i < RDP_GSO_SEGS && ep->tx[j].peer == to &&
               ep->tx[j - 1].buf->len == seg && ep->tx[j].buf->len <= seg &&
               total + ep->tx[j].buf->len <= RDP_GSO_BYTES)
            total += ep->tx[j++].buf->len;
        h->msg_iovlen = ep->txfirst[j] - ep->txfirst[i];
        if (j - i > 1) {
            h->msg_control = ep->gsoctl[n].buf;
            h->msg_controllen = sizeof ep->gsoctl[n].buf;
            struct cmsghdr *cm = CMSG_FIRSTHDR(h);
            cm->cmsg_level = SOL_UDP;
            cm->cmsg_type = UDP_SEGMENT;
            cm->cmsg_len = CMSG_LEN(sizeof(uint16_t));
            uint16_t g = (uint16_t)seg;
            memcpy(CMSG_DATA(cm), &g, sizeof g);
        }
        i = j;
    }
    return n - at;
}

void rdp_io_flush(rdp_t *ep)
{
    if (ep->nheld || (ep->inj.on && ep->ntx)) injector_reorder(ep);
    unsigned n = ep->ntx, done = 0, tries = 0, k = 0;
    if (!n) return;
    for (unsigned i = 0; i < n; i++) {
        struct rdp_buf *b = ep->tx[i].buf;
        ep->txfirst[i] = k;
        if (b->ext) { /* header, the caller's payload, MAC */
            size_t plen = b->len - RDP_OVERHEAD;
            ep->txiov[k++] = (struct iovec){b->data, RDP_HDR_LEN};
            ep->txiov[k++] = (struct iovec){(void *)(uintptr_t)b->ext, plen};
            ep->txiov[k++] = (struct iovec){b->data + RDP_HDR_LEN, RDP_MAC_LEN};
        } else {
            ep->txiov[k++] = (struct iovec){b->data, b->len};
        }
    }
    ep->txfirst[n] = k;
    unsigned nsend = build_sends(ep, 0, 0);
    while (done < nsend && tries++ < 2 * RDP_TX_BATCH) {
        rdp_trace(RDP_TR_SEND_IN, n);
        int r = sendmmsg(ep->fd, ep->gsom + done, nsend - done, MSG_DONTWAIT);
        rdp_trace(RDP_TR_SEND_OUT, r > 0 ? (uint32_t)r : 0);
        if (r > 0) {
            for (int m = 0; m < r; m++)
                ep->st.gso_sends += ep->gsom[done + m].msg_hdr.msg_controllen != 0;
            done += (unsigned)r;
            continue;
        }
        if (r < 0 && errno == EINTR) continue;
        if (r < 0 && (errno == EIO || errno == EINVAL) && ep->gso &&
            ep->gsom[done].msg_hdr.msg_controllen != 0) {
            /* the device (EIO) or the kernel (EINVAL) can't segment: send datagram by datagram
             * from now on */
            ep->gso = false;
            nsend = done + build_sends(ep, ep->gsofirst[done], done);
            continue;
        }
        if (r < 0 && is_icmp_errno(errno)) {
            /* a pending ICMP error surfaced here and this packet was not sent; read the
             * error queue later, and try the packet once more */
            ep->tx_error = true;
            continue;
        }
        break; /* EAGAIN, ENOBUFS: the rest is lost; retransmission recovers it */
    }
    for (unsigned i = 0; i < n; i++) {
        struct rdp_buf *b = ep->tx[i].buf;
        if (!b->in_tx) continue; /* the same buffer twice (duplicated) */
        b->in_tx = false;
        if (b->release) rdp_pool_put(&ep->pool, b);
    }
    ep->ntx = 0;
}

/* An ICMP error names a peer's address. It is not authenticated (anyone on the path, or
 * anyone who can guess the ports, can send one), so it never ends an established
 * connection: only the protocol's own silence does (RFC 1122 4.2.3.9 and RFC 5927 treat
 * such errors as soft for TCP). It fails a connection attempt at once, where nothing is
 * lost but a SYN and the peer's port is most likely really closed. */
static void icmp_hint(rdp_t *ep, struct rdp_peer *p)
{
    p->st.icmp_errors++;
    if (p->state == RDP_SYN_SENT && !p->peer_known) rdp_conn_lost(ep, p, RDP_LOST_UNREACH);
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
                struct rdp_peer *p = ep->active[k];
                if (p && rdp_addr_equal(&p->addr, (struct sockaddr *)&to)) {
                    icmp_hint(ep, p);
                    break;
                }
            }
        }
    }
}

/* Hand one datagram to the protocol. b sits in receive slot `slot`, or (slot < 0) is a pool
 * buffer of its own that goes back to the pool unless the protocol keeps it, or a borrowed
 * view of a coalesced read (the protocol keeps a copy, if anything). */
static void deliver(rdp_t *ep, struct rdp_buf *b, int slot, const struct sockaddr *from)
{
    ep->st.pkts_recv++;
    ep->st.bytes_recv += b->len;
    struct rdp_buf *h = b;
    rdp_handle_packet(ep, &h, from);
    if (slot >= 0) {
        if (!h) ep->rxbuf[slot] = NULL; /* kept: fill_rx takes a new one */
    } else if (h)
        rdp_pool_put(&ep->pool, h);
}

#define RX_LATER 64

struct rx_later {
    struct rdp_buf *b;
    int slot;
    unsigned from;
};

/* One received datagram through the injector; reordered ones wait in later[]. */
static void rx_datagram(rdp_t *ep, struct rdp_buf *b, int slot, unsigned from,
                        struct rx_later *later, unsigned *nlater)
{
    const struct sockaddr *sa = (const struct sockaddr *)&ep->rxaddr[from];
    struct rdp_fault_verdict v = rdp_injector_decide(&ep->inj, RDP_FAULT_RX);
    if (v.drop) {
        if (slot < 0) rdp_pool_put(&ep->pool, b);
        return;
    }
    if (v.corrupt && b->len) b->data[(v.bit / 8) % b->len] ^= (uint8_t)(1u << (v.bit % 8));
    if (v.dup) {
        struct rdp_buf *c = rdp_pool_copy(&ep->pool, b);
        if (c) deliver(ep, c, -1, sa);
    }
    if (v.reorder && *nlater < RX_LATER) {
        struct rdp_buf *k = rdp_buf_keep(&ep->pool, b); /* a view would be gone by then */
        if (k) {
            later[(*nlater)++] = (struct rx_later){k, k == b ? slot : -1, from};
            return;
        }
    }
    deliver(ep, b, slot, sa);
}

static void *rx_base(rdp_t *ep, unsigned i)
{
    return ep->gro ? ep->grobuf + (size_t)i * RDP_GRO_BUF : ep->rxbuf[i]->data;
}

/* Make the receive slots ready for recvmmsg. Only the slots the last read used (rx_dirty of
 * them, from the start) need work: a fresh buffer where the protocol kept one, and the
 * fields the kernel wrote back. */
static int fill_rx(rdp_t *ep)
{
    for (unsigned i = 0; i < ep->rx_dirty; i++) {
        if (!ep->gro && !ep->rxbuf[i] && !(ep->rxbuf[i] = rdp_pool_get(&ep->pool))) {
            /* try the rest again next time; a slot without a buffer takes nothing (a read
             * into it is truncated: dropped) */
            for (unsigned j = i; j < RDP_RX_BATCH; j++)
                if (!ep->rxbuf[j]) ep->rxiov[j] = (struct iovec){NULL, 0};
            ep->rx_dirty = RDP_RX_BATCH;
            return -1;
        }
        ep->rxiov[i].iov_base = rx_base(ep, i);
        ep->rxiov[i].iov_len = ep->gro ? RDP_GRO_BUF : ep->max_dgram;
        struct msghdr *h = &ep->rxm[i].msg_hdr;
        memset(h, 0, sizeof *h);
        h->msg_name = &ep->rxaddr[i];
        h->msg_namelen = sizeof ep->rxaddr[i];
        h->msg_iov = &ep->rxiov[i];
        h->msg_iovlen = 1;
        if (ep->gro) {
            h->msg_control = ep->groctl[i].buf;
            h->msg_controllen = sizeof ep->groctl[i].buf;
        }
    }
    ep->rx_dirty = 0;
    return 0;
}

/* The datagram size of a coalesced read: UDP_GRO's control message, else the whole read. */
static size_t gro_size(struct msghdr *h, size_t len)
{
    for (struct cmsghdr *c = CMSG_FIRSTHDR(h); c; c = CMSG_NXTHDR(h, c))
        if (c->cmsg_level == SOL_UDP && c->cmsg_type == UDP_GRO) {
            int g;
            memcpy(&g, CMSG_DATA(c), sizeof g);
            if (g > 0 && (size_t)g < len) return (size_t)g;
        }
    return len;
}

/* Split a coalesced read into its datagrams (an empty read is one too). Each is handled in
 * place, as a borrowed view of the read buffer; the protocol copies the few it keeps (those
 * that arrive ahead of a gap), so in-order data is copied once, into the message. */
static void rx_split(rdp_t *ep, unsigned i, size_t len, struct rx_later *later, unsigned *nlater)
{
    uint8_t *p = rx_base(ep, i);
    size_t g = gro_size(&ep->rxm[i].msg_hdr, len), off = 0;
    ep->st.gro_reads += g < len;
    do {
        size_t n = len - off < g ? len - off : g;
        if (n <= ep->max_dgram) {
            struct rdp_buf view = {.data = p + off, .len = (uint32_t)n, .borrowed = true};
            rx_datagram(ep, &view, -1, i, later, nlater);
        } else { /* larger than we accept (as MSG_TRUNC would say) */
            ep->st.pkts_recv++;
            rdp_count_drop(ep, NULL, RDP_DROP_MALFORMED);
        }
        off += n;
    } while (off < len);
}

/* Handle n datagrams that the last read put into the receive slots. */
void rdp_io_handle(rdp_t *ep, int n)
{
    ep->rx_dirty = n > 0 ? (unsigned)n : 0;
    struct rx_later later[RX_LATER];
    unsigned nlater = 0;
    for (int i = 0; i < n; i++) {
        size_t len = ep->rxm[i].msg_len;
        if (ep->rxm[i].msg_hdr.msg_flags & MSG_TRUNC) {
            ep->st.pkts_recv++;
            rdp_count_drop(ep, NULL, RDP_DROP_MALFORMED);
            continue;
        }
        if (!len) { /* a wake-up (rdp_rx_wait), not a packet: nothing in it to read */
            ep->st.wakeups++;
            continue;
        }
        if (ep->gro) {
            rx_split(ep, (unsigned)i, len, later, &nlater);
            continue;
        }
        ep->rxbuf[i]->len = (uint32_t)len;
        rx_datagram(ep, ep->rxbuf[i], i, (unsigned)i, later, &nlater);
    }
    for (unsigned k = 0; k < nlater; k++)
        deliver(ep, later[k].b, later[k].slot, (const struct sockaddr *)&ep->rxaddr[later[k].from]);
    if (ep->tx_error) {
        ep->tx_error = false;
        rdp_io_errqueue(ep);
    }
}

/* Make the slots ready for a read. -1 when no buffer is to be had. */
static int rx_ready(rdp_t *ep)
{
    if (ep->want_gro) rx_enable_gro(ep);
    return fill_rx(ep);
}

/* Read one batch (up to RDP_RX_BATCH reads). Returns reads done: 0 when nothing is waiting
 * or a thread has claimed the reads (rdp_rx_claim), -1 on a fatal socket error. */
int rdp_io_receive(rdp_t *ep)
{
    if (ep->rx_claimed) return 0;
    for (int tries = 0; tries < 8; tries++) {
        if (rx_ready(ep) < 0) return 0;
        rdp_trace(RDP_TR_RECV_IN, 0);
        int n = recvmmsg(ep->fd, ep->rxm, RDP_RX_BATCH, MSG_DONTWAIT, NULL);
        rdp_trace(RDP_TR_RECV_OUT, n > 0 ? (uint32_t)n : 0);
        if (n < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK) return 0;
            if (errno == EINTR) continue;
            if (is_icmp_errno(errno)) {
                rdp_io_errqueue(ep);
                continue;
            }
            return -1;
        }
        rdp_io_handle(ep, n);
        return n;
    }
    return 0;
}

int rdp_rx_claim(rdp_t *ep)
{
    if (ep->rx_claimed) {
        errno = EBUSY;
        return -1;
    }
    if (!ep->rx_blocking) { /* every other call on the socket says MSG_DONTWAIT */
        int fl = fcntl(ep->fd, F_GETFL);
        if (fl < 0 || fcntl(ep->fd, F_SETFL, fl & ~O_NONBLOCK) < 0) return -1;
        ep->rx_blocking = true;
    }
    (void)rx_ready(ep); /* without buffers: slots that drop what they take */
    ep->rx_claimed = true;
    return 0;
}

int rdp_rx_wait(rdp_t *ep)
{
    for (;;) {
        rdp_trace(RDP_TR_RECV_IN, 0);
        int n = recvmmsg(ep->fd, ep->rxm, RDP_RX_BATCH, MSG_WAITFORONE, NULL);
        rdp_trace(RDP_TR_RECV_OUT, n > 0 ? (uint32_t)n : 0);
        /* an ICMP error for an earlier send: the error queue is read under the caller's
         * lock (rdp_rx_done), and the wait goes on */
        if (n < 0 && is_icmp_errno(errno)) {
            ep->rx_icmp = true;
            continue;
        }
        return n;
    }
}

int rdp_rx_done(rdp_t *ep, int n)
{
    ep->rx_claimed = false;
    if (ep->rx_icmp) { /* the error queue, at the end of the round */
        ep->rx_icmp = false;
        ep->tx_error = true;
    }
    return rdp_process_from(ep, n > 0 ? n : 0);
}
