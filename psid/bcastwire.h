/*
 * bcastwire.h - the file broadcast's messages (psproto.h: PSM_D_BCAST_*): the limits both
 * ends keep, the digest a broadcast credential binds, the destination pattern's check, and
 * decoders that check every field before psid trusts one. Pure: no daemon state, so that
 * the unit test and the fuzz target drive them alone.
 *
 * The tree is the launch tree's shape (treewire.h): the home at place 0, the nodes of the
 * broadcast at 1..n-1 in the client's order (the home's own place is 0 whether it is a
 * target or only the source), place p's children k*p+1 .. k*p+k.
 */
#ifndef PSCLUSTER_PSID_BCASTWIRE_H
#define PSCLUSTER_PSID_BCASTWIRE_H

#include "psmsg.h"
#include "psproto.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define BCAST_CHUNK     (256u << 10) /* bytes per chunk the home sends */
#define BCAST_CHUNK_MIN 4096u
#define BCAST_WINDOW    4u           /* chunks a node holds, and sends a child unacknowledged */
#define BCAST_SIZE_MAX  (1ull << 40) /* bytes of a file (chunk numbers stay below 2^32) */
#define BCAST_PARTS_MAX 65536u       /* nodes in one PSM_D_BCAST_OPEN */
#define BCAST_PER_UID   4u           /* broadcasts of one uid under way on a node (not root) */
#define BCAST_MAX       16u          /* broadcasts under way on a node */
#define BCAST_KEPT_MAX  1024u        /* copies a node remembers to remove after their job */
#define BCAST_STALL_NS  (15ull * 1000000000ull) /* a child silent so long is given up */
#define BCAST_ALIVE_NS  (1000000000ull)         /* a running node says it lives this often */

/* The digest a node's broadcast credential binds (spawncred.h's digest field), under a label
 * of its own (no spawn digest can equal one): the destination pattern, the flags (but
 * PSBCAST_F_PRESERVE), the permission bits and the size. */
void bcast_digest(const char *dest, uint32_t flags, uint32_t mode, uint64_t size, uint8_t out[32]);

/* A destination pattern: absolute, at most PSBCAST_DEST_MAX - 1 bytes, a valid pattern of
 * logger/outfile.h without %t (one copy per node). 0, or -1 with a message in err. */
int bcast_dest_check(const char *pat, char *err, size_t errsz);

/* One node of a broadcast's subtree (a PSF_PART record). */
struct bcast_part {
    uint32_t node, pos, nodeidx;
    const uint8_t *cred; /* NULL: the node only relays */
    size_t credlen;
    struct psmsg_view rec; /* the record's fields, forwarded as they came */
};

/* A decoded PSM_D_BCAST_OPEN. */
struct bcast_open {
    uint64_t id, size, mtime, atime;
    uint32_t uid, gid, flags, mode, chunk, width;
    char dest[PSBCAST_DEST_MAX];
    struct bcast_part *parts; /* in increasing place; parts[0] is the receiver's */
    size_t n;
    uint32_t nchunks; /* of chunk bytes, the last one the rest */
};

/* Decode a PSM_D_BCAST_OPEN body for node self: 0, or -1 with why (o then holds nothing).
 * It must have an id, uid and gid (not -1), a destination that bcast_dest_check takes, a
 * size up to BCAST_SIZE_MAX, flags within PSBCAST_F_ALL, a mode within 0777, a chunk size in
 * BCAST_CHUNK_MIN..PSBCAST_CHUNK_MAX, a width in 1..TREE_WIDTH_MAX, and 1..BCAST_PARTS_MAX
 * parts, each with a node, a place >= 1 and a node index, in strictly increasing places, the
 * first self's, every other in its subtree with its parent among them, no node twice.
 * o->parts point into body; bcast_open_free frees. */
int bcast_open_decode(const struct psmsg_view *body, uint32_t self, struct bcast_open *o,
                      const char **why);
void bcast_open_free(struct bcast_open *o);

/* The receiver's children among o's parts: kid_of[i] (i >= 1) is the index, in kids[], of
 * the child whose subtree part i is in; kids[c] the part index of child c (its own part).
 * kid_of and kids have room for o->n entries. The number of children. */
size_t bcast_kids(const struct bcast_open *o, uint32_t *kid_of, uint32_t *kids);

/* A PSM_D_BCAST_DATA's fields: 0, or -1 (no id, no chunk number, no data). */
int bcast_data_decode(const struct psmsg_view *body, uint64_t *id, uint32_t *idx,
                      struct psmsg_field *data);
/* A PSM_D_BCAST_END's: 0, or -1 (no id, or a sum that is not 32 bytes). */
int bcast_end_decode(const struct psmsg_view *body, uint64_t *id, uint8_t sum[32]);

/* The bytes of chunk idx of a file of size bytes in chunks of chunk bytes (0: none). */
size_t bcast_chunk_len(uint64_t size, uint32_t chunk, uint32_t idx);
/* The number of chunks of a file of size bytes. */
uint32_t bcast_nchunks(uint64_t size, uint32_t chunk);

#endif
