/*
 * test_logger_lines.c - unit tests for logger/lines.c and logger/outq.c: lines are handed on
 * whole however the input is cut, labels, binary data, lines longer than the limit, the
 * end of a stream, and the output queue's partial writes and completion callbacks.
 */
#include "../../logger/lines.h"
#include "../../logger/outq.h"
#include "unit.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Feed in in pieces cut at the given positions; check that every piece handed on ends a
 * line (unless over max) and collect the whole output. */
static size_t feed_cut(const char *label, size_t max, const uint8_t *in, size_t n,
                       const size_t *cuts, size_t ncuts, struct lg_bytes *all, int *torn)
{
    struct lg_lines l;
    lg_lines_init(&l, max);
    size_t prev = 0, raw = 0;
    *torn = 0;
    for (size_t i = 0; i <= ncuts; i++) {
        size_t end = i < ncuts ? cuts[i] : n;
        struct lg_bytes out = {0};
        ssize_t r = lg_lines_feed(&l, in + prev, end - prev, label, &out);
        CU_ASSERT_FATAL(r >= 0);
        raw += (size_t)r;
        if (out.len && out.p[out.len - 1] != '\n') (*torn)++;
        lg_bytes_put(all, out.p, out.len);
        lg_bytes_free(&out);
        prev = end;
    }
    struct lg_bytes out = {0};
    ssize_t r = lg_lines_flush(&l, label, &out);
    CU_ASSERT_FATAL(r >= 0);
    raw += (size_t)r;
    lg_bytes_put(all, out.p, out.len);
    lg_bytes_free(&out);
    lg_lines_free(&l);
    return raw;
}

static void test_cut_anywhere(void)
{
    static const char text[] = "alpha\nbe\n\ngamma delta\nx\nno newline at the end";
    size_t n = sizeof text - 1;
    for (size_t a = 0; a <= n; a++)
        for (size_t b = a; b <= n; b++) {
            size_t cuts[2] = {a, b};
            struct lg_bytes all = {0};
            int torn;
            size_t raw = feed_cut(NULL, 1000, (const uint8_t *)text, n, cuts, 2, &all, &torn);
            CU_ASSERT_EQUAL(raw, n);
            CU_ASSERT_EQUAL(all.len, n);
            CU_ASSERT(all.len == n && memcmp(all.p, text, n) == 0);
            CU_ASSERT_EQUAL(torn, 0);
            lg_bytes_free(&all);
        }
}

static void test_labels(void)
{
    static const char text[] = "one\ntwo\n\nthree";
    static const char want[] = "7: one\n7: two\n7: \n7: three\n";
    size_t n = sizeof text - 1;
    for (size_t a = 0; a <= n; a++)
        for (size_t b = a; b <= n; b++) {
            size_t cuts[2] = {a, b};
            struct lg_bytes all = {0};
            int torn;
            size_t raw = feed_cut("7: ", 1000, (const uint8_t *)text, n, cuts, 2, &all, &torn);
            CU_ASSERT_EQUAL(raw, n);
            CU_ASSERT(all.len == sizeof want - 1 && memcmp(all.p, want, all.len) == 0);
            lg_bytes_free(&all);
        }
}

static void test_binary(void)
{
    uint8_t in[4096];
    srand(7);
    for (size_t i = 0; i < sizeof in; i++) in[i] = (uint8_t)rand();
    in[100] = 0;
    in[101] = '\n';
    for (int round = 0; round < 50; round++) {
        size_t cuts[8];
        for (int i = 0; i < 8; i++) cuts[i] = (size_t)rand() % sizeof in;
        for (int i = 0; i < 8; i++)
            for (int k = i + 1; k < 8; k++)
                if (cuts[k] < cuts[i]) {
                    size_t t = cuts[i];
                    cuts[i] = cuts[k];
                    cuts[k] = t;
                }
        struct lg_bytes all = {0};
        int torn;
        size_t raw = feed_cut(NULL, 1u << 20, in, sizeof in, cuts, 8, &all, &torn);
        CU_ASSERT_EQUAL(raw, sizeof in);
        CU_ASSERT(all.len == sizeof in && memcmp(all.p, in, sizeof in) == 0);
        CU_ASSERT_EQUAL(torn, 0);
        lg_bytes_free(&all);
    }
}

static void test_huge_line(void)
{
    /* 10000 bytes without a newline, then "\nend\n", limit 1000: handed on in pieces of at
     * least 1000, the label only at the start of each line */
    size_t n = 10000;
    uint8_t *in = malloc(n + 5);
    memset(in, 'x', n);
    memcpy(in + n, "\nend\n", 5);
    size_t cuts[20];
    for (int i = 0; i < 20; i++) cuts[i] = (size_t)(i + 1) * 499;
    struct lg_bytes all = {0};
    int torn;
    size_t raw = feed_cut("0: ", 1000, in, n + 5, cuts, 20, &all, &torn);
    CU_ASSERT_EQUAL(raw, n + 5);
    CU_ASSERT(torn > 0);
    CU_ASSERT_EQUAL(all.len, 3 + n + 1 + 3 + 4);
    CU_ASSERT(memcmp(all.p, "0: xxx", 6) == 0);
    int labels = 0; /* no label inside the long line */
    for (uint8_t *q = all.p; (q = memmem(q, all.len - (size_t)(q - all.p), "0: ", 3)); q++)
        labels++;
    CU_ASSERT_EQUAL(labels, 2);
    CU_ASSERT(all.len > 8 && memcmp(all.p + all.len - 8, "\n0: end\n", 8) == 0);
    lg_bytes_free(&all);

    /* pending bytes never reach the limit */
    struct lg_lines l;
    lg_lines_init(&l, 100);
    struct lg_bytes out = {0};
    CU_ASSERT_EQUAL(lg_lines_feed(&l, in, 99, NULL, &out), 0);
    CU_ASSERT_EQUAL(lg_lines_pending(&l), 99);
    CU_ASSERT_EQUAL(lg_lines_feed(&l, in, 1, NULL, &out), 100);
    CU_ASSERT_EQUAL(lg_lines_pending(&l), 0);
    CU_ASSERT_EQUAL(out.len, 100);
    lg_bytes_free(&out);
    lg_lines_free(&l);
    free(in);
}

static void test_flush(void)
{
    struct lg_lines l;
    struct lg_bytes out = {0};
    lg_lines_init(&l, 100);
    /* no label: a partial last line stays exactly as it is */
    CU_ASSERT_EQUAL(lg_lines_feed(&l, "a\nbc", 4, NULL, &out), 2);
    CU_ASSERT_EQUAL(lg_lines_flush(&l, NULL, &out), 2);
    CU_ASSERT(out.len == 4 && memcmp(out.p, "a\nbc", 4) == 0);
    /* empty flush: nothing */
    out.len = 0;
    CU_ASSERT_EQUAL(lg_lines_flush(&l, "1: ", &out), 0);
    CU_ASSERT_EQUAL(out.len, 0);
    /* label: a newline is added after the partial line */
    CU_ASSERT_EQUAL(lg_lines_feed(&l, "bc", 2, "1: ", &out), 0);
    CU_ASSERT_EQUAL(lg_lines_flush(&l, "1: ", &out), 2);
    CU_ASSERT(out.len == 6 && memcmp(out.p, "1: bc\n", 6) == 0);
    lg_bytes_free(&out);
    lg_lines_free(&l);
}

struct acks {
    size_t raw[4];
    int calls;
};

static void on_done(void *ctx, uint32_t rank, size_t raw)
{
    struct acks *a = ctx;
    a->calls++;
    if (rank < 4) a->raw[rank] += raw;
}

static void test_outq(void)
{
    int pfd[2];
    CU_ASSERT_FATAL(pipe2(pfd, O_NONBLOCK) == 0);
    struct lg_outq q = {0};
    struct acks a = {0};
    CU_ASSERT_EQUAL(lg_outq_write(&q, pfd[1], 0, on_done, &a), 0);
    lg_outq_push(&q, 0, 5, "0: hello\n", 9);
    lg_outq_push(&q, 1, 0, NULL, 0); /* acknowledgement only */
    lg_outq_push(&q, 2, 3, "abc", 3);
    CU_ASSERT_EQUAL(q.bytes, 12);
    /* at most 4 bytes: the first chunk is not finished */
    CU_ASSERT_EQUAL(lg_outq_write(&q, pfd[1], 4, on_done, &a), 4);
    CU_ASSERT_EQUAL(a.calls, 0);
    CU_ASSERT_EQUAL(q.bytes, 8);
    CU_ASSERT_EQUAL(lg_outq_write(&q, pfd[1], 5, on_done, &a), 5);
    CU_ASSERT_EQUAL(a.calls, 2);
    CU_ASSERT_EQUAL(a.raw[0], 5);
    CU_ASSERT_EQUAL(lg_outq_write(&q, pfd[1], 0, on_done, &a), 3);
    CU_ASSERT_EQUAL(a.raw[2], 3);
    CU_ASSERT(lg_outq_empty(&q));
    CU_ASSERT_EQUAL(q.bytes, 0);
    char buf[64];
    CU_ASSERT_EQUAL(read(pfd[0], buf, sizeof buf), 12);
    CU_ASSERT(memcmp(buf, "0: hello\nabc", 12) == 0);

    /* a full pipe: EAGAIN, nothing lost; drop acknowledges */
    static uint8_t big[1 << 20];
    lg_outq_push(&q, 3, sizeof big, big, sizeof big);
    ssize_t w, total = 0;
    while ((w = lg_outq_write(&q, pfd[1], 0, on_done, &a)) > 0) total += w;
    CU_ASSERT_EQUAL(w, -1);
    CU_ASSERT_EQUAL(errno, EAGAIN);
    CU_ASSERT(total > 0 && (size_t)total < sizeof big);
    CU_ASSERT_EQUAL(q.bytes, sizeof big - (size_t)total);
    CU_ASSERT_EQUAL(a.raw[3], 0);
    lg_outq_drop(&q, on_done, &a);
    CU_ASSERT_EQUAL(a.raw[3], sizeof big);
    CU_ASSERT(lg_outq_empty(&q));
    close(pfd[0]);
    /* reader gone: EPIPE */
    lg_outq_push(&q, 0, 1, "x", 1);
    signal(SIGPIPE, SIG_IGN);
    CU_ASSERT_EQUAL(lg_outq_write(&q, pfd[1], 0, on_done, &a), -1);
    CU_ASSERT_EQUAL(errno, EPIPE);
    lg_outq_free(&q);
    close(pfd[1]);
}

UNIT_SUITE(logger_lines, UNIT_TEST(test_cut_anywhere), UNIT_TEST(test_labels),
           UNIT_TEST(test_binary), UNIT_TEST(test_huge_line), UNIT_TEST(test_flush),
           UNIT_TEST(test_outq))
