/*
 * exec.c - the exec family: what a program hands to the program it becomes.
 *
 * The new image keeps the descriptors without close-on-exec, and none of our records. A
 * connection accepted on a registered listener and not yet claimed (CS_ACCEPTED) is still
 * waited for by the listener's psid, and its connector holds its writes meanwhile: inetd,
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
 * A vfork child shares our memory and runs no fork handlers (psp.pid is the parent's): it
 * must not touch our state, and passes straight through.
 */
#include "psp.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <unistd.h>

extern char **environ;

static void before_exec(void)
{
    if (!psp.inited || psp.disabled || psp.broken || psp.pid != getpid()) return;
    for (int fd = 0; psp.nconns && fd < psp.nbyfd; fd++) {
        if (!psp_conn_of(fd)) continue; /* no lock for the (many) empty slots */
        pthread_mutex_lock(&psp.lock);
        struct conn *c = psp_conn_of(fd);
        int kfd = -1;
        bool kept = c && !(real.fcntl(fd, F_GETFD) & FD_CLOEXEC);
        if (kept && c->st == CS_ACCEPTED && !c->claiming) {
            c->st = CS_TCP; /* whatever psid says: the new image reads the kernel socket */
            kfd = c->kfd;
        }
        if (kept && (c->st == CS_RDP || c->st == CS_SHM)) conn_switch(c); /* ours: to TCP */
        for (int i = 0; kept && c->st == CS_SWITCH && i < 100; i++) wait_conns(&c, 1, 100);
        pthread_mutex_unlock(&psp.lock);
        if (kfd >= 0 && neg_decline(kfd) == 0) psp_count_tcp(PSP_R_NOT_ACCEPTED);
        if (kept && c->st == CS_ORPHAN) conn_claim(c); /* a fork's child: the owner moves it */
    }
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
