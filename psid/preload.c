/*
 * preload.c - psid's side of the preload library's negotiation (docs/preload-design.md,
 * messages in psproto.h): which local processes have an RDP endpoint, which TCP ports they
 * listen on, and, per TCP connection between nodes, the decision before any byte.
 *
 *  - An endpoint belongs to one client connection (SO_PEERCRED: its uid) and dies with it,
 *    as do its listening ports and the connections waiting for it to accept them.
 *  - Connector's node: PSM_PL_CONNECT is forwarded to the destination node (found by the
 *    address in the node table) as PSM_D_PL_CONNECT and answered when its reply comes, or
 *    with ETIMEDOUT after PL_ANSWER_NS: every doubt means TCP.
 *  - Listener's node: the port must have exactly one registered listener; the connection
 *    is kept by its 4-tuple (connector's node and port, our port) until the listener's
 *    process asks for it after accept (PSM_PL_ACCEPT), or PL_KEEP_NS passed.
 *  - Keys: both psids derive the pair key from the cluster key and both endpoints' (node,
 *    endpoint, incarnation, uid) (pl_pair_key), and hand it only to the endpoint's own
 *    process. The cluster key never leaves psid.
 * Every table is bounded: listening ports per endpoint (PSI_PL_LISTENS), connections
 * waiting for an accept (PL_WAIT_MAX, and PL_KEEP_NS each).
 */
#include "bebytes.h"
#include "daemon.h"
#include "log.h"
#include "psmsg.h"

#include <arpa/inet.h>
#include <errno.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>

#define PL_ANSWER_NS (2000000000ull)  /* the destination psid's answer */
#define PL_KEEP_NS   (10000000000ull) /* a connection waiting for its accept */
#define PL_WAIT_MAX  4096u            /* connections waiting for an accept, in total */

struct pl_ep { /* an endpoint: ours (with a client) or a peer's (from a message) */
    uint32_t node, uid;
    uint16_t id, udp_port;
    uint64_t inc;
};

struct pl_local {
    struct pl_ep ep;
    struct client *c;
    uint16_t ports[PSI_PL_LISTENS];
    unsigned nports;
    struct pl_local *next;
};

struct pl_wait {           /* listener side: a connection registered before its connect */
    uint32_t node;         /* the connector's node */
    uint16_t sport, dport; /* its port, our port */
    struct pl_ep connector;
    struct pl_local *listener; /* the process that may take it */
    uint64_t until;
    struct pl_wait *next;
};

struct pl_ask { /* connector side: a PSM_PL_CONNECT waiting for the other psid */
    uint32_t req, client_id, node;
    struct client *c;
    uint64_t timer;
    struct psid *d;
    struct pl_ask *next;
};

struct preload {
    struct pl_local *locals;
    struct pl_wait *waits;
    unsigned nwaits;
    struct pl_ask *asks;
    uint16_t next_id;
};

static struct preload *state(struct psid *d)
{
    if (!d->preload) d->preload = calloc(1, sizeof *d->preload);
    return d->preload;
}

/* Both ends' descriptions, the lower (node, endpoint) first, keyed with the cluster key. */
static void pl_pair_key(const uint8_t cluster_key[32], const struct pl_ep *a, const struct pl_ep *b,
                        uint8_t key[32])
{
    uint8_t t[16 + 2 * 18], *q = t;
    memcpy(q, "pspl pair key v1", 16);
    q += 16;
    bool swap = b->node < a->node || (b->node == a->node && b->id < a->id);
    for (int i = 0; i < 2; i++) {
        const struct pl_ep *e = (i == 0) != swap ? a : b;
        be_put32(q, e->node);
        be_put16(q + 4, e->id);
        be_put64(q + 6, e->inc);
        be_put32(q + 14, e->uid);
        q += 18;
    }
    crypto_generichash(key, 32, t, sizeof t, cluster_key, 32);
}

static void reply(struct client *c, uint32_t id, int err, const char *why, const struct pl_ep *peer,
                  const char *addr, const uint8_t *key)
{
    struct psmsg_buf b = {0};
    psmsg_begin(&b, PSM_PL_REPLY, id);
    psmsg_put_u32(&b, PSF_ERRNO, (uint32_t)err);
    if (why) psmsg_put_str(&b, PSF_TEXT, why);
    if (peer) {
        psmsg_put_u32(&b, PSF_NODE_ID, peer->node);
        psmsg_put_u32(&b, PSF_ENDPOINT, peer->id);
        psmsg_put_u32(&b, PSF_UDP_PORT, peer->udp_port);
        psmsg_put_str(&b, PSF_ADDR, addr);
        psmsg_put_bytes(&b, PSF_KEY, key, 32);
    }
    client_send(c, &b);
    psmsg_buf_free(&b);
}

static struct pl_local *local_of(struct preload *pl, const struct client *c)
{
    for (struct pl_local *l = pl->locals; l; l = l->next)
        if (l->c == c) return l;
    return NULL;
}

static bool id_used(const struct preload *pl, uint16_t id)
{
    for (const struct pl_local *l = pl->locals; l; l = l->next)
        if (l->ep.id == id) return true;
    return false;
}

static void put_ep(struct psmsg_buf *b, const struct pl_ep *e)
{
    psmsg_put_u32(b, PSF_ENDPOINT, e->id);
    psmsg_put_u64(b, PSF_INCARNATION, e->inc);
    psmsg_put_u32(b, PSF_UID, e->uid);
    psmsg_put_u32(b, PSF_UDP_PORT, e->udp_port);
}

static int get_ep(const struct psmsg *m, uint32_t node, struct pl_ep *e)
{
    uint32_t id, port;
    *e = (struct pl_ep){.node = node};
    if (psmsg_get_u32(&m->body, PSF_ENDPOINT, &id) < 0 || id == 0 || id > 0xffff ||
        psmsg_get_u64(&m->body, PSF_INCARNATION, &e->inc) < 0 ||
        psmsg_get_u32(&m->body, PSF_UID, &e->uid) < 0 ||
        psmsg_get_u32(&m->body, PSF_UDP_PORT, &port) < 0 || port == 0 || port > 0xffff)
        return -1;
    e->id = (uint16_t)id;
    e->udp_port = (uint16_t)port;
    return 0;
}

static int get_port(const struct psmsg *m, uint16_t tag, uint16_t *port)
{
    uint32_t v;
    if (psmsg_get_u32(&m->body, tag, &v) < 0 || v == 0 || v > 0xffff) return -1;
    *port = (uint16_t)v;
    return 0;
}

static void pl_open(struct psid *d, struct preload *pl, struct client *c, const struct psmsg *m)
{
    uint16_t port;
    if (local_of(pl, c)) {
        reply(c, m->id, EALREADY, "endpoint already open", 0, 0, 0);
        return;
    }
    if (get_port(m, PSF_PORT, &port) < 0) {
        reply(c, m->id, EINVAL, "bad port", 0, 0, 0);
        return;
    }
    uint16_t id = 0;
    for (unsigned tries = 0; tries < 65535 && !id; tries++) {
        uint16_t cand = (uint16_t)(++pl->next_id ? pl->next_id : ++pl->next_id);
        if (!id_used(pl, cand)) id = cand;
    }
    struct pl_local *l = id ? calloc(1, sizeof *l) : NULL;
    if (!l) {
        reply(c, m->id, id ? ENOMEM : EAGAIN, "no endpoint", 0, 0, 0);
        return;
    }
    l->c = c;
    l->ep = (struct pl_ep){.node = d->self->id,
                           .uid = client_uid(c),
                           .id = id,
                           .udp_port = port,
                           .inc = randombytes_random() | (uint64_t)randombytes_random() << 32};
    l->next = pl->locals;
    pl->locals = l;
    struct psmsg_buf b = {0};
    psmsg_begin(&b, PSM_PL_REPLY, m->id);
    psmsg_put_u32(&b, PSF_ERRNO, 0);
    psmsg_put_u32(&b, PSF_NODE_ID, l->ep.node);
    psmsg_put_u32(&b, PSF_ENDPOINT, l->ep.id);
    psmsg_put_u64(&b, PSF_INCARNATION, l->ep.inc);
    client_send(c, &b);
    psmsg_buf_free(&b);
}

static void pl_listen(struct preload *pl, struct client *c, const struct psmsg *m)
{
    struct pl_local *l = local_of(pl, c);
    uint16_t port;
    if (!l) {
        reply(c, m->id, ENOTCONN, "no endpoint open", 0, 0, 0);
        return;
    }
    if (get_port(m, PSF_PORT, &port) < 0) {
        reply(c, m->id, EINVAL, "bad port", 0, 0, 0);
        return;
    }
    unsigned i = 0;
    while (i < l->nports && l->ports[i] != port) i++;
    if (m->type == PSM_PL_UNLISTEN) {
        if (i == l->nports) {
            reply(c, m->id, ENOENT, "port not registered", 0, 0, 0);
            return;
        }
        l->ports[i] = l->ports[--l->nports];
    } else if (i == l->nports) {
        if (l->nports == PSI_PL_LISTENS) {
            reply(c, m->id, ENOBUFS, "too many listening ports", 0, 0, 0);
            return;
        }
        l->ports[l->nports++] = port;
    }
    reply(c, m->id, 0, NULL, 0, 0, 0);
}

static const struct psconf_node *node_by_text(const struct psid *d, const char *text)
{
    for (size_t i = 0; i < d->conf.nnodes; i++)
        if (!strcmp(d->nodes[i].conf->addr_str, text)) return d->nodes[i].conf;
    return NULL;
}

/* The requesting process's endpoint and the request's PSF_ADDR, PSF_PORT (into *port) and
 * PSF_SRC_PORT (*src_port); NULL after an error reply. */
static struct pl_local *addr_ports(struct preload *pl, struct client *c, const struct psmsg *m,
                                   char addr[64], uint16_t *port, uint16_t *src_port)
{
    struct pl_local *l = local_of(pl, c);
    if (!l) {
        reply(c, m->id, ENOTCONN, "no endpoint open", 0, 0, 0);
        return NULL;
    }
    if (psmsg_get_str(&m->body, PSF_ADDR, addr, 64) < 0 || get_port(m, PSF_PORT, port) < 0 ||
        get_port(m, PSF_SRC_PORT, src_port) < 0) {
        reply(c, m->id, EINVAL, "need an address and two ports", 0, 0, 0);
        return NULL;
    }
    return l;
}

static void ask_done(struct preload *pl, struct pl_ask *a)
{
    for (struct pl_ask **pp = &pl->asks; *pp; pp = &(*pp)->next)
        if (*pp == a) {
            *pp = a->next;
            break;
        }
    loop_timer_cancel(a->d->loop, a->timer);
    free(a);
}

static void ask_expired(void *ctx)
{
    struct pl_ask *a = ctx;
    a->timer = 0;
    if (a->c) reply(a->c, a->client_id, ETIMEDOUT, "the listener's psid did not answer", 0, 0, 0);
    ask_done(a->d->preload, a);
}

static void pl_connect(struct psid *d, struct preload *pl, struct client *c, const struct psmsg *m)
{
    char addr[64];
    uint16_t port, sport;
    struct pl_local *l = addr_ports(pl, c, m, addr, &port, &sport);
    if (!l) return;
    const struct psconf_node *n = node_by_text(d, addr);
    if (!n) {
        reply(c, m->id, EHOSTUNREACH, "not a cluster address", 0, 0, 0);
        return;
    }
    if (n == d->self) {
        reply(c, m->id, EXDEV, "same node", 0, 0, 0);
        return;
    }
    struct psid_node *pn = psid_node(d, n->id);
    if (!pn || pn->state != PSNODE_UP) {
        reply(c, m->id, EHOSTDOWN, "node is down", 0, 0, 0);
        return;
    }
    struct pl_ask *a = calloc(1, sizeof *a);
    if (!a) {
        reply(c, m->id, ENOMEM, "out of memory", 0, 0, 0);
        return;
    }
    *a = (struct pl_ask){
        .req = ++d->next_req, .client_id = m->id, .node = n->id, .c = c, .d = d, .next = pl->asks};
    pl->asks = a;
    a->timer = loop_timer(d->loop, loop_now() + PL_ANSWER_NS, ask_expired, a);
    struct psmsg_buf b = {0};
    psmsg_begin(&b, PSM_D_PL_CONNECT, 0);
    psmsg_put_u32(&b, PSF_REQ, a->req);
    psmsg_put_u32(&b, PSF_PORT, port);
    psmsg_put_u32(&b, PSF_SRC_PORT, sport);
    put_ep(&b, &l->ep);
    psid_send(d, n->id, &b);
    psmsg_buf_free(&b);
}

/* Listener's side of a PSM_D_PL_CONNECT: the port's one listener, and the wait. */
static void d_connect(struct psid *d, struct preload *pl, uint32_t from, const struct psmsg *m)
{
    uint32_t req = 0;
    uint16_t port, sport;
    struct pl_ep conn;
    psmsg_get_u32(&m->body, PSF_REQ, &req);
    struct psmsg_buf b = {0};
    psmsg_begin(&b, PSM_D_PL_CONNECT_REPLY, 0);
    psmsg_put_u32(&b, PSF_REQ, req);
    int err = 0;
    const char *why = NULL;
    struct pl_local *found = NULL;
    if (get_port(m, PSF_PORT, &port) < 0 || get_port(m, PSF_SRC_PORT, &sport) < 0 ||
        get_ep(m, from, &conn) < 0) {
        err = EINVAL;
        why = "malformed request";
    } else {
        unsigned n = 0;
        for (struct pl_local *l = pl->locals; l; l = l->next)
            for (unsigned i = 0; i < l->nports; i++)
                if (l->ports[i] == port) {
                    found = l;
                    n++;
                }
        if (n != 1) {
            err = n ? EADDRINUSE : ECONNREFUSED;
            why = n ? "listener shared by several processes" : "listener not registered";
        } else if (pl->nwaits >= PL_WAIT_MAX) {
            err = ENOBUFS;
            why = "too many connections waiting for an accept";
        }
    }
    struct pl_wait *w = err ? NULL : calloc(1, sizeof *w);
    if (!err && !w) {
        err = ENOMEM;
        why = "out of memory";
    }
    if (w) {
        /* a connection of the same 4-tuple that was never accepted is replaced */
        for (struct pl_wait *o = pl->waits; o; o = o->next)
            if (o->node == from && o->sport == sport && o->dport == port) o->until = 0;
        *w = (struct pl_wait){from, sport, port, conn, found, loop_now() + PL_KEEP_NS, pl->waits};
        pl->waits = w;
        pl->nwaits++;
        put_ep(&b, &found->ep);
    }
    psmsg_put_u32(&b, PSF_ERRNO, (uint32_t)err);
    if (why) psmsg_put_str(&b, PSF_TEXT, why);
    psid_send(d, from, &b);
    psmsg_buf_free(&b);
}

/* Connector's side: the answer to one of our asks. */
static void d_connect_reply(struct psid *d, struct preload *pl, uint32_t from,
                            const struct psmsg *m)
{
    uint32_t req, err = EPROTO;
    if (psmsg_get_u32(&m->body, PSF_REQ, &req) < 0) return;
    struct pl_ask *a = pl->asks;
    while (a && (a->req != req || a->node != from)) a = a->next;
    if (!a) return; /* expired, or forged */
    psmsg_get_u32(&m->body, PSF_ERRNO, &err);
    struct pl_ep peer;
    struct pl_local *l = a->c ? local_of(pl, a->c) : NULL;
    if (l && !err && get_ep(m, from, &peer) == 0) {
        uint8_t key[32];
        pl_pair_key(d->conf.key, &l->ep, &peer, key);
        reply(a->c, a->client_id, 0, NULL, &peer, psid_node(d, from)->conf->addr_str, key);
        sodium_memzero(key, sizeof key);
    } else if (a->c) {
        char why[128] = "refused by the listener's psid";
        psmsg_get_str(&m->body, PSF_TEXT, why, sizeof why);
        reply(a->c, a->client_id, err ? (int)err : EPROTO, why, 0, 0, 0);
    }
    ask_done(pl, a);
}

static void drop_waits(struct preload *pl, const struct pl_local *gone, uint32_t node)
{
    uint64_t now = loop_now();
    for (struct pl_wait **pp = &pl->waits; *pp;) {
        struct pl_wait *w = *pp;
        if ((gone && w->listener == gone) || (node != UINT32_MAX && w->node == node) ||
            w->until <= now) {
            *pp = w->next;
            pl->nwaits--;
            free(w);
        } else {
            pp = &w->next;
        }
    }
}

static void pl_accept(struct psid *d, struct preload *pl, struct client *c, const struct psmsg *m)
{
    char addr[64];
    uint16_t port, sport;
    struct pl_local *l = addr_ports(pl, c, m, addr, &sport, &port);
    if (!l) return;
    drop_waits(pl, NULL, UINT32_MAX); /* the expired ones */
    const struct psconf_node *n = node_by_text(d, addr);
    for (struct pl_wait **pp = &pl->waits; n && *pp; pp = &(*pp)->next) {
        struct pl_wait *w = *pp;
        if (w->node != n->id || w->sport != sport || w->dport != port || w->listener != l) continue;
        uint8_t key[32];
        pl_pair_key(d->conf.key, &l->ep, &w->connector, key);
        reply(c, m->id, 0, NULL, &w->connector, n->addr_str, key);
        sodium_memzero(key, sizeof key);
        *pp = w->next;
        pl->nwaits--;
        free(w);
        return;
    }
    reply(c, m->id, ENOENT, "no such connection negotiated", 0, 0, 0);
}

void preload_request(struct psid *d, struct client *c, const struct psmsg *m)
{
    struct preload *pl = state(d);
    if (!pl) {
        client_error(c, m->id, ENOMEM, "out of memory");
        return;
    }
    switch (m->type) {
    case PSM_PL_OPEN:
        pl_open(d, pl, c, m);
        break;
    case PSM_PL_LISTEN:
    case PSM_PL_UNLISTEN:
        pl_listen(pl, c, m);
        break;
    case PSM_PL_CONNECT:
        pl_connect(d, pl, c, m);
        break;
    case PSM_PL_ACCEPT:
        pl_accept(d, pl, c, m);
        break;
    }
}

void preload_from_daemon(struct psid *d, uint32_t from, const struct psmsg *m)
{
    struct preload *pl = state(d);
    if (!pl) return;
    if (m->type == PSM_D_PL_CONNECT)
        d_connect(d, pl, from, m);
    else
        d_connect_reply(d, pl, from, m);
}

bool preload_client_busy(struct psid *d, const struct client *c)
{
    return d->preload && local_of(d->preload, c);
}

void preload_client_gone(struct psid *d, struct client *c)
{
    struct preload *pl = d->preload;
    if (!pl) return;
    for (struct pl_ask *a = pl->asks; a; a = a->next)
        if (a->c == c) a->c = NULL;
    for (struct pl_local **pp = &pl->locals; *pp; pp = &(*pp)->next)
        if ((*pp)->c == c) {
            struct pl_local *l = *pp;
            *pp = l->next;
            drop_waits(pl, l, UINT32_MAX);
            free(l);
            return;
        }
}

void preload_node_lost(struct psid *d, uint32_t node)
{
    struct preload *pl = d->preload;
    if (!pl) return;
    drop_waits(pl, NULL, node);
    for (struct pl_ask *a = pl->asks, *next; a; a = next) {
        next = a->next;
        if (a->node != node) continue;
        if (a->c) reply(a->c, a->client_id, EHOSTDOWN, "the listener's node was lost", 0, 0, 0);
        ask_done(pl, a);
    }
}

void preload_free(struct psid *d)
{
    struct preload *pl = d->preload;
    if (!pl) return;
    while (pl->asks) ask_done(pl, pl->asks);
    drop_waits(pl, NULL, UINT32_MAX);
    while (pl->waits) {
        struct pl_wait *w = pl->waits;
        pl->waits = w->next;
        free(w);
    }
    while (pl->locals) {
        struct pl_local *l = pl->locals;
        pl->locals = l->next;
        free(l);
    }
    free(pl);
    d->preload = NULL;
}
