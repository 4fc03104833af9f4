/*
 * psi_tasklist.h - libpsi: the cluster's task list as psid reports it (PSM_TASKS: every
 * task of every node that is up).
 *
 * psi_tasks asks psid; psi_tasklist_parse decodes a PSM_TASKS_REPLY already read. The
 * decoder takes any well-framed message: a task record without a field leaves it zero (no
 * job, no rank), a command missing or too long for cmd is "?", fields of other tags are
 * skipped. Tasks come in psid's order.
 */
#ifndef PSCLUSTER_PSI_TASKLIST_H
#define PSCLUSTER_PSI_TASKLIST_H

#include "psi.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct psi_task {
    uint64_t tid;
    uint64_t job;        /* if has_job */
    uint32_t rank;       /* if has_rank */
    uint32_t uid, state; /* state: PSTASK_RUNNING, PSTASK_EXITED */
    bool has_job, has_rank;
    char cmd[256];
    char name[64]; /* the job's name (psrun -J); empty: none */
};

struct psi_tasklist {
    struct psi_task *v;
    size_t n;
};

/* Ask psid for the cluster's tasks (PSM_TASKS) into *l. 0, or -1 and errno. */
int psi_tasks(struct psi *c, struct psi_tasklist *l);
/* Fill l from a PSM_TASKS_REPLY. 0, or -1 (ENOMEM). */
int psi_tasklist_parse(const struct psmsg *reply, struct psi_tasklist *l);
void psi_tasklist_free(struct psi_tasklist *l);

#endif
