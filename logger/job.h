/*
 * job.h - the logger proper: one job's ranks as psrun sees them through psid's messages.
 *
 * lg_job_handle takes every message psid sends about the job (PSM_SPAWN_REPLY, PSM_RANK,
 * PSM_IO, PSM_INPUT_ACK, PSM_EXIT, PSM_SIGNAL_REPLY, PSM_ERROR) and
 *   - assembles each rank's stdout and stderr into whole lines (lines.h), labelled with
 *     --label, and queues them on out[0] (psrun's stdout) and out[1] (its stderr);
 *   - acknowledges output (PSM_IO_ACK) only once the caller has written it: the caller
 *     passes lg_job_written as the done callback of lg_outq_write; lg_job_flush_acks then
 *     queues one PSM_IO_ACK per rank with something to acknowledge;
 *   - keeps every rank's state, node and task id, and the exit status of the job
 *     (exitcodes.h); a failed rank gets one line on out[1] after its own output: rank,
 *     node, task id and how it ended;
 *   - sends stdin (lg_job_input) within the window of input.h;
 *   - in a PMI job (cfg.mpi), keeps what the ranks' PMI tells (PSM_PMI_EVENT): that the job
 *     is an MPI job, a rank's abort, notes; and marks the job mpi_fatal when it cannot go on:
 *     an abort, a rank of an MPI job that failed or left PMI without finalizing (exit 0
 *     without MPI_Finalize counts as a failure, exit code 1). Once the caller ends the job
 *     for it (lg_job_teardown), ranks killed by SIGKILL or SIGTERM are counted (torn), not
 *     reported one by one: the first failure is the one that matters.
 * It does no I/O itself except queueing on conn->tx, so tests drive it with built messages.
 */
#ifndef PSCLUSTER_LOGGER_JOB_H
#define PSCLUSTER_LOGGER_JOB_H

#include "conn.h"
#include "exitcodes.h"
#include "input.h"
#include "lines.h"
#include "psi_nodes.h"
#include "outq.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum lg_rank_state {
    LG_R_WAIT = 0, /* no PSM_RANK yet */
    LG_R_RUN,      /* started */
    LG_R_NOSTART,  /* could not be started */
    LG_R_EXITED,   /* PSM_EXIT with a status */
    LG_R_LOST,     /* its node was lost */
};

/* Usage as psid reports it (PSM_EXIT; PSF_NODE_STATS): microseconds and bytes. */
struct lg_usage {
    bool have; /* the figures came */
    uint32_t node;
    uint64_t elapsed_us, user_us, sys_us, maxrss, rbytes, wbytes;
    bool have_cpu, have_rss, have_io; /* a node's: which of its cgroup's files it had */
};

struct lg_rank {
    uint8_t state;
    struct lg_usage use; /* at its end */
    uint64_t oom;        /* killed by the OOM killer: the node's limit (bytes) */
    bool eos[2];         /* end of stdout, stderr seen */
    bool dirty;          /* on the list of ranks with an acknowledgement to send */
    uint32_t node;
    uint64_t tid;
    uint32_t status; /* wait(2) status (LG_R_EXITED) */
    uint8_t pmi;     /* enum pspmi_state at its end */
    int err;         /* errno (LG_R_NOSTART) */
    uint64_t ack;    /* written, not yet acknowledged */
    struct lg_lines lines[2];
};

struct lg_job_cfg {
    uint32_t np;
    bool label;
    bool verbose;   /* a line per rank placed */
    uint32_t input; /* the rank that gets stdin, PSI_ALL_RANKS or PSI_NO_RANK */
    const char *prog;
    const struct psi_nodetab *nodes; /* names in messages (may be NULL) */
    size_t line_max;                 /* 0: PSI_IO_WINDOW / 2 */
    bool mpi;                        /* the ranks have PMI (psrun --mpi other than none) */
    bool cpu_verbose;                /* --cpu-bind=verbose: a line per rank with its CPUs */
};

struct lg_job {
    struct lg_job_cfg cfg;
    struct lg_conn *conn;
    uint32_t spawn_id;
    uint64_t jobid;
    bool spawned;      /* PSM_SPAWN_REPLY seen */
    bool queued;       /* PSM_SPAWN_QUEUED seen (gang scheduling: it waits for a row) */
    bool spawn_failed; /* PSM_ERROR for the spawn */
    int spawn_errno;
    char spawn_text[256];
    struct lg_rank *r;
    uint32_t reported; /* ranks with a PSM_RANK */
    uint32_t ended;    /* ranks that are done: NOSTART, EXITED or LOST */
    uint32_t failed;   /* ranks that failed */
    uint32_t lost;     /* ranks whose node was lost */
    bool mpi_active;   /* a rank started to use PMI: an MPI job */
    bool mpi_fatal;    /* it cannot go on (why: mpi_why) */
    char mpi_why[160];
    bool teardown; /* the caller ends the job: kills are counted, not reported */
    uint32_t torn; /* ranks killed in the teardown */
    struct lg_outq out[2];
    bool discard[2]; /* nobody reads that stream any more: acknowledge without writing */
    uint32_t *dirty;
    size_t ndirty;
    struct lg_exitagg agg;
    struct lg_input in;
    int error; /* a fatal error (errno): ENOMEM */
    /* -o/-e (outfile.h): route[s][rank] is LG_ROUTE_STD (out[s]), LG_ROUTE_NONE (dropped,
     * acknowledged at once) or a file's index; NULL: every rank to out[s] */
    const uint32_t *route[2];
    struct lg_outq *files; /* a queue per output file, written by the caller */
    bool *file_dead;       /* a file that failed: its output is acknowledged unwritten */
    size_t nfiles;
    struct lg_usage *nodes_use; /* PSF_NODE_STATS: the job's usage per node, from its cgroup */
    size_t nnodes_use;
};

/* 0, or -1 (ENOMEM). spawn_id: the id of the PSM_SPAWN request sent on conn. */
int lg_job_init(struct lg_job *j, const struct lg_job_cfg *cfg, struct lg_conn *conn,
                uint32_t spawn_id);
void lg_job_free(struct lg_job *j);
/* One message from psid. Returns 1 if it belonged to the job, 0 if not, -1 on a fatal
 * error (j->error). */
int lg_job_handle(struct lg_job *j, const struct psmsg *m);
/* Route the ranks' output (outfile.h's routes, kept by the caller while the job lives) to
 * psrun's streams, nowhere, or nfiles file queues (j->files). 0, or -1 (ENOMEM). */
int lg_job_set_routes(struct lg_job *j, const uint32_t *route[2], size_t nfiles);
/* File f cannot be written any more: what is queued and what comes is acknowledged. */
void lg_job_file_failed(struct lg_job *j, size_t f);
/* done callback for lg_outq_write on out[0] and out[1] (ctx: the job). */
void lg_job_written(void *ctx, uint32_t rank, size_t raw);
/* Stop writing stream s (0 stdout, 1 stderr): what is queued and what comes is
 * acknowledged unwritten. */
void lg_job_discard(struct lg_job *j, int s);
/* Queue a PSM_IO_ACK for every rank with written output. 0, or -1. */
int lg_job_flush_acks(struct lg_job *j);
/* A line "psrun: ..." for out[1]. */
void lg_job_say(struct lg_job *j, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The caller ends the job (an MPI job's failure): from now on a rank killed by SIGKILL or
 * SIGTERM is counted in torn, not reported. */
void lg_job_teardown(struct lg_job *j);
/* Queue PSM_SIGNAL to every task of the job. 0, or -1 (no job id yet: errno EAGAIN). */
int lg_job_signal(struct lg_job *j, int sig);

/* stdin: how many bytes may be sent now (0: not now); whether stdin is still wanted at all
 * (false once input is closed or no rank that takes it is left). */
size_t lg_job_input_room(const struct lg_job *j);
bool lg_job_input_wanted(const struct lg_job *j);
/* Send n bytes of stdin (n == 0: end of input). 0, or -1. */
int lg_job_input(struct lg_job *j, const void *p, size_t n);

/* Every rank has ended (or the spawn failed). */
bool lg_job_ended(const struct lg_job *j);
/* ... and everything is written. */
bool lg_job_done(const struct lg_job *j);
/* The exit status for psrun. */
int lg_job_exit_code(const struct lg_job *j);

/* "psrun: job queued (place N): why" for a PSM_SPAWN_QUEUED: through j's stderr queue, or
 * (j NULL: before the job's loop) straight to stderr. */
void lg_spawn_queued_say(const struct psmsg *m, struct lg_job *j);

#endif
