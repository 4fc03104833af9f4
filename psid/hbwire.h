/*
 * hbwire.h - the heartbeat packet (UDP, multicast or unicast), 56 bytes, big-endian:
 *
 *   off size field
 *     0    1 version (2)
 *     1    1 type: 1 beat, 2 leaving (the daemon shuts down)
 *     2    2 reserved (0)
 *     4    4 node id
 *     8    8 incarnation (CLOCK_REALTIME ns at the daemon's start)
 *    16    8 seq: increasing within an incarnation (starts at the incarnation)
 *    24    4 1-minute load average x 1000
 *    28    4 CPUs used: what the node's tasks hold (each task counts its -c, 1 without)
 *    32    4 cpus
 *    36    4 task epoch: counts changes of the node's task table (orders task counts
 *             that arrive by heartbeat and by RDP)
 *    40   16 MAC: BLAKE2b-128 keyed with the heartbeat key over bytes 0..39
 *
 * The heartbeat key is derived from the cluster key (hb_key_derive: crypto_kdf, context
 * "pshbeat1"), so the cluster key itself signs nothing here, and a MAC made with it (or with
 * RDP's keys, derived under other contexts) never passes. A receiver accepts a beat only
 * with a valid MAC, from a configured node other than itself, from that node's configured
 * address, with an incarnation not older than the known one and, within one incarnation, a
 * seq above the last accepted: a replayed heartbeat changes nothing (membership.c counts
 * each drop by its reason).
 */
#ifndef PSCLUSTER_PSID_HBWIRE_H
#define PSCLUSTER_PSID_HBWIRE_H

#include <stddef.h>
#include <stdint.h>

#define HB_LEN     56
#define HB_VERSION 2

enum hb_type { HB_BEAT = 1, HB_LEAVING = 2 };

struct hb {
    uint8_t type;
    uint32_t node;
    uint64_t incarnation, seq;
    uint32_t load_milli, used, cpus, task_epoch;
};

/* The heartbeat key from the cluster key. */
void hb_key_derive(const uint8_t cluster_key[32], uint8_t hb_key[32]);
/* BLAKE2b-128 keyed with key over body[0..len): the MAC of heartbeats and of SWIM's packets
 * (swim.h, under its own key). */
void hb_mac(uint8_t out[16], const uint8_t *body, size_t len, const uint8_t key[32]);
void hb_encode(uint8_t out[HB_LEN], const struct hb *h, const uint8_t key[32]);
/* 0, or -1 with *why: "length", "version", "type", "reserved", "mac". */
int hb_decode(const uint8_t *buf, size_t n, struct hb *h, const uint8_t key[32], const char **why);

#endif
