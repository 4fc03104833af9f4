/*
 * trace.c - the event record of an RDP_TRACE build (see trace.h). One process-wide record:
 * a profiling build traces the process, not an endpoint. Empty in a normal build.
 */
#include "trace.h"

#ifdef RDP_TRACE
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define TRACE_MAX (4u << 20) /* events kept; later ones are dropped and counted */

struct trace_rec {
    uint64_t ns;
    uint32_t ev, arg;
};

static struct {
    int state; /* 0 not yet looked at the environment, 1 recording, -1 off */
    struct trace_rec *rec;
    uint32_t n, dropped;
    char path[4096];
} tr;

static void trace_dump(void)
{
    FILE *f = fopen(tr.path, "w");
    if (!f) {
        perror(tr.path);
        return;
    }
    for (uint32_t i = 0; i < tr.n; i++)
        fprintf(f, "%llu %u %u\n", (unsigned long long)tr.rec[i].ns, tr.rec[i].ev, tr.rec[i].arg);
    if (tr.dropped) fprintf(stderr, "rdp trace: %u events dropped (%s)\n", tr.dropped, tr.path);
    fclose(f);
}

static void trace_start(void)
{
    const char *prefix = getenv("RDP_TRACE_FILE");
    tr.state = -1;
    if (!prefix || !*prefix) return;
    tr.rec = malloc(TRACE_MAX * sizeof *tr.rec);
    if (!tr.rec) return;
    snprintf(tr.path, sizeof tr.path, "%s.%ld", prefix, (long)getpid());
    if (atexit(trace_dump) != 0) return;
    tr.state = 1;
}

void rdp_trace(enum rdp_trace_event ev, uint32_t arg)
{
    if (tr.state == 0) trace_start();
    if (tr.state < 0) return;
    if (tr.n == TRACE_MAX) {
        tr.dropped++;
        return;
    }
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    tr.rec[tr.n++] = (struct trace_rec){(uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec,
                                        (uint32_t)ev, arg};
}
#else
/* ISO C wants something in a translation unit */
typedef int rdp_trace_unused;
#endif
