/*
 * hbsend.c - sends one authentic heartbeat (psid/hbwire.h, with the key every psid of the
 * configuration derives) claiming to be node NODE, from address FROM to node TO's
 * heartbeat port: what a node with the key, or a replayer, could send. For
 * test/shell/psid_membership.sh: a beat from the wrong address must not count.
 *
 *   hbsend CONFIG NODE FROM TO [INC SEQ]   e.g. hbsend psid.conf 3 127.0.0.9 0
 * INC and SEQ: the incarnation and sequence number (default: the clock, as a new
 * incarnation); the same beat sent again is what a replayer sends.
 */
#include "../../psid/hbwire.h"
#include "psconf.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    struct psconf c;
    char err[512];
    if (argc != 5 && argc != 7) {
        fprintf(stderr, "usage: hbsend CONFIG NODE FROM TO [INC SEQ]\n");
        return 2;
    }
    if (psconf_load(argv[1], &c, err, sizeof err) < 0) {
        fprintf(stderr, "hbsend: %s\n", err);
        return 1;
    }
    const struct psconf_node *to = psconf_node_lookup(&c, argv[4]);
    struct sockaddr_in from = {.sin_family = AF_INET};
    if (!to || inet_pton(AF_INET, argv[3], &from.sin_addr) != 1) {
        fprintf(stderr, "hbsend: bad node or address\n");
        return 2;
    }
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t now = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
    struct hb h = {.type = HB_BEAT,
                   .node = (uint32_t)atoi(argv[2]),
                   .incarnation = argc == 7 ? strtoull(argv[5], NULL, 10) : now,
                   .seq = argc == 7 ? strtoull(argv[6], NULL, 10) : now,
                   .cpus = 1};
    uint8_t key[32], pkt[HB_LEN];
    hb_key_derive(c.key, key);
    hb_encode(pkt, &h, key);
    struct sockaddr_in dst;
    memcpy(&dst, &to->addr, sizeof dst);
    dst.sin_port = htons((uint16_t)c.hb_port);
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    if (fd < 0 || bind(fd, (struct sockaddr *)&from, sizeof from) < 0 ||
        sendto(fd, pkt, sizeof pkt, 0, (struct sockaddr *)&dst, sizeof dst) !=
            (ssize_t)sizeof pkt) {
        perror("hbsend");
        return 1;
    }
    close(fd);
    psconf_free(&c);
    return 0;
}
