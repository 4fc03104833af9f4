/*
 * wire.h - the messages of the preload library's connections, carried over RDP between two
 * processes (docs/preload-design.md). All connections between the same two endpoints share
 * their one RDP connection; each message names its connection.
 *
 *   off size  field
 *     0    1  version (PLW_VERSION)
 *     1    1  type (enum plw_type)
 *     2    1  flags: PLW_FROM_CONNECTOR when the sender is the connection's connector
 *     3    1  0
 *     4    4  connection id (chosen by the connector; PSF_CONN in the negotiation)
 *     8    4  aux: CREDIT: bytes consumed; RST: an errno value; RETURN_END: bytes
 *             returned; else 0
 *    12       DATA, RETURN: the bytes (at least one); UP: 8 bytes, the count of bytes
 *             the sender wrote to the kernel socket before it moved (u64); every other
 *             type: nothing
 * All integers big-endian. A connection id is unique among the connector's live
 * connections, so (peer, id, which side connected) names a connection at either end.
 */
#ifndef PSCLUSTER_PRELOAD_WIRE_H
#define PSCLUSTER_PRELOAD_WIRE_H

#include <stddef.h>
#include <stdint.h>

#define PLW_VERSION        1
#define PLW_HDR            12
#define PLW_FROM_CONNECTOR 0x01
#define PLW_MAX_DATA       (64u << 10) /* bytes of one DATA message */

enum plw_type {
    PLW_DATA = 1,   /* bytes of the stream, in order */
    PLW_CREDIT = 2, /* the receiver consumed aux bytes: the sender may send that many more */
    PLW_FIN = 3,    /* the sender will send no more (shutdown SHUT_WR, or close) */
    PLW_CLOSE = 4,  /* the sender closed: it reads no more either (writes get EPIPE) */
    PLW_RST = 5,    /* abort (SO_LINGER 0, or data for a closed connection): aux = errno */
    /* the move back to TCP (docs/preload-design.md, "fork and exec"): */
    PLW_SWITCH = 6,     /* the sender's bytes continue on the kernel socket; answer it */
    PLW_SWITCH_ACK = 7, /* the answer: the sender's bytes continue on the kernel socket too,
                         * after the bytes of it the peer returns */
    PLW_RETURN = 8,     /* bytes the receiver sent that the sender's program did not read:
                         * the receiver writes them to the kernel socket first */
    PLW_RETURN_END = 9, /* no more returned bytes; aux: how many there were */
    /* the move onto RDP (docs/preload-design.md, "Deciding per connection"): the sender's
     * first message of the connection. Its bytes went to the kernel socket until now; the
     * receiver reads that many from its kernel socket, then this connection's DATA. */
    PLW_UP = 10,
};

#define PLW_UP_LEN 8 /* UP's bytes: the kernel count, big-endian */

struct plw_msg {
    uint8_t type, flags;
    uint32_t conn, aux;
    size_t len; /* DATA: bytes after the header */
};

/* Decode the header of a message of len bytes whose first bytes are hdr (at least
 * min(len, PLW_HDR) of them). 0, or -1 when malformed: short, other version, unknown type or
 * flags, a DATA without bytes, bytes after another type, DATA over PLW_MAX_DATA, or an UP of
 * other than PLW_UP_LEN bytes or with aux. */
int plw_decode(const uint8_t *hdr, size_t len, struct plw_msg *m);
void plw_encode(uint8_t hdr[PLW_HDR], uint8_t type, uint8_t flags, uint32_t conn, uint32_t aux);

#endif
