/*
 * spawn.c - where a task is started (see spawn.h).
 *
 * The child is a vfork child: it shares the daemon's memory until it execs, so nothing of
 * the daemon is copied, and it must not allocate or touch shared state. Everything it needs
 * is prepared by the parent (argv, the environment with a buffer for PSI_TID, the user's
 * groups); it only makes system calls: reset the signal mask and dispositions psid changed,
 * start a session of its own (so the whole task can be ended as a group), take the user's
 * identity (groups, gid, uid: in that order, and all must succeed), change directory, set
 * the umask, connect its pipes (and its PMI socket, at PMI_FD_NUM, for an MPI job's rank),
 * and exec with the task's PATH. A failure is written as an
 * errno and a step code into the status pipe, which exec closes on success; the parent
 * resumes when the child has exec'd or exited.
 */
#include "spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

enum step { STEP_CRED = 1, STEP_CWD, STEP_EXEC, STEP_CGROUP, STEP_CPUS, STEP_OUT, STEP_ERR };

static int pidfd_open_(pid_t pid)
{
    return (int)syscall(SYS_pidfd_open, pid, 0);
}

/* "PSI_TID=NODE:PID" without stdio (async-signal-safe, no allocation) */
static void format_tid(char *out, unsigned node, unsigned pid)
{
    char tmp[24];
    size_t n = 0;
    const char *pre = "PSI_TID=";
    while (*pre) out[n++] = *pre++;
    unsigned vals[2] = {node, pid};
    for (int k = 0; k < 2; k++) {
        size_t t = 0;
        do tmp[t++] = (char)('0' + vals[k] % 10);
        while ((vals[k] /= 10) && t < sizeof tmp);
        while (t) out[n++] = tmp[--t];
        if (k == 0) out[n++] = ':';
    }
    out[n] = 0;
}

__attribute__((noreturn)) static void child(const struct spawn_args *a, int in[2], int out[2],
                                            int err[2], int status, int devnull)
{
    sigset_t none;
    sigemptyset(&none);
    for (int s = 1; s < NSIG; s++) {
        struct sigaction sa = {.sa_handler = SIG_DFL};
        sigaction(s, &sa, NULL);
    }
    sigprocmask(SIG_SETMASK, &none, NULL);
    setsid();
    int step = STEP_CGROUP; /* while still root: the directory is psid's */
    if (a->cgroup_fd >= 0 && write(a->cgroup_fd, "0", 1) != 1) goto fail;
    if (a->memcg_fd >= 0 && write(a->memcg_fd, "0", 1) != 1) goto fail;
    step = STEP_CPUS; /* the binding, while still root (the CPUs were checked) */
    if (a->cpus && sched_setaffinity(0, sizeof *a->cpus, a->cpus) < 0) goto fail;
    step = STEP_CRED;
    if (a->switch_user &&
        (setgroups((size_t)a->ngroups, a->groups) < 0 || setgid(a->gid) < 0 || setuid(a->uid) < 0))
        goto fail;
    step = STEP_CWD;
    if (a->cwd && *a->cwd && chdir(a->cwd) < 0) goto fail;
    umask(a->umask);
    if (dup2(a->want_stdin ? in[0] : devnull, 0) < 0 || dup2(out[1], 1) < 0 || dup2(err[1], 2) < 0)
        goto fail;
    /* --output-on-node: the files replace the pipes (whose write ends close at exec) */
    const char *paths[2] = {a->out_path, a->err_path};
    int truncs[2] = {a->out_trunc, a->err_trunc}, fd1 = -1;
    for (int k = 0; k < 2; k++) {
        if (!paths[k]) continue;
        step = k ? STEP_ERR : STEP_OUT;
        int f = k && fd1 >= 0 && strcmp(paths[0], paths[1]) == 0
                    ? fd1
                    : open(paths[k],
                           O_WRONLY | O_CREAT | O_APPEND | O_NOCTTY | O_CLOEXEC |
                               (truncs[k] ? O_TRUNC : 0),
                           0666);
        if (f < 0 || dup2(f, k + 1) < 0) goto fail;
        if (!k) fd1 = f;
    }
    if (a->pmi_fd >= 0) { /* inherited: not close-on-exec */
        if (status == PMI_FD_NUM && (status = fcntl(status, F_DUPFD_CLOEXEC, PMI_FD_NUM + 1)) < 0)
            _exit(125);
        if (a->pmi_fd == PMI_FD_NUM ? fcntl(PMI_FD_NUM, F_SETFD, 0) < 0
                                    : dup2(a->pmi_fd, PMI_FD_NUM) < 0)
            goto fail;
    }
    size_t n = 0;
    while (a->envp[n]) n++;
    if (n) format_tid(a->envp[n - 1], a->node, (unsigned)getpid());
    step = STEP_EXEC;
    execvpe(a->argv[0], a->argv, a->envp);
fail:;
    int msg[2] = {errno, step};
    if (write(status, msg, sizeof msg) < 0) _exit(126);
    _exit(step == STEP_EXEC ? (errno == ENOENT ? 127 : 126) : 125);
}

int spawn_wait_status(const siginfo_t *si)
{
    switch (si->si_code) {
    case CLD_EXITED:
        return (si->si_status & 0xff) << 8;
    case CLD_KILLED:
        return si->si_status & 0x7f;
    case CLD_DUMPED:
        return (si->si_status & 0x7f) | 0x80;
    }
    return 0;
}

/* The vfork, alone in a frame of its own: the parent's path uses nothing but the pid. */
__attribute__((noinline)) static pid_t start(const struct spawn_args *a, int *in, int *out, int *er,
                                             int status, int devnull)
{
    pid_t pid = vfork();
    if (pid == 0) child(a, in, out, er, status, devnull);
    return pid;
}

int spawn_task(const struct spawn_args *a, struct spawned *s, int *err, char *why, size_t whylen)
{
    int in[2] = {-1, -1}, out[2] = {-1, -1}, er[2] = {-1, -1}, st[2] = {-1, -1}, devnull = -1;
    *err = 0;
    if ((a->want_stdin && pipe2(in, O_CLOEXEC) < 0) || pipe2(out, O_CLOEXEC) < 0 ||
        pipe2(er, O_CLOEXEC) < 0 || pipe2(st, O_CLOEXEC) < 0 ||
        (!a->want_stdin && (devnull = open("/dev/null", O_RDONLY | O_CLOEXEC)) < 0)) {
        *err = errno;
        snprintf(why, whylen, "pipe: %s", strerror(errno));
        goto fail;
    }
    pid_t pid = start(a, in, out, er, st[1], devnull);
    if (pid < 0) {
        *err = errno;
        snprintf(why, whylen, "fork: %s", strerror(errno));
        goto fail;
    }
    close(st[1]);
    st[1] = -1;
    int msg[2];
    ssize_t r;
    do r = read(st[0], msg, sizeof msg);
    while (r < 0 && errno == EINTR);
    if (r == (ssize_t)sizeof msg) { /* the child failed before or in exec */
        *err = msg[0];
        const char *what = msg[1] == STEP_CRED     ? "cannot become the user"
                           : msg[1] == STEP_CGROUP ? "cannot join the job's cgroup"
                           : msg[1] == STEP_CPUS   ? "cannot bind to its CPUs"
                           : msg[1] == STEP_OUT    ? "cannot open its output file"
                           : msg[1] == STEP_ERR    ? "cannot open its error file"
                           : msg[1] == STEP_CWD    ? "cannot change to the directory"
                                                   : "cannot execute";
        const char *obj = msg[1] == STEP_CWD   ? a->cwd
                          : msg[1] == STEP_OUT ? a->out_path
                          : msg[1] == STEP_ERR ? a->err_path
                                               : a->argv[0];
        bool no_obj = msg[1] == STEP_CRED || msg[1] == STEP_CGROUP || msg[1] == STEP_CPUS;
        snprintf(why, whylen, "%s%s%s: %s", what, no_obj ? "" : " ", no_obj ? "" : obj,
                 strerror(msg[0]));
        waitpid(pid, NULL, 0);
        goto fail;
    }
    s->pid = pid;
    s->pidfd = pidfd_open_(pid);
    if (s->pidfd < 0) {
        *err = errno;
        snprintf(why, whylen, "pidfd_open: %s", strerror(errno));
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        goto fail;
    }
    int keep[3] = {in[1], out[0], er[0]};
    in[1] = out[0] = er[0] = -1;
    s->in_fd = keep[0];
    s->out_fd = keep[1];
    s->err_fd = keep[2];
    fcntl(s->out_fd, F_SETFL, O_NONBLOCK);
    fcntl(s->err_fd, F_SETFL, O_NONBLOCK);
    if (s->in_fd >= 0) fcntl(s->in_fd, F_SETFL, O_NONBLOCK);
fail:;
    int fds[] = {in[0], in[1], out[0], out[1], er[0], er[1], st[0], st[1], devnull};
    for (size_t i = 0; i < sizeof fds / sizeof fds[0]; i++)
        if (fds[i] >= 0) close(fds[i]);
    return *err ? -1 : 0;
}
