/*
 * fault.h - the fault injector that tests switch on: each packet, in the directions chosen,
 * is dropped, duplicated, moved behind the packets after it (reordered) or has one bit
 * flipped (corrupted), each with its own probability. A small xorshift generator makes the
 * decisions, seeded for repeatable runs.
 */
#ifndef PSCLUSTER_RDP_FAULT_H
#define PSCLUSTER_RDP_FAULT_H

#include "rdp.h"

#include <stdbool.h>
#include <stdint.h>

struct rdp_injector {
    struct rdp_faults f;
    bool on;
    uint64_t rng;
    uint64_t drop, dup, reorder, corrupt; /* counts of what was done */
};

/* What to do to one packet. */
struct rdp_fault_verdict {
    bool drop, dup, reorder, corrupt;
    uint32_t bit; /* which bit to flip, modulo the packet's bit length */
};

void rdp_injector_set(struct rdp_injector *in, const struct rdp_faults *f);
/* Decide for one packet going in direction dir; counts what it decides. */
struct rdp_fault_verdict rdp_injector_decide(struct rdp_injector *in, unsigned dir);
uint64_t rdp_rand64(uint64_t *state);

#endif
