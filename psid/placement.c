/*
 * placement.c - rank placement (see placement.h).
 */
#include "placement.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t busy(const struct place_node *p, uint32_t extra)
{
    uint64_t tasks = ((uint64_t)p->used + extra) * 1000, load = p->load_milli;
    return tasks > load ? tasks : load;
}

/* how many ranks node p may take (UINT32_MAX: no limit) */
static uint32_t room(const struct place_node *p, const struct place_opts *o)
{
    uint32_t r = UINT32_MAX, cpt = o->cpt ? o->cpt : 1;
    if (!o->overbook) r = p->used >= p->cpus ? 0 : (p->cpus - p->used) / cpt;
    if (o->ppn && o->ppn < r) r = o->ppn;
    if (o->exclusive && p->used) r = 0;
    return r;
}

/* a is less busy per CPU than b (with extra CPUs used each): a/b < c/d <=> a*d < c*b; at equal
 * busyness (a load average above both nodes' tasks: work that is not ours, or all nodes on
 * one machine) the one with fewer of our tasks per CPU, so that ranks still spread */
static bool less_busy(const struct place_node *a, uint32_t ea, const struct place_node *b,
                      uint32_t eb)
{
    uint64_t x = busy(a, ea) * b->cpus, y = busy(b, eb) * a->cpus;
    if (x != y) return x < y;
    return ((uint64_t)a->used + ea) * b->cpus < ((uint64_t)b->used + eb) * a->cpus;
}

void place_number(const uint32_t *ids, const uint32_t *count, size_t n, uint32_t np,
                  enum place_dist dist, uint32_t plane, uint32_t *out)
{
    uint32_t r = 0;
    if (dist == PLACE_BLOCK) {
        for (size_t i = 0; i < n; i++)
            for (uint32_t k = 0; k < count[i]; k++) out[r++] = ids[i];
        return;
    }
    uint32_t step = dist == PLACE_PLANE && plane ? plane : 1;
    uint32_t *left = malloc(n * sizeof *left);
    if (!left) { /* out of memory: block numbering is still a placement */
        place_number(ids, count, n, np, PLACE_BLOCK, 0, out);
        return;
    }
    memcpy(left, count, n * sizeof *left);
    while (r < np)
        for (size_t i = 0; i < n && r < np; i++)
            for (uint32_t k = 0; k < step && left[i]; k++, left[i]--) out[r++] = ids[i];
    free(left);
}

/* srun's -N: mark (chosen[i]) the fewest of the least busy nodes, between nmin and nmax,
 * that hold np ranks. 0, or -1 with why. */
static int choose_nodes(const struct place_node *nodes, size_t n, uint32_t np,
                        const struct place_opts *o, bool *chosen, char *why, size_t whylen)
{
    size_t *order = malloc(n * sizeof *order);
    if (!order) {
        snprintf(why, whylen, "out of memory");
        return -1;
    }
    size_t m = 0;
    for (size_t i = 0; i < n; i++) /* usable nodes, least busy first (stable: insertion) */
        if (room(&nodes[i], o)) {
            size_t k = m++;
            while (k > 0 && less_busy(&nodes[i], 0, &nodes[order[k - 1]], 0)) {
                order[k] = order[k - 1];
                k--;
            }
            order[k] = i;
        }
    uint32_t nmax = o->nmax && o->nmax < m ? o->nmax : (uint32_t)m;
    uint64_t fit = 0;
    size_t k = 0;
    for (; k < nmax; k++) {
        uint32_t r = room(&nodes[order[k]], o);
        fit = r == UINT32_MAX || fit + r > UINT32_MAX ? UINT32_MAX : fit + r;
        if (k + 1 >= o->nmin && fit >= np) break;
    }
    if (k >= nmax || k + 1 < o->nmin) {
        snprintf(why, whylen,
                 "%u ranks do not fit %u to %u nodes of the partition (%zu can take ranks%s)", np,
                 o->nmin, o->nmax ? o->nmax : o->nmin, m, o->exclusive ? " exclusively" : "");
        free(order);
        return -1;
    }
    for (size_t i = 0; i <= k; i++) chosen[order[i]] = true;
    free(order);
    return 0;
}

int place_job(const struct place_node *nodes, size_t n, uint32_t np, const struct place_opts *o,
              uint32_t *out, char *why, size_t whylen)
{
    if (n == 0) {
        snprintf(why, whylen, "no node is up in the partition");
        return -1;
    }
    if (o->nmin && np < o->nmin) {
        snprintf(why, whylen, "%u ranks cannot use %u nodes (each node gets a rank)", np, o->nmin);
        return -1;
    }
    uint32_t *count = calloc(n, sizeof *count), *ids = calloc(n, sizeof *ids);
    bool *chosen = calloc(n, sizeof *chosen);
    int rc = -1;
    if (!count || !ids || !chosen) {
        snprintf(why, whylen, "out of memory");
        goto out;
    }
    if (o->nmin) {
        if (choose_nodes(nodes, n, np, o, chosen, why, whylen) < 0) goto out;
        for (size_t i = 0; i < n; i++) count[i] = chosen[i]; /* a rank on each */
    } else {
        for (size_t i = 0; i < n; i++) chosen[i] = true;
    }
    uint32_t placed = 0, cpt = o->cpt ? o->cpt : 1; /* a rank placed adds cpt CPUs of use */
    for (size_t i = 0; i < n; i++) placed += count[i];
    for (uint32_t r = placed; r < np; r++) {
        size_t best = n;
        for (size_t i = 0; i < n; i++) {
            const struct place_node *p = &nodes[i];
            if (!chosen[i] || count[i] >= room(p, o)) continue;
            if (best == n || less_busy(p, count[i] * cpt, &nodes[best], count[best] * cpt))
                best = i;
        }
        if (best == n) {
            if (o->exclusive)
                snprintf(why, whylen,
                         "%u ranks do not fit the partition's nodes that run nothing else "
                         "(--exclusive)",
                         np);
            else if (o->overbook)
                snprintf(why, whylen, "%u ranks do not fit %zu nodes at %u per node", np, n,
                         o->ppn);
            else
                snprintf(why, whylen,
                         "%u ranks%s do not fit the partition's free CPUs%s (--overbook allows "
                         "more)",
                         np, o->cpt > 1 ? " of their -c CPUs each" : "",
                         o->ppn ? " at the --ppn limit" : "");
            goto out;
        }
        count[best]++;
    }
    for (size_t i = 0; i < n; i++) ids[i] = nodes[i].id;
    place_number(ids, count, n, np, o->dist, o->plane, out);
    rc = 0;
out:
    free(count);
    free(ids);
    free(chosen);
    return rc;
}

int place_ranks(const struct place_node *nodes, size_t n, uint32_t np, uint32_t ppn, bool overbook,
                uint32_t *out, char *why, size_t whylen)
{
    struct place_opts o = {.ppn = ppn, .overbook = overbook};
    return place_job(nodes, n, np, &o, out, why, whylen);
}
