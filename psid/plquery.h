/*
 * plquery.h - psstat sockets: the node's library processes asked for their accelerated
 * connections, one round at a time, its answers shared and kept a while (plquery.c).
 */
#ifndef PSCLUSTER_PSID_PLQUERY_H
#define PSCLUSTER_PSID_PLQUERY_H

#include <stddef.h>
#include <stdint.h>

struct psid;
struct client;
struct psmsg;
struct plquery;

/* The processes to ask: a malloc'd array into *out (the caller frees it), and its length. */
typedef size_t (*plquery_procs_fn)(struct psid *d, struct client ***out);

struct plquery *plquery_new(struct psid *d, plquery_procs_fn procs);
void plquery_free(struct plquery *q);
/* PSM_PL_SOCKETS (request id) from c: answered when the next round to start ends. */
void plquery_ask(struct plquery *q, struct client *c, uint32_t id);
/* PSM_PL_REPORT from c, a library process. */
void plquery_report(struct plquery *q, struct client *c, const struct psmsg *m);
void plquery_client_gone(struct plquery *q, struct client *c);

#endif
