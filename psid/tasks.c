/*
 * tasks.c - the tasks running on this node: started on a home node's request (PSM_D_SPAWN,
 * through the spawn queue, spawnq.c), started, signalled and reaped by psid's privileged
 * child (privsep.h), which keeps an exited task a zombie until it leaves this table, so a
 * signal can never reach a recycled pid or process group,
 * their output read and sent to the job's home node with flow control, their input written as it
 * comes, their end reported after all their output (PSM_D_EXIT).
 *
 * A task has ended when its own process has exited, whatever it left behind (as Slurm's
 * slurmstepd with proctrack/cgroup): notifications fire at once; the privileged child has
 * killed what is left in its process group; when it was the job's last task running on
 * this node, what is left in the job's cgroup is killed too (cgroup_running), which ends a
 * daemon that double-forked out of the group with the task's stdout. Its output still in
 * the pipes is then read and delivered, and its end reported after it, as soon as the
 * pipes reach EOF. A pipe that something else still holds open (a leftover of a task whose
 * job still runs other tasks here, or any leftover where there is no cgroup) is read for
 * LINGER_NS more, while the client takes what was read (flow control does not count
 * against it), and then closed: the end goes out and the task leaves the table.
 *
 * Flow control: at most PSI_IO_WINDOW bytes of a task's output may be unacknowledged by the
 * job's client; beyond that this node stops reading the task's pipes, so a slow terminal
 * blocks the task instead of growing any daemon's memory.
 *
 * Ending a job (its client went away, or its home node was lost): SIGTERM to each task's
 * process group, SIGKILL kill_delay_ms later if it is still there.
 */
#include "binding.h"
#include "cgroup.h"
#include "daemon.h"
#include "module.h"
#include "log.h"
#include "psmsg.h"
#include "spawn.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define NBUCKETS  1024
#define CHUNK     (64u << 10)
#define LINGER_NS 1000000000ull /* an exited task's output held open by another: read 1 s more */

struct tstream {
    struct task *t;
    int stream; /* 1 stdout, 2 stderr */
    int fd;     /* -1 once at EOF */
};

struct task {
    struct psid *d;
    uint64_t tid, job;
    uint32_t rank, home;
    pid_t pid; /* started, signalled and reaped by psid's privileged child (privsep.h) */
    uint32_t uid;
    char cmd[64];
    char name[64]; /* the job's name (-J); empty: none */
    struct tstream out[2];
    int in_fd;
    uint8_t *inq; /* input not yet written */
    size_t inq_len, inq_off;
    bool in_close; /* close stdin once the queue is written */
    uint64_t unacked;
    bool paused;
    bool discard; /* the job is gone: read output to EOF and drop it */
    bool exited;
    int status;
    uint64_t kill_timer;
    uint64_t linger_timer; /* exited with its output still open (LINGER_NS) */
    uint32_t cpt;          /* the CPUs it counts for in placement (-c) */
    bool bound;            /* holds cpus (binding.c) */
    struct pscpuset cpus;
    uint64_t started, elapsed; /* loop_now() at its start; ns from it to its exit */
    struct task_usage usage;   /* at its exit (the privileged child's) */
    uint64_t oom;              /* the OOM killer ended it: the job's memory.max here */
    bool node_stats;           /* the job's last task here: its cgroup's usage goes along */
    struct cg_usage cg;
    struct task *next;
};

static size_t bucket(uint64_t tid)
{
    return (size_t)((tid * 0x9E3779B97F4A7C15ull) >> 54) % NBUCKETS;
}

static struct task *find(struct psid *d, uint64_t tid)
{
    if (!d->tasks) return NULL;
    for (struct task *t = d->tasks[bucket(tid)]; t; t = t->next)
        if (t->tid == tid) return t;
    return NULL;
}

int tasks_uid(struct psid *d, uint64_t tid, uint32_t *uid)
{
    struct task *t = find(d, tid);
    if (!t || t->exited) return -1;
    *uid = t->uid;
    return 0;
}

static void update_count(struct psid *d)
{
    struct psid_node *me = psid_node(d, d->self->id);
    if (me) me->used = d->cpus_used > UINT32_MAX ? UINT32_MAX : (uint32_t)d->cpus_used;
    d->task_epoch++;
}

/* The CPUs our tasks hold and its epoch ride on rank and exit reports, so the home node's
 * view of this node is exact right after a start or an end (heartbeats may lag). */
void tasks_put_count(struct psid *d, struct psmsg_buf *b)
{
    struct psid_node *me = psid_node(d, d->self->id);
    psmsg_put_u32(b, PSF_TASKS, me ? me->used : 0);
    psmsg_put_u32(b, PSF_EPOCH, d->task_epoch);
}

static void task_free(struct task *t)
{
    struct psid *d = t->d;
    for (struct task **pp = &d->tasks[bucket(t->tid)]; *pp; pp = &(*pp)->next)
        if (*pp == t) {
            *pp = t->next;
            break;
        }
    d->ntasks--;
    d->cpus_used -= t->cpt;
    update_count(d);
    for (int i = 0; i < 2; i++)
        if (t->out[i].fd >= 0) {
            loop_fd_del(d->loop, t->out[i].fd);
            close(t->out[i].fd);
        }
    if (t->in_fd >= 0) {
        loop_fd_del(d->loop, t->in_fd);
        close(t->in_fd);
    }
    priv_release(d, t->pid); /* the zombie is reaped: its pid and group may be reused now */
    if (t->bound) binding_hold(d, &t->cpus, -1);
    loop_timer_cancel(d->loop, t->kill_timer);
    loop_timer_cancel(d->loop, t->linger_timer);
    if (!t->exited) cgroup_running(d->cgroups, t->job, -1);
    /* the job's last task here: what it left behind is killed (cgroup.c) */
    cgroup_hold(d->cgroups, t->job, -1);
    free(t->inq);
    free(t);
}

/* The end of a task goes out once it has exited and both its output streams are at EOF. */
static void maybe_finish(struct task *t)
{
    if (!t->exited || t->out[0].fd >= 0 || t->out[1].fd >= 0) return;
    struct psid *d = t->d;
    uint64_t job = t->job, tid = t->tid;
    uint32_t rank = t->rank, home = t->home, status = (uint32_t)t->status;
    log_debug("task %u:%d (rank %u) ended, status 0x%x", PSTID_NODE(tid), t->pid, rank, status);
    struct task_usage u = t->usage;
    uint64_t elapsed_us = t->elapsed / 1000, oom = t->oom;
    bool node_stats = t->node_stats;
    struct cg_usage cg = t->cg;
    task_free(t); /* first, so that the count sent below is the new one */
    uint32_t pmi = pmi_rank_exit(d, job, rank); /* an MPI job's: did it finalize? */
    struct psmsg_buf b = {0};
    psmsg_begin(&b, PSM_D_EXIT, 0);
    psmsg_put_u64(&b, PSF_JOB, job);
    psmsg_put_u32(&b, PSF_RANK, rank);
    psmsg_put_u64(&b, PSF_TID, tid);
    psmsg_put_u32(&b, PSF_NODE_ID, d->self->id);
    psmsg_put_u32(&b, PSF_STATUS, status);
    if (pmi != PSPMI_NONE) psmsg_put_u32(&b, PSF_PMI_STATE, pmi);
    if (oom) psmsg_put_u64(&b, PSF_OOM, oom);
    psmsg_put_u64(&b, PSF_ELAPSED_US, elapsed_us);
    psmsg_put_u64(&b, PSF_USER_US, u.user_us);
    psmsg_put_u64(&b, PSF_SYS_US, u.sys_us);
    psmsg_put_u64(&b, PSF_MAXRSS, u.maxrss);
    psmsg_put_u64(&b, PSF_READ_BYTES, u.rchar);
    psmsg_put_u64(&b, PSF_WRITE_BYTES, u.wchar);
    if (node_stats) { /* the job's usage on this node, from its cgroup */
        psmsg_record_begin(&b, PSF_NODE_STATS);
        psmsg_put_u32(&b, PSF_NODE_ID, d->self->id);
        if (cg.have & CG_HAVE_CPU) {
            psmsg_put_u64(&b, PSF_USER_US, cg.user_us);
            psmsg_put_u64(&b, PSF_SYS_US, cg.sys_us);
        }
        if (cg.have & CG_HAVE_PEAK) psmsg_put_u64(&b, PSF_MAXRSS, cg.peak);
        if (cg.have & CG_HAVE_IO) {
            psmsg_put_u64(&b, PSF_READ_BYTES, cg.rbytes);
            psmsg_put_u64(&b, PSF_WRITE_BYTES, cg.wbytes);
        }
        psmsg_record_end(&b);
    }
    tasks_put_count(d, &b);
    /* a launch tree's job: up the tree with the subtree's ends; else straight home */
    bool up = false;
    if (!b.err) {
        struct psmsg_view rec = {b.data + PSMSG_HDR, b.len - PSMSG_HDR};
        up = spawntree_exit(d, job, rank, &rec);
    }
    if (!up) psid_send(d, home, &b);
    psmsg_buf_free(&b);
}

static void on_output(void *ctx, uint32_t events);

static void set_reading(struct task *t, bool on)
{
    for (int i = 0; i < 2; i++)
        if (t->out[i].fd >= 0)
            loop_fd(t->d->loop, t->out[i].fd, on ? EPOLLIN : 0, on_output, &t->out[i]);
    t->paused = !on;
}

static void send_io(struct task *t, int stream, const uint8_t *data, size_t n)
{
    struct psmsg_buf b = {0};
    psmsg_begin(&b, PSM_D_IO, 0);
    psmsg_put_u64(&b, PSF_JOB, t->job);
    psmsg_put_u32(&b, PSF_RANK, t->rank);
    psmsg_put_u64(&b, PSF_TID, t->tid);
    psmsg_put_u32(&b, PSF_STREAM, (uint32_t)stream);
    psmsg_put_bytes(&b, PSF_DATA, data, n);
    psid_send(t->d, t->home, &b);
    psmsg_buf_free(&b);
}

/* The end of one output stream: the home node hears it (an empty message), the pipe goes. */
static void end_stream(struct tstream *s)
{
    struct task *t = s->t;
    if (!t->discard) send_io(t, s->stream, NULL, 0);
    loop_fd_del(t->d->loop, s->fd);
    close(s->fd);
    s->fd = -1;
}

static void on_output(void *ctx, uint32_t events)
{
    struct tstream *s = ctx;
    struct task *t = s->t;
    (void)events;
    static uint8_t buf[CHUNK];
    while (s->fd >= 0 && (t->unacked < PSI_IO_WINDOW || t->discard)) {
        size_t want = PSI_IO_WINDOW - t->unacked < CHUNK ? PSI_IO_WINDOW - t->unacked : CHUNK;
        ssize_t r = read(s->fd, buf, want);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
        if (r <= 0) { /* EOF (or an error, treated alike): tell the home node */
            end_stream(s);
            maybe_finish(t);
            return;
        }
        if (t->discard) continue;
        t->unacked += (uint64_t)r;
        send_io(t, s->stream, buf, (size_t)r);
    }
    if (s->fd >= 0 && t->unacked >= PSI_IO_WINDOW) set_reading(t, false);
}

/* An exited task's output is still open LINGER_NS after its exit: what is in the pipes now
 * is taken, and unless the client has still to take what was read (flow control), the
 * pipes are closed and the task's end goes out. */
static void linger_over(void *ctx)
{
    struct task *t = ctx;
    struct psid *d = t->d;
    uint64_t tid = t->tid;
    t->linger_timer = 0;
    for (int i = 0; i < 2; i++) {
        if (t->out[i].fd >= 0 && !t->paused) on_output(&t->out[i], EPOLLIN);
        if (!(t = find(d, tid))) return; /* both at EOF: it has ended */
    }
    if (t->paused && !t->discard) { /* the client is slow, not the pipe: wait for it */
        t->linger_timer = loop_timer(d->loop, loop_now() + LINGER_NS, linger_over, t);
        return;
    }
    log_info("task %u:%d (rank %u) exited %.1f s ago and something it left still holds its "
             "output open: closed",
             PSTID_NODE(tid), t->pid, t->rank, LINGER_NS / 1e9);
    for (int i = 0; i < 2; i++)
        if (t->out[i].fd >= 0) end_stream(&t->out[i]);
    maybe_finish(t);
}

void tasks_exited(struct psid *d, pid_t pid, uint32_t status, const struct task_usage *u)
{
    uint64_t tid = PSTID(d->self->id, pid);
    struct task *t = find(d, tid);
    if (!t || t->exited) return;
    t->exited = true;
    t->status = (int)status;
    t->elapsed = loop_now() - t->started;
    if (u) t->usage = *u;
    /* killed by SIGKILL while the job's cgroup counted a new OOM kill: the OOM killer */
    if (WIFSIGNALED((int)status) && WTERMSIG((int)status) == SIGKILL &&
        cgroup_new_oom_kills(d->cgroups, t->job))
        t->oom = cgroup_mem(d->cgroups, t->job);
    /* the job's last task here: whatever is left of the job goes (its process group is
     * gone already: the privileged child killed it with the exit); its usage here goes
     * with this task's end */
    if (cgroup_running(d->cgroups, t->job, -1) == 0 &&
        cgroup_usage(d->cgroups, t->job, &t->cg) == 0)
        t->node_stats = true;
    notify_task_exit(d, tid, status); /* at exit, not after the output */
    if (!(t = find(d, tid))) return;
    if (t->out[0].fd >= 0 || t->out[1].fd >= 0)
        t->linger_timer = loop_timer(d->loop, loop_now() + LINGER_NS, linger_over, t);
    maybe_finish(t);
}

static void on_input_writable(void *ctx, uint32_t events);

static void send_input_ack(struct task *t, size_t n)
{
    struct psmsg_buf b = {0};
    psmsg_begin(&b, PSM_D_INPUT_ACK, 0);
    psmsg_put_u64(&b, PSF_JOB, t->job);
    psmsg_put_u32(&b, PSF_RANK, t->rank);
    psmsg_put_u64(&b, PSF_BYTES, n);
    psid_send(t->d, t->home, &b);
    psmsg_buf_free(&b);
}

static void close_input(struct task *t)
{
    if (t->in_fd < 0) return;
    loop_fd_del(t->d->loop, t->in_fd);
    close(t->in_fd);
    t->in_fd = -1;
}

static void write_input(struct task *t)
{
    size_t done = 0;
    while (t->in_fd >= 0 && t->inq_off < t->inq_len) {
        ssize_t w = write(t->in_fd, t->inq + t->inq_off, t->inq_len - t->inq_off);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
        if (w < 0) { /* the task closed its stdin (EPIPE): what is left is dropped */
            done += t->inq_len - t->inq_off;
            t->inq_off = t->inq_len;
            close_input(t);
            break;
        }
        t->inq_off += (size_t)w;
        done += (size_t)w;
    }
    if (t->inq_off == t->inq_len) t->inq_off = t->inq_len = 0;
    if (done) send_input_ack(t, done);
    if (t->in_fd >= 0) {
        if (t->inq_len)
            loop_fd(t->d->loop, t->in_fd, EPOLLOUT, on_input_writable, t);
        else if (t->in_close)
            close_input(t);
        else
            loop_fd_del(t->d->loop, t->in_fd);
    }
}

static void on_input_writable(void *ctx, uint32_t events)
{
    (void)events;
    write_input(ctx);
}

static void queue_input(struct task *t, const uint8_t *data, size_t n)
{
    if (t->in_fd < 0) { /* no stdin (or closed): acknowledge so the client goes on */
        if (n) send_input_ack(t, n);
        return;
    }
    if (n == 0) {
        t->in_close = true;
    } else {
        uint8_t *q = realloc(t->inq, t->inq_len + n);
        if (!q) return;
        memcpy(q + t->inq_len, data, n);
        t->inq = q;
        t->inq_len += n;
    }
    write_input(t);
}

static void kill_now(void *ctx)
{
    struct task *t = ctx;
    t->kill_timer = 0;
    /* the group: the task, or what it left behind holding its output */
    if (priv_signal(t->d, t->pid, SIGKILL, true) == 0)
        log_info("task %u:%d (or its children) still alive after kill_delay: SIGKILL",
                 PSTID_NODE(t->tid), t->pid);
}

/* End a task whose job is gone: SIGTERM to its process group now, SIGKILL later. Nobody
 * will acknowledge its output any more: it is read and dropped, so that its pipes reach
 * EOF and the task leaves the table. */
static void end_task(struct task *t)
{
    if (!t->discard) {
        t->discard = true;
        uint64_t tid = t->tid;
        struct psid *d = t->d;
        set_reading(t, true);
        on_output(&t->out[0], EPOLLIN);
        if (!(t = find(d, tid))) return;
        on_output(&t->out[1], EPOLLIN);
        if (!(t = find(d, tid))) return;
    }
    if (t->kill_timer) return;
    if (priv_signal(t->d, t->pid, SIGTERM, true)) return; /* nobody left in the group */
    t->kill_timer = loop_timer(
        t->d->loop, loop_now() + (uint64_t)t->d->conf.kill_delay_ms * 1000000ull, kill_now, t);
}

static void for_each(struct psid *d, bool (*match)(struct task *, void *),
                     void (*fn)(struct task *), void *arg)
{
    if (!d->tasks) return;
    for (size_t b = 0; b < NBUCKETS; b++) {
        struct task *t = d->tasks[b];
        while (t) {
            struct task *next = t->next; /* fn may free t */
            if (match(t, arg)) fn(t);
            t = next;
        }
    }
}

struct job_owner {
    uint64_t job;
    uint32_t uid;
};

static bool of_job(struct task *t, void *arg)
{
    const struct job_owner *jo = arg;
    return t->job == jo->job && t->uid == jo->uid;
}

static bool of_home(struct task *t, void *arg)
{
    return t->home == *(uint32_t *)arg;
}

void tasks_home_lost(struct psid *d, uint32_t node)
{
    spawnq_drop_home(d, node);
    for_each(d, of_home, end_task, &node);
}

static bool any(struct task *t, void *arg)
{
    (void)t;
    (void)arg;
    return true;
}

static void kill_hard(struct task *t)
{
    priv_signal(t->d, t->pid, SIGKILL, true);
    task_free(t);
}

void tasks_stop_all(struct psid *d)
{
    spawnq_free(d);
    for_each(d, any, kill_hard, NULL);
    free(d->tasks);
    d->tasks = NULL;
}

int tasks_signal_one(struct psid *d, uint64_t tid, int sig, uint32_t uid)
{
    struct task *t = find(d, tid);
    if (sig < 0 || sig >= NSIG) return EINVAL;
    if (!t || t->exited) return ESRCH;
    if (uid != 0 && uid != t->uid) return EPERM;
    return priv_signal(d, t->pid, sig, false);
}

int tasks_signal_job(struct psid *d, uint64_t job, int sig, uint32_t uid, uint32_t *count)
{
    int err = 0;
    *count = 0;
    if (sig < 0 || sig >= NSIG) return EINVAL;
    if (!d->tasks) return 0;
    for (size_t b = 0; b < NBUCKETS; b++)
        for (struct task *t = d->tasks[b]; t; t = t->next) {
            if (t->job != job) continue;
            int e = uid != 0 && uid != t->uid ? EPERM : priv_signal(d, t->pid, sig, true);
            if (e == 0)
                (*count)++;
            else if (!err)
                err = e;
        }
    return err;
}

void tasks_append_records(struct psid *d, struct psmsg_buf *b)
{
    if (!d->tasks) return;
    for (size_t k = 0; k < NBUCKETS; k++)
        for (struct task *t = d->tasks[k]; t; t = t->next) {
            psmsg_record_begin(b, PSF_TASK);
            psmsg_put_u64(b, PSF_TID, t->tid);
            psmsg_put_u64(b, PSF_JOB, t->job);
            psmsg_put_u32(b, PSF_RANK, t->rank);
            psmsg_put_u32(b, PSF_UID, t->uid);
            psmsg_put_u32(b, PSF_STATE, t->exited ? PSTASK_EXITED : PSTASK_RUNNING);
            psmsg_put_str(b, PSF_CMD, t->cmd);
            if (t->name[0]) psmsg_put_str(b, PSF_JOB_NAME, t->name);
            psmsg_record_end(b);
        }
}

/* ---- tasks started by the spawn queue (spawnq.c) ---- */

uint64_t tasks_add(struct psid *d, const struct spawned *s, uint64_t job, uint32_t rank,
                   uint32_t home, uint32_t uid, uint32_t cpt, const char *cmd)
{
    struct task *t = calloc(1, sizeof *t);
    if (!t || (!d->tasks && !(d->tasks = calloc(NBUCKETS, sizeof *d->tasks)))) {
        free(t);
        priv_release(d, s->pid); /* killed and reaped */
        if (s->in_fd >= 0) close(s->in_fd);
        close(s->out_fd);
        close(s->err_fd);
        return 0;
    }
    *t = (struct task){.d = d,
                       .tid = PSTID(d->self->id, s->pid),
                       .job = job,
                       .rank = rank,
                       .home = home,
                       .pid = s->pid,
                       .uid = uid,
                       .cpt = cpt ? cpt : 1,
                       .started = loop_now(),
                       .in_fd = s->in_fd};
    snprintf(t->cmd, sizeof t->cmd, "%s", cmd);
    t->out[0] = (struct tstream){t, 1, s->out_fd};
    t->out[1] = (struct tstream){t, 2, s->err_fd};
    size_t bk = bucket(t->tid);
    t->next = d->tasks[bk];
    d->tasks[bk] = t;
    d->ntasks++;
    d->cpus_used += t->cpt;
    update_count(d);
    cgroup_hold(d->cgroups, job, 1);
    cgroup_running(d->cgroups, job, 1);
    set_reading(t, true);
    return t->tid;
}

size_t tasks_of_job(struct psid *d, uint64_t job, bool other)
{
    size_t n = 0;
    if (!d->tasks) return 0;
    for (size_t b = 0; b < NBUCKETS; b++)
        for (struct task *t = d->tasks[b]; t; t = t->next) n += (t->job == job) != other;
    return n;
}

void tasks_each(struct psid *d, void (*fn)(void *ctx, uint64_t job, pid_t pid, uint32_t cpt),
                void *ctx)
{
    if (!d->tasks) return;
    for (size_t b = 0; b < NBUCKETS; b++)
        for (struct task *t = d->tasks[b]; t; t = t->next)
            if (!t->exited) fn(ctx, t->job, t->pid, t->cpt);
}

void tasks_set_name(struct psid *d, uint64_t tid, const char *name)
{
    struct task *t = find(d, tid);
    if (t && name) snprintf(t->name, sizeof t->name, "%s", name);
}

void tasks_set_cpus(struct psid *d, uint64_t tid, const struct pscpuset *s)
{
    struct task *t = find(d, tid);
    if (!t || t->bound) return;
    t->cpus = *s;
    t->bound = true;
    binding_hold(d, s, 1);
}

size_t tasks_of_uid(struct psid *d, uint32_t uid)
{
    size_t n = 0;
    if (!d->tasks) return 0;
    for (size_t b = 0; b < NBUCKETS; b++)
        for (struct task *t = d->tasks[b]; t; t = t->next) n += t->uid == uid;
    return n;
}

void tasks_from_daemon(struct psid *d, uint32_t from, const struct psmsg *m)
{
    uint64_t tid = 0, job = 0, bytes = 0;
    uint32_t rank = 0, uid = 0;
    struct psmsg_field data;
    switch (m->type) {
    case PSM_D_SPAWN:
        spawnq_request(d, from, m);
        break;
    case PSM_D_IO_ACK: {
        if (psmsg_get_u64(&m->body, PSF_TID, &tid) < 0 ||
            psmsg_get_u64(&m->body, PSF_BYTES, &bytes) < 0)
            return;
        struct task *t = find(d, tid);
        if (!t) return;
        t->unacked = bytes > t->unacked ? 0 : t->unacked - bytes;
        if (t->paused && t->unacked < PSI_IO_WINDOW) {
            set_reading(t, true);
            on_output(&t->out[0], EPOLLIN);
            if ((t = find(d, tid)) && !t->paused) on_output(&t->out[1], EPOLLIN);
        }
        break;
    }
    case PSM_D_INPUT: /* only to the job's tasks, and only of the job's owner */
        if (psmsg_get_u64(&m->body, PSF_JOB, &job) < 0 ||
            psmsg_get_u32(&m->body, PSF_RANK, &rank) < 0 ||
            psmsg_get_u32(&m->body, PSF_UID, &uid) < 0 || !psmsg_find(&m->body, PSF_DATA, &data) ||
            !d->tasks)
            return;
        for (size_t b = 0; b < NBUCKETS; b++)
            for (struct task *t = d->tasks[b]; t; t = t->next)
                if (t->job == job && t->uid == uid && PSTID_NODE(job) == from &&
                    (rank == PSI_ALL_RANKS || rank == t->rank))
                    queue_input(t, data.val, data.len);
        break;
    case PSM_D_JOB_GONE: /* from the job's home only, for the owner's tasks only */
        if (psmsg_get_u64(&m->body, PSF_JOB, &job) < 0 ||
            psmsg_get_u32(&m->body, PSF_UID, &uid) < 0 || PSTID_NODE(job) != from)
            return;
        struct job_owner jo = {job, uid};
        spawnq_drop_job(d, job, uid);
        spawntree_job_gone(d, job);
        pmi_job_gone(d, job);
        for_each(d, of_job, end_task, &jo);
        break;
    }
}

static const uint16_t tasks_messages[] = {PSM_D_SPAWN, PSM_D_IO_ACK, PSM_D_INPUT, PSM_D_JOB_GONE,
                                          0};
const struct psid_module tasks_module = {.name = "tasks",
                                         .messages = tasks_messages,
                                         .message = tasks_from_daemon,
                                         .node_lost = tasks_home_lost};
