/*
 * test_logger_job.c - unit tests for logger/job.c, logger/input.c and logger/conn.c: psid's
 * messages built by hand go in, and what comes out is checked - lines on out[0]/out[1],
 * PSM_IO_ACK only for written output, the stdin window, failure lines and the exit status.
 */
#include "../../logger/job.h"
#include "unit.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define SPAWN_ID 5

struct rig {
    int peer; /* psid's end */
    struct lg_conn conn;
    struct lg_job job;
};

static void rig_up(struct rig *g, uint32_t np, bool label, uint32_t input)
{
    int sv[2];
    CU_ASSERT_FATAL(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    g->peer = sv[1];
    lg_conn_init(&g->conn, sv[0], 100);
    struct lg_job_cfg cfg = {.np = np, .label = label, .input = input, .prog = "./prog"};
    CU_ASSERT_FATAL(lg_job_init(&g->job, &cfg, &g->conn, SPAWN_ID) == 0);
}

static void rig_down(struct rig *g)
{
    lg_job_free(&g->job);
    lg_conn_close(&g->conn);
    close(g->peer);
}

/* psid sends a message: through the socket and lg_conn, into the job */
static void deliver(struct rig *g, struct psmsg_buf *b)
{
    CU_ASSERT_FATAL(psmsg_end(b) == 0);
    CU_ASSERT_FATAL(write(g->peer, b->data, b->len) == (ssize_t)b->len);
    psmsg_buf_free(b);
    CU_ASSERT_FATAL(lg_conn_read(&g->conn) > 0);
    struct psmsg m;
    int n;
    while ((n = lg_conn_next(&g->conn, &m)) == 1) CU_ASSERT(lg_job_handle(&g->job, &m) == 1);
    CU_ASSERT_EQUAL(n, 0);
}

static void spawn_reply(struct rig *g)
{
    struct psmsg_buf b = {0};
    psmsg_begin(&b, PSM_SPAWN_REPLY, SPAWN_ID);
    psmsg_put_u64(&b, PSF_JOB, PSTID(0, 42));
    psmsg_put_u32(&b, PSF_NP, g->job.cfg.np);
    deliver(g, &b);
}

static void rank_up(struct rig *g, uint32_t rank, uint32_t node)
{
    struct psmsg_buf b = {0};
    psmsg_begin(&b, PSM_RANK, SPAWN_ID);
    psmsg_put_u32(&b, PSF_RANK, rank);
    psmsg_put_u32(&b, PSF_NODE_ID, node);
    psmsg_put_u64(&b, PSF_TID, PSTID(node, 100 + rank));
    deliver(g, &b);
}

/* A rank that did not start, with psid's text (spawn.c's: what failed, then the reason). */
static void rank_fail_text(struct rig *g, uint32_t rank, uint32_t node, uint32_t err,
                           const char *text)
{
    struct psmsg_buf b = {0};
    psmsg_begin(&b, PSM_RANK, SPAWN_ID);
    psmsg_put_u32(&b, PSF_RANK, rank);
    psmsg_put_u32(&b, PSF_NODE_ID, node);
    psmsg_put_u32(&b, PSF_ERRNO, err);
    if (text) psmsg_put_str(&b, PSF_TEXT, text);
    deliver(g, &b);
}

static void rank_fail(struct rig *g, uint32_t rank, uint32_t node, uint32_t err)
{
    char text[128];
    snprintf(text, sizeof text, "cannot execute ./prog: %s", strerror((int)err));
    rank_fail_text(g, rank, node, err, text);
}

static void io(struct rig *g, uint32_t rank, uint32_t stream, const void *p, size_t n)
{
    struct psmsg_buf b = {0};
    psmsg_begin(&b, PSM_IO, SPAWN_ID);
    psmsg_put_u32(&b, PSF_RANK, rank);
    psmsg_put_u32(&b, PSF_STREAM, stream);
    psmsg_put_bytes(&b, PSF_DATA, p, n);
    deliver(g, &b);
}

static void rank_exit(struct rig *g, uint32_t rank, uint32_t status, bool lost)
{
    struct psmsg_buf b = {0};
    psmsg_begin(&b, PSM_EXIT, SPAWN_ID);
    psmsg_put_u32(&b, PSF_RANK, rank);
    psmsg_put_u64(&b, PSF_TID, g->job.r[rank].tid);
    if (lost)
        psmsg_put_u32(&b, PSF_LOST, 1);
    else
        psmsg_put_u32(&b, PSF_STATUS, status);
    deliver(g, &b);
}

/* everything queued on out[s], as a string (written through a pipe, so acknowledged) */
static char *drain(struct rig *g, int s)
{
    static char buf[1 << 16];
    int pfd[2];
    CU_ASSERT_FATAL(pipe(pfd) == 0);
    size_t n = 0;
    while (!lg_outq_empty(&g->job.out[s])) {
        ssize_t w = lg_outq_write(&g->job.out[s], pfd[1], 4096, lg_job_written, &g->job);
        CU_ASSERT_FATAL(w >= 0);
        ssize_t r = read(pfd[0], buf + n, sizeof buf - 1 - n);
        CU_ASSERT_FATAL(r >= 0);
        n += (size_t)r;
    }
    buf[n] = '\0';
    close(pfd[0]);
    close(pfd[1]);
    return buf;
}

/* the messages the job sent to psid: count of type, and the sum of PSF_BYTES per rank */
struct sent {
    int count[64];
    uint64_t bytes[8];
    uint32_t last_rank;
    size_t data;
};

static void collect(struct rig *g, uint16_t type, struct sent *s)
{
    memset(s, 0, sizeof *s);
    CU_ASSERT_FATAL(lg_job_flush_acks(&g->job) == 0);
    CU_ASSERT_FATAL(lg_conn_flush(&g->conn) == 0);
    static uint8_t buf[1 << 20];
    size_t n = 0;
    ssize_t r;
    while ((r = recv(g->peer, buf + n, sizeof buf - n, MSG_DONTWAIT)) > 0) n += (size_t)r;
    size_t pos = 0;
    while (pos < n) {
        uint32_t len = psmsg_frame_len(buf + pos, n - pos);
        struct psmsg m;
        CU_ASSERT_FATAL(len && psmsg_parse(buf + pos, len, &m) == 0);
        if (m.type < 64) s->count[m.type]++;
        uint32_t rank = 0;
        uint64_t bytes = 0;
        struct psmsg_field f;
        psmsg_get_u32(&m.body, PSF_RANK, &rank);
        if (m.type == type) {
            s->last_rank = rank;
            if (psmsg_get_u64(&m.body, PSF_BYTES, &bytes) == 0 && rank < 8) s->bytes[rank] += bytes;
            if (psmsg_find(&m.body, PSF_DATA, &f)) s->data += f.len;
        }
        pos += len;
    }
}

static void test_output_and_acks(void)
{
    struct rig g;
    struct sent s;
    rig_up(&g, 2, true, 0);
    spawn_reply(&g);
    CU_ASSERT_EQUAL(g.job.jobid, PSTID(0, 42));
    rank_up(&g, 0, 0);
    rank_up(&g, 1, 1);
    io(&g, 0, 1, "hel", 3);
    io(&g, 1, 1, "world\n", 6);
    io(&g, 0, 1, "lo\nx", 4);
    io(&g, 1, 2, "oops\n", 5);
    /* nothing written yet: nothing acknowledged */
    collect(&g, PSM_IO_ACK, &s);
    CU_ASSERT_EQUAL(s.count[PSM_IO_ACK], 0);
    CU_ASSERT_STRING_EQUAL(drain(&g, 0), "1: world\n0: hello\n");
    collect(&g, PSM_IO_ACK, &s);
    CU_ASSERT_EQUAL(s.count[PSM_IO_ACK], 2);
    CU_ASSERT_EQUAL(s.bytes[0], 6); /* "hel" "lo\n"; the "x" waits for its line's end */
    CU_ASSERT_EQUAL(s.bytes[1], 6);
    CU_ASSERT_STRING_EQUAL(drain(&g, 1), "1: oops\n");
    collect(&g, PSM_IO_ACK, &s);
    CU_ASSERT_EQUAL(s.bytes[1], 5);
    /* end of stream hands on the partial line, labelled and terminated */
    io(&g, 0, 1, "", 0);
    CU_ASSERT_STRING_EQUAL(drain(&g, 0), "0: x\n");
    rank_exit(&g, 0, 0, false);
    rank_exit(&g, 1, 0, false);
    CU_ASSERT(lg_job_done(&g.job));
    CU_ASSERT_EQUAL(lg_job_exit_code(&g.job), 0);
    CU_ASSERT_STRING_EQUAL(drain(&g, 1), "");
    rig_down(&g);
}

static void test_long_line_does_not_stall(void)
{
    /* a rank writes a whole window without a newline: enough of it is handed on (and so
     * acknowledged once written) that psid can go on */
    struct rig g;
    struct sent s;
    rig_up(&g, 1, false, PSI_NO_RANK);
    spawn_reply(&g);
    rank_up(&g, 0, 0);
    static uint8_t chunk[32768];
    memset(chunk, 'y', sizeof chunk);
    for (size_t sent = 0; sent < PSI_IO_WINDOW; sent += sizeof chunk)
        io(&g, 0, 1, chunk, sizeof chunk);
    CU_ASSERT(lg_lines_pending(&g.job.r[0].lines[0]) < PSI_IO_WINDOW / 2);
    int pfd[2];
    CU_ASSERT_FATAL(pipe2(pfd, O_NONBLOCK) == 0);
    fcntl(pfd[1], F_SETPIPE_SZ, 1 << 20);
    while (lg_outq_write(&g.job.out[0], pfd[1], 0, lg_job_written, &g.job) > 0) {
    }
    collect(&g, PSM_IO_ACK, &s);
    CU_ASSERT(s.bytes[0] >= PSI_IO_WINDOW / 2);
    close(pfd[0]);
    close(pfd[1]);
    rig_down(&g);
}

static void test_exit_statuses(void)
{
    struct rig g;
    rig_up(&g, 5, false, 0);
    spawn_reply(&g);
    for (uint32_t r = 0; r < 4; r++) rank_up(&g, r, r % 2);
    rank_fail(&g, 4, 1, ENOENT);
    CU_ASSERT_EQUAL(lg_job_exit_code(&g.job), 127);
    io(&g, 1, 2, "segfault coming", 15); /* no newline: flushed before the failure line */
    rank_exit(&g, 0, 0, false);
    rank_exit(&g, 1, SIGSEGV, false);
    rank_exit(&g, 2, 3 << 8, false);
    CU_ASSERT(!lg_job_ended(&g.job));
    rank_exit(&g, 3, 0, true);
    rank_exit(&g, 3, 0, false); /* a second exit for a rank is ignored */
    CU_ASSERT(lg_job_ended(&g.job));
    CU_ASSERT_EQUAL(g.job.failed, 4);
    CU_ASSERT_EQUAL(lg_job_exit_code(&g.job), 127); /* the first failure decides */
    const char *err = drain(&g, 1);
    CU_ASSERT_STRING_EQUAL(err, "psrun: rank 4 (node 1): cannot execute ./prog: No such file or "
                                "directory\n"
                                "segfault coming"
                                "psrun: rank 1 (node 1, task 1:101): killed by signal 11 "
                                "(SIGSEGV)\n"
                                "psrun: rank 2 (node 0, task 0:102): exited with status 3\n"
                                "psrun: rank 3 (node 1, task 1:103): node lost\n");
    rig_down(&g);

    rig_up(&g, 2, false, 0);
    spawn_reply(&g);
    rank_up(&g, 0, 0);
    rank_up(&g, 1, 0);
    rank_exit(&g, 1, SIGKILL, false);
    rank_exit(&g, 0, 1 << 8, false);
    CU_ASSERT_EQUAL(lg_job_exit_code(&g.job), 137);
    rig_down(&g);

    /* not executable */
    rig_up(&g, 1, false, 0);
    spawn_reply(&g);
    rank_fail(&g, 0, 0, EACCES);
    CU_ASSERT(lg_job_done(&g.job) == false); /* the failure line still waits */
    CU_ASSERT(strstr(drain(&g, 1), "cannot execute ./prog: Permission denied") != NULL);
    CU_ASSERT(lg_job_done(&g.job));
    CU_ASSERT_EQUAL(lg_job_exit_code(&g.job), 126);
    rig_down(&g);

    /* psid says what failed: a directory the user cannot enter is not "cannot execute" */
    rig_up(&g, 1, false, 0);
    spawn_reply(&g);
    rank_fail_text(&g, 0, 0, EACCES, "cannot change to the directory /secret: Permission denied");
    const char *e = drain(&g, 1);
    CU_ASSERT(strstr(e, "cannot change to the directory /secret: Permission denied") != NULL);
    CU_ASSERT(strstr(e, "cannot execute") == NULL);
    rig_down(&g);
    /* without a text, the exec failed */
    rig_up(&g, 1, false, 0);
    spawn_reply(&g);
    rank_fail_text(&g, 0, 0, ENOENT, NULL);
    CU_ASSERT(strstr(drain(&g, 1), "cannot execute ./prog: No such file or directory") != NULL);
    rig_down(&g);
}

static void test_spawn_error(void)
{
    struct rig g;
    rig_up(&g, 2, false, 0);
    struct psmsg_buf b = {0};
    psmsg_begin(&b, PSM_ERROR, SPAWN_ID);
    psmsg_put_u32(&b, PSF_ERRNO, EHOSTUNREACH);
    psmsg_put_str(&b, PSF_TEXT, "no usable node");
    deliver(&g, &b);
    CU_ASSERT(g.job.spawn_failed);
    CU_ASSERT_STRING_EQUAL(g.job.spawn_text, "no usable node");
    CU_ASSERT(lg_job_done(&g.job));
    CU_ASSERT_EQUAL(lg_job_exit_code(&g.job), 1);
    CU_ASSERT(!lg_job_input_wanted(&g.job));
    errno = 0;
    CU_ASSERT_EQUAL(lg_job_signal(&g.job, SIGINT), -1);
    CU_ASSERT_EQUAL(errno, EAGAIN);
    rig_down(&g);
}

static void test_input_window(void)
{
    struct rig g;
    struct sent s;
    static uint8_t data[PSI_IO_WINDOW];
    rig_up(&g, 2, false, 1);
    CU_ASSERT(lg_job_input_wanted(&g.job));
    CU_ASSERT_EQUAL(lg_job_input_room(&g.job), 0); /* no job yet */
    spawn_reply(&g);
    rank_up(&g, 0, 0);
    CU_ASSERT_EQUAL(lg_job_input_room(&g.job), 0); /* rank 1 not there yet */
    rank_up(&g, 1, 0);
    CU_ASSERT_EQUAL(lg_job_input_room(&g.job), PSI_IO_WINDOW);
    CU_ASSERT_EQUAL(lg_job_input(&g.job, data, 1000), 0);
    CU_ASSERT_EQUAL(lg_job_input(&g.job, data, PSI_IO_WINDOW - 1000), 0);
    CU_ASSERT_EQUAL(lg_job_input_room(&g.job), 0);
    collect(&g, PSM_INPUT, &s);
    CU_ASSERT_EQUAL(s.count[PSM_INPUT], 2);
    CU_ASSERT_EQUAL(s.last_rank, 1);
    CU_ASSERT_EQUAL(s.data, PSI_IO_WINDOW);
    struct psmsg_buf b = {0};
    psmsg_begin(&b, PSM_INPUT_ACK, SPAWN_ID);
    psmsg_put_u32(&b, PSF_RANK, 1);
    psmsg_put_u64(&b, PSF_BYTES, 1000);
    deliver(&g, &b);
    CU_ASSERT_EQUAL(lg_job_input_room(&g.job), 1000);
    rank_exit(&g, 0, 0, false);
    CU_ASSERT(lg_job_input_wanted(&g.job));
    rank_exit(&g, 1, 0, false);
    CU_ASSERT(!lg_job_input_wanted(&g.job)); /* nobody left to read it */
    rig_down(&g);

    /* all ranks, acknowledged per rank: the slowest running rank sets the pace */
    rig_up(&g, 3, false, PSI_ALL_RANKS);
    spawn_reply(&g);
    rank_up(&g, 0, 0);
    rank_up(&g, 1, 0);
    CU_ASSERT_EQUAL(lg_job_input_room(&g.job), 0);
    rank_up(&g, 2, 0);
    CU_ASSERT_EQUAL(lg_job_input(&g.job, data, 5000), 0);
    CU_ASSERT_EQUAL(lg_job_input_room(&g.job), PSI_IO_WINDOW - 5000);
    for (uint32_t r = 0; r < 2; r++) {
        psmsg_begin(&b, PSM_INPUT_ACK, SPAWN_ID);
        psmsg_put_u32(&b, PSF_RANK, r);
        psmsg_put_u64(&b, PSF_BYTES, 5000);
        deliver(&g, &b);
    }
    CU_ASSERT_EQUAL(lg_job_input_room(&g.job), PSI_IO_WINDOW - 5000);
    rank_exit(&g, 2, 0, false); /* the slow one is gone */
    CU_ASSERT_EQUAL(lg_job_input_room(&g.job), PSI_IO_WINDOW);
    /* acknowledged for all at once */
    CU_ASSERT_EQUAL(lg_job_input(&g.job, data, 7), 0);
    CU_ASSERT_EQUAL(lg_job_input_room(&g.job), PSI_IO_WINDOW - 7);
    psmsg_begin(&b, PSM_INPUT_ACK, SPAWN_ID);
    psmsg_put_u32(&b, PSF_RANK, PSI_ALL_RANKS);
    psmsg_put_u64(&b, PSF_BYTES, 5007);
    deliver(&g, &b);
    CU_ASSERT_EQUAL(lg_job_input_room(&g.job), PSI_IO_WINDOW);
    CU_ASSERT_EQUAL(lg_job_input(&g.job, NULL, 0), 0); /* end of input */
    CU_ASSERT(!lg_job_input_wanted(&g.job));
    collect(&g, PSM_INPUT, &s);
    CU_ASSERT_EQUAL(s.count[PSM_INPUT], 3);
    CU_ASSERT_EQUAL(s.last_rank, PSI_ALL_RANKS);
    rig_down(&g);

    rig_up(&g, 1, false, PSI_NO_RANK);
    CU_ASSERT(!lg_job_input_wanted(&g.job));
    rig_down(&g);
}

static void test_discard_and_signal(void)
{
    struct rig g;
    struct sent s;
    rig_up(&g, 1, false, 0);
    spawn_reply(&g);
    rank_up(&g, 0, 0);
    io(&g, 0, 1, "a\nb", 3);
    lg_job_discard(&g.job, 0);
    io(&g, 0, 1, "cd\n", 3);
    CU_ASSERT(lg_outq_empty(&g.job.out[0]));
    CU_ASSERT_EQUAL(lg_job_signal(&g.job, SIGINT), 0);
    collect(&g, PSM_IO_ACK, &s);
    CU_ASSERT_EQUAL(s.bytes[0], 6); /* everything, unwritten */
    CU_ASSERT_EQUAL(s.count[PSM_SIGNAL], 1);
    rig_down(&g);
}

static void test_conn_framing(void)
{
    /* messages split at every byte boundary still come out whole */
    int sv[2];
    CU_ASSERT_FATAL(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    struct lg_conn c;
    lg_conn_init(&c, sv[0], 1);
    struct psmsg_buf b = {0};
    psmsg_begin(&b, PSM_IO, 9);
    psmsg_put_u32(&b, PSF_RANK, 3);
    psmsg_put_bytes(&b, PSF_DATA, "xyz", 3);
    CU_ASSERT_FATAL(psmsg_end(&b) == 0);
    struct psmsg m;
    for (size_t i = 0; i < b.len; i++) {
        CU_ASSERT_FATAL(write(sv[1], b.data + i, 1) == 1);
        CU_ASSERT(lg_conn_read(&c) == 1);
        CU_ASSERT_EQUAL(lg_conn_next(&c, &m), i + 1 == b.len ? 1 : 0);
    }
    CU_ASSERT_EQUAL(m.type, PSM_IO);
    CU_ASSERT_EQUAL(m.id, 9);
    /* nothing there: EAGAIN (non-blocking) */
    CU_ASSERT_EQUAL(lg_conn_read(&c), -1);
    CU_ASSERT_EQUAL(errno, EAGAIN);
    /* garbage: a protocol error */
    CU_ASSERT_FATAL(write(sv[1], "\x09\x09\x09\x09\x00\x00\x00\x20\x00\x00\x00\x00", 12) == 12);
    CU_ASSERT(lg_conn_read(&c) == 12);
    CU_ASSERT_EQUAL(lg_conn_next(&c, &m), -1);
    /* a request gets the next id */
    uint32_t id;
    psmsg_begin(&b, PSM_TASKS, 0);
    CU_ASSERT_EQUAL(lg_conn_send(&c, &b, 0, &id), 0);
    CU_ASSERT_EQUAL(id, 1);
    CU_ASSERT_EQUAL(lg_conn_flush(&c), 0);
    uint8_t buf[64];
    CU_ASSERT_EQUAL(read(sv[1], buf, sizeof buf), PSMSG_HDR);
    CU_ASSERT_EQUAL(buf[11], 1);
    /* peer gone: end of stream */
    close(sv[1]);
    CU_ASSERT_EQUAL(lg_conn_read(&c), 0);
    psmsg_buf_free(&b);
    lg_conn_close(&c);
}

UNIT_SUITE(logger_job, UNIT_TEST(test_output_and_acks), UNIT_TEST(test_long_line_does_not_stall),
           UNIT_TEST(test_exit_statuses), UNIT_TEST(test_spawn_error), UNIT_TEST(test_input_window),
           UNIT_TEST(test_discard_and_signal), UNIT_TEST(test_conn_framing))
