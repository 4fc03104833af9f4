/*
 * stats.h - a job's accounting as psrun prints it (--stats, --stats-file): sacct's field
 * names and formats where they match (sacct --parsable2: a header line, '|' between fields).
 *
 *   JobID|JobName|Rank|NodeList|Elapsed|UserCPU|SystemCPU|TotalCPU|MaxRSS|MaxDiskRead|MaxDiskWrite
 *
 * One line per rank (its own usage: getrusage of the task and what it reaped, /proc's
 * rchar and wchar), one per node whose job cgroup had figures (Rank "node": cpu.stat,
 * memory.peak, io.stat; a field the node's kernel did not have is empty, as sacct leaves
 * it), and a last line (Rank "total"): Elapsed the job's from its start to its end, CPU the
 * nodes' cgroups where they had it (every process of the job, also what the ranks left
 * behind) plus the ranks' elsewhere, MaxRSS the largest of all, disk the ranks' sums.
 * Elapsed as sacct's [DD-]HH:MM:SS, CPU times [DD-][HH:]MM:SS.mmm, MaxRSS in KiB with "K",
 * bytes read and written in MiB with "M" and two decimals (sacct's default units).
 */
#ifndef PSCLUSTER_LOGGER_STATS_H
#define PSCLUSTER_LOGGER_STATS_H

#include "job.h"

#include <stdint.h>
#include <stdio.h>

/* sacct's formats */
void lg_fmt_elapsed(uint64_t us, char *out, size_t len); /* 00:00:01, 1-02:03:04 */
void lg_fmt_cpu(uint64_t us, char *out, size_t len);     /* 00:01.003, 01:00:00.000 */
void lg_fmt_kib(uint64_t bytes, char *out, size_t len);  /* 1234K */
void lg_fmt_mib(uint64_t bytes, char *out, size_t len);  /* 10.00M */

/* The table of job j (name: its name; elapsed_us: the job's wall clock) to f. */
void lg_stats_write(FILE *f, const struct lg_job *j, const char *name, uint64_t elapsed_us);

#endif
