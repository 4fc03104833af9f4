/*
 * privparent.c - psid's privileged child (see privsep.h): the only part of psid that keeps
 * root. It reads nothing but the engine's frames on a socketpair, and does only this:
 *   PRIV_CRED       make the spawn credentials of a job of this node (spawncred.h), one per
 *                   node it runs on, after checking with the kernel that the requesting
 *                   client's connection the engine passes is the job's user's
 *   PRIV_SPAWN      start one task as its user (spawn.c), into its job's cgroup, on a spawn
 *                   credential it checks (the user, the program, its age, a replay); the
 *                   user's groups are looked up here, not taken from the engine
 *   PRIV_SIGNAL     signal a task it started, or its process group (the task is a zombie
 *                   at worst until PRIV_RELEASE, so neither pid is anyone else's)
 *   PRIV_RELEASE    reap a task
 *   PRIV_SIGNAL_FD  signal a process by a pidfd the engine passes (a client that asked
 *                   to be signalled); a root process only where psid.root_jobs is true
 *   PRIV_BCAST_*    make, put in place and remove a file broadcast's copy on this node, as
 *                   the user, on a broadcast credential it checks (privbcast.c)
 *   PRIV_NETNS      say whether a socket the engine passes is in a network namespace
 *                   owned by this child's user namespace (SIOCGSKNS and NS_GET_USERNS
 *                   need CAP_NET_ADMIN over the namespace, which the engine lacks)
 * and tells the engine when a task exits (PRIV_EXIT), after killing what the task left in
 * its process group (a task has ended when its own process has). It is the child subreaper of its
 * tasks: what a task leaves behind when it exits is reparented here instead of to init,
 * reaped here, and killed when the engine ends (with cgroups, cgroup.c also ends it with
 * its job). When the engine closes the pair or dies, every task still here is killed with
 * its process group, the cgroups are swept, the client socket is removed, and the child
 * exits.
 */
#include "../logger/outfile.h"
#include "bcastwire.h"
#include "cgroup.h"
#include "fnv1a.h"
#include "log.h"
#include "psloop.h"
#include "privbcast.h"
#include "privsep.h"
#include "spawn.h"
#include "spawncred.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <sched.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <linux/nsfs.h>
#include <linux/sockios.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#define NBUCKETS      1024
#define GROUPS_TTL_NS 1000000000ull /* a user's groups are looked up again after 1 s */
#define OPENED_MAX    4096          /* output files remembered for truncation */

struct child {
    pid_t pid;
    int pidfd;
    bool exited;
    struct priv *p;
    struct child *next;
};

struct priv {
    struct privparent_cfg *cfg;
    struct loop *loop;
    int sig_fd; /* SIGCHLD: orphans to reap */
    struct child *tab[NBUCKETS];
    /* the last spawn request's program and environment (PRIV_F_REQ) */
    bool have_req;
    uint32_t req;
    char **argv, **env;
    size_t nargv, nenv;
    struct spawncred_hash prog;  /* the digest of argv and env so far (spawncred.h) */
    struct spawncred_book *book; /* the credentials taken, until they expire */
    /* the last user's groups */
    uint32_t g_uid, g_gid;
    uint64_t g_until;
    gid_t *groups;
    int ngroups;
    struct stat userns;       /* the child's own user namespace (PRIV_NETNS) */
    struct pscpuset own_cpus; /* the CPUs this child may run on: a task's binding is within */
    /* --output-on-node: the files a job's ranks here opened (job, hash of the name), so
     * that only the first truncates; the oldest entries go first */
    struct opened {
        uint64_t job, name;
    } opened[OPENED_MAX];
    size_t nopened, next_opened;
    struct privbcast *bc; /* file broadcasts' copies on this node */
};

static size_t bucket(pid_t pid)
{
    return ((uint32_t)pid * 2654435761u) % NBUCKETS;
}

static struct child *find(struct priv *p, pid_t pid)
{
    for (struct child *c = p->tab[bucket(pid)]; c; c = c->next)
        if (c->pid == pid) return c;
    return NULL;
}

static void forget(struct priv *p, struct child *c)
{
    for (struct child **pp = &p->tab[bucket(c->pid)]; *pp; pp = &(*pp)->next)
        if (*pp == c) {
            *pp = c->next;
            break;
        }
    if (!c->exited) loop_fd_del(p->loop, c->pidfd);
    close(c->pidfd);
    free(c);
}

static void send_or_die(struct priv *p, struct psmsg_buf *b, const int *fds, int n)
{
    if (psmsg_end(b) < 0 || priv_send(p->cfg->fd, b, fds, n) < 0) {
        log_err("privileged child: the engine is gone (%s)", strerror(errno));
        loop_stop(p->loop);
    }
    psmsg_buf_free(b);
}

static void free_strv(char **v, size_t n)
{
    for (size_t i = 0; v && i < n; i++) free(v[i]);
    free(v);
}

static char *field_dup(const struct psmsg_field *f)
{
    char *s = malloc(f->len + 1);
    if (!s) return NULL;
    memcpy(s, f->val, f->len);
    s[f->len] = 0;
    return s;
}

/* Keep a request's program and environment; -1 out of memory. */
/* Move *fd above the descriptors a task's start overwrites (0..PMI_FD_NUM). 0, or -1. */
static int keep_high(int *fd)
{
    int h = fcntl(*fd, F_DUPFD_CLOEXEC, 10);
    if (h < 0) return -1;
    close(*fd);
    *fd = h;
    return 0;
}

static int keep_request(struct priv *p, const struct psmsg *m, const struct priv_spawn *s)
{
    free_strv(p->argv, p->nargv);
    free_strv(p->env, p->nenv);
    p->have_req = false;
    p->nargv = p->nenv = 0;
    p->argv = calloc(s->nargv + 1, sizeof *p->argv);
    p->env = calloc(s->nenv + 1, sizeof *p->env);
    if (!p->argv || !p->env) return -1;
    struct psmsg_field f;
    size_t pos = 0;
    while (psmsg_next(&m->body, &pos, &f)) {
        if (f.tag == PRIV_F_ARG && !(p->argv[p->nargv++] = field_dup(&f))) return -1;
        if (f.tag == PRIV_F_ENV && !(p->env[p->nenv++] = field_dup(&f))) return -1;
    }
    spawncred_hash_init(&p->prog); /* in the order the credential's digest has them */
    for (size_t i = 0; i < p->nargv; i++)
        spawncred_hash_arg(&p->prog, p->argv[i], strlen(p->argv[i]));
    for (size_t i = 0; i < p->nenv; i++) spawncred_hash_env(&p->prog, p->env[i], strlen(p->env[i]));
    p->req = s->req;
    p->have_req = true;
    return 0;
}

/* The user's supplementary groups, from NSS here (never from the engine), kept for a
 * second for the ranks of one request. */
static void user_groups(struct priv *p, uint32_t uid, uint32_t gid)
{
    if (p->g_until > loop_now() && p->g_uid == uid && p->g_gid == gid) return;
    p->ngroups = 0;
    p->g_uid = uid;
    p->g_gid = gid;
    p->g_until = loop_now() + GROUPS_TTL_NS;
    struct passwd *pw = getpwuid(uid);
    if (!pw) return; /* a uid without a name: no supplementary groups */
    int n = 64;
    for (int tries = 0; tries < 4; tries++) {
        gid_t *g = realloc(p->groups, (size_t)n * sizeof *g);
        if (!g) return;
        p->groups = g;
        int want = n;
        if (getgrouplist(pw->pw_name, gid, g, &want) >= 0) {
            p->ngroups = want;
            return;
        }
        n = want > n ? want : 2 * n;
    }
}

static void on_child_exit(void *ctx, uint32_t events);

static uint64_t realtime_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int say(char *why, size_t whylen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int say(char *why, size_t whylen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, whylen, fmt, ap);
    va_end(ap);
    return -1;
}

/* Whether fd is what the kernel says a request of uid and gid came on: a connected UNIX
 * stream socket accepted on psid's client socket (its local address is that socket's path;
 * a listening socket's or the engine's own connections' are not), whose peer (SO_PEERCRED,
 * taken at its connect) is uid with primary group gid and has not closed it. 0, or -1 with
 * why. */
static int requester(const struct priv *p, int fd, uint32_t uid, uint32_t gid, char *why,
                     size_t whylen)
{
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0 || !S_ISSOCK(st.st_mode))
        return say(why, whylen, "no client connection came with the request");
    int dom = -1, type = -1, listening = -1;
    socklen_t l = sizeof dom;
    getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &dom, &l);
    l = sizeof type;
    getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &l);
    l = sizeof listening;
    getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &l);
    if (dom != AF_UNIX || type != SOCK_STREAM || listening != 0)
        return say(why, whylen, "the request's socket is not a connected UNIX stream socket");
    struct sockaddr_un a, peer;
    socklen_t al = sizeof a, pl = sizeof peer;
    memset(&a, 0, sizeof a);
    const char *path = p->cfg->sock_path ? p->cfg->sock_path : "";
    if (getsockname(fd, (struct sockaddr *)&a, &al) < 0 ||
        al <= offsetof(struct sockaddr_un, sun_path) || !a.sun_path[0] ||
        strncmp(a.sun_path, path, sizeof a.sun_path) != 0 ||
        getpeername(fd, (struct sockaddr *)&peer, &pl) < 0)
        return say(why, whylen, "the request's socket is not a connection to psid's socket %s",
                   path);
    struct ucred cr;
    socklen_t cl = sizeof cr;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &cl) < 0)
        return say(why, whylen, "the request's socket has no peer credentials: %s",
                   strerror(errno));
    if (cr.uid != uid || cr.gid != gid)
        return say(why, whylen,
                   "the requesting client is uid %u gid %u (pid %d), not uid %u gid %u",
                   (unsigned)cr.uid, (unsigned)cr.gid, (int)cr.pid, uid, gid);
    struct pollfd pf = {.fd = fd, .events = POLLRDHUP};
    if (poll(&pf, 1, 0) < 0 || pf.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL))
        return say(why, whylen, "the requesting client (pid %d) has closed its connection",
                   (int)cr.pid);
    return 0;
}

/* PRIV_CRED + the requesting client's connection: the job's spawn credentials, one per
 * target node, if the kernel says the connection is the job's user's. */
static void do_cred(struct priv *p, const struct psmsg *m, int fd)
{
    struct priv_cred c;
    char why[400];
    int err = 0;
    if (priv_decode_cred(m, &c, why, sizeof why) < 0) {
        err = EINVAL;
    } else if (PSTID_NODE(c.job) != p->cfg->node) {
        err = EINVAL;
        say(why, sizeof why, "job %u:%u is not this node's", PSTID_NODE(c.job),
            (unsigned)PSTID_PID(c.job));
    } else if (requester(p, fd, c.uid, c.gid, why, sizeof why) < 0) {
        err = EPERM;
    }
    struct psmsg_buf b = {0};
    psmsg_begin(&b, PRIV_CRED_ANSWER, m->id);
    psmsg_put_u32(&b, PRIV_F_ERRNO, (uint32_t)err);
    if (err) {
        log_warn("privileged child: refused to vouch for job %u:%u of uid %u: %s",
                 PSTID_NODE(c.job), (unsigned)PSTID_PID(c.job), c.uid, why);
        psmsg_put_str(&b, PRIV_F_TEXT, why);
        send_or_die(p, &b, NULL, 0);
        return;
    }
    struct spawncred k = {
        .origin = p->cfg->node, .uid = c.uid, .gid = c.gid, .job = c.job, .issued = realtime_ns()};
    memcpy(k.digest, c.digest, sizeof k.digest);
    size_t pos = 0;
    while (priv_cred_target(m, &pos, &k.target, &k.nranks)) {
        uint8_t out[SPAWNCRED_LEN];
        randombytes_buf(k.nonce, sizeof k.nonce);
        spawncred_encode(&k, p->cfg->spawn_key, out);
        psmsg_put_bytes(&b, PRIV_F_CRED, out, sizeof out);
    }
    send_or_die(p, &b, NULL, 0);
}

/* Whether this is the first open of file name by job here (then it is remembered). */
static bool first_open(struct priv *p, uint64_t job, const char *name)
{
    uint64_t h = fnv1a64(name);
    for (size_t i = 0; i < p->nopened; i++)
        if (p->opened[i].job == job && p->opened[i].name == h) return false;
    p->opened[p->next_opened] = (struct opened){job, h};
    p->next_opened = (p->next_opened + 1) % OPENED_MAX;
    if (p->nopened < OPENED_MAX) p->nopened++;
    return true;
}

static void spawn_failed(struct priv *p, uint32_t id, int err, const char *why)
{
    struct psmsg_buf b = {0};
    psmsg_begin(&b, PRIV_SPAWNED, id);
    psmsg_put_u32(&b, PRIV_F_ERRNO, (uint32_t)err);
    psmsg_put_str(&b, PRIV_F_TEXT, why);
    send_or_die(p, &b, NULL, 0);
}

static void do_spawn(struct priv *p, const struct psmsg *m)
{
    struct priv_spawn s;
    char why[512];
    if (priv_decode_spawn(m, &s, why, sizeof why) < 0) {
        spawn_failed(p, m->id, EINVAL, why);
        return;
    }
    if (s.nargv && keep_request(p, m, &s) < 0) {
        spawn_failed(p, m->id, ENOMEM, "out of memory");
        return;
    }
    if (!p->have_req || p->req != s.req) {
        spawn_failed(p, m->id, EINVAL, "malformed spawn request: an unknown request");
        return;
    }
    /* the evidence: the rank's own variables are psid's names only, and a credential a
     * privileged child made for this user, job, program and node, not used up */
    struct psmsg_field f;
    size_t pos = 0;
    bool foreign = false;
    while (!foreign && psmsg_next(&m->body, &pos, &f))
        if (f.tag == PRIV_F_RENV && !priv_renv_allowed((const char *)f.val, f.len)) {
            snprintf(why, sizeof why, "a variable of the rank that is not psid's: %.*s",
                     (int)(f.len < 64 ? f.len : 64), (const char *)f.val);
            foreign = true;
        }
    struct spawncred_want w = {.node = p->cfg->node, .uid = s.uid, .gid = s.gid, .job = s.job};
    struct spawncred_hash prog = p->prog;
    if (s.out_pat || s.err_pat) spawncred_hash_out(&prog, s.out_pat, s.err_pat, s.append, s.name);
    if (s.arg0_pat) spawncred_hash_arg0_pattern(&prog);
    spawncred_hash_final(&prog, s.cwd, s.umask, w.digest);
    if (foreign || spawncred_check(s.cred, s.credlen, p->cfg->spawn_key, &w, realtime_ns(),
                                   loop_now(), p->book, why, sizeof why) < 0) {
        log_warn("privileged child: refused to start rank %u of job %u:%u as uid %u: %s", s.rank,
                 PSTID_NODE(s.job), (unsigned)PSTID_PID(s.job), s.uid, why);
        spawn_failed(p, m->id, EPERM, why);
        return;
    }
    bool root = geteuid() == 0;
    if ((s.uid == 0 || s.gid == 0) && root && !p->cfg->root_jobs) { /* group root too */
        spawn_failed(p, m->id, EPERM,
                     "psid.root_jobs is false: no task runs as root here (uid or gid 0)");
        return;
    }
    /* --output-on-node: the files' names, from the checked patterns and what the child knows
     * itself (the job, the rank, this node's name, the user's name); the first rank of the
     * job here to open a file truncates it, unless the job appends. psrun --bcast: the
     * program is the copy's name, expanded as the broadcast's destination was (privbcast.c:
     * %x is empty there, so it is here) */
    char out_path[4096], err_path[4096], prog_path[PSBCAST_DEST_MAX];
    int out_trunc = 0, err_trunc = 0;
    if (s.out_pat || s.err_pat || s.arg0_pat) {
        char job[32], user[64];
        snprintf(job, sizeof job, "%u:%u", PSTID_NODE(s.job), (unsigned)PSTID_PID(s.job));
        struct passwd *pw = getpwuid((uid_t)s.uid);
        snprintf(user, sizeof user, "%s", pw ? pw->pw_name : "");
        if (!pw) snprintf(user, sizeof user, "%u", s.uid);
        struct lg_patvals pv = {.job = job,
                                .user = user,
                                .name = s.name,
                                .node = p->cfg->node_name ? p->cfg->node_name : "",
                                .rank = s.rank,
                                .nodeidx = s.nodeidx};
        if ((s.out_pat && lg_pat_expand(s.out_pat, &pv, out_path, sizeof out_path) < 0) ||
            (s.err_pat && lg_pat_expand(s.err_pat, &pv, err_path, sizeof err_path) < 0)) {
            spawn_failed(p, m->id, ENAMETOOLONG, "an output file name is too long");
            return;
        }
        pv.name = "";
        char perr[200];
        if (s.arg0_pat && (!p->argv[0] || bcast_dest_check(p->argv[0], perr, sizeof perr) < 0 ||
                           lg_pat_expand(p->argv[0], &pv, prog_path, sizeof prog_path) < 0)) {
            spawn_failed(p, m->id, EINVAL, "the program's pattern (psrun --bcast) is not valid");
            return;
        }
        if (!s.append) {
            out_trunc = s.out_pat && first_open(p, s.job, out_path);
            err_trunc = s.err_pat && (!s.out_pat || strcmp(out_path, err_path)) &&
                        first_open(p, s.job, err_path);
        }
    }
    /* a binding: CPUs of this node only; PSI_CPUS says what was set */
    cpu_set_t cpus;
    char cpus_var[16 + 4 * PSCPU_MAX / 2] = "PSI_CPUS=";
    if (s.bind) {
        int out = pscpu_first_outside(&s.cpus, &p->own_cpus);
        char own[256];
        if (out >= 0) {
            if (pscpu_format_list(&p->own_cpus, own, sizeof own) < 0) strcpy(own, "...");
            snprintf(why, sizeof why, "CPU %d is not a CPU of this node (its CPUs: %.200s)", out,
                     own);
            spawn_failed(p, m->id, EINVAL, why);
            return;
        }
        CPU_ZERO(&cpus);
        for (unsigned c = 0; c < PSCPU_MAX && c < CPU_SETSIZE; c++)
            if (pscpu_isset(&s.cpus, c)) CPU_SET(c, &cpus);
        pscpu_format_list(&s.cpus, cpus_var + 9, sizeof cpus_var - 9);
    }
    /* the environment: the job's, the rank's own, PSI_CPUS, and the buffer the child fills
     * with PSI_TID (spawn.h) */
    char **envp = calloc(p->nenv + s.nrenv + 4, sizeof *envp);
    char *tid = calloc(1, SPAWN_TID_LEN);
    if (!envp || !tid) {
        free(envp);
        free(tid);
        spawn_failed(p, m->id, ENOMEM, "out of memory");
        return;
    }
    size_t n = 0;
    for (size_t i = 0; i < p->nenv; i++) envp[n++] = p->env[i];
    pos = 0;
    char *renv[PRIV_MAX_RENV];
    size_t nrenv = 0;
    while (psmsg_next(&m->body, &pos, &f))
        if (f.tag == PRIV_F_RENV && nrenv < PRIV_MAX_RENV && (renv[nrenv] = field_dup(&f)))
            envp[n++] = renv[nrenv++];
    /* an MPI job's rank: its PMI socket, made here (privsep.h) */
    static char pmi_fd_var[] = "PMI_FD=" PMI_FD_STR;
    int pmi[2] = {-1, -1};
    if (s.want_pmi) {
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pmi) < 0 ||
            (pmi[0] < PMI_FD_NUM && keep_high(&pmi[0]) < 0)) {
            snprintf(why, sizeof why, "PMI socket: %s", strerror(errno));
            for (size_t i = 0; i < nrenv; i++) free(renv[i]);
            free(envp);
            free(tid);
            if (pmi[0] >= 0) close(pmi[0]);
            if (pmi[1] >= 0) close(pmi[1]);
            spawn_failed(p, m->id, EMFILE, why);
            return;
        }
        envp[n++] = pmi_fd_var;
    }
    if (s.bind) envp[n++] = cpus_var;
    envp[n++] = tid;
    envp[n] = NULL;
    if (root) user_groups(p, s.uid, s.gid);
    int cgfd = cgroup_open_procs(p->cfg->cg, s.job),
        memfd = cgroup_open_mem1_procs(p->cfg->cg, s.job);
    char *arg0 = p->argv[0];
    if (s.arg0_pat) p->argv[0] = prog_path; /* the copy's name here, for this start only */
    struct spawn_args a = {.argv = p->argv,
                           .envp = envp,
                           .groups = p->groups,
                           .ngroups = root ? p->ngroups : 0,
                           .cwd = s.cwd,
                           .umask = (mode_t)s.umask,
                           .uid = s.uid,
                           .gid = s.gid,
                           .switch_user = root,
                           .want_stdin = (int)s.want_stdin,
                           .cgroup_fd = cgfd,
                           .memcg_fd = memfd,
                           .pmi_fd = pmi[0],
                           .cpus = s.bind ? &cpus : NULL,
                           .out_path = s.out_pat ? out_path : NULL,
                           .err_path = s.err_pat ? err_path : NULL,
                           .out_trunc = out_trunc,
                           .err_trunc = err_trunc,
                           .node = s.node};
    struct spawned t;
    int err;
    int rc = spawn_task(&a, &t, &err, why, sizeof why);
    p->argv[0] = arg0;
    if (cgfd >= 0) close(cgfd);
    if (memfd >= 0) close(memfd);
    if (pmi[0] >= 0) close(pmi[0]); /* the task has it */
    for (size_t i = 0; i < nrenv; i++) free(renv[i]);
    free(envp);
    free(tid);
    if (rc < 0) {
        if (pmi[1] >= 0) close(pmi[1]);
        spawn_failed(p, m->id, err, why);
        return;
    }
    struct child *c = calloc(1, sizeof *c);
    if (!c || loop_fd(p->loop, t.pidfd, EPOLLIN, on_child_exit, c) < 0) {
        free(c);
        kill(t.pid, SIGKILL);
        waitpid(t.pid, NULL, 0);
        close(t.pidfd);
        c = NULL;
    } else {
        *c = (struct child){.pid = t.pid, .pidfd = t.pidfd, .p = p, .next = p->tab[bucket(t.pid)]};
        p->tab[bucket(t.pid)] = c;
    }
    int fds[4] = {t.out_fd, t.err_fd, t.in_fd, -1};
    int nfds = t.in_fd >= 0 ? 3 : 2;
    if (pmi[1] >= 0) fds[nfds++] = pmi[1];
    if (c) {
        struct psmsg_buf b = {0};
        psmsg_begin(&b, PRIV_SPAWNED, m->id);
        psmsg_put_u32(&b, PRIV_F_PID, (uint32_t)t.pid);
        send_or_die(p, &b, fds, nfds);
    } else {
        spawn_failed(p, m->id, ENOMEM, "out of memory");
    }
    for (int i = 0; i < nfds; i++) close(fds[i]);
}

static void do_signal(struct priv *p, const struct psmsg *m)
{
    uint32_t pid = 0, sig = 0, group = 0;
    int err = 0;
    if (psmsg_get_u32(&m->body, PRIV_F_PID, &pid) < 0 ||
        psmsg_get_u32(&m->body, PRIV_F_SIG, &sig) < 0 ||
        psmsg_get_u32(&m->body, PRIV_F_GROUP, &group) < 0 || sig >= NSIG || group > 1)
        err = EINVAL;
    struct child *c = err ? NULL : find(p, (pid_t)pid);
    if (!err && !c) err = ESRCH; /* only what this child started */
    if (!err && group && kill(-(pid_t)pid, (int)sig) < 0) err = errno;
    if (!err && !group && syscall(SYS_pidfd_send_signal, c->pidfd, (int)sig, NULL, 0) < 0)
        err = errno;
    struct psmsg_buf b = {0};
    psmsg_begin(&b, PRIV_SIGNALED, m->id);
    psmsg_put_u32(&b, PRIV_F_ERRNO, (uint32_t)err);
    send_or_die(p, &b, NULL, 0);
}

static void do_release(struct priv *p, const struct psmsg *m)
{
    uint32_t pid;
    struct child *c;
    if (psmsg_get_u32(&m->body, PRIV_F_PID, &pid) < 0 || !(c = find(p, (pid_t)pid))) return;
    siginfo_t si;
    if (!c->exited) kill(c->pid, SIGKILL); /* released alive: only at the engine's end */
    waitid((idtype_t)P_PIDFD, (id_t)c->pidfd, &si, WEXITED);
    forget(p, c);
}

/* The real uid of the process behind a pidfd, from its fdinfo and /proc; -1 if gone. */
static long pidfd_uid(int pidfd)
{
    char path[64], line[256];
    long pid = -1, uid = -1;
    snprintf(path, sizeof path, "/proc/self/fdinfo/%d", pidfd);
    FILE *f = fopen(path, "re");
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "Pid: %ld", &pid) == 1) break;
    if (f) fclose(f);
    if (pid <= 0) return -1;
    snprintf(path, sizeof path, "/proc/%ld/status", pid);
    f = fopen(path, "re");
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "Uid: %ld", &uid) == 1) break;
    if (f) fclose(f);
    return uid;
}

static void do_signal_fd(struct priv *p, const struct psmsg *m, int fd)
{
    uint32_t sig;
    if (fd < 0 || psmsg_get_u32(&m->body, PRIV_F_SIG, &sig) < 0 || sig == 0 || sig >= NSIG) return;
    long uid = pidfd_uid(fd);
    if (uid < 0 || (uid == 0 && !p->cfg->root_jobs)) return;
    syscall(SYS_pidfd_send_signal, fd, (int)sig, NULL, 0);
}

/* PRIV_NETNS + a socket: whether the socket's network namespace is owned by this child's
 * user namespace: made by root (ip netns, a container runtime as root), not by a user in a
 * private user namespace, where any address and port can be had. Not root: never. */
static void do_netns(struct priv *p, const struct psmsg *m, int fd)
{
    uint32_t served = 0, err = 0;
    struct stat st, us;
    int ns = -1, u = -1;
    if (fd < 0 || fstat(fd, &st) < 0 || !S_ISSOCK(st.st_mode))
        err = EBADF;
    else if ((ns = ioctl(fd, SIOCGSKNS)) < 0 || (u = ioctl(ns, NS_GET_USERNS)) < 0 ||
             fstat(u, &us) < 0)
        err = (uint32_t)errno;
    else
        served = p->userns.st_ino && us.st_ino == p->userns.st_ino && us.st_dev == p->userns.st_dev;
    if (u >= 0) close(u);
    if (ns >= 0) close(ns);
    struct psmsg_buf b = {0};
    psmsg_begin(&b, PRIV_NETNS_ANSWER, m->id);
    psmsg_put_u32(&b, PRIV_F_ERRNO, err);
    psmsg_put_u32(&b, PRIV_F_SERVED, served);
    send_or_die(p, &b, NULL, 0);
    psmsg_buf_free(&b);
}

/* Children that are not tasks: what tasks left behind, reparented here (the subreaper).
 * fn for each pid in /proc/self/task/TID/children that is not in the table. */
static void for_orphans(struct priv *p, void (*fn)(pid_t))
{
    char path[64];
    snprintf(path, sizeof path, "/proc/self/task/%d/children", (int)getpid());
    FILE *f = fopen(path, "re");
    long pid;
    while (f && fscanf(f, "%ld", &pid) == 1)
        if (!find(p, (pid_t)pid)) fn((pid_t)pid);
    if (f) fclose(f);
}

static void reap_if_dead(pid_t pid)
{
    waitpid(pid, NULL, WNOHANG);
}

static void kill_and_reap(pid_t pid)
{
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
}

static void on_sigchld(void *ctx, uint32_t events)
{
    struct priv *p = ctx;
    (void)events;
    struct signalfd_siginfo si;
    while (read(p->sig_fd, &si, sizeof si) == (ssize_t)sizeof si) {
    }
    for_orphans(p, reap_if_dead);
}

static void bcast_groups(void *ctx, uint32_t uid, uint32_t gid, const gid_t **g, int *n)
{
    struct priv *p = ctx;
    user_groups(p, uid, gid);
    *g = p->groups;
    *n = p->ngroups;
}

static struct privbcast_env bcast_env(struct priv *p)
{
    return (struct privbcast_env){.key = p->cfg->spawn_key,
                                  .book = p->book,
                                  .node = p->cfg->node,
                                  .node_name = p->cfg->node_name,
                                  .root = geteuid() == 0,
                                  .root_jobs = p->cfg->root_jobs,
                                  .groups = bcast_groups,
                                  .ctx = p,
                                  .wipe = p->cfg->spawn_key,
                                  .wipelen = sizeof p->cfg->spawn_key};
}

static void do_bcast(struct priv *p, const struct psmsg *m)
{
    struct privbcast_env env = bcast_env(p);
    struct psmsg_buf b = {0};
    int fd = -1;
    if (!p->bc && !(p->bc = privbcast_new())) {
        if (m->type == PRIV_BCAST_DROP) return;
        psmsg_begin(&b, m->type == PRIV_BCAST_OPEN ? PRIV_BCAST_OPENED : PRIV_BCAST_COMMITTED,
                    m->id);
        psmsg_put_u32(&b, PRIV_F_ERRNO, ENOMEM);
        psmsg_put_str(&b, PRIV_F_TEXT, "out of memory");
        send_or_die(p, &b, NULL, 0);
        return;
    }
    if (m->type == PRIV_BCAST_OPEN) {
        psmsg_begin(&b, PRIV_BCAST_OPENED, m->id);
        privbcast_open(p->bc, &env, m, &b, &fd);
        send_or_die(p, &b, fd >= 0 ? &fd : NULL, fd >= 0 ? 1 : 0);
        if (fd >= 0) close(fd);
    } else if (m->type == PRIV_BCAST_COMMIT) {
        psmsg_begin(&b, PRIV_BCAST_COMMITTED, m->id);
        privbcast_commit(p->bc, &env, m, &b);
        send_or_die(p, &b, NULL, 0);
    } else {
        privbcast_drop(p->bc, &env, m);
    }
}

static void on_engine(void *ctx, uint32_t events)
{
    struct priv *p = ctx;
    (void)events;
    uint8_t *buf;
    struct psmsg m;
    int fds[PRIV_MAX_FDS], nfds;
    if (priv_recv(p->cfg->fd, &buf, &m, fds, &nfds) < 0) {
        if (errno) log_err("privileged child: from the engine: %s", strerror(errno));
        loop_stop(p->loop); /* EOF: the engine ends */
        return;
    }
    switch (m.type) {
    case PRIV_SPAWN:
        do_spawn(p, &m);
        break;
    case PRIV_SIGNAL:
        do_signal(p, &m);
        break;
    case PRIV_RELEASE:
        do_release(p, &m);
        break;
    case PRIV_SIGNAL_FD:
        do_signal_fd(p, &m, nfds ? fds[0] : -1);
        break;
    case PRIV_NETNS:
        do_netns(p, &m, nfds ? fds[0] : -1);
        break;
    case PRIV_CRED:
        do_cred(p, &m, nfds ? fds[0] : -1);
        break;
    case PRIV_BCAST_OPEN:
    case PRIV_BCAST_COMMIT:
    case PRIV_BCAST_DROP:
        do_bcast(p, &m);
        break;
    default:
        log_warn("privileged child: unknown request %u from the engine", m.type);
    }
    for (int i = 0; i < nfds; i++) close(fds[i]);
    free(buf);
}

/* A zombie's bytes read and written (/proc/PID/io: rchar, wchar, as Slurm's jobacct_gather
 * takes them); 0 where the kernel does not say. */
static void read_io(pid_t pid, uint64_t *rchar, uint64_t *wchar)
{
    char path[64], line[128];
    snprintf(path, sizeof path, "/proc/%d/io", (int)pid);
    FILE *f = fopen(path, "re");
    if (!f) return;
    while (fgets(line, sizeof line, f)) {
        unsigned long long v;
        if (sscanf(line, "rchar: %llu", &v) == 1) *rchar = v;
        if (sscanf(line, "wchar: %llu", &v) == 1) *wchar = v;
    }
    fclose(f);
}

static void on_child_exit(void *ctx, uint32_t events)
{
    struct child *c = ctx;
    struct priv *p = c->p;
    (void)events;
    siginfo_t si;
    memset(&si, 0, sizeof si);
    /* WNOWAIT: a zombie until PRIV_RELEASE, so its pid and group stay its own */
    /* the raw waitid gives the zombie's usage too (with its reaped children's) */
    struct rusage ru;
    memset(&ru, 0, sizeof ru);
    if (syscall(SYS_waitid, P_PIDFD, c->pidfd, &si, WEXITED | WNOHANG | WNOWAIT, &ru) < 0 ||
        si.si_pid == 0)
        return;
    uint64_t rchar = 0, wchar = 0;
    read_io(c->pid, &rchar, &wchar);
    c->exited = true;
    loop_fd_del(p->loop, c->pidfd);
    /* the task has ended: what it left in its process group goes with it (the group is
     * still its own: the task stays a zombie until PRIV_RELEASE) */
    kill(-c->pid, SIGKILL);
    struct psmsg_buf b = {0};
    psmsg_begin(&b, PRIV_EXIT, 0);
    psmsg_put_u32(&b, PRIV_F_PID, (uint32_t)c->pid);
    psmsg_put_u32(&b, PRIV_F_STATUS, (uint32_t)spawn_wait_status(&si));
    psmsg_put_u64(&b, PRIV_F_USER_US,
                  (uint64_t)ru.ru_utime.tv_sec * 1000000u + (uint64_t)ru.ru_utime.tv_usec);
    psmsg_put_u64(&b, PRIV_F_SYS_US,
                  (uint64_t)ru.ru_stime.tv_sec * 1000000u + (uint64_t)ru.ru_stime.tv_usec);
    psmsg_put_u64(&b, PRIV_F_MAXRSS, (uint64_t)ru.ru_maxrss * 1024u);
    psmsg_put_u64(&b, PRIV_F_RCHAR, rchar);
    psmsg_put_u64(&b, PRIV_F_WCHAR, wchar);
    send_or_die(p, &b, NULL, 0);
}

int privparent_run(struct privparent_cfg *cfg)
{
    struct priv p = {.cfg = cfg, .loop = loop_new(), .sig_fd = -1, .book = spawncred_book_new()};
    /* nobody of its own uid may trace it for the spawn key (a psid not started as root) */
    prctl(PR_SET_DUMPABLE, 0);
    sigset_t chld;
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    if (stat("/proc/self/ns/user", &p.userns) < 0) memset(&p.userns, 0, sizeof p.userns);
    cpu_set_t own;
    if (sched_getaffinity(0, sizeof own, &own) == 0) {
        for (unsigned c = 0; c < PSCPU_MAX && c < CPU_SETSIZE; c++)
            if (CPU_ISSET(c, &own)) pscpu_set(&p.own_cpus, c);
    }
    if (prctl(PR_SET_CHILD_SUBREAPER, 1) < 0 || sigprocmask(SIG_BLOCK, &chld, NULL) < 0 ||
        (p.sig_fd = signalfd(-1, &chld, SFD_NONBLOCK | SFD_CLOEXEC)) < 0 || !p.loop || !p.book ||
        loop_fd(p.loop, cfg->fd, EPOLLIN, on_engine, &p) < 0 ||
        loop_fd(p.loop, p.sig_fd, EPOLLIN, on_sigchld, &p) < 0) {
        log_err("privileged child: %s", strerror(errno));
        return 1;
    }
    int rc = loop_run(p.loop) < 0 ? 1 : 0;
    /* the engine is gone: nothing of its tasks outlives it */
    size_t left = 0;
    for (size_t k = 0; k < NBUCKETS; k++)
        while (p.tab[k]) {
            struct child *c = p.tab[k];
            if (!c->exited) left++;
            kill(-c->pid, SIGKILL);
            kill(c->pid, SIGKILL);
            siginfo_t si;
            waitid((idtype_t)P_PIDFD, (id_t)c->pidfd, &si, WEXITED);
            forget(&p, c);
        }
    for_orphans(&p, kill_and_reap);
    if (left) log_notice("the engine is gone: %zu tasks killed", left);
    struct privbcast_env env = bcast_env(&p);
    privbcast_free(p.bc, &env); /* the copies of broadcasts whose job cannot end otherwise */
    cgroup_close(cfg->cg);
    if (cfg->sock_path && cfg->sock_path[0]) unlink(cfg->sock_path);
    free_strv(p.argv, p.nargv);
    free_strv(p.env, p.nenv);
    free(p.groups);
    spawncred_book_free(p.book);
    sodium_memzero(cfg->spawn_key, sizeof cfg->spawn_key);
    if (p.sig_fd >= 0) close(p.sig_fd);
    loop_free(p.loop);
    return rc;
}
