/*
 * signals.c - where a signal is routed, and the cluster-wide task list.
 *
 * A signal for a task id goes to the task's node, which checks the permission itself (root,
 * or the task's own uid: the uid comes from the asking client's SO_PEERCRED on the node it
 * asked) and answers with kill(2)'s errors. A signal for a job goes to every node that is
 * not down (an unreachable node's tasks still run: RDP delivers it when the node answers);
 * each signals its own tasks of the job. A task list asks every node that is up. The
 * asking node keeps a pending entry per request and answers the client when every node has
 * answered, or after a deadline for nodes that never do.
 */
#include "daemon.h"
#include "module.h"
#include "log.h"
#include "psmsg.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define ANSWER_NS (2000000000ull) /* how long to wait for other nodes */

static void finish(struct pending *p)
{
    struct psid *d = p->d;
    if (p->client) {
        struct psmsg_buf b = {0};
        if (p->type == PSM_D_SIGNAL) {
            psmsg_begin(&b, PSM_SIGNAL_REPLY, p->client_id);
            /* a job signal succeeded if it reached any task */
            int err = p->err;
            if (p->count && err != EINVAL) err = 0;
            if (!p->count && !err) err = ESRCH;
            psmsg_put_u32(&b, PSF_ERRNO, (uint32_t)err);
            psmsg_put_u32(&b, PSF_COUNT, p->count);
            client_send(p->client, &b);
        } else if (p->acc && psmsg_end(p->acc) == 0) {
            client_send(p->client, p->acc);
        }
        psmsg_buf_free(&b);
    }
    for (struct pending **pp = &d->pending; *pp; pp = &(*pp)->next)
        if (*pp == p) {
            *pp = p->next;
            break;
        }
    loop_timer_cancel(d->loop, p->timer);
    if (p->acc) psmsg_buf_free(p->acc);
    free(p->acc);
    free(p);
}

static void expire(void *ctx)
{
    struct pending *p = ctx;
    p->timer = 0;
    if (p->type == PSM_D_SIGNAL && !p->err && !p->count) p->err = ESRCH;
    finish(p);
}

static struct pending *pending_new(struct psid *d, struct client *c, uint32_t id, uint16_t type)
{
    struct pending *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    *p = (struct pending){.req = ++d->next_req, .client = c, .client_id = id, .type = type, .d = d};
    p->next = d->pending;
    d->pending = p;
    p->timer = loop_timer(d->loop, loop_now() + ANSWER_NS, expire, p);
    return p;
}

static struct pending *pending_find(struct psid *d, uint32_t req)
{
    for (struct pending *p = d->pending; p; p = p->next)
        if (p->req == req) return p;
    return NULL;
}

bool pending_client_busy(struct psid *d, const struct client *c)
{
    for (struct pending *p = d->pending; p; p = p->next)
        if (p->client == c) return true;
    return false;
}

void pending_client_gone(struct psid *d, struct client *c)
{
    for (struct pending *p = d->pending; p; p = p->next)
        if (p->client == c) p->client = NULL;
}

static void reply_signal(struct client *c, uint32_t id, int err, uint32_t count)
{
    struct psmsg_buf b = {0};
    psmsg_begin(&b, PSM_SIGNAL_REPLY, id);
    psmsg_put_u32(&b, PSF_ERRNO, (uint32_t)err);
    psmsg_put_u32(&b, PSF_COUNT, count);
    client_send(c, &b);
    psmsg_buf_free(&b);
}

/* Send a daemon request to every up node, and to every unreachable one too if `alive` (a
 * signal: its tasks still run, RDP delivers it when the node answers again); psid_send may
 * be given the same finished buffer again. Returns how many were asked. */
static unsigned fan_out(struct psid *d, struct psmsg_buf *b, bool alive)
{
    unsigned n = 0;
    for (size_t i = 0; i < d->conf.nnodes; i++) {
        if (alive ? !membership_alive(&d->nodes[i]) : d->nodes[i].state != PSNODE_UP) continue;
        if (psid_send(d, d->nodes[i].conf->id, b) == 0) n++;
    }
    return n;
}

void signals_request(struct psid *d, struct client *c, const struct psmsg *m)
{
    uint32_t sig;
    uint64_t tid, job;
    if (psmsg_get_u32(&m->body, PSF_SIGNAL, &sig) < 0) {
        client_error(c, m->id, EINVAL, "no signal given");
        return;
    }
    bool by_tid = psmsg_get_u64(&m->body, PSF_TID, &tid) == 0;
    bool by_job = !by_tid && psmsg_get_u64(&m->body, PSF_JOB, &job) == 0;
    if (!by_tid && !by_job) {
        client_error(c, m->id, EINVAL, "no task or job given");
        return;
    }
    if (by_tid) {
        uint32_t node = PSTID_NODE(tid);
        struct psid_node *pn = psid_node(d, node);
        if (node == d->self->id) {
            reply_signal(c, m->id, tasks_signal_one(d, tid, (int)sig, client_uid(c)), 0);
            return;
        }
        if (!pn || !membership_alive(pn)) { /* no such node, or its tasks are gone */
            reply_signal(c, m->id, ESRCH, 0);
            return;
        }
        struct pending *p = pending_new(d, c, m->id, PSM_D_SIGNAL);
        if (!p) {
            client_error(c, m->id, ENOMEM, "out of memory");
            return;
        }
        p->waiting = 1;
        struct psmsg_buf b = {0};
        psmsg_begin(&b, PSM_D_SIGNAL, 0);
        psmsg_put_u32(&b, PSF_REQ, p->req);
        psmsg_put_u64(&b, PSF_TID, tid);
        psmsg_put_u32(&b, PSF_SIGNAL, sig);
        psmsg_put_u32(&b, PSF_UID, client_uid(c));
        psid_send(d, node, &b);
        psmsg_buf_free(&b);
        return;
    }
    struct pending *p = pending_new(d, c, m->id, PSM_D_SIGNAL);
    if (!p) {
        client_error(c, m->id, ENOMEM, "out of memory");
        return;
    }
    uint32_t req = p->req;
    p->waiting = 1000000; /* no answer counts until every request is out */
    struct psmsg_buf b = {0};
    psmsg_begin(&b, PSM_D_SIGNAL, 0);
    psmsg_put_u32(&b, PSF_REQ, req);
    psmsg_put_u64(&b, PSF_JOB, job);
    psmsg_put_u32(&b, PSF_SIGNAL, sig);
    psmsg_put_u32(&b, PSF_UID, client_uid(c));
    unsigned n = fan_out(d, &b, true);
    psmsg_buf_free(&b);
    if ((p = pending_find(d, req))) { /* local answers may have come in already */
        p->waiting -= 1000000 - n;
        if (p->waiting == 0) finish(p);
    }
}

void tasks_list_request(struct psid *d, struct client *c, const struct psmsg *m)
{
    struct pending *p = pending_new(d, c, m->id, PSM_D_TASKS);
    if (!p || !(p->acc = calloc(1, sizeof *p->acc))) {
        if (p) finish(p);
        client_error(c, m->id, ENOMEM, "out of memory");
        return;
    }
    psmsg_begin(p->acc, PSM_TASKS_REPLY, m->id);
    uint32_t req = p->req;
    p->waiting = 1000000;
    struct psmsg_buf b = {0};
    psmsg_begin(&b, PSM_D_TASKS, 0);
    psmsg_put_u32(&b, PSF_REQ, req);
    unsigned n = fan_out(d, &b, false);
    psmsg_buf_free(&b);
    if ((p = pending_find(d, req))) {
        p->waiting -= 1000000 - n;
        if (p->waiting == 0) finish(p);
    }
}

void signals_from_daemon(struct psid *d, uint32_t from, const struct psmsg *m)
{
    uint32_t req, sig, uid, e = 0, count = 0;
    uint64_t tid, job;
    if (psmsg_get_u32(&m->body, PSF_REQ, &req) < 0) return;
    struct psmsg_buf b = {0};
    switch (m->type) {
    case PSM_D_SIGNAL: /* act on this node's tasks and answer */
        if (psmsg_get_u32(&m->body, PSF_SIGNAL, &sig) < 0 ||
            psmsg_get_u32(&m->body, PSF_UID, &uid) < 0)
            return;
        if (psmsg_get_u64(&m->body, PSF_TID, &tid) == 0) {
            e = (uint32_t)tasks_signal_one(d, tid, (int)sig, uid);
            count = e == 0;
        } else if (psmsg_get_u64(&m->body, PSF_JOB, &job) == 0) {
            e = (uint32_t)tasks_signal_job(d, job, (int)sig, uid, &count);
        } else {
            return;
        }
        psmsg_begin(&b, PSM_D_SIGNAL_REPLY, 0);
        psmsg_put_u32(&b, PSF_REQ, req);
        psmsg_put_u32(&b, PSF_ERRNO, e);
        psmsg_put_u32(&b, PSF_COUNT, count);
        psid_send(d, from, &b);
        break;
    case PSM_D_TASKS:
        psmsg_begin(&b, PSM_D_TASKS_REPLY, 0);
        psmsg_put_u32(&b, PSF_REQ, req);
        tasks_append_records(d, &b);
        psid_send(d, from, &b);
        break;
    case PSM_D_SIGNAL_REPLY:
    case PSM_D_TASKS_REPLY: {
        struct pending *p = pending_find(d, req);
        if (!p || p->waiting == 0) return;
        if (m->type == PSM_D_SIGNAL_REPLY) {
            psmsg_get_u32(&m->body, PSF_ERRNO, &e);
            psmsg_get_u32(&m->body, PSF_COUNT, &count);
            p->count += count;
            if (e && (!p->err || p->err == ESRCH)) p->err = (int)e;
        } else if (p->acc) {
            size_t pos = 0;
            struct psmsg_field f;
            while (psmsg_next(&m->body, &pos, &f))
                if (f.tag == PSF_TASK) psmsg_put_bytes(p->acc, f.tag, f.val, f.len);
        }
        if (--p->waiting == 0) finish(p);
        break;
    }
    }
    psmsg_buf_free(&b);
}

static void signals_or_tasks(struct psid *d, struct client *c, const struct psmsg *m)
{
    if (m->type == PSM_TASKS)
        tasks_list_request(d, c, m);
    else
        signals_request(d, c, m);
}

static const uint16_t signals_requests[] = {PSM_SIGNAL, PSM_TASKS, 0};
static const uint16_t signals_messages[] = {PSM_D_SIGNAL, PSM_D_SIGNAL_REPLY, PSM_D_TASKS,
                                            PSM_D_TASKS_REPLY, 0};
const struct psid_module signals_module = {.name = "signals",
                                           .requests = signals_requests,
                                           .request = signals_or_tasks,
                                           .messages = signals_messages,
                                           .message = signals_from_daemon,
                                           .client_gone = pending_client_gone,
                                           .client_busy = pending_client_busy};
