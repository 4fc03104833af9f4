/*
 * outfile.h - psrun's -o/--output and -e/--error: where each rank's stdout and stderr go,
 * with srun's modes and filename patterns, so that job scripts carry over.
 *
 * A spec is one of srun's IO modes: "all" (psrun's own stdout or stderr, the default),
 * "none" (dropped, as srun's /dev/null), a rank number (only that rank's output comes to
 * psrun's stream, the others' is dropped), or a filename pattern. In a pattern:
 *   %j job id (as PSI_JOB)   %J job id and step ("%j.0")   %s step id (0)
 *   %t rank   %n the node's index among the job's nodes (0: rank 0's)   %N node name
 *   %u user name   %x job name   %% a percent sign
 * A number between % and the letter zero-pads %t, %n and %s to that width ("%3t" -> 007),
 * as srun does; a pattern that starts with "\\" is taken literally (without the
 * backslashes). Anything else after % is an error, told before any rank starts. One file
 * per distinct name: ranks whose pattern names the same file share it, line by line.
 * A pure module (no I/O): unit-tested in test/unit/test_outfile.c.
 */
#ifndef PSCLUSTER_LOGGER_OUTFILE_H
#define PSCLUSTER_LOGGER_OUTFILE_H

#include "envsel.h"

#include <stddef.h>
#include <stdint.h>

enum lg_out_kind {
    LG_OUT_ALL = 0, /* psrun's stream */
    LG_OUT_NONE,    /* dropped */
    LG_OUT_RANK,    /* only that rank's, to psrun's stream */
    LG_OUT_FILE,    /* a filename pattern */
};

struct lg_outspec {
    enum lg_out_kind kind;
    uint32_t rank;   /* LG_OUT_RANK */
    const char *pat; /* LG_OUT_FILE */
};

/* What a pattern depends on (lg_pat_check's answer). */
#define LG_PAT_RANK 1u /* %t: a file per rank */
#define LG_PAT_NODE 2u /* %n, %N: a file per node */

/* The values a pattern expands to, for one rank. */
struct lg_patvals {
    const char *job;  /* %j, e.g. "0:1718" */
    const char *user; /* %u */
    const char *name; /* %x */
    const char *node; /* %N */
    uint32_t rank;    /* %t */
    uint32_t nodeidx; /* %n */
};

/* Parse an -o/-e argument. 0, or -1 with a message in err (an unknown pattern). */
int lg_outspec_parse(const char *arg, struct lg_outspec *o, char *err, size_t errsz);
/* Check a pattern: what it depends on (LG_PAT_*), or -1 with a message in err. */
int lg_pat_check(const char *pat, char *err, size_t errsz);
/* Expand a checked pattern into out. 0, or -1 (ENAMETOOLONG: does not fit; EINVAL). */
int lg_pat_expand(const char *pat, const struct lg_patvals *v, char *out, size_t outsz);

/* Where each rank's streams go: route[s][rank] (s 0 stdout, 1 stderr) is LG_ROUTE_STD
 * (psrun's stream), LG_ROUTE_NONE (dropped) or an index into paths. */
#define LG_ROUTE_STD  0xffffffffu
#define LG_ROUTE_NONE 0xfffffffeu
struct lg_routes {
    uint32_t *route[2];
    struct lg_strv paths; /* distinct expanded names, in order of first use */
};

/* The job's facts for lg_routes_build: node[r] is rank r's node id, node_name(ctx, id)
 * its name. */
struct lg_jobfacts {
    uint32_t np;
    const uint32_t *node;
    const char *(*node_name)(void *ctx, uint32_t id);
    void *ctx;
    const char *job, *user, *name;
};

/* Build the routes of out (stdout) and err (stderr; NULL: as srun, stderr goes where -o
 * sends stdout, unless that is "all": then to psrun's stderr). 0, or -1 with a message in
 * err_text. */
int lg_routes_build(const struct lg_outspec *out, const struct lg_outspec *err,
                    const struct lg_jobfacts *f, struct lg_routes *r, char *err_text, size_t errsz);
void lg_routes_free(struct lg_routes *r);

#endif
