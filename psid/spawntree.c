/*
 * spawntree.c - the launch tree's inner nodes and leaves (docs/psid-design.md, "Launch
 * tree"). A job on more nodes than psid.tree_width besides its home is not sent to each
 * node by the home (jobs.c) but down a tree: the home sends a PSM_D_SPAWN_TREE to each of
 * its at most k children, with the common fields once and a PSF_PART per node of that
 * child's subtree (its ranks and its spawn credential, made and MACed by the home's
 * privileged child: a forwarding psid cannot alter it unseen, the target's child checks
 * it against the home, PSTID_NODE of the job). Here a node starts its own part (the spawn
 * queue, as a PSM_D_SPAWN from the home), forwards each child's subtree, and keeps the job
 * until every rank of its subtree has answered: then one PSM_D_STARTED with all their
 * answers goes to its parent (more than one only when they would not fit PSMSG_MAX / 2).
 *
 * A child lost meanwhile (membership's node-lost hook) is answered for: its subtree's
 * missing ranks fail with EHOSTDOWN naming it, so that the launch fails cleanly and never
 * hangs. A parent lost: the answers go to the home directly. The home lost: the job is
 * forgotten (the spawn queue drops its ranks), and so is a job whose client is gone
 * (PSM_D_JOB_GONE). Bounds: TREE_JOBS_MAX jobs, each dropped after TREE_TTL_NS if its
 * answers never all come (a job ended meanwhile); its state is
 * the ranks of its subtree, which the message that brought it held. A malformed or
 * forged message is dropped and counted (d->tree_dropped), and so is an answer for a rank
 * that is not the sender's subtree's, or answered already.
 *
 * Ends go up the same way (issue 33: the home hears k messages per job end, not one per
 * rank). A rank's end (tasks.c, after all its output) becomes a PSF_EXIT record here; a
 * node sends its subtree's records up in one PSM_D_EXITS once the whole subtree has ended
 * (a rank that never started, or whose branch was lost, counts as ended), or at once with
 * an end that ends the job (a status other than 0, an MPI rank that did not finalize), so
 * that psrun acts on it without waiting for the rest. Output still goes straight to the
 * home, so an end can overtake its rank's output there: the home holds it until both of
 * the rank's streams have ended (jobs.c). The job is kept while it runs; every record sent
 * up is kept too, so that a node whose parent is lost sends them all to the home again
 * (the home takes each rank's end once), and its subtree's ranks below a lost child send
 * theirs to the home themselves. The home's PSM_D_TREE_DONE, sent down the tree when the
 * job has ended, lets the nodes forget it; a job whose subtree has ended is forgotten
 * after TREE_DONE_TTL_NS in any case, and the oldest such job makes room at
 * TREE_JOBS_MAX.
 */
#include "daemon.h"
#include "log.h"
#include "module.h"
#include "psmsg.h"
#include "treewire.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TREE_JOBS_MAX    1024
#define TREE_TTL_NS      (300ull * 1000000000ull)
#define TREE_DONE_TTL_NS (600ull * 1000000000ull)
#define TREE_FLUSH       (PSMSG_MAX / 2)
#define KID_SELF         UINT32_MAX

struct trank {
    uint32_t rank, node, kid; /* kid: an index in kids, KID_SELF: started here */
    bool done;                /* its start answered */
    bool ended;               /* its end gone up (or none will come through here) */
};

struct tjob {
    uint64_t job, since;
    uint32_t home, parent;
    struct trank *ranks; /* sorted by rank */
    size_t n, answered;
    uint32_t *kids; /* the children's node ids */
    size_t nkids;
    struct psmsg_buf out; /* the answers not yet sent up */
    bool open;
    size_t ended;          /* ranks whose trank.ended is set */
    uint64_t ended_at;     /* loop_now() when the last of them went up, 0 before */
    struct psmsg_buf ex;   /* end records not yet sent up (PSM_D_EXITS) */
    struct psmsg_buf kept; /* every end record sent up, for the home if the parent dies */
    bool ex_open, kept_open;
    struct tjob *next;
};

struct spawntree {
    struct tjob *head;
    size_t n;
};

static void tjob_free_unlinked(struct tjob *t)
{
    free(t->ranks);
    free(t->kids);
    psmsg_buf_free(&t->out);
    psmsg_buf_free(&t->ex);
    psmsg_buf_free(&t->kept);
    free(t);
}

static void tjob_free(struct psid *d, struct tjob *t)
{
    struct spawntree *st = d->tree;
    for (struct tjob **pp = &st->head; *pp; pp = &(*pp)->next)
        if (*pp == t) {
            *pp = t->next;
            st->n--;
            break;
        }
    tjob_free_unlinked(t);
}

static struct tjob *tjob_find(struct psid *d, uint64_t job)
{
    for (struct tjob *t = d->tree ? d->tree->head : NULL; t; t = t->next)
        if (t->job == job) return t;
    return NULL;
}

static struct trank *trank_find(struct tjob *t, uint32_t rank)
{
    size_t lo = 0, hi = t->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (t->ranks[mid].rank < rank)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < t->n && t->ranks[lo].rank == rank ? &t->ranks[lo] : NULL;
}

static void flush(struct psid *d, struct tjob *t)
{
    if (!t->open) return;
    if (psid_send(d, t->parent, &t->out) < 0 && t->parent != t->home &&
        psid_send(d, t->home, &t->out) < 0)
        log_warn("job %u:%d: start answers lost: %s", PSTID_NODE(t->job), PSTID_PID(t->job),
                 strerror(errno));
    psmsg_buf_free(&t->out);
    t->out = (struct psmsg_buf){0};
    t->open = false;
}

static void no_end(struct psid *d, struct tjob *t, struct trank *tr);

/* One rank's answer: into the message up, which goes when every rank has answered (or it
 * is full). A rank that did not start sends no end. */
static void answer(struct psid *d, struct tjob *t, struct trank *tr, const struct tree_start *s)
{
    tr->done = true;
    t->answered++;
    if (!t->open) {
        psmsg_begin(&t->out, PSM_D_STARTED, 0);
        psmsg_put_u64(&t->out, PSF_JOB, t->job);
        t->open = true;
    }
    tree_start_put(&t->out, s);
    if (t->answered == t->n || t->out.len >= TREE_FLUSH) flush(d, t);
    if (!s->ok) no_end(d, t, tr);
}

/* The ranks of kid (its whole subtree) that have not answered fail with why. */
static void fail_kid(struct psid *d, struct tjob *t, uint32_t kid, int err, const char *why)
{
    struct tree_start s = {.err = (uint32_t)err};
    snprintf(s.text, sizeof s.text, "%s", why);
    for (size_t i = 0; i < t->n; i++) {
        struct trank *tr = &t->ranks[i];
        if (tr->kid != kid || tr->done) continue;
        s.rank = tr->rank;
        s.node = tr->node;
        answer(d, t, tr, &s);
    }
}

/* ---- ends, up the tree ---- */

/* The end records waiting here go up (to the home if the parent is lost). */
static void exits_flush(struct psid *d, struct tjob *t)
{
    if (t->ex_open) {
        if (psid_send(d, t->parent, &t->ex) < 0 && t->parent != t->home &&
            psid_send(d, t->home, &t->ex) < 0)
            log_warn("job %u:%d: rank ends not sent up: %s", PSTID_NODE(t->job), PSTID_PID(t->job),
                     strerror(errno));
        psmsg_buf_free(&t->ex);
        t->ex = (struct psmsg_buf){0};
        t->ex_open = false;
    }
    if (t->ended == t->n && !t->ended_at) t->ended_at = loop_now();
}

static void record_add(struct psmsg_buf *b, bool *open, uint64_t job, const struct psmsg_view *rec)
{
    if (!*open) {
        psmsg_begin(b, PSM_D_EXITS, 0);
        psmsg_put_u64(b, PSF_JOB, job);
        *open = true;
    }
    psmsg_put_bytes(b, PSF_EXIT, rec->p, rec->len);
}

/* A rank's end record: to go up, and kept. */
static void rank_ended(struct psid *d, struct tjob *t, struct trank *tr,
                       const struct psmsg_view *rec)
{
    tr->ended = true;
    t->ended++;
    record_add(&t->ex, &t->ex_open, t->job, rec);
    record_add(&t->kept, &t->kept_open, t->job, rec);
    if (t->ex.len >= TREE_FLUSH) exits_flush(d, t);
}

/* A rank of the subtree whose end will not come through here: it never started, or its
 * branch was lost (its node sends it to the home itself). */
static void no_end(struct psid *d, struct tjob *t, struct trank *tr)
{
    if (tr->ended) return;
    tr->ended = true;
    if (++t->ended == t->n) exits_flush(d, t);
}

bool spawntree_exit(struct psid *d, uint64_t job, uint32_t rank, const struct psmsg_view *rec)
{
    struct tjob *t = tjob_find(d, job);
    struct trank *tr = t ? trank_find(t, rank) : NULL;
    if (!tr || tr->kid != KID_SELF || tr->ended) return false;
    rank_ended(d, t, tr, rec);
    if (tree_exit_urgent(rec) || t->ended == t->n) exits_flush(d, t);
    return true;
}

/* Every end record sent up so far, to the home (the parent was lost with them, maybe), in
 * messages of at most TREE_FLUSH. */
static void kept_to_home(struct psid *d, struct tjob *t)
{
    struct psmsg all;
    if (!t->kept_open || psmsg_end(&t->kept) < 0 ||
        psmsg_parse(t->kept.data, t->kept.len, &all) < 0)
        return;
    struct psmsg_buf b = {0};
    bool open = false;
    size_t pos = 0, n = 0;
    struct psmsg_field f;
    while (psmsg_next(&all.body, &pos, &f)) {
        if (f.tag != PSF_EXIT) continue;
        struct psmsg_view rec = {f.val, f.len};
        record_add(&b, &open, t->job, &rec);
        n++;
        if (b.len >= TREE_FLUSH) {
            psid_send(d, t->home, &b);
            psmsg_buf_free(&b);
            b = (struct psmsg_buf){0};
            open = false;
        }
    }
    if (open) psid_send(d, t->home, &b);
    psmsg_buf_free(&b);
    log_info("job %u:%d: its launch tree parent is lost: %zu rank ends sent to the home again",
             PSTID_NODE(t->job), PSTID_PID(t->job), n);
}

bool spawntree_result(struct psid *d, uint64_t job, uint32_t rank, uint64_t tid, int err,
                      const char *why, const char *cpus)
{
    struct tjob *t = tjob_find(d, job);
    struct trank *tr = t ? trank_find(t, rank) : NULL;
    if (!tr || tr->kid != KID_SELF || tr->done) return false;
    struct tree_start s = {.rank = rank, .node = d->self->id, .ok = !err, .tid = tid};
    if (err) {
        s.err = (uint32_t)err;
        snprintf(s.text, sizeof s.text, "%s", why ? why : "cannot start");
    } else if (cpus) {
        snprintf(s.cpus, sizeof s.cpus, "%s", cpus);
    }
    answer(d, t, tr, &s);
    return true;
}

void spawntree_job_gone(struct psid *d, uint64_t job)
{
    struct tjob *t = tjob_find(d, job);
    if (t) tjob_free(d, t);
}

static int by_rank(const void *a, const void *b)
{
    const struct trank *x = a, *y = b;
    return x->rank < y->rank ? -1 : x->rank > y->rank;
}

static void dropped(struct psid *d, uint32_t from, const char *what, const char *why)
{
    d->tree_dropped++;
    log_warn("launch tree: %s from node %u dropped: %s (%llu dropped so far)", what, from, why,
             (unsigned long long)d->tree_dropped);
}

/* The job's state from its decoded spawn: ranks sorted, each with its child; kid_of[i]:
 * part i's child (an index in t->kids; KID_SELF for part 0). The children are the parts
 * right after the receiver's (places are sorted, and a child's place is below every other
 * descendant's), so each part's is found by climbing and a binary search: O(parts x
 * (depth + log k)) for any message, forged ones too. */
static struct tjob *tjob_make(uint32_t from, const struct tree_spawn *ts, uint32_t *kid_of,
                              const char **why)
{
    size_t n = 0;
    for (size_t i = 0; i < ts->n; i++) n += ts->parts[i].nranks;
    struct tjob *t = calloc(1, sizeof *t);
    if (!t || !(t->ranks = calloc(n, sizeof *t->ranks)) ||
        !(t->kids = calloc(ts->width < ts->n ? ts->width : ts->n, sizeof *t->kids))) {
        *why = "out of memory";
        goto fail;
    }
    t->job = ts->job;
    t->home = PSTID_NODE(ts->job);
    t->parent = from;
    t->since = loop_now();
    uint32_t p0 = ts->parts[0].pos, k = ts->width;
    for (size_t i = 0; i < ts->n; i++) {
        uint32_t kid = KID_SELF;
        if (i > 0) {
            uint64_t q = ts->parts[i].pos; /* up to p0's child */
            while ((q - 1) / k != p0) q = (q - 1) / k;
            if (q == ts->parts[i].pos) { /* a child itself: the next kid */
                kid = (uint32_t)t->nkids;
                t->kids[t->nkids++] = ts->parts[i].node;
            } else { /* among the children, parts 1 .. nkids (decode: its parent is a part) */
                size_t lo = tree_part_find(ts->parts, 1, t->nkids + 1, (uint32_t)q);
                if (lo == t->nkids + 1) {
                    *why = "a part whose child of the receiver is missing";
                    goto fail;
                }
                kid = (uint32_t)(lo - 1);
            }
        }
        kid_of[i] = kid;
        size_t pos = 0;
        struct psmsg_field f;
        while (psmsg_next(&ts->parts[i].rec, &pos, &f)) {
            uint32_t r;
            if (f.tag != PSF_RANK || psmsg_field_u32(&f, &r) < 0) continue;
            t->ranks[t->n++] = (struct trank){.rank = r, .node = ts->parts[i].node, .kid = kid};
        }
    }
    qsort(t->ranks, t->n, sizeof *t->ranks, by_rank);
    for (size_t i = 1; i < t->n; i++)
        if (t->ranks[i].rank == t->ranks[i - 1].rank) {
            *why = "a rank in two parts";
            goto fail;
        }
    return t;
fail:
    if (t) {
        free(t->ranks);
        free(t->kids);
    }
    free(t);
    return NULL;
}

/* Jobs whose answers never all came (ended meanwhile): forgotten after TREE_TTL_NS; jobs
 * whose subtree has ended and whose PSM_D_TREE_DONE never came, after TREE_DONE_TTL_NS. At
 * TREE_JOBS_MAX, the job whose subtree ended first goes now. */
static void expire(struct psid *d)
{
    uint64_t now = loop_now();
    struct tjob *oldest = NULL;
    for (struct tjob *t = d->tree->head, *nx; t; t = nx) {
        nx = t->next;
        if (t->answered < t->n && now - t->since >= TREE_TTL_NS) {
            log_info("job %u:%d: launch tree: %zu of %zu answers never came; forgotten",
                     PSTID_NODE(t->job), PSTID_PID(t->job), t->n - t->answered, t->n);
            tjob_free(d, t);
        } else if (t->ended_at && now - t->ended_at >= TREE_DONE_TTL_NS) {
            tjob_free(d, t);
        } else if (t->ended_at && (!oldest || t->ended_at < oldest->ended_at)) {
            oldest = t;
        }
    }
    if (d->tree->n >= TREE_JOBS_MAX && oldest) tjob_free(d, oldest);
}

static void spawn_tree(struct psid *d, uint32_t from, const struct psmsg *m)
{
    struct tree_spawn ts;
    const char *why;
    if (tree_spawn_decode(&m->body, d->self->id, &ts, &why) < 0) {
        dropped(d, from, "a spawn", why);
        return;
    }
    if (!d->tree && !(d->tree = calloc(1, sizeof *d->tree))) {
        dropped(d, from, "a spawn", "out of memory");
        goto out;
    }
    expire(d);
    if (PSTID_NODE(ts.job) == d->self->id || tjob_find(d, ts.job)) {
        dropped(d, from, "a spawn", "for a job of this node's, or one it has already");
        goto out;
    }
    if (d->tree->n >= TREE_JOBS_MAX) {
        dropped(d, from, "a spawn", "too many launch-tree jobs in flight here");
        goto out;
    }
    uint32_t *kid_of = calloc(ts.n, sizeof *kid_of), *order = calloc(ts.n, sizeof *order);
    size_t *first = NULL;
    struct tjob *t = kid_of && order ? tjob_make(from, &ts, kid_of, &why) : NULL;
    if (t && !(first = calloc(t->nkids + 1, sizeof *first))) {
        tjob_free_unlinked(t);
        t = NULL;
        why = "out of memory";
    }
    if (!t) {
        dropped(d, from, "a spawn", kid_of && order ? why : "out of memory");
        free(kid_of);
        free(order);
        goto out;
    }
    /* the parts by child, in place order within each (a counting sort) */
    for (size_t i = 1; i < ts.n; i++) first[kid_of[i] + 1]++;
    for (size_t c = 1; c <= t->nkids; c++) first[c] += first[c - 1];
    for (size_t i = 1; i < ts.n; i++) order[first[kid_of[i]]++] = (uint32_t)i;
    for (size_t c = t->nkids; c > 0; c--) first[c] = first[c - 1];
    first[0] = 0;
    t->next = d->tree->head;
    d->tree->head = t;
    d->tree->n++;
    /* each child's subtree, forwarded: the common fields and its parts as they came */
    size_t nkids = t->nkids;
    for (size_t c = 0; c < nkids; c++) {
        struct psmsg_buf b = {0};
        psmsg_begin(&b, PSM_D_SPAWN_TREE, 0);
        size_t pos = 0;
        struct psmsg_field f;
        while (psmsg_next(&m->body, &pos, &f))
            if (tree_common_field(f.tag)) psmsg_put_bytes(&b, f.tag, f.val, f.len);
        psmsg_put_u32(&b, PSF_TREE_WIDTH, ts.width);
        size_t end = c + 1 < nkids ? first[c + 1] : ts.n - 1;
        for (size_t x = first[c]; x < end; x++)
            psmsg_put_bytes(&b, PSF_PART, ts.parts[order[x]].rec.p, ts.parts[order[x]].rec.len);
        uint32_t node = t->kids[c];
        struct psid_node *pn = psid_node(d, node);
        int rc = pn && pn->state == PSNODE_UP ? psid_send(d, node, &b) : -1;
        psmsg_buf_free(&b);
        if (rc < 0) {
            char text[200];
            snprintf(text, sizeof text, "node %u (%s) of the launch tree cannot be reached", node,
                     pn ? pn->conf->name : "?");
            fail_kid(d, t, (uint32_t)c, EHOSTDOWN,
                     text); /* never completes: this node's part waits */
        }
    }
    free(kid_of);
    free(order);
    free(first);
    /* this node's own part: a PSM_D_SPAWN from the home, into the spawn queue */
    struct psmsg_buf b = {0};
    psmsg_begin(&b, PSM_D_SPAWN, 0);
    tree_put_local(&b, &m->body, &ts.parts[0]);
    struct psmsg local;
    if (psmsg_end(&b) == 0 && psmsg_parse(b.data, b.len, &local) == 0) {
        spawnq_request(d, t->home, &local); /* may complete and free t */
    } else {
        struct tree_start s = {.node = d->self->id, .err = ENOMEM};
        snprintf(s.text, sizeof s.text, "node %u (%s): the spawn does not fit a message",
                 d->self->id, d->self->name);
        for (size_t i = 0; i < t->n; i++)
            if (t->ranks[i].kid == KID_SELF && !t->ranks[i].done) {
                s.rank = t->ranks[i].rank;
                answer(d, t, &t->ranks[i], &s);
            }
    }
    psmsg_buf_free(&b);
out:
    tree_spawn_free(&ts);
}

static void started(struct psid *d, uint32_t from, const struct psmsg *m)
{
    uint64_t job;
    if (psmsg_get_u64(&m->body, PSF_JOB, &job) < 0) {
        dropped(d, from, "start answers", "no job");
        return;
    }
    struct tjob *t = tjob_find(d, job);
    if (!t) {
        if (PSTID_NODE(job) == d->self->id)
            jobs_tree_started(d, from, m);
        else
            log_debug("launch tree: start answers of job %u:%d from node %u: no such job here",
                      PSTID_NODE(job), PSTID_PID(job), from);
        return;
    }
    size_t pos = 0;
    struct tree_start s;
    const char *why;
    for (int rc; (rc = tree_start_next(&m->body, &pos, &s, &why)) != 0;) {
        if (rc < 0) {
            dropped(d, from, "a start answer", why);
            continue;
        }
        struct trank *tr = trank_find(t, s.rank);
        if (!tr || tr->done || tr->kid == KID_SELF || t->kids[tr->kid] != from ||
            tr->node != s.node) {
            dropped(d, from, "a start answer", "not of the sender's subtree, or answered already");
            continue;
        }
        answer(d, t, tr, &s);
    }
}

/* PSM_D_EXITS from a child: its subtree's ends, on their way up (here: the home's, jobs.c) */
static void exits(struct psid *d, uint32_t from, const struct psmsg *m)
{
    uint64_t job;
    if (psmsg_get_u64(&m->body, PSF_JOB, &job) < 0) {
        dropped(d, from, "rank ends", "no job");
        return;
    }
    struct tjob *t = tjob_find(d, job);
    if (!t) {
        if (PSTID_NODE(job) == d->self->id) {
            jobs_tree_exits(d, from, m);
        } else { /* forgotten here: on to the home, which checks them */
            struct psmsg_buf b = {0};
            psmsg_begin(&b, PSM_D_EXITS, 0);
            size_t pos = 0;
            struct psmsg_field f;
            while (psmsg_next(&m->body, &pos, &f)) psmsg_put_bytes(&b, f.tag, f.val, f.len);
            psid_send(d, PSTID_NODE(job), &b);
            psmsg_buf_free(&b);
        }
        return;
    }
    size_t pos = 0;
    struct tree_exit e;
    const char *why;
    bool urgent = false;
    for (int rc; (rc = tree_exit_next(&m->body, &pos, &e, &why)) != 0;) {
        if (rc < 0) {
            dropped(d, from, "a rank end", why);
            continue;
        }
        struct trank *tr = trank_find(t, e.rank);
        if (!tr || tr->ended || tr->kid == KID_SELF || t->kids[tr->kid] != from ||
            tr->node != e.node) {
            dropped(d, from, "a rank end", "not of the sender's subtree, or ended already");
            continue;
        }
        rank_ended(d, t, tr, &e.rec);
        urgent |= e.urgent;
    }
    if (urgent || t->ended == t->n) exits_flush(d, t);
}

/* PSM_D_TREE_DONE from the parent: the job has ended; on to the children, and forgotten. */
static void tree_done(struct psid *d, uint32_t from, const struct psmsg *m)
{
    uint64_t job;
    struct tjob *t = psmsg_get_u64(&m->body, PSF_JOB, &job) == 0 ? tjob_find(d, job) : NULL;
    if (!t || (from != t->parent && from != t->home)) return;
    struct psmsg_buf b = {0};
    psmsg_begin(&b, PSM_D_TREE_DONE, 0);
    psmsg_put_u64(&b, PSF_JOB, job);
    for (size_t c = 0; c < t->nkids; c++) {
        struct psid_node *pn = psid_node(d, t->kids[c]);
        if (pn && pn->state == PSNODE_UP) psid_send(d, t->kids[c], &b);
    }
    psmsg_buf_free(&b);
    tjob_free(d, t);
}

static void spawntree_message(struct psid *d, uint32_t from, const struct psmsg *m)
{
    if (m->type == PSM_D_SPAWN_TREE)
        spawn_tree(d, from, m);
    else if (m->type == PSM_D_STARTED)
        started(d, from, m);
    else if (m->type == PSM_D_EXITS)
        exits(d, from, m);
    else
        tree_done(d, from, m);
}

static void spawntree_node_lost(struct psid *d, uint32_t node)
{
    if (!d->tree) return;
    for (struct tjob *t = d->tree->head, *nx; t; t = nx) {
        nx = t->next;
        if (node == t->home) { /* nobody waits for the answers */
            tjob_free(d, t);
            continue;
        }
        if (node == t->parent) {
            t->parent = t->home;
            kept_to_home(d, t);
        }
        for (uint32_t kid = 0; kid < t->nkids; kid++) {
            if (t->kids[kid] != node) continue;
            struct psid_node *pn = psid_node(d, node);
            char text[200];
            tree_lost_text(text, sizeof text, node, pn ? pn->conf->name : NULL);
            log_notice("job %u:%d: %s", PSTID_NODE(t->job), PSTID_PID(t->job), text);
            fail_kid(d, t, kid, EHOSTDOWN, text);
            /* its subtree's ends go to the home from their nodes (their parent is lost) */
            for (size_t i = 0; i < t->n; i++)
                if (t->ranks[i].kid == kid) no_end(d, t, &t->ranks[i]);
            break;
        }
    }
}

static void spawntree_stop(struct psid *d)
{
    if (!d->tree) return;
    while (d->tree->head) tjob_free(d, d->tree->head);
    free(d->tree);
    d->tree = NULL;
}

static const uint16_t spawntree_messages[] = {PSM_D_SPAWN_TREE, PSM_D_STARTED, PSM_D_EXITS,
                                              PSM_D_TREE_DONE, 0};
const struct psid_module spawntree_module = {.name = "spawntree",
                                             .messages = spawntree_messages,
                                             .message = spawntree_message,
                                             .node_lost = spawntree_node_lost,
                                             .stop = spawntree_stop};
