/*
 * lookup.c - finding a node in the table.
 *
 * psconf_load() leaves the table sorted by id, so lookups by id are binary searches (they
 * sit on hot paths: every heartbeat and message names a node). Lookups by name and address
 * are linear; they serve command lines and the rare unknown-sender check.
 */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

static int cmp_id(const void *key, const void *elem)
{
    uint32_t id = *(const uint32_t *)key;
    const struct psconf_node *n = elem;
    return (id > n->id) - (id < n->id);
}

const struct psconf_node *psconf_node_by_id(const struct psconf *c, uint32_t id)
{
    if (!c->nnodes) return NULL;
    return bsearch(&id, c->nodes, c->nnodes, sizeof *c->nodes, cmp_id);
}

const struct psconf_node *psconf_node_by_name(const struct psconf *c, const char *name)
{
    for (size_t i = 0; i < c->nnodes; i++)
        if (strcmp(c->nodes[i].name, name) == 0) return &c->nodes[i];
    return NULL;
}

const struct psconf_node *psconf_node_by_addr(const struct psconf *c, const struct sockaddr *sa)
{
    if (!sa || (sa->sa_family != AF_INET && sa->sa_family != AF_INET6)) return NULL;
    for (size_t i = 0; i < c->nnodes; i++)
        if (conf_addr_cmp((const struct sockaddr *)&c->nodes[i].addr, sa) == 0) return &c->nodes[i];
    return NULL;
}

const struct psconf_node *psconf_node_lookup(const struct psconf *c, const char *s)
{
    if (!s || !*s) return NULL;
    size_t digits = strspn(s, "0123456789");
    if (s[digits] != '\0') return psconf_node_by_name(c, s);
    if (digits > 5) return NULL; /* beyond PSCONF_MAX_NODE_ID */
    unsigned long id = strtoul(s, NULL, 10);
    if (id > PSCONF_MAX_NODE_ID) return NULL;
    return psconf_node_by_id(c, (uint32_t)id);
}
