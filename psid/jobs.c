/*
 * jobs.c - the home side of a job: the node whose client (psrun) asked for it.
 *
 * PSM_SPAWN from a client: the partition (given nodes, else every node that is up) is
 * checked, the ranks are placed (placement.c, counting placements still in flight), the
 * client gets PSM_SPAWN_REPLY, and each chosen node gets one PSM_D_SPAWN with its ranks and
 * the spawn credential this node's privileged child made for it (privsep.h: the child vouches
 * for the user after checking the client's connection itself; without that, no node starts
 * anything).
 * What the nodes report back (ranks started or failed, output, input written, exits) goes
 * to the client; the client's acknowledgements and input go to the ranks' nodes. When the
 * client goes away, every node with ranks of the job is told to end them; when a node is
 * lost (down, not merely unreachable: membership.c), its unfinished ranks are reported to the
 * client as lost, and whatever that node still sends about them is ignored. An MPI job's
 * spawn messages also carry its PMI plan (pmihome.c), and its ranks' PMI events go to the
 * client (PSM_PMI_EVENT).
 */
#include "daemon.h"
#include "module.h"
#include "log.h"
#include "placement.h"
#include "pmi.h"
#include "../logger/outfile.h"
#include "bcastwire.h"
#include "bebytes.h"
#include "psmsg.h"
#include "treewire.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum rank_state { R_PENDING, R_RUNNING, R_DONE };

struct rank_info {
    uint32_t node;
    uint64_t tid;
    uint8_t state;
    uint8_t eof; /* its streams that have ended here: bit 0 stdout, bit 1 stderr */
    /* its end, come up the launch tree before its output's end (jobs_tree_exits): the
     * PSF_EXIT record's fields, taken when both streams have ended */
    uint8_t *parked;
    uint32_t parked_len;
};

/* A job's usage so far, from its ranks' ends (copy_usage). */
struct job_tot {
    uint64_t user_us, sys_us;           /* the nodes' cgroups (cpu.stat) */
    uint64_t rank_user_us, rank_sys_us; /* ranks on nodes without cgroup figures */
    uint64_t maxrss;                    /* the largest rank's, or a node's memory.peak */
    uint64_t rbytes, wbytes;            /* the ranks' rchar, wchar */
    uint64_t rbytes_cg, wbytes_cg;      /* the nodes' io.stat */
    uint32_t status;                    /* the first failed rank's wait status */
};

/* An ended job in the done ring (psstat jobs --done). */
struct done_rec {
    uint64_t job, start_s, end_s;
    uint32_t uid, np;
    char name[64];
    struct job_tot tot;
};

/* The ring: the last psid.done_jobs records, the oldest overwritten. */
struct doneq {
    struct done_rec *v;
    size_t cap, n, next; /* next: where the next record goes */
};

struct job {
    struct psid *d;
    char name[64];     /* -J */
    uint64_t start_ns; /* CLOCK_REALTIME at the spawn */
    struct job_tot tot;
    uint64_t id;  /* PSTID(home node, a number never reused: new_job_id) */
    uint32_t uid; /* its owner: the client's, from SO_PEERCRED */
    struct client *client;
    uint32_t cid; /* the client's SPAWN request id */
    uint32_t np, req;
    uint32_t cpt; /* the CPUs each rank holds in placement (-c): what inflight counts */
    struct rank_info *ranks;
    /* input the client sent and the ranks acknowledged: the window (PSI_IO_WINDOW) is
     * enforced here, not only trusted to psrun. in_racked: per rank, when every rank takes
     * input (PSI_ALL_RANKS), the way psrun counts it (logger/input.c) */
    uint64_t in_sent, in_acked, *in_racked;
    /* a held spawn (PSF_HOLD): the request's body and its owner's gid, fanned out on the
     * client's PSM_SPAWN_GO with credentials made then; NULL once sent */
    uint8_t *held;
    size_t held_len;
    uint16_t held_type;
    uint32_t gid;
    struct pmi_plan held_plan; /* and its PMI plan (pmihome.c) */
    /* the launch tree (spawntree.c), if the job went down one: its width (0: sent to each
     * node), place -> node (place 0 the home), node (configured index) -> place or -1 */
    uint32_t tree_k;
    uint32_t *tree_order;
    size_t tree_n;
    int32_t *tree_pos;
    /* the home's messages for it with other nodes: spawns sent, start answers and exits
     * received; and those of its own ranks (to and from itself, no network) */
    uint32_t n_spawn, n_start, n_exit, n_self;
    bool tree_failed; /* ranks failed for a lost subtree: some may run all the same */
    struct job *next;
};

static uint64_t realtime_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

struct job *jobs_find(struct psid *d, uint64_t id)
{
    for (struct job *j = d->jobs; j; j = j->next)
        if (j->id == id) return j;
    return NULL;
}

static struct job *job_of_client(struct psid *d, const struct client *c)
{
    for (struct job *j = d->jobs; j; j = j->next)
        if (j->client == c) return j;
    return NULL;
}

/* A job id is the home node and a number of its own, never a pid: the numbers count up
 * from the node's incarnation in milliseconds (below 2^31, so that NODE:ID reads like a
 * task id), so neither a recycled pid nor a restarted psid gives a living job's id again. */
uint64_t jobs_new_id(struct psid *d)
{
    if (!d->next_job) d->next_job = (uint32_t)((d->incarnation / 1000000) % 0x7f000000u) + 1;
    uint64_t id;
    do {
        id = PSTID(d->self->id, d->next_job);
        d->next_job = d->next_job >= 0x7ffffffeu ? 1 : d->next_job + 1;
    } while (jobs_find(d, id));
    return id;
}

uint32_t jobs_client_ranks(struct psid *d, const struct client *c)
{
    struct job *j = job_of_client(d, c);
    return j ? j->np : 0;
}

bool jobs_client_held(struct psid *d, const struct client *c, uint64_t job)
{
    struct job *j = job_of_client(d, c);
    return j && j->id == job && j->held;
}

bool jobs_client_busy(struct psid *d, const struct client *c)
{
    return job_of_client(d, c) != NULL;
}

static void job_free(struct job *j)
{
    for (struct job **pp = &j->d->jobs; *pp; pp = &(*pp)->next)
        if (*pp == j) {
            *pp = j->next;
            break;
        }
    for (uint32_t r = 0; r < j->np; r++) free(j->ranks[r].parked);
    free(j->ranks);
    free(j->in_racked);
    free(j->held);
    pmi_plan_free(&j->held_plan);
    if (j->n_spawn || j->n_self) {
        char how[48] = "flat";
        if (j->tree_k) snprintf(how, sizeof how, "launch tree of width %u", j->tree_k);
        log_info("job %u:%d: home messages: %u spawn sent, %u start answers received, %u exits "
                 "received (with other nodes; %u more with itself for its own ranks; %s)",
                 PSTID_NODE(j->id), PSTID_PID(j->id), j->n_spawn, j->n_start, j->n_exit, j->n_self,
                 how);
    }
    free(j->tree_order);
    free(j->tree_pos);
    free(j);
}

/* fn for each node with ranks of the job, once each, in the order of their first ranks
 * (one pass with a mark per configured node: a million ranks cost a million steps) */
static void jobs_foreach_node(struct job *j, void (*fn)(struct psid *, uint32_t, void *), void *arg)
{
    struct psid *d = j->d;
    bool *seen = calloc(d->conf.nnodes, sizeof *seen);
    for (uint32_t r = 0; r < j->np; r++) {
        struct psid_node *pn = psid_node(d, j->ranks[r].node);
        size_t k = pn ? (size_t)(pn - d->nodes) : 0;
        if (pn && seen) {
            if (seen[k]) continue;
            seen[k] = true;
        } else { /* out of memory: the quadratic way */
            bool dup = false;
            for (uint32_t q = 0; q < r && !dup; q++) dup = j->ranks[q].node == j->ranks[r].node;
            if (dup) continue;
        }
        fn(d, j->ranks[r].node, arg);
    }
    free(seen);
}

static struct place_node place_node_of(const struct psid_node *pn)
{
    return (struct place_node){pn->conf->id, pn->cpus, pn->used + pn->inflight, pn->load_milli};
}

/* The partition: nodes named in the request (each must exist and be up), else all up. */
static int partition(struct psid *d, struct client *c, const struct psmsg *m,
                     struct place_node *out, size_t *n)
{
    size_t pos = 0;
    struct psmsg_field f;
    bool given = false;
    *n = 0;
    while (psmsg_next(&m->body, &pos, &f)) {
        uint32_t id;
        if (f.tag != PSF_NODE_ID || psmsg_field_u32(&f, &id) < 0) continue;
        given = true;
        struct psid_node *pn = psid_node(d, id);
        char text[160];
        if (!pn) {
            snprintf(text, sizeof text, "node %u is not in the cluster", id);
            client_error(c, m->id, EINVAL, text);
            return -1;
        }
        if (pn->state != PSNODE_UP) { /* an unreachable node takes no new work */
            snprintf(text, sizeof text, "node %u (%s) is %s", id, pn->conf->name,
                     pn->state == PSNODE_UNREACHABLE ? "unreachable" : "down");
            client_error(c, m->id, EHOSTDOWN, text);
            return -1;
        }
        bool dup = false;
        for (size_t i = 0; i < *n && !dup; i++) dup = out[i].id == id;
        if (dup) continue;
        out[(*n)++] = place_node_of(pn);
    }
    if (!given)
        for (size_t i = 0; i < d->conf.nnodes; i++) {
            struct psid_node *pn = &d->nodes[i];
            if (pn->state == PSNODE_UP) out[(*n)++] = place_node_of(pn);
        }
    return 0;
}

struct fanout {
    struct job *j;
    const struct psmsg *req;
    uint32_t uid, gid;
    const struct psconf *conf;
    uint8_t (*creds)[SPAWNCRED_LEN]; /* parallel to conf->nodes */
    const struct pmi_plan *pmi;
    uint32_t nodeidx; /* the next node's index among the job's (%n of output files) */
};

/* The argv, environment, cwd, umask and input rank a PSM_D_SPAWN carries over from the
 * client's request (send_spawn copies exactly these). */
static bool copied_to_nodes(uint16_t tag)
{
    return tag == PSF_ARG || tag == PSF_ENV || tag == PSF_CWD || tag == PSF_UMASK ||
           tag == PSF_INPUT || tag == PSF_EXCLUSIVE || tag == PSF_JOB_NAME ||
           tag == PSF_CPUS_PER_TASK || tag == PSF_CPU_BIND || tag == PSF_CPU_MAP ||
           tag == PSF_MEM || tag == PSF_MEM_PER_CPU || tag == PSF_OVERBOOK ||
           tag == PSF_OUT_PATTERN || tag == PSF_ERR_PATTERN || tag == PSF_OPEN_APPEND ||
           tag == PSF_ARG0_PATTERN;
}

/* A job of a user (not root) that would place more ranks on one node than the user may
 * have tasks there fails at once, not rank by rank on that node: -1 with why. */
static int over_task_limit(const struct psid *d, uint32_t uid, const uint32_t *where, uint32_t np,
                           const struct place_node *nodes, size_t n, char *why, size_t whylen)
{
    if (uid == 0) return 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t k = 0;
        for (uint32_t r = 0; r < np; r++) k += where[r] == nodes[i].id;
        if (k <= d->conf.max_tasks_uid) continue;
        const struct psconf_node *cn = psconf_node_by_id(&d->conf, nodes[i].id);
        snprintf(why, whylen,
                 "%u ranks on node %u (%s) exceed the limit of %u tasks per user and node "
                 "(psid.max_tasks_per_uid)",
                 k, nodes[i].id, cn ? cn->name : "?", d->conf.max_tasks_uid);
        return -1;
    }
    return 0;
}

/* The size of the largest PSM_D_SPAWN of the job (the node with the most ranks): the
 * fields send_spawn writes, the copied ones, and a PSF_RANK per rank. */
static size_t spawn_size(const struct psmsg *req, const uint32_t *where, uint32_t np,
                         const struct place_node *nodes, size_t n)
{
    size_t copied = 0, pos = 0, most = 0;
    struct psmsg_field f;
    while (psmsg_next(&req->body, &pos, &f))
        if (copied_to_nodes(f.tag)) copied += PSMSG_FHDR + f.len;
    for (size_t i = 0; i < n; i++) {
        size_t k = 0;
        for (uint32_t r = 0; r < np; r++) k += where[r] == nodes[i].id;
        if (k > most) most = k;
    }
    /* REQ, UID, GID, SIZE: u32; JOB: u64; CRED; and what the node's frame to its privileged
     * child adds to what it copies: the rank's own variables (RANK_ENV_MAX), so that a
     * spawn the home accepts is never one the node cannot start */
    return PSMSG_HDR + 4 * (PSMSG_FHDR + 4) + (PSMSG_FHDR + 8) + (PSMSG_FHDR + SPAWNCRED_LEN) +
           copied + most * (PSMSG_FHDR + 4) + RANK_ENV_MAX;
}

/* The digest of what the job runs (spawncred.h), from the client's request as the nodes'
 * spawn queues will read it: the arguments, the environment, the directory (none if it is
 * not a string they take) and the umask (022 if none). */
static void job_digest(const struct psmsg *m, uint8_t out[32])
{
    struct spawncred_hash h;
    struct psmsg_field f;
    size_t pos = 0;
    spawncred_hash_init(&h);
    while (psmsg_next(&m->body, &pos, &f))
        if (f.tag == PSF_ARG) spawncred_hash_arg(&h, f.val, f.len);
    for (pos = 0; psmsg_next(&m->body, &pos, &f);)
        if (f.tag == PSF_ENV) spawncred_hash_env(&h, f.val, f.len);
    /* --output-on-node: the files the nodes open, as their spawn queues read them */
    char opat[1024], err[1024], name[64];
    uint32_t append = 0;
    bool has_out = psmsg_get_str(&m->body, PSF_OUT_PATTERN, opat, sizeof opat) == 0,
         has_err = psmsg_get_str(&m->body, PSF_ERR_PATTERN, err, sizeof err) == 0;
    if (has_out || has_err) {
        if (psmsg_get_str(&m->body, PSF_JOB_NAME, name, sizeof name) < 0) name[0] = 0;
        psmsg_get_u32(&m->body, PSF_OPEN_APPEND, &append);
        spawncred_hash_out(&h, has_out ? opat : NULL, has_err ? err : NULL, append, name);
    }
    uint32_t arg0_pat = 0; /* psrun --bcast: the program is each node's copy */
    if (psmsg_get_u32(&m->body, PSF_ARG0_PATTERN, &arg0_pat) == 0 && arg0_pat == 1)
        spawncred_hash_arg0_pattern(&h);
    char cwd[4096];
    uint32_t umask = 022;
    if (psmsg_get_str(&m->body, PSF_CWD, cwd, sizeof cwd) < 0) cwd[0] = 0;
    psmsg_get_u32(&m->body, PSF_UMASK, &umask);
    spawncred_hash_final(&h, cwd, umask, out);
}

/* The job's spawn credentials, one per node with ranks (creds, parallel to the configured
 * nodes), from this node's privileged child: 0, or -1 with the client told why. */
static int vouch(struct psid *d, struct client *c, const struct psmsg *m, uint64_t job,
                 const uint32_t *where, uint32_t np, uint8_t (*creds)[SPAWNCRED_LEN])
{
    size_t nn = d->conf.nnodes, n = 0;
    uint32_t *count = calloc(nn, sizeof *count), *nodes = calloc(nn, sizeof *nodes),
             *ranks = calloc(nn, sizeof *ranks);
    size_t *slot = calloc(nn, sizeof *slot);
    int rc = -1;
    char why[400];
    if (!count || !nodes || !ranks || !slot) {
        client_error(c, m->id, ENOMEM, "out of memory");
        goto out;
    }
    for (uint32_t r = 0; r < np; r++) {
        const struct psconf_node *cn = psconf_node_by_id(&d->conf, where[r]);
        if (cn) count[cn - d->conf.nodes]++;
    }
    for (size_t i = 0; i < nn; i++)
        if (count[i]) {
            slot[n] = i;
            nodes[n] = d->conf.nodes[i].id;
            ranks[n++] = count[i];
        }
    struct priv_cred_req q = {.job = job,
                              .uid = client_uid(c),
                              .gid = client_gid(c),
                              .nodes = nodes,
                              .nranks = ranks,
                              .n = n};
    job_digest(m, q.digest);
    uint8_t(*got)[SPAWNCRED_LEN] = calloc(n ? n : 1, SPAWNCRED_LEN);
    if (!got) {
        client_error(c, m->id, ENOMEM, "out of memory");
        goto out;
    }
    if (priv_cred(d, client_fd(c), &q, got, why, sizeof why) < 0) {
        int e = errno ? errno : EPERM;
        char text[460];
        snprintf(text, sizeof text, "psid's privileged child does not vouch for the job: %s", why);
        client_error(c, m->id, e, text);
    } else {
        for (size_t i = 0; i < n; i++) memcpy(creds[slot[i]], got[i], SPAWNCRED_LEN);
        rc = 0;
    }
    free(got);
out:
    free(count);
    free(nodes);
    free(ranks);
    free(slot);
    return rc;
}

static void rank_done(struct job *j, uint32_t r);

static void send_spawn(struct psid *d, uint32_t node, void *arg)
{
    struct fanout *fo = arg;
    struct job *j = fo->j;
    struct psmsg_buf b = {0};
    psmsg_begin(&b, PSM_D_SPAWN, 0);
    psmsg_put_u32(&b, PSF_REQ, j->req);
    psmsg_put_u64(&b, PSF_JOB, j->id);
    psmsg_put_u32(&b, PSF_UID, fo->uid);
    psmsg_put_u32(&b, PSF_GID, fo->gid);
    psmsg_put_u32(&b, PSF_SIZE, j->np);
    /* argv, environment, cwd, umask and input rank as the client gave them */
    size_t pos = 0;
    struct psmsg_field f;
    while (psmsg_next(&fo->req->body, &pos, &f))
        if (copied_to_nodes(f.tag)) psmsg_put_bytes(&b, f.tag, f.val, f.len);
    for (uint32_t r = 0; r < j->np; r++)
        if (j->ranks[r].node == node) psmsg_put_u32(&b, PSF_RANK, r);
    psmsg_put_u32(&b, PSF_NODE_INDEX, fo->nodeidx++);
    const struct psconf_node *cn = psconf_node_by_id(fo->conf, node);
    if (cn) psmsg_put_bytes(&b, PSF_CRED, fo->creds[cn - fo->conf->nodes], SPAWNCRED_LEN);
    pmi_plan_put(fo->pmi, node, &b);
    if (psid_send(d, node, &b) < 0) log_warn("spawn on node %u: %s", node, strerror(errno));
    if (node == d->self->id)
        j->n_self++;
    else
        j->n_spawn++;
    psmsg_buf_free(&b);
}

static void rank_failed(struct job *j, uint32_t r, uint32_t node, uint32_t err, const char *text);

/* The place of a node in the job's launch tree, -1 if none. */
static int32_t tree_place(const struct job *j, uint32_t node)
{
    const struct psconf_node *cn = psconf_node_by_id(&j->d->conf, node);
    return cn && j->tree_pos ? j->tree_pos[cn - j->d->conf.nodes] : -1;
}

/* The ranks still pending in the subtree of place p (without p's own when below) fail. */
static void tree_fail_under(struct job *j, uint32_t p, bool self_too, const char *text)
{
    for (uint32_t r = 0; r < j->np; r++) {
        int32_t q = tree_place(j, j->ranks[r].node);
        if (j->ranks[r].state != R_PENDING || q <= 0 || (!self_too && (uint32_t)q == p) ||
            !tree_under((uint32_t)q, p, j->tree_k))
            continue;
        rank_failed(j, r, j->ranks[r].node, EHOSTDOWN, text);
        j->tree_failed = true;
    }
}

static void tree_drop(struct job *j)
{
    free(j->tree_order);
    free(j->tree_pos);
    j->tree_order = NULL;
    j->tree_pos = NULL;
    j->tree_k = 0;
    j->tree_n = 0;
}

/* The launch tree (spawntree.c): a job on more than psid.tree_width nodes besides the home
 * is sent to the home's at most k children only, each with its subtree's parts; 0, or -1
 * when it is flat (or its messages would not fit): then send_spawn goes to each node. */
static int tree_fan_out(struct psid *d, struct job *j, struct fanout *fo)
{
    uint32_t k = d->conf.tree_width ? d->conf.tree_width : 1, self = d->self->id;
    size_t nn = d->conf.nnodes;
    j->tree_pos = malloc((nn ? nn : 1) * sizeof *j->tree_pos);
    j->tree_order = calloc(nn + 1, sizeof *j->tree_order);
    uint32_t *nidx = calloc(nn + 1, sizeof *nidx), *cnt = calloc(nn + 2, sizeof *cnt),
             *rk = calloc(j->np, sizeof *rk), home_idx = UINT32_MAX, idx = 0;
    struct psmsg_buf *bufs = NULL;
    size_t nkids = 0;
    int rc = -1;
    if (!j->tree_pos || !j->tree_order || !nidx || !cnt || !rk) goto out;
    for (size_t i = 0; i < nn; i++) j->tree_pos[i] = -1;
    j->tree_order[0] = self;
    j->tree_n = 1;
    for (uint32_t r = 0; r < j->np; r++) { /* places in the order of first ranks */
        const struct psconf_node *cn = psconf_node_by_id(&d->conf, j->ranks[r].node);
        if (!cn || j->tree_pos[cn - d->conf.nodes] >= 0) continue;
        if (cn->id == self) {
            j->tree_pos[cn - d->conf.nodes] = 0;
            home_idx = idx++;
            continue;
        }
        nidx[j->tree_n] = idx++;
        j->tree_pos[cn - d->conf.nodes] = (int32_t)j->tree_n;
        j->tree_order[j->tree_n++] = cn->id;
    }
    if (j->tree_n - 1 <= k) goto out; /* flat anyway */
    j->tree_k = k;
    /* the ranks by place (a counting sort), rank order kept within each */
    for (uint32_t r = 0; r < j->np; r++) cnt[tree_place(j, j->ranks[r].node) + 1]++;
    for (size_t p = 1; p <= j->tree_n; p++) cnt[p] += cnt[p - 1];
    for (uint32_t r = 0; r < j->np; r++) rk[cnt[tree_place(j, j->ranks[r].node)]++] = r;
    for (size_t p = j->tree_n; p > 0; p--) cnt[p] = cnt[p - 1]; /* cnt[p]: place p's first */
    cnt[0] = 0;
    nkids = j->tree_n - 1 < k ? j->tree_n - 1 : k;
    if (!(bufs = calloc(nkids, sizeof *bufs))) goto out;
    for (size_t c = 1; c <= nkids; c++) {
        struct psmsg_buf *b = &bufs[c - 1];
        psmsg_begin(b, PSM_D_SPAWN_TREE, 0);
        psmsg_put_u32(b, PSF_REQ, j->req);
        psmsg_put_u64(b, PSF_JOB, j->id);
        psmsg_put_u32(b, PSF_UID, fo->uid);
        psmsg_put_u32(b, PSF_GID, fo->gid);
        psmsg_put_u32(b, PSF_SIZE, j->np);
        size_t pos = 0;
        struct psmsg_field f;
        while (psmsg_next(&fo->req->body, &pos, &f))
            if (copied_to_nodes(f.tag)) psmsg_put_bytes(b, f.tag, f.val, f.len);
        pmi_plan_put_common(fo->pmi, b);
        psmsg_put_u32(b, PSF_TREE_WIDTH, k);
        /* the subtree of c, level by level: places lo..hi, then k*lo+1 .. k*hi+k */
        for (uint64_t lo = c, hi = c; lo < j->tree_n; lo = lo * k + 1, hi = hi * k + k)
            for (uint64_t q = lo; q <= hi && q < j->tree_n; q++) {
                uint32_t node = j->tree_order[q];
                psmsg_record_begin(b, PSF_PART);
                psmsg_put_u32(b, PSF_NODE_ID, node);
                psmsg_put_u32(b, PSF_TREE_POS, (uint32_t)q);
                for (uint32_t i = cnt[q]; i < cnt[q + 1]; i++) psmsg_put_u32(b, PSF_RANK, rk[i]);
                psmsg_put_u32(b, PSF_NODE_INDEX, nidx[q]);
                const struct psconf_node *cn = psconf_node_by_id(fo->conf, node);
                if (cn)
                    psmsg_put_bytes(b, PSF_CRED, fo->creds[cn - fo->conf->nodes], SPAWNCRED_LEN);
                pmi_plan_put_node(fo->pmi, node, b);
                psmsg_record_end(b);
            }
        if (b->err) {
            log_warn("job %u:%d: its launch tree's messages do not fit (%zu bytes): sent to "
                     "each node instead",
                     PSTID_NODE(j->id), PSTID_PID(j->id), b->need);
            goto out;
        }
    }
    rc = 0;
    if (home_idx != UINT32_MAX) { /* the home's own ranks, as ever */
        fo->nodeidx = home_idx;
        send_spawn(d, self, fo);
    }
    for (size_t c = 1; c <= nkids; c++) {
        uint32_t node = j->tree_order[c];
        struct psid_node *pn = psid_node(d, node);
        j->n_spawn++;
        if (pn && pn->state == PSNODE_UP && psid_send(d, node, &bufs[c - 1]) == 0) continue;
        char text[200];
        snprintf(text, sizeof text, "node %u (%s) of the launch tree cannot be reached", node,
                 pn ? pn->conf->name : "?");
        tree_fail_under(j, (uint32_t)c, true, text);
    }
    log_info("job %u:%d: launch tree of width %u over %zu nodes: %zu spawns sent",
             PSTID_NODE(j->id), PSTID_PID(j->id), k, j->tree_n, nkids + (home_idx != UINT32_MAX));
out:
    for (size_t c = 0; bufs && c < nkids; c++) psmsg_buf_free(&bufs[c]);
    free(bufs);
    free(nidx);
    free(cnt);
    free(rk);
    if (rc < 0) tree_drop(j);
    return rc;
}

static void fan_out(struct psid *d, struct job *j, struct fanout *fo)
{
    if (tree_fan_out(d, j, fo) < 0) jobs_foreach_node(j, send_spawn, fo);
}

/* Whether the job fits the nodes with nothing else on them: a row of its own (rows: the
 * factor the nodes' CPUs were multiplied by for the matrix, taken off here). */
static bool fits_alone(const struct place_node *nodes, size_t n, uint32_t np,
                       const struct place_opts *po, uint32_t rows)
{
    struct place_node *empty = calloc(n ? n : 1, sizeof *empty);
    uint32_t *where = calloc(np, sizeof *where);
    char why[64];
    bool fits = false;
    if (empty && where) {
        for (size_t i = 0; i < n; i++)
            empty[i] = (struct place_node){.id = nodes[i].id, .cpus = nodes[i].cpus / rows};
        fits = place_job(empty, n, np, po, where, why, sizeof why) == 0;
    }
    free(empty);
    free(where);
    return fits;
}

/* Starts the job of a spawn request, or answers it with an error: SPAWN_DONE; or, with gang
 * scheduling, leaves it unanswered because it fits no row now but would fit one alone
 * (SPAWN_WAIT, why set): jobs_spawn queues it, the queue's retry keeps it. queued: the
 * request is the queue's (its head's turn). */
enum spawn_res { SPAWN_DONE, SPAWN_WAIT };

static enum spawn_res spawn_try(struct psid *d, struct client *c, const struct psmsg *m,
                                bool queued, char *wait_why, size_t wait_whylen)
{
    uint32_t np = 1, ppn = 0, overbook = 0, dist = PSDIST_BLOCK, excl = 0;
    struct place_opts po = {0};
    struct psmsg_field f;
    enum spawn_res res = SPAWN_DONE;
    if (!psmsg_find(&m->body, PSF_ARG, &f) || f.len == 0) {
        client_error(c, m->id, EINVAL, "no program to run");
        return SPAWN_DONE;
    }
    psmsg_get_u32(&m->body, PSF_NP, &np);
    psmsg_get_u32(&m->body, PSF_PPN, &ppn);
    psmsg_get_u32(&m->body, PSF_OVERBOOK, &overbook);
    psmsg_get_u32(&m->body, PSF_DIST, &dist);
    psmsg_get_u32(&m->body, PSF_PLANE, &po.plane);
    psmsg_get_u32(&m->body, PSF_NODES_MIN, &po.nmin);
    psmsg_get_u32(&m->body, PSF_NODES_MAX, &po.nmax);
    psmsg_get_u32(&m->body, PSF_EXCLUSIVE, &excl);
    uint32_t cpt = 1, bind = PSBIND_AUTO;
    uint64_t mem = 0, mem_per_cpu = 0;
    char map[PSCPU_MAP_MAX * 8];
    psmsg_get_u32(&m->body, PSF_CPUS_PER_TASK, &cpt);
    psmsg_get_u32(&m->body, PSF_CPU_BIND, &bind);
    bool has_mem = psmsg_get_u64(&m->body, PSF_MEM, &mem) == 0;
    bool has_mpc = psmsg_get_u64(&m->body, PSF_MEM_PER_CPU, &mem_per_cpu) == 0;
    uint32_t mode = bind & PSBIND_MODE_MASK;
    bool needs_map = mode == PSBIND_MAP_CPU || mode == PSBIND_MASK_CPU;
    bool has_map = psmsg_get_str(&m->body, PSF_CPU_MAP, map, sizeof map) == 0;
    if (cpt == 0 || cpt > PSCPU_MAX || mode > PSBIND_MASK_CPU || (bind & ~0x1ffu) ||
        needs_map != has_map ||
        (needs_map && pscpu_map_check(map, mode == PSBIND_MASK_CPU, NULL, NULL, 0) < 0) ||
        (has_mem && !mem) || (has_mpc && !mem_per_cpu) || (has_mem && has_mpc)) {
        client_error(c, m->id, EINVAL, "bad CPUs per task, CPU binding or memory size");
        return SPAWN_DONE;
    }
    const uint16_t pat_tags[2] = {PSF_OUT_PATTERN, PSF_ERR_PATTERN};
    for (int k = 0; k < 2; k++) {
        char pat[1024], perr[200];
        if (psmsg_find(&m->body, pat_tags[k], &f) && (psmsg_field_str(&f, pat, sizeof pat) < 0 ||
                                                      lg_pat_check(pat, perr, sizeof perr) < 0)) {
            client_error(c, m->id, EINVAL, "bad output file pattern (--output-on-node)");
            return SPAWN_DONE;
        }
    }
    uint32_t arg0_pat = 0;
    if (psmsg_get_u32(&m->body, PSF_ARG0_PATTERN, &arg0_pat) == 0) {
        char arg0[PSBCAST_DEST_MAX], perr[300];
        if (arg0_pat != 1 || !psmsg_find(&m->body, PSF_ARG, &f) ||
            psmsg_field_str(&f, arg0, sizeof arg0) < 0 ||
            bcast_dest_check(arg0, perr, sizeof perr) < 0) {
            client_error(c, m->id, EINVAL, "bad program pattern (psrun --bcast)");
            return SPAWN_DONE;
        }
    }
    po.cpt = cpt;
    if (np == 0 || np > 1000000) {
        client_error(c, m->id, EINVAL, "bad number of ranks");
        return SPAWN_DONE;
    }
    if (dist > PSDIST_PLANE || (dist == PSDIST_PLANE && !po.plane) ||
        (po.nmax && po.nmax < po.nmin) || excl > 1) {
        client_error(c, m->id, EINVAL, "bad distribution, node count or exclusive flag");
        return SPAWN_DONE;
    }
    po.ppn = ppn;
    po.overbook = overbook != 0;
    po.exclusive = excl != 0;
    po.dist = (enum place_dist)dist;
    struct place_node *nodes = calloc(d->conf.nnodes, sizeof *nodes);
    uint32_t *where = calloc(np, sizeof *where);
    struct job *j = calloc(1, sizeof *j);
    struct rank_info *ranks = calloc(np, sizeof *ranks);
    uint8_t(*creds)[SPAWNCRED_LEN] = calloc(d->conf.nnodes, SPAWNCRED_LEN);
    size_t n;
    char why[256];
    struct pmi_plan plan = {0};
    if (!nodes || !where || !j || !ranks || !creds) {
        client_error(c, m->id, ENOMEM, "out of memory");
        goto out;
    }
    if (partition(d, c, m, nodes, &n) < 0) goto out;
    /* gang scheduling: each row of the matrix has the node's CPUs (docs/gang.md); a job
     * that fits no row now but would fit one alone waits in the queue, in order: a new job
     * passes the queue only while the queue's first has waited less than JOBQ_PASS_NS (a
     * job that fits starts at once, but cannot starve a larger one) */
    bool gang = d->conf.gang_quantum_ms != 0;
    if (gang && !queued && d->jobq.head && loop_now() - d->jobq.head->since_ns >= JOBQ_PASS_NS &&
        fits_alone(nodes, n, np, &po, 1)) {
        snprintf(wait_why, wait_whylen,
                 "jobs queued before it wait (the first for over %llu s): it waits behind them",
                 (unsigned long long)(JOBQ_PASS_NS / 1000000000ull));
        res = SPAWN_WAIT;
        goto out;
    }
    if (gang)
        for (size_t i = 0; i < n; i++) nodes[i].cpus *= d->conf.gang_mpl;
    if (place_job(nodes, n, np, &po, where, why, sizeof why) < 0) {
        if (gang) {
            if (fits_alone(nodes, n, np, &po, d->conf.gang_mpl)) {
                snprintf(wait_why, wait_whylen,
                         "gang scheduling: it fits no row of the %u of gang.mpl now",
                         d->conf.gang_mpl);
                res = SPAWN_WAIT;
                goto out;
            }
            size_t l = strlen(why);
            if (l < sizeof why)
                snprintf(why + l, sizeof why - l,
                         "; gang scheduling: it does not fit the nodes even alone");
        }
        client_error(c, m->id, EBUSY, why);
        goto out;
    }
    if (over_task_limit(d, client_uid(c), where, np, nodes, n, why, sizeof why) < 0) {
        client_error(c, m->id, EAGAIN, why);
        goto out;
    }
    if (pmi_plan_make(d, m, where, np, &plan) < 0) {
        client_error(c, m->id, ENOMEM, "out of memory");
        goto out;
    }
    /* the nodes' spawn messages carry more than the request: fail now, not on the way */
    size_t need = spawn_size(m, where, np, nodes, n) + pmi_plan_size(&plan);
    if (need > PSMSG_MAX) {
        snprintf(why, sizeof why, "argument list too long for a spawn (%zu bytes, limit %u)", need,
                 PSMSG_MAX);
        client_error(c, m->id, E2BIG, why);
        goto out;
    }
    uint64_t id = jobs_new_id(d);
    if (vouch(d, c, m, id, where, np, creds) < 0) goto out;
    *j = (struct job){.d = d,
                      .id = id,
                      .uid = client_uid(c),
                      .client = c,
                      .cid = m->id,
                      .np = np,
                      .cpt = po.cpt,
                      .start_ns = realtime_ns(),
                      .req = ++d->next_req,
                      .ranks = ranks,
                      .next = d->jobs};
    d->jobs = j;
    if (psmsg_get_str(&m->body, PSF_JOB_NAME, j->name, sizeof j->name) < 0) j->name[0] = 0;
    uint32_t input = 0;
    if (psmsg_get_u32(&m->body, PSF_INPUT, &input) == 0 && input == PSI_ALL_RANKS)
        j->in_racked = calloc(np, sizeof *j->in_racked); /* NULL: counted in in_acked */
    for (uint32_t r = 0; r < np; r++) {
        ranks[r] = (struct rank_info){.node = where[r], .state = R_PENDING};
        psid_node(d, where[r])->inflight += j->cpt;
    }
    uint32_t hold = 0;
    psmsg_get_u32(&m->body, PSF_HOLD, &hold);
    struct psmsg_buf b = {0};
    psmsg_begin(&b, PSM_SPAWN_REPLY, m->id);
    psmsg_put_u64(&b, PSF_JOB, j->id);
    psmsg_put_u32(&b, PSF_NP, np);
    bool placed = false;
    if (hold) {
        /* the ranks' nodes, for the client's output file names; the request waits */
        uint8_t *pl = (size_t)np * 4 + 256 <= PSMSG_MAX ? malloc((size_t)np * 4) : NULL;
        if (pl) {
            for (uint32_t r = 0; r < np; r++) be_put32(pl + 4 * (size_t)r, where[r]);
            psmsg_put_bytes(&b, PSF_PLACEMENT, pl, (size_t)np * 4);
            placed = true;
        }
        free(pl);
        j->held = malloc(m->body.len ? m->body.len : 1);
        if (j->held) memcpy(j->held, m->body.p, m->body.len);
        j->held_len = m->body.len;
        j->held_type = m->type;
        j->gid = client_gid(c); /* (the credentials of now are a check; GO makes its own) */
    }
    if (hold && (!j->held || !placed)) {
        /* the job cannot be held: it is dropped before anything started */
        bool big = (size_t)np * 4 + 256 > PSMSG_MAX;
        psmsg_buf_free(&b);
        client_error(c, m->id, big ? E2BIG : ENOMEM,
                     big ? "too many ranks to hold the spawn for output files (their nodes do "
                           "not fit one reply)"
                         : "out of memory");
        for (uint32_t r = 0; r < np; r++) rank_done(j, r);
        ranks = NULL; /* the job's now */
        job_free(j);
        j = NULL;
        goto out;
    }
    client_send(c, &b);
    psmsg_buf_free(&b);
    log_info("job %u:%d: %u ranks on %zu candidate nodes%s", PSTID_NODE(j->id), PSTID_PID(j->id),
             np, n, hold ? " (held until its client says go)" : "");
    ranks = NULL;
    if (hold) { /* its PMI plan goes with it, to the fan-out on PSM_SPAWN_GO */
        j->held_plan = plan;
        plan = (struct pmi_plan){0};
        j = NULL;
        goto out;
    }
    struct fanout fo = {j, m, client_uid(c), client_gid(c), &d->conf, creds, &plan, 0};
    j = NULL;
    fan_out(d, d->jobs, &fo);
out:
    pmi_plan_free(&plan);
    free(nodes);
    free(where);
    free(j);
    free(ranks);
    free(creds);
    return res;
}

/* ---- the queue (gang scheduling): spawns that fit no row wait, in order ---- */

static void queue_retry(void *ctx);

static void queue_arm(struct psid *d)
{
    if (d->jobq_timer || !d->jobq.head) return;
    uint64_t q = (uint64_t)d->conf.gang_quantum_ms * 1000000ull;
    if (q < 10000000ull) q = 10000000ull;
    d->jobq_timer = loop_timer(d->loop, loop_now() + q, queue_retry, d);
}

/* Each quantum: the queue's spawns are tried in order until one still fits no row. */
static void queue_retry(void *ctx)
{
    struct psid *d = ctx;
    d->jobq_timer = 0;
    char why[256];
    while (d->jobq.head) {
        struct jobq_entry *e = d->jobq.head;
        struct psmsg m = jobq_msg(e);
        if (spawn_try(d, e->c, &m, true, why, sizeof why) == SPAWN_WAIT) break;
        log_info("a queued spawn of uid %u left the queue after %llu ms", e->uid,
                 (unsigned long long)((loop_now() - e->since_ns) / 1000000ull));
        jobq_del(&d->jobq, e);
    }
    queue_arm(d);
}

void jobs_spawn(struct psid *d, struct client *c, const struct psmsg *m)
{
    if (job_of_client(d, c) || jobq_of_client(&d->jobq, c)) {
        client_error(c, m->id, EBUSY, "this connection already runs a job");
        return;
    }
    char why[256];
    if (spawn_try(d, c, m, false, why, sizeof why) != SPAWN_WAIT) return;
    int place = jobq_add(&d->jobq, c, client_uid(c), m, loop_now());
    if (place < 0) {
        char text[400];
        if (errno == ENOBUFS)
            snprintf(text, sizeof text,
                     "%s, and the queue is full (%u spawns on this node, %u of one user)", why,
                     JOBQ_MAX, JOBQ_PER_UID);
        else if (errno == ENOSPC)
            snprintf(text, sizeof text,
                     "%s, and the queue has no room for its %zu bytes (%zu left of the %u MiB "
                     "of one user, %u MiB on this node)",
                     why, m->body.len, jobq_room(&d->jobq, client_uid(c)), JOBQ_BYTES_PER_UID >> 20,
                     JOBQ_BYTES >> 20);
        else
            snprintf(text, sizeof text, "%s, and no memory to queue it", why);
        client_error(c, m->id, EBUSY, text);
        return;
    }
    log_info("spawn of uid %u queued (place %d): %s", client_uid(c), place, why);
    struct psmsg_buf b = {0};
    psmsg_begin(&b, PSM_SPAWN_QUEUED, m->id);
    psmsg_put_u32(&b, PSF_N, (uint32_t)place);
    psmsg_put_str(&b, PSF_TEXT, why);
    client_send(c, &b);
    psmsg_buf_free(&b);
    queue_arm(d);
}

/* A rank's end: its OOM report, its usage and its node's (PSF_NODE_STATS) go to the client
 * as they came, and into the job's totals for the done ring. */
static void copy_usage(struct job *j, uint32_t rank, uint32_t from, const struct psmsg *m,
                       struct psmsg_buf *b, uint32_t status)
{
    static const uint16_t tags[] = {PSF_OOM,    PSF_ELAPSED_US, PSF_USER_US,    PSF_SYS_US,
                                    PSF_MAXRSS, PSF_READ_BYTES, PSF_WRITE_BYTES};
    uint64_t v[7] = {0};
    (void)rank;
    for (size_t i = 0; i < 7; i++)
        if (psmsg_get_u64(&m->body, tags[i], &v[i]) == 0) psmsg_put_u64(b, tags[i], v[i]);
    struct psmsg_field f;
    bool node = false;
    if (psmsg_find(&m->body, PSF_NODE_STATS, &f)) {
        struct psmsg_view rv = {f.val, f.len};
        uint32_t id = 0;
        if (psmsg_get_u32(&rv, PSF_NODE_ID, &id) == 0 && id == from) {
            psmsg_put_bytes(b, PSF_NODE_STATS, f.val, f.len);
            uint64_t x;
            if (psmsg_get_u64(&rv, PSF_USER_US, &x) == 0) {
                j->tot.user_us += x;
                node = true;
            }
            if (psmsg_get_u64(&rv, PSF_SYS_US, &x) == 0) j->tot.sys_us += x;
            if (psmsg_get_u64(&rv, PSF_MAXRSS, &x) == 0 && x > j->tot.maxrss) j->tot.maxrss = x;
            if (psmsg_get_u64(&rv, PSF_READ_BYTES, &x) == 0) j->tot.rbytes_cg += x;
            if (psmsg_get_u64(&rv, PSF_WRITE_BYTES, &x) == 0) j->tot.wbytes_cg += x;
        }
    }
    if (!node) { /* no cgroup figures there: the rank's own */
        j->tot.rank_user_us += v[2];
        j->tot.rank_sys_us += v[3];
    }
    if (v[4] > j->tot.maxrss) j->tot.maxrss = v[4];
    j->tot.rbytes += v[5];
    j->tot.wbytes += v[6];
    if (status && !j->tot.status) j->tot.status = status;
}

static void to_client(struct job *j, struct psmsg_buf *b)
{
    if (j->client) client_send(j->client, b);
}

/* A placed rank of j on node is no longer in flight (started, failed or lost): its CPUs
 * now count in the node's own report, or nowhere. */
static void inflight_done(struct job *j, uint32_t node)
{
    struct psid_node *pn = psid_node(j->d, node);
    if (pn) pn->inflight = pn->inflight > j->cpt ? pn->inflight - j->cpt : 0;
}

static void rank_done(struct job *j, uint32_t r)
{
    if (j->ranks[r].state == R_PENDING) inflight_done(j, j->ranks[r].node);
    j->ranks[r].state = R_DONE;
    free(j->ranks[r].parked);
    j->ranks[r].parked = NULL;
}

/* A rank started (PSM_RANK to the client). */
static void rank_started(struct job *j, uint32_t r, uint32_t node, uint64_t tid, const char *cpus)
{
    inflight_done(j, node);
    j->ranks[r].tid = tid;
    j->ranks[r].state = R_RUNNING;
    struct psmsg_buf b = {0};
    psmsg_begin(&b, PSM_RANK, j->cid);
    psmsg_put_u32(&b, PSF_RANK, r);
    psmsg_put_u32(&b, PSF_NODE_ID, node);
    psmsg_put_u64(&b, PSF_TID, tid);
    if (cpus) psmsg_put_str(&b, PSF_CPU_LIST, cpus);
    to_client(j, &b);
    psmsg_buf_free(&b);
}

/* A rank failed to start (PSM_RANK with why to the client). */
static void rank_failed(struct job *j, uint32_t r, uint32_t node, uint32_t err, const char *text)
{
    rank_done(j, r);
    struct psmsg_buf b = {0};
    psmsg_begin(&b, PSM_RANK, j->cid);
    psmsg_put_u32(&b, PSF_RANK, r);
    psmsg_put_u32(&b, PSF_NODE_ID, node);
    psmsg_put_u32(&b, PSF_ERRNO, err);
    psmsg_put_str(&b, PSF_TEXT, text);
    to_client(j, &b);
    psmsg_buf_free(&b);
}

/* The job of a message that came up its launch tree from node from, and from's place in
 * the tree (*pf); NULL (dropped, logged as what) if there is no such job in a tree or from
 * is not in it. */
static struct job *tree_sender(struct psid *d, uint32_t from, const struct psmsg *m,
                               const char *what, int32_t *pf)
{
    uint64_t id = 0;
    psmsg_get_u64(&m->body, PSF_JOB, &id);
    struct job *j = jobs_find(d, id);
    *pf = j && j->tree_k ? tree_place(j, from) : -1;
    if (*pf > 0) return j;
    d->tree_dropped++;
    log_warn("launch tree: %s from node %u for job %u:%d dropped: no such job in a launch "
             "tree, or the sender is not in it",
             what, from, PSTID_NODE(id), PSTID_PID(id));
    return NULL;
}

/* Whether one record (rc from its decoder: 1 decoded, -1 not, with *why) is of rank on
 * node in the subtree of place pf; if not, dropped and logged as what. */
static bool tree_record_ok(struct job *j, int rc, uint32_t rank, uint32_t node, int32_t pf,
                           uint32_t from, const char *what, const char *why)
{
    int32_t q = -1;
    if (rc > 0 && (rank >= j->np || j->ranks[rank].node != node || (q = tree_place(j, node)) <= 0 ||
                   !tree_under((uint32_t)q, (uint32_t)pf, j->tree_k))) {
        rc = -1;
        why = "not of the sender's subtree";
    }
    if (rc > 0) return true;
    j->d->tree_dropped++;
    log_warn("launch tree: %s from node %u dropped: %s", what, from, why);
    return false;
}

void jobs_tree_started(struct psid *d, uint32_t from, const struct psmsg *m)
{
    int32_t pf;
    struct job *j = tree_sender(d, from, m, "start answers", &pf);
    if (!j) return;
    j->n_start++;
    size_t pos = 0;
    struct tree_start s;
    const char *why;
    for (int rc; (rc = tree_start_next(&m->body, &pos, &s, &why)) != 0;) {
        if (!tree_record_ok(j, rc, s.rank, s.node, pf, from, "a start answer", why)) continue;
        if (j->ranks[s.rank].state != R_PENDING) continue; /* its output or end came first */
        if (s.ok)
            rank_started(j, s.rank, s.node, s.tid, s.cpus[0] ? s.cpus : NULL);
        else
            rank_failed(j, s.rank, s.node, s.err, s.text);
    }
}

static void release_parked(struct psid *d, struct job *j, uint32_t rank);

/* A message about one rank of a job of this home from the rank's node (relayed: an end
 * that came up the launch tree, counted with its PSM_D_EXITS). */
static void rank_message(struct psid *d, uint32_t from, const struct psmsg *m, bool relayed)
{
    uint64_t id, tid = 0;
    uint32_t rank;
    if (psmsg_get_u64(&m->body, PSF_JOB, &id) < 0 || psmsg_get_u32(&m->body, PSF_RANK, &rank) < 0)
        return;
    struct job *j = jobs_find(d, id);
    if (!j || rank >= j->np || j->ranks[rank].node != from) return; /* stale or forged */
    /* a rank already reported lost (its node went down, then came back): the client has its
     * end, nothing of it counts any more */
    if (j->ranks[rank].state == R_DONE) return;
    struct rank_info *ri = &j->ranks[rank];
    /* the node's CPUs used as of this report: newer than any heartbeat sent before it */
    uint32_t used, epoch;
    if (psmsg_get_u32(&m->body, PSF_TASKS, &used) == 0 &&
        psmsg_get_u32(&m->body, PSF_EPOCH, &epoch) == 0)
        membership_tasks(d, from, used, epoch);
    /* a rank whose start answer comes up the launch tree: its first output or its end may
     * come first, straight from its node; the client hears of its start first */
    if (m->type != PSM_D_RANK && ri->state == R_PENDING && j->tree_k &&
        psmsg_get_u64(&m->body, PSF_TID, &tid) == 0 && PSTID_NODE(tid) == from)
        rank_started(j, rank, from, tid, NULL);
    if (!relayed && (m->type == PSM_D_RANK || m->type == PSM_D_EXIT)) {
        if (from == d->self->id)
            j->n_self++;
        else if (m->type == PSM_D_RANK)
            j->n_start++;
        else
            j->n_exit++;
    }
    struct psmsg_buf b = {0};
    struct psmsg_field f;
    uint32_t u;
    switch (m->type) {
    case PSM_D_RANK:
        if (ri->state != R_PENDING) return;
        psmsg_begin(&b, PSM_RANK, j->cid);
        psmsg_put_u32(&b, PSF_RANK, rank);
        psmsg_put_u32(&b, PSF_NODE_ID, from);
        if (psmsg_get_u64(&m->body, PSF_TID, &tid) == 0) {
            inflight_done(j, from);
            ri->tid = tid;
            ri->state = R_RUNNING;
            psmsg_put_u64(&b, PSF_TID, tid);
            char cpus[4 * PSCPU_MAX / 2 + 8];
            if (psmsg_get_str(&m->body, PSF_CPU_LIST, cpus, sizeof cpus) == 0)
                psmsg_put_str(&b, PSF_CPU_LIST, cpus);
        } else {
            char text[512] = "cannot start";
            psmsg_get_str(&m->body, PSF_TEXT, text, sizeof text);
            u = EIO;
            psmsg_get_u32(&m->body, PSF_ERRNO, &u);
            rank_done(j, rank);
            psmsg_put_u32(&b, PSF_ERRNO, u);
            psmsg_put_str(&b, PSF_TEXT, text);
        }
        break;
    case PSM_D_IO:
        psmsg_begin(&b, PSM_IO, j->cid);
        psmsg_put_u32(&b, PSF_RANK, rank);
        if (psmsg_get_u32(&m->body, PSF_STREAM, &u) < 0 || !psmsg_find(&m->body, PSF_DATA, &f))
            return;
        if (!f.len && (u == 1 || u == 2)) ri->eof |= (uint8_t)u; /* the stream's end */
        psmsg_put_u32(&b, PSF_STREAM, u);
        psmsg_put_bytes(&b, PSF_DATA, f.val, f.len);
        break;
    case PSM_D_INPUT_ACK:
        psmsg_begin(&b, PSM_INPUT_ACK, j->cid);
        psmsg_put_u32(&b, PSF_RANK, rank);
        uint64_t bytes = 0;
        psmsg_get_u64(&m->body, PSF_BYTES, &bytes);
        if (j->in_racked)
            j->in_racked[rank] += bytes;
        else
            j->in_acked += bytes;
        psmsg_put_u64(&b, PSF_BYTES, bytes);
        break;
    case PSM_D_EXIT:
        psmsg_begin(&b, PSM_EXIT, j->cid);
        psmsg_put_u32(&b, PSF_RANK, rank);
        psmsg_put_u64(&b, PSF_TID, ri->tid);
        u = 0;
        psmsg_get_u32(&m->body, PSF_STATUS, &u);
        psmsg_put_u32(&b, PSF_STATUS, u);
        if (psmsg_get_u32(&m->body, PSF_PMI_STATE, &u) == 0) psmsg_put_u32(&b, PSF_PMI_STATE, u);
        copy_usage(j, rank, from, m, &b, u);
        rank_done(j, rank);
        break;
    case PSM_D_PMI_EVENT: { /* a rank's PMI: started, aborts, a note (pmi.c) */
        char text[1100];
        if (psmsg_get_u32(&m->body, PSF_PMI_EVENT, &u) < 0) return;
        psmsg_begin(&b, PSM_PMI_EVENT, j->cid);
        psmsg_put_u32(&b, PSF_RANK, rank);
        psmsg_put_u32(&b, PSF_PMI_EVENT, u);
        if (psmsg_get_u32(&m->body, PSF_STATUS, &u) == 0) psmsg_put_u32(&b, PSF_STATUS, u);
        if (psmsg_get_str(&m->body, PSF_TEXT, text, sizeof text) == 0)
            psmsg_put_str(&b, PSF_TEXT, text);
        break;
    }
    default:
        return;
    }
    to_client(j, &b);
    psmsg_buf_free(&b);
    /* the output's last end: an end that came up the tree first is the client's now */
    if (m->type == PSM_D_IO && ri->parked && (ri->eof & 3) == 3) release_parked(d, j, rank);
}

void jobs_from_daemon(struct psid *d, uint32_t from, const struct psmsg *m)
{
    rank_message(d, from, m, false);
}

/* An end from the launch tree: as its node's PSM_D_EXIT */
static void relayed_end(struct psid *d, uint32_t node, const uint8_t *p, size_t len)
{
    struct psmsg sub = {.type = PSM_D_EXIT, .body = {p, len}};
    rank_message(d, node, &sub, true);
}

static void release_parked(struct psid *d, struct job *j, uint32_t rank)
{
    struct rank_info *ri = &j->ranks[rank];
    uint8_t *p = ri->parked;
    ri->parked = NULL;
    relayed_end(d, ri->node, p, ri->parked_len);
    free(p);
}

void jobs_tree_exits(struct psid *d, uint32_t from, const struct psmsg *m)
{
    int32_t pf;
    struct job *j = tree_sender(d, from, m, "rank ends", &pf);
    if (!j) return;
    j->n_exit++;
    size_t pos = 0;
    struct tree_exit e;
    const char *why;
    for (int rc; (rc = tree_exit_next(&m->body, &pos, &e, &why)) != 0;) {
        if (!tree_record_ok(j, rc, e.rank, e.node, pf, from, "a rank end", why)) continue;
        struct rank_info *ri = &j->ranks[e.rank];
        if (ri->state == R_DONE || ri->parked) continue; /* sent again after a loss */
        if ((ri->eof & 3) == 3) {                        /* its output has all come */
            relayed_end(d, e.node, e.rec.p, e.rec.len);
            continue;
        }
        if (!(ri->parked = malloc(e.rec.len ? e.rec.len : 1))) { /* no hang: now, then */
            relayed_end(d, e.node, e.rec.p, e.rec.len);
            continue;
        }
        memcpy(ri->parked, e.rec.p, e.rec.len);
        ri->parked_len = (uint32_t)e.rec.len;
    }
}

void jobs_io_ack(struct psid *d, struct client *c, const struct psmsg *m)
{
    struct job *j = job_of_client(d, c);
    uint32_t rank;
    uint64_t bytes;
    if (!j || psmsg_get_u32(&m->body, PSF_RANK, &rank) < 0 || rank >= j->np ||
        psmsg_get_u64(&m->body, PSF_BYTES, &bytes) < 0 || j->ranks[rank].state == R_PENDING)
        return;
    struct psmsg_buf b = {0};
    psmsg_begin(&b, PSM_D_IO_ACK, 0);
    psmsg_put_u64(&b, PSF_TID, j->ranks[rank].tid);
    psmsg_put_u64(&b, PSF_BYTES, bytes);
    psid_send(d, j->ranks[rank].node, &b);
    psmsg_buf_free(&b);
}

struct input_arg {
    struct job *j;
    uint32_t rank;
    struct psmsg_field data;
};

static void send_input(struct psid *d, uint32_t node, void *arg)
{
    struct input_arg *ia = arg;
    struct psmsg_buf b = {0};
    psmsg_begin(&b, PSM_D_INPUT, 0);
    psmsg_put_u64(&b, PSF_JOB, ia->j->id);
    psmsg_put_u32(&b, PSF_UID, ia->j->uid);
    psmsg_put_u32(&b, PSF_RANK, ia->rank);
    psmsg_put_bytes(&b, PSF_DATA, ia->data.val, ia->data.len);
    psid_send(d, node, &b);
    psmsg_buf_free(&b);
}

/* Input sent and not acknowledged, as psrun counts it: with every rank taking input, what
 * the slowest running rank has not acknowledged. Never more than psrun's own count (psid
 * sees each acknowledgement before psrun, and a rank's end before psrun), so a psrun that
 * keeps to the window is never refused. */
static uint64_t input_inflight(const struct job *j)
{
    uint64_t acked = j->in_acked;
    if (j->in_racked) {
        uint64_t min = UINT64_MAX;
        for (uint32_t r = 0; r < j->np; r++)
            if (j->ranks[r].state == R_RUNNING && j->in_racked[r] < min) min = j->in_racked[r];
        if (min != UINT64_MAX && min > acked) acked = min;
    }
    return acked >= j->in_sent ? 0 : j->in_sent - acked;
}

void jobs_input(struct psid *d, struct client *c, const struct psmsg *m)
{
    struct input_arg ia = {.j = job_of_client(d, c)};
    if (!ia.j || psmsg_get_u32(&m->body, PSF_RANK, &ia.rank) < 0 ||
        !psmsg_find(&m->body, PSF_DATA, &ia.data))
        return;
    if (input_inflight(ia.j) + ia.data.len > PSI_IO_WINDOW) {
        log_warn("job %u:%d: its client sends input beyond the window; dropped",
                 PSTID_NODE(ia.j->id), PSTID_PID(ia.j->id));
        client_error(c, m->id, EPROTO, "input beyond the window (PSI_IO_WINDOW unacknowledged)");
        client_drop(c);
        return;
    }
    ia.j->in_sent += ia.data.len;
    if (ia.rank == PSI_ALL_RANKS)
        jobs_foreach_node(ia.j, send_input, &ia);
    else if (ia.rank < ia.j->np)
        send_input(d, ia.j->ranks[ia.rank].node, &ia);
}

static void send_gone(struct psid *d, uint32_t node, void *arg)
{
    struct job *j = arg;
    struct psmsg_buf b = {0};
    psmsg_begin(&b, PSM_D_JOB_GONE, 0);
    psmsg_put_u64(&b, PSF_JOB, j->id);
    psmsg_put_u32(&b, PSF_UID, j->uid);
    psid_send(d, node, &b);
    psmsg_buf_free(&b);
}

/* A job that ran goes into the done ring. */
static void remember(struct psid *d, const struct job *j)
{
    size_t cap = d->conf.done_jobs;
    if (!cap) return;
    struct doneq *q = d->done;
    if (!q && !(q = d->done = calloc(1, sizeof *q))) return;
    if (!q->v && !(q->v = calloc(cap, sizeof *q->v))) return;
    q->cap = cap;
    struct done_rec *r = &q->v[q->next];
    *r = (struct done_rec){.job = j->id,
                           .start_s = j->start_ns / 1000000000ull,
                           .end_s = realtime_ns() / 1000000000ull,
                           .uid = j->uid,
                           .np = j->np,
                           .tot = j->tot};
    snprintf(r->name, sizeof r->name, "%s", j->name);
    q->next = (q->next + 1) % cap;
    if (q->n < cap) q->n++;
}

static void put_done(struct psmsg_buf *b, const struct done_rec *r)
{
    psmsg_record_begin(b, PSF_DONE);
    psmsg_put_u64(b, PSF_JOB, r->job);
    psmsg_put_str(b, PSF_JOB_NAME, r->name);
    psmsg_put_u32(b, PSF_UID, r->uid);
    psmsg_put_u32(b, PSF_NP, r->np);
    psmsg_put_u32(b, PSF_STATUS, r->tot.status);
    psmsg_put_u64(b, PSF_START_S, r->start_s);
    psmsg_put_u64(b, PSF_END_S, r->end_s);
    psmsg_put_u64(b, PSF_ELAPSED_US, (r->end_s - r->start_s) * 1000000ull);
    psmsg_put_u64(b, PSF_USER_US, r->tot.user_us + r->tot.rank_user_us);
    psmsg_put_u64(b, PSF_SYS_US, r->tot.sys_us + r->tot.rank_sys_us);
    psmsg_put_u64(b, PSF_MAXRSS, r->tot.maxrss);
    psmsg_put_u64(b, PSF_READ_BYTES, r->tot.rbytes);
    psmsg_put_u64(b, PSF_WRITE_BYTES, r->tot.wbytes);
    psmsg_record_end(b);
}

/* PSM_JOBS_DONE: the ring, newest first, as much as fits one reply */
static void jobs_done_request(struct psid *d, struct client *c, const struct psmsg *m)
{
    struct psmsg_buf b = {0};
    psmsg_begin(&b, PSM_JOBS_DONE_REPLY, m->id);
    psmsg_put_u32(&b, PSF_SELF, d->self->id);
    const struct doneq *q = d->done;
    for (size_t k = 0; q && k < q->n && b.len + 512 < PSMSG_MAX; k++)
        put_done(&b, &q->v[(q->next + q->cap - 1 - k) % q->cap]);
    client_send(c, &b);
    psmsg_buf_free(&b);
}

static void jobs_done_free(struct psid *d)
{
    jobq_free(&d->jobq);
    if (d->jobq_timer) loop_timer_cancel(d->loop, d->jobq_timer);
    d->jobq_timer = 0;
    if (d->done) free(d->done->v);
    free(d->done);
    d->done = NULL;
}

void jobs_client_gone(struct psid *d, struct client *c)
{
    struct jobq_entry *e = jobq_of_client(&d->jobq, c);
    if (e) { /* a queued spawn started nothing */
        log_info("a queued spawn of uid %u left the queue: its client is gone", e->uid);
        jobq_del(&d->jobq, e);
    }
    struct job *j = job_of_client(d, c);
    if (!j) return;
    if (!j->held) remember(d, j);
    j->client = NULL;
    bool open = false, held = j->held != NULL; /* a held job started nothing */
    for (uint32_t r = 0; r < j->np; r++) {
        open |= j->ranks[r].state != R_DONE;
        rank_done(j, r);
    }
    if ((open || j->tree_failed) && !held) {
        log_info("job %u:%d: its client is gone; ending its tasks", PSTID_NODE(j->id),
                 PSTID_PID(j->id));
        jobs_foreach_node(j, send_gone, j);
    } else if (j->tree_k && !held) { /* it has ended: the tree's nodes may forget it */
        struct psmsg_buf b = {0};
        psmsg_begin(&b, PSM_D_TREE_DONE, 0);
        psmsg_put_u64(&b, PSF_JOB, j->id);
        for (size_t q = 1; q <= j->tree_k && q < j->tree_n; q++) {
            struct psid_node *pn = psid_node(d, j->tree_order[q]);
            if (pn && pn->state == PSNODE_UP) psid_send(d, j->tree_order[q], &b);
        }
        psmsg_buf_free(&b);
    }
    job_free(j);
}

void jobs_node_lost(struct psid *d, uint32_t node)
{
    for (struct job *j = d->jobs; j; j = j->next) {
        int32_t p = j->tree_k ? tree_place(j, node) : -1;
        if (p > 0) { /* the ranks below it in the launch tree have nobody to answer for them */
            struct psid_node *pn = psid_node(d, node);
            char text[200];
            tree_lost_text(text, sizeof text, node, pn ? pn->conf->name : NULL);
            tree_fail_under(j, (uint32_t)p, false, text);
        }
        for (uint32_t r = 0; r < j->np; r++) {
            if (j->ranks[r].node != node || j->ranks[r].state == R_DONE) continue;
            struct psmsg_buf b = {0};
            psmsg_begin(&b, PSM_EXIT, j->cid);
            psmsg_put_u32(&b, PSF_RANK, r);
            psmsg_put_u64(&b, PSF_TID, j->ranks[r].tid);
            psmsg_put_u32(&b, PSF_NODE_ID, node); /* a rank that never started has no other */
            psmsg_put_u32(&b, PSF_LOST, 1);
            to_client(j, &b);
            psmsg_buf_free(&b);
            rank_done(j, r);
        }
    }
    struct psid_node *pn = psid_node(d, node);
    if (pn) pn->inflight = 0;
}

/* PSM_SPAWN_GO: the client of a held spawn has what it needed; its ranks start now. A GO
 * for no held job of the client's is answered with an error. */
static void jobs_go(struct psid *d, struct client *c, const struct psmsg *m)
{
    struct job *j = job_of_client(d, c);
    uint64_t id = 0;
    if (!j || psmsg_get_u64(&m->body, PSF_JOB, &id) < 0 || id != j->id || !j->held) {
        client_error(c, m->id, ESRCH, "no held spawn of this connection's");
        return;
    }
    struct psmsg req = {.type = j->held_type, .id = j->cid, .body = {j->held, j->held_len}};
    /* The credentials are made now, not at the placement: what the client did meanwhile
     * (psrun --bcast copies the program to the nodes, however long that takes) does not
     * eat their life (SPAWNCRED_TTL_NS). The privileged child vouches again, for the same
     * connection. */
    uint8_t(*creds)[SPAWNCRED_LEN] = calloc(d->conf.nnodes, SPAWNCRED_LEN);
    uint32_t *where = calloc(j->np, sizeof *where);
    if (!creds || !where) client_error(c, j->cid, ENOMEM, "out of memory");
    for (uint32_t r = 0; where && r < j->np; r++) where[r] = j->ranks[r].node;
    if (!creds || !where || vouch(d, c, &req, j->id, where, j->np, creds) < 0) {
        /* the client has its answer: the job is dropped, nothing of it started */
        log_info("job %u:%d: dropped at its go: no credentials", PSTID_NODE(j->id),
                 PSTID_PID(j->id));
        for (uint32_t r = 0; r < j->np; r++) rank_done(j, r);
        job_free(j);
    } else {
        struct fanout fo = {j, &req, j->uid, j->gid, &d->conf, creds, &j->held_plan, 0};
        fan_out(d, j, &fo);
        free(j->held);
        pmi_plan_free(&j->held_plan);
        j->held = NULL;
    }
    free(creds);
    free(where);
}

static void jobs_request(struct psid *d, struct client *c, const struct psmsg *m)
{
    if (m->type == PSM_SPAWN)
        jobs_spawn(d, c, m);
    else if (m->type == PSM_SPAWN_GO)
        jobs_go(d, c, m);
    else if (m->type == PSM_IO_ACK)
        jobs_io_ack(d, c, m);
    else if (m->type == PSM_JOBS_DONE)
        jobs_done_request(d, c, m);
    else
        jobs_input(d, c, m);
}

static const uint16_t jobs_requests[] = {PSM_SPAWN, PSM_SPAWN_GO,  PSM_IO_ACK,
                                         PSM_INPUT, PSM_JOBS_DONE, 0};
static const uint16_t jobs_messages[] = {PSM_D_RANK, PSM_D_IO,        PSM_D_INPUT_ACK,
                                         PSM_D_EXIT, PSM_D_PMI_EVENT, 0};
const struct psid_module jobs_module = {.name = "jobs",
                                        .requests = jobs_requests,
                                        .request = jobs_request,
                                        .messages = jobs_messages,
                                        .message = jobs_from_daemon,
                                        .client_gone = jobs_client_gone,
                                        .client_busy = jobs_client_busy,
                                        .node_lost = jobs_node_lost,
                                        .stop = jobs_done_free};
