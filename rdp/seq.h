/*
 * seq.h - 32-bit sequence number arithmetic that stays right across wrap-around.
 *
 * Two sequence numbers compare by the sign of their 32-bit difference, so any two numbers
 * less than 2^31 apart order correctly wherever the counter wraps.
 */
#ifndef PSCLUSTER_RDP_SEQ_H
#define PSCLUSTER_RDP_SEQ_H

#include <stdbool.h>
#include <stdint.h>

static inline bool seq_lt(uint32_t a, uint32_t b)
{
    return (int32_t)(a - b) < 0;
}
static inline bool seq_le(uint32_t a, uint32_t b)
{
    return (int32_t)(a - b) <= 0;
}
static inline bool seq_gt(uint32_t a, uint32_t b)
{
    return (int32_t)(a - b) > 0;
}
static inline bool seq_ge(uint32_t a, uint32_t b)
{
    return (int32_t)(a - b) >= 0;
}
/* a in [lo, hi) */
static inline bool seq_in(uint32_t a, uint32_t lo, uint32_t hi)
{
    return a - lo < hi - lo;
}

#endif
