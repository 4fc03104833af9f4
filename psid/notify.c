/*
 * notify.c - death notifications: "tell me when task T dies".
 *
 * Two sides, possibly on two nodes:
 *  - the watcher's node keeps what its clients asked for (watched tid, signal or message)
 *    and delivers: a signal to the client process (by pidfd) or a PSM_DEAD message on its
 *    connection. When T's node is lost it fires every notification about T's node's tasks
 *    itself, with "node lost".
 *  - T's node checks the permission (root, or T's uid), keeps who is waiting for T, and
 *    when T exits sends PSM_D_DEAD to each waiter's node; a waiter's node that is lost is
 *    forgotten.
 * Both sides talk through psid_send, which dispatches directly when they are one node.
 *
 * Both tables are walked while callbacks run: a walk fires notifications, sends to
 * clients and to nodes (this node's own messages come back into this file at once), so an
 * entry is never freed while a walk is on the stack. Removing one marks it gone (walks skip
 * it); the last walk to end sweeps the gone ones out (deferred removal).
 */
#include "daemon.h"
#include "module.h"
#include "log.h"
#include "psmsg.h"

#include <errno.h>
#include <stdlib.h>

struct watch { /* watcher side */
    uint64_t tid;
    struct client *c;
    uint64_t watcher;
    uint32_t sig;
    uint32_t req;       /* while waiting for T's node to confirm */
    uint32_t client_id; /* the client's NOTIFY request */
    bool confirmed;
    bool gone; /* removed while a walk was on the stack: swept when the walks end */
    struct watch *next;
};

struct waiter { /* task side */
    uint64_t tid;
    uint32_t node;
    uint64_t watcher;
    bool gone;
    struct waiter *next;
};

struct notify {
    struct watch *watches;
    struct waiter *waiters;
    unsigned walking; /* walks of either table on the stack */
    bool swept;       /* false: entries are marked gone, to be freed when walking is 0 */
};

static struct notify *state(struct psid *d)
{
    if (!d->notify) d->notify = calloc(1, sizeof *d->notify);
    return d->notify;
}

static void reply(struct client *c, uint32_t id, int err)
{
    struct psmsg_buf b = {0};
    psmsg_begin(&b, PSM_NOTIFY_REPLY, id);
    psmsg_put_u32(&b, PSF_ERRNO, (uint32_t)err);
    client_send(c, &b);
    psmsg_buf_free(&b);
}

/* Free the entries marked gone, once no walk is on the stack. */
static void sweep(struct notify *n)
{
    if (n->walking || n->swept) return;
    for (struct watch **pp = &n->watches; *pp;) {
        struct watch *w = *pp;
        if (w->gone) {
            *pp = w->next;
            free(w);
        } else {
            pp = &w->next;
        }
    }
    for (struct waiter **pp = &n->waiters; *pp;) {
        struct waiter *x = *pp;
        if (x->gone) {
            *pp = x->next;
            free(x);
        } else {
            pp = &x->next;
        }
    }
    n->swept = true;
}

static void walk_begin(struct notify *n)
{
    n->walking++;
}

static void walk_end(struct notify *n)
{
    n->walking--;
    sweep(n);
}

static void unlink_watch(struct notify *n, struct watch *w)
{
    w->gone = true;
    n->swept = false;
    sweep(n);
}

static void unlink_waiter(struct notify *n, struct waiter *x)
{
    x->gone = true;
    n->swept = false;
    sweep(n);
}

/* Deliver a notification to its client and forget it. */
static void fire(struct psid *d, struct watch *w, bool lost, uint32_t status)
{
    struct notify *n = state(d);
    walk_begin(n);
    unlink_watch(n, w); /* first: whatever the delivery runs finds it gone */
    if (w->c) {
        if (w->sig) {
            client_signal(w->c, (int)w->sig);
        } else {
            struct psmsg_buf b = {0};
            psmsg_begin(&b, PSM_DEAD, w->client_id);
            psmsg_put_u64(&b, PSF_TID, w->tid);
            if (lost)
                psmsg_put_u32(&b, PSF_LOST, 1);
            else
                psmsg_put_u32(&b, PSF_STATUS, status);
            client_send(w->c, &b);
            psmsg_buf_free(&b);
        }
    }
    walk_end(n);
}

void notify_request(struct psid *d, struct client *c, const struct psmsg *m)
{
    struct notify *n = state(d);
    uint64_t tid;
    uint32_t sig = 0;
    if (!n || psmsg_get_u64(&m->body, PSF_TID, &tid) < 0) {
        client_error(c, m->id, EINVAL, "no task given");
        return;
    }
    psmsg_get_u32(&m->body, PSF_SIGNAL, &sig);
    if (sig >= 65) {
        reply(c, m->id, EINVAL);
        return;
    }
    if (m->type == PSM_RELEASE) {
        int e = ENOENT;
        walk_begin(n);
        for (struct watch *w = n->watches; w && e; w = w->next)
            if (!w->gone && w->c == c && w->tid == tid) {
                unlink_watch(n, w);
                struct psmsg_buf b = {0};
                psmsg_begin(&b, PSM_D_RELEASE, 0);
                psmsg_put_u64(&b, PSF_TID, tid);
                psmsg_put_u64(&b, PSF_WATCHER, w->watcher);
                psid_send(d, PSTID_NODE(tid), &b);
                psmsg_buf_free(&b);
                e = 0;
            }
        walk_end(n);
        reply(c, m->id, e);
        return;
    }
    struct psid_node *pn = psid_node(d, PSTID_NODE(tid));
    if (!pn || !membership_alive(pn)) { /* unreachable: registered once it answers again */
        reply(c, m->id, ESRCH);
        return;
    }
    struct watch *w = calloc(1, sizeof *w);
    if (!w) {
        client_error(c, m->id, ENOMEM, "out of memory");
        return;
    }
    *w = (struct watch){.tid = tid,
                        .c = c,
                        .watcher = client_tid(c),
                        .sig = sig,
                        .req = ++d->next_req,
                        .client_id = m->id,
                        .next = n->watches};
    n->watches = w;
    struct psmsg_buf b = {0};
    psmsg_begin(&b, PSM_D_NOTIFY, 0);
    psmsg_put_u32(&b, PSF_REQ, w->req);
    psmsg_put_u64(&b, PSF_TID, tid);
    psmsg_put_u64(&b, PSF_WATCHER, w->watcher);
    psmsg_put_u32(&b, PSF_UID, client_uid(c));
    psid_send(d, PSTID_NODE(tid), &b);
    psmsg_buf_free(&b);
}

void notify_task_exit(struct psid *d, uint64_t tid, uint32_t status)
{
    struct notify *n = d->notify;
    if (!n) return;
    walk_begin(n);
    for (struct waiter *x = n->waiters; x; x = x->next) {
        if (x->gone || x->tid != tid) continue;
        unlink_waiter(n, x);
        struct psmsg_buf b = {0};
        psmsg_begin(&b, PSM_D_DEAD, 0);
        psmsg_put_u64(&b, PSF_TID, tid);
        psmsg_put_u64(&b, PSF_WATCHER, x->watcher);
        psmsg_put_u32(&b, PSF_STATUS, status);
        psid_send(d, x->node, &b);
        psmsg_buf_free(&b);
    }
    walk_end(n);
}

void notify_from_daemon(struct psid *d, uint32_t from, const struct psmsg *m)
{
    struct notify *n = state(d);
    uint64_t tid, watcher;
    uint32_t req = 0, uid, e = 0, status = 0;
    if (!n || psmsg_get_u64(&m->body, PSF_TID, &tid) < 0) return;
    psmsg_get_u32(&m->body, PSF_REQ, &req);
    switch (m->type) {
    case PSM_D_NOTIFY: { /* task side: check, remember, answer */
        if (psmsg_get_u64(&m->body, PSF_WATCHER, &watcher) < 0 ||
            psmsg_get_u32(&m->body, PSF_UID, &uid) < 0)
            return;
        uint32_t owner;
        if (tasks_uid(d, tid, &owner) < 0)
            e = ESRCH;
        else if (uid != 0 && uid != owner)
            e = EPERM;
        struct waiter *x = e ? NULL : calloc(1, sizeof *x);
        if (!e && !x) e = ENOMEM;
        if (x) {
            *x = (struct waiter){.tid = tid, .node = from, .watcher = watcher, .next = n->waiters};
            n->waiters = x;
        }
        struct psmsg_buf b = {0};
        psmsg_begin(&b, PSM_D_NOTIFY_REPLY, 0);
        psmsg_put_u32(&b, PSF_REQ, req);
        psmsg_put_u64(&b, PSF_TID, tid);
        psmsg_put_u32(&b, PSF_ERRNO, e);
        psid_send(d, from, &b);
        psmsg_buf_free(&b);
        break;
    }
    case PSM_D_NOTIFY_REPLY: /* watcher side: tell the client */
        psmsg_get_u32(&m->body, PSF_ERRNO, &e);
        walk_begin(n);
        for (struct watch *w = n->watches; w; w = w->next)
            if (!w->gone && w->req == req && w->tid == tid && !w->confirmed) {
                if (e)
                    unlink_watch(n, w);
                else
                    w->confirmed = true;
                if (w->c) reply(w->c, w->client_id, (int)e);
                break;
            }
        walk_end(n);
        break;
    case PSM_D_RELEASE:
        if (psmsg_get_u64(&m->body, PSF_WATCHER, &watcher) < 0) return;
        for (struct waiter *x = n->waiters; x; x = x->next)
            if (!x->gone && x->tid == tid && x->watcher == watcher && x->node == from) {
                unlink_waiter(n, x);
                break;
            }
        break;
    case PSM_D_DEAD: /* watcher side: fire */
        if (psmsg_get_u64(&m->body, PSF_WATCHER, &watcher) < 0) return;
        psmsg_get_u32(&m->body, PSF_STATUS, &status);
        walk_begin(n);
        for (struct watch *w = n->watches; w; w = w->next)
            if (!w->gone && w->tid == tid && w->watcher == watcher && PSTID_NODE(tid) == from) {
                fire(d, w, false, status);
                break;
            }
        walk_end(n);
        break;
    }
}

bool notify_client_busy(struct psid *d, const struct client *c)
{
    for (struct watch *w = d->notify ? d->notify->watches : NULL; w; w = w->next)
        if (!w->gone && w->c == c) return true;
    return false;
}

void notify_client_gone(struct psid *d, struct client *c)
{
    struct notify *n = d->notify;
    if (!n) return;
    walk_begin(n);
    for (struct watch *w = n->watches; w; w = w->next) {
        if (w->gone || w->c != c) continue;
        unlink_watch(n, w);
        struct psmsg_buf b = {0};
        psmsg_begin(&b, PSM_D_RELEASE, 0);
        psmsg_put_u64(&b, PSF_TID, w->tid);
        psmsg_put_u64(&b, PSF_WATCHER, w->watcher);
        psid_send(d, PSTID_NODE(w->tid), &b);
        psmsg_buf_free(&b);
    }
    walk_end(n);
}

void notify_node_lost(struct psid *d, uint32_t node)
{
    struct notify *n = d->notify;
    if (!n) return;
    walk_begin(n);
    for (struct watch *w = n->watches; w; w = w->next) {
        if (w->gone || PSTID_NODE(w->tid) != node) continue;
        if (!w->confirmed && w->c) reply(w->c, w->client_id, 0);
        fire(d, w, true, 0);
    }
    for (struct waiter *x = n->waiters; x; x = x->next)
        if (!x->gone && x->node == node) unlink_waiter(n, x);
    walk_end(n);
}

void notify_free(struct psid *d)
{
    struct notify *n = d->notify;
    if (!n) return;
    while (n->watches) {
        struct watch *w = n->watches;
        n->watches = w->next;
        free(w);
    }
    while (n->waiters) {
        struct waiter *x = n->waiters;
        n->waiters = x->next;
        free(x);
    }
    free(n);
    d->notify = NULL;
}

static const uint16_t notify_requests[] = {PSM_NOTIFY, PSM_RELEASE, 0};
static const uint16_t notify_messages[] = {PSM_D_NOTIFY, PSM_D_NOTIFY_REPLY, PSM_D_RELEASE,
                                           PSM_D_DEAD, 0};
const struct psid_module notify_module = {.name = "notify",
                                          .requests = notify_requests,
                                          .request = notify_request,
                                          .messages = notify_messages,
                                          .message = notify_from_daemon,
                                          .client_gone = notify_client_gone,
                                          .client_busy = notify_client_busy,
                                          .node_lost = notify_node_lost,
                                          .stop = notify_free};
