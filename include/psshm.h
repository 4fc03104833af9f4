/*
 * psshm.h - the same-node channel of the preload library: the layout of the shared memory
 * that carries one TCP connection between two processes of one node (docs/preload-design.md,
 * "The same-node path").
 *
 * psid makes the channel when the acceptor claims a same-node connection: a memfd of
 * PSHM_SIZE(ring) bytes, sealed against shrinking and growing (so neither process can make
 * the other's access fault), and the doorbell, a SOCK_SEQPACKET socketpair. It passes each
 * end the memfd and one end of the doorbell, and closes its own copies. Nothing has a name: the
 * memory is freed when both processes have closed or died, and no third process can map or ring it
 * (it has no descriptor, and /proc/PID/fd needs ptrace rights over one of the two).
 *
 * The memfd holds a header page and then the two rings, each a byte ring of `ring` bytes
 * (a power of two): ring 0 carries the connector's bytes to the acceptor, ring 1 the
 * acceptor's to the connector. Each ring has one producer and one consumer, and counters
 * that only grow: the producer copies bytes in and then publishes `head` (release), the
 * consumer copies bytes out and publishes `tail`. A process reads every field of the
 * other's as untrusted input: head - tail beyond `ring` is a broken channel (the
 * connection is reset), never a read outside the mapping.
 *
 * Waking: a process that will sleep for data sets `want_data` (for room: `want_room`),
 * then looks again; the other, after publishing, takes the flag (exchange to 0) and, if it
 * was set, sends one byte on its end of the doorbell; the sleeper polls its own end. An idle
 * connection costs no system call and no CPU.
 *
 * Fields are the host's byte order (both ends run on one machine); the header carries a
 * magic number, the version and the ring size, which each process checks.
 */
#ifndef PSCLUSTER_PSSHM_H
#define PSCLUSTER_PSSHM_H

#include <stdint.h>

#define PSHM_MAGIC    0x70736d31u /* "psm1" */
#define PSHM_VERSION  2u
#define PSHM_HDR      4096u /* the header page; the rings follow */
#define PSHM_RING_MIN (64u << 10)
#define PSHM_RING_MAX (16u << 20)
#define PSHM_SIZE(r)  ((uint64_t)PSHM_HDR + 2u * (uint64_t)(r))

/* producer's flags (pflags): what comes after the last byte */
#define PSHM_FIN   1u /* shutdown(SHUT_WR): end of stream */
#define PSHM_CLOSE 2u /* closed: end of stream, and it reads no more (writes give EPIPE) */
#define PSHM_RST   4u /* reset (SO_LINGER 0, or closed with unread bytes): ECONNRESET */
#define PSHM_SWITCH                                                                                \
    8u                      /* the connection moves to TCP (fork, exec): nothing more comes, and   \
                             * the producer no longer reads its own ring: the consumer of this     \
                             * one takes back from its ring what the producer did not read */
#define PSHM_SWITCH_ACK 16u /* the answer: nothing more comes here either */
#define PSHM_UP                                                                                    \
    32u /* set before the first byte: the producer's bytes went to the                             \
         * kernel socket until now, `ktx` of them; the consumer reads                              \
         * that many from its kernel socket, then this ring */
/* consumer's flags (cflags) */
#define PSHM_GONE 1u /* the consumer reads no more (closed) */

struct pshm_ring {
    uint64_t head; /* bytes the producer wrote, ever (the producer's) */
    uint8_t pad0[56];
    uint64_t tail; /* bytes the consumer took, ever (the consumer's) */
    uint8_t pad1[56];
    uint32_t pflags;    /* PSHM_FIN, PSHM_CLOSE, PSHM_RST (the producer's) */
    uint32_t cflags;    /* PSHM_GONE (the consumer's) */
    uint32_t want_data; /* the consumer sleeps: ring it on bytes or pflags */
    uint32_t want_room; /* the producer sleeps: ring it on room or cflags */
    uint64_t ktx;       /* with PSHM_UP: bytes the producer wrote to the kernel socket */
    uint8_t pad2[40];
};

struct pshm_hdr {
    uint32_t magic, version, ring, pad;
    /* the two processes as psid saw them ([0] the connector, [1] the acceptor): one asks
     * psid to poke the other (PSM_PL_POKE) when it moves the connection back to TCP, so that
     * the other's progress thread answers even while its program uses the connection not */
    uint32_t pid[2];
    uint8_t pad0[40];
    struct pshm_ring dir[2]; /* [0]: connector -> acceptor, [1]: acceptor -> connector */
};

#endif
