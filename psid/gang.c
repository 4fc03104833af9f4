/*
 * gang.c - gang scheduling (docs/gang.md), on when gang.quantum_ms is not 0.
 *
 * The scheduler is the lowest-numbered node that is up (STORM's machine manager). Every
 * node reports the jobs it has tasks of, and how many, to the scheduler (PSM_D_GANG_REPORT,
 * within a quarter quantum of a change of its task table, when the scheduler changed, and once a
 * second). The scheduler keeps an Ousterhout matrix: a job goes into the first row where its tasks
 * fit every node's CPUs next to the row's other jobs (the running row first, so a job that fits
 * runs at once), else into a new row while fewer than gang.mpl exist, else into the row
 * with the fewest jobs (over-committed: the queue is not there yet, docs/gang.md). Each
 * quantum it announces the next row to every node that is up (PSM_D_GANG_SWITCH, the record
 * of psproto.h) with the CLOCK_REALTIME time at which it takes effect, GANG_LEAD_NS ahead,
 * so that nodes switch together, bounded by clock agreement and not by message delay.
 *
 * At that time each node freezes the jobs of the other rows it has tasks of and thaws the
 * running row's (cgroup v2 cgroup.freeze in the job directory, which the engine owns; the
 * switch counts as done when cgroup.events says frozen 1 / frozen 0). The freezer says
 * frozen 1 only once every task of the job has run into it, which a task must be scheduled
 * for, so the node does not poll: it opens the job's cgroup.events before it writes
 * cgroup.freeze and waits in the loop for the kernel's mark of a change (EPOLLPRI; the file
 * is open only while its switch waits), at most GANG_WAIT_NS, after which it logs that the
 * switch was slow and waits no more (a task in D state holds a freeze that long). The
 * kernel marks one file at most every 10 ms (cgroup_file_notify): at quanta under that, a
 * switch's end is seen up to that late, which only the log shows. Without a cgroup per job
 * it stops and continues the tasks' process groups (SIGSTOP/SIGCONT through the privileged
 * child), said once in the log. A job not in the record (new since) runs. A node that hears
 * no switch for three quanta thaws everything it froze: no job stays frozen because its
 * scheduler is gone; the next scheduler takes over from the nodes' reports once the old one
 * is declared down.
 */
#include "cgroup.h"
#include "daemon.h"
#include "gangwire.h"
#include "log.h"
#include "psi_tid.h"
#include "psmsg.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#define GANG_MAX_JOBS  256           /* jobs the matrix holds in this version */
#define GANG_LEAD_NS   5000000ull    /* a switch takes effect this long after it is sent */
#define GANG_REPORT_NS 1000000000ull /* a node reports at least this often */
#define GANG_WAIT_NS   200000000ull  /* a switch waits for cgroup.events this long at most */
#define GANG_STALE     3             /* quanta without a switch: thaw everything */
/* the task table is looked at this many times a quantum: a job that ended (or started)
 * reaches the scheduler's matrix before the next switch, not a quantum later */
#define GANG_TICKS 4

struct sjob { /* the scheduler's view of a job */
    uint64_t job;
    uint16_t row;
    uint32_t *tasks; /* per node index (d->conf.nodes) */
};

struct gview { /* a job of the matrix as the switches showed it (psstat jobs) */
    uint64_t job;
    uint16_t row;
    uint32_t quanta, ran; /* switches it was in, and those that ran its row */
};

struct ljob { /* a job this node froze */
    uint64_t job;
    bool frozen;
    int ev; /* its cgroup.events while the switch waits for it to agree, else -1 */
};

struct collect {
    uint64_t jobs[GANG_MAX_JOBS];
    uint32_t counts[GANG_MAX_JOBS];
    size_t n;
};

struct gang;
struct applyctx {
    struct gang *g;
    const struct gang_switch *s;
    uint64_t seen[GANG_MAX_JOBS];
    size_t nseen;
};

struct gang {
    struct psid *d;
    uint64_t quantum_ns;
    uint64_t tick_timer, apply_timer, wait_timer;
    unsigned ticks; /* of the quantum (GANG_TICKS) */
    /* the scheduler's part */
    struct sjob jobs[GANG_MAX_JOBS];
    size_t njobs;
    uint16_t rows, running;
    uint64_t seq;
    /* every node's part */
    uint32_t sched;       /* whom it reports to (UINT32_MAX: none yet) */
    uint32_t sent_epoch;  /* task_epoch of the last report */
    uint64_t sent_at;     /* loop_now() of it */
    uint64_t last_switch; /* loop_now() of the last switch heard */
    uint64_t last_epoch;  /* of the scheduler heard last, and its seq */
    uint64_t last_seq;
    struct gang_switch *next; /* announced, not yet in effect */
    bool have_next;
    struct ljob frozen[GANG_MAX_JOBS];
    size_t nfrozen;
    struct gview view[GANG_MAX_JOBS]; /* the last switch's jobs (psstat jobs) */
    size_t nview;
    uint16_t view_rows, view_row;
    uint32_t view_sched;
    bool said_nofreezer;
    uint64_t switch_start;   /* loop_now() when the switch took effect */
    int64_t switch_late;     /* ns from the announced time to then (CLOCK_REALTIME) */
    unsigned waiting;        /* jobs of the switch whose cgroup.events does not agree yet */
    unsigned by_event;       /* of the switch's jobs, those that came to agree by an event */
    uint64_t switches, slow; /* switches applied; those not done within GANG_WAIT_NS */
    /* scratch: the record being sent, its bytes, a report, a switch being applied */
    struct gang_switch out;
    uint8_t rec[GANG_WIRE_HEAD + GANG_WIRE_ENTRY * GANG_MAX_JOBS];
    struct collect collect;
    struct applyctx apply;
    struct gview scratch[GANG_MAX_JOBS];
};

static uint64_t realtime_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint32_t lowest_up(struct psid *d)
{
    for (size_t i = 0; i < d->conf.nnodes; i++)
        if (d->nodes[i].conf == d->self || d->nodes[i].state == PSNODE_UP)
            return d->conf.nodes[i].id;
    return d->self->id;
}

static size_t node_index(struct psid *d, uint32_t id)
{
    for (size_t i = 0; i < d->conf.nnodes; i++)
        if (d->conf.nodes[i].id == id) return i;
    return SIZE_MAX;
}

/* ---- the scheduler ---- */

/* Whether j's CPUs (its tasks' -c) fit every node's next to the other jobs of row; a row without
 * other jobs takes any job (one that over-commits a node by itself). */
static bool fits(struct gang *g, const struct sjob *j, uint16_t row)
{
    struct psid *d = g->d;
    bool alone = true;
    for (size_t k = 0; k < g->njobs && alone; k++)
        alone = &g->jobs[k] == j || g->jobs[k].row != row;
    if (alone) return true;
    for (size_t n = 0; n < d->conf.nnodes; n++) {
        uint32_t used = j->tasks[n];
        if (!used) continue;
        for (size_t k = 0; k < g->njobs; k++)
            if (&g->jobs[k] != j && g->jobs[k].row == row) used += g->jobs[k].tasks[n];
        if (used > d->conf.nodes[n].cpus) return false;
    }
    return true;
}

static size_t row_jobs(struct gang *g, uint16_t row)
{
    size_t n = 0;
    for (size_t k = 0; k < g->njobs; k++) n += g->jobs[k].row == row;
    return n;
}

static void place(struct gang *g, struct sjob *j)
{
    if (g->rows == 0) g->rows = 1;
    for (uint16_t i = 0; i < g->rows; i++) {
        uint16_t r = (uint16_t)((g->running + i) % g->rows);
        if (fits(g, j, r)) {
            j->row = r;
            return;
        }
    }
    if (g->rows < g->d->conf.gang_mpl) {
        j->row = g->rows++;
        return;
    }
    uint16_t best = 0;
    for (uint16_t r = 1; r < g->rows; r++)
        if (row_jobs(g, r) < row_jobs(g, best)) best = r;
    j->row = best;
    log_notice("gang: job %u:%u fits no row and %u rows exist (gang.mpl): shares row %u",
               PSTID_NODE(j->job), (unsigned)PSTID_PID(j->job), g->rows, best);
}

/* Rows without jobs go; the others keep their order. */
static void compact(struct gang *g)
{
    uint16_t map[GANG_WIRE_MAX_ROWS], n = 0;
    for (uint16_t r = 0; r < g->rows; r++) map[r] = row_jobs(g, r) ? n++ : UINT16_MAX;
    if (g->rows && !n) {
        g->rows = g->running = 0;
        return;
    }
    if (n == g->rows) return;
    for (size_t k = 0; k < g->njobs; k++)
        if (g->jobs[k].row < g->rows) g->jobs[k].row = map[g->jobs[k].row];
    uint16_t run = g->running < g->rows ? g->running : 0;
    while (run < g->rows && map[run] == UINT16_MAX) run++;
    g->running = run < g->rows ? map[run] : 0;
    g->rows = n;
}

static void drop_job(struct gang *g, size_t k)
{
    free(g->jobs[k].tasks);
    g->jobs[k] = g->jobs[--g->njobs];
}

static void sched_report(struct gang *g, uint32_t from, const struct psmsg *m)
{
    struct psid *d = g->d;
    size_t n = node_index(d, from);
    if (n == SIZE_MAX) return;
    for (size_t k = 0; k < g->njobs; k++) g->jobs[k].tasks[n] = 0;
    size_t pos = 0;
    struct psmsg_field f;
    uint64_t job = 0;
    bool have_job = false;
    while (psmsg_next(&m->body, &pos, &f)) {
        uint32_t cnt;
        if (f.tag == PSF_JOB && psmsg_field_u64(&f, &job) == 0) {
            have_job = true;
            continue;
        }
        if (f.tag != PSF_N || !have_job || psmsg_field_u32(&f, &cnt) < 0) continue;
        have_job = false;
        size_t k = 0;
        while (k < g->njobs && g->jobs[k].job != job) k++;
        if (k == g->njobs) {
            if (g->njobs == GANG_MAX_JOBS) continue; /* not scheduled: it simply runs */
            uint32_t *t = calloc(d->conf.nnodes, sizeof *t);
            if (!t) continue;
            g->jobs[k] = (struct sjob){.job = job, .tasks = t, .row = UINT16_MAX};
            g->njobs++;
        }
        g->jobs[k].tasks[n] = cnt;
    }
    for (size_t k = 0; k < g->njobs;) {
        bool any = false;
        for (size_t i = 0; i < d->conf.nnodes && !any; i++) any = g->jobs[k].tasks[i] != 0;
        if (!any)
            drop_job(g, k);
        else
            k++;
    }
    compact(g);
    for (size_t k = 0; k < g->njobs; k++)
        if (g->jobs[k].row == UINT16_MAX) {
            place(g, &g->jobs[k]);
            log_info("gang: job %u:%u in row %u of %u", PSTID_NODE(g->jobs[k].job),
                     (unsigned)PSTID_PID(g->jobs[k].job), g->jobs[k].row, g->rows);
        }
}

static void sched_switch(struct gang *g)
{
    struct psid *d = g->d;
    struct gang_switch *s = &g->out;
    if (g->rows > 1) g->running = (uint16_t)((g->running + 1) % g->rows);
    if (g->running >= g->rows) g->running = 0;
    s->scheduler = d->self->id;
    s->epoch = d->incarnation;
    s->seq = ++g->seq;
    s->at_ns = realtime_ns() + GANG_LEAD_NS;
    s->quantum_ms = d->conf.gang_quantum_ms;
    s->rows = g->rows ? g->rows : 1;
    s->row = g->running;
    s->njobs = (uint16_t)g->njobs;
    for (size_t k = 0; k < g->njobs; k++)
        s->jobs[k] = (struct gang_entry){g->jobs[k].job, g->jobs[k].row};
    size_t len = gang_encode(g->rec, sizeof g->rec, s);
    if (!len) return;
    for (size_t i = 0; i < d->conf.nnodes; i++) {
        if (d->nodes[i].conf != d->self && d->nodes[i].state != PSNODE_UP) continue;
        struct psmsg_buf b = {0};
        psmsg_begin(&b, PSM_D_GANG_SWITCH, 0);
        psmsg_put_bytes(&b, PSF_DATA, g->rec, len);
        psid_send(d, d->conf.nodes[i].id, &b);
        psmsg_buf_free(&b);
    }
}

/* ---- every node ---- */

/* a job's CPUs on this node: its tasks' -c added up (what fits() counts against CPUs) */
static void collect_one(void *ctx, uint64_t job, pid_t pid, uint32_t cpt)
{
    struct collect *c = ctx;
    (void)pid;
    for (size_t i = 0; i < c->n; i++)
        if (c->jobs[i] == job) {
            c->counts[i] += cpt;
            return;
        }
    if (c->n == GANG_MAX_JOBS) return;
    c->jobs[c->n] = job;
    c->counts[c->n++] = cpt;
}

static void report(struct gang *g, uint64_t now)
{
    struct psid *d = g->d;
    struct collect *c = &g->collect;
    c->n = 0;
    tasks_each(d, collect_one, c);
    struct psmsg_buf b = {0};
    psmsg_begin(&b, PSM_D_GANG_REPORT, 0);
    for (size_t i = 0; i < c->n; i++) {
        psmsg_put_u64(&b, PSF_JOB, c->jobs[i]);
        psmsg_put_u32(&b, PSF_N, c->counts[i]);
    }
    if (psid_send(d, g->sched, &b) == 0) {
        g->sent_epoch = d->task_epoch;
        g->sent_at = now;
    }
    psmsg_buf_free(&b);
}

struct stopctx {
    struct gang *g;
    uint64_t job;
    int sig;
};

static void signal_one(void *ctx, uint64_t job, pid_t pid, uint32_t cpt)
{
    (void)cpt;
    struct stopctx *s = ctx;
    if (job == s->job) priv_signal(s->g->d, pid, s->sig, true);
}

static void set_frozen(struct gang *g, uint64_t job, bool freeze)
{
    struct psid *d = g->d;
    if (cgroup_freeze(d->cgroups, job, freeze) == 0 || !tasks_of_job(d, job, false)) return;
    if (!g->said_nofreezer) {
        log_notice("gang: no cgroup freezer for job %u:%u: its process groups get "
                   "SIGSTOP/SIGCONT instead",
                   PSTID_NODE(job), (unsigned)PSTID_PID(job));
        g->said_nofreezer = true;
    }
    struct stopctx s = {g, job, freeze ? SIGSTOP : SIGCONT};
    tasks_each(d, signal_one, &s);
}

static struct ljob *frozen_find(struct gang *g, uint64_t job)
{
    for (size_t i = 0; i < g->nfrozen; i++)
        if (g->frozen[i].job == job) return &g->frozen[i];
    return NULL;
}

/* ---- waiting for the freezer: cgroup.events ---- */

static void wait_close(struct gang *g, struct ljob *l)
{
    if (l->ev < 0) return;
    loop_fd_del(g->d->loop, l->ev);
    close(l->ev);
    l->ev = -1;
}

/* The end of a switch's wait (done, given up, superseded by the next switch, psid ending):
 * every cgroup.events closed, the timer cancelled, thawed jobs forgotten. */
static void wait_end(struct gang *g)
{
    for (size_t i = 0; i < g->nfrozen; i++) wait_close(g, &g->frozen[i]);
    if (g->wait_timer) loop_timer_cancel(g->d->loop, g->wait_timer);
    g->wait_timer = 0;
    g->waiting = g->by_event = 0;
    size_t k = 0;
    for (size_t i = 0; i < g->nfrozen; i++)
        if (g->frozen[i].frozen) g->frozen[k++] = g->frozen[i];
    g->nfrozen = k;
}

/* Each job still waited for whose cgroup.events agrees (or says nothing of a freezer, or
 * is gone with its directory) is waited for no more; when none is left, the switch is done.
 * A job counts "by event" when the kernel had marked its file modified (the change came
 * after psid opened it: psid heard of it, not guessed it). */
static void wait_check(struct gang *g)
{
    for (size_t i = 0; i < g->nfrozen; i++) {
        struct ljob *l = &g->frozen[i];
        if (l->ev < 0) continue;
        bool changed = false;
        int st = cgroup_events_frozen(l->ev, &changed);
        if (st >= 0 && st != (int)l->frozen) continue;
        wait_close(g, l);
        g->waiting--;
        g->by_event += changed;
    }
    if (g->waiting) return;
    /* bench/gang.sh reads it: the switch's skew between nodes is the spread of "done at"
     * (CLOCK_REALTIME us) over the nodes' lines of one switch; test/shell/gang_basic.sh
     * counts "by event" */
    log_debug("gang: switch %llu done in %llu us, %lld us after its time, done at %llu us, "
              "%u by event",
              (unsigned long long)g->last_seq,
              (unsigned long long)((loop_now() - g->switch_start) / 1000),
              (long long)(g->switch_late / 1000), (unsigned long long)(realtime_ns() / 1000),
              g->by_event);
    wait_end(g);
}

static void wait_event(void *ctx, uint32_t events)
{
    (void)events; /* EPOLLPRI (and EPOLLERR with it): a line of a cgroup.events changed */
    wait_check(ctx);
}

static void wait_timeout(void *ctx)
{
    struct gang *g = ctx;
    g->wait_timer = 0;
    g->slow++;
    log_notice("gang: switch %llu not done after %llu ms (%u jobs' cgroup.events do not agree)",
               (unsigned long long)g->last_seq, GANG_WAIT_NS / 1000000ull, g->waiting);
    wait_end(g);
}

/* l's cgroup.events opened, read (so that the kernel's next mark is for a change after
 * now) and watched, unless it is already. Opened before the job's cgroup.freeze is
 * written: the change the write makes is marked on this file, and seen by the read after
 * it (wait_check) or else it wakes the loop. */
static void wait_open(struct gang *g, struct ljob *l)
{
    struct psid *d = g->d;
    if (l->ev >= 0 || (l->ev = cgroup_events_open(d->cgroups, l->job)) < 0) return;
    cgroup_events_frozen(l->ev, NULL);
    if (loop_fd(d->loop, l->ev, EPOLLPRI, wait_event, g) < 0) {
        close(l->ev);
        l->ev = -1;
        return;
    }
    g->waiting++;
}

/* After the switch's writes: every job it froze, kept frozen or thawed is waited for until
 * its cgroup.events agrees, at most GANG_WAIT_NS. */
static void wait_begin(struct gang *g)
{
    for (size_t i = 0; i < g->nfrozen; i++) wait_open(g, &g->frozen[i]);
    wait_check(g);
    if (g->waiting)
        g->wait_timer = loop_timer(g->d->loop, loop_now() + GANG_WAIT_NS, wait_timeout, g);
}

static void apply_one(void *ctx, uint64_t job, pid_t pid, uint32_t cpt)
{
    (void)cpt;
    struct applyctx *a = ctx;
    struct gang *g = a->g;
    (void)pid;
    for (size_t i = 0; i < a->nseen; i++)
        if (a->seen[i] == job) return;
    if (a->nseen < GANG_MAX_JOBS) a->seen[a->nseen++] = job;
    bool freeze = false;
    for (size_t i = 0; i < a->s->njobs; i++)
        if (a->s->jobs[i].job == job) {
            freeze = a->s->jobs[i].row != a->s->row && a->s->jobs[i].row != GANG_ROW_QUEUED;
            break;
        }
    struct ljob *l = frozen_find(g, job);
    if (freeze && !l) {
        if (g->nfrozen == GANG_MAX_JOBS) return;
        l = &g->frozen[g->nfrozen++];
        *l = (struct ljob){.job = job, .frozen = false, .ev = -1};
    }
    if (!l || l->frozen == freeze) return;
    if (g->d->cgroups) wait_open(g, l); /* before the write (wait_open) */
    set_frozen(g, job, freeze);
    l->frozen = freeze;
}

static void thaw_all(struct gang *g)
{
    wait_end(g);
    for (size_t i = 0; i < g->nfrozen; i++)
        if (g->frozen[i].frozen) {
            set_frozen(g, g->frozen[i].job, false);
            g->frozen[i].frozen = false;
        }
    g->nfrozen = 0;
}

/* The matrix of the switch taking effect, and each job's count of quanta and of those it
 * ran: every node sees every switch, so every node's psstat shows the same. */
static void view_update(struct gang *g, const struct gang_switch *s)
{
    size_t k = 0;
    for (size_t i = 0; i < s->njobs && k < GANG_MAX_JOBS; i++) {
        struct gview v = {s->jobs[i].job, s->jobs[i].row, 0, 0};
        for (size_t o = 0; o < g->nview; o++)
            if (g->view[o].job == v.job) {
                v.quanta = g->view[o].quanta;
                v.ran = g->view[o].ran;
                break;
            }
        if (v.row != GANG_ROW_QUEUED) {
            v.quanta++;
            v.ran += v.row == s->row;
        }
        g->scratch[k++] = v;
    }
    memcpy(g->view, g->scratch, k * sizeof *g->view);
    g->nview = k;
    g->view_rows = s->rows;
    g->view_row = s->row;
    g->view_sched = s->scheduler;
}

static void apply(void *ctx)
{
    struct gang *g = ctx;
    struct psid *d = g->d;
    g->apply_timer = 0;
    if (!g->have_next) return;
    g->have_next = false;
    wait_end(g); /* the last switch's wait, if it is not done: this one supersedes it */
    struct applyctx *a = &g->apply;
    a->g = g;
    a->s = g->next;
    a->nseen = 0;
    g->switch_start = loop_now();
    g->switch_late = (int64_t)(realtime_ns() - g->next->at_ns);
    view_update(g, g->next);
    tasks_each(d, apply_one, a);
    /* jobs that ended here are forgotten (their directory is gone); without cgroups, thawed
     * ones too (nothing to wait for) */
    size_t k = 0;
    for (size_t i = 0; i < g->nfrozen; i++) {
        bool here = false;
        for (size_t s = 0; s < a->nseen && !here; s++) here = a->seen[s] == g->frozen[i].job;
        if (here && (g->frozen[i].frozen || d->cgroups)) g->frozen[k++] = g->frozen[i];
    }
    g->nfrozen = k;
    g->switches++;
    if (d->cgroups) wait_begin(g);
}

static void node_switch(struct gang *g, uint32_t from, const struct psmsg *m)
{
    struct psid *d = g->d;
    struct psmsg_field f;
    const char *why = "no record";
    if (!psmsg_find(&m->body, PSF_DATA, &f) || gang_decode(f.val, f.len, g->next, &why) < 0) {
        log_notice("gang: switch from node %u dropped: %s", from, why);
        return;
    }
    if (g->next->scheduler != from || from != lowest_up(d)) {
        log_info("gang: switch from node %u, which is not the scheduler: dropped", from);
        return;
    }
    if (g->next->epoch == g->last_epoch && g->next->seq <= g->last_seq) return; /* replayed */
    g->last_epoch = g->next->epoch;
    g->last_seq = g->next->seq;
    uint64_t now = loop_now(), rt = realtime_ns();
    g->last_switch = now;
    uint64_t at = g->next->at_ns > rt ? now + (g->next->at_ns - rt) : now;
    g->have_next = true;
    if (g->apply_timer) loop_timer_cancel(d->loop, g->apply_timer);
    g->apply_timer = loop_timer(d->loop, at, apply, g);
}

static void tick(void *ctx)
{
    struct gang *g = ctx;
    struct psid *d = g->d;
    uint64_t now = loop_now();
    g->tick_timer = loop_timer(d->loop, now + g->quantum_ns / GANG_TICKS, tick, g);
    uint32_t s = lowest_up(d);
    if (s != g->sched || d->task_epoch != g->sent_epoch || now - g->sent_at >= GANG_REPORT_NS) {
        g->sched = s;
        report(g, now);
    }
    if (++g->ticks < GANG_TICKS) return;
    g->ticks = 0;
    if (s == d->self->id) sched_switch(g); /* to itself too: last_switch may pass now */
    if (g->nfrozen && g->last_switch < now && now - g->last_switch > GANG_STALE * g->quantum_ns) {
        log_notice("gang: no switch heard for %u quanta: every job frozen here thawed", GANG_STALE);
        thaw_all(g);
    }
}

static void gang_message(struct psid *d, uint32_t from, const struct psmsg *m)
{
    struct gang *g = d->gang;
    if (!g) return;
    if (m->type == PSM_D_GANG_REPORT) {
        if (lowest_up(d) == d->self->id) sched_report(g, from, m);
    } else {
        node_switch(g, from, m);
    }
}

int gang_start(struct psid *d)
{
    if (!d->conf.gang_quantum_ms) return 0;
    struct gang *g = calloc(1, sizeof *g);
    if (!g || !(g->next = calloc(1, sizeof *g->next))) {
        free(g);
        return -1;
    }
    g->d = d;
    g->quantum_ns = (uint64_t)d->conf.gang_quantum_ms * 1000000ull;
    g->sched = UINT32_MAX;
    g->last_switch = loop_now();
    g->tick_timer = loop_timer(d->loop, loop_now() + g->quantum_ns / GANG_TICKS, tick, g);
    d->gang = g;
    log_notice("gang: scheduling on, quantum %u ms, %u rows at most%s", d->conf.gang_quantum_ms,
               d->conf.gang_mpl, d->cgroups ? "" : " (no cgroups: SIGSTOP/SIGCONT)");
    return 0;
}

void gang_thaw_all(struct psid *d)
{
    if (d->gang) thaw_all(d->gang);
}

static void gang_stop(struct psid *d)
{
    struct gang *g = d->gang;
    if (!g) return;
    if (g->tick_timer) loop_timer_cancel(d->loop, g->tick_timer);
    if (g->apply_timer) loop_timer_cancel(d->loop, g->apply_timer);
    wait_end(g);
    for (size_t k = 0; k < g->njobs; k++) free(g->jobs[k].tasks);
    free(g->next);
    free(g);
    d->gang = NULL;
}

static void gang_node_lost(struct psid *d, uint32_t node)
{
    struct gang *g = d->gang;
    if (!g) return;
    size_t n = node_index(d, node);
    if (n == SIZE_MAX) return;
    for (size_t k = 0; k < g->njobs; k++) g->jobs[k].tasks[n] = 0;
}

/* PSM_GANG (psstat jobs): the last switch's matrix, each job's quanta, this node's queue */
static void gang_request(struct psid *d, struct client *c, const struct psmsg *m)
{
    struct gang *g = d->gang;
    struct psmsg_buf b = {0};
    psmsg_begin(&b, PSM_GANG_REPLY, m->id);
    psmsg_put_u32(&b, PSF_QUANTUM_MS, g ? d->conf.gang_quantum_ms : 0);
    if (g) {
        psmsg_put_u32(&b, PSF_ROWS, g->view_rows);
        psmsg_put_u32(&b, PSF_ROW, g->view_row);
        if (g->nview) psmsg_put_u32(&b, PSF_NODE_ID, g->view_sched);
        for (size_t i = 0; i < g->nview; i++) {
            psmsg_record_begin(&b, PSF_GANG_JOB);
            psmsg_put_u64(&b, PSF_JOB, g->view[i].job);
            psmsg_put_u32(&b, PSF_ROW, g->view[i].row);
            psmsg_put_u32(&b, PSF_QUANTA, g->view[i].quanta);
            psmsg_put_u32(&b, PSF_RAN, g->view[i].ran);
            psmsg_record_end(&b);
        }
        uint32_t place = 0;
        uint64_t now = loop_now();
        for (const struct jobq_entry *e = d->jobq.head; e; e = e->next) {
            struct psmsg q = jobq_msg(e);
            uint32_t np = 1;
            psmsg_get_u32(&q.body, PSF_NP, &np);
            uint64_t ms = (now - e->since_ns) / 1000000ull;
            psmsg_record_begin(&b, PSF_GANG_QUEUED);
            psmsg_put_u32(&b, PSF_N, ++place);
            psmsg_put_u32(&b, PSF_UID, e->uid);
            psmsg_put_u32(&b, PSF_NP, np);
            psmsg_put_u32(&b, PSF_WAITED_MS, ms > UINT32_MAX ? UINT32_MAX : (uint32_t)ms);
            psmsg_record_end(&b);
        }
    }
    client_send(c, &b);
    psmsg_buf_free(&b);
}

static const uint16_t gang_requests[] = {PSM_GANG, 0};
static const uint16_t gang_messages[] = {PSM_D_GANG_SWITCH, PSM_D_GANG_REPORT, 0};
const struct psid_module gang_module = {.name = "gang",
                                        .requests = gang_requests,
                                        .request = gang_request,
                                        .messages = gang_messages,
                                        .message = gang_message,
                                        .node_lost = gang_node_lost,
                                        .stop = gang_stop};
