/*
 * stats.h - an RDP endpoint's counters as rdpbench reports them: collected from librdp,
 * printed for people, written as JSON. They travel between the sides in FIN and STATS
 * (ctl.h encodes them).
 */
#ifndef PSCLUSTER_RDPBENCH_STATS_H
#define PSCLUSTER_RDPBENCH_STATS_H

#include "rdp.h"

#include <stdint.h>
#include <stdio.h>

#define RB_STAT_FIELDS 26

enum {
    S_PKTS_SENT,
    S_PKTS_RECV,
    S_BYTES_SENT,
    S_BYTES_RECV,
    S_MSGS_SENT,
    S_MSGS_RECV,
    S_RETRANS,
    S_TIMEOUTS,
    S_CONNECTS,
    S_LOSSES,
    S_ICMP,
    S_SRTT,
    S_RTTVAR,
    S_RTO,
    S_CWND,
    S_INJ_DROP,
    S_INJ_DUP,
    S_INJ_REORDER,
    S_INJ_CORRUPT,
    S_GSO_SENDS,
    S_GRO_READS,
    S_MAC,
    S_OOO,
    S_PEER_WND,
    S_RCV_WND,
    S_PAYLOAD,
};

struct rb_stats {
    uint64_t f[RB_STAT_FIELDS]; /* by S_* */
    uint64_t drops[RDP_DROP__COUNT];
};

/* The endpoint's and its connection to peer's counters. */
void rb_stats_collect(const rdp_t *rdp, uint32_t peer, struct rb_stats *s);
/* Three lines "SIDE rdp: ...", "SIDE drops: ...", "SIDE injected: ...". */
void rb_stats_print(FILE *f, const char *side, const struct rb_stats *s);
/* One JSON object: every field by name, drops by reason. */
void rb_stats_json(FILE *f, const struct rb_stats *s);
/* The name of MAC algorithm mac (enum rdp_mac_alg). */
const char *rb_mac_name(int mac);

#endif
