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
    uint32_t used;       /* CPUs its tasks hold (each its -c) plus placements in flight */
    uint32_t load_milli; /* 1-minute load average x 1000: work that is not ours */
};

/* How ranks are numbered over the nodes they were given (srun's -m) */
enum place_dist {
    PLACE_BLOCK = 0, /* node by node: 0 1 | 2 3 */
    PLACE_CYCLIC,    /* one per node in turn: 0 2 | 1 3 */
    PLACE_PLANE,     /* plane ranks per node in turn */
};

struct place_opts {
    uint32_t ppn;        /* at most this many ranks per node (0: no limit) */
    bool overbook;       /* more ranks than free CPUs allowed */
    bool exclusive;      /* only nodes with nothing running (used == 0) */
    uint32_t nmin, nmax; /* srun's -N: use between nmin and nmax nodes (0: any number) */
    enum place_dist dist;
    uint32_t plane; /* PLACE_PLANE's block size (> 0) */
    uint32_t cpt;   /* CPUs each rank takes (srun's -c; 0 as 1): a node's free CPUs hold
                     * free / cpt ranks */
};

/* Place np ranks on the nodes (in the partition's order of preference): each rank goes to
 * the node with the lowest use per CPU (the larger of its CPUs used and its load average),
 * earlier nodes winning ties; at most ppn ranks per node; without overbook no node gets
 * more ranks than it has free CPUs. With nmin, the fewest of the least busy nodes (at least
 * nmin, at most nmax) that hold the job are taken, each with at least one rank. The ranks
 * are then numbered over the nodes in partition order by o->dist. out[r] is rank r's node
 * id. 0, or -1 with a reason in why. */
int place_job(const struct place_node *nodes, size_t n, uint32_t np, const struct place_opts *o,
              uint32_t *out, char *why, size_t whylen);
/* place_job with block numbering and no node count. */
int place_ranks(const struct place_node *nodes, size_t n, uint32_t np, uint32_t ppn, bool overbook,
                uint32_t *out, char *why, size_t whylen);
/* Number np ranks over n nodes of count[i] ranks each (the counts add up to np) by dist:
 * out[r] = ids[i]. */
void place_number(const uint32_t *ids, const uint32_t *count, size_t n, uint32_t np,
                  enum place_dist dist, uint32_t plane, uint32_t *out);

#endif
