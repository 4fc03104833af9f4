/*
 * rawcat.c - a TCP client that the preload library cannot see: every socket call is a raw
 * system call (syscall(2), as Go's runtime makes them), so no wrapper of libpspreload runs
 * even when it is loaded; built once as it is and once statically (rawcat-static), which
 * the loader never preloads into. test/shell/preload_unintercepted.sh drives both.
 *
 *   rawcat ADDR PORT send   stdin to the server, then shutdown(SHUT_WR) and wait for EOF
 *   rawcat ADDR PORT recv   what the server sends, to stdout, until EOF
 *
 * Exit 0 when every byte went its way, 1 on any error (printed to stderr).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

static long sys(long nr, long a, long b, long c)
{
    long r;
    do r = syscall(nr, a, b, c);
    while (r < 0 && errno == EINTR);
    return r;
}

/* Write all of buf to fd with raw write(2). */
static int put(int fd, const char *buf, size_t len)
{
    while (len) {
        long w = sys(SYS_write, fd, (long)buf, (long)len);
        if (w <= 0) return -1;
        buf += w;
        len -= (size_t)w;
    }
    return 0;
}

/* Copy from one descriptor to another until EOF with raw read(2) and write(2). */
static int copy(int from, int to)
{
    static char buf[1 << 16];
    for (;;) {
        long r = sys(SYS_read, from, (long)buf, sizeof buf);
        if (r < 0) return -1;
        if (r == 0) return 0;
        if (put(to, buf, (size_t)r) < 0) return -1;
    }
}

int main(int argc, char **argv)
{
    struct sockaddr_in sa = {.sin_family = AF_INET};
    if (argc != 4 || inet_pton(AF_INET, argv[1], &sa.sin_addr) != 1 ||
        (strcmp(argv[3], "send") && strcmp(argv[3], "recv"))) {
        fprintf(stderr, "usage: rawcat ADDR PORT send|recv\n");
        return 2;
    }
    sa.sin_port = htons((uint16_t)atoi(argv[2]));
    long fd = sys(SYS_socket, AF_INET, SOCK_STREAM, 0);
    if (fd < 0 || sys(SYS_connect, fd, (long)&sa, sizeof sa) < 0) {
        fprintf(stderr, "rawcat: connect: %s\n", strerror(errno));
        return 1;
    }
    int r;
    if (!strcmp(argv[3], "send")) {
        char c;
        r = copy(0, (int)fd) < 0 || sys(SYS_shutdown, fd, SHUT_WR, 0) < 0 ||
            sys(SYS_read, fd, (long)&c, 1) != 0;
    } else {
        r = copy((int)fd, 1) < 0;
    }
    if (r) fprintf(stderr, "rawcat: %s: %s\n", argv[3], strerror(errno));
    sys(SYS_close, fd, 0, 0);
    return r;
}
