/*
 * nodetab.c - the node table: the PSM_NODES call, its reply decoded, and name lookup (see
 * psi_nodes.h).
 */
#include "psi_nodes.h"

#include "decimal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int psi_nodetab_parse(const struct psmsg *rep, struct psi_nodetab *t)
{
    memset(t, 0, sizeof *t);
    psmsg_get_u32(&rep->body, PSF_SELF, &t->self);
    size_t pos = 0, cap = 0;
    struct psmsg_field f;
    while (psmsg_next(&rep->body, &pos, &f)) {
        if (f.tag != PSF_NODE) continue;
        if (t->n == cap) {
            cap = cap ? cap * 2 : 16;
            struct psi_node *v = realloc(t->v, cap * sizeof *v);
            if (!v) {
                psi_nodetab_free(t);
                return -1;
            }
            t->v = v;
        }
        struct psi_node *nd = &t->v[t->n++];
        memset(nd, 0, sizeof *nd);
        struct psmsg_view v = psmsg_record(&f);
        psmsg_get_u32(&v, PSF_NODE_ID, &nd->id);
        psmsg_get_u32(&v, PSF_STATE, &nd->state);
        psmsg_get_u32(&v, PSF_CPUS, &nd->cpus);
        psmsg_get_u32(&v, PSF_LOAD, &nd->load);
        psmsg_get_u32(&v, PSF_TASKS, &nd->used);
        nd->has_age = psmsg_get_u32(&v, PSF_AGE_MS, &nd->age_ms) == 0;
        psmsg_get_str(&v, PSF_NAME, nd->name, sizeof nd->name);
        psmsg_get_str(&v, PSF_ADDR, nd->addr, sizeof nd->addr);
    }
    return 0;
}

int psi_nodes(struct psi *c, struct psi_nodetab *t)
{
    struct psmsg rep;
    return psi_ask(c, PSM_NODES, &rep) < 0 ? -1 : psi_nodetab_parse(&rep, t);
}

void psi_nodetab_free(struct psi_nodetab *t)
{
    free(t->v);
    memset(t, 0, sizeof *t);
}

const struct psi_node *psi_nodetab_id(const struct psi_nodetab *t, uint32_t id)
{
    for (size_t i = 0; i < t->n; i++)
        if (t->v[i].id == id) return &t->v[i];
    return NULL;
}

/* a and b equal up to the first '.' of the longer one: "n3" matches "n3.cluster" */
static int short_eq(const char *a, const char *b)
{
    size_t la = strcspn(a, "."), lb = strcspn(b, ".");
    if (la != lb || strncmp(a, b, la) != 0) return 0;
    return a[la] == '\0' || b[lb] == '\0';
}

const struct psi_node *psi_nodetab_lookup(const struct psi_nodetab *t, const char *s)
{
    uint32_t id;
    if (!*s) return NULL;
    if (psi_decimal_u32(s, &id) == 0) return psi_nodetab_id(t, id);
    for (size_t i = 0; i < t->n; i++)
        if (strcmp(t->v[i].name, s) == 0) return &t->v[i];
    for (size_t i = 0; i < t->n; i++)
        if (t->v[i].name[0] && short_eq(t->v[i].name, s)) return &t->v[i];
    for (size_t i = 0; i < t->n; i++)
        if (strcmp(t->v[i].addr, s) == 0) return &t->v[i];
    return NULL;
}

const char *psi_nodetab_name(const struct psi_nodetab *t, uint32_t id, char *buf, size_t n)
{
    const struct psi_node *nd = t ? psi_nodetab_id(t, id) : NULL;
    if (nd && nd->name[0])
        snprintf(buf, n, "%s", nd->name);
    else
        snprintf(buf, n, "%" PRIu32, id);
    return buf;
}
