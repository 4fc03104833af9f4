/*
 * exitcodes.h - what psrun's exit status and its "rank N failed" lines say.
 *
 * Conventions (those of the shell and of srun/mpiexec):
 *   exited with N            -> N
 *   killed by signal N       -> 128 + N
 *   could not start: ENOENT (not found)                      -> 127
 *                    EACCES, ENOEXEC, EISDIR... (not runnable) -> 126
 *                    anything else (fork failed, ...)        -> 1
 *   its node was lost        -> LG_EXIT_LOST (255)
 *   psrun's time limit       -> LG_EXIT_TIMEOUT (124, as timeout(1))
 * The job's status is that of the first rank to fail, in the order psrun learnt of the
 * failures; 0 when every rank exited 0. A SIGSEGV is therefore not hidden behind the
 * SIGTERMs psrun sends the other ranks afterwards.
 */
#ifndef PSCLUSTER_LOGGER_EXITCODES_H
#define PSCLUSTER_LOGGER_EXITCODES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LG_EXIT_LOST     255
#define LG_EXIT_TIMEOUT  124
#define LG_EXIT_NOTFOUND 127
#define LG_EXIT_NOEXEC   126

/* Exit code for a wait(2) status. */
int lg_status_code(uint32_t wstatus);
/* Exit code for a rank that could not be started (errno value). */
int lg_spawn_code(int err);
/* One phrase for a wait(2) status: "exited with status 3", "killed by signal 11 (SIGSEGV),
 * core dumped". Returns buf. */
const char *lg_status_text(uint32_t wstatus, char *buf, size_t n);

struct lg_exitagg {
    bool failed;
    uint32_t rank; /* the first to fail (LG_NO_RANK-like 0xffffffff: not a rank) */
    int code;
};

/* Record an outcome; the first non-zero code decides. */
void lg_exitagg_add(struct lg_exitagg *a, uint32_t rank, int code);
int lg_exitagg_code(const struct lg_exitagg *a);

#endif
