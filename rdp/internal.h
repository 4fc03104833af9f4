/*
 * internal.h - the state of an RDP endpoint and of each peer, shared by the modules of rdp/:
 *
 *   endpoint.c  public API: open/close, peer table, rdp_process, timers, statistics
 *   io.c        the UDP socket: recvmmsg/sendmmsg batches, ICMP errors, fault injection
 *   conn.c      the connection state machine: SYN/SYNACK/RST, restarts, loss of a peer
 *   send.c      the send queue: fragmentation, transmission, ACK/SACK processing,
 *               retransmission, congestion and flow control
 *   recv.c      the receive side: reorder buffer, reassembly, delivery, ACK generation
 *
 * Sequence numbers count packets. On the send side a ring holds every packet from the
 * oldest message not yet fully acknowledged (snd_rel) to the newest queued one:
 *
 *   snd_rel <= snd_una <= snd_tx <= snd_nxt
 *   [snd_rel, snd_una)  acknowledged, kept until their whole message is (undeliverable
 *                       reports need the whole message)
 *   [snd_una, snd_tx)   sent at least once, not cumulatively acknowledged (some SACKed)
 *   [snd_tx, snd_nxt)   queued, waiting for window
 *
 * On the receive side rcv_nxt is the next packet to deliver; packets in (rcv_nxt,
 * rcv_nxt + rxcap) wait in a reorder ring, at most rx_hold_max of them (the window counts
 * packets of the agreed size, the hold bound our own buffers). In-order fragments are appended to
 * the reassembly buffer, or, for an application with a recvv callback, kept as they are until the
 * message is complete; a message that fits one packet is delivered straight from it.
 */
#ifndef PSCLUSTER_RDP_INTERNAL_H
#define PSCLUSTER_RDP_INTERNAL_H

#include "auth.h"
#include "fault.h"
#include "pool.h"
#include "rdp.h"
#include "rtt.h"
#include "seq.h"
#include "wire.h"

#include <netinet/in.h>
#include <stdbool.h>
#include <sys/socket.h>

#define RDP_INIT_CWND     16    /* packets */
#define RDP_MIN_CWND      8     /* floor: random loss on a LAN is not congestion */
#define RDP_RX_BATCH      32    /* datagrams per recvmmsg */
#define RDP_TX_BATCH      64    /* datagrams per sendmmsg */
#define RDP_GSO_SEGS      64    /* UDP_MAX_SEGMENTS: datagrams per GSO send */
#define RDP_GSO_BYTES     65000 /* payload bytes per GSO send (an IP packet is at most 64 KiB) */
#define RDP_GRO_BUF       65536 /* receive buffer of one coalesced (GRO) read */
#define RDP_RST_GAP_NS    1000000ull
#define RDP_ACK_DEFER_MAX 64 /* packets an interactive connection leaves unacknowledged */
/* The delayed ACK of a fragment of a longer message (a stream): at most this, whatever
 * ack_delay_us says (that one is for a lone packet, which an answer may carry) */
#define RDP_ACK_DELAY_BULK_US 100u
#define RDP_PIPE_BYTES        32768 /* bytes per send slice of a message on an interactive link */
/* fragment size from which rdp_send sends from the caller's buffer and copies after the send
 * (rdp_buf.ext) */
#define RDP_EXT_MIN 2048

struct rdp_txslot {
    struct rdp_buf *buf; /* the encoded packet (header + payload + MAC room) */
    uint64_t sent_ns;    /* last transmission; 0: never sent */
    uint32_t msg_last;   /* sequence number of the last fragment of this packet's message */
    uint16_t sends;      /* transmissions so far */
    bool sacked;
};

/* A piece of a message received in pieces (recvv): the payload of a packet kept as it was
 * read (buf), or bytes copied into the reassembly buffer (buf NULL: asm_buf + off). */
struct rdp_piece {
    struct rdp_buf *buf;
    uint32_t off, len; /* off: where the piece lies in the message */
};

struct rdp_peer;
struct rdp_txent {
    struct rdp_buf *buf;
    struct rdp_peer *peer;
    bool reorder; /* the injector delays it behind later packets */
};

/* A connection the peer offered (its SYN) while ours is established: the peer restarted, or
 * the SYN is a replay. It replaces ours only when a packet under its keys shows that the
 * peer holds them; until then ours goes on. */
struct rdp_cand {
    struct rdp_half mine, theirs;
    struct rdp_hs hs; /* the peer's handshake */
    uint32_t peer_wnd;
    struct rdp_mac rx; /* checks the peer's first packet */
    uint8_t tx_key[RDP_KEY_BYTES];
    uint64_t ids[2]; /* the keys' fingerprints: tx, rx */
    struct rdp_replay replay;
};

struct rdp_peer {
    uint32_t node; /* the peer id: RDP_PEER(node, endpoint) */
    /* the handshake key with this peer: from its own key (rdp_add_peer_key), else the
     * endpoint's (ep->hkey); see rdp_peer_hkey */
    uint8_t hkey[RDP_KEY_BYTES];
    bool own_hkey;
    struct sockaddr_storage addr;
    socklen_t addrlen;

    enum rdp_conn_state state;
    uint32_t my_conn, peer_conn;
    uint32_t my_iseq;
    uint8_t my_rand[RDP_HS_RAND]; /* this side's random bytes of the connection (attempt) */
    uint64_t peer_inc;            /* peer's incarnation (informational); valid if peer_inc_known */
    bool peer_inc_known;
    /* SYN_SENT: we answered the peer's SYN and hold the keys; its first packet under them
     * establishes the connection (the third message of the handshake) */
    bool peer_known;
    struct rdp_mac key_tx, key_rx; /* the connection's direction keys (auth.h); keyed: set */
    bool keyed;
    struct rdp_cand *cand;    /* a new connection the peer offered while ours is established */
    enum rdp_mac_alg mac_tx;  /* MAC of DATA and ACK to the peer, from its handshake */
    uint32_t payload;         /* DATA payload per packet to the peer: ours, or the peer's
                               * smaller one from its handshake (kept across connections) */
    uint64_t pn_next;         /* next packet number of this connection towards the peer */
    struct rdp_replay replay; /* packet numbers seen on this connection from the peer */
    uint64_t syn_sent_ns;     /* first SYN of this connection attempt */
    uint16_t syn_sends;

    /* send side */
    struct rdp_txslot *tx;
    uint32_t txcap, txmask;
    uint32_t snd_rel, snd_una, snd_tx, snd_nxt;
    uint32_t nsacked; /* SACKed slots in [snd_una, snd_tx) */
    size_t queued;    /* payload bytes in [snd_rel, snd_nxt) */
    uint32_t cwnd, ssthresh, cwnd_acc, peer_wnd;
    bool in_recovery;
    uint32_t recover; /* recovery ends when snd_una passes this */
    bool want_can_send;
    uint64_t rto_at;         /* retransmission deadline (probe or timeout); 0: disarmed */
    bool probed;             /* the tail-loss probe went out since the last progress */
    uint64_t last_rexmit_ns; /* last timeout or probe: no RTT sample from packets sent before */
    uint32_t rto_fails;      /* timer expiries in a row without any progress */
    uint64_t rack_ns;        /* send time of the latest-sent packet known delivered */
    uint32_t rack_seq;       /* and its sequence number (orders packets sent in one round) */
    uint64_t rack_at;        /* when a loss candidate's reordering window ends; 0: none */
    struct rdp_rtt rtt;
    /* persist (rdp_config.persist_max_us): silent past max_retrans + 1 expiries, probed at
     * persist_us (doubling up to the bound); the windows of before the silence, restored
     * when it answers again */
    bool stalled;
    uint32_t persist_us;
    uint32_t undo_cwnd, undo_ssthresh;

    /* receive side */
    struct rdp_buf **rx;
    uint32_t rxcap, rxmask;
    uint32_t rcv_nxt;
    uint32_t rx_held, rx_hold_max; /* packets held out of order; at most (our buffers) */
    uint32_t rx_high;              /* one past the highest sequence held in the ring */
    uint8_t *asm_buf;
    size_t asm_cap, asm_len;
    uint32_t asm_msg_len;
    bool asm_active;
    bool asm_kept;           /* recvv: the message is assembled in pieces, not joined */
    struct rdp_piece *piece; /* recvv: the pieces of the message being assembled */
    struct iovec *piece_iov; /* their bytes, for the callback */
    uint32_t npiece, piece_cap;
    unsigned ack_pending; /* data packets not yet acknowledged */
    bool ack_now;         /* send an ACK at the end of this round */
    uint64_t ack_at;      /* delayed ACK deadline; 0: none */
    /* request/response: the application answered a delivered message within the ACK delay,
     * so ACKs wait for its answer to carry them (until the delayed ACK fires unused). Not a
     * stream: a small message back to a bulk sender (a receiver's credit), or a bulk message
     * while our earlier ones are still unacknowledged (a sender's next), is no answer. */
    bool interactive;
    uint64_t delivered_ns; /* when the last message from the peer was delivered */
    size_t delivered_len;  /* ... and its length */
    bool rx_lone;          /* the last packet in order was a whole message by itself */
    uint64_t rst_sent_ns;

    bool dirty; /* on the endpoint's list of peers to look at after a round */
    struct rdp_peer_stats st;
};

/* The peer table (peers.c): peer id -> peer. */
struct rdp_peers {
    struct rdp_peer **v;
    uint32_t cap, n;
};

struct rdp {
    int fd;
    int family;
    struct rdp_config cfg;
    struct rdp_mac mac; /* the implementation the connections' keys use (keyed at random) */
    uint8_t hkey[RDP_KEY_BYTES]; /* the handshake key (auth.h) */
    struct rdp_callbacks cb;
    uint64_t incarnation;
    uint32_t max_dgram; /* largest datagram we send or accept */
    uint32_t payload;   /* DATA payload per packet */
    struct rdp_pool pool;

    struct rdp_peers peers;   /* by peer id (peers.c) */
    struct rdp_peer **active; /* the same peers, for iteration */
    uint32_t nactive, active_cap;

    struct rdp_injector inj;

    /* transmit batch: packets in sending order; iovecs and sends are built at the flush */
    struct rdp_txent tx[RDP_TX_BATCH];
    unsigned ntx;
    /* the injector's reordered packets: they leave behind the packets of the next flush */
    struct rdp_txent held[RDP_TX_BATCH];
    unsigned nheld;
    struct iovec txiov[3 * RDP_TX_BATCH]; /* one per packet, three for one with ext */
    unsigned txfirst[RDP_TX_BATCH + 1];   /* each packet's first iovec */
    bool tx_error; /* a send failed with an ICMP-reported error: read the error queue */
    /* UDP GSO: a run of packets to one peer leaves in one send of the batch */
    bool gso;
    struct mmsghdr gsom[RDP_TX_BATCH];
    unsigned gsofirst[RDP_TX_BATCH]; /* the first packet of each send */
    union {
        char buf[CMSG_SPACE(sizeof(uint16_t))];
        struct cmsghdr align;
    } gsoctl[RDP_TX_BATCH];

    /* receive batch */
    struct mmsghdr rxm[RDP_RX_BATCH];
    struct iovec rxiov[RDP_RX_BATCH];
    struct rdp_buf *rxbuf[RDP_RX_BATCH];
    struct sockaddr_storage rxaddr[RDP_RX_BATCH];
    unsigned rx_dirty; /* slots from 0 that need fill_rx before the next read */
    bool rx_claimed;   /* a thread reads into the slots without the caller's lock
                        * (rdp_rx_claim): nobody else reads the socket meanwhile */
    bool rx_blocking;  /* the socket is blocking (for rdp_rx_wait); every other call on it
                        * says MSG_DONTWAIT */
    bool rx_icmp;      /* rdp_rx_wait saw an ICMP error: the error queue, under the lock */
    /* UDP GRO: reads of coalesced datagrams into RDP_GRO_BUF buffers, split on receipt; an
     * endpoint with large datagrams switches to it (want_gro) once a peer sends small ones */
    bool gro, want_gro;
    uint8_t *grobuf; /* RDP_RX_BATCH * RDP_GRO_BUF bytes */
    union {
        char buf[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } groctl[RDP_RX_BATCH];

    uint8_t *scratch; /* RDP_MAX_MSG bytes: joins undeliverable messages, and queued ones
                       * cut again (rdp_sendq_recut) */
    bool in_process;
    struct rdp_peer **dirty;
    uint32_t ndirty;
    uint64_t now; /* time of the current round */
    struct rdp_stats st;
};

/* peers.c */
struct rdp_peer *rdp_peers_get(const struct rdp_peers *t, uint32_t id);
int rdp_peers_put(struct rdp_peers *t, struct rdp_peer *p); /* p->node not present yet */
void rdp_peers_del(struct rdp_peers *t, uint32_t id);
void rdp_peers_free(struct rdp_peers *t);

/* endpoint.c */
struct rdp_peer *rdp_peer_get(const rdp_t *ep, uint32_t id);
/* The handshake key of the peer's connections. */
const uint8_t *rdp_peer_hkey(const rdp_t *ep, const struct rdp_peer *p);
void rdp_mark_dirty(rdp_t *ep, struct rdp_peer *p);
bool rdp_addr_equal(const struct sockaddr_storage *a, const struct sockaddr *b);
void rdp_count_drop(rdp_t *ep, struct rdp_peer *p, enum rdp_drop_reason why);

/* io.c */
int rdp_io_socket(rdp_t *ep);
/* Whether datagrams with `payload` bytes of payload are MTU-sized: small enough that several
 * fit one coalesced send or read (GSO, GRO). */
bool rdp_io_coalescable(uint32_t payload);
void rdp_io_queue(rdp_t *ep, struct rdp_peer *p, struct rdp_buf *b);
void rdp_io_flush(rdp_t *ep);
void rdp_io_forget_peer(rdp_t *ep, struct rdp_peer *p);
int rdp_io_receive(rdp_t *ep);
void rdp_io_handle(rdp_t *ep, int n);
int rdp_process_from(rdp_t *ep, int n);
void rdp_io_errqueue(rdp_t *ep);
/* Sign a packet (header already encoded, b->len = header + payload) and queue it. */
void rdp_io_sign_queue(rdp_t *ep, struct rdp_peer *p, struct rdp_buf *b);

/* conn.c */
void rdp_conn_open(rdp_t *ep, struct rdp_peer *p);
void rdp_conn_lost(rdp_t *ep, struct rdp_peer *p, enum rdp_lost_reason why);
void rdp_conn_free(rdp_t *ep, struct rdp_peer *p);
void rdp_handle_packet(rdp_t *ep, struct rdp_buf **bufp, const struct sockaddr *from);
void rdp_send_ctl(rdp_t *ep, struct rdp_peer *p, uint8_t type);

/* send.c */
int rdp_sendq_init(rdp_t *ep, struct rdp_peer *p);
void rdp_sendq_reset(rdp_t *ep, struct rdp_peer *p, uint32_t iseq);
struct rdp_buf *rdp_sendq_detach(struct rdp_peer *p);
/* Join the fragments of the chain's first message into ep->scratch (a chain as
 * rdp_sendq_detach returns it); its length, and its LAST packet in *last. */
size_t rdp_sendq_join(rdp_t *ep, struct rdp_buf *chain, struct rdp_buf **last);
struct rdp_buf *rdp_sendq_recut(rdp_t *ep, struct rdp_peer *p);
void rdp_try_transmit(rdp_t *ep, struct rdp_peer *p);
void rdp_handle_ack(rdp_t *ep, struct rdp_peer *p, uint32_t ack, uint32_t wnd, const uint8_t *sack,
                    size_t sack_len);
void rdp_on_rto(rdp_t *ep, struct rdp_peer *p);
uint32_t rdp_inflight(const struct rdp_peer *p);
void rdp_detect_losses(rdp_t *ep, struct rdp_peer *p);

/* recv.c */
int rdp_recvq_init(rdp_t *ep, struct rdp_peer *p);
void rdp_recvq_free(struct rdp_peer *p); /* after rdp_recvq_reset: the memory of the queue */
void rdp_recvq_reset(rdp_t *ep, struct rdp_peer *p, uint32_t iseq);
void rdp_handle_data(rdp_t *ep, struct rdp_peer *p, const struct rdp_hdr *h, struct rdp_buf **bufp);
void rdp_ack_sent(struct rdp_peer *p);
void rdp_flush_ack(rdp_t *ep, struct rdp_peer *p);
unsigned rdp_ack_delay_us(const rdp_t *ep, bool lone);
size_t rdp_sack_build(const struct rdp_peer *p, uint8_t *out, size_t max);
uint32_t rdp_rcv_wnd(const struct rdp_peer *p);

#endif
