/*
 * opts.c - pslocal's command line (see pslocal.h): the usage and help texts, which option
 * each command takes, and their ranges. A bad command line prints why and the synopsis and
 * exits 2; --help prints everything and exits 0.
 */
#include "pslocal.h"

#include "psconf.h"
#include "rdp.h"

#include <ctype.h>
#include <err.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage_text[] =
    "usage: pslocal up [-n NODES] [--cpus K] [--netns [--mtu M]] --dir DIR [--log-level L]\n"
    "                  [--port P] [--timeout S] [--gang MS [--mpl K]] [--membership M]\n"
    "                  [--tree-width K]\n"
    "       pslocal down --dir DIR [--purge]\n"
    "       pslocal status --dir DIR\n"
    "       pslocal env --dir DIR\n"
    "       pslocal exec NODE --dir DIR -- CMD [ARGS...]\n"
    "       pslocal --help\n";

static const char help_text[] =
    "\n"
    "A virtual pscluster on this machine: one psid per node, all files in DIR\n"
    "(--dir defaults to $PSLOCAL_DIR).\n"
    "\n"
    "up      write DIR/cluster.key and DIR/psid.conf, start NODES daemons (default 4) and\n"
    "        wait (default 10 s) until every socket answers and node 0 sees all nodes up\n"
    "        -n, --nodes N   number of nodes\n"
    "        --cpus K        CPUs per node (default 2)\n"
    "        --netns         one network namespace per node on a private bridge,\n"
    "                        198.18.0.(I+1), multicast heartbeats (root only); default:\n"
    "                        loopback, 127.0.0.(I+1), unicast heartbeats\n"
    "        --mtu M         with --netns: the links' MTU and RDP's (default 1500)\n"
    "        --port P        RDP port P and heartbeat port P+1 (default: loopback probes\n"
    "                        free ports from 20000 + pid % 10000; namespaces use 4886)\n"
    "        --log-level L   error, warning, notice (default), info or debug\n"
    "        --timeout S     seconds to wait for the cluster (default 10)\n"
    "        --gang MS       gang scheduling with a quantum of MS milliseconds\n"
    "                        (gang.quantum_ms; default 0: off)\n"
    "        --mpl K         with --gang: rows of the matrix (gang.mpl, default 2)\n"
    "        --membership M  heartbeat.mode: unicast, multicast or swim (SWIM probing, whose\n"
    "                        packets per daemon do not grow with NODES); default: unicast\n"
    "                        on loopback, multicast with --netns\n"
    "        --tree-width K  psid.tree_width: children per node of a job's launch tree\n"
    "                        (default 32; 65536: every job's spawn sent to each node)\n"
    "down    stop the daemons (SIGTERM, SIGKILL after 3 s), remove namespaces, bridge,\n"
    "        sockets, pid and state files; --purge also logs, config and key\n"
    "status  one line per node: id name address pid running|stopped (exit 3 if any stopped)\n"
    "env     shell exports pointing psrun, pskill and psstat at node 0:\n"
    "        eval \"$(pslocal env --dir DIR)\"\n"
    "exec    run CMD as if on NODE (id or name): $PSID_SOCKET is that node's socket,\n"
    "        inside its namespace with --netns; exits with CMD's status\n";

/* --help: everything on stdout, exit 0; a bad command line: the synopsis on stderr, exit 2. */
static void usage_exit(int rc) __attribute__((noreturn));
static void usage_exit(int rc)
{
    fputs(usage_text, rc ? stderr : stdout);
    if (rc == 0) fputs(help_text, stdout);
    exit(rc);
}

void pl_usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vwarnx(fmt, ap);
    va_end(ap);
    usage_exit(2);
}

bool pl_parse_uint(const char *s, unsigned min, unsigned max, unsigned *out)
{
    if (!s || !isdigit((unsigned char)*s)) return false;
    errno = 0;
    char *end;
    unsigned long v = strtoul(s, &end, 10);
    if (errno || *end || v < min || v > max) return false;
    *out = (unsigned)v;
    return true;
}

struct optdef {
    const char *lng;
    char shrt;
    bool arg;
    unsigned cmds;
};

static const struct optdef optdefs[] = {
    {"nodes", 'n', true, C_UP},
    {"cpus", 0, true, C_UP},
    {"netns", 0, false, C_UP},
    {"log-level", 0, true, C_UP},
    {"port", 0, true, C_UP},
    {"timeout", 0, true, C_UP},
    {"mtu", 0, true, C_UP},
    {"gang", 0, true, C_UP},
    {"mpl", 0, true, C_UP},
    {"membership", 0, true, C_UP},
    {"tree-width", 0, true, C_UP},
    {"purge", 0, false, C_DOWN},
    {"dir", 'd', true, C_UP | C_DOWN | C_STATUS | C_ENV | C_EXEC},
    {"help", 'h', false, ~0u},
};

static void set_opt(struct pl_opts *o, const struct optdef *d, const char *val)
{
    const char *name = d->lng;
    if (!strcmp(name, "help")) usage_exit(0);
    if (!strcmp(name, "dir")) {
        if (!*val) pl_usage_error("--dir: empty");
        o->dir = val;
    } else if (!strcmp(name, "nodes")) {
        if (!pl_parse_uint(val, 1, MAX_LOOPBACK_NODES, &o->nodes))
            pl_usage_error("--nodes: need 1..%d, got '%s'", MAX_LOOPBACK_NODES, val);
    } else if (!strcmp(name, "cpus")) {
        if (!pl_parse_uint(val, 1, 4096, &o->cpus))
            pl_usage_error("--cpus: need 1..4096, got '%s'", val);
    } else if (!strcmp(name, "port")) {
        if (!pl_parse_uint(val, 1, 65534, &o->port))
            pl_usage_error("--port: need 1..65534, got '%s'", val);
        o->have_port = true;
    } else if (!strcmp(name, "log-level")) {
        enum psconf_log_level l;
        if (psconf_log_level_parse(val, &l) < 0)
            pl_usage_error("--log-level: error, warning, notice, info or debug, not '%s'", val);
        o->log_level = val;
    } else if (!strcmp(name, "timeout")) {
        char *end;
        errno = 0;
        o->timeout = strtod(val, &end);
        if (errno || end == val || *end || !(o->timeout > 0 && o->timeout <= 3600))
            pl_usage_error("--timeout: need seconds in (0, 3600], got '%s'", val);
    } else if (!strcmp(name, "mtu")) {
        if (!pl_parse_uint(val, RDP_MTU_MIN, 65535, &o->mtu))
            pl_usage_error("--mtu: need %u..65535, got '%s'", RDP_MTU_MIN, val);
    } else if (!strcmp(name, "gang")) {
        if (!pl_parse_uint(val, 0, 3600000, &o->gang_ms))
            pl_usage_error("--gang: need milliseconds 0..3600000, got '%s'", val);
    } else if (!strcmp(name, "tree-width")) {
        if (!pl_parse_uint(val, 1, 65536, &o->tree_width))
            pl_usage_error("--tree-width: need 1..65536, got '%s'", val);
    } else if (!strcmp(name, "mpl")) {
        if (!pl_parse_uint(val, 1, 64, &o->mpl)) pl_usage_error("--mpl: need 1..64, got '%s'", val);
    } else if (!strcmp(name, "membership")) {
        if (strcmp(val, "unicast") && strcmp(val, "multicast") && strcmp(val, "swim"))
            pl_usage_error("--membership: unicast, multicast or swim, not '%s'", val);
        o->membership = val;
    } else if (!strcmp(name, "netns")) {
        o->netns = true;
    } else if (!strcmp(name, "purge")) {
        o->purge = true;
    }
}

void pl_opts_parse(int argc, char **argv, struct pl_opts *o)
{
    static const struct {
        const char *name;
        enum pl_cmd cmd;
    } cmds[] = {
        {"up", C_UP}, {"down", C_DOWN}, {"status", C_STATUS}, {"env", C_ENV}, {"exec", C_EXEC}};
    *o = (struct pl_opts){
        .nodes = DEFAULT_NODES, .cpus = DEFAULT_CPUS, .timeout = DEFAULT_TIMEOUT_S};
    if (argc < 2) pl_usage_error("a command is needed");
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help"))
        usage_exit(0);
    for (size_t i = 0; i < sizeof cmds / sizeof *cmds; i++)
        if (!strcmp(argv[1], cmds[i].name)) o->cmd = cmds[i].cmd;
    if (!o->cmd) pl_usage_error("unknown command '%s'", argv[1]);

    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--")) {
            if (o->cmd != C_EXEC || !o->node) pl_usage_error("unexpected '--'");
            o->argv = argv + i + 1;
            break;
        }
        if (a[0] != '-' || !a[1]) { /* a positional argument */
            if (o->cmd != C_EXEC) pl_usage_error("unexpected argument '%s'", a);
            if (!o->node) {
                o->node = a;
                continue;
            }
            o->argv = argv + i; /* CMD without '--': the rest is the command */
            break;
        }
        const struct optdef *d = NULL;
        const char *val = NULL;
        char name[32];
        if (a[1] == '-') {
            const char *eq = strchr(a + 2, '=');
            size_t l = eq ? (size_t)(eq - a - 2) : strlen(a + 2);
            snprintf(name, sizeof name, "%.*s", (int)(l < 31 ? l : 31), a + 2);
            for (size_t k = 0; k < sizeof optdefs / sizeof *optdefs; k++)
                if (!strcmp(optdefs[k].lng, name)) d = &optdefs[k];
            if (d && eq) {
                if (!d->arg) pl_usage_error("--%s takes no value", d->lng);
                val = eq + 1;
            }
        } else {
            for (size_t k = 0; k < sizeof optdefs / sizeof *optdefs; k++)
                if (optdefs[k].shrt && optdefs[k].shrt == a[1]) d = &optdefs[k];
            if (d && a[2]) {
                if (!d->arg) pl_usage_error("-%c takes no value", a[1]);
                val = a + 2;
            }
        }
        if (!d) pl_usage_error("unknown option '%s'", a);
        if (!(d->cmds & o->cmd)) pl_usage_error("'%s' does not take %s", argv[1], a);
        if (d->arg && !val) {
            if (i + 1 >= argc) pl_usage_error("%s needs a value", a);
            val = argv[++i];
        }
        set_opt(o, d, val);
    }
    if (!o->dir) o->dir = getenv("PSLOCAL_DIR");
    if (!o->dir || !*o->dir) pl_usage_error("--dir DIR is needed (or $PSLOCAL_DIR)");
    if (o->cmd == C_EXEC && !o->node) pl_usage_error("exec: which node?");
    if (o->cmd == C_EXEC && (!o->argv || !o->argv[0])) pl_usage_error("exec: no command");
    if (o->cmd == C_UP && o->netns && o->nodes > MAX_NETNS_NODES)
        pl_usage_error("--netns: at most %d nodes", MAX_NETNS_NODES);
}
