/*
 * input.c - stdin forwarding window (see input.h).
 */
#include "input.h"

#include "psproto.h"

#include <stdlib.h>
#include <string.h>

int lg_input_init(struct lg_input *in, uint32_t target, uint32_t np)
{
    memset(in, 0, sizeof *in);
    in->target = target;
    in->np = np;
    if (target == PSI_ALL_RANKS && np && !(in->racked = calloc(np, sizeof *in->racked))) return -1;
    return 0;
}

void lg_input_free(struct lg_input *in)
{
    free(in->racked);
    in->racked = NULL;
}

void lg_input_ack(struct lg_input *in, uint32_t rank, uint64_t bytes)
{
    if (rank == in->target)
        in->acked += bytes;
    else if (in->racked && rank < in->np)
        in->racked[rank] += bytes;
}

uint64_t lg_input_inflight(const struct lg_input *in, bool (*live)(const void *, uint32_t),
                           const void *ctx)
{
    uint64_t acked = in->acked;
    if (in->racked) {
        uint64_t min = UINT64_MAX;
        for (uint32_t r = 0; r < in->np; r++)
            if ((!live || live(ctx, r)) && in->racked[r] < min) min = in->racked[r];
        if (min != UINT64_MAX && min > acked) acked = min;
    }
    return acked >= in->sent ? 0 : in->sent - acked;
}

size_t lg_input_room(const struct lg_input *in, bool (*live)(const void *, uint32_t),
                     const void *ctx)
{
    if (in->target == PSI_NO_RANK || in->closed) return 0;
    uint64_t f = lg_input_inflight(in, live, ctx);
    return f >= PSI_IO_WINDOW ? 0 : (size_t)(PSI_IO_WINDOW - f);
}
