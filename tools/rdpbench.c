/*
 * rdpbench - RDP benchmark and end-to-end verifier: ping-pong latency and stream throughput
 * between two RDP endpoints, optionally side by side with kernel TCP on the same workload.
 *
 *   rdpbench server ADDR:PORT [options]
 *   rdpbench client ADDR:PORT --mode pingpong|stream --size BYTES|MIN-MAX --count N [options]
 *
 * Roles. The server listens on TCP ADDR:PORT (the control channel) and, per client, opens an
 * RDP endpoint (node 0) on UDP ADDR:PORT; the client is RDP node 1. A fresh endpoint per
 * session keeps every run's statistics its own; the server then waits for the next client
 * (--once: exit after one). The client binds RDP on --bind ADDR[:PORT]; by default on the
 * local address of its control connection (the address the kernel routes towards the server:
 * 127.0.0.1 on loopback, its own namespace address across namespaces) with an ephemeral port.
 *
 * This file is the main only; the benchmark lives in rdpbench/, a file per job:
 *   opts.c     the command line          addr.c     numeric addresses
 *   key.c      the RDP key, its check    ctl.c      the control protocol's wire format
 *   gen.c      messages and verifier     stats.c    RDP counters, printed and as JSON
 *   tcp.c      kernel TCP, the baseline  report.c   RTT and throughput summaries
 *   session.c  a session: endpoint, callbacks, the wait, fatal errors
 *   channel.c  the control connection    server.c, client.c   the two roles
 */
#include "../rdpbench/bench.h"
#include "psversion.h"
#include "../rdpbench/key.h"
#include "../rdpbench/opts.h"

#include <signal.h>
#include <sodium.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    if (psc_version_asked(argc, argv, "rdpbench")) return 0;
    static struct rb_opts o;
    rb_opts_parse(argc, argv, &o);
    if (sodium_init() < 0) {
        fprintf(stderr, "rdpbench: libsodium failed to initialize\n");
        return 1;
    }
    signal(SIGPIPE, SIG_IGN);
    FILE *info = (!o.server && o.json) ? stderr : stdout;
    if (o.keyfile) {
        rb_key_load(o.keyfile, o.key);
    } else {
        rb_key_fixed(o.key);
        fprintf(info, "%s: no --key given: using the fixed benchmark key (public, not secret)\n",
                o.server ? "server" : "client");
    }
    if (!o.have_seed) randombytes_buf(&o.seed, sizeof o.seed);
    return o.server ? rb_server_main(&o) : rb_client_main(&o);
}
