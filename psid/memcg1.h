/*
 * memcg1.h - --mem through the cgroup v1 memory controller, where psid's cgroup v2 has no
 * memory controller (a hybrid hierarchy: systemd's legacy layouts, some VMs and
 * containers), as Slurm's cgroup/v1 plugin does it. cgroup.c uses it; see memcg1.c.
 */
#ifndef PSCLUSTER_PSID_MEMCG1_H
#define PSCLUSTER_PSID_MEMCG1_H

#include <stdint.h>
#include <sys/types.h>

struct memcg1;

/* The base directory of this psid under its own v1 memory cgroup (named after base_name,
 * the v2 base's name), what a dead predecessor left there removed. NULL where there is no
 * writable v1 memory hierarchy (then *why says why; nothing is logged). */
struct memcg1 *memcg1_open(const char *base_name, const char **why);
/* Remove the job directories (their processes are gone: cgroup.c killed them) and the base. */
void memcg1_close(struct memcg1 *m);
const char *memcg1_path(const struct memcg1 *m);
/* Privilege separation, as cgroup.h's: the engine owns the base, the privileged child keeps
 * its descriptor under a new number. */
int memcg1_give(struct memcg1 *m, uid_t uid, gid_t gid);
int memcg1_fd(const struct memcg1 *m);
void memcg1_set_fd(struct memcg1 *m, int fd);
/* Job directory name: made (if it is not there), memory.limit_in_bytes and, where swap is
 * accounted, memory.memsw.limit_in_bytes set to bytes (no swap beyond the limit). 0, or -1
 * with why. */
int memcg1_set(struct memcg1 *m, const char *name, uint64_t bytes, char *why, size_t whylen);
/* name's cgroup.procs for writing (a task joins it before it takes its user's identity), or
 * -1 (no such directory: the job has no --mem). */
int memcg1_open_procs(const struct memcg1 *m, const char *name);
/* name's OOM kills so far (memory.oom_control's oom_kill) and its peak
 * (memory.max_usage_in_bytes): 0, or -1. */
int memcg1_oom_kills(const struct memcg1 *m, const char *name, uint64_t *n);
int memcg1_peak(const struct memcg1 *m, const char *name, uint64_t *peak);
/* rmdir name: 0 (removed or never made), or the errno (EBUSY while processes die). */
int memcg1_remove(struct memcg1 *m, const char *name);

#endif
