/*
 * gangwire.h - the gang switch record (layout in psproto.h, next to PSM_D_GANG_SWITCH):
 * encode, and a decoder that checks every length and field before it trusts one.
 */
#ifndef PSCLUSTER_PSID_GANGWIRE_H
#define PSCLUSTER_PSID_GANGWIRE_H

#include "psproto.h"

#include <stddef.h>
#include <stdint.h>

struct gang_entry {
    uint64_t job;
    uint16_t row; /* GANG_ROW_QUEUED: not started */
};

struct gang_switch {
    uint32_t scheduler;
    uint64_t epoch, seq;
    uint64_t at_ns; /* CLOCK_REALTIME */
    uint32_t quantum_ms;
    uint16_t row, rows;
    uint16_t njobs;
    struct gang_entry jobs[GANG_WIRE_MAX_JOBS];
};

/* The record's size for n jobs. */
static inline size_t gang_wire_len(size_t njobs)
{
    return GANG_WIRE_HEAD + GANG_WIRE_ENTRY * njobs;
}
/* Write s into out (gang_wire_len(s->njobs) bytes, which the caller provides); the
 * length, or 0 if s itself breaks a rule the decoder checks. */
size_t gang_encode(uint8_t *out, size_t cap, const struct gang_switch *s);
/* 0, or -1 with *why: "length", "version", "reserved", "jobs", "quantum", "rows", "row",
 * "entry row", "entry reserved". */
int gang_decode(const uint8_t *buf, size_t n, struct gang_switch *s, const char **why);

#endif
