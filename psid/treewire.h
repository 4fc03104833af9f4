/*
 * treewire.h - the launch tree's messages (psproto.h: PSM_D_SPAWN_TREE, PSM_D_STARTED):
 * the shape of the tree, and decoders that check every field before psid trusts one. Pure:
 * no daemon state, so that the unit test and the fuzz target drive them alone.
 *
 * The tree: the home node at place 0, the job's other nodes at 1..n-1 in the order of
 * their first ranks; place p's children are k*p+1 .. k*p+k (k = psid.tree_width), the
 * shape of the PMI fence tree (pmihome.c).
 */
#ifndef PSCLUSTER_PSID_TREEWIRE_H
#define PSCLUSTER_PSID_TREEWIRE_H

#include "psmsg.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TREE_WIDTH_MAX 65536u
#define TREE_PARTS_MAX 65536u /* nodes in one PSM_D_SPAWN_TREE */

/* Whether place q lies in the subtree of place p (p itself included). */
bool tree_under(uint64_t q, uint64_t p, uint32_t k);

struct tree_part {
    uint32_t node, pos;
    size_t nranks;
    struct psmsg_view rec; /* the PSF_PART record's fields */
};

struct tree_spawn {
    uint64_t job;
    uint32_t width;
    struct tree_part *parts; /* in increasing place; parts[0] is the receiver's own */
    size_t n;
};

/* The index of the part at place pos among parts[lo..hi) (sorted by place), or hi. */
size_t tree_part_find(const struct tree_part *parts, size_t lo, size_t hi, uint32_t pos);

/* Decode a PSM_D_SPAWN_TREE body for node self: 0, or -1 with why (t then holds nothing).
 * It must have a job, a width in 1..TREE_WIDTH_MAX, 1..TREE_PARTS_MAX parts, each with a
 * node, a place >= 1 and at least one rank, in strictly increasing places, the first
 * self's, every other in its subtree. t->parts point into body; tree_spawn_free frees. */
int tree_spawn_decode(const struct psmsg_view *body, uint32_t self, struct tree_spawn *t,
                      const char **why);
void tree_spawn_free(struct tree_spawn *t);

/* Whether a top-level field of PSM_D_SPAWN_TREE is common to every node (copied to each
 * node's own PSM_D_SPAWN and to each forwarded subtree). */
bool tree_common_field(uint16_t tag);

/* Put the PSM_D_SPAWN of part p into b (begun by the caller): the common fields of body,
 * then the part's own but its node and place. */
void tree_put_local(struct psmsg_buf *b, const struct psmsg_view *body, const struct tree_part *p);

/* What a rank below a lost node of the tree is answered (EHOSTDOWN); name may be NULL. */
void tree_lost_text(char *buf, size_t len, uint32_t node, const char *name);

/* One rank's start answer (a PSF_START record). */
struct tree_start {
    uint32_t rank, node;
    bool ok;
    uint64_t tid;    /* ok */
    char cpus[1100]; /* ok: its CPU list, "" if none */
    uint32_t err;    /* !ok */
    char text[512];  /* !ok */
};

/* Decode one PSF_START record's fields: 0, or -1 with why: no rank or node, neither a
 * tid nor an errno, or a text or CPU list that is not a string that fits. */
int tree_start_decode(const struct psmsg_view *rec, struct tree_start *s, const char **why);
/* The next PSF_START record of a PSM_D_STARTED body from *pos: 1 (decoded into s), 0 (none
 * left), or -1 for one that does not decode (why set; the next call goes on after it). */
int tree_start_next(const struct psmsg_view *body, size_t *pos, struct tree_start *s,
                    const char **why);
/* Put s into b as a PSF_START record. */
void tree_start_put(struct psmsg_buf *b, const struct tree_start *s);

/* A PSF_EXIT record of PSM_D_EXITS: a rank's end, as its node's PSM_D_EXIT says it (rec:
 * those fields, for jobs.c), and whether it ends the job (urgent: a status other than 0,
 * or an MPI rank that spoke PMI and did not finalize). */
struct tree_exit {
    uint32_t rank, node, status;
    bool urgent;
    struct psmsg_view rec;
};
/* 0, or -1 with why: a field missing (PSF_RANK, PSF_NODE_ID, PSF_TID, PSF_STATUS) or of the
 * wrong size. */
int tree_exit_decode(const struct psmsg_view *rec, struct tree_exit *e, const char **why);
/* The next PSF_EXIT record of body from *pos: 1, 0 at the end, -1 (with why) malformed. */
int tree_exit_next(const struct psmsg_view *body, size_t *pos, struct tree_exit *e,
                   const char **why);
/* Whether a PSM_D_EXIT body (or a PSF_EXIT record) ends the job: see struct tree_exit. */
bool tree_exit_urgent(const struct psmsg_view *rec);

#endif
