/*
 * sigstamp.c - timestamps for bench/psid.sh: signal latency, notification latency and
 * failure detection, measured with CLOCK_REALTIME (one clock for every process here).
 *
 *   sigstamp task DIR                  a task: SIGUSR1 appends "NS" (the handler's time) to
 *                                      DIR/PID.sig and goes on; SIGUSR2 writes "NS" to
 *                                      DIR/PID.exit and _exits 0 right after; DIR/PID.ready
 *                                      appears once the handlers are in place; ends by
 *                                      itself after 300 s
 *   sigstamp signal TID SIG FILE N GAP_MS   N times: PSM_SIGNAL to TID via $PSID_SOCKET
 *                                      (connected before), timed from just before the request;
 *                                      waits until FILE has one more line (5 s at most) and
 *                                      prints "REPLY_US HANDLER_US" (both from the request)
 *   sigstamp kill PID SIG FILE N GAP_MS     the same with kill(2) (REPLY_US: kill's return)
 *   sigstamp cmd FILE N GAP_MS -- CMD...    the same with fork+exec of CMD, timed from just
 *                                      before fork (REPLY_US: CMD's exit)
 *   sigstamp watch TID SIG [TIMEOUT_S] register a notification (PSM_NOTIFY with signal SIG) via
 *                                      $PSID_SOCKET, print "registered ERRNO", then
 *                                      "fired NS" when SIG arrives (NS: taken in the handler)
 *   sigstamp pidwatch PID [TIMEOUT_S]  the local floor of that: pidfd_open+poll, print
 *                                      "ready", then "fired NS" when PID has ended
 *   sigstamp detect NODE TIMEOUT_MS SOCK... -- CMD...
 *                                      connect to every SOCK (psid client sockets), check
 *                                      that each sees NODE up, run CMD (the failure: a kill,
 *                                      a link going down), then ask each psid for its node
 *                                      table every POLL_US (default 1000) until it says NODE
 *                                      is down; prints "cmd_us US", "observer I US" per SOCK
 *                                      (from CMD's exit) and "max US"; and "unreach I US" and
 *                                      "max_unreach US": when each first saw NODE no longer up
 *                                      (unreachable: no new work goes there; down follows
 *                                      after the grace, or at once on evidence). Exit 1 on a
 *                                      timeout.
 * Exit status 0 on success, 1 on failure, 2 for a bad command line.
 */
#include "psi_nodes.h"
#include "psi.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void sleep_us(long us)
{
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR) {
    }
}

static void usage(void)
{
    fprintf(stderr, "usage: sigstamp task DIR | signal TID SIG FILE N GAP_MS | kill PID SIG FILE "
                    "N GAP_MS | cmd FILE N GAP_MS -- CMD... | watch TID SIG [TIMEOUT_S] | "
                    "pidwatch PID [TIMEOUT_S] | detect NODE TIMEOUT_MS SOCK... -- CMD...\n");
    exit(2);
}

static long num(const char *s, long lo, long hi)
{
    char *e;
    errno = 0;
    long v = strtol(s, &e, 10);
    if (errno || e == s || *e || v < lo || v > hi) usage();
    return v;
}

static uint64_t parse_tid(const char *s)
{
    unsigned node, pid;
    char c;
    if (sscanf(s, "%u:%u%c", &node, &pid, &c) != 2) usage();
    return PSTID(node, pid);
}

/* a decimal number and a newline, async-signal-safe */
static void put_ns(int fd, int64_t v)
{
    char b[32];
    int i = sizeof b;
    b[--i] = '\n';
    do {
        b[--i] = (char)('0' + v % 10);
        v /= 10;
    } while (v && i > 0);
    ssize_t r = write(fd, b + i, sizeof b - (size_t)i);
    (void)r;
}

/* ---- the task ---- */

static int sig_fd = -1, exit_fd = -1;

static void on_usr1(int s)
{
    (void)s;
    int e = errno;
    put_ns(sig_fd, now_ns());
    errno = e;
}

static void on_usr2(int s)
{
    (void)s;
    put_ns(exit_fd, now_ns());
    _exit(0);
}

static int do_task(const char *dir)
{
    char p[4096];
    int pid = (int)getpid();
    snprintf(p, sizeof p, "%s/%d.sig", dir, pid);
    sig_fd = open(p, O_WRONLY | O_CREAT | O_APPEND | O_TRUNC | O_CLOEXEC, 0644);
    snprintf(p, sizeof p, "%s/%d.exit", dir, pid);
    exit_fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (sig_fd < 0 || exit_fd < 0) return 1;
    struct sigaction sa = {.sa_handler = on_usr1, .sa_flags = SA_RESTART};
    sigaction(SIGUSR1, &sa, NULL);
    sa.sa_handler = on_usr2;
    sigaction(SIGUSR2, &sa, NULL);
    snprintf(p, sizeof p, "%s/%d.ready", dir, pid);
    int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return 1;
    close(fd);
    for (int i = 0; i < 300; i++) sleep(1); /* a bound on a forgotten task */
    return 0;
}

/* ---- signal latency ---- */

/* the number of lines of path and the last one as a number */
static int lines_of(const char *path, int64_t *last)
{
    char b[65536];
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    ssize_t n = read(fd, b, sizeof b - 1);
    close(fd);
    if (n < 0) return -1;
    b[n] = 0;
    int count = 0;
    char *start = b;
    for (char *q = b; *q; q++) {
        if (*q != '\n') continue;
        *q = 0;
        *last = strtoll(start, NULL, 10);
        start = q + 1;
        count++;
    }
    return count;
}

enum how { VIA_PSID, VIA_KILL, VIA_CMD };

static int do_signal(enum how how, const char *target, int sig, const char *file, long count,
                     long gap_ms, char **cmd)
{
    struct psi c;
    uint64_t tid = 0;
    pid_t pid = 0;
    if (how == VIA_PSID) {
        tid = parse_tid(target);
        if (psi_open(&c, NULL) < 0) {
            fprintf(stderr, "sigstamp: connect %s: %s\n", psi_socket_path(), strerror(errno));
            return 1;
        }
    } else if (how == VIA_KILL) {
        pid = (pid_t)num(target, 1, 1 << 30);
    }
    int64_t last = 0;
    int have = lines_of(file, &last);
    if (have < 0) {
        fprintf(stderr, "sigstamp: %s: %s\n", file, strerror(errno));
        return 1;
    }
    for (long i = 0; i < count; i++) {
        int64_t t0 = now_ns(), t1;
        if (how == VIA_PSID) {
            struct psmsg_buf b = {0};
            struct psmsg m;
            psmsg_begin(&b, PSM_SIGNAL, 0);
            psmsg_put_u64(&b, PSF_TID, tid);
            psmsg_put_u32(&b, PSF_SIGNAL, (uint32_t)sig);
            int r = psi_call(&c, &b, &m);
            t1 = now_ns();
            psmsg_buf_free(&b);
            uint32_t e = 0;
            if (r < 0 || (psmsg_get_u32(&m.body, PSF_ERRNO, &e), e)) {
                fprintf(stderr, "sigstamp: signal %s: %s\n", target, strerror(r < 0 ? errno : e));
                return 1;
            }
        } else if (how == VIA_KILL) {
            if (kill(pid, sig) < 0) {
                fprintf(stderr, "sigstamp: kill %d: %s\n", (int)pid, strerror(errno));
                return 1;
            }
            t1 = now_ns();
        } else {
            pid_t ch = fork();
            if (ch < 0) return 1;
            if (ch == 0) {
                int nul = open("/dev/null", O_WRONLY);
                if (nul >= 0) dup2(nul, 1);
                execvp(cmd[0], cmd);
                _exit(127);
            }
            int st;
            while (waitpid(ch, &st, 0) < 0 && errno == EINTR) {
            }
            t1 = now_ns();
            if (!WIFEXITED(st) || WEXITSTATUS(st)) {
                fprintf(stderr, "sigstamp: %s failed (status %d)\n", cmd[0], st);
                return 1;
            }
        }
        int n = have;
        for (int w = 0; n <= have && w < 50000; w++) { /* 5 s */
            n = lines_of(file, &last);
            if (n <= have) sleep_us(100);
        }
        if (n <= have) {
            fprintf(stderr, "sigstamp: no handler stamp in %s within 5 s\n", file);
            return 1;
        }
        have = n;
        printf("%.1f %.1f\n", (double)(t1 - t0) / 1e3, (double)(last - t0) / 1e3);
        fflush(stdout);
        sleep_us(gap_ms * 1000);
    }
    return 0;
}

/* ---- notification latency ---- */

static volatile sig_atomic_t fired, timed_out;
static int64_t fired_ns;

static void on_alarm(int s)
{
    (void)s;
    timed_out = 1;
}

static void on_fire(int s)
{
    (void)s;
    if (!fired) fired_ns = now_ns();
    fired = 1;
}

static int do_watch(const char *target, int sig, unsigned timeout_s)
{
    struct psi c;
    struct psmsg_buf b = {0};
    struct psmsg m;
    sigset_t block, old;
    sigemptyset(&block);
    sigaddset(&block, sig);
    sigaddset(&block, SIGALRM);
    sigprocmask(SIG_BLOCK, &block, &old);
    struct sigaction sa = {.sa_handler = on_fire};
    sigaction(sig, &sa, NULL);
    sa.sa_handler = on_alarm;
    sigaction(SIGALRM, &sa, NULL);
    if (psi_open(&c, NULL) < 0) {
        printf("connect %s: %s\n", psi_socket_path(), strerror(errno));
        return 1;
    }
    psmsg_begin(&b, PSM_NOTIFY, 0);
    psmsg_put_u64(&b, PSF_TID, parse_tid(target));
    psmsg_put_u32(&b, PSF_SIGNAL, (uint32_t)sig);
    if (psi_call(&c, &b, &m) < 0) {
        printf("error %s\n", strerror(errno));
        return 1;
    }
    uint32_t e = 0;
    psmsg_get_u32(&m.body, PSF_ERRNO, &e);
    printf("registered %u\n", e);
    fflush(stdout);
    if (e) return 1;
    alarm(timeout_s);
    while (!fired && !timed_out) sigsuspend(&old);
    if (!fired) {
        printf("timeout\n");
        return 1;
    }
    printf("fired %lld\n", (long long)fired_ns);
    return 0;
}

static int do_pidwatch(pid_t pid, unsigned timeout_s)
{
    int fd = (int)syscall(SYS_pidfd_open, pid, 0);
    if (fd < 0) {
        printf("pidfd_open %d: %s\n", (int)pid, strerror(errno));
        return 1;
    }
    printf("ready\n");
    fflush(stdout);
    struct pollfd p = {.fd = fd, .events = POLLIN};
    int r;
    while ((r = poll(&p, 1, (int)timeout_s * 1000)) < 0 && errno == EINTR) {
    }
    int64_t t = now_ns();
    if (r <= 0) {
        printf("timeout\n");
        return 1;
    }
    printf("fired %lld\n", (long long)t);
    return 0;
}

/* ---- failure detection ---- */

/* NODE's state as the psid behind c sees it: PSNODE_UP/DOWN, or -1 */
static int node_state(struct psi *c, uint32_t node)
{
    struct psi_nodetab t;
    if (psi_nodes(c, &t) < 0) return -1;
    const struct psi_node *n = psi_nodetab_id(&t, node);
    int st = n ? (int)n->state : -1;
    psi_nodetab_free(&t);
    return st;
}

static int do_detect(uint32_t node, long timeout_ms, char **socks, int nsocks, char **cmd)
{
    struct psi *c = calloc((size_t)nsocks, sizeof *c);
    int64_t *done = calloc((size_t)nsocks, sizeof *done);
    int64_t *gone = calloc((size_t)nsocks, sizeof *gone); /* no longer up */
    const char *ps = getenv("POLL_US");
    long poll_us = ps ? num(ps, 0, 1000000) : 1000;
    if (!c || !done || !gone) return 1;
    for (int i = 0; i < nsocks; i++) {
        if (psi_open(&c[i], socks[i]) < 0) {
            fprintf(stderr, "sigstamp: connect %s: %s\n", socks[i], strerror(errno));
            return 1;
        }
        if (node_state(&c[i], node) != PSNODE_UP) {
            fprintf(stderr, "sigstamp: %s does not see node %u up\n", socks[i], node);
            return 1;
        }
    }
    int64_t tc = now_ns();
    pid_t ch = fork();
    if (ch < 0) return 1;
    if (ch == 0) {
        execvp(cmd[0], cmd);
        _exit(127);
    }
    int st;
    while (waitpid(ch, &st, 0) < 0 && errno == EINTR) {
    }
    int64_t t0 = now_ns();
    if (!WIFEXITED(st) || WEXITSTATUS(st)) {
        fprintf(stderr, "sigstamp: %s failed (status %d)\n", cmd[0], st);
        return 1;
    }
    int left = nsocks;
    int64_t max = 0, max_gone = 0;
    while (left) {
        for (int i = 0; i < nsocks; i++) {
            if (done[i]) continue;
            int s = node_state(&c[i], node);
            if (s < 0) {
                fprintf(stderr, "sigstamp: %s: no answer\n", socks[i]);
                return 1;
            }
            if (s != PSNODE_UP && !gone[i]) {
                gone[i] = now_ns() - t0;
                if (gone[i] > max_gone) max_gone = gone[i];
            }
            if (s == PSNODE_DOWN) {
                done[i] = now_ns() - t0;
                if (done[i] > max) max = done[i];
                left--;
            }
        }
        if (left && now_ns() - t0 > (int64_t)timeout_ms * 1000000) {
            fprintf(stderr, "sigstamp: node %u not down everywhere after %ld ms\n", node,
                    timeout_ms);
            return 1;
        }
        if (left) sleep_us(poll_us);
    }
    printf("cmd_us %.1f\n", (double)(t0 - tc) / 1e3);
    for (int i = 0; i < nsocks; i++) printf("observer %d %.1f\n", i, (double)done[i] / 1e3);
    printf("max %.1f\n", (double)max / 1e3);
    for (int i = 0; i < nsocks; i++) printf("unreach %d %.1f\n", i, (double)gone[i] / 1e3);
    printf("max_unreach %.1f\n", (double)max_gone / 1e3);
    return 0;
}

/* argv after "--", or usage */
static char **after_dashes(int argc, char **argv, int from, int *ndash)
{
    for (int i = from; i < argc; i++)
        if (!strcmp(argv[i], "--")) {
            *ndash = i;
            if (i + 1 >= argc) usage();
            return argv + i + 1;
        }
    usage();
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 3) usage();
    const char *m = argv[1];
    int dash;
    if (!strcmp(m, "task") && argc == 3) return do_task(argv[2]);
    if (!strcmp(m, "signal") && argc == 7)
        return do_signal(VIA_PSID, argv[2], (int)num(argv[3], 1, 64), argv[4],
                         num(argv[5], 1, 100000), num(argv[6], 0, 60000), NULL);
    if (!strcmp(m, "kill") && argc == 7)
        return do_signal(VIA_KILL, argv[2], (int)num(argv[3], 1, 64), argv[4],
                         num(argv[5], 1, 100000), num(argv[6], 0, 60000), NULL);
    if (!strcmp(m, "cmd") && argc >= 7) {
        char **cmd = after_dashes(argc, argv, 5, &dash);
        if (dash != 5) usage();
        return do_signal(VIA_CMD, NULL, 0, argv[2], num(argv[3], 1, 100000), num(argv[4], 0, 60000),
                         cmd);
    }
    if (!strcmp(m, "watch") && (argc == 4 || argc == 5))
        return do_watch(argv[2], (int)num(argv[3], 1, 64),
                        argc == 5 ? (unsigned)num(argv[4], 1, 3600) : 30);
    if (!strcmp(m, "pidwatch") && (argc == 3 || argc == 4))
        return do_pidwatch((pid_t)num(argv[2], 1, 1 << 30),
                           argc == 4 ? (unsigned)num(argv[3], 1, 3600) : 30);
    if (!strcmp(m, "detect") && argc >= 7) {
        char **cmd = after_dashes(argc, argv, 4, &dash);
        if (dash < 5) usage();
        return do_detect((uint32_t)num(argv[2], 0, 1 << 30), num(argv[3], 1, 3600000), argv + 4,
                         dash - 4, cmd);
    }
    usage();
    return 2;
}
