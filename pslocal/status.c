/*
 * status.c - `pslocal status` (see pslocal.h): one line per node, whether its daemon runs.
 */
#include "pslocal.h"

#include <limits.h>
#include <stdio.h>

int pl_cmd_status(const struct pl_opts *o)
{
    char dir[PATH_MAX], conf[PATH_MAX];
    pl_cluster_dir(o->dir, dir);
    struct psconf c;
    pl_load_conf(dir, &c);
    pl_path_in(conf, sizeof conf, dir, CONF_FILE);
    int rc = 0;
    for (size_t i = 0; i < c.nnodes; i++) {
        const struct psconf_node *n = &c.nodes[i];
        pid_t pid = pl_read_pid(dir, n->id);
        bool alive = pid > 0 && pl_is_our_psid(pid, conf, n->id);
        char ps[16] = "-";
        if (pid > 0) snprintf(ps, sizeof ps, "%d", (int)pid);
        printf("%u %s %s %s %s\n", n->id, n->name, n->addr_str, ps, alive ? "running" : "stopped");
        if (!alive) rc = 3;
    }
    psconf_free(&c);
    return rc;
}
