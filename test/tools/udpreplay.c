/*
 * udpreplay.c - records RDP handshake datagrams on the loopback interface and sends them
 * again later, unchanged (source address and port included), for test/shell/psid_replay.sh:
 * an on-path recording replayed after a restart must not open a connection.
 *
 *   udpreplay capture -p PORT [-T syn|synack|any] [-n N] [-t SECONDS] FILE
 *     as root (AF_PACKET): the first N (default 8) UDP datagrams to port PORT on lo whose
 *     payload is an RDP packet of that type (default syn), within SECONDS (default 10),
 *     as IP packets into FILE (each a 4-byte big-endian length, then the packet).
 *     Prints "capturing" once bound (what comes after is seen), then "captured C".
 *   udpreplay send [-c COUNT] FILE
 *     as root (IPPROTO_RAW): each recorded packet COUNT times (default 1). "sent S".
 */
#include "../../rdp/wire.h"
#include "bebytes.h"

#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <netinet/ip.h>
#include <netinet/udp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAXPKT 65536

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static int usage(void)
{
    fprintf(stderr, "usage: udpreplay capture -p PORT [-T syn|synack|any] [-n N] [-t SECONDS] "
                    "FILE\n       udpreplay send [-c COUNT] FILE\n");
    return 2;
}

static int capture(unsigned port, int type, int want, double seconds, const char *file)
{
    int pf = socket(AF_PACKET, SOCK_DGRAM | SOCK_CLOEXEC, htons(ETH_P_IP));
    struct sockaddr_ll ll = {.sll_family = AF_PACKET,
                             .sll_protocol = htons(ETH_P_IP),
                             .sll_ifindex = (int)if_nametoindex("lo")};
    FILE *out = fopen(file, "wb");
    if (pf < 0 || !out || bind(pf, (struct sockaddr *)&ll, sizeof ll) < 0) {
        printf("capture failed: %s\n", strerror(errno));
        return 1;
    }
    printf("capturing\n"); /* bound: every packet from now on is seen */
    fflush(stdout);
    static uint8_t buf[MAXPKT];
    int got = 0;
    double end = now() + seconds;
    while (got < want && now() < end) {
        struct pollfd p = {.fd = pf, .events = POLLIN};
        if (poll(&p, 1, 100) != 1) continue;
        struct sockaddr_ll from;
        socklen_t fl = sizeof from;
        ssize_t n = recvfrom(pf, buf, sizeof buf, 0, (struct sockaddr *)&from, &fl);
        size_t hl = sizeof(struct iphdr) + sizeof(struct udphdr);
        if (n < (ssize_t)hl || from.sll_pkttype != PACKET_HOST) continue;
        const struct iphdr *ip = (const void *)buf;
        if (ip->protocol != IPPROTO_UDP || ip->ihl != 5) continue;
        const struct udphdr *udp = (const void *)(buf + sizeof *ip);
        if (ntohs(udp->dest) != port) continue;
        struct rdp_hdr h;
        enum rdp_drop_reason why;
        if (!rdp_hdr_decode(buf + hl, (size_t)n - hl, &h, &why)) continue;
        if (type && h.type != type) continue;
        uint8_t len[4];
        be_put32(len, (uint32_t)n);
        if (fwrite(len, 4, 1, out) != 1 || fwrite(buf, (size_t)n, 1, out) != 1) break;
        got++;
    }
    fclose(out);
    close(pf);
    printf("captured %d\n", got);
    return got ? 0 : 1;
}

static int send_all(int count, const char *file)
{
    FILE *in = fopen(file, "rb");
    int raw = socket(AF_INET, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_RAW);
    if (!in || raw < 0) {
        printf("send failed: %s\n", strerror(errno));
        return 1;
    }
    static uint8_t buf[MAXPKT];
    uint8_t len[4];
    int sent = 0;
    while (fread(len, 4, 1, in) == 1) {
        uint32_t n = be_get32(len);
        if (n > sizeof buf || n < sizeof(struct iphdr) || fread(buf, n, 1, in) != 1) break;
        const struct iphdr *ip = (const void *)buf;
        struct sockaddr_in to = {.sin_family = AF_INET, .sin_addr.s_addr = ip->daddr};
        /* on lo the kernel leaves the UDP checksum to an offload that never happens (the
         * recording holds only the pseudo-header's part): 0 is IPv4's "no checksum" */
        if (n >= sizeof(struct iphdr) + sizeof(struct udphdr))
            ((struct udphdr *)(buf + sizeof(struct iphdr)))->check = 0;
        for (int i = 0; i < count; i++)
            if (sendto(raw, buf, n, 0, (struct sockaddr *)&to, sizeof to) >= 0) sent++;
    }
    fclose(in);
    close(raw);
    printf("sent %d\n", sent);
    return sent ? 0 : 1;
}

int main(int argc, char **argv)
{
    if (argc < 3) return usage();
    const char *mode = argv[1];
    unsigned port = 0;
    int type = RDP_T_SYN, want = 8, count = 1, opt;
    double seconds = 10;
    optind = 2;
    while ((opt = getopt(argc, argv, "p:T:n:t:c:")) != -1) {
        switch (opt) {
        case 'p':
            port = (unsigned)atoi(optarg);
            break;
        case 'T':
            type = !strcmp(optarg, "syn")      ? RDP_T_SYN
                   : !strcmp(optarg, "synack") ? RDP_T_SYNACK
                   : !strcmp(optarg, "any")    ? 0
                                               : -1;
            if (type < 0) return usage();
            break;
        case 'n':
            want = atoi(optarg);
            break;
        case 't':
            seconds = atof(optarg);
            break;
        case 'c':
            count = atoi(optarg);
            break;
        default:
            return usage();
        }
    }
    if (optind != argc - 1) return usage();
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (!strcmp(mode, "capture") && port && port < 65536 && want > 0)
        return capture(port, type, want, seconds, argv[optind]);
    if (!strcmp(mode, "send") && count > 0) return send_all(count, argv[optind]);
    return usage();
}
