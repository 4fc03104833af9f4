/*
 * job.c - a job's ranks, output, acknowledgements, stdin and exit status (see job.h).
 */
#include "job.h"
#include "outfile.h"

#include "psi_tid.h"
#include "pscpus.h"
#include "psproto.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <sys/wait.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int lg_job_init(struct lg_job *j, const struct lg_job_cfg *cfg, struct lg_conn *conn,
                uint32_t spawn_id)
{
    memset(j, 0, sizeof *j);
    j->cfg = *cfg;
    if (!j->cfg.line_max) j->cfg.line_max = PSI_IO_WINDOW / 2;
    if (!j->cfg.prog) j->cfg.prog = "?";
    j->conn = conn;
    j->spawn_id = spawn_id;
    uint32_t np = cfg->np;
    if (!np || !(j->r = calloc(np, sizeof *j->r)) || !(j->dirty = calloc(np, sizeof *j->dirty)) ||
        lg_input_init(&j->in, cfg->input, np) < 0) {
        lg_job_free(j);
        errno = np ? ENOMEM : EINVAL;
        return -1;
    }
    for (uint32_t i = 0; i < np; i++)
        for (int s = 0; s < 2; s++) lg_lines_init(&j->r[i].lines[s], j->cfg.line_max);
    return 0;
}

void lg_job_free(struct lg_job *j)
{
    if (j->r)
        for (uint32_t i = 0; i < j->cfg.np; i++)
            for (int s = 0; s < 2; s++) lg_lines_free(&j->r[i].lines[s]);
    free(j->r);
    free(j->dirty);
    lg_outq_free(&j->out[0]);
    lg_outq_free(&j->out[1]);
    for (size_t f = 0; f < j->nfiles; f++) lg_outq_free(&j->files[f]);
    free(j->files);
    free(j->file_dead);
    j->files = NULL;
    j->file_dead = NULL;
    j->nfiles = 0;
    lg_input_free(&j->in);
    free(j->nodes_use);
    j->nodes_use = NULL;
    j->nnodes_use = 0;
    j->r = NULL;
    j->dirty = NULL;
}

void lg_job_say(struct lg_job *j, const char *fmt, ...)
{
    char *text, *line;
    va_list ap;
    va_start(ap, fmt);
    int r = vasprintf(&text, fmt, ap);
    va_end(ap);
    if (r < 0) return;
    r = asprintf(&line, "psrun: %s\n", text);
    free(text);
    if (r < 0) return;
    if (j->discard[1])
        free(line);
    else
        lg_outq_push_take(&j->out[1], LG_NO_RANK, 0, line, (size_t)r);
}

static void add_ack(struct lg_job *j, uint32_t rank, size_t raw)
{
    if (rank >= j->cfg.np || !raw) return;
    struct lg_rank *r = &j->r[rank];
    r->ack += raw;
    if (!r->dirty) {
        r->dirty = true;
        j->dirty[j->ndirty++] = rank;
    }
}

void lg_job_written(void *ctx, uint32_t rank, size_t raw)
{
    add_ack(ctx, rank, raw);
}

int lg_job_flush_acks(struct lg_job *j)
{
    int rc = 0;
    for (size_t i = 0; i < j->ndirty; i++) {
        struct lg_rank *r = &j->r[j->dirty[i]];
        r->dirty = false;
        if (r->state != LG_R_RUN || !r->ack) continue; /* ended: nothing more will come */
        struct psmsg_buf b = {0};
        psmsg_begin(&b, PSM_IO_ACK, 0);
        psmsg_put_u32(&b, PSF_RANK, j->dirty[i]);
        psmsg_put_u64(&b, PSF_BYTES, r->ack);
        r->ack = 0;
        if (lg_conn_send(j->conn, &b, 0, NULL) < 0) rc = -1;
    }
    j->ndirty = 0;
    return rc;
}

static char *label_of(const struct lg_job *j, uint32_t rank, char *buf, size_t n)
{
    if (!j->cfg.label) return NULL;
    snprintf(buf, n, "%" PRIu32 ": ", rank);
    return buf;
}

int lg_job_set_routes(struct lg_job *j, const uint32_t *route[2], size_t nfiles)
{
    if (nfiles && (!(j->files = calloc(nfiles, sizeof *j->files)) ||
                   !(j->file_dead = calloc(nfiles, sizeof *j->file_dead)))) {
        free(j->files);
        j->files = NULL;
        return -1;
    }
    j->nfiles = nfiles;
    j->route[0] = route[0];
    j->route[1] = route[1];
    return 0;
}

/* the queue rank's stream s goes to; NULL: dropped */
static struct lg_outq *queue_of(struct lg_job *j, uint32_t rank, int s)
{
    uint32_t to = j->route[s] ? j->route[s][rank] : LG_ROUTE_STD;
    if (to == LG_ROUTE_STD) return j->discard[s] ? NULL : &j->out[s];
    if (to >= j->nfiles || j->file_dead[to]) return NULL;
    return &j->files[to];
}

/* hand a rank's assembled output (or its end) to its queue (out[s], or a file's) */
static int emit(struct lg_job *j, uint32_t rank, int s, const uint8_t *p, size_t n, bool end)
{
    struct lg_rank *r = &j->r[rank];
    struct lg_outq *q = queue_of(j, rank, s);
    if (!q) {
        add_ack(j, rank, n + lg_lines_pending(&r->lines[s]));
        lg_lines_free(&r->lines[s]);
        return 0;
    }
    char lb[16];
    const char *label = label_of(j, rank, lb, sizeof lb);
    struct lg_bytes out = {0};
    ssize_t raw = end ? lg_lines_flush(&r->lines[s], label, &out)
                      : lg_lines_feed(&r->lines[s], p, n, label, &out);
    if (raw < 0) {
        lg_bytes_free(&out);
        j->error = ENOMEM;
        return -1;
    }
    if (!out.len) {
        lg_bytes_free(&out);
        return 0;
    }
    if (lg_outq_push_take(q, rank, (size_t)raw, out.p, out.len) < 0) {
        j->error = ENOMEM;
        return -1;
    }
    return 0;
}

void lg_job_file_failed(struct lg_job *j, size_t f)
{
    if (f >= j->nfiles || j->file_dead[f]) return;
    j->file_dead[f] = true;
    lg_outq_drop(&j->files[f], lg_job_written, j);
}

void lg_job_discard(struct lg_job *j, int s)
{
    if (j->discard[s]) return;
    j->discard[s] = true;
    lg_outq_drop(&j->out[s], lg_job_written, j);
    for (uint32_t i = 0; i < j->cfg.np; i++) emit(j, i, s, NULL, 0, false);
}

static const char *node_name(const struct lg_job *j, uint32_t node, char *buf, size_t n)
{
    return psi_nodetab_name(j->cfg.nodes, node, buf, n);
}

static void rank_failed(struct lg_job *j, uint32_t rank, int code, const char *how)
{
    struct lg_rank *r = &j->r[rank];
    char nn[64], tid[32];
    node_name(j, r->node, nn, sizeof nn);
    j->failed++;
    lg_exitagg_add(&j->agg, rank, code);
    if (r->tid)
        lg_job_say(j, "rank %" PRIu32 " (node %s, task %s): %s", rank, nn,
                   psi_tid_str(r->tid, tid, sizeof tid), how);
    else
        lg_job_say(j, "rank %" PRIu32 " (node %s): %s", rank, nn, how);
}

/* An MPI job cannot go on: the first reason is kept. */
static void mpi_fatal(struct lg_job *j, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void mpi_fatal(struct lg_job *j, const char *fmt, ...)
{
    if (j->mpi_fatal) return;
    j->mpi_fatal = true;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(j->mpi_why, sizeof j->mpi_why, fmt, ap);
    va_end(ap);
}

void lg_job_teardown(struct lg_job *j)
{
    j->teardown = true;
}

static struct lg_rank *rank_of(struct lg_job *j, const struct psmsg *m, uint32_t *rank)
{
    if (psmsg_get_u32(&m->body, PSF_RANK, rank) < 0 || *rank >= j->cfg.np) {
        lg_job_say(j, "warning: message %u from psid for no rank of the job", m->type);
        return NULL;
    }
    return &j->r[*rank];
}

static void on_rank_msg(struct lg_job *j, const struct psmsg *m)
{
    uint32_t rank, err = 0;
    struct lg_rank *r = rank_of(j, m, &rank);
    if (!r || r->state != LG_R_WAIT) return;
    j->reported++;
    psmsg_get_u32(&m->body, PSF_NODE_ID, &r->node);
    char nn[64], tid[32];
    if (psmsg_get_u32(&m->body, PSF_ERRNO, &err) == 0 && err) {
        char text[256] = "", how[600];
        psmsg_get_str(&m->body, PSF_TEXT, text, sizeof text);
        const char *reason = strerror((int)err);
        r->state = LG_R_NOSTART;
        r->err = (int)err;
        j->ended++;
        /* psid's text says what failed (the directory, the user, the program, the size of
         * the request); without one, the exec is what failed */
        if (!text[0])
            snprintf(how, sizeof how, "cannot execute %s: %s", j->cfg.prog, reason);
        else if (strstr(text, reason))
            snprintf(how, sizeof how, "%s", text);
        else
            snprintf(how, sizeof how, "%s: %s", text, reason);
        rank_failed(j, rank, lg_spawn_code((int)err), how);
        /* a node of the launch tree above it was lost (psid/spawntree.c): as a lost node */
        if (err == EHOSTDOWN) j->lost++;
        if (j->cfg.mpi && j->mpi_active) mpi_fatal(j, "rank %" PRIu32 " could not start", rank);
        return;
    }
    psmsg_get_u64(&m->body, PSF_TID, &r->tid);
    r->state = LG_R_RUN;
    char cpus[2100];
    if (j->cfg.cpu_verbose && psmsg_get_str(&m->body, PSF_CPU_LIST, cpus, sizeof cpus) == 0)
        lg_job_say(j, "cpu-bind: rank %" PRIu32 " (node %s): %s%s", rank,
                   node_name(j, r->node, nn, sizeof nn), cpus[0] ? "CPUs " : "not bound", cpus);
    if (j->cfg.verbose)
        lg_job_say(j, "rank %" PRIu32 ": node %" PRIu32 " (%s), task %s", rank, r->node,
                   node_name(j, r->node, nn, sizeof nn), psi_tid_str(r->tid, tid, sizeof tid));
}

static int on_io_msg(struct lg_job *j, const struct psmsg *m)
{
    uint32_t rank, stream = 0;
    struct psmsg_field f;
    struct lg_rank *r = rank_of(j, m, &rank);
    if (!r) return 0;
    if (psmsg_get_u32(&m->body, PSF_STREAM, &stream) < 0 || (stream != 1 && stream != 2) ||
        !psmsg_find(&m->body, PSF_DATA, &f)) {
        lg_job_say(j, "warning: malformed output message from psid (rank %" PRIu32 ")", rank);
        return 0;
    }
    int s = (int)stream - 1;
    if (r->eos[s]) return 0;
    if (f.len == 0) {
        r->eos[s] = true;
        return emit(j, rank, s, NULL, 0, true);
    }
    return emit(j, rank, s, f.val, f.len, false);
}

static void read_usage(struct lg_job *j, struct lg_rank *r, const struct psmsg *m);

static int on_exit_msg(struct lg_job *j, const struct psmsg *m)
{
    uint32_t rank, lost = 0, status = 0;
    struct lg_rank *r = rank_of(j, m, &rank);
    if (!r || r->state == LG_R_NOSTART || r->state == LG_R_EXITED || r->state == LG_R_LOST)
        return 0;
    if (r->state == LG_R_WAIT) j->reported++;
    uint64_t tid = 0;
    if (psmsg_get_u64(&m->body, PSF_TID, &tid) == 0 && tid) r->tid = tid;
    if (r->state == LG_R_WAIT) psmsg_get_u32(&m->body, PSF_NODE_ID, &r->node); /* lost unstarted */
    /* whatever is left of its output comes first */
    for (int s = 0; s < 2; s++) {
        r->eos[s] = true;
        if (emit(j, rank, s, NULL, 0, true) < 0) return -1;
    }
    j->ended++;
    if (psmsg_get_u32(&m->body, PSF_LOST, &lost) == 0 && lost) {
        r->state = LG_R_LOST;
        j->lost++;
        rank_failed(j, rank, LG_EXIT_LOST, "node lost");
        return 0;
    }
    psmsg_get_u32(&m->body, PSF_STATUS, &status);
    read_usage(j, r, m);
    uint32_t pmi = PSPMI_NONE;
    psmsg_get_u32(&m->body, PSF_PMI_STATE, &pmi);
    r->state = LG_R_EXITED;
    r->status = status;
    r->pmi = (uint8_t)pmi;
    int code = lg_status_code(status);
    int s = (int)status;
    if (j->teardown && WIFSIGNALED(s) && (WTERMSIG(s) == SIGKILL || WTERMSIG(s) == SIGTERM)) {
        j->torn++; /* one the caller killed: its end is not news */
        return 0;
    }
    if (code && r->oom) { /* as srun says it: the OOM killer, and the limit */
        char lim[32], nn[64];
        ps_format_size(r->oom, lim, sizeof lim);
        j->failed++;
        lg_exitagg_add(&j->agg, rank, code);
        lg_job_say(j, "rank %" PRIu32 " (node %s): out of memory (limit %s)", rank,
                   node_name(j, r->node, nn, sizeof nn), lim);
        if (j->cfg.mpi && (j->mpi_active || pmi == PSPMI_INIT))
            mpi_fatal(j, "rank %" PRIu32 " failed", rank);
    } else if (code) {
        char how[128];
        rank_failed(j, rank, code, lg_status_text(status, how, sizeof how));
        if (j->cfg.mpi && (j->mpi_active || pmi == PSPMI_INIT))
            mpi_fatal(j, "rank %" PRIu32 " failed", rank);
    } else if (j->cfg.mpi && pmi == PSPMI_INIT) {
        /* it left without MPI_Finalize: the others would wait for it for ever */
        rank_failed(j, rank, 1, "exited with status 0 without finalizing PMI (no MPI_Finalize)");
        mpi_fatal(j, "rank %" PRIu32 " left the job without MPI_Finalize", rank);
    }
    return 0;
}

/* u's fields from a message body or a PSF_NODE_STATS record */
static void usage_of(const struct psmsg_view *v, struct lg_usage *u)
{
    u->have = true;
    psmsg_get_u64(v, PSF_ELAPSED_US, &u->elapsed_us);
    u->have_cpu = psmsg_get_u64(v, PSF_USER_US, &u->user_us) == 0;
    psmsg_get_u64(v, PSF_SYS_US, &u->sys_us);
    u->have_rss = psmsg_get_u64(v, PSF_MAXRSS, &u->maxrss) == 0;
    u->have_io = psmsg_get_u64(v, PSF_READ_BYTES, &u->rbytes) == 0;
    psmsg_get_u64(v, PSF_WRITE_BYTES, &u->wbytes);
}

/* A rank's end: its usage, its OOM report, and its node's usage when it was the last */
static void read_usage(struct lg_job *j, struct lg_rank *r, const struct psmsg *m)
{
    uint64_t x;
    if (psmsg_get_u64(&m->body, PSF_ELAPSED_US, &x) == 0) usage_of(&m->body, &r->use);
    r->use.node = r->node;
    psmsg_get_u64(&m->body, PSF_OOM, &r->oom);
    struct psmsg_field f;
    if (!psmsg_find(&m->body, PSF_NODE_STATS, &f)) return;
    struct psmsg_view rv = psmsg_record(&f);
    struct lg_usage *v = realloc(j->nodes_use, (j->nnodes_use + 1) * sizeof *v);
    if (!v) return;
    j->nodes_use = v;
    struct lg_usage *u = &v[j->nnodes_use++];
    memset(u, 0, sizeof *u);
    usage_of(&rv, u);
    psmsg_get_u32(&rv, PSF_NODE_ID, &u->node);
}

static void on_pmi_msg(struct lg_job *j, const struct psmsg *m)
{
    uint32_t rank, kind = 0, code = 0;
    struct lg_rank *r = rank_of(j, m, &rank);
    if (!r || psmsg_get_u32(&m->body, PSF_PMI_EVENT, &kind) < 0) return;
    char text[1100] = "", nn[64];
    psmsg_get_str(&m->body, PSF_TEXT, text, sizeof text);
    switch (kind) {
    case PSPMI_EV_INIT:
        j->mpi_active = true;
        break;
    case PSPMI_EV_ABORT: {
        bool has = psmsg_get_u32(&m->body, PSF_STATUS, &code) == 0;
        if (!has) code = 1;
        lg_job_say(
            j, "rank %" PRIu32 " (node %s) aborted the job (MPI_Abort), exit code %" PRIu32 "%s%s",
            rank, node_name(j, r->node, nn, sizeof nn), code, text[0] ? ": " : "", text);
        j->failed++;
        lg_exitagg_add(&j->agg, rank, (int)code);
        j->mpi_active = true;
        mpi_fatal(j, "rank %" PRIu32 " called MPI_Abort", rank);
        break;
    }
    case PSPMI_EV_NOTE:
        lg_job_say(j, "rank %" PRIu32 " (node %s): %s", rank, node_name(j, r->node, nn, sizeof nn),
                   text);
        break;
    case PSPMI_EV_DEBUG: /* PMI_DEBUG: as hydra's mpiexec -v shows the PMI server's side */
        lg_job_say(j, "pmi[%" PRIu32 "] %s", rank, text);
        break;
    }
}

void lg_spawn_queued_say(const struct psmsg *m, struct lg_job *j)
{
    uint32_t place = 0;
    char text[256] = "";
    psmsg_get_u32(&m->body, PSF_N, &place);
    psmsg_get_str(&m->body, PSF_TEXT, text, sizeof text);
    if (j)
        lg_job_say(j, "job queued (place %" PRIu32 "): %s; it starts when a row has room", place,
                   text);
    else
        fprintf(stderr,
                "psrun: job queued (place %" PRIu32 "): %s; it starts when a row has room\n", place,
                text);
}

static void on_error_msg(struct lg_job *j, const struct psmsg *m)
{
    uint32_t e = 0;
    char text[256] = "";
    psmsg_get_u32(&m->body, PSF_ERRNO, &e);
    psmsg_get_str(&m->body, PSF_TEXT, text, sizeof text);
    if (m->id == j->spawn_id && !j->spawned) {
        j->spawn_failed = true;
        j->spawn_errno = (int)e;
        snprintf(j->spawn_text, sizeof j->spawn_text, "%s", text);
        return;
    }
    lg_job_say(j, "psid: %s%s%s", strerror((int)e), text[0] ? ": " : "", text);
}

static bool rank_live(const void *ctx, uint32_t rank)
{
    const struct lg_job *j = ctx;
    return j->r[rank].state == LG_R_RUN;
}

int lg_job_handle(struct lg_job *j, const struct psmsg *m)
{
    uint32_t u = 0;
    uint64_t u64 = 0;
    switch (m->type) {
    case PSM_SPAWN_REPLY:
        if (m->id != j->spawn_id) return 0;
        j->spawned = true;
        psmsg_get_u64(&m->body, PSF_JOB, &j->jobid);
        if (psmsg_get_u32(&m->body, PSF_NP, &u) == 0 && u != j->cfg.np)
            lg_job_say(j, "warning: psid starts %" PRIu32 " ranks, not %" PRIu32, u, j->cfg.np);
        return 1;
    case PSM_SPAWN_QUEUED: /* gang scheduling: the spawn waits for a row */
        if (m->id != j->spawn_id || j->spawned) return 1;
        j->queued = true;
        lg_spawn_queued_say(m, j->discard[1] ? NULL : j);
        return 1;
    case PSM_ERROR:
        on_error_msg(j, m);
        return 1;
    case PSM_RANK:
        on_rank_msg(j, m);
        return 1;
    case PSM_IO:
        return on_io_msg(j, m) < 0 ? -1 : 1;
    case PSM_EXIT:
        return on_exit_msg(j, m) < 0 ? -1 : 1;
    case PSM_PMI_EVENT:
        on_pmi_msg(j, m);
        return 1;
    case PSM_INPUT_ACK:
        if (psmsg_get_u32(&m->body, PSF_RANK, &u) == 0 &&
            psmsg_get_u64(&m->body, PSF_BYTES, &u64) == 0)
            lg_input_ack(&j->in, u, u64);
        return 1;
    case PSM_SIGNAL_REPLY:
        if (psmsg_get_u32(&m->body, PSF_ERRNO, &u) == 0 && u && u != ESRCH)
            lg_job_say(j, "cannot signal the job: %s", strerror((int)u));
        return 1;
    default:
        return 0;
    }
}

int lg_job_signal(struct lg_job *j, int sig)
{
    if (!j->spawned || !j->jobid) {
        errno = EAGAIN;
        return -1;
    }
    struct psmsg_buf b = {0};
    psmsg_begin(&b, PSM_SIGNAL, 0);
    psmsg_put_u64(&b, PSF_JOB, j->jobid);
    psmsg_put_u32(&b, PSF_SIGNAL, (uint32_t)sig);
    return lg_conn_send(j->conn, &b, 0, NULL);
}

bool lg_job_input_wanted(const struct lg_job *j)
{
    if (j->in.target == PSI_NO_RANK || j->in.closed || j->spawn_failed) return false;
    if (j->in.target != PSI_ALL_RANKS)
        return j->in.target < j->cfg.np && j->r[j->in.target].state <= LG_R_RUN;
    return j->ended < j->cfg.np;
}

size_t lg_job_input_room(const struct lg_job *j)
{
    if (!lg_job_input_wanted(j) || !j->spawned) return 0;
    if (j->in.target == PSI_ALL_RANKS) {
        if (j->reported < j->cfg.np) return 0; /* wait until every rank is there */
    } else if (j->r[j->in.target].state != LG_R_RUN) {
        return 0;
    }
    return lg_input_room(&j->in, rank_live, j);
}

int lg_job_input(struct lg_job *j, const void *p, size_t n)
{
    struct psmsg_buf b = {0};
    psmsg_begin(&b, PSM_INPUT, 0);
    psmsg_put_u32(&b, PSF_RANK, j->in.target);
    psmsg_put_bytes(&b, PSF_DATA, p, n);
    if (lg_conn_send(j->conn, &b, 0, NULL) < 0) return -1;
    j->in.sent += n;
    if (!n) j->in.closed = true;
    return 0;
}

bool lg_job_ended(const struct lg_job *j)
{
    return j->spawn_failed || (j->spawned && j->ended >= j->cfg.np);
}

bool lg_job_done(const struct lg_job *j)
{
    for (size_t f = 0; f < j->nfiles; f++)
        if (!lg_outq_empty(&j->files[f])) return false;
    return lg_job_ended(j) && lg_outq_empty(&j->out[0]) && lg_outq_empty(&j->out[1]);
}

int lg_job_exit_code(const struct lg_job *j)
{
    if (j->spawn_failed) return 1;
    return lg_exitagg_code(&j->agg);
}
