/*
 * spawnq.c - the spawn queue: where a home node's PSM_D_SPAWN waits until its ranks are
 * started, in batches, so that a job of thousands of ranks never holds the event loop.
 *
 * A request is decoded and checked at once (malformed, another user's without root, over
 * the uid's task limit): those ranks are answered with their error right away. The rest
 * wait in one FIFO queue. Each batch starts ranks (through psid's privileged child,
 * privsep.h: one vfork each, which returns once the task has exec'd) until SPAWN_BATCH_NS of the
 * daemon's time have passed, at least one; if ranks are left, a timer due at once brings the next
 * batch after the loop has served what came meanwhile: heartbeats in and out, RDP, clients. A
 * review run of `psrun -n 5000 --overbook` had stalled a psid long enough for its peers to declare
 * it dead.
 *
 * The limit: a uid other than root may have at most max_tasks_per_uid tasks on this node,
 * counting those running (tasks.c) and those queued here. The home node checks the job's
 * own share per node before it sends anything (jobs.c); this check adds the user's other
 * jobs. A rank over it fails with EAGAIN and says why.
 *
 * A job whose client is gone (PSM_D_JOB_GONE) or whose home node is lost has its queued
 * ranks dropped without a word: nobody waits for them any more.
 */
#include "binding.h"
#include "cgroup.h"
#include "daemon.h"
#include "log.h"
#include "psmsg.h"
#include "spawn.h"

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SPAWN_BATCH_NS 2000000ull

struct spawn_req {
    uint32_t req, home, size, input, uid, gid, umask;
    uint32_t exclusive;           /* 1: no other job's task on this node while the job runs */
    char name[64];                /* the job's name (-J) */
    uint32_t cpt, bind, overbook; /* -c, --cpu-bind (enum psbind), --overbook */
    char *map;                    /* map_cpu's or mask_cpu's LIST; NULL: none */
    uint64_t mem, mem_per_cpu;    /* --mem, --mem-per-cpu (bytes; 0: none) */
    size_t nlocal;                /* the job's ranks here, as requested */
    char *out_pat, *err_pat;      /* --output-on-node; NULL: none */
    uint32_t append, nodeidx;
    uint32_t arg0_pat; /* psrun --bcast: argv[0] is a pattern */
    uint64_t job;
    char cwd[4096];
    uint32_t id;                 /* this psid's number for it (PRIV_F_REQ) */
    uint8_t cred[SPAWNCRED_LEN]; /* the job's spawn credential for this node (PSF_CRED) */
    size_t credlen;
    char **argv, **envp;
    size_t nargv, nenv;
    uint32_t *ranks; /* still to start: ranks[next..nranks) */
    size_t nranks, next;
    struct spawn_req *link;
};

struct spawnq {
    struct spawn_req *head, *tail;
    uint32_t next_id;
    uint64_t timer; /* the next batch, 0 if none is due */
};

static char *field_strdup(const struct psmsg_field *f)
{
    if (memchr(f->val, 0, f->len)) return NULL;
    char *s = malloc(f->len + 1);
    if (!s) return NULL;
    memcpy(s, f->val, f->len);
    s[f->len] = 0;
    return s;
}

static void free_strv(char **v)
{
    for (size_t i = 0; v && v[i]; i++) free(v[i]);
    free(v);
}

static void req_free(struct spawn_req *r)
{
    if (!r) return;
    free_strv(r->argv);
    free_strv(r->envp);
    free(r->map);
    free(r->out_pat);
    free(r->err_pat);
    free(r->ranks);
    free(r);
}

static void reply_rank(struct psid *d, const struct spawn_req *r, uint32_t rank, uint64_t tid,
                       int err, const char *why, const char *cpus)
{
    if (spawntree_result(d, r->job, rank, tid, err, why, cpus)) return; /* down the tree */
    struct psmsg_buf b = {0};
    psmsg_begin(&b, PSM_D_RANK, 0);
    psmsg_put_u32(&b, PSF_REQ, r->req);
    psmsg_put_u64(&b, PSF_JOB, r->job);
    psmsg_put_u32(&b, PSF_RANK, rank);
    if (err) {
        psmsg_put_u32(&b, PSF_ERRNO, (uint32_t)err);
        psmsg_put_str(&b, PSF_TEXT, why);
    } else {
        psmsg_put_u64(&b, PSF_TID, tid);
        if (cpus) psmsg_put_str(&b, PSF_CPU_LIST, cpus);
    }
    tasks_put_count(d, &b);
    psid_send(d, r->home, &b);
    psmsg_buf_free(&b);
}

static int add_env(char **envp, size_t *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int add_env(char **envp, size_t *n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int r = vasprintf(&envp[*n], fmt, ap);
    va_end(ap);
    if (r < 0) return -1;
    (*n)++;
    return 0;
}

/* The rank's own variables (overriding the job's): PSI_RANK, PSI_SIZE, PSI_NODE,
 * PSI_NODENAME, PSI_JOB, PSID_SOCKET, and an MPI job's PMI variables (pmi_rank_env); the
 * privileged child adds PSI_TID (and PMI_FD). */
#define RANK_VARS (6 + PMI_RANK_VARS)

static void start_rank(struct psid *d, struct spawn_req *r, uint32_t rank, uint32_t local)
{
    /* its CPUs (binding.c), chosen before anything else is made for it */
    struct pscpuset cpus;
    char cpulist[4 * PSCPU_MAX / 2 + 8] = "", bwhy[300];
    struct binding_req br = {.mode = r->bind,
                             .cpt = r->cpt,
                             .local = local,
                             .nlocal = (uint32_t)r->nlocal,
                             .overbook = r->overbook != 0,
                             .map = r->map};
    int bound = binding_choose(d, &br, &cpus, bwhy, sizeof bwhy);
    if (bound < 0) {
        pmi_rank_failed(d, r->job, rank);
        reply_rank(d, r, rank, 0, (r->bind & PSBIND_MODE_MASK) >= PSBIND_MAP_CPU ? EINVAL : EBUSY,
                   bwhy, NULL);
        cgroup_hold(d->cgroups, r->job, -1);
        return;
    }
    if (bound) pscpu_format_list(&cpus, cpulist, sizeof cpulist);
    char sock[108];
    psconf_socket_path(&d->conf, d->self->id, sock, sizeof sock);
    char *renv[RANK_VARS + 1] = {0};
    size_t n = 0;
    if (add_env(renv, &n, "PSI_RANK=%u", rank) < 0 ||
        add_env(renv, &n, "PSI_SIZE=%u", r->size) < 0 ||
        add_env(renv, &n, "PSI_NODE=%u", d->self->id) < 0 ||
        add_env(renv, &n, "PSI_NODENAME=%s", d->self->name) < 0 ||
        add_env(renv, &n, "PSI_JOB=%u:%d", PSTID_NODE(r->job), PSTID_PID(r->job)) < 0 ||
        add_env(renv, &n, "PSID_SOCKET=%s", sock) < 0 ||
        pmi_rank_env(d, r->job, rank, renv, &n) < 0) {
        pmi_rank_failed(d, r->job, rank);
        reply_rank(d, r, rank, 0, ENOMEM, "out of memory", NULL);
        goto out;
    }
    struct priv_spawn_req a = {.req = r->id,
                               .job = r->job,
                               .rank = rank,
                               .uid = r->uid,
                               .gid = r->gid,
                               .umask = r->umask,
                               .cwd = r->cwd,
                               .want_stdin = r->input == rank || r->input == PSI_ALL_RANKS,
                               .argv = r->argv,
                               .envp = r->envp,
                               .renv = renv,
                               .cred = r->cred,
                               .credlen = r->credlen,
                               .want_pmi = pmi_job_wants_fd(d, r->job),
                               .cpus = bound ? &cpus : NULL,
                               .out_pat = r->out_pat,
                               .err_pat = r->err_pat,
                               .append = r->append != 0,
                               .nodeidx = r->nodeidx,
                               .name = r->name,
                               .arg0_pat = r->arg0_pat == 1};
    struct spawned s;
    int err;
    char why[512];
    if (priv_spawn(d, &a, &s, &err, why, sizeof why) < 0) {
        log_info("rank %u of job %u:%d: %s", rank, PSTID_NODE(r->job), PSTID_PID(r->job), why);
        pmi_rank_failed(d, r->job, rank);
        reply_rank(d, r, rank, 0, err, why, NULL);
        goto out;
    }
    uint64_t tid = tasks_add(d, &s, r->job, rank, r->home, r->uid, r->cpt, r->argv[0]);
    if (tid && r->name[0]) tasks_set_name(d, tid, r->name);
    if (tid && bound) tasks_set_cpus(d, tid, &cpus);
    if (!tid) {
        if (s.pmi_fd >= 0) close(s.pmi_fd);
        pmi_rank_failed(d, r->job, rank);
        reply_rank(d, r, rank, 0, ENOMEM, "out of memory", NULL);
    } else {
        if (s.pmi_fd >= 0) pmi_rank_started(d, r->job, rank, s.pmi_fd);
        reply_rank(d, r, rank, tid, 0, NULL, bound ? cpulist : "");
    }
out:
    cgroup_hold(d->cgroups, r->job, -1); /* no longer queued (the task holds its own) */
    for (size_t i = 0; i < n; i++) free(renv[i]);
}

static struct spawnq *queue(struct psid *d)
{
    if (!d->spawnq) d->spawnq = calloc(1, sizeof *d->spawnq);
    return d->spawnq;
}

/* The tasks of uid queued here, not yet started. */
static size_t queued_of_uid(const struct spawnq *q, uint32_t uid)
{
    size_t n = 0;
    for (const struct spawn_req *r = q ? q->head : NULL; r; r = r->link)
        if (r->uid == uid) n += r->nranks - r->next;
    return n;
}

/* The ranks of job (other: of every other job) queued here, not yet started. */
static size_t queued_of_job(const struct spawnq *q, uint64_t job, bool other)
{
    size_t n = 0;
    for (const struct spawn_req *r = q ? q->head : NULL; r; r = r->link)
        if ((r->job == job) != other) n += r->nranks - r->next;
    return n;
}

/* --exclusive, checked where the tasks would run (the home's placement only sees task
 * counts): a job that holds this node alone keeps every other job off it while any of its
 * tasks is here or queued; a job that asks for it alone gets it only when no other job's
 * task is. 0, or -1 with why. */
static int exclusive_conflict(struct psid *d, const struct spawnq *q, const struct spawn_req *r,
                              char *why, size_t whylen)
{
    uint64_t h = d->excl_job;
    if (h && h != r->job && !tasks_of_job(d, h, false) && !queued_of_job(q, h, false))
        h = d->excl_job = 0; /* its tasks are gone */
    if (h && h != r->job) {
        snprintf(why, whylen, "node %u (%s) runs job %u:%d exclusively", d->self->id, d->self->name,
                 PSTID_NODE(h), PSTID_PID(h));
        return -1;
    }
    if (!r->exclusive) return 0;
    size_t others = tasks_of_job(d, r->job, true) + queued_of_job(q, r->job, true);
    if (others) {
        snprintf(why, whylen, "node %u (%s) runs %zu tasks of other jobs (--exclusive)",
                 d->self->id, d->self->name, others);
        return -1;
    }
    d->excl_job = r->job;
    return 0;
}

static void run_batch(void *ctx);

static void schedule(struct psid *d)
{
    struct spawnq *q = d->spawnq;
    if (q && q->head && !q->timer) q->timer = loop_timer(d->loop, loop_now(), run_batch, d);
}

/* Start queued ranks for SPAWN_BATCH_NS (at least one), then let the loop run. */
static void run_batch(void *ctx)
{
    struct psid *d = ctx;
    struct spawnq *q = d->spawnq;
    q->timer = 0;
    if (!q->head) return; /* dropped meanwhile (spawnq_drop_*) */
    /* the forks wait for the execs: acknowledge what came first, or the peers' tail-loss
     * probes fire meanwhile (psstat rdp showed 2 retransmissions per 3-node job) */
    if (d->rdp) rdp_flush(d->rdp);
    uint64_t end = loop_now() + SPAWN_BATCH_NS;
    do {
        struct spawn_req *r = q->head;
        uint32_t local = (uint32_t)r->next;
        start_rank(d, r, r->ranks[r->next++], local);
        if (r->next == r->nranks) {
            q->head = r->link;
            if (!q->head) q->tail = NULL;
            req_free(r);
        }
    } while (q->head && loop_now() < end);
    schedule(d);
}

/* Decode a PSM_D_SPAWN into r: 0, or -1 if it is malformed or memory ran out; r->ranks
 * then holds what could be read of its ranks (NULL if nothing), to be answered EINVAL. */
static int decode(const struct psmsg *m, uint32_t from, struct spawn_req *r)
{
    struct psmsg_field f;
    size_t pos = 0;
    int bad = psmsg_get_u32(&m->body, PSF_REQ, &r->req) < 0 ||
              psmsg_get_u64(&m->body, PSF_JOB, &r->job) < 0 ||
              psmsg_get_u32(&m->body, PSF_UID, &r->uid) < 0 ||
              psmsg_get_u32(&m->body, PSF_GID, &r->gid) < 0 ||
              psmsg_get_u32(&m->body, PSF_SIZE, &r->size) < 0;
    r->home = from;
    r->input = PSI_NO_RANK;
    r->umask = 022;
    psmsg_get_u32(&m->body, PSF_INPUT, &r->input);
    psmsg_get_u32(&m->body, PSF_UMASK, &r->umask);
    psmsg_get_u32(&m->body, PSF_EXCLUSIVE, &r->exclusive);
    if (psmsg_get_str(&m->body, PSF_JOB_NAME, r->name, sizeof r->name) < 0) r->name[0] = 0;
    if (psmsg_get_str(&m->body, PSF_CWD, r->cwd, sizeof r->cwd) < 0) r->cwd[0] = 0;
    psmsg_get_u32(&m->body, PSF_CPUS_PER_TASK, &r->cpt);
    psmsg_get_u32(&m->body, PSF_CPU_BIND, &r->bind);
    psmsg_get_u32(&m->body, PSF_OVERBOOK, &r->overbook);
    psmsg_get_u64(&m->body, PSF_MEM, &r->mem);
    psmsg_get_u64(&m->body, PSF_MEM_PER_CPU, &r->mem_per_cpu);
    if (psmsg_find(&m->body, PSF_CPU_MAP, &f) && !(r->map = field_strdup(&f))) bad = 1;
    if (psmsg_find(&m->body, PSF_OUT_PATTERN, &f) && !(r->out_pat = field_strdup(&f))) bad = 1;
    if (psmsg_find(&m->body, PSF_ERR_PATTERN, &f) && !(r->err_pat = field_strdup(&f))) bad = 1;
    psmsg_get_u32(&m->body, PSF_OPEN_APPEND, &r->append);
    psmsg_get_u32(&m->body, PSF_NODE_INDEX, &r->nodeidx);
    psmsg_get_u32(&m->body, PSF_ARG0_PATTERN, &r->arg0_pat);
    if (r->arg0_pat > 1) bad = 1;
    uint32_t mode = r->bind & PSBIND_MODE_MASK;
    if (r->cpt > PSCPU_MAX || mode > PSBIND_MASK_CPU || (r->bind & ~0x1ffu) ||
        ((mode == PSBIND_MAP_CPU || mode == PSBIND_MASK_CPU) &&
         (!r->map || pscpu_map_check(r->map, mode == PSBIND_MASK_CPU, NULL, NULL, 0) < 0)))
        bad = 1;
    if (psmsg_find(&m->body, PSF_CRED, &f) && f.len <= sizeof r->cred) { /* the child checks it */
        memcpy(r->cred, f.val, f.len);
        r->credlen = f.len;
    }
    size_t nranks = 0;
    while (psmsg_next(&m->body, &pos, &f)) {
        r->nargv += f.tag == PSF_ARG;
        r->nenv += f.tag == PSF_ENV;
        nranks += f.tag == PSF_RANK;
    }
    r->argv = calloc(r->nargv + 1, sizeof *r->argv);
    r->envp = calloc(r->nenv + 1, sizeof *r->envp);
    r->ranks = calloc(nranks ? nranks : 1, sizeof *r->ranks);
    if (!r->argv || !r->envp || !r->ranks) return -1;
    size_t ia = 0, ie = 0;
    for (pos = 0; psmsg_next(&m->body, &pos, &f);) {
        if (f.tag == PSF_ARG && !(r->argv[ia++] = field_strdup(&f))) bad = 1;
        if (f.tag == PSF_ENV && !(r->envp[ie++] = field_strdup(&f))) bad = 1;
        if (f.tag == PSF_RANK && psmsg_field_u32(&f, &r->ranks[r->nranks]) == 0) r->nranks++;
    }
    r->nlocal = r->nranks;
    return bad || !r->nargv ? -1 : 0;
}

void spawnq_request(struct psid *d, uint32_t from, const struct psmsg *m)
{
    struct spawn_req *r = calloc(1, sizeof *r);
    int bad = r ? decode(m, from, r) : -1;
    if (bad && (!r || !r->ranks)) {
        log_warn("spawn request from node %u dropped: %s", from, r ? "malformed" : "out of memory");
        req_free(r);
        return;
    }
    /* permission and the uid's limit, checked here where the tasks would run */
    const char *deny = NULL;
    char why[200];
    int err = 0;
    struct spawnq *q = queue(d);
    if (bad || !q) {
        bool oom = !q || !r->argv || !r->envp;
        err = oom ? ENOMEM : EINVAL;
        deny = oom ? "out of memory" : "malformed spawn request";
    } else if (!d->priv_root && r->uid != d->own_uid) {
        err = EPERM;
        deny = "this psid does not run as root and may only start its own user's tasks";
    } else if (exclusive_conflict(d, q, r, why, sizeof why) < 0) {
        err = EBUSY;
        deny = why;
    }
    size_t room = 0;
    if (!deny && r->uid != 0) {
        size_t have = tasks_of_uid(d, r->uid) + queued_of_uid(q, r->uid);
        room = have < d->conf.max_tasks_uid ? d->conf.max_tasks_uid - have : 0;
        snprintf(why, sizeof why,
                 "user %u has %zu tasks on node %u (%s), limit %u (psid.max_tasks_per_uid)", r->uid,
                 have, d->self->id, d->self->name, d->conf.max_tasks_uid);
        if (room < r->nranks)
            log_notice("job %u:%d: %zu of its ranks over the task limit of uid %u on this node",
                       PSTID_NODE(r->job), PSTID_PID(r->job), r->nranks - room, r->uid);
    } else if (!deny) {
        room = r->nranks;
    }
    for (size_t i = room; i < r->nranks; i++)
        reply_rank(d, r, r->ranks[i], 0, deny ? err : EAGAIN, deny ? deny : why, NULL);
    if (deny || room == 0) {
        req_free(r);
        return;
    }
    r->nranks = room < r->nranks ? room : r->nranks;
    r->id = ++q->next_id;
    if (pmi_job_spawn(d, from, m, r->job, r->uid, r->size, (uint32_t)r->nranks) < 0)
        log_warn("job %u:%d: out of memory for its PMI: its ranks start without",
                 PSTID_NODE(r->job), PSTID_PID(r->job));
    cgroup_hold(d->cgroups, r->job, (long)r->nranks);
    if (r->mem || r->mem_per_cpu) { /* --mem: the job's memory.max here */
        uint64_t cpus = (uint64_t)r->nlocal * (r->cpt ? r->cpt : 1);
        uint64_t lim = r->mem                               ? r->mem
                       : r->mem_per_cpu > UINT64_MAX / cpus ? UINT64_MAX
                                                            : r->mem_per_cpu * cpus;
        if (cgroup_set_mem(d->cgroups, r->job, lim, why, sizeof why) < 0) {
            for (size_t i = 0; i < r->nranks; i++) {
                pmi_rank_failed(d, r->job, r->ranks[i]);
                reply_rank(d, r, r->ranks[i], 0, EOPNOTSUPP, why, NULL);
            }
            cgroup_hold(d->cgroups, r->job, -(long)r->nranks);
            req_free(r);
            return;
        }
    }
    if (q->tail)
        q->tail->link = r;
    else
        q->head = r;
    q->tail = r;
    schedule(d);
}

/* Drop the queued ranks of requests that match. */
static void drop(struct psid *d, bool (*match)(const struct spawn_req *, const void *),
                 const void *arg)
{
    struct spawnq *q = d->spawnq;
    if (!q) return;
    struct spawn_req **pp = &q->head, *last = NULL;
    while (*pp) {
        struct spawn_req *r = *pp;
        if (match(r, arg)) {
            *pp = r->link;
            cgroup_hold(d->cgroups, r->job, -(long)(r->nranks - r->next));
            req_free(r);
        } else {
            last = r;
            pp = &r->link;
        }
    }
    q->tail = last;
}

struct job_of {
    uint64_t job;
    uint32_t uid;
};

static bool is_job(const struct spawn_req *r, const void *arg)
{
    const struct job_of *j = arg;
    return r->job == j->job && r->uid == j->uid;
}

static bool from_home(const struct spawn_req *r, const void *arg)
{
    return r->home == *(const uint32_t *)arg;
}

void spawnq_drop_job(struct psid *d, uint64_t job, uint32_t uid)
{
    struct job_of j = {job, uid};
    drop(d, is_job, &j);
}

void spawnq_drop_home(struct psid *d, uint32_t node)
{
    drop(d, from_home, &node);
}

void spawnq_free(struct psid *d)
{
    struct spawnq *q = d->spawnq;
    if (!q) return;
    while (q->head) {
        struct spawn_req *r = q->head;
        q->head = r->link;
        req_free(r);
    }
    if (q->timer) loop_timer_cancel(d->loop, q->timer);
    free(q);
    d->spawnq = NULL;
}
