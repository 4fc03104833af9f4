/*
 * opts.h - rdpbench's command line: what each role was asked to do (usage: rdpbench --help,
 * docs in the usage text of opts.c).
 */
#ifndef PSCLUSTER_RDPBENCH_OPTS_H
#define PSCLUSTER_RDPBENCH_OPTS_H

#include "rdp.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

struct rb_opts {
    bool server;
    struct sockaddr_storage addr; /* server ADDR:PORT */
    socklen_t addrlen;
    struct sockaddr_storage bind; /* client --bind */
    socklen_t bindlen;
    bool have_bind;
    int mode;
    uint32_t smin, smax;
    uint64_t count;
    int64_t warmup; /* -1: default */
    uint64_t seed;
    bool have_seed;
    const char *keyfile;
    unsigned char key[RDP_KEY_BYTES];
    double loss, dup, reorder, corrupt;
    unsigned mtu; /* 0: default */
    unsigned rto_min_us, max_retrans;
    size_t sndbuf, rcvbuf, sock_buf; /* 0: library default */
    bool vs_tcp, json, once, quiet;
    bool no_offload;
    bool joined;  /* RDP's recv callback (messages joined) instead of recvv (pieces) */
    int mac_impl; /* enum rdp_mac_impl */
    unsigned timeout_s;
    bool have_timeout; /* else the server adopts the client's --timeout */
    int mac;           /* enum rdp_mac_alg; -1: not given (server: follow the client) */
};

/* Parse argv into *o (zeroed first). --help prints the usage and exits 0; a bad command line
 * prints why and the usage and exits 2. The key and the seed are not filled in. */
void rb_opts_parse(int argc, char **argv, struct rb_opts *o);
/* An unsigned number (decimal, 0x hex, 0 octal) in lo..hi into *out: true, else false. */
bool rb_parse_u64(const char *s, uint64_t lo, uint64_t hi, uint64_t *out);

#endif
