/*
 * pllisten.c - the listener's side of the preload's negotiation (plint.h, preload.c): the
 * listening sockets endpoints register (PSM_PL_LISTEN), those closed lately, which listener
 * takes a connection to an address and port (port_listener, with each user's share), and
 * the connections waiting for their acceptor (pl_wait): a connector's request from another
 * node (PSM_D_PL_CONNECT) kept until a claim takes it or it expires. Waits and closed
 * listeners are ptables of struct preload (ptable.h; pl_wait_add, closed_add say by what).
 */
#include "plint.h"

static void closed_add(struct preload *pl, const struct sockaddr_storage *addr, uint32_t uid);
static bool closed_took(struct psid *d, struct preload *pl, uint32_t from, uint16_t sport,
                        uint16_t dport, uint32_t cuid, uint32_t *luid);

/* PSM_PL_LISTEN + a listening socket: registered with its cookie, address and port, in the
 * endpoint's namespace; PSM_PL_UNLISTEN {PSF_PORT}: the process's listeners of that port go
 * (remembered a while: closed_add). */
void pl_listen(struct psid *d, struct preload *pl, struct client *c, const struct psmsg *m)
{
    struct pl_local *l = pl_local_of(pl, c);
    (void)d;
    if (!l) {
        if (m->type == PSM_PL_LISTEN) pl_close_passed(c);
        pl_reply(c, m->id, ENOTCONN, "no endpoint open");
        return;
    }
    if (m->type == PSM_PL_UNLISTEN) {
        uint16_t port;
        if (pl_get_port(m, PSF_PORT, &port) < 0) {
            pl_reply(c, m->id, EINVAL, "bad port");
            return;
        }
        unsigned n = 0;
        for (unsigned i = 0; i < l->nlis;) {
            if (sockinfo_port(&l->lis[i].addr) != port) {
                i++;
                continue;
            }
            if (l->netns == pl->netns) closed_add(pl, &l->lis[i].addr, l->ep.uid);
            l->lis[i] = l->lis[--l->nlis];
            n++;
        }
        pl_reply(c, m->id, n ? 0 : ENOENT, n ? NULL : "port not registered");
        return;
    }
    struct sockinfo si;
    const char *why = NULL;
    int err = pl_passed_tcp(c, l, &si, &why);
    if (!err && !si.listening) {
        err = EINVAL;
        why = "the socket does not listen";
    }
    if (err) {
        pl_reply(c, m->id, err, why);
        return;
    }
    unsigned i = 0;
    while (i < l->nlis && l->lis[i].cookie != si.cookie) i++;
    if (i == l->nlis) {
        if (l->nlis == PSI_PL_LISTENS) {
            pl_reply(c, m->id, ENOBUFS, "too many listening ports");
            return;
        }
        if (l->nlis == l->caplis) {
            unsigned cap = l->caplis ? 2 * l->caplis : 4;
            struct pl_listener *n = realloc(l->lis, cap * sizeof *n);
            if (!n) {
                pl_reply(c, m->id, ENOMEM, "out of memory");
                return;
            }
            l->lis = n;
            l->caplis = cap;
        }
        l->nlis++;
    }
    l->lis[i] = (struct pl_listener){.cookie = si.cookie, .addr = si.local};
    pl_reply(c, m->id, 0, NULL);
}

/* Whether listener address la takes a connection to dst: its port, and dst's address or the
 * wildcard. */
bool pl_takes(const struct sockaddr_storage *la, const struct sockaddr_storage *dst, bool *exact)
{
    if (sockinfo_port(la) != sockinfo_port(dst)) return false;
    *exact = sockinfo_same_host(la, dst);
    return *exact || sockinfo_wildcard(la);
}

/* A listener address's key in struct preload's closed: its port, and its address as text
 * (IPv4 as itself, also when mapped into IPv6), or "*" for the wildcard (wild): a
 * connection to an address is taken by the entries of that address and of the wildcard
 * (pl_takes), two look-ups. */
static uint64_t closed_key(const struct ptable *t, const struct sockaddr_storage *addr, bool wild)
{
    struct {
        uint16_t port;
        char addr[INET6_ADDRSTRLEN];
    } k;
    memset(&k, 0, sizeof k);
    k.port = sockinfo_port(addr);
    if (wild)
        k.addr[0] = '*';
    else
        sockinfo_addr_text(addr, k.addr);
    return ptable_key(t, &k, sizeof k);
}

void pl_closed_expire(struct pt_entry *e)
{
    ptable_del(e);
    free(PL_CLOSED(e));
}

/* A listener closed: a connection it accepted just before may still be announced (the
 * connector's request follows its SYN); see pl_closed_owner. In struct preload's closed
 * (ptable.h), for PL_ANSWER_NS: PL_WAIT_MAX in all, PL_WAIT_UID per listener's uid but
 * root's; the same listener closed again replaces its entry. */
static void closed_add(struct preload *pl, const struct sockaddr_storage *addr, uint32_t uid)
{
    for (struct pt_entry *
             e = ptable_find(&pl->closed, closed_key(&pl->closed, addr, sockinfo_wildcard(addr))),
            *next;
         e; e = next) {
        next = ptable_find_next(e);
        if (sockinfo_same(&PL_CLOSED(e)->addr, addr) && PL_CLOSED(e)->uid == uid)
            pl_closed_expire(e);
    }
    struct pl_closed *k = ptable_room(&pl->closed, uid) ? calloc(1, sizeof *k) : NULL;
    if (!k) return;
    *k = (struct pl_closed){.addr = *addr, .uid = uid, .until = loop_now() + PL_ANSWER_NS};
    if (ptable_add(&pl->closed, &k->pe, closed_key(&pl->closed, addr, sockinfo_wildcard(addr)), uid,
                   k->until) < 0)
        free(k);
}

/* The newest listener closed lately, of uid (UINT32_MAX: anybody's), that took connections
 * to local: of local's address, or of the wildcard (the newer; the exact one if both are
 * as new). */
static const struct pl_closed *closed_taking(const struct preload *pl,
                                             const struct sockaddr_storage *local, uint32_t uid)
{
    const struct pl_closed *found = NULL;
    uint64_t now = loop_now();
    for (int wild = 0; wild < 2; wild++)
        for (struct pt_entry *e = ptable_find(&pl->closed, closed_key(&pl->closed, local, wild)); e;
             e = ptable_find_next(e)) {
            const struct pl_closed *k = PL_CLOSED(e);
            bool exact;
            if (k->until <= now || (uid != UINT32_MAX && k->uid != uid) ||
                !pl_takes(&k->addr, local, &exact))
                continue;
            if (!found || k->until > found->until) found = k;
            break; /* (a bucket's entries are newest first) */
        }
    return found;
}

/* Whether an acceptor's socket (local, peer) is the other end of w's connector's: the
 * connector's addresses mirrored (in another namespace, sock_diag cannot say). */
bool pl_mirrors(const struct pl_wait *w, const struct sockaddr_storage *local,
                const struct sockaddr_storage *peer)
{
    return sockinfo_same(&w->cpeer, local) && sockinfo_same(&w->clocal, peer);
}

void pl_expired_msg(struct psid *d, const struct pl_wait *w, int err)
{
    if (w->same) { /* the connector is ours */
        pl_outcome(d, w->cc, w->conn, err, pl_expired_text(err), NULL, NULL);
        return;
    }
    struct psmsg_buf b = {0};
    psmsg_begin(&b, PSM_D_PL_EXPIRED, 0);
    psmsg_put_u32(&b, PSF_SRC_PORT, w->sport);
    psmsg_put_u32(&b, PSF_PORT, w->dport);
    psmsg_put_u32(&b, PSF_ERRNO, (uint32_t)err);
    psid_send(d, w->node, &b);
    psmsg_buf_free(&b);
}

/* Connections waiting for their acceptor are in struct preload's waits (ptable.h): a
 * same-node one by its connector's cookie (pl_wait_of asks sock_diag for it; the socket
 * asking again replaces it), another node's by pl_conn_key (its PSM_D_PL_CONNECT, a claim,
 * and the same 4-tuple asking again name it so); PL_WAIT_MAX in all, PL_WAIT_UID per
 * listener's uid but root's, each until PL_KEEP_NS. The same waits are in its conwaits,
 * which counts them per connector's uid (PL_WAIT_UID but root's) and finds a same-node
 * connector by its addresses (pl_tuple_key: in another network namespace psid serves,
 * where sock_diag cannot look). 0, or -1 (ENOBUFS: w is not added). */
int pl_wait_add(struct preload *pl, struct pl_wait *w)
{
    uint64_t k = w->same ? pl_cookie_key(&pl->waits, w->cookie)
                         : pl_conn_key(&pl->waits, w->node, w->sport, w->dport);
    uint64_t kc = w->same && w->tuple ? pl_tuple_key(&pl->conwaits, w->node, &w->clocal, &w->cpeer)
                                      : k; /* (never looked up by it) */
    if (ptable_add(&pl->waits, &w->pe, k, w->uid, loop_now() + PL_KEEP_NS) < 0) return -1;
    if (ptable_add(&pl->conwaits, &w->ce, kc, w->connector.uid, 0) < 0) {
        ptable_del(&w->pe);
        return -1;
    }
    pl->nsame += w->same;
    return 0;
}

void pl_wait_unlink(struct preload *pl, struct pl_wait *w)
{
    ptable_del(&w->pe);
    ptable_del(&w->ce);
    if (w->same) pl->nsame--;
}

void pl_wait_expired(struct pt_entry *e)
{
    struct pl_wait *w = PL_WAIT(e);
    if (w->parked) { /* its ends never had room for the channel: TCP, for a limit */
        if (w->pc) pl_acc_reply(w->pc, w->ptag, ENOBUFS, "no room to pass the channel in time");
        pl_outcome(w->d, w->cc, w->conn, ENOBUFS, "no room to pass the channel in time", NULL,
                   NULL);
    } else {
        pl_expired_msg(w->d, w, ETIMEDOUT);
    }
    pl_wait_unlink(w->d->preload, w);
    free(w);
}

/* Whether a wait for listener uid luid from connector uid cuid would pass either's share
 * (PL_WAIT_UID; root has none), or the bound: one user's connections that are never
 * accepted, to its own listeners or to others', cannot fill the table for everybody. */
static bool over_share(const struct preload *pl, uint32_t luid, uint32_t cuid)
{
    return !ptable_room(&pl->waits, luid) || !ptable_room(&pl->conwaits, cuid);
}

/* The process under the library that listens where a connection to dst goes: in network
 * namespace netns (other_ns: in a namespace psid serves other than netns, a container's),
 * on dst's port, bound to dst's address or else to the wildcard (the kernel prefers the
 * exact one). Processes of one user count as one (a socket shared across fork, a
 * SO_REUSEPORT group, which the kernel allows one user only); NULL with *err and *why when
 * there is none, when several users' listeners would take it (EADDRINUSE), or when too
 * many connections wait already. */
struct pl_local *pl_port_listener(struct preload *pl, uint64_t netns, bool other_ns,
                                  const struct sockaddr_storage *dst, uint32_t cuid, int *err,
                                  const char **why)
{
    struct pl_local *found = NULL;
    bool found_exact = false, several = false;
    for (struct pl_local *l = pl->locals; l; l = l->next) {
        if (other_ns ? l->netns == netns : l->netns != netns) continue;
        for (unsigned i = 0; i < l->nlis; i++) {
            bool exact;
            if (!pl_takes(&l->lis[i].addr, dst, &exact) || (found && found_exact && !exact))
                continue;
            if (!found || (exact && !found_exact)) {
                found = l;
                found_exact = exact;
                several = false;
            } else if (l->ep.uid != found->ep.uid) {
                several = true;
            }
        }
    }
    if (!found || several) {
        *err = found ? EADDRINUSE : ECONNREFUSED;
        *why = found ? "listeners of several users" : "listener not registered";
        return NULL;
    }
    if (pl->waits.n >= PL_WAIT_MAX) {
        *err = ENOBUFS;
        *why = "too many connections waiting for an accept";
        return NULL;
    }
    if (over_share(pl, found->ep.uid, cuid)) {
        *err = ENOBUFS;
        *why = "too many connections of this user waiting for an accept";
        return NULL;
    }
    return found;
}

/* A request for an address without a registered listener: its listener closed lately (a
 * program that accepts one connection and closes its listener, as socat and nc do), and
 * the connection is here, accepted (me, them: the accepted socket's addresses, in psid's
 * namespace), in a socket of that listener's uid. The request came after the accept (the
 * connector's SYN goes first, and a connection negotiates once it lived PSP_UPGRADE_US):
 * it waits for the claim all the same. */
bool pl_closed_owner(struct preload *pl, const struct sockaddr_storage *me,
                     const struct sockaddr_storage *them, uint32_t cuid, uint32_t *luid)
{
    const struct pl_closed *k = closed_taking(pl, me, UINT32_MAX);
    if (!k || over_share(pl, k->uid, cuid)) return false;
    uint32_t uid = UINT32_MAX;
    if (sockinfo_diag(me, them, 0, NULL, NULL, &uid) < 0 || uid != k->uid) return false;
    *luid = uid;
    return true;
}

static bool closed_took(struct psid *d, struct preload *pl, uint32_t from, uint16_t sport,
                        uint16_t dport, uint32_t cuid, uint32_t *luid)
{
    struct psid_node *pn = psid_node(d, from);
    if (!pn) return false;
    struct sockaddr_storage me, them;
    pl_node_addr(d->self, dport, &me);
    pl_node_addr(pn->conf, sport, &them);
    return pl_closed_owner(pl, &me, &them, cuid, luid);
}

/* A PSM_D_PL_CONNECT: the listener of the node's address and that port, and the wait. */
void pl_d_connect(struct psid *d, struct preload *pl, uint32_t from, const struct psmsg *m)
{
    uint32_t req = 0, conn = 0;
    uint16_t port, sport;
    struct pl_ep cep;
    psmsg_get_u32(&m->body, PSF_REQ, &req);
    int err = 0;
    const char *why = NULL;
    struct pl_local *found = NULL;
    struct sockaddr_storage dst;
    if (pl_get_port(m, PSF_PORT, &port) < 0 || pl_get_port(m, PSF_SRC_PORT, &sport) < 0 ||
        psmsg_get_u32(&m->body, PSF_CONN, &conn) < 0 || pl_get_ep(m, from, &cep) < 0) {
        err = EINVAL;
        why = "malformed request";
    } else {
        pl_node_addr(d->self, port, &dst);
        found = pl_port_listener(pl, pl->netns, false, &dst, cep.uid, &err, &why);
    }
    if (found && found->shm_only) { /* no RDP endpoint */
        found = NULL;
        err = ECONNREFUSED;
        why = "the port's listener has no RDP endpoint";
    }
    uint32_t luid = found ? found->ep.uid : 0;
    if (err == ECONNREFUSED && closed_took(d, pl, from, sport, port, cep.uid, &luid)) {
        err = 0;
        why = NULL;
    }
    struct psid_node *fn = err ? NULL : psid_node(d, from);
    if (fn) { /* the acceptor's claim came first and waited for nothing, or it declined */
        struct sockaddr_storage src;
        pl_node_addr(fn->conf, sport, &src);
        if ((err = pl_tomb_take(pl, from, &dst, &src, luid))) why = pl_tomb_text(err);
    }
    struct pl_wait *w = err ? NULL : calloc(1, sizeof *w);
    if (!err && !w) {
        err = ENOMEM;
        why = "out of memory";
    }
    if (w) {
        /* a connection of the same 4-tuple that was never taken is replaced */
        for (struct pt_entry *
                 e = ptable_find(&pl->waits, pl_conn_key(&pl->waits, from, sport, port)),
                *next;
             e; e = next) {
            next = ptable_find_next(e);
            struct pl_wait *o = PL_WAIT(e);
            if (!o->same && o->node == from && o->sport == sport && o->dport == port) {
                pl_wait_unlink(pl, o);
                free(o);
            }
        }
        *w = (struct pl_wait){.node = from,
                              .sport = sport,
                              .dport = port,
                              .conn = conn,
                              .connector = cep,
                              .uid = luid,
                              .d = d};
        if (pl_wait_add(pl, w) < 0) { /* (room was checked: pl_port_listener, closed_took) */
            free(w);
            err = ENOBUFS;
            why = "too many connections waiting for an accept";
        }
    }
    struct psmsg_buf b = {0};
    psmsg_begin(&b, PSM_D_PL_CONNECT_REPLY, 0);
    psmsg_put_u32(&b, PSF_REQ, req);
    psmsg_put_u32(&b, PSF_ERRNO, (uint32_t)err);
    if (why) psmsg_put_str(&b, PSF_TEXT, why);
    psid_send(d, from, &b);
    psmsg_buf_free(&b);
}

/* The connection waiting for its acceptor whose other end is a's, or NULL. */
struct pl_wait *pl_wait_of(struct psid *d, struct preload *pl, const struct sockinfo *a)
{
    char t[INET6_ADDRSTRLEN];
    uint16_t dport = sockinfo_port(&a->local), sport = sockinfo_port(&a->peer);
    if (pl->nsame) {
        /* both ends in psid's namespace: the connector is the socket sock_diag finds at the
         * mirrored 4-tuple, known by the cookie it registered */
        uint64_t ck = 0;
        if (a->netns == pl->netns && sockinfo_diag(&a->peer, &a->local, 0, &ck, NULL, NULL) == 0)
            for (struct pt_entry *e = ptable_find(&pl->waits, pl_cookie_key(&pl->waits, ck)); e;
                 e = ptable_find_next(e)) {
                struct pl_wait *w = PL_WAIT(e);
                if (w->same && w->netns == pl->netns && w->cookie == ck && w->dport == dport)
                    return w;
            }
        /* a namespace psid serves on one side at least (a container on this node), where
         * sock_diag cannot look: the connector's addresses mirror the acceptor's, in
         * exactly one wait (both namespaces are root's: nobody makes a look-alike there) */
        for (struct pt_entry *e = ptable_find(
                 &pl->conwaits, pl_tuple_key(&pl->conwaits, d->self->id, &a->peer, &a->local));
             e; e = ptable_find_next(e)) {
            struct pl_wait *w = PT_OWNER(e, struct pl_wait, ce);
            if (w->same && w->tuple && !w->ambiguous && w->dport == dport &&
                (w->netns != pl->netns || a->netns != pl->netns) &&
                pl_mirrors(w, &a->local, &a->peer))
                return w;
        }
    }
    /* another node's connector: the accepted socket is in psid's namespace, on the node's
     * address (v4-mapped counts as IPv4) */
    sockinfo_addr_text(&a->local, t);
    if (a->netns != pl->netns || strcmp(t, d->self->addr_str)) return NULL;
    sockinfo_addr_text(&a->peer, t);
    const struct psconf_node *n = pl_node_by_text(d, t);
    for (struct pt_entry *e =
             n ? ptable_find(&pl->waits, pl_conn_key(&pl->waits, n->id, sport, dport)) : NULL;
         e; e = ptable_find_next(e)) {
        struct pl_wait *w = PL_WAIT(e);
        if (!w->same && w->node == n->id && w->sport == sport && w->dport == dport) return w;
    }
    return NULL;
}

/* The acceptor's socket a: the connection it is, and its outcome to both. */
/* Whether a listener of user uid in namespace netns takes connections to local (registered
 * now, or closed lately): an accepted socket came from one such, and a claim for one that
 * none takes is refused at once instead of held for its request. */
bool pl_user_listens(const struct preload *pl, uint64_t netns, uint32_t uid,
                     const struct sockaddr_storage *local)
{
    bool exact;
    for (const struct pl_local *l = pl->locals; l; l = l->next)
        if (l->ep.uid == uid && l->netns == netns)
            for (unsigned i = 0; i < l->nlis; i++)
                if (pl_takes(&l->lis[i].addr, local, &exact)) return true;
    return netns == pl->netns && closed_taking(pl, local, uid);
}
