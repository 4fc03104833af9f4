/*
 * privbcast.h - the privileged child's part of a file broadcast (privsep.h: PRIV_BCAST_*):
 * the copies of broadcasts on this node, each made, renamed into place and removed by a
 * process of the child's that has become the user first (setgroups, setgid, setuid), as
 * Slurm's slurmd makes sbcast's files, so that a user only ever writes where the user could
 * write oneself, and the kernel, not psid, judges the path ('..', symbolic links,
 * permissions). The child opens a copy only on a broadcast credential that a privileged
 * child of the cluster made for this node (spawncred.h, with bcast_digest's digest), and
 * renames and removes only the files it made itself: what it made is in its own table,
 * whatever the engine says.
 */
#ifndef PSCLUSTER_PSID_PRIVBCAST_H
#define PSCLUSTER_PSID_PRIVBCAST_H

#include "psmsg.h"
#include "spawncred.h"

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define PRIVBCAST_FILES_MAX 1040 /* copies and temporary files the child keeps at once */

/* What the child knows that a broadcast's file needs. */
struct privbcast_env {
    const uint8_t *key;          /* the spawn key: the credentials' MAC */
    struct spawncred_book *book; /* the credentials taken (a replay is refused) */
    uint32_t node;               /* this node: the credential's target */
    const char *node_name;       /* %N */
    bool root;                   /* the child is root: the helper becomes the user */
    bool root_jobs;              /* psid.root_jobs: files of root allowed */
    /* the user's supplementary groups (the child's own lookup) */
    void (*groups)(void *ctx, uint32_t uid, uint32_t gid, const gid_t **g, int *n);
    void *ctx;
    uint8_t *wipe; /* secrets a helper wipes before it becomes the user */
    size_t wipelen;
};

struct privbcast;
struct privbcast *privbcast_new(void);
/* PRIV_BCAST_OPEN: the answer's fields into b (PRIV_BCAST_OPENED, begun by the caller);
 * *fd: the temporary file beside the destination, open for writing (the caller passes and
 * closes it), or -1 with ERRNO and TEXT in b. */
void privbcast_open(struct privbcast *pb, const struct privbcast_env *env, const struct psmsg *m,
                    struct psmsg_buf *b, int *fd);
/* PRIV_BCAST_COMMIT: its permission bits (and with PSBCAST_F_PRESERVE its times) set, the
 * temporary file renamed to the destination (without PSBCAST_F_FORCE: only if nothing is
 * there); ERRNO (and TEXT) into b. A failure removes the temporary file. */
void privbcast_commit(struct privbcast *pb, const struct privbcast_env *env, const struct psmsg *m,
                      struct psmsg_buf *b);
/* PRIV_BCAST_DROP: remove the copy or temporary file of a broadcast (JOB), or of every
 * broadcast of a home node (HOME), and forget them. */
void privbcast_drop(struct privbcast *pb, const struct privbcast_env *env, const struct psmsg *m);
/* The child ends: every file still in the table is removed. */
void privbcast_free(struct privbcast *pb, const struct privbcast_env *env);

#endif
