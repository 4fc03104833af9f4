/*
 * cgroup.h - a cgroup v2 directory per job on this node (see cgroup.c): every process of a
 * job is found and killed at its end, and a psid restarted after a crash kills what its
 * predecessor left.
 */
#ifndef PSCLUSTER_PSID_CGROUP_H
#define PSCLUSTER_PSID_CGROUP_H

#include "loop.h"
#include "psproto.h"

#include <stdint.h>

struct cgroups;

/* The base directory of this psid (named after its client socket path), what a dead
 * predecessor left there killed and removed. NULL, said once in the log, where there is no
 * writable cgroup2: then tasks are tracked by process group only. */
struct cgroups *cgroup_open(struct loop *loop, const char *socket_path);
/* Kill what is left in every job directory, remove them and the base. NULL is allowed. */
void cgroup_close(struct cgroups *cg);
/* A job's queued ranks and tasks: +n when queued or started, -n when started, dropped or
 * gone. The first hold makes the job's directory; when the count falls to 0, what is left
 * in it is killed and the directory removed. NULL cg: nothing. */
void cgroup_hold(struct cgroups *cg, uint64_t job, long delta);
/* The job directory's cgroup.procs, open for writing (a child joins by writing "0"), or
 * -1 (no cgroup, or the job holds nothing). Owned by cgroup.c. */
int cgroup_procs_fd(struct cgroups *cg, uint64_t job);

#endif
