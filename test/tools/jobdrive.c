/*
 * jobdrive.c - drives psid's client protocol directly, for the integration tests of psid
 * (independent of psrun): start a job and print every event, or send one signal.
 *
 *   jobdrive run NP PROGRAM [ARGS...]   print "job N:P", then per event one line:
 *                                       "rank R started N:P on node X" | "rank R failed: E TEXT"
 *                                       "rank R out|err N bytes" | "rank R exit STATUS" |
 *                                       "rank R lost"; exits when every rank is done
 *   jobdrive signal TID|job:TID SIG     print "errno E count C"
 *   jobdrive watch TID SIG [release]    register a notification (SIG 0: a message), print
 *                                       "registered E", then "dead TID status S" | "dead TID
 *                                       lost" | "signal N" when it fires (with "release":
 *                                       cancel it at once and print "released E")
 * Environment: JOBDRIVE_NO_ACK=1 never acknowledges output (flow-control tests);
 * JOBDRIVE_ACK_DELAY_MS=N holds the acknowledgements back until N ms after the spawn (a
 * reader that is slow at first), then sends what was held and acknowledges as it goes;
 * JOBDRIVE_OVERBOOK=1 lets ranks exceed the nodes' CPUs; JOBDRIVE_NODES=0,2 is the partition;
 * JOBDRIVE_HOLD_MS=N holds the spawn (PSF_HOLD, as psrun does for output files and --bcast)
 * and lets it go (PSM_SPAWN_GO) N ms after psid's answer.
 */
#include "psi.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Acknowledge n bytes of rank's output: false if the connection failed. */
static bool send_ack(struct psi *c, uint32_t rank, uint64_t n)
{
    struct psmsg_buf a = {0};
    psmsg_begin(&a, PSM_IO_ACK, 0);
    psmsg_put_u32(&a, PSF_RANK, rank);
    psmsg_put_u64(&a, PSF_BYTES, n);
    bool ok = psi_send(c, &a);
    psmsg_buf_free(&a);
    return ok;
}

static uint64_t parse_tid(const char *s)
{
    unsigned node, pid;
    if (sscanf(s, "%u:%u", &node, &pid) != 2) exit(2);
    return PSTID(node, pid);
}

static int do_signal(struct psi *c, const char *target, int sig)
{
    struct psmsg_buf b = {0};
    struct psmsg m;
    psmsg_begin(&b, PSM_SIGNAL, 0);
    if (!strncmp(target, "job:", 4))
        psmsg_put_u64(&b, PSF_JOB, parse_tid(target + 4));
    else
        psmsg_put_u64(&b, PSF_TID, parse_tid(target));
    psmsg_put_u32(&b, PSF_SIGNAL, (uint32_t)sig);
    if (psi_call(c, &b, &m) < 0) {
        printf("error %s\n", strerror(errno));
        return 1;
    }
    uint32_t e = 0, n = 0;
    psmsg_get_u32(&m.body, PSF_ERRNO, &e);
    psmsg_get_u32(&m.body, PSF_COUNT, &n);
    printf("errno %u count %u\n", e, n);
    return 0;
}

static int do_run(struct psi *c, int np, char **argv)
{
    extern char **environ;
    struct psmsg_buf b = {0};
    struct psmsg m;
    char cwd[4096];
    psmsg_begin(&b, PSM_SPAWN, 0);
    for (int i = 0; argv[i]; i++) psmsg_put_str(&b, PSF_ARG, argv[i]);
    for (char **e = environ; *e; e++) psmsg_put_str(&b, PSF_ENV, *e);
    if (getcwd(cwd, sizeof cwd)) psmsg_put_str(&b, PSF_CWD, cwd);
    psmsg_put_u32(&b, PSF_NP, (uint32_t)np);
    psmsg_put_u32(&b, PSF_INPUT, PSI_NO_RANK);
    if (getenv("JOBDRIVE_OVERBOOK")) psmsg_put_u32(&b, PSF_OVERBOOK, 1);
    for (const char *p = getenv("JOBDRIVE_NODES"); p && *p; p += strcspn(p, ","), p += !!*p)
        psmsg_put_u32(&b, PSF_NODE_ID, (uint32_t)strtoul(p, NULL, 10));
    const char *hold = getenv("JOBDRIVE_HOLD_MS");
    if (hold) psmsg_put_u32(&b, PSF_HOLD, 1);
    if (psi_call(c, &b, &m) < 0) {
        printf("spawn error: %s\n", strerror(errno));
        return 1;
    }
    uint64_t job = 0;
    psmsg_get_u64(&m.body, PSF_JOB, &job);
    printf("job %u:%d\n", PSTID_NODE(job), PSTID_PID(job));
    fflush(stdout);
    if (hold) { /* the client's part of a held spawn takes this long, then: go */
        unsigned long ms = strtoul(hold, NULL, 10);
        nanosleep(&(struct timespec){(time_t)(ms / 1000), (long)(ms % 1000) * 1000000}, NULL);
        psmsg_buf_free(&b);
        psmsg_begin(&b, PSM_SPAWN_GO, 0);
        psmsg_put_u64(&b, PSF_JOB, job);
        if (!psi_send(c, &b)) {
            printf("go error: %s\n", strerror(errno));
            return 1;
        }
        psmsg_buf_free(&b);
        printf("go after %lu ms\n", ms);
        fflush(stdout);
    }
    int done = 0, ack = !getenv("JOBDRIVE_NO_ACK");
    const char *delay = getenv("JOBDRIVE_ACK_DELAY_MS");
    uint64_t ack_from = delay ? now_ms() + strtoull(delay, NULL, 10) : 0;
    uint64_t *held = delay ? calloc((size_t)np, sizeof *held) : NULL;
    while (done < np) {
        uint64_t now = now_ms();
        if (held && now >= ack_from) { /* the slow start is over: what was held goes */
            for (int r = 0; r < np; r++)
                if (held[r] && !send_ack(c, (uint32_t)r, held[r])) return 1;
            free(held);
            held = NULL;
        }
        int r = psi_next_event(c, &m, held ? (int)(ack_from - now) : -1);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return 1;
        if (r == 0) continue; /* the wait timed out */
        uint32_t rank = 0, u = 0;
        uint64_t tid = 0;
        psmsg_get_u32(&m.body, PSF_RANK, &rank);
        if (m.type == PSM_RANK) {
            psmsg_get_u32(&m.body, PSF_NODE_ID, &u);
            if (psmsg_get_u64(&m.body, PSF_TID, &tid) == 0) {
                printf("rank %u started %u:%d on node %u\n", rank, PSTID_NODE(tid), PSTID_PID(tid),
                       u);
            } else {
                char t[512] = "";
                psmsg_get_str(&m.body, PSF_TEXT, t, sizeof t);
                psmsg_get_u32(&m.body, PSF_ERRNO, &u);
                printf("rank %u failed: %u %s\n", rank, u, t);
                done++;
            }
        } else if (m.type == PSM_IO) {
            struct psmsg_field f;
            psmsg_find(&m.body, PSF_DATA, &f);
            psmsg_get_u32(&m.body, PSF_STREAM, &u);
            if (f.len) printf("rank %u %s %u bytes\n", rank, u == 1 ? "out" : "err", f.len);
            if (f.len && ack && held && rank < (uint32_t)np)
                held[rank] += f.len;
            else if (f.len && ack && !send_ack(c, rank, f.len))
                return 1;
        } else if (m.type == PSM_EXIT) {
            if (psmsg_get_u32(&m.body, PSF_LOST, &u) == 0)
                printf("rank %u lost\n", rank);
            else if (psmsg_get_u32(&m.body, PSF_STATUS, &u) == 0)
                printf("rank %u exit %u\n", rank, u);
            done++;
        }
        fflush(stdout);
    }
    return 0;
}

static volatile sig_atomic_t got_sig;
static void on_sig(int s)
{
    got_sig = s;
}

static int do_watch(struct psi *c, const char *target, int sig, int release)
{
    struct psmsg m;
    uint64_t tid = parse_tid(target);
    if (sig) { /* no SA_RESTART: the signal must interrupt recv */
        struct sigaction sa = {.sa_handler = on_sig};
        sigaction(sig, &sa, NULL);
    }
    int e = psi_notify(c, tid, sig) < 0 ? errno : 0;
    if (e && e != ESRCH && e != EPERM && e != EINVAL) {
        printf("error %s\n", strerror(e));
        return 1;
    }
    printf("registered %d\n", e);
    fflush(stdout);
    if (e) return 0;
    if (release) {
        printf("released %d\n", psi_release(c, tid) < 0 ? errno : 0);
        fflush(stdout);
    }
    for (;;) {
        struct psi_dead d;
        if (psi_next_event(c, &m, -1) < 0) {
            if (errno == EINTR && got_sig) {
                printf("signal %d\n", (int)got_sig);
                return 0;
            }
            if (errno == EINTR) continue;
            return 1;
        }
        if (psi_dead_parse(&m, &d) < 0) continue;
        if (d.lost)
            printf("dead %s lost\n", target);
        else
            printf("dead %s status %u\n", target, d.status);
        return 0;
    }
}

int main(int argc, char **argv)
{
    struct psi c;
    if (argc < 3) {
        fprintf(stderr, "usage: jobdrive run NP PROGRAM [ARGS...] | signal TID SIG\n");
        return 2;
    }
    if (psi_open(&c, NULL) < 0) {
        printf("connect %s: %s\n", psi_socket_path(), strerror(errno));
        return 1;
    }
    if (!strcmp(argv[1], "run") && argc >= 4) return do_run(&c, atoi(argv[2]), argv + 3);
    if (!strcmp(argv[1], "signal") && argc == 4) return do_signal(&c, argv[2], atoi(argv[3]));
    if (!strcmp(argv[1], "watch") && (argc == 4 || argc == 5))
        return do_watch(&c, argv[2], atoi(argv[3]), argc == 5);
    return 2;
}
