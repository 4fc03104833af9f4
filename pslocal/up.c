/*
 * up.c - `pslocal up` (see pslocal.h): check DIR and clean up a crashed cluster's leftovers,
 * write key and configuration, make the namespaces (--netns), start the daemons, wait for
 * the cluster; on any failure or signal, stop and remove what was started.
 */
#include "pslocal.h"

#include <ctype.h>
#include <err.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

volatile sig_atomic_t pl_got_signal;

static void on_signal(int sig)
{
    pl_got_signal = sig;
}

int pl_cmd_up(const struct pl_opts *o)
{
    struct pl_up u = {.o = o, .n = o->nodes};
    if (o->mtu && !o->netns) pl_usage_error("--mtu: only with --netns (loopback's is its own)");
    if (o->netns && geteuid() != 0) errx(1, "--netns needs root");
    if (o->netns && o->nodes > MAX_NETNS_NODES)
        errx(1, "--netns: at most %d nodes", MAX_NETNS_NODES);
    if (o->netns && !pl_find_tool("ip", NULL, u.psid, sizeof u.psid))
        errx(1, "--netns needs the ip command (iproute2)");

    pl_make_dirs(o->dir);
    if (!realpath(o->dir, u.dir)) err(1, "%s", o->dir);
    for (const char *s = u.dir; *s; s++)
        if (iscntrl((unsigned char)*s)) errx(1, "%s: control characters in the path", u.dir);
    /* the longest socket path: DIR/psid-NNN.sock */
    char sock[PATH_MAX];
    struct sockaddr_un sun;
    int sl = snprintf(sock, sizeof sock, "%s/psid-%u.sock", u.dir, u.n - 1);
    if (sl < 0 || (size_t)sl >= sizeof sun.sun_path)
        errx(1, "%s: too long for UNIX sockets in it (at most %zu characters)", u.dir,
             sizeof sun.sun_path - 1 - strlen("/psid-000.sock"));
    pl_path_in(u.conf_path, sizeof u.conf_path, u.dir, CONF_FILE);
    u.hash = pl_dir_hash(u.dir);

    /* a cluster running here already? */
    unsigned ids[4096];
    size_t np = pl_pid_files(u.dir, ids, 4096);
    for (size_t i = 0; i < np; i++)
        if (pl_daemon_alive(pl_read_pid(u.dir, ids[i]), u.conf_path, ids[i]))
            errx(1, "%s: a cluster runs there (node %u); 'pslocal down --dir %s' first", u.dir,
                 ids[i], u.dir);
    char statep[PATH_MAX];
    pl_path_in(statep, sizeof statep, u.dir, STATE_FILE);
    if (np || pl_exists(statep)) { /* leftovers of a crash */
        if (pl_teardown(u.dir, false, false) != 0)
            errx(1, "%s: cannot clean up what an earlier cluster left", u.dir);
    }

    if (!pl_find_tool("psid", "PSLOCAL_PSID", u.psid, sizeof u.psid))
        errx(1, "psid not found (next to pslocal, in $PATH or $PSLOCAL_PSID)");
    u.port = pl_choose_port(&u);

    pl_write_key(&u);
    pl_write_config(&u);
    char msg[512];
    if (psconf_load(u.conf_path, &u.conf, msg, sizeof msg) < 0)
        errx(1, "the configuration written is not valid (a bug): %s", msg);

    struct sigaction sa = {.sa_handler = on_signal};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);

    pl_state_add(u.dir, "# pslocal state: what 'pslocal down' removes");
    pl_state_add(u.dir, "mode %s", o->netns ? "netns" : "loopback");
    pl_state_add(u.dir, "nodes %u", u.n);
    pl_state_add(u.dir, "port %u", u.port);
    int rc = 0;
    if (o->netns && pl_make_network(&u) < 0) rc = -1;

    u.pids = calloc(u.n, sizeof *u.pids);
    if (!u.pids) err(1, "calloc");
    for (unsigned i = 0; i < u.n && rc == 0 && !pl_got_signal; i++) {
        char sp[PATH_MAX];
        if (psconf_socket_path(&u.conf, i, sp, sizeof sp) == 0) {
            struct stat st;
            if (lstat(sp, &st) == 0 && S_ISSOCK(st.st_mode)) unlink(sp); /* stale */
        }
        u.pids[i] = pl_start_psid(&u, i);
    }
    if (rc == 0 && !pl_got_signal) rc = pl_wait_ready(&u);
    if (rc < 0 || pl_got_signal) {
        pl_stop_children(u.pids, u.n);
        fprintf(stderr, "pslocal: stopping what was started; logs and config stay in %s\n", u.dir);
        pl_teardown(u.dir, false, false);
        psconf_free(&u.conf);
        free(u.pids);
        return pl_got_signal ? 128 + pl_got_signal : 1;
    }
    const char *net = o->netns ? NS_NET : "127.0.0";
    printf("pslocal: %u node%s up in %s (%s, %s.1-%s.%u, RDP port %u, heartbeat port %u)\n", u.n,
           u.n == 1 ? "" : "s", u.dir, o->netns ? "namespaces" : "loopback", net, net, u.n, u.port,
           u.port + 1);
    printf("pslocal: use it with: eval \"$(pslocal env --dir %s)\"\n", u.dir);
    psconf_free(&u.conf);
    free(u.pids);
    return 0;
}
