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
 * Every table is bounded: listeners per endpoint (PSI_PL_LISTENS), connections waiting
 * (PL_WAIT_MAX in total on each side, a quarter of it per listener's and per connector's
 * uid but root's), requests asking another psid, claims waiting for their requests and
 * tombstones (PL_WAIT_MAX each, PL_WAIT_UID per uid but root's), claims in flight
 * (PL_WAIT_MAX), namespaces remembered (PL_NETNS_SEEN).
 */
#include "bebytes.h"
#include "daemon.h"
#include "module.h"
#include "log.h"
#include "psmsg.h"
#include "plquery.h"
#include "psshm.h"
#include "shmchan.h"
#include "sockinfo.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#define PL_ANSWER_NS (2000000000ull) /* another psid's answer */
#define PL_KEEP_NS   ((uint64_t)PSI_PL_ACCEPT_MS * 1000000ull)
#define PL_WAIT_MAX  4096u
#define PL_WAIT_UID  (PL_WAIT_MAX / 4) /* of them, for one listener's or connector's uid */
/* a claim, or a probe, for a connection of a user with an endpoint, whose request is not
 * here yet: held up to this long (a connector preempted between its SYN and its request,
 * or a burst of connections its library asks about one by one), and taken by the request
 * the moment it comes (lates_take, rechecks_take): no entry is looked at by a timer but at
 * its end; under PL_ANSWER_NS, the probing psid's bound */
#define PL_LATE_NS 1500000000ull

struct pl_ep { /* an endpoint: ours (with a client) or a peer's (from a message) */
    uint32_t node, uid;
    uint16_t id, udp_port;
    uint64_t inc;
};

struct pl_listener { /* a listening socket an endpoint's process registered */
    uint64_t cookie;
    struct sockaddr_storage addr; /* its address and port, as the kernel has them */
};

struct pl_local {
    struct pl_ep ep;
    struct client *c;
    uint64_t netns; /* its network namespace: its UDP socket's, and every socket's it passes */
    struct pl_listener *lis;
    unsigned nlis, caplis;
    uint64_t poke_since; /* PSM_PL_POKE: the second its count is of */
    bool shm_only;       /* not in psid's network namespace, or asked so: no RDP */
    unsigned pokes;
    struct pl_local *next;
};

#define PL_POKES_PER_S   256u
#define PL_POKES_PER_UID 1024u

struct pl_wait {           /* listener's side: a connection registered before its connect */
    uint32_t node;         /* the connector's node */
    uint16_t sport, dport; /* its port, our port */
    uint32_t conn;         /* the connector's id for it */
    struct pl_ep connector;
    uint32_t uid; /* the listener's: processes of this uid may claim it */
    uint64_t timer;
    struct psid *d;
    struct pl_wait *next;
    /* same node: the connector is a client of ours (NULL once gone), its socket's cookie
     * and network namespace, the ring size it wished */
    bool same;
    struct client *cc;
    uint64_t cookie, netns;
    uint32_t ring;
    /* the connector's addresses, as its socket has them (tuple: it was connected): in
     * another network namespace its socket is not ours to look up by sock_diag, and the
     * acceptor's mirror them; two such waits of one 4-tuple are matched by neither */
    bool tuple, ambiguous;
    struct sockaddr_storage clocal, cpeer;
    /* its acceptor's claim, parked while either end had no room for the channel's
     * descriptors (accept_same): the acceptor (NULL once gone) and its tag */
    bool parked;
    struct client *pc;
    uint32_t ptag;
};

struct pl_ask { /* connector's side: a PSM_PL_CONNECT waiting for the other psid */
    uint32_t req, client_id, node, conn;
    uint16_t sport, dport;
    uint64_t cookie; /* the connector's socket */
    /* a probe came for it (the acceptor's claim was first): answered as a claim when the
     * other psid's yes comes (probe_req 0: none) */
    uint32_t probe_req;
    struct pl_ep acceptor;
    struct client *c;
    uint64_t timer;
    struct psid *d;
    struct pl_ask *next;
};

struct pl_pend { /* connector's side: a connection waiting for its outcome */
    uint32_t node, conn;
    uint16_t sport, dport;
    uint64_t cookie; /* the connector's socket */
    struct client *c;
    uint64_t timer;
    struct psid *d;
    struct pl_pend *next;
};

struct pl_acc { /* an accepted socket a claim passed, as the kernel says it is */
    struct sockinfo si;
    uint32_t owner; /* its owner's uid (sock_diag); UINT32_MAX: in another namespace */
};

struct pl_claim { /* listener's side: an accept waiting for the connector's psid */
    uint32_t req, client_id;
    struct client *c; /* the acceptor (NULL once gone) */
    struct pl_ep acceptor;
    struct pl_wait w; /* what it claims (taken off the waits); a probe: node and ports */
    bool probe;       /* no wait yet: only asks whether the connector's request exists */
    bool can;         /* a probe: the acceptor could take a same-node channel */
    struct pl_acc a;  /* a probe: the acceptor's socket, to claim again */
    uint64_t timer;
    struct psid *d;
    struct pl_claim *next;
};

struct pl_recheck { /* connector's side: a probe that found nothing, looked at again */
    uint32_t from, req;
    uint16_t sport, dport;
    struct pl_ep acceptor;
    uint64_t until; /* looked at each ms until then: the socket's user has an endpoint */
    uint64_t timer;
    struct psid *d;
    struct pl_recheck *next;
};

struct pl_closed { /* listener's side: a listener (in psid's namespace) that closed lately */
    struct sockaddr_storage addr; /* its address and port */
    uint32_t uid;
    uint64_t until;
    struct pl_closed *next;
};

struct pl_tomb {   /* listener's side: a connection its acceptor took on TCP before the
                    * connector's request came: that request is refused when it comes */
    uint32_t node; /* the connector's */
    uint32_t uid;  /* the acceptor's: a tomb refuses only a request to its user's listener */
    struct sockaddr_storage local, peer; /* the accepted socket's addresses and ports */
    int err; /* the refusal: ENOENT (taken on TCP), ENOBUFS (the acceptor is at a limit) */
    uint64_t until;
    struct pl_tomb *next;
};

#define PL_NETNS_SEEN 64u /* network namespaces other than psid's, and whether served */
#define PL_POKE_UIDS  64u /* users whose pokes are counted (the most recent) */

struct preload {
    uint64_t netns; /* psid's own network namespace (0: the kernel cannot say) */
    struct {
        uint64_t netns;
        bool served;
    } seen[PL_NETNS_SEEN];
    unsigned nseen;
    struct plquery *query; /* psstat sockets (plquery.c) */
    struct {               /* PSM_PL_POKE per user (but root) and second */
        uint32_t uid;
        unsigned n;
        uint64_t sec;
    } pokes[PL_POKE_UIDS];
    struct pl_local *locals;
    struct pl_wait *waits;
    unsigned nwaits, npends, nclaims, nlates, nasks;
    unsigned nsame;    /* of the waits, same-node ones */
    unsigned nforeign; /* endpoints in other network namespaces (shm_only) */
    struct pl_ask *asks;
    struct pl_pend *pends;
    struct pl_claim *claims;
    struct pl_late *lates; /* claims looked at again after this pass of the loop */
    struct pl_recheck *rechecks;
    unsigned nrechecks;
    struct pl_tomb *tombs;
    unsigned ntombs;
    struct pl_closed *closed;
    unsigned nclosed;
    uint64_t parked_timer; /* parked claims made again (preload_client_drained) */
    char boot[37];         /* the boot's id (ep_incarnation) */
    bool boot_read;
};

static size_t endpoint_clients(struct psid *d, struct client ***out);

static struct preload *state(struct psid *d)
{
    if (!d->preload && (d->preload = calloc(1, sizeof *d->preload))) {
        d->preload->netns = sockinfo_own_netns();
        if (!(d->preload->query = plquery_new(d, endpoint_clients))) {
            free(d->preload);
            d->preload = NULL;
        }
    }
    return d->preload;
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
static void put_peer(struct psid *d, struct psmsg_buf *b, const struct pl_ep *me,
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

static void reply(struct client *c, uint32_t id, int err, const char *why)
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
static void acc_begin(struct psmsg_buf *b, uint32_t tag, int err, const char *why)
{
    psmsg_begin(b, PSM_PL_ACCEPTED, 0);
    psmsg_put_u32(b, PSF_TAG, tag);
    psmsg_put_u32(b, PSF_ERRNO, (uint32_t)err);
    if (why) psmsg_put_str(b, PSF_TEXT, why);
}

static void acc_reply(struct client *c, uint32_t tag, int err, const char *why)
{
    struct psmsg_buf b = {0};
    acc_begin(&b, tag, err, why);
    client_send(c, &b);
    psmsg_buf_free(&b);
}

/* A PSM_PL_OUTCOME event to a connector: err 0 with the acceptor's endpoint, or TCP. */
static void outcome(struct psid *d, struct client *c, uint32_t conn, int err, const char *why,
                    const struct pl_ep *me, const struct pl_ep *acceptor)
{
    if (!c) return;
    struct psmsg_buf b = {0};
    psmsg_begin(&b, PSM_PL_OUTCOME, 0);
    psmsg_put_u32(&b, PSF_CONN, conn);
    psmsg_put_u32(&b, PSF_ERRNO, (uint32_t)err);
    if (why) psmsg_put_str(&b, PSF_TEXT, why);
    if (!err) put_peer(d, &b, me, acceptor);
    client_send(c, &b);
    psmsg_buf_free(&b);
}

static struct pl_local *local_of(struct preload *pl, const struct client *c)
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

static void closed_add(struct preload *pl, const struct sockaddr_storage *addr, uint32_t uid);
static void close_passed(struct client *c);
static void claim_answer(struct psid *d, uint32_t to, uint32_t req, int err);

/* --- sockets passed with a request --- */

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
static int passed_tcp(struct client *c, const struct pl_local *l, struct sockinfo *si,
                      const char **why)
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

/* An accepted (connected) socket a claim or a decline passed, in psid's namespace or one it
 * serves: in psid's, it must be the socket sock_diag finds at its 4-tuple with its cookie,
 * whose owner (*owner: the uid the kernel says; UINT32_MAX in another namespace, where psid
 * cannot look) is then known. */
static bool claim_waits(const struct preload *pl, uint64_t cookie);

/* The accepted socket passed with the request (a claim's: PSM_PL_ACCEPT; else a decline's)
 * and what the kernel says of it; *owner: its user (UINT32_MAX: another namespace's). */
static int passed_accepted(struct psid *d, struct preload *pl, struct client *c,
                           const struct pl_local *l, bool claim, struct sockinfo *si,
                           uint32_t *owner, const char **why)
{
    int fd, err = passed(c, SOCK_STREAM, si, &fd, why);
    if (err) return err;
    *owner = UINT32_MAX;
    if (claim && claim_waits(pl, si->cookie)) { /* (before sock_diag's query: one per socket) */
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
        close_passed(c);
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
    } else if (!err && local_of(pl, c)) {
        err = EALREADY;
        why = "endpoint already open";
    }
    if (fd >= 0) close(fd);
    if (err) {
        reply(c, m->id, err, why);
        return;
    }
    uint16_t id = sockinfo_port(&si.local);
    if (id == 0xffff || (!shm_only && id_used(pl, id))) {
        reply(c, m->id, EADDRINUSE, "the endpoint's port names another endpoint");
        return;
    }
    struct pl_local *l = calloc(1, sizeof *l);
    if (!l) {
        reply(c, m->id, ENOMEM, "no endpoint");
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

/* --- listening sockets --- */

/* PSM_PL_LISTEN + a listening socket: registered with its cookie, address and port, in the
 * endpoint's namespace; PSM_PL_UNLISTEN {PSF_PORT}: the process's listeners of that port go
 * (remembered a while: closed_add). */
static void pl_listen(struct psid *d, struct preload *pl, struct client *c, const struct psmsg *m)
{
    struct pl_local *l = local_of(pl, c);
    (void)d;
    if (!l) {
        if (m->type == PSM_PL_LISTEN) close_passed(c);
        reply(c, m->id, ENOTCONN, "no endpoint open");
        return;
    }
    if (m->type == PSM_PL_UNLISTEN) {
        uint16_t port;
        if (get_port(m, PSF_PORT, &port) < 0) {
            reply(c, m->id, EINVAL, "bad port");
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
        reply(c, m->id, n ? 0 : ENOENT, n ? NULL : "port not registered");
        return;
    }
    struct sockinfo si;
    const char *why = NULL;
    int err = passed_tcp(c, l, &si, &why);
    if (!err && !si.listening) {
        err = EINVAL;
        why = "the socket does not listen";
    }
    if (err) {
        reply(c, m->id, err, why);
        return;
    }
    unsigned i = 0;
    while (i < l->nlis && l->lis[i].cookie != si.cookie) i++;
    if (i == l->nlis) {
        if (l->nlis == PSI_PL_LISTENS) {
            reply(c, m->id, ENOBUFS, "too many listening ports");
            return;
        }
        if (l->nlis == l->caplis) {
            unsigned cap = l->caplis ? 2 * l->caplis : 4;
            struct pl_listener *n = realloc(l->lis, cap * sizeof *n);
            if (!n) {
                reply(c, m->id, ENOMEM, "out of memory");
                return;
            }
            l->lis = n;
            l->caplis = cap;
        }
        l->nlis++;
    }
    l->lis[i] = (struct pl_listener){.cookie = si.cookie, .addr = si.local};
    reply(c, m->id, 0, NULL);
}

/* Whether listener address la takes a connection to dst: its port, and dst's address or the
 * wildcard. */
static bool takes(const struct sockaddr_storage *la, const struct sockaddr_storage *dst,
                  bool *exact)
{
    if (sockinfo_port(la) != sockinfo_port(dst)) return false;
    *exact = sockinfo_same_host(la, dst);
    return *exact || sockinfo_wildcard(la);
}

/* A listener closed: a connection it accepted just before may still be announced (the
 * connector's request follows its SYN); see closed_took. Bounded; old ones go first. */
static void closed_add(struct preload *pl, const struct sockaddr_storage *addr, uint32_t uid)
{
    uint64_t now = loop_now();
    for (struct pl_closed **pp = &pl->closed; *pp;) {
        struct pl_closed *k = *pp;
        if (k->until > now && !(sockinfo_same(&k->addr, addr) && k->uid == uid)) {
            pp = &k->next;
            continue;
        }
        *pp = k->next;
        free(k);
        pl->nclosed--;
    }
    struct pl_closed *k = pl->nclosed < PL_WAIT_MAX ? calloc(1, sizeof *k) : NULL;
    if (!k) return;
    *k = (struct pl_closed){
        .addr = *addr, .uid = uid, .until = now + PL_ANSWER_NS, .next = pl->closed};
    pl->closed = k;
    pl->nclosed++;
}

static const struct psconf_node *node_by_text(const struct psid *d, const char *text)
{

    for (size_t i = 0; i < d->conf.nnodes; i++)
        if (!strcmp(d->nodes[i].conf->addr_str, text)) return d->nodes[i].conf;
    return NULL;
}

/* --- connector's side --- */

/* A connector does not wait for the reply (its connect goes on at once): a refusal is an
 * outcome too. */
static void refuse(struct psid *d, struct client *c, uint32_t id, uint32_t conn, int err,
                   const char *why)
{
    if (!c) return;
    reply(c, id, err, why);
    outcome(d, c, conn, err, why, NULL, NULL);
}

static void ask_done(struct preload *pl, struct pl_ask *a)
{
    for (struct pl_ask **pp = &pl->asks; *pp; pp = &(*pp)->next)
        if (*pp == a) {
            *pp = a->next;
            break;
        }
    pl->nasks--;
    loop_timer_cancel(a->d->loop, a->timer);
    free(a);
}

/* Requests asking another psid: PL_WAIT_MAX in all, PL_WAIT_UID of them per uid but root's
 * (each is answered or expires within PL_ANSWER_NS, but a client may ask faster). */
static bool asks_over_share(const struct preload *pl, uint32_t uid)
{
    if (pl->nasks >= PL_WAIT_MAX) return true;
    unsigned n = 0;
    for (const struct pl_ask *a = pl->asks; uid && a; a = a->next)
        n += a->c && client_uid(a->c) == uid;
    return n >= PL_WAIT_UID;
}

static void ask_expired(void *ctx)
{
    struct pl_ask *a = ctx;
    a->timer = 0;
    refuse(a->d, a->c, a->client_id, a->conn, ETIMEDOUT, "the listener's psid did not answer");
    if (a->probe_req) claim_answer(a->d, a->node, a->probe_req, ENOENT);
    ask_done(a->d->preload, a);
}

static void pend_done(struct preload *pl, struct pl_pend *p)
{
    for (struct pl_pend **pp = &pl->pends; *pp; pp = &(*pp)->next)
        if (*pp == p) {
            *pp = p->next;
            break;
        }
    pl->npends--;
    loop_timer_cancel(p->d->loop, p->timer);
    free(p);
}

static void pend_expired(void *ctx)
{
    struct pl_pend *p = ctx;
    p->timer = 0;
    outcome(p->d, p->c, p->conn, ETIMEDOUT, "no outcome from the listener's psid", NULL, NULL);
    pend_done(p->d->preload, p);
}

static void wait_expired(void *ctx);
static void wait_unlink(struct preload *pl, struct pl_wait *w);
static void claim_pend(struct psid *d, struct preload *pl, uint32_t from, uint32_t req,
                       struct pl_pend *p, const struct pl_ep *acceptor);
static void tomb_add(struct preload *pl, uint32_t node, const struct sockinfo *acc, uint32_t uid,
                     int err);
static int tomb_take(struct preload *pl, uint32_t node, const struct sockaddr_storage *local,
                     const struct sockaddr_storage *peer, uint32_t uid);
static void lates_take(struct preload *pl, const struct pl_wait *w);
static void rechecks_take(struct psid *d, struct preload *pl, const struct pl_ask *a);
static bool mirrors(const struct pl_wait *w, const struct sockaddr_storage *local,
                    const struct sockaddr_storage *peer);
static bool closed_owner(struct preload *pl, const struct sockaddr_storage *me,
                         const struct sockaddr_storage *them, uint32_t cuid, uint32_t *luid);
static struct pl_local *port_listener(struct preload *pl, uint64_t netns, bool other_ns,
                                      const struct sockaddr_storage *dst, uint32_t cuid, int *err,
                                      const char **why);

static void node_addr(const struct psconf_node *n, uint16_t port, struct sockaddr_storage *out);

static const char *tomb_text(int err)
{
    return err == ENOBUFS ? "the acceptor is at a limit"
                          : "accepted on TCP before the request came";
}

/* A numeric address and a port as a socket address; -1 if it is none. */
static int addr_parse(const char *text, uint16_t port, struct sockaddr_storage *out)
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
    struct pl_local *l = local_of(pl, c);
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
        node_addr(d->self, sockinfo_port(dst), &na);
        bool to_node = !xns && l->netns != pl->netns && sockinfo_same_host(dst, &na);
        found = port_listener(pl, to_node ? pl->netns : l->netns, xns, dst, cuid, &err, &why);
    }
    if (found) luid = found->ep.uid;
    /* a connection that negotiates after its accept (PSP_UPGRADE_US): its listener may
     * have closed meanwhile (socat, nc): the accepted socket, the connector's peer, is
     * that listener's user's (in psid's namespace, where sock_diag can say) */
    if (err == ECONNREFUSED && tuple && !xns && l->netns == pl->netns &&
        closed_owner(pl, &si->peer, &si->local, cuid, &luid)) {
        err = 0;
        why = NULL;
    }
    if (xns && err == ECONNREFUSED) { /* no listener of ours there: somebody else's */
        err = EHOSTUNREACH;
        why = "not a cluster address";
    }
    int tomb = tuple && !err ? tomb_take(pl, d->self->id, dst, &si->local, luid) : 0;
    if (tomb) { /* the acceptor's claim came first, and waited for nothing; or it declined */
        err = tomb;
        why = tomb_text(tomb);
    }
    bool ambiguous = false;
    for (struct pl_wait *o = pl->waits, *next; !err && tuple && o; o = next) {
        next = o->next;
        if (!o->same || !o->tuple || o->cookie == si->cookie || !mirrors(o, &si->peer, &si->local))
            continue;
        if (o->cc && o->netns != si->netns) { /* two namespaces, one 4-tuple: neither */
            o->ambiguous = ambiguous = true;
            continue;
        }
        /* in one namespace a 4-tuple is one socket: that one is gone, its wait stale */
        if (o->parked && o->pc) acc_reply(o->pc, o->ptag, ENOENT, "the connector is gone");
        wait_unlink(pl, o);
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
    if (err) {
        refuse(d, c, m->id, conn, err, why);
        return;
    }
    for (struct pl_wait *o = pl->waits, *next; o; o = next) { /* the socket asked again */
        next = o->next;
        if (o->same && o->cookie == si->cookie) {
            wait_unlink(pl, o);
            free(o);
        }
    }
    *w = (struct pl_wait){.node = d->self->id,
                          .dport = sockinfo_port(dst),
                          .conn = conn,
                          .connector = l->ep,
                          .uid = luid,
                          .d = d,
                          .next = pl->waits,
                          .same = true,
                          .cc = c,
                          .cookie = si->cookie,
                          .netns = si->netns,
                          .ring = ring,
                          .tuple = tuple,
                          .clocal = si->local,
                          .cpeer = si->peer};
    w->timer = loop_timer(d->loop, loop_now() + PL_KEEP_NS, wait_expired, w);
    pl->waits = w;
    pl->nwaits++;
    pl->nsame++;
    reply(c, m->id, 0, NULL);
    lates_take(pl, w); /* its acceptor's claim, if it came first */
}

static void pl_connect(struct psid *d, struct preload *pl, struct client *c, const struct psmsg *m)
{
    struct pl_local *l = local_of(pl, c);
    struct sockinfo si;
    struct sockaddr_storage dst;
    const char *why = NULL;
    char addr[64], mine[INET6_ADDRSTRLEN];
    uint16_t port;
    uint32_t conn = 0, same = 0;
    psmsg_get_u32(&m->body, PSF_CONN, &conn);
    psmsg_get_u32(&m->body, PSF_SAME_NODE, &same);
    int err = passed_tcp(c, l, &si, &why);
    if (!l && !err) {
        err = ENOTCONN;
        why = "no endpoint open";
    }
    if (!err && (psmsg_get_str(&m->body, PSF_ADDR, addr, sizeof addr) < 0 ||
                 get_port(m, PSF_PORT, &port) < 0 || psmsg_get_u32(&m->body, PSF_CONN, &conn) < 0 ||
                 addr_parse(addr, port, &dst) < 0)) {
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
            refuse(d, c, m->id, conn, err, why);
        else
            connect_same(d, pl, c, m, &dst, conn, &si);
        return;
    }
    if (!err && (l->shm_only || strcmp(mine, d->self->addr_str) || !sockinfo_port(&si.local))) {
        err = EADDRNOTAVAIL; /* (shm_only: no RDP in the endpoint's namespace) */
        why = "not bound to the node's address";
    }
    const struct psconf_node *n = err ? NULL : node_by_text(d, addr);
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
    } else if (!err && pl->npends >= PL_WAIT_MAX) {
        err = ENOBUFS;
        why = "too many connections waiting";
    } else if (!err && asks_over_share(pl, client_uid(c))) {
        err = ENOBUFS;
        why = "too many connections asking the listener's psid";
    }
    struct pl_ask *a = err ? NULL : calloc(1, sizeof *a);
    if (!err && !a) {
        err = ENOMEM;
        why = "out of memory";
    }
    if (err) {
        refuse(d, c, m->id, conn, err, why);
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
                         .d = d,
                         .next = pl->asks};
    pl->asks = a;
    pl->nasks++;
    a->timer = loop_timer(d->loop, loop_now() + PL_ANSWER_NS, ask_expired, a);
    rechecks_take(d, pl, a);
    struct psmsg_buf b = {0};
    psmsg_begin(&b, PSM_D_PL_CONNECT, 0);
    psmsg_put_u32(&b, PSF_REQ, a->req);
    psmsg_put_u32(&b, PSF_PORT, port);
    psmsg_put_u32(&b, PSF_SRC_PORT, a->sport);
    psmsg_put_u32(&b, PSF_CONN, conn);
    put_ep(&b, &l->ep);
    psid_send(d, n->id, &b);
    psmsg_buf_free(&b);
}

/* The listener's psid answered a PSM_D_PL_CONNECT: pending, or TCP. */
static void d_connect_reply(struct psid *d, struct preload *pl, uint32_t from,
                            const struct psmsg *m)
{
    uint32_t req, err = EPROTO;
    if (psmsg_get_u32(&m->body, PSF_REQ, &req) < 0) return;
    struct pl_ask *a = pl->asks;
    while (a && (a->req != req || a->node != from)) a = a->next;
    if (!a) return; /* expired, or forged */
    psmsg_get_u32(&m->body, PSF_ERRNO, &err);
    struct pl_pend *p = !err && a->c ? calloc(1, sizeof *p) : NULL;
    if (p) {
        *p = (struct pl_pend){.node = from,
                              .conn = a->conn,
                              .sport = a->sport,
                              .dport = a->dport,
                              .cookie = a->cookie,
                              .c = a->c,
                              .d = d,
                              .next = pl->pends};
        pl->pends = p;
        pl->npends++;
        p->timer = loop_timer(d->loop, loop_now() + PL_KEEP_NS + 2 * PL_ANSWER_NS, pend_expired, p);
        reply(a->c, a->client_id, 0, NULL);
        if (a->probe_req) claim_pend(d, pl, from, a->probe_req, p, &a->acceptor);
    } else {
        char why[128] = "refused by the listener's psid";
        psmsg_get_str(&m->body, PSF_TEXT, why, sizeof why);
        refuse(d, a->c, a->client_id, a->conn, err ? (int)err : ENOMEM, why);
        if (a->probe_req) claim_answer(d, from, a->probe_req, ENOENT);
    }
    ask_done(pl, a);
}

static struct pl_pend *pend_find(struct preload *pl, uint32_t node, const struct psmsg *m)
{
    uint16_t sport, dport;
    if (get_port(m, PSF_SRC_PORT, &sport) < 0 || get_port(m, PSF_PORT, &dport) < 0) return NULL;
    for (struct pl_pend *p = pl->pends; p; p = p->next)
        if (p->node == node && p->sport == sport && p->dport == dport) return p;
    return NULL;
}

/* Whether an acceptor's socket (local, peer) is the other end of w's connector's: the
 * connector's addresses mirrored (in another namespace, sock_diag cannot say). */
static bool mirrors(const struct pl_wait *w, const struct sockaddr_storage *local,
                    const struct sockaddr_storage *peer)
{
    return sockinfo_same(&w->cpeer, local) && sockinfo_same(&w->clocal, peer);
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
    for (struct pl_ask *a = pl->asks; a; a = a->next)
        if (a->node == from && a->sport == sport && a->dport == dport && !a->probe_req) {
            a->probe_req = req;
            a->acceptor = *acceptor;
            return true;
        }
    for (const struct pl_pend *p = pl->pends; p; p = p->next)
        if (p->node == from && p->sport == sport && p->dport == dport) {
            claim_answer(d, from, req, EAGAIN);
            return true;
        }
    return false;
}

static void recheck_done(struct preload *pl, struct pl_recheck *r)
{
    for (struct pl_recheck **pp = &pl->rechecks; *pp; pp = &(*pp)->next)
        if (*pp == r) {
            *pp = r->next;
            break;
        }
    pl->nrechecks--;
    loop_timer_cancel(r->d->loop, r->timer);
    free(r);
}

/* After one pass of the loop: the connector's request may have been among the messages
 * read in the same pass as the probe (it wrote it right after its SYN went out). */
static void recheck_again(void *ctx)
{
    struct pl_recheck *r = ctx;
    r->timer = 0;
    struct preload *pl = r->d->preload;
    bool found = probe_match(r->d, pl, r->from, r->req, r->sport, r->dport, &r->acceptor);
    uint64_t now = loop_now();
    if (!found && now < r->until) { /* its request may still come: rechecks_take */
        r->timer = loop_timer(r->d->loop, r->until, recheck_again, r);
        return;
    }
    if (!found) claim_answer(r->d, r->from, r->req, ENOENT);
    recheck_done(pl, r);
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
static void rechecks_take(struct psid *d, struct preload *pl, const struct pl_ask *a)
{
    for (struct pl_recheck *r = pl->rechecks; r; r = r->next)
        if (r->from == a->node && r->sport == a->sport && r->dport == a->dport) {
            loop_timer_cancel(d->loop, r->timer);
            r->timer = 0;
            r->until = 0;
            recheck_again(r);
            return;
        }
}

static void d_probe(struct psid *d, struct preload *pl, uint32_t from, uint32_t req,
                    const struct psmsg *m)
{
    uint16_t sport, dport;
    struct pl_ep acceptor;
    if (get_port(m, PSF_SRC_PORT, &sport) < 0 || get_port(m, PSF_PORT, &dport) < 0 ||
        get_ep(m, from, &acceptor) < 0) {
        claim_answer(d, from, req, ENOENT);
        return;
    }
    if (probe_match(d, pl, from, req, sport, dport, &acceptor)) return;
    struct pl_recheck *r = pl->nrechecks < PL_WAIT_MAX ? calloc(1, sizeof *r) : NULL;
    if (!r) {
        claim_answer(d, from, req, ENOENT);
        return;
    }
    *r = (struct pl_recheck){.from = from,
                             .req = req,
                             .sport = sport,
                             .dport = dport,
                             .acceptor = acceptor,
                             .d = d,
                             .next = pl->rechecks};
    /* after one pass at least (the request may be among this pass's messages); longer when
     * a process under the library may still send it */
    if (probe_may_come(d, pl, from, sport, dport)) r->until = loop_now() + PL_LATE_NS;
    pl->rechecks = r;
    pl->nrechecks++;
    r->timer = loop_timer(d->loop, loop_now(), recheck_again, r);
}

static void d_claim(struct psid *d, struct preload *pl, uint32_t from, const struct psmsg *m)
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
    if (!p || get_ep(m, from, &acceptor) < 0) {
        if (p) pend_done(pl, p);
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
    struct pl_local *l = p->c ? local_of(pl, p->c) : NULL;
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
            outcome(d, p->c, p->conn, ECONNRESET, "the socket is gone", NULL, NULL);
        } else {
            outcome(d, p->c, p->conn, 0, NULL, &l->ep, acceptor);
        }
    }
    pend_done(pl, p);
    claim_answer(d, from, req, err);
}

/* Why a connection waiting for its acceptor ended without it. */
static const char *expired_text(int err)
{
    return err == ETIMEDOUT ? "not accepted in time"
           : err == ENOBUFS ? "the acceptor is at a limit"
                            : "the listener went away";
}

static void d_expired(struct psid *d, struct preload *pl, uint32_t from, const struct psmsg *m)
{
    struct pl_pend *p = pend_find(pl, from, m);
    if (!p) return;
    uint32_t e = ETIMEDOUT;
    psmsg_get_u32(&m->body, PSF_ERRNO, &e);
    outcome(d, p->c, p->conn, e ? (int)e : ETIMEDOUT, expired_text(e ? (int)e : ETIMEDOUT), NULL,
            NULL);
    pend_done(pl, p);
}

/* --- listener's side --- */

static void expired_msg(struct psid *d, const struct pl_wait *w, int err)
{
    if (w->same) { /* the connector is ours */
        outcome(d, w->cc, w->conn, err, expired_text(err), NULL, NULL);
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

static void wait_unlink(struct preload *pl, struct pl_wait *w)
{
    for (struct pl_wait **pp = &pl->waits; *pp; pp = &(*pp)->next)
        if (*pp == w) {
            *pp = w->next;
            break;
        }
    pl->nwaits--;
    if (w->same) pl->nsame--;
    loop_timer_cancel(w->d->loop, w->timer);
    w->timer = 0;
}

static void wait_expired(void *ctx)
{
    struct pl_wait *w = ctx;
    w->timer = 0;
    if (w->parked) { /* its ends never had room for the channel: TCP, for a limit */
        if (w->pc) acc_reply(w->pc, w->ptag, ENOBUFS, "no room to pass the channel in time");
        outcome(w->d, w->cc, w->conn, ENOBUFS, "no room to pass the channel in time", NULL, NULL);
        wait_unlink(w->d->preload, w);
        free(w);
        return;
    }
    expired_msg(w->d, w, ETIMEDOUT);
    wait_unlink(w->d->preload, w);
    free(w);
}

/* Whether a wait for listener uid luid from connector uid cuid would pass either's share
 * (PL_WAIT_UID; root has none): one user's connections that are never accepted, to its own
 * listeners or to others', cannot fill the table for everybody. */
static bool over_share(const struct preload *pl, uint32_t luid, uint32_t cuid)
{
    unsigned nl = 0, nc = 0;
    for (const struct pl_wait *w = pl->waits; w; w = w->next) {
        nl += w->uid == luid;
        nc += w->connector.uid == cuid;
    }
    return (luid != 0 && nl >= PL_WAIT_UID) || (cuid != 0 && nc >= PL_WAIT_UID);
}

/* The process under the library that listens where a connection to dst goes: in network
 * namespace netns (other_ns: in a namespace psid serves other than netns, a container's),
 * on dst's port, bound to dst's address or else to the wildcard (the kernel prefers the
 * exact one). Processes of one user count as one (a socket shared across fork, a
 * SO_REUSEPORT group, which the kernel allows one user only); NULL with *err and *why when
 * there is none, when several users' listeners would take it (EADDRINUSE), or when too
 * many connections wait already. */
static struct pl_local *port_listener(struct preload *pl, uint64_t netns, bool other_ns,
                                      const struct sockaddr_storage *dst, uint32_t cuid, int *err,
                                      const char **why)
{
    struct pl_local *found = NULL;
    bool found_exact = false, several = false;
    for (struct pl_local *l = pl->locals; l; l = l->next) {
        if (other_ns ? l->netns == netns : l->netns != netns) continue;
        for (unsigned i = 0; i < l->nlis; i++) {
            bool exact;
            if (!takes(&l->lis[i].addr, dst, &exact) || (found && found_exact && !exact)) continue;
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
    if (pl->nwaits >= PL_WAIT_MAX) {
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
static bool closed_owner(struct preload *pl, const struct sockaddr_storage *me,
                         const struct sockaddr_storage *them, uint32_t cuid, uint32_t *luid)
{
    uint64_t now = loop_now();
    const struct pl_closed *k = pl->closed;
    bool exact;
    while (k && (!takes(&k->addr, me, &exact) || k->until <= now)) k = k->next;
    if (!k || pl->nwaits >= PL_WAIT_MAX || over_share(pl, k->uid, cuid)) return false;
    uint32_t uid = UINT32_MAX;
    if (sockinfo_diag(me, them, 0, NULL, NULL, &uid) < 0 || uid != k->uid) return false;
    *luid = uid;
    return true;
}

/* The node's address and port as a socket address. */
static void node_addr(const struct psconf_node *n, uint16_t port, struct sockaddr_storage *out)
{
    memcpy(out, &n->addr, sizeof *out);
    ((struct sockaddr_in *)out)->sin_port = htons(port);
}

static bool closed_took(struct psid *d, struct preload *pl, uint32_t from, uint16_t sport,
                        uint16_t dport, uint32_t cuid, uint32_t *luid)
{
    struct psid_node *pn = psid_node(d, from);
    if (!pn) return false;
    struct sockaddr_storage me, them;
    node_addr(d->self, dport, &me);
    node_addr(pn->conf, sport, &them);
    return closed_owner(pl, &me, &them, cuid, luid);
}

/* A PSM_D_PL_CONNECT: the listener of the node's address and that port, and the wait. */
static void d_connect(struct psid *d, struct preload *pl, uint32_t from, const struct psmsg *m)
{
    uint32_t req = 0, conn = 0;
    uint16_t port, sport;
    struct pl_ep cep;
    psmsg_get_u32(&m->body, PSF_REQ, &req);
    int err = 0;
    const char *why = NULL;
    struct pl_local *found = NULL;
    struct sockaddr_storage dst;
    if (get_port(m, PSF_PORT, &port) < 0 || get_port(m, PSF_SRC_PORT, &sport) < 0 ||
        psmsg_get_u32(&m->body, PSF_CONN, &conn) < 0 || get_ep(m, from, &cep) < 0) {
        err = EINVAL;
        why = "malformed request";
    } else {
        node_addr(d->self, port, &dst);
        found = port_listener(pl, pl->netns, false, &dst, cep.uid, &err, &why);
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
        node_addr(fn->conf, sport, &src);
        if ((err = tomb_take(pl, from, &dst, &src, luid))) why = tomb_text(err);
    }
    struct pl_wait *w = err ? NULL : calloc(1, sizeof *w);
    if (!err && !w) {
        err = ENOMEM;
        why = "out of memory";
    }
    if (w) {
        /* a connection of the same 4-tuple that was never taken is replaced */
        for (struct pl_wait *o = pl->waits, *next; o; o = next) {
            next = o->next;
            if (o->node == from && o->sport == sport && o->dport == port) {
                wait_unlink(pl, o);
                free(o);
            }
        }
        *w = (struct pl_wait){.node = from,
                              .sport = sport,
                              .dport = port,
                              .conn = conn,
                              .connector = cep,
                              .uid = luid,
                              .d = d,
                              .next = pl->waits};
        w->timer = loop_timer(d->loop, loop_now() + PL_KEEP_NS, wait_expired, w);
        pl->waits = w;
        pl->nwaits++;
    }
    struct psmsg_buf b = {0};
    psmsg_begin(&b, PSM_D_PL_CONNECT_REPLY, 0);
    psmsg_put_u32(&b, PSF_REQ, req);
    psmsg_put_u32(&b, PSF_ERRNO, (uint32_t)err);
    if (why) psmsg_put_str(&b, PSF_TEXT, why);
    psid_send(d, from, &b);
    psmsg_buf_free(&b);
}

static void claim_done(struct preload *pl, struct pl_claim *k)
{
    for (struct pl_claim **pp = &pl->claims; *pp; pp = &(*pp)->next)
        if (*pp == k) {
            *pp = k->next;
            break;
        }
    pl->nclaims--;
    loop_timer_cancel(k->d->loop, k->timer);
    free(k);
}

static void claim_expired(void *ctx)
{
    struct pl_claim *k = ctx;
    k->timer = 0;
    if (k->c) acc_reply(k->c, k->client_id, ENOENT, "the connector's psid did not answer");
    if (k->probe) tomb_add(k->d->preload, k->w.node, &k->a.si, k->acceptor.uid, ENOENT);
    claim_done(k->d->preload, k);
}

/* The connection waiting for its acceptor whose other end is a's, or NULL. */
static struct pl_wait *wait_of(struct psid *d, struct preload *pl, const struct sockinfo *a)
{
    char t[INET6_ADDRSTRLEN];
    uint16_t dport = sockinfo_port(&a->local), sport = sockinfo_port(&a->peer);
    if (pl->nsame) {
        /* both ends in psid's namespace: the connector is the socket sock_diag finds at the
         * mirrored 4-tuple, known by the cookie it registered */
        uint64_t ck = 0;
        if (a->netns == pl->netns && sockinfo_diag(&a->peer, &a->local, 0, &ck, NULL, NULL) == 0)
            for (struct pl_wait *w = pl->waits; w; w = w->next)
                if (w->same && w->netns == pl->netns && w->cookie == ck && w->dport == dport)
                    return w;
        /* a namespace psid serves on one side at least (a container on this node), where
         * sock_diag cannot look: the connector's addresses mirror the acceptor's, in
         * exactly one wait (both namespaces are root's: nobody makes a look-alike there) */
        for (struct pl_wait *w = pl->waits; w; w = w->next)
            if (w->same && w->tuple && !w->ambiguous && w->dport == dport &&
                (w->netns != pl->netns || a->netns != pl->netns) && mirrors(w, &a->local, &a->peer))
                return w;
    }
    /* another node's connector: the accepted socket is in psid's namespace, on the node's
     * address (v4-mapped counts as IPv4) */
    sockinfo_addr_text(&a->local, t);
    if (a->netns != pl->netns || strcmp(t, d->self->addr_str)) return NULL;
    sockinfo_addr_text(&a->peer, t);
    const struct psconf_node *n = node_by_text(d, t);
    struct pl_wait *w = pl->waits;
    while (n && w && (w->same || w->node != n->id || w->sport != sport || w->dport != dport))
        w = w->next;
    return n ? w : NULL;
}

/* PSM_PL_DECLINE + fd: an accepted socket that its holder will not take under the library
 * (it hands it to a program through exec, as inetd does): the connector goes TCP at once
 * instead of after PSI_PL_ACCEPT_MS of held writes. Any process of the listener's uid that
 * holds the socket may say so; no endpoint needed (a forked child declines before exec). */
static void pl_decline(struct psid *d, struct preload *pl, struct client *c, const struct psmsg *m)
{
    struct pl_acc a;
    const char *why = NULL;
    int err = passed_accepted(d, pl, c, NULL, false, &a.si, &a.owner, &why);
    /* the connector's outcome: not accepted (TCP); or, when the acceptor says it is at a
     * limit (ENOBUFS), that */
    uint32_t why_e = 0;
    psmsg_get_u32(&m->body, PSF_ERRNO, &why_e);
    int out = why_e == ENOBUFS ? ENOBUFS : ETIMEDOUT;
    struct pl_wait *w = err ? NULL : wait_of(d, pl, &a.si);
    if (!err && !w && a.si.netns == pl->netns && a.owner == client_uid(c)) {
        /* its request has not come yet (the two sides ask independently): refused when it
         * comes, for this reason */
        char t[INET6_ADDRSTRLEN];
        sockinfo_addr_text(&a.si.peer, t);
        const struct psconf_node *n = node_by_text(d, t);
        sockinfo_addr_text(&a.si.local, t);
        bool remote = n && n != d->self; /* another node's connector, to the node's address */
        if (!remote || !strcmp(t, d->self->addr_str))
            tomb_add(pl, remote ? n->id : d->self->id, &a.si, client_uid(c),
                     out == ENOBUFS ? ENOBUFS : ENOENT);
    }
    if (!err && (!w || w->uid != client_uid(c) || (a.owner != UINT32_MAX && a.owner != w->uid))) {
        err = ENOENT;
        why = w ? "not the listener's user" : "no such connection negotiated";
    }
    if (err) {
        reply(c, m->id, err, why);
        return;
    }
    expired_msg(d, w, out);
    wait_unlink(pl, w);
    free(w);
    reply(c, m->id, 0, NULL);
}

/* A same-node connection's acceptor claimed it: the channel, its part to each end, both or
 * neither (client_send_fds_pair: one end alone would be a channel nobody reads, and its
 * peer's writes lost). When either end has no room for more descriptors now (a burst of
 * connections whose answers it has not read yet), the claim is parked on the wait and made
 * again when that end has read (preload_client_drained), until the wait's time is up: the
 * connection stays on TCP meanwhile, whole. A connector that is gone, or a channel that
 * cannot be made: TCP on both sides. Whether w is done (unlinked and freed). */
static bool accept_same(struct psid *d, struct preload *pl, struct client *c, uint32_t id, bool can,
                        struct pl_wait *w)
{
    struct shmchan ch;
    int err = 0;
    const char *why = NULL;
    if (!w->cc) {
        err = ENOENT;
        why = "the connector is gone";
    } else if (!can) {
        err = EMFILE;
        why = "the acceptor has no descriptors to spare";
    } else if (!client_fds_room(w->cc, 256) | !client_fds_room(c, 256)) { /* (both marked) */
        w->parked = true;
        w->pc = c;
        w->ptag = id;
        return false;
    } else if (shmchan_make(w->ring, (uint32_t)client_pid(w->cc), (uint32_t)client_pid(c), &ch) <
               0) {
        err = errno;
        why = "no shared memory for the channel";
        log_warn("same-node channel of %u bytes: %s", w->ring, strerror(err));
    }
    if (!err) {
        struct psmsg_buf bc = {0}, ba = {0};
        psmsg_begin(&bc, PSM_PL_OUTCOME, 0);
        psmsg_put_u32(&bc, PSF_CONN, w->conn);
        psmsg_put_u32(&bc, PSF_ERRNO, 0);
        psmsg_put_u32(&bc, PSF_SHM_RING, ch.ring);
        acc_begin(&ba, id, 0, NULL);
        psmsg_put_u32(&ba, PSF_CONN, w->conn);
        psmsg_put_u32(&ba, PSF_SHM_RING, ch.ring);
        bool parked = false;
        if (client_send_fds_pair(w->cc, &bc, ch.connector, 2, c, &ba, ch.acceptor, 2) < 0) {
            parked = errno == ENOBUFS; /* no room after all: later, as above */
            err = errno == EMFILE || errno == ENFILE ? EMFILE : ENOBUFS;
            why = "no descriptors to pass the channel";
        }
        psmsg_buf_free(&bc);
        psmsg_buf_free(&ba);
        shmchan_close(&ch);
        if (parked) {
            w->parked = true;
            w->pc = c;
            w->ptag = id;
            return false;
        }
    }
    if (err) { /* TCP on both sides, with the reason: a limit, or the error */
        int e = err == EMFILE || err == ENOBUFS ? ENOBUFS : err;
        outcome(d, w->cc, w->conn, e, why, NULL, NULL);
        acc_reply(c, id, e == ENOBUFS ? ENOBUFS : ENOENT, why);
    }
    wait_unlink(pl, w);
    free(w);
    return true;
}

/* The parked claims whose ends have room now (after a drained client): made again. */
static void parked_again(void *ctx)
{
    struct psid *d = ctx;
    struct preload *pl = d->preload;
    pl->parked_timer = 0;
    for (struct pl_wait *w = pl->waits, *next; w; w = next) {
        next = w->next;
        if (!w->parked || !w->pc) continue;
        w->parked = false;
        accept_same(d, pl, w->pc, w->ptag, true, w); /* parks it again if still full */
    }
}

void preload_client_drained(struct psid *d, struct client *c)
{
    struct preload *pl = d->preload;
    (void)c;
    if (pl && !pl->parked_timer)
        pl->parked_timer = loop_timer(d->loop, loop_now(), parked_again, d);
}

enum claim_pass { CLAIM_FIRST, CLAIM_LATE, CLAIM_PROBED };
static void claim(struct psid *d, struct preload *pl, struct client *c, uint32_t id, bool can,
                  const struct pl_acc *a, enum claim_pass pass);

static void pl_accept(struct psid *d, struct preload *pl, struct client *c, const struct psmsg *m)
{
    struct pl_local *l = local_of(pl, c);
    struct pl_acc a;
    const char *why = NULL;
    uint32_t tag = 0; /* the acceptor's name for the connection: its answer carries it */
    psmsg_get_u32(&m->body, PSF_TAG, &tag);
    if (!l) {
        close_passed(c);
        acc_reply(c, tag, ENOTCONN, "no endpoint open");
        return;
    }
    int err = passed_accepted(d, pl, c, l, true, &a.si, &a.owner, &why);
    if (err) {
        acc_reply(c, tag, err, why);
        return;
    }
    uint32_t can = 0; /* the acceptor has room for a same-node channel's descriptors */
    psmsg_get_u32(&m->body, PSF_SHM_RING, &can);
    claim(d, pl, c, tag, can != 0, &a, CLAIM_FIRST);
}

/* A claim that found no connection waits for one pass of the loop: a same-node connector
 * does not wait for psid's answer before its connect (it sent its request before its SYN),
 * so its request may be among the messages read in the same pass, after the claim. */
struct pl_late {
    struct client *c; /* the acceptor (NULL once gone) */
    uint32_t id;
    bool can;
    struct pl_acc a;
    /* a same-node connection (the connector's socket is in psid's namespace: its cookie):
     * looked at each ms until `until`, when a process of the connector socket's user has
     * an endpoint (it may yet ask: a connection negotiates once it lived PSP_UPGRADE_US, so
     * the accept's claim can come first); its request, when it comes, takes the claim */
    uint64_t cookie, until;
    bool tuple; /* no such socket in our namespace: the connector may be in another one */
    uint64_t timer;
    struct psid *d;
    struct pl_late *next;
};

static bool claim_waits(const struct preload *pl, uint64_t cookie)
{
    for (const struct pl_late *t = pl->lates; cookie && t; t = t->next)
        if (t->c && t->a.si.cookie == cookie) return true;
    for (const struct pl_claim *k = pl->claims; cookie && k; k = k->next)
        if (k->c && k->probe && k->a.si.cookie == cookie) return true;
    return false;
}

/* Claims waiting of uid's acceptors (its share: PL_WAIT_UID, but root's). */
static bool lates_over_share(const struct preload *pl, uint32_t uid)
{
    unsigned n = 0;
    for (const struct pl_late *t = pl->lates; uid && t; t = t->next)
        n += t->c && client_uid(t->c) == uid;
    return n >= PL_WAIT_UID;
}

static void late_done(struct preload *pl, struct pl_late *t)
{
    for (struct pl_late **pp = &pl->lates; *pp; pp = &(*pp)->next)
        if (*pp == t) {
            *pp = t->next;
            break;
        }
    pl->nlates--;
    loop_timer_cancel(t->d->loop, t->timer);
    free(t);
}

static void late_again(void *ctx)
{
    struct pl_late *t = ctx;
    struct preload *pl = t->d->preload;
    t->timer = 0;
    bool none = t->c && (t->cookie || t->tuple) && !wait_of(t->d, pl, &t->a.si);
    if (none && loop_now() < t->until) { /* its request may still come: lates_take */
        t->timer = loop_timer(t->d->loop, t->until, late_again, t);
        return;
    }
    if (none) /* taken on TCP: a request that comes after all is refused */
        tomb_add(pl, t->d->self->id, &t->a.si, client_uid(t->c), ENOENT);
    if (t->c) claim(t->d, pl, t->c, t->id, t->can, &t->a, CLAIM_LATE);
    late_done(pl, t);
}

/* A same-node request came (w): a claim that came first (a late one of that socket, or of
 * the mirrored addresses in another namespace) goes on now. */
static void lates_take(struct preload *pl, const struct pl_wait *w)
{
    for (struct pl_late *t = pl->lates; t; t = t->next)
        if (t->c && ((t->cookie && t->cookie == w->cookie) ||
                     (t->tuple && w->tuple && mirrors(w, &t->a.si.local, &t->a.si.peer)))) {
            loop_timer_cancel(t->d->loop, t->timer);
            t->timer = 0;
            t->until = 0;
            late_again(t);
            return;
        }
}

/* The connection acc (the accepted socket: its addresses, ports and namespace), of a
 * connector on node, was taken on TCP by uid's acceptor: its request, if it comes, is
 * refused. A tomb names the whole connection and the acceptor's user, so that it refuses
 * that request only: not one of another address with the same ports, nor one to another
 * user's listener. Bounded: PL_WAIT_MAX in all, PL_WAIT_UID per uid but root's (without a
 * tomb the request waits and ends as not accepted). */
static void tomb_add(struct preload *pl, uint32_t node, const struct sockinfo *acc, uint32_t uid,
                     int err)
{
    uint64_t now = loop_now();
    unsigned mine = 0;
    for (struct pl_tomb **pp = &pl->tombs; *pp;) { /* the old ones go first */
        struct pl_tomb *t = *pp;
        if (t->until > now) {
            mine += t->uid == uid;
            pp = &t->next;
            continue;
        }
        *pp = t->next;
        free(t);
        pl->ntombs--;
    }
    if (uid != 0 && mine >= PL_WAIT_UID) return;
    struct pl_tomb *t = pl->ntombs < PL_WAIT_MAX ? calloc(1, sizeof *t) : NULL;
    if (!t) return;
    *t = (struct pl_tomb){.node = node,
                          .uid = uid,
                          .local = acc->local,
                          .peer = acc->peer,
                          .err = err,
                          .until = now + 2 * PL_ANSWER_NS,
                          .next = pl->tombs};
    pl->tombs = t;
    pl->ntombs++;
}

/* The refusal a tomb holds for the connection from peer (on node) to local whose listener
 * is uid's, or 0; it is used up. */
static int tomb_take(struct preload *pl, uint32_t node, const struct sockaddr_storage *local,
                     const struct sockaddr_storage *peer, uint32_t uid)
{
    uint64_t now = loop_now();
    for (struct pl_tomb **pp = &pl->tombs; *pp; pp = &(*pp)->next) {
        struct pl_tomb *t = *pp;
        if (t->node != node || t->uid != uid || !sockinfo_same(&t->local, local) ||
            !sockinfo_same(&t->peer, peer))
            continue;
        *pp = t->next;
        pl->ntombs--;
        int err = t->until > now ? t->err : 0;
        free(t);
        return err;
    }
    return 0;
}

/* A claim that found no wait, of a connection from another node's address: the connector
 * sends its SYN before its request, so the acceptor may be first. Its psid is asked whether
 * it has the request (PSF_PROBE); it forwarded it before answering, so after a yes the wait
 * is here. Whether a probe went out (else: ENOENT, TCP). */
static bool probe(struct psid *d, struct preload *pl, struct client *c, uint32_t id, bool can,
                  const struct pl_acc *a)
{
    char t[INET6_ADDRSTRLEN];
    sockinfo_addr_text(&a->si.local, t);
    if (a->si.netns != pl->netns || strcmp(t, d->self->addr_str)) return false;
    sockinfo_addr_text(&a->si.peer, t);
    const struct psconf_node *n = node_by_text(d, t);
    struct psid_node *pn = n && n != d->self ? psid_node(d, n->id) : NULL;
    if (!pn || pn->state != PSNODE_UP || pl->nclaims >= PL_WAIT_MAX) return false;
    /* the connector's psid may take it at once: the acceptor must be of the accepted
     * socket's user (the listener's), as the wait would have checked */
    if (a->owner != local_of(pl, c)->ep.uid) return false;
    struct pl_claim *k = calloc(1, sizeof *k);
    if (!k) return false;
    *k = (struct pl_claim){.req = ++d->next_req,
                           .client_id = id,
                           .c = c,
                           .acceptor = local_of(pl, c)->ep,
                           .w = {.node = n->id,
                                 .sport = sockinfo_port(&a->si.peer),
                                 .dport = sockinfo_port(&a->si.local)},
                           .probe = true,
                           .can = can,
                           .a = *a,
                           .d = d,
                           .next = pl->claims};
    pl->claims = k;
    pl->nclaims++;
    k->timer = loop_timer(d->loop, loop_now() + PL_ANSWER_NS, claim_expired, k);
    struct psmsg_buf b = {0};
    psmsg_begin(&b, PSM_D_PL_CLAIM, 0);
    psmsg_put_u32(&b, PSF_REQ, k->req);
    psmsg_put_u32(&b, PSF_SRC_PORT, k->w.sport);
    psmsg_put_u32(&b, PSF_PORT, k->w.dport);
    psmsg_put_u32(&b, PSF_PROBE, 1);
    put_ep(&b, &k->acceptor);
    psid_send(d, n->id, &b);
    psmsg_buf_free(&b);
    return true;
}

/* The acceptor's socket a: the connection it is, and its outcome to both. */
/* Whether a listener of user uid in namespace netns takes connections to local (registered
 * now, or closed lately): an accepted socket came from one such, and a claim for one that
 * none takes is refused at once instead of held for its request. */
static bool user_listens(const struct preload *pl, uint64_t netns, uint32_t uid,
                         const struct sockaddr_storage *local)
{
    bool exact;
    for (const struct pl_local *l = pl->locals; l; l = l->next)
        if (l->ep.uid == uid && l->netns == netns)
            for (unsigned i = 0; i < l->nlis; i++)
                if (takes(&l->lis[i].addr, local, &exact)) return true;
    uint64_t now = loop_now();
    for (const struct pl_closed *k = pl->closed; netns == pl->netns && k; k = k->next)
        if (k->uid == uid && k->until > now && takes(&k->addr, local, &exact)) return true;
    return false;
}

static void claim(struct psid *d, struct preload *pl, struct client *c, uint32_t id, bool can,
                  const struct pl_acc *a, enum claim_pass pass)
{
    struct pl_local *l = local_of(pl, c);
    struct pl_wait *w = l ? wait_of(d, pl, &a->si) : NULL;
    if (!w && l && pass == CLAIM_FIRST && !user_listens(pl, a->si.netns, l->ep.uid, &a->si.local)) {
        acc_reply(c, id, ENOENT, "no listener of this user takes the socket");
        return;
    }
    if (!w && pass == CLAIM_FIRST && l &&
        (pl->nlates >= PL_WAIT_MAX || lates_over_share(pl, client_uid(c)))) {
        acc_reply(c, id, ENOBUFS, "too many claims wait for their requests");
        return;
    }
    if (!w && pass == CLAIM_FIRST && l) {
        struct pl_late *t = calloc(1, sizeof *t);
        if (t) {
            /* the connector's socket, if it is in psid's namespace and no other node's (a
             * loopback cluster's nodes share one: their connections are the other psid's) */
            char pa[INET6_ADDRSTRLEN];
            sockinfo_addr_text(&a->si.peer, pa);
            const struct psconf_node *pn = node_by_text(d, pa);
            bool other = pn && pn != d->self;
            uint32_t cuid = UINT32_MAX;
            uint64_t ck = 0;
            if (other || a->si.netns != pl->netns ||
                sockinfo_diag(&a->si.peer, &a->si.local, 0, &ck, NULL, &cuid) < 0)
                ck = 0;
            bool may = false; /* a process of its user has an endpoint: it may yet ask */
            for (struct pl_local *o = pl->locals; ck && o && !may; o = o->next)
                may = o->ep.uid == cuid && o->netns == pl->netns;
            /* not in our namespace, no other node's: another namespace's, if we serve one */
            bool tuple = !ck && !other && pl->nforeign;
            *t = (struct pl_late){.c = c,
                                  .id = id,
                                  .can = can,
                                  .a = *a,
                                  .cookie = ck,
                                  .tuple = tuple,
                                  .until = may || tuple ? loop_now() + PL_LATE_NS : 0,
                                  .d = d,
                                  .next = pl->lates};
            pl->lates = t;
            pl->nlates++;
            t->timer = loop_timer(d->loop, loop_now(), late_again, t);
            return;
        }
    }
    if (!w && pass == CLAIM_LATE && l && probe(d, pl, c, id, can, a)) return;
    /* the claimant is of the listener's user, and so is the accepted socket, as the kernel
     * says (psid's namespace: another namespace psid serves is root's, and there the
     * socket's 4-tuple is the connection's) */
    if (!w || w->uid != l->ep.uid || (a->owner != UINT32_MAX && a->owner != w->uid)) {
        acc_reply(c, id, ENOENT, w ? "not the listener's user" : "no such connection negotiated");
        return;
    }
    if (w->same) {
        accept_same(d, pl, c, id, can, w);
        return;
    }
    if (l->shm_only) {
        acc_reply(c, id, ENOENT, "no RDP in the acceptor's network namespace");
        return;
    }
    struct pl_claim *k = pl->nclaims < PL_WAIT_MAX ? calloc(1, sizeof *k) : NULL;
    if (!k) {
        acc_reply(c, id, ENOBUFS, "too many accepts in flight");
        return;
    }
    wait_unlink(pl, w);
    *k = (struct pl_claim){.req = ++d->next_req,
                           .client_id = id,
                           .c = c,
                           .acceptor = l->ep,
                           .w = *w,
                           .d = d,
                           .next = pl->claims};
    free(w);
    pl->claims = k;
    pl->nclaims++;
    k->timer = loop_timer(d->loop, loop_now() + PL_ANSWER_NS, claim_expired, k);
    struct psmsg_buf b = {0};
    psmsg_begin(&b, PSM_D_PL_CLAIM, 0);
    psmsg_put_u32(&b, PSF_REQ, k->req);
    psmsg_put_u32(&b, PSF_SRC_PORT, k->w.sport);
    psmsg_put_u32(&b, PSF_PORT, k->w.dport);
    put_ep(&b, &l->ep);
    psid_send(d, k->w.node, &b);
    psmsg_buf_free(&b);
}

static void d_claim_reply(struct psid *d, struct preload *pl, uint32_t from, const struct psmsg *m)
{
    uint32_t req, err = EPROTO;
    if (psmsg_get_u32(&m->body, PSF_REQ, &req) < 0) return;
    struct pl_claim *k = pl->claims;
    while (k && (k->req != req || k->w.node != from)) k = k->next;
    if (!k) return;
    psmsg_get_u32(&m->body, PSF_ERRNO, &err);
    if (k->probe) {
        /* its PSM_D_PL_CONNECT came before this answer: 0, the connector's psid made the
         * claim at once (its wait is taken here now); EAGAIN, claim again */
        struct pl_wait *w = err == 0 ? wait_of(d, pl, &k->a.si) : NULL;
        if (w) {
            wait_unlink(pl, w);
            k->w = *w;
            free(w);
            k->probe = false; /* an answered claim now */
        } else {
            if (err != EAGAIN) tomb_add(pl, k->w.node, &k->a.si, k->acceptor.uid, ENOENT);
            if (err == 0) log_warn("preload: a connection claimed by probe has no wait here");
            if (k->c && err == EAGAIN)
                claim(d, pl, k->c, k->client_id, k->can, &k->a, CLAIM_PROBED);
            else if (k->c)
                acc_reply(k->c, k->client_id, ENOENT, "no such connection negotiated");
            claim_done(pl, k);
            return;
        }
    }
    if (k->c && err) {
        acc_reply(k->c, k->client_id, ENOENT, "the connector's socket is gone");
    } else if (k->c) {
        struct psmsg_buf b = {0};
        acc_begin(&b, k->client_id, 0, NULL);
        put_peer(d, &b, &k->acceptor, &k->w.connector);
        psmsg_put_u32(&b, PSF_CONN, k->w.conn);
        client_send(k->c, &b);
        psmsg_buf_free(&b);
    }
    claim_done(pl, k);
}

/* --- psstat sockets (plquery.c) --- */

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
    if (local_of(pl, c)) plquery_report(pl->query, c, m);
}

/* A message that should have carried a socket closes what came with it anyway. */
static void close_passed(struct client *c)
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
    struct pl_local *me = local_of(pl, c);
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
    struct preload *pl = state(d);
    if (!pl) return;
    switch (m->type) {
    case PSM_D_PL_CONNECT:
        d_connect(d, pl, from, m);
        break;
    case PSM_D_PL_CONNECT_REPLY:
        d_connect_reply(d, pl, from, m);
        break;
    case PSM_D_PL_CLAIM:
        d_claim(d, pl, from, m);
        break;
    case PSM_D_PL_CLAIM_REPLY:
        d_claim_reply(d, pl, from, m);
        break;
    case PSM_D_PL_EXPIRED:
        d_expired(d, pl, from, m);
        break;
    }
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
    for (struct pl_claim *k = pl->claims; k; k = k->next)
        if (k->c == c) k->c = NULL;
    for (struct pl_late *t = pl->lates; t; t = t->next)
        if (t->c == c) t->c = NULL;
    plquery_client_gone(pl->query, c);
    for (struct pl_pend *p = pl->pends, *next; p; p = next) {
        next = p->next;
        if (p->c == c) pend_done(pl, p);
    }
    for (struct pl_wait *w = pl->waits; w; w = w->next) {
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
            for (struct pl_wait *w = pl->waits, *next; w; w = next) {
                next = w->next;
                bool ours = false, other = false;
                for (unsigned i = 0; i < l->nlis; i++)
                    ours |= sockinfo_port(&l->lis[i].addr) == w->dport;
                for (struct pl_local *o = pl->locals; o && ours; o = o->next)
                    for (unsigned i = 0; i < o->nlis; i++)
                        other |= sockinfo_port(&o->lis[i].addr) == w->dport;
                if (ours && !other && w->uid == l->ep.uid) {
                    expired_msg(d, w, ECONNREFUSED);
                    wait_unlink(pl, w);
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
    for (struct pl_wait *w = pl->waits, *next; w; w = next) {
        next = w->next;
        if (w->node == node) {
            wait_unlink(pl, w);
            free(w);
        }
    }
    for (struct pl_ask *a = pl->asks, *next; a; a = next) {
        next = a->next;
        if (a->node != node) continue;
        refuse(d, a->c, a->client_id, a->conn, EHOSTDOWN, "the listener's node was lost");
        ask_done(pl, a);
    }
    for (struct pl_pend *p = pl->pends, *next; p; p = next) {
        next = p->next;
        if (p->node != node) continue;
        outcome(d, p->c, p->conn, EHOSTDOWN, "the listener's node was lost", NULL, NULL);
        pend_done(pl, p);
    }
    for (struct pl_claim *k = pl->claims, *next; k; k = next) {
        next = k->next;
        if (k->w.node != node) continue;
        if (k->c) acc_reply(k->c, k->client_id, ENOENT, "the connector's node was lost");
        claim_done(pl, k);
    }
    for (struct pl_recheck *r = pl->rechecks, *next; r; r = next) {
        next = r->next;
        if (r->from == node) recheck_done(pl, r);
    }
}

void preload_free(struct psid *d)
{
    struct preload *pl = d->preload;
    if (!pl) return;
    if (pl->parked_timer) loop_timer_cancel(d->loop, pl->parked_timer);
    while (pl->asks) ask_done(pl, pl->asks);
    while (pl->pends) pend_done(pl, pl->pends);
    while (pl->claims) claim_done(pl, pl->claims);
    while (pl->lates) late_done(pl, pl->lates);
    while (pl->rechecks) recheck_done(pl, pl->rechecks);
    while (pl->closed) {
        struct pl_closed *k = pl->closed;
        pl->closed = k->next;
        free(k);
    }
    while (pl->tombs) {
        struct pl_tomb *t = pl->tombs;
        pl->tombs = t->next;
        free(t);
    }
    plquery_free(pl->query);
    while (pl->waits) {
        struct pl_wait *w = pl->waits;
        wait_unlink(pl, w);
        free(w);
    }
    while (pl->locals) {
        struct pl_local *l = pl->locals;
        pl->locals = l->next;
        free(l->lis);
        free(l);
    }
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
