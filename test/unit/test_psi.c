/*
 * test_psi.c - unit tests for libpsi's connection (psi/client.c, psi/calls.c, psi/rx.c)
 * against a scripted psid on the other end of a socketpair: replies are matched to their
 * request, events that arrive before a reply are queued in order and never taken for it,
 * and malformed or missing input gives the documented errors.
 */
#include "psi.h"
#include "unit.h"

#include <errno.h>
#include <string.h>
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

UNIT_SUITE(psi, UNIT_TEST(test_event_before_reply), UNIT_TEST(test_event_id0_before_reply),
           UNIT_TEST(test_job_events_and_stale_replies), UNIT_TEST(test_error_reply),
           UNIT_TEST(test_malformed), UNIT_TEST(test_eof_and_timeout), UNIT_TEST(test_dead_parse),
           UNIT_TEST(test_refused))
