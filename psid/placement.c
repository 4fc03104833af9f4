/*
 * placement.c - rank placement (see placement.h).
 */
#include "placement.h"

#include <stdio.h>
#include <stdlib.h>

static uint64_t busy(const struct place_node *p, uint32_t extra)
{
    uint64_t tasks = (uint64_t)(p->used + extra) * 1000, load = p->load_milli;
    return tasks > load ? tasks : load;
}

int place_ranks(const struct place_node *nodes, size_t n, uint32_t np, uint32_t ppn, bool overbook,
                uint32_t *out, char *why, size_t whylen)
{
    if (n == 0) {
        snprintf(why, whylen, "no node is up in the partition");
        return -1;
    }
    uint32_t *count = calloc(n, sizeof *count);
    if (!count) {
        snprintf(why, whylen, "out of memory");
        return -1;
    }
    for (uint32_t r = 0; r < np; r++) {
        size_t best = n;
        for (size_t i = 0; i < n; i++) {
            const struct place_node *p = &nodes[i];
            if (ppn && count[i] >= ppn) continue;
            if (!overbook && p->used + count[i] >= p->cpus) continue;
            /* compare busy/cpus without division: a/b < c/d  <=>  a*d < c*b */
            if (best == n ||
                busy(p, count[i]) * nodes[best].cpus < busy(&nodes[best], count[best]) * p->cpus)
                best = i;
        }
        if (best == n) {
            if (overbook)
                snprintf(why, whylen, "%u ranks do not fit %zu nodes at %u per node", np, n, ppn);
            else
                snprintf(why, whylen,
                         "%u ranks do not fit the partition's free CPUs%s (--overbook allows "
                         "more)",
                         np, ppn ? " at the --ppn limit" : "");
            free(count);
            return -1;
        }
        count[best]++;
    }
    uint32_t r = 0;
    for (size_t i = 0; i < n; i++)
        for (uint32_t k = 0; k < count[i]; k++) out[r++] = nodes[i].id;
    free(count);
    return 0;
}
