/*
 * icmpforge.h - the forged ICMP port unreachable of the hardening issue's point 2: type 3,
 * code 3, quoting the IPv4 and UDP headers of a datagram from src:sport to dst:dport
 * (addresses and ports in network order), with its checksum. Sent on a raw socket (root),
 * it makes the kernel report the error to the socket bound at src:sport. Used by
 * test/rdp/failure.c (test_icmp_forged) and test/tools/icmpforge.c.
 */
#ifndef PSCLUSTER_TEST_ICMPFORGE_H
#define PSCLUSTER_TEST_ICMPFORGE_H

#include <netinet/in.h>
#include <stdint.h>
#include <string.h>

#define ICMPFORGE_LEN (8 + 20 + 8)

static inline void icmpforge_build(uint8_t pkt[ICMPFORGE_LEN], struct in_addr src, uint16_t sport,
                                   struct in_addr dst, uint16_t dport)
{
    memset(pkt, 0, ICMPFORGE_LEN);
    pkt[0] = 3; /* destination unreachable */
    pkt[1] = 3; /* port unreachable */
    uint8_t *ip = pkt + 8, *udp = pkt + 28;
    ip[0] = 0x45;
    ip[3] = 20 + 8 + 100; /* the quoted datagram's total length */
    ip[8] = 64;
    ip[9] = IPPROTO_UDP;
    memcpy(ip + 12, &src, 4);
    memcpy(ip + 16, &dst, 4);
    memcpy(udp, &sport, 2);
    memcpy(udp + 2, &dport, 2);
    udp[5] = 8 + 100;
    uint32_t sum = 0;
    for (size_t i = 0; i < ICMPFORGE_LEN; i += 2) sum += (uint32_t)(pkt[i] << 8 | pkt[i + 1]);
    while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
    pkt[2] = (uint8_t)(~sum >> 8);
    pkt[3] = (uint8_t)~sum;
}

#endif
