/*
 * skewfloor.c - the platform's floor under gang scheduling's switch skew (bench/gang.sh):
 * what N nodes' switches cost on this machine with no psid, no RDP and no event loop, so
 * that the skew psid reaches can be read against what the machine allows in the same run.
 *
 *   skewfloor [-n N] [-r ROUNDS] [-p PERIOD_MS] [--hogs H] [--no-freeze]
 *
 * wake: H CPU hogs (default N: the ranks of the running job, one per node) spin while N
 *   processes (one per node, psid's part) sleep with clock_nanosleep(CLOCK_REALTIME,
 *   TIMER_ABSTIME) to the same instants, one every PERIOD_MS, ROUNDS times, and note how
 *   late each woke. Prints
 *     wake nodes=N hogs=H rounds=R late_p50_us=.. late_p99_us=.. spread_p50_us=..
 *       spread_p99_us=.. cut=K
 *   late: each process's lateness (N x R values); spread: per instant, the latest less the
 *   earliest of the N (the skew of a switch that only had to wake up). A process that gets
 *   to an instant a period or more after it skips it, as psid skips a switch when the next
 *   one came first: that round is cut for it (below), in both parts.
 * freeze (root and a writable cgroup2; else "freeze unavailable: WHY"): the switch itself.
 *   Each of the N processes has two cgroups of one hog each, under this process's own cgroup
 *   (2N hogs, N of them frozen at a time, as two jobs of a rank per node that take turns);
 *   at each instant it writes 1 to one's cgroup.freeze and 0 to the other's and waits for
 *   the first's cgroup.events to say "frozen 1" (POLLPRI on the file, opened before, as psid
 *   does), then notes when; as psid, it waits a period from when it woke at most (psid's
 *   next switch supersedes the wait), and 200 ms (psid's GANG_WAIT_NS): a freeze not done
 *   by then is cut (psid logs no end for it). Prints
 *     freeze nodes=N hogs=2N rounds=R done_p50_us=.. done_p99_us=.. spread_p50_us=..
 *       spread_p99_us=.. cut=K
 *   done: from the instant to frozen 1, per process and round; spread: per instant, the
 *   latest completion less the earliest (what bench/gang.sh calls psid's skew); K: the
 *   rounds in which a process's freeze was cut or the round skipped, which count as longer
 *   than any other (a percentile that falls on one is printed as -1).
 * Every process it starts is ended by pid (and dies with it: PR_SET_PDEATHSIG); the cgroups
 * are thawed and removed. Exit 0, 1 on a failure, 2 for a bad command line.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_N    1024
#define MAX_HOGS (2 * MAX_N)
#define START_NS 300000000LL /* the first instant: this long after the setup */
#define WAIT_NS  200000000LL /* a freeze is waited for this long at most (psid's too) */
#define CUT      INT64_MAX   /* a freeze not done in time, a round missed */

static int n = 4, rounds = 50, period_ms = 100, nhogs = -1;
static pid_t hogs[MAX_HOGS];
static int nh;
static char base[4096]; /* the freeze part's cgroup directory, "" if none */

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void die_with_parent(void)
{
    prctl(PR_SET_PDEATHSIG, SIGKILL);
}

/* A hog: spins until killed; in cgroup dir first, when given. */
static pid_t hog(const char *dir)
{
    pid_t p = fork();
    if (p != 0) return p;
    die_with_parent();
    if (dir) {
        char path[4200];
        snprintf(path, sizeof path, "%s/cgroup.procs", dir);
        int fd = open(path, O_WRONLY | O_CLOEXEC);
        if (fd < 0 || dprintf(fd, "%d", (int)getpid()) < 0) _exit(1);
        close(fd);
    }
    /* as the ranks of bench/gang.sh (test/tools/gangspin): a system call (the CPU clock)
     * every 20000 additions, about every 20 us */
    for (volatile unsigned long x = 0;;) {
        for (int i = 0; i < 20000; i++) x += (unsigned long)i;
        struct timespec ts;
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    }
}

static void hogs_end(void)
{
    for (int i = 0; i < nh; i++) kill(hogs[i], SIGKILL);
    for (int i = 0; i < nh; i++) waitpid(hogs[i], NULL, 0);
    nh = 0;
}

static void sleep_until(int64_t at)
{
    struct timespec ts = {(time_t)(at / 1000000000), (long)(at % 1000000000)};
    while (clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &ts, NULL) == EINTR) {
    }
}

static int cmp64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* The p-th percentile of v[0..k) (sorts v): the value at rank ceil(p/100 k). */
static int64_t pct(int64_t *v, size_t k, int p)
{
    if (!k) return -1;
    qsort(v, k, sizeof *v, cmp64);
    size_t i = ((size_t)p * k + 99) / 100;
    return v[i ? i - 1 : 0];
}

/* Per round, the latest of the N values less the earliest, into spread[0..rounds) (CUT if
 * one is); the number of rounds cut. */
static int spreads(const int64_t *t, int64_t *spread)
{
    int cut = 0;
    for (int r = 0; r < rounds; r++) {
        int64_t lo = INT64_MAX, hi = INT64_MIN;
        for (int i = 0; i < n; i++) {
            int64_t v = t[(size_t)r * (size_t)n + (size_t)i];
            if (v < lo) lo = v;
            if (v > hi) hi = v;
        }
        spread[r] = hi == CUT ? CUT : hi - lo;
        cut += hi == CUT;
    }
    return cut;
}

static long long us(int64_t ns)
{
    return ns == CUT ? -1 : (long long)(ns / 1000);
}

/* Runs the N processes, each body(i, t) for its row of t, t shared (rounds x N); 0 or -1. */
static int run_procs(int64_t *t, void (*body)(int i, int64_t first, int64_t *t), int64_t first)
{
    pid_t p[MAX_N];
    int rc = 0;
    for (int i = 0; i < n; i++) {
        if ((p[i] = fork()) == 0) {
            die_with_parent();
            body(i, first, t);
            _exit(0);
        }
        if (p[i] < 0) {
            perror("skewfloor: fork");
            n = i;
            rc = -1;
            break;
        }
    }
    for (int i = 0; i < n; i++) {
        int st;
        if (waitpid(p[i], &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st)) rc = -1;
    }
    return rc;
}

/* Whether round r's instant (at) is a period past: a process that fell that far behind
 * skips it, as psid does (a node that gets the next switch before it applied this one
 * applies the newer); the round counts as CUT for it. */
static bool missed(int64_t at, int64_t *slot)
{
    if (now_ns() <= at + (int64_t)period_ms * 1000000) return false;
    *slot = CUT;
    return true;
}

static void wake_body(int i, int64_t first, int64_t *t)
{
    for (int r = 0; r < rounds; r++) {
        int64_t at = first + (int64_t)r * period_ms * 1000000;
        int64_t *slot = &t[(size_t)r * (size_t)n + (size_t)i];
        if (missed(at, slot)) continue;
        sleep_until(at);
        *slot = now_ns() - at;
    }
}

static void report(const char *what, const char *hogs_s, int64_t *t, const char *one)
{
    size_t k = (size_t)rounds * (size_t)n;
    int64_t *sp = calloc((size_t)rounds, sizeof *sp);
    if (!sp) return;
    int cut = spreads(t, sp);
    int64_t s50 = pct(sp, (size_t)rounds, 50), s99 = pct(sp, (size_t)rounds, 99);
    int64_t a50 = pct(t, k, 50), a99 = pct(t, k, 99);
    printf("%s nodes=%d hogs=%s rounds=%d %s_p50_us=%lld %s_p99_us=%lld spread_p50_us=%lld "
           "spread_p99_us=%lld cut=%d\n",
           what, n, hogs_s, rounds, one, us(a50), one, us(a99), us(s50), us(s99), cut);
    free(sp);
}

/* ---- the freezer ---- */

static void cg_path(char *out, size_t len, int i, int which, const char *file)
{
    snprintf(out, len, "%s/%c%d%s%s", base, which ? 'b' : 'a', i, file ? "/" : "",
             file ? file : "");
}

static int write_file(const char *path, const char *s)
{
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    ssize_t w = write(fd, s, strlen(s));
    close(fd);
    return w == (ssize_t)strlen(s) ? 0 : -1;
}

/* 1 "frozen 1", 0, -1 (read from offset 0: also clears the file's POLLPRI mark) */
static int frozen(int fd)
{
    char buf[256];
    ssize_t k = pread(fd, buf, sizeof buf - 1, 0);
    if (k <= 0) return -1;
    buf[k] = 0;
    const char *p = strstr(buf, "frozen ");
    return p ? p[7] == '1' : -1;
}

static void freeze_body(int i, int64_t first, int64_t *t)
{
    char path[4200];
    int ev[2], fz[2];
    for (int w = 0; w < 2; w++) {
        cg_path(path, sizeof path, i, w, "cgroup.events");
        ev[w] = open(path, O_RDONLY | O_CLOEXEC);
        cg_path(path, sizeof path, i, w, "cgroup.freeze");
        fz[w] = open(path, O_WRONLY | O_CLOEXEC);
        if (ev[w] < 0 || fz[w] < 0) _exit(1);
        frozen(ev[w]);
    }
    int f = 1; /* the cgroup frozen now (b: freeze_part) */
    for (int r = 0; r < rounds; r++) {
        int64_t at = first + (int64_t)r * period_ms * 1000000;
        int64_t *slot = &t[(size_t)r * (size_t)n + (size_t)i];
        if (missed(at, slot)) continue;
        sleep_until(at);
        f = !f; /* the one to freeze; the other is thawed */
        if (pwrite(fz[f], "1", 1, 0) != 1 || pwrite(fz[!f], "0", 1, 0) != 1) _exit(1);
        /* as psid: the wait starts when it woke, and the next switch supersedes it */
        int64_t wait = (int64_t)period_ms * 1000000;
        int64_t deadline = now_ns() + (wait < WAIT_NS ? wait : WAIT_NS);
        int st;
        while ((st = frozen(ev[f])) != 1 && now_ns() < deadline) {
            struct pollfd p = {.fd = ev[f], .events = POLLPRI};
            poll(&p, 1, (int)((deadline - now_ns()) / 1000000) + 1);
        }
        *slot = st == 1 ? now_ns() - at : CUT;
    }
}

/* The cgroup2 mount and this process's cgroup under it: base = MOUNT/OWN/skewfloor-PID. */
static const char *find_base(void)
{
    char line[4096], mnt[2048] = "", own[2048] = "";
    FILE *f = fopen("/proc/self/mountinfo", "re");
    while (f && !mnt[0] && fgets(line, sizeof line, f)) {
        const char *sep = strstr(line, " - ");
        if (sep && !strncmp(sep + 3, "cgroup2 ", 8)) sscanf(line, "%*s %*s %*s %*s %2047s", mnt);
    }
    if (f) fclose(f);
    if (!mnt[0]) return "no cgroup2 hierarchy is mounted";
    f = fopen("/proc/self/cgroup", "re");
    while (f && !own[0] && fgets(line, sizeof line, f))
        if (!strncmp(line, "0::", 3)) {
            line[strcspn(line, "\n")] = 0;
            if (strlen(line + 3) < sizeof own) memcpy(own, line + 3, strlen(line + 3) + 1);
        }
    if (f) fclose(f);
    if (!own[0]) return "this process is in no cgroup2";
    int len = snprintf(base, sizeof base, "%s%s/skewfloor-%d", mnt, strcmp(own, "/") ? own : "",
                       (int)getpid());
    if (len < 0 || (size_t)len >= sizeof base) {
        base[0] = 0;
        return "the cgroup path is too long";
    }
    if (mkdir(base, 0755) < 0) {
        base[0] = 0;
        return strerror(errno);
    }
    return NULL;
}

static void cg_remove(void)
{
    char path[4200];
    for (int i = 0; i < n; i++)
        for (int w = 0; w < 2; w++) {
            cg_path(path, sizeof path, i, w, "cgroup.freeze");
            write_file(path, "0");
        }
    hogs_end();
    for (int i = 0; i < n; i++)
        for (int w = 0; w < 2; w++) {
            cg_path(path, sizeof path, i, w, NULL);
            for (int k = 0; k < 100 && rmdir(path) < 0 && errno == EBUSY; k++) usleep(10000);
        }
    rmdir(base);
}

static int freeze_part(int64_t *t)
{
    const char *why = geteuid() ? "not root" : find_base();
    char path[4200];
    char fz[4200];
    for (int i = 0; !why && i < n; i++)
        for (int w = 0; !why && w < 2; w++) {
            cg_path(path, sizeof path, i, w, NULL);
            cg_path(fz, sizeof fz, i, w, "cgroup.freeze");
            if (mkdir(path, 0755) < 0)
                why = strerror(errno);
            else if (access(fz, W_OK) < 0)
                why = "no cgroup.freeze (no freezer)";
            else if ((hogs[nh++] = hog(path)) < 0)
                why = strerror(errno);
            else if (w == 1 && write_file(fz, "1") < 0) /* b starts frozen: N hogs run */
                why = strerror(errno);
        }
    if (why) {
        printf("freeze unavailable: %s\n", why);
        if (base[0]) cg_remove();
        return 0;
    }
    int rc = run_procs(t, freeze_body, now_ns() + START_NS);
    char hs[16];
    snprintf(hs, sizeof hs, "%d", 2 * n);
    if (rc == 0) report("freeze", hs, t, "done");
    cg_remove();
    return rc;
}

static int usage(void)
{
    fprintf(stderr,
            "usage: skewfloor [-n N] [-r ROUNDS] [-p PERIOD_MS] [--hogs H] [--no-freeze]\n");
    return 2;
}

int main(int argc, char **argv)
{
    bool do_freeze = true;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--no-freeze")) {
            do_freeze = false;
            continue;
        }
        if (!v) return usage();
        if (!strcmp(a, "-n"))
            n = atoi(v);
        else if (!strcmp(a, "-r"))
            rounds = atoi(v);
        else if (!strcmp(a, "-p"))
            period_ms = atoi(v);
        else if (!strcmp(a, "--hogs"))
            nhogs = atoi(v);
        else
            return usage();
        i++;
    }
    if (nhogs < 0) nhogs = n;
    if (n < 1 || n > MAX_N || rounds < 1 || rounds > 100000 || period_ms < 1 || nhogs > MAX_HOGS)
        return usage();
    setvbuf(stdout, NULL, _IOLBF, 0);
    int64_t *t = mmap(NULL, (size_t)rounds * (size_t)n * sizeof *t, PROT_READ | PROT_WRITE,
                      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (t == MAP_FAILED) {
        perror("skewfloor: mmap");
        return 1;
    }
    for (int i = 0; i < nhogs; i++) hogs[nh++] = hog(NULL);
    int rc = run_procs(t, wake_body, now_ns() + START_NS);
    hogs_end();
    char hs[16];
    snprintf(hs, sizeof hs, "%d", nhogs);
    if (rc == 0) report("wake", hs, t, "late");
    if (rc == 0 && do_freeze) rc = freeze_part(t);
    return rc ? 1 : 0;
}
