/*
 * fuzz_psi_tasklist.c - libFuzzer target for libpsi's task-list decoder
 * (psi/tasklist.c): any bytes that frame as a message are decoded as a PSM_TASKS_REPLY, and
 * every task's command must be a terminated string.
 */
#include "psi_tasklist.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct psmsg m;
    struct psi_tasklist l;
    if (psmsg_parse(data, size, &m) < 0 || psi_tasklist_parse(&m, &l) < 0) return 0;
    for (size_t i = 0; i < l.n; i++)
        if (!memchr(l.v[i].cmd, '\0', sizeof l.v[i].cmd)) abort();
    psi_tasklist_free(&l);
    return 0;
}
