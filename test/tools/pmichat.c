/*
 * pmichat.c - a raw PMI client for the PMI tests (test/shell/mpi_pmi.sh): it speaks to the
 * channel in $PMI_FD what its arguments say, one step each, and prints every answer on a
 * line of its own as "< ANSWER" (a PMI-2 frame without its length field), so a test can
 * compare the transcript with a golden file or grep it. Steps:
 *   LINE         a PMI-1 line (the newline added); waits for one answer line
 *   -n:LINE      the same, no answer awaited (mcmd=spawn's lines before endcmd)
 *   -2:BODY      a PMI-2 frame (the 6-byte length field added); waits for one frame
 *   -long:N      a line of N bytes "cmd=put kvsname=x key=k value=xxx..." with its newline
 *   -sleep:MS    waits MS milliseconds
 *   -fences:K    K fences in a row (barrier_in, barrier_out); prints "fence_us MEDIAN MAX"
 *                of their times (bench/mpi.sh: the fence across the tree of psids)
 * In a step, %K stands for the KVS name the last my_kvsname answer gave (printed as %K too,
 * so transcripts do not depend on the job's number), %R for $PMI_RANK, %N for the next rank
 * ((rank + 1) mod $PMI_SIZE).
 * Every wait is bounded by 10 s: "! timeout" and exit 3; the channel closed: "! closed",
 * exit 4. Exit 0 after the last step.
 *
 * usage: pmichat STEP...
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int fd;
static char in[1 << 17];
static size_t nin;
static char kvs[300] = "none";

/* The step with %K, %R and %N filled in (a static buffer). */
static const char *fill(const char *s)
{
    static char out[1 << 16];
    char rank[24], next[24];
    long r = atol(getenv("PMI_RANK") ? getenv("PMI_RANK") : "0");
    long n = atol(getenv("PMI_SIZE") ? getenv("PMI_SIZE") : "1");
    snprintf(rank, sizeof rank, "%ld", r);
    snprintf(next, sizeof next, "%ld", n > 0 ? (r + 1) % n : 0);
    size_t o = 0;
    for (; *s && o + 300 < sizeof out; s++) {
        const char *v = NULL;
        if (s[0] == '%' && s[1] == 'K') v = kvs;
        if (s[0] == '%' && s[1] == 'R') v = rank;
        if (s[0] == '%' && s[1] == 'N') v = next;
        if (v) {
            o += (size_t)snprintf(out + o, sizeof out - o, "%s", v);
            s++;
        } else {
            out[o++] = *s;
        }
    }
    out[o] = 0;
    return out;
}

/* An answer line, with the KVS name learned and written as %K. */
static void show(const char *p, size_t n)
{
    const char *k = "kvsname=";
    const char *at = memmem(p, n, k, strlen(k));
    if (at && memmem(p, n, "my_kvsname", 10)) {
        size_t off = (size_t)(at - p) + strlen(k), e = off;
        while (e < n && p[e] != ' ' && p[e] != ';') e++;
        snprintf(kvs, sizeof kvs, "%.*s", (int)(e - off), p + off);
        printf("< %.*s%%K%.*s\n", (int)off, p, (int)(n - e), p + e);
        return;
    }
    printf("< %.*s\n", (int)n, p);
}

static void put(const char *p, size_t n)
{
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            printf("! write: %s\n", strerror(errno));
            exit(4);
        }
        p += w;
        n -= (size_t)w;
    }
}

/* more input within 10 s, or exit */
static void more(void)
{
    struct pollfd p = {fd, POLLIN, 0};
    int r = poll(&p, 1, 10000);
    if (r == 0) {
        printf("! timeout\n");
        exit(3);
    }
    ssize_t n = r > 0 ? read(fd, in + nin, sizeof in - nin) : -1;
    if (n <= 0) {
        printf("! closed\n");
        exit(4);
    }
    nin += (size_t)n;
}

static void consume(size_t n)
{
    memmove(in, in + n, nin - n);
    nin -= n;
}

static void answer_v1(void)
{
    char *nl;
    while (!(nl = memchr(in, '\n', nin))) more();
    show(in, (size_t)(nl - in));
    consume((size_t)(nl - in) + 1);
}

static void answer_v2(void)
{
    while (nin < 6) more();
    char num[7];
    memcpy(num, in, 6);
    num[6] = 0;
    size_t len = strtoul(num, NULL, 10);
    if (len > sizeof in - 6) {
        printf("! bad frame length %s\n", num);
        exit(4);
    }
    while (nin < 6 + len) more();
    show(in + 6, len);
    consume(6 + len);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void fences(long k)
{
    double *t = calloc((size_t)(k > 0 ? k : 1), sizeof *t);
    if (!t) exit(1);
    for (long i = 0; i < k; i++) {
        struct timespec a, b;
        clock_gettime(CLOCK_MONOTONIC, &a);
        put("cmd=barrier_in\n", 15);
        char *nl;
        while (!(nl = memchr(in, '\n', nin))) more();
        if (strncmp(in, "cmd=barrier_out rc=0", 20) != 0) {
            printf("! fence failed: %.*s\n", (int)(nl - in), in);
            exit(5);
        }
        consume((size_t)(nl - in) + 1);
        clock_gettime(CLOCK_MONOTONIC, &b);
        t[i] = (double)(b.tv_sec - a.tv_sec) * 1e6 + (double)(b.tv_nsec - a.tv_nsec) / 1e3;
    }
    qsort(t, (size_t)k, sizeof *t, cmp_double);
    if (k > 0) printf("fence_us %.0f %.0f\n", t[k / 2], t[k - 1]);
    free(t);
}

int main(int argc, char **argv)
{
    const char *e = getenv("PMI_FD");
    if (!e) {
        fprintf(stderr, "pmichat: no PMI_FD\n");
        return 2;
    }
    fd = atoi(e);
    for (int i = 1; i < argc; i++) {
        const char *s = fill(argv[i]);
        if (strncmp(s, "-n:", 3) == 0) {
            put(s + 3, strlen(s + 3));
            put("\n", 1);
        } else if (strncmp(s, "-2:", 3) == 0) {
            char hdr[24];
            snprintf(hdr, sizeof hdr, "%-6zu", strlen(s + 3));
            put(hdr, 6);
            put(s + 3, strlen(s + 3));
            answer_v2();
        } else if (strncmp(s, "-long:", 6) == 0) {
            size_t n = strtoul(s + 6, NULL, 10);
            const char *head = "cmd=put kvsname=x key=k value=";
            char *b = malloc(n + 1);
            if (!b) return 1;
            size_t h = strlen(head) < n ? strlen(head) : n;
            memcpy(b, head, h);
            memset(b + h, 'x', n - h);
            b[n] = '\n';
            put(b, n + 1);
            free(b);
            answer_v1();
        } else if (strncmp(s, "-fences:", 8) == 0) {
            fences(strtol(s + 8, NULL, 10));
        } else if (strncmp(s, "-sleep:", 7) == 0) {
            struct timespec t = {0, 0};
            long ms = strtol(s + 7, NULL, 10);
            t.tv_sec = ms / 1000;
            t.tv_nsec = (ms % 1000) * 1000000L;
            nanosleep(&t, NULL);
        } else {
            put(s, strlen(s));
            put("\n", 1);
            answer_v1();
        }
        fflush(stdout);
    }
    return 0;
}
