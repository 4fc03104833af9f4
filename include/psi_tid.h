/*
 * psi_tid.h - libpsi: task ids as people write them. A task id is node << 32 | pid
 * (PSTID, psproto.h), printed NODE:PID; NODE on a command line may be anything
 * psi_nodetab_lookup knows (an id, a name, a short name, an address). A plain 64-bit number
 * is taken as the id itself.
 */
#ifndef PSCLUSTER_PSI_TID_H
#define PSCLUSTER_PSI_TID_H

#include "psi_nodes.h"

#include <stddef.h>
#include <stdint.h>

/* Parse a task id: NODE:PID (NODE as above) or a plain 64-bit number. t may be NULL (then
 * NODE must be a number). 0, or -1 with a message in err. */
int psi_tid_parse(const char *s, const struct psi_nodetab *t, uint64_t *tid, char *err,
                  size_t errsz);
/* Whether s has the form of a task id, before the node table is at hand (NODE may be any
 * name): a malformed one is a bad command line, an unknown node is not. 0, or -1 with the
 * message psi_tid_parse would give in err. */
int psi_tid_check(const char *s, char *err, size_t errsz);
/* "NODE:PID" with the numeric node id. Returns buf (at least 24 bytes). */
const char *psi_tid_str(uint64_t tid, char *buf, size_t n);

#endif
