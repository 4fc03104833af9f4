/*
 * memcg1.c - --mem through the cgroup v1 memory controller (see memcg1.h).
 *
 * On a hybrid hierarchy the cgroup2 tree psid keeps its job directories in (cgroup.c) has
 * no controllers, and memory is a v1 hierarchy of its own (/sys/fs/cgroup/memory). There,
 * as Slurm's cgroup/v1 plugin does, a job with --mem gets a second directory of the same
 * name, job-HOME-NUMBER, under a base named as the v2 one, below psid's own v1 memory
 * cgroup (/proc/self/cgroup's "N:memory:" line, under the mount of /proc/self/mountinfo
 * whose super options name memory): memory.limit_in_bytes is the limit, and
 * memory.memsw.limit_in_bytes the same where swap is accounted, so that a job cannot swap
 * past it. Its tasks join it next to their v2 directory, in the same vfork child (spawn.c).
 * memory.oom_control's oom_kill counts the OOM killer's kills (Linux 4.13), and
 * memory.max_usage_in_bytes is the peak. The v2 directory still finds and kills every
 * process of the job; this directory only limits and counts, and goes when they are gone.
 */
#include "memcg1.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

struct memcg1 {
    int fd; /* the base, O_PATH */
    char path[4096];
};

/* Whether the comma-separated list has the word w. */
static bool list_has(const char *list, const char *w)
{
    size_t wl = strlen(w);
    for (const char *p = list; (p = strstr(p, w)); p += wl)
        if ((p == list || p[-1] == ',') && (p[wl] == ',' || !p[wl])) return true;
    return false;
}

/* psid's own memory cgroup: its path in the v1 memory hierarchy. 0, or -1. */
static int own_path(char *out, size_t len)
{
    FILE *f = fopen("/proc/self/cgroup", "re");
    char line[4096];
    int rc = -1;
    while (f && rc < 0 && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (!c2) continue;
        *c2 = 0;
        if (list_has(c1 + 1, "memory") && strlen(c2 + 1) < len) {
            snprintf(out, len, "%s", c2 + 1);
            rc = 0;
        }
    }
    if (f) fclose(f);
    return rc;
}

/* The v1 memory hierarchy's mount point and the cgroup path at its root. 0, or -1. */
static int mount_of(char *mnt, size_t mlen, char *root, size_t rlen)
{
    FILE *f = fopen("/proc/self/mountinfo", "re");
    char line[4096];
    int rc = -1;
    while (f && rc < 0 && fgets(line, sizeof line, f)) {
        /* ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS [TAGS...] - FSTYPE SOURCE SUPEROPTS */
        char *sep = strstr(line, " - ");
        char r[2048], m[2048], fs[64], src[256], sopts[1024];
        if (!sep || sscanf(line, "%*s %*s %*s %2047s %2047s", r, m) != 2 ||
            sscanf(sep + 3, "%63s %255s %1023s", fs, src, sopts) != 3)
            continue;
        if (strcmp(fs, "cgroup") || !list_has(sopts, "memory")) continue;
        if (strlen(m) >= mlen || strlen(r) >= rlen) continue;
        snprintf(mnt, mlen, "%s", m);
        snprintf(root, rlen, "%s", r);
        rc = 0;
    }
    if (f) fclose(f);
    return rc;
}

/* SIGKILL to every process in dir/name (a predecessor's leftovers), then rmdir, a few
 * times while they die. */
static void remove_left(int dirfd, const char *name)
{
    for (int tries = 0; tries < 10; tries++) {
        if (unlinkat(dirfd, name, AT_REMOVEDIR) == 0 || errno != EBUSY) return;
        char path[300];
        snprintf(path, sizeof path, "%s/cgroup.procs", name);
        int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC);
        FILE *f = fd >= 0 ? fdopen(fd, "r") : NULL;
        if (!f && fd >= 0) close(fd);
        long pid;
        while (f && fscanf(f, "%ld", &pid) == 1)
            if (pid > 1) kill((pid_t)pid, SIGKILL);
        if (f) fclose(f);
        nanosleep(&(struct timespec){0, 10000000}, NULL);
    }
}

/* Every job directory in the base, with what is left in it. */
static void remove_jobs(struct memcg1 *m)
{
    int dfd = openat(m->fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *dir = dfd >= 0 ? fdopendir(dfd) : NULL;
    if (!dir && dfd >= 0) close(dfd);
    struct dirent *e;
    while (dir && (e = readdir(dir)))
        if (e->d_type == DT_DIR && strncmp(e->d_name, "job-", 4) == 0)
            remove_left(m->fd, e->d_name);
    if (dir) closedir(dir);
}

struct memcg1 *memcg1_open(const char *base_name, const char **why)
{
    char mnt[2048], root[2048], own[2048];
    if (mount_of(mnt, sizeof mnt, root, sizeof root) < 0) {
        *why = "no cgroup v1 memory hierarchy is mounted";
        return NULL;
    }
    if (own_path(own, sizeof own) < 0) {
        *why = "this process is in no v1 memory cgroup";
        return NULL;
    }
    /* own is relative to the hierarchy's root; the mount shows the part below root */
    const char *rel = own;
    size_t rl = strlen(root);
    if (strcmp(root, "/")) {
        if (strncmp(own, root, rl) || (own[rl] && own[rl] != '/')) {
            *why = "psid's v1 memory cgroup is outside the mounted part of the hierarchy";
            return NULL;
        }
        rel = own + rl;
    }
    struct memcg1 *m = calloc(1, sizeof *m);
    if (!m) {
        *why = "out of memory";
        return NULL;
    }
    m->fd = -1;
    int n =
        snprintf(m->path, sizeof m->path, "%s%s/%s", mnt, strcmp(rel, "/") ? rel : "", base_name);
    if (n < 0 || (size_t)n >= sizeof m->path) {
        *why = "the path is too long";
        free(m);
        return NULL;
    }
    if ((mkdir(m->path, 0755) < 0 && errno != EEXIST) ||
        (m->fd = open(m->path, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0 ||
        faccessat(m->fd, "memory.limit_in_bytes", W_OK, 0) < 0) {
        *why = strerror(errno);
        if (m->fd >= 0) close(m->fd);
        free(m);
        return NULL;
    }
    remove_jobs(m); /* a dead predecessor's */
    return m;
}

void memcg1_close(struct memcg1 *m)
{
    if (!m) return;
    remove_jobs(m);
    close(m->fd);
    rmdir(m->path);
    free(m);
}

const char *memcg1_path(const struct memcg1 *m)
{
    return m ? m->path : NULL;
}

int memcg1_give(struct memcg1 *m, uid_t uid, gid_t gid)
{
    return m ? fchownat(m->fd, "", uid, gid, AT_EMPTY_PATH) : 0;
}

int memcg1_fd(const struct memcg1 *m)
{
    return m ? m->fd : -1;
}

void memcg1_set_fd(struct memcg1 *m, int fd)
{
    if (m) m->fd = fd;
}

/* Write val to name/file. 0, or -1 with errno. */
static int write_file(const struct memcg1 *m, const char *name, const char *file, const char *val)
{
    char path[300];
    snprintf(path, sizeof path, "%s/%s", name, file);
    int fd = openat(m->fd, path, O_WRONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    ssize_t len = (ssize_t)strlen(val), w = write(fd, val, (size_t)len);
    int err = errno;
    close(fd);
    errno = err;
    return w == len ? 0 : -1;
}

int memcg1_set(struct memcg1 *m, const char *name, uint64_t bytes, char *why, size_t whylen)
{
    char val[32];
    snprintf(val, sizeof val, "%llu", (unsigned long long)bytes);
    if ((mkdirat(m->fd, name, 0755) < 0 && errno != EEXIST) ||
        write_file(m, name, "memory.limit_in_bytes", val) < 0) {
        snprintf(why, whylen, "--mem: %s/%s/memory.limit_in_bytes: %s", m->path, name,
                 strerror(errno));
        return -1;
    }
    /* swap accounting (memsw) may be off: then there is no file, and nothing to bound */
    if (write_file(m, name, "memory.memsw.limit_in_bytes", val) < 0 && errno != ENOENT) {
        snprintf(why, whylen, "--mem: %s/%s/memory.memsw.limit_in_bytes: %s", m->path, name,
                 strerror(errno));
        return -1;
    }
    return 0;
}

int memcg1_open_procs(const struct memcg1 *m, const char *name)
{
    char path[300];
    if (!m) return -1;
    snprintf(path, sizeof path, "%s/cgroup.procs", name);
    return openat(m->fd, path, O_WRONLY | O_CLOEXEC);
}

/* The number after "key " in name/file (key NULL: the file's first number). 0, or -1. */
static int read_num(const struct memcg1 *m, const char *name, const char *file, const char *key,
                    uint64_t *out)
{
    char path[300], line[256];
    snprintf(path, sizeof path, "%s/%s", name, file);
    int fd = openat(m->fd, path, O_RDONLY | O_CLOEXEC);
    FILE *f = fd >= 0 ? fdopen(fd, "r") : NULL;
    if (!f) {
        if (fd >= 0) close(fd);
        return -1;
    }
    int rc = -1;
    size_t kl = key ? strlen(key) : 0;
    while (rc < 0 && fgets(line, sizeof line, f)) {
        if (key && (strncmp(line, key, kl) || line[kl] != ' ')) continue;
        *out = strtoull(line + (key ? kl + 1 : 0), NULL, 10);
        rc = 0;
    }
    fclose(f);
    return rc;
}

int memcg1_oom_kills(const struct memcg1 *m, const char *name, uint64_t *n)
{
    return m ? read_num(m, name, "memory.oom_control", "oom_kill", n) : -1;
}

int memcg1_peak(const struct memcg1 *m, const char *name, uint64_t *peak)
{
    return m ? read_num(m, name, "memory.max_usage_in_bytes", NULL, peak) : -1;
}

int memcg1_remove(struct memcg1 *m, const char *name)
{
    if (!m || unlinkat(m->fd, name, AT_REMOVEDIR) == 0 || errno == ENOENT) return 0;
    return errno;
}
