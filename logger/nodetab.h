/*
 * nodetab.h - the cluster's node table as psid reports it (PSM_NODES), and what a name
 * on a command line means: a node id ("3"), a node name ("n3"), a name's short form
 * ("n3" for "n3.cluster" and the other way round) or a node's address. Task ids NODE:PID
 * are parsed and printed here too.
 */
#ifndef PSCLUSTER_LOGGER_NODETAB_H
#define PSCLUSTER_LOGGER_NODETAB_H

#include "psi.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct lg_node {
    uint32_t id, state, cpus;
    char name[64], addr[64];
};

struct lg_nodetab {
    struct lg_node *v;
    size_t n;
    uint32_t self; /* the answering node */
};

/* Fill t from a PSM_NODES_REPLY. 0, or -1 (ENOMEM). */
int lg_nodetab_parse(const struct psmsg *reply, struct lg_nodetab *t);
/* Ask psid (psi_call PSM_NODES). 0, or -1 and errno. */
int lg_nodetab_fetch(struct psi *c, struct lg_nodetab *t);
void lg_nodetab_free(struct lg_nodetab *t);
const struct lg_node *lg_nodetab_id(const struct lg_nodetab *t, uint32_t id);
/* The node s names (see above), or NULL. */
const struct lg_node *lg_nodetab_lookup(const struct lg_nodetab *t, const char *s);
/* The node's name, or its id in decimal if it has none / is unknown; into buf. */
const char *lg_nodetab_name(const struct lg_nodetab *t, uint32_t id, char *buf, size_t n);

/* Parse a task id: NODE:PID (NODE as above) or a plain 64-bit number. t may be NULL (then
 * NODE must be a number). 0, or -1 with a message in err. */
int lg_tid_parse(const char *s, const struct lg_nodetab *t, uint64_t *tid, char *err, size_t errsz);
/* Whether s has the form of a task id, before the node table is at hand (NODE may be any
 * name): a malformed one is a bad command line, an unknown node is not. 0, or -1 with the
 * message lg_tid_parse would give in err. */
int lg_tid_check(const char *s, char *err, size_t errsz);
/* "NODE:PID" with the numeric node id. Returns buf (at least 24 bytes). */
const char *lg_tid_str(uint64_t tid, char *buf, size_t n);

#endif
