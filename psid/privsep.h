/*
 * privsep.h - psid's privilege separation, in the manner of OpenBSD's daemons.
 *
 * psid starts as root, opens its sockets, reads its configuration and the cluster key, and
 * then splits in two (privsep_split):
 *   - the engine: the process that was started (its pid is psid's pid), which takes the
 *     unprivileged identity of psid.user and does everything that parses network input and
 *     client messages: RDP, heartbeats, clients, jobs, the preload's negotiation;
 *   - the privileged child (privparent.c), root, which parses nothing but the engine's
 *     requests on a socketpair and does only what needs root: start a task as its user
 *     (groups, gid, uid; into its job's cgroup), signal the tasks it started and their
 *     process groups, signal a client through a pidfd the engine passes, reap its tasks.
 * A psid that does not run as root splits too, without changing identity, so that there is
 * one code path.
 *
 * What the child believes (as OpenBSD's privileged parents): nothing the engine says about
 * who asked. It starts a task as uid U only on a spawn credential (spawncred.h) that a
 * privileged child of this cluster made and MACed with the spawn key, which only the
 * privileged children hold: derived from the cluster key in the child at the split; the
 * engine keeps only the keys it derived before (RDP's, the heartbeats', the preload's) and
 * wipes the cluster key. The child of the job's home node makes the credential (PRIV_CRED)
 * only after it has checked, with the kernel, the requesting client's connection that the
 * engine passes: a connected socket accepted on psid's own client socket (its path), whose
 * peer (SO_PEERCRED) is uid U with group G and still has it open. The credential binds the
 * job, uid, gid, target node, number of ranks and a digest of the program (arguments,
 * environment, directory, umask); the child that starts a rank checks all of it, its age,
 * and that it has not started more ranks on it than it allows (a replay), and allows only
 * the rank's own variables by name (PSI_RANK, PSI_SIZE, PSI_NODE, PSI_NODENAME, PSI_JOB,
 * PSID_SOCKET, and an MPI job's PMI_RANK, PMI_SIZE, PMI_SPAWNED, PMI_JOBID). The PMI socket
 * of an MPI job's rank (PMI_FD) is the child's own: it makes the pair, puts one end in the
 * task at PMI_FD_NUM and sets PMI_FD itself, and hands the other end to the engine, so no
 * descriptor a client passed can become a task's PMI channel. The CPUs a task is bound to
 * (CPUS) are the engine's choice, not the credential's: a binding restricts where the program
 * runs, never what it runs or as whom, so a lying engine can only place tasks badly (which it
 * can anyway); the child checks that every CPU is one of its own (sched_getaffinity at the
 * split), sets the task's affinity itself before exec and writes PSI_CPUS from what it set. A
 * memory limit is the job's cgroup's memory.max, which the engine writes in the directory it
 * owns: nothing of it passes here. A refusal is logged by the child and
 * answered with EPERM and the reason. The engine gives up the rest after the split (sandbox.c):
 * no_new_privs, no writable file system beyond the client socket's directory and the cgroup base
 * (Landlock), a seccomp filter of the system calls it uses.
 *
 * The wire (both ways on a SOCK_STREAM socketpair): psmsg frames (psmsg.h: a 12-byte
 * header with the length, then tag-length-value fields, every length checked before use),
 * descriptors passed with a frame's first byte (SCM_RIGHTS). The types and tags below are
 * private to the pair; each decoder is fuzzed (test/fuzz/fuzz_privsep.c).
 *
 *   engine -> child                           child -> engine
 *   PRIV_SPAWN {REQ, JOB, RANK, UID, GID,     PRIV_SPAWNED {PID} + fds stdout, stderr
 *     UMASK, CWD?, STDIN, NODE, ARG*, ENV*,     [, stdin] [, psid's end of the PMI
 *     RENV*, CRED, PMI?, CPUS?}: ARG and ENV  socket]; or {ERRNO, TEXT}
 *     only when REQ changes (the child keeps
 *     the last request's), RENV the rank's own
 *   PRIV_CRED {JOB, UID, GID, DIGEST,         PRIV_CRED_ANSWER {ERRNO, CRED* in the order
 *     TARGET+} + the client's socket            of the targets; TEXT when ERRNO}
 *   PRIV_SIGNAL {PID, SIG, GROUP}             PRIV_SIGNALED {ERRNO} (0: sent)
 *   PRIV_RELEASE {PID}: reap it               -
 *   PRIV_SIGNAL_FD {SIG} + a pidfd            -
 *   PRIV_BCAST_OPEN {JOB, UID, GID, DEST,     PRIV_BCAST_OPENED {ERRNO, TEXT?} + the
 *     NODE_IDX, FLAGS, MODE, SIZE, CRED}        temporary file, open for writing
 *   PRIV_BCAST_COMMIT {JOB, MTIME?, ATIME?}   PRIV_BCAST_COMMITTED {ERRNO, TEXT?}
 *   PRIV_BCAST_DROP {JOB | HOME}: remove the  -
 *     copy (or temporary file) of a broadcast,
 *     or of every broadcast of a home node
 *   PRIV_NETNS + a socket a client passed     PRIV_NETNS_ANSWER {ERRNO, SERVED}: whether
 *                                               the socket's network namespace is owned by
 *                                               the child's user namespace (made by root,
 *                                               not in a user's private user namespace)
 *                                             PRIV_EXIT {PID, STATUS, USER_US, SYS_US,
 *                                               MAXRSS, RCHAR, WCHAR} when a task exits (it
 *                                               stays a zombie until PRIV_RELEASE, so its
 *                                               pid and process group are not reused;
 *                                               what is left in its group is killed first)
 * The child answers requests in order; PRIV_EXIT may come between a request and its answer.
 *
 * What a compromised engine can still do (docs/security.md): start tasks as a user whose
 * client is connected to it at the time, on any node, running what it likes (it is the
 * engine's word what the client asked), and write files as that user where the user may
 * (a file broadcast's copy, privbcast.c, on the same kind of credential); signal the tasks this
 * child started and their process groups, and a process by a pidfd it holds (not root's where
 * psid.root_jobs is false); read and forge the cluster's traffic as this node. It cannot start a
 * task as a user who has no connection to it, nor alter or replay another node's credentials, nor
 * write outside its run directory and cgroups, nor execute anything. The engine never gets
 * root back: it cannot signal, trace or reach the child.
 */
#ifndef PSCLUSTER_PSID_PRIVSEP_H
#define PSCLUSTER_PSID_PRIVSEP_H

#include "pscpus.h"
#include "psmsg.h"

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

enum priv_type {
    PRIV_SPAWN = 0x2001,
    PRIV_SPAWNED = 0x2002,
    PRIV_SIGNAL = 0x2003,
    PRIV_SIGNALED = 0x2004,
    PRIV_RELEASE = 0x2005,
    PRIV_SIGNAL_FD = 0x2006,
    PRIV_EXIT = 0x2007,
    PRIV_NETNS = 0x2008,
    PRIV_NETNS_ANSWER = 0x2009,
    PRIV_CRED = 0x200a,
    PRIV_CRED_ANSWER = 0x200b,
    PRIV_BCAST_OPEN = 0x2010, /* file broadcast (privbcast.c) */
    PRIV_BCAST_OPENED = 0x2011,
    PRIV_BCAST_COMMIT = 0x2012,
    PRIV_BCAST_COMMITTED = 0x2013,
    PRIV_BCAST_DROP = 0x2014,
};

enum priv_tag {
    PRIV_F_REQ = 1,     /* u32: the engine's number for a spawn request's argv and env */
    PRIV_F_JOB = 2,     /* u64 */
    PRIV_F_RANK = 3,    /* u32 */
    PRIV_F_UID = 4,     /* u32 */
    PRIV_F_GID = 5,     /* u32 */
    PRIV_F_UMASK = 6,   /* u32, at most 0777 */
    PRIV_F_CWD = 7,     /* string */
    PRIV_F_STDIN = 8,   /* u32: 1 a pipe for stdin, 0 /dev/null */
    PRIV_F_NODE = 9,    /* u32: for PSI_TID */
    PRIV_F_ARG = 10,    /* string, repeated */
    PRIV_F_ENV = 11,    /* string "NAME=VALUE", repeated: the job's */
    PRIV_F_RENV = 12,   /* string "NAME=VALUE", repeated: the rank's own */
    PRIV_F_PID = 13,    /* u32 */
    PRIV_F_SIG = 14,    /* u32 */
    PRIV_F_GROUP = 15,  /* u32: 1 the process group, 0 the task */
    PRIV_F_ERRNO = 16,  /* u32 */
    PRIV_F_TEXT = 17,   /* string */
    PRIV_F_STATUS = 18, /* u32: a wait(2) status */
    PRIV_F_SERVED = 19, /* u32: 1 the network namespace is one psid serves */
    PRIV_F_CRED = 20,   /* bytes (SPAWNCRED_LEN): a spawn credential (spawncred.h) */
    PRIV_F_DIGEST = 21, /* bytes (32): the digest of the program (spawncred_hash) */
    PRIV_F_TARGET = 22, /* bytes (8): u32 node, u32 ranks there (> 0), big-endian */
    PRIV_F_PMI = 23,    /* u32: 1 a PMI socket for the task (PMI_FD), 0 or absent none */
    /* bytes (1..PSCPU_BYTES, pscpus.h): the CPUs the task is bound to (sched_setaffinity
     * before exec; PSI_CPUS), each one the child's own; absent: not bound */
    PRIV_F_CPUS = 24,
    /* PRIV_EXIT: the task's usage, u64 (getrusage of the zombie and its reaped children,
     * /proc/PID/io) */
    PRIV_F_USER_US = 25,
    PRIV_F_SYS_US = 26,
    PRIV_F_MAXRSS = 27, /* bytes */
    PRIV_F_RCHAR = 28,  /* bytes read (read(2) and the like) */
    PRIV_F_WCHAR = 29,  /* bytes written */
    /* --output-on-node: the task's stdout and stderr go to files the child names from these
     * patterns (logger/outfile.h, checked: lg_pat_check) and opens as the user; the patterns,
     * APPEND and JOB_NAME are in the credential's digest (spawncred_hash_out); NODE_IDX is
     * the engine's (%n) */
    PRIV_F_OUT_PAT = 30,  /* string */
    PRIV_F_ERR_PAT = 31,  /* string */
    PRIV_F_APPEND = 32,   /* u32 0 or 1 */
    PRIV_F_NODE_IDX = 33, /* u32 */
    PRIV_F_JOB_NAME = 34, /* string, at most 63 bytes */
    /* u32 1: ARG's first is a pattern (logger/outfile.h; psrun --bcast's copy), expanded here
     * as an output file's; in the credential's digest (spawncred_hash_arg0_pattern) */
    PRIV_F_ARG0_PAT = 35,
    /* file broadcast (privbcast.c): PRIV_F_JOB is the broadcast's id */
    PRIV_F_DEST = 40,  /* string: the destination pattern (bcastwire.h: bcast_dest_check) */
    PRIV_F_FLAGS = 41, /* u32: PSBCAST_F_* */
    PRIV_F_MODE = 42,  /* u32: permission bits, & 0777 */
    PRIV_F_SIZE = 43,  /* u64: bytes */
    PRIV_F_MTIME = 44, /* u64: CLOCK_REALTIME ns (PSBCAST_F_PRESERVE) */
    PRIV_F_ATIME = 45,
    PRIV_F_HOME = 46, /* u32: PRIV_BCAST_DROP of every broadcast of this home node */
};

#define PRIV_MAX_FDS     4
#define PRIV_MAX_ARGS    65536 /* ARG, ENV and RENV fields of one request */
#define PRIV_MAX_RENV    64    /* RENV fields: the rank's own variables */
#define PRIV_MAX_TARGETS 4096  /* TARGETs of a PRIV_CRED: its answer fits PSMSG_MAX */

/* Frames on the socketpair. priv_send: 0 or -1 with errno (the whole frame is written,
 * with fds[0..nfds) passed along). priv_recv: a whole frame into *buf (malloc'd, the
 * caller frees), its descriptors into fds (up to PRIV_MAX_FDS, *nfds set, the rest
 * closed); 0, or -1 at EOF (errno 0) or on an error, or with EBADMSG for a frame that is
 * not a psmsg (then nothing is kept). Both block. */
int priv_send(int fd, const struct psmsg_buf *b, const int *fds, int nfds);
int priv_recv(int fd, uint8_t **buf, struct psmsg *m, int *fds, int *nfds);

/* A decoded PRIV_SPAWN (pointers into the message, valid while it lives). */
struct priv_spawn {
    uint32_t req, rank, uid, gid, umask, want_stdin, node, want_pmi;
    uint64_t job;
    const char *cwd; /* NULL: none given */
    char cwd_buf[4096];
    size_t nargv, nenv, nrenv; /* counts of ARG, ENV, RENV fields */
    const uint8_t *cred;       /* CRED's bytes, NULL: none */
    size_t credlen;
    bool bind; /* CPUS came: cpus is the set (not empty) */
    struct pscpuset cpus;
    const char *out_pat, *err_pat; /* NULL: none (pointing into the buffers) */
    char out_buf[1024], err_buf[1024];
    uint32_t append, nodeidx;
    char name[64];
    uint32_t arg0_pat; /* 1: argv[0] is a pattern */
};
/* Validate a PRIV_SPAWN: every required field present and in range, strings without NUL,
 * at most PRIV_MAX_ARGS of ARG, ENV, RENV; an ENV or RENV has a '='. 0, or -1 with a
 * reason in why. */
int priv_decode_spawn(const struct psmsg *m, struct priv_spawn *s, char *why, size_t whylen);

/* A decoded PRIV_CRED; the targets are read with priv_cred_target. */
struct priv_cred {
    uint64_t job;
    uint32_t uid, gid;
    uint8_t digest[32];
    size_t ntargets;
};
/* Validate a PRIV_CRED: JOB, UID, GID, a DIGEST of 32 bytes, 1 to PRIV_MAX_TARGETS TARGET
 * fields of 8 bytes each with ranks > 0. 0, or -1 with a reason in why. */
int priv_decode_cred(const struct psmsg *m, struct priv_cred *c, char *why, size_t whylen);
/* The next TARGET of a decoded PRIV_CRED from *pos (0 at first): 1 with node and ranks, 0 at
 * the end. */
int priv_cred_target(const struct psmsg *m, size_t *pos, uint32_t *node, uint32_t *ranks);

/* A decoded PRIV_BCAST_OPEN (cred points into the message). */
struct priv_bcast_open {
    uint64_t id, size;
    uint32_t uid, gid, nodeidx, flags, mode;
    char dest[1024]; /* PSBCAST_DEST_MAX */
    const uint8_t *cred;
    size_t credlen;
};
/* Validate a PRIV_BCAST_OPEN: every field present, uid and gid not -1, a destination that
 * bcast_dest_check takes, flags within PSBCAST_F_ALL, mode within 0777. 0, or -1 with why. */
int priv_decode_bcast_open(const struct psmsg *m, struct priv_bcast_open *o, char *why,
                           size_t whylen);

/* The rank's own variables the privileged child allows (RENV): whether s (NAME=VALUE, n
 * bytes) is one of them. */
int priv_renv_allowed(const char *s, size_t n);

/* The privileged child's side (privparent.c): serve the engine on fd until it closes it
 * or dies; then end every task still there, and clean up (the cgroup base, the client
 * socket path). Returns the exit status for the child. cfg is not const: the key in it is
 * wiped at the end. */
struct cgroups;
struct privparent_cfg {
    int fd;                /* the child's end of the socketpair */
    struct cgroups *cg;    /* NULL: no cgroups */
    const char *sock_path; /* the client socket, removed at the end; requests come on it */
    bool root_jobs;        /* may start tasks as root */
    const char *ident;     /* for the log */
    uint32_t node;         /* this node's id: the credentials it makes and takes */
    const char *node_name; /* its name (%N of an output file the child opens) */
    uint8_t spawn_key[32]; /* spawncred_key; wiped by privparent_run when it ends */
};
int privparent_run(struct privparent_cfg *cfg);

#endif
