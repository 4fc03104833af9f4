/*
 * bench.h - one rdpbench session: the state both roles share (struct rb_bench) and the
 * calls between the files that make up a session.
 *
 *   session.c  the session's life: setup, the RDP endpoint and its callbacks, the wait for
 *              the next event, progress checks, fatal errors
 *   channel.c  the control connection: frames out, frames in and what each one means
 *   server.c   the server: HELLO, the TCP echo/sink child, a session per client
 *   client.c   the client: the runs over RDP and TCP, the report
 *   report.c   round-trip and throughput summaries, printed and as JSON
 *
 * The roles: the server listens on TCP ADDR:PORT (the control channel) and, per client,
 * opens an RDP endpoint (node 0) on UDP ADDR:PORT; the client is RDP node 1. Any mismatch,
 * an undeliverable or lost callback, or a stall longer than --timeout prints what went wrong
 * and exits 1, on both sides (the detecting side tells the other over the control channel).
 */
#ifndef PSCLUSTER_RDPBENCH_BENCH_H
#define PSCLUSTER_RDPBENCH_BENCH_H

#include "ctl.h"
#include "gen.h"
#include "opts.h"
#include "psloop.h"
#include "rdp.h"
#include "stats.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/types.h>

#define RB_NODE_SRV 0
#define RB_NODE_CLI 1
#define RB_STEP_NS  100000000ull /* longest single wait: progress checks run this often */
#define RB_TCP_ACK  8            /* stream sink's final acknowledgement: u64 count */
#define RB_NSEC     1000000000ull

struct rb_bench {
    const struct rb_opts *o;
    bool server;
    const char *role; /* "server" or "client", in messages */
    bool in_fatal;
    FILE *out; /* human-readable output */
    rdp_t *rdp;
    uint32_t peer;
    struct loop *loop; /* the session's descriptors and RDP's deadlines (psloop.h) */
    int ctl;
    uint8_t cbuf[RB_CTL_HDR + RB_CTL_MAX_BODY];
    size_t clen;
    bool ctl_eof, aborted;
    uint64_t progress_ns;

    /* run parameters: client from options, server from HELLO */
    int mode;
    uint32_t smin, smax;
    uint64_t count, warmup, total, seed;
    unsigned mtu, timeout_s;
    unsigned peer_mtu; /* client: the server's (packets carry the smaller one's payload) */
    int mac;
    const char *mac_impl; /* rdp_mac_impl() of our endpoint, kept past rdp_close */
    bool vs_tcp;
    struct rb_gen gen;
    bool gen_ok;

    /* receive side */
    uint64_t recv_next, recv_bytes, recv_ns;
    bool teardown; /* losses no longer matter: the run is over */
    uint64_t cansend_gen;

    /* server: an echo waiting for room in the send queue */
    uint8_t *pend;
    size_t pend_len;
    bool pend_on;

    /* control state */
    bool got_hello, got_ready, got_done, got_fin, got_stats, got_tcp_start, got_tcp_ready,
        got_tcp_result, stats_sent, tcp_started;
    uint64_t done_ns, fin_ns;
    struct sockaddr_storage peer_addr; /* the other side's RDP address */
    socklen_t peer_addrlen;
    uint16_t data_port;
    bool peer_faults;
    struct rb_stats my_stats, peer_stats;
    uint32_t tcp_status;
    int dlisten, pidfd, errpipe;
    pid_t child;

    /* client: RDPBENCH_TEST_FAULT, what the sender does wrong on purpose, at which message */
    enum { TF_NONE, TF_SWAP, TF_DUP, TF_FLIP } fault;
    uint64_t fault_at;
};

/* session.c */
/* Print "rdpbench: ROLE: error: ..." (with the endpoint's state if a run was under way),
 * tell the other side, end the TCP child, exit 1. b may be NULL. */
void rb_fatal(struct rb_bench *b, const char *fmt, ...)
    __attribute__((noreturn, format(printf, 2, 3)));
/* rb_fatal with what and strerror(errno). */
void rb_sys_fatal(struct rb_bench *b, const char *what) __attribute__((noreturn));
void rb_bench_init(struct rb_bench *b, const struct rb_opts *o, bool server);
void rb_bench_close_loop(struct rb_bench *b);
/* The session's RDP endpoint as node, bound to bind, with every tunable of the options. */
rdp_t *rb_open_rdp(struct rb_bench *b, uint32_t node, const struct sockaddr_storage *bind,
                   socklen_t bindlen);
bool rb_want_faults(const struct rb_opts *o);
/* The fault injector of the options on this side (seeded from the seed and salt). */
void rb_set_faults(struct rb_bench *b, uint64_t salt);
/* What a descriptor of the session is: readable means RDP input, a control frame, the
 * server's TCP child ended. */
enum rb_watch { RB_WATCH_RDP, RB_WATCH_CTL, RB_WATCH_CHILD };
void rb_watch(struct rb_bench *b, int fd, enum rb_watch what);
void rb_unwatch(struct rb_bench *b, int fd);
/* Wait for the next event (at most max_ns), then handle it: control frames, the child's
 * exit, RDP input and timers (one round of the loop). */
void rb_step(struct rb_bench *b, uint64_t max_ns);
/* rb_fatal if nothing happened for --timeout seconds (or, on the client, the server went
 * away) while doing what. */
void rb_check_progress(struct rb_bench *b, const char *what);
/* Bytes queued towards the peer. */
size_t rb_rdp_queued(struct rb_bench *b);

/* channel.c */
/* Send one frame (blocking up to the timeout when the socket is full). 0, or -1 and errno. */
int rb_ctl_send(struct rb_bench *b, uint8_t type, const void *body, size_t len);
void rb_ctl_send_or_die(struct rb_bench *b, uint8_t type, const void *body, size_t len);
/* Read what the control connection has and act on every whole frame. */
void rb_ctl_read(struct rb_bench *b);

/* server.c */
int rb_server_main(struct rb_opts *o);
/* A HELLO (the session's parameters), checked against this server's options. */
void rb_server_hello(struct rb_bench *b, const uint8_t *p, size_t len);
/* The TCP child ended: its status to the client. */
void rb_server_child_reaped(struct rb_bench *b);
/* A protocol error: the server drops the client, a client ends (rb_fatal). */
void rb_proto_error(struct rb_bench *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* client.c */
int rb_client_main(struct rb_opts *o);

#endif
