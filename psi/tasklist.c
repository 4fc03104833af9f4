/*
 * tasklist.c - the task list: the PSM_TASKS call and its reply decoded (see
 * psi_tasklist.h).
 */
#include "psi_tasklist.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int psi_tasklist_parse(const struct psmsg *rep, struct psi_tasklist *l)
{
    memset(l, 0, sizeof *l);
    size_t pos = 0, cap = 0;
    struct psmsg_field f;
    while (psmsg_next(&rep->body, &pos, &f)) {
        if (f.tag != PSF_TASK) continue;
        if (l->n == cap) {
            cap = cap ? cap * 2 : 64;
            struct psi_task *v = realloc(l->v, cap * sizeof *v);
            if (!v) {
                psi_tasklist_free(l);
                errno = ENOMEM;
                return -1;
            }
            l->v = v;
        }
        struct psi_task *t = &l->v[l->n++];
        memset(t, 0, sizeof *t);
        struct psmsg_view rv = psmsg_record(&f);
        psmsg_get_u64(&rv, PSF_TID, &t->tid);
        t->has_job = psmsg_get_u64(&rv, PSF_JOB, &t->job) == 0 && t->job;
        t->has_rank = psmsg_get_u32(&rv, PSF_RANK, &t->rank) == 0 && t->rank != PSI_NO_RANK &&
                      t->rank != PSI_ALL_RANKS;
        psmsg_get_u32(&rv, PSF_UID, &t->uid);
        psmsg_get_u32(&rv, PSF_STATE, &t->state);
        if (psmsg_get_str(&rv, PSF_CMD, t->cmd, sizeof t->cmd) < 0) strcpy(t->cmd, "?");
        if (psmsg_get_str(&rv, PSF_JOB_NAME, t->name, sizeof t->name) < 0) t->name[0] = 0;
    }
    return 0;
}

int psi_tasks(struct psi *c, struct psi_tasklist *l)
{
    struct psmsg rep;
    return psi_ask(c, PSM_TASKS, &rep) < 0 ? -1 : psi_tasklist_parse(&rep, l);
}

void psi_tasklist_free(struct psi_tasklist *l)
{
    free(l->v);
    memset(l, 0, sizeof *l);
}
