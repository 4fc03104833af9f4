/*
 * pmihome.c - what the home node tells each node of a PMI job, in its PSM_D_SPAWN
 * (docs/pmi.md): the mode (PSF_PMI), the node's place in the fence tree (PSF_PMI_PARENT,
 * PSF_PMI_CHILD...) and PMI_process_mapping (PSF_PMI_MAP), which every node puts in its
 * store before the ranks start.
 *
 * The tree: the job's nodes in the order of their first ranks, node i's children at
 * k*i+1 .. k*i+k (k = pmi.tree_width), the root the node of rank 0. The mapping is MPICH's
 * "(vector,(NODE,NNODES,PPN),...)", NODE an index in that order; psid places ranks in
 * blocks, node by node, so it always exists unless it would not fit a value (1024 bytes),
 * when it is left out (MPICH then finds its node-mates by host name).
 */
#include "pmi.h"

#include "pmiwire.h"
#include "psproto.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void pmi_plan_free(struct pmi_plan *p)
{
    free(p->order);
    free(p->map);
    free(p->pos);
    memset(p, 0, sizeof *p);
}

/* The mapping, if the ranks are in blocks: node order[i] holds ranks first[i] .. +count[i]. */
static char *make_map(const uint32_t *where, uint32_t np, size_t n, const struct psconf *conf,
                      const int32_t *pos)
{
    uint32_t *count = calloc(n ? n : 1, sizeof *count);
    char *map = malloc(PMI_VAL_MAX + 1);
    if (!count || !map) goto fail;
    size_t cur = 0;
    for (uint32_t r = 0; r < np; r++) {
        const struct psconf_node *cn = psconf_node_by_id(conf, where[r]);
        size_t i = cn ? (size_t)pos[cn - conf->nodes] : n;
        if (i != cur) { /* a new block must be the next node */
            if (r == 0 || i != cur + 1) goto fail;
            cur = i;
        }
        count[i]++;
    }
    size_t len = (size_t)snprintf(map, PMI_VAL_MAX + 1, "(vector");
    for (size_t i = 0; i < n;) {
        size_t k = i + 1;
        while (k < n && count[k] == count[i]) k++;
        int w = snprintf(map + len, PMI_VAL_MAX + 1 - len, ",(%zu,%zu,%u)", i, k - i, count[i]);
        if (w < 0 || len + (size_t)w >= PMI_VAL_MAX) goto fail;
        len += (size_t)w;
        i = k;
    }
    if (len + 1 >= PMI_VAL_MAX) goto fail;
    map[len++] = ')';
    map[len] = 0;
    free(count);
    return map;
fail:
    free(count);
    free(map);
    return NULL;
}

int pmi_plan_make(struct psid *d, const struct psmsg *req, const uint32_t *where, uint32_t np,
                  struct pmi_plan *p)
{
    memset(p, 0, sizeof *p);
    uint32_t mode = PSPMI_MODE_NONE;
    if (psmsg_get_u32(&req->body, PSF_PMI, &mode) < 0 || mode == PSPMI_MODE_NONE ||
        mode > PSPMI_MODE_MAX)
        return 0;
    const struct psconf *conf = &d->conf;
    p->conf = conf;
    p->width = conf->pmi_tree_width ? conf->pmi_tree_width : 1;
    p->order = calloc(conf->nnodes ? conf->nnodes : 1, sizeof *p->order);
    p->pos = malloc((conf->nnodes ? conf->nnodes : 1) * sizeof *p->pos);
    if (!p->order || !p->pos) {
        pmi_plan_free(p);
        return -1;
    }
    for (size_t i = 0; i < conf->nnodes; i++) p->pos[i] = -1;
    for (uint32_t r = 0; r < np; r++) {
        const struct psconf_node *cn = psconf_node_by_id(conf, where[r]);
        if (!cn || p->pos[cn - conf->nodes] >= 0) continue;
        p->pos[cn - conf->nodes] = (int32_t)p->n;
        p->order[p->n++] = cn->id;
    }
    p->map = make_map(where, np, p->n, conf, p->pos);
    p->mode = mode;
    return 0;
}

void pmi_plan_put_common(const struct pmi_plan *p, struct psmsg_buf *b)
{
    if (p->mode == PSPMI_MODE_NONE) return;
    psmsg_put_u32(b, PSF_PMI, p->mode);
    if (p->map) psmsg_put_str(b, PSF_PMI_MAP, p->map);
}

void pmi_plan_put_node(const struct pmi_plan *p, uint32_t node, struct psmsg_buf *b)
{
    if (p->mode == PSPMI_MODE_NONE) return;
    const struct psconf_node *cn = psconf_node_by_id(p->conf, node);
    if (!cn || p->pos[cn - p->conf->nodes] < 0) return;
    size_t i = (size_t)p->pos[cn - p->conf->nodes], k = p->width;
    if (i > 0) psmsg_put_u32(b, PSF_PMI_PARENT, p->order[(i - 1) / k]);
    for (size_t c = k * i + 1; c <= k * i + k && c < p->n; c++)
        psmsg_put_u32(b, PSF_PMI_CHILD, p->order[c]);
}

void pmi_plan_put(const struct pmi_plan *p, uint32_t node, struct psmsg_buf *b)
{
    pmi_plan_put_common(p, b);
    pmi_plan_put_node(p, node, b);
}

size_t pmi_plan_size(const struct pmi_plan *p)
{
    if (p->mode == PSPMI_MODE_NONE) return 0;
    /* the mode, a parent, the most children a node has, the mapping (and its NUL) */
    size_t kids = p->n > 1 ? p->n - 1 : 0;
    if (kids > p->width) kids = p->width;
    return (2 + kids) * (PSMSG_FHDR + 4) + PSMSG_FHDR + (p->map ? strlen(p->map) + 1 : 0);
}
