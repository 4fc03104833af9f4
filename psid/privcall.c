/*
 * privcall.c - the engine's side of psid's privilege separation (privsep.h): the split
 * itself (fork, the child to privparent.c, the engine to psid.user), and the calls by
 * which the engine asks the privileged child to start, signal and reap tasks.
 *
 * A call sends its request and reads frames until its answer; a PRIV_EXIT read meanwhile
 * is queued and handed to tasks.c by a timer due at once, never from inside the call
 * (the caller may be walking the task table). Between calls the pair is in the loop and
 * PRIV_EXIT goes to tasks.c as it comes. If the child is gone, the engine cannot act on
 * tasks any more: it logs that and ends, as the child would have ended it.
 */
#include "cgroup.h"
#include "daemon.h"
#include "log.h"
#include "privsep.h"
#include "spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct exit_note {
    pid_t pid;
    uint32_t status;
};

struct privcall {
    int fd;
    pid_t child;
    uint32_t next_id;
    uint32_t sent_req; /* the spawn request whose argv and env the child holds */
    bool sent_any;
    bool dead;
    struct exit_note *exits; /* PRIV_EXIT read during a call */
    size_t nexits, capexits;
    uint64_t drain_timer;
};

int privsep_prepare(struct psid *d, char *err, size_t errlen)
{
    d->own_uid = geteuid();
    d->priv_root = d->own_uid == 0;
    if (!d->priv_root) return 0; /* nothing to drop: the engine runs as psid's own user */
    struct passwd *pw = getpwnam(d->conf.user);
    if (!pw) {
        snprintf(err, errlen,
                 "psid.user \"%s\" does not exist: create it (useradd --system --no-create-home "
                 "--shell /usr/sbin/nologin %s) or name another in the configuration",
                 d->conf.user, d->conf.user);
        return -1;
    }
    if (pw->pw_uid == 0) {
        snprintf(err, errlen, "psid.user \"%s\" is root: the engine must not be", d->conf.user);
        return -1;
    }
    d->engine_uid = pw->pw_uid;
    d->engine_gid = pw->pw_gid;
    return 0;
}

/* Close every descriptor but keep[0..n) (the child's end, the cgroup base), moved first
 * to 3, 4, ... so that one close_range ends the rest. New numbers in keep. */
static int keep_only(int *keep, int n)
{
    for (int i = 0; i < n; i++) {
        if (keep[i] < 0) continue;
        int want = 3 + i;
        if (keep[i] == want) continue;
        for (int j = i + 1; j < n; j++) /* a later one sits where this one goes */
            if (keep[j] == want && (keep[j] = fcntl(want, F_DUPFD_CLOEXEC, 3 + n)) < 0) return -1;
        if (dup3(keep[i], want, O_CLOEXEC) < 0) return -1;
        close(keep[i]);
        keep[i] = want;
    }
    return (int)syscall(SYS_close_range, 3 + n, ~0u, 0);
}

/* The child's command line, as OpenSSH's "sshd: user [priv]": written over the argv
 * strings (contiguous in memory), so that ps, pgrep -f and pslocal's pid checks tell the
 * child from the engine, whose command line stays psid's. */
static void set_title(char **argv, const char *title)
{
    if (!argv || !argv[0]) return;
    char *end = argv[0] + strlen(argv[0]) + 1;
    for (int i = 1; argv[i] && argv[i] == end; i++) end = argv[i] + strlen(argv[i]) + 1;
    size_t room = (size_t)(end - argv[0]);
    memset(argv[0], 0, room);
    snprintf(argv[0], room, "%s", title);
}

static void on_priv(void *ctx, uint32_t events);

int privsep_split(struct psid *d, const char *sock_path, const char *ident, bool use_syslog,
                  char **argv)
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) return -1;
    /* the engine's cgroups are its own to make and kill in; the base stays root's to
     * remove (its parent is root's) */
    if (d->priv_root && cgroup_give(d->cgroups, d->engine_uid, d->engine_gid) < 0)
        log_warn("cgroups: %s", strerror(errno));
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        close(sv[0]);
        int keep[2] = {sv[1], cgroup_base_fd(d->cgroups)};
        if (keep_only(keep, 2) < 0) _exit(1);
        cgroup_set_base_fd(d->cgroups, keep[1]);
        char name[48];
        snprintf(name, sizeof name, "%s[priv]", ident);
        log_open(d->conf.log_level, use_syslog, name);
        prctl(PR_SET_NAME, "psid-priv");
        set_title(argv, name);
        struct privparent_cfg cfg = {.fd = keep[0],
                                     .cg = d->cgroups,
                                     .sock_path = sock_path,
                                     .root_jobs = d->conf.root_jobs,
                                     .ident = name};
        _exit(privparent_run(&cfg));
    }
    close(sv[1]);
    struct privcall *pc = calloc(1, sizeof *pc);
    if (!pc) return -1;
    pc->fd = sv[0];
    pc->child = pid;
    d->priv = pc;
    if (d->priv_root) {
        if (setgroups(0, NULL) < 0 || setgid(d->engine_gid) < 0 || setuid(d->engine_uid) < 0)
            return -1;
        if (setuid(0) == 0 || geteuid() == 0) { /* must never work again */
            errno = EPERM;
            return -1;
        }
        log_info("engine runs as %s (uid %u); the privileged child is pid %d", d->conf.user,
                 (unsigned)d->engine_uid, (int)pid);
    }
    return loop_fd(d->loop, pc->fd, EPOLLIN, on_priv, d);
}

static void child_gone(struct psid *d, const char *why)
{
    struct privcall *pc = d->priv;
    if (pc->dead) return;
    pc->dead = true;
    log_err("the privileged child is gone (%s): this psid can no longer act on tasks; "
            "stopping",
            why);
    loop_fd_del(d->loop, pc->fd);
    loop_stop(d->loop);
    d->exit_code = 1;
}

static void drain(void *ctx)
{
    struct psid *d = ctx;
    struct privcall *pc = d->priv;
    pc->drain_timer = 0;
    while (pc->nexits) { /* in order; tasks_exited may call into us again */
        struct exit_note e = pc->exits[0];
        memmove(pc->exits, pc->exits + 1, --pc->nexits * sizeof *pc->exits);
        tasks_exited(d, e.pid, e.status);
    }
}

static void note_exit(struct psid *d, const struct psmsg *m, bool now)
{
    struct privcall *pc = d->priv;
    uint32_t pid, status;
    if (psmsg_get_u32(&m->body, PRIV_F_PID, &pid) < 0 ||
        psmsg_get_u32(&m->body, PRIV_F_STATUS, &status) < 0)
        return;
    if (now && !pc->nexits) {
        tasks_exited(d, (pid_t)pid, status);
        return;
    }
    if (pc->nexits == pc->capexits) {
        size_t cap = pc->capexits ? 2 * pc->capexits : 64;
        struct exit_note *e = realloc(pc->exits, cap * sizeof *e);
        if (!e) return; /* the task stays "running" in the table: logged below */
        pc->exits = e;
        pc->capexits = cap;
    }
    pc->exits[pc->nexits++] = (struct exit_note){(pid_t)pid, status};
    if (!pc->drain_timer) pc->drain_timer = loop_timer(d->loop, loop_now(), drain, d);
}

static void on_priv(void *ctx, uint32_t events)
{
    struct psid *d = ctx;
    (void)events;
    uint8_t *buf;
    struct psmsg m;
    int fds[PRIV_MAX_FDS], nfds;
    /* the readiness may be stale: a call made by a handler of the same round of the loop
     * can have read what was there (the read below blocks) */
    char peek;
    ssize_t r = recv(d->priv->fd, &peek, 1, MSG_PEEK | MSG_DONTWAIT);
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
    if (r < 0) {
        child_gone(d, strerror(errno));
        return;
    }
    if (r == 0 || priv_recv(d->priv->fd, &buf, &m, fds, &nfds) < 0) {
        child_gone(d, r && errno ? strerror(errno) : "closed");
        return;
    }
    for (int i = 0; i < nfds; i++) close(fds[i]);
    if (m.type == PRIV_EXIT) note_exit(d, &m, true);
    free(buf);
}

/* Send b (begun with id; with descriptor pass, if >= 0) and read until the answer of type
 * `type` with that id (PRIV_EXIT queued meanwhile); 0 with the answer in buf, m and fds, or
 * -1 (the child is gone). */
static int call_fd(struct psid *d, struct psmsg_buf *b, int pass, uint32_t id, uint16_t type,
                   uint8_t **buf, struct psmsg *m, int *fds, int *nfds)
{
    struct privcall *pc = d->priv;
    *buf = NULL;
    *nfds = 0;
    if (pc->dead || psmsg_end(b) < 0) {
        errno = pc->dead ? EIO : errno;
        return -1;
    }
    if (priv_send(pc->fd, b, pass >= 0 ? &pass : NULL, pass >= 0 ? 1 : 0) < 0) {
        child_gone(d, strerror(errno));
        return -1;
    }
    for (;;) {
        if (priv_recv(pc->fd, buf, m, fds, nfds) < 0) {
            child_gone(d, errno ? strerror(errno) : "closed");
            errno = EIO;
            return -1;
        }
        if (m->type == type && m->id == id) return 0;
        if (m->type == PRIV_EXIT) note_exit(d, m, false);
        for (int i = 0; i < *nfds; i++) close(fds[i]);
        *nfds = 0;
        free(*buf);
        *buf = NULL;
    }
}

static int call(struct psid *d, struct psmsg_buf *b, uint32_t id, uint16_t type, uint8_t **buf,
                struct psmsg *m, int *fds, int *nfds)
{
    return call_fd(d, b, -1, id, type, buf, m, fds, nfds);
}

int priv_spawn(struct psid *d, const struct priv_spawn_req *r, struct spawned *s, int *err,
               char *why, size_t whylen)
{
    struct privcall *pc = d->priv;
    struct psmsg_buf b = {0};
    uint32_t id = ++pc->next_id;
    psmsg_begin(&b, PRIV_SPAWN, id);
    psmsg_put_u32(&b, PRIV_F_REQ, r->req);
    psmsg_put_u64(&b, PRIV_F_JOB, r->job);
    psmsg_put_u32(&b, PRIV_F_RANK, r->rank);
    psmsg_put_u32(&b, PRIV_F_UID, r->uid);
    psmsg_put_u32(&b, PRIV_F_GID, r->gid);
    psmsg_put_u32(&b, PRIV_F_UMASK, r->umask & 0777);
    if (r->cwd && r->cwd[0]) psmsg_put_str(&b, PRIV_F_CWD, r->cwd);
    psmsg_put_u32(&b, PRIV_F_STDIN, r->want_stdin ? 1 : 0);
    psmsg_put_u32(&b, PRIV_F_NODE, d->self->id);
    bool body = !pc->sent_any || pc->sent_req != r->req;
    for (size_t i = 0; body && r->argv[i]; i++) psmsg_put_str(&b, PRIV_F_ARG, r->argv[i]);
    for (size_t i = 0; body && r->envp[i]; i++) psmsg_put_str(&b, PRIV_F_ENV, r->envp[i]);
    for (size_t i = 0; r->renv[i]; i++) psmsg_put_str(&b, PRIV_F_RENV, r->renv[i]);
    uint8_t *buf;
    struct psmsg m;
    int fds[PRIV_MAX_FDS], nfds;
    int rc = call(d, &b, id, PRIV_SPAWNED, &buf, &m, fds, &nfds);
    psmsg_buf_free(&b);
    if (rc < 0) {
        *err = errno;
        snprintf(why, whylen, "psid's privileged child: %s", strerror(errno));
        return -1;
    }
    if (body) {
        pc->sent_any = true;
        pc->sent_req = r->req;
    }
    uint32_t pid = 0, e = 0;
    rc = -1;
    if (psmsg_get_u32(&m.body, PRIV_F_ERRNO, &e) == 0 && e) {
        *err = (int)e;
        if (psmsg_get_str(&m.body, PRIV_F_TEXT, why, whylen) < 0)
            snprintf(why, whylen, "%s", strerror((int)e));
    } else if (psmsg_get_u32(&m.body, PRIV_F_PID, &pid) < 0 || !pid ||
               nfds != (r->want_stdin ? 3 : 2)) {
        *err = EPROTO;
        snprintf(why, whylen, "psid's privileged child: a malformed answer");
        if (pid) priv_release(d, (pid_t)pid);
    } else {
        *s = (struct spawned){.pid = (pid_t)pid,
                              .pidfd = -1,
                              .out_fd = fds[0],
                              .err_fd = fds[1],
                              .in_fd = r->want_stdin ? fds[2] : -1};
        nfds = 0;
        rc = 0;
        *err = 0;
    }
    for (int i = 0; i < nfds; i++) close(fds[i]);
    free(buf);
    return rc;
}

int priv_signal(struct psid *d, pid_t pid, int sig, bool group)
{
    struct psmsg_buf b = {0};
    uint32_t id = ++d->priv->next_id;
    psmsg_begin(&b, PRIV_SIGNAL, id);
    psmsg_put_u32(&b, PRIV_F_PID, (uint32_t)pid);
    psmsg_put_u32(&b, PRIV_F_SIG, (uint32_t)sig);
    psmsg_put_u32(&b, PRIV_F_GROUP, group ? 1 : 0);
    uint8_t *buf;
    struct psmsg m;
    int fds[PRIV_MAX_FDS], nfds;
    int rc = call(d, &b, id, PRIV_SIGNALED, &buf, &m, fds, &nfds);
    psmsg_buf_free(&b);
    if (rc < 0) return EIO;
    uint32_t e = EPROTO;
    psmsg_get_u32(&m.body, PRIV_F_ERRNO, &e);
    for (int i = 0; i < nfds; i++) close(fds[i]);
    free(buf);
    return (int)e;
}

int priv_netns(struct psid *d, int sock)
{
    if (!d->priv) { /* a psid core without the split (tests) */
        errno = EPERM;
        return -1;
    }
    struct psmsg_buf b = {0};
    uint32_t id = ++d->priv->next_id;
    psmsg_begin(&b, PRIV_NETNS, id);
    uint8_t *buf;
    struct psmsg m;
    int fds[PRIV_MAX_FDS], nfds;
    int rc = call_fd(d, &b, sock, id, PRIV_NETNS_ANSWER, &buf, &m, fds, &nfds);
    psmsg_buf_free(&b);
    if (rc < 0) return -1;
    uint32_t e = EPROTO, served = 0;
    psmsg_get_u32(&m.body, PRIV_F_ERRNO, &e);
    psmsg_get_u32(&m.body, PRIV_F_SERVED, &served);
    for (int i = 0; i < nfds; i++) close(fds[i]);
    free(buf);
    if (e) {
        errno = (int)e;
        return -1;
    }
    return served == 1;
}

/* A request without an answer. */
static void tell(struct psid *d, struct psmsg_buf *b, const int *fds, int n)
{
    struct privcall *pc = d->priv;
    if (!pc->dead && psmsg_end(b) == 0 && priv_send(pc->fd, b, fds, n) < 0)
        child_gone(d, strerror(errno));
    psmsg_buf_free(b);
}

void priv_release(struct psid *d, pid_t pid)
{
    struct psmsg_buf b = {0};
    psmsg_begin(&b, PRIV_RELEASE, ++d->priv->next_id);
    psmsg_put_u32(&b, PRIV_F_PID, (uint32_t)pid);
    tell(d, &b, NULL, 0);
}

void priv_signal_fd(struct psid *d, int pidfd, int sig)
{
    struct psmsg_buf b = {0};
    psmsg_begin(&b, PRIV_SIGNAL_FD, ++d->priv->next_id);
    psmsg_put_u32(&b, PRIV_F_SIG, (uint32_t)sig);
    tell(d, &b, &pidfd, 1);
}

void privsep_stop(struct psid *d)
{
    struct privcall *pc = d->priv;
    if (!pc) return;
    if (pc->drain_timer) loop_timer_cancel(d->loop, pc->drain_timer);
    loop_fd_del(d->loop, pc->fd);
    close(pc->fd);                  /* the child's EOF: it ends what is left, then itself */
    for (int t = 0; t < 500; t++) { /* up to 5 s */
        pid_t w = waitpid(pc->child, NULL, WNOHANG);
        if (w == pc->child || (w < 0 && errno != EINTR)) break;
        nanosleep(&(struct timespec){0, 10000000}, NULL);
    }
    free(pc->exits);
    free(pc);
    d->priv = NULL;
}
