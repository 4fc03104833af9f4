/*
 * calls.c - libpsi's typed requests (see psi.h): each builds one message, waits for its
 * reply with psi_call, and turns the reply's PSF_ERRNO into errno.
 */
#include "psi.h"

#include <errno.h>

/* psi_call (psi_call_fd with a descriptor), then PSF_ERRNO of the reply as the result; *m
 * for further fields. */
static int call_errno_fd(struct psi *c, struct psmsg_buf *b, int fd, struct psmsg *m)
{
    int r = fd >= 0 ? psi_call_fd(c, b, fd, m) : psi_call(c, b, m);
    int e = errno;
    psmsg_buf_free(b);
    if (r < 0) {
        errno = e;
        return -1;
    }
    uint32_t err = 0;
    psmsg_get_u32(&m->body, PSF_ERRNO, &err);
    if (err) {
        errno = (int)err;
        return -1;
    }
    return 0;
}

static int call_errno(struct psi *c, struct psmsg_buf *b, struct psmsg *m)
{
    return call_errno_fd(c, b, -1, m);
}

/* A preload request whose one argument is the TCP socket it passes. */
static int socket_req(struct psi *c, uint16_t type, int fd)
{
    struct psmsg_buf b = {0};
    struct psmsg m;
    if (fd < 0) {
        errno = EBADF;
        return -1;
    }
    psmsg_begin(&b, type, 0);
    return call_errno_fd(c, &b, fd, &m);
}

int psi_pl_listen(struct psi *c, int fd)
{
    return socket_req(c, PSM_PL_LISTEN, fd);
}

int psi_pl_decline(struct psi *c, int fd)
{
    return socket_req(c, PSM_PL_DECLINE, fd);
}

int psi_ask(struct psi *c, uint16_t type, struct psmsg *reply)
{
    struct psmsg_buf req = {0};
    psmsg_begin(&req, type, 0);
    int r = psi_call(c, &req, reply);
    int e = errno;
    psmsg_buf_free(&req);
    errno = e;
    return r;
}

static int notify_or_release(struct psi *c, uint16_t type, uint64_t tid, int sig)
{
    struct psmsg_buf b = {0};
    struct psmsg m;
    if (sig < 0) {
        errno = EINVAL;
        return -1;
    }
    psmsg_begin(&b, type, 0);
    psmsg_put_u64(&b, PSF_TID, tid);
    if (type == PSM_NOTIFY) psmsg_put_u32(&b, PSF_SIGNAL, (uint32_t)sig);
    return call_errno(c, &b, &m);
}

int psi_notify(struct psi *c, uint64_t tid, int sig)
{
    return notify_or_release(c, PSM_NOTIFY, tid, sig);
}

int psi_release(struct psi *c, uint64_t tid)
{
    return notify_or_release(c, PSM_RELEASE, tid, 0);
}

static int signal_req(struct psi *c, uint16_t tag, uint64_t target, int sig, uint32_t *count)
{
    struct psmsg_buf b = {0};
    struct psmsg m;
    if (sig < 0) {
        errno = EINVAL;
        return -1;
    }
    psmsg_begin(&b, PSM_SIGNAL, 0);
    psmsg_put_u64(&b, tag, target);
    psmsg_put_u32(&b, PSF_SIGNAL, (uint32_t)sig);
    int r = call_errno(c, &b, &m);
    if (r == 0 && count) {
        *count = 0;
        psmsg_get_u32(&m.body, PSF_COUNT, count);
    }
    return r;
}

int psi_signal(struct psi *c, uint64_t tid, int sig)
{
    return signal_req(c, PSF_TID, tid, sig, NULL);
}

int psi_signal_job(struct psi *c, uint64_t job, int sig, uint32_t *count)
{
    return signal_req(c, PSF_JOB, job, sig, count);
}

int psi_dead_parse(const struct psmsg *ev, struct psi_dead *d)
{
    uint32_t lost = 0;
    *d = (struct psi_dead){0};
    if (ev->type != PSM_DEAD || psmsg_get_u64(&ev->body, PSF_TID, &d->tid) < 0) {
        errno = EINVAL;
        return -1;
    }
    d->lost = psmsg_get_u32(&ev->body, PSF_LOST, &lost) == 0 && lost;
    if (!d->lost && psmsg_get_u32(&ev->body, PSF_STATUS, &d->status) < 0) {
        errno = EINVAL;
        return -1;
    }
    return 0;
}
