/*
 * exec.c - `pslocal exec NODE -- CMD` (see pslocal.h): CMD as if on NODE, its socket in
 * $PSID_SOCKET, inside the node's namespace in a --netns cluster.
 */
#include "pslocal.h"

#include <err.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int pl_cmd_exec(const struct pl_opts *o)
{
    char dir[PATH_MAX], sock[PATH_MAX], id[16];
    pl_cluster_dir(o->dir, dir);
    struct pl_state s;
    if (pl_state_read(dir, &s) < 0 || !s.valid)
        errx(1, "%s: no cluster is up ('pslocal up --dir %s')", dir, o->dir);
    struct psconf c;
    pl_load_conf(dir, &c);
    const struct psconf_node *n = psconf_node_lookup(&c, o->node);
    if (!n) errx(1, "%s: no such node in %s/%s", o->node, dir, CONF_FILE);
    if (psconf_socket_path(&c, n->id, sock, sizeof sock) < 0)
        err(1, "socket path of node %u", n->id);
    snprintf(id, sizeof id, "%u", n->id);
    if (setenv("PSID_SOCKET", sock, 1) || setenv("PSLOCAL_DIR", dir, 1) ||
        setenv("PSLOCAL_NODE", id, 1))
        err(1, "setenv");

    char found[PATH_MAX];
    if (!pl_path_search(o->argv[0], found, sizeof found)) {
        warnx("%s: command not found", o->argv[0]);
        return 127;
    }
    if (s.netns) {
        const char *ns = pl_state_ns_of(&s, n->id);
        if (!ns || !pl_netns_exists(ns)) errx(1, "node %u: its namespace is gone", n->id);
        if (geteuid() != 0) errx(1, "exec in a --netns cluster needs root");
        size_t argc = 0;
        while (o->argv[argc]) argc++;
        char **av = calloc(argc + 5, sizeof *av);
        if (!av) err(1, "calloc");
        av[0] = "ip";
        av[1] = "netns";
        av[2] = "exec";
        av[3] = (char *)ns;
        memcpy(av + 4, o->argv, (argc + 1) * sizeof *av);
        execvp("ip", av);
        warn("ip");
        return 126;
    }
    execvp(o->argv[0], o->argv);
    int e = errno;
    warn("%s", o->argv[0]);
    return e == ENOENT ? 127 : 126;
}
