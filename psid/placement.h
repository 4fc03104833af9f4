/*
 * placement.h - which nodes a job's ranks go to: least-loaded nodes of the partition first.
 * A pure function (unit-tested), fed by psid with what it knows of each node.
 */
#ifndef PSCLUSTER_PSID_PLACEMENT_H
#define PSCLUSTER_PSID_PLACEMENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct place_node {
    uint32_t id;
    uint32_t cpus;
    uint32_t used;       /* tasks running there plus placements still in flight */
    uint32_t load_milli; /* 1-minute load average x 1000: work that is not ours */
};

/* Place np ranks on the nodes (in the partition's order of preference): each rank goes to
 * the node with the lowest use per CPU (the larger of its tasks and its load average),
 * earlier nodes winning ties; at most ppn ranks per node (0: no limit); without overbook
 * no node gets more ranks than it has free CPUs. Ranks are numbered in blocks, node by
 * node in partition order. out[r] is rank r's node id. 0, or -1 with a reason in why. */
int place_ranks(const struct place_node *nodes, size_t n, uint32_t np, uint32_t ppn, bool overbook,
                uint32_t *out, char *why, size_t whylen);

#endif
