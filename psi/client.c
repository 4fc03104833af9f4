/*
 * client.c - libpsi's connection to the local psid (see psi.h): connect, send a request,
 * read the reply that carries its id, and queue the events that come in between.
 *
 * Every message is read through one psi_rx. A reply is recognised by its id and by not
 * being an event type (psm_is_event): job events carry their SPAWN request's id and death
 * notifications their NOTIFY request's id, so an id alone does not tell. An event read
 * while waiting for a reply is copied to the queue (c->evq); psi_next_event hands out the
 * queue first, then reads on.
 *
 * Descriptors psid passes with a message are held by the psi_rx (see rx.c) until the
 * message is handed out; a queued event takes its own along. The message last handed out
 * is c->cur (a queued event) or else the psi_rx's: psi_take_fd takes from that one, and
 * handing out the next closes what it left.
 */
#include "psi.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

struct psi_ev {
    struct psi_ev *next;
    size_t len;
    unsigned nfds, taken; /* descriptors passed with it; fds[taken..nfds) not taken yet */
    int fds[PSI_RX_FDS];
    uint8_t data[];
};

static void ev_free(struct psi_ev *e)
{
    for (unsigned i = e->taken; i < e->nfds; i++) close(e->fds[i]);
    free(e);
}

/* The queued event last handed out is no longer the current message. */
static void drop_cur(struct psi *c)
{
    if (c->cur) ev_free(c->cur);
    c->cur = NULL;
}

/* The next message read, which becomes the current one: psi_rx_next. */
static int rx_next(struct psi *c, struct psmsg *m)
{
    int r = psi_rx_next(&c->rx, m);
    if (r > 0) drop_cur(c);
    return r;
}

const char *psi_socket_path(void)
{
    const char *p = getenv("PSID_SOCKET");
    return p && *p ? p : PSI_DEFAULT_SOCKET;
}

void psi_open_fd(struct psi *c, int fd)
{
    memset(c, 0, sizeof *c);
    c->fd = fd;
    c->next_id = 1;
    c->evq_tail = &c->evq;
}

int psi_open(struct psi *c, const char *path)
{
    psi_open_fd(c, -1);
    if (!path) path = psi_socket_path();
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof a.sun_path) {
        errno = ENAMETOOLONG;
        return -1;
    }
    strcpy(a.sun_path, path);
    strcpy(c->path, path);
    c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (c->fd < 0) return -1;
    if (connect(c->fd, (struct sockaddr *)&a, sizeof a) < 0) {
        int e = errno;
        close(c->fd);
        c->fd = -1;
        errno = e;
        return -1;
    }
    return 0;
}

void psi_close(struct psi *c)
{
    if (c->fd >= 0) close(c->fd);
    psi_rx_free(&c->rx);
    while (c->evq) {
        struct psi_ev *e = c->evq;
        c->evq = e->next;
        ev_free(e);
    }
    drop_cur(c);
    memset(c, 0, sizeof *c);
    c->fd = -1;
    c->evq_tail = &c->evq;
}

int psi_fd(const struct psi *c)
{
    return c->fd;
}

static int write_all(int fd, const uint8_t *p, size_t n)
{
    while (n) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* The first byte with fd attached (SCM_RIGHTS), so that psid takes the descriptor together
 * with the message it belongs to. */
static int write_fd(int fd, const uint8_t *p, int pass)
{
    union {
        struct cmsghdr h;
        char buf[CMSG_SPACE(sizeof(int))];
    } u;
    memset(&u, 0, sizeof u);
    struct iovec iov = {.iov_base = (void *)p, .iov_len = 1};
    struct msghdr mh = {
        .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof u.buf};
    struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
    cm->cmsg_level = SOL_SOCKET;
    cm->cmsg_type = SCM_RIGHTS;
    cm->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(cm), &pass, sizeof pass);
    for (;;) {
        ssize_t w = sendmsg(fd, &mh, MSG_NOSIGNAL);
        if (w == 1) return 0;
        if (w < 0 && errno != EINTR) return -1;
    }
}

static uint32_t send_req(struct psi *c, struct psmsg_buf *req, int pass)
{
    uint32_t id = c->next_id++;
    if (!id) id = c->next_id++; /* 0 is no request's id */
    if (psmsg_end(req) < 0) return 0;
    psmsg_set_id(req, id);
    const uint8_t *p = req->data;
    size_t n = req->len;
    if (pass >= 0) {
        if (write_fd(c->fd, p, pass) < 0) return 0;
        p++;
        n--;
    }
    return write_all(c->fd, p, n) < 0 ? 0 : id;
}

uint32_t psi_send(struct psi *c, struct psmsg_buf *req)
{
    return send_req(c, req, -1);
}

uint32_t psi_send_fd(struct psi *c, struct psmsg_buf *req, int fd)
{
    return send_req(c, req, fd);
}

/* Keep a copy of event m (read from c->rx, its descriptors with it) for psi_next_event. */
static int queue_event(struct psi *c, const struct psmsg *m)
{
    /* the frame is the PSMSG_HDR bytes before the body */
    const uint8_t *frame = m->body.p - PSMSG_HDR;
    size_t len = m->body.len + PSMSG_HDR;
    if (c->evq_bytes + len > PSI_EVQ_MAX) {
        errno = ENOBUFS;
        return -1;
    }
    struct psi_ev *e = malloc(sizeof *e + len);
    if (!e) return -1;
    e->next = NULL;
    e->len = len;
    e->nfds = e->taken = 0;
    for (int fd; e->nfds < PSI_RX_FDS && (fd = psi_rx_take_fd(&c->rx)) >= 0;)
        e->fds[e->nfds++] = fd;
    memcpy(e->data, frame, len);
    if (!c->evq) c->evq_tail = &c->evq; /* also in a struct psi copied since psi_open */
    *c->evq_tail = e;
    c->evq_tail = &e->next;
    c->evq_bytes += len;
    return 0;
}

/* The next message of the stream, blocking. 0, or -1 and errno. */
static int read_msg(struct psi *c, struct psmsg *m)
{
    for (;;) {
        int r = rx_next(c, m);
        if (r) return r > 0 ? 0 : -1;
        ssize_t n = psi_rx_read(&c->rx, c->fd);
        if (n == 0) errno = ECONNRESET;
        if (n <= 0) return -1;
    }
}

/* The send failed because psid closed the connection: it may have said why first (a
 * refusal past a limit). Its PSM_ERROR's errno, or the send's. */
static int closed_why(struct psi *c, struct psmsg *reply, int e)
{
    if (e != EPIPE && e != ECONNRESET) return e;
    for (int i = 0; i < 16; i++) {
        int r = rx_next(c, reply);
        if (r < 0) break;
        if (r == 0) {
            if (psi_rx_read(&c->rx, c->fd) <= 0) break; /* the peer closed: no wait */
            continue;
        }
        uint32_t err = 0;
        if (reply->type == PSM_ERROR && reply->id == 0 &&
            psmsg_get_u32(&reply->body, PSF_ERRNO, &err) == 0 && err)
            return (int)err;
    }
    return e;
}

int psi_call(struct psi *c, struct psmsg_buf *req, struct psmsg *reply)
{
    return psi_call_fd(c, req, -1, reply);
}

static int call(struct psi *c, struct psmsg_buf *req, int fd, struct psmsg *reply,
                void (*ev)(void *ctx, const struct psmsg *m), void *ctx)
{
    uint32_t id = send_req(c, req, fd);
    if (!id) {
        errno = closed_why(c, reply, errno);
        return -1;
    }
    for (;;) {
        if (read_msg(c, reply) < 0) return -1;
        if (psm_is_event(reply->type)) {
            if (ev) ev(ctx, reply);
            if (queue_event(c, reply) < 0) return -1;
            continue;
        }
        /* the reply to a request sent with psi_send; but PSM_ERROR with id 0 is psid's word
         * on the connection itself (refused, or a malformed frame): it closes it after */
        if (reply->id != id && !(reply->type == PSM_ERROR && reply->id == 0)) continue;
        if (reply->type == PSM_ERROR) {
            uint32_t e = EPROTO;
            psmsg_get_u32(&reply->body, PSF_ERRNO, &e);
            errno = (int)e;
            return -1;
        }
        return 0;
    }
}

int psi_call_fd(struct psi *c, struct psmsg_buf *req, int fd, struct psmsg *reply)
{
    return call(c, req, fd, reply, NULL, NULL);
}

int psi_call_ev(struct psi *c, struct psmsg_buf *req, struct psmsg *reply,
                void (*ev)(void *ctx, const struct psmsg *m), void *ctx)
{
    return call(c, req, -1, reply, ev, ctx);
}

bool psi_event_pending(const struct psi *c)
{
    return c->evq || psi_rx_whole(&c->rx);
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int psi_next_event(struct psi *c, struct psmsg *ev, int timeout_ms)
{
    if (c->evq) {
        for (int fd; (fd = psi_rx_take_fd(&c->rx)) >= 0;) close(fd); /* the message read last */
        drop_cur(c);
        c->cur = c->evq;
        c->evq = c->cur->next;
        if (!c->evq) c->evq_tail = &c->evq;
        c->evq_bytes -= c->cur->len;
        if (psmsg_parse(c->cur->data, c->cur->len, ev) < 0) {
            errno = EPROTO;
            return -1;
        }
        return 1;
    }
    int64_t deadline = timeout_ms > 0 ? now_ms() + timeout_ms : 0;
    for (;;) {
        int r = rx_next(c, ev);
        if (r < 0) return -1;
        if (r > 0) {
            if (psm_is_event(ev->type)) return 1;
            continue; /* the reply to a request sent with psi_send */
        }
        int wait = timeout_ms;
        if (timeout_ms > 0) {
            int64_t left = deadline - now_ms();
            wait = left > 0 ? (int)left : 0;
        }
        struct pollfd pf = {.fd = c->fd, .events = POLLIN};
        int p = poll(&pf, 1, wait);
        if (p < 0) return -1; /* EINTR included: the caller's signal */
        if (p == 0) return 0;
        ssize_t n = psi_rx_read(&c->rx, c->fd);
        if (n == 0) errno = ECONNRESET;
        if (n <= 0) return -1;
    }
}

int psi_take_fd(struct psi *c)
{
    if (c->cur) return c->cur->taken < c->cur->nfds ? c->cur->fds[c->cur->taken++] : -1;
    return psi_rx_take_fd(&c->rx);
}
