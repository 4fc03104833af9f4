/*
 * input.h - the window of psrun's stdin forwarding.
 *
 * psrun reads its stdin only while fewer than PSI_IO_WINDOW bytes are in flight (sent as
 * PSM_INPUT, not yet acknowledged by PSM_INPUT_ACK): a task that does not read its stdin
 * stops psrun from reading, and nothing piles up in between. For input to all ranks psid
 * may acknowledge once for all (PSF_RANK PSI_ALL_RANKS) or per rank; per rank, the slowest
 * rank still running sets the pace.
 */
#ifndef PSCLUSTER_LOGGER_INPUT_H
#define PSCLUSTER_LOGGER_INPUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct lg_input {
    uint32_t target; /* a rank, PSI_ALL_RANKS or PSI_NO_RANK */
    uint32_t np;
    uint64_t sent;    /* data bytes sent */
    uint64_t acked;   /* acknowledged for the target (or for all at once) */
    uint64_t *racked; /* target PSI_ALL_RANKS: acknowledged per rank */
    bool closed;      /* end of input was sent */
};

/* 0, or -1 (ENOMEM). */
int lg_input_init(struct lg_input *in, uint32_t target, uint32_t np);
void lg_input_free(struct lg_input *in);
/* Record a PSM_INPUT_ACK. */
void lg_input_ack(struct lg_input *in, uint32_t rank, uint64_t bytes);
/* Bytes in flight; live(ctx, rank) says which ranks still take input (for PSI_ALL_RANKS). */
uint64_t lg_input_inflight(const struct lg_input *in, bool (*live)(const void *, uint32_t),
                           const void *ctx);
/* How many bytes may be sent now (0..PSI_IO_WINDOW). */
size_t lg_input_room(const struct lg_input *in, bool (*live)(const void *, uint32_t),
                     const void *ctx);

#endif
