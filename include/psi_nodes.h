/*
 * psi_nodes.h - libpsi: the cluster's node table as psid reports it (PSM_NODES), and what a
 * name on a command line means: a node id ("3"), a node name ("n3"), a name's short form
 * ("n3" for "n3.cluster" and the other way round) or a node's address.
 *
 * psi_nodes asks psid; psi_nodetab_parse decodes a PSM_NODES_REPLY already read (the
 * preload library reads it itself). The decoder takes any well-framed message: a node
 * record without a field, or with one of the wrong kind or a string too long for its buffer,
 * leaves that field zero or empty; fields of other tags are skipped.
 */
#ifndef PSCLUSTER_PSI_NODES_H
#define PSCLUSTER_PSI_NODES_H

#include "psi.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct psi_node {
    uint32_t id, state, cpus; /* state: PSNODE_UP or PSNODE_DOWN */
    uint32_t load;            /* load average times 1000 */
    uint32_t used;            /* CPUs its tasks hold: each task counts its -c (sinfo's allocated) */
    uint32_t age_ms;          /* since its last heartbeat, if has_age */
    bool has_age;
    char name[64], addr[64];
};

struct psi_nodetab {
    struct psi_node *v;
    size_t n;
    uint32_t self; /* the answering node */
};

/* Ask psid for its node table (PSM_NODES) into *t. 0, or -1 and errno. */
int psi_nodes(struct psi *c, struct psi_nodetab *t);
/* Fill t from a PSM_NODES_REPLY. 0, or -1 (ENOMEM). */
int psi_nodetab_parse(const struct psmsg *reply, struct psi_nodetab *t);
void psi_nodetab_free(struct psi_nodetab *t);
/* The node with this id, or NULL. */
const struct psi_node *psi_nodetab_id(const struct psi_nodetab *t, uint32_t id);
/* The node s names (see above), or NULL. */
const struct psi_node *psi_nodetab_lookup(const struct psi_nodetab *t, const char *s);
/* The node's name, or its id in decimal if it has none / is unknown (t may be NULL); into
 * buf. Returns buf. */
const char *psi_nodetab_name(const struct psi_nodetab *t, uint32_t id, char *buf, size_t n);

#endif
