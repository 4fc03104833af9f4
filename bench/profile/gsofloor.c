/*
 * gsofloor.c - the floor under any UDP protocol's large-message round trip: a 64 KiB
 * ping-pong over plain UDP, cut into MTU-sized datagrams sent with UDP GSO (UDP_SEGMENT) in
 * slices and read coalesced (UDP_GRO), blocking on both sides, no header, no MAC, no
 * reliability; against kernel TCP (TCP_NODELAY, blocking) in alternating rounds. Whatever a
 * datagram protocol adds comes on top of the "udp" figure. No loss is expected (veth or
 * loopback, large socket buffers); a lost datagram ends the run after 2 s.
 *   cc -std=gnu11 -O2 -o gsofloor bench/profile/gsofloor.c
 *   gsofloor server ADDR PORT                 (echoes TCP and UDP on PORT until killed)
 *   gsofloor client ADDR PORT [MTU [SLICE [ROUNDS [SIZE [DGRAM]]]]]
 * MTU 1500, SLICE 32768 bytes per GSO send, 8 rounds, SIZE 65536 by default. DGRAM larger
 * than the MTU's UDP payload (MTU - 28) measures the other way to fewer datagrams: each send
 * of SLICE bytes is one datagram, cut into IP fragments by the kernel, no GSO.
 * bench/profile/gsofloor.sh builds it and runs it across two network namespaces.
 */
#include "probe.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <netinet/udp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif
#ifndef UDP_GRO
#define UDP_GRO 104
#endif

#define TRIPS  2000
#define WARMUP 100
#define MAXMSG (1 << 20)

static unsigned char buf[MAXMSG], rbuf[MAXMSG];

static void die(const char *what)
{
    perror(what);
    exit(1);
}

/* Send SIZE bytes to TO as datagrams of SEG bytes, SLICE bytes per GSO send; SEG 0: each
 * slice is one datagram (IP-fragmented when larger than the MTU). */
static void udp_send(int fd, const struct sockaddr_in *to, size_t size, int seg, size_t slice)
{
    for (size_t off = 0; off < size;) {
        size_t n = size - off < slice ? size - off : slice;
        char cm[CMSG_SPACE(sizeof(uint16_t))] = {0};
        struct iovec iov = {buf + off, n};
        struct msghdr mh = {.msg_name = (void *)to,
                            .msg_namelen = sizeof *to,
                            .msg_iov = &iov,
                            .msg_iovlen = 1,
                            .msg_control = seg ? cm : NULL,
                            .msg_controllen = seg ? sizeof cm : 0};
        if (seg) {
            struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
            c->cmsg_level = SOL_UDP;
            c->cmsg_type = UDP_SEGMENT;
            c->cmsg_len = CMSG_LEN(sizeof(uint16_t));
            uint16_t s = (uint16_t)seg;
            memcpy(CMSG_DATA(c), &s, sizeof s);
        }
        if (sendmsg(fd, &mh, 0) != (ssize_t)n) die("gsofloor: sendmsg");
        off += n;
    }
}

/* Read coalesced datagrams until SIZE bytes came; returns the sender. */
static struct sockaddr_in udp_recv(int fd, size_t size)
{
    struct sockaddr_in from;
    for (size_t got = 0; got < size;) {
        socklen_t l = sizeof from;
        ssize_t r = recvfrom(fd, rbuf + got, MAXMSG - got, 0, (struct sockaddr *)&from, &l);
        if (r < 0) die("gsofloor: recvfrom");
        got += (size_t)r;
    }
    return from;
}

static void full_io(int fd, unsigned char *p, size_t n, int wr)
{
    while (n) {
        ssize_t r = wr ? write(fd, p, n) : read(fd, p, n);
        if (r <= 0) die(wr ? "gsofloor: write" : "gsofloor: read");
        p += r;
        n -= (size_t)r;
    }
}

static int udp_sock(const struct sockaddr_in *a)
{
    int fd = socket(AF_INET, SOCK_DGRAM, 0), on = 1, big = 8 << 20;
    if (fd < 0 || setsockopt(fd, SOL_UDP, UDP_GRO, &on, sizeof on) < 0 ||
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &big, sizeof big) < 0 ||
        setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &big, sizeof big) < 0 ||
        bind(fd, (const struct sockaddr *)a, sizeof *a) < 0)
        die("gsofloor: udp socket");
    return fd;
}

static void nodelay(int fd)
{
    int on = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
}

static _Noreturn void server(struct sockaddr_in *a)
{
    int u = udp_sock(a), l = socket(AF_INET, SOCK_STREAM, 0), on = 1;
    if (l < 0 || setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on) < 0 ||
        bind(l, (struct sockaddr *)a, sizeof *a) < 0 || listen(l, 4) < 0)
        die("gsofloor: tcp listen");
    if (fork() == 0) { /* UDP echo: size, slice and datagram size (4 bytes each), then messages */
        prctl(PR_SET_PDEATHSIG, SIGKILL); /* ends with the server */
        for (;;) {
            uint32_t sz;
            struct sockaddr_in from;
            socklen_t fl = sizeof from;
            if (recvfrom(u, &sz, sizeof sz, 0, (struct sockaddr *)&from, &fl) != sizeof sz)
                continue;
            size_t size = ntohl(sz);
            if (recvfrom(u, &sz, sizeof sz, 0, NULL, NULL) != sizeof sz) continue;
            size_t slice = ntohl(sz);
            if (recvfrom(u, &sz, sizeof sz, 0, NULL, NULL) != sizeof sz) continue;
            int seg = (int)ntohl(sz);
            for (;;) {
                from = udp_recv(u, size);
                udp_send(u, &from, size, seg, slice);
            }
        }
    }
    for (;;) { /* TCP echo, one client at a time */
        int c = accept(l, NULL, NULL);
        if (c < 0) continue;
        nodelay(c);
        uint32_t sz;
        full_io(c, (unsigned char *)&sz, sizeof sz, 0);
        size_t size = ntohl(sz);
        for (;;) {
            unsigned char *p = rbuf;
            size_t n = size;
            ssize_t r = 0;
            while (n && (r = read(c, p, n)) > 0) p += r, n -= (size_t)r;
            if (n) break;
            full_io(c, rbuf, size, 1);
        }
        close(c);
    }
}

static int usage(void)
{
    fprintf(stderr, "usage: gsofloor server ADDR PORT | client ADDR PORT [MTU [SLICE [ROUNDS "
                    "[SIZE [DGRAM]]]]]\n");
    return 2;
}

int main(int argc, char **argv)
{
    if (argc < 4) return usage();
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(argv[3]))};
    if (inet_pton(AF_INET, argv[2], &a.sin_addr) != 1) return usage();
    int mtu = argc > 4 ? atoi(argv[4]) : 1500, seg = mtu - 28;
    size_t slice = argc > 5 ? (size_t)atol(argv[5]) : 32768;
    int rounds = argc > 6 ? atoi(argv[6]) : 8;
    size_t size = argc > 7 ? (size_t)atol(argv[7]) : 65536;
    long dgram = argc > 8 ? atol(argv[8]) : seg;
    if (!strcmp(argv[1], "server")) server(&a);
    if (seg < 64 || slice < (size_t)seg || rounds < 1 || rounds > 100 || size < 1 ||
        size > MAXMSG || dgram < 64 || dgram > 65507)
        return usage();
    if (dgram > seg) { /* one IP-fragmented datagram per send, no GSO */
        slice = (size_t)dgram;
        seg = 0;
    } else {
        seg = (int)dgram;
        slice -= slice % (size_t)seg; /* whole datagrams per GSO send */
        if (slice > 64 * (size_t)seg) slice = 64 * (size_t)seg;
        if (slice + 28 > 65535) slice = (65535 - 28) / (size_t)seg * (size_t)seg;
    }
    if (strcmp(argv[1], "client")) return usage();

    struct sockaddr_in me = {.sin_family = AF_INET, .sin_addr.s_addr = INADDR_ANY};
    int u = udp_sock(&me);
    struct timeval tv = {2, 0}; /* a lost datagram ends the run instead of hanging it */
    setsockopt(u, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    uint32_t hdr[3] = {htonl((uint32_t)size), htonl((uint32_t)slice), htonl((uint32_t)seg)};
    for (int i = 0; i < 3; i++) sendto(u, &hdr[i], 4, 0, (struct sockaddr *)&a, sizeof a);
    int t = socket(AF_INET, SOCK_STREAM, 0);
    if (t < 0 || connect(t, (struct sockaddr *)&a, sizeof a) < 0) die("gsofloor: connect");
    nodelay(t);
    full_io(t, (unsigned char *)&hdr[0], 4, 1);
    memset(buf, 0x5a, sizeof buf);
    static uint64_t rt[TRIPS];
    uint64_t med[2][100];
    if (seg)
        printf("size %zu, MTU %d: datagrams of %d B, GSO sends of %zu B\n", size, mtu, seg, slice);
    else
        printf("size %zu, MTU %d: IP-fragmented datagrams of %zu B, no GSO\n", size, mtu, slice);
    for (int r = 0; r < rounds; r++) {
        for (int m = 0; m < 2; m++) {
            for (int i = 0; i < TRIPS + WARMUP; i++) {
                uint64_t s = now_ns();
                if (m == 0) {
                    udp_send(u, &a, size, seg, slice);
                    udp_recv(u, size);
                } else {
                    full_io(t, buf, size, 1);
                    full_io(t, rbuf, size, 0);
                }
                if (i >= WARMUP) rt[i - WARMUP] = now_ns() - s;
            }
            qsort(rt, TRIPS, sizeof rt[0], cmp_u64);
            med[m][r] = rt[TRIPS / 2];
        }
        printf("round %d: udp %.2f us  tcp %.2f us  ratio %.3f\n", r + 1, med[0][r] / 1e3,
               med[1][r] / 1e3, (double)med[0][r] / (double)med[1][r]);
        fflush(stdout);
    }
    double ratio[100];
    for (int r = 0; r < rounds; r++) ratio[r] = (double)med[0][r] / (double)med[1][r];
    for (int i = 1; i < rounds; i++)
        for (int j = i; j > 0 && ratio[j] < ratio[j - 1]; j--) {
            double x = ratio[j];
            ratio[j] = ratio[j - 1];
            ratio[j - 1] = x;
        }
    printf("median ratio udp/tcp over %d rounds: %.3f\n", rounds, ratio[rounds / 2]);
    return 0;
}
