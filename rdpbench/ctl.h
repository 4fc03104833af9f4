/*
 * ctl.h - rdpbench's control protocol: its wire format, encoded and decoded here and nowhere
 * else. No I/O: the session reads and writes the bytes (channel.c).
 *
 * One TCP connection per session. Every frame is a 12-byte header -- magic "RDPB", version 1
 * (u8), type (u8), reserved 0 (u16), body length (u32, at most RB_CTL_MAX_BODY) -- and a
 * body of fixed-width big-endian fields whose length is checked exactly per type:
 *   HELLO      c->s  mode (u8), flags (u8), MAC algorithm (u8), 0 (u8), sizes MIN and MAX
 *                    (u32 each), count, warmup, seed (u64 each), mtu, timeout (u32 each),
 *                    the client's RDP address (family 4 or 6 (u16), port (u16), 16 address
 *                    bytes, IPv4 in the first 4), and a 16-byte key check (key.h) so that
 *                    a key mismatch is reported at once instead of as MAC drops; 80 bytes
 *   READY      s->c  the TCP data port (u16, --vs-tcp), flags (u16: the server injects
 *                    faults), its MTU (u32)
 *   DONE       s->c  stream: every message arrived verified: count, bytes (u64 each)
 *   FIN        c->s  the client's RDP statistics; the server drains its queue, then answers
 *   STATS      s->c  the server's RDP statistics: the number of fields and of drop reasons
 *                    (u16 each, as this build has them), then each (u64)
 *   TCP_START  c->s  start the kernel TCP run (empty)
 *   TCP_READY  s->c  the server's child is waiting on the data port (empty)
 *   TCP_RESULT s->c  the child's exit status (u32; 0: every message verified), count (u64)
 *   ERR        both  text: what went wrong; the receiver prints it and exits 1
 * Decoders take any bytes: a wrong length or a value out of range is an error, never a read
 * beyond the body (unit test: test/unit/test_rdpbench_ctl.c; fuzz target:
 * test/fuzz/fuzz_rdpbench_ctl.c).
 */
#ifndef PSCLUSTER_RDPBENCH_CTL_H
#define PSCLUSTER_RDPBENCH_CTL_H

#include "key.h"
#include "stats.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#define RB_CTL_MAGIC    0x52445042u /* "RDPB" */
#define RB_CTL_VERSION  1
#define RB_CTL_HDR      12
#define RB_CTL_MAX_BODY 2048
#define RB_CTL_ERR_MAX  1024

enum rb_ctl_type {
    CT_HELLO = 1,
    CT_READY,
    CT_ERR,
    CT_DONE,
    CT_FIN,
    CT_STATS,
    CT_TCP_START,
    CT_TCP_READY,
    CT_TCP_RESULT,
};

#define RB_MODE_PINGPONG 1
#define RB_MODE_STREAM   2

#define RB_HELLO_LEN      80
#define RB_READY_LEN      8
#define RB_DONE_LEN       16
#define RB_TCP_RESULT_LEN 12
#define RB_STATS_LEN      (4 + 8 * (RB_STAT_FIELDS + RDP_DROP__COUNT))
#define RB_HELLO_F_VSTCP  0x01
#define RB_HELLO_F_FAULTS 0x02
#define RB_READY_F_FAULTS 0x01
#define RB_COUNT_MAX      (1ull << 40) /* count and warmup a server accepts */

struct rb_hello {
    uint8_t mode, flags, mac;
    uint32_t smin, smax;
    uint64_t count, warmup, seed;
    uint32_t mtu, timeout_s;
    struct sockaddr_storage addr; /* the client's RDP address */
    socklen_t addrlen;
    uint8_t key_check[RB_KEY_CHECK];
};

struct rb_ready {
    uint16_t data_port;
    bool faults;
    uint32_t mtu;
};

/* Write a frame of type with body (len bytes, cut to RB_CTL_MAX_BODY) into frame (at least
 * RB_CTL_HDR + RB_CTL_MAX_BODY bytes). Its length. */
size_t rb_ctl_frame(uint8_t *frame, uint8_t type, const void *body, size_t len);
/* The frame at buf (n bytes there): 1 and its type and body length when it is all there,
 * 0 when more bytes are needed, -1 when its header is malformed (why says how). */
int rb_ctl_frame_parse(const uint8_t *buf, size_t n, uint8_t *type, uint32_t *len, char *why,
                       size_t wl);

void rb_hello_encode(const struct rb_hello *h, uint8_t out[RB_HELLO_LEN]);
/* 0, or -1 and why: a wrong length, mode, sizes, count, warmup or address family. The rest
 * (MAC, MTU, timeout, key) is the server's to judge. */
int rb_hello_decode(const uint8_t *p, size_t len, struct rb_hello *h, char *why, size_t wl);

void rb_ready_encode(const struct rb_ready *r, uint8_t out[RB_READY_LEN]);
int rb_ready_decode(const uint8_t *p, size_t len, struct rb_ready *r);

void rb_done_encode(uint64_t count, uint64_t bytes, uint8_t out[RB_DONE_LEN]);
int rb_done_decode(const uint8_t *p, size_t len, uint64_t *count, uint64_t *bytes);

void rb_tcp_result_encode(uint32_t status, uint64_t count, uint8_t out[RB_TCP_RESULT_LEN]);
int rb_tcp_result_decode(const uint8_t *p, size_t len, uint32_t *status, uint64_t *count);

void rb_stats_encode(const struct rb_stats *s, uint8_t out[RB_STATS_LEN]);
/* 0, or -1 if the length or the field counts are not this build's. */
int rb_stats_decode(const uint8_t *p, size_t len, struct rb_stats *s);

/* An ERR body as printable text: at most RB_CTL_ERR_MAX bytes, anything outside ASCII
 * 32..126 replaced by '?'; out holds RB_CTL_ERR_MAX + 1 bytes. Returns out. */
const char *rb_err_text(const uint8_t *p, size_t len, char *out);

#endif
