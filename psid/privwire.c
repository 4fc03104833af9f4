/*
 * privwire.c - the frames between psid's engine and its privileged child (privsep.h):
 * psmsg frames on a stream socketpair with descriptors passed along with a frame's first
 * byte, and the validating decoders of the requests with a body to speak of, PRIV_SPAWN,
 * PRIV_CRED and PRIV_BCAST_OPEN.
 * Both processes block on the pair: the child has nothing else to do, and the engine waits
 * only for the answer to its own request, which the child gives at once.
 */
#include "privsep.h"

#include "bcastwire.h"
#include "bebytes.h"
#include "../logger/outfile.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int priv_send(int fd, const struct psmsg_buf *b, const int *fds, int nfds)
{
    if (nfds < 0 || nfds > PRIV_MAX_FDS || !b->len) {
        errno = EINVAL;
        return -1;
    }
    size_t off = 0;
    while (off < b->len) {
        struct iovec iov = {b->data + off, b->len - off};
        union {
            struct cmsghdr h;
            char buf[CMSG_SPACE(sizeof(int) * PRIV_MAX_FDS)];
        } u;
        struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
        if (off == 0 && nfds > 0) {
            memset(&u, 0, sizeof u);
            mh.msg_control = u.buf;
            mh.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds);
            struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
            c->cmsg_level = SOL_SOCKET;
            c->cmsg_type = SCM_RIGHTS;
            c->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
            memcpy(CMSG_DATA(c), fds, sizeof(int) * (size_t)nfds);
        }
        ssize_t w = sendmsg(fd, &mh, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        off += (size_t)w;
    }
    return 0;
}

/* Read exactly n bytes (the first read also takes descriptors): 0, or -1 (errno 0 at EOF). */
static int read_full(int fd, uint8_t *p, size_t n, int *fds, int *nfds)
{
    size_t off = 0;
    while (off < n) {
        struct iovec iov = {p + off, n - off};
        union {
            struct cmsghdr h;
            char buf[CMSG_SPACE(sizeof(int) * PRIV_MAX_FDS)];
        } u;
        struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
        if (fds) {
            mh.msg_control = u.buf;
            mh.msg_controllen = sizeof u.buf;
        }
        ssize_t r = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) {
            if (r == 0) errno = 0;
            return -1;
        }
        for (struct cmsghdr *c = fds ? CMSG_FIRSTHDR(&mh) : NULL; c; c = CMSG_NXTHDR(&mh, c)) {
            if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
            size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
            for (size_t i = 0; i < k; i++) {
                int got;
                memcpy(&got, CMSG_DATA(c) + i * sizeof(int), sizeof got);
                if (*nfds < PRIV_MAX_FDS)
                    fds[(*nfds)++] = got;
                else
                    close(got);
            }
        }
        if (mh.msg_flags & MSG_CTRUNC) { /* more descriptors than room: lost, say so */
            errno = EMSGSIZE;
            return -1;
        }
        fds = NULL; /* descriptors come with the first byte only */
        off += (size_t)r;
    }
    return 0;
}

int priv_recv(int fd, uint8_t **buf, struct psmsg *m, int *fds, int *nfds)
{
    uint8_t hdr[PSMSG_HDR];
    *buf = NULL;
    *nfds = 0;
    if (read_full(fd, hdr, sizeof hdr, fds, nfds) < 0) goto fail;
    uint32_t len = psmsg_frame_len(hdr, sizeof hdr);
    if (len < PSMSG_HDR || len > PSMSG_MAX) {
        errno = EBADMSG;
        goto fail;
    }
    if (!(*buf = malloc(len))) goto fail;
    memcpy(*buf, hdr, sizeof hdr);
    if (read_full(fd, *buf + PSMSG_HDR, len - PSMSG_HDR, NULL, NULL) < 0) goto fail;
    if (psmsg_parse(*buf, len, m) < 0) {
        errno = EBADMSG;
        goto fail;
    }
    return 0;
fail:;
    int e = errno;
    for (int i = 0; i < *nfds; i++) close(fds[i]);
    *nfds = 0;
    free(*buf);
    *buf = NULL;
    errno = e;
    return -1;
}

static int bad(char *why, size_t whylen, const char *what)
{
    snprintf(why, whylen, "malformed spawn request: %s", what);
    return -1;
}

int priv_decode_spawn(const struct psmsg *m, struct priv_spawn *s, char *why, size_t whylen)
{
    memset(s, 0, sizeof *s);
    if (m->type != PRIV_SPAWN) return bad(why, whylen, "not a spawn");
    const struct psmsg_view *v = &m->body;
    if (psmsg_get_u32(v, PRIV_F_REQ, &s->req) < 0 || psmsg_get_u64(v, PRIV_F_JOB, &s->job) < 0 ||
        psmsg_get_u32(v, PRIV_F_RANK, &s->rank) < 0 || psmsg_get_u32(v, PRIV_F_UID, &s->uid) < 0 ||
        psmsg_get_u32(v, PRIV_F_GID, &s->gid) < 0 ||
        psmsg_get_u32(v, PRIV_F_UMASK, &s->umask) < 0 ||
        psmsg_get_u32(v, PRIV_F_STDIN, &s->want_stdin) < 0 ||
        psmsg_get_u32(v, PRIV_F_NODE, &s->node) < 0)
        return bad(why, whylen, "a field is missing");
    psmsg_get_u32(v, PRIV_F_PMI, &s->want_pmi);
    if (s->umask > 0777 || s->want_stdin > 1 || s->want_pmi > 1)
        return bad(why, whylen, "umask, stdin or pmi");
    if (s->uid == (uint32_t)-1 || s->gid == (uint32_t)-1) return bad(why, whylen, "uid or gid");
    struct psmsg_field f;
    if (psmsg_find(v, PRIV_F_CWD, &f)) {
        if (psmsg_field_str(&f, s->cwd_buf, sizeof s->cwd_buf) < 0)
            return bad(why, whylen, "working directory");
        s->cwd = s->cwd_buf;
    }
    size_t pos = 0;
    while (psmsg_next(v, &pos, &f)) {
        if (f.tag != PRIV_F_ARG && f.tag != PRIV_F_ENV && f.tag != PRIV_F_RENV) continue;
        if (memchr(f.val, 0, f.len)) return bad(why, whylen, "a NUL in a string");
        if (f.tag != PRIV_F_ARG && !memchr(f.val, '=', f.len))
            return bad(why, whylen, "an environment entry without '='");
        size_t *n = f.tag == PRIV_F_ARG ? &s->nargv : f.tag == PRIV_F_ENV ? &s->nenv : &s->nrenv;
        (*n)++;
        if (s->nargv + s->nenv + s->nrenv > PRIV_MAX_ARGS) return bad(why, whylen, "too many");
    }
    if (s->nenv && !s->nargv) return bad(why, whylen, "an environment without a program");
    if (s->nrenv > PRIV_MAX_RENV) return bad(why, whylen, "too many variables of the rank");
    if (psmsg_find(v, PRIV_F_CRED, &f)) {
        s->cred = f.val;
        s->credlen = f.len;
    }
    const struct {
        uint16_t tag;
        char *buf;
        const char **ptr;
    } pats[2] = {{PRIV_F_OUT_PAT, s->out_buf, &s->out_pat},
                 {PRIV_F_ERR_PAT, s->err_buf, &s->err_pat}};
    for (int k = 0; k < 2; k++) {
        if (!psmsg_find(v, pats[k].tag, &f)) continue;
        char err[200];
        if (psmsg_field_str(&f, pats[k].buf, sizeof s->out_buf) < 0 ||
            lg_pat_check(pats[k].buf, err, sizeof err) < 0)
            return bad(why, whylen, "an output file pattern");
        *pats[k].ptr = pats[k].buf;
    }
    psmsg_get_u32(v, PRIV_F_APPEND, &s->append);
    psmsg_get_u32(v, PRIV_F_NODE_IDX, &s->nodeidx);
    psmsg_get_u32(v, PRIV_F_ARG0_PAT, &s->arg0_pat);
    if (s->append > 1) return bad(why, whylen, "the open mode");
    if (s->arg0_pat > 1) return bad(why, whylen, "the program pattern flag");
    if (psmsg_find(v, PRIV_F_JOB_NAME, &f) && psmsg_field_str(&f, s->name, sizeof s->name) < 0)
        return bad(why, whylen, "the job name");
    if (psmsg_find(v, PRIV_F_CPUS, &f)) {
        if (f.len == 0 || f.len > PSCPU_BYTES) return bad(why, whylen, "the CPU set's length");
        memcpy(s->cpus.b, f.val, f.len);
        if (!pscpu_count(&s->cpus)) return bad(why, whylen, "an empty CPU set");
        s->bind = true;
    }
    return 0;
}

int priv_decode_cred(const struct psmsg *m, struct priv_cred *c, char *why, size_t whylen)
{
    memset(c, 0, sizeof *c);
    const struct psmsg_view *v = &m->body;
    struct psmsg_field f;
    if (m->type != PRIV_CRED) return bad(why, whylen, "not a credential request");
    if (psmsg_get_u64(v, PRIV_F_JOB, &c->job) < 0 || psmsg_get_u32(v, PRIV_F_UID, &c->uid) < 0 ||
        psmsg_get_u32(v, PRIV_F_GID, &c->gid) < 0 || !psmsg_find(v, PRIV_F_DIGEST, &f))
        return bad(why, whylen, "a field is missing");
    if (f.len != sizeof c->digest) return bad(why, whylen, "the digest");
    memcpy(c->digest, f.val, sizeof c->digest);
    if (c->uid == (uint32_t)-1 || c->gid == (uint32_t)-1) return bad(why, whylen, "uid or gid");
    size_t pos = 0;
    while (psmsg_next(v, &pos, &f)) {
        if (f.tag != PRIV_F_TARGET) continue;
        if (f.len != 8 || be_get32(f.val + 4) == 0) return bad(why, whylen, "a target");
        if (++c->ntargets > PRIV_MAX_TARGETS) return bad(why, whylen, "too many targets");
    }
    if (!c->ntargets) return bad(why, whylen, "no target");
    return 0;
}

int priv_decode_bcast_open(const struct psmsg *m, struct priv_bcast_open *o, char *why,
                           size_t whylen)
{
    memset(o, 0, sizeof *o);
    const struct psmsg_view *v = &m->body;
    struct psmsg_field f;
    char err[300];
    if (m->type != PRIV_BCAST_OPEN) return bad(why, whylen, "not a broadcast's open");
    if (psmsg_get_u64(v, PRIV_F_JOB, &o->id) < 0 || psmsg_get_u32(v, PRIV_F_UID, &o->uid) < 0 ||
        psmsg_get_u32(v, PRIV_F_GID, &o->gid) < 0 ||
        psmsg_get_u32(v, PRIV_F_NODE_IDX, &o->nodeidx) < 0 ||
        psmsg_get_u32(v, PRIV_F_FLAGS, &o->flags) < 0 ||
        psmsg_get_u32(v, PRIV_F_MODE, &o->mode) < 0 || psmsg_get_u64(v, PRIV_F_SIZE, &o->size) < 0)
        return bad(why, whylen, "a field is missing");
    if (o->uid == UINT32_MAX || o->gid == UINT32_MAX) return bad(why, whylen, "uid or gid");
    if (o->flags & ~PSBCAST_F_ALL || o->mode & ~0777u || o->size > BCAST_SIZE_MAX)
        return bad(why, whylen, "flags, mode or size");
    if (!psmsg_find(v, PRIV_F_DEST, &f) || psmsg_field_str(&f, o->dest, sizeof o->dest) < 0 ||
        bcast_dest_check(o->dest, err, sizeof err) < 0)
        return bad(why, whylen, "the destination");
    if (psmsg_find(v, PRIV_F_CRED, &f)) {
        o->cred = f.val;
        o->credlen = f.len;
    }
    return 0;
}

int priv_cred_target(const struct psmsg *m, size_t *pos, uint32_t *node, uint32_t *ranks)
{
    struct psmsg_field f;
    while (psmsg_next(&m->body, pos, &f))
        if (f.tag == PRIV_F_TARGET && f.len == 8) {
            *node = be_get32(f.val);
            *ranks = be_get32(f.val + 4);
            return 1;
        }
    return 0;
}

int priv_renv_allowed(const char *s, size_t n)
{
    static const char *const names[] = {"PSI_RANK",    "PSI_SIZE",    "PSI_NODE",   "PSI_NODENAME",
                                        "PSI_JOB",     "PSID_SOCKET", "PMI_RANK",   "PMI_SIZE",
                                        "PMI_SPAWNED", "PMI_JOBID",   "FLUX_JOB_ID"};
    const char *eq = memchr(s, '=', n);
    if (!eq) return 0;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if ((size_t)(eq - s) == strlen(names[i]) && !memcmp(s, names[i], (size_t)(eq - s)))
            return 1;
    return 0;
}
