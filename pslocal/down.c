/*
 * down.c - `pslocal down` (see pslocal.h), also `up`'s way back after a failure: stop the
 * daemons, remove the network the state file lists, the sockets and pid files (--purge:
 * also logs, configuration and key).
 */
#include "pslocal.h"

#include "fnv1a.h"

#include <dirent.h>
#include <err.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* The cgroup directory node's psid named in its log ("each job's tasks in a cgroup under
 * DIR"), if its name is the one psid gives it (psid-HASH of the node's socket path: a log
 * cannot point pslocal at another cgroup); 0 with the path in out, else -1. */
static int node_cgroup(const char *dir, unsigned node, char *out, size_t outlen)
{
    char log[PATH_MAX], sock[PATH_MAX], want[64], line[PATH_MAX + 128];
    const char *key = "each job's tasks in a cgroup under ";
    pl_path_in(log, sizeof log, dir, "psid-%u.log", node);
    pl_path_in(sock, sizeof sock, dir, "psid-%u.sock", node);
    snprintf(want, sizeof want, "/psid-%016llx", (unsigned long long)fnv1a64(sock));
    FILE *f = fopen(log, "re");
    int rc = -1;
    while (f && fgets(line, sizeof line, f)) {
        const char *p = strstr(line, key);
        if (!p) continue;
        p += strlen(key);
        size_t n = strcspn(p, "\n");
        if (n >= outlen || n < strlen(want) || strncmp(p, "/sys/fs/cgroup/", 15) ||
            strncmp(p + n - strlen(want), want, strlen(want)))
            continue;
        memcpy(out, p, n);
        out[n] = 0;
        rc = 0;
    }
    if (f) fclose(f);
    return rc;
}

/* What the daemons of dir left in their cgroups (a daemon killed with SIGKILL does not
 * remove its own): every process of a job-* directory killed, the directories removed. */
static void sweep_cgroups(const char *dir, unsigned nodes)
{
    for (unsigned i = 0; i < nodes; i++) {
        char base[PATH_MAX];
        if (node_cgroup(dir, i, base, sizeof base) < 0) continue;
        DIR *d = opendir(base);
        struct dirent *e;
        while (d && (e = readdir(d))) {
            if (strncmp(e->d_name, "job-", 4)) continue;
            char p[PATH_MAX + 300];
            snprintf(p, sizeof p, "%s/%s/cgroup.kill", base, e->d_name);
            FILE *k = fopen(p, "we");
            if (k) {
                fputs("1", k);
                fclose(k);
            }
            snprintf(p, sizeof p, "%s/%s", base, e->d_name);
            for (int t = 0; t < 50 && rmdir(p) < 0 && errno == EBUSY; t++)
                nanosleep(&(struct timespec){0, 20000000}, NULL);
        }
        if (d) closedir(d);
        rmdir(base);
    }
}

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
    if (!stuck) sweep_cgroups(dir, MAX_LOOPBACK_NODES); /* the logs say which exist */
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
