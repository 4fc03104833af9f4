/*
 * binding.c - which CPUs of this node a rank is bound to (srun's --cpu-bind, as Slurm's
 * task/affinity does it), and which of them the node's jobs hold.
 *
 * The CPUs are psid's own (sched_getaffinity at start: a psid confined to some CPUs binds
 * within them), grouped in cores by /sys/devices/system/cpu/cpuN/topology/thread_siblings_list
 * (hyperthreads of one core; a CPU without it is a core of its own). Each CPU counts the
 * bound tasks on it. A rank takes:
 *   cores    whole free cores until it has its CPUs (-c), each with all its threads
 *   threads  that many free CPUs (threads)
 *   map_cpu, mask_cpu  the list's entry for its place among the job's ranks on this node
 *   none     nothing: it is not bound and counts nowhere
 *   auto     (no --cpu-bind) cores if the job's ranks here fill the node's CPUs, else none
 * Without free cores (threads) a rank of a job that may overbook shares the least used ones;
 * one that may not fails (EBUSY) with the reason, but for auto, which then leaves the rank
 * unbound. So two jobs on a node never get the same cores unless one overbooks. The counts
 * go down when a task leaves the table (tasks.c).
 */
#include "binding.h"

#include "log.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct binding {
    struct pscpuset own;
    unsigned ncpus;
    uint16_t core[PSCPU_MAX]; /* a CPU's core: the lowest CPU among its siblings */
    uint32_t use[PSCPU_MAX];  /* bound tasks on it */
};

static struct binding *state(struct psid *d)
{
    if (d->binding) return d->binding;
    struct binding *b = calloc(1, sizeof *b);
    if (!b) return NULL;
    cpu_set_t own;
    if (sched_getaffinity(0, sizeof own, &own) == 0) {
        for (unsigned c = 0; c < PSCPU_MAX && c < CPU_SETSIZE; c++)
            if (CPU_ISSET(c, &own)) pscpu_set(&b->own, c);
    } else {
        pscpu_set(&b->own, 0);
    }
    b->ncpus = pscpu_count(&b->own);
    for (unsigned c = 0; c < PSCPU_MAX; c++) {
        b->core[c] = (uint16_t)c;
        if (!pscpu_isset(&b->own, c)) continue;
        char path[96], line[512];
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%u/topology/thread_siblings_list",
                 c);
        FILE *f = fopen(path, "re");
        struct pscpuset sib;
        if (f && fgets(line, sizeof line, f)) {
            line[strcspn(line, "\n")] = 0;
            if (pscpu_parse_list(line, &sib, NULL, 0) == 0)
                for (unsigned k = 0; k < c; k++)
                    if (pscpu_isset(&sib, k) && pscpu_isset(&b->own, k)) {
                        b->core[c] = (uint16_t)k;
                        break;
                    }
        }
        if (f) fclose(f);
    }
    d->binding = b;
    return b;
}

void binding_init(struct psid *d)
{
    struct binding *b = state(d);
    if (!b) return;
    char list[512];
    unsigned cores = 0;
    for (unsigned c = 0; c < PSCPU_MAX; c++) cores += pscpu_isset(&b->own, c) && b->core[c] == c;
    if (pscpu_format_list(&b->own, list, sizeof list) < 0) strcpy(list, "...");
    log_info("CPUs %s: %u cores, %u threads", list, cores, b->ncpus);
}

const struct pscpuset *binding_cpus(struct psid *d)
{
    struct binding *b = state(d);
    return b ? &b->own : NULL;
}

/* The use of core c's CPUs, summed; *n its CPUs. */
static uint64_t core_use(const struct binding *b, unsigned c, unsigned *n)
{
    uint64_t u = 0;
    *n = 0;
    for (unsigned k = c; k < PSCPU_MAX; k++)
        if (pscpu_isset(&b->own, k) && b->core[k] == c) {
            u += b->use[k];
            (*n)++;
        }
    return u;
}

/* Take the least used units (cores, or threads) in order until want CPUs are in *out; only
 * unused ones unless share. 0, or -1 if there are not enough. */
static int take(const struct binding *b, bool cores, uint32_t want, bool share,
                struct pscpuset *out)
{
    memset(out, 0, sizeof *out);
    uint32_t got = 0;
    for (uint64_t level = 0; got < want; level++) {
        bool any_left = false;
        for (unsigned c = 0; c < PSCPU_MAX && got < want; c++) {
            if (!pscpu_isset(&b->own, c) || pscpu_isset(out, c)) continue;
            if (cores && b->core[c] != c) continue;
            unsigned n = 1;
            uint64_t u = cores ? core_use(b, c, &n) : b->use[c];
            if (u > level) {
                any_left = true;
                continue;
            }
            for (unsigned k = c; k < PSCPU_MAX; k++)
                if (pscpu_isset(&b->own, k) && (cores ? b->core[k] == c : k == c)) {
                    pscpu_set(out, k);
                    got++;
                }
        }
        if (got >= want) break;
        if (!share || !any_left) return got >= want ? 0 : -1;
    }
    return 0;
}

int binding_choose(struct psid *d, const struct binding_req *r, struct pscpuset *out, char *why,
                   size_t whylen)
{
    struct binding *b = state(d);
    uint32_t mode = r->mode & PSBIND_MODE_MASK;
    uint32_t cpt = r->cpt ? r->cpt : 1;
    if (!b) {
        snprintf(why, whylen, "out of memory");
        return -1;
    }
    if (mode == PSBIND_AUTO)
        mode = (uint64_t)r->nlocal * cpt >= b->ncpus ? PSBIND_CORES : PSBIND_NONE;
    if (mode == PSBIND_NONE) return 0;
    char own[256];
    if (pscpu_format_list(&b->own, own, sizeof own) < 0) strcpy(own, "...");
    if (mode == PSBIND_MAP_CPU || mode == PSBIND_MASK_CPU) {
        if (!r->map || pscpu_map_entry(r->map, mode == PSBIND_MASK_CPU, r->local, out) < 0) {
            snprintf(why, whylen, "--cpu-bind: a bad %s list",
                     mode == PSBIND_MASK_CPU ? "mask_cpu" : "map_cpu");
            return -1;
        }
        int outside = pscpu_first_outside(out, &b->own);
        if (outside >= 0) {
            snprintf(why, whylen, "--cpu-bind: CPU %d is not a CPU of node %u (%s) (its CPUs: %s)",
                     outside, d->self->id, d->self->name, own);
            return -1;
        }
        return 1;
    }
    bool cores = mode == PSBIND_CORES;
    if (cpt > b->ncpus) {
        snprintf(why, whylen, "-c %u: node %u (%s) has %u CPUs (%s)", cpt, d->self->id,
                 d->self->name, b->ncpus, own);
        return -1;
    }
    if (take(b, cores, cpt, r->overbook, out) == 0) return 1;
    if ((r->mode & PSBIND_MODE_MASK) == PSBIND_AUTO) return 0; /* unbound, as if none */
    snprintf(why, whylen,
             "node %u (%s): no %u free %s for the rank (--cpu-bind=%s; other jobs hold them; "
             "--overbook shares)",
             d->self->id, d->self->name, cpt, cores ? "CPUs in whole cores" : "CPUs",
             cores ? "cores" : "threads");
    return -1;
}

void binding_hold(struct psid *d, const struct pscpuset *s, int delta)
{
    struct binding *b = state(d);
    if (!b) return;
    for (unsigned c = 0; c < PSCPU_MAX; c++)
        if (pscpu_isset(s, c)) {
            if (delta < 0 && b->use[c] == 0) continue;
            b->use[c] = (uint32_t)((int64_t)b->use[c] + delta);
        }
}

void binding_free(struct psid *d)
{
    free(d->binding);
    d->binding = NULL;
}
