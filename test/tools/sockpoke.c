/*
 * sockpoke.c - sends raw bytes to a UNIX stream socket and prints what comes back, for
 * the integration tests' bad-input cases (bash cannot open a UNIX socket).
 *
 * usage: sockpoke SOCKET HEX        e.g. sockpoke /tmp/x.sock 0100000a0000000c00000001
 * Prints the reply's type and errno if it is a psmsg error, "closed" when the peer closes.
 */
#include "psmsg.h"
#include "psproto.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: sockpoke SOCKET HEX\n");
        return 2;
    }
    size_t n = strlen(argv[2]) / 2;
    uint8_t *msg = malloc(n + 1);
    for (size_t i = 0; i < n; i++) sscanf(argv[2] + 2 * i, "%2hhx", &msg[i]);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    snprintf(a.sun_path, sizeof a.sun_path, "%s", argv[1]);
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0) {
        perror("sockpoke: connect");
        return 1;
    }
    if (send(fd, msg, n, MSG_NOSIGNAL) != (ssize_t)n) {
        perror("sockpoke: send");
        return 1;
    }
    struct timeval tv = {5, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    uint8_t buf[65536];
    size_t len = 0;
    for (;;) {
        ssize_t r = recv(fd, buf + len, sizeof buf - len, 0);
        if (r <= 0) break;
        len += (size_t)r;
        uint32_t fl = len >= PSMSG_HDR ? psmsg_frame_len(buf, len) : 0;
        if (fl && len >= fl) {
            struct psmsg m;
            uint32_t e = 0;
            if (psmsg_parse(buf, fl, &m) == 0) {
                psmsg_get_u32(&m.body, PSF_ERRNO, &e);
                printf("reply type %u errno %u\n", m.type, e);
            }
            memmove(buf, buf + fl, len - fl);
            len -= fl;
        }
    }
    printf("closed\n");
    close(fd);
    free(msg);
    return 0;
}
