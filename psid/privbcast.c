/*
 * privbcast.c - the privileged child's part of a file broadcast (see privbcast.h).
 *
 * Each operation on a user's file is one short-lived process forked from the child, which
 * wipes the child's secrets from its copy of memory, becomes the user (the groups the child
 * looked up itself, the gid, the uid: all must succeed) and only then touches the path:
 *   open    nothing at the destination unless PSBCAST_F_FORCE (as sbcast), then a new
 *           temporary file beside it, "DEST.psbcast-RANDOM", O_EXCL|O_NOFOLLOW, mode 0600,
 *           passed back to the child over a socketpair and from there to the engine, which
 *           writes the chunks into it (it cannot open anything outside its sandbox itself)
 *   commit  chmod to the source's mode & 0777 (sbcast's), utimensat with PSBCAST_F_PRESERVE,
 *           then rename to the destination: renameat2(RENAME_NOREPLACE) without
 *           PSBCAST_F_FORCE (link and unlink where the file system lacks it), so a file
 *           that appeared meanwhile is never replaced; a failure unlinks the temporary file
 *   drop    unlink the temporary file, or the copy once in place
 * The table is bounded (PRIVBCAST_FILES_MAX); a copy kept after its job (PSBCAST_F_KEEP)
 * leaves it once in place. When the child ends, what is left in it is removed.
 */
#include "privbcast.h"

#include "bcastwire.h"
#include "log.h"
#include "privsep.h"
#include "psloop.h"
#include "../logger/outfile.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct bfile {
    uint64_t id;
    uint32_t home, uid, gid, mode, flags;
    bool placed; /* renamed into place; else the temporary file exists */
    char *tmp, *dest;
    struct bfile *next;
};

struct privbcast {
    struct bfile *head;
    size_t n;
};

struct privbcast *privbcast_new(void)
{
    return calloc(1, sizeof(struct privbcast));
}

/* ---- the helper: a process of the child's that is the user ---- */

struct op {
    const struct bfile *f;
    uint64_t mtime, atime;
    int (*fn)(const struct op *op, int *fd); /* 0, or an errno */
};

/* Run op as the file's user in a forked process: 0 or the errno it ended with; *fd the
 * descriptor it made (want_fd), passed back. */
static int as_user(const struct privbcast_env *env, const struct op *op, int *fd)
{
    int sp[2] = {-1, -1};
    if (fd) *fd = -1;
    if (fd && socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) < 0) return errno;
    const gid_t *g = NULL;
    int ng = 0;
    if (env->root && env->groups) env->groups(env->ctx, op->f->uid, op->f->gid, &g, &ng);
    pid_t pid = fork();
    if (pid < 0) {
        int e = errno;
        if (fd) {
            close(sp[0]);
            close(sp[1]);
        }
        return e;
    }
    if (pid == 0) {
        if (env->wipe) explicit_bzero(env->wipe, env->wipelen);
        if (env->root && (setgroups((size_t)ng, g) < 0 || setgid((gid_t)op->f->gid) < 0 ||
                          setuid((uid_t)op->f->uid) < 0))
            _exit(errno ? errno : EPERM);
        int made = -1;
        int e = op->fn(op, &made);
        if (!e && fd) { /* the descriptor, with a frame of the pair's own kind */
            struct psmsg_buf b = {0};
            psmsg_begin(&b, PRIV_BCAST_OPENED, 0);
            if (psmsg_end(&b) < 0 || priv_send(sp[1], &b, &made, 1) < 0) e = errno ? errno : EIO;
        }
        _exit(e & 0xff);
    }
    if (fd) close(sp[1]);
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    int e = WIFEXITED(st) ? WEXITSTATUS(st) : EIO;
    if (fd) {
        uint8_t *buf = NULL;
        struct psmsg m;
        int fds[PRIV_MAX_FDS], nfds = 0;
        if (!e && (priv_recv(sp[0], &buf, &m, fds, &nfds) < 0 || nfds != 1)) e = EIO;
        if (!e) *fd = fds[0];
        for (int i = e ? 0 : 1; i < nfds; i++) close(fds[i]);
        free(buf);
        close(sp[0]);
    }
    return e;
}

static int op_open(const struct op *op, int *fd)
{
    struct stat st;
    if (!(op->f->flags & PSBCAST_F_FORCE) && lstat(op->f->dest, &st) == 0) return EEXIST;
    *fd = open(op->f->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    return *fd < 0 ? errno : 0;
}

static int op_commit(const struct op *op, int *fd)
{
    (void)fd;
    const struct bfile *f = op->f;
    int e = 0;
    if (chmod(f->tmp, (mode_t)(f->mode & 0777)) < 0) e = errno;
    if (!e && f->flags & PSBCAST_F_PRESERVE) {
        struct timespec ts[2] = {
            {(time_t)(op->atime / 1000000000ull), (long)(op->atime % 1000000000ull)},
            {(time_t)(op->mtime / 1000000000ull), (long)(op->mtime % 1000000000ull)}};
        if (utimensat(AT_FDCWD, f->tmp, ts, AT_SYMLINK_NOFOLLOW) < 0) e = errno;
    }
    if (!e && f->flags & PSBCAST_F_FORCE) {
        if (rename(f->tmp, f->dest) < 0) e = errno;
    } else if (!e && renameat2(AT_FDCWD, f->tmp, AT_FDCWD, f->dest, RENAME_NOREPLACE) < 0) {
        e = errno;
        if (e == EINVAL || e == ENOSYS) /* a file system without it: link never replaces */
            e = link(f->tmp, f->dest) < 0 ? errno : unlink(f->tmp) < 0 ? errno : 0;
    }
    if (e) unlink(f->tmp);
    return e;
}

static int op_unlink(const struct op *op, int *fd)
{
    (void)fd;
    return unlink(op->f->placed ? op->f->dest : op->f->tmp) < 0 ? errno : 0;
}

/* ---- the table ---- */

static struct bfile *find(struct privbcast *pb, uint64_t id)
{
    for (struct bfile *f = pb->head; f; f = f->next)
        if (f->id == id) return f;
    return NULL;
}

static void forget(struct privbcast *pb, struct bfile *f)
{
    for (struct bfile **pp = &pb->head; *pp; pp = &(*pp)->next)
        if (*pp == f) {
            *pp = f->next;
            pb->n--;
            break;
        }
    free(f->tmp);
    free(f->dest);
    free(f);
}

static void answer(struct psmsg_buf *b, int err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void answer(struct psmsg_buf *b, int err, const char *fmt, ...)
{
    psmsg_put_u32(b, PRIV_F_ERRNO, (uint32_t)err);
    if (!err) return;
    char text[PSBCAST_DEST_MAX + 200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    psmsg_put_str(b, PRIV_F_TEXT, text);
}

static uint64_t realtime_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void privbcast_open(struct privbcast *pb, const struct privbcast_env *env, const struct psmsg *m,
                    struct psmsg_buf *b, int *fd)
{
    struct priv_bcast_open o;
    char why[400];
    *fd = -1;
    if (priv_decode_bcast_open(m, &o, why, sizeof why) < 0) {
        answer(b, EINVAL, "%s", why);
        return;
    }
    /* the evidence: a credential made for this user, broadcast, destination and node */
    struct spawncred_want w = {.node = env->node, .uid = o.uid, .gid = o.gid, .job = o.id};
    bcast_digest(o.dest, o.flags, o.mode, o.size, w.digest);
    if (spawncred_check(o.cred, o.credlen, env->key, &w, realtime_ns(), loop_now(), env->book, why,
                        sizeof why) < 0) {
        log_warn("privileged child: refused a broadcast's copy for uid %u: %s", o.uid, why);
        answer(b, EPERM, "%s", why);
        return;
    }
    if (env->root && !env->root_jobs && (o.uid == 0 || o.gid == 0)) {
        answer(b, EPERM, "psid.root_jobs is false: no file is written as root here");
        return;
    }
    if (find(pb, o.id)) {
        answer(b, EEXIST, "a copy of this broadcast is already under way here");
        return;
    }
    if (pb->n >= PRIVBCAST_FILES_MAX) {
        answer(b, ENFILE, "too many broadcast copies on this node (%u)", PRIVBCAST_FILES_MAX);
        return;
    }
    char job[32], user[64], dest[PSBCAST_DEST_MAX];
    snprintf(job, sizeof job, "%u:%u", PSTID_NODE(o.id), (unsigned)PSTID_PID(o.id));
    struct passwd *pw = getpwuid((uid_t)o.uid);
    if (pw)
        snprintf(user, sizeof user, "%s", pw->pw_name);
    else
        snprintf(user, sizeof user, "%u", o.uid);
    struct lg_patvals pv = {.job = job,
                            .user = user,
                            .name = "",
                            .node = env->node_name ? env->node_name : "",
                            .nodeidx = o.nodeidx};
    if (lg_pat_expand(o.dest, &pv, dest, sizeof dest) < 0) {
        answer(b, ENAMETOOLONG, "the destination %s is too long once expanded", o.dest);
        return;
    }
    struct bfile *f = calloc(1, sizeof *f);
    uint8_t rnd[6];
    randombytes_buf(rnd, sizeof rnd);
    if (!f || !(f->dest = strdup(dest)) ||
        asprintf(&f->tmp, "%s.psbcast-%02x%02x%02x%02x%02x%02x", dest, rnd[0], rnd[1], rnd[2],
                 rnd[3], rnd[4], rnd[5]) < 0) {
        if (f) free(f->dest);
        free(f);
        answer(b, ENOMEM, "out of memory");
        return;
    }
    *f = (struct bfile){.id = o.id,
                        .home = PSTID_NODE(o.id),
                        .uid = o.uid,
                        .gid = o.gid,
                        .mode = o.mode,
                        .flags = o.flags,
                        .tmp = f->tmp,
                        .dest = f->dest};
    struct op op = {.f = f, .fn = op_open};
    int e = as_user(env, &op, fd);
    if (e) {
        if (e == EEXIST)
            answer(b, e, "%s exists already (sbcast's --force replaces it)", dest);
        else
            answer(b, e, "cannot create %s: %s", f->dest, strerror(e));
        free(f->tmp);
        free(f->dest);
        free(f);
        return;
    }
    f->next = pb->head;
    pb->head = f;
    pb->n++;
    answer(b, 0, " ");
}

void privbcast_commit(struct privbcast *pb, const struct privbcast_env *env, const struct psmsg *m,
                      struct psmsg_buf *b)
{
    uint64_t id;
    struct bfile *f = NULL;
    struct op op = {.fn = op_commit};
    if (psmsg_get_u64(&m->body, PRIV_F_JOB, &id) < 0 || !(f = find(pb, id)) || f->placed) {
        answer(b, ENOENT, "no copy of that broadcast waits here to be put in place");
        return;
    }
    psmsg_get_u64(&m->body, PRIV_F_MTIME, &op.mtime);
    psmsg_get_u64(&m->body, PRIV_F_ATIME, &op.atime);
    op.f = f;
    int e = as_user(env, &op, NULL);
    if (e == EEXIST)
        answer(b, e, "%s appeared meanwhile (sbcast's --force replaces it)", f->dest);
    else if (e)
        answer(b, e, "cannot put the copy in place as %s: %s", f->dest, strerror(e));
    else
        answer(b, 0, " ");
    if (e || f->flags & PSBCAST_F_KEEP) {
        forget(pb, f); /* failed (its temporary file is gone), or the user's to keep */
        return;
    }
    f->placed = true;
}

static void drop_one(struct privbcast *pb, const struct privbcast_env *env, struct bfile *f)
{
    struct op op = {.f = f, .fn = op_unlink};
    int e = as_user(env, &op, NULL);
    if (e && e != ENOENT)
        log_info("privileged child: broadcast %u:%u: cannot remove %s: %s", PSTID_NODE(f->id),
                 (unsigned)PSTID_PID(f->id), f->placed ? f->dest : f->tmp, strerror(e));
    forget(pb, f);
}

void privbcast_drop(struct privbcast *pb, const struct privbcast_env *env, const struct psmsg *m)
{
    uint64_t id;
    uint32_t home;
    if (psmsg_get_u64(&m->body, PRIV_F_JOB, &id) == 0) {
        struct bfile *f = find(pb, id);
        if (f) drop_one(pb, env, f);
    } else if (psmsg_get_u32(&m->body, PRIV_F_HOME, &home) == 0) {
        for (struct bfile *f = pb->head, *nx; f; f = nx) {
            nx = f->next;
            if (f->home == home) drop_one(pb, env, f);
        }
    }
}

void privbcast_free(struct privbcast *pb, const struct privbcast_env *env)
{
    if (!pb) return;
    size_t n = pb->n;
    while (pb->head) drop_one(pb, env, pb->head);
    if (n) log_notice("the engine is gone: %zu broadcast copies removed", n);
    free(pb);
}
