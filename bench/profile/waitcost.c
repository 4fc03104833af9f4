/*
 * waitcost.c - what does the way an event loop sleeps cost a small-message round trip? A
 * plain UDP ping-pong of 16 bytes on loopback (no RDP), echoed by a forked child, with the
 * same way of waiting on both sides:
 *   block     a blocking recv (what kernel TCP's baseline in rdpbench does)
 *   epoll     epoll_wait without a timeout, then a non-blocking recv
 *   timeout   epoll_pwait2 with a 1 ms timeout on every wait (how a loop that sets its wait
 *             to the next protocol deadline sleeps: the deadline is re-armed per message)
 *   lazy      epoll_wait without a timeout and a timerfd in the set, armed before sleeping
 *             at a deadline 1 ms ahead, left alone while over half its span is ahead
 *             (include/lazytimer.h, as psid and rdpbench wait)
 *   poll2     poll on an eventfd (never written) and the socket, then a non-blocking recv:
 *             how a program thread of libpspreload waits for its RDP datagrams (wait.c)
 *   poll1     poll on the socket alone, then a non-blocking recv
 *   peek      a blocking zero-length recv with MSG_PEEK (wakes when a datagram is queued,
 *             takes nothing), then a non-blocking recv
 * Rounds alternate the modes; each prints the median RTT of its round trips, and the end
 * the median over rounds. Run by hand:
 *   cc -std=gnu11 -O2 -Iinclude -o waitcost bench/profile/waitcost.c && ./waitcost [ROUNDS]
 */
#include "lazytimer.h"
#include "probe.h"

#include <arpa/inet.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define TRIPS  20000
#define WARMUP 1000
#define MS     1000000ull

enum mode { M_BLOCK, M_EPOLL, M_TIMEOUT, M_LAZY, M_POLL2, M_POLL1, M_PEEK, M_N };
static const char *names[M_N] = {"block", "epoll", "timeout", "lazy", "poll2", "poll1", "peek"};

struct waiter {
    enum mode m;
    int fd, ep, efd;
    struct lazytimer t;
};

static void waiter_init(struct waiter *w, enum mode m, int fd)
{
    w->m = m;
    w->fd = fd;
    w->ep = epoll_create1(EPOLL_CLOEXEC);
    w->efd = eventfd(0, EFD_CLOEXEC);
    struct epoll_event e = {.events = EPOLLIN, .data.fd = fd};
    if (w->ep < 0 || epoll_ctl(w->ep, EPOLL_CTL_ADD, fd, &e) < 0 || lazytimer_open(&w->t) < 0) {
        perror("waitcost: setup");
        exit(1);
    }
    e.data.fd = w->t.fd;
    if (epoll_ctl(w->ep, EPOLL_CTL_ADD, w->t.fd, &e) < 0) {
        perror("waitcost: epoll_ctl");
        exit(1);
    }
}

/* Receive one datagram the mode's way. */
static ssize_t rx(struct waiter *w, char *buf, size_t n, struct sockaddr_in *from)
{
    socklen_t l = sizeof *from;
    if (w->m == M_BLOCK) return recvfrom(w->fd, buf, n, 0, (struct sockaddr *)from, &l);
    for (;;) {
        struct epoll_event e[2];
        int k;
        if (w->m == M_TIMEOUT) {
            struct timespec ts = {0, (long)MS};
            k = epoll_pwait2(w->ep, e, 2, &ts, NULL);
        } else if (w->m == M_POLL2) { /* as libpspreload's wait: its eventfd and the socket */
            struct pollfd p[2] = {{.fd = w->efd, .events = POLLIN},
                                  {.fd = w->fd, .events = POLLIN}};
            k = poll(p, 2, -1) < 0 ? -1 : 0;
        } else if (w->m == M_POLL1) { /* the socket alone */
            struct pollfd p = {.fd = w->fd, .events = POLLIN};
            k = poll(&p, 1, -1) < 0 ? -1 : 0;
        } else if (w->m == M_PEEK) { /* wait for a datagram without taking it */
            k = recv(w->fd, NULL, 0, MSG_PEEK) < 0 ? -1 : 0;
        } else if (w->m == M_LAZY) {
            k = lazytimer_wait(&w->t, w->ep, e, 2, now_ns() + MS);
        } else {
            k = epoll_wait(w->ep, e, 2, -1);
        }
        for (int i = 0; i < k; i++)
            if (e[i].data.fd == w->t.fd) lazytimer_fired(&w->t);
        l = sizeof *from;
        ssize_t r = recvfrom(w->fd, buf, n, MSG_DONTWAIT, (struct sockaddr *)from, &l);
        if (r >= 0) return r;
    }
}

static int udp_on(struct sockaddr_in *a)
{
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    socklen_t l = sizeof *a;
    if (fd < 0 || bind(fd, (struct sockaddr *)a, l) < 0 ||
        getsockname(fd, (struct sockaddr *)a, &l) < 0) {
        perror("waitcost: socket");
        exit(1);
    }
    return fd;
}

/* One round in one mode: median RTT in ns. */
static uint64_t round_trip(enum mode m)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    struct sockaddr_in ca = sa;
    int sfd = udp_on(&sa);
    pid_t pid = fork();
    if (pid < 0) {
        perror("waitcost: fork");
        exit(1);
    }
    if (pid == 0) { /* echo until killed */
        struct waiter w;
        waiter_init(&w, m, sfd);
        char buf[64];
        struct sockaddr_in from;
        for (;;) {
            ssize_t r = rx(&w, buf, sizeof buf, &from);
            if (r >= 0) sendto(sfd, buf, (size_t)r, 0, (struct sockaddr *)&from, sizeof from);
        }
    }
    close(sfd);
    int fd = udp_on(&ca);
    struct waiter w;
    waiter_init(&w, m, fd);
    static uint64_t t[TRIPS];
    char buf[64] = {0};
    struct sockaddr_in from;
    for (int i = 0; i < TRIPS + WARMUP; i++) {
        uint64_t s = now_ns();
        sendto(fd, buf, 16, 0, (struct sockaddr *)&sa, sizeof sa);
        if (rx(&w, buf, sizeof buf, &from) < 0) {
            perror("waitcost: recv");
            exit(1);
        }
        if (i >= WARMUP) t[i - WARMUP] = now_ns() - s;
    }
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    close(fd);
    close(w.ep);
    lazytimer_close(&w.t);
    qsort(t, TRIPS, sizeof t[0], cmp_u64);
    return t[TRIPS / 2];
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 8;
    if (rounds < 1 || rounds > 100 || argc > 2) {
        fprintf(stderr, "usage: waitcost [ROUNDS (1..100, default 8)]\n");
        return 2;
    }
    uint64_t med[M_N][100];
    for (int r = 0; r < rounds; r++) {
        printf("round %d:", r + 1);
        for (int m = 0; m < M_N; m++) {
            med[m][r] = round_trip((enum mode)m);
            printf("  %s %.2f us", names[m], (double)med[m][r] / 1e3);
            fflush(stdout);
        }
        printf("\n");
    }
    printf("median over %d rounds, 16 B UDP RTT on loopback:", rounds);
    for (int m = 0; m < M_N; m++) {
        qsort(med[m], (size_t)rounds, sizeof med[m][0], cmp_u64);
        printf("  %s %.2f us", names[m], (double)med[m][rounds / 2] / 1e3);
    }
    printf("\n");
    return 0;
}
