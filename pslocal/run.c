/*
 * run.c - running other programs (see pslocal.h): finding them, and running one with a time
 * limit and its output captured (`ip`).
 */
#include "pslocal.h"

#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* name in $PATH (as execvp would find it) into out. */
bool pl_path_search(const char *name, char *out, size_t len)
{
    if (strchr(name, '/')) {
        snprintf(out, len, "%s", name);
        return access(name, X_OK) == 0;
    }
    const char *path = getenv("PATH");
    if (!path) path = "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin";
    while (*path) {
        size_t l = strcspn(path, ":");
        struct stat st;
        if (l && snprintf(out, len, "%.*s/%s", (int)l, path, name) < (int)len &&
            access(out, X_OK) == 0 && stat(out, &st) == 0 && S_ISREG(st.st_mode))
            return true;
        path += l;
        if (*path == ':') path++;
    }
    return false;
}

/* Where a helper program is: $ENVVAR, next to this binary, $PATH. */
bool pl_find_tool(const char *name, const char *envvar, char *out, size_t len)
{
    const char *e = envvar ? getenv(envvar) : NULL;
    if (e && *e) {
        snprintf(out, len, "%s", e);
        return access(e, X_OK) == 0;
    }
    char self[PATH_MAX];
    ssize_t r = readlink("/proc/self/exe", self, sizeof self - 1);
    if (r > 0) {
        self[r] = '\0';
        char *slash = strrchr(self, '/');
        if (slash) {
            *slash = '\0';
            if (snprintf(out, len, "%s/%s", self, name) < (int)len && access(out, X_OK) == 0)
                return true;
        }
    }
    return pl_path_search(name, out, len);
}

void pl_child_reset_signals(void)
{
    sigset_t all;
    sigemptyset(&all);
    sigprocmask(SIG_SETMASK, &all, NULL);
    int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, SIGCHLD};
    for (size_t i = 0; i < sizeof sigs / sizeof *sigs; i++) signal(sigs[i], SIG_DFL);
}

/*
 * Run argv (searched in $PATH) with stdin from /dev/null. Its stdout goes to out (up to
 * outlen - 1 bytes, NUL-terminated) if out is given, else to our stdout unless quiet; stderr
 * goes to ours unless quiet. envset: "NAME=VALUE" to add, or NULL. Waits at most timeout_ms,
 * then kills it. Returns its exit status, 128 + signal if killed, or -1 if it could not run
 * or ran out of time.
 */
int pl_run(char *const argv[], const char *envset, char *out, size_t outlen, int timeout_ms,
           bool quiet)
{
    int pfd[2] = {-1, -1};
    if (out && pipe2(pfd, O_CLOEXEC) < 0) {
        warn("pipe");
        return -1;
    }
    pid_t pid = fork();
    if (pid < 0) {
        warn("fork");
        if (out) close(pfd[0]), close(pfd[1]);
        return -1;
    }
    if (pid == 0) {
        pl_child_reset_signals();
        int nul = open("/dev/null", O_RDWR);
        if (nul >= 0) {
            dup2(nul, 0);
            if (quiet) {
                dup2(nul, 2);
                if (!out) dup2(nul, 1);
            }
        }
        if (out) dup2(pfd[1], 1);
        if (envset) putenv((char *)envset);
        execvp(argv[0], argv);
        if (!quiet) fprintf(stderr, "pslocal: %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    size_t got = 0;
    if (out) {
        close(pfd[1]);
        out[0] = '\0';
    }
    int64_t deadline = pl_now_ms() + timeout_ms;
    int status = 0;
    bool done = false, eof = !out;
    while (!done || !eof) {
        int64_t left = deadline - pl_now_ms();
        if (left <= 0) break;
        if (!eof) {
            struct pollfd p = {.fd = pfd[0], .events = POLLIN};
            if (poll(&p, 1, left > 20 ? 20 : (int)left) > 0) {
                char tmp[4096];
                ssize_t r = read(pfd[0], tmp, sizeof tmp);
                if (r <= 0) {
                    if (r == 0 || errno != EINTR) eof = true;
                } else {
                    size_t keep = (size_t)r;
                    if (got + keep > outlen - 1) keep = outlen - 1 - got;
                    memcpy(out + got, tmp, keep);
                    got += keep;
                    out[got] = '\0';
                }
            }
        } else {
            pl_sleep_ms(5);
        }
        if (!done) {
            pid_t w = waitpid(pid, &status, WNOHANG);
            if (w == pid) done = true;
        }
    }
    if (out) close(pfd[0]);
    if (!done) {
        kill(pid, SIGKILL); /* our own child */
        waitpid(pid, &status, 0);
        if (!quiet) warnx("%s: no result after %d ms; killed", argv[0], timeout_ms);
        return -1;
    }
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    return 128 + WTERMSIG(status);
}
