/*
 * plflood.c - a user's requests that psid fans out to other users' processes, as fast as
 * psid takes them, for test/shell/preload_flood.sh (the preload trust issue, point 6), for
 * SECONDS; replies are read and dropped. Prints "sent N".
 *
 *   plflood sockets SOCK SECONDS   PSM_PL_SOCKETS (psstat sockets: psid asks every library
 *                                  process of the node); no endpoint of its own, so that it
 *                                  is not asked itself and psid's rounds end at once
 *   plflood poke SOCK PID SECONDS  PSM_PL_POKE at PID (wakes its progress thread), from an
 *                                  endpoint of its own (answering psid's questions at once)
 *   plflood victim SOCK SECONDS    sends nothing: an endpoint that counts how often psid
 *                                  asks it for its sockets and wakes it ("asked N poked P")
 */
#include "psi.h"
#include "psproto.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    bool poke = argc == 5 && !strcmp(argv[1], "poke");
    bool victim = argc == 4 && !strcmp(argv[1], "victim");
    if (!poke && !victim && (argc != 4 || strcmp(argv[1], "sockets"))) {
        fprintf(stderr, "usage: plflood sockets SOCK SECONDS | plflood poke SOCK PID SECONDS | "
                        "plflood victim SOCK SECONDS\n");
        return 2;
    }
    struct psi c;
    if (psi_open(&c, argv[2]) < 0) {
        perror("plflood: psid");
        return 1;
    }
    struct psmsg_buf req = {0};
    struct psmsg rep;
    if (poke || victim) { /* an endpoint: a UDP socket on the node's address */
        struct sockaddr_in sa = {.sin_family = AF_INET};
        inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
        int u = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        if (u >= 0 && bind(u, (struct sockaddr *)&sa, sizeof sa) == 0) {
            psmsg_begin(&req, PSM_PL_OPEN, 0);
            psi_call_fd(&c, &req, u, &rep);
            psmsg_buf_free(&req);
        }
    }
    uint32_t pid = poke ? (uint32_t)atoi(argv[3]) : 0;
    double end = now() + atof(argv[poke ? 4 : 3]);
    unsigned long sent = 0, asked = 0, poked = 0;
    while (now() < end) {
        for (int i = 0; i < 64 && !victim; i++) {
            psmsg_begin(&req, poke ? PSM_PL_POKE : PSM_PL_SOCKETS, 0);
            if (poke) psmsg_put_u32(&req, PSF_PID, pid);
            if (psi_send(&c, &req)) sent++;
            psmsg_buf_free(&req);
        }
        struct psmsg ev; /* what came: events read here, replies dropped by libpsi */
        uint32_t num;
        while (psi_next_event(&c, &ev, victim ? 50 : 0) > 0) { /* asked: answered at once */
            poked += ev.type == PSM_PL_POKED;
            if (ev.type == PSM_PL_QUERY && psmsg_get_u32(&ev.body, PSF_REQ, &num) == 0) {
                asked++;
                psmsg_begin(&req, PSM_PL_REPORT, 0);
                psmsg_put_u32(&req, PSF_REQ, num);
                psi_send(&c, &req);
                psmsg_buf_free(&req);
            }
        }
    }
    if (victim)
        printf("asked %lu poked %lu\n", asked, poked);
    else
        printf("sent %lu\n", sent);
    return 0;
}
