/*
 * spawn.h - start one task as its user: credentials, working directory, umask, environment
 * and pipes for stdin, stdout and stderr; an exec failure comes back as an errno through a
 * close-on-exec pipe, so "not found" and "not executable" are told apart.
 */
#ifndef PSCLUSTER_PSID_SPAWN_H
#define PSCLUSTER_PSID_SPAWN_H

#include <sched.h>
#include <sys/types.h>

struct spawn_args {
    char *const *argv;
    /* the environment; its last entry before NULL must be a buffer of SPAWN_TID_LEN bytes
     * that the child fills with PSI_TID=NODE:PID (it needs its own pid) */
    char *const *envp;
    const gid_t *groups; /* the user's supplementary groups, looked up once by the caller */
    int ngroups;
    const char *cwd;
    mode_t umask;
    uid_t uid;
    gid_t gid;
    int switch_user; /* psid runs as root: become uid/gid (with the user's groups) */
    int want_stdin;  /* a pipe for stdin; else /dev/null */
    int cgroup_fd;   /* a cgroup.procs the child joins first (cgroup.h), or -1 */
    int memcg_fd;    /* and its job's v1 memory cgroup.procs (--mem, memcg1.h), or -1 */
    int pmi_fd;      /* the task's end of its PMI socket, made its descriptor PMI_FD_NUM, or -1 */
    unsigned node;   /* for PSI_TID */
    const cpu_set_t *cpus; /* the task's CPUs (sched_setaffinity before exec), or NULL */
    /* its stdout and stderr to these files instead of the pipes (NULL: the pipe), opened
     * as the user in its directory, appending; truncated first where *_trunc */
    const char *out_path, *err_path;
    int out_trunc, err_trunc;
};

#define SPAWN_TID_LEN 48
#define PMI_FD_NUM    3   /* where a task finds its PMI socket (PMI_FD) */
#define PMI_FD_STR    "3" /* the same, for the environment */

struct spawned {
    pid_t pid;
    int pidfd;
    int in_fd;  /* write end of the task's stdin, or -1 */
    int out_fd; /* read ends of its stdout and stderr */
    int err_fd;
    int pmi_fd; /* psid's end of the task's PMI socket, or -1 */
};

/* The wait(2)-style status of a waitid(2) result (exit code << 8, or the signal). */
#include <signal.h>
int spawn_wait_status(const siginfo_t *si);

/* 0, or -1 with *err (errno of the failed step) and a reason ("cannot execute X: ..."). */
int spawn_task(const struct spawn_args *a, struct spawned *s, int *err, char *why, size_t whylen);

#endif
