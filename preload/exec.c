/*
 * exec.c - the exec family: what a program hands to the program it becomes.
 *
 * The new image keeps the descriptors without close-on-exec, and none of our records. A
 * connection accepted on a registered listener and not yet claimed (CS_ACCEPTED) is still
 * waited for by the listener's psid, and its connector negotiates meanwhile: inetd,
 * xinetd and systemd's Accept=yes services accept, fork, put the socket on 0 and 1 and
 * exec a handler, which (under the library or not) sees a plain kernel socket. So before
 * exec every such connection that the new image inherits is declined (PSM_PL_DECLINE):
 * the connector goes TCP at once instead of after PSI_PL_ACCEPT_MS.
 *
 * A connection on RDP that the new image inherits moves back to its kernel socket first
 * (conn.c, "The move to TCP"): by this process if the endpoint is its own, through the
 * endpoint's owner if it is a fork's child (fork.c). The new image, with the library or
 * without, then has a plain TCP connection.
 *
 * vfork and posix_spawn: a vfork child shares our memory and runs no fork handlers, and
 * posix_spawn's child (clone with CLONE_VFORK) execs without passing through execve here;
 * either would hand the new image our connections as kernel sockets nobody writes to. So,
 * as Onload does by default, vfork is fork here, and the parent waits, as vfork's would,
 * until the child has exec'd or exited (a close-on-exec pipe); and posix_spawn first moves
 * every connection the child would inherit (no close-on-exec) to its kernel socket, as exec
 * does: the parent goes on with it on TCP. (posix_spawn's file actions are opaque: a
 * connection they close in the child moves too.)
 */
#include "psp.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdlib.h>
#include <unistd.h>

extern char **environ;

/* Every connection a new image would inherit (no close-on-exec) to its kernel socket. */
static void inherited_to_tcp(void)
{
    if (!psp.inited || psp.disabled || psp.broken || psp.pid != getpid()) return;
    int cancel = psp_cancel_off();
    for (int fd = 0, top = fdt_top(); __atomic_load_n(&psp.nconns, __ATOMIC_RELAXED) && fd < top;
         fd++) {
        struct conn *c = fdt_get(fd); /* (no lock for the many empty slots) */
        if (!c) continue;
        pthread_mutex_lock(&psp.lock);
        int kfd = -1;
        bool kept = !(real.fcntl(fd, F_GETFD) & FD_CLOEXEC);
        if (kept && c->st == CS_ACCEPTED) {
            conn_enter(c, CS_TCP); /* whatever psid says: the new image reads the kernel socket */
            kfd = c->kfd;
        }
        pthread_mutex_unlock(&psp.lock);
        if (kfd >= 0 && neg_decline(kfd) == 0) psp_count_tcp(PSP_R_NOT_ACCEPTED);
        if (kept && kfd < 0) conn_to_tcp_now(c); /* ours, or a fork child's: the owner's */
        fdt_put(c);
    }
    psp_cancel_on(cancel);
}

static void before_exec(void)
{
    inherited_to_tcp();
    if (psp.inited && !psp.disabled && !psp.broken && psp.pid == getpid())
        psp_print_stats(); /* this image's counters end here: no atexit after exec */
}

typedef int (*exec_path_t)(const char *, char *const[], char *const[]);
typedef int (*exec_path2_t)(const char *, char *const[]);
typedef int (*exec_fd_t)(int, char *const[], char *const[]);

#define NEXT(name, type)                                                                           \
    static type next;                                                                              \
    if (!next) next = (type)dlsym(RTLD_NEXT, name);                                                \
    if (!next) {                                                                                   \
        errno = ENOSYS;                                                                            \
        return -1;                                                                                 \
    }

int execve(const char *path, char *const argv[], char *const envp[])
{
    NEXT("execve", exec_path_t);
    before_exec();
    return next(path, argv, envp);
}

int execv(const char *path, char *const argv[])
{
    NEXT("execv", exec_path2_t);
    before_exec();
    return next(path, argv);
}

int execvp(const char *file, char *const argv[])
{
    NEXT("execvp", exec_path2_t);
    before_exec();
    return next(file, argv);
}

int execvpe(const char *file, char *const argv[], char *const envp[])
{
    NEXT("execvpe", exec_path_t);
    before_exec();
    return next(file, argv, envp);
}

int fexecve(int fd, char *const argv[], char *const envp[])
{
    NEXT("fexecve", exec_fd_t);
    before_exec();
    return next(fd, argv, envp);
}

/* execl, execlp, execle: their argument lists as a vector (and execle's environment) */
static char **arg_vector(const char *arg0, va_list ap, char ***envp)
{
    va_list aq;
    va_copy(aq, ap);
    size_t n = 1;
    while (va_arg(aq, char *)) n++;
    va_end(aq);
    char **v = malloc((n + 1) * sizeof *v);
    if (!v) return NULL;
    v[0] = (char *)arg0;
    for (size_t i = 1; i <= n; i++) v[i] = va_arg(ap, char *); /* v[n]: the NULL */
    if (envp) *envp = va_arg(ap, char **);
    return v;
}

int execl(const char *path, const char *arg, ...)
{
    va_list ap;
    va_start(ap, arg);
    char **v = arg_vector(arg, ap, NULL);
    va_end(ap);
    if (!v) return -1;
    int r = execve(path, v, environ);
    free(v);
    return r;
}

int execlp(const char *file, const char *arg, ...)
{
    va_list ap;
    va_start(ap, arg);
    char **v = arg_vector(arg, ap, NULL);
    va_end(ap);
    if (!v) return -1;
    int r = execvp(file, v);
    free(v);
    return r;
}

int execle(const char *path, const char *arg, ...)
{
    va_list ap;
    va_start(ap, arg);
    char **env = NULL;
    char **v = arg_vector(arg, ap, &env);
    va_end(ap);
    if (!v) return -1;
    int r = execve(path, v, env);
    free(v);
    return r;
}

pid_t vfork(void)
{
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0) return fork();
    pid_t pid = fork();
    if (pid == 0) { /* the write end stays open until exec (close-on-exec) or exit */
        real_ready();
        real.close(p[0]);
        return 0;
    }
    real.close(p[1]);
    char b;
    if (pid > 0)
        while (real.read(p[0], &b, 1) < 0 && errno == EINTR) {
        }
    real.close(p[0]);
    return pid;
}

typedef int (*spawn_t)(pid_t *, const char *, const posix_spawn_file_actions_t *,
                       const posix_spawnattr_t *, char *const[], char *const[]);

int posix_spawn(pid_t *pid, const char *path, const posix_spawn_file_actions_t *fa,
                const posix_spawnattr_t *at, char *const argv[], char *const envp[])
{
    static spawn_t next;
    if (!next && !(next = (spawn_t)dlsym(RTLD_NEXT, "posix_spawn"))) return ENOSYS;
    inherited_to_tcp();
    return next(pid, path, fa, at, argv, envp);
}

int posix_spawnp(pid_t *pid, const char *file, const posix_spawn_file_actions_t *fa,
                 const posix_spawnattr_t *at, char *const argv[], char *const envp[])
{
    static spawn_t next;
    if (!next && !(next = (spawn_t)dlsym(RTLD_NEXT, "posix_spawnp"))) return ENOSYS;
    inherited_to_tcp();
    return next(pid, file, fa, at, argv, envp);
}
