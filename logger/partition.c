/*
 * partition.c - the job's partition: source, expansion, resolution (see partition.h).
 */
#include "partition.h"

#include "psi_hostlist.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *nonempty(lg_getenv_fn get, const char *name)
{
    const char *v = get(name);
    return v && *v ? v : NULL;
}

int lg_partition_get(const char *wopt, lg_getenv_fn get, struct lg_partition *p, char *err,
                     size_t errsz)
{
    static const struct {
        const char *name;
        int file;
    } env[] = {{"PSI_NODES", 0},          {"PSI_HOSTS", 0},      {"PSI_HOSTFILE", 1},
               {"SLURM_JOB_NODELIST", 0}, {"SLURM_NODELIST", 0}, {"PBS_NODEFILE", 1}};
    memset(p, 0, sizeof *p);
    const char *val = wopt;
    int file = 0;
    if (wopt)
        p->source = "-w";
    else
        for (size_t i = 0; i < sizeof env / sizeof env[0] && !p->source; i++)
            if ((val = nonempty(get, env[i].name))) {
                p->source = env[i].name;
                file = env[i].file;
            }
    if (!p->source) return 0;
    char msg[256] = "";
    int r = file ? psi_hostfile_read(val, &p->names, msg, sizeof msg)
                 : psi_hostlist_expand(val, &p->names, msg, sizeof msg);
    if (r < 0) {
        snprintf(err, errsz, "%s: %s", p->source, msg[0] ? msg : strerror(errno));
        return -1;
    }
    if (p->names.n == 0) {
        snprintf(err, errsz, "%s: no nodes given", p->source);
        return -1;
    }
    return 0;
}

int lg_partition_resolve(const struct lg_partition *p, const struct psi_nodetab *t, uint32_t **ids,
                         size_t *nids, struct lg_strv *skipped, char *err, size_t errsz)
{
    *ids = NULL;
    *nids = 0;
    if (!p->source) return 0;
    uint32_t *v = calloc(p->names.n, sizeof *v);
    if (!v) {
        snprintf(err, errsz, "out of memory");
        return -1;
    }
    size_t n = 0;
    int strict = strcmp(p->source, "-w") == 0;
    for (size_t i = 0; i < p->names.n; i++) {
        const char *name = p->names.v[i];
        const struct psi_node *nd = psi_nodetab_lookup(t, name);
        if (!nd) {
            snprintf(err, errsz, "%s: node '%s' is not in the cluster", p->source, name);
            goto fail;
        }
        if (nd->state != PSNODE_UP) {
            if (strict) {
                snprintf(err, errsz, "%s: node '%s' is %s", p->source, name,
                         nd->state == PSNODE_UNREACHABLE ? "unreachable" : "down");
                goto fail;
            }
            if (skipped && lg_strv_add(skipped, name) < 0) goto oom;
            continue;
        }
        size_t j = 0;
        while (j < n && v[j] != nd->id) j++;
        if (j == n) v[n++] = nd->id;
    }
    if (n == 0) {
        snprintf(err, errsz, "%s: no node of the partition is up", p->source);
        goto fail;
    }
    *ids = v;
    *nids = n;
    return 0;
oom:
    snprintf(err, errsz, "out of memory");
fail:
    free(v);
    return -1;
}

void lg_partition_free(struct lg_partition *p)
{
    psi_names_free(&p->names);
    p->source = NULL;
}
