/*
 * down.c - `pslocal down` (see pslocal.h), also `up`'s way back after a failure: stop the
 * daemons, remove the network the state file lists, the sockets and pid files (--purge:
 * also logs, configuration and key).
 */
#include "pslocal.h"

#include <err.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* Everything `down` does. verbose: say what was done on stdout. 0, or 1 if something is left. */
int pl_teardown(const char *dir, bool purge, bool verbose)
{
    struct pl_state s;
    bool have_state = pl_state_read(dir, &s) == 0;
    if (have_state && s.netns && geteuid() != 0 && (s.nns || s.bridge[0])) {
        warnx("%s: a --netns cluster: 'down' needs root", dir);
        pl_state_free(&s);
        return 1;
    }
    size_t stuck = 0;
    size_t stopped = pl_stop_daemons(dir, &stuck);
    int rc = stuck ? 1 : 0;
    if (have_state && pl_remove_network(&s) < 0) rc = 1;
    pl_unlink_matching(dir, ".sock", true);
    if (!stuck) pl_unlink_matching(dir, ".pid", false);
    if (rc == 0) pl_unlink_in(dir, STATE_FILE);
    if (purge && rc == 0) {
        pl_unlink_matching(dir, ".log", false);
        pl_unlink_in(dir, CONF_FILE);
        pl_unlink_in(dir, KEY_FILE);
        if (rmdir(dir) < 0 && errno != ENOTEMPTY && errno != EEXIST && errno != ENOENT)
            warn("rmdir %s", dir);
    }
    if (verbose) {
        if (!stopped && !(have_state && s.nns))
            printf("pslocal: %s: nothing was running\n", dir);
        else if (have_state && s.nns)
            printf("pslocal: %s: stopped %zu daemon%s, removed %zu namespace%s and bridge %s\n",
                   dir, stopped, stopped == 1 ? "" : "s", s.nns, s.nns == 1 ? "" : "s",
                   s.bridge[0] ? s.bridge : "(none)");
        else
            printf("pslocal: %s: stopped %zu daemon%s\n", dir, stopped, stopped == 1 ? "" : "s");
    }
    if (have_state) pl_state_free(&s);
    return rc;
}

int pl_cmd_down(const struct pl_opts *o)
{
    char dir[PATH_MAX];
    if (!realpath(o->dir, dir)) {
        if (errno == ENOENT) {
            printf("pslocal: %s: no such directory; nothing to stop\n", o->dir);
            return 0;
        }
        err(1, "%s", o->dir);
    }
    char conf[PATH_MAX], state[PATH_MAX];
    pl_path_in(conf, sizeof conf, dir, CONF_FILE);
    pl_path_in(state, sizeof state, dir, STATE_FILE);
    if (!pl_exists(conf) && !pl_exists(state)) { /* not a cluster's DIR: touch nothing there */
        printf("pslocal: %s: no cluster here; nothing to stop\n", dir);
        return 0;
    }
    return pl_teardown(dir, o->purge, true);
}
