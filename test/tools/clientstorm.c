/*
 * clientstorm.c - clients of psid that go away at bad moments, for the tests that psid
 * survives them (test/shell/psid_hostile.sh): connections that stop reading, close or
 * half-close while psid is sending them notifications, job events or replies.
 *
 *   clientstorm deaf TID          register a death notification (a message) for TID, print
 *                                 "registered E", shut the reading side (SHUT_RD: psid's
 *                                 next send fails with EPIPE), print "deaf", wait to be killed
 *   clientstorm watchers TID N MS SEED
 *                                 N connections each register a notification for TID; each
 *                                 then reads, or at a random time within MS ms closes or
 *                                 shuts its reading side. Prints "registered K" (K answered
 *                                 0), then after every reader heard of TID's death or MS
 *                                 passed: "readers R heard H lost L"
 *   clientstorm jobs N NP MS SEED PROGRAM [ARGS...]
 *                                 N processes each start a job of NP ranks (a job's id is
 *                                 its client's task id); the same fates.
 *                                 Prints "jobs N spawned S readers R complete C" once every
 *                                 reader saw all its ranks end, or MS passed
 *   clientstorm flood N MS        N connections send node-table requests as fast as psid
 *                                 takes them for MS ms and never read a reply; prints
 *                                 "sent B bytes, closed K" (K: connections psid closed)
 *   clientstorm inflood MS PROGRAM [ARGS...]
 *                                 start a job of one rank that takes stdin but reads none, send it
 *                                 input as fast as psid takes it, ignoring the window, for
 *                                 MS ms; prints "input B bytes, refused E" (E: psid's errno)
 * Every wait is bounded; the process ends itself after MS + 10 s at the latest (alarm).
 */
#include "psi.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum fate { F_READ, F_CLOSE, F_DEAF, F_DEAF_NOW };

struct conn {
    struct psi c;
    enum fate fate;
    uint64_t at;     /* when the fate strikes (ms since start) */
    unsigned ends;   /* PSM_DEAD or PSM_EXIT seen */
    unsigned lost;   /* of which "lost" */
    bool registered; /* the request was answered without error */
};

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static uint64_t parse_tid(const char *s)
{
    unsigned node, pid;
    if (sscanf(s, "%u:%u", &node, &pid) != 2) {
        fprintf(stderr, "clientstorm: %s: not a task id\n", s);
        exit(2);
    }
    return PSTID(node, pid);
}

static int notify_req(struct psi *c, uint64_t tid)
{
    struct psmsg_buf b = {0};
    struct psmsg m;
    uint32_t e = EIO;
    psmsg_begin(&b, PSM_NOTIFY, 0);
    psmsg_put_u64(&b, PSF_TID, tid);
    psmsg_put_u32(&b, PSF_SIGNAL, 0);
    if (psi_call(c, &b, &m) == 0) psmsg_get_u32(&m.body, PSF_ERRNO, &e);
    psmsg_buf_free(&b);
    return (int)e;
}

static int spawn_req(struct psi *c, uint32_t np, char **argv, uint32_t input)
{
    extern char **environ;
    struct psmsg_buf b = {0};
    struct psmsg m;
    psmsg_begin(&b, PSM_SPAWN, 0);
    for (int i = 0; argv[i]; i++) psmsg_put_str(&b, PSF_ARG, argv[i]);
    for (char **e = environ; *e; e++) psmsg_put_str(&b, PSF_ENV, *e);
    psmsg_put_str(&b, PSF_CWD, "/");
    psmsg_put_u32(&b, PSF_NP, np);
    psmsg_put_u32(&b, PSF_OVERBOOK, 1);
    psmsg_put_u32(&b, PSF_INPUT, input);
    int r = psi_call(c, &b, &m);
    psmsg_buf_free(&b);
    return r < 0 ? errno : 0;
}

/* Take the events that are there; count the ends (PSM_DEAD, PSM_EXIT, failed PSM_RANK).
 * Acknowledges output so that no rank waits for its window. -1 when the connection is
 * over. */
static int drain(struct conn *k)
{
    struct psmsg m;
    int r;
    while ((r = psi_next_event(&k->c, &m, 0)) == 1) {
        uint32_t u;
        if (m.type == PSM_DEAD || m.type == PSM_EXIT) {
            k->ends++;
            if (psmsg_get_u32(&m.body, PSF_LOST, &u) == 0) k->lost++;
        } else if (m.type == PSM_RANK && psmsg_get_u64(&m.body, PSF_TID, &(uint64_t){0}) < 0) {
            k->ends++;
        } else if (m.type == PSM_IO) {
            struct psmsg_field f;
            uint32_t rank = 0;
            psmsg_get_u32(&m.body, PSF_RANK, &rank);
            if (psmsg_find(&m.body, PSF_DATA, &f) && f.len) {
                struct psmsg_buf a = {0};
                psmsg_begin(&a, PSM_IO_ACK, 0);
                psmsg_put_u32(&a, PSF_RANK, rank);
                psmsg_put_u64(&a, PSF_BYTES, f.len);
                psi_send(&k->c, &a);
                psmsg_buf_free(&a);
            }
        }
    }
    return r < 0 && errno != EINTR ? -1 : 0;
}

/* Run the fates until every reader has `want` ends or ms have passed. */
static void storm(struct conn *k, int n, unsigned want, uint64_t ms)
{
    uint64_t t0 = now_ms();
    for (;;) {
        uint64_t t = now_ms() - t0;
        bool waiting = false;
        struct pollfd pf[n];
        for (int i = 0; i < n; i++) {
            pf[i] = (struct pollfd){.fd = -1};
            if (k[i].c.fd < 0) continue;
            if (k[i].fate != F_READ && t >= k[i].at) {
                if (k[i].fate == F_CLOSE) {
                    psi_close(&k[i].c);
                } else {
                    shutdown(k[i].c.fd, SHUT_RD);
                    k[i].fate = F_DEAF_NOW;
                    k[i].at = UINT64_MAX;
                }
                continue;
            }
            if (k[i].fate == F_READ) {
                if (psi_event_pending(&k[i].c) && drain(&k[i]) < 0) {
                    psi_close(&k[i].c);
                    continue;
                }
                if (k[i].ends < want) waiting = true;
                pf[i] = (struct pollfd){.fd = k[i].c.fd, .events = POLLIN};
            }
        }
        if (!waiting || t >= ms) return;
        if (poll(pf, (nfds_t)n, 5) < 0 && errno != EINTR) return;
        for (int i = 0; i < n; i++)
            if (pf[i].fd >= 0 && pf[i].revents && drain(&k[i]) < 0) psi_close(&k[i].c);
    }
}

static struct conn *conns(int n, uint64_t ms, unsigned seed)
{
    struct conn *k = calloc((size_t)n, sizeof *k);
    if (!k) exit(1);
    srand(seed);
    for (int i = 0; i < n; i++) {
        k[i].fate = (enum fate)(rand() % 4);
        k[i].at = k[i].fate == F_DEAF_NOW ? 0 : (uint64_t)rand() % (ms ? ms : 1);
        if (psi_open(&k[i].c, NULL) < 0) {
            printf("connect %d: %s\n", i, strerror(errno));
            exit(1);
        }
    }
    return k;
}

static int flood(int n, uint64_t ms)
{
    struct psmsg_buf b = {0};
    psmsg_begin(&b, PSM_NODES, 7);
    if (psmsg_end(&b) < 0) return 1;
    struct psi *c = calloc((size_t)n, sizeof *c);
    for (int i = 0; c && i < n; i++)
        if (psi_open(&c[i], NULL) < 0) return 1;
    uint64_t t0 = now_ms(), sent = 0;
    int closed = 0;
    while (now_ms() - t0 < ms && closed < n) {
        for (int i = 0; i < n; i++) {
            if (c[i].fd < 0) continue;
            ssize_t w = send(c[i].fd, b.data, b.len, MSG_DONTWAIT | MSG_NOSIGNAL);
            if (w > 0) sent += (uint64_t)w;
            if (w < 0 && errno != EAGAIN && errno != EINTR) {
                close(c[i].fd);
                c[i].fd = -1;
                closed++;
            }
        }
        poll(NULL, 0, 1);
    }
    printf("sent %llu bytes, closed %d\n", (unsigned long long)sent, closed);
    return 0;
}

static int inflood(uint64_t ms, char **argv)
{
    struct psi c;
    if (psi_open(&c, NULL) < 0 || spawn_req(&c, 1, argv, 0) != 0) return 1;
    static uint8_t data[60000];
    uint64_t t0 = now_ms(), sent = 0;
    int refused = 0;
    while (now_ms() - t0 < ms && !refused) {
        struct psmsg_buf b = {0};
        psmsg_begin(&b, PSM_INPUT, 0);
        psmsg_put_u32(&b, PSF_RANK, 0);
        psmsg_put_bytes(&b, PSF_DATA, data, sizeof data);
        if (!psi_send(&c, &b)) refused = errno ? errno : EIO;
        psmsg_buf_free(&b);
        sent += sizeof data;
        /* whatever psid says (job events, its refusal as PSM_ERROR) */
        struct pollfd pf = {.fd = c.fd, .events = POLLIN};
        while (!refused && poll(&pf, 1, 0) == 1) {
            if (psi_rx_read(&c.rx, c.fd) <= 0) {
                refused = ECONNRESET;
                break;
            }
            struct psmsg m;
            uint32_t e = 0;
            while (psi_rx_next(&c.rx, &m) == 1)
                if (m.type == PSM_ERROR && psmsg_get_u32(&m.body, PSF_ERRNO, &e) == 0)
                    refused = (int)e;
        }
    }
    printf("input %llu bytes, refused %d\n", (unsigned long long)sent, refused);
    return 0;
}

static int usage(void)
{
    fprintf(stderr, "usage: clientstorm deaf TID | watchers TID N MS SEED |"
                    " jobs N NP MS SEED PROGRAM [ARGS...]\n");
    return 2;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc == 3 && !strcmp(argv[1], "deaf")) {
        struct psi c;
        alarm(60);
        if (psi_open(&c, NULL) < 0) {
            printf("connect: %s\n", strerror(errno));
            return 1;
        }
        printf("registered %d\n", notify_req(&c, parse_tid(argv[2])));
        shutdown(c.fd, SHUT_RD);
        printf("deaf\n");
        for (;;) pause();
    }
    if (argc == 6 && !strcmp(argv[1], "watchers")) {
        uint64_t tid = parse_tid(argv[2]);
        int n = atoi(argv[3]);
        uint64_t ms = strtoull(argv[4], NULL, 10);
        if (n <= 0) return usage();
        alarm((unsigned)(ms / 1000 + 10));
        struct conn *k = conns(n, ms, (unsigned)atoi(argv[5]));
        int ok = 0, readers = 0;
        for (int i = 0; i < n; i++) {
            k[i].registered = notify_req(&k[i].c, tid) == 0;
            ok += k[i].registered;
            readers += k[i].fate == F_READ;
        }
        printf("registered %d\n", ok);
        storm(k, n, 1, ms);
        unsigned heard = 0, lost = 0;
        for (int i = 0; i < n; i++)
            if (k[i].fate == F_READ) {
                heard += k[i].ends;
                lost += k[i].lost;
            }
        printf("readers %d heard %u lost %u\n", readers, heard, lost);
        return 0;
    }
    if (argc >= 7 && !strcmp(argv[1], "jobs")) {
        /* one process per job: a job's id is its client's task id */
        int n = atoi(argv[2]);
        unsigned np = (unsigned)atoi(argv[3]);
        uint64_t ms = strtoull(argv[4], NULL, 10);
        if (n <= 0 || np == 0) return usage();
        alarm((unsigned)(ms / 1000 + 10));
        srand((unsigned)atoi(argv[5]));
        pid_t *kids = calloc((size_t)n, sizeof *kids);
        for (int i = 0; kids && i < n; i++) {
            unsigned seed = (unsigned)rand();
            if ((kids[i] = fork()) == 0) {
                struct conn *k = conns(1, ms, seed);
                int e = spawn_req(&k->c, np, argv + 6, PSI_NO_RANK);
                if (e) printf("spawn %d: %s\n", i, strerror(e));
                if (e) _exit(3);
                storm(k, 1, np, ms);
                _exit(k->fate != F_READ ? 4 : k->ends == np ? 0 : 1);
            }
        }
        int spawned = 0, readers = 0, complete = 0, st;
        for (int i = 0; kids && i < n; i++) {
            if (kids[i] < 0 || waitpid(kids[i], &st, 0) < 0 || !WIFEXITED(st)) continue;
            spawned += WEXITSTATUS(st) != 3;
            readers += WEXITSTATUS(st) <= 1;
            complete += WEXITSTATUS(st) == 0;
        }
        printf("jobs %d spawned %d readers %d complete %d\n", n, spawned, readers, complete);
        return 0;
    }
    if (argc == 4 && !strcmp(argv[1], "flood")) {
        alarm((unsigned)(strtoull(argv[3], NULL, 10) / 1000 + 10));
        return flood(atoi(argv[2]), strtoull(argv[3], NULL, 10));
    }
    if (argc >= 4 && !strcmp(argv[1], "inflood")) {
        alarm((unsigned)(strtoull(argv[2], NULL, 10) / 1000 + 10));
        return inflood(strtoull(argv[2], NULL, 10), argv + 3);
    }
    return usage();
}
