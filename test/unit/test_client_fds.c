/*
 * test_client_fds.c - unit tests for psid passing descriptors to its clients
 * (client_send_fds in psid/client.c) against libpsi's reader (psi_take_fd) on the other end
 * of a real accepted connection: each message's descriptors arrive with it, in order, also
 * when the socket is full and messages go out in pieces between plain ones; psid's
 * duplicates are closed once sent or when the client goes; past CLIENT_OUT_SETS messages
 * waiting with descriptors, nothing more is queued.
 *
 * The tests reach client.c's structures through its seam header (psid/clientint.h): the
 * accept callback, the queue, the dispatch flag; the code is libpsidcore.a's.
 */
#include "../../psid/clientint.h"
#include "../../psid/fdflight.h"
#include "psi.h"
#include "psloop.h"
#include "unit.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <unistd.h>

struct fixture {
    struct psid d;
    struct client *c; /* psid's side */
    struct psi psi;   /* the client's */
};

/* A psid with its client socket on an abstract address, one client connected and accepted. */
static void up(struct fixture *f)
{
    memset(f, 0, sizeof *f);
    f->d.loop = loop_new();
    CU_ASSERT_PTR_NOT_NULL_FATAL(f->d.loop);
    f->d.conf.max_clients = 16;
    f->d.conf.max_clients_uid = 16;
    struct clients *cs = calloc(1, sizeof *cs);
    CU_ASSERT_PTR_NOT_NULL_FATAL(cs);
    cs->spare_fd = -1;
    cs->fl = fdflight_new();
    CU_ASSERT_PTR_NOT_NULL_FATAL(cs->fl);
    f->d.clients = cs;
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    int len = snprintf(a.sun_path + 1, sizeof a.sun_path - 1, "psid-unit-%d", (int)getpid());
    socklen_t alen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)len);
    cs->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    CU_ASSERT_TRUE_FATAL(cs->lfd >= 0);
    CU_ASSERT_EQUAL_FATAL(bind(cs->lfd, (struct sockaddr *)&a, alen), 0);
    CU_ASSERT_EQUAL_FATAL(listen(cs->lfd, 4), 0);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    CU_ASSERT_EQUAL_FATAL(connect(fd, (struct sockaddr *)&a, alen), 0);
    psi_open_fd(&f->psi, fd);
    loop_set_before_wait(f->d.loop, clients_before_wait, &f->d);
    clients_on_accept(&f->d, EPOLLIN);
    f->c = cs->list;
    CU_ASSERT_PTR_NOT_NULL_FATAL(f->c);
}

static void down(struct fixture *f)
{
    psi_close(&f->psi);
    clients_stop(&f->d);
    loop_free(f->d.loop);
}

/* Event PSM_DEAD for task tid with pad bytes of PSF_DATA, queued with fds[0..n). */
static int send_dead(struct client *c, uint64_t tid, size_t pad, const int *fds, unsigned n)
{
    static const uint8_t zeros[8192];
    struct psmsg_buf b = {0};
    psmsg_begin(&b, PSM_DEAD, 0);
    psmsg_put_u64(&b, PSF_TID, tid);
    psmsg_put_u32(&b, PSF_STATUS, 0);
    if (pad) psmsg_put_bytes(&b, PSF_DATA, zeros, pad);
    int r = n ? client_send_fds(c, &b, fds, n) : (client_send(c, &b), 0);
    psmsg_buf_free(&b);
    return r;
}

/* The next event at the client, running psid while none is there: its task id, or 0. */
static uint64_t next_dead(struct fixture *f)
{
    struct psmsg m;
    uint64_t tid = 0;
    for (int i = 0; i < 10000; i++) {
        int r = psi_next_event(&f->psi, &m, 0);
        if (r < 0) break;
        if (r > 0) {
            psmsg_get_u64(&m.body, PSF_TID, &tid);
            break;
        }
        loop_once(f->d.loop);
    }
    return tid;
}

static ino_t inode(int fd)
{
    struct stat st;
    return fstat(fd, &st) == 0 ? st.st_ino : 0;
}

/* Messages with and without descriptors, in order: each gets its own, in the order
 * passed; the caller's descriptors stay its own, psid's duplicates go once sent. */
static void test_send_fds(void)
{
    struct fixture f;
    up(&f);
    int p[2], q[2];
    CU_ASSERT_EQUAL_FATAL(pipe(p), 0);
    CU_ASSERT_EQUAL_FATAL(pipe(q), 0);
    f.c->in_dispatch = true; /* queued only: the duplicates can be seen */
    CU_ASSERT_EQUAL(send_dead(f.c, 1, 0, NULL, 0), 0);
    CU_ASSERT_EQUAL(send_dead(f.c, 2, 0, p, 2), 0);
    CU_ASSERT_EQUAL(send_dead(f.c, 3, 0, NULL, 0), 0);
    CU_ASSERT_EQUAL(send_dead(f.c, 4, 0, &q[1], 1), 0);
    CU_ASSERT_EQUAL_FATAL(f.c->nofds, 2);
    int dups[3] = {f.c->ofds[0].fds[0], f.c->ofds[0].fds[1], f.c->ofds[1].fds[0]};
    CU_ASSERT_TRUE(fcntl(dups[0], F_GETFD) & FD_CLOEXEC);
    f.c->in_dispatch = false;
    CU_ASSERT_TRUE(client_flush_out(f.c));
    CU_ASSERT_EQUAL(f.c->nofds, 0);
    for (int i = 0; i < 3; i++) CU_ASSERT_EQUAL(fcntl(dups[i], F_GETFD), -1);
    CU_ASSERT_EQUAL(next_dead(&f), 1);
    CU_ASSERT_EQUAL(psi_take_fd(&f.psi), -1);
    CU_ASSERT_EQUAL(next_dead(&f), 2);
    int a = psi_take_fd(&f.psi), b = psi_take_fd(&f.psi);
    CU_ASSERT_EQUAL(psi_take_fd(&f.psi), -1);
    CU_ASSERT_EQUAL(inode(a), inode(p[0]));
    CU_ASSERT_EQUAL(inode(b), inode(p[1]));
    CU_ASSERT_EQUAL(write(b, "y", 1), 1);
    char ch = 0;
    CU_ASSERT_EQUAL(read(p[0], &ch, 1), 1); /* the caller's own still works */
    CU_ASSERT_EQUAL(ch, 'y');
    CU_ASSERT_EQUAL(next_dead(&f), 3);
    CU_ASSERT_EQUAL(psi_take_fd(&f.psi), -1);
    CU_ASSERT_EQUAL(next_dead(&f), 4);
    int w = psi_take_fd(&f.psi);
    CU_ASSERT_EQUAL(inode(w), inode(q[1]));
    CU_ASSERT_EQUAL(psi_take_fd(&f.psi), -1);
    int fds[] = {a, b, w, p[0], p[1], q[0], q[1]};
    for (size_t i = 0; i < sizeof fds / sizeof fds[0]; i++) close(fds[i]);
    down(&f);
}

/* The client takes message n of test_send_fds_pieces: with its pipe's read end (inode
 * ino[n]) if n is a multiple of 3, else with none. */
static void take_piece(struct fixture *f, uint64_t n, const ino_t *ino)
{
    CU_ASSERT_EQUAL_FATAL(next_dead(f), n + 1);
    int fd = psi_take_fd(&f->psi);
    if (n % 3 == 0) {
        CU_ASSERT_EQUAL(inode(fd), ino[n]);
        close(fd);
    } else {
        CU_ASSERT_EQUAL(fd, -1);
    }
    CU_ASSERT_EQUAL(psi_take_fd(&f->psi), -1);
}

/* A small socket: messages go out in pieces over many rounds, queued both before and while
 * psid waits for the socket (its buffer compacted under the sets' offsets); every third
 * carries its own pipe's read end, which must come with that message and no other. */
static void test_send_fds_pieces(void)
{
    enum { N = 60 };
    struct fixture f;
    up(&f);
    int small = 4096;
    setsockopt(f.c->fd, SOL_SOCKET, SO_SNDBUF, &small, sizeof small);
    setsockopt(psi_fd(&f.psi), SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
    int p[N][2];
    ino_t ino[N] = {0};
    uint64_t got = 0;
    for (int i = 0; i < N; i++) {
        size_t pad = 1000 + (size_t)i * 97;
        if (i % 3 == 0) {
            CU_ASSERT_EQUAL_FATAL(pipe(p[i]), 0);
            ino[i] = inode(p[i][0]);
            CU_ASSERT_EQUAL(send_dead(f.c, (uint64_t)i + 1, pad, &p[i][0], 1), 0);
            close(p[i][0]); /* psid's duplicate stays until sent */
        } else {
            CU_ASSERT_EQUAL(send_dead(f.c, (uint64_t)i + 1, pad, NULL, 0), 0);
        }
        if (i % 20 != 19) continue;
        for (int k = 0; k < 7; k++) /* the client takes some while psid still has more */
            take_piece(&f, got++, ino);
    }
    CU_ASSERT_TRUE(f.c->nofds > 0); /* some were waiting for the socket */
    while (got < N) take_piece(&f, got++, ino);
    CU_ASSERT_EQUAL(f.c->nofds, 0);
    for (int i = 0; i < N; i += 3) close(p[i][1]);
    down(&f);
}

/* CLIENT_OUT_SETS messages with descriptors may wait; the next is refused whole (a message
 * without is not); a closing client gets none; the duplicates of a client that goes are
 * closed with it. */
static void test_send_fds_limits(void)
{
    struct fixture f;
    up(&f);
    int p[2];
    CU_ASSERT_EQUAL_FATAL(pipe(p), 0);
    int five[5] = {p[0], p[0], p[0], p[0], p[0]};
    f.c->in_dispatch = true;
    CU_ASSERT_EQUAL(send_dead(f.c, 1, 0, five, 5), -1);
    CU_ASSERT_EQUAL(errno, EINVAL);
    for (int i = 0; i < CLIENT_OUT_SETS; i++)
        CU_ASSERT_EQUAL(send_dead(f.c, (uint64_t)i + 1, 0, p, 1 + i % 2), 0);
    size_t queued = f.c->outlen;
    CU_ASSERT_EQUAL(send_dead(f.c, 99, 0, p, 1), -1);
    CU_ASSERT_EQUAL(errno, ENOBUFS);
    CU_ASSERT_EQUAL(f.c->outlen, queued);
    CU_ASSERT_EQUAL(send_dead(f.c, CLIENT_OUT_SETS + 1, 0, NULL, 0), 0);
    f.c->in_dispatch = false;
    CU_ASSERT_TRUE(client_flush_out(f.c));
    for (uint64_t i = 0; i < CLIENT_OUT_SETS; i++) {
        CU_ASSERT_EQUAL_FATAL(next_dead(&f), i + 1);
        for (uint64_t k = 0; k < 1 + i % 2; k++) {
            int fd = psi_take_fd(&f.psi);
            CU_ASSERT_EQUAL(inode(fd), inode(p[k]));
            close(fd);
        }
        CU_ASSERT_EQUAL(psi_take_fd(&f.psi), -1);
    }
    CU_ASSERT_EQUAL(next_dead(&f), CLIENT_OUT_SETS + 1);
    CU_ASSERT_EQUAL(psi_take_fd(&f.psi), -1);
    /* the client goes with two sets unsent: their duplicates are closed */
    f.c->in_dispatch = true;
    CU_ASSERT_EQUAL(send_dead(f.c, 7, 0, p, 2), 0);
    CU_ASSERT_EQUAL(send_dead(f.c, 8, 0, p, 1), 0);
    int dups[3] = {f.c->ofds[0].fds[0], f.c->ofds[0].fds[1], f.c->ofds[1].fds[0]};
    for (int i = 0; i < 3; i++) CU_ASSERT_TRUE(fcntl(dups[i], F_GETFD) >= 0);
    client_kill(f.c);
    for (int i = 0; i < 3; i++) CU_ASSERT_EQUAL(fcntl(dups[i], F_GETFD), -1);
    CU_ASSERT_EQUAL(send_dead(f.c, 9, 0, p, 1), -1);
    CU_ASSERT_EQUAL(errno, EPIPE);
    clients_reap(&f.d);
    down(&f);
    /* a closing client: nothing more */
    up(&f);
    client_drop(f.c);
    CU_ASSERT_EQUAL(send_dead(f.c, 1, 0, p, 1), -1);
    CU_ASSERT_EQUAL(errno, EPIPE);
    CU_ASSERT_EQUAL(f.c->nofds, 0);
    close(p[0]);
    close(p[1]);
    down(&f);
}

/* A channel's two parts: both or neither. Here one process is both ends (the same client
 * twice): each message comes with its own descriptors, in order; with room for one set
 * only, neither is queued (ENOBUFS), the client is marked, and the mark goes once its
 * sets are sent. */
static void test_send_fds_pair(void)
{
    struct fixture f;
    up(&f);
    int p[2], q[2];
    CU_ASSERT_EQUAL_FATAL(pipe(p), 0);
    CU_ASSERT_EQUAL_FATAL(pipe(q), 0);
    struct psmsg_buf a = {0}, b = {0};
    f.c->in_dispatch = true;
    for (int i = 0; i < CLIENT_OUT_SETS - 1; i++)
        CU_ASSERT_EQUAL(send_dead(f.c, (uint64_t)i + 1, 0, p, 1), 0);
    size_t queued = f.c->outlen;
    psmsg_begin(&a, PSM_DEAD, 0);
    psmsg_put_u64(&a, PSF_TID, 1000);
    psmsg_begin(&b, PSM_DEAD, 0);
    psmsg_put_u64(&b, PSF_TID, 1001);
    CU_ASSERT_EQUAL(client_send_fds_pair(f.c, &a, p, 2, f.c, &b, q, 2), -1);
    CU_ASSERT_EQUAL(errno, ENOBUFS);
    CU_ASSERT_EQUAL(f.c->outlen, queued);
    CU_ASSERT_EQUAL(f.c->nofds, CLIENT_OUT_SETS - 1);
    CU_ASSERT_TRUE(f.c->sets_full);
    f.c->in_dispatch = false;
    CU_ASSERT_TRUE(client_flush_out(f.c));
    for (uint64_t i = 0; i < CLIENT_OUT_SETS - 1; i++) {
        CU_ASSERT_EQUAL_FATAL(next_dead(&f), i + 1);
        close(psi_take_fd(&f.psi));
    }
    CU_ASSERT_FALSE(f.c->sets_full); /* (preload_client_drained was told) */
    f.c->in_dispatch = true;
    CU_ASSERT_EQUAL(client_send_fds_pair(f.c, &a, p, 2, f.c, &b, q, 2), 0);
    CU_ASSERT_EQUAL(f.c->nofds, 2);
    f.c->in_dispatch = false;
    CU_ASSERT_TRUE(client_flush_out(f.c));
    CU_ASSERT_EQUAL(next_dead(&f), 1000);
    int x = psi_take_fd(&f.psi), y = psi_take_fd(&f.psi);
    CU_ASSERT_EQUAL(psi_take_fd(&f.psi), -1);
    CU_ASSERT_EQUAL(inode(x), inode(p[0]));
    CU_ASSERT_EQUAL(inode(y), inode(p[1]));
    CU_ASSERT_EQUAL(next_dead(&f), 1001);
    int z = psi_take_fd(&f.psi), w = psi_take_fd(&f.psi);
    CU_ASSERT_EQUAL(psi_take_fd(&f.psi), -1);
    CU_ASSERT_EQUAL(inode(z), inode(q[0]));
    CU_ASSERT_EQUAL(inode(w), inode(q[1]));
    int fds[] = {x, y, z, w, p[0], p[1], q[0], q[1]};
    for (size_t i = 0; i < sizeof fds / sizeof fds[0]; i++) close(fds[i]);
    psmsg_buf_free(&a);
    psmsg_buf_free(&b);
    down(&f);
}

/* Descriptors in flight (fdflight.h): a client that reads nothing is refused more once its
 * FDFLIGHT_CLIENT are queued or unread (ENOBUFS, and no room for the modules), and another
 * client of another uid is not; once it has read everything, the count is taken back and
 * it gets more. A send the kernel refuses with ETOOMANYREFS is back-pressure: the client is
 * not closed, its set waits. */
static void test_send_fds_flight(void)
{
    struct fixture f;
    up(&f);
    int p[2];
    CU_ASSERT_EQUAL_FATAL(pipe(p), 0);
    /* room in the socket for all that is sent unread (SO_SNDBUFFORCE as root; else the
     * default, ~200 sets, is enough) */
    int big = 8 << 20;
    setsockopt(f.c->fd, SOL_SOCKET, SO_SNDBUFFORCE, &big, sizeof big);
    unsigned all, lim_all, lim_uid;
    fdflight_totals(f.d.clients->fl, &all, &lim_all, &lim_uid);
    unsigned lim = FDFLIGHT_CLIENT < lim_uid ? FDFLIGHT_CLIENT : lim_uid;
    unsigned sent = 0;
    int r = 0;
    for (unsigned i = 0; i < 4 * FDFLIGHT_CLIENT && r == 0; i++) {
        r = send_dead(f.c, i + 1, 0, p, 2);
        if (r == 0) sent++;
        if (f.c->nofds > CLIENT_OUT_SETS / 2) CU_ASSERT_TRUE(client_flush_out(f.c)); /* unread */
    }
    CU_ASSERT_EQUAL(r, -1);
    CU_ASSERT_EQUAL(errno, ENOBUFS);
    CU_ASSERT_EQUAL(sent, lim / 2);
    CU_ASSERT_FALSE(client_fds_room(f.c, 64));
    CU_ASSERT_TRUE(f.c->fl_waiting);
    CU_ASSERT_TRUE(client_flush_out(f.c));
    CU_ASSERT_EQUAL(f.c->nofds, 0);
    for (unsigned i = 0; i < sent; i++) { /* the client reads (and closes) all of it */
        CU_ASSERT_EQUAL(next_dead(&f), i + 1);
        for (int fd; (fd = psi_take_fd(&f.psi)) >= 0;) close(fd);
    }
    CU_ASSERT_TRUE(client_fds_room(f.c, 64)); /* its socket has nothing unread: counted back */
    CU_ASSERT_EQUAL(f.c->fl_sent, 0);
    /* the kernel refuses a send: the client stays, its set waits and goes later */
    CU_ASSERT_EQUAL(send_dead(f.c, 9999, 0, p, 2), 0);
    f.c->fl_blocked = true;
    CU_ASSERT_TRUE(client_flush_out(f.c));
    CU_ASSERT_FALSE(f.c->dead);
    CU_ASSERT_EQUAL(f.c->nofds, 1);
    f.c->fl_blocked = false;
    CU_ASSERT_TRUE(client_flush_out(f.c));
    CU_ASSERT_EQUAL(next_dead(&f), 9999);
    close(p[0]);
    close(p[1]);
    down(&f);
}

/* The count by uid and in all, and a gone client's socket held until its peer reads. */
static void test_fdflight_counts(void)
{
    struct fdflight *fl = fdflight_new();
    CU_ASSERT_PTR_NOT_NULL_FATAL(fl);
    unsigned all, lim_all, lim_uid;
    fdflight_totals(fl, &all, &lim_all, &lim_uid);
    CU_ASSERT_EQUAL(all, 0);
    CU_ASSERT_TRUE(lim_uid >= 16 && lim_uid <= lim_all);
    CU_ASSERT_TRUE(fdflight_room(fl, 1000, 0, 4));
    fdflight_add(fl, 1000, lim_uid);
    CU_ASSERT_FALSE(fdflight_room(fl, 1000, 0, 1)); /* its uid's share is used up */
    CU_ASSERT_TRUE(fdflight_room(fl, 1001, 0, 1));  /* another's is not */
    CU_ASSERT_TRUE(fdflight_room(fl, 0, 0, 1));     /* root: per client only */
    CU_ASSERT_FALSE(fdflight_room(fl, 0, FDFLIGHT_CLIENT, 1));
    fdflight_sub(fl, 1000, lim_uid);
    fdflight_totals(fl, &all, &lim_all, &lim_uid);
    CU_ASSERT_EQUAL(all, 0);
    int sp[2];
    CU_ASSERT_EQUAL_FATAL(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp), 0);
    CU_ASSERT_EQUAL(write(sp[0], "x", 1), 1);
    CU_ASSERT_TRUE(fdflight_unread(sp[0]));
    fdflight_add(fl, 1000, 3);
    fdflight_linger(fl, sp[0], 1000, 3);
    CU_ASSERT_TRUE(fdflight_poll(fl)); /* unread: held, still counted */
    fdflight_totals(fl, &all, &lim_all, &lim_uid);
    CU_ASSERT_EQUAL(all, 3);
    char ch;
    CU_ASSERT_EQUAL(read(sp[1], &ch, 1), 1);
    CU_ASSERT_FALSE(fdflight_poll(fl)); /* read: closed, and counted back */
    fdflight_totals(fl, &all, &lim_all, &lim_uid);
    CU_ASSERT_EQUAL(all, 0);
    close(sp[1]);
    fdflight_free(fl);
}

UNIT_SUITE(client_fds, UNIT_TEST(test_send_fds), UNIT_TEST(test_send_fds_pair),
           UNIT_TEST(test_send_fds_pieces), UNIT_TEST(test_send_fds_limits),
           UNIT_TEST(test_send_fds_flight), UNIT_TEST(test_fdflight_counts))
