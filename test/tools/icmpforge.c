/*
 * icmpforge.c - sends one forged ICMP port unreachable (type 3, code 3) to TO, quoting the
 * IPv4 and UDP headers of a datagram from SRC:SPORT to DST:DPORT, as an off-path spoofer
 * would to end SRC's traffic to DST. Needs root (a raw socket). For psid_hostile.sh.
 *
 *   icmpforge SRC SPORT DST DPORT TO     e.g. icmpforge 127.0.0.1 24000 127.0.0.2 24000 127.0.0.1
 */
#include "icmpforge.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    struct in_addr src, dst;
    struct sockaddr_in to = {.sin_family = AF_INET};
    if (argc != 6 || inet_pton(AF_INET, argv[1], &src) != 1 ||
        inet_pton(AF_INET, argv[3], &dst) != 1 || inet_pton(AF_INET, argv[5], &to.sin_addr) != 1) {
        fprintf(stderr, "usage: icmpforge SRC SPORT DST DPORT TO\n");
        return 2;
    }
    uint8_t pkt[ICMPFORGE_LEN];
    icmpforge_build(pkt, src, htons((uint16_t)atoi(argv[2])), dst, htons((uint16_t)atoi(argv[4])));
    int fd = socket(AF_INET, SOCK_RAW, IPPROTO_ICMP);
    if (fd < 0 || sendto(fd, pkt, sizeof pkt, 0, (struct sockaddr *)&to, sizeof to) < 0) {
        perror("icmpforge");
        return 1;
    }
    close(fd);
    return 0;
}
