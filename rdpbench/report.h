/*
 * report.h - what rdpbench's client reports: round-trip times (pingpong) and throughput
 * (stream), summarized, printed for people and written as JSON.
 */
#ifndef PSCLUSTER_RDPBENCH_REPORT_H
#define PSCLUSTER_RDPBENCH_REPORT_H

#include "gen.h"

#include <stdint.h>
#include <stdio.h>

struct rb_lat {
    double median, p99, mean, min; /* microseconds */
};
struct rb_tput {
    double secs, gbps, mps;
    uint64_t bytes, msgs;
};

/* The summary of n round trips of ns nanoseconds each (ns is sorted in place). */
struct rb_lat rb_lat_summary(uint64_t *ns, uint64_t n);
/* Messages 0..total-1 of g moved in ns nanoseconds. */
struct rb_tput rb_tput_make(const struct rb_gen *g, uint64_t total, uint64_t ns);
void rb_print_lat(FILE *f, const char *what, const struct rb_lat *l, uint64_t n);
void rb_print_tput(FILE *f, const char *what, const struct rb_tput *t);
void rb_json_lat(FILE *f, const struct rb_lat *l);
void rb_json_tput(FILE *f, const struct rb_tput *t);

#endif
