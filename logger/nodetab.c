/*
 * nodetab.c - the node table from PSM_NODES_REPLY, name lookup, task ids (see nodetab.h).
 */
#include "nodetab.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int lg_nodetab_parse(const struct psmsg *rep, struct lg_nodetab *t)
{
    memset(t, 0, sizeof *t);
    psmsg_get_u32(&rep->body, PSF_SELF, &t->self);
    size_t pos = 0, cap = 0;
    struct psmsg_field f;
    while (psmsg_next(&rep->body, &pos, &f)) {
        if (f.tag != PSF_NODE) continue;
        if (t->n == cap) {
            cap = cap ? cap * 2 : 16;
            struct lg_node *v = realloc(t->v, cap * sizeof *v);
            if (!v) {
                lg_nodetab_free(t);
                return -1;
            }
            t->v = v;
        }
        struct lg_node *nd = &t->v[t->n++];
        memset(nd, 0, sizeof *nd);
        struct psmsg_view v = psmsg_record(&f);
        psmsg_get_u32(&v, PSF_NODE_ID, &nd->id);
        psmsg_get_u32(&v, PSF_STATE, &nd->state);
        psmsg_get_u32(&v, PSF_CPUS, &nd->cpus);
        psmsg_get_str(&v, PSF_NAME, nd->name, sizeof nd->name);
        psmsg_get_str(&v, PSF_ADDR, nd->addr, sizeof nd->addr);
    }
    return 0;
}

int lg_nodetab_fetch(struct psi *c, struct lg_nodetab *t)
{
    struct psmsg_buf req = {0};
    struct psmsg rep;
    psmsg_begin(&req, PSM_NODES, 0);
    int r = psi_call(c, &req, &rep);
    psmsg_buf_free(&req);
    if (r < 0) return -1;
    return lg_nodetab_parse(&rep, t);
}

void lg_nodetab_free(struct lg_nodetab *t)
{
    free(t->v);
    memset(t, 0, sizeof *t);
}

const struct lg_node *lg_nodetab_id(const struct lg_nodetab *t, uint32_t id)
{
    for (size_t i = 0; i < t->n; i++)
        if (t->v[i].id == id) return &t->v[i];
    return NULL;
}

static int parse_u32(const char *s, uint32_t *out)
{
    if (!isdigit((unsigned char)*s)) return -1;
    char *end;
    errno = 0;
    unsigned long v = strtoul(s, &end, 10);
    if (*end || errno || v > UINT32_MAX) return -1;
    *out = (uint32_t)v;
    return 0;
}

/* a and b equal up to the first '.' of the longer one: "n3" matches "n3.cluster" */
static int short_eq(const char *a, const char *b)
{
    size_t la = strcspn(a, "."), lb = strcspn(b, ".");
    if (la != lb || strncmp(a, b, la) != 0) return 0;
    return a[la] == '\0' || b[lb] == '\0';
}

const struct lg_node *lg_nodetab_lookup(const struct lg_nodetab *t, const char *s)
{
    uint32_t id;
    if (!*s) return NULL;
    if (parse_u32(s, &id) == 0) return lg_nodetab_id(t, id);
    for (size_t i = 0; i < t->n; i++)
        if (strcmp(t->v[i].name, s) == 0) return &t->v[i];
    for (size_t i = 0; i < t->n; i++)
        if (t->v[i].name[0] && short_eq(t->v[i].name, s)) return &t->v[i];
    for (size_t i = 0; i < t->n; i++)
        if (strcmp(t->v[i].addr, s) == 0) return &t->v[i];
    return NULL;
}

const char *lg_nodetab_name(const struct lg_nodetab *t, uint32_t id, char *buf, size_t n)
{
    const struct lg_node *nd = t ? lg_nodetab_id(t, id) : NULL;
    if (nd && nd->name[0])
        snprintf(buf, n, "%s", nd->name);
    else
        snprintf(buf, n, "%" PRIu32, id);
    return buf;
}

/* lg_tid_parse, and with syntax_only lg_tid_check: then NODE is not looked up (any name
 * passes) and *tid is not set. */
static int tid_parse(const char *s, const struct lg_nodetab *t, bool syntax_only, uint64_t *tid,
                     char *err, size_t errsz)
{
    const char *colon = strrchr(s, ':');
    if (!colon) {
        char *end;
        errno = 0;
        unsigned long long v = strtoull(s, &end, 0);
        if (!isdigit((unsigned char)*s) || *end || errno) {
            snprintf(err, errsz, "%s: not a task id (NODE:PID)", s);
            return -1;
        }
        if (!syntax_only) *tid = v;
        return 0;
    }
    char node[128];
    size_t nl = (size_t)(colon - s);
    if (nl == 0 || nl >= sizeof node) {
        snprintf(err, errsz, "%s: not a task id (NODE:PID)", s);
        return -1;
    }
    memcpy(node, s, nl);
    node[nl] = '\0';
    uint32_t id, pid;
    if (parse_u32(colon + 1, &pid) < 0 || pid == 0 || pid > INT32_MAX) {
        snprintf(err, errsz, "%s: not a task id (NODE:PID)", s);
        return -1;
    }
    if (syntax_only) return 0;
    if (parse_u32(node, &id) < 0) {
        const struct lg_node *nd = t ? lg_nodetab_lookup(t, node) : NULL;
        if (!nd) {
            snprintf(err, errsz, "%s: no node '%s' in the cluster", s, node);
            return -1;
        }
        id = nd->id;
    } else if (t && !lg_nodetab_id(t, id)) {
        snprintf(err, errsz, "%s: no node %" PRIu32 " in the cluster", s, id);
        return -1;
    }
    *tid = PSTID(id, pid);
    return 0;
}

int lg_tid_parse(const char *s, const struct lg_nodetab *t, uint64_t *tid, char *err, size_t errsz)
{
    return tid_parse(s, t, false, tid, err, errsz);
}

int lg_tid_check(const char *s, char *err, size_t errsz)
{
    return tid_parse(s, NULL, true, NULL, err, errsz);
}

const char *lg_tid_str(uint64_t tid, char *buf, size_t n)
{
    snprintf(buf, n, "%" PRIu32 ":%" PRId32, PSTID_NODE(tid), PSTID_PID(tid));
    return buf;
}
