/*
 * rdp.h - the reliable datagram protocol (public API).
 *
 * RDP carries messages of up to RDP_MAX_MSG bytes between cluster nodes over one UDP socket.
 * Every message sent to a node arrives there complete, in order and exactly once, or the sender
 * is told it was not delivered (the undeliverable callback), together with the loss of the
 * connection. Connections are implicit: the first rdp_send() to a node opens one.
 *
 * The library owns no thread and no event loop. The caller polls rdp_fd() for readability
 * (and error), arms a timer at rdp_next_deadline(), and calls rdp_process() whenever either
 * fires. The deadline moves at nearly every message: a timer set lazily (lazytimer.h), not
 * a timeout on every wait, keeps that from costing a timer reprogramming per wait. All
 * callbacks run from inside rdp_process() or rdp_send(); they may call rdp_send() and the
 * query functions, but never rdp_close().
 *
 * Wire format, state machine and security model: docs/rdp-protocol.md.
 */
#ifndef PSCLUSTER_RDP_H
#define PSCLUSTER_RDP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/uio.h>

#define RDP_MAX_MSG   (1u << 20) /* largest message, bytes */
#define RDP_KEY_BYTES 32         /* cluster key length */
#define RDP_MAX_NODES 65536      /* node ids are 0 .. RDP_MAX_NODES-1 */

/* A peer is an endpoint of a node: its id, in every call and callback that names a peer,
 * is RDP_PEER(node, endpoint). Endpoint 0 is the node's daemon, so a daemon's peer id is
 * its node id. A node may run many endpoints (each process under the preload library has
 * its own), each with its own UDP port, connections and keys. */
#define RDP_PEER(node, ep) ((uint32_t)(uint16_t)(ep) << 16 | (uint16_t)(node))
#define RDP_PEER_NODE(id)  ((uint16_t)(id))
#define RDP_PEER_EP(id)    ((uint16_t)((id) >> 16))

typedef struct rdp rdp_t;

/* Why a connection was lost (the reason argument of the lost callback). */
enum rdp_lost_reason {
    RDP_LOST_TIMEOUT = 1, /* max_retrans retransmissions went unanswered */
    RDP_LOST_UNREACH,     /* ICMP error (port or host unreachable) for a connection attempt;
                           * an established connection takes ICMP errors as hints only */
    RDP_LOST_RESTART,     /* the peer came back with a new incarnation or connection */
    RDP_LOST_CLOSED,      /* rdp_disconnect() or rdp_remove_peer() on this side */
};

/* Why an incoming packet was dropped. Counted per peer where the peer is known,
 * and per endpoint always. */
enum rdp_drop_reason {
    RDP_DROP_SHORT,     /* shorter than a header plus MAC */
    RDP_DROP_VERSION,   /* unknown protocol version */
    RDP_DROP_MALFORMED, /* bad type, flags, or length fields */
    RDP_DROP_UNKNOWN,   /* source node not in the peer table, or not addressed to us */
    RDP_DROP_ADDRESS,   /* source address differs from the peer's configured address */
    RDP_DROP_MAC,       /* MAC does not verify (wrong key, corruption, forgery) */
    RDP_DROP_REPLAY,    /* packet number already seen or too old */
    RDP_DROP_STALE,     /* connection ids of an old or unknown connection */
    RDP_DROP_DUPLICATE, /* data already received (retransmission that crossed an ACK) */
    RDP_DROP_WINDOW,    /* data beyond the advertised receive window */
    RDP_DROP_NOBUF,     /* no buffer memory to hold it */
    RDP_DROP__COUNT
};

/* The packet MAC. Every node verifies ChaCha20-Poly1305; AES-256-GCM, 2-5x faster per
 * packet up to a few KiB where the CPU has AES-NI and PCLMUL, is used toward a peer when both
 * sides allow it (negotiated in the handshake, so nodes with different CPUs interoperate). */
enum rdp_mac_alg {
    RDP_MAC_CHACHA20POLY1305 = 0, /* config: only ChaCha20-Poly1305 */
    RDP_MAC_AES256GCM = 1,        /* config: AES-256-GCM where the peer allows it; this CPU must
                                     have it */
    RDP_MAC_AUTO = 2,             /* config (default): AES-256-GCM where both sides have it */
};
/* true if this CPU can use alg */
int rdp_mac_available(enum rdp_mac_alg alg);

/* Names, as in configuration files and command lines: "chacha20poly1305", "aes256gcm",
 * "auto"; parse: 0, or -1 for an unknown name. */
const char *rdp_mac_alg_name(enum rdp_mac_alg alg);
int rdp_mac_alg_parse(const char *name, enum rdp_mac_alg *alg);

/* Which library computes the MACs. Every one gives the same tags, so the choice is local to
 * a node, never on the wire, and matters for speed only (docs/rdp-protocol.md). */
enum rdp_mac_impl {
    RDP_MAC_IMPL_BEST = 0, /* default: Intel IPsec-MB where built in and usable, else portable */
    RDP_MAC_IMPL_PORTABLE, /* libsodium below 2 KiB, OpenSSL's libcrypto from 2 KiB on */
    RDP_MAC_IMPL_IPSECMB,  /* Intel IPsec-MB (ENOTSUP where it is not built in) */
};
/* "best", "portable", "ipsec-mb"; parse: 0, or -1 for an unknown name. */
const char *rdp_mac_impl_choice_name(enum rdp_mac_impl impl);
int rdp_mac_impl_parse(const char *name, enum rdp_mac_impl *impl);
/* true if impl can run here (built in, and the CPU has what it needs) */
int rdp_mac_impl_available(enum rdp_mac_impl impl);

/* What rdp_open() accepts (EINVAL outside it), for the fields of struct rdp_config that have
 * limits: mtu RDP_MTU_MIN..RDP_MTU_MAX; rto_min_us RDP_RTO_MIN_US_MIN..rto_max_us (so
 * rto_max_us is at least that too); max_retrans RDP_MAX_RETRANS_MIN..RDP_MAX_RETRANS_MAX;
 * persist_max_us 0 or rto_max_us..RDP_PERSIST_MAX_US; sndbuf and rcvbuf at least
 * RDP_BUF_MIN. A program that takes them from its user checks them against these, not
 * copies of them. */
#define RDP_MTU_MIN         576u
#define RDP_MTU_MAX         65536u
#define RDP_RTO_MIN_US_MIN  1u
#define RDP_MAX_RETRANS_MIN 1u
#define RDP_MAX_RETRANS_MAX 1000u
#define RDP_BUF_MIN         65536u
#define RDP_PERSIST_MAX_US  120000000u /* TCP's ceiling of its persist and retransmit timers */

struct rdp_config {
    uint32_t node_id;                 /* this endpoint's node id */
    uint16_t endpoint;                /* this endpoint's id on its node (0: the daemon) */
    struct sockaddr_storage bind;     /* address and UDP port to bind */
    socklen_t bind_len;               /* 0: bind_len of bind's family */
    unsigned char key[RDP_KEY_BYTES]; /* cluster key: rdp_open derives the handshake key from
                                       * it and keeps no copy */
    unsigned mtu;               /* link MTU; datagrams are at most mtu-28 bytes (default 1500) */
    unsigned rto_min_us;        /* retransmission timeout floor (default 2000) */
    unsigned rto_max_us;        /* retransmission timeout ceiling (default 200000) */
    unsigned rto_init_us;       /* before the first RTT sample (default 20000) */
    unsigned max_retrans;       /* retransmissions of one packet before the peer is lost (10) */
    unsigned persist_max_us;    /* 0 (default): a peer silent for max_retrans + 1 expiries of
                                 * the retransmission timer is lost (RDP_LOST_TIMEOUT). Else
                                 * it is only stalled (the stalled callback), and probed on,
                                 * at intervals that double from rto_max_us up to this, for as
                                 * long as the caller keeps it (rdp_disconnect gives it up):
                                 * a peer that stops (a process stopped, debugged, swapped)
                                 * is not a dead one, as TCP's persist timer knows */
    unsigned ack_delay_us;      /* delayed ACK (default 100) */
    size_t sndbuf;              /* per peer: bytes queued or in flight (default 4 MiB) */
    size_t rcvbuf;              /* per peer: bytes held out of order (default 4 MiB) */
    size_t sock_buf;            /* SO_SNDBUF/SO_RCVBUF of the UDP socket (default 8 MiB) */
    enum rdp_mac_alg mac;       /* which MACs to use (default RDP_MAC_AUTO) */
    enum rdp_mac_impl mac_impl; /* which library computes them (default RDP_MAC_IMPL_BEST) */
    int offload;                /* 1 (default): UDP GSO/GRO where datagrams are MTU-sized; 0: off */
    uint64_t incarnation;       /* announced in handshakes, for the peer's information (its
                                 * connections never depend on it, so a clock stepped back is
                                 * harmless); 0 (default): CLOCK_REALTIME in ns at rdp_open */
};

/* Fill every field with its default (node_id 0, no bind address, zero key). */
void rdp_config_defaults(struct rdp_config *cfg);

/* Upper bound, in microseconds, between the first unanswered transmission to a silent peer
 * and the lost callback, for this configuration. */
uint64_t rdp_lost_bound_us(const struct rdp_config *cfg);

struct rdp_callbacks {
    void *ctx;
    /* A complete message from node. msg is valid only during the call. */
    void (*recv)(void *ctx, uint32_t node, const void *msg, size_t len);
    /* Optional; when set, it replaces recv: a complete message of len bytes in pieces,
     * iov[0..iovcnt) (iovcnt >= 1), valid only during the call. A packet RDP read into a
     * buffer of its own is a piece as it is, without a copy; bytes it had to copy (datagrams
     * of a coalesced read) are joined into runs. The caller copies the bytes once, to where
     * it wants them, or passes the pieces on with rdp_sendv. */
    void (*recvv)(void *ctx, uint32_t node, const struct iovec *iov, int iovcnt, size_t len);
    /* A connection to node was established (first, or after a loss or restart). */
    void (*connected)(void *ctx, uint32_t node);
    /* The connection to node is gone; undeliverable callbacks for its pending messages
     * follow, one each, in the order they were sent. */
    void (*lost)(void *ctx, uint32_t node, enum rdp_lost_reason why);
    /* A message accepted by rdp_send() whose delivery was not acknowledged before the
     * connection was lost: it will not be delivered from now on, but it may have been (if only
     * its acknowledgement was lost). */
    void (*undeliverable)(void *ctx, uint32_t node, const void *msg, size_t len);
    /* rdp_send() to node failed with EAGAIN before; there is room again. */
    void (*can_send)(void *ctx, uint32_t node);
    /* Optional, with rdp_config.persist_max_us: node has answered nothing for max_retrans + 1
     * expiries (stalled true): its connection and messages are kept, and probed on; or it
     * answers again after that (false: the congestion window is back where it was, since a
     * silent peer is not a congested path). The callback may call rdp_disconnect. */
    void (*stalled)(void *ctx, uint32_t node, bool stalled);
};

/* Open an endpoint: bind the UDP socket and seed connection ids. NULL and errno on error
 * (EINVAL: bad configuration, ENOTSUP: MAC or MAC implementation not available here). */
rdp_t *rdp_open(const struct rdp_config *cfg, const struct rdp_callbacks *cb);
void rdp_close(rdp_t *rdp);

/* Name this endpoint (node id, endpoint id) after rdp_open, before its first peer is added
 * (EBUSY after): a process learns its endpoint id from its daemon only after it told the
 * daemon the UDP port that rdp_open bound. 0, or -1 and errno. */
int rdp_set_endpoint(rdp_t *rdp, uint32_t node, uint16_t endpoint);

/* Move the endpoint's socket to the lowest free descriptor number at or above min
 * (close-on-exec): a library inside another program keeps its descriptors out of the
 * program's way. 0, or -1 and errno. */
int rdp_move_fd(rdp_t *rdp, int min);

/* The peer table: which peer (RDP_PEER(node, endpoint)) lives at which address. 0, or -1
 * and errno (EINVAL: bad address, EEXIST: id already present). */
int rdp_add_peer(rdp_t *rdp, uint32_t node, const struct sockaddr *sa, socklen_t len);
/* The same with a key of this peer's own instead of rdp_config.key (NULL: that one): its
 * connections' handshakes and keys derive from it. A local daemon hands a process such a key
 * for each peer endpoint it may talk to (both daemons derive it from the cluster key, which
 * the process never sees), so that a process holding another pair's key, or none, cannot
 * talk on this pair's connections or forge their packets. */
int rdp_add_peer_key(rdp_t *rdp, uint32_t peer, const struct sockaddr *sa, socklen_t len,
                     const unsigned char *key);
/* Remove a peer; a connection is reported lost (RDP_LOST_CLOSED) first. */
int rdp_remove_peer(rdp_t *rdp, uint32_t node);
/* Drop the connection to node (reported lost with RDP_LOST_CLOSED); a later send reconnects. */
int rdp_disconnect(rdp_t *rdp, uint32_t node);

/* Queue a message for node. msg is read only during the call: the caller may reuse it as soon
 * as rdp_send returns. 0, or -1 and errno: EAGAIN (send queue full: wait for can_send),
 * EMSGSIZE (len > RDP_MAX_MSG), EHOSTUNREACH (node not in the peer table). */
int rdp_send(rdp_t *rdp, uint32_t node, const void *msg, size_t len);
/* rdp_send of the bytes of iov[0..iovcnt), in order, as one message (EINVAL also for
 * iovcnt < 0). */
int rdp_sendv(rdp_t *rdp, uint32_t node, const struct iovec *iov, int iovcnt);

/* The socket to poll for EPOLLIN (errors arrive as EPOLLERR). */
int rdp_fd(const rdp_t *rdp);
/* Absolute CLOCK_MONOTONIC time in ns at which rdp_process() must run next; UINT64_MAX if
 * no timer is armed. */
uint64_t rdp_next_deadline(const rdp_t *rdp);
/* Read every datagram waiting, handle ICMP errors, run due timers, flush output.
 * 0, or -1 and errno on a fatal socket error. */
int rdp_process(rdp_t *rdp);
/* Acknowledge now what has arrived (from every peer), and send what is queued, instead of at
 * the end of the round: for a caller about to block for a while, also inside a callback (a
 * daemon that forks and waits for the exec). Else the ACKs wait for the block, and the
 * peers' retransmission timers (a tail-loss probe after about two RTTs) fire meanwhile. */
void rdp_flush(rdp_t *rdp);

/* Reading in a thread of the caller's own without holding the caller's lock, so that a
 * thread waiting for a message sleeps in the one system call that reads it (libpspreload's
 * waits), as a thread blocked in a socket's recv does:
 *   rdp_rx_claim (under the lock): the receive slots are made ready and reserved to the
 *     claimer; until rdp_rx_done, rdp_process and rdp_flush read nothing, so a datagram
 *     that comes meanwhile stays in the socket for the claimer. 0, or -1 and errno (EBUSY:
 *     claimed already). Without buffer memory, what the claimer takes is dropped.
 *   rdp_rx_wait (without the lock, only by the claimer): sleeps in the kernel until at
 *     least one datagram came, and takes up to a batch. Reads done, or -1 and errno: EINTR
 *     after a signal handler without SA_RESTART (the kernel resumes the read after one
 *     with it, as a socket's), or a fatal socket error.
 *   rdp_rx_done (under the lock): handles the n datagrams (none if n <= 0), ends the claim
 *     and processes as rdp_process. 0, or -1 and errno.
 * A datagram of no bytes is a wake-up (for a thread in rdp_rx_wait, sent by another thread
 * to rdp_fd's address): not a packet, only counted (rdp_stats.wakeups). */
int rdp_rx_claim(rdp_t *rdp);
int rdp_rx_wait(rdp_t *rdp);
int rdp_rx_done(rdp_t *rdp, int n);

/* Current CLOCK_MONOTONIC time in ns (the clock of rdp_next_deadline). */
uint64_t rdp_now_ns(void);

enum rdp_conn_state { RDP_CLOSED, RDP_SYN_SENT, RDP_ESTABLISHED };

struct rdp_peer_stats {
    enum rdp_conn_state state;
    uint64_t msgs_sent, msgs_recv;       /* whole messages */
    uint64_t bytes_sent, bytes_recv;     /* message payload bytes */
    uint64_t pkts_sent, pkts_recv;       /* datagrams, including ACKs and retransmissions */
    uint64_t retransmits;                /* data packets sent again */
    uint64_t out_of_order;               /* data packets that arrived ahead of a gap */
    uint64_t timeouts;                   /* retransmission timer expiries */
    uint64_t connects, losses;           /* connections established, connections lost */
    uint64_t drops[RDP_DROP__COUNT];     /* incoming packets dropped, by reason */
    uint32_t srtt_us, rttvar_us, rto_us; /* RTT estimator */
    uint32_t cwnd, peer_wnd, inflight;   /* packets */
    uint32_t rcv_wnd, held;              /* packets: the window we advertise, and those we hold
                                          * out of order now (bounded by our buffers) */
    enum rdp_mac_alg mac;                /* the MAC of the packets sent on this connection */
    uint32_t payload;                    /* message bytes per data packet to this peer: the
                                          * smaller of the two MTUs' (from the handshake) */
    size_t queued;                       /* bytes accepted by rdp_send and not yet acked */
    uint64_t icmp_errors;                /* ICMP errors naming the peer's address (hints) */
    uint64_t key_tx_id, key_rx_id;       /* fingerprints of the connection's two keys (not the
                                          * keys): one end's tx is the other's rx; 0: none */
    bool interactive; /* taken for request/response: ACKs wait for an answer to carry them */
    bool stalled;     /* persist_max_us: silent past the bound, probed on (rdp_config) */
    uint64_t stalls;  /* times it stalled */
};

struct rdp_stats {
    uint64_t pkts_sent, pkts_recv, bytes_sent, bytes_recv;
    uint64_t retransmits;
    uint64_t drops[RDP_DROP__COUNT];
    uint64_t icmp_errors;
    /* fault injector: packets dropped, duplicated, reordered, corrupted (both directions) */
    uint64_t inj_drop, inj_dup, inj_reorder, inj_corrupt;
    /* offload: sends that carried more than one datagram (UDP GSO), reads that returned more
     * than one (UDP GRO) */
    uint64_t gso_sends, gro_reads;
    uint64_t wakeups; /* datagrams of no bytes (rdp_rx_wait) */
};

int rdp_peer_stats(const rdp_t *rdp, uint32_t node, struct rdp_peer_stats *st);
void rdp_stats(const rdp_t *rdp, struct rdp_stats *st);
const char *rdp_drop_reason_name(enum rdp_drop_reason r);
const char *rdp_lost_reason_name(enum rdp_lost_reason r);
/* Which library computes this endpoint's MACs (the tags are the same with each; the choice is
 * local): "ipsec-mb/avx512", "ipsec-mb/avx2", ... (Intel IPsec-MB, x86-64), or "portable"
 * (libsodium for small packets, OpenSSL's libcrypto for large ones). */
const char *rdp_mac_impl(const rdp_t *rdp);

/* Fault injection, for tests and benchmarks: only through rdp_set_faults, never from the
 * environment (every program linked with RDP, a user's under the preload library too, could
 * otherwise be made to drop packets by whoever sets its environment). Probabilities in
 * [0,1], each decided per packet and applied in every direction that dir selects (the same
 * probabilities in both). */
enum rdp_fault_dir { RDP_FAULT_TX = 1, RDP_FAULT_RX = 2, RDP_FAULT_BOTH = 3 };
struct rdp_faults {
    double drop, dup, reorder, corrupt;
    unsigned dir;  /* enum rdp_fault_dir mask */
    uint64_t seed; /* 0: seeded from the clock */
};
/* Switch the injector on (any probability > 0) or off (all zero). 0, or -1/EINVAL. */
int rdp_set_faults(rdp_t *rdp, const struct rdp_faults *f);
/* Parse "drop=0.2,dup=0.1,reorder=0.1,corrupt=0.01,dir=both,seed=7", for a tool that takes
 * faults from its command line. 0, or -1/EINVAL. */
int rdp_parse_faults(const char *spec, struct rdp_faults *f);

#endif
