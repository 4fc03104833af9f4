/*
 * daemon.h - the state of one psid, passed to every module (no hidden globals):
 *
 *   main.c        command line, configuration, start-up and shutdown
 *   (the event loop: loop/loop.c, include/psloop.h, shared with rdpbench)
 *   selfnode.c    which configured node this machine is (interface addresses, libnl)
 *   hbwire.c      the heartbeat packet: encoding, MAC, validating decoding
 *   membership.c  heartbeats, the node table, declaring nodes unreachable and down
 *   rdplink.c     the RDP endpoint to the other daemons and the dispatch of their messages;
 *                 its counters for psstat rdp
 *   client.c      the UNIX socket for local clients: framing, SO_PEERCRED, requests
 *   send.c        sending daemon messages: to self directly, to others over RDP, with a
 *                 per-node backlog while RDP's queue is full
 *   placement.c   which nodes a job's ranks go to (least loaded first)
 *   jobs.c        the home side of a job: spawn fan-out, results, output and exits to the
 *                 client, the client going away, nodes being lost
 *   privcall.c    privilege separation, the engine's side: the split, and its requests to
 *                 the privileged child (vouch for a job's user; start, signal, reap tasks)
 *   privparent.c  the privileged child: the only part that keeps root
 *   privwire.c    the frames between the two, and the decoders of its requests
 *   spawncred.c   the spawn credential: the evidence a task is started on (munge's model)
 *   sandbox.c     what the engine gives up after the split: no_new_privs, Landlock, seccomp
 *   spawn.c       fork and exec of one task as its user, with its pipes
 *   cgroup.c      a cgroup v2 directory per job: every process of it killed at its end,
 *                 what a crashed predecessor left killed at start
 *   memcg1.c      --mem through the cgroup v1 memory controller on a hybrid hierarchy
 *   spawnq.c      the spawn queue: requests checked (permission, the uid's task limit),
 *                 their ranks started in bounded batches between the loop's other work
 *   tasks.c       the tasks of this node: table, output with flow control, input, exits
 *   signals.c     signals by task id or job, routed to the node that checks and acts
 *   notify.c      death notifications: registrations on both sides, firing, node loss
 *   preload.c     the preload library's negotiation: endpoints, listening ports, the
 *                 decision per TCP connection, pair keys
 *   plquery.c     psstat sockets: the node's library processes asked, one round at a time
 *   sockinfo.c    what the kernel says of a socket a client passed (its cookie, network
 *                 namespace, addresses) and sock_diag's exact lookups
 *   shmchan.c     the shared memory and doorbells of a same-node connection
 */
#ifndef PSCLUSTER_PSID_DAEMON_H
#define PSCLUSTER_PSID_DAEMON_H

#include "jobqueue.h"
#include "module.h"
#include "psloop.h"
#include "psconf.h"
#include "pscpus.h"
#include "psproto.h"
#include "rdp.h"
#include "spawncred.h"

#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* What this daemon knows about one node of the configuration. */
struct psid_node {
    const struct psconf_node *conf;
    enum psnode_state state;
    uint64_t incarnation; /* 0: never heard from */
    uint64_t last_seq;    /* of its heartbeats, against replay */
    uint64_t last_heard;  /* loop_now() of its last heartbeat */
    uint32_t load_milli, cpus;
    uint32_t used;       /* CPUs its tasks hold: each task counts its -c (1 without) */
    uint32_t inflight;   /* CPUs of ranks placed there whose start is not confirmed yet */
    uint32_t task_epoch; /* of the newest task count taken (heartbeat or RDP) */
    /* PSNODE_UNREACHABLE: since when (loop_now()), and whether RDP's silence (not the
     * heartbeats') put it there; down at unreachable_since + heartbeat.down_grace_ms */
    uint64_t unreachable_since;
    bool unreachable_rdp;
    /* RDP's progress toward it: its packets received, and when they last changed while
     * messages waited for it (membership.c rdp_silent) */
    uint64_t rdp_pkts_recv, rdp_progress;
    /* it went down and this node dropped its RDP connection: once it is heard again with
     * the same incarnation it still holds its side; a PSM_D_HELLO opens a new connection,
     * which shows it that its side is gone (RDP_LOST_RESTART there) */
    bool hello_due;
};

/* Why a heartbeat was dropped (membership.c counts them; hb_drop_name names them). */
enum hb_drop {
    HB_DROP_MALFORMED, /* length, version, type, reserved bits */
    HB_DROP_MAC,
    HB_DROP_UNKNOWN, /* not a configured node, or this node itself */
    HB_DROP_ADDRESS, /* not from the node's configured address */
    HB_DROP_STALE,   /* an older incarnation, or a seq already seen: a replay */
    HB_DROP__COUNT
};

struct clients;
struct client;
struct task;
struct job;
struct psmsg;
struct psmsg_buf;
struct backlog;
struct notify;
struct preload;
struct spawnq;
struct cgroups;
struct privcall;
struct spawned;
struct pmijob;
struct binding;
struct doneq;
struct gang;
struct bcast;

struct swim; /* swim.h */

struct psid {
    struct psconf conf;
    const struct psconf_node *self;
    uint64_t incarnation; /* CLOCK_REALTIME ns at start */
    struct loop *loop;
    rdp_t *rdp;
    struct psid_node *nodes; /* parallel to conf.nodes */
    int hb_fd;
    bool hb_multicast;
    uint64_t hb_seq;
    uint64_t hb_next;                   /* when the next heartbeat is due */
    uint64_t hb_sent, hb_recv;          /* membership packets, every mode (logged at leave) */
    uint64_t hb_start;                  /* loop_now() at membership_start */
    struct swim *swim;                  /* heartbeat.mode "swim": the SWIM state machine (swim.c) */
    uint64_t swim_timer, swim_timer_at; /* the loop timer for swim_tick, when it is set */
    uint8_t hb_key[32];                 /* derived from the cluster key (hbwire.h) */
    uint8_t pl_key[32]; /* the preload's pair keys are derived from it (preload_key) */
    uint64_t hb_drops[HB_DROP__COUNT]; /* heartbeats dropped, by reason (membership.c) */
    uint64_t rdp_silent_ns;            /* RDP unanswered this long: unreachable (rdplink.c) */
    struct clients *clients;
    int sig_fd;
    bool stopping;
    struct backlog *backlog; /* per node: daemon messages waiting for RDP's queue */
    struct spawnq *spawnq;   /* spawn requests whose ranks wait to start (spawnq.c) */
    struct spawntree *tree;  /* launch-tree jobs whose subtree's answers are awaited here */
    uint64_t tree_dropped;   /* launch-tree messages dropped: malformed or forged */
    uint64_t bcast_dropped;  /* file broadcast messages dropped: malformed or out of place */
    uint64_t excl_job;       /* the job that asked for this node alone (--exclusive); 0: none */
    struct cgroups *cgroups; /* a cgroup per job (cgroup.c); NULL: process groups only */
    struct privcall *priv;   /* the pair to the privileged child (privcall.c) */
    bool priv_root;          /* the privileged child is root: tasks run as their users */
    uid_t own_uid;           /* psid's uid at start */
    uid_t engine_uid;        /* psid.user's, when psid started as root */
    gid_t engine_gid;
    int exit_code;       /* 1 if the engine stopped on an error */
    struct task **tasks; /* hash table of this node's tasks, by tid */
    size_t ntasks;
    uint64_t cpus_used;      /* what this node's tasks hold: the sum of their -c */
    struct job *jobs;        /* jobs whose client is on this node */
    uint32_t next_req;       /* numbers daemon requests (PSF_REQ) */
    uint32_t next_job;       /* the next job number (jobs.c new_job_id) */
    uint32_t task_epoch;     /* changes of this node's task table */
    struct pending *pending; /* daemon requests waiting for answers */
    struct notify *notify;   /* death notifications, both sides */
    struct preload *preload; /* preload endpoints, listeners, negotiations */
    struct modtab modtab;    /* what each module handles (module.c) */
    struct pmijob *pmi;      /* MPI jobs' PMI state on this node (pmi.c) */
    struct binding *binding; /* this node's CPUs and the tasks bound to them (binding.c) */
    struct doneq *done;      /* the last jobs that ended here (jobs.c, psstat jobs --done) */
    struct gang *gang;       /* gang scheduling (gang.c); NULL: off */
    struct bcast *bcast;     /* file broadcasts under way or awaiting removal (bcast.c) */
    struct jobq jobq;        /* spawns waiting for a row of the gang matrix (jobs.c) */
    uint64_t jobq_timer;     /* retries the queue's head each quantum while it is not empty */
};

/* A request to other daemons that waits for their answers (signals, task lists). */
struct pending {
    uint32_t req;
    struct client *client;
    uint32_t client_id; /* the client's request id */
    uint16_t type;      /* PSM_D_SIGNAL or PSM_D_TASKS */
    unsigned waiting;   /* answers still to come */
    int err;            /* first error */
    uint32_t count;
    struct psmsg_buf *acc; /* accumulated reply (task lists) */
    uint64_t timer;
    struct psid *d;
    struct pending *next;
};

/* client.c. A send only queues (written by the loop's before-wait hook): it runs no request
 * and frees nothing, so it may be called anywhere, also while a module walks its lists. */
void client_send(struct client *c, struct psmsg_buf *b);
/* client_send with descriptors fds[0..n) passed along with the message's first byte
 * (SCM_RIGHTS; the client takes them with psi_take_fd, in this order). psid passes
 * duplicates, closed once sent or with the client: the caller keeps and closes its own.
 * n is at most CLIENT_OUT_FDS; at most 64 messages with descriptors (client.c's
 * CLIENT_OUT_SETS) wait unsent for a client. 0 once queued (the client may still go before
 * it reads them); -1 and errno, nothing queued: EPIPE (the client is gone or closing),
 * ENOBUFS (too many such messages wait), EINVAL (n too large), EMFILE (no duplicate). */
#define CLIENT_OUT_FDS 4
int client_send_fds(struct client *c, struct psmsg_buf *b, const int *fds, unsigned n);
/* Whether a message of about len bytes with descriptors can be queued for c now (a set
 * free and its bytes within c's limit); when not, c is marked, and preload_client_drained
 * is called once sets are free again. */
bool client_fds_room(struct client *c, size_t len);
/* Two messages with descriptors to two clients (or twice to one: a process that is both
 * ends), both or neither (the two ends of one channel: one end alone would be a channel
 * nobody reads): 0 once both are queued; -1 and
 * errno, nothing queued: ENOBUFS (either has no room, see client_fds_room), EMFILE, EINVAL. */
int client_send_fds_pair(struct client *a, struct psmsg_buf *ba, const int *fa, unsigned na,
                         struct client *b, struct psmsg_buf *bb, const int *fb, unsigned nb);
void client_error(struct client *c, uint32_t id, int err, const char *text);
uint32_t client_uid(const struct client *c);
pid_t client_pid(const struct client *c); /* SO_PEERCRED's */
/* The descriptor passed with the request being handled (SCM_RIGHTS, psi_call_fd), now the
 * caller's to close; -1 if none came with it. */
int client_take_fd(struct client *c);
/* The client's connection: the evidence the privileged child checks (priv_cred). */
int client_fd(const struct client *c);
uint32_t client_gid(const struct client *c);
uint64_t client_tid(const struct client *c);
void client_signal(struct client *c, int sig);
/* Close the client once what is queued for it is sent (a protocol violation). */
void client_drop(struct client *c);
/* Job output may wait for the client: PSI_IO_WINDOW per rank of its job (jobs.c). */
uint32_t jobs_client_ranks(struct psid *d, const struct client *c);

/* send.c: a finished message (psmsg_end) to a node; to self it is dispatched at once. */
int psid_send(struct psid *d, uint32_t node, struct psmsg_buf *b);
void psid_dispatch(struct psid *d, uint32_t from, const struct psmsg *m);
void send_can_continue(struct psid *d, uint32_t node);
void send_node_lost(struct psid *d, uint32_t node);
void send_free(struct psid *d);

/* jobs.c */
void jobs_spawn(struct psid *d, struct client *c, const struct psmsg *m);
void jobs_client_gone(struct psid *d, struct client *c);
/* Whether the client holds state in the module (a job, a notification, a pending request,
 * a preload endpoint): such a client is never closed for being idle. */
bool jobs_client_busy(struct psid *d, const struct client *c);
bool notify_client_busy(struct psid *d, const struct client *c);
bool pending_client_busy(struct psid *d, const struct client *c);
bool preload_client_busy(struct psid *d, const struct client *c);
void jobs_io_ack(struct psid *d, struct client *c, const struct psmsg *m);
void jobs_input(struct psid *d, struct client *c, const struct psmsg *m);
void jobs_from_daemon(struct psid *d, uint32_t from, const struct psmsg *m);
void jobs_node_lost(struct psid *d, uint32_t node);
struct job *jobs_find(struct psid *d, uint64_t id);

/* tasks.c */
void tasks_from_daemon(struct psid *d, uint32_t from, const struct psmsg *m);
void tasks_home_lost(struct psid *d, uint32_t node);
void tasks_stop_all(struct psid *d);
int tasks_signal_one(struct psid *d, uint64_t tid, int sig, uint32_t uid);
int tasks_signal_job(struct psid *d, uint64_t job, int sig, uint32_t uid, uint32_t *count);
void tasks_append_records(struct psid *d, struct psmsg_buf *b);
int tasks_uid(struct psid *d, uint64_t tid, uint32_t *uid);
/* A task the spawn queue started: into the table, its exit and output watched; it holds
 * cpt CPUs of the node in placement (its job's -c). Its tid, or 0 out of memory (then the
 * task is killed and its descriptors closed). */
uint64_t tasks_add(struct psid *d, const struct spawned *s, uint64_t job, uint32_t rank,
                   uint32_t home, uint32_t uid, uint32_t cpt, const char *cmd);
size_t tasks_of_uid(struct psid *d, uint32_t uid); /* in the table, exited or not */
/* Tasks in the table of job (other: of every job but job). */
size_t tasks_of_job(struct psid *d, uint64_t job, bool other);
/* fn for every task in the table whose own process has not exited, with the CPUs it holds
 * in placement (its -c) (gang.c). */
void tasks_each(struct psid *d, void (*fn)(void *ctx, uint64_t job, pid_t pid, uint32_t cpt),
                void *ctx);
/* The job name (-J) of task tid, for psstat tasks. */
void tasks_set_name(struct psid *d, uint64_t tid, const char *name);
/* Task tid is bound to s (binding.c): held until it leaves the table. */
void tasks_set_cpus(struct psid *d, uint64_t tid, const struct pscpuset *s);
/* This node's task count and its epoch, for a rank or exit report to a home node. */
void tasks_put_count(struct psid *d, struct psmsg_buf *b);

/* privcall.c: psid's privilege separation, the engine's side (privsep.h) */
struct priv_spawn_req {
    uint32_t req; /* the same for every rank of one spawn request */
    uint64_t job;
    uint32_t rank, uid, gid, umask;
    const char *cwd;
    bool want_stdin;
    char *const *argv, *const *envp; /* the job's */
    char *const *renv;               /* the rank's own variables */
    const uint8_t *cred;             /* the job's spawn credential for this node */
    size_t credlen;
    bool want_pmi; /* a PMI socket: the child's end in the task (PMI_FD), ours in *s */
    const struct pscpuset *cpus; /* bind the task to these CPUs; NULL: not bound */
    /* --output-on-node: the patterns of its output files (NULL: none), the open mode, the
     * node's index among the job's, the job's name */
    const char *out_pat, *err_pat;
    bool append;
    uint32_t nodeidx;
    const char *name;
    bool arg0_pat; /* argv[0] is a pattern (psrun --bcast's copy), expanded by the child */
};
/* What a job's spawn credentials are asked for (spawncred.h): one per target node. */
struct priv_cred_req {
    uint64_t job;
    uint32_t uid, gid;
    uint8_t digest[32];
    const uint32_t *nodes, *nranks; /* n targets and their ranks */
    size_t n;
};
/* Before detaching: who the engine becomes (psid.user), if psid runs as root. 0, or -1
 * with a message. */
int privsep_prepare(struct psid *d, char *err, size_t errlen);
/* After detaching: fork the privileged child, take psid.user's identity, watch the pair. */
int privsep_split(struct psid *d, const char *sock_path, const char *ident, bool use_syslog,
                  char **argv); /* argv: main's, for the child's title */
void privsep_stop(struct psid *d);
/* The privileged child vouches for a job's user, whose request came on the client socket
 * sock: creds[i] for nodes[i]. 0, or -1 with errno and why (EPERM: the kernel says the
 * connection is not that user's). */
int priv_cred(struct psid *d, int sock, const struct priv_cred_req *r,
              uint8_t (*creds)[SPAWNCRED_LEN], char *why, size_t whylen);
/* Start a task: 0 with *s (pid, pipes; no pidfd), or -1 with *err and why. */
int priv_spawn(struct psid *d, const struct priv_spawn_req *r, struct spawned *s, int *err,
               char *why, size_t whylen);
/* Signal a task (or its process group) this node started: 0 or kill(2)'s errno. */
int priv_signal(struct psid *d, pid_t pid, int sig, bool group);
void priv_release(struct psid *d, pid_t pid);            /* reap it (killed first if alive) */
void priv_signal_fd(struct psid *d, int pidfd, int sig); /* a client that asked for it */
/* Whether the network namespace of sock (a socket a client passed) is one psid serves: owned
 * by the privileged child's user namespace (made by root). 1 yes, 0 no, -1 and errno when
 * the child cannot say (EPERM: psid does not run as root). */
int priv_netns(struct psid *d, int sock);
/* A file broadcast's copy on this node (privbcast.c): the child checks the credential, opens
 * a temporary file beside the destination as the user, and passes it: 0 with *fd, or -1
 * with errno and why. */
struct priv_bcast_req {
    uint64_t id, size;
    uint32_t uid, gid, nodeidx, flags, mode;
    const char *dest;
    const uint8_t *cred;
    size_t credlen;
};
int priv_bcast_open(struct psid *d, const struct priv_bcast_req *r, int *fd, char *why,
                    size_t whylen);
/* Put the copy of broadcast id in place (mode, times with mtime or atime, rename): 0, or -1
 * with errno and why (the temporary file is gone then). */
int priv_bcast_commit(struct psid *d, uint64_t id, uint64_t mtime, uint64_t atime, char *why,
                      size_t whylen);
/* Remove the copy (or temporary file) of broadcast id; id 0: of every broadcast of home. */
void priv_bcast_drop(struct psid *d, uint64_t id, uint32_t home);
/* A task's usage at its exit, from the privileged child (PRIV_EXIT). */
struct task_usage {
    uint64_t user_us, sys_us, maxrss, rchar, wchar;
};
/* The privileged child's PRIV_EXIT (tasks.c). */
void tasks_exited(struct psid *d, pid_t pid, uint32_t status, const struct task_usage *u);

/* spawnq.c */
void spawnq_request(struct psid *d, uint32_t from, const struct psmsg *m); /* PSM_D_SPAWN */
void spawnq_drop_job(struct psid *d, uint64_t job, uint32_t uid);
void spawnq_drop_home(struct psid *d, uint32_t node);
void spawnq_free(struct psid *d);
/* The launch tree (spawntree.c): a rank's start answer for a job whose spawn came down the
 * tree is combined into this node's answer to its parent: true if it was taken. */
bool spawntree_result(struct psid *d, uint64_t job, uint32_t rank, uint64_t tid, int err,
                      const char *why, const char *cpus);
/* A rank's end (rec: its PSM_D_EXIT's fields) for a job whose spawn came down the tree goes
 * up the tree with its subtree's: true if it was taken (else it goes to the home). */
bool spawntree_exit(struct psid *d, uint64_t job, uint32_t rank, const struct psmsg_view *rec);
/* The job's client is gone (PSM_D_JOB_GONE): nobody waits for its start answers. */
void spawntree_job_gone(struct psid *d, uint64_t job);
/* The home's part (jobs.c): a child's PSM_D_STARTED or PSM_D_EXITS for a job of this
 * node's. */
void jobs_tree_started(struct psid *d, uint32_t from, const struct psmsg *m);
void jobs_tree_exits(struct psid *d, uint32_t from, const struct psmsg *m);
/* A new job id (also a file broadcast's, bcast.c): never one in use, never reused. */
uint64_t jobs_new_id(struct psid *d);
/* Whether job is a held spawn (PSF_HOLD, no PSM_SPAWN_GO yet) of client c. */
bool jobs_client_held(struct psid *d, const struct client *c, uint64_t job);

/* pmi.c: the PMI server of MPI jobs, a rank's node's part (pmi.h, docs/pmi.md). A job's
 * PSM_D_SPAWN with PSF_PMI: its state here for its nlocal ranks queued; 0, or -1 (ENOMEM:
 * its ranks start without PMI). */
int pmi_job_spawn(struct psid *d, uint32_t from, const struct psmsg *m, uint64_t job, uint32_t uid,
                  uint32_t size, uint32_t nlocal);
/* The rank's PMI variables appended to renv at *n (at most PMI_RANK_VARS): their number, or
 * -1 (ENOMEM; those added are counted in *n). */
#define PMI_RANK_VARS 4
/* The most bytes a rank's own variables (spawnq.c: PSI_RANK, PSI_SIZE, PSI_NODE,
 * PSI_NODENAME, PSI_JOB, PSID_SOCKET and the PMI_RANK_VARS, PMI_JOBID up to a 256-byte name)
 * take in the privileged child's spawn frame, with their field headers (about 700). */
#define RANK_ENV_MAX 1024u
int pmi_rank_env(struct psid *d, uint64_t job, uint32_t rank, char **renv, size_t *n);
bool pmi_job_wants_fd(struct psid *d, uint64_t job); /* its ranks get a PMI socket */
void pmi_rank_started(struct psid *d, uint64_t job, uint32_t rank, int fd); /* fd: ours now */
void pmi_rank_failed(struct psid *d, uint64_t job, uint32_t rank);          /* did not start */
/* The rank ended: its channel closes; its state for the exit report (enum pspmi_state). */
uint32_t pmi_rank_exit(struct psid *d, uint64_t job, uint32_t rank);
void pmi_job_gone(struct psid *d, uint64_t job);

/* notify.c */
void notify_request(struct psid *d, struct client *c, const struct psmsg *m);
void notify_from_daemon(struct psid *d, uint32_t from, const struct psmsg *m);
void notify_task_exit(struct psid *d, uint64_t tid, uint32_t status);
void notify_client_gone(struct psid *d, struct client *c);
void notify_node_lost(struct psid *d, uint32_t node);
void notify_free(struct psid *d);

/* preload.c */
void preload_key(const uint8_t cluster_key[32], uint8_t key[32]); /* d->pl_key */
void preload_request(struct psid *d, struct client *c, const struct psmsg *m);
void preload_from_daemon(struct psid *d, uint32_t from, const struct psmsg *m);
void preload_client_gone(struct psid *d, struct client *c);
/* A client that had no room for descriptors has some again (client_fds_room): only
 * schedules a retry, never sends from inside client.c's flush. */
void preload_client_drained(struct psid *d, struct client *c);
void preload_node_lost(struct psid *d, uint32_t node);
void preload_free(struct psid *d);

/* signals.c */
void signals_request(struct psid *d, struct client *c, const struct psmsg *m);
void signals_from_daemon(struct psid *d, uint32_t from, const struct psmsg *m);
void tasks_list_request(struct psid *d, struct client *c, const struct psmsg *m);
void pending_client_gone(struct psid *d, struct client *c);

/* membership.c */
int membership_start(struct psid *d);
void membership_leave(struct psid *d);
void membership_rdp_lost(struct psid *d, uint32_t node, enum rdp_lost_reason why);
/* Whether node n's tasks count as alive: up or unreachable, not down. */
bool membership_alive(const struct psid_node *n);
/* A node's CPUs used (its tasks' -c added up), taken only if its epoch is newer than ours. */
void membership_tasks(struct psid *d, uint32_t node, uint32_t used, uint32_t epoch);
struct psid_node *psid_node(struct psid *d, uint32_t id);
/* Whether a heartbeat from address `from` may speak for node n (its configured address). */
bool membership_addr_ok(const struct psid_node *n, const struct sockaddr_in *from);
/* The node a heartbeat from `from` claiming to be node `id` speaks for; NULL with *why if id
 * is not a configured node other than this one (HB_DROP_UNKNOWN) or from is not that node's
 * configured address (HB_DROP_ADDRESS). */
struct psid_node *membership_sender(struct psid *d, uint32_t id, const struct sockaddr_in *from,
                                    enum hb_drop *why);
const char *hb_drop_name(enum hb_drop why);

/* gang.c: gang scheduling (docs/gang.md); nothing when gang.quantum_ms is 0. 0, or -1 and
 * errno (ENOMEM). */
int gang_start(struct psid *d);
/* Thaw every job this node froze (psid ends). */
void gang_thaw_all(struct psid *d);

/* rdplink.c */
int rdplink_start(struct psid *d);
void rdplink_stop(struct psid *d);
/* The endpoint's counters and a PSF_PEER record per other node (PSM_RDP_REPLY's body). */
void rdplink_put_stats(const struct psid *d, struct psmsg_buf *b);

/* client.c */
int clients_start(struct psid *d);
void clients_stop(struct psid *d);
const char *clients_socket_path(const struct psid *d); /* absolute, "" before the start */

/* selfnode.c */
const struct psconf_node *selfnode_find(const struct psconf *c, char *err, size_t errlen);

#endif
