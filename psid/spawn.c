/*
 * spawn.c - where a task is forked (see spawn.h).
 *
 * The child resets the signal mask and dispositions psid changed, starts a session of its
 * own (so the whole task can be ended as a group), takes the user's identity (groups, gid,
 * uid: in that order, and all must succeed), changes to the working directory, sets the
 * umask and the environment, and execs with the task's PATH. Any failure is written as an
 * errno and a step code into the status pipe, which exec closes on success.
 */
#include "spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

enum step { STEP_CRED = 1, STEP_CWD, STEP_EXEC };

static int pidfd_open_(pid_t pid)
{
    return (int)syscall(SYS_pidfd_open, pid, 0);
}

static void child(const struct spawn_args *a, int in[2], int out[2], int err[2], int status)
{
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    for (int s = 1; s < NSIG; s++) signal(s, SIG_DFL);
    setsid();
    int step = STEP_CRED;
    if (a->switch_user) {
        struct passwd *pw = getpwuid(a->uid);
        if ((pw ? initgroups(pw->pw_name, a->gid) : setgroups(0, NULL)) < 0 || setgid(a->gid) < 0 ||
            setuid(a->uid) < 0)
            goto fail;
    }
    step = STEP_CWD;
    if (a->cwd && *a->cwd && chdir(a->cwd) < 0) goto fail;
    umask(a->umask);
    int devnull = a->want_stdin ? -1 : open("/dev/null", O_RDONLY);
    if (dup2(a->want_stdin ? in[0] : devnull, 0) < 0 || dup2(out[1], 1) < 0 || dup2(err[1], 2) < 0)
        goto fail;
    /* environment: the job's, plus this task's id */
    size_t n = 0;
    while (a->envp[n]) n++;
    char **env = calloc(n + 2, sizeof *env), tid[64];
    if (!env) goto fail;
    memcpy(env, a->envp, n * sizeof *env);
    snprintf(tid, sizeof tid, "PSI_TID=%u:%d", a->node, (int)getpid());
    env[n] = tid;
    step = STEP_EXEC;
    execvpe(a->argv[0], a->argv, env);
fail:;
    int msg[2] = {errno, step};
    if (write(status, msg, sizeof msg) < 0) _exit(126);
    _exit(step == STEP_EXEC ? (errno == ENOENT ? 127 : 126) : 125);
}

int spawn_task(const struct spawn_args *a, struct spawned *s, int *err, char *why, size_t whylen)
{
    int in[2] = {-1, -1}, out[2] = {-1, -1}, er[2] = {-1, -1}, st[2] = {-1, -1};
    *err = 0;
    if ((a->want_stdin && pipe2(in, O_CLOEXEC) < 0) || pipe2(out, O_CLOEXEC) < 0 ||
        pipe2(er, O_CLOEXEC) < 0 || pipe2(st, O_CLOEXEC) < 0) {
        *err = errno;
        snprintf(why, whylen, "pipe: %s", strerror(errno));
        goto fail;
    }
    pid_t pid = fork();
    if (pid < 0) {
        *err = errno;
        snprintf(why, whylen, "fork: %s", strerror(errno));
        goto fail;
    }
    if (pid == 0) {
        close(st[0]);
        child(a, in, out, er, st[1]);
    }
    close(st[1]);
    st[1] = -1;
    int msg[2];
    ssize_t r;
    do r = read(st[0], msg, sizeof msg);
    while (r < 0 && errno == EINTR);
    close(st[0]);
    st[0] = -1;
    if (r == (ssize_t)sizeof msg) { /* the child failed before or in exec */
        *err = msg[0];
        const char *what = msg[1] == STEP_CRED  ? "cannot become the user"
                           : msg[1] == STEP_CWD ? "cannot change to the directory"
                                                : "cannot execute";
        const char *obj = msg[1] == STEP_CWD ? a->cwd : a->argv[0];
        snprintf(why, whylen, "%s %s: %s", what, msg[1] == STEP_CRED ? "" : obj, strerror(msg[0]));
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
    if (a->want_stdin) close(in[0]);
    close(out[1]);
    close(er[1]);
    s->in_fd = a->want_stdin ? in[1] : -1;
    s->out_fd = out[0];
    s->err_fd = er[0];
    fcntl(s->out_fd, F_SETFL, O_NONBLOCK);
    fcntl(s->err_fd, F_SETFL, O_NONBLOCK);
    if (s->in_fd >= 0) fcntl(s->in_fd, F_SETFL, O_NONBLOCK);
    return 0;
fail:;
    int fds[] = {in[0], in[1], out[0], out[1], er[0], er[1], st[0], st[1]};
    for (size_t i = 0; i < sizeof fds / sizeof fds[0]; i++)
        if (fds[i] >= 0) close(fds[i]);
    return -1;
}
