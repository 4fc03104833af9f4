/*
 * multiprog.h - psrun --multi-prog FILE: srun's format for different programs per rank.
 *
 * Each line: RANKS PROGRAM [ARGS...]. RANKS is a list of ranks and ranges ("0,2-4") or "*"
 * (every rank no other line names). Words are split at blanks; '...' and "..." quote, a
 * backslash escapes the next character. In PROGRAM and ARGS, %t is the rank and %o its
 * offset in the line's list (0 for its first rank). A line that is empty or starts with #
 * is skipped. Every rank must have exactly one line.
 *
 * The job runs /bin/sh -c SCRIPT on every rank, the script choosing by $PSI_RANK and
 * exec'ing the rank's program (the same process, so signals, exit status and output are
 * the program's): psid and its spawn credential see one program for the job. Pure
 * (unit-tested: test/unit/test_multiprog.c).
 */
#ifndef PSCLUSTER_LOGGER_MULTIPROG_H
#define PSCLUSTER_LOGGER_MULTIPROG_H

#include "buf.h"

#include <stddef.h>
#include <stdint.h>

struct lg_mprog {
    uint32_t np;
    uint32_t *line;       /* per rank: its line (index into argv) */
    uint32_t *offset;     /* per rank: %o */
    struct lg_strv *argv; /* per line: program and arguments, %t/%o not yet expanded */
    size_t nlines;
};

/* Parse text (a file's contents) for np ranks. 0, or -1 with "LINE: why" in err. */
int lg_mprog_parse(const char *text, uint32_t np, struct lg_mprog *mp, char *err, size_t errsz);
/* Rank r's argument list, %t and %o expanded, into out. 0, or -1 (ENOMEM). */
int lg_mprog_argv(const struct lg_mprog *mp, uint32_t r, struct lg_strv *out);
/* The shell script that runs each rank's program: malloc'ed, or NULL (ENOMEM). */
char *lg_mprog_script(const struct lg_mprog *mp);
void lg_mprog_free(struct lg_mprog *mp);

#endif
