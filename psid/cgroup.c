/*
 * cgroup.c - a cgroup v2 directory per job on this node, so that every process of a job is
 * found, also one that double-forked out of its task's process group, and so that a psid
 * restarted after a crash finds what its predecessor left.
 *
 * The base is a directory under psid's own cgroup (/proc/self/cgroup's "0::" line, under
 * the cgroup2 mount of /proc/self/mountinfo), named after a hash of this node's client
 * socket path: two psids of one machine (a loopback cluster, two clusters at once) never
 * share one, and the psid started after a crash finds its predecessor's. Under systemd the
 * unit delegates its subtree (Delegate=yes in conf/psid.service). For the rest psid uses
 * only cgroup.procs, cgroup.kill, cgroup.events and cpu.stat, which need no controller, so
 * psid itself may stay in its own cgroup. The memory controller (--mem: a job's memory.max,
 * memory.events, memory.peak) and the io controller (io.stat) are enabled in the base's
 * cgroup.subtree_control when psid's own cgroup has them for its children (cgroup.controllers
 * of the base): the root cgroup, or a parent that enabled them. On a hybrid hierarchy, where
 * the cgroup2 tree has no controllers, --mem goes through the v1 memory controller instead
 * (memcg1.c: a second directory of the job's name, limit, OOM kills and peak there);
 * without either --mem is refused with the reason, and the usage of a job comes from its
 * ranks alone.
 *
 * A job's directory, job-HOME-NUMBER, is made when its first rank is queued here and held
 * while ranks of it are queued or tasks of it are in the table (cgroup_hold). Each task
 * joins it in its vfork child, before it takes the user's identity (spawn.c), through a
 * cgroup.procs the privileged child opens (privparent.c): the engine, which makes and
 * removes the directories, owns the base but may not move processes into it. When the
 * last is gone, whatever is left in the directory (a daemon a task started) is killed
 * (cgroup.kill: SIGKILL to every process in it) and the directory removed, retried while
 * the kernel still counts dying processes. A job's end (its client gone, its home lost)
 * goes through the tasks' process groups as before (SIGTERM, SIGKILL after kill_delay_ms);
 * what escaped them is killed when the last task leaves.
 *
 * A task has ended when its own process has exited, whatever it left behind (as Slurm's
 * slurmstepd with proctrack/cgroup ends a step when its tasks have exited): when the last
 * task of a job on this node exits (cgroup_running), what is still in the job's directory
 * is killed at once, so that nothing it left holds the tasks' output open; the directory
 * itself goes when the tasks have left the table.
 *
 * At start, directories found in the base are a dead predecessor's: their processes are
 * killed and logged. Without a writable cgroup2 (not root, no cgroup2 mounted, a read-only
 * hierarchy) psid says so once and tracks tasks by process group only.
 */
#include "cgroup.h"

#include "fnv1a.h"
#include "memcg1.h"

#include "log.h"

#include <dirent.h>
#include <stdbool.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define REMOVE_TRIES 50          /* rmdir retries while processes die ... */
#define REMOVE_EVERY 20000000ull /* ... every 20 ms: a second in all */

struct cg_job {
    uint64_t job;
    uint64_t mem_max;   /* --mem: memory.max (or v1's limit) written, 0: none */
    uint64_t oom_kills; /* memory.events oom_kill counted */
    bool made;          /* its directory exists */
    long held;          /* queued ranks and tasks in the table */
    long running;       /* tasks whose own process has not exited */
    unsigned tries;
    uint64_t timer;
    struct cgroups *cg;
    struct cg_job *next;
};

struct cgroups {
    struct loop *loop;
    int base_fd; /* the base directory, O_PATH */
    char base[4096];
    struct cg_job *jobs;
    bool memory, io;     /* the controllers are on for the job directories */
    struct memcg1 *mem1; /* --mem through cgroup v1 where the v2 tree has no memory */
};

static int read_line_with(const char *path, const char *prefix, char *out, size_t len)
{
    FILE *f = fopen(path, "re");
    if (!f) return -1;
    char line[4096];
    int rc = -1;
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, prefix, strlen(prefix))) {
            line[strcspn(line, "\n")] = 0;
            int n = snprintf(out, len, "%s", line + strlen(prefix));
            rc = n >= 0 && (size_t)n < len ? 0 : -1;
            break;
        }
    fclose(f);
    return rc;
}

/* The mount point of the cgroup2 hierarchy: mountinfo's field 5 on a line whose
 * filesystem type (after " - ") is cgroup2. */
static int cgroup2_mount(char *out, size_t len)
{
    FILE *f = fopen("/proc/self/mountinfo", "re");
    if (!f) return -1;
    char line[4096];
    int rc = -1;
    while (rc < 0 && fgets(line, sizeof line, f)) {
        const char *sep = strstr(line, " - ");
        if (!sep || strncmp(sep + 3, "cgroup2 ", 8)) continue;
        char mnt[4096];
        size_t n;
        if (sscanf(line, "%*s %*s %*s %*s %4095s", mnt) == 1 && (n = strlen(mnt)) < len) {
            memcpy(out, mnt, n + 1);
            rc = 0;
        }
    }
    fclose(f);
    return rc;
}

static void job_name(uint64_t job, char *out, size_t len)
{
    snprintf(out, len, "job-%u-%u", PSTID_NODE(job), (unsigned)PSTID_PID(job));
}

/* Kill what is in a job directory: cgroup.kill where the kernel has it (5.14), else
 * SIGKILL to each pid listed. The number of processes it held. */
static int kill_dir(int base_fd, const char *name)
{
    char path[300];
    int n = 0;
    snprintf(path, sizeof path, "%s/cgroup.procs", name);
    int fd = openat(base_fd, path, O_RDONLY | O_CLOEXEC);
    FILE *f = fd >= 0 ? fdopen(fd, "r") : NULL;
    long pid;
    while (f && fscanf(f, "%ld", &pid) == 1) n++;
    if (f) fclose(f);
    if (!n) return 0;
    snprintf(path, sizeof path, "%s/cgroup.kill", name);
    fd = openat(base_fd, path, O_WRONLY | O_CLOEXEC);
    if (fd >= 0 && write(fd, "1", 1) == 1) {
        close(fd);
        return n;
    }
    if (fd >= 0) close(fd);
    snprintf(path, sizeof path, "%s/cgroup.procs", name);
    fd = openat(base_fd, path, O_RDONLY | O_CLOEXEC);
    f = fd >= 0 ? fdopen(fd, "r") : NULL;
    while (f && fscanf(f, "%ld", &pid) == 1) kill((pid_t)pid, SIGKILL);
    if (f) fclose(f);
    return n;
}

/* What a dead predecessor left: killed, and the directories removed (waiting up to a
 * second for the kernel to let the processes go). */
static void sweep(struct cgroups *cg)
{
    int fd = openat(cg->base_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *dir = fd >= 0 ? fdopendir(fd) : NULL;
    if (!dir) return;
    struct dirent *e;
    while ((e = readdir(dir))) {
        if (strncmp(e->d_name, "job-", 4)) continue;
        int n = kill_dir(cg->base_fd, e->d_name);
        if (n)
            log_notice("%d processes of %s, left by a psid before this one, killed", n, e->d_name);
        for (int t = 0; t < REMOVE_TRIES && unlinkat(cg->base_fd, e->d_name, AT_REMOVEDIR) < 0 &&
                        errno == EBUSY;
             t++)
            nanosleep(&(struct timespec){0, (long)REMOVE_EVERY}, NULL);
    }
    closedir(dir);
}

/* Whether the word w is in the file name (of the base), a list of words. */
static bool file_has_word(int dirfd, const char *name, const char *w)
{
    char buf[512];
    int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return false;
    buf[n] = 0;
    size_t wl = strlen(w);
    for (char *p = buf; (p = strstr(p, w)); p += wl)
        if ((p == buf || p[-1] == ' ') && (p[wl] == ' ' || p[wl] == '\n' || !p[wl])) return true;
    return false;
}

/* The memory and io controllers for the job directories, where the base has them. */
static void enable_controllers(struct cgroups *cg)
{
    const char *names[] = {"memory", "io"};
    bool *on[] = {&cg->memory, &cg->io};
    for (int i = 0; i < 2; i++) {
        if (!file_has_word(cg->base_fd, "cgroup.controllers", names[i])) continue;
        char cmd[16];
        int n = snprintf(cmd, sizeof cmd, "+%s", names[i]);
        int fd = openat(cg->base_fd, "cgroup.subtree_control", O_WRONLY | O_CLOEXEC);
        if (fd >= 0 && write(fd, cmd, (size_t)n) == n) *on[i] = true;
        if (fd >= 0) close(fd);
    }
}

struct cgroups *cgroup_open(struct loop *loop, const char *socket_path)
{
    char mnt[2048], own[2048];
    const char *why = NULL;
    if (cgroup2_mount(mnt, sizeof mnt) < 0)
        why = "no cgroup2 hierarchy is mounted";
    else if (read_line_with("/proc/self/cgroup", "0::", own, sizeof own) < 0)
        why = "this process is in no cgroup2";
    struct cgroups *cg = why ? NULL : calloc(1, sizeof *cg);
    if (!why && !cg) why = "out of memory";
    if (cg) {
        cg->loop = loop;
        int n = snprintf(cg->base, sizeof cg->base, "%s%s/psid-%016llx", mnt,
                         strcmp(own, "/") ? own : "", (unsigned long long)fnv1a64(socket_path));
        if (n < 0 || (size_t)n >= sizeof cg->base)
            why = "the path is too long";
        else if (mkdir(cg->base, 0755) < 0 && errno != EEXIST)
            why = strerror(errno);
        cg->base_fd = why ? -1 : open(cg->base, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (!why && cg->base_fd < 0) why = strerror(errno);
    }
    if (why) {
        log_notice("tasks are tracked by process group only (no cgroup of their own: %s%s%s)",
                   cg ? cg->base : "", cg ? ": " : "", why);
        free(cg);
        return NULL;
    }
    sweep(cg);
    enable_controllers(cg);
    const char *v1why = NULL;
    if (!cg->memory) cg->mem1 = memcg1_open(strrchr(cg->base, '/') + 1, &v1why);
    if (cg->mem1)
        log_notice("each job's tasks in a cgroup under %s (memory controller on: cgroup v1, %s)%s",
                   cg->base, memcg1_path(cg->mem1), cg->io ? " (io controller on)" : "");
    else
        log_notice("each job's tasks in a cgroup under %s%s%s%s%s", cg->base,
                   cg->memory ? " (memory controller on)" : "", cg->io ? " (io controller on)" : "",
                   v1why ? "; no memory controller: v1: " : "", v1why ? v1why : "");
    return cg;
}

static struct cg_job *find(struct cgroups *cg, uint64_t job)
{
    for (struct cg_job *j = cg ? cg->jobs : NULL; j; j = j->next)
        if (j->job == job) return j;
    return NULL;
}

static void unlink_job(struct cg_job *j)
{
    for (struct cg_job **pp = &j->cg->jobs; *pp; pp = &(*pp)->next)
        if (*pp == j) {
            *pp = j->next;
            break;
        }
    if (j->timer) loop_timer_cancel(j->cg->loop, j->timer);
    free(j);
}

static void try_remove(void *ctx)
{
    struct cg_job *j = ctx;
    char name[64];
    j->timer = 0;
    job_name(j->job, name, sizeof name);
    kill_dir(j->cg->base_fd, name);
    int rc = unlinkat(j->cg->base_fd, name, AT_REMOVEDIR) == 0 ? 0 : errno;
    if (rc == 0 || rc == ENOENT) rc = memcg1_remove(j->cg->mem1, name);
    if (rc != EBUSY || ++j->tries >= REMOVE_TRIES) {
        if (rc && rc != ENOENT)
            log_warn("cgroup %s/%s: not removed: %s", j->cg->base, name, strerror(rc));
        unlink_job(j);
        return;
    }
    j->timer = loop_timer(j->cg->loop, loop_now() + REMOVE_EVERY, try_remove, j);
}

int cgroup_give(struct cgroups *cg, uid_t uid, gid_t gid)
{
    if (!cg) return 0;
    return fchownat(cg->base_fd, "", uid, gid, AT_EMPTY_PATH) < 0 ? -1
                                                                  : memcg1_give(cg->mem1, uid, gid);
}

int cgroup_mem1_fd(const struct cgroups *cg)
{
    return cg ? memcg1_fd(cg->mem1) : -1;
}

const char *cgroup_mem1_path(const struct cgroups *cg)
{
    return cg ? memcg1_path(cg->mem1) : NULL;
}

void cgroup_set_mem1_fd(struct cgroups *cg, int fd)
{
    if (cg) memcg1_set_fd(cg->mem1, fd);
}

int cgroup_open_mem1_procs(const struct cgroups *cg, uint64_t job)
{
    char name[64];
    if (!cg || !cg->mem1) return -1;
    job_name(job, name, sizeof name);
    return memcg1_open_procs(cg->mem1, name);
}

const char *cgroup_base_path(const struct cgroups *cg)
{
    return cg ? cg->base : NULL;
}

int cgroup_base_fd(const struct cgroups *cg)
{
    return cg ? cg->base_fd : -1;
}

void cgroup_set_base_fd(struct cgroups *cg, int fd)
{
    if (cg) cg->base_fd = fd;
}

int cgroup_open_procs(const struct cgroups *cg, uint64_t job)
{
    char path[100];
    if (!cg) return -1;
    job_name(job, path, 64);
    strcat(path, "/cgroup.procs");
    return openat(cg->base_fd, path, O_WRONLY | O_CLOEXEC);
}

void cgroup_hold(struct cgroups *cg, uint64_t job, long delta)
{
    if (!cg) return;
    struct cg_job *j = find(cg, job);
    char name[64];
    job_name(job, name, sizeof name);
    if (!j && delta > 0) {
        if (!(j = calloc(1, sizeof *j))) return;
        *j = (struct cg_job){.job = job, .cg = cg, .next = cg->jobs};
        cg->jobs = j;
    }
    if (!j) return;
    if (j->held <= 0 && delta > 0 && !j->made) { /* (again) in use: the directory */
        if (j->timer) {
            loop_timer_cancel(cg->loop, j->timer);
            j->timer = 0;
        }
        if (mkdirat(cg->base_fd, name, 0755) < 0 && errno != EEXIST)
            log_warn("cgroup %s/%s: %s", cg->base, name, strerror(errno));
        else
            j->made = true;
    }
    j->held += delta;
    if (j->held > 0) return;
    /* nothing of the job is queued or in the table: what is left goes, then the directory */
    j->made = false;
    j->tries = 0;
    try_remove(j);
}

long cgroup_running(struct cgroups *cg, uint64_t job, long delta)
{
    struct cg_job *j = find(cg, job);
    if (!j) return 0;
    j->running += delta;
    if (j->running > 0 || delta > 0) return j->running;
    j->running = 0;
    /* the job's last task here has exited: whatever is left of it goes now, while its
     * tasks may still be in the table with output to deliver (the directory goes when
     * the last of them leaves, cgroup_hold) */
    char name[64];
    job_name(job, name, sizeof name);
    int n = j->made ? kill_dir(cg->base_fd, name) : 0;
    if (n)
        log_info("job %u:%u: its tasks here have exited; %d processes they left killed",
                 PSTID_NODE(job), (unsigned)PSTID_PID(job), n);
    return 0;
}

int cgroup_set_mem(struct cgroups *cg, uint64_t job, uint64_t bytes, char *why, size_t whylen)
{
    struct cg_job *j = find(cg, job);
    if (!cg || !j || !j->made) {
        snprintf(why, whylen, "--mem needs a cgroup per job, which psid does not have here");
        return -1;
    }
    if (!cg->memory && cg->mem1) {
        char name[64];
        job_name(job, name, sizeof name);
        if (memcg1_set(cg->mem1, name, bytes, why, whylen) < 0) return -1;
        j->mem_max = bytes;
        j->oom_kills = 0;
        return 0;
    }
    if (!cg->memory) {
        snprintf(why, whylen,
                 "--mem: the memory controller is not available to psid's cgroup %s (cgroup v2 "
                 "with memory in the parent's cgroup.subtree_control, or a cgroup v1 memory "
                 "hierarchy)",
                 cg->base);
        return -1;
    }
    char path[100], val[32];
    job_name(job, path, 64);
    strcat(path, "/memory.max");
    int n = snprintf(val, sizeof val, "%llu", (unsigned long long)bytes);
    int fd = openat(cg->base_fd, path, O_WRONLY | O_CLOEXEC);
    if (fd < 0 || write(fd, val, (size_t)n) != n) {
        snprintf(why, whylen, "--mem: %s/%s: %s", cg->base, path, strerror(errno));
        if (fd >= 0) close(fd);
        return -1;
    }
    close(fd);
    j->mem_max = bytes;
    j->oom_kills = 0;
    return 0;
}

uint64_t cgroup_mem(struct cgroups *cg, uint64_t job)
{
    struct cg_job *j = find(cg, job);
    return j ? j->mem_max : 0;
}

/* The value after "key " on a line of a job directory's file: 0, or -1 */
static int read_key(struct cgroups *cg, uint64_t job, const char *file, const char *key,
                    uint64_t *out)
{
    char path[100], line[256];
    job_name(job, path, 64);
    strcat(path, "/");
    strcat(path, file);
    int fd = openat(cg->base_fd, path, O_RDONLY | O_CLOEXEC);
    FILE *f = fd >= 0 ? fdopen(fd, "r") : NULL;
    if (!f) {
        if (fd >= 0) close(fd);
        return -1;
    }
    int rc = -1;
    size_t kl = strlen(key);
    while (rc < 0 && fgets(line, sizeof line, f)) {
        if (strncmp(line, key, kl) || line[kl] != ' ') continue;
        *out = strtoull(line + kl + 1, NULL, 10);
        rc = 0;
    }
    fclose(f);
    return rc;
}

uint64_t cgroup_new_oom_kills(struct cgroups *cg, uint64_t job)
{
    struct cg_job *j = find(cg, job);
    uint64_t n = 0;
    char name[64];
    job_name(job, name, sizeof name);
    if (!j || !j->mem_max ||
        (cg->memory ? read_key(cg, job, "memory.events", "oom_kill", &n)
                    : memcg1_oom_kills(cg->mem1, name, &n)) < 0)
        return 0;
    uint64_t fresh = n > j->oom_kills ? n - j->oom_kills : 0;
    j->oom_kills = n;
    return fresh;
}

int cgroup_usage(struct cgroups *cg, uint64_t job, struct cg_usage *u)
{
    memset(u, 0, sizeof *u);
    struct cg_job *j = find(cg, job);
    if (!j || !j->made) return -1;
    if (read_key(cg, job, "cpu.stat", "user_usec", &u->user_us) == 0 &&
        read_key(cg, job, "cpu.stat", "system_usec", &u->sys_us) == 0)
        u->have |= CG_HAVE_CPU;
    char path[100];
    job_name(job, path, 64);
    strcat(path, "/memory.peak");
    int fd = openat(cg->base_fd, path, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        char buf[32];
        ssize_t n = read(fd, buf, sizeof buf - 1);
        if (n > 0) {
            buf[n] = 0;
            u->peak = strtoull(buf, NULL, 10);
            u->have |= CG_HAVE_PEAK;
        }
        close(fd);
    }
    job_name(job, path, 64);
    if (!(u->have & CG_HAVE_PEAK) && j->mem_max && memcg1_peak(cg->mem1, path, &u->peak) == 0)
        u->have |= CG_HAVE_PEAK;
    /* io.stat: a line per device, "MAJ:MIN rbytes=N wbytes=N rios=N ..." */
    job_name(job, path, 64);
    strcat(path, "/io.stat");
    fd = cg->io ? openat(cg->base_fd, path, O_RDONLY | O_CLOEXEC) : -1;
    FILE *f = fd >= 0 ? fdopen(fd, "r") : NULL;
    if (!f && fd >= 0) close(fd);
    char line[512];
    while (f && fgets(line, sizeof line, f)) {
        char *p;
        if ((p = strstr(line, " rbytes="))) u->rbytes += strtoull(p + 8, NULL, 10);
        if ((p = strstr(line, " wbytes="))) u->wbytes += strtoull(p + 8, NULL, 10);
    }
    if (f) {
        fclose(f);
        u->have |= CG_HAVE_IO;
    }
    return 0;
}

int cgroup_freeze(struct cgroups *cg, uint64_t job, bool freeze)
{
    struct cg_job *j = cg ? find(cg, job) : NULL;
    if (!j || !j->made) return -1;
    char path[100];
    job_name(job, path, 64);
    strcat(path, "/cgroup.freeze");
    int fd = openat(cg->base_fd, path, O_WRONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    ssize_t w = write(fd, freeze ? "1" : "0", 1);
    close(fd);
    return w == 1 ? 0 : -1;
}

int cgroup_events_open(struct cgroups *cg, uint64_t job)
{
    char path[100];
    if (!cg || !find(cg, job)) return -1;
    job_name(job, path, 64);
    strcat(path, "/cgroup.events");
    return openat(cg->base_fd, path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
}

int cgroup_events_frozen(int fd, bool *changed)
{
    if (changed) {
        struct pollfd p = {.fd = fd, .events = POLLPRI};
        *changed = poll(&p, 1, 0) == 1 && (p.revents & POLLPRI);
    }
    /* from offset 0 each time: kernfs shows the file anew, and records that this reader
     * has seen the last change (no POLLPRI until the next) */
    char buf[256];
    ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
    if (n <= 0) return -1;
    buf[n] = 0;
    for (const char *p = buf; p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
        if (!strncmp(p, "frozen ", 7) && (p[7] == '0' || p[7] == '1')) return p[7] - '0';
    return -1;
}

void cgroup_close(struct cgroups *cg)
{
    if (!cg) return;
    while (cg->jobs) {
        struct cg_job *j = cg->jobs;
        char name[64];
        job_name(j->job, name, sizeof name);
        kill_dir(cg->base_fd, name);
        unlink_job(j);
    }
    sweep(cg);
    memcg1_close(cg->mem1);
    close(cg->base_fd);
    rmdir(cg->base);
    free(cg);
}
