/*
 * gen.h - rdpbench's messages: the generator both sides compute message i with, and the
 * verifier that checks an arrived message against it.
 *
 * Message i (0-based, warm-up included) has a length from (seed, i): fixed, or log-uniform
 * in [MIN, MAX] computed with sqrt and products only (IEEE-exact, so both ends agree on any
 * platform). Its first 8 bytes are i in network order (shorter messages carry the low-order
 * bytes of i); the rest is a ChaCha20 stream keyed by the seed, read at an offset chosen by
 * (seed, i) and XORed with a per-message 64-bit mask. The receiver checks that each message
 * is exactly the next expected one, length and every byte, so loss, duplication,
 * reordering, corruption and mixed-up fragments are all caught.
 */
#ifndef PSCLUSTER_RDPBENCH_GEN_H
#define PSCLUSTER_RDPBENCH_GEN_H

#include "rdp.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#define RB_PAT_LEN (RDP_MAX_MSG + 65536 + 16)

struct rb_gen {
    uint64_t seed;
    uint32_t smin, smax;
    double root[24]; /* (smax+1)/smin ^ 2^-(k+1) */
    uint8_t *pat;    /* RB_PAT_LEN bytes of ChaCha20 keyed by the seed */
};

/* A 64-bit mixing function (splitmix64's finalizer). */
uint64_t rb_mix64(uint64_t x);
/* 0, or -1 (ENOMEM). Free g->pat when done. */
int rb_gen_init(struct rb_gen *g, uint64_t seed, uint32_t smin, uint32_t smax);
size_t rb_msg_len(const struct rb_gen *g, uint64_t i);
/* Message i's first len bytes (len: rb_msg_len) into buf. */
void rb_msg_fill(const struct rb_gen *g, uint64_t i, uint8_t *buf, size_t len);
/* true if the pieces iov[0..n), joined (len bytes), are message i; else why says what is
 * wrong. */
bool rb_msg_check_iov(const struct rb_gen *g, uint64_t i, const struct iovec *iov, int n,
                      size_t len, char *why, size_t wl);
/* true if buf is message i; else why says what is wrong. */
bool rb_msg_check(const struct rb_gen *g, uint64_t i, const uint8_t *buf, size_t len, char *why,
                  size_t wl);

#endif
