/*
 * plhold.c - one TCP connection held by one process, for test/shell/preload_burst.sh's many
 * processes under libpspreload: connects to ADDR:PORT, then waits until its standard input
 * ends (all of them hold their connections at once), then one echo of 4 bytes; prints "ok",
 * or "error WHAT ERRNO-NAME".
 *
 *   plhold ADDR PORT
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static int fail(const char *what)
{
    printf("error %s %s\n", what, strerrorname_np(errno) ? strerrorname_np(errno) : "?");
    return 1;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: plhold ADDR PORT\n");
        return 2;
    }
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(argv[2]))};
    if (inet_pton(AF_INET, argv[1], &a.sin_addr) != 1) {
        fprintf(stderr, "plhold: bad address %s\n", argv[1]);
        return 2;
    }
    int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s < 0 || connect(s, (struct sockaddr *)&a, sizeof a) < 0) return fail("connect");
    char b[64];
    while (read(0, b, sizeof b) > 0) {
    }
    if (write(s, "ping", 4) != 4) return fail("write");
    size_t got = 0;
    while (got < 4) {
        ssize_t n = read(s, b + got, 4 - got);
        if (n == 0) errno = 0;
        if (n <= 0) return fail(n == 0 ? "eof" : "read");
        got += (size_t)n;
    }
    if (memcmp(b, "ping", 4)) {
        printf("error echo garbled\n");
        return 1;
    }
    printf("ok\n");
    return 0;
}
