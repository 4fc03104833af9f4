/*
 * psi_bcast.h - file broadcast through psid (psbcast, psrun --bcast): a file copied to
 * node-local storage of many nodes down a tree of their psids, pipelined in chunks, each
 * copy checked (BLAKE2b of the whole file) before it is renamed into place, written as the
 * requesting user (psproto.h, "File broadcast").
 *
 * The outcome (PSM_BCAST_DONE, and the daemons' PSM_D_BCAST_DONE, which has the same
 * fields) is decoded here, with every field checked, for psid as for the tools.
 */
#ifndef PSCLUSTER_PSI_BCAST_H
#define PSCLUSTER_PSI_BCAST_H

#include "psi.h"
#include "psi_nodes.h"

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

/* What to broadcast. */
struct psi_bcast_req {
    int fd;                /* the file, open for reading; passed to psid */
    const char *dest;      /* the destination pattern: absolute, %j %N %n %u %% */
    const uint32_t *nodes; /* n node ids, in order (%n); n 0: every node that is up */
    size_t n;
    uint32_t flags; /* PSBCAST_F_* */
    uint32_t width; /* children per node of the tree; 0: psid.bcast_width */
    uint64_t job;   /* a held spawn of this connection whose id the broadcast takes; 0: none */
};

/* One node without its copy. */
struct psi_bcast_fail {
    uint32_t node;
    int err;
    char text[300];
};

/* The outcome. */
struct psi_bcast_result {
    uint64_t id, bytes, elapsed_us;
    uint32_t ok;     /* nodes with the copy */
    uint32_t failed; /* nodes without: the first nfails of them below */
    struct psi_bcast_fail fails[PSBCAST_FAILS];
    size_t nfails;
};

/* Broadcast and wait for the outcome (events of other kinds that come meanwhile are
 * dropped: call it when none are expected). 0 with *res (res->failed may be > 0), or -1
 * and errno: psid's refusal (its text in res->fails[0].text, nfails 0) or a failure of the
 * connection. */
int psi_bcast(struct psi *c, const struct psi_bcast_req *r, struct psi_bcast_result *res);

/* Decode an outcome's fields (PSF_COUNT, PSF_N, at most PSBCAST_FAILS PSF_BCAST_FAIL records
 * {PSF_NODE_ID, PSF_ERRNO > 0, PSF_TEXT that fits}, PSF_N at least their number, and
 * optionally PSF_BCAST_ID and PSF_ELAPSED_US) into *res: 0, or -1 with why. */
int psi_bcast_result_parse(const struct psmsg_view *body, struct psi_bcast_result *res,
                           const char **why);
/* The destination pattern of a command line's DEST (NULL: none given) for a copy named name
 * (a pattern: escape a file's own name with psi_bcast_escape): no DEST: /tmp/NAME; a DEST
 * ending in '/': a directory, DEST/NAME; a relative one is taken from the working
 * directory. Into out; 0, or -1 and errno (ENAMETOOLONG, getcwd's). */
int psi_bcast_dest(const char *dest, const char *name, char *out, size_t n);
/* s with every '%' doubled (a file name taken literally in a pattern). 0, or -1 if it does
 * not fit n. */
int psi_bcast_escape(const char *s, char *out, size_t n);
/* Print each node without its copy to f, "PROG: node ID (NAME): TEXT", and how many more
 * failed than are named (t: the node table, for the names; may be NULL). */
void psi_bcast_report(FILE *f, const char *prog, const struct psi_bcast_result *r,
                      const struct psi_nodetab *t);
/* Put a PSF_BCAST_FAIL record. */
void psi_bcast_fail_put(struct psmsg_buf *b, uint32_t node, int err, const char *text);

#endif
