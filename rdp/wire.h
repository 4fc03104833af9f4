/*
 * wire.h - RDP packet layout: encoding and validating decoding of the fixed header.
 *
 * Every datagram is: a 48-byte header, `len` payload bytes, a 16-byte MAC. All integers are
 * big-endian (network order). The MAC covers header and payload (see auth.h).
 *
 *   off  size  field
 *     0     1  version      RDP_VERSION
 *     1     1  type         SYN, SYNACK, DATA, ACK, RST
 *     2     2  flags        DATA: FIRST (first fragment of a message), LAST (last fragment),
 *                           ACKREQ (the sender's window is full: acknowledge at once)
 *     4     2  src_node     sender's node id (0 .. RDP_MAX_NODES-1)
 *     6     2  src_ep       sender's endpoint on its node (0: the node's daemon)
 *     8     2  dst_node     receiver's node id
 *    10     2  dst_ep       receiver's endpoint
 *    12     4  src_conn     sender's connection id (random, never 0)
 *    16     4  dst_conn     receiver's connection id (0 in SYN)
 *    20     4  seq          DATA: this packet's sequence number; SYN/SYNACK: initial seq
 *    24     4  ack          next sequence number the sender expects (cumulative ACK)
 *    28     4  wnd          packets the sender can accept beyond ack (receive window)
 *    32     8  pn           DATA/ACK: packet number of the connection in this direction,
 *                           from 1 (MAC nonce and anti-replay counter); SYN/SYNACK/RST: 0
 *    40     4  msg_len      DATA: length of the whole message this fragment belongs to
 *    44     2  len          payload length
 *    46     2  mac          MAC of a DATA/ACK: 0 ChaCha20-Poly1305, 1 AES-256-GCM, under the
 *                           connection's key; SYN, SYNACK and RST: 0, and their MAC is keyed
 *                           BLAKE2b under the handshake key (auth.h)
 *    48   len  payload      DATA: fragment; ACK: SACK bitmap; SYN/SYNACK/RST: handshake
 *   48+len 16  mac
 *
 * Handshake payload (48 bytes): incarnation (8), max payload the sender accepts (4: from
 * RDP_MIN_PAYLOAD to RDP_MAX_DGRAM - RDP_OVERHEAD; packets to it carry no more), the MACs
 * the sender verifies (4: bit 0 ChaCha20-Poly1305, always set; bit 1 AES-256-GCM), 32 random
 * bytes fresh for each connection attempt (they go into the connection's keys).
 * SACK bitmap: bit i (byte i/8, bit i%8, LSB first) set = packet ack+1+i was received.
 */
#ifndef PSCLUSTER_RDP_WIRE_H
#define PSCLUSTER_RDP_WIRE_H

#include "bebytes.h"
#include "rdp.h"

#include <stdbool.h>
#include <stdint.h>

#define RDP_VERSION   2
#define RDP_HDR_LEN   48
#define RDP_MAC_LEN   16
#define RDP_OVERHEAD  (RDP_HDR_LEN + RDP_MAC_LEN)
#define RDP_HS_LEN    48
#define RDP_MAX_DGRAM 65507 /* largest UDP payload over IPv4 */
#define RDP_MIN_DGRAM (RDP_OVERHEAD + 64)
/* the payload at the smallest MTU a configuration allows (576, less IPv6 and UDP headers):
 * the least a handshake may offer */
#define RDP_MIN_PAYLOAD (576 - 48 - RDP_OVERHEAD)

enum rdp_type { RDP_T_SYN = 1, RDP_T_SYNACK, RDP_T_DATA, RDP_T_ACK, RDP_T_RST, RDP_T__MAX };

#define RDP_F_FIRST  0x1
#define RDP_F_LAST   0x2
#define RDP_F_ACKREQ 0x4

/* Header field offsets (used to patch ack/wnd/pn into a queued packet at transmit time). */
#define RDP_OFF_ACK 24
#define RDP_OFF_WND 28
#define RDP_OFF_PN  32

struct rdp_hdr {
    uint8_t version, type;
    uint16_t flags;
    uint32_t src_node, dst_node;
    uint16_t src_ep, dst_ep;
    uint32_t src_conn, dst_conn;
    uint32_t seq, ack, wnd;
    uint64_t pn;
    uint32_t msg_len;
    uint16_t len;
    uint16_t mac; /* enum rdp_mac_alg: RDP_MAC_CHACHA20POLY1305 or RDP_MAC_AES256GCM */
};

struct rdp_hs {
    uint64_t incarnation;
    uint32_t max_payload;
    uint32_t macs; /* RDP_MACS_* */
    uint8_t rand[32];
};

#define RDP_MACS_CHACHA 0x1u
#define RDP_MACS_AES    0x2u
#define RDP_OFF_MAC     46

/* Write h (version included as given) into buf[0..RDP_HDR_LEN). */
void rdp_hdr_encode(uint8_t *buf, const struct rdp_hdr *h);
/* Overwrite ack, wnd and pn of an encoded header. */
void rdp_hdr_patch(uint8_t *buf, uint32_t ack, uint32_t wnd, uint64_t pn);

/* Decode and validate a whole datagram of n bytes: lengths, version, type, flags, reserved
 * bits, per-type payload rules. true, or false with *why set. The MAC is not checked here. */
bool rdp_hdr_decode(const uint8_t *buf, size_t n, struct rdp_hdr *h, enum rdp_drop_reason *why);

void rdp_hs_encode(uint8_t *payload, const struct rdp_hs *hs);
void rdp_hs_decode(const uint8_t *payload, struct rdp_hs *hs);

#endif
