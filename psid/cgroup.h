/*
 * cgroup.h - a cgroup v2 directory per job on this node (see cgroup.c): every process of a
 * job is found and killed at its end, and a psid restarted after a crash kills what its
 * predecessor left.
 */
#ifndef PSCLUSTER_PSID_CGROUP_H
#define PSCLUSTER_PSID_CGROUP_H

#include "psloop.h"
#include "psproto.h"

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct cgroups;

/* The base directory of this psid (named after its client socket path), what a dead
 * predecessor left there killed and removed. NULL, said once in the log, where there is no
 * writable cgroup2: then tasks are tracked by process group only. */
struct cgroups *cgroup_open(struct loop *loop, const char *socket_path);
/* Kill what is left in every job directory, remove them and the base. NULL is allowed. */
void cgroup_close(struct cgroups *cg);
/* Privilege separation (privsep.h): the engine makes and kills in the job directories, so
 * the base becomes its own; the privileged child keeps the base descriptor (a new number
 * after it closes the rest) and opens a job's cgroup.procs for each task it starts (-1: no
 * cgroups or no such directory; the caller closes it). */
int cgroup_give(struct cgroups *cg, uid_t uid, gid_t gid);
int cgroup_base_fd(const struct cgroups *cg);
const char *cgroup_base_path(const struct cgroups *cg); /* NULL: no cgroups */
void cgroup_set_base_fd(struct cgroups *cg, int fd);
int cgroup_open_procs(const struct cgroups *cg, uint64_t job);
/* The same for the cgroup v1 memory base of --mem on a hybrid hierarchy (memcg1.h): -1 and
 * NULL where there is none; a job without --mem has no directory there (-1). */
int cgroup_mem1_fd(const struct cgroups *cg);
const char *cgroup_mem1_path(const struct cgroups *cg);
void cgroup_set_mem1_fd(struct cgroups *cg, int fd);
int cgroup_open_mem1_procs(const struct cgroups *cg, uint64_t job);
/* A job's queued ranks and tasks: +n when queued or started, -n when started, dropped or
 * gone. The first hold makes the job's directory; when the count falls to 0, what is left
 * in it is killed and the directory removed. NULL cg: nothing. */
void cgroup_hold(struct cgroups *cg, uint64_t job, long delta);
/* A job's tasks whose own process runs: +1 when one starts, -1 when it exits. When none is
 * left running, whatever is still in the job's directory is killed (what the tasks left
 * behind); the count left is returned. A job without a hold, or NULL cg: nothing, 0. */
long cgroup_running(struct cgroups *cg, uint64_t job, long delta);

/* --mem: the job's memory.max here (bytes), or its v1 memory.limit_in_bytes on a hybrid
 * hierarchy. The base gets the memory controller for its job directories when the kernel
 * lets it (cgroup.c). 0, or -1 with why (no cgroups, no memory controller for psid's
 * cgroup, the write refused). */
int cgroup_set_mem(struct cgroups *cg, uint64_t job, uint64_t bytes, char *why, size_t whylen);
/* The job's memory.max here, 0 if none was set. */
uint64_t cgroup_mem(struct cgroups *cg, uint64_t job);
/* OOM kills in the job's directory not counted before (memory.events oom_kill): their number,
 * now counted. */
uint64_t cgroup_new_oom_kills(struct cgroups *cg, uint64_t job);
/* The job's usage here from its directory: what the kernel has of cpu.stat (user_usec,
 * system_usec), memory.peak and io.stat (rbytes, wbytes summed over the devices). have: a bit
 * per field found (CG_HAVE_*). 0, or -1 (no directory). */
enum { CG_HAVE_CPU = 1, CG_HAVE_PEAK = 2, CG_HAVE_IO = 4 };
struct cg_usage {
    unsigned have;
    uint64_t user_us, sys_us, peak, rbytes, wbytes;
};
int cgroup_usage(struct cgroups *cg, uint64_t job, struct cg_usage *u);

/* Gang scheduling (gang.c): write the job directory's cgroup.freeze (1 freeze, 0 thaw; the
 * engine owns the directories, cgroup_give). 0, or -1 (no cgroups, no directory, no
 * freezer: the write failed). */
int cgroup_freeze(struct cgroups *cg, uint64_t job, bool freeze);
/* The job directory's cgroup.events, opened to wait for its "frozen" line (-1: no cgroups,
 * no such job or directory). The kernel marks it modified for each reader (POLLPRI,
 * EPOLLPRI) when a line changes; cgroup_events_frozen reads it anew, which clears the
 * mark. The caller closes it. */
int cgroup_events_open(struct cgroups *cg, uint64_t job);
/* The state in an open cgroup.events: 1 "frozen 1", 0 "frozen 0", -1 unknown (no freezer,
 * the directory gone); *changed: the kernel had marked it modified since the last read
 * (NULL: not asked). */
int cgroup_events_frozen(int fd, bool *changed);

#endif
