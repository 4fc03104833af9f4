/*
 * harness.h - shared harness of the RDP protocol tests (build/test/rdp-tests).
 *
 * The tests run several RDP endpoints inside one process and one thread, each bound to its own
 * loopback address 127.0.0.N (N plays the part of a node) and a port from a per-process range.
 * The pieces:
 *
 *  - h_ep: an endpoint plus a log of every callback it got (recv, connected, lost + reason,
 *    undeliverable, can_send, stalled and resumed), in order, with a timestamp. Received and
 * undeliverable messages are checked against the generator below as they arrive; the log keeps the
 *    message index and whether every byte was right.
 *  - messages: message k of a stream with seed s is fully determined by (s, k): bytes 0..7 are
 *    k big-endian, 8..11 the length big-endian, the rest comes from a xorshift PRNG seeded by
 *    (s, k). A message shorter than 12 bytes is the first len bytes of the PRNG output alone;
 *    its index is then inferred as "previous index of the same kind from that node + 1".
 *  - h_stream: a sender of messages 0..total-1 that honours EAGAIN: it stops at EAGAIN and
 *    continues only after the endpoint's can_send callback for that node fired.
 *  - h_run: the event loop. It polls every endpoint's fd (ppoll with a timeout taken from the
 *    earliest rdp_next_deadline, in ns) plus extra fds (the UDP proxy), calls rdp_process on
 *    every endpoint, and stops when a condition callback returns true or a deadline passes.
 *  - h_proxy: a UDP man-in-the-middle on two more loopback addresses that forwards packets both
 *    ways, keeps a copy of them, and can later inject any captured packet again (replay).
 *
 * Nothing here sleeps for a fixed time: every wait is h_run with a condition and a deadline.
 */
#ifndef PSCLUSTER_TEST_RDP_HARNESS_H
#define PSCLUSTER_TEST_RDP_HARNESS_H

#include "rdp.h"

#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>

#define H_MAX_NODES 16 /* node ids used by the tests are 1 .. H_MAX_NODES-1 */
#define H_MSG_HDR   12 /* index (8) + length (4) at the start of a generated message */
#define H_IDX_NONE  UINT64_MAX

#define H_MS(x) ((uint64_t)(x)*1000000ull)
#define H_S(x)  ((uint64_t)(x)*1000000000ull)

/* 1 when RDP_TEST_QUICK is set (the sanitizer run): tests scale their counts down. */
int h_quick(void);
/* n, or n/10 (at least 1) in quick mode. */
uint64_t h_scale(uint64_t n);
/* 1 when RDP_TEST_SOAK is set (make soak): the long runs take their full size. */
int h_soak(void);

/* ---- messages ---- */

/* The default seed of the stream from node src to node dst. */
uint64_t h_stream_seed(uint32_t src, uint32_t dst);
/* Write message k of stream seed into buf (len bytes). */
void h_msg_fill(void *buf, size_t len, uint64_t seed, uint64_t k);
/* The index a message claims (bytes 0..7), or H_IDX_NONE if len < H_MSG_HDR. */
uint64_t h_msg_index(const void *buf, size_t len);
/* 1 if buf is exactly message k of stream seed with length len. */
int h_msg_check(const void *buf, size_t len, uint64_t seed, uint64_t k);
/* Length of message k: log-uniform in [min, max], i.e. the exponent is uniform, so that
 * small and large (multi-fragment) messages are both common. Sizes uniform in 1 B..1 MiB
 * would average 512 KiB and make the tests needlessly slow; log-uniform averages ~75 KiB. */
size_t h_msg_size(uint64_t seed, uint64_t k, size_t min, size_t max);
/* A deterministic 32-byte key from a seed. */
void h_key(unsigned char key[RDP_KEY_BYTES], uint64_t seed);
/* A fast deterministic PRNG (xorshift64*) for test decisions. */
uint64_t h_rand(uint64_t *state);

/* ---- endpoints and their logs ---- */

/* H_STALLED, H_RESUMED: the stalled callback (rdp_config.persist_max_us), true and false */
enum h_ev_type {
    H_RECV,
    H_CONNECTED,
    H_LOST,
    H_UNDELIV,
    H_CANSEND,
    H_STALLED,
    H_RESUMED,
    H_EV__COUNT
};

struct h_event {
    enum h_ev_type type;
    uint32_t node;
    int reason;        /* H_LOST: enum rdp_lost_reason */
    int ok;            /* H_RECV/H_UNDELIV: content verified */
    uint64_t idx;      /* H_RECV/H_UNDELIV: message index */
    size_t len;        /* H_RECV/H_UNDELIV: message length */
    uint64_t t_ns;     /* rdp_now_ns() when the callback ran */
    uint64_t accepted; /* messages to node accepted by h_send/h_stream at that moment */
    int in_send;       /* the callback ran inside rdp_send() of the harness */
};

struct h_ep {
    rdp_t *rdp; /* NULL once closed; the log stays */
    struct rdp_config cfg;
    uint32_t node;
    struct sockaddr_in addr;
    char name[16];
    uint64_t rx_seed[H_MAX_NODES]; /* stream seed expected from each node */
    uint64_t tx_seed[H_MAX_NODES]; /* stream seed of messages to each node */
    uint64_t accepted[H_MAX_NODES];
    int in_send;
    /* echo: answer every received message with the same bytes from inside the recv callback,
     * with rdp_sendv from a copy in three pieces that is overwritten and freed as soon as
     * rdp_sendv returns */
    int echo;
    uint64_t echo_errors; /* rdp_sendv failures of the echo */
    /* called inside the recv callback once a message is logged (and echoed) */
    void (*on_recv)(struct h_ep *ep, uint32_t node);
    /* called inside the stalled callback once it is logged */
    void (*on_stalled)(struct h_ep *ep, uint32_t node, int stalled);
    /* pieces (h_open_pair_pieces): messages come through recvv, are checked and joined here */
    int pieces;
    unsigned char *joined;
    size_t joined_cap;
    uint64_t multi_piece; /* messages that came in more than one piece */
    int max_pieces;       /* the most pieces of one message */
    uint64_t bad_pieces;  /* empty pieces, or pieces that do not add up to the length */
    /* the log */
    struct h_event *ev;
    size_t nev, cap;
    uint64_t count[H_EV__COUNT][H_MAX_NODES];
    uint64_t bad_content;              /* recv/undeliverable that failed h_msg_check */
    uint64_t last_idx[2][H_MAX_NODES]; /* last recv / undeliverable index, for short msgs */
};

/* Defaults for the tests: rdp_config_defaults plus nothing else (kept as one place to tune). */
void h_config(struct rdp_config *cfg);
/* Open an endpoint for node on 127.0.0.host. port 0: take the next free port of this
 * process's range (20000 + pid % 20000 upward, retrying on EADDRINUSE). cfg may be NULL for
 * h_config() defaults; its node_id, bind and key are overwritten. 0 or -1 (message printed). */
int h_ep_open(struct h_ep *ep, uint32_t node, int host, uint16_t port,
              const unsigned char key[RDP_KEY_BYTES], const struct rdp_config *cfg);
/* rdp_close, keeping the log. */
void h_ep_close(struct h_ep *ep);
/* h_ep_close and free the log. */
void h_ep_free(struct h_ep *ep);
/* Add b to a's peer table under b's real address. */
int h_add_peer(struct h_ep *a, const struct h_ep *b);
/* Add node at 127.0.0.host:port to a's peer table. */
int h_add_peer_at(struct h_ep *a, uint32_t node, int host, uint16_t port);
/* Each in the other's peer table. */
int h_pair(struct h_ep *a, struct h_ep *b);
/* rdp_send of message k (of ep->tx_seed[node]) with length len; counts it as accepted. The
 * buffer is overwritten right after rdp_send returns, as a caller may. */
int h_send(struct h_ep *ep, uint32_t node, uint64_t k, size_t len);
/* Events of one type from one node. */
uint64_t h_count(const struct h_ep *ep, enum h_ev_type t, uint32_t node);
/* The i-th event (0-based) of a type from a node, or NULL. */
const struct h_event *h_find(const struct h_ep *ep, enum h_ev_type t, uint32_t node, uint64_t i);
/* Print the log summary of ep to stderr (on failure). */
void h_dump(const struct h_ep *ep, const char *why);
/* Sum of the endpoint's drop counters. */
uint64_t h_drops_total(const struct rdp_stats *st);
/* 127.0.0.host:port */
void h_addr(struct sockaddr_in *sa, int host, uint16_t port);
/* A port on 127.0.0.host that nothing is bound to (bound once, then closed). */
uint16_t h_free_port(int host);
/* A plain UDP socket bound on 127.0.0.host (address in *sa) that the test never reads: a
 * peer that is there for the kernel (no ICMP) but silent. fd, or -1. */
int h_silent_socket(int host, struct sockaddr_in *sa);

/* ---- stream sender ---- */

struct h_stream {
    struct h_ep *ep;
    uint32_t to;
    uint64_t total, next; /* messages 0..total-1; next is the send cursor */
    size_t min_len, max_len;
    int blocked;             /* EAGAIN seen, waiting for can_send */
    uint64_t cansend_mark;   /* can_send count when it blocked */
    uint64_t eagains;        /* EAGAIN returns */
    int error;               /* errno of an unexpected rdp_send failure */
    uint64_t first_send_ns;  /* rdp_now_ns() of the first accepted message */
    uint64_t max_per_pump;   /* 0: no limit; else at most this many sends per h_stream_pump */
    size_t max_queued;       /* largest rdp_peer_stats.queued seen right after a send */
    size_t max_queued_slack; /* largest (queued - len of the message just sent) */
};

void h_stream_init(struct h_stream *s, struct h_ep *ep, uint32_t to, uint64_t total, size_t min_len,
                   size_t max_len);
/* Send as many messages as possible. Returns the number accepted now (or -1 if an rdp_send
 * failed with something other than EAGAIN; s->error then holds errno). */
int h_stream_pump(struct h_stream *s);
/* Length of message k of this stream. */
size_t h_stream_len(const struct h_stream *s, uint64_t k);

/* Two streams, A (node 1) -> B (node 2) and back. h_duplex_done is an h_run condition: it
 * pumps both and is true when both arrived completely, or when something failed (a lost
 * connection, bad content, a send error): then failed is set. */
struct h_duplex {
    struct h_stream ab, ba;
    struct h_ep *a, *b;
    int failed;
};
int h_duplex_done(void *duplex);
/* A (node 1, config ca) and B (node 2, config cb), same key: n messages of 1..max_len bytes
 * A->B and n/4 back, checked to arrive complete, in order, once, on one connection each way.
 * st[0], ps[0]: A's endpoint and peer (B) statistics; st[1], ps[1]: B's. 0, or -1 after a
 * CUnit failure that kept the run from happening. */
int h_duplex_run(const struct rdp_config *ca, const struct rdp_config *cb, uint64_t n,
                 size_t max_len, struct rdp_stats st[2], struct rdp_peer_stats ps[2]);

/* Check that rx got exactly messages [first, end) from from_node: by index, in order, each
 * once, every byte right, and nothing else from that node. Prints the first problem. */
int h_check_recv_seq(const struct h_ep *rx, uint32_t from_node, uint64_t first, uint64_t end);

/* ---- event loop ---- */

struct h_proxy;

struct h_net {
    struct h_ep *eps[8];
    int neps;
    struct h_proxy *proxies[2];
    int nproxies;
    uint64_t iterations;
    int error; /* rdp_process failed (errno) */
};

void h_net_init(struct h_net *n);
void h_net_add(struct h_net *n, struct h_ep *ep);
void h_net_add_proxy(struct h_net *n, struct h_proxy *p);
/* A fresh net with node 1 alone (A, on 127.0.0.1). 0, or -1 after a CUnit failure. */
int h_open_one(struct h_net *n, struct h_ep *a, const unsigned char key[RDP_KEY_BYTES],
               const struct rdp_config *cfg);
/* The common start of a test: a net with node 1 (A, on 127.0.0.1, key ka) and node 2 (B, on
 * 127.0.0.2, key kb), each in the other's peer table. 0, or -1 after a CUnit failure. */
int h_open_pair(struct h_net *n, struct h_ep *a, struct h_ep *b,
                const unsigned char ka[RDP_KEY_BYTES], const unsigned char kb[RDP_KEY_BYTES],
                const struct rdp_config *cfg);
/* The same with a configuration for each side (ca for A, cb for B). */
int h_open_pair_cfg(struct h_net *n, struct h_ep *a, struct h_ep *b,
                    const unsigned char ka[RDP_KEY_BYTES], const unsigned char kb[RDP_KEY_BYTES],
                    const struct rdp_config *ca, const struct rdp_config *cb);
/* h_open_pair_cfg with both endpoints taking their messages through the recvv callback, in
 * pieces (counted in multi_piece, checked in bad_pieces, then handled as by recv). */
int h_open_pair_pieces(struct h_net *n, struct h_ep *a, struct h_ep *b,
                       const unsigned char ka[RDP_KEY_BYTES], const unsigned char kb[RDP_KEY_BYTES],
                       const struct rdp_config *ca, const struct rdp_config *cb);
/* A silent node 2 in A's peer table: h_silent_socket on 127.0.0.2 (address in *sa). Its fd,
 * or -1 after a CUnit failure. */
int h_silent_peer(struct h_ep *a, struct sockaddr_in *sa);

/* Condition: called before every poll; return nonzero to stop. It may send. */
typedef int (*h_cond_fn)(void *ctx);
/* A ready-made condition: ep got at least n messages from node from. */
struct h_wait_recv {
    struct h_ep *ep;
    uint32_t from;
    uint64_t n;
};
int h_cond_recv(void *wait_recv);
/* Another: ep lost node (its lost callback) and reported at least n messages to it
 * undeliverable. */
struct h_wait_lost {
    struct h_ep *ep;
    uint32_t node;
    uint64_t n;
};
int h_cond_lost(void *wait_lost);

/* Run until cond returns true (1), or until timeout_ns passed (0), or rdp_process fails (-1).
 * cond may be NULL: then run for the whole timeout (only for "nothing must happen" windows). */
int h_run(struct h_net *n, h_cond_fn cond, void *ctx, uint64_t timeout_ns);
/* One pass: ppoll with zero timeout, rdp_process on every endpoint, proxies drained. */
int h_step(struct h_net *n);
/* n messages of len bytes from A (node 1) to B (node 2), pumped for at most 10 s; checks
 * (CUnit) that all arrived, in order, once. */
void h_oneway(struct h_net *net, struct h_ep *a, struct h_ep *b, uint64_t n, size_t len);

/* ---- UDP proxy ---- */

struct h_pkt {
    unsigned char *data;
    size_t len;
};

struct h_proxy {
    /* side a: the endpoint A, which talks to the proxy's address pa (B's stand-in);
     * side b: the endpoint B, which talks to the proxy's address pb (A's stand-in). */
    int fd_pa, fd_pb;
    struct sockaddr_in pa, pb; /* the proxy's own addresses */
    struct sockaddr_in real_a, real_b;
    int forward;          /* 0: swallow everything */
    struct h_pkt *cap[2]; /* [0]: A->B, [1]: B->A, in arrival order */
    size_t ncap[2], capcap[2];
    size_t cap_limit; /* keep at most this many per direction */
    uint64_t fwd[2], injected[2], foreign;
};

/* Proxy between a (at a->addr) and b (at b->addr): listens on 127.0.0.host_pa (stand-in for
 * b, to be put in a's peer table) and 127.0.0.host_pb (stand-in for a, in b's table). */
int h_proxy_open(struct h_proxy *p, const struct h_ep *a, const struct h_ep *b, int host_pa,
                 int host_pb);
void h_proxy_close(struct h_proxy *p);
/* Read and forward whatever is waiting on both sockets. */
void h_proxy_drain(struct h_proxy *p);
/* Send captured packet i of direction dir (0: A->B, 1: B->A) again, from the proxy address
 * the receiver trusts. */
int h_proxy_inject(struct h_proxy *p, int dir, size_t i);
/* Send raw bytes to the endpoint on side dir's receiver (0: to B, 1: to A). */
int h_proxy_send_raw(struct h_proxy *p, int dir, const void *buf, size_t len);

#endif
