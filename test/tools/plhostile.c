/*
 * plhostile.c - a user with a plain client on psid's socket (no library) against psid's
 * preload tables and descriptor passing (the psid trust issue, point 5;
 * test/shell/psid_plhostile.sh). Each mode runs for SECONDS and prints what it did.
 *
 *   plhostile fds SOCK ADDR PORT N SECONDS
 *     Opens an endpoint on ADDR, listens on ADDR:PORT and registers it, then N times:
 *     announces a same-node connection to it (PSM_PL_CONNECT), connects, accepts and claims
 *     the accepted socket (PSM_PL_ACCEPT): psid answers each side with a channel's
 *     descriptors, which this client never reads. Prints "fds N".
 *   plhostile late SOCK ADDR PORT COUNT SECONDS
 *     Opens an endpoint, listens on ADDR:PORT and registers it, accepts one connection of
 *     its own that psid never heard of, and claims that one socket COUNT times every 250 ms
 *     (each claim finds no request: before, each was an entry of psid's late table).
 *     Prints "claims N".
 *   plhostile tomb SOCK ADDR PORT SRC FROM COUNT SECONDS
 *     Opens an endpoint on the node's address (127.0.0.1), listens on ADDR:PORT (another
 *     local address) and registers it, then for each source port FROM..FROM+COUNT-1
 *     connects from SRC (another node's address) to it, accepts and claims the accepted
 *     socket without any request: each claim waits for nothing, psid asks SRC's psid, which
 *     has no such request, and leaves a tombstone. Prints "tombs N" (connections made), then
 *     holds them SECONDS.
 *
 * With PLHOSTILE_READ set, the answers are read at the end and printed, one line each.
 * Exit 0, or 1 when psid could not be reached or the endpoint not opened.
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

static void usage(void)
{
    fprintf(stderr, "usage: plhostile fds SOCK ADDR PORT N SECONDS\n"
                    "       plhostile late SOCK ADDR PORT COUNT SECONDS\n"
                    "       plhostile tomb SOCK ADDR PORT SRC FROM COUNT SECONDS\n");
    exit(2);
}

/* ADDR:port as a socket address of its family; its length, or 0. */
static socklen_t addr_of(const char *addr, unsigned port, struct sockaddr_storage *ss)
{
    memset(ss, 0, sizeof *ss);
    struct sockaddr_in *a4 = (struct sockaddr_in *)ss;
    struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)ss;
    if (inet_pton(AF_INET, addr, &a4->sin_addr) == 1) {
        a4->sin_family = AF_INET;
        a4->sin_port = htons((uint16_t)port);
        return sizeof *a4;
    }
    if (inet_pton(AF_INET6, addr, &a6->sin6_addr) == 1) {
        a6->sin6_family = AF_INET6;
        a6->sin6_port = htons((uint16_t)port);
        return sizeof *a6;
    }
    return 0;
}

static int tcp_socket(const struct sockaddr_storage *ss)
{
    int one = 1, fd = socket(ss->ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd >= 0) setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    return fd;
}

/* An endpoint on EP and a registered listener on ADDR:PORT; the listener, or -1. */
static int setup(struct psi *c, const char *ep, const char *addr, unsigned port)
{
    struct sockaddr_storage ss;
    socklen_t len = addr_of(ep, 0, &ss);
    int u = len ? socket(ss.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0) : -1;
    if (u < 0 || bind(u, (struct sockaddr *)&ss, len) < 0) {
        perror("plhostile: endpoint socket");
        return -1;
    }
    struct psmsg_buf req = {0};
    struct psmsg rep;
    uint32_t e = EPROTO;
    psmsg_begin(&req, PSM_PL_OPEN, 0);
    if (psi_call_fd(c, &req, u, &rep) == 0) psmsg_get_u32(&rep.body, PSF_ERRNO, &e);
    psmsg_buf_free(&req);
    if (e) {
        fprintf(stderr, "plhostile: open: %s\n", strerror((int)e));
        return -1;
    }
    len = addr_of(addr, port, &ss);
    int l = tcp_socket(&ss);
    if (l < 0 || bind(l, (struct sockaddr *)&ss, len) < 0 || listen(l, 4096) < 0) {
        perror("plhostile: listen");
        return -1;
    }
    e = EPROTO;
    psmsg_begin(&req, PSM_PL_LISTEN, 0);
    if (psi_call_fd(c, &req, l, &rep) == 0) psmsg_get_u32(&rep.body, PSF_ERRNO, &e);
    psmsg_buf_free(&req);
    if (e) {
        fprintf(stderr, "plhostile: listen: %s\n", strerror((int)e));
        return -1;
    }
    return l;
}

/* PSM_PL_ACCEPT for socket a, not waiting for the answer. */
static bool claim(struct psi *c, int a, uint32_t tag)
{
    struct psmsg_buf req = {0};
    psmsg_begin(&req, PSM_PL_ACCEPT, 0);
    psmsg_put_u32(&req, PSF_TAG, tag);
    psmsg_put_u32(&req, PSF_SHM_RING, 1);
    bool ok = psi_send_fd(c, &req, a) != 0;
    psmsg_buf_free(&req);
    return ok;
}

static void hold(double until)
{
    while (now() < until) usleep(50000);
}

int main(int argc, char **argv)
{
    if (argc < 7) usage();
    const char *mode = argv[1], *sock = argv[2], *addr = argv[3];
    unsigned port = (unsigned)atoi(argv[4]);
    bool fds = !strcmp(mode, "fds"), late = !strcmp(mode, "late"), tomb = !strcmp(mode, "tomb");
    if ((!fds && !late && !tomb) || (tomb ? argc != 9 : argc != 7)) usage();
    const char *srcaddr = tomb ? argv[5] : addr;
    unsigned n = (unsigned)atoi(argv[tomb ? 6 : 5]);
    unsigned count = tomb ? (unsigned)atoi(argv[7]) : n;
    double end = now() + atof(argv[tomb ? 8 : 6]);
    struct psi c;
    if (psi_open(&c, sock) < 0) {
        perror("plhostile: psid");
        return 1;
    }
    int l = setup(&c, tomb ? "127.0.0.1" : addr, addr, port);
    if (l < 0) return 1;
    struct sockaddr_storage dst, src;
    socklen_t len = addr_of(addr, port, &dst);
    unsigned done = 0;
    if (fds) {
        char a[64];
        snprintf(a, sizeof a, "%s", addr);
        for (unsigned i = 1; i <= n && now() < end; i++) {
            int s = tcp_socket(&dst);
            struct psmsg_buf req = {0};
            psmsg_begin(&req, PSM_PL_CONNECT, 0);
            psmsg_put_str(&req, PSF_ADDR, a);
            psmsg_put_u32(&req, PSF_PORT, port);
            psmsg_put_u32(&req, PSF_CONN, i);
            psmsg_put_u32(&req, PSF_SAME_NODE, 1);
            psmsg_put_u32(&req, PSF_SHM_RING, 1u << 16);
            bool sent = s >= 0 && psi_send_fd(&c, &req, s) != 0;
            psmsg_buf_free(&req);
            if (!sent || connect(s, (struct sockaddr *)&dst, len) < 0) break;
            int acc = accept4(l, NULL, NULL, SOCK_CLOEXEC);
            if (acc < 0 || !claim(&c, acc, i)) break;
            done++; /* (both sockets kept: the channel stays wanted) */
        }
        printf("fds %u\n", done);
    } else if (late) {
        int s = tcp_socket(&dst);
        if (s < 0 || connect(s, (struct sockaddr *)&dst, len) < 0) {
            perror("plhostile: connect");
            return 1;
        }
        int acc = accept4(l, NULL, NULL, SOCK_CLOEXEC);
        while (acc >= 0 && now() < end) {
            struct psmsg ev;
            for (unsigned i = 0; i < count; i++) {
                done += claim(&c, acc, i + 1);
                /* answers read and dropped, so that psid keeps taking requests */
                while (i % 32 == 31 && psi_next_event(&c, &ev, 0) > 0) {
                }
            }
            usleep(250000);
        }
        printf("claims %u\n", done);
    } else {
        unsigned from = n;
        for (unsigned p = from; p < from + count && now() < end; p++) {
            int s = tcp_socket(&dst);
            socklen_t sl = addr_of(srcaddr, p, &src);
            if (s < 0 || bind(s, (struct sockaddr *)&src, sl) < 0 ||
                connect(s, (struct sockaddr *)&dst, len) < 0) {
                if (s >= 0) close(s);
                continue;
            }
            int acc = accept4(l, NULL, NULL, SOCK_CLOEXEC);
            if (acc >= 0 && claim(&c, acc, p)) done++;
        }
        printf("tombs %u\n", done);
    }
    fflush(stdout);
    if (getenv("PLHOSTILE_READ")) { /* (to see what psid answers) */
        struct psmsg ev;
        while (psi_next_event(&c, &ev, 3000) > 0) {
            uint32_t e = 0;
            char text[160] = "";
            psmsg_get_u32(&ev.body, PSF_ERRNO, &e);
            psmsg_get_str(&ev.body, PSF_TEXT, text, sizeof text);
            int k = 0;
            for (int f; (f = psi_take_fd(&c)) >= 0; k++) close(f);
            printf("event %u errno %u fds %d %s\n", ev.type, e, k, text);
        }
    }
    hold(end);
    return 0;
}
