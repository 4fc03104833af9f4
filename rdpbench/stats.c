/*
 * stats.c - an RDP endpoint's counters for rdpbench's reports (see stats.h).
 */
#include "stats.h"

#include <inttypes.h>
#include <stdbool.h>
#include <string.h>

const char *rb_mac_name(int mac)
{
    return rdp_mac_alg_name((enum rdp_mac_alg)mac);
}

static const char *const stat_names[] = {
    "pkts_sent",   "pkts_recv", "bytes_sent", "bytes_recv", "msgs_sent",    "msgs_recv",
    "retransmits", "timeouts",  "connects",   "losses",     "icmp_errors",  "srtt_us",
    "rttvar_us",   "rto_us",    "cwnd",       "inj_drop",   "inj_dup",      "inj_reorder",
    "inj_corrupt", "gso_sends", "gro_reads",  "mac_used",   "out_of_order", "peer_wnd",
    "rcv_wnd",     "payload",
};
_Static_assert(sizeof stat_names / sizeof stat_names[0] == RB_STAT_FIELDS, "a name per field");

void rb_stats_collect(const rdp_t *rdp, uint32_t peer, struct rb_stats *s)
{
    struct rdp_stats es;
    struct rdp_peer_stats ps;
    memset(s, 0, sizeof *s);
    memset(&ps, 0, sizeof ps);
    rdp_stats(rdp, &es);
    rdp_peer_stats(rdp, peer, &ps);
    s->f[S_PKTS_SENT] = es.pkts_sent;
    s->f[S_PKTS_RECV] = es.pkts_recv;
    s->f[S_BYTES_SENT] = ps.bytes_sent;
    s->f[S_BYTES_RECV] = ps.bytes_recv;
    s->f[S_MSGS_SENT] = ps.msgs_sent;
    s->f[S_MSGS_RECV] = ps.msgs_recv;
    s->f[S_RETRANS] = es.retransmits;
    s->f[S_TIMEOUTS] = ps.timeouts;
    s->f[S_CONNECTS] = ps.connects;
    s->f[S_LOSSES] = ps.losses;
    s->f[S_ICMP] = es.icmp_errors;
    s->f[S_SRTT] = ps.srtt_us;
    s->f[S_RTTVAR] = ps.rttvar_us;
    s->f[S_RTO] = ps.rto_us;
    s->f[S_CWND] = ps.cwnd;
    s->f[S_INJ_DROP] = es.inj_drop;
    s->f[S_INJ_DUP] = es.inj_dup;
    s->f[S_INJ_REORDER] = es.inj_reorder;
    s->f[S_INJ_CORRUPT] = es.inj_corrupt;
    s->f[S_GSO_SENDS] = es.gso_sends;
    s->f[S_GRO_READS] = es.gro_reads;
    s->f[S_MAC] = ps.mac;
    s->f[S_OOO] = ps.out_of_order;
    s->f[S_PEER_WND] = ps.peer_wnd;
    s->f[S_RCV_WND] = ps.rcv_wnd;
    s->f[S_PAYLOAD] = ps.payload;
    for (int r = 0; r < RDP_DROP__COUNT; r++) s->drops[r] = es.drops[r];
}

void rb_stats_print(FILE *f, const char *side, const struct rb_stats *s)
{
    const uint64_t *v = s->f;
    fprintf(f,
            "%s rdp: packets %" PRIu64 " sent / %" PRIu64 " received, retransmits %" PRIu64
            ", timeouts %" PRIu64 ", srtt %" PRIu64 " us (rttvar %" PRIu64 ", rto %" PRIu64
            "), cwnd %" PRIu64 " (windows: peer's %" PRIu64 ", own %" PRIu64 "; %" PRIu64
            " B per packet), connects %" PRIu64 ", losses %" PRIu64 ", mac used %s\n",
            side, v[S_PKTS_SENT], v[S_PKTS_RECV], v[S_RETRANS], v[S_TIMEOUTS], v[S_SRTT],
            v[S_RTTVAR], v[S_RTO], v[S_CWND], v[S_PEER_WND], v[S_RCV_WND], v[S_PAYLOAD],
            v[S_CONNECTS], v[S_LOSSES], rb_mac_name((int)v[S_MAC]));
    fprintf(f, "%s drops:", side);
    bool any = false;
    for (int r = 0; r < RDP_DROP__COUNT; r++) {
        if (!s->drops[r]) continue;
        fprintf(f, " %s %" PRIu64, rdp_drop_reason_name((enum rdp_drop_reason)r), s->drops[r]);
        any = true;
    }
    fprintf(f, "%s", any ? "\n" : " none\n");
    fprintf(f,
            "%s injected: drop %" PRIu64 ", dup %" PRIu64 ", reorder %" PRIu64 ", corrupt %" PRIu64
            "; icmp errors %" PRIu64 "; offload: %" PRIu64 " GSO sends, %" PRIu64
            " GRO reads; %" PRIu64 " packets arrived out of order\n",
            side, v[S_INJ_DROP], v[S_INJ_DUP], v[S_INJ_REORDER], v[S_INJ_CORRUPT], v[S_ICMP],
            v[S_GSO_SENDS], v[S_GRO_READS], v[S_OOO]);
}

static void json_name(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) fputc(((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9')) ? *s : '_', f);
    fputc('"', f);
}

void rb_stats_json(FILE *f, const struct rb_stats *s)
{
    fputc('{', f);
    for (int k = 0; k < RB_STAT_FIELDS; k++)
        fprintf(f, "\"%s\":%" PRIu64 ",", stat_names[k], s->f[k]);
    fprintf(f, "\"drops\":{");
    for (int r = 0; r < RDP_DROP__COUNT; r++) {
        json_name(f, rdp_drop_reason_name((enum rdp_drop_reason)r));
        fprintf(f, ":%" PRIu64 "%s", s->drops[r], r + 1 < RDP_DROP__COUNT ? "," : "");
    }
    fprintf(f, "}}");
}
