/*
 * plconnect.c - the connector's side of the preload's negotiation (plint.h, preload.c): a
 * process's PSM_PL_CONNECT, on this node (connect_same: the listener is looked up here and
 * the connection waits here for its acceptor) or to another node (pl_ask until its psid
 * answers, then pl_pend until the outcome); the other psid's claims and probes of a
 * connection made here (PSM_D_PL_CLAIM), answered after sock_diag says the connector's
 * socket is still the one registered; a probe that finds no request is held for it
 * (pl_recheck). Asks, pends and rechecks are ptables of struct preload (ptable.h), the
 * latter two by the connection (pl_conn_key), as the other psid's messages name it.
 */
#include "plint.h"

static void claim_answer(struct psid *d, uint32_t to, uint32_t req, int err);
static void rechecks_take(struct preload *pl, const struct pl_ask *a);
static void claim_pend(struct psid *d, struct preload *pl, uint32_t from, uint32_t req,
                       struct pl_pend *p, const struct pl_ep *acceptor);

/* A connector does not wait for the reply (its connect goes on at once): a refusal is an
 * outcome too. */
void pl_refuse(struct psid *d, struct client *c, uint32_t id, uint32_t conn, int err,
               const char *why)
{
    if (!c) return;
    pl_reply(c, id, err, why);
    pl_outcome(d, c, conn, err, why, NULL, NULL);
}

void pl_ask_done(struct preload *pl, struct pl_ask *a)
{
    (void)pl;
    ptable_del(&a->pe);
    ptable_del(&a->pc);
    free(a);
}

/* Requests asking another psid are in struct preload's asks (ptable.h) by req, as its
 * answer names them, and in its askconns by the connection (pl_conn_key), as a probe does:
 * PL_WAIT_MAX in all, PL_WAIT_UID of them per uid but root's (each is answered or expires
 * within PL_ANSWER_NS, but a client may ask faster). */
void pl_ask_expired(struct pt_entry *e)
{
    struct pl_ask *a = PL_ASK(e);
    pl_refuse(a->d, a->c, a->client_id, a->conn, ETIMEDOUT, "the listener's psid did not answer");
    if (a->probe_req) claim_answer(a->d, a->node, a->probe_req, ENOENT);
    pl_ask_done(a->d->preload, a);
}

void pl_pend_done(struct preload *pl, struct pl_pend *p)
{
    (void)pl;
    ptable_del(&p->pe);
    free(p);
}

/* Connections waiting for their outcome are in struct preload's pends (ptable.h), by the
 * connection (pl_conn_key), as the other psid's claims and expiries name it: PL_WAIT_MAX in
 * all, PL_WAIT_UID per connector's uid but root's, each until PL_KEEP_NS and two answers. */
void pl_pend_expired(struct pt_entry *e)
{
    struct pl_pend *p = PL_PEND(e);
    pl_outcome(p->d, p->c, p->conn, ETIMEDOUT, "no outcome from the listener's psid", NULL, NULL);
    pl_pend_done(p->d->preload, p);
}

/* PSM_PL_CONNECT to an address of this node (or, xns, of another network namespace psid
 * serves): the listener is ours to look up, and the connection waits here, by its socket's
 * cookie, for the acceptor's claim (the socket needs no port yet: the kernel's connect
 * picks it, as without the library). dst: where it goes (the kernel's peer once
 * connected). */
static void connect_same(struct psid *d, struct preload *pl, struct client *c,
                         const struct psmsg *m, const struct sockaddr_storage *dst, uint32_t conn,
                         const struct sockinfo *si)
{
    int err = 0;
    const char *why = NULL;
    struct pl_local *l = pl_local_of(pl, c);
    uint32_t ring = 0, cuid = l->ep.uid, luid = 0, same = 0;
    psmsg_get_u32(&m->body, PSF_SHM_RING, &ring);
    psmsg_get_u32(&m->body, PSF_SAME_NODE, &same);
    bool xns = same == 2; /* an address of no cluster node: another namespace's, maybe */
    bool tuple = si->peer.ss_family != AF_UNSPEC;
    struct pl_local *found = NULL;
    if (ring < PSHM_RING_MIN || ring > PSHM_RING_MAX || (ring & (ring - 1))) {
        err = EINVAL;
        why = "ring size not a power of two within the bounds";
    } else {
        /* from another namespace psid serves (a container) to the node's own address: the
         * listener is in psid's namespace */
        struct sockaddr_storage na;
        pl_node_addr(d->self, sockinfo_port(dst), &na);
        bool to_node = !xns && l->netns != pl->netns && sockinfo_same_host(dst, &na);
        found = pl_port_listener(pl, to_node ? pl->netns : l->netns, xns, dst, cuid, &err, &why);
    }
    if (found) luid = found->ep.uid;
    /* a connection that negotiates after its accept (PSP_UPGRADE_US): its listener may
     * have closed meanwhile (socat, nc): the accepted socket, the connector's peer, is
     * that listener's user's (in psid's namespace, where sock_diag can say) */
    if (err == ECONNREFUSED && tuple && !xns && l->netns == pl->netns &&
        pl_closed_owner(pl, &si->peer, &si->local, cuid, &luid)) {
        err = 0;
        why = NULL;
    }
    if (xns && err == ECONNREFUSED) { /* no listener of ours there: somebody else's */
        err = EHOSTUNREACH;
        why = "not a cluster address";
    }
    int tomb = tuple && !err ? pl_tomb_take(pl, d->self->id, dst, &si->local, luid) : 0;
    if (tomb) { /* the acceptor's claim came first, and waited for nothing; or it declined */
        err = tomb;
        why = pl_tomb_text(tomb);
    }
    /* the waits of this 4-tuple in a namespace, by the connector's addresses (conwaits) */
    bool ambiguous = false;
    for (struct pt_entry *
             e = !err && tuple ? ptable_find(&pl->conwaits, pl_tuple_key(&pl->conwaits, d->self->id,
                                                                         &si->local, &si->peer))
                               : NULL,
            *next;
         e; e = next) {
        next = ptable_find_next(e);
        struct pl_wait *o = PT_OWNER(e, struct pl_wait, ce);
        if (!o->same || !o->tuple || o->cookie == si->cookie ||
            !pl_mirrors(o, &si->peer, &si->local))
            continue;
        if (o->cc && o->netns != si->netns) { /* two namespaces, one 4-tuple: neither */
            o->ambiguous = ambiguous = true;
            continue;
        }
        /* in one namespace a 4-tuple is one socket: that one is gone, its wait stale */
        if (o->parked && o->pc) pl_acc_reply(o->pc, o->ptag, ENOENT, "the connector is gone");
        pl_wait_unlink(pl, o);
        free(o);
    }
    if (ambiguous && !err) {
        err = ENOTUNIQ;
        why = "another connection of the same addresses is negotiating";
    }
    struct pl_wait *w = !err ? calloc(1, sizeof *w) : NULL;
    if (!err && !w) {
        err = ENOMEM;
        why = "out of memory";
    }
    if (!err) { /* the socket asked again: its older wait goes */
        for (struct pt_entry *e = ptable_find(&pl->waits, pl_cookie_key(&pl->waits, si->cookie)),
                             *next;
             e; e = next) {
            next = ptable_find_next(e);
            if (PL_WAIT(e)->same && PL_WAIT(e)->cookie == si->cookie) {
                pl_wait_unlink(pl, PL_WAIT(e));
                free(PL_WAIT(e));
            }
        }
        *w = (struct pl_wait){.node = d->self->id,
                              .dport = sockinfo_port(dst),
                              .conn = conn,
                              .connector = l->ep,
                              .uid = luid,
                              .d = d,
                              .same = true,
                              .cc = c,
                              .cookie = si->cookie,
                              .netns = si->netns,
                              .ring = ring,
                              .tuple = tuple,
                              .clocal = si->local,
                              .cpeer = si->peer};
        if (pl_wait_add(pl, w) < 0) { /* (room was checked: pl_port_listener, closed_owner) */
            free(w);
            err = ENOBUFS;
            why = "too many connections waiting for an accept";
        }
    }
    if (err) {
        pl_refuse(d, c, m->id, conn, err, why);
        return;
    }
    pl_reply(c, m->id, 0, NULL);
    pl_lates_take(pl, w); /* its acceptor's claim, if it came first */
}

void pl_connect(struct psid *d, struct preload *pl, struct client *c, const struct psmsg *m)
{
    struct pl_local *l = pl_local_of(pl, c);
    struct sockinfo si;
    struct sockaddr_storage dst;
    const char *why = NULL;
    char addr[64], mine[INET6_ADDRSTRLEN];
    uint16_t port;
    uint32_t conn = 0, same = 0;
    psmsg_get_u32(&m->body, PSF_CONN, &conn);
    psmsg_get_u32(&m->body, PSF_SAME_NODE, &same);
    int err = pl_passed_tcp(c, l, &si, &why);
    if (!l && !err) {
        err = ENOTCONN;
        why = "no endpoint open";
    }
    if (!err &&
        (psmsg_get_str(&m->body, PSF_ADDR, addr, sizeof addr) < 0 ||
         pl_get_port(m, PSF_PORT, &port) < 0 || psmsg_get_u32(&m->body, PSF_CONN, &conn) < 0 ||
         pl_addr_parse(addr, port, &dst) < 0)) {
        err = EINVAL;
        why = "need an address, a port and a connection id";
    }
    if (!err) sockinfo_addr_text(&si.local, mine);
    /* the connector's connect goes on while psid reads this: connected is fine, to the
     * address asked for (on one node, wherever the kernel says it is) */
    bool connected = !err && si.peer.ss_family != AF_UNSPEC;
    if (!err && (si.listening || (connected && !same && !sockinfo_same(&si.peer, &dst)))) {
        err = EISCONN;
        why = "the socket is connected elsewhere, or listening";
    }
    if (connected) dst = si.peer;
    if (same) { /* the connector does not wait for the reply */
        if (err)
            pl_refuse(d, c, m->id, conn, err, why);
        else
            connect_same(d, pl, c, m, &dst, conn, &si);
        return;
    }
    if (!err && (l->shm_only || strcmp(mine, d->self->addr_str) || !sockinfo_port(&si.local))) {
        err = EADDRNOTAVAIL; /* (shm_only: no RDP in the endpoint's namespace) */
        why = "not bound to the node's address";
    }
    const struct psconf_node *n = err ? NULL : pl_node_by_text(d, addr);
    if (!err && !n) {
        err = EHOSTUNREACH;
        why = "not a cluster address";
    } else if (!err && n == d->self) {
        err = EXDEV;
        why = "same node";
    }
    struct psid_node *pn = err ? NULL : psid_node(d, n->id);
    if (!err && (!pn || pn->state != PSNODE_UP)) {
        err = EHOSTDOWN;
        why = "node is down";
    } else if (!err && !ptable_room(&pl->pends, client_uid(c))) {
        err = ENOBUFS;
        why = "too many connections waiting";
    } else if (!err && !ptable_room(&pl->asks, client_uid(c))) {
        err = ENOBUFS;
        why = "too many connections asking the listener's psid";
    }
    struct pl_ask *a = err ? NULL : calloc(1, sizeof *a);
    if (!err && !a) {
        err = ENOMEM;
        why = "out of memory";
    }
    if (err) {
        pl_refuse(d, c, m->id, conn, err, why);
        return;
    }
    *a = (struct pl_ask){.req = ++d->next_req,
                         .client_id = m->id,
                         .node = n->id,
                         .conn = conn,
                         .sport = sockinfo_port(&si.local),
                         .dport = port,
                         .cookie = si.cookie,
                         .c = c,
                         .d = d};
    bool added =
        ptable_add(&pl->asks, &a->pe, a->req, client_uid(c), loop_now() + PL_ANSWER_NS) == 0;
    if (!added ||
        ptable_add(&pl->askconns, &a->pc, pl_conn_key(&pl->askconns, a->node, a->sport, a->dport),
                   client_uid(c), 0) < 0) {
        ptable_del(&a->pe); /* (room was checked above; the two hold the same entries) */
        free(a);
        pl_refuse(d, c, m->id, conn, ENOBUFS, "too many connections asking the listener's psid");
        return;
    }
    rechecks_take(pl, a);
    struct psmsg_buf b = {0};
    psmsg_begin(&b, PSM_D_PL_CONNECT, 0);
    psmsg_put_u32(&b, PSF_REQ, a->req);
    psmsg_put_u32(&b, PSF_PORT, port);
    psmsg_put_u32(&b, PSF_SRC_PORT, a->sport);
    psmsg_put_u32(&b, PSF_CONN, conn);
    pl_put_ep(&b, &l->ep);
    psid_send(d, n->id, &b);
    psmsg_buf_free(&b);
}

/* The listener's psid answered a PSM_D_PL_CONNECT: pending, or TCP. */
void pl_d_connect_reply(struct psid *d, struct preload *pl, uint32_t from, const struct psmsg *m)
{
    uint32_t req, err = EPROTO;
    if (psmsg_get_u32(&m->body, PSF_REQ, &req) < 0) return;
    struct pl_ask *a = NULL;
    for (struct pt_entry *e = ptable_find(&pl->asks, req); e && !a; e = ptable_find_next(e))
        if (PL_ASK(e)->node == from) a = PL_ASK(e);
    if (!a) return; /* expired, or forged */
    psmsg_get_u32(&m->body, PSF_ERRNO, &err);
    struct pl_pend *p = !err && a->c ? calloc(1, sizeof *p) : NULL;
    int full = 0; /* (room was checked when it asked; others may have taken it since) */
    if (p) {
        *p = (struct pl_pend){.node = from,
                              .conn = a->conn,
                              .sport = a->sport,
                              .dport = a->dport,
                              .cookie = a->cookie,
                              .c = a->c,
                              .d = d};
        if (ptable_add(&pl->pends, &p->pe, pl_conn_key(&pl->pends, from, p->sport, p->dport),
                       client_uid(a->c), loop_now() + PL_KEEP_NS + 2 * PL_ANSWER_NS) < 0) {
            free(p);
            p = NULL;
            full = ENOBUFS;
        }
    }
    if (p) {
        pl_reply(a->c, a->client_id, 0, NULL);
        if (a->probe_req) claim_pend(d, pl, from, a->probe_req, p, &a->acceptor);
    } else {
        char why[128] = "refused by the listener's psid";
        if (full)
            snprintf(why, sizeof why, "too many connections waiting");
        else
            psmsg_get_str(&m->body, PSF_TEXT, why, sizeof why);
        pl_refuse(d, a->c, a->client_id, a->conn, full ? full : err ? (int)err : ENOMEM, why);
        if (a->probe_req) claim_answer(d, from, a->probe_req, ENOENT);
    }
    pl_ask_done(pl, a);
}

/* The newest connection (node, sport, dport) waiting for its outcome, or NULL. */
static struct pl_pend *pend_of(struct preload *pl, uint32_t node, uint16_t sport, uint16_t dport)
{
    for (struct pt_entry *e = ptable_find(&pl->pends, pl_conn_key(&pl->pends, node, sport, dport));
         e; e = ptable_find_next(e)) {
        struct pl_pend *p = PL_PEND(e);
        if (p->node == node && p->sport == sport && p->dport == dport) return p;
    }
    return NULL;
}

static struct pl_pend *pend_find(struct preload *pl, uint32_t node, const struct psmsg *m)
{
    uint16_t sport, dport;
    if (pl_get_port(m, PSF_SRC_PORT, &sport) < 0 || pl_get_port(m, PSF_PORT, &dport) < 0)
        return NULL;
    return pend_of(pl, node, sport, dport);
}

/* A process on the listener's node took the connection: is it still the connector's
 * registered socket? Then the connector learns its outcome, and the listener's psid may
 * answer the acceptor. */
static void claim_answer(struct psid *d, uint32_t to, uint32_t req, int err)
{
    struct psmsg_buf b = {0};
    psmsg_begin(&b, PSM_D_PL_CLAIM_REPLY, 0);
    psmsg_put_u32(&b, PSF_REQ, req);
    psmsg_put_u32(&b, PSF_ERRNO, (uint32_t)err);
    psid_send(d, to, &b);
    psmsg_buf_free(&b);
}

/* A probe for (from, sport, dport): a request still asked is answered as a claim once the
 * other psid's yes comes (it sent the yes before that answer: its wait is there by then);
 * one pending already, EAGAIN (claim again). Whether a request of ours was found. */
static bool probe_match(struct psid *d, struct preload *pl, uint32_t from, uint32_t req,
                        uint16_t sport, uint16_t dport, const struct pl_ep *acceptor)
{
    for (struct pt_entry *e =
             ptable_find(&pl->askconns, pl_conn_key(&pl->askconns, from, sport, dport));
         e; e = ptable_find_next(e)) {
        struct pl_ask *a = PT_OWNER(e, struct pl_ask, pc);
        if (a->node == from && a->sport == sport && a->dport == dport && !a->probe_req) {
            a->probe_req = req;
            a->acceptor = *acceptor;
            return true;
        }
    }
    if (pend_of(pl, from, sport, dport)) {
        claim_answer(d, from, req, EAGAIN);
        return true;
    }
    return false;
}

void pl_recheck_done(struct preload *pl, struct pl_recheck *r)
{
    (void)pl;
    ptable_del(&r->pe);
    free(r);
}

/* Probes held for their request are in struct preload's rechecks (ptable.h), by the
 * connection (pl_conn_key), as the request that takes one names it: PL_WAIT_MAX in all,
 * PL_WAIT_UID per acceptor's uid but root's. Each is looked at again after the pass of the
 * loop it came in (the connector's request may have been among the messages read in the
 * same pass: it wrote it right after its SYN went out), then at its deadline, or when its
 * request comes (rechecks_take). */
static void recheck_again(struct pl_recheck *r)
{
    struct preload *pl = r->d->preload;
    bool found = probe_match(r->d, pl, r->from, r->req, r->sport, r->dport, &r->acceptor);
    uint64_t now = loop_now();
    if (!found && now < r->until) { /* its request may still come: rechecks_take */
        ptable_rearm(&r->pe, r->until);
        return;
    }
    if (!found) claim_answer(r->d, r->from, r->req, ENOENT);
    pl_recheck_done(pl, r);
}

void pl_recheck_expired(struct pt_entry *e)
{
    recheck_again(PL_RECHECK(e));
}

/* Whether the socket (sport -> from's dport) is here, of a user with an endpoint open: a
 * process under the library that was preempted between its connect and its request. */
static bool probe_may_come(struct psid *d, struct preload *pl, uint32_t from, uint16_t sport,
                           uint16_t dport)
{
    struct psid_node *pn = psid_node(d, from);
    if (!pn) return false;
    struct sockaddr_storage me, them;
    memcpy(&me, &d->self->addr, sizeof me);
    memcpy(&them, &pn->conf->addr, sizeof them);
    ((struct sockaddr_in *)&me)->sin_port = htons(sport);
    ((struct sockaddr_in *)&them)->sin_port = htons(dport);
    uint32_t uid = UINT32_MAX;
    if (sockinfo_diag(&me, &them, 0, NULL, NULL, &uid) < 0) return false;
    for (const struct pl_local *l = pl->locals; l; l = l->next)
        if (l->ep.uid == uid && l->netns == pl->netns) return true;
    return false;
}

/* A request was asked (a): a probe held for it (the acceptor's claim came first) is
 * answered now, when the other psid's yes comes (probe_match). */
static void rechecks_take(struct preload *pl, const struct pl_ask *a)
{
    for (struct pt_entry *e =
             ptable_find(&pl->rechecks, pl_conn_key(&pl->rechecks, a->node, a->sport, a->dport));
         e; e = ptable_find_next(e)) {
        struct pl_recheck *r = PL_RECHECK(e);
        if (r->from == a->node && r->sport == a->sport && r->dport == a->dport) {
            ptable_rearm(&r->pe, 0);
            r->until = 0;
            recheck_again(r);
            return;
        }
    }
}

static void d_probe(struct psid *d, struct preload *pl, uint32_t from, uint32_t req,
                    const struct psmsg *m)
{
    uint16_t sport, dport;
    struct pl_ep acceptor;
    if (pl_get_port(m, PSF_SRC_PORT, &sport) < 0 || pl_get_port(m, PSF_PORT, &dport) < 0 ||
        pl_get_ep(m, from, &acceptor) < 0) {
        claim_answer(d, from, req, ENOENT);
        return;
    }
    if (probe_match(d, pl, from, req, sport, dport, &acceptor)) return;
    struct pl_recheck *r = ptable_room(&pl->rechecks, acceptor.uid) ? calloc(1, sizeof *r) : NULL;
    if (r) {
        *r = (struct pl_recheck){
            .from = from, .req = req, .sport = sport, .dport = dport, .acceptor = acceptor, .d = d};
        /* after one pass at least (the request may be among this pass's messages); longer
         * when a process under the library may still send it */
        if (probe_may_come(d, pl, from, sport, dport)) r->until = loop_now() + PL_LATE_NS;
        if (ptable_add(&pl->rechecks, &r->pe, pl_conn_key(&pl->rechecks, from, sport, dport),
                       acceptor.uid, loop_now()) == 0)
            return;
        free(r);
    }
    claim_answer(d, from, req, ENOENT);
}

void pl_d_claim(struct psid *d, struct preload *pl, uint32_t from, const struct psmsg *m)
{
    uint32_t req = 0, is_probe = 0;
    psmsg_get_u32(&m->body, PSF_REQ, &req);
    psmsg_get_u32(&m->body, PSF_PROBE, &is_probe);
    if (is_probe) {
        d_probe(d, pl, from, req, m);
        return;
    }
    struct pl_pend *p = pend_find(pl, from, m);
    struct pl_ep acceptor;
    if (!p || pl_get_ep(m, from, &acceptor) < 0) {
        if (p) pl_pend_done(pl, p);
        claim_answer(d, from, req, ENOENT);
        return;
    }
    claim_pend(d, pl, from, req, p, &acceptor);
}

/* The acceptor took p: if it is still the socket the connector registered, the connector
 * learns its outcome; the answer to the listener's psid either way. p is done. */
static void claim_pend(struct psid *d, struct preload *pl, uint32_t from, uint32_t req,
                       struct pl_pend *p, const struct pl_ep *acceptor)
{
    int err = 0;
    struct pl_local *l = p->c ? pl_local_of(pl, p->c) : NULL;
    if (!l) {
        err = ENOENT;
    } else {
        struct sockaddr_storage me, them;
        memcpy(&me, &d->self->addr, sizeof me);
        memcpy(&them, &psid_node(d, from)->conf->addr, sizeof them);
        ((struct sockaddr_in *)&me)->sin_port = htons(p->sport);
        ((struct sockaddr_in *)&them)->sin_port = htons(p->dport);
        if (sockinfo_diag(&me, &them, p->cookie, NULL, NULL, NULL) < 0) {
            err = ENOENT;
            pl_outcome(d, p->c, p->conn, ECONNRESET, "the socket is gone", NULL, NULL);
        } else {
            pl_outcome(d, p->c, p->conn, 0, NULL, &l->ep, acceptor);
        }
    }
    pl_pend_done(pl, p);
    claim_answer(d, from, req, err);
}

/* Why a connection waiting for its acceptor ended without it. */
const char *pl_expired_text(int err)
{
    return err == ETIMEDOUT ? "not accepted in time"
           : err == ENOBUFS ? "the acceptor is at a limit"
                            : "the listener went away";
}

void pl_d_expired(struct psid *d, struct preload *pl, uint32_t from, const struct psmsg *m)
{
    struct pl_pend *p = pend_find(pl, from, m);
    if (!p) return;
    uint32_t e = ETIMEDOUT;
    psmsg_get_u32(&m->body, PSF_ERRNO, &e);
    pl_outcome(d, p->c, p->conn, e ? (int)e : ETIMEDOUT, pl_expired_text(e ? (int)e : ETIMEDOUT),
               NULL, NULL);
    pl_pend_done(pl, p);
}
