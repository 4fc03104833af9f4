/*
 * plquery.c - psstat sockets (PSM_PL_SOCKETS): the node's processes under the preload
 * library are asked for their accelerated connections (PSM_PL_QUERY, an event that wakes
 * each of them), and their answers (PSM_PL_REPORT) collected into one reply.
 *
 * Asking wakes every library process of the node, whoever owns it, so what one user can make
 * psid ask is bounded for everybody (the preload trust issue, point 6): one round of
 * questions at a time; everyone who asks while it runs, or before the next may start, joins
 * it; a round starts no sooner than PLQ_GAP_NS after the last one began. However many ask,
 * the node's processes are asked at most 1 / PLQ_GAP_NS times a second, and every answer
 * was asked for after its request came (never a stale one). The askers waiting are bounded
 * in all and per uid (root has no share), and so are the records kept.
 */
#include "daemon.h"
#include "plquery.h"
#include "psmsg.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define PLQ_GAP_NS     100000000ull /* from one round's start to the next's at least */
#define PLQ_ASKERS     256u         /* waiting for a round */
#define PLQ_ASKERS_UID 8u           /* of them, of one uid (root: no share) */
#define PLQ_RECS       16384u       /* connections a round keeps */

struct plq_rec {
    uint32_t pid, uid;
    uint64_t tx, rx;
    char local[80], remote[80], path[16];
};

struct plq_asker {
    struct client *c; /* NULL once gone */
    uint32_t id, uid;
    struct plq_asker *next;
};

struct plquery {
    uint32_t num;          /* the round's number (PSF_REQ), 0: none under way */
    unsigned waiting;      /* processes yet to answer */
    struct client **asked; /* the round's processes; NULL once answered (each answers once) */
    size_t nasked, capasked;
    struct plq_asker *askers;
    unsigned naskers;
    struct plq_rec *recs; /* the round's answers, or the last round's */
    size_t nrecs, caprecs;
    bool truncated;   /* more than PLQ_RECS */
    uint64_t started; /* when the last round began (0: never) */
    uint64_t timer;   /* the round's end, or the next round's start */
    bool due;         /* askers wait for the next round to start */
    uint32_t next_num;
    struct psid *d;
    plquery_procs_fn procs; /* the node's library processes, now */
};

struct plquery *plquery_new(struct psid *d, plquery_procs_fn procs)
{
    struct plquery *q = calloc(1, sizeof *q);
    if (q) {
        q->d = d;
        q->procs = procs;
    }
    return q;
}

/* The reply to one asker, from the records. */
static void answer(struct plquery *q, struct client *c, uint32_t id)
{
    struct psid *d = q->d;
    struct psmsg_buf b = {0};
    psmsg_begin(&b, PSM_PL_SOCKETS_REPLY, id);
    psmsg_put_u32(&b, PSF_SELF, d->self->id);
    for (size_t i = 0; i < q->nrecs; i++) {
        const struct plq_rec *r = &q->recs[i];
        psmsg_record_begin(&b, PSF_SOCKET);
        psmsg_put_u32(&b, PSF_PID, r->pid);
        psmsg_put_u32(&b, PSF_UID, r->uid);
        psmsg_put_str(&b, PSF_LOCAL, r->local);
        psmsg_put_str(&b, PSF_REMOTE, r->remote);
        psmsg_put_str(&b, PSF_PATH, r->path);
        psmsg_put_u64(&b, PSF_TX_BYTES, r->tx);
        psmsg_put_u64(&b, PSF_RX_BYTES, r->rx);
        psmsg_record_end(&b);
    }
    if (!q->truncated && psmsg_end(&b) == 0)
        client_send(c, &b);
    else
        client_error(c, id, EMSGSIZE, "too many sockets for one reply");
    psmsg_buf_free(&b);
}

/* The round ended (all answered, or its time is up): every asker gets the answer. */
static void round_done(struct plquery *q)
{
    loop_timer_cancel(q->d->loop, q->timer);
    q->timer = 0;
    q->num = 0;
    while (q->askers) {
        struct plq_asker *a = q->askers;
        q->askers = a->next;
        if (a->c) answer(q, a->c, a->id);
        free(a);
    }
    q->naskers = 0;
}

static void round_expired(void *ctx)
{
    struct plquery *q = ctx;
    q->timer = 0;
    round_done(q);
}

static unsigned askers_of(const struct plquery *q, uint32_t uid)
{
    unsigned n = 0;
    for (const struct plq_asker *a = q->askers; a; a = a->next) n += a->uid == uid;
    return n;
}

static void round_start(void *ctx);

void plquery_ask(struct plquery *q, struct client *c, uint32_t id)
{
    uint32_t uid = client_uid(c);
    if (q->naskers >= PLQ_ASKERS || (uid != 0 && askers_of(q, uid) >= PLQ_ASKERS_UID)) {
        client_error(c, id, EBUSY, "too many socket queries waiting (of this user)");
        return;
    }
    struct plq_asker *a = calloc(1, sizeof *a);
    if (!a) {
        client_error(c, id, ENOMEM, "out of memory");
        return;
    }
    /* the round under way asked before this request came: the next one answers it */
    *a = (struct plq_asker){.c = c, .id = id, .uid = uid, .next = q->askers};
    q->askers = a;
    q->naskers++;
    if (q->num || q->due) return; /* a round is under way, or due: it waits for that one */
    q->due = true;
    uint64_t now = loop_now(), at = q->started ? q->started + PLQ_GAP_NS : now;
    q->timer = loop_timer(q->d->loop, at > now ? at : now, round_start, q);
}

/* The next round: every process with an endpoint is asked. */
static void round_start(void *ctx)
{
    struct plquery *q = ctx;
    q->timer = 0;
    q->due = false;
    struct client **procs = NULL;
    size_t nprocs = q->procs(q->d, &procs);
    if (nprocs > q->capasked) {
        struct client **n = realloc(q->asked, nprocs * sizeof *n);
        if (!n) {
            nprocs = 0; /* answered at once, with nothing */
        } else {
            q->asked = n;
            q->capasked = nprocs;
        }
    }
    q->num = ++q->next_num ? q->next_num : ++q->next_num;
    q->started = loop_now();
    q->nrecs = 0;
    q->truncated = false;
    q->waiting = 0;
    q->nasked = nprocs;
    for (size_t i = 0; i < nprocs; i++) {
        q->asked[i] = procs[i];
        struct psmsg_buf b = {0};
        psmsg_begin(&b, PSM_PL_QUERY, 0);
        psmsg_put_u32(&b, PSF_REQ, q->num);
        client_send(procs[i], &b);
        psmsg_buf_free(&b);
        q->waiting++;
    }
    free(procs);
    if (!q->waiting) {
        round_done(q);
        return;
    }
    q->timer = loop_timer(q->d->loop, q->started + PSI_PL_QUERY_MS * 1000000ull, round_expired, q);
}

static struct plq_rec *rec_new(struct plquery *q)
{
    if (q->nrecs == PLQ_RECS) {
        q->truncated = true;
        return NULL;
    }
    if (q->nrecs == q->caprecs) {
        size_t cap = q->caprecs ? 2 * q->caprecs : 64;
        struct plq_rec *n = realloc(q->recs, cap * sizeof *n);
        if (!n) {
            q->truncated = true;
            return NULL;
        }
        q->recs = n;
        q->caprecs = cap;
    }
    struct plq_rec *r = &q->recs[q->nrecs++];
    memset(r, 0, sizeof *r);
    return r;
}

void plquery_report(struct plquery *q, struct client *c, const struct psmsg *m)
{
    uint32_t num;
    if (!q->num || psmsg_get_u32(&m->body, PSF_REQ, &num) < 0 || num != q->num) return;
    size_t k = 0; /* one answer per process asked */
    while (k < q->nasked && q->asked[k] != c) k++;
    if (k == q->nasked) return;
    q->asked[k] = NULL;
    size_t pos = 0;
    struct psmsg_field f;
    while (psmsg_next(&m->body, &pos, &f)) {
        if (f.tag != PSF_SOCKET) continue;
        struct psmsg_view v = psmsg_record(&f);
        struct plq_rec *r = rec_new(q);
        if (!r) break;
        r->pid = (uint32_t)client_pid(c); /* who it is, from SO_PEERCRED, not the report */
        r->uid = client_uid(c);
        psmsg_get_str(&v, PSF_LOCAL, r->local, sizeof r->local);
        psmsg_get_str(&v, PSF_REMOTE, r->remote, sizeof r->remote);
        psmsg_get_str(&v, PSF_PATH, r->path, sizeof r->path);
        psmsg_get_u64(&v, PSF_TX_BYTES, &r->tx);
        psmsg_get_u64(&v, PSF_RX_BYTES, &r->rx);
    }
    if (q->waiting && --q->waiting == 0) round_done(q);
}

void plquery_client_gone(struct plquery *q, struct client *c)
{
    for (struct plq_asker *a = q->askers; a; a = a->next)
        if (a->c == c) a->c = NULL;
    for (size_t k = 0; q->num && k < q->nasked; k++)
        if (q->asked[k] == c) { /* it will not answer */
            q->asked[k] = NULL;
            if (--q->waiting == 0) round_done(q);
            return;
        }
}

void plquery_free(struct plquery *q)
{
    if (!q) return;
    if (q->timer) loop_timer_cancel(q->d->loop, q->timer);
    while (q->askers) {
        struct plq_asker *a = q->askers;
        q->askers = a->next;
        free(a);
    }
    free(q->recs);
    free(q->asked);
    free(q);
}
