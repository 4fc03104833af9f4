/*
 * send.c - sending daemon messages, and dispatching the ones that arrive.
 *
 * A message to this node itself is dispatched at once, so that the home side and the task
 * side of a job run the same code whether they share a node or not. A message to another
 * node goes to RDP; when RDP's queue for that node is full (EAGAIN) it waits in a per-node
 * backlog, in order, until RDP says it can continue. The sources that could fill the
 * backlog (task output and input) are flow-controlled per rank, which bounds it. A node
 * that is lost drops its backlog.
 */
#include "daemon.h"
#include "module.h"
#include "log.h"
#include "psmsg.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct bmsg {
    struct bmsg *next;
    size_t len;
    uint8_t data[];
};

struct backlog {
    struct bmsg *head, *tail;
    size_t bytes;
};

static struct backlog *backlog_of(struct psid *d, uint32_t node)
{
    const struct psconf_node *n = psconf_node_by_id(&d->conf, node);
    if (!n) return NULL;
    if (!d->backlog && !(d->backlog = calloc(d->conf.nnodes, sizeof *d->backlog))) return NULL;
    return &d->backlog[n - d->conf.nodes];
}

static int enqueue(struct backlog *q, const uint8_t *data, size_t len)
{
    struct bmsg *m = malloc(sizeof *m + len);
    if (!m) return -1;
    m->next = NULL;
    m->len = len;
    memcpy(m->data, data, len);
    if (q->tail)
        q->tail->next = m;
    else
        q->head = m;
    q->tail = m;
    q->bytes += len;
    return 0;
}

int psid_send(struct psid *d, uint32_t node, struct psmsg_buf *b)
{
    if (psmsg_end(b) < 0) return -1;
    if (node == d->self->id) {
        struct psmsg m;
        if (psmsg_parse(b->data, b->len, &m) < 0) return -1;
        psid_dispatch(d, node, &m);
        return 0;
    }
    struct backlog *q = backlog_of(d, node);
    if (!q) {
        errno = EHOSTUNREACH;
        return -1;
    }
    if (!q->head && rdp_send(d->rdp, node, b->data, b->len) == 0) return 0;
    if (q->head || errno == EAGAIN) return enqueue(q, b->data, b->len);
    log_warn("send to node %u: %s", node, strerror(errno));
    return -1;
}

void send_can_continue(struct psid *d, uint32_t node)
{
    struct backlog *q = backlog_of(d, node);
    while (q && q->head) {
        struct bmsg *m = q->head;
        if (rdp_send(d->rdp, node, m->data, m->len) < 0) {
            if (errno != EAGAIN) log_warn("send to node %u: %s", node, strerror(errno));
            if (errno == EAGAIN) return;
        }
        q->head = m->next;
        if (!q->head) q->tail = NULL;
        q->bytes -= m->len;
        free(m);
    }
}

void send_node_lost(struct psid *d, uint32_t node)
{
    struct backlog *q = backlog_of(d, node);
    while (q && q->head) {
        struct bmsg *m = q->head;
        q->head = m->next;
        free(m);
    }
    if (q) {
        q->tail = NULL;
        q->bytes = 0;
    }
}

void send_free(struct psid *d)
{
    if (!d->backlog) return;
    for (size_t i = 0; i < d->conf.nnodes; i++) send_node_lost(d, d->conf.nodes[i].id);
    free(d->backlog);
    d->backlog = NULL;
}

void psid_dispatch(struct psid *d, uint32_t from, const struct psmsg *m)
{
    if (m->type != PSM_D_HELLO && !modules_message(d, from, m))
        log_info("message of unknown type %u from node %u dropped", m->type, from);
}
