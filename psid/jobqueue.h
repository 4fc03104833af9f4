/*
 * jobqueue.h - the spawn requests that wait for room (jobqueue.c): with gang scheduling on,
 * a job that fits no row of the matrix waits here, in the order it came, until jobs end
 * (docs/gang.md, "The queue"). A plain FIFO of copies of the requests with the bounds of a
 * per-client resource; it knows nothing of placement: jobs.c looks at its head and takes
 * what starts.
 */
#ifndef PSCLUSTER_PSID_JOBQUEUE_H
#define PSCLUSTER_PSID_JOBQUEUE_H

#include "psmsg.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct client;

#define JOBQ_MAX     256u /* queued spawns on this node */
#define JOBQ_PER_UID 16u  /* of them, one user's (root's too: a bound, not a privilege) */
/* The bytes of the requests held (their bodies), on this node and of one user (root's
 * too). A spawn is argv and the exported environment: a few KiB usually, up to PSMSG_MAX
 * (1 MiB: psrun --export-all of a large environment). A user's share holds four requests
 * of that size (or its 16 of 256 KiB): one of the largest always fits a user with nothing
 * queued. The node's holds eight users at their full share; with client.c's 64 MiB of
 * request buffers being read, the requests psid holds stay under 100 MiB. Without them a
 * user could make psid hold 16 MiB and the node 256 MiB. */
#define JOBQ_BYTES_PER_UID (4u << 20)
#define JOBQ_BYTES         (32u << 20)
/* a new job that fits starts at once, passing the queue, only while the queue's first has
 * waited less than this: small jobs cannot starve a large one */
#define JOBQ_PASS_NS 2000000000ull

struct jobq_entry {
    struct jobq_entry *next;
    struct client *c; /* the requesting client (each has at most one spawn queued) */
    uint32_t uid;
    uint64_t since_ns; /* queued at (the loop's clock) */
    uint16_t type;
    uint32_t id; /* the request's id: the answer's, when it starts */
    uint8_t *body;
    size_t len;
};

struct jobq {
    struct jobq_entry *head, *tail;
    unsigned n;
    size_t bytes; /* of the entries' bodies */
};

/* Appends a copy of m for c. Its place (1: the head), or -1 with errno ENOBUFS (a count:
 * JOBQ_MAX, or JOBQ_PER_UID of uid), ENOSPC (m's body is more than jobq_room(q, uid))
 * or ENOMEM. */
int jobq_add(struct jobq *q, struct client *c, uint32_t uid, const struct psmsg *m,
             uint64_t now_ns);
/* The entry of c, or NULL. */
struct jobq_entry *jobq_of_client(const struct jobq *q, const struct client *c);
/* The request an entry holds (valid while the entry is). */
struct psmsg jobq_msg(const struct jobq_entry *e);
/* Removes e and frees it. */
void jobq_del(struct jobq *q, struct jobq_entry *e);
/* Entries of uid. */
unsigned jobq_of_uid(const struct jobq *q, uint32_t uid);
/* The bytes of the entries of uid. */
size_t jobq_bytes_of_uid(const struct jobq *q, uint32_t uid);
/* The largest body a spawn of uid may have to be queued now: what is left of uid's share
 * (JOBQ_BYTES_PER_UID) or of the node's (JOBQ_BYTES), the smaller. */
size_t jobq_room(const struct jobq *q, uint32_t uid);
/* Frees every entry. */
void jobq_free(struct jobq *q);

#endif
