/*
 * probe.h - what the stand-alone probes in bench/profile share: a monotonic clock in
 * nanoseconds and a comparison for qsort'ing samples to take their median.
 */
#ifndef PSCLUSTER_BENCH_PROBE_H
#define PSCLUSTER_BENCH_PROBE_H

#include <stdint.h>
#include <time.h>

static inline uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

#endif
