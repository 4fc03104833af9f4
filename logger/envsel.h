/*
 * envsel.h - the environment psrun sends with a job.
 *
 * By default: PATH, HOME, USER, LANG, LD_LIBRARY_PATH, LD_PRELOAD and every PSI_*, PSP_*
 * and OMP_* variable, plus the names listed in PSI_EXPORTS (comma separated, ParaStation's
 * way). --export-all: everything. -x VAR takes VAR from psrun's environment (if set), -x
 * VAR=VALUE sets it; -x A,B (no '=') is two names. What psid sets for each task (PSI_RANK,
 * PSI_SIZE, PSI_TID, PSI_NODE, PSI_NODENAME, PSI_JOB, PSID_SOCKET) is never sent, so a
 * psrun started inside a job does not hand its own values on.
 */
#ifndef PSCLUSTER_LOGGER_ENVSEL_H
#define PSCLUSTER_LOGGER_ENVSEL_H

#include "buf.h"

#include <stdbool.h>
#include <stddef.h>

/* Select from envp (NULL-terminated "NAME=VALUE") into out; later entries override earlier
 * ones with the same name (-x VAR=VALUE over the inherited VAR). 0, or -1 (ENOMEM). */
int lg_env_select(char *const *envp, const char *const *xs, size_t nx, bool all,
                  struct lg_strv *out);

#endif
