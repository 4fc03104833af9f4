/*
 * swimfloor.c - the floor under an idle psid's CPU in swim mode: N processes on loopback
 * addresses 127.0.0.1..N, each doing only SWIM's packet pattern in an epoll loop with a
 * timerfd (as psid's loop does): every PERIOD_MS a 72-byte probe to a random other member,
 * a 72-byte ack for every probe received. No MAC, no protocol state, no other timer: what
 * the kernel and this VM charge for the wake-ups and packets alone. Each member prints the
 * nanoseconds it ran (/proc/self/schedstat) and its wake-ups over SECONDS, then exits.
 *   cc -std=gnu11 -O2 -o swimfloor bench/profile/swimfloor.c
 *   swimfloor N PORT [SECONDS [PERIOD_MS]]      (10 s, 100 ms)
 * Run it in a network namespace of its own on a quiet machine (root), e.g.
 *   unshare -n sh -c 'ip link set lo up; ./swimfloor 16 7000 20'
 * and sum the lines (bench/RESULTS.md, "an idle psid in swim mode against its floor").
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static uint64_t ran_ns(void)
{
    unsigned long long ns = 0;
    FILE *f = fopen("/proc/self/schedstat", "r");
    if (f) {
        if (fscanf(f, "%llu", &ns) != 1) ns = 0;
        fclose(f);
    }
    return ns;
}

static struct sockaddr_in member(int i, int port)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(0x7f000001u + (uint32_t)i);
    return a;
}

static int run(int self, int n, int port, int secs, int period_ms)
{
    int s = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
    struct sockaddr_in me = member(self, port);
    if (s < 0 || bind(s, (struct sockaddr *)&me, sizeof me) < 0) {
        perror("swimfloor: bind");
        return 1;
    }
    int ep = epoll_create1(0), tf = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK);
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = s};
    epoll_ctl(ep, EPOLL_CTL_ADD, s, &ev);
    ev.data.fd = tf;
    epoll_ctl(ep, EPOLL_CTL_ADD, tf, &ev);
    long pns = (long)period_ms * 1000000L;
    /* a random phase, as SWIM's */
    srand((unsigned)(self * 7919 + getpid()));
    long first = 1000000L + (long)(rand() % period_ms) * 1000000L;
    struct itimerspec it = {{pns / 1000000000L, pns % 1000000000L},
                            {first / 1000000000L, first % 1000000000L}};
    timerfd_settime(tf, 0, &it, NULL);
    uint8_t pkt[72] = {1}, buf[512];
    uint64_t wakes = 0, t0 = ran_ns();
    struct timespec start, now;
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (;;) {
        struct epoll_event got[8];
        int k = epoll_wait(ep, got, 8, 1000);
        wakes++;
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (now.tv_sec - start.tv_sec >= secs) break;
        for (int i = 0; i < k; i++) {
            if (got[i].data.fd == tf) {
                uint64_t x;
                if (read(tf, &x, sizeof x) < 0) continue;
                int to = rand() % (n - 1);
                if (to >= self) to++;
                struct sockaddr_in a = member(to, port);
                pkt[0] = 1; /* a probe */
                sendto(s, pkt, sizeof pkt, 0, (struct sockaddr *)&a, sizeof a);
                continue;
            }
            for (;;) {
                struct sockaddr_in from;
                socklen_t fl = sizeof from;
                ssize_t r = recvfrom(s, buf, sizeof buf, 0, (struct sockaddr *)&from, &fl);
                if (r <= 0) break;
                if (buf[0] == 1) { /* its ack */
                    pkt[0] = 2;
                    sendto(s, pkt, sizeof pkt, 0, (struct sockaddr *)&from, fl);
                }
            }
        }
    }
    double el = (double)(now.tv_sec - start.tv_sec) + (double)(now.tv_nsec - start.tv_nsec) / 1e9;
    printf("%d %llu %.3f %llu\n", self, (unsigned long long)(ran_ns() - t0), el,
           (unsigned long long)wakes);
    fflush(stdout); /* (the child leaves by _exit) */
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: swimfloor N PORT [SECONDS [PERIOD_MS]]\n");
        return 2;
    }
    int n = atoi(argv[1]), port = atoi(argv[2]);
    int secs = argc > 3 ? atoi(argv[3]) : 10, period = argc > 4 ? atoi(argv[4]) : 100;
    if (n < 2 || n > 250 || port <= 0 || port > 65535 || secs < 1 || period < 1) {
        fprintf(stderr, "usage: swimfloor N PORT [SECONDS [PERIOD_MS]]\n");
        return 2;
    }
    fflush(stdout);
    for (int i = 0; i < n; i++)
        if (fork() == 0) _exit(run(i, n, port, secs, period));
    int rc = 0, st;
    while (wait(&st) > 0) rc |= !WIFEXITED(st) || WEXITSTATUS(st);
    return rc;
}
