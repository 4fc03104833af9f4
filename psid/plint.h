/*
 * plint.h - what the files of psid's preload negotiation share (preload.c, pllisten.c,
 * plconnect.c, plclaim.c): the tables of struct preload (the pending ones are ptables,
 * ptable.h: each record embeds its entry, one per table it is in, and PL_<KIND>(e) is the
 * record of an entry), their keys, and the functions one side calls on another. Not a
 * public header: the rest of psid sees preload.h and the module table.
 */
#ifndef PSCLUSTER_PSID_PLINT_H
#define PSCLUSTER_PSID_PLINT_H

#include "bebytes.h"
#include "daemon.h"
#include "module.h"
#include "log.h"
#include "psmsg.h"
#include "plquery.h"
#include "psshm.h"
#include "ptable.h"
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
    struct psid *d;
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
    /* in struct preload's waits (same: by its cookie, else by pl_conn_key(node, sport,
     * dport); the listener's uid; until PL_KEEP_NS), and in its conwaits (a tuple: by the
     * connector's addresses, pl_tuple_key; the connector's uid) */
    struct pt_entry pe, ce;
};
#define PL_WAIT(e) PT_OWNER(e, struct pl_wait, pe)

struct pl_ask { /* connector's side: a PSM_PL_CONNECT waiting for the other psid */
    uint32_t req, client_id, node, conn;
    uint16_t sport, dport;
    uint64_t cookie; /* the connector's socket */
    /* a probe came for it (the acceptor's claim was first): answered as a claim when the
     * other psid's yes comes (probe_req 0: none) */
    uint32_t probe_req;
    struct pl_ep acceptor;
    struct client *c;
    struct psid *d;
    struct pt_entry pe; /* in struct preload's asks, by req, until PL_ANSWER_NS */
    struct pt_entry pc; /* in its askconns, by pl_conn_key(node, sport, dport) */
};
#define PL_ASK(e) PT_OWNER(e, struct pl_ask, pe)

struct pl_pend { /* connector's side: a connection waiting for its outcome */
    uint32_t node, conn;
    uint16_t sport, dport;
    uint64_t cookie; /* the connector's socket */
    struct client *c;
    struct psid *d;
    struct pt_entry pe; /* in struct preload's pends, by pl_conn_key(node, sport, dport) */
};
#define PL_PEND(e) PT_OWNER(e, struct pl_pend, pe)

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
    struct psid *d;
    struct pt_entry pe; /* in struct preload's claims, by req, until PL_ANSWER_NS */
    struct pt_entry pk; /* a probe: in struct preload's probes, by a's cookie */
};
#define PL_CLAIM(e) PT_OWNER(e, struct pl_claim, pe)

struct pl_recheck { /* connector's side: a probe that found nothing, looked at again */
    uint32_t from, req;
    uint16_t sport, dport;
    struct pl_ep acceptor;
    uint64_t until; /* looked at each ms until then: the socket's user has an endpoint */
    struct psid *d;
    struct pt_entry pe; /* in struct preload's rechecks, by pl_conn_key(from, sport, dport) */
};
#define PL_RECHECK(e) PT_OWNER(e, struct pl_recheck, pe)

struct pl_closed { /* listener's side: a listener (in psid's namespace) that closed lately */
    struct sockaddr_storage addr; /* its address and port */
    uint32_t uid;
    uint64_t until;
    struct pt_entry pe; /* in struct preload's closed, by closed_key, until `until` */
};
#define PL_CLOSED(e) PT_OWNER(e, struct pl_closed, pe)

struct pl_tomb {   /* listener's side: a connection its acceptor took on TCP before the
                    * connector's request came: that request is refused when it comes */
    uint32_t node; /* the connector's */
    uint32_t uid;  /* the acceptor's: a tomb refuses only a request to its user's listener */
    struct sockaddr_storage local, peer; /* the accepted socket's addresses and ports */
    int err; /* the refusal: ENOENT (taken on TCP), ENOBUFS (the acceptor is at a limit) */
    struct pt_entry pe; /* in struct preload's tombs, by pl_tuple_key, until 2 PL_ANSWER_NS */
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
    struct ptable waits;    /* of struct pl_wait */
    struct ptable conwaits; /* the same waits, per connector (its uid, its 4-tuple) */
    unsigned nsame;         /* of the waits, same-node ones */
    unsigned nforeign;      /* endpoints in other network namespaces (shm_only) */
    struct ptable asks;     /* of struct pl_ask, by req */
    struct ptable askconns; /* the same asks, by connection (a probe looks them up so) */
    struct ptable pends;    /* of struct pl_pend */
    struct ptable claims;   /* of struct pl_claim, by req */
    struct ptable probes;   /* the claims that are probes, by their socket's cookie */
    struct ptable lates;    /* of struct pl_late: claims looked at again after this pass */
    struct ptable latecons; /* the same, by the connector (its cookie, or its 4-tuple) */
    struct ptable rechecks; /* of struct pl_recheck */
    struct ptable tombs;    /* of struct pl_tomb */
    struct ptable closed;   /* of struct pl_closed */
    uint64_t parked_timer;  /* parked claims made again (preload_client_drained) */
    char boot[37];          /* the boot's id (ep_incarnation) */
    bool boot_read;
};

enum claim_pass { CLAIM_FIRST, CLAIM_LATE, CLAIM_PROBED };

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
    struct psid *d;
    struct pt_entry pe; /* in struct preload's lates, by the accepted socket's cookie */
    /* with a cookie or a tuple, in its latecons: by that cookie, or by the connector's
     * addresses (the accepted socket's mirrored, pl_tuple_key), as its request finds it */
    struct pt_entry pc;
};
#define PL_LATE(e) PT_OWNER(e, struct pl_late, pe)

/* preload.c: replies, endpoints, the sockets clients pass, addresses */
struct preload *pl_state(struct psid *d);
uint64_t pl_conn_key(const struct ptable *t, uint32_t node, uint16_t sport, uint16_t dport);
uint64_t pl_cookie_key(const struct ptable *t, uint64_t cookie);
uint64_t pl_tuple_key(const struct ptable *t, uint32_t node, const struct sockaddr_storage *local,
                      const struct sockaddr_storage *peer);
void pl_put_peer(struct psid *d, struct psmsg_buf *b, const struct pl_ep *me,
                 const struct pl_ep *peer);
void pl_reply(struct client *c, uint32_t id, int err, const char *why);
void pl_acc_begin(struct psmsg_buf *b, uint32_t tag, int err, const char *why);
void pl_acc_reply(struct client *c, uint32_t tag, int err, const char *why);
void pl_outcome(struct psid *d, struct client *c, uint32_t conn, int err, const char *why,
                const struct pl_ep *me, const struct pl_ep *acceptor);
struct pl_local *pl_local_of(struct preload *pl, const struct client *c);
void pl_put_ep(struct psmsg_buf *b, const struct pl_ep *e);
int pl_get_ep(const struct psmsg *m, uint32_t node, struct pl_ep *e);
int pl_get_port(const struct psmsg *m, uint16_t tag, uint16_t *port);
int pl_passed_tcp(struct client *c, const struct pl_local *l, struct sockinfo *si,
                  const char **why);
int pl_passed_accepted(struct psid *d, struct preload *pl, struct client *c,
                       const struct pl_local *l, bool claim, struct sockinfo *si, uint32_t *owner,
                       const char **why);
const struct psconf_node *pl_node_by_text(const struct psid *d, const char *text);
int pl_addr_parse(const char *text, uint16_t port, struct sockaddr_storage *out);
void pl_node_addr(const struct psconf_node *n, uint16_t port, struct sockaddr_storage *out);
void pl_close_passed(struct client *c);

/* pllisten.c: listeners, and connections waiting for their acceptor */
void pl_listen(struct psid *d, struct preload *pl, struct client *c, const struct psmsg *m);
bool pl_takes(const struct sockaddr_storage *la, const struct sockaddr_storage *dst, bool *exact);
bool pl_mirrors(const struct pl_wait *w, const struct sockaddr_storage *local,
                const struct sockaddr_storage *peer);
void pl_expired_msg(struct psid *d, const struct pl_wait *w, int err);
int pl_wait_add(struct preload *pl, struct pl_wait *w);
void pl_wait_unlink(struct preload *pl, struct pl_wait *w);
void pl_wait_expired(struct pt_entry *e);
struct pl_local *pl_port_listener(struct preload *pl, uint64_t netns, bool other_ns,
                                  const struct sockaddr_storage *dst, uint32_t cuid, int *err,
                                  const char **why);
void pl_closed_expire(struct pt_entry *e);
bool pl_closed_owner(struct preload *pl, const struct sockaddr_storage *me,
                     const struct sockaddr_storage *them, uint32_t cuid, uint32_t *luid);
void pl_d_connect(struct psid *d, struct preload *pl, uint32_t from, const struct psmsg *m);
struct pl_wait *pl_wait_of(struct psid *d, struct preload *pl, const struct sockinfo *a);
bool pl_user_listens(const struct preload *pl, uint64_t netns, uint32_t uid,
                     const struct sockaddr_storage *local);

/* plconnect.c: the connector's side */
void pl_refuse(struct psid *d, struct client *c, uint32_t id, uint32_t conn, int err,
               const char *why);
void pl_ask_done(struct preload *pl, struct pl_ask *a);
void pl_ask_expired(struct pt_entry *e);
void pl_pend_done(struct preload *pl, struct pl_pend *p);
void pl_pend_expired(struct pt_entry *e);
void pl_connect(struct psid *d, struct preload *pl, struct client *c, const struct psmsg *m);
void pl_d_connect_reply(struct psid *d, struct preload *pl, uint32_t from, const struct psmsg *m);
void pl_recheck_done(struct preload *pl, struct pl_recheck *r);
void pl_recheck_expired(struct pt_entry *e);
void pl_d_claim(struct psid *d, struct preload *pl, uint32_t from, const struct psmsg *m);
const char *pl_expired_text(int err);
void pl_d_expired(struct psid *d, struct preload *pl, uint32_t from, const struct psmsg *m);

/* plclaim.c: the acceptor's claims */
const char *pl_tomb_text(int err);
void pl_tomb_expire(struct pt_entry *e);
void pl_claim_done(struct preload *pl, struct pl_claim *k);
void pl_claim_expired(struct pt_entry *e);
void pl_decline(struct psid *d, struct preload *pl, struct client *c, const struct psmsg *m);
void pl_accept(struct psid *d, struct preload *pl, struct client *c, const struct psmsg *m);
bool pl_claim_waits(const struct preload *pl, uint64_t cookie);
void pl_late_done(struct preload *pl, struct pl_late *t);
void pl_late_expire(struct pt_entry *e);
void pl_lates_take(struct preload *pl, const struct pl_wait *w);
int pl_tomb_take(struct preload *pl, uint32_t node, const struct sockaddr_storage *local,
                 const struct sockaddr_storage *peer, uint32_t uid);
bool pl_probe_claim(struct psid *d, struct preload *pl, struct client *c, uint32_t id, bool can,
                    const struct pl_acc *a);
void pl_claim_try(struct psid *d, struct preload *pl, struct client *c, uint32_t id, bool can,
                  const struct pl_acc *a, enum claim_pass pass);
void pl_d_claim_reply(struct psid *d, struct preload *pl, uint32_t from, const struct psmsg *m);

#endif
