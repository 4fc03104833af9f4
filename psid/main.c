/*
 * main.c - psid, the pscluster node daemon: command line, configuration, start-up, the
 * event loop, and a clean shutdown on SIGTERM/SIGINT (the other nodes are told at once).
 * Everything that can fail at start happens before the daemon detaches (so the caller sees
 * exit 1 and the reason on stderr); SIGHUP is ignored: the configuration is read at start.
 *
 * usage: psid -f CONFIG [--node ID|NAME] [--foreground] [--log-level LEVEL]
 */
#include "cgroup.h"
#include "psversion.h"
#include "daemon.h"
#include "binding.h"
#include "module.h"
#include "log.h"

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

static const char usage_text[] =
    "usage: psid -f CONFIG [--node ID|NAME] [--foreground] [--log-level LEVEL]\n"
    "\n"
    "The pscluster node daemon.\n"
    "  -f, --config FILE     the cluster configuration (see psconf(1), conf/psid.conf)\n"
    "  -n, --node ID|NAME    which node this daemon is (default: the node whose address\n"
    "                        is assigned to one of this machine's interfaces)\n"
    "  -F, --foreground      stay in the foreground and log to stderr (else: syslog)\n"
    "  -l, --log-level L     error, warning, notice, info or debug (default: the config's)\n"
    "      --first-job N     number this node's jobs from N (1..2147483646; for tests that\n"
    "                        force a job id onto one that tasks still carry)\n"
    "  -h, --help            this text\n"
    "      --version         the version (as the first argument)\n";

static void usage_exit(const char *why)
{
    if (why) fprintf(stderr, "psid: %s\n", why);
    fputs(usage_text, stderr);
    exit(2);
}

static void on_signal(void *ctx, uint32_t events)
{
    struct psid *d = ctx;
    (void)events;
    struct signalfd_siginfo si;
    while (read(d->sig_fd, &si, sizeof si) == (ssize_t)sizeof si) {
        if (si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT) {
            log_notice("signal %d: shutting down", (int)si.ssi_signo);
            d->stopping = true;
            loop_stop(d->loop);
        }
    }
}

static int setup_signals(struct psid *d)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGHUP);
    if (sigprocmask(SIG_BLOCK, &set, NULL) < 0) return -1;
    signal(SIGPIPE, SIG_IGN);
    d->sig_fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
    if (d->sig_fd < 0) return -1;
    return loop_fd(d->loop, d->sig_fd, EPOLLIN, on_signal, d);
}

static uint64_t realtime_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int main(int argc, char **argv)
{
    if (psc_version_asked(argc, argv, "psid")) return 0;
    static const struct option opts[] = {{"config", required_argument, 0, 'f'},
                                         {"node", required_argument, 0, 'n'},
                                         {"foreground", no_argument, 0, 'F'},
                                         {"log-level", required_argument, 0, 'l'},
                                         {"help", no_argument, 0, 'h'},
                                         {"first-job", required_argument, 0, 'J'},
                                         {0, 0, 0, 0}};
    const char *config = NULL, *node = NULL, *level = NULL;
    unsigned long first_job = 0;
    bool foreground = false;
    int o;
    while ((o = getopt_long(argc, argv, "f:n:Fl:h", opts, NULL)) != -1) {
        switch (o) {
        case 'f':
            config = optarg;
            break;
        case 'n':
            node = optarg;
            break;
        case 'F':
            foreground = true;
            break;
        case 'l':
            level = optarg;
            break;
        case 'J': {
            char *end;
            errno = 0;
            first_job = strtoul(optarg, &end, 10);
            if (errno || *end || first_job < 1 || first_job > 0x7ffffffeul)
                usage_exit("bad --first-job");
            break;
        }
        case 'h':
            fputs(usage_text, stdout);
            return 0;
        default:
            usage_exit(NULL);
        }
    }
    if (optind < argc) usage_exit("unexpected argument");
    if (!config) usage_exit("-f CONFIG is required");

    static struct psid d; /* zeroed; lives for the whole run */
    char err[1024];
    if (psconf_load(config, &d.conf, err, sizeof err) < 0) {
        fprintf(stderr, "psid: %s\n", err);
        return 1;
    }
    enum psconf_log_level lvl = d.conf.log_level;
    if (level && psconf_log_level_parse(level, &lvl) < 0) usage_exit("bad --log-level");
    if (node) {
        d.self = psconf_node_lookup(&d.conf, node);
        if (!d.self) {
            fprintf(stderr, "psid: %s: node %s is not in the configuration\n", config, node);
            return 1;
        }
    } else if (!(d.self = selfnode_find(&d.conf, err, sizeof err))) {
        fprintf(stderr, "psid: %s: %s\n", config, err);
        return 1;
    }
    char ident[32];
    snprintf(ident, sizeof ident, "psid-%u", d.self->id);
    /* Start-up errors are start-up errors: every socket is opened, and every message goes
     * to stderr, before the daemon detaches, so a busy port exits 1 with its reason. */
    log_open(lvl, 0, ident);
    /* every client holds a descriptor: take what the system allows (the hard limit) */
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &rl) < 0) log_warn("RLIMIT_NOFILE: %s", strerror(errno));
    }
    d.incarnation = realtime_ns();
    d.next_job = (uint32_t)first_job; /* 0: jobs.c counts from the incarnation */
    d.hb_fd = d.sig_fd = -1;
    d.loop = loop_new();
    int rc = 1;
    if (!d.loop || setup_signals(&d) < 0) {
        log_err("start: %s", strerror(errno));
        goto out;
    }
    if (rdplink_start(&d) < 0 || membership_start(&d) < 0 || clients_start(&d) < 0) goto out;
    const char *sock = clients_socket_path(&d);
    /* NULL: process groups only (psid.cgroups = false, or no writable cgroup2) */
    d.cgroups = d.conf.cgroups ? cgroup_open(d.loop, sock) : NULL;
    if (!d.conf.cgroups)
        log_notice("tasks are tracked by process group only (psid.cgroups = false)");
    binding_init(&d); /* the node's CPUs, before the sandbox */
    if (privsep_prepare(&d, err, sizeof err) < 0) {
        log_err("%s", err);
        goto out;
    }
    if (!foreground) {
        if (daemon(0, 0) < 0) {
            log_err("daemon: %s", strerror(errno));
            goto out;
        }
        log_open(lvl, 1, ident);
        /* a signalfd in an epoll set wakes it for the signals of the process that added it:
         * the parent's, which has exited. The daemon adds its own, or SIGTERM never wakes it */
        loop_fd_del(d.loop, d.sig_fd);
        close(d.sig_fd);
        d.sig_fd = -1;
        if (setup_signals(&d) < 0) {
            log_err("start: signals: %s", strerror(errno));
            goto out;
        }
    }
    if (privsep_split(&d, sock, ident, !foreground, argv) < 0) {
        log_err("start: privilege separation: %s", strerror(errno));
        goto out;
    }
    if (gang_start(&d) < 0) {
        log_err("start: gang scheduling: %s", strerror(errno));
        goto out;
    }
    log_notice("node %u (%s, %s) running; cluster \"%s\", %zu nodes", d.self->id, d.self->name,
               d.self->addr_str, d.conf.cluster, d.conf.nnodes);
    if (loop_run(d.loop) < 0)
        log_err("event loop: %s", strerror(errno));
    else
        rc = d.exit_code;
out:
    gang_thaw_all(&d); /* before the tasks are ended: a stopped task hears no SIGTERM */
    if (d.priv) tasks_stop_all(&d); /* without the child, nothing can be done to tasks */
    cgroup_close(d.cgroups);
    privsep_stop(&d);
    membership_leave(&d);
    clients_stop(&d);
    rdplink_stop(&d);
    send_free(&d);
    modules_stop(&d);
    binding_free(&d);
    if (d.sig_fd >= 0) close(d.sig_fd);
    loop_free(d.loop);
    psconf_free(&d.conf);
    if (rc == 0) log_notice("stopped");
    return rc;
}
