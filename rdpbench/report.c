/*
 * report.c - round-trip and throughput summaries for rdpbench's client (see report.h).
 */
#include "report.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

struct rb_lat rb_lat_summary(uint64_t *ns, uint64_t n)
{
    struct rb_lat l;
    qsort(ns, n, sizeof *ns, cmp_u64);
    double sum = 0;
    for (uint64_t k = 0; k < n; k++) sum += (double)ns[k];
    l.median = (n % 2 ? (double)ns[n / 2] : ((double)ns[n / 2 - 1] + (double)ns[n / 2]) / 2) / 1e3;
    uint64_t k99 = (uint64_t)ceil(0.99 * (double)n);
    l.p99 = (double)ns[(k99 ? k99 : 1) - 1] / 1e3;
    l.mean = sum / (double)n / 1e3;
    l.min = (double)ns[0] / 1e3;
    return l;
}

static uint64_t payload_bytes(const struct rb_gen *g, uint64_t from, uint64_t n)
{
    uint64_t s = 0;
    for (uint64_t i = from; i < from + n; i++) s += rb_msg_len(g, i);
    return s;
}

struct rb_tput rb_tput_make(const struct rb_gen *g, uint64_t total, uint64_t ns)
{
    struct rb_tput t;
    t.msgs = total;
    t.bytes = payload_bytes(g, 0, total);
    t.secs = (double)ns / 1e9;
    t.gbps = (double)t.bytes * 8 / (double)ns;
    t.mps = (double)t.msgs / t.secs;
    return t;
}

/* rdp_send, waiting in the event loop while the queue is full. */
void rb_print_lat(FILE *f, const char *what, const struct rb_lat *l, uint64_t n)
{
    fprintf(f,
            "%s pingpong: %" PRIu64 " round trips verified; RTT us: median %.2f, p99 %.2f, "
            "mean %.2f, min %.2f\n",
            what, n, l->median, l->p99, l->mean, l->min);
}

void rb_print_tput(FILE *f, const char *what, const struct rb_tput *t)
{
    fprintf(f,
            "%s stream: %" PRIu64 " messages (%" PRIu64 " payload bytes) verified in %.3f s: "
            "%.3f Gbit/s, %.0f msgs/s\n",
            what, t->msgs, t->bytes, t->secs, t->gbps, t->mps);
}

void rb_json_lat(FILE *f, const struct rb_lat *l)
{
    fprintf(f, "{\"rtt_us\":{\"median\":%.3f,\"p99\":%.3f,\"mean\":%.3f,\"min\":%.3f}}", l->median,
            l->p99, l->mean, l->min);
}

void rb_json_tput(FILE *f, const struct rb_tput *t)
{
    fprintf(f,
            "{\"seconds\":%.6f,\"gbps\":%.4f,\"msgs_per_s\":%.1f,\"bytes\":%" PRIu64
            ",\"msgs\":%" PRIu64 "}",
            t->secs, t->gbps, t->mps, t->bytes, t->msgs);
}
