/*
 * binding.h - the CPUs of this node and the ranks bound to them (see binding.c).
 */
#ifndef PSCLUSTER_PSID_BINDING_H
#define PSCLUSTER_PSID_BINDING_H

#include "daemon.h"
#include "pscpus.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct binding_req {
    uint32_t mode;   /* enum psbind (PSBIND_VERBOSE ignored) */
    uint32_t cpt;    /* CPUs per rank (-c); 0 as 1 */
    uint32_t local;  /* the rank's place among the job's ranks on this node */
    uint32_t nlocal; /* the job's ranks on this node */
    bool overbook;   /* may share CPUs other tasks hold */
    const char *map; /* map_cpu's or mask_cpu's LIST */
};

/* Read the node's CPUs and cores (at start, before the sandbox), and log them. */
void binding_init(struct psid *d);
/* The node's CPUs (NULL out of memory). */
const struct pscpuset *binding_cpus(struct psid *d);
/* The CPUs for a rank into *out: 1 (bind to *out, then binding_hold it), 0 (not bound), or
 * -1 with why (a CPU that is not the node's, no free cores without --overbook). */
int binding_choose(struct psid *d, const struct binding_req *r, struct pscpuset *out, char *why,
                   size_t whylen);
/* A task bound to s starts (+1) or leaves the table (-1). */
void binding_hold(struct psid *d, const struct pscpuset *s, int delta);
void binding_free(struct psid *d);

#endif
