/*
 * pmifence.c - a PMI fence over the tree of a job's nodes (docs/pmi.md, "The fence").
 *
 * The home lays the job's nodes out in the order of their first ranks and gives each its
 * parent and children in a k-ary tree (pmihome.c): node i's children are k*i+1 .. k*i+k, the
 * root is the node of rank 0. Every node keeps the pairs its ranks put since the last fence
 * (the fence's accumulator). When all its local ranks are in the fence and every child's
 * part has come, a node sends its accumulator - its ranks' pairs and its subtree's - to its
 * parent (PSM_D_PMI_UP) and forgets it. The root, once complete, has the union of the whole
 * job: it adds it to its store and sends it to its children (PSM_D_PMI_DOWN), each adds it
 * and passes it on, and every node then answers its own ranks (barrier_out, kvs-fence-
 * response). A get is answered from the node's own store: it never leaves the node. Per
 * fence a node receives one message per child and one from its parent, and sends one to
 * its parent and one per child: at most k+1 each way, whatever the number of nodes (unions
 * bigger than PMIFENCE_CHUNK go in several messages, PSF_MORE on all but the last).
 *
 * Bounds: a node adds a child's pairs only within the job's bounds (pmi_bounds_ok); past
 * them the fence fails: its part upward carries the error instead of pairs, and the root
 * sends the error down, so every rank's fence ends with rc -1 and the reason, and no node
 * holds more than the bound plus one fence's pairs. Messages carry the fence's number
 * (PSF_PMI_EPOCH); one of another fence is dropped and logged (pmi.c has checked that it
 * comes from a child, or from the parent).
 */
#include "pmi.h"

#include "log.h"
#include "pmiwire.h"
#include "psproto.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static void msg_begin(struct pmijob *j, struct psmsg_buf *b, uint16_t type)
{
    psmsg_begin(b, type, 0);
    psmsg_put_u64(b, PSF_JOB, pmi_job_id(j));
    psmsg_put_u32(b, PSF_PMI_EPOCH, pmi_fence_of(j)->epoch);
}

static int msg_send(struct pmijob *j, uint32_t node, struct psmsg_buf *b)
{
    struct pmifence *f = pmi_fence_of(j);
    int rc = psid_send(pmi_daemon_of(j), node, b);
    if (rc < 0)
        log_warn("pmi: job %u:%d: fence message to node %u: %s", PSTID_NODE(pmi_job_id(j)),
                 PSTID_PID(pmi_job_id(j)), node, strerror(errno));
    f->msgs_out++;
    psmsg_buf_free(b);
    return rc;
}

/* The fence's pairs (or its error) to node, in chunks. */
static void send_part(struct pmijob *j, uint32_t node, uint16_t type)
{
    struct pmifence *f = pmi_fence_of(j);
    struct psmsg_buf b = {0};
    msg_begin(j, &b, type);
    if (f->err) {
        psmsg_put_u32(&b, PSF_ERRNO, (uint32_t)f->err);
        psmsg_put_str(&b, PSF_TEXT, f->text);
        msg_send(j, node, &b);
        return;
    }
    struct pmikvs_it it = {0};
    const char *k, *v;
    size_t kl, vl;
    while (pmikvs_next(&f->acc, &it, &k, &kl, &v, &vl)) {
        if (b.len + 2 * PSMSG_FHDR + kl + vl > PMIFENCE_CHUNK) {
            psmsg_put_u32(&b, PSF_MORE, 1);
            msg_send(j, node, &b);
            msg_begin(j, &b, type);
        }
        psmsg_put_bytes(&b, PSF_PMI_KEY, k, kl);
        psmsg_put_bytes(&b, PSF_PMI_VALUE, v, vl);
    }
    msg_send(j, node, &b);
}

static void fail(struct pmifence *f, int err, const char *text)
{
    if (f->err) return;
    f->err = err;
    snprintf(f->text, sizeof f->text, "%s", text);
}

/* The fence is over here: the counts start again, the ranks get their answers. */
static void done(struct pmijob *j)
{
    struct pmifence *f = pmi_fence_of(j);
    const uint32_t *ch;
    size_t nc = pmi_children(j, &ch);
    int err = f->err;
    char text[sizeof f->text];
    snprintf(text, sizeof text, "%s", f->text);
    f->epoch++;
    f->fences++;
    f->in = 0;
    f->children_in = 0;
    memset(f->child_in, 0, nc);
    f->up_sent = false;
    f->err = 0;
    f->text[0] = 0;
    pmikvs_free(&f->acc);
    pmi_fence_done(j, err, text);
}

/* Add the accumulator to the store (the root, at the end of a fence). */
static void commit(struct pmijob *j)
{
    struct pmifence *f = pmi_fence_of(j);
    struct pmikvs *kvs = pmi_kvs_of(j);
    struct pmikvs_it it = {0};
    const char *k, *v;
    size_t kl, vl;
    while (!f->err && pmikvs_next(&f->acc, &it, &k, &kl, &v, &vl))
        if (pmikvs_put(kvs, k, kl, v, vl) < 0) fail(f, ENOMEM, "out of memory");
}

void pmifence_check(struct pmijob *j)
{
    struct pmifence *f = pmi_fence_of(j);
    const uint32_t *ch;
    size_t nc = pmi_children(j, &ch);
    uint32_t parent;
    if (f->up_sent || f->in < pmi_local_ranks(j) || f->children_in < nc) return;
    if (f->in == 0 && f->children_in == 0) return; /* nobody here takes part (yet) */
    if (pmi_parent(j, &parent)) {
        send_part(j, parent, PSM_D_PMI_UP);
        f->up_sent = true;
        pmikvs_free(&f->acc); /* the union comes back down */
        return;
    }
    /* the root: the union is complete */
    commit(j);
    for (size_t i = 0; i < nc; i++) send_part(j, ch[i], PSM_D_PMI_DOWN);
    done(j);
}

/* The pairs of a fence message: into the accumulator (UP, within the bounds) or the store
 * (DOWN: the root checked them). */
static void take_pairs(struct pmijob *j, const struct psmsg *m, bool up)
{
    struct pmifence *f = pmi_fence_of(j);
    struct psmsg_field key = {0}, fld;
    bool have_key = false;
    char why[sizeof f->text];
    size_t pos = 0;
    while (psmsg_next(&m->body, &pos, &fld)) {
        if (fld.tag == PSF_PMI_KEY) {
            key = fld;
            have_key = true;
            continue;
        }
        if (fld.tag != PSF_PMI_VALUE || !have_key) continue;
        have_key = false;
        if (f->err) continue;
        if (key.len == 0 || key.len > PMI_KEY_MAX || fld.len > PMI_VAL_MAX)
            continue; /* not a put */
        if (up && pmi_bounds_ok(j, key.len, fld.len, why, sizeof why) < 0) {
            fail(f, E2BIG, why);
            continue;
        }
        struct pmikvs *to = up ? &f->acc : pmi_kvs_of(j);
        if (pmikvs_put(to, (const char *)key.val, key.len, (const char *)fld.val, fld.len) < 0)
            fail(f, ENOMEM, "out of memory");
    }
    uint32_t e;
    char text[sizeof f->text];
    if (psmsg_get_u32(&m->body, PSF_ERRNO, &e) == 0 && e) {
        if (psmsg_get_str(&m->body, PSF_TEXT, text, sizeof text) < 0)
            snprintf(text, sizeof text, "%s", strerror((int)e));
        fail(f, (int)e, text);
    }
}

/* A DOWN chunk goes on to the children as it came. */
static void forward(struct pmijob *j, const struct psmsg *m)
{
    const uint32_t *ch;
    size_t nc = pmi_children(j, &ch);
    for (size_t i = 0; i < nc; i++) {
        struct psmsg_buf b = {0};
        psmsg_begin(&b, PSM_D_PMI_DOWN, 0);
        size_t pos = 0;
        struct psmsg_field fld;
        while (psmsg_next(&m->body, &pos, &fld)) psmsg_put_bytes(&b, fld.tag, fld.val, fld.len);
        msg_send(j, ch[i], &b);
    }
}

void pmifence_from_daemon(struct pmijob *j, uint32_t from, const struct psmsg *m)
{
    struct pmifence *f = pmi_fence_of(j);
    uint32_t epoch, more = 0;
    uint64_t id = pmi_job_id(j);
    if (psmsg_get_u32(&m->body, PSF_PMI_EPOCH, &epoch) < 0 || epoch != f->epoch) {
        log_warn("pmi: job %u:%d: a fence message of node %u for another fence: dropped",
                 PSTID_NODE(id), PSTID_PID(id), from);
        return;
    }
    psmsg_get_u32(&m->body, PSF_MORE, &more);
    f->msgs_in++;
    if (m->type == PSM_D_PMI_UP) {
        const uint32_t *ch;
        size_t nc = pmi_children(j, &ch), i = 0;
        while (i < nc && ch[i] != from) i++;
        if (i == nc || f->child_in[i] || f->up_sent) {
            log_warn("pmi: job %u:%d: an unexpected fence part from node %u: dropped",
                     PSTID_NODE(id), PSTID_PID(id), from);
            return;
        }
        take_pairs(j, m, true);
        if (more) return;
        f->child_in[i] = 1;
        f->children_in++;
        pmifence_check(j);
        return;
    }
    if (!f->up_sent) {
        log_warn("pmi: job %u:%d: a fence's union from node %u before our part went up: "
                 "dropped",
                 PSTID_NODE(id), PSTID_PID(id), from);
        return;
    }
    take_pairs(j, m, false);
    forward(j, m);
    if (!more) done(j);
}
