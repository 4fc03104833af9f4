/*
 * preload.c - psid's side of the preload library's negotiation (docs/preload-design.md,
 * messages in psproto.h): which local processes have an RDP endpoint, which TCP sockets
 * they listen on, and, per TCP connection, the decision (the connection runs on the kernel's
 * TCP meanwhile: nobody waits for it but under PSP_SYNC).
 *
 *  - Kernel objects, not claims (docs/security.md, "The claim rule"): PSM_PL_OPEN,
 *    PSM_PL_LISTEN, PSM_PL_CONNECT, PSM_PL_ACCEPT and PSM_PL_DECLINE carry the socket itself
 *    (client_take_fd), and psid believes only what the kernel says of it (sockinfo.c): its
 *    addresses, its cookie, its network namespace. A socket must be in its endpoint's
 *    namespace, and an endpoint in psid's or in one psid serves (made by root: the
 *    privileged child checks, priv_netns); a user's private namespace, where any 4-tuple can
 *    be had, is served nothing. A listener counts for the connections the kernel would give
 *    it: its namespace, its address (or the wildcard) and its port. An accepted socket in
 *    psid's namespace is the one sock_diag finds with its cookie, and its connector the
 *    socket sock_diag finds at the mirrored 4-tuple, by the cookie registered.
 *  - An endpoint belongs to one client connection (SO_PEERCRED: its uid) and dies with it,
 *    as do its listeners and what waits for it.
 *  - Connector's node: PSM_PL_CONNECT (sent after the kernel's connect started: the port
 *    is the kernel's choice) is forwarded to the destination node as PSM_D_PL_CONNECT; on
 *    its yes a pl_pend records the connection (with the socket's cookie) until its outcome;
 *    a refusal is the client's outcome (it does not wait for the reply).
 *  - Listener's node: the node's address and port must have one user's registered
 *    listeners; the connection is kept by its 4-tuple (pl_wait) until a process of the
 *    listener's uid claims it (PSM_PL_ACCEPT after its accept), or PSI_PL_ACCEPT_MS passed
 *    (PSM_D_PL_EXPIRED). A claim asks the connector's psid (PSM_D_PL_CLAIM), which checks
 *    with sock_diag that the 4-tuple is still the registered socket, sends the connector
 *    its PSM_PL_OUTCOME, and answers; then the acceptor gets its answer (the event
 *    PSM_PL_ACCEPTED). One place decides: the two never disagree. A claim that comes
 *    before the request (the two sides ask independently) probes the connector's psid
 *    (PSF_PROBE), which holds it while the request may still come; on one node the claim
 *    itself waits (pl_late) and the request takes it. One that waited for nothing is TCP,
 *    and a tombstone (pl_tomb) refuses the request should it come later.
 *  - Keys: both psids derive the pair key from the preload key (derived from the cluster key,
 *    preload_key: the engine keeps it, not the cluster key) and both endpoints' (node,
 *    endpoint, incarnation, uid) (pl_pair_key), and hand it only to the endpoint's own
 *    process. Neither key leaves psid.
 * The files, by job: this one (the module: requests and daemon messages dispatched, a
 * client or node gone; endpoints, keys, replies, the sockets clients pass), pllisten.c
 * (listeners, and connections waiting for their acceptor), plconnect.c (the connector's
 * side), plclaim.c (the acceptor's claims, late claims, tombstones); plint.h has the tables
 * they share.
 * Every table is bounded: listeners per endpoint (PSI_PL_LISTENS), namespaces remembered
 * (PL_NETNS_SEEN), and what is pending, each kind in a ptable of struct preload (ptable.h:
 * found by its key in O(1), counted per uid in O(1), a deadline on the loop; the entry in
 * its record; pl_tables), PL_WAIT_MAX entries each and PL_WAIT_UID per uid but root's:
 * connections waiting for their acceptor (waits, by cookie or connection, per listener's
 * uid; conwaits, the same per connector's uid, by 4-tuple), requests asking another psid
 * (asks by req, askconns by connection), connections waiting for their outcome (pends),
 * claims in flight (claims by req; probes, those that are, by cookie), claims waiting for
 * their requests (lates by the accepted socket, latecons by the connector), probes held for theirs
 * (rechecks), tombstones (tombs), listeners closed lately (closed, by address and port). No message
 * walks a table: only a node or a client gone, an endpoint closed, and a drained client's parked
 * claims do.
 */
#include "plint.h"

static int passed(struct client *c, int want, struct sockinfo *si, int *fd, const char **why);
static size_t endpoint_clients(struct psid *d, struct client ***out);

/* struct preload's tables (ptable.h): each PL_WAIT_MAX entries, PL_WAIT_UID per uid but
 * root's, each entry expiring by its table's function. */
static const struct {
    size_t off;
    void (*expire)(struct pt_entry *e);
} pl_tables[] = {
    {offsetof(struct preload, waits), pl_wait_expired},
    {offsetof(struct preload, conwaits), NULL}, /* (no deadline: its wait's) */
    {offsetof(struct preload, asks), pl_ask_expired},
    {offsetof(struct preload, askconns), NULL}, /* (no deadline: its ask's) */
    {offsetof(struct preload, pends), pl_pend_expired},
    {offsetof(struct preload, claims), pl_claim_expired},
    {offsetof(struct preload, probes), NULL}, /* (no deadline: its claim's) */
    {offsetof(struct preload, lates), pl_late_expire},
    {offsetof(struct preload, latecons), NULL}, /* (no deadline: its late's) */
    {offsetof(struct preload, rechecks), pl_recheck_expired},
    {offsetof(struct preload, tombs), pl_tomb_expire},
    {offsetof(struct preload, closed), pl_closed_expire},
};
#define PL_NTABLES      (sizeof pl_tables / sizeof pl_tables[0])
#define PL_TABLE(pl, i) ((struct ptable *)((char *)(pl) + pl_tables[i].off))

struct preload *pl_state(struct psid *d)
{
    if (d->preload || !(d->preload = calloc(1, sizeof *d->preload))) return d->preload;
    struct preload *pl = d->preload;
    pl->netns = sockinfo_own_netns();
    size_t i = 0;
    while (i < PL_NTABLES && ptable_init(PL_TABLE(pl, i), d->loop, PL_WAIT_MAX, PL_WAIT_UID,
                                         pl_tables[i].expire) == 0)
        i++;
    if (i < PL_NTABLES || !(pl->query = plquery_new(d, endpoint_clients))) {
        while (i--) ptable_fini(PL_TABLE(pl, i));
        free(pl);
        d->preload = NULL;
    }
    return d->preload;
}

/* A connection's key in table t: the other node and the connector's and listener's ports. */
uint64_t pl_conn_key(const struct ptable *t, uint32_t node, uint16_t sport, uint16_t dport)
{
    struct {
        uint32_t node;
        uint16_t sport, dport;
    } k = {node, sport, dport};
    return ptable_key(t, &k, sizeof k);
}

/* A socket's key in table t: its cookie. */
uint64_t pl_cookie_key(const struct ptable *t, uint64_t cookie)
{
    return ptable_key(t, &cookie, sizeof cookie);
}

/* A connection's key in table t: the connector's node and both ends' addresses and ports
 * (IPv4 as itself, also when the socket has it mapped into IPv6, as sockinfo_same). */
uint64_t pl_tuple_key(const struct ptable *t, uint32_t node, const struct sockaddr_storage *local,
                      const struct sockaddr_storage *peer)
{
    struct {
        uint32_t node;
        uint16_t lport, pport;
        char laddr[INET6_ADDRSTRLEN], paddr[INET6_ADDRSTRLEN];
    } k;
    memset(&k, 0, sizeof k);
    k.node = node;
    k.lport = sockinfo_port(local);
    k.pport = sockinfo_port(peer);
    sockinfo_addr_text(local, k.laddr);
    sockinfo_addr_text(peer, k.paddr);
    return ptable_key(t, &k, sizeof k);
}

/* Whether network namespace netns, of socket fd, is one psid serves: its own, or one made
 * by root (the privileged child says; remembered, a namespace's cookie is never reused). */
static bool netns_served(struct psid *d, struct preload *pl, uint64_t netns, int fd)
{
    if (netns && netns == pl->netns) return true;
    for (unsigned i = 0; i < PL_NETNS_SEEN; i++)
        if (pl->seen[i].netns == netns) return pl->seen[i].served;
    int r = priv_netns(d, fd);
    if (r < 0 && errno != EPERM) return false; /* not remembered: ask again next time */
    unsigned i = pl->nseen++ % PL_NETNS_SEEN;
    pl->seen[i].netns = netns;
    pl->seen[i].served = r == 1;
    return r == 1;
}

/* The base of the pair keys, from the cluster key: the engine keeps it, not the cluster key. */
void preload_key(const uint8_t cluster_key[32], uint8_t key[32])
{
    crypto_kdf_derive_from_key(key, 32, 3, "pspreld1", cluster_key);
}

/* Both ends' descriptions, the lower (node, endpoint) first, keyed with the preload key. */
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

/* The other endpoint of a pair, where it is, and the pair's key. */
void pl_put_peer(struct psid *d, struct psmsg_buf *b, const struct pl_ep *me,
                 const struct pl_ep *peer)
{
    uint8_t key[32];
    pl_pair_key(d->pl_key, me, peer, key);
    struct psid_node *pn = psid_node(d, peer->node);
    psmsg_put_u32(b, PSF_NODE_ID, peer->node);
    psmsg_put_u32(b, PSF_ENDPOINT, peer->id);
    psmsg_put_u32(b, PSF_UDP_PORT, peer->udp_port);
    psmsg_put_str(b, PSF_ADDR, pn ? pn->conf->addr_str : "");
    psmsg_put_bytes(b, PSF_KEY, key, 32);
    sodium_memzero(key, sizeof key);
}

void pl_reply(struct client *c, uint32_t id, int err, const char *why)
{
    struct psmsg_buf b = {0};
    psmsg_begin(&b, PSM_PL_REPLY, id);
    psmsg_put_u32(&b, PSF_ERRNO, (uint32_t)err);
    if (why) psmsg_put_str(&b, PSF_TEXT, why);
    client_send(c, &b);
    psmsg_buf_free(&b);
}

/* The answer to a PSM_PL_ACCEPT, an event (PSM_PL_ACCEPTED), since the acceptor does not
 * wait for it: its connection goes on over the kernel socket meanwhile. tag is the
 * acceptor's name for the connection (PSF_TAG of its request). */
void pl_acc_begin(struct psmsg_buf *b, uint32_t tag, int err, const char *why)
{
    psmsg_begin(b, PSM_PL_ACCEPTED, 0);
    psmsg_put_u32(b, PSF_TAG, tag);
    psmsg_put_u32(b, PSF_ERRNO, (uint32_t)err);
    if (why) psmsg_put_str(b, PSF_TEXT, why);
}

void pl_acc_reply(struct client *c, uint32_t tag, int err, const char *why)
{
    struct psmsg_buf b = {0};
    pl_acc_begin(&b, tag, err, why);
    client_send(c, &b);
    psmsg_buf_free(&b);
}

/* A PSM_PL_OUTCOME event to a connector: err 0 with the acceptor's endpoint, or TCP. */
void pl_outcome(struct psid *d, struct client *c, uint32_t conn, int err, const char *why,
                const struct pl_ep *me, const struct pl_ep *acceptor)
{
    if (!c) return;
    struct psmsg_buf b = {0};
    psmsg_begin(&b, PSM_PL_OUTCOME, 0);
    psmsg_put_u32(&b, PSF_CONN, conn);
    psmsg_put_u32(&b, PSF_ERRNO, (uint32_t)err);
    if (why) psmsg_put_str(&b, PSF_TEXT, why);
    if (!err) pl_put_peer(d, &b, me, acceptor);
    client_send(c, &b);
    psmsg_buf_free(&b);
}

struct pl_local *pl_local_of(struct preload *pl, const struct client *c)
{
    for (struct pl_local *l = pl->locals; l; l = l->next)
        if (l->c == c) return l;
    return NULL;
}

/* Whether an endpoint between nodes (not shm_only) has that id already: only one whose UDP
 * socket shares the port (SO_REUSEADDR, a user's own trick) can. */
static bool id_used(const struct preload *pl, uint16_t id)
{
    for (const struct pl_local *l = pl->locals; l; l = l->next)
        if (!l->shm_only && l->ep.id == id) return true;
    return false;
}

/* An endpoint's name is its UDP socket: its id is the socket's port (unique on the node's
 * address while the socket lives), its incarnation a hash of the boot and the socket's
 * cookie (never reused within a boot). Both are what the kernel says of the socket, so the
 * psid started after a crash gives a process that opens its endpoint again with the same
 * socket the same id and incarnation, hence the same pair keys: the connections it has
 * keep their names and keys (docs/preload-design.md, "psid restarts"); and no process can
 * take another's, whatever it sends. */
static uint64_t ep_incarnation(struct preload *pl, uint64_t cookie)
{
    if (!pl->boot_read) { /* the boot's id: a random UUID the kernel draws at boot */
        pl->boot_read = true;
        FILE *f = fopen("/proc/sys/kernel/random/boot_id", "re");
        if (!f || !fgets(pl->boot, sizeof pl->boot, f))
            randombytes_buf(pl->boot, sizeof pl->boot - 1); /* stable for this psid only */
        if (f) fclose(f);
    }
    uint8_t in[8], h[8];
    be_put64(in, cookie);
    crypto_generichash_state st;
    crypto_generichash_init(&st, (const uint8_t *)"pspl ep inc v1", 14, sizeof h);
    crypto_generichash_update(&st, (const uint8_t *)pl->boot, sizeof pl->boot);
    crypto_generichash_update(&st, in, sizeof in);
    crypto_generichash_final(&st, h, sizeof h);
    return be_get64(h);
}

void pl_put_ep(struct psmsg_buf *b, const struct pl_ep *e)
{
    psmsg_put_u32(b, PSF_ENDPOINT, e->id);
    psmsg_put_u64(b, PSF_INCARNATION, e->inc);
    psmsg_put_u32(b, PSF_UID, e->uid);
    psmsg_put_u32(b, PSF_UDP_PORT, e->udp_port);
}

/* Another psid's endpoint from its message; -1 if malformed (a uid of UINT32_MAX is none:
 * no process has it, and a ptable counts it as a free slot). */
int pl_get_ep(const struct psmsg *m, uint32_t node, struct pl_ep *e)
{
    uint32_t id, port;
    *e = (struct pl_ep){.node = node};
    if (psmsg_get_u32(&m->body, PSF_ENDPOINT, &id) < 0 || id == 0 || id > 0xffff ||
        psmsg_get_u64(&m->body, PSF_INCARNATION, &e->inc) < 0 ||
        psmsg_get_u32(&m->body, PSF_UID, &e->uid) < 0 || e->uid == UINT32_MAX ||
        psmsg_get_u32(&m->body, PSF_UDP_PORT, &port) < 0 || port == 0 || port > 0xffff)
        return -1;
    e->id = (uint16_t)id;
    e->udp_port = (uint16_t)port;
    return 0;
}

int pl_get_port(const struct psmsg *m, uint16_t tag, uint16_t *port)
{
    uint32_t v;
    if (psmsg_get_u32(&m->body, tag, &v) < 0 || v == 0 || v > 0xffff) return -1;
    *port = (uint16_t)v;
    return 0;
}

/* The socket passed with the request (a TCP socket, or with want SOCK_DGRAM a UDP one): what
 * the kernel says of it into *si; the descriptor stays open in *fd (the caller closes it).
 * 0, or an errno value with *why (then nothing is left open). */
static int passed(struct client *c, int want, struct sockinfo *si, int *fd, const char **why)
{
    *fd = client_take_fd(c);
    if (*fd < 0) {
        *why = "no socket passed with the request";
        return EBADF;
    }
    int err = sockinfo_of(*fd, want, si, why);
    if (err) {
        close(*fd);
        *fd = -1;
    }
    return err;
}

/* A TCP socket l's process passed: in l's network namespace, as every socket of an
 * endpoint must be (a look-alike in another namespace is not the connection it mirrors). */
int pl_passed_tcp(struct client *c, const struct pl_local *l, struct sockinfo *si, const char **why)
{
    int fd, err = passed(c, SOCK_STREAM, si, &fd, why);
    if (err) return err;
    close(fd);
    if (l && si->netns != l->netns) {
        *why = "the socket is not in the endpoint's network namespace";
        return EXDEV;
    }
    return 0;
}

/* The accepted socket passed with the request (a claim's: PSM_PL_ACCEPT; else a decline's)
 * and what the kernel says of it; *owner: its user (UINT32_MAX: another namespace's). */
int pl_passed_accepted(struct psid *d, struct preload *pl, struct client *c,
                       const struct pl_local *l, bool claim, struct sockinfo *si, uint32_t *owner,
                       const char **why)
{
    int fd, err = passed(c, SOCK_STREAM, si, &fd, why);
    if (err) return err;
    *owner = UINT32_MAX;
    if (claim && pl_claim_waits(pl, si->cookie)) { /* (before sock_diag's query: one per socket) */
        err = EALREADY;
        *why = "a claim of this socket waits already";
    } else if (si->peer.ss_family == AF_UNSPEC) {
        err = ENOTCONN;
        *why = "the socket is not connected";
    } else if (l && si->netns != l->netns) {
        err = EXDEV;
        *why = "the socket is not in the endpoint's network namespace";
    } else if (!l && !netns_served(d, pl, si->netns, fd)) {
        err = EPERM;
        *why = "the socket is in a network namespace psid does not serve";
    } else if (si->netns == pl->netns &&
               sockinfo_diag(&si->local, &si->peer, si->cookie, NULL, NULL, owner) < 0) {
        err = ENOENT;
        *why = "the socket is not the one at its addresses";
    }
    close(fd);
    return err;
}

static void pl_open(struct psid *d, struct preload *pl, struct client *c, const struct psmsg *m)
{
    const char *why = NULL;
    struct sockinfo si;
    int fd = -1, err = 0;
    char a[INET6_ADDRSTRLEN];
    /* PSF_SAME_NODE: a process in a network namespace without the node's address (a
     * container on this node): its endpoint serves same-node connections only, and its
     * socket is bound to whatever that namespace has. Any namespace but psid's is so. */
    uint32_t flag = 0;
    psmsg_get_u32(&m->body, PSF_SAME_NODE, &flag);
    if (!pl->netns) {
        pl_close_passed(c);
        err = EOPNOTSUPP;
        why = "the kernel cannot say which network namespace a socket is in (SO_NETNS_COOKIE, "
              "Linux 5.14): the preload is not served";
    } else {
        err = passed(c, SOCK_DGRAM, &si, &fd, &why); /* its port, and proof */
    }
    bool shm_only = flag != 0 || (!err && si.netns != pl->netns);
    if (!err && !netns_served(d, pl, si.netns, fd)) {
        err = EPERM;
        why = "a network namespace psid does not serve (made in a private user namespace)";
    } else if (!err && (sockinfo_addr_text(&si.local, a),
                        (!shm_only && strcmp(a, d->self->addr_str)) || !sockinfo_port(&si.local))) {
        err = EADDRNOTAVAIL;
        why = "not bound to the node's address";
    } else if (!err && pl_local_of(pl, c)) {
        err = EALREADY;
        why = "endpoint already open";
    }
    if (fd >= 0) close(fd);
    if (err) {
        pl_reply(c, m->id, err, why);
        return;
    }
    uint16_t id = sockinfo_port(&si.local);
    if (id == 0xffff || (!shm_only && id_used(pl, id))) {
        pl_reply(c, m->id, EADDRINUSE, "the endpoint's port names another endpoint");
        return;
    }
    struct pl_local *l = calloc(1, sizeof *l);
    if (!l) {
        pl_reply(c, m->id, ENOMEM, "no endpoint");
        return;
    }
    l->c = c;
    l->netns = si.netns;
    l->shm_only = shm_only;
    pl->nforeign += l->netns != pl->netns;
    l->ep = (struct pl_ep){.node = d->self->id,
                           .uid = client_uid(c),
                           .id = id,
                           .udp_port = id,
                           .inc = ep_incarnation(pl, si.cookie)};
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

const struct psconf_node *pl_node_by_text(const struct psid *d, const char *text)
{

    for (size_t i = 0; i < d->conf.nnodes; i++)
        if (!strcmp(d->nodes[i].conf->addr_str, text)) return d->nodes[i].conf;
    return NULL;
}

/* A numeric address and a port as a socket address; -1 if it is none. */
int pl_addr_parse(const char *text, uint16_t port, struct sockaddr_storage *out)
{
    memset(out, 0, sizeof *out);
    struct sockaddr_in *a4 = (void *)out;
    struct sockaddr_in6 *a6 = (void *)out;
    if (inet_pton(AF_INET, text, &a4->sin_addr) == 1) {
        a4->sin_family = AF_INET;
        a4->sin_port = htons(port);
        return 0;
    }
    if (inet_pton(AF_INET6, text, &a6->sin6_addr) == 1) {
        a6->sin6_family = AF_INET6;
        a6->sin6_port = htons(port);
        return 0;
    }
    return -1;
}

/* The node's address and port as a socket address. */
void pl_node_addr(const struct psconf_node *n, uint16_t port, struct sockaddr_storage *out)
{
    memcpy(out, &n->addr, sizeof *out);
    ((struct sockaddr_in *)out)->sin_port = htons(port);
}

/* The clients of the node's endpoints, to ask (plquery_procs_fn). */
static size_t endpoint_clients(struct psid *d, struct client ***out)
{
    struct preload *pl = d->preload;
    size_t n = 0;
    for (const struct pl_local *l = pl->locals; l; l = l->next) n++;
    *out = n ? calloc(n, sizeof **out) : NULL;
    if (!*out) return 0;
    n = 0;
    for (const struct pl_local *l = pl->locals; l; l = l->next) (*out)[n++] = l->c;
    return n;
}

static void pl_report(struct preload *pl, struct client *c, const struct psmsg *m)
{
    if (pl_local_of(pl, c)) plquery_report(pl->query, c, m);
}

/* A message that should have carried a socket closes what came with it anyway. */
void pl_close_passed(struct client *c)
{
    int fd = client_take_fd(c);
    if (fd >= 0) close(fd);
}

/* Whether uid (not root) may poke once more this second: PL_POKES_PER_UID in all, whatever
 * the number of its processes (a poke wakes another user's progress thread). */
static bool uid_may_poke(struct preload *pl, uint32_t uid, uint64_t sec)
{
    if (uid == 0) return true;
    unsigned k = 0, stalest = 0;
    for (; k < PL_POKE_UIDS && pl->pokes[k].uid != uid; k++)
        if (pl->pokes[k].sec < pl->pokes[stalest].sec) stalest = k;
    if (k == PL_POKE_UIDS) { /* not counted lately: the stalest slot (unused ones are 0) */
        k = stalest;
        pl->pokes[k].uid = uid;
        pl->pokes[k].sec = 0;
    }
    if (pl->pokes[k].sec != sec) {
        pl->pokes[k].sec = sec;
        pl->pokes[k].n = 0;
    }
    return ++pl->pokes[k].n <= PL_POKES_PER_UID;
}

/* PSM_PL_POKE {PSF_PID}: the process of that pid with an endpoint is told to look at its
 * same-node channels (the other end moves one back to TCP). Only from a process with an
 * endpoint, at most PL_POKES_PER_S a second per process and PL_POKES_PER_UID per user: a
 * poke wakes a progress thread, no more. */
static void pl_poke(struct preload *pl, struct client *c, const struct psmsg *m)
{
    struct pl_local *me = pl_local_of(pl, c);
    uint32_t pid;
    if (!me || psmsg_get_u32(&m->body, PSF_PID, &pid) < 0 || pid == 0) return;
    uint64_t sec = loop_now() / 1000000000ull;
    if (me->poke_since != sec) {
        me->poke_since = sec;
        me->pokes = 0;
    }
    if (++me->pokes > PL_POKES_PER_S || !uid_may_poke(pl, me->ep.uid, sec)) return;
    for (struct pl_local *l = pl->locals; l; l = l->next) {
        if (l == me || (uint32_t)client_pid(l->c) != pid) continue;
        struct psmsg_buf b = {0};
        psmsg_begin(&b, PSM_PL_POKED, 0);
        client_send(l->c, &b);
        psmsg_buf_free(&b);
    }
}

void preload_request(struct psid *d, struct client *c, const struct psmsg *m)
{
    struct preload *pl = pl_state(d);
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
        pl_listen(d, pl, c, m);
        break;
    case PSM_PL_CONNECT:
        pl_connect(d, pl, c, m);
        break;
    case PSM_PL_ACCEPT:
        pl_accept(d, pl, c, m);
        break;
    case PSM_PL_DECLINE:
        pl_decline(d, pl, c, m);
        break;
    case PSM_PL_SOCKETS:
        plquery_ask(pl->query, c, m->id);
        break;
    case PSM_PL_REPORT:
        pl_report(pl, c, m);
        break;
    case PSM_PL_POKE:
        pl_poke(pl, c, m);
        break;
    }
}

void preload_from_daemon(struct psid *d, uint32_t from, const struct psmsg *m)
{
    struct preload *pl = pl_state(d);
    if (!pl) return;
    switch (m->type) {
    case PSM_D_PL_CONNECT:
        pl_d_connect(d, pl, from, m);
        break;
    case PSM_D_PL_CONNECT_REPLY:
        pl_d_connect_reply(d, pl, from, m);
        break;
    case PSM_D_PL_CLAIM:
        pl_d_claim(d, pl, from, m);
        break;
    case PSM_D_PL_CLAIM_REPLY:
        pl_d_claim_reply(d, pl, from, m);
        break;
    case PSM_D_PL_EXPIRED:
        pl_d_expired(d, pl, from, m);
        break;
    }
}

bool preload_client_busy(struct psid *d, const struct client *c)
{
    return d->preload && pl_local_of(d->preload, c);
}

void preload_client_gone(struct psid *d, struct client *c)
{
    struct preload *pl = d->preload;
    if (!pl) return;
    for (struct pt_entry *e = pl->asks.all; e; e = e->next)
        if (PL_ASK(e)->c == c) PL_ASK(e)->c = NULL;
    for (struct pt_entry *e = pl->claims.all; e; e = e->next)
        if (PL_CLAIM(e)->c == c) PL_CLAIM(e)->c = NULL;
    for (struct pt_entry *e = pl->lates.all; e; e = e->next)
        if (PL_LATE(e)->c == c) PL_LATE(e)->c = NULL;
    plquery_client_gone(pl->query, c);
    for (struct pt_entry *e = pl->pends.all, *next; e; e = next) {
        next = e->next;
        if (PL_PEND(e)->c == c) pl_pend_done(pl, PL_PEND(e));
    }
    for (struct pt_entry *e = pl->waits.all; e; e = e->next) {
        struct pl_wait *w = PL_WAIT(e);
        if (w->same && w->cc == c) w->cc = NULL; /* its claim finds the connector gone */
        if (w->pc == c) { /* a parked claim of a gone acceptor: unclaimed again */
            w->pc = NULL;
            w->parked = false;
        }
    }
    for (struct pl_local **pp = &pl->locals; *pp; pp = &(*pp)->next)
        if ((*pp)->c == c) {
            struct pl_local *l = *pp;
            *pp = l->next;
            pl->nforeign -= l->netns != pl->netns;
            /* its ports are gone: connections waiting for them go TCP at once, unless
             * another process of the same user listens there too (a prefork server's
             * children hold the listening socket) */
            for (struct pt_entry *e = pl->waits.all, *next; e; e = next) {
                next = e->next;
                struct pl_wait *w = PL_WAIT(e);
                bool ours = false, other = false;
                for (unsigned i = 0; i < l->nlis; i++)
                    ours |= sockinfo_port(&l->lis[i].addr) == w->dport;
                for (struct pl_local *o = pl->locals; o && ours; o = o->next)
                    for (unsigned i = 0; i < o->nlis; i++)
                        other |= sockinfo_port(&o->lis[i].addr) == w->dport;
                if (ours && !other && w->uid == l->ep.uid) {
                    pl_expired_msg(d, w, ECONNREFUSED);
                    pl_wait_unlink(pl, w);
                    free(w);
                }
            }
            free(l->lis);
            free(l);
            return;
        }
}

void preload_node_lost(struct psid *d, uint32_t node)
{
    struct preload *pl = d->preload;
    if (!pl) return;
    /* every endpoint here: its connections to processes there end (an idle one would not
     * notice: RDP gives a peer up only with data in flight) */
    for (struct pl_local *l = pl->locals; l; l = l->next) {
        struct psmsg_buf b = {0};
        psmsg_begin(&b, PSM_PL_NODE_LOST, 0);
        psmsg_put_u32(&b, PSF_NODE_ID, node);
        client_send(l->c, &b);
        psmsg_buf_free(&b);
    }
    for (struct pt_entry *e = pl->waits.all, *next; e; e = next) {
        next = e->next;
        struct pl_wait *w = PL_WAIT(e);
        if (w->node == node) {
            pl_wait_unlink(pl, w);
            free(w);
        }
    }
    for (struct pt_entry *e = pl->asks.all, *next; e; e = next) {
        next = e->next;
        struct pl_ask *a = PL_ASK(e);
        if (a->node != node) continue;
        pl_refuse(d, a->c, a->client_id, a->conn, EHOSTDOWN, "the listener's node was lost");
        pl_ask_done(pl, a);
    }
    for (struct pt_entry *e = pl->pends.all, *next; e; e = next) {
        next = e->next;
        struct pl_pend *p = PL_PEND(e);
        if (p->node != node) continue;
        pl_outcome(d, p->c, p->conn, EHOSTDOWN, "the listener's node was lost", NULL, NULL);
        pl_pend_done(pl, p);
    }
    for (struct pt_entry *e = pl->claims.all, *next; e; e = next) {
        next = e->next;
        struct pl_claim *k = PL_CLAIM(e);
        if (k->w.node != node) continue;
        if (k->c) pl_acc_reply(k->c, k->client_id, ENOENT, "the connector's node was lost");
        pl_claim_done(pl, k);
    }
    for (struct pt_entry *e = pl->rechecks.all, *next; e; e = next) {
        next = e->next;
        if (PL_RECHECK(e)->from == node) pl_recheck_done(pl, PL_RECHECK(e));
    }
}

void preload_free(struct psid *d)
{
    struct preload *pl = d->preload;
    if (!pl) return;
    if (pl->parked_timer) loop_timer_cancel(d->loop, pl->parked_timer);
    while (pl->asks.all) pl_ask_done(pl, PL_ASK(pl->asks.all));
    while (pl->pends.all) pl_pend_done(pl, PL_PEND(pl->pends.all));
    while (pl->claims.all) pl_claim_done(pl, PL_CLAIM(pl->claims.all));
    while (pl->lates.all) pl_late_done(pl, PL_LATE(pl->lates.all));
    while (pl->rechecks.all) pl_recheck_done(pl, PL_RECHECK(pl->rechecks.all));
    while (pl->closed.all) pl_closed_expire(pl->closed.all);
    while (pl->tombs.all) pl_tomb_expire(pl->tombs.all);
    plquery_free(pl->query);
    while (pl->waits.all) {
        struct pl_wait *w = PL_WAIT(pl->waits.all);
        pl_wait_unlink(pl, w);
        free(w);
    }
    while (pl->locals) {
        struct pl_local *l = pl->locals;
        pl->locals = l->next;
        free(l->lis);
        free(l);
    }
    for (size_t i = 0; i < PL_NTABLES; i++) ptable_fini(PL_TABLE(pl, i));
    free(pl);
    d->preload = NULL;
}

static const uint16_t preload_requests[] = {
    PSM_PL_OPEN,    PSM_PL_LISTEN,  PSM_PL_UNLISTEN, PSM_PL_CONNECT, PSM_PL_ACCEPT,
    PSM_PL_DECLINE, PSM_PL_SOCKETS, PSM_PL_REPORT,   PSM_PL_POKE,    0};
static const uint16_t preload_messages[] = {PSM_D_PL_CONNECT, PSM_D_PL_CONNECT_REPLY,
                                            PSM_D_PL_CLAIM,   PSM_D_PL_CLAIM_REPLY,
                                            PSM_D_PL_EXPIRED, 0};
const struct psid_module preload_module = {.name = "preload",
                                           .requests = preload_requests,
                                           .request = preload_request,
                                           .messages = preload_messages,
                                           .message = preload_from_daemon,
                                           .client_gone = preload_client_gone,
                                           .client_busy = preload_client_busy,
                                           .client_room = preload_client_drained,
                                           .node_lost = preload_node_lost,
                                           .stop = preload_free};
