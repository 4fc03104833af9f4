/*
 * privcall.c - the engine's side of psid's privilege separation (privsep.h): the split
 * itself (fork, the child to privparent.c with the spawn key, the engine to psid.user
 * without the cluster key and into its sandbox, sandbox.c), and the calls by which the
 * engine asks the privileged child to vouch for a job's user, to start, signal and reap
 * tasks, and to make, put in place and remove a file broadcast's copies.
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
#include "sandbox.h"
#include "spawn.h"
#include "spawncred.h"

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

#include "bebytes.h"

#ifdef PSID_TEST_HOOKS
/* A test build (see the hooks below). PSID_TEST_SECCOMP_LOG=FILE: the filter lets every
 * call through and writes to FILE what it would have refused. PSID_TEST_FORGE=write=PATH: once in
 * its sandbox, the engine makes the file PATH and logs how it went; =exec: it executes /bin/true
 * (the filter ends it). */
#define SANDBOX_LOG_TO getenv("PSID_TEST_SECCOMP_LOG")
static void forge_sandbox(void)
{
    const char *f = getenv("PSID_TEST_FORGE");
    if (f && !strncmp(f, "write=", 6)) {
        int fd = open(f + 6, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
        log_notice("forge: make %s: %s", f + 6, fd >= 0 ? "made" : strerror(errno));
        if (fd >= 0) close(fd);
    }
    if (f && !strcmp(f, "exec")) {
        log_notice("forge: executing /bin/true");
        execl("/bin/true", "true", (char *)NULL);
        log_notice("forge: exec: %s", strerror(errno));
    }
}
#define FORGE_SANDBOX() forge_sandbox()
#else
#define SANDBOX_LOG_TO  NULL
#define FORGE_SANDBOX() ((void)0)
#endif

struct exit_note {
    pid_t pid;
    uint32_t status;
    struct task_usage u;
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

/* Close every descriptor but keep[0..n) (the child's end, the cgroup bases), moved first
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

/* The directory of the client socket: the engine's run directory. */
static const char *sock_dir(const char *sock_path)
{
    static char dir[4096];
    snprintf(dir, sizeof dir, "%s", sock_path);
    char *slash = strrchr(dir, '/');
    if (slash == dir)
        dir[1] = 0;
    else if (slash)
        *slash = 0;
    else
        snprintf(dir, sizeof dir, ".");
    return dir;
}

int privsep_split(struct psid *d, const char *sock_path, const char *ident, bool use_syslog,
                  char **argv)
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) return -1;
    /* the engine's cgroups are its own to make and kill in; the base stays root's to
     * remove (its parent is root's) */
    if (d->priv_root && cgroup_give(d->cgroups, d->engine_uid, d->engine_gid) < 0)
        log_warn("cgroups: %s", strerror(errno));
    /* the keys the engine keeps: derived here, before the cluster key goes (RDP's and the
     * heartbeats' were derived at their start) */
    preload_key(d->conf.key, d->pl_key);
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        close(sv[0]);
        int keep[3] = {sv[1], cgroup_base_fd(d->cgroups), cgroup_mem1_fd(d->cgroups)};
        if (keep_only(keep, 3) < 0) _exit(1);
        cgroup_set_base_fd(d->cgroups, keep[1]);
        cgroup_set_mem1_fd(d->cgroups, keep[2]);
        char name[48];
        snprintf(name, sizeof name, "%s[priv]", ident);
        log_open(d->conf.log_level, use_syslog, name);
        prctl(PR_SET_NAME, "psid-priv");
        set_title(argv, name);
        static struct privparent_cfg cfg; /* not on the stack: the key in it */
        cfg = (struct privparent_cfg){.fd = keep[0],
                                      .cg = d->cgroups,
                                      .sock_path = sock_path,
                                      .root_jobs = d->conf.root_jobs,
                                      .ident = name,
                                      .node = d->self->id,
                                      .node_name = d->self->name};
        spawncred_key(d->conf.key, cfg.spawn_key); /* the child's alone */
        sodium_memzero(d->conf.key, sizeof d->conf.key);
        sodium_memzero(d->pl_key, sizeof d->pl_key);
        sodium_memzero(d->hb_key, sizeof d->hb_key);
        _exit(privparent_run(&cfg));
    }
    /* the engine never holds the cluster key again: from it, anyone derives the spawn key */
    sodium_memzero(d->conf.key, sizeof d->conf.key);
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
    if (loop_fd(d->loop, pc->fd, EPOLLIN, on_priv, d) < 0) return -1;
    const char *writable[3] = {sock_dir(sock_path), cgroup_base_path(d->cgroups),
                               cgroup_mem1_path(d->cgroups)};
    char err[300];
    if (sandbox_engine(writable, 3, ident, use_syslog, SANDBOX_LOG_TO, err, sizeof err) < 0) {
        log_err("the engine's sandbox: %s", err);
        errno = EPERM;
        return -1;
    }
    log_info("the engine's sandbox: %s", err);
    FORGE_SANDBOX();
    return 0;
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
        tasks_exited(d, e.pid, e.status, &e.u);
    }
}

static void note_exit(struct psid *d, const struct psmsg *m, bool now)
{
    struct privcall *pc = d->priv;
    uint32_t pid, status;
    if (psmsg_get_u32(&m->body, PRIV_F_PID, &pid) < 0 ||
        psmsg_get_u32(&m->body, PRIV_F_STATUS, &status) < 0)
        return;
    struct task_usage u = {0};
    psmsg_get_u64(&m->body, PRIV_F_USER_US, &u.user_us);
    psmsg_get_u64(&m->body, PRIV_F_SYS_US, &u.sys_us);
    psmsg_get_u64(&m->body, PRIV_F_MAXRSS, &u.maxrss);
    psmsg_get_u64(&m->body, PRIV_F_RCHAR, &u.rchar);
    psmsg_get_u64(&m->body, PRIV_F_WCHAR, &u.wchar);
    if (now && !pc->nexits) {
        tasks_exited(d, (pid_t)pid, status, &u);
        return;
    }
    if (pc->nexits == pc->capexits) {
        size_t cap = pc->capexits ? 2 * pc->capexits : 64;
        struct exit_note *e = realloc(pc->exits, cap * sizeof *e);
        if (!e) return; /* the task stays "running" in the table: logged below */
        pc->exits = e;
        pc->capexits = cap;
    }
    pc->exits[pc->nexits++] = (struct exit_note){(pid_t)pid, status, u};
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

#ifdef PSID_TEST_HOOKS
/* Test hooks, built into build/test/psid-hooks only (test/shell/psid_privforge.sh): the
 * engine turned hostile, as PSID_TEST_FORGE says:
 *   uid=N        every credential is asked for uid N, whoever the requesting client is
 *   spawn-uid=N  every PRIV_SPAWN says uid N (its credential stays the client's)
 *   alter        one bit of every PRIV_SPAWN's credential is flipped (in its uid)
 *   replay       every PRIV_SPAWN that started a task is sent again as it was
 * and the engine logs what the child answered to a replayed one (forge_sandbox, above,
 * tries the sandbox). */
static long forge_n(const char *what)
{
    const char *f = getenv("PSID_TEST_FORGE");
    size_t n = strlen(what);
    return f && !strncmp(f, what, n) && f[n] == '=' ? strtol(f + n + 1, NULL, 10) : -1;
}

static bool forge_is(const char *what)
{
    const char *f = getenv("PSID_TEST_FORGE");
    return f && !strcmp(f, what);
}

static uint32_t forge_uid(uint32_t uid)
{
    long n = forge_n("uid");
    return n >= 0 ? (uint32_t)n : uid;
}

static uint32_t forge_spawn_uid(uint32_t uid)
{
    long n = forge_n("spawn-uid");
    return n >= 0 ? (uint32_t)n : uid;
}

static const uint8_t *forge_cred(const uint8_t *cred, size_t len, uint8_t *copy)
{
    if (!forge_is("alter") || len != SPAWNCRED_LEN) return cred;
    memcpy(copy, cred, len);
    copy[15] ^= 1; /* the low bit of the uid */
    return copy;
}

static void forge_replay(struct psid *d, struct psmsg_buf *b, const struct psmsg *first)
{
    uint32_t pid;
    if (!forge_is("replay") || psmsg_get_u32(&first->body, PRIV_F_PID, &pid) < 0) return;
    uint8_t *buf;
    struct psmsg m;
    int fds[PRIV_MAX_FDS], nfds;
    char text[300] = "";
    if (call(d, b, first->id, PRIV_SPAWNED, &buf, &m, fds, &nfds) < 0) return;
    uint32_t e = 0, again = 0;
    psmsg_get_u32(&m.body, PRIV_F_ERRNO, &e);
    psmsg_get_str(&m.body, PRIV_F_TEXT, text, sizeof text);
    if (psmsg_get_u32(&m.body, PRIV_F_PID, &again) == 0 && again) {
        log_err("forge: a replayed PRIV_SPAWN started task %u", again);
        priv_release(d, (pid_t)again);
    } else {
        log_notice("forge: a replayed PRIV_SPAWN was refused: %s (%s)", text, strerror((int)e));
    }
    for (int i = 0; i < nfds; i++) close(fds[i]);
    free(buf);
}
#define FORGE_UID(uid)        forge_uid(uid)
#define FORGE_SPAWN_UID(uid)  forge_spawn_uid(uid)
#define FORGE_CRED(c, n, cp)  forge_cred(c, n, cp)
#define FORGE_REPLAY(d, b, m) forge_replay(d, b, m)
#else
#define FORGE_UID(uid)        (uid)
#define FORGE_SPAWN_UID(uid)  (uid)
#define FORGE_CRED(c, n, cp)  (c)
#define FORGE_REPLAY(d, b, m) ((void)0)
#endif

int priv_spawn(struct psid *d, const struct priv_spawn_req *r, struct spawned *s, int *err,
               char *why, size_t whylen)
{
    struct privcall *pc = d->priv;
    if (!pc) { /* a psid core without the split (tests): nobody to start it */
        *err = EPERM;
        snprintf(why, whylen, "no privileged child to start the task");
        return -1;
    }
    struct psmsg_buf b = {0};
    uint32_t id = ++pc->next_id;
    psmsg_begin(&b, PRIV_SPAWN, id);
    psmsg_put_u32(&b, PRIV_F_REQ, r->req);
    psmsg_put_u64(&b, PRIV_F_JOB, r->job);
    psmsg_put_u32(&b, PRIV_F_RANK, r->rank);
    psmsg_put_u32(&b, PRIV_F_UID, FORGE_SPAWN_UID(r->uid));
    psmsg_put_u32(&b, PRIV_F_GID, r->gid);
    psmsg_put_u32(&b, PRIV_F_UMASK, r->umask & 0777);
    if (r->cwd && r->cwd[0]) psmsg_put_str(&b, PRIV_F_CWD, r->cwd);
    psmsg_put_u32(&b, PRIV_F_STDIN, r->want_stdin ? 1 : 0);
    psmsg_put_u32(&b, PRIV_F_NODE, d->self->id);
    if (r->want_pmi) psmsg_put_u32(&b, PRIV_F_PMI, 1);
    if (r->out_pat || r->err_pat) {
        if (r->out_pat) psmsg_put_str(&b, PRIV_F_OUT_PAT, r->out_pat);
        if (r->err_pat) psmsg_put_str(&b, PRIV_F_ERR_PAT, r->err_pat);
        psmsg_put_u32(&b, PRIV_F_APPEND, r->append ? 1 : 0);
        psmsg_put_u32(&b, PRIV_F_NODE_IDX, r->nodeidx);
        psmsg_put_str(&b, PRIV_F_JOB_NAME, r->name ? r->name : "");
    }
    if (r->arg0_pat) {
        psmsg_put_u32(&b, PRIV_F_ARG0_PAT, 1);
        if (!r->out_pat && !r->err_pat) {
            psmsg_put_u32(&b, PRIV_F_NODE_IDX, r->nodeidx);
            psmsg_put_str(&b, PRIV_F_JOB_NAME, r->name ? r->name : "");
        }
    }
    if (r->cpus) {
        size_t len = PSCPU_BYTES; /* the bytes up to the last CPU */
        while (len > 1 && !r->cpus->b[len - 1]) len--;
        psmsg_put_bytes(&b, PRIV_F_CPUS, r->cpus->b, len);
    }
    bool body = !pc->sent_any || pc->sent_req != r->req;
    for (size_t i = 0; body && r->argv[i]; i++) psmsg_put_str(&b, PRIV_F_ARG, r->argv[i]);
    for (size_t i = 0; body && r->envp[i]; i++) psmsg_put_str(&b, PRIV_F_ENV, r->envp[i]);
    for (size_t i = 0; r->renv[i]; i++) psmsg_put_str(&b, PRIV_F_RENV, r->renv[i]);
    uint8_t forged[SPAWNCRED_LEN];
    if (r->credlen)
        psmsg_put_bytes(&b, PRIV_F_CRED, FORGE_CRED(r->cred, r->credlen, forged), r->credlen);
    (void)forged;
    uint8_t *buf;
    struct psmsg m;
    int fds[PRIV_MAX_FDS], nfds;
    int rc = call(d, &b, id, PRIV_SPAWNED, &buf, &m, fds, &nfds);
    if (rc < 0) {
        psmsg_buf_free(&b);
        *err = errno;
        snprintf(why, whylen, "psid's privileged child: %s", strerror(errno));
        return -1;
    }
    if (body) {
        pc->sent_any = true;
        pc->sent_req = r->req;
    }
    FORGE_REPLAY(d, &b, &m);
    psmsg_buf_free(&b);
    uint32_t pid = 0, e = 0;
    rc = -1;
    if (psmsg_get_u32(&m.body, PRIV_F_ERRNO, &e) == 0 && e) {
        *err = (int)e;
        if (psmsg_get_str(&m.body, PRIV_F_TEXT, why, whylen) < 0)
            snprintf(why, whylen, "%s", strerror((int)e));
    } else if (psmsg_get_u32(&m.body, PRIV_F_PID, &pid) < 0 || !pid ||
               nfds != 2 + r->want_stdin + r->want_pmi) {
        *err = EPROTO;
        snprintf(why, whylen, "psid's privileged child: a malformed answer");
        if (pid) priv_release(d, (pid_t)pid);
    } else {
        *s = (struct spawned){.pid = (pid_t)pid,
                              .pidfd = -1,
                              .out_fd = fds[0],
                              .err_fd = fds[1],
                              .in_fd = r->want_stdin ? fds[2] : -1,
                              .pmi_fd = r->want_pmi ? fds[nfds - 1] : -1};
        nfds = 0;
        rc = 0;
        *err = 0;
    }
    for (int i = 0; i < nfds; i++) close(fds[i]);
    free(buf);
    return rc;
}

int priv_cred(struct psid *d, int sock, const struct priv_cred_req *r,
              uint8_t (*creds)[SPAWNCRED_LEN], char *why, size_t whylen)
{
    if (!d->priv) { /* a psid core without the split (tests): nobody to vouch */
        snprintf(why, whylen, "no privileged child to vouch for the job's user");
        errno = EPERM;
        return -1;
    }
    for (size_t at = 0; at < r->n; at += PRIV_MAX_TARGETS) {
        size_t n = r->n - at < PRIV_MAX_TARGETS ? r->n - at : PRIV_MAX_TARGETS;
        struct psmsg_buf b = {0};
        uint32_t id = ++d->priv->next_id;
        psmsg_begin(&b, PRIV_CRED, id);
        psmsg_put_u64(&b, PRIV_F_JOB, r->job);
        psmsg_put_u32(&b, PRIV_F_UID, FORGE_UID(r->uid));
        psmsg_put_u32(&b, PRIV_F_GID, r->gid);
        psmsg_put_bytes(&b, PRIV_F_DIGEST, r->digest, 32);
        for (size_t i = 0; i < n; i++) {
            uint8_t t[8];
            be_put32(t, r->nodes[at + i]);
            be_put32(t + 4, r->nranks[at + i]);
            psmsg_put_bytes(&b, PRIV_F_TARGET, t, sizeof t);
        }
        uint8_t *buf;
        struct psmsg m;
        int fds[PRIV_MAX_FDS], nfds;
        int rc = call_fd(d, &b, sock, id, PRIV_CRED_ANSWER, &buf, &m, fds, &nfds);
        psmsg_buf_free(&b);
        if (rc < 0) {
            snprintf(why, whylen, "psid's privileged child: %s", strerror(errno));
            return -1;
        }
        for (int i = 0; i < nfds; i++) close(fds[i]);
        uint32_t e = EPROTO;
        psmsg_get_u32(&m.body, PRIV_F_ERRNO, &e);
        if (e && psmsg_get_str(&m.body, PRIV_F_TEXT, why, whylen) < 0)
            snprintf(why, whylen, "%s", strerror((int)e));
        struct psmsg_field f;
        size_t pos = 0, k = 0;
        while (!e && psmsg_next(&m.body, &pos, &f))
            if (f.tag == PRIV_F_CRED && f.len == SPAWNCRED_LEN && k < n)
                memcpy(creds[at + k++], f.val, SPAWNCRED_LEN);
        if (!e && k != n) {
            e = EPROTO;
            snprintf(why, whylen, "psid's privileged child: a malformed answer");
        }
        free(buf);
        if (e) {
            errno = (int)e;
            return -1;
        }
    }
    return 0;
}

int priv_signal(struct psid *d, pid_t pid, int sig, bool group)
{
    if (!d->priv) return EPERM; /* a psid core without the split (tests) */
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
    if (!d->priv) return; /* a psid core without the split (tests) */
    struct psmsg_buf b = {0};
    psmsg_begin(&b, PRIV_RELEASE, ++d->priv->next_id);
    psmsg_put_u32(&b, PRIV_F_PID, (uint32_t)pid);
    tell(d, &b, NULL, 0);
}

void priv_signal_fd(struct psid *d, int pidfd, int sig)
{
    if (!d->priv) return; /* a psid core without the split (tests): nobody may signal */
    struct psmsg_buf b = {0};
    psmsg_begin(&b, PRIV_SIGNAL_FD, ++d->priv->next_id);
    psmsg_put_u32(&b, PRIV_F_SIG, (uint32_t)sig);
    tell(d, &b, &pidfd, 1);
}

/* Send b (begun with id) and take its answer of type `type`: its ERRNO (and TEXT into why),
 * with fd (not NULL) the one descriptor a good answer brings. 0, or -1 and errno. b is
 * freed. */
static int call_answer(struct psid *d, struct psmsg_buf *b, uint32_t id, uint16_t type, int *fd,
                       char *why, size_t whylen)
{
    uint8_t *buf;
    struct psmsg m;
    int fds[PRIV_MAX_FDS], nfds;
    int rc = call(d, b, id, type, &buf, &m, fds, &nfds);
    psmsg_buf_free(b);
    if (rc < 0) {
        snprintf(why, whylen, "psid's privileged child: %s", strerror(errno));
        return -1;
    }
    uint32_t e = EPROTO;
    psmsg_get_u32(&m.body, PRIV_F_ERRNO, &e);
    if (e && psmsg_get_str(&m.body, PRIV_F_TEXT, why, whylen) < 0)
        snprintf(why, whylen, "%s", strerror((int)e));
    if (!e && fd && nfds != 1) {
        e = EPROTO;
        snprintf(why, whylen, "psid's privileged child: a malformed answer");
    }
    if (!e && fd) {
        *fd = fds[0];
        nfds = 0;
    }
    for (int i = 0; i < nfds; i++) close(fds[i]);
    free(buf);
    if (e) errno = (int)e;
    return e ? -1 : 0;
}

int priv_bcast_open(struct psid *d, const struct priv_bcast_req *r, int *fd, char *why,
                    size_t whylen)
{
    *fd = -1;
    if (!d->priv) { /* a psid core without the split (tests): nobody to write */
        snprintf(why, whylen, "no privileged child to write the copy");
        errno = EPERM;
        return -1;
    }
    struct psmsg_buf b = {0};
    uint32_t id = ++d->priv->next_id;
    psmsg_begin(&b, PRIV_BCAST_OPEN, id);
    psmsg_put_u64(&b, PRIV_F_JOB, r->id);
    psmsg_put_u32(&b, PRIV_F_UID, FORGE_UID(r->uid));
    psmsg_put_u32(&b, PRIV_F_GID, r->gid);
    psmsg_put_str(&b, PRIV_F_DEST, r->dest);
    psmsg_put_u32(&b, PRIV_F_NODE_IDX, r->nodeidx);
    psmsg_put_u32(&b, PRIV_F_FLAGS, r->flags);
    psmsg_put_u32(&b, PRIV_F_MODE, r->mode);
    psmsg_put_u64(&b, PRIV_F_SIZE, r->size);
    if (r->credlen) psmsg_put_bytes(&b, PRIV_F_CRED, r->cred, r->credlen);
    return call_answer(d, &b, id, PRIV_BCAST_OPENED, fd, why, whylen);
}

int priv_bcast_commit(struct psid *d, uint64_t bid, uint64_t mtime, uint64_t atime, char *why,
                      size_t whylen)
{
    if (!d->priv) {
        snprintf(why, whylen, "no privileged child to put the copy in place");
        errno = EPERM;
        return -1;
    }
    struct psmsg_buf b = {0};
    uint32_t id = ++d->priv->next_id;
    psmsg_begin(&b, PRIV_BCAST_COMMIT, id);
    psmsg_put_u64(&b, PRIV_F_JOB, bid);
    if (mtime || atime) {
        psmsg_put_u64(&b, PRIV_F_MTIME, mtime);
        psmsg_put_u64(&b, PRIV_F_ATIME, atime);
    }
    return call_answer(d, &b, id, PRIV_BCAST_COMMITTED, NULL, why, whylen);
}

void priv_bcast_drop(struct psid *d, uint64_t bid, uint32_t home)
{
    if (!d->priv) return;
    struct psmsg_buf b = {0};
    psmsg_begin(&b, PRIV_BCAST_DROP, ++d->priv->next_id);
    if (bid)
        psmsg_put_u64(&b, PRIV_F_JOB, bid);
    else
        psmsg_put_u32(&b, PRIV_F_HOME, home);
    tell(d, &b, NULL, 0);
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
