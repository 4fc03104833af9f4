/*
 * uxpp.c - the reference the same-node path is measured against beside kernel TCP: a
 * ping-pong over an AF_UNIX stream socketpair between two processes (bench/preload.sh,
 * mode same). Each round trip sends SIZE bytes and waits for SIZE bytes back; prints the
 * median one-way latency (half the round trip, as sockperf reports) in microseconds.
 *
 * usage: uxpp SIZE SECONDS
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static int full(int fd, char *b, size_t n, int w)
{
    for (size_t d = 0; d < n;) {
        ssize_t r = w ? write(fd, b + d, n - d) : read(fd, b + d, n - d);
        if (r <= 0) return -1;
        d += (size_t)r;
    }
    return 0;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: uxpp SIZE SECONDS\n");
        return 2;
    }
    size_t size = strtoul(argv[1], NULL, 10);
    double secs = atof(argv[2]);
    int sp[2];
    char *buf = calloc(1, size ? size : 1);
    if (!size || !buf || socketpair(AF_UNIX, SOCK_STREAM, 0, sp) < 0) return 1;
    pid_t k = fork();
    if (k == 0) { /* the echo */
        close(sp[0]);
        while (full(sp[1], buf, size, 0) == 0 && full(sp[1], buf, size, 1) == 0) continue;
        _exit(0);
    }
    close(sp[1]);
    size_t cap = 1 << 20, n = 0;
    double *rtt = malloc(cap * sizeof *rtt), end = now_us() + secs * 1e6;
    while (rtt && n < cap) {
        double t0 = now_us();
        if (full(sp[0], buf, size, 1) < 0 || full(sp[0], buf, size, 0) < 0) break;
        double t1 = now_us();
        rtt[n++] = t1 - t0;
        if (t1 > end) break;
    }
    close(sp[0]);
    waitpid(k, NULL, 0);
    if (!n) return 1;
    qsort(rtt, n, sizeof *rtt, cmp);
    printf("%.3f\n", rtt[n / 2] / 2);
    return 0;
}
