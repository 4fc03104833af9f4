/*
 * pslocal.h - pslocal's parts (tools/pslocal.c is its main; the tool's description and
 * safety rules are at the top of that file, its manual docs/man/pslocal.1):
 *
 *   opts.c     the command line: usage, help, options and their ranges
 *   up.c       `up`: check DIR, write, start, wait; undo everything on failure or a signal
 *   config.c   what `up` writes: the key, psid.conf, the ports it names
 *   netns.c    a --netns cluster's network: namespaces, veths, bridge; and their removal
 *   daemons.c  the psid processes: start, pid files, the identity check, stop
 *   wait.c     waiting for the cluster: sockets accept, every node sees every node up
 *   state.c    DIR/pslocal.state: what `up` made outside DIR, for `down`
 *   down.c     `down`: daemons, network, files
 *   status.c, env.c, exec.c   the other commands
 *   files.c    paths and files in DIR
 *   run.c      running other programs (`ip`) with a time limit
 *
 * The only process-wide state is the signal `up` caught (pl_got_signal).
 */
#ifndef PSCLUSTER_PSLOCAL_H
#define PSCLUSTER_PSLOCAL_H

#include "psconf.h"

#include <limits.h>
#include <net/if.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#define MAX_LOOPBACK_NODES 254 /* 127.0.0.1 .. 127.0.0.254 */
#define MAX_NETNS_NODES    250 /* 198.18.0.1 .. 198.18.0.250 */
#define DEFAULT_NODES      4
#define DEFAULT_CPUS       2
#define DEFAULT_TIMEOUT_S  10.0
#define NETNS_PORT         4886 /* the namespaces have their own ports: the config default */
#define PROBE_BASE         20000
#define PROBE_SPAN         10000
#define STOP_GRACE_MS      3000 /* SIGTERM -> SIGKILL */
#define KILL_WAIT_MS       2000
#define IP_TIMEOUT_MS      10000 /* one `ip` command */
#define NS_IF              "eth0"
#define NS_NET             "198.18.0"
#define STATE_FILE         "pslocal.state"
#define CONF_FILE          "psid.conf"
#define KEY_FILE           "cluster.key"
#define LOG_TAIL_LINES     10

/* opts.c */
enum pl_cmd { C_UP = 1, C_DOWN = 2, C_STATUS = 4, C_ENV = 8, C_EXEC = 16 };

struct pl_opts {
    enum pl_cmd cmd;
    const char *dir;
    unsigned nodes, cpus, port, mtu;
    unsigned tree_width;   /* psid.tree_width (0: the default) */
    unsigned gang_ms, mpl; /* gang.quantum_ms (0: off) and gang.mpl (0: the default) */
    bool netns, purge, have_port;
    const char *log_level;
    const char *membership; /* heartbeat.mode; NULL: multicast with --netns, else unicast */
    double timeout;
    const char *node; /* exec */
    char **argv;      /* exec: CMD ARGS..., NULL-terminated */
};

/* Parse argv into *o; exits 2 with the synopsis on a bad command line, 0 after --help. */
void pl_opts_parse(int argc, char **argv, struct pl_opts *o);
/* A bad command line: the message, the synopsis, exit 2. */
void pl_usage_error(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
/* A decimal in min..max into *out: true, else false. */
bool pl_parse_uint(const char *s, unsigned min, unsigned max, unsigned *out);

/* up.c */
/* The signal `up` caught (SIGINT, SIGTERM, SIGHUP), or 0. */
extern volatile sig_atomic_t pl_got_signal;

/* What `up` is making. */
struct pl_up {
    const struct pl_opts *o;
    char dir[PATH_MAX], conf_path[PATH_MAX];
    uint32_t hash; /* of dir: the names of its namespaces and links */
    unsigned n, port;
    char psid[PATH_MAX];
    pid_t *pids; /* the daemons started, by node */
    struct psconf conf;
};

int pl_cmd_up(const struct pl_opts *o);

/* config.c */
/* The RDP port (heartbeats use port + 1); exits if --port is taken or none is free. */
unsigned pl_choose_port(const struct pl_up *u);
void pl_write_config(struct pl_up *u);
void pl_write_key(const struct pl_up *u);

/* netns.c */
/* FNV-1a: short, stable names for the namespaces and links of one DIR. */
uint32_t pl_dir_hash(const char *s);
bool pl_netns_exists(const char *ns);
/* Node i's namespace name. */
void pl_ns_name(const struct pl_up *u, unsigned i, char *buf, size_t len);
/* Create bridge, namespaces, veths; each recorded once made. 0 or -1. */
int pl_make_network(struct pl_up *u);
struct pl_state;
/* Remove what the state file lists; 0, or -1 if something is left. */
int pl_remove_network(const struct pl_state *s);

/* daemons.c */
/* Is pid a psid started with "-f conf --node NODE"? A zombie's cmdline is empty: no. */
bool pl_is_our_psid(pid_t pid, const char *conf, unsigned node);
/* A daemon's pid from DIR/psid-NODE.pid: > 0, or 0 if missing or garbage. */
pid_t pl_read_pid(const char *dir, unsigned node);
/* Node ids that have a pid file in dir, sorted; returns how many (at most max). */
size_t pl_pid_files(const char *dir, unsigned *ids, size_t max);
/* Alive and ours; reaps it first if it is our child (the failure path of `up`). */
bool pl_daemon_alive(pid_t pid, const char *conf, unsigned node);
/* Signal the daemons of dir, wait, SIGKILL; returns how many were still running at first and
 * sets *stuck to how many survived SIGKILL. */
size_t pl_stop_daemons(const char *dir, size_t *stuck);
/* Start node i's psid, detached, its output to DIR/psid-I.log, its pid into DIR/psid-I.pid. */
pid_t pl_start_psid(const struct pl_up *u, unsigned i);
/* "node N: psid exited with status S" or "... killed by signal S" on stderr. */
void pl_describe_exit(unsigned node, int status);
/* The failure path of up: our own children are ours for sure, even before they exec psid
 * (the identity check would not know them yet): TERM, wait, KILL, reap. */
void pl_stop_children(pid_t *pids, unsigned n);

/* wait.c */
/* Until every socket accepts and every node sees every node up. 0, or -1 (reported, with the
 * log of the node to blame). */
int pl_wait_ready(struct pl_up *u);

/* state.c: "mode loopback|netns", "nodes N", "port P", "bridge NAME", "veth NAME",
 * "netns NAME NODE" - one record a line, appended as things are made */
struct pl_state {
    bool valid, netns;
    unsigned nodes, port;
    char bridge[IF_NAMESIZE];
    char (*veth)[IF_NAMESIZE];
    size_t nveth;
    struct {
        char name[64];
        unsigned node;
    } * ns;
    size_t nns;
};

/* Append a record (printf-style) and sync it; exits on failure. */
void pl_state_add(const char *dir, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void pl_state_free(struct pl_state *s);
/* 0 and s filled, or -1 if there is no state file (errno ENOENT) or it cannot be read. */
int pl_state_read(const char *dir, struct pl_state *s);
/* The namespace of node, or NULL. */
const char *pl_state_ns_of(const struct pl_state *s, unsigned node);

/* down.c */
/* Everything `down` does. verbose: say what was done on stdout. 0, or 1 if something is left. */
int pl_teardown(const char *dir, bool purge, bool verbose);
int pl_cmd_down(const struct pl_opts *o);

/* status.c, env.c, exec.c */
int pl_cmd_status(const struct pl_opts *o);
int pl_cmd_env(const struct pl_opts *o);
int pl_cmd_exec(const struct pl_opts *o);

/* files.c */
/* DIR/NAME into buf; exits if it does not fit. */
void pl_path_in(char *buf, size_t len, const char *dir, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
bool pl_exists(const char *path);
/* Write a whole file atomically (temporary file, rename) with the given mode; exits on
 * failure. */
void pl_write_file(const char *path, const void *data, size_t len, mode_t mode);
/* mkdir -p */
void pl_make_dirs(const char *path);
/* The last LOG_TAIL_LINES lines of a log to stderr, indented. */
void pl_print_log_tail(const char *path);
/* Remove DIR/psid-N<suffix> files (only sockets if sockets_only). */
void pl_unlink_matching(const char *dir, const char *suffix, bool sockets_only);
void pl_unlink_in(const char *dir, const char *name);
/* realpath of an existing DIR with a cluster configuration in it; exits otherwise. */
void pl_cluster_dir(const char *dir, char *out);
/* DIR/psid.conf; exits with the loader's message if it is not valid. */
void pl_load_conf(const char *dir, struct psconf *c);

/* run.c */
/* name in $PATH (as execvp would find it) into out. */
bool pl_path_search(const char *name, char *out, size_t len);
/* Where a helper program is: $ENVVAR, next to this binary, $PATH. */
bool pl_find_tool(const char *name, const char *envvar, char *out, size_t len);
/* A child's signal mask and dispositions as a program expects them. */
void pl_child_reset_signals(void);
/* Run argv (searched in $PATH) with stdin from /dev/null. Its stdout goes to out (up to
 * outlen - 1 bytes, NUL-terminated) if out is given, else to our stdout unless quiet; stderr
 * goes to ours unless quiet. envset: "NAME=VALUE" to add, or NULL. Waits at most timeout_ms,
 * then kills it. Returns its exit status, 128 + signal if killed, or -1 if it could not run
 * or ran out of time. */
int pl_run(char *const argv[], const char *envset, char *out, size_t outlen, int timeout_ms,
           bool quiet);

/* Milliseconds on CLOCK_MONOTONIC, and a sleep in them. */
static inline int64_t pl_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static inline void pl_sleep_ms(unsigned ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000};
    nanosleep(&ts, NULL);
}

#endif
