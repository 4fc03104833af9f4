/*
 * netns.c - the network of a --netns cluster (see pslocal.h): one namespace per node, its
 * veth on a bridge of the cluster's own, made with `ip` and recorded in the state file as
 * each piece is made; and its removal, which ends what still runs in the namespaces.
 */
#include "pslocal.h"

#include <err.h>
#include <fcntl.h>
#include <limits.h>
#include <net/if.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* FNV-1a: short, stable names for the namespaces and links of one DIR. */
uint32_t pl_dir_hash(const char *s)
{
    uint32_t h = 2166136261u;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
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
    int rc = pl_run(argv, NULL, NULL, 0, IP_TIMEOUT_MS, quiet);
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

bool pl_netns_exists(const char *ns)
{
    char p[PATH_MAX];
    snprintf(p, sizeof p, "/run/netns/%s", ns);
    return pl_exists(p);
}

/* pids in namespace ns (not ours), at most max */
static size_t netns_pids(const char *ns, pid_t *pids, size_t max)
{
    char out[8192];
    char *argv[] = {"ip", "netns", "pids", (char *)ns, NULL};
    if (pl_run(argv, NULL, out, sizeof out, IP_TIMEOUT_MS, true) != 0) return 0;
    size_t n = 0;
    for (char *s = strtok(out, " \n"); s && n < max; s = strtok(NULL, " \n")) {
        unsigned v;
        if (pl_parse_uint(s, 1, INT_MAX, &v) && (pid_t)v != getpid()) pids[n++] = (pid_t)v;
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
    int64_t deadline = pl_now_ms() + 1000;
    while (pl_now_ms() < deadline && netns_pids(ns, pids, 1024)) pl_sleep_ms(20);
    n = netns_pids(ns, pids, 1024);
    for (size_t i = 0; i < n; i++) kill(pids[i], SIGKILL);
    deadline = pl_now_ms() + 1000;
    while (pl_now_ms() < deadline && netns_pids(ns, pids, 1024)) pl_sleep_ms(20);
}

/* Delete a link of the host namespace if it exists. A veth goes away by itself when the
 * kernel finishes deleting its peer's namespace, which happens in the background: so `ip`
 * may miss it, and it may take a moment. 0, or -1 if it is still there after a second. */
static int link_del(const char *name)
{
    if (!if_nametoindex(name)) return 0;
    ip_cmd(true, "link", "del", name, NULL);
    int64_t deadline = pl_now_ms() + 1000;
    while (if_nametoindex(name)) {
        if (pl_now_ms() >= deadline) {
            warnx("cannot delete link %s", name);
            return -1;
        }
        pl_sleep_ms(20);
    }
    return 0;
}

/* Remove what the state file lists; 0, or -1 if something is left. */
int pl_remove_network(const struct pl_state *s)
{
    int rc = 0;
    if (!s->nns && !s->nveth && !s->bridge[0]) return 0;
    if (geteuid() != 0) {
        warnx("removing the namespaces of a --netns cluster needs root");
        return -1;
    }
    for (size_t i = 0; i < s->nns; i++) {
        if (!pl_netns_exists(s->ns[i].name)) continue;
        netns_empty(s->ns[i].name);
        if (ip_cmd(false, "netns", "del", s->ns[i].name, NULL) < 0) rc = -1;
    }
    for (size_t i = 0; i < s->nveth; i++)
        if (link_del(s->veth[i]) < 0) rc = -1;
    if (s->bridge[0] && link_del(s->bridge) < 0) rc = -1;
    return rc;
}

void pl_ns_name(const struct pl_up *u, unsigned i, char *buf, size_t len)
{
    snprintf(buf, len, "psl%08x-%u", u->hash, i);
}

/* Create bridge, namespaces, veths; each recorded once made. 0 or -1. */
int pl_make_network(struct pl_up *u)
{
    char br[IF_NAMESIZE];
    snprintf(br, sizeof br, "psb%08x", u->hash);
    if (if_nametoindex(br)) {
        warnx("bridge %s exists already (a leftover of another pslocal cluster?)", br);
        return -1;
    }
    for (unsigned i = 0; i < u->n; i++) {
        char ns[64];
        pl_ns_name(u, i, ns, sizeof ns);
        if (pl_netns_exists(ns)) {
            warnx("network namespace %s exists already (a leftover? 'ip netns del %s')", ns, ns);
            return -1;
        }
    }
    if (ip_cmd(false, "link", "add", "name", br, "type", "bridge", "mcast_snooping", "0", NULL))
        return -1;
    pl_state_add(u->dir, "bridge %s", br);
    disable_ipv6(br);
    if (ip_cmd(false, "link", "set", br, "up", NULL)) return -1;
    for (unsigned i = 0; i < u->n && !pl_got_signal; i++) {
        char ns[64], hv[32], addr[32]; /* hv: at most 15 characters (i < 1000) */
        pl_ns_name(u, i, ns, sizeof ns);
        snprintf(hv, sizeof hv, "psv%08x-%u", u->hash, i);
        snprintf(addr, sizeof addr, NS_NET ".%u/24", i + 1);
        if (ip_cmd(false, "netns", "add", ns, NULL)) return -1;
        pl_state_add(u->dir, "netns %s %u", ns, i);
        if (ip_cmd(false, "link", "add", hv, "type", "veth", "peer", "name", NS_IF, "netns", ns,
                   NULL))
            return -1;
        pl_state_add(u->dir, "veth %s", hv);
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
    return pl_got_signal ? -1 : 0;
}
