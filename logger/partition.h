/*
 * partition.h - which nodes a job may use, in order of preference.
 *
 * Sources, the first one present wins:
 *   1. the command line (psrun -w LIST)
 *   2. PSI_NODES (ids or names, hostlist syntax), PSI_HOSTS (names), PSI_HOSTFILE (a file)
 *   3. a batch system's allocation: SLURM_JOB_NODELIST (hostlist syntax, e.g. n[0-3,7]),
 *      else SLURM_NODELIST, else PBS_NODEFILE (a file, one line per slot)
 *   4. none: psid chooses among every node that is up
 * Names are resolved against the node table: one that is not in the cluster is an error
 * naming it and its source. A node that is down is an error for the command line (the user
 * asked for it) and skipped for the other sources (an allocation may outlive a node); no
 * node left is an error. Duplicates are dropped (the first place counts).
 *
 * Pure: the environment comes through a getenv-like function, so tests can supply their own.
 */
#ifndef PSCLUSTER_LOGGER_PARTITION_H
#define PSCLUSTER_LOGGER_PARTITION_H

#include "buf.h"
#include "psi_hostlist.h"
#include "psi_nodes.h"

#include <stddef.h>
#include <stdint.h>

struct lg_partition {
    const char *source; /* "-w", "PSI_NODES", ...; NULL: every up node */
    struct psi_names names;
};

typedef char *(*lg_getenv_fn)(const char *name);

/* Find the partition's source and expand its names. 0, or -1 with a message in err. */
int lg_partition_get(const char *wopt, lg_getenv_fn get, struct lg_partition *p, char *err,
                     size_t errsz);
/* Resolve p's names to node ids (malloc'ed into *ids, *nids of them; none if p has no
 * source). skipped (may be NULL) gets the names of down nodes left out. 0, or -1 with a
 * message in err. */
int lg_partition_resolve(const struct lg_partition *p, const struct psi_nodetab *t, uint32_t **ids,
                         size_t *nids, struct lg_strv *skipped, char *err, size_t errsz);
void lg_partition_free(struct lg_partition *p);

#endif
