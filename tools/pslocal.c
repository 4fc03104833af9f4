/*
 * pslocal.c - a virtual pscluster on one machine: N psid daemons, each one a "node".
 *
 *   pslocal up [-n NODES] [--cpus K] [--netns] --dir DIR [--log-level L] [--port P]
 *              [--timeout S]
 *   pslocal down --dir DIR [--purge]
 *   pslocal status --dir DIR
 *   pslocal env --dir DIR
 *   pslocal exec NODE --dir DIR -- CMD [ARGS...]
 *
 * Everything a cluster needs lives in DIR: cluster.key, psid.conf and, per node I, the client
 * socket psid-I.sock, the pid file psid-I.pid and the log psid-I.log. pslocal.state records
 * the mode and what `up` made outside DIR (namespaces, veths, the bridge), so that `down`
 * removes exactly that, also after a crash. No other state exists: each command needs DIR only.
 *
 * Two modes:
 *  - loopback (default, any user): node I is 127.0.0.(I+1), heartbeats are unicast. The RDP
 *    port P and the heartbeat port P+1 must be free on every node address (probed with a UDP
 *    bind), so clusters in different DIRs can run side by side: by default the probe starts
 *    at 20000 + pid % 10000 and moves on; --port P takes exactly P and P+1.
 *  - namespaces (--netns, root only): node I runs under `ip netns exec psl<hash>-I` (hash of
 *    DIR), its veth eth0 on a bridge psb<hash> of its own: no uplink, no address on the
 *    bridge, no default route, multicast snooping off; address 198.18.0.(I+1)/24 and a route
 *    for 224.0.0.0/4 so the multicast heartbeats leave through eth0.
 *
 * Safety rules: a pid read from a pid file is signalled only while /proc/PID/cmdline is a psid
 * started with "-f DIR/psid.conf --node I". An object goes into the state file only after
 * `ip` made it, so a failed `up` never removes what it did not create (e.g. another cluster's
 * bridge). Every wait has a deadline. Processes found in the cluster's own namespaces at `down`
 * are the cluster's and are ended with them.
 *
 * The psid to run can be replaced for tests: $PSLOCAL_PSID names it (its file name must begin
 * with "psid" for the identity check); otherwise it is looked up next to this binary, then in
 * $PATH. Whether the nodes see each other up is asked of their psids through libpsi. Manual:
 * docs/man/pslocal.1.
 */
#include "psi_nodes.h"
#include "psconf.h"
#include "psi.h"
#include "rdp.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <dirent.h>
#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

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

static const char usage_text[] =
    "usage: pslocal up [-n NODES] [--cpus K] [--netns [--mtu M]] --dir DIR [--log-level L]\n"
    "                  [--port P] [--timeout S]\n"
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
    "down    stop the daemons (SIGTERM, SIGKILL after 3 s), remove namespaces, bridge,\n"
    "        sockets, pid and state files; --purge also logs, config and key\n"
    "status  one line per node: id name address pid running|stopped (exit 3 if any stopped)\n"
    "env     shell exports pointing psrun, pskill and psstat at node 0:\n"
    "        eval \"$(pslocal env --dir DIR)\"\n"
    "exec    run CMD as if on NODE (id or name): $PSID_SOCKET is that node's socket,\n"
    "        inside its namespace with --netns; exits with CMD's status\n";

enum cmd { C_UP = 1, C_DOWN = 2, C_STATUS = 4, C_ENV = 8, C_EXEC = 16 };

struct opts {
    enum cmd cmd;
    const char *dir;
    unsigned nodes, cpus, port, mtu;
    bool netns, purge, have_port;
    const char *log_level;
    double timeout;
    const char *node; /* exec */
    char **argv;      /* exec: CMD ARGS..., NULL-terminated */
};

static volatile sig_atomic_t got_signal;

/* ------------------------------------------------------------------------------------------ */
/* small helpers */

/* --help: everything on stdout, exit 0; a bad command line: the synopsis on stderr, exit 2. */
static void usage_exit(int rc)
{
    fputs(usage_text, rc ? stderr : stdout);
    if (rc == 0) fputs(help_text, stdout);
    exit(rc);
}

static void usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vwarnx(fmt, ap);
    va_end(ap);
    usage_exit(2);
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_ms(unsigned ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000};
    nanosleep(&ts, NULL);
}

/* DIR/NAME into buf; exits if it does not fit. */
static void path_in(char *buf, size_t len, const char *dir, const char *fmt, ...)
{
    char name[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(name, sizeof name, fmt, ap);
    va_end(ap);
    int r = snprintf(buf, len, "%s/%s", dir, name);
    if (r < 0 || (size_t)r >= len) errx(1, "%s/%s: path too long", dir, name);
}

static bool parse_uint(const char *s, unsigned min, unsigned max, unsigned *out)
{
    if (!s || !isdigit((unsigned char)*s)) return false;
    errno = 0;
    char *end;
    unsigned long v = strtoul(s, &end, 10);
    if (errno || *end || v < min || v > max) return false;
    *out = (unsigned)v;
    return true;
}

static bool exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

/* Write a whole file atomically (temporary file, rename) with the given mode. */
static void write_file(const char *path, const void *data, size_t len, mode_t mode)
{
    char tmp[PATH_MAX];
    if (snprintf(tmp, sizeof tmp, "%s.tmp", path) >= (int)sizeof tmp) errx(1, "%s: too long", path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, mode);
    if (fd < 0) err(1, "%s", tmp);
    if (fchmod(fd, mode) < 0) err(1, "%s", tmp);
    const char *p = data;
    while (len) {
        ssize_t w = write(fd, p, len);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0) err(1, "%s", tmp);
        p += w;
        len -= (size_t)w;
    }
    if (fsync(fd) < 0 || close(fd) < 0) err(1, "%s", tmp);
    if (rename(tmp, path) < 0) err(1, "rename %s", path);
}

/* The last LOG_TAIL_LINES lines of a log to stderr, indented. */
static void print_log_tail(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        warn("%s", path);
        return;
    }
    char buf[4096 + 1];
    off_t size = lseek(fd, 0, SEEK_END);
    off_t from = size > 4096 ? size - 4096 : 0;
    ssize_t r = pread(fd, buf, 4096, from);
    close(fd);
    if (r <= 0) {
        fprintf(stderr, "  (%s is empty)\n", path);
        return;
    }
    buf[r] = '\0';
    size_t n = (size_t)r;
    if (n && buf[n - 1] == '\n') buf[--n] = '\0';
    const char *start = buf;
    int lines = 0;
    for (size_t i = n; i > 0; i--) {
        if (buf[i - 1] == '\n' && ++lines == LOG_TAIL_LINES) {
            start = buf + i;
            break;
        }
    }
    fprintf(stderr, "  --- last lines of %s ---\n", path);
    for (const char *l = start; *l;) {
        const char *e = strchr(l, '\n');
        size_t ll = e ? (size_t)(e - l) : strlen(l);
        fprintf(stderr, "  | %.*s\n", (int)ll, l);
        l += ll + (e ? 1 : 0);
    }
}

/* FNV-1a: short, stable names for the namespaces and links of one DIR. */
static uint32_t dir_hash(const char *s)
{
    uint32_t h = 2166136261u;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

/* name in $PATH (as execvp would find it) into out. */
static bool path_search(const char *name, char *out, size_t len)
{
    if (strchr(name, '/')) {
        snprintf(out, len, "%s", name);
        return access(name, X_OK) == 0;
    }
    const char *path = getenv("PATH");
    if (!path) path = "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin";
    while (*path) {
        size_t l = strcspn(path, ":");
        struct stat st;
        if (l && snprintf(out, len, "%.*s/%s", (int)l, path, name) < (int)len &&
            access(out, X_OK) == 0 && stat(out, &st) == 0 && S_ISREG(st.st_mode))
            return true;
        path += l;
        if (*path == ':') path++;
    }
    return false;
}

/* Where a helper program is: $ENVVAR, next to this binary, $PATH. */
static bool find_tool(const char *name, const char *envvar, char *out, size_t len)
{
    const char *e = envvar ? getenv(envvar) : NULL;
    if (e && *e) {
        snprintf(out, len, "%s", e);
        return access(e, X_OK) == 0;
    }
    char self[PATH_MAX];
    ssize_t r = readlink("/proc/self/exe", self, sizeof self - 1);
    if (r > 0) {
        self[r] = '\0';
        char *slash = strrchr(self, '/');
        if (slash) {
            *slash = '\0';
            if (snprintf(out, len, "%s/%s", self, name) < (int)len && access(out, X_OK) == 0)
                return true;
        }
    }
    return path_search(name, out, len);
}

/* ------------------------------------------------------------------------------------------ */
/* running commands */

static void child_reset_signals(void)
{
    sigset_t all;
    sigemptyset(&all);
    sigprocmask(SIG_SETMASK, &all, NULL);
    int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, SIGCHLD};
    for (size_t i = 0; i < sizeof sigs / sizeof *sigs; i++) signal(sigs[i], SIG_DFL);
}

/*
 * Run argv (searched in $PATH) with stdin from /dev/null. Its stdout goes to out (up to
 * outlen - 1 bytes, NUL-terminated) if out is given, else to our stdout unless quiet; stderr
 * goes to ours unless quiet. envset: "NAME=VALUE" to add, or NULL. Waits at most timeout_ms,
 * then kills it. Returns its exit status, 128 + signal if killed, or -1 if it could not run
 * or ran out of time.
 */
static int run(char *const argv[], const char *envset, char *out, size_t outlen, int timeout_ms,
               bool quiet)
{
    int pfd[2] = {-1, -1};
    if (out && pipe2(pfd, O_CLOEXEC) < 0) {
        warn("pipe");
        return -1;
    }
    pid_t pid = fork();
    if (pid < 0) {
        warn("fork");
        if (out) close(pfd[0]), close(pfd[1]);
        return -1;
    }
    if (pid == 0) {
        child_reset_signals();
        int nul = open("/dev/null", O_RDWR);
        if (nul >= 0) {
            dup2(nul, 0);
            if (quiet) {
                dup2(nul, 2);
                if (!out) dup2(nul, 1);
            }
        }
        if (out) dup2(pfd[1], 1);
        if (envset) putenv((char *)envset);
        execvp(argv[0], argv);
        if (!quiet) fprintf(stderr, "pslocal: %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    size_t got = 0;
    if (out) {
        close(pfd[1]);
        out[0] = '\0';
    }
    int64_t deadline = now_ms() + timeout_ms;
    int status = 0;
    bool done = false, eof = !out;
    while (!done || !eof) {
        int64_t left = deadline - now_ms();
        if (left <= 0) break;
        if (!eof) {
            struct pollfd p = {.fd = pfd[0], .events = POLLIN};
            if (poll(&p, 1, left > 20 ? 20 : (int)left) > 0) {
                char tmp[4096];
                ssize_t r = read(pfd[0], tmp, sizeof tmp);
                if (r <= 0) {
                    if (r == 0 || errno != EINTR) eof = true;
                } else {
                    size_t keep = (size_t)r;
                    if (got + keep > outlen - 1) keep = outlen - 1 - got;
                    memcpy(out + got, tmp, keep);
                    got += keep;
                    out[got] = '\0';
                }
            }
        } else {
            sleep_ms(5);
        }
        if (!done) {
            pid_t w = waitpid(pid, &status, WNOHANG);
            if (w == pid) done = true;
        }
    }
    if (out) close(pfd[0]);
    if (!done) {
        kill(pid, SIGKILL); /* our own child */
        waitpid(pid, &status, 0);
        if (!quiet) warnx("%s: no result after %d ms; killed", argv[0], timeout_ms);
        return -1;
    }
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    return 128 + WTERMSIG(status);
}

/* `ip ARGS...`: 0 on success; failures print the command (unless quiet). */
static int ip_cmd(bool quiet, ...)
{
    char *argv[16];
    int n = 0;
    argv[n++] = "ip";
    va_list ap;
    va_start(ap, quiet);
    char *a;
    while ((a = va_arg(ap, char *)) && n < 15) argv[n++] = a;
    va_end(ap);
    argv[n] = NULL;
    int rc = run(argv, NULL, NULL, 0, IP_TIMEOUT_MS, quiet);
    if (rc != 0 && !quiet) {
        char line[512] = "";
        size_t l = 0;
        for (int i = 0; i < n && l < sizeof line; i++)
            l += (size_t)snprintf(line + l, sizeof line - l, "%s%s", i ? " " : "", argv[i]);
        warnx("failed: %s", line);
    }
    return rc == 0 ? 0 : -1;
}

static void disable_ipv6(const char *ifname)
{
    char p[128];
    snprintf(p, sizeof p, "/proc/sys/net/ipv6/conf/%s/disable_ipv6", ifname);
    int fd = open(p, O_WRONLY | O_CLOEXEC);
    if (fd < 0) return;
    if (write(fd, "1", 1) < 0) { /* best effort: IPv6 is only chatter here */
    }
    close(fd);
}

static bool netns_exists(const char *ns)
{
    char p[PATH_MAX];
    snprintf(p, sizeof p, "/run/netns/%s", ns);
    return exists(p);
}

/* ------------------------------------------------------------------------------------------ */
/* the state file: "mode loopback|netns", "nodes N", "port P", "bridge NAME", "veth NAME",
 * "netns NAME NODE" - one record a line, appended as things are made */

struct state {
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

static void state_add(const char *dir, const char *fmt, ...)
{
    char path[PATH_MAX], line[256];
    path_in(path, sizeof path, dir, STATE_FILE);
    va_list ap;
    va_start(ap, fmt);
    int l = vsnprintf(line, sizeof line - 1, fmt, ap);
    va_end(ap);
    if (l < 0 || (size_t)l >= sizeof line - 1) errx(1, "state record too long");
    line[l++] = '\n';
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0) err(1, "%s", path);
    if (write(fd, line, (size_t)l) != l || fdatasync(fd) < 0) err(1, "%s", path);
    close(fd);
}

static void state_free(struct state *s)
{
    free(s->veth);
    free(s->ns);
    memset(s, 0, sizeof *s);
}

/* 0 and s filled, or -1 if there is no state file (errno ENOENT) or it cannot be read. */
static int state_read(const char *dir, struct state *s)
{
    memset(s, 0, sizeof *s);
    char path[PATH_MAX];
    path_in(path, sizeof path, dir, STATE_FILE);
    FILE *f = fopen(path, "re");
    if (!f) return -1;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        char key[16], a[64];
        unsigned v;
        if (sscanf(line, "%15s %63s", key, a) != 2) continue;
        if (!strcmp(key, "mode")) {
            s->netns = !strcmp(a, "netns");
            s->valid = true;
        } else if (!strcmp(key, "nodes") && parse_uint(a, 1, 65535, &v)) {
            s->nodes = v;
        } else if (!strcmp(key, "port") && parse_uint(a, 1, 65535, &v)) {
            s->port = v;
        } else if (!strcmp(key, "bridge") && strlen(a) < IF_NAMESIZE) {
            strcpy(s->bridge, a);
        } else if (!strcmp(key, "veth") && strlen(a) < IF_NAMESIZE) {
            void *p = realloc(s->veth, (s->nveth + 1) * sizeof *s->veth);
            if (!p) err(1, "realloc");
            s->veth = p;
            strcpy(s->veth[s->nveth++], a);
        } else if (!strcmp(key, "netns") && sscanf(line, "%*s %*s %u", &v) == 1) {
            void *p = realloc(s->ns, (s->nns + 1) * sizeof *s->ns);
            if (!p) err(1, "realloc");
            s->ns = p;
            strcpy(s->ns[s->nns].name, a);
            s->ns[s->nns++].node = v;
        }
    }
    fclose(f);
    return 0;
}

static const char *state_ns_of(const struct state *s, unsigned node)
{
    for (size_t i = 0; i < s->nns; i++)
        if (s->ns[i].node == node) return s->ns[i].name;
    return NULL;
}

/* ------------------------------------------------------------------------------------------ */
/* daemons: pid files and the identity check */

/* Is pid a psid started with "-f conf --node NODE"? A zombie's cmdline is empty: no. */
static bool is_our_psid(pid_t pid, const char *conf, unsigned node)
{
    char p[64], buf[8192];
    snprintf(p, sizeof p, "/proc/%d/cmdline", (int)pid);
    int fd = open(p, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    ssize_t r = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (r <= 0) return false;
    buf[r] = '\0';
    const char *argv[64];
    int argc = 0;
    for (char *s = buf; s < buf + r && argc < 64; s += strlen(s) + 1) argv[argc++] = s;
    bool name = false, f = false, n = false;
    char id[16];
    snprintf(id, sizeof id, "%u", node);
    for (int i = 0; i < argc; i++) {
        const char *base = strrchr(argv[i], '/');
        base = base ? base + 1 : argv[i];
        /* argv[0] is psid (or psid-something), or an interpreter running such a script */
        if (i < 2 && !strncmp(base, "psid", 4)) name = true;
        if (i + 1 < argc && !strcmp(argv[i], "-f") && !strcmp(argv[i + 1], conf)) f = true;
        if (i + 1 < argc && !strcmp(argv[i], "--node") && !strcmp(argv[i + 1], id)) n = true;
    }
    return name && f && n;
}

/* A daemon's pid from DIR/psid-NODE.pid: > 0, or 0 if missing or garbage. */
static pid_t read_pid(const char *dir, unsigned node)
{
    char path[PATH_MAX], buf[32];
    path_in(path, sizeof path, dir, "psid-%u.pid", node);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    ssize_t r = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (r <= 0) return 0;
    buf[r] = '\0';
    buf[strcspn(buf, "\n")] = '\0';
    unsigned v;
    return parse_uint(buf, 1, INT_MAX, &v) ? (pid_t)v : 0;
}

/* Node ids that have a pid file in dir, sorted; returns how many (at most max). */
static size_t pid_files(const char *dir, unsigned *ids, size_t max)
{
    DIR *d = opendir(dir);
    if (!d) return 0;
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < max) {
        unsigned id;
        char tail[8];
        if (sscanf(e->d_name, "psid-%u.pi%1s", &id, tail) == 2 && !strcmp(tail, "d")) {
            char want[32];
            snprintf(want, sizeof want, "psid-%u.pid", id);
            if (!strcmp(want, e->d_name)) ids[n++] = id;
        }
    }
    closedir(d);
    for (size_t i = 1; i < n; i++) /* insertion sort: a handful of ids */
        for (size_t j = i; j > 0 && ids[j - 1] > ids[j]; j--) {
            unsigned t = ids[j];
            ids[j] = ids[j - 1];
            ids[j - 1] = t;
        }
    return n;
}

/* Alive and ours; reaps it first if it is our child (the failure path of `up`). */
static bool daemon_alive(pid_t pid, const char *conf, unsigned node)
{
    int st;
    if (pid <= 0) return false;
    if (waitpid(pid, &st, WNOHANG) == pid) return false;
    return is_our_psid(pid, conf, node);
}

/* ------------------------------------------------------------------------------------------ */
/* teardown: what `down` does, and `up` on failure */

struct daemon_ref {
    unsigned node;
    pid_t pid;
};

/* Signal the daemons of dir, wait, SIGKILL; returns how many were still running at first and
 * sets *stuck to how many survived SIGKILL. */
static size_t stop_daemons(const char *dir, size_t *stuck)
{
    char conf[PATH_MAX];
    path_in(conf, sizeof conf, dir, CONF_FILE);
    unsigned ids[4096];
    size_t n = pid_files(dir, ids, sizeof ids / sizeof *ids);
    struct daemon_ref *d = calloc(n ? n : 1, sizeof *d);
    if (!d) err(1, "calloc");
    size_t live = 0;
    for (size_t i = 0; i < n; i++) {
        pid_t pid = read_pid(dir, ids[i]);
        if (!daemon_alive(pid, conf, ids[i])) continue; /* stale: gone, or the pid reused */
        if (kill(pid, SIGTERM) == 0) d[live++] = (struct daemon_ref){ids[i], pid};
    }
    size_t started = live;
    for (int round = 0; round < 2 && live; round++) {
        int64_t deadline = now_ms() + (round == 0 ? STOP_GRACE_MS : KILL_WAIT_MS);
        for (;;) {
            size_t still = 0;
            for (size_t i = 0; i < live; i++)
                if (daemon_alive(d[i].pid, conf, d[i].node)) d[still++] = d[i];
            live = still;
            if (!live || now_ms() >= deadline) break;
            sleep_ms(20);
        }
        if (round == 0)
            for (size_t i = 0; i < live; i++) {
                warnx("node %u (pid %d) still running after %d s: SIGKILL", d[i].node,
                      (int)d[i].pid, STOP_GRACE_MS / 1000);
                if (daemon_alive(d[i].pid, conf, d[i].node)) kill(d[i].pid, SIGKILL);
            }
    }
    for (size_t i = 0; i < live; i++)
        warnx("node %u (pid %d) survives SIGKILL", d[i].node, (int)d[i].pid);
    *stuck = live;
    free(d);
    return started;
}

/* pids in namespace ns (not ours), at most max */
static size_t netns_pids(const char *ns, pid_t *pids, size_t max)
{
    char out[8192];
    char *argv[] = {"ip", "netns", "pids", (char *)ns, NULL};
    if (run(argv, NULL, out, sizeof out, IP_TIMEOUT_MS, true) != 0) return 0;
    size_t n = 0;
    for (char *s = strtok(out, " \n"); s && n < max; s = strtok(NULL, " \n")) {
        unsigned v;
        if (parse_uint(s, 1, INT_MAX, &v) && (pid_t)v != getpid()) pids[n++] = (pid_t)v;
    }
    return n;
}

/* End whatever still runs in our namespace ns: TERM, up to 1 s, KILL. */
static void netns_empty(const char *ns)
{
    pid_t pids[1024];
    size_t n = netns_pids(ns, pids, 1024);
    if (!n) return;
    warnx("%s: ending %zu process%s left in the namespace", ns, n, n == 1 ? "" : "es");
    for (size_t i = 0; i < n; i++) kill(pids[i], SIGTERM);
    int64_t deadline = now_ms() + 1000;
    while (now_ms() < deadline && netns_pids(ns, pids, 1024)) sleep_ms(20);
    n = netns_pids(ns, pids, 1024);
    for (size_t i = 0; i < n; i++) kill(pids[i], SIGKILL);
    deadline = now_ms() + 1000;
    while (now_ms() < deadline && netns_pids(ns, pids, 1024)) sleep_ms(20);
}

/* Delete a link of the host namespace if it exists. A veth goes away by itself when the
 * kernel finishes deleting its peer's namespace, which happens in the background: so `ip`
 * may miss it, and it may take a moment. 0, or -1 if it is still there after a second. */
static int link_del(const char *name)
{
    if (!if_nametoindex(name)) return 0;
    ip_cmd(true, "link", "del", name, NULL);
    int64_t deadline = now_ms() + 1000;
    while (if_nametoindex(name)) {
        if (now_ms() >= deadline) {
            warnx("cannot delete link %s", name);
            return -1;
        }
        sleep_ms(20);
    }
    return 0;
}

/* Remove what the state file lists; 0, or -1 if something is left. */
static int remove_network(const struct state *s)
{
    int rc = 0;
    if (!s->nns && !s->nveth && !s->bridge[0]) return 0;
    if (geteuid() != 0) {
        warnx("removing the namespaces of a --netns cluster needs root");
        return -1;
    }
    for (size_t i = 0; i < s->nns; i++) {
        if (!netns_exists(s->ns[i].name)) continue;
        netns_empty(s->ns[i].name);
        if (ip_cmd(false, "netns", "del", s->ns[i].name, NULL) < 0) rc = -1;
    }
    for (size_t i = 0; i < s->nveth; i++)
        if (link_del(s->veth[i]) < 0) rc = -1;
    if (s->bridge[0] && link_del(s->bridge) < 0) rc = -1;
    return rc;
}

static void unlink_matching(const char *dir, const char *suffix, bool sockets_only)
{
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    size_t sl = strlen(suffix);
    while ((e = readdir(d))) {
        size_t l = strlen(e->d_name);
        unsigned id;
        if (strncmp(e->d_name, "psid-", 5) || l <= sl || strcmp(e->d_name + l - sl, suffix))
            continue;
        if (sscanf(e->d_name, "psid-%u", &id) != 1) continue;
        char p[PATH_MAX];
        path_in(p, sizeof p, dir, "%s", e->d_name);
        struct stat st;
        if (lstat(p, &st) < 0) continue;
        if (sockets_only && !S_ISSOCK(st.st_mode)) continue;
        if (unlink(p) < 0 && errno != ENOENT) warn("%s", p);
    }
    closedir(d);
}

static void unlink_in(const char *dir, const char *name)
{
    char p[PATH_MAX];
    path_in(p, sizeof p, dir, "%s", name);
    if (unlink(p) < 0 && errno != ENOENT) warn("%s", p);
}

/* Everything `down` does. verbose: say what was done on stdout. 0, or 1 if something is left. */
static int teardown(const char *dir, bool purge, bool verbose)
{
    struct state s;
    bool have_state = state_read(dir, &s) == 0;
    if (have_state && s.netns && geteuid() != 0 && (s.nns || s.bridge[0])) {
        warnx("%s: a --netns cluster: 'down' needs root", dir);
        state_free(&s);
        return 1;
    }
    size_t stuck = 0;
    size_t stopped = stop_daemons(dir, &stuck);
    int rc = stuck ? 1 : 0;
    if (have_state && remove_network(&s) < 0) rc = 1;
    unlink_matching(dir, ".sock", true);
    if (!stuck) unlink_matching(dir, ".pid", false);
    if (rc == 0) unlink_in(dir, STATE_FILE);
    if (purge && rc == 0) {
        unlink_matching(dir, ".log", false);
        unlink_in(dir, CONF_FILE);
        unlink_in(dir, KEY_FILE);
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
    if (have_state) state_free(&s);
    return rc;
}

/* ------------------------------------------------------------------------------------------ */
/* up */

struct up {
    const struct opts *o;
    char dir[PATH_MAX], conf_path[PATH_MAX];
    uint32_t hash;
    unsigned n, port;
    char psid[PATH_MAX];
    pid_t *pids;
    struct psconf conf;
};

static void on_signal(int sig)
{
    got_signal = sig;
}

/* mkdir -p */
static void make_dirs(const char *path)
{
    char p[PATH_MAX];
    if (snprintf(p, sizeof p, "%s", path) >= (int)sizeof p) errx(1, "%s: path too long", path);
    for (char *s = p + 1; *s; s++) {
        if (*s != '/') continue;
        *s = '\0';
        if (mkdir(p, 0777) < 0 && errno != EEXIST) err(1, "mkdir %s", p);
        *s = '/';
    }
    if (mkdir(p, 0777) < 0 && errno != EEXIST) err(1, "mkdir %s", p);
}

static bool udp_port_free(const char *addr, unsigned port)
{
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return false;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    inet_pton(AF_INET, addr, &a.sin_addr);
    bool ok = bind(fd, (struct sockaddr *)&a, sizeof a) == 0;
    close(fd);
    return ok;
}

static bool ports_free(unsigned n, unsigned port)
{
    for (unsigned i = 0; i < n; i++) {
        char a[32];
        snprintf(a, sizeof a, "127.0.0.%u", i + 1);
        if (!udp_port_free(a, port) || !udp_port_free(a, port + 1)) return false;
    }
    return true;
}

/* The RDP port (heartbeats use port + 1). */
static unsigned choose_port(const struct up *u)
{
    if (u->o->netns) return u->o->have_port ? u->o->port : NETNS_PORT;
    if (u->o->have_port) {
        if (!ports_free(u->n, u->o->port))
            errx(1, "UDP port %u or %u is in use on 127.0.0.1..127.0.0.%u; choose another --port",
                 u->o->port, u->o->port + 1, u->n);
        return u->o->port;
    }
    unsigned start = PROBE_BASE + (unsigned)getpid() % PROBE_SPAN;
    for (unsigned k = 0; k < PROBE_SPAN; k += 2) {
        unsigned p = PROBE_BASE + (start - PROBE_BASE + k) % (PROBE_SPAN - 1);
        if (ports_free(u->n, p)) return p;
    }
    errx(1, "no free pair of UDP ports in %u..%u", PROBE_BASE, PROBE_BASE + PROBE_SPAN);
}

/* A string literal for libconfig. */
static void put_cfg_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') fputc('\\', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

static void write_config(struct up *u)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f) err(1, "open_memstream");
    fprintf(f,
            "# psid.conf - written by 'pslocal up' for a virtual cluster of %u node%s\n"
            "# (%s mode); 'pslocal down' stops it. See conf/psid.conf for every key.\n",
            u->n, u->n == 1 ? "" : "s", u->o->netns ? "namespace" : "loopback");
    fprintf(f, "cluster = \"pslocal\";\nkey_file = \"" KEY_FILE "\";\n");
    fprintf(f, "log_level = \"%s\";\n", u->o->log_level ? u->o->log_level : "notice");
    /* loopback carries 64 KiB datagrams; the veths have the usual 1500 */
    fprintf(f, "rdp = {\n  port = %u;\n  mtu = %u;\n};\n", u->port,
            u->o->netns ? (u->o->mtu ? u->o->mtu : 1500) : 65536);
    fprintf(f, "heartbeat = {\n  mode = \"%s\";\n  port = %u;\n};\n",
            u->o->netns ? "multicast" : "unicast", u->port + 1);
    /* '%' in DIR must not become a socket_fmt escape */
    char sock[PATH_MAX * 2];
    size_t k = 0;
    for (const char *s = u->dir; *s && k < sizeof sock - 3; s++) {
        if (*s == '%') sock[k++] = '%';
        sock[k++] = *s;
    }
    sock[k] = '\0';
    fprintf(f, "psid = {\n  socket = ");
    char full[PATH_MAX * 2 + 32];
    snprintf(full, sizeof full, "%s/psid-%%n.sock", sock);
    put_cfg_str(f, full);
    fprintf(f, ";\n};\nnodes = (\n");
    for (unsigned i = 0; i < u->n; i++)
        fprintf(f, "  { id = %u; name = \"n%u\"; address = \"%s.%u\"; cpus = %u; }%s\n", i, i,
                u->o->netns ? NS_NET : "127.0.0", i + 1, u->o->cpus, i + 1 < u->n ? "," : "");
    fprintf(f, ");\n");
    if (fclose(f) != 0) err(1, "open_memstream");
    write_file(u->conf_path, text, len, 0644);
    free(text);
}

static void write_key(const struct up *u)
{
    unsigned char key[32];
    if (getrandom(key, sizeof key, 0) != (ssize_t)sizeof key) err(1, "getrandom");
    char path[PATH_MAX];
    path_in(path, sizeof path, u->dir, KEY_FILE);
    write_file(path, key, sizeof key, 0600);
    explicit_bzero(key, sizeof key);
}

static void ns_name(const struct up *u, unsigned i, char *buf, size_t len)
{
    snprintf(buf, len, "psl%08x-%u", u->hash, i);
}

/* Create bridge, namespaces, veths; each recorded once made. 0 or -1. */
static int make_network(struct up *u)
{
    char br[IF_NAMESIZE];
    snprintf(br, sizeof br, "psb%08x", u->hash);
    if (if_nametoindex(br)) {
        warnx("bridge %s exists already (a leftover of another pslocal cluster?)", br);
        return -1;
    }
    for (unsigned i = 0; i < u->n; i++) {
        char ns[64];
        ns_name(u, i, ns, sizeof ns);
        if (netns_exists(ns)) {
            warnx("network namespace %s exists already (a leftover? 'ip netns del %s')", ns, ns);
            return -1;
        }
    }
    if (ip_cmd(false, "link", "add", "name", br, "type", "bridge", "mcast_snooping", "0", NULL))
        return -1;
    state_add(u->dir, "bridge %s", br);
    disable_ipv6(br);
    if (ip_cmd(false, "link", "set", br, "up", NULL)) return -1;
    for (unsigned i = 0; i < u->n && !got_signal; i++) {
        char ns[64], hv[32], addr[32]; /* hv: at most 15 characters (i < 1000) */
        ns_name(u, i, ns, sizeof ns);
        snprintf(hv, sizeof hv, "psv%08x-%u", u->hash, i);
        snprintf(addr, sizeof addr, NS_NET ".%u/24", i + 1);
        if (ip_cmd(false, "netns", "add", ns, NULL)) return -1;
        state_add(u->dir, "netns %s %u", ns, i);
        if (ip_cmd(false, "link", "add", hv, "type", "veth", "peer", "name", NS_IF, "netns", ns,
                   NULL))
            return -1;
        state_add(u->dir, "veth %s", hv);
        disable_ipv6(hv);
        if (ip_cmd(false, "link", "set", hv, "master", br, NULL) ||
            ip_cmd(false, "link", "set", hv, "up", NULL) ||
            ip_cmd(false, "-n", ns, "link", "set", "lo", "up", NULL) ||
            ip_cmd(false, "-n", ns, "addr", "add", addr, "dev", NS_IF, NULL) ||
            ip_cmd(false, "-n", ns, "link", "set", NS_IF, "up", NULL) ||
            ip_cmd(false, "-n", ns, "route", "add", "224.0.0.0/4", "dev", NS_IF, NULL))
            return -1;
        if (u->o->mtu) { /* --mtu: both ends of the veth pair */
            char m[16];
            snprintf(m, sizeof m, "%u", u->o->mtu);
            if (ip_cmd(false, "link", "set", hv, "mtu", m, NULL) ||
                ip_cmd(false, "-n", ns, "link", "set", NS_IF, "mtu", m, NULL))
                return -1;
        }
    }
    return got_signal ? -1 : 0;
}

static pid_t start_psid(const struct up *u, unsigned i)
{
    char log[PATH_MAX], pidf[PATH_MAX], node[16], ns[64];
    path_in(log, sizeof log, u->dir, "psid-%u.log", i);
    path_in(pidf, sizeof pidf, u->dir, "psid-%u.pid", i);
    snprintf(node, sizeof node, "%u", i);
    ns_name(u, i, ns, sizeof ns);
    char *argv[] = {
        "ip",     "netns", "exec",         ns,  (char *)u->psid, "-f", (char *)u->conf_path,
        "--node", node,    "--foreground", NULL};
    char **av = u->o->netns ? argv : argv + 4;

    int lfd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (lfd < 0) err(1, "%s", log);
    pid_t pid = fork();
    if (pid < 0) err(1, "fork");
    if (pid == 0) {
        setsid(); /* detached: no terminal, no signals from ours */
        child_reset_signals();
        int nul = open("/dev/null", O_RDONLY);
        if (nul >= 0) dup2(nul, 0);
        dup2(lfd, 1);
        dup2(lfd, 2);
        if (u->o->netns)
            execvp(av[0], av);
        else
            execv(av[0], av);
        fprintf(stderr, "pslocal: %s: %s\n", av[0], strerror(errno));
        _exit(127);
    }
    close(lfd);
    char buf[32];
    int l = snprintf(buf, sizeof buf, "%d\n", (int)pid);
    write_file(pidf, buf, (size_t)l, 0644);
    return pid;
}

static bool socket_accepts(const char *path)
{
    int types[] = {SOCK_STREAM, SOCK_SEQPACKET};
    for (size_t t = 0; t < 2; t++) {
        int fd = socket(AF_UNIX, types[t] | SOCK_CLOEXEC, 0);
        if (fd < 0) return false;
        struct sockaddr_un a = {.sun_family = AF_UNIX};
        size_t l = strlen(path);
        if (l >= sizeof a.sun_path) {
            close(fd);
            return false;
        }
        memcpy(a.sun_path, path, l + 1);
        int r = connect(fd, (struct sockaddr *)&a, sizeof a);
        int e = errno;
        close(fd);
        if (r == 0) return true;
        if (e != EPROTOTYPE) return false;
    }
    return false;
}

/* Ask node viewer's psid for its node table (libpsi, within the deadline): the first node
 * it does not see up (0..n-1), n if all are up, or -1 if it did not answer (why in out). */
static int first_not_up(const struct up *u, unsigned viewer, int64_t deadline, char *out,
                        size_t outlen)
{
    char sock[PATH_MAX];
    if (psconf_socket_path(&u->conf, viewer, sock, sizeof sock) < 0) return -1;
    struct psi c;
    if (psi_open(&c, sock) < 0) {
        snprintf(out, outlen, "%s: %s", sock, strerror(errno));
        return -1;
    }
    int64_t left = deadline - now_ms();
    if (left < 100) left = 100;
    if (left > 2000) left = 2000;
    struct timeval tv = {.tv_sec = left / 1000, .tv_usec = (left % 1000) * 1000};
    setsockopt(c.fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    struct psi_nodetab t;
    int r = -1;
    if (psi_nodes(&c, &t) == 0) {
        r = (int)u->n;
        for (unsigned i = 0; i < u->n && r == (int)u->n; i++) {
            const struct psi_node *nd = psi_nodetab_id(&t, i);
            if (!nd || nd->state != PSNODE_UP) r = (int)i;
        }
        psi_nodetab_free(&t);
    } else {
        snprintf(out, outlen, "node table: %s", strerror(errno));
    }
    psi_close(&c);
    return r;
}

static void describe_exit(unsigned node, int status)
{
    if (WIFEXITED(status))
        warnx("node %u: psid exited with status %d", node, WEXITSTATUS(status));
    else
        warnx("node %u: psid killed by signal %d (%s)", node, WTERMSIG(status),
              strsignal(WTERMSIG(status)));
}

/*
 * Wait until every socket accepts connections and then (asking psid) until node 0 sees every
 * node up - and the other nodes too, one after the other, so that whatever runs next finds
 * the same cluster from any node. 0, or -1 (reported, with the log of the node to blame).
 */
static int wait_ready(struct up *u)
{
    int64_t deadline = now_ms() + (int64_t)(u->o->timeout * 1000);
    bool *ok = calloc(u->n, sizeof *ok);
    if (!ok) err(1, "calloc");
    unsigned ready = 0, viewer = 0; /* nodes before viewer have seen all nodes up */
    int bad = -1, missing = -2;     /* missing: from first_not_up() */
    char psout[65536] = "", why[128] = "";
    while (!got_signal) {
        for (unsigned i = 0; i < u->n; i++) {
            int st;
            if (u->pids[i] > 0 && waitpid(u->pids[i], &st, WNOHANG) == u->pids[i]) {
                u->pids[i] = 0;
                describe_exit(i, st);
                char log[PATH_MAX];
                path_in(log, sizeof log, u->dir, "psid-%u.log", i);
                print_log_tail(log);
                free(ok);
                return -1;
            }
            if (ok[i]) continue;
            char sock[PATH_MAX];
            if (psconf_socket_path(&u->conf, i, sock, sizeof sock) == 0 && socket_accepts(sock)) {
                ok[i] = true;
                ready++;
            }
        }
        if (ready == u->n) {
            while (viewer < u->n &&
                   (missing = first_not_up(u, viewer, deadline, psout, sizeof psout)) == (int)u->n)
                viewer++;
            if (viewer == u->n) break;
        }
        if (now_ms() >= deadline) {
            if (ready < u->n) {
                for (unsigned i = 0; i < u->n; i++)
                    if (!ok[i]) {
                        bad = (int)i;
                        break;
                    }
                snprintf(why, sizeof why, "its socket does not accept connections");
            } else if (missing >= 0) {
                bad = missing;
                snprintf(why, sizeof why, "node %u does not see it up", viewer);
            } else {
                bad = (int)viewer;
                snprintf(why, sizeof why, "its psid gives no usable node table");
            }
            break;
        }
        sleep_ms(ready == u->n ? 50 : 20);
    }
    free(ok);
    if (got_signal) {
        warnx("interrupted by signal %d", (int)got_signal);
        return -1;
    }
    if (bad < 0) return 0;
    char log[PATH_MAX];
    warnx("node %d not ready after %g s: %s", bad, u->o->timeout, why);
    if (missing == -1 && psout[0]) fprintf(stderr, "  %.400s\n", psout);
    path_in(log, sizeof log, u->dir, "psid-%d.log", bad);
    print_log_tail(log);
    return -1;
}

/* The failure path of up: our own children are ours for sure, even before they exec psid
 * (the identity check would not know them yet): TERM, wait, KILL, reap. */
static void stop_children(pid_t *pids, unsigned n)
{
    for (unsigned i = 0; i < n; i++)
        if (pids[i] > 0) kill(pids[i], SIGTERM);
    for (int round = 0; round < 2; round++) {
        int64_t deadline = now_ms() + (round == 0 ? STOP_GRACE_MS : KILL_WAIT_MS);
        for (;;) {
            unsigned live = 0;
            for (unsigned i = 0; i < n; i++) {
                int st;
                if (pids[i] > 0 && waitpid(pids[i], &st, WNOHANG) != 0) pids[i] = 0;
                if (pids[i] > 0) live++;
            }
            if (!live || now_ms() >= deadline) break;
            sleep_ms(20);
        }
        if (round == 0)
            for (unsigned i = 0; i < n; i++)
                if (pids[i] > 0) kill(pids[i], SIGKILL);
    }
}

static int cmd_up(const struct opts *o)
{
    struct up u = {.o = o, .n = o->nodes};
    if (o->mtu && !o->netns) usage_error("--mtu: only with --netns (loopback's is its own)");
    if (o->netns && geteuid() != 0) errx(1, "--netns needs root");
    if (o->netns && o->nodes > MAX_NETNS_NODES)
        errx(1, "--netns: at most %d nodes", MAX_NETNS_NODES);
    if (o->netns && !find_tool("ip", NULL, u.psid, sizeof u.psid))
        errx(1, "--netns needs the ip command (iproute2)");

    make_dirs(o->dir);
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
    path_in(u.conf_path, sizeof u.conf_path, u.dir, CONF_FILE);
    u.hash = dir_hash(u.dir);

    /* a cluster running here already? */
    unsigned ids[4096];
    size_t np = pid_files(u.dir, ids, 4096);
    for (size_t i = 0; i < np; i++)
        if (daemon_alive(read_pid(u.dir, ids[i]), u.conf_path, ids[i]))
            errx(1, "%s: a cluster runs there (node %u); 'pslocal down --dir %s' first", u.dir,
                 ids[i], u.dir);
    char statep[PATH_MAX];
    path_in(statep, sizeof statep, u.dir, STATE_FILE);
    if (np || exists(statep)) { /* leftovers of a crash */
        if (teardown(u.dir, false, false) != 0)
            errx(1, "%s: cannot clean up what an earlier cluster left", u.dir);
    }

    if (!find_tool("psid", "PSLOCAL_PSID", u.psid, sizeof u.psid))
        errx(1, "psid not found (next to pslocal, in $PATH or $PSLOCAL_PSID)");
    u.port = choose_port(&u);

    write_key(&u);
    write_config(&u);
    char msg[512];
    if (psconf_load(u.conf_path, &u.conf, msg, sizeof msg) < 0)
        errx(1, "the configuration written is not valid (a bug): %s", msg);

    struct sigaction sa = {.sa_handler = on_signal};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);

    state_add(u.dir, "# pslocal state: what 'pslocal down' removes");
    state_add(u.dir, "mode %s", o->netns ? "netns" : "loopback");
    state_add(u.dir, "nodes %u", u.n);
    state_add(u.dir, "port %u", u.port);
    int rc = 0;
    if (o->netns && make_network(&u) < 0) rc = -1;

    u.pids = calloc(u.n, sizeof *u.pids);
    if (!u.pids) err(1, "calloc");
    for (unsigned i = 0; i < u.n && rc == 0 && !got_signal; i++) {
        char sp[PATH_MAX];
        if (psconf_socket_path(&u.conf, i, sp, sizeof sp) == 0) {
            struct stat st;
            if (lstat(sp, &st) == 0 && S_ISSOCK(st.st_mode)) unlink(sp); /* stale */
        }
        u.pids[i] = start_psid(&u, i);
    }
    if (rc == 0 && !got_signal) rc = wait_ready(&u);
    if (rc < 0 || got_signal) {
        stop_children(u.pids, u.n);
        fprintf(stderr, "pslocal: stopping what was started; logs and config stay in %s\n", u.dir);
        teardown(u.dir, false, false);
        psconf_free(&u.conf);
        free(u.pids);
        return got_signal ? 128 + got_signal : 1;
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

/* ------------------------------------------------------------------------------------------ */
/* down, status, env, exec */

/* realpath of an existing DIR with a cluster configuration in it; exits otherwise. */
static void cluster_dir(const char *dir, char *out)
{
    if (!realpath(dir, out)) err(1, "%s", dir);
    char conf[PATH_MAX];
    path_in(conf, PATH_MAX, out, CONF_FILE);
    if (!exists(conf))
        errx(1, "%s: no cluster here (no %s; 'pslocal up --dir %s')", out, CONF_FILE, dir);
}

static void load_conf(const char *dir, struct psconf *c)
{
    char conf[PATH_MAX], msg[512];
    path_in(conf, sizeof conf, dir, CONF_FILE);
    if (psconf_load(conf, c, msg, sizeof msg) < 0) errx(1, "%s", msg);
}

static int cmd_down(const struct opts *o)
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
    path_in(conf, sizeof conf, dir, CONF_FILE);
    path_in(state, sizeof state, dir, STATE_FILE);
    if (!exists(conf) && !exists(state)) { /* not a cluster's DIR: touch nothing there */
        printf("pslocal: %s: no cluster here; nothing to stop\n", dir);
        return 0;
    }
    return teardown(dir, o->purge, true);
}

static int cmd_status(const struct opts *o)
{
    char dir[PATH_MAX], conf[PATH_MAX];
    cluster_dir(o->dir, dir);
    struct psconf c;
    load_conf(dir, &c);
    path_in(conf, sizeof conf, dir, CONF_FILE);
    int rc = 0;
    for (size_t i = 0; i < c.nnodes; i++) {
        const struct psconf_node *n = &c.nodes[i];
        pid_t pid = read_pid(dir, n->id);
        bool alive = pid > 0 && is_our_psid(pid, conf, n->id);
        char ps[16] = "-";
        if (pid > 0) snprintf(ps, sizeof ps, "%d", (int)pid);
        printf("%u %s %s %s %s\n", n->id, n->name, n->addr_str, ps, alive ? "running" : "stopped");
        if (!alive) rc = 3;
    }
    psconf_free(&c);
    return rc;
}

/* A word for the shell: as it is if harmless, else in single quotes. */
static void put_shell_word(const char *s)
{
    if (*s &&
        strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789/._-+:,@%=") ==
            strlen(s)) {
        fputs(s, stdout);
        return;
    }
    putchar('\'');
    for (; *s; s++) {
        if (*s == '\'')
            fputs("'\\''", stdout);
        else
            putchar(*s);
    }
    putchar('\'');
}

static int cmd_env(const struct opts *o)
{
    char dir[PATH_MAX], sock[PATH_MAX];
    cluster_dir(o->dir, dir);
    struct psconf c;
    load_conf(dir, &c);
    if (psconf_socket_path(&c, c.nodes[0].id, sock, sizeof sock) < 0)
        err(1, "socket path of node %u", c.nodes[0].id);
    psconf_free(&c);
    fputs("export PSID_SOCKET=", stdout);
    put_shell_word(sock);
    fputs("\nexport PSLOCAL_DIR=", stdout);
    put_shell_word(dir);
    putchar('\n');
    return fflush(stdout) == 0 ? 0 : 1;
}

static int cmd_exec(const struct opts *o)
{
    char dir[PATH_MAX], sock[PATH_MAX], id[16];
    cluster_dir(o->dir, dir);
    struct state s;
    if (state_read(dir, &s) < 0 || !s.valid)
        errx(1, "%s: no cluster is up ('pslocal up --dir %s')", dir, o->dir);
    struct psconf c;
    load_conf(dir, &c);
    const struct psconf_node *n = psconf_node_lookup(&c, o->node);
    if (!n) errx(1, "%s: no such node in %s/%s", o->node, dir, CONF_FILE);
    if (psconf_socket_path(&c, n->id, sock, sizeof sock) < 0)
        err(1, "socket path of node %u", n->id);
    snprintf(id, sizeof id, "%u", n->id);
    if (setenv("PSID_SOCKET", sock, 1) || setenv("PSLOCAL_DIR", dir, 1) ||
        setenv("PSLOCAL_NODE", id, 1))
        err(1, "setenv");

    char found[PATH_MAX];
    if (!path_search(o->argv[0], found, sizeof found)) {
        warnx("%s: command not found", o->argv[0]);
        return 127;
    }
    if (s.netns) {
        const char *ns = state_ns_of(&s, n->id);
        if (!ns || !netns_exists(ns)) errx(1, "node %u: its namespace is gone", n->id);
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

/* ------------------------------------------------------------------------------------------ */
/* command line */

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
    {"purge", 0, false, C_DOWN},
    {"dir", 'd', true, C_UP | C_DOWN | C_STATUS | C_ENV | C_EXEC},
    {"help", 'h', false, ~0u},
};

static void set_opt(struct opts *o, const struct optdef *d, const char *val)
{
    const char *name = d->lng;
    if (!strcmp(name, "help")) usage_exit(0);
    if (!strcmp(name, "dir")) {
        if (!*val) usage_error("--dir: empty");
        o->dir = val;
    } else if (!strcmp(name, "nodes")) {
        if (!parse_uint(val, 1, MAX_LOOPBACK_NODES, &o->nodes))
            usage_error("--nodes: need 1..%d, got '%s'", MAX_LOOPBACK_NODES, val);
    } else if (!strcmp(name, "cpus")) {
        if (!parse_uint(val, 1, 4096, &o->cpus)) usage_error("--cpus: need 1..4096, got '%s'", val);
    } else if (!strcmp(name, "port")) {
        if (!parse_uint(val, 1, 65534, &o->port))
            usage_error("--port: need 1..65534, got '%s'", val);
        o->have_port = true;
    } else if (!strcmp(name, "log-level")) {
        enum psconf_log_level l;
        if (psconf_log_level_parse(val, &l) < 0)
            usage_error("--log-level: error, warning, notice, info or debug, not '%s'", val);
        o->log_level = val;
    } else if (!strcmp(name, "timeout")) {
        char *end;
        errno = 0;
        o->timeout = strtod(val, &end);
        if (errno || end == val || *end || !(o->timeout > 0 && o->timeout <= 3600))
            usage_error("--timeout: need seconds in (0, 3600], got '%s'", val);
    } else if (!strcmp(name, "mtu")) {
        if (!parse_uint(val, RDP_MTU_MIN, 65535, &o->mtu))
            usage_error("--mtu: need %u..65535, got '%s'", RDP_MTU_MIN, val);
    } else if (!strcmp(name, "netns")) {
        o->netns = true;
    } else if (!strcmp(name, "purge")) {
        o->purge = true;
    }
}

static void parse_args(int argc, char **argv, struct opts *o)
{
    static const struct {
        const char *name;
        enum cmd cmd;
    } cmds[] = {
        {"up", C_UP}, {"down", C_DOWN}, {"status", C_STATUS}, {"env", C_ENV}, {"exec", C_EXEC}};
    *o = (struct opts){.nodes = DEFAULT_NODES, .cpus = DEFAULT_CPUS, .timeout = DEFAULT_TIMEOUT_S};
    if (argc < 2) usage_error("a command is needed");
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help"))
        usage_exit(0);
    for (size_t i = 0; i < sizeof cmds / sizeof *cmds; i++)
        if (!strcmp(argv[1], cmds[i].name)) o->cmd = cmds[i].cmd;
    if (!o->cmd) usage_error("unknown command '%s'", argv[1]);

    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--")) {
            if (o->cmd != C_EXEC || !o->node) usage_error("unexpected '--'");
            o->argv = argv + i + 1;
            break;
        }
        if (a[0] != '-' || !a[1]) { /* a positional argument */
            if (o->cmd != C_EXEC) usage_error("unexpected argument '%s'", a);
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
                if (!d->arg) usage_error("--%s takes no value", d->lng);
                val = eq + 1;
            }
        } else {
            for (size_t k = 0; k < sizeof optdefs / sizeof *optdefs; k++)
                if (optdefs[k].shrt && optdefs[k].shrt == a[1]) d = &optdefs[k];
            if (d && a[2]) {
                if (!d->arg) usage_error("-%c takes no value", a[1]);
                val = a + 2;
            }
        }
        if (!d) usage_error("unknown option '%s'", a);
        if (!(d->cmds & o->cmd)) usage_error("'%s' does not take %s", argv[1], a);
        if (d->arg && !val) {
            if (i + 1 >= argc) usage_error("%s needs a value", a);
            val = argv[++i];
        }
        set_opt(o, d, val);
    }
    if (!o->dir) o->dir = getenv("PSLOCAL_DIR");
    if (!o->dir || !*o->dir) usage_error("--dir DIR is needed (or $PSLOCAL_DIR)");
    if (o->cmd == C_EXEC && !o->node) usage_error("exec: which node?");
    if (o->cmd == C_EXEC && (!o->argv || !o->argv[0])) usage_error("exec: no command");
    if (o->cmd == C_UP && o->netns && o->nodes > MAX_NETNS_NODES)
        usage_error("--netns: at most %d nodes", MAX_NETNS_NODES);
}

int main(int argc, char **argv)
{
    struct opts o;
    parse_args(argc, argv, &o);
    switch (o.cmd) {
    case C_UP:
        return cmd_up(&o);
    case C_DOWN:
        return cmd_down(&o);
    case C_STATUS:
        return cmd_status(&o);
    case C_ENV:
        return cmd_env(&o);
    case C_EXEC:
        return cmd_exec(&o);
    }
    return 2;
}
