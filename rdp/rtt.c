/*
 * rtt.c - the RTT estimator and retransmission timeout (see rtt.h), and the bound on how
 * long a silent peer takes to be declared lost.
 */
#include "rtt.h"
#include "rdp.h"

static uint32_t clamp(const struct rdp_rtt *r, uint64_t v)
{
    if (v < r->min_us) return r->min_us;
    if (v > r->max_us) return r->max_us;
    return (uint32_t)v;
}

void rdp_rtt_init(struct rdp_rtt *r, uint32_t init_us, uint32_t min_us, uint32_t max_us)
{
    r->min_us = min_us;
    r->max_us = max_us;
    r->srtt_us = r->rttvar_us = 0;
    r->sampled = false;
    r->rto_us = clamp(r, init_us);
}

static uint32_t estimate(const struct rdp_rtt *r)
{
    return clamp(r, (uint64_t)r->srtt_us + 4ull * r->rttvar_us);
}

void rdp_rtt_sample(struct rdp_rtt *r, uint32_t m)
{
    if (!r->sampled) {
        r->srtt_us = m;
        r->rttvar_us = m / 2;
        r->sampled = true;
    } else {
        uint32_t err = m > r->srtt_us ? m - r->srtt_us : r->srtt_us - m;
        r->rttvar_us = (3 * (uint64_t)r->rttvar_us + err) / 4;
        r->srtt_us = (7 * (uint64_t)r->srtt_us + m) / 8;
    }
    r->rto_us = estimate(r);
}

void rdp_rtt_backoff(struct rdp_rtt *r)
{
    r->rto_us = clamp(r, 2ull * r->rto_us);
}

void rdp_rtt_reset_backoff(struct rdp_rtt *r)
{
    if (r->sampled) r->rto_us = estimate(r);
}

uint64_t rdp_lost_bound_us(const struct rdp_config *c)
{
    /* Worst case: the timeout already sits at rto_max when the peer falls silent; the peer is
     * lost at the expiry after the max_retrans-th retransmission. */
    return ((uint64_t)c->max_retrans + 1) * c->rto_max_us;
}
