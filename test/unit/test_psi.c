/*
 * test_psi.c - unit tests for libpsi's connection (psi/client.c, psi/calls.c, psi/rx.c)
 * against a scripted psid on the other end of a socketpair: replies are matched to their
 * request, events that arrive before a reply are queued in order and never taken for it,
 * and malformed or missing input gives the documented errors. Descriptors passed with a
 * message's first byte (SCM_RIGHTS) belong to that message, also when it arrives in pieces
 * or is queued, and are closed when nobody takes them.
 */
#include "psi.h"
#include "unit.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* psid's end of the pair: the script is written before the client asks anything. */
static void put(int fd, uint16_t type, uint32_t id, uint64_t tid, int err, int status, int lost)
{
    struct psmsg_buf b = {0};
    psmsg_begin(&b, type, id);
    if (tid) psmsg_put_u64(&b, PSF_TID, tid);
    if (err >= 0) psmsg_put_u32(&b, PSF_ERRNO, (uint32_t)err);
    if (status >= 0) psmsg_put_u32(&b, PSF_STATUS, (uint32_t)status);
    if (lost) psmsg_put_u32(&b, PSF_LOST, 1);
    CU_ASSERT_EQUAL_FATAL(psmsg_end(&b), 0);
    CU_ASSERT_EQUAL(write(fd, b.data, b.len), (ssize_t)b.len);
    psmsg_buf_free(&b);
}

static void pair(struct psi *c, int *srv)
{
    int sv[2];
    CU_ASSERT_EQUAL_FATAL(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    psi_open_fd(c, sv[0]);
    *srv = sv[1];
}

/* The request psid received next (read through rx): its type and id. */
static void got_request(struct psi_rx *rx, int srv, uint16_t type, uint32_t id)
{
    struct psmsg m;
    int r;
    while ((r = psi_rx_next(rx, &m)) == 0)
        if (psi_rx_read(rx, srv) <= 0) break;
    CU_ASSERT_EQUAL(r, 1);
    if (r == 1) {
        CU_ASSERT_EQUAL(m.type, type);
        CU_ASSERT_EQUAL(m.id, id);
    }
}

/* The case: A dies between the registration of A and of B. Its PSM_DEAD comes
 * before B's reply, once with A's request id and once with id 0 (as older psids sent). */
static void dies_between(uint32_t dead_id)
{
    struct psi c;
    int srv;
    pair(&c, &srv);
    uint64_t a = PSTID(1, 100), b = PSTID(2, 200);
    put(srv, PSM_NOTIFY_REPLY, 1, 0, 0, -1, 0);
    put(srv, PSM_DEAD, dead_id, a, -1, 3 << 8, 0);
    put(srv, PSM_NOTIFY_REPLY, 2, 0, 0, -1, 0);
    put(srv, PSM_DEAD, 2, b, -1, -1, 1);
    CU_ASSERT_EQUAL(psi_notify(&c, a, 0), 0);
    CU_ASSERT_EQUAL(psi_notify(&c, b, 0), 0);
    struct psi_rx rx = {0};
    got_request(&rx, srv, PSM_NOTIFY, 1);
    got_request(&rx, srv, PSM_NOTIFY, 2);
    psi_rx_free(&rx);
    CU_ASSERT_TRUE(psi_event_pending(&c));
    struct psmsg m;
    struct psi_dead d;
    CU_ASSERT_EQUAL_FATAL(psi_next_event(&c, &m, 1000), 1);
    CU_ASSERT_EQUAL(psi_dead_parse(&m, &d), 0);
    CU_ASSERT_EQUAL(d.tid, a);
    CU_ASSERT_FALSE(d.lost);
    CU_ASSERT_EQUAL(WEXITSTATUS(d.status), 3);
    CU_ASSERT_EQUAL_FATAL(psi_next_event(&c, &m, 1000), 1);
    CU_ASSERT_EQUAL(psi_dead_parse(&m, &d), 0);
    CU_ASSERT_EQUAL(d.tid, b);
    CU_ASSERT_TRUE(d.lost);
    CU_ASSERT_FALSE(psi_event_pending(&c));
    CU_ASSERT_EQUAL(psi_next_event(&c, &m, 0), 0);
    psi_close(&c);
    close(srv);
}

static void test_event_before_reply(void)
{
    dies_between(1);
}

static void test_event_id0_before_reply(void)
{
    dies_between(0);
}

/* Job events carry the SPAWN request's id: a later call must not take them for its reply,
 * and a reply to a request sent without waiting (psi_send) is skipped. */
static void test_job_events_and_stale_replies(void)
{
    struct psi c;
    int srv;
    pair(&c, &srv);
    struct psmsg_buf b = {0};
    psmsg_begin(&b, PSM_SPAWN, 0);
    CU_ASSERT_EQUAL(psi_send(&c, &b), 1);
    psmsg_buf_free(&b);
    put(srv, PSM_SPAWN_REPLY, 1, 0, -1, -1, 0);
    put(srv, PSM_EXIT, 1, PSTID(0, 5), -1, 0, 0);
    put(srv, PSM_SIGNAL_REPLY, 2, 0, EPERM, -1, 0);
    CU_ASSERT_EQUAL(psi_signal(&c, PSTID(0, 5), 15), -1);
    CU_ASSERT_EQUAL(errno, EPERM);
    struct psmsg m;
    CU_ASSERT_EQUAL_FATAL(psi_next_event(&c, &m, 1000), 1);
    CU_ASSERT_EQUAL(m.type, PSM_EXIT);
    CU_ASSERT_EQUAL(m.id, 1);
    CU_ASSERT_EQUAL(psi_next_event(&c, &m, 0), 0);
    psi_close(&c);
    close(srv);
}

static void test_error_reply(void)
{
    struct psi c;
    int srv;
    pair(&c, &srv);
    struct psmsg_buf b = {0};
    psmsg_begin(&b, PSM_ERROR, 1);
    psmsg_put_u32(&b, PSF_ERRNO, EOPNOTSUPP);
    psmsg_put_str(&b, PSF_TEXT, "unknown request type");
    psmsg_end(&b);
    CU_ASSERT_EQUAL(write(srv, b.data, b.len), (ssize_t)b.len);
    psmsg_buf_free(&b);
    CU_ASSERT_EQUAL(psi_release(&c, PSTID(1, 1)), -1);
    CU_ASSERT_EQUAL(errno, EOPNOTSUPP);
    psi_close(&c);
    close(srv);
}

/* A malformed header is EPROTO, for calls and for events alike. */
static void test_malformed(void)
{
    static const uint8_t junk[PSMSG_HDR] = {9, 0, 0, 51, 0, 0, 0, 12, 0, 0, 0, 1};
    for (int ev = 0; ev < 2; ev++) {
        struct psi c;
        int srv;
        pair(&c, &srv);
        CU_ASSERT_EQUAL(write(srv, junk, sizeof junk), (ssize_t)sizeof junk);
        struct psmsg m;
        errno = 0;
        int r = ev ? psi_next_event(&c, &m, 1000) : psi_notify(&c, PSTID(1, 1), 0);
        CU_ASSERT_EQUAL(r, -1);
        CU_ASSERT_EQUAL(errno, EPROTO);
        psi_close(&c);
        close(srv);
    }
}

/* psid closing the connection is ECONNRESET; a quiet one times out with 0. */
static void test_eof_and_timeout(void)
{
    struct psi c;
    int srv;
    pair(&c, &srv);
    struct psmsg m;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    CU_ASSERT_EQUAL(psi_next_event(&c, &m, 50), 0);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    long ms = (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
    CU_ASSERT_TRUE(ms >= 45);
    close(srv);
    CU_ASSERT_EQUAL(psi_next_event(&c, &m, 1000), -1);
    CU_ASSERT_EQUAL(errno, ECONNRESET);
    CU_ASSERT_EQUAL(psi_notify(&c, PSTID(1, 1), 0), -1);
    CU_ASSERT_TRUE(errno == ECONNRESET || errno == EPIPE);
    psi_close(&c);
}

/* psid refuses the connection (past a limit): a PSM_ERROR with id 0, then it closes. The
 * call reports the refusal's errno and text, also when its own send already failed. */
static void test_refused(void)
{
    for (int closed_first = 0; closed_first < 2; closed_first++) {
        struct psi c;
        int srv;
        pair(&c, &srv);
        struct psmsg_buf b = {0};
        psmsg_begin(&b, PSM_ERROR, 0);
        psmsg_put_u32(&b, PSF_ERRNO, EUSERS);
        psmsg_put_str(&b, PSF_TEXT, "too many connections of uid 7 (limit 1)");
        psmsg_end(&b);
        CU_ASSERT_EQUAL(write(srv, b.data, b.len), (ssize_t)b.len);
        psmsg_buf_free(&b);
        if (closed_first) close(srv);
        struct psmsg m;
        errno = 0;
        CU_ASSERT_EQUAL(psi_notify(&c, PSTID(1, 1), 0), -1);
        CU_ASSERT_EQUAL(errno, EUSERS);
        if (!closed_first) close(srv); /* psid closes after the refusal */
        psmsg_begin(&b, PSM_NODES, 0);
        errno = 0;
        int r = psi_call(&c, &b, &m); /* the connection is gone now */
        psmsg_buf_free(&b);
        CU_ASSERT_EQUAL(r, -1);
        psi_close(&c);
    }
}

/* A PSM_DEAD without a status (and not lost) or without a task is refused. */
static void test_dead_parse(void)
{
    struct psmsg_buf b = {0};
    struct psmsg m;
    struct psi_dead d;
    psmsg_begin(&b, PSM_DEAD, 0);
    psmsg_put_u64(&b, PSF_TID, 5);
    psmsg_end(&b);
    CU_ASSERT_EQUAL_FATAL(psmsg_parse(b.data, b.len, &m), 0);
    CU_ASSERT_EQUAL(psi_dead_parse(&m, &d), -1);
    psmsg_buf_free(&b);
    psmsg_begin(&b, PSM_EXIT, 0);
    psmsg_put_u64(&b, PSF_TID, 5);
    psmsg_put_u32(&b, PSF_STATUS, 0);
    psmsg_end(&b);
    CU_ASSERT_EQUAL_FATAL(psmsg_parse(b.data, b.len, &m), 0);
    CU_ASSERT_EQUAL(psi_dead_parse(&m, &d), -1);
    psmsg_buf_free(&b);
}

/* Send byte p[0] alone with descriptors fds[0..n) (SCM_RIGHTS), as psid does. */
/* Whether the peer read everything sent on fd (a UNIX stream socket: SIOCOUTQ is what it
 * has not taken yet) within 5 s. */
static bool drained(int fd)
{
    for (int i = 0; i < 5000; i++) {
        int q = 0;
        if (ioctl(fd, SIOCOUTQ, &q) < 0) return false;
        if (q == 0) return true;
        usleep(1000);
    }
    return false;
}

static void send_first(int fd, const uint8_t *p, const int *fds, unsigned n)
{
    union {
        struct cmsghdr h;
        char buf[CMSG_SPACE(4 * sizeof(int))];
    } u;
    memset(&u, 0, sizeof u);
    struct iovec iov = {(void *)p, 1};
    struct msghdr mh = {.msg_iov = &iov,
                        .msg_iovlen = 1,
                        .msg_control = u.buf,
                        .msg_controllen = CMSG_SPACE(n * sizeof(int))};
    struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
    cm->cmsg_level = SOL_SOCKET;
    cm->cmsg_type = SCM_RIGHTS;
    cm->cmsg_len = CMSG_LEN(n * sizeof(int));
    memcpy(CMSG_DATA(cm), fds, n * sizeof(int));
    CU_ASSERT_EQUAL(sendmsg(fd, &mh, MSG_NOSIGNAL), 1);
}

/* A finished message of type with id and a PSF_TID, in *b (psmsg_buf_free after). */
static void build(struct psmsg_buf *b, uint16_t type, uint32_t id, uint64_t tid)
{
    memset(b, 0, sizeof *b);
    psmsg_begin(b, type, id);
    psmsg_put_u64(b, PSF_TID, tid);
    psmsg_put_u32(b, PSF_STATUS, 0);
    CU_ASSERT_EQUAL_FATAL(psmsg_end(b), 0);
}

/* The message with descriptors fds[0..n) on its first byte, the rest written whole. */
static void put_fds(int fd, uint16_t type, uint32_t id, uint64_t tid, const int *fds, unsigned n)
{
    struct psmsg_buf b;
    build(&b, type, id, tid);
    send_first(fd, b.data, fds, n);
    CU_ASSERT_EQUAL(write(fd, b.data + 1, b.len - 1), (ssize_t)b.len - 1);
    psmsg_buf_free(&b);
}

/* Descriptors open in this process. */
static int open_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    int n = 0;
    if (!d) return -1;
    while (readdir(d)) n++;
    closedir(d);
    return n;
}

static bool is_open(int fd)
{
    return fcntl(fd, F_GETFD) >= 0;
}

/* a and b are the two ends of one pipe: what goes into b comes out of a. */
static void check_pipe(int a, int b)
{
    char ch = 0;
    CU_ASSERT_EQUAL(write(b, "z", 1), 1);
    CU_ASSERT_EQUAL(read(a, &ch, 1), 1);
    CU_ASSERT_EQUAL(ch, 'z');
}

/* The current message's two descriptors, close-on-exec, are the ends of one pipe (read end
 * first) and are all it has. */
static void take_pipe(struct psi *c)
{
    int a = psi_take_fd(c), b = psi_take_fd(c);
    CU_ASSERT_TRUE_FATAL(a >= 0 && b >= 0);
    CU_ASSERT_EQUAL(psi_take_fd(c), -1);
    CU_ASSERT_TRUE(fcntl(a, F_GETFD) & FD_CLOEXEC);
    CU_ASSERT_TRUE(fcntl(b, F_GETFD) & FD_CLOEXEC);
    check_pipe(a, b);
    close(a);
    close(b);
}

/* A reply with a pipe's two ends, after an event without descriptors, arriving in pieces
 * (the descriptors' byte, a few header bytes, the rest) while psi_call waits; and the
 * descriptor of the request, taken by the reader at psid's end. */
static void test_reply_fds_in_pieces(void)
{
    struct psi c;
    int srv, p[2], q[2];
    pair(&c, &srv);
    CU_ASSERT_EQUAL_FATAL(pipe(p), 0);
    CU_ASSERT_EQUAL_FATAL(pipe(q), 0);
    put(srv, PSM_DEAD, 0, PSTID(1, 7), -1, 0, 0);
    pid_t pid = fork();
    CU_ASSERT_TRUE_FATAL(pid >= 0);
    if (pid == 0) {
        struct psmsg_buf b;
        build(&b, PSM_NODES_REPLY, 1, 0);
        /* each piece is read before the next is written (the socket's unread bytes, as
         * the kernel counts them, back to 0), so that the reply does come in pieces */
        send_first(srv, b.data, p, 2);
        if (!drained(srv)) _exit(2);
        if (write(srv, b.data + 1, 6) != 6) _exit(1);
        if (!drained(srv)) _exit(2);
        if (write(srv, b.data + 7, b.len - 7) != (ssize_t)b.len - 7) _exit(1);
        _exit(0);
    }
    close(p[0]);
    close(p[1]);
    struct psmsg_buf req = {0};
    struct psmsg m;
    psmsg_begin(&req, PSM_NODES, 0);
    CU_ASSERT_EQUAL_FATAL(psi_call_fd(&c, &req, q[1], &m), 0);
    psmsg_buf_free(&req);
    CU_ASSERT_EQUAL(m.type, PSM_NODES_REPLY);
    take_pipe(&c);
    CU_ASSERT_EQUAL_FATAL(psi_next_event(&c, &m, 0), 1);
    CU_ASSERT_EQUAL(m.type, PSM_DEAD);
    CU_ASSERT_EQUAL(psi_take_fd(&c), -1);
    /* psid's end: the request's descriptor is q's write end */
    struct psi_rx rx = {0};
    CU_ASSERT_EQUAL(psi_rx_take_fd(&rx), -1); /* nothing handed out yet */
    got_request(&rx, srv, PSM_NODES, 1);
    int w = psi_rx_take_fd(&rx);
    CU_ASSERT_TRUE_FATAL(w >= 0);
    CU_ASSERT_EQUAL(psi_rx_take_fd(&rx), -1);
    check_pipe(q[0], w);
    close(w);
    psi_rx_free(&rx);
    int st;
    CU_ASSERT_EQUAL(waitpid(pid, &st, 0), pid);
    CU_ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    close(q[0]);
    close(q[1]);
    psi_close(&c);
    close(srv);
}

/* An event with a descriptor arrives while psi_call waits for its reply: queued with it,
 * and psi_next_event hands both out; the reply has none of its own. */
static void test_event_fd_queued(void)
{
    struct psi c;
    int srv, p[2];
    pair(&c, &srv);
    CU_ASSERT_EQUAL_FATAL(pipe(p), 0);
    put_fds(srv, PSM_DEAD, 0, PSTID(2, 9), &p[1], 1);
    put(srv, PSM_NOTIFY_REPLY, 1, 0, 0, -1, 0);
    close(p[1]);
    CU_ASSERT_EQUAL(psi_notify(&c, PSTID(3, 3), 0), 0);
    CU_ASSERT_EQUAL(psi_take_fd(&c), -1);
    CU_ASSERT_TRUE(psi_event_pending(&c));
    struct psmsg m;
    struct psi_dead d;
    CU_ASSERT_EQUAL_FATAL(psi_next_event(&c, &m, 0), 1);
    CU_ASSERT_EQUAL(psi_dead_parse(&m, &d), 0);
    CU_ASSERT_EQUAL(d.tid, PSTID(2, 9));
    int w = psi_take_fd(&c);
    CU_ASSERT_TRUE_FATAL(w >= 0);
    CU_ASSERT_EQUAL(psi_take_fd(&c), -1);
    check_pipe(p[0], w);
    close(w);
    close(p[0]);
    CU_ASSERT_EQUAL(psi_next_event(&c, &m, 0), 0);
    psi_close(&c);
    close(srv);
}

/* Descriptors nobody takes are closed: a reply's when the next reply is handed out, one
 * left of two when the next event is, a queued event's at psi_close, the reader's own at
 * psi_rx_free. */
static void test_fds_not_taken_closed(void)
{
    struct psi c;
    int srv, p[2];
    int base = open_fds();
    pair(&c, &srv);
    CU_ASSERT_EQUAL_FATAL(pipe(p), 0);
    put_fds(srv, PSM_NOTIFY_REPLY, 1, 0, p, 2);
    put(srv, PSM_NOTIFY_REPLY, 2, 0, 0, -1, 0);
    put_fds(srv, PSM_DEAD, 0, PSTID(1, 1), p, 2);
    put_fds(srv, PSM_DEAD, 0, PSTID(1, 2), p, 1);
    put_fds(srv, PSM_NOTIFY_REPLY, 3, 0, p, 2);
    close(p[0]);
    close(p[1]);
    CU_ASSERT_EQUAL(psi_notify(&c, PSTID(1, 1), 0), 0);
    /* the reply's two (the next event's may have been read with it) */
    int held[2], nheld = 0;
    for (unsigned i = 0; i < c.rx.nfds; i++)
        if (c.rx.fd_at[i] == c.rx.cur_at && nheld < 2) held[nheld++] = c.rx.fds[i];
    CU_ASSERT_EQUAL_FATAL(nheld, 2);
    CU_ASSERT_EQUAL(psi_notify(&c, PSTID(1, 2), 0), 0); /* the reply without */
    CU_ASSERT_FALSE(is_open(held[0]));
    CU_ASSERT_FALSE(is_open(held[1]));
    CU_ASSERT_EQUAL(psi_take_fd(&c), -1);
    /* two events queued with three descriptors, then the third reply with two */
    CU_ASSERT_EQUAL(psi_notify(&c, PSTID(1, 3), 0), 0);
    CU_ASSERT_EQUAL(open_fds(), base + 2 + 5);
    struct psmsg m;
    CU_ASSERT_EQUAL_FATAL(psi_next_event(&c, &m, 0), 1); /* the reply's two go */
    CU_ASSERT_EQUAL(open_fds(), base + 2 + 3);
    int r = psi_take_fd(&c);
    CU_ASSERT_TRUE_FATAL(r >= 0);
    close(r);
    CU_ASSERT_EQUAL(open_fds(), base + 2 + 2);
    psi_close(&c); /* the first event's other end and the queued event's one */
    CU_ASSERT_EQUAL(open_fds(), base + 1);
    /* psi_rx alone: a message handed out and never asked for its descriptor */
    CU_ASSERT_EQUAL_FATAL(pipe(p), 0);
    int sv[2];
    CU_ASSERT_EQUAL_FATAL(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    put_fds(sv[1], PSM_DEAD, 0, PSTID(1, 4), p, 2);
    close(p[0]);
    close(p[1]);
    struct psi_rx rx = {0};
    got_request(&rx, sv[0], PSM_DEAD, 0);
    CU_ASSERT_EQUAL(rx.nfds, 2);
    psi_rx_free(&rx);
    close(sv[0]);
    close(sv[1]);
    close(srv);
    CU_ASSERT_EQUAL(open_fds(), base);
}

/* An event without descriptors after one with: it has none, whether the first one's were
 * taken or not. */
static void test_no_fds_after_fds(void)
{
    struct psi c;
    int srv, p[2];
    pair(&c, &srv);
    CU_ASSERT_EQUAL_FATAL(pipe(p), 0);
    put_fds(srv, PSM_DEAD, 0, PSTID(1, 1), p, 1);
    put(srv, PSM_DEAD, 0, PSTID(1, 2), -1, 0, 0);
    put_fds(srv, PSM_EXIT, 4, PSTID(1, 3), p, 2);
    put(srv, PSM_EXIT, 4, PSTID(1, 4), -1, 0, 0);
    close(p[0]);
    close(p[1]);
    struct psmsg m;
    CU_ASSERT_EQUAL_FATAL(psi_next_event(&c, &m, 1000), 1);
    CU_ASSERT_EQUAL(m.type, PSM_DEAD);
    CU_ASSERT_EQUAL_FATAL(psi_next_event(&c, &m, 1000), 1); /* the first one's not taken */
    CU_ASSERT_EQUAL(m.type, PSM_DEAD);
    CU_ASSERT_EQUAL(psi_take_fd(&c), -1);
    CU_ASSERT_EQUAL_FATAL(psi_next_event(&c, &m, 1000), 1);
    CU_ASSERT_EQUAL(m.type, PSM_EXIT);
    take_pipe(&c);
    CU_ASSERT_EQUAL_FATAL(psi_next_event(&c, &m, 1000), 1);
    CU_ASSERT_EQUAL(m.type, PSM_EXIT);
    CU_ASSERT_EQUAL(psi_take_fd(&c), -1);
    psi_close(&c);
    close(srv);
}

/* The preload's listener registration: the socket goes with the request, the reply's errno
 * comes back, a call without a socket is EBADF and sends nothing. */
static void test_pl_listen(void)
{
    struct psi c;
    int srv;
    pair(&c, &srv);
    int p[2];
    CU_ASSERT_EQUAL_FATAL(pipe(p), 0);
    put(srv, PSM_PL_REPLY, 1, 0, EINVAL, -1, 0);
    put(srv, PSM_PL_REPLY, 2, 0, 0, -1, 0);
    CU_ASSERT_EQUAL(psi_pl_listen(&c, p[0]), -1);
    CU_ASSERT_EQUAL(errno, EINVAL);
    CU_ASSERT_EQUAL(psi_pl_decline(&c, p[0]), 0);
    CU_ASSERT_EQUAL(psi_pl_listen(&c, -1), -1);
    CU_ASSERT_EQUAL(errno, EBADF);
    struct psi_rx rx = {0};
    got_request(&rx, srv, PSM_PL_LISTEN, 1);
    int got = psi_rx_take_fd(&rx);
    CU_ASSERT(got >= 0); /* the socket came with it */
    if (got >= 0) close(got);
    got_request(&rx, srv, PSM_PL_DECLINE, 2);
    got = psi_rx_take_fd(&rx);
    CU_ASSERT(got >= 0);
    if (got >= 0) close(got);
    struct psmsg m;
    CU_ASSERT_EQUAL(psi_rx_next(&rx, &m), 0); /* nothing for the call without a socket */
    psi_rx_free(&rx);
    close(p[0]);
    close(p[1]);
    psi_close(&c);
    close(srv);
}

UNIT_SUITE(psi, UNIT_TEST(test_pl_listen), UNIT_TEST(test_event_before_reply),
           UNIT_TEST(test_event_id0_before_reply), UNIT_TEST(test_job_events_and_stale_replies),
           UNIT_TEST(test_error_reply), UNIT_TEST(test_malformed), UNIT_TEST(test_eof_and_timeout),
           UNIT_TEST(test_dead_parse), UNIT_TEST(test_refused), UNIT_TEST(test_reply_fds_in_pieces),
           UNIT_TEST(test_event_fd_queued), UNIT_TEST(test_fds_not_taken_closed),
           UNIT_TEST(test_no_fds_after_fds))
