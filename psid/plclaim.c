/*
 * plclaim.c - the acceptor's claims (plint.h, preload.c): PSM_PL_ACCEPT with the accepted
 * socket, matched to its waiting connection (accept_same: the same-node channel to both
 * ends, both or neither; another node's: PSM_D_PL_CLAIM to the connector's psid); a claim
 * that came before its request waits for it (pl_late, one per socket, woken by the request
 * or its deadline) or probes the connector's psid; one that waited for nothing leaves a
 * tombstone (pl_tomb: the whole connection and the acceptor's user) that refuses the
 * request should it come later. PSM_PL_DECLINE: an accepted socket that stays on TCP.
 * Claims in flight (and their probes), late claims and tombstones are ptables of struct
 * preload (ptable.h).
 */
#include "plint.h"

static void tomb_add(struct preload *pl, uint32_t node, const struct sockinfo *acc, uint32_t uid,
                     int err);

const char *pl_tomb_text(int err)
{
    return err == ENOBUFS ? "the acceptor is at a limit"
                          : "accepted on TCP before the request came";
}

void pl_claim_done(struct preload *pl, struct pl_claim *k)
{
    (void)pl;
    ptable_del(&k->pe);
    ptable_del(&k->pk);
    free(k);
}

/* Claims in flight are in struct preload's claims (ptable.h), by req, as the connector's
 * psid answers them: PL_WAIT_MAX in all, PL_WAIT_UID per acceptor's uid but root's, each
 * until PL_ANSWER_NS; the probes among them in its probes too, by the accepted socket's
 * cookie, which a socket's next claim is looked up by (pl_claim_waits). */
void pl_claim_expired(struct pt_entry *e)
{
    struct pl_claim *k = PL_CLAIM(e);
    if (k->c) pl_acc_reply(k->c, k->client_id, ENOENT, "the connector's psid did not answer");
    if (k->probe) tomb_add(k->d->preload, k->w.node, &k->a.si, k->acceptor.uid, ENOENT);
    pl_claim_done(k->d->preload, k);
}

/* PSM_PL_DECLINE + fd: an accepted socket that its holder will not take under the library
 * (it hands it to a program through exec, as inetd does): the connector goes TCP at once
 * instead of after PSI_PL_ACCEPT_MS of held writes. Any process of the listener's uid that
 * holds the socket may say so; no endpoint needed (a forked child declines before exec). */
void pl_decline(struct psid *d, struct preload *pl, struct client *c, const struct psmsg *m)
{
    struct pl_acc a;
    const char *why = NULL;
    int err = pl_passed_accepted(d, pl, c, NULL, false, &a.si, &a.owner, &why);
    /* the connector's outcome: not accepted (TCP); or, when the acceptor says it is at a
     * limit (ENOBUFS), that */
    uint32_t why_e = 0;
    psmsg_get_u32(&m->body, PSF_ERRNO, &why_e);
    int out = why_e == ENOBUFS ? ENOBUFS : ETIMEDOUT;
    struct pl_wait *w = err ? NULL : pl_wait_of(d, pl, &a.si);
    if (!err && !w && a.si.netns == pl->netns && a.owner == client_uid(c)) {
        /* its request has not come yet (the two sides ask independently): refused when it
         * comes, for this reason */
        char t[INET6_ADDRSTRLEN];
        sockinfo_addr_text(&a.si.peer, t);
        const struct psconf_node *n = pl_node_by_text(d, t);
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
        pl_reply(c, m->id, err, why);
        return;
    }
    pl_expired_msg(d, w, out);
    pl_wait_unlink(pl, w);
    free(w);
    pl_reply(c, m->id, 0, NULL);
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
        pl_acc_begin(&ba, id, 0, NULL);
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
        pl_outcome(d, w->cc, w->conn, e, why, NULL, NULL);
        pl_acc_reply(c, id, e == ENOBUFS ? ENOBUFS : ENOENT, why);
    }
    pl_wait_unlink(pl, w);
    free(w);
    return true;
}

/* The parked claims whose ends have room now (after a drained client): made again. */
static void parked_again(void *ctx)
{
    struct psid *d = ctx;
    struct preload *pl = d->preload;
    pl->parked_timer = 0;
    for (struct pt_entry *e = pl->waits.all, *next; e; e = next) {
        next = e->next;
        struct pl_wait *w = PL_WAIT(e);
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

void pl_accept(struct psid *d, struct preload *pl, struct client *c, const struct psmsg *m)
{
    struct pl_local *l = pl_local_of(pl, c);
    struct pl_acc a;
    const char *why = NULL;
    uint32_t tag = 0; /* the acceptor's name for the connection: its answer carries it */
    psmsg_get_u32(&m->body, PSF_TAG, &tag);
    if (!l) {
        pl_close_passed(c);
        pl_acc_reply(c, tag, ENOTCONN, "no endpoint open");
        return;
    }
    int err = pl_passed_accepted(d, pl, c, l, true, &a.si, &a.owner, &why);
    if (err) {
        pl_acc_reply(c, tag, err, why);
        return;
    }
    uint32_t can = 0; /* the acceptor has room for a same-node channel's descriptors */
    psmsg_get_u32(&m->body, PSF_SHM_RING, &can);
    pl_claim_try(d, pl, c, tag, can != 0, &a, CLAIM_FIRST);
}

bool pl_claim_waits(const struct preload *pl, uint64_t cookie)
{
    for (struct pt_entry *e = cookie ? ptable_find(&pl->lates, pl_cookie_key(&pl->lates, cookie))
                                     : NULL;
         e; e = ptable_find_next(e))
        if (PL_LATE(e)->c && PL_LATE(e)->a.si.cookie == cookie) return true;
    for (struct pt_entry *e = cookie ? ptable_find(&pl->probes, pl_cookie_key(&pl->probes, cookie))
                                     : NULL;
         e; e = ptable_find_next(e)) {
        const struct pl_claim *k = PT_OWNER(e, struct pl_claim, pk);
        if (k->c && k->probe && k->a.si.cookie == cookie) return true;
    }
    return false;
}

void pl_late_done(struct preload *pl, struct pl_late *t)
{
    (void)pl;
    ptable_del(&t->pe);
    ptable_del(&t->pc);
    free(t);
}

/* The claim is looked at again: after the pass of the loop it came in, at its deadline, or
 * when its request came (pl_lates_take). */
static void late_again(struct pl_late *t)
{
    struct preload *pl = t->d->preload;
    bool none = t->c && (t->cookie || t->tuple) && !pl_wait_of(t->d, pl, &t->a.si);
    if (none && loop_now() < t->until) { /* its request may still come: lates_take */
        ptable_rearm(&t->pe, t->until);
        return;
    }
    if (none) /* taken on TCP: a request that comes after all is refused */
        tomb_add(pl, t->d->self->id, &t->a.si, client_uid(t->c), ENOENT);
    if (t->c) pl_claim_try(t->d, pl, t->c, t->id, t->can, &t->a, CLAIM_LATE);
    pl_late_done(pl, t);
}

void pl_late_expire(struct pt_entry *e)
{
    late_again(PL_LATE(e));
}

/* Late claim t (filled in) goes in lates, looked at again after this pass of the loop, and,
 * with a connector to be found by (a cookie, or addresses), in latecons. 0, or -1 (no room;
 * the caller checked ptable_room). */
static int late_add(struct preload *pl, struct pl_late *t, uint32_t uid)
{
    if (ptable_add(&pl->lates, &t->pe, pl_cookie_key(&pl->lates, t->a.si.cookie), uid, loop_now()) <
        0)
        return -1;
    if (!t->cookie && !t->tuple) return 0;
    uint64_t k = t->cookie ? pl_cookie_key(&pl->latecons, t->cookie)
                           : pl_tuple_key(&pl->latecons, t->d->self->id, &t->a.si.peer,
                                          &t->a.si.local); /* (the connector's, mirrored) */
    if (ptable_add(&pl->latecons, &t->pc, k, uid, 0) == 0) return 0;
    ptable_del(&t->pe);
    return -1;
}

/* A same-node request came (w): a claim that came first (a late one of that socket, or of
 * the mirrored addresses in another namespace) goes on now: looked up in latecons by w's
 * cookie, then by w's addresses. */
void pl_lates_take(struct preload *pl, const struct pl_wait *w)
{
    for (int i = 0; i < 1 + w->tuple; i++)
        for (struct pt_entry *e = ptable_find(
                 &pl->latecons, i ? pl_tuple_key(&pl->latecons, w->node, &w->clocal, &w->cpeer)
                                  : pl_cookie_key(&pl->latecons, w->cookie));
             e; e = ptable_find_next(e)) {
            struct pl_late *t = PT_OWNER(e, struct pl_late, pc);
            if (t->c && ((t->cookie && t->cookie == w->cookie) ||
                         (t->tuple && w->tuple && pl_mirrors(w, &t->a.si.local, &t->a.si.peer)))) {
                ptable_rearm(&t->pe, 0);
                t->until = 0;
                late_again(t);
                return;
            }
        }
}

void pl_tomb_expire(struct pt_entry *e)
{
    ptable_del(e);
    free(PT_OWNER(e, struct pl_tomb, pe));
}

/* The connection acc (the accepted socket: its addresses and ports), of a connector on
 * node, was taken on TCP by uid's acceptor: its request, if it comes, is refused. A tomb
 * names the whole connection and the acceptor's user, so that it refuses that request
 * only: not one of another address with the same ports, nor one to another user's
 * listener. In struct preload's tombs (ptable.h): PL_WAIT_MAX in all, PL_WAIT_UID per uid
 * but root's, each for 2 PL_ANSWER_NS (without a tomb the request waits and ends as not
 * accepted). */
static void tomb_add(struct preload *pl, uint32_t node, const struct sockinfo *acc, uint32_t uid,
                     int err)
{
    if (!ptable_room(&pl->tombs, uid)) return;
    struct pl_tomb *t = calloc(1, sizeof *t);
    if (!t) return;
    *t = (struct pl_tomb){
        .node = node, .uid = uid, .local = acc->local, .peer = acc->peer, .err = err};
    if (ptable_add(&pl->tombs, &t->pe, pl_tuple_key(&pl->tombs, node, &acc->local, &acc->peer), uid,
                   loop_now() + 2 * PL_ANSWER_NS) < 0)
        free(t);
}

/* The refusal a tomb holds for the connection from peer (on node) to local whose listener
 * is uid's, or 0; it is used up. */
int pl_tomb_take(struct preload *pl, uint32_t node, const struct sockaddr_storage *local,
                 const struct sockaddr_storage *peer, uint32_t uid)
{
    for (struct pt_entry *e = ptable_find(&pl->tombs, pl_tuple_key(&pl->tombs, node, local, peer));
         e; e = ptable_find_next(e)) {
        struct pl_tomb *t = PT_OWNER(e, struct pl_tomb, pe);
        if (t->node != node || t->uid != uid || !sockinfo_same(&t->local, local) ||
            !sockinfo_same(&t->peer, peer))
            continue;
        int err = t->err;
        pl_tomb_expire(e);
        return err;
    }
    return 0;
}

/* Claim k (filled in) goes in the tables, with its deadline, and to the connector's psid:
 * a claim of its wait, or a probe whether its request exists (k->probe). 0, or -1 when
 * there is no room (the caller checked ptable_room; k is not added then). */
static int claim_send(struct psid *d, struct preload *pl, struct pl_claim *k)
{
    if (ptable_add(&pl->claims, &k->pe, k->req, k->acceptor.uid, loop_now() + PL_ANSWER_NS) < 0)
        return -1;
    if (k->probe && ptable_add(&pl->probes, &k->pk, pl_cookie_key(&pl->probes, k->a.si.cookie),
                               k->acceptor.uid, 0) < 0) {
        ptable_del(&k->pe);
        return -1;
    }
    struct psmsg_buf b = {0};
    psmsg_begin(&b, PSM_D_PL_CLAIM, 0);
    psmsg_put_u32(&b, PSF_REQ, k->req);
    psmsg_put_u32(&b, PSF_SRC_PORT, k->w.sport);
    psmsg_put_u32(&b, PSF_PORT, k->w.dport);
    if (k->probe) psmsg_put_u32(&b, PSF_PROBE, 1);
    pl_put_ep(&b, &k->acceptor);
    psid_send(d, k->w.node, &b);
    psmsg_buf_free(&b);
    return 0;
}

/* A claim that found no wait, of a connection from another node's address: the connector
 * sends its SYN before its request, so the acceptor may be first. Its psid is asked whether
 * it has the request (PSF_PROBE); it forwarded it before answering, so after a yes the wait
 * is here. Whether a probe went out (else: ENOENT, TCP). */
bool pl_probe_claim(struct psid *d, struct preload *pl, struct client *c, uint32_t id, bool can,
                    const struct pl_acc *a)
{
    char t[INET6_ADDRSTRLEN];
    sockinfo_addr_text(&a->si.local, t);
    if (a->si.netns != pl->netns || strcmp(t, d->self->addr_str)) return false;
    sockinfo_addr_text(&a->si.peer, t);
    const struct psconf_node *n = pl_node_by_text(d, t);
    struct psid_node *pn = n && n != d->self ? psid_node(d, n->id) : NULL;
    if (!pn || pn->state != PSNODE_UP || !ptable_room(&pl->claims, client_uid(c))) return false;
    /* the connector's psid may take it at once: the acceptor must be of the accepted
     * socket's user (the listener's), as the wait would have checked */
    if (a->owner != pl_local_of(pl, c)->ep.uid) return false;
    struct pl_claim *k = calloc(1, sizeof *k);
    if (!k) return false;
    *k = (struct pl_claim){.req = ++d->next_req,
                           .client_id = id,
                           .c = c,
                           .acceptor = pl_local_of(pl, c)->ep,
                           .w = {.node = n->id,
                                 .sport = sockinfo_port(&a->si.peer),
                                 .dport = sockinfo_port(&a->si.local)},
                           .probe = true,
                           .can = can,
                           .a = *a,
                           .d = d};
    if (claim_send(d, pl, k) == 0) return true;
    free(k);
    return false;
}

void pl_claim_try(struct psid *d, struct preload *pl, struct client *c, uint32_t id, bool can,
                  const struct pl_acc *a, enum claim_pass pass)
{
    struct pl_local *l = pl_local_of(pl, c);
    struct pl_wait *w = l ? pl_wait_of(d, pl, &a->si) : NULL;
    if (!w && l && pass == CLAIM_FIRST &&
        !pl_user_listens(pl, a->si.netns, l->ep.uid, &a->si.local)) {
        pl_acc_reply(c, id, ENOENT, "no listener of this user takes the socket");
        return;
    }
    if (!w && pass == CLAIM_FIRST && l && !ptable_room(&pl->lates, client_uid(c))) {
        pl_acc_reply(c, id, ENOBUFS, "too many claims wait for their requests");
        return;
    }
    if (!w && pass == CLAIM_FIRST && l) {
        struct pl_late *t = calloc(1, sizeof *t);
        if (t) {
            /* the connector's socket, if it is in psid's namespace and no other node's (a
             * loopback cluster's nodes share one: their connections are the other psid's) */
            char pa[INET6_ADDRSTRLEN];
            sockinfo_addr_text(&a->si.peer, pa);
            const struct psconf_node *pn = pl_node_by_text(d, pa);
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
                                  .d = d};
            if (late_add(pl, t, client_uid(c)) == 0) return;
            free(t);
        }
    }
    if (!w && pass == CLAIM_LATE && l && pl_probe_claim(d, pl, c, id, can, a)) return;
    /* the claimant is of the listener's user, and so is the accepted socket, as the kernel
     * says (psid's namespace: another namespace psid serves is root's, and there the
     * socket's 4-tuple is the connection's) */
    if (!w || w->uid != l->ep.uid || (a->owner != UINT32_MAX && a->owner != w->uid)) {
        pl_acc_reply(c, id, ENOENT,
                     w ? "not the listener's user" : "no such connection negotiated");
        return;
    }
    if (w->same) {
        accept_same(d, pl, c, id, can, w);
        return;
    }
    if (l->shm_only) {
        pl_acc_reply(c, id, ENOENT, "no RDP in the acceptor's network namespace");
        return;
    }
    struct pl_claim *k = ptable_room(&pl->claims, l->ep.uid) ? calloc(1, sizeof *k) : NULL;
    if (!k) {
        pl_acc_reply(c, id, ENOBUFS, "too many accepts in flight");
        return;
    }
    pl_wait_unlink(pl, w);
    *k = (struct pl_claim){
        .req = ++d->next_req, .client_id = id, .c = c, .acceptor = l->ep, .w = *w, .d = d};
    free(w);
    if (claim_send(d, pl, k) < 0) { /* (room was checked above): TCP on both sides */
        pl_expired_msg(d, &k->w, ENOBUFS);
        pl_acc_reply(c, id, ENOBUFS, "too many accepts in flight");
        free(k);
    }
}

void pl_d_claim_reply(struct psid *d, struct preload *pl, uint32_t from, const struct psmsg *m)
{
    uint32_t req, err = EPROTO;
    if (psmsg_get_u32(&m->body, PSF_REQ, &req) < 0) return;
    struct pl_claim *k = NULL;
    for (struct pt_entry *e = ptable_find(&pl->claims, req); e && !k; e = ptable_find_next(e))
        if (PL_CLAIM(e)->w.node == from) k = PL_CLAIM(e);
    if (!k) return; /* expired, or forged */
    psmsg_get_u32(&m->body, PSF_ERRNO, &err);
    if (k->probe) {
        /* its PSM_D_PL_CONNECT came before this answer: 0, the connector's psid made the
         * claim at once (its wait is taken here now); EAGAIN, claim again */
        struct pl_wait *w = err == 0 ? pl_wait_of(d, pl, &k->a.si) : NULL;
        if (w) {
            pl_wait_unlink(pl, w);
            k->w = *w;
            free(w);
            k->probe = false; /* an answered claim now */
            ptable_del(&k->pk);
        } else {
            if (err != EAGAIN) tomb_add(pl, k->w.node, &k->a.si, k->acceptor.uid, ENOENT);
            if (err == 0) log_warn("preload: a connection claimed by probe has no wait here");
            if (k->c && err == EAGAIN)
                pl_claim_try(d, pl, k->c, k->client_id, k->can, &k->a, CLAIM_PROBED);
            else if (k->c)
                pl_acc_reply(k->c, k->client_id, ENOENT, "no such connection negotiated");
            pl_claim_done(pl, k);
            return;
        }
    }
    if (k->c && err) {
        pl_acc_reply(k->c, k->client_id, ENOENT, "the connector's socket is gone");
    } else if (k->c) {
        struct psmsg_buf b = {0};
        pl_acc_begin(&b, k->client_id, 0, NULL);
        pl_put_peer(d, &b, &k->acceptor, &k->w.connector);
        psmsg_put_u32(&b, PSF_CONN, k->w.conn);
        client_send(k->c, &b);
        psmsg_buf_free(&b);
    }
    pl_claim_done(pl, k);
}
