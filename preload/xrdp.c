/*
 * xrdp.c - RDP as a connection's transport (xport.h): between processes of two nodes, each
 * connection's bytes travel as messages (wire.h) over the one RDP connection between their
 * two endpoints, with per-connection credit (conn.c), and arrive in conn_rdp_recv, from the
 * progress thread or from an rdp_send in a program thread, always under psp.lock.
 *
 * Here: the peers (their endpoints and keys, from the negotiation's answer), the table
 * that names a connection by (peer, id, connector), the messages each way (DATA, CREDIT,
 * UP, the ends; the move back's SWITCH, SWITCH_ACK, RETURN, RETURN_END: conn.c, "The move
 * to TCP"), messages that came before their connection was known (orphans), and the
 * callbacks of RDP (a peer lost, a message undeliverable, room to send again).
 */
#include "psp.h"
#include "wire.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define HASH_SIZE 4096u

struct pl_peer {
    uint32_t id;
    uint8_t key[32];
    struct pl_peer *next;
};
static struct pl_peer *peers; /* the RDP peers we added, with their keys (psp.lock) */

/* Messages for a connection this side does not know yet: the two psids tell the two
 * processes in turn, so the first bytes of one may arrive before the other learned of the
 * connection. They wait here (bounded) for it, and are answered with RST after ORPHAN_NS. */
struct orphan {
    uint32_t peer, id;
    bool connector; /* the side the message is for */
    uint64_t at;
    size_t len;
    struct orphan *next;
    uint8_t msg[]; /* the whole message, header first */
};
#define ORPHAN_NS  2000000000ull
#define ORPHAN_MAX (8u << 20) /* bytes held in all */
static struct orphan *orphans, **orphans_tail = &orphans;
static size_t orphan_bytes;
static void orphans_adopt(struct conn *c);
static void deliver(struct conn *c, const struct plw_msg *m, const struct iovec *iov, int iovcnt,
                    size_t len);

static unsigned hash_of(uint32_t peer, uint32_t id, bool connector)
{
    return ((peer * 0x9e3779b1u) ^ (id * 0x85ebca6bu) ^ connector) & (HASH_SIZE - 1);
}

bool conn_rdp_peers(void)
{
    return __atomic_load_n(&peers, __ATOMIC_ACQUIRE) != NULL;
}

struct conn *conn_find(uint32_t peer, uint32_t id, bool connector)
{
    if (!psp.hash) return NULL;
    for (struct conn *c = psp.hash[hash_of(peer, id, connector)]; c; c = c->hnext)
        if (c->peer == peer && c->id == id && c->connector == connector) return c;
    return NULL;
}

static void hash_add(struct conn *c)
{
    if (!psp.hash) psp.hash = calloc(HASH_SIZE, sizeof *psp.hash);
    if (!psp.hash) return;
    unsigned h = hash_of(c->peer, c->id, c->connector);
    c->hnext = psp.hash[h];
    psp.hash[h] = c;
}

void xrdp_unhash(struct conn *c)
{
    if (!psp.hash) return;
    for (struct conn **p = &psp.hash[hash_of(c->peer, c->id, c->connector)]; *p; p = &(*p)->hnext)
        if (*p == c) {
            *p = c->hnext;
            return;
        }
}

static uint8_t flags_of(const struct conn *c)
{
    return c->connector ? PLW_FROM_CONNECTOR : 0;
}

/* Every message to a peer goes through here: a send may arm an RDP timer earlier than the
 * progress thread's (a retransmission), which must then be told. -1 with EAGAIN when RDP's
 * queue to the peer is full: the connection waits for can_send. */
static int sendv(struct conn *c, const struct iovec *iov, int n)
{
    int r = rdp_sendv(psp.rdp, c->peer, iov, n);
    if (r < 0 && errno == EAGAIN) c->rdp_full = true;
    if (rdp_next_deadline(psp.rdp) < psp.armed) psp_arm_timer();
    return r;
}

/* A message without bytes. */
static int send_ctl(struct conn *c, uint8_t type, uint32_t aux)
{
    uint8_t h[PLW_HDR];
    plw_encode(h, type, flags_of(c), c->id, aux);
    struct iovec v = {h, sizeof h};
    return sendv(c, &v, 1);
}

/* Send what was held while the connection waited for its outcome (or a cork held): as
 * much in one message as credit and the message size allow, over chunks. */
static void flush_hold_rdp(struct conn *c)
{
    if (c->cork_until || c->up_owed) return; /* corked: conn_uncork sends it; UP first */
    while (c->hold && c->credit) {
        size_t lim = c->credit < PLW_MAX_DATA ? c->credit : PLW_MAX_DATA, n = 0;
        struct iovec iov[1 + 16];
        int nv = 1;
        for (struct chunk *ch = c->hold; ch && nv < 17 && n < lim; ch = ch->next) {
            size_t off = ch == c->hold ? ch->off : 0, l = ch->len - off;
            if (l > lim - n) l = lim - n;
            iov[nv++] = (struct iovec){ch->data + off, l};
            n += l;
        }
        uint8_t h[PLW_HDR];
        plw_encode(h, PLW_DATA, flags_of(c), c->id, 0);
        iov[0] = (struct iovec){h, PLW_HDR};
        if (sendv(c, iov, nv) < 0) return;
        c->credit -= n;
        c->hold_bytes -= n; /* counted in tx_bytes when the program wrote them */
        psp.rdp_tx += n;
        psp.rdp_tx_msgs++;
        hold_consume(c, n);
    }
}

/* UP before anything else of ours; then credit, the end (the last close's CLOSE, or RST
 * with SO_LINGER 0), after what a cork held and what is held. */
static void xrdp_send_owed(struct conn *c)
{
    if (c->up_owed && psp.rdp) {
        uint8_t h[PLW_HDR], n[PLW_UP_LEN];
        plw_encode(h, PLW_UP, flags_of(c), c->id, 0);
        for (int i = 0; i < PLW_UP_LEN; i++) n[i] = (uint8_t)(c->k_tx >> (56 - 8 * i));
        struct iovec v[2] = {{h, PLW_HDR}, {n, PLW_UP_LEN}};
        if (sendv(c, v, 2) < 0) return; /* RDP full: can_send comes back here */
        c->up_owed = false;
    }
    if (c->up_owed) return;
    if (c->tx_fin) conn_uncork(c); /* the end goes after what a cork held */
    if (c->st != CS_RDP || !psp.rdp) return;
    if (c->credit_owed && c->rx_unacked) {
        if (send_ctl(c, PLW_CREDIT, (uint32_t)c->rx_unacked) == 0) {
            c->rx_unacked = 0;
            c->credit_owed = false;
        }
    }
    if (c->tx_fin && !c->tx_fin_sent && !c->hold) {
        uint8_t t = c->nfds ? PLW_FIN : (c->linger0 ? PLW_RST : PLW_CLOSE);
        if (send_ctl(c, t, t == PLW_RST ? ECONNRESET : 0) == 0) c->tx_fin_sent = true;
    }
}

/* Straight from the program's iov, nothing held before: one DATA message, as much as the
 * credit (n) and a message take. */
static ssize_t xrdp_write(struct conn *c, const struct iovec *iov, int iovcnt, size_t done,
                          size_t n)
{
    if (n > PLW_MAX_DATA) n = PLW_MAX_DATA;
    /* the slice [done, done+n) of the program's iov (found from done each time: the kernel's
     * part of this call, before a move up, counts too), after the header */
    struct iovec v[1 + 64];
    int nv = 1 + iov_slice(iov, iovcnt, done, n, v + 1, 64, &n);
    uint8_t h[PLW_HDR];
    plw_encode(h, PLW_DATA, flags_of(c), c->id, 0);
    v[0] = (struct iovec){h, PLW_HDR};
    if (sendv(c, v, nv) < 0) return -1;
    c->credit -= n;
    c->tx_bytes += n;
    psp.rdp_tx += n;
    psp.rdp_tx_msgs++;
    return (ssize_t)n;
}

static int add_peer(const struct neg_peer *p, uint32_t *id)
{
    *id = RDP_PEER(p->node, p->ep);
    struct pl_peer *e;
    for (e = peers; e; e = e->next)
        if (e->id == *id) break;
    if (e && !memcmp(e->key, p->key, 32)) return 0;
    if (e) /* the same endpoint id, another process: its connections are gone */
        rdp_remove_peer(psp.rdp, *id);
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof ss);
    socklen_t len;
    struct sockaddr_in *in = (void *)&ss;
    struct sockaddr_in6 *in6 = (void *)&ss;
    if (inet_pton(AF_INET, p->addr, &in->sin_addr) == 1) {
        in->sin_family = AF_INET;
        in->sin_port = htons((uint16_t)p->udp_port);
        len = sizeof *in;
    } else if (inet_pton(AF_INET6, p->addr, &in6->sin6_addr) == 1) {
        in6->sin6_family = AF_INET6;
        in6->sin6_port = htons((uint16_t)p->udp_port);
        len = sizeof *in6;
    } else {
        return -1;
    }
    if (rdp_add_peer_key(psp.rdp, *id, (struct sockaddr *)&ss, len, p->key) < 0) return -1;
    if (!e) {
        e = calloc(1, sizeof *e);
        if (!e) {
            rdp_remove_peer(psp.rdp, *id);
            return -1;
        }
        e->id = *id;
        e->next = peers;
        __atomic_store_n(&peers, e, __ATOMIC_RELEASE); /* (conn_rdp_peers looks without lock) */
    }
    memcpy(e->key, p->key, 32);
    return 0;
}

/* --- messages from RDP --- */

/* The bytes of a message after its first skip bytes, into out. */
static void gather(uint8_t *out, const struct iovec *iov, int iovcnt, size_t skip)
{
    size_t at = 0;
    for (int i = 0; i < iovcnt; i++) {
        const uint8_t *p = iov[i].iov_base;
        size_t l = iov[i].iov_len;
        if (skip >= l) {
            skip -= l;
            continue;
        }
        memcpy(out + at, p + skip, l - skip);
        at += l - skip;
        skip = 0;
    }
}

/* The peer's UP over RDP: its count of kernel bytes. */
static void on_up(struct conn *c, const struct iovec *iov, int iovcnt)
{
    uint8_t n[PLW_UP_LEN];
    gather(n, iov, iovcnt, PLW_HDR);
    uint64_t k = 0;
    for (int i = 0; i < PLW_UP_LEN; i++) k = k << 8 | n[i];
    if (c->peer_up || c->k_rx > k) { /* a second one, or fewer than we read: broken */
        psp.bad_msgs++;
        c->err = ECONNRESET;
        c->rx_fin = c->peer_closed = true;
        send_ctl(c, PLW_RST, ECONNRESET);
        return;
    }
    c->peer_up = true;
    c->peer_ktx = k;
    conn_krx_check(c);
}

static void on_data(struct conn *c, const struct iovec *iov, int iovcnt, size_t len)
{
    size_t n = len - PLW_HDR;
    if (c->rx_bytes + n > psp.window || c->rx_fin) { /* beyond its credit: a broken peer */
        c->err = ECONNRESET;
        send_ctl(c, PLW_RST, ECONNRESET);
        return;
    }
    struct chunk *ch = chunk_new(n);
    if (!ch) {
        c->err = ENOMEM;
        send_ctl(c, PLW_RST, ECONNRESET);
        return;
    }
    gather(ch->data, iov, iovcnt, PLW_HDR);
    *c->rxq_tail = ch;
    c->rxq_tail = &ch->next;
    c->rx_bytes += n;
    c->rx_total += n;
    psp.rdp_rx += n;
    psp.rdp_rx_msgs++;
}

static void send_rst(uint32_t peer, const struct plw_msg *m)
{
    uint8_t r[PLW_HDR];
    plw_encode(r, PLW_RST, m->flags ^ PLW_FROM_CONNECTOR, m->conn, ECONNRESET);
    rdp_send(psp.rdp, peer, r, sizeof r);
}

static void orphan_keep(uint32_t peer, const struct plw_msg *m, const struct iovec *iov, int iovcnt,
                        size_t len)
{
    struct orphan *o = orphan_bytes + len <= ORPHAN_MAX ? malloc(sizeof *o + len) : NULL;
    if (!o) {
        if (m->type == PLW_DATA) send_rst(peer, m);
        return;
    }
    *o = (struct orphan){.peer = peer,
                         .id = m->conn,
                         .connector = !(m->flags & PLW_FROM_CONNECTOR),
                         .at = rdp_now_ns(),
                         .len = len};
    size_t at = 0;
    for (int i = 0; i < iovcnt; i++) {
        memcpy(o->msg + at, iov[i].iov_base, iov[i].iov_len);
        at += iov[i].iov_len;
    }
    *orphans_tail = o;
    orphans_tail = &o->next;
    orphan_bytes += len;
}

/* c became known: the messages that came first, in order; and the old ones answered. */
static void orphans_adopt(struct conn *c)
{
    uint64_t now = rdp_now_ns();
    for (struct orphan **pp = &orphans; *pp;) {
        struct orphan *o = *pp;
        bool mine = c && o->peer == c->peer && o->id == c->id && o->connector == c->connector;
        if (!mine && now - o->at < ORPHAN_NS) {
            pp = &o->next;
            continue;
        }
        *pp = o->next;
        if (!*pp) orphans_tail = pp;
        orphan_bytes -= o->len;
        struct plw_msg m;
        plw_decode(o->msg, o->len, &m);
        struct iovec v = {o->msg, o->len};
        if (mine)
            deliver(c, &m, &v, 1, o->len);
        else if (m.type == PLW_DATA)
            send_rst(o->peer, &m);
        free(o);
    }
}

void conn_rdp_recv(void *ctx, uint32_t peer, const struct iovec *iov, int iovcnt, size_t len)
{
    (void)ctx;
    uint8_t h[PLW_HDR];
    size_t got = 0;
    for (int i = 0; i < iovcnt && got < PLW_HDR; i++) {
        size_t l = iov[i].iov_len < PLW_HDR - got ? iov[i].iov_len : PLW_HDR - got;
        memcpy(h + got, iov[i].iov_base, l);
        got += l;
    }
    struct plw_msg m;
    if (plw_decode(h, len, &m) < 0) {
        psp.bad_msgs++;
        return;
    }
    /* a message from the connector is for the acceptor's side, and the other way round */
    struct conn *c = conn_find(peer, m.conn, !(m.flags & PLW_FROM_CONNECTOR));
    if (!c) {
        orphan_keep(peer, &m, iov, iovcnt, len);
        return;
    }
    if (!c->nfds && m.type == PLW_DATA && c->st != CS_SWITCH) { /* nobody reads it: reset */
        send_rst(peer, &m);
        return;
    }
    deliver(c, &m, iov, iovcnt, len);
}

static void deliver(struct conn *c, const struct plw_msg *mp, const struct iovec *iov, int iovcnt,
                    size_t len)
{
    struct plw_msg m = *mp;
    bool sw = c->st == CS_SWITCH;
    switch (m.type) {
    case PLW_DATA:
        if ((sw && c->sw_peer_end) || !c->peer_up) { /* nothing after its switch, or before UP */
            psp.bad_msgs++;
            break;
        }
        on_data(c, iov, iovcnt, len);
        break;
    case PLW_UP:
        on_up(c, iov, iovcnt);
        break;
    case PLW_CREDIT:
        if (sw) break; /* what is held goes to the kernel socket */
        c->credit += m.aux;
        if (c->credit > psp.window) c->credit = psp.window;
        flush_hold_rdp(c);
        break;
    case PLW_FIN:
        c->rx_fin = c->fin_seen = true;
        break;
    case PLW_CLOSE:
        c->rx_fin = c->peer_closed = c->fin_seen = true;
        break;
    case PLW_RST:
        if (sw) {
            conn_sw_fail(c, ECONNRESET);
            return;
        }
        c->rx_fin = c->peer_closed = true;
        if (!c->err) c->err = ECONNRESET;
        break;
    case PLW_SWITCH:
        if (c->st == CS_RDP && !c->err) { /* the peer asks: we answer */
            conn_sw_begin(c, SW_RESP);
        } else if (!sw || c->sw != SW_INIT) {
            psp.bad_msgs++;
            break;
        }
        c->sw_peer_end = c->sw_ret_due = true; /* (both asked: each returns) */
        conn_sw_progress(c);
        break;
    case PLW_SWITCH_ACK:
        if (!sw || c->sw != SW_INIT) {
            psp.bad_msgs++;
            break;
        }
        c->sw_peer_end = true;
        conn_sw_progress(c);
        break;
    case PLW_RETURN: {
        size_t n = len - PLW_HDR;
        if (!sw || !c->sw_ret_due || c->sw_ret_end || c->ret_bytes + n > psp.window) {
            sw ? conn_sw_fail(c, ECONNRESET) : (void)psp.bad_msgs++;
            return;
        }
        struct chunk *ch = chunk_new(n);
        if (!ch) {
            conn_sw_fail(c, ENOMEM);
            return;
        }
        gather(ch->data, iov, iovcnt, PLW_HDR);
        *c->ret_tail = ch;
        c->ret_tail = &ch->next;
        c->ret_bytes += n;
        break;
    }
    case PLW_RETURN_END:
        if (!sw || !c->sw_ret_due) {
            psp.bad_msgs++;
            break;
        }
        c->sw_ret_end = true;
        conn_sw_progress(c);
        break;
    }
    conn_changed(c);
}

static void reset(struct conn *c, int err)
{
    if (c->st == CS_SWITCH) {
        conn_sw_fail(c, err);
        return;
    }
    if (c->err) return;
    c->err = err;
    c->rx_fin = c->peer_closed = true;
    conn_changed(c);
}

/* RDP lost its connection to the peer. A timeout (the node or the process is unreachable)
 * or the peer removed: every connection over it ends. A restart (a new RDP connection
 * replaced the old one, as when both ends opened one at once) loses nothing by itself:
 * what was not delivered comes back as undeliverable, and only those connections end. */
void conn_rdp_lost(void *ctx, uint32_t peer, enum rdp_lost_reason why)
{
    (void)ctx;
    alive_peer_lost(peer);
    if (why == RDP_LOST_RESTART) return;
    for (struct conn *c = psp.all; c; c = c->lnext)
        if (cs_rdp_or_switch(c->st) && c->peer == peer)
            reset(c, why == RDP_LOST_TIMEOUT ? ETIMEDOUT : ECONNRESET);
}

/* A message of ours that may not have arrived: its connection's stream has a hole, so it
 * ends, and the peer is told (it may have lost ours, or we its answer). */
void conn_rdp_undeliverable(void *ctx, uint32_t peer, const void *msg, size_t len)
{
    (void)ctx;
    struct plw_msg m;
    if (plw_decode(msg, len, &m) < 0) return;
    struct conn *c = conn_find(peer, m.conn, m.flags & PLW_FROM_CONNECTOR);
    if (!c || c->err) return;
    if (m.type == PLW_RST) return;
    reset(c, ECONNRESET);
    send_ctl(c, PLW_RST, ECONNRESET);
}

void conn_rdp_can_send(void *ctx, uint32_t peer)
{
    (void)ctx;
    for (struct conn *c = psp.all; c; c = c->lnext)
        if (c->st == CS_SWITCH && c->peer == peer) {
            c->rdp_full = false;
            conn_sw_progress(c);
            conn_changed(c);
        } else if (c->st == CS_RDP && c->peer == peer) {
            c->rdp_full = false;
            xrdp_send_owed(c); /* UP first, if owed */
            flush_hold_rdp(c);
            xrdp_send_owed(c);
            conn_changed(c);
        }
}

/* --- the connection on RDP: its start, the move back, its end --- */

/* A zombie's answer was yes: the peer hears CLOSE (or RST), with no UP: the kernel's
 * stream, which ended with our close, is the whole of ours. */
static void zombie_end(struct conn *c)
{
    c->counted = true;
    psp_count_tcp(PSP_R_SHORT); /* it could have been accelerated, had it lived */
    if (c->peer) send_ctl(c, c->linger0 ? PLW_RST : PLW_CLOSE, c->linger0 ? ECONNRESET : 0);
    conn_destroy(c);
}

/* RDP for c: the peer's endpoint and key from the answer. */
int xrdp_begin(struct conn *c, const struct neg_peer *p)
{
    if (!psp.rdp || add_peer(p, &c->peer) < 0) return -1;
    c->id = p->conn;
    conn_enter(c, CS_RDP);
    c->credit = psp.window;
    hash_add(c);
    if (c->zombie) {
        zombie_end(c);
        return 1;
    }
    conn_up(c);       /* our UP first: anything we answer goes after it */
    orphans_adopt(c); /* the peer's UP (and more) may have come first */
    conn_changed(c);
    return 0;
}

/* Our UP goes first, as soon as RDP takes it (xrdp_send_owed). */
static void xrdp_up(struct conn *c)
{
    c->up_owed = true;
    epoll_conn_up(c);
}

/* The move back over RDP (conn.c, "The move to TCP"): SWITCH or SWITCH_ACK after our last
 * DATA, the initiator's return of what its program did not read, then what the peer
 * returned and what was held to the kernel socket first. */
static void xrdp_sw_progress(struct conn *c)
{
    if (!psp.rdp) return;
    if (c->up_owed) xrdp_send_owed(c); /* UP goes first */
    if (c->up_owed) return;
    if (c->sw_ack_owed) {
        if (send_ctl(c, c->sw == SW_INIT ? PLW_SWITCH : PLW_SWITCH_ACK, 0) < 0) return;
        c->sw_ack_owed = false; /* RDP full: can_send comes back here */
    }
    if (c->sw == SW_INIT && c->sw_peer_end && !c->sw_returned) {
        while (c->rxq) {
            struct chunk *ch = c->rxq;
            uint8_t h[PLW_HDR];
            plw_encode(h, PLW_RETURN, flags_of(c), c->id, 0);
            struct iovec iov[2] = {{h, PLW_HDR}, {ch->data + ch->off, ch->len - ch->off}};
            if (sendv(c, iov, 2) < 0) return;
            c->rx_bytes -= ch->len - ch->off;
            c->rxq = ch->next;
            chunk_free(ch);
        }
        c->rxq_tail = &c->rxq;
        if (send_ctl(c, PLW_RETURN_END, 0) < 0) return;
        c->sw_returned = true;
    }
    if (c->sw_ret_end && c->ret) { /* what the peer returned goes out first */
        *c->ret_tail = c->hold;
        if (!c->hold) c->hold_tail = c->ret_tail;
        c->hold = c->ret;
        c->hold_bytes += c->ret_bytes;
        c->ret = NULL;
        c->ret_tail = &c->ret;
        c->ret_bytes = 0;
    }
    bool tx_ready = !c->sw_ret_due || c->sw_ret_end;
    bool rx_done = c->sw == SW_INIT ? c->sw_returned : !c->rx_bytes;
    if (tx_ready && c->hold && !drain_hold(c)) guard_out(c);
    if (!tx_ready || !rx_done) return;
    conn_sw_end(c);
}

/* The move back, asked by us: there must be a peer to answer. */
static void xrdp_sw_init(struct conn *c)
{
    if (!c->peer || !psp.rdp) return;
    conn_sw_begin(c, SW_INIT);
    conn_sw_progress(c);
    conn_changed(c);
}

static void xrdp_reset(struct conn *c)
{
    send_ctl(c, PLW_RST, ECONNRESET);
}

/* The last close: a child holds the socket and goes on there (the move back); else CLOSE
 * (or RST) after what is held, and conn_timers destroys it once RDP delivered it. */
static bool xrdp_close(struct conn *c)
{
    if (c->forked && c->peer && !c->err) {
        conn_switch(c); /* a child holds the socket: it goes on there */
        return true;
    }
    if (!c->peer || c->err) return false;
    c->tx_fin = true;
    c->tx_fin_sent = false;
    xrdp_send_owed(c);
    psp_kick();
    return true; /* conn_timers destroys it once delivered */
}

bool xrdp_delivered(const struct conn *c)
{
    struct rdp_peer_stats st;
    return c->tx_fin_sent && rdp_peer_stats(psp.rdp, c->peer, &st) == 0 &&
           (st.state != RDP_ESTABLISHED || !st.queued);
}

void xrdp_timers(uint64_t now)
{
    if (orphans && now - orphans->at >= ORPHAN_NS) orphans_adopt(NULL);
}

void xrdp_fork_child(void)
{
    for (struct pl_peer *p = peers; p; p = p->next) p->id = 0xffffffffu; /* none is ours */
}

const struct conn_ops xrdp_ops = {
    .name = "rdp",
    .state = CS_RDP,
    .read = conn_rxq_read,
    .write = xrdp_write,
    .flush = flush_hold_rdp,
    .send_owed = xrdp_send_owed,
    .up = xrdp_up,
    .sw_init = xrdp_sw_init,
    .sw_progress = xrdp_sw_progress,
    .reset = xrdp_reset,
    .close = xrdp_close,
};
