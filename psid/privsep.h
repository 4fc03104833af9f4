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
 * The wire (both ways on a SOCK_STREAM socketpair): psmsg frames (psmsg.h: a 12-byte
 * header with the length, then tag-length-value fields, every length checked before use),
 * descriptors passed with a frame's first byte (SCM_RIGHTS). The types and tags below are
 * private to the pair; each decoder is fuzzed (test/fuzz/fuzz_privsep.c).
 *
 *   engine -> child                           child -> engine
 *   PRIV_SPAWN {REQ, JOB, RANK, UID, GID,     PRIV_SPAWNED {PID} + fds stdout, stderr
 *     UMASK, CWD?, STDIN, NODE, ARG*, ENV*,     [, stdin]; or {ERRNO, TEXT}
 *     RENV*}: ARG and ENV only when REQ
 *     changes (the child keeps the last
 *     request's), RENV the rank's own
 *   PRIV_SIGNAL {PID, SIG, GROUP}             PRIV_SIGNALED {ERRNO} (0: sent)
 *   PRIV_RELEASE {PID}: reap it               -
 *   PRIV_SIGNAL_FD {SIG} + a pidfd            -
 *   PRIV_NETNS + a socket a client passed     PRIV_NETNS_ANSWER {ERRNO, SERVED}: whether
 *                                               the socket's network namespace is owned by
 *                                               the child's user namespace (made by root,
 *                                               not in a user's private user namespace)
 *                                             PRIV_EXIT {PID, STATUS} when a task exits (it
 *                                               stays a zombie until PRIV_RELEASE, so its
 *                                               pid and process group are not reused)
 * The child answers requests in order; PRIV_EXIT may come between a request and its answer.
 *
 * What the child trusts: the engine's word on who a task runs as. A compromised engine may
 * start tasks as any user psid serves; with psid.root_jobs = false it can start none as
 * root or with group root, and the child signals only its own tasks (and pidfds of
 * processes that are not root). The engine never gets root back: it cannot signal, trace
 * or reach the child.
 */
#ifndef PSCLUSTER_PSID_PRIVSEP_H
#define PSCLUSTER_PSID_PRIVSEP_H

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
    PRIV_F_SERVED = 19  /* u32: 1 the network namespace is one psid serves */
};

#define PRIV_MAX_FDS  3
#define PRIV_MAX_ARGS 65536 /* ARG, ENV and RENV fields of one request */
#define PRIV_MAX_RENV 64    /* RENV fields: the rank's own variables */

/* Frames on the socketpair. priv_send: 0 or -1 with errno (the whole frame is written,
 * with fds[0..nfds) passed along). priv_recv: a whole frame into *buf (malloc'd, the
 * caller frees), its descriptors into fds (up to PRIV_MAX_FDS, *nfds set, the rest
 * closed); 0, or -1 at EOF (errno 0) or on an error, or with EBADMSG for a frame that is
 * not a psmsg (then nothing is kept). Both block. */
int priv_send(int fd, const struct psmsg_buf *b, const int *fds, int nfds);
int priv_recv(int fd, uint8_t **buf, struct psmsg *m, int *fds, int *nfds);

/* A decoded PRIV_SPAWN (pointers into the message, valid while it lives). */
struct priv_spawn {
    uint32_t req, rank, uid, gid, umask, want_stdin, node;
    uint64_t job;
    const char *cwd; /* NULL: none given */
    char cwd_buf[4096];
    size_t nargv, nenv, nrenv; /* counts of ARG, ENV, RENV fields */
};
/* Validate a PRIV_SPAWN: every required field present and in range, strings without NUL,
 * at most PRIV_MAX_ARGS of ARG, ENV, RENV; an ENV or RENV has a '='. 0, or -1 with a
 * reason in why. */
int priv_decode_spawn(const struct psmsg *m, struct priv_spawn *s, char *why, size_t whylen);

/* The privileged child's side (privparent.c): serve the engine on fd until it closes it
 * or dies; then end every task still there, and clean up (the cgroup base, the client
 * socket path). Returns the exit status for the child. */
struct cgroups;
struct privparent_cfg {
    int fd;                /* the child's end of the socketpair */
    struct cgroups *cg;    /* NULL: no cgroups */
    const char *sock_path; /* the client socket, removed at the end */
    bool root_jobs;        /* may start tasks as root */
    const char *ident;     /* for the log */
};
int privparent_run(const struct privparent_cfg *cfg);

#endif
