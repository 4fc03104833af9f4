/*
 * nodes.c - the node table: nodes = ( { id = 0; name = "n0"; address = "10.0.0.1"; }, ... ).
 *
 * Each entry is a group walked with the same schema machinery as the rest of the file; id,
 * name and address are required, cpus defaults to 1. Once every entry is read, ids, names and
 * addresses must each be unique: the three are sorted (O(n log n), clusters may have tens of
 * thousands of nodes) and the first entry in file order that repeats an earlier one is
 * reported together with the line of the entry it repeats. Finally the table is sorted by
 * id, which is the order the lookups rely on.
 */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { NK_NONE, NK_ID, NK_NAME, NK_ADDRESS, NK_CPUS, NK__COUNT };

static int set_name(struct conf_ctx *x, void *base, const char *key, const char *val,
                    struct conf_where w)
{
    struct psconf_node *n = base;
    const char *why = conf_name_problem(val);
    if (why) return conf_error_at(x, w, key, "\"%s\": %s", val, why);
    if (strspn(val, "0123456789") == strlen(val))
        return conf_error_at(
            x, w, key, "\"%s\": a node name must not be all digits (it would read as an id)", val);
    strcpy(n->name, val);
    return 0;
}

static int set_address(struct conf_ctx *x, void *base, const char *key, const char *val,
                       struct conf_where w)
{
    struct psconf_node *n = base;
    const char *why;
    if (conf_addr_parse(val, &n->addr, &n->addrlen, n->addr_str, &why) < 0)
        return conf_error_at(x, w, key, "\"%s\": %s", val, why);
    return 0;
}

static const struct conf_key node_keys[] = {
    {"id", CT_INT, NK_ID, 0, PSCONF_MAX_NODE_ID, CS_U32, offsetof(struct psconf_node, id), NULL,
     NULL},
    {"name", CT_STRING, NK_NAME, 0, 0, CS_NONE, 0, set_name, NULL},
    {"address", CT_STRING, NK_ADDRESS, 0, 0, CS_NONE, 0, set_address, NULL},
    {"cpus", CT_INT, NK_CPUS, 1, 4096, CS_UNSIGNED, offsetof(struct psconf_node, cpus), NULL, NULL},
    {0},
};

int conf_nodes_parse(struct conf_ctx *x, struct psconf *c, const config_setting_t *list)
{
    struct conf_where lw = conf_where_of(list);
    if (!config_setting_is_list(list))
        return conf_error_at(x, lw, "nodes", "wrong type: expected list ( {...}, ... ), got %s",
                             conf_type_name(config_setting_type(list)));
    size_t n = (size_t)config_setting_length(list);
    if (n == 0) return conf_error_at(x, lw, "nodes", "empty list: at least one node is needed");
    if (n > (size_t)PSCONF_MAX_NODE_ID + 1)
        return conf_error_at(x, lw, "nodes", "%zu nodes, at most %u are possible", n,
                             PSCONF_MAX_NODE_ID + 1);

    c->nodes = calloc(n, sizeof *c->nodes);
    x->node_where = calloc(n * NK__COUNT, sizeof *x->node_where);
    if (!c->nodes || !x->node_where) return conf_error_at(x, lw, "nodes", "out of memory");

    for (size_t i = 0; i < n; i++) {
        const config_setting_t *e = config_setting_get_elem(list, (unsigned)i);
        struct conf_where ew = conf_where_of(e);
        struct conf_where *where = x->node_where + i * NK__COUNT;
        struct psconf_node *node = &c->nodes[i];
        char key[64];
        snprintf(key, sizeof key, "nodes[%zu]", i);
        c->nnodes = i + 1;
        if (!config_setting_is_group(e))
            return conf_error_at(x, ew, key, "wrong type: expected group {...}, got %s",
                                 conf_type_name(config_setting_type(e)));
        node->cpus = 1;
        node->line = (int)ew.line;
        if (conf_walk_group(x, node, e, key, node_keys, where) < 0) return -1;
        static const struct {
            int id;
            const char *name;
        } required[] = {{NK_ID, "id"}, {NK_NAME, "name"}, {NK_ADDRESS, "address"}};
        for (size_t r = 0; r < sizeof required / sizeof required[0]; r++) {
            if (where[required[r].id].line) continue;
            char rkey[96];
            snprintf(rkey, sizeof rkey, "%s.%s", key, required[r].name);
            return conf_error_at(x, ew, rkey, "missing");
        }
    }
    return 0;
}

/* Duplicate detection: sort indices by one property, ties broken by index (file order). */
enum dup_kind { DUP_ID, DUP_NAME, DUP_ADDR };

struct dup_arg {
    const struct psconf_node *nodes;
    enum dup_kind kind;
};

static int node_cmp(const struct psconf_node *a, const struct psconf_node *b, enum dup_kind kind)
{
    switch (kind) {
    case DUP_ID:
        return (a->id > b->id) - (a->id < b->id);
    case DUP_NAME:
        return strcmp(a->name, b->name);
    case DUP_ADDR:
        return conf_addr_cmp((const struct sockaddr *)&a->addr, (const struct sockaddr *)&b->addr);
    }
    return 0;
}

static int idx_cmp(const void *pa, const void *pb, void *arg)
{
    const struct dup_arg *d = arg;
    size_t a = *(const size_t *)pa, b = *(const size_t *)pb;
    int r = node_cmp(&d->nodes[a], &d->nodes[b], d->kind);
    if (r) return r;
    return (a > b) - (a < b);
}

/* The smallest index that repeats an earlier entry (SIZE_MAX if none); *first gets the
 * earliest entry with the same value. */
static size_t first_dup(const struct psconf *c, size_t *idx, enum dup_kind kind, size_t *first)
{
    struct dup_arg d = {c->nodes, kind};
    for (size_t i = 0; i < c->nnodes; i++) idx[i] = i;
    qsort_r(idx, c->nnodes, sizeof *idx, idx_cmp, &d);
    size_t best = SIZE_MAX, run = 0;
    for (size_t i = 1; i < c->nnodes; i++) {
        if (node_cmp(&c->nodes[idx[i]], &c->nodes[idx[run]], kind) != 0) {
            run = i;
            continue;
        }
        if (idx[i] < best) {
            best = idx[i];
            *first = idx[run];
        }
    }
    return best;
}

static int by_id(const void *pa, const void *pb)
{
    const struct psconf_node *a = pa, *b = pb;
    return (a->id > b->id) - (a->id < b->id);
}

int conf_nodes_check(struct conf_ctx *x, struct psconf *c)
{
    size_t *idx = malloc(c->nnodes * sizeof *idx);
    if (!idx) return conf_error(x, NULL, 0, "nodes", "out of memory");

    static const int key_of[] = {[DUP_ID] = NK_ID, [DUP_NAME] = NK_NAME, [DUP_ADDR] = NK_ADDRESS};
    static const char *const what[] = {
        [DUP_ID] = "id", [DUP_NAME] = "name", [DUP_ADDR] = "address"};
    size_t best = SIZE_MAX, best_first = 0;
    enum dup_kind best_kind = DUP_ID;
    for (int k = DUP_ID; k <= DUP_ADDR; k++) {
        size_t first = 0, i = first_dup(c, idx, (enum dup_kind)k, &first);
        if (i < best) {
            best = i;
            best_first = first;
            best_kind = (enum dup_kind)k;
        }
    }
    free(idx);

    if (best != SIZE_MAX) {
        const struct psconf_node *n = &c->nodes[best];
        char key[64], val[PSCONF_NAME_MAX + INET6_ADDRSTRLEN];
        snprintf(key, sizeof key, "nodes[%zu].%s", best, what[best_kind]);
        switch (best_kind) {
        case DUP_ID:
            snprintf(val, sizeof val, "%u", (unsigned)n->id);
            break;
        case DUP_NAME:
            snprintf(val, sizeof val, "\"%s\"", n->name);
            break;
        case DUP_ADDR:
            snprintf(val, sizeof val, "%s", n->addr_str);
            break;
        }
        struct conf_where w = x->node_where[best * NK__COUNT + key_of[best_kind]];
        struct conf_where fw = x->node_where[best_first * NK__COUNT + key_of[best_kind]];
        if (fw.file && w.file && strcmp(fw.file, w.file) != 0)
            return conf_error_at(x, w, key, "duplicate %s %s: already used by nodes[%zu] at %s:%u",
                                 what[best_kind], val, best_first, fw.file, fw.line);
        return conf_error_at(x, w, key, "duplicate %s %s: already used by nodes[%zu] at line %u",
                             what[best_kind], val, best_first, fw.line);
    }

    qsort(c->nodes, c->nnodes, sizeof *c->nodes, by_id);
    return 0;
}
