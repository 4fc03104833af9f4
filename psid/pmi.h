/*
 * pmi.h - psid's PMI server, the parts its modules share (docs/pmi.md):
 *   pmikvs.c    a job's key-value store on one node: a hash table with byte and key counts
 *   pmi.c       the ranks' PMI channels (PMI-1 and PMI-2 over the socket psid's privileged
 *               child made for each rank), the job's state on this node, its events
 *   pmifence.c  the fence: the node's puts gathered up a k-ary tree of the job's nodes over
 *               RDP, the union sent back down, gets answered from the local copy
 *   pmihome.c   the home node's plan: the tree, PMI_process_mapping, in each PSM_D_SPAWN
 * What daemon.h's other modules call is declared there (pmi_*).
 */
#ifndef PSCLUSTER_PSID_PMI_H
#define PSCLUSTER_PSID_PMI_H

#include "daemon.h"
#include "psmsg.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- pmikvs.c ---- */

struct pmikv; /* an entry */

struct pmikvs {
    struct pmikv **b; /* buckets */
    size_t nb;        /* a power of two, 0 before the first put */
    size_t n;         /* keys */
    size_t bytes;     /* key and value bytes */
    uint8_t hkey[16]; /* the table's hash key (SipHash: keys come from user programs) */
};

void pmikvs_init(struct pmikvs *k);
void pmikvs_free(struct pmikvs *k); /* empty again, ready for use */
/* The value of key (NUL-terminated, *vlen its length) or NULL. */
const char *pmikvs_get(const struct pmikvs *k, const char *key, size_t klen, size_t *vlen);
/* Insert or replace. 0, or -1 (ENOMEM). */
int pmikvs_put(struct pmikvs *k, const char *key, size_t klen, const char *val, size_t vlen);
/* Walking the entries: *it starts zeroed; 1 with the next entry, 0 at the end (and *it
 * stays at the end). The table must not change during a walk. */
struct pmikvs_it {
    size_t b;
    const struct pmikv *e;
};
int pmikvs_next(const struct pmikvs *k, struct pmikvs_it *it, const char **key, size_t *klen,
                const char **val, size_t *vlen);

/* ---- pmifence.c ---- */

struct pmijob;
/* Go on with the fence if every local rank is in and every child's part has come. */
void pmifence_check(struct pmijob *j);
/* A PSM_D_PMI_UP or PSM_D_PMI_DOWN for the job. */
void pmifence_from_daemon(struct pmijob *j, uint32_t from, const struct psmsg *m);
/* A fence's pairs travel in messages of at most this many bytes (PSF_MORE on all but the
 * last of one part). */
#define PMIFENCE_CHUNK (256u << 10)

/* ---- pmi.c: what pmifence.c uses ---- */

/* A fence ended: every local rank in it gets its barrier_out (kvs-fence-response) with rc 0,
 * or -1 and the text. */
void pmi_fence_done(struct pmijob *j, int err, const char *text);
/* The job's store, its bounds, the fence state pmifence.c keeps (the struct is pmi.c's). */
struct pmifence {
    uint32_t epoch;       /* fences completed */
    uint32_t in;          /* local ranks in the current fence */
    uint32_t children_in; /* children whose part of the current fence came */
    uint8_t *child_in;    /* per child: its part came (all its chunks) */
    bool up_sent;         /* our part went to the parent: waiting for the union */
    int err;              /* the fence failed (a bound): the errno, with text */
    char text[256];
    struct pmikvs acc; /* this fence's pairs: local puts and the children's parts */
    uint64_t msgs_in, msgs_out, fences; /* for the log line at the job's end */
};
struct pmifence *pmi_fence_of(struct pmijob *j);
struct pmikvs *pmi_kvs_of(struct pmijob *j);
struct psid *pmi_daemon_of(struct pmijob *j);
uint64_t pmi_job_id(const struct pmijob *j);
/* The tree: the parent (false at the root) and the children. */
bool pmi_parent(const struct pmijob *j, uint32_t *node);
size_t pmi_children(const struct pmijob *j, const uint32_t **nodes);
uint32_t pmi_local_ranks(const struct pmijob *j); /* ranks expected in a fence here */
/* Whether the pair fits the job's bounds with what the store and the fence hold: 0, or
 * -1 with why. */
int pmi_bounds_ok(struct pmijob *j, size_t klen, size_t vlen, char *why, size_t whylen);

/* ---- pmihome.c: the home node's plan for a job (jobs.c) ---- */

struct pmi_plan {
    uint32_t mode;   /* PSPMI_NONE: no plan */
    uint32_t *order; /* the job's nodes, by their first rank: the tree's layout */
    size_t n;
    char *map;      /* PMI_process_mapping, or NULL when the ranks are not in blocks */
    unsigned width; /* k: children per node */
    const struct psconf *conf;
    int32_t *pos; /* per configured node: its index in order, or -1 */
};
/* From the client's request (PSF_PMI) and the placement where[np]: 0, or -1 (ENOMEM). */
int pmi_plan_make(struct psid *d, const struct psmsg *req, const uint32_t *where, uint32_t np,
                  struct pmi_plan *p);
/* The PMI fields of the PSM_D_SPAWN for node: mode, parent, children, mapping. */
void pmi_plan_put(const struct pmi_plan *p, uint32_t node, struct psmsg_buf *b);
/* Its two halves: what every node gets (mode, mapping), and node's own (parent, children). */
void pmi_plan_put_common(const struct pmi_plan *p, struct psmsg_buf *b);
void pmi_plan_put_node(const struct pmi_plan *p, uint32_t node, struct psmsg_buf *b);
/* The most bytes pmi_plan_put adds to a message. */
size_t pmi_plan_size(const struct pmi_plan *p);
void pmi_plan_free(struct pmi_plan *p);

#endif
