/*
 * daemons.c - the cluster's psid processes (see pslocal.h): starting one per node, their pid
 * files, the identity check before any signal (a pid is signalled only while
 * /proc/PID/cmdline is a psid started with "-f DIR/psid.conf --node I"), and stopping them.
 */
#include "pslocal.h"

#include <dirent.h>
#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* Is pid a psid started with "-f conf --node NODE"? A zombie's cmdline is empty: no. */
bool pl_is_our_psid(pid_t pid, const char *conf, unsigned node)
{
    char p[64], buf[8192];
    snprintf(p, sizeof p, "/proc/%d/cmdline", (int)pid);
    int fd = open(p, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    ssize_t r = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (r <= 0) return false;
    buf[r] = '\0';
    const char *argv[64];
    int argc = 0;
    for (char *s = buf; s < buf + r && argc < 64; s += strlen(s) + 1) argv[argc++] = s;
    bool name = false, f = false, n = false;
    char id[16];
    snprintf(id, sizeof id, "%u", node);
    for (int i = 0; i < argc; i++) {
        const char *base = strrchr(argv[i], '/');
        base = base ? base + 1 : argv[i];
        /* argv[0] is psid (or psid-something), or an interpreter running such a script */
        if (i < 2 && !strncmp(base, "psid", 4)) name = true;
        if (i + 1 < argc && !strcmp(argv[i], "-f") && !strcmp(argv[i + 1], conf)) f = true;
        if (i + 1 < argc && !strcmp(argv[i], "--node") && !strcmp(argv[i + 1], id)) n = true;
    }
    return name && f && n;
}

/* A daemon's pid from DIR/psid-NODE.pid: > 0, or 0 if missing or garbage. */
pid_t pl_read_pid(const char *dir, unsigned node)
{
    char path[PATH_MAX], buf[32];
    pl_path_in(path, sizeof path, dir, "psid-%u.pid", node);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    ssize_t r = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (r <= 0) return 0;
    buf[r] = '\0';
    buf[strcspn(buf, "\n")] = '\0';
    unsigned v;
    return pl_parse_uint(buf, 1, INT_MAX, &v) ? (pid_t)v : 0;
}

/* Node ids that have a pid file in dir, sorted; returns how many (at most max). */
size_t pl_pid_files(const char *dir, unsigned *ids, size_t max)
{
    DIR *d = opendir(dir);
    if (!d) return 0;
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < max) {
        unsigned id;
        char tail[8];
        if (sscanf(e->d_name, "psid-%u.pi%1s", &id, tail) == 2 && !strcmp(tail, "d")) {
            char want[32];
            snprintf(want, sizeof want, "psid-%u.pid", id);
            if (!strcmp(want, e->d_name)) ids[n++] = id;
        }
    }
    closedir(d);
    for (size_t i = 1; i < n; i++) /* insertion sort: a handful of ids */
        for (size_t j = i; j > 0 && ids[j - 1] > ids[j]; j--) {
            unsigned t = ids[j];
            ids[j] = ids[j - 1];
            ids[j - 1] = t;
        }
    return n;
}

/* Alive and ours; reaps it first if it is our child (the failure path of `up`). */
bool pl_daemon_alive(pid_t pid, const char *conf, unsigned node)
{
    int st;
    if (pid <= 0) return false;
    if (waitpid(pid, &st, WNOHANG) == pid) return false;
    return pl_is_our_psid(pid, conf, node);
}

struct daemon_ref {
    unsigned node;
    pid_t pid;
};

/* Signal the daemons of dir, wait, SIGKILL; returns how many were still running at first and
 * sets *stuck to how many survived SIGKILL. */
size_t pl_stop_daemons(const char *dir, size_t *stuck)
{
    char conf[PATH_MAX];
    pl_path_in(conf, sizeof conf, dir, CONF_FILE);
    unsigned ids[4096];
    size_t n = pl_pid_files(dir, ids, sizeof ids / sizeof *ids);
    struct daemon_ref *d = calloc(n ? n : 1, sizeof *d);
    if (!d) err(1, "calloc");
    size_t live = 0;
    for (size_t i = 0; i < n; i++) {
        pid_t pid = pl_read_pid(dir, ids[i]);
        if (!pl_daemon_alive(pid, conf, ids[i])) continue; /* stale: gone, or the pid reused */
        if (kill(pid, SIGTERM) == 0) d[live++] = (struct daemon_ref){ids[i], pid};
    }
    size_t started = live;
    for (int round = 0; round < 2 && live; round++) {
        int64_t deadline = pl_now_ms() + (round == 0 ? STOP_GRACE_MS : KILL_WAIT_MS);
        for (;;) {
            size_t still = 0;
            for (size_t i = 0; i < live; i++)
                if (pl_daemon_alive(d[i].pid, conf, d[i].node)) d[still++] = d[i];
            live = still;
            if (!live || pl_now_ms() >= deadline) break;
            pl_sleep_ms(20);
        }
        if (round == 0)
            for (size_t i = 0; i < live; i++) {
                warnx("node %u (pid %d) still running after %d s: SIGKILL", d[i].node,
                      (int)d[i].pid, STOP_GRACE_MS / 1000);
                if (pl_daemon_alive(d[i].pid, conf, d[i].node)) kill(d[i].pid, SIGKILL);
            }
    }
    for (size_t i = 0; i < live; i++)
        warnx("node %u (pid %d) survives SIGKILL", d[i].node, (int)d[i].pid);
    *stuck = live;
    free(d);
    return started;
}

pid_t pl_start_psid(const struct pl_up *u, unsigned i)
{
    char log[PATH_MAX], pidf[PATH_MAX], node[16], ns[64];
    pl_path_in(log, sizeof log, u->dir, "psid-%u.log", i);
    pl_path_in(pidf, sizeof pidf, u->dir, "psid-%u.pid", i);
    snprintf(node, sizeof node, "%u", i);
    pl_ns_name(u, i, ns, sizeof ns);
    char *argv[] = {
        "ip",     "netns", "exec",         ns,  (char *)u->psid, "-f", (char *)u->conf_path,
        "--node", node,    "--foreground", NULL};
    char **av = u->o->netns ? argv : argv + 4;

    int lfd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (lfd < 0) err(1, "%s", log);
    pid_t pid = fork();
    if (pid < 0) err(1, "fork");
    if (pid == 0) {
        setsid(); /* detached: no terminal, no signals from ours */
        pl_child_reset_signals();
        int nul = open("/dev/null", O_RDONLY);
        if (nul >= 0) dup2(nul, 0);
        dup2(lfd, 1);
        dup2(lfd, 2);
        if (u->o->netns)
            execvp(av[0], av);
        else
            execv(av[0], av);
        fprintf(stderr, "pslocal: %s: %s\n", av[0], strerror(errno));
        _exit(127);
    }
    close(lfd);
    char buf[32];
    int l = snprintf(buf, sizeof buf, "%d\n", (int)pid);
    pl_write_file(pidf, buf, (size_t)l, 0644);
    return pid;
}

void pl_describe_exit(unsigned node, int status)
{
    if (WIFEXITED(status))
        warnx("node %u: psid exited with status %d", node, WEXITSTATUS(status));
    else
        warnx("node %u: psid killed by signal %d (%s)", node, WTERMSIG(status),
              strsignal(WTERMSIG(status)));
}

/* The failure path of up: our own children are ours for sure, even before they exec psid
 * (the identity check would not know them yet): TERM, wait, KILL, reap. */
void pl_stop_children(pid_t *pids, unsigned n)
{
    for (unsigned i = 0; i < n; i++)
        if (pids[i] > 0) kill(pids[i], SIGTERM);
    for (int round = 0; round < 2; round++) {
        int64_t deadline = pl_now_ms() + (round == 0 ? STOP_GRACE_MS : KILL_WAIT_MS);
        for (;;) {
            unsigned live = 0;
            for (unsigned i = 0; i < n; i++) {
                int st;
                if (pids[i] > 0 && waitpid(pids[i], &st, WNOHANG) != 0) pids[i] = 0;
                if (pids[i] > 0) live++;
            }
            if (!live || pl_now_ms() >= deadline) break;
            pl_sleep_ms(20);
        }
        if (round == 0)
            for (unsigned i = 0; i < n; i++)
                if (pids[i] > 0) kill(pids[i], SIGKILL);
    }
}
