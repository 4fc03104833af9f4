/*
 * rtt.h - round-trip time estimation and the retransmission timeout (RFC 6298's estimator:
 * smoothed RTT and mean deviation, RTO = srtt + 4 * rttvar, clamped to [min, max], doubled on
 * every expiry). Samples come only from packets sent once (Karn's rule), in microseconds.
 */
#ifndef PSCLUSTER_RDP_RTT_H
#define PSCLUSTER_RDP_RTT_H

#include <stdbool.h>
#include <stdint.h>

struct rdp_rtt {
    uint32_t srtt_us, rttvar_us, rto_us;
    uint32_t min_us, max_us;
    bool sampled;
};

void rdp_rtt_init(struct rdp_rtt *r, uint32_t init_us, uint32_t min_us, uint32_t max_us);
void rdp_rtt_sample(struct rdp_rtt *r, uint32_t sample_us);
/* An expiry: double the timeout (up to max). */
void rdp_rtt_backoff(struct rdp_rtt *r);
/* Progress after expiries: back to the estimate. */
void rdp_rtt_reset_backoff(struct rdp_rtt *r);

#endif
