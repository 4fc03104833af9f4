/*
 * psrun.c - start a parallel job through psid and be its single point of contact: the
 * tasks' stdout and stderr arrive here line by line, psrun's stdin goes to them, signals
 * sent to psrun are forwarded, and psrun's exit status is the job's.
 *
 *   psrun [-n N] [-w LIST] [-N MIN[-MAX]] [-m DIST] [--exclusive] [-J NAME] [--multi-prog]
 *         [--ppn K] [--overbook] [-c K] [--cpu-bind=T] [--mem[-per-cpu]=SIZE] [--stats]
 *         [--stats-file F] [-l] [-o SPEC] [-e SPEC] [--open-mode M]
 *         [-i RANK|all|none] [-x VAR[=VAL]]... [--export-all] [-t TIME] [-K] [--kill-delay S]
 *         [--mpi TYPE] [-v] [--] PROGRAM [ARGS...]
 *
 * Flow: read the node table (PSM_NODES), work out the partition (logger/partition.h),
 * send PSM_SPAWN, then the event loop psid runs on (psloop.h), a round at a time, over the
 * psid socket (non-blocking, framed by logger/conn.h), psrun's stdin, stdout and stderr
 * (written only when the loop says so; a terminal or pipe is reopened through /proc/self/fd
 * with O_NONBLOCK, so the file description psrun shares with its shell is never changed; a
 * regular file or /dev/null, which epoll refuses, is always ready, as poll has it), and a
 * signalfd. The job's
 * bookkeeping - lines, acknowledgements, stdin window, exit statuses - is logger/job.h;
 * this file is options, signals, timers and the loop. All state lives in struct psrun.
 *
 * Signals: SIGINT goes to every task; a second one within a second kills them (SIGKILL).
 * SIGTERM and SIGHUP are forwarded, SIGKILL follows after the kill delay. SIGQUIT, SIGUSR1
 * and SIGUSR2 are forwarded. A signal ignored when psrun starts (nohup) stays ignored. The time
 * limit (-t) sends SIGTERM, then SIGKILL after the kill delay, and psrun exits 124 unless a rank
 * had failed before. A lost node ends the job the same way (as srun does: the job's
 * communication is broken), and so does the first failed rank with --kill-on-bad-exit. When
 * psrun's stdout goes away (EPIPE), what the tasks print there is dropped and they get SIGPIPE,
 * as in a pipeline.
 *
 * MPI (--mpi, default pmi1; docs/pmi.md): every rank gets a PMI channel served by its node's
 * psid. Once a rank uses it the job is an MPI job, and it cannot go on without each rank: a
 * rank that fails, leaves without MPI_Finalize or calls MPI_Abort ends the job at once
 * (SIGKILL to every rank, as mpiexec does), psrun says which rank and how, and exits with
 * that rank's status (MPI_Abort's code). Manual: docs/man/psrun.1.
 * Output files (-o/-e, srun's patterns, logger/outfile.h): the spawn is held (PSF_HOLD):
 * psid places the ranks and answers with the job id and each rank's node, psrun opens every
 * file, and only then lets the ranks start (PSM_SPAWN_GO), so a file that cannot be opened
 * starts nothing. Each file has its own queue in the job, written when the loop says so
 * (a regular file always), acknowledged once written: the same flow control as stdout.
 * Manual: docs/man/psrun.1.
 */
#include "../logger/preloadlib.h"
#include "psversion.h"
#include "../logger/envsel.h"
#include "../logger/job.h"
#include "../logger/multiprog.h"
#include "../logger/outfile.h"
#include "../logger/partition.h"
#include "../logger/stats.h"
#include "pscpus.h"
#include "psi.h"
#include "psi_bcast.h"
#include "psi_signames.h"
#include "bebytes.h"
#include "psi_tid.h"
#include "psloop.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <pwd.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define DEFAULT_KILL_DELAY 10.0
#define INPUT_CHUNK        (64u << 10)
#define MAX_NP             (1u << 20)
#define GIVE_UP_DELAY      2.0 /* seconds after SIGKILL before psrun stops waiting */

struct opts {
    uint32_t np;
    const char *nodes;
    uint32_t ppn;
    bool overbook, label, export_all, kill_on_bad;
    uint32_t input;
    const char *input_arg;
    struct lg_strv exports;
    double time_limit; /* 0: none */
    double kill_delay;
    int verbose;
    const char *chdir; /* the ranks' working directory; NULL: psrun's */
    uint32_t mpi;      /* enum pspmi_mode */
    /* -o, -e (logger/outfile.h); err_given: -e was given (else stderr follows a file of -o) */
    struct lg_outspec out, err;
    bool err_given, append;
    bool on_node;                    /* --output-on-node */
    const char *node_out, *node_err; /* the patterns the ranks' nodes open; NULL: none */
    bool np_given;
    const char *job_name; /* -J; NULL: the program's base name */
    uint32_t nmin, nmax;  /* -N: node count (0: any) */
    uint32_t dist, plane; /* -m: enum psdist */
    bool exclusive;
    uint32_t cpt;         /* -c: CPUs per rank (0: not given, 1) */
    uint32_t bind;        /* --cpu-bind: enum psbind | PSBIND_VERBOSE */
    const char *bind_map; /* its map_cpu or mask_cpu LIST */
    const char *bind_arg;
    uint64_t mem, mem_per_cpu; /* --mem, --mem-per-cpu: bytes (0: none) */
    bool stats;                /* --stats: the accounting table on stderr at the end */
    const char *stats_file;    /* --stats-file: and into this file */
    const char *multi_prog;    /* --multi-prog: the file (the program's place on the line) */
    bool bcast;                /* --bcast: the program copied to the job's nodes first */
    const char *bcast_dest;    /* --bcast=DEST; NULL: /tmp/psbcast.%j.%N.NAME */
    bool bcast_keep;           /* --bcast-keep: the copies stay after the job */
    char *mp_argv[5];          /* then the job runs /bin/sh -c SCRIPT */
    char **argv;
};

struct outfd {
    int fd;     /* where to write */
    bool own;   /* fd is ours (a reopened terminal or pipe) */
    size_t max; /* bytes per write (0: no limit) */
};

/* an output file of -o/-e: its descriptor and its watch */
struct ofile {
    struct psrun *p;
    size_t idx; /* in job.files and routes.paths */
    struct outfd f;
    bool watched;
};

struct psrun {
    struct opts o;
    struct psi psi;
    struct psi_nodetab nodes;
    struct lg_conn conn;
    struct lg_job job;
    struct outfd out[2];
    int sigfd;
    bool stdin_done;
    bool conn_lost;
    double deadline;  /* time limit; 0: none (or not armed yet) */
    bool limit_armed; /* the time limit started: the job was placed */
    double kill_at;   /* SIGKILL to the job then; 0: none */
    double last_int;  /* the last SIGINT */
    sigset_t sigset;  /* the signals psrun reads from sigfd */
    bool ending;      /* psrun is ending the job */
    bool sigpipe_sent;
    double give_up_at; /* after a SIGKILL: stop waiting for the ranks then; 0: not yet */
    bool gave_up;
    int pending[4]; /* signals waiting for the job id */
    int npending;
    struct loop *loop;
    int watch_fd[5]; /* by W_*: the descriptor watched, or -1 */
    uint32_t watch_ev[5];
    size_t stdin_room; /* bytes stdin may take this round */
    /* the nodes of the job, looked at every NODES_POLL_S: an unreachable one is said once,
     * and again when it answers (psid declares it down only after its grace) */
    double nodes_at;
    uint32_t nodes_req;    /* a PSM_NODES in flight: its id; 0: none */
    uint32_t gang_req;     /* a PSM_GANG in flight (the time limit under gang scheduling) */
    double run_start;      /* when the time limit started: the job was placed */
    uint32_t *unreachable; /* node ids said to be unreachable */
    size_t nunreachable;
    struct lg_routes routes; /* -o/-e: where each rank's output goes */
    struct ofile *files;
    size_t nfiles;
    /* --bcast: the program here (opened before the spawn) and the copies' name pattern,
     * which the spawn names as the program (PSF_ARG0_PATTERN) */
    int bcast_fd;
    char bcast_pat[PSBCAST_DEST_MAX];
};

#define NODES_POLL_S 1.0

static const char usage_text[] =
    "usage: psrun [OPTIONS] [--] PROGRAM [ARGS...]\n"
    "\n"
    "Start N copies (ranks) of PROGRAM on the cluster; their output comes here, line by line.\n"
    "\n"
    "  -n, --np N              number of ranks (default 1)\n"
    "  -w, --nodelist LIST     use these nodes: ids, names, ranges (0-3,5  n[0-3],m5);\n"
    "                          srun's -w\n"
    "  -N, --nodes MIN[-MAX]   use MIN (to MAX) nodes, each with a rank; without -n, one\n"
    "                          rank per node; srun's -N\n"
    "  -m, --distribution D    number ranks over their nodes: block (default), cyclic,\n"
    "                          plane=N; srun's -m\n"
    "      --exclusive         no other job on the job's nodes while it runs; srun's\n"
    "  -J, --job-name NAME     the job's name (psstat tasks, %x); srun's -J\n"
    "      --multi-prog        PROGRAM is a file of lines \"RANKS PROGRAM ARGS\" (%t rank,\n"
    "                          %o offset in the line's ranks, * the rest); srun's\n"
    "      --ppn K             at most K ranks per node\n"
    "      --overbook          allow more ranks than CPUs on a node, and sharing bound\n"
    "                          cores; srun's --overcommit\n"
    "  -c, --cpus-per-task K   each rank counts for K CPUs (placement, binding); srun's -c\n"
    "      --cpu-bind=TYPE     bind each rank: none, cores, threads, map_cpu:LIST,\n"
    "                          mask_cpu:LIST, with verbose (a line per rank); default cores\n"
    "                          when the job fills a node, else none; PSI_CPUS in the rank;\n"
    "                          srun's --cpu-bind\n"
    "      --mem=SIZE          the job's memory per node (its cgroup's memory.max; MiB, or\n"
    "                          K M G T); a rank the OOM killer ends is reported; srun's\n"
    "      --mem-per-cpu=SIZE  the same per CPU of the job's ranks on a node; srun's\n"
    "      --stats             the job's accounting at its end on stderr: per rank and in\n"
    "                          total elapsed, user/system CPU, max RSS, bytes read and\n"
    "                          written, as sacct --parsable2 shows them\n"
    "      --stats-file FILE   and into FILE\n"
    "  -l, --label             prefix every output line with \"RANK: \"\n"
    "  -o, --output SPEC       the ranks' stdout (and stderr, without -e): all (here), none,\n"
    "                          a rank (only its output), or a file name pattern: %j job id,\n"
    "                          %J job.step, %s step, %t rank, %n node index, %N node name,\n"
    "                          %u user, %x job name, %% (a width pads: %3t); srun's -o\n"
    "  -e, --error SPEC        the ranks' stderr, as -o; srun's -e\n"
    "      --open-mode MODE    output files: truncate (default) or append; srun's\n"
    "      --output-on-node    -o/-e files are opened by each rank's node, as the user,\n"
    "                          not here; srun's\n"
    "  -i, --input WHO         stdin to rank WHO (default 0), to all ranks, or none\n"
    "  -D, --chdir DIR         the ranks' working directory (default: this one)\n"
    "  -x, --export VAR[=VAL]  also export VAR (repeatable; VAR=VAL sets it)\n"
    "      --export-all        export the whole environment\n"
    "  -t, --time T            time limit: seconds, or [[H:]M:]S; then SIGTERM, SIGKILL\n"
    "                          after the kill delay, exit status 124\n"
    "  -K, --kill-on-bad-exit  end the job as soon as one rank fails\n"
    "      --kill-delay S      seconds between SIGTERM and SIGKILL (default 10)\n"
    "  -v, --verbose           say where each rank runs (rank, node, task id)\n"
    "      --preload           run every rank under libpspreload (pspreload(1)): TCP\n"
    "                          between the ranks' nodes travels over RDP\n"
    "      --bcast[=DEST]      copy PROGRAM (found by PATH here) to DEST on each of the job's\n"
    "                          nodes first and run the copies (%j job, %N node name, %n node\n"
    "                          index, %u user; ending in '/': a directory); default\n"
    "                          /tmp/psbcast.%j.%N.PROGRAM; removed after the job; a node\n"
    "                          whose copy fails fails the launch, named; srun's --bcast\n"
    "      --bcast-keep        leave the copies after the job\n"
    "      --mpi TYPE          the PMI the ranks get from psid: pmi1 (default; MPICH's\n"
    "                          simple PMI), pmi2, or none; default $PSI_MPI. An MPI job ends\n"
    "                          when one of its ranks fails, aborts or exits without\n"
    "                          MPI_Finalize\n"
    "  -h, --help              this text\n"
    "\n"
    "Nodes: -w, else $PSI_NODES, $PSI_HOSTS, $PSI_HOSTFILE, else $SLURM_JOB_NODELIST or\n"
    "$PBS_NODEFILE, else every node that is up. Exported by default: PATH, HOME, USER, LANG,\n"
    "LD_LIBRARY_PATH, LD_PRELOAD, PSI_*, PSP_*, OMP_* and the names in $PSI_EXPORTS.\n"
    "Exit status: 0 if every rank exited 0; else the first failure: its exit code, 128+N\n"
    "for signal N, 127 program not found, 126 not executable, 255 node lost, 124 time limit;\n"
    "an MPI job: MPI_Abort's code, 1 for a rank that exited without MPI_Finalize.\n"
    "Ctrl-C sends SIGINT to every rank; twice within a second kills them.\n"
    "The psid asked is the one at $PSID_SOCKET (default " PSI_DEFAULT_SOCKET ").\n";

static int usage(FILE *f, int rc)
{
    fputs(usage_text, f);
    return rc;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int parse_u32(const char *s, uint32_t min, uint32_t max, uint32_t *out)
{
    char *end;
    errno = 0;
    unsigned long v = strtoul(s, &end, 10);
    if (!*s || *end || errno || *s == '-' || v < min || v > max) return -1;
    *out = (uint32_t)v;
    return 0;
}

/* seconds: "90", "1.5", "1:30" (M:S), "1:00:00" (H:M:S) */
static int parse_time(const char *s, double *out)
{
    double total = 0;
    int parts = 0;
    const char *p = s;
    for (;;) {
        char *end;
        errno = 0;
        double v = strtod(p, &end);
        if (end == p || errno || v < 0 || !isfinite(v) || *p == '-' || *p == '+') return -1;
        total = total * 60 + v;
        if (++parts > 3) return -1;
        if (*end == '\0') break;
        if (*end != ':') return -1;
        p = end + 1;
    }
    if (total <= 0) return -1;
    *out = total;
    return 0;
}

/* --preload: every rank starts with libpspreload.so first in LD_PRELOAD (the path of this
 * node's installation: the nodes share one) and psrun's PSP_* variables (exported anyway). */
static int preload_export(struct opts *o)
{
    char lib[4096], *v = NULL;
    if (lg_preload_lib(lib, sizeof lib) < 0) {
        fprintf(stderr, "psrun: --preload: libpspreload.so not found (%s); set PSPRELOAD_LIB\n",
                lib);
        return -1;
    }
    const char *old = getenv("LD_PRELOAD");
    if (asprintf(&v, "LD_PRELOAD=%s%s%s", lib, old && *old ? " " : "", old ? old : "") < 0 ||
        lg_strv_add(&o->exports, v) < 0) {
        free(v);
        fprintf(stderr, "psrun: out of memory\n");
        return -1;
    }
    free(v);
    return 0;
}

/* A PMI-1 job: Open MPI's flux component (its only PMI-1 route: Debian's Open MPI has no
 * other but PMIx) loads the PMI library in FLUX_PMI_LIBRARY_PATH; the ranks get this
 * installation's libpmi.so there unless the user exports one (psid adds FLUX_JOB_ID, which
 * selects the component). No library found: nothing added, MPICH does not need it. */
static int flux_export(struct opts *o)
{
    char lib[4096];
    for (size_t i = 0; i < o->exports.n; i++)
        if (strncmp(o->exports.v[i], "FLUX_PMI_LIBRARY_PATH", 21) == 0) return 0;
    if (lg_pscluster_lib("libpmi.so", NULL, lib, sizeof lib) < 0) return 0;
    if (lg_strv_addf(&o->exports, "FLUX_PMI_LIBRARY_PATH=%s", lib) < 0) {
        fprintf(stderr, "psrun: out of memory\n");
        return -1;
    }
    return 0;
}

/* --mpi, $PSI_MPI: 0 and *out, or -1 */
static int parse_mpi(const char *s, uint32_t *out)
{
    if (strcmp(s, "pmi1") == 0 || strcmp(s, "pmi") == 0)
        *out = PSPMI_MODE_PMI1;
    else if (strcmp(s, "pmi2") == 0)
        *out = PSPMI_MODE_PMI2;
    else if (strcmp(s, "none") == 0)
        *out = PSPMI_MODE_NONE;
    else
        return -1;
    return 0;
}

/* -N MIN[-MAX] */
static int parse_nodes(const char *s, uint32_t *min, uint32_t *max)
{
    char buf[32];
    const char *dash = strchr(s, '-');
    if (strlen(s) >= sizeof buf) return -1;
    if (!dash) {
        if (parse_u32(s, 1, MAX_NP, min) < 0) return -1;
        *max = *min;
        return 0;
    }
    memcpy(buf, s, (size_t)(dash - s));
    buf[dash - s] = 0;
    if (parse_u32(buf, 1, MAX_NP, min) < 0 || parse_u32(dash + 1, 1, MAX_NP, max) < 0 ||
        *max < *min)
        return -1;
    return 0;
}

/* -m: srun's node-level distribution; a second level (within a node) is taken and left to
 * the CPU binding */
static int parse_dist(const char *s, uint32_t *dist, uint32_t *plane)
{
    char first[32];
    size_t n = strcspn(s, ":,");
    if (n >= sizeof first) return -1;
    memcpy(first, s, n);
    first[n] = 0;
    if (s[n] == ':') {
        const char *second = s + n + 1;
        size_t k = strcspn(second, ":,");
        if (!((k == 5 && strncmp(second, "block", 5) == 0) ||
              (k == 6 && strncmp(second, "cyclic", 6) == 0) ||
              (k == 7 && strncmp(second, "fcyclic", 7) == 0)))
            return -1;
    }
    if (strcmp(first, "block") == 0)
        *dist = PSDIST_BLOCK;
    else if (strcmp(first, "cyclic") == 0)
        *dist = PSDIST_CYCLIC;
    else if (strncmp(first, "plane=", 6) == 0 && parse_u32(first + 6, 1, MAX_NP, plane) == 0)
        *dist = PSDIST_PLANE;
    else
        return -1;
    return 0;
}

/* --multi-prog: read and check the file (argv[0]); the job runs the script it makes */
static int multi_prog(struct opts *o)
{
    const char *path = o->argv[0];
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "psrun: --multi-prog %s: %s\n", path, strerror(errno));
        return -1;
    }
    char *text = NULL;
    size_t cap = 0;
    ssize_t n = getdelim(&text, &cap, 0, f);
    fclose(f);
    if (n < 0 || (size_t)n != strlen(text)) {
        fprintf(stderr, "psrun: --multi-prog %s: %s\n", path,
                n < 0 ? "empty or unreadable" : "a NUL byte in the file");
        free(text);
        return -1;
    }
    struct lg_mprog mp;
    char err[300];
    int rc = lg_mprog_parse(text, o->np, &mp, err, sizeof err);
    free(text);
    if (rc < 0) {
        fprintf(stderr, "psrun: --multi-prog %s: %s\n", path, err);
        return -1;
    }
    char *script = lg_mprog_script(&mp);
    lg_mprog_free(&mp);
    if (!script) {
        fprintf(stderr, "psrun: out of memory\n");
        return -1;
    }
    o->multi_prog = path;
    o->mp_argv[0] = "/bin/sh";
    o->mp_argv[1] = "-c";
    o->mp_argv[2] = script;
    o->mp_argv[3] = "psrun-multi-prog";
    o->mp_argv[4] = NULL;
    o->argv = o->mp_argv;
    return 0;
}

static int parse_args(int argc, char **argv, struct opts *o)
{
    enum {
        O_PPN = 256,
        O_OVERBOOK,
        O_EXPORT_ALL,
        O_KILL_DELAY,
        O_PRELOAD,
        O_OPEN_MODE,
        O_EXCLUSIVE,
        O_MULTI_PROG,
        O_MPI,
        O_CPU_BIND,
        O_MEM,
        O_MEM_PER_CPU,
        O_STATS,
        O_STATS_FILE,
        O_ON_NODE,
        O_BCAST,
        O_BCAST_KEEP
    };
    static const struct option lopts[] = {{"np", required_argument, 0, 'n'},
                                          {"nodelist", required_argument, 0, 'w'},
                                          {"nodes", required_argument, 0, 'N'},
                                          {"distribution", required_argument, 0, 'm'},
                                          {"exclusive", no_argument, 0, O_EXCLUSIVE},
                                          {"job-name", required_argument, 0, 'J'},
                                          {"multi-prog", no_argument, 0, O_MULTI_PROG},
                                          {"ppn", required_argument, 0, O_PPN},
                                          {"overbook", no_argument, 0, O_OVERBOOK},
                                          {"label", no_argument, 0, 'l'},
                                          {"input", required_argument, 0, 'i'},
                                          {"export", required_argument, 0, 'x'},
                                          {"chdir", required_argument, 0, 'D'},
                                          {"export-all", no_argument, 0, O_EXPORT_ALL},
                                          {"time", required_argument, 0, 't'},
                                          {"kill-on-bad-exit", no_argument, 0, 'K'},
                                          {"kill-delay", required_argument, 0, O_KILL_DELAY},
                                          {"verbose", no_argument, 0, 'v'},
                                          {"preload", no_argument, 0, O_PRELOAD},
                                          {"mpi", required_argument, 0, O_MPI},
                                          {"output", required_argument, 0, 'o'},
                                          {"error", required_argument, 0, 'e'},
                                          {"open-mode", required_argument, 0, O_OPEN_MODE},
                                          {"cpus-per-task", required_argument, 0, 'c'},
                                          {"cpu-bind", required_argument, 0, O_CPU_BIND},
                                          {"cpu_bind", required_argument, 0, O_CPU_BIND},
                                          {"mem", required_argument, 0, O_MEM},
                                          {"mem-per-cpu", required_argument, 0, O_MEM_PER_CPU},
                                          {"stats", no_argument, 0, O_STATS},
                                          {"stats-file", required_argument, 0, O_STATS_FILE},
                                          {"output-on-node", no_argument, 0, O_ON_NODE},
                                          {"bcast", optional_argument, 0, O_BCAST},
                                          {"bcast-keep", no_argument, 0, O_BCAST_KEEP},
                                          {"help", no_argument, 0, 'h'},
                                          {0, 0, 0, 0}};
    o->np = 1;
    o->kill_delay = DEFAULT_KILL_DELAY;
    o->mpi = PSPMI_MODE_PMI1;
    const char *mpi_env = getenv("PSI_MPI");
    if (mpi_env && *mpi_env && parse_mpi(mpi_env, &o->mpi) < 0) {
        fprintf(stderr, "psrun: PSI_MPI=%s: not pmi1, pmi2 or none\n", mpi_env);
        return 2;
    }
    int c;
    while ((c = getopt_long(argc, argv, "+n:w:li:x:D:t:Kvho:e:N:m:J:c:", lopts, NULL)) != -1) {
        switch (c) {
        case 'n':
            if (parse_u32(optarg, 1, MAX_NP, &o->np) < 0) {
                fprintf(stderr, "psrun: -n %s: not a number of ranks (1..%u)\n", optarg, MAX_NP);
                return 2;
            }
            o->np_given = true;
            break;
        case 'N':
            if (parse_nodes(optarg, &o->nmin, &o->nmax) < 0) {
                fprintf(stderr, "psrun: -N %s: not a node count MIN or MIN-MAX (1..%u)\n", optarg,
                        MAX_NP);
                return 2;
            }
            break;
        case 'm':
            if (parse_dist(optarg, &o->dist, &o->plane) < 0) {
                fprintf(stderr,
                        "psrun: -m %s: not block, cyclic or plane=N (with :block, :cyclic or "
                        ":fcyclic within a node)\n",
                        optarg);
                return 2;
            }
            break;
        case 'J':
            if (!*optarg || strlen(optarg) > 63) {
                fprintf(stderr, "psrun: -J '%s': a job name is 1 to 63 characters\n", optarg);
                return 2;
            }
            o->job_name = optarg;
            break;
        case O_EXCLUSIVE:
            o->exclusive = true;
            break;
        case 'c':
            if (parse_u32(optarg, 1, PSCPU_MAX, &o->cpt) < 0) {
                fprintf(stderr, "psrun: -c %s: not a number of CPUs per rank (1..%u)\n", optarg,
                        PSCPU_MAX);
                return 2;
            }
            break;
        case O_CPU_BIND: {
            char err[300];
            if (pscpu_parse_bind(optarg, &o->bind, &o->bind_map, err, sizeof err) < 0) {
                fprintf(stderr, "psrun: %s\n", err);
                return 2;
            }
            o->bind_arg = optarg;
            break;
        }
        case O_MEM:
        case O_MEM_PER_CPU: {
            uint64_t v;
            const char *what = c == O_MEM ? "--mem" : "--mem-per-cpu";
            if (ps_parse_size(optarg, 1ull << 20, &v) < 0 || v == 0) {
                fprintf(stderr,
                        "psrun: %s=%s: not a memory size above 0 (a number of MiB, or with K, M, "
                        "G or T)\n",
                        what, optarg);
                return 2;
            }
            if (c == O_MEM) {
                o->mem = v;
                o->mem_per_cpu = 0; /* srun: the last of the two counts */
            } else {
                o->mem_per_cpu = v;
                o->mem = 0;
            }
            break;
        }
        case O_STATS:
            o->stats = true;
            break;
        case O_ON_NODE:
            o->on_node = true;
            break;
        case O_BCAST:
            if (optarg && !*optarg) {
                fprintf(stderr, "psrun: --bcast=: an empty destination\n");
                return 2;
            }
            o->bcast = true;
            o->bcast_dest = optarg;
            break;
        case O_BCAST_KEEP:
            o->bcast_keep = true;
            break;
        case O_STATS_FILE:
            if (!*optarg) {
                fprintf(stderr, "psrun: --stats-file: an empty file name\n");
                return 2;
            }
            o->stats_file = optarg;
            break;
        case O_MULTI_PROG:
            o->multi_prog = "";
            break;
        case 'w':
            o->nodes = optarg;
            break;
        case O_PPN:
            if (parse_u32(optarg, 1, MAX_NP, &o->ppn) < 0) {
                fprintf(stderr, "psrun: --ppn %s: not a positive number\n", optarg);
                return 2;
            }
            break;
        case O_OVERBOOK:
            o->overbook = true;
            break;
        case 'l':
            o->label = true;
            break;
        case 'i':
            o->input_arg = optarg;
            break;
        case 'x':
            if (!*optarg || *optarg == '=' || lg_strv_add(&o->exports, optarg) < 0) {
                fprintf(stderr, "psrun: -x '%s': not VAR or VAR=VALUE\n", optarg);
                return 2;
            }
            break;
        case O_EXPORT_ALL:
            o->export_all = true;
            break;
        case 'D':
            if (!*optarg) {
                fprintf(stderr, "psrun: -D: an empty directory name\n");
                return 2;
            }
            o->chdir = optarg;
            break;
        case 't':
            if (parse_time(optarg, &o->time_limit) < 0) {
                fprintf(stderr, "psrun: -t %s: not a time (seconds, or [[H:]M:]S)\n", optarg);
                return 2;
            }
            break;
        case 'K':
            o->kill_on_bad = true;
            break;
        case O_KILL_DELAY:
            if (parse_time(optarg, &o->kill_delay) < 0) {
                fprintf(stderr, "psrun: --kill-delay %s: not a time in seconds\n", optarg);
                return 2;
            }
            break;
        case 'v':
            o->verbose++;
            break;
        case O_PRELOAD:
            if (preload_export(o) < 0) return 1;
            break;
        case O_MPI:
            if (parse_mpi(optarg, &o->mpi) < 0) {
                fprintf(stderr, "psrun: --mpi %s: not pmi1, pmi2 or none\n", optarg);
                return usage(stderr, 2);
            }
            break;
        case 'o':
        case 'e': {
            char err[512];
            if (lg_outspec_parse(optarg, c == 'o' ? &o->out : &o->err, err, sizeof err) < 0) {
                fprintf(stderr, "psrun: -%c: %s\n", c, err);
                return 2;
            }
            if (c == 'e') o->err_given = true;
            break;
        }
        case O_OPEN_MODE:
            if (strcmp(optarg, "append") == 0 || strcmp(optarg, "a") == 0)
                o->append = true;
            else if (strcmp(optarg, "truncate") == 0 || strcmp(optarg, "t") == 0)
                o->append = false;
            else {
                fprintf(stderr, "psrun: --open-mode %s: not append or truncate\n", optarg);
                return 2;
            }
            break;
        case 'h':
            return usage(stdout, 0), -1;
        default:
            return usage(stderr, 2);
        }
    }
    if (optind >= argc || !argv[optind][0]) {
        fprintf(stderr, "psrun: no program given\n");
        return usage(stderr, 2);
    }
    o->argv = argv + optind;
    if (o->nmin && !o->np_given) o->np = o->nmin; /* srun: a rank per node */
    if (o->nmin > o->np) {
        fprintf(stderr, "psrun: -N %u: more nodes than the %u ranks (each node gets a rank)\n",
                o->nmin, o->np);
        return 2;
    }
    if (o->bcast_keep && !o->bcast) {
        fprintf(stderr, "psrun: --bcast-keep without --bcast\n");
        return 2;
    }
    if (o->bcast && o->multi_prog) {
        fprintf(stderr, "psrun: --bcast and --multi-prog: the program is a script of lines\n");
        return 2;
    }
    if (o->multi_prog && multi_prog(o) < 0) return 2;
    if (o->mpi == PSPMI_MODE_PMI1 && flux_export(o) < 0) return 1;
    o->input = 0;
    if (o->input_arg) {
        if (strcmp(o->input_arg, "all") == 0)
            o->input = PSI_ALL_RANKS;
        else if (strcmp(o->input_arg, "none") == 0)
            o->input = PSI_NO_RANK;
        else if (parse_u32(o->input_arg, 0, o->np - 1, &o->input) < 0) {
            fprintf(stderr, "psrun: -i %s: not a rank (0..%u), all or none\n", o->input_arg,
                    o->np - 1);
            return 2;
        }
    }
    /* --output-on-node: file patterns go to the ranks' nodes, which open them; psrun's own
     * routes then treat those streams as its own (nothing comes of them) */
    if (o->on_node) {
        if (o->out.kind == LG_OUT_FILE) {
            o->node_out = o->out.pat;
            o->out.kind = LG_OUT_ALL;
            if (!o->err_given) { /* srun: stderr follows -o's file */
                o->node_err = o->node_out;
                o->err_given = true;
                o->err.kind = LG_OUT_ALL;
            }
        }
        if (o->err_given && o->err.kind == LG_OUT_FILE) {
            o->node_err = o->err.pat;
            o->err.kind = LG_OUT_ALL;
        }
        if ((o->node_out && strlen(o->node_out) > 1023) ||
            (o->node_err && strlen(o->node_err) > 1023)) {
            fprintf(stderr, "psrun: --output-on-node: a file name pattern over 1023 bytes\n");
            return 2;
        }
    }
    const struct lg_outspec *os[2] = {&o->out, &o->err};
    for (int k = 0; k < 2; k++)
        if (os[k]->kind == LG_OUT_RANK && os[k]->rank >= o->np) {
            fprintf(stderr, "psrun: -%c %" PRIu32 ": not a rank (0..%u)\n", "oe"[k], os[k] -> rank,
                    o -> np - 1);
            return 2;
        }
    return 0;
}

/* psrun's stdout/stderr: a terminal or pipe gets a non-blocking description of its own */
static void open_out(struct outfd *out, int fd)
{
    struct stat st;
    out->fd = fd;
    out->own = false;
    out->max = 0;
    if (fstat(fd, &st) < 0 || S_ISREG(st.st_mode) || S_ISBLK(st.st_mode)) return;
    if (fcntl(fd, F_GETFL) & O_NONBLOCK) return;
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    int nfd = -1;
    if (S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode))
        nfd = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY | O_APPEND);
    if (nfd >= 0) {
        out->fd = nfd;
        out->own = true;
    } else {
        out->max = PIPE_BUF; /* after POLLOUT, a write this small does not block */
    }
}

/* -J, else (as srun) the program's base name (--multi-prog: the file's) */
static const char *job_name(const struct opts *o)
{
    const char *prog = o->multi_prog ? o->multi_prog : o->argv[0];
    const char *slash = strrchr(prog, '/');
    return o->job_name ? o->job_name : slash ? slash + 1 : prog;
}

/* the spawn request, built into b (hold: PSF_HOLD, answered with the placement) */
static int build_spawn(struct psrun *p, const uint32_t *ids, size_t nids, bool hold,
                       struct psmsg_buf *bp)
{
    struct lg_strv env = {0};
    if (lg_env_select(environ, (const char *const *)p->o.exports.v, p->o.exports.n, p->o.export_all,
                      &env) < 0) {
        fprintf(stderr, "psrun: out of memory\n");
        return -1;
    }
    /* -D is taken as given: the ranks' nodes resolve it (a relative one against psrun's
     * directory, as srun does) */
    char *cwd = NULL;
    if (p->o.chdir && p->o.chdir[0] == '/') {
        cwd = strdup(p->o.chdir);
    } else {
        char *here = getcwd(NULL, 0);
        if (here && p->o.chdir && asprintf(&cwd, "%s/%s", here, p->o.chdir) < 0) cwd = NULL;
        if (here && !p->o.chdir)
            cwd = here;
        else
            free(here);
    }
    if (!cwd) {
        fprintf(stderr, "psrun: cannot determine the current directory: %s\n", strerror(errno));
        lg_strv_free(&env);
        return -1;
    }
    mode_t mask = umask(0);
    umask(mask);
    struct psmsg_buf b = {0};
    psmsg_begin(&b, PSM_SPAWN, 0);
    if (hold) psmsg_put_u32(&b, PSF_HOLD, 1);
    if (p->o.dist) psmsg_put_u32(&b, PSF_DIST, p->o.dist);
    if (p->o.dist == PSDIST_PLANE) psmsg_put_u32(&b, PSF_PLANE, p->o.plane);
    if (p->o.nmin) {
        psmsg_put_u32(&b, PSF_NODES_MIN, p->o.nmin);
        psmsg_put_u32(&b, PSF_NODES_MAX, p->o.nmax);
    }
    if (p->o.exclusive) psmsg_put_u32(&b, PSF_EXCLUSIVE, 1);
    if (p->o.cpt) psmsg_put_u32(&b, PSF_CPUS_PER_TASK, p->o.cpt);
    if (p->o.bind) psmsg_put_u32(&b, PSF_CPU_BIND, p->o.bind);
    if (p->o.bind_map) psmsg_put_str(&b, PSF_CPU_MAP, p->o.bind_map);
    if (p->o.mem) psmsg_put_u64(&b, PSF_MEM, p->o.mem);
    if (p->o.mem_per_cpu) psmsg_put_u64(&b, PSF_MEM_PER_CPU, p->o.mem_per_cpu);
    if (p->o.node_out) psmsg_put_str(&b, PSF_OUT_PATTERN, p->o.node_out);
    if (p->o.node_err) psmsg_put_str(&b, PSF_ERR_PATTERN, p->o.node_err);
    if ((p->o.node_out || p->o.node_err) && p->o.append) psmsg_put_u32(&b, PSF_OPEN_APPEND, 1);
    psmsg_put_str(&b, PSF_JOB_NAME, job_name(&p->o));
    for (char **a = p->o.argv; *a; a++)
        psmsg_put_str(&b, PSF_ARG, a == p->o.argv && p->o.bcast ? p->bcast_pat : *a);
    if (p->o.bcast) psmsg_put_u32(&b, PSF_ARG0_PATTERN, 1);
    for (size_t i = 0; i < env.n; i++) psmsg_put_str(&b, PSF_ENV, env.v[i]);
    psmsg_put_str(&b, PSF_CWD, cwd);
    psmsg_put_u32(&b, PSF_UMASK, (uint32_t)mask);
    psmsg_put_u32(&b, PSF_NP, p->o.np);
    for (size_t i = 0; i < nids; i++) psmsg_put_u32(&b, PSF_NODE_ID, ids[i]);
    if (p->o.ppn) psmsg_put_u32(&b, PSF_PPN, p->o.ppn);
    if (p->o.overbook) psmsg_put_u32(&b, PSF_OVERBOOK, 1);
    psmsg_put_u32(&b, PSF_INPUT, p->o.input);
    if (p->o.mpi != PSPMI_MODE_NONE) psmsg_put_u32(&b, PSF_PMI, p->o.mpi);
    free(cwd);
    lg_strv_free(&env);
    *bp = b;
    return 0;
}

static void spawn_build_error(const struct psmsg_buf *b)
{
    if (errno == EMSGSIZE)
        fprintf(stderr,
                "psrun: argument list too long for a spawn (%zu bytes with the "
                "environment, limit %u)\n",
                b->need, PSMSG_MAX);
    else
        fprintf(stderr, "psrun: cannot build the spawn request: %s\n", strerror(errno));
}

static int send_spawn(struct psrun *p, const uint32_t *ids, size_t nids, uint32_t *id)
{
    struct psmsg_buf b = {0};
    if (build_spawn(p, ids, nids, false, &b) < 0) return -1;
    size_t need = b.need;
    if (lg_conn_send(&p->conn, &b, 0, id) < 0) {
        b.need = need; /* lg_conn_send took the buffer */
        spawn_build_error(&b);
        return -1;
    }
    return 0;
}

static const char *node_name_of(void *ctx, uint32_t id)
{
    struct psrun *p = ctx;
    for (size_t i = 0; i < p->nodes.n; i++)
        if (p->nodes.v[i].id == id) return p->nodes.v[i].name;
    return NULL;
}

/* -o/-e: from the held spawn's answer (the job id, each rank's node), each rank's file
 * names; every file opened before any rank starts. 0, or -1 (said). */
static int open_outputs(struct psrun *p, uint64_t jobid, const struct psmsg *reply)
{
    struct psmsg_field f;
    if (!psmsg_find(&reply->body, PSF_PLACEMENT, &f) || f.len != (size_t)p->o.np * 4) {
        fprintf(stderr, "psrun: psid's answer has no placement of the ranks\n");
        return -1;
    }
    uint32_t *node = malloc((size_t)p->o.np * sizeof *node);
    if (!node) {
        fprintf(stderr, "psrun: out of memory\n");
        return -1;
    }
    for (uint32_t r = 0; r < p->o.np; r++) node[r] = be_get32(f.val + 4 * (size_t)r);
    char job[32], uid[16], err[600];
    snprintf(job, sizeof job, "%" PRIu32 ":%" PRId32, PSTID_NODE(jobid), PSTID_PID(jobid));
    struct passwd *pw = getpwuid(getuid());
    snprintf(uid, sizeof uid, "%u", (unsigned)getuid());
    struct lg_jobfacts facts = {.np = p->o.np,
                                .node = node,
                                .node_name = node_name_of,
                                .ctx = p,
                                .job = job,
                                .user = pw ? pw->pw_name : uid,
                                .name = job_name(&p->o)};
    int rc = lg_routes_build(&p->o.out, p->o.err_given ? &p->o.err : NULL, &facts, &p->routes, err,
                             sizeof err);
    free(node);
    if (rc < 0) {
        fprintf(stderr, "psrun: -o/-e: %s\n", err);
        return -1;
    }
    size_t n = p->routes.paths.n;
    p->files = calloc(n ? n : 1, sizeof *p->files);
    if (!p->files) {
        fprintf(stderr, "psrun: out of memory\n");
        return -1;
    }
    int flags = O_WRONLY | O_CREAT | O_CLOEXEC | O_NOCTTY | (p->o.append ? O_APPEND : O_TRUNC);
    for (size_t i = 0; i < n; i++) {
        const char *path = p->routes.paths.v[i];
        int fd = open(path, flags, 0666);
        if (fd < 0) {
            fprintf(stderr, "psrun: cannot open output file %s: %s\n", path, strerror(errno));
            return -1;
        }
        p->files[i] = (struct ofile){.p = p, .idx = i};
        open_out(&p->files[i].f, fd);
        if (p->files[i].f.own)
            close(fd); /* reopened without blocking */
        else
            p->files[i].f.own = true;
        p->nfiles = i + 1;
    }
    return 0;
}

/* --bcast: PROGRAM found by PATH here (as execvp finds it), opened (only what the user can
 * read is sent), and the copies' name pattern. 0, or psrun's exit status (said): 127 not
 * found, 126 not executable, 2 a destination that is not one. */
static int bcast_prepare(struct psrun *p)
{
    const char *prog = p->o.argv[0], *dirs = getenv("PATH");
    char path[PATH_MAX] = "";
    if (strchr(prog, '/')) {
        snprintf(path, sizeof path, "%s", prog);
    } else {
        if (!dirs || !*dirs) dirs = "/usr/local/bin:/usr/bin:/bin";
        for (const char *d = dirs; *d;) {
            size_t l = strcspn(d, ":");
            struct stat st;
            if (snprintf(path, sizeof path, "%.*s/%s", (int)l, l ? d : ".", prog) <
                    (int)sizeof path &&
                stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0)
                break;
            path[0] = 0;
            d += l + (d[l] == ':');
        }
    }
    struct stat st;
    int fd = path[0] ? open(path, O_RDONLY | O_CLOEXEC) : -1;
    if (fd < 0) {
        fprintf(stderr, "psrun: --bcast: %s: %s\n", prog,
                path[0] ? strerror(errno) : "command not found");
        return path[0] && errno != ENOENT ? 126 : 127;
    }
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || access(path, X_OK) < 0) {
        fprintf(stderr, "psrun: --bcast: %s: not an executable file\n", path);
        close(fd);
        return 126;
    }
    char name[600], base[512];
    const char *slash = strrchr(path, '/');
    char perr[300];
    int deps;
    if (psi_bcast_escape(slash ? slash + 1 : path, base, sizeof base) < 0 ||
        snprintf(name, sizeof name, "psbcast.%%j.%%N.%s", base) >= (int)sizeof name ||
        psi_bcast_dest(p->o.bcast_dest, name, p->bcast_pat, sizeof p->bcast_pat) < 0) {
        fprintf(stderr, "psrun: --bcast: the destination is too long\n");
        close(fd);
        return 2;
    }
    if ((deps = lg_pat_check(p->bcast_pat, perr, sizeof perr)) < 0 || deps & LG_PAT_RANK) {
        fprintf(stderr, "psrun: --bcast=%s: %s\n", p->o.bcast_dest,
                deps < 0 ? perr : "%t (a rank) has no meaning for a node's copy");
        close(fd);
        return 2;
    }
    p->bcast_fd = fd;
    return 0;
}

/* --bcast, once the held spawn is placed: the program copied to the job's nodes, in the
 * order of their first ranks (so %n is the node's index in the job), before any rank
 * starts. 0, or -1 (said: each node without its copy, and why). */
static int bcast_program(struct psrun *p, uint64_t jobid, const struct psmsg *reply)
{
    struct psmsg_field f;
    if (!psmsg_find(&reply->body, PSF_PLACEMENT, &f) || f.len != (size_t)p->o.np * 4) {
        fprintf(stderr, "psrun: psid's answer has no placement of the ranks\n");
        return -1;
    }
    uint32_t *nodes = calloc(p->o.np, sizeof *nodes);
    size_t n = 0;
    if (!nodes) {
        fprintf(stderr, "psrun: out of memory\n");
        return -1;
    }
    for (uint32_t r = 0; r < p->o.np; r++) {
        uint32_t id = be_get32(f.val + 4 * (size_t)r);
        bool seen = false;
        for (size_t i = n; i-- > 0 && !seen;) seen = nodes[i] == id;
        if (!seen) nodes[n++] = id;
    }
    struct psi_bcast_req r = {.fd = p->bcast_fd,
                              .dest = p->bcast_pat,
                              .nodes = nodes,
                              .n = n,
                              .flags = p->o.bcast_keep ? PSBCAST_F_KEEP : 0,
                              .job = jobid};
    struct psi_bcast_result res;
    double t0 = now();
    int rc = psi_bcast(&p->psi, &r, &res);
    free(nodes);
    close(p->bcast_fd);
    p->bcast_fd = -1;
    if (rc < 0) {
        fprintf(stderr, "psrun: --bcast: cannot copy %s: %s\n", p->o.argv[0],
                res.fails[0].text[0] ? res.fails[0].text : strerror(errno));
        return -1;
    }
    if (res.failed) {
        psi_bcast_report(stderr, "psrun: --bcast", &res, &p->nodes);
        fprintf(stderr,
                "psrun: --bcast: the copy of %s failed on %u of %u nodes: nothing started\n",
                p->o.argv[0], res.failed, res.ok + res.failed);
        return -1;
    }
    if (p->o.verbose)
        fprintf(stderr, "psrun: %s (%" PRIu64 " bytes) copied to %u nodes as %s in %.1f ms\n",
                p->o.argv[0], res.bytes, res.ok, p->bcast_pat, (now() - t0) * 1e3);
    return 0;
}

/* A held spawn (-o/-e, --bcast): asked and answered before the loop runs, output files
 * opened, the program broadcast, then the go. *id: the spawn's request id, *jobid. 0, or -1
 * (said). */
/* an event while the held spawn's answer is awaited: with gang scheduling it may be queued */
static void queued_event(void *ctx, const struct psmsg *m)
{
    (void)ctx;
    if (m->type == PSM_SPAWN_QUEUED) lg_spawn_queued_say(m, NULL);
}

static int held_spawn(struct psrun *p, const uint32_t *ids, size_t nids, uint32_t *id,
                      uint64_t *jobid)
{
    struct psmsg_buf b = {0};
    if (build_spawn(p, ids, nids, true, &b) < 0) return -1;
    struct psmsg reply;
    /* the answer may wait in psid's queue (gang scheduling): meanwhile psrun's signals act
     * as by default (nothing started; psrun's end takes the spawn out of the queue) */
    sigprocmask(SIG_UNBLOCK, &p->sigset, NULL);
    int rc = psi_call_ev(&p->psi, &b, &reply, queued_event, NULL);
    sigprocmask(SIG_BLOCK, &p->sigset, NULL);
    if (rc < 0) {
        char text[256] = "";
        int e = errno;
        if (e == EMSGSIZE) {
            spawn_build_error(&b);
        } else {
            psmsg_get_str(&reply.body, PSF_TEXT, text, sizeof text);
            fprintf(stderr, "psrun: cannot start the job: %s\n", text[0] ? text : strerror(e));
        }
        psmsg_buf_free(&b);
        return -1;
    }
    psmsg_buf_free(&b);
    *id = reply.id;
    if (psmsg_get_u64(&reply.body, PSF_JOB, jobid) < 0) {
        fprintf(stderr, "psrun: psid's answer to the spawn has no job id\n");
        return -1;
    }
    if (open_outputs(p, *jobid, &reply) < 0) return -1;
    return p->o.bcast ? bcast_program(p, *jobid, &reply) : 0;
}

/* send a signal to the job now, or as soon as its id is known */
static void signal_job(struct psrun *p, int sig)
{
    if (lg_job_signal(&p->job, sig) == 0) return;
    if (errno == EAGAIN && p->npending < (int)(sizeof p->pending / sizeof p->pending[0]))
        p->pending[p->npending++] = sig;
}

/* SIGKILL to the job. A rank whose process is dead is reported only when its output ends;
 * if a descendant that did not get the signal holds the output open, psrun waits
 * GIVE_UP_DELAY more and then leaves: ending the rest is psid's job once psrun's connection
 * closes. */
static void kill_job(struct psrun *p)
{
    p->ending = true;
    signal_job(p, SIGKILL);
    if (!p->give_up_at) p->give_up_at = now() + GIVE_UP_DELAY;
}

/* psrun ends the job: sig now, SIGKILL after the kill delay */
static void end_job(struct psrun *p, int sig)
{
    p->ending = true;
    signal_job(p, sig);
    if (!p->kill_at) p->kill_at = now() + p->o.kill_delay;
}

static void on_signal(struct psrun *p, int sig)
{
    char sn[32];
    double t = now();
    if (p->job.queued && !p->job.spawned && (sig == SIGINT || sig == SIGTERM || sig == SIGHUP)) {
        /* nothing started: leaving takes the spawn out of psid's queue */
        fprintf(stderr, "psrun: %s: the queued job is cancelled\n",
                psi_sig_name(sig, sn, sizeof sn));
        exit(128 + sig);
    }
    if (lg_job_ended(&p->job) && (sig == SIGINT || sig == SIGTERM || sig == SIGHUP)) {
        /* only output is left, and nobody wants to wait for it */
        lg_job_discard(&p->job, 0);
        lg_job_discard(&p->job, 1);
        return;
    }
    switch (sig) {
    case SIGINT:
        if (p->last_int && t - p->last_int < 1.0) {
            lg_job_say(&p->job, "second interrupt: killing the job");
            if (!p->job.spawned) exit(130); /* psid ends what was started */
            kill_job(p);
        } else {
            lg_job_say(&p->job, "interrupt: SIGINT sent to every rank (again within 1 s to "
                                "kill the job)");
            signal_job(p, SIGINT);
        }
        p->last_int = t;
        break;
    case SIGTERM:
    case SIGHUP:
        if (p->o.verbose)
            lg_job_say(&p->job, "%s: forwarded to the job", psi_sig_name(sig, sn, sizeof sn));
        end_job(p, sig);
        break;
    default:
        signal_job(p, sig);
        break;
    }
}

static void read_signals(struct psrun *p)
{
    struct signalfd_siginfo si;
    while (read(p->sigfd, &si, sizeof si) == (ssize_t)sizeof si) on_signal(p, (int)si.ssi_signo);
}

static bool said_unreachable(const struct psrun *p, uint32_t id, size_t *at)
{
    for (size_t i = 0; i < p->nunreachable; i++)
        if (p->unreachable[i] == id) {
            if (at) *at = i;
            return true;
        }
    return false;
}

/* The node table came: a node with running ranks of the job that became unreachable, or
 * answers again, is said (the ranks there run on meanwhile, their output waits). */
static void on_nodes(struct psrun *p, const struct psmsg *m)
{
    struct psi_nodetab t;
    if (psi_nodetab_parse(m, &t) < 0) return;
    for (size_t i = 0; i < t.n; i++) {
        const struct psi_node *nd = &t.v[i];
        char ranks[96] = "";
        size_t len = 0, n = 0;
        for (uint32_t r = 0; r < p->o.np; r++) {
            if (p->job.r[r].state != LG_R_RUN || p->job.r[r].node != nd->id) continue;
            if (n++ < 8 && len + 12 < sizeof ranks)
                len += (size_t)snprintf(ranks + len, sizeof ranks - len, "%s%" PRIu32,
                                        len ? "," : "", r);
        }
        if (n > 8) snprintf(ranks + len, sizeof ranks - len, ",...");
        size_t at;
        bool said = said_unreachable(p, nd->id, &at);
        if (nd->state == PSNODE_UNREACHABLE && n && !said) {
            uint32_t *v = realloc(p->unreachable, (p->nunreachable + 1) * sizeof *v);
            if (!v) continue;
            p->unreachable = v;
            v[p->nunreachable++] = nd->id;
            lg_job_say(&p->job,
                       "node %s is unreachable: rank%s %s of the job run%s on there, and "
                       "its output waits (psid declares the node down if it stays silent)",
                       nd->name, n == 1 ? "" : "s", ranks, n == 1 ? "s" : "");
        } else if (nd->state == PSNODE_UP && said) {
            p->unreachable[at] = p->unreachable[--p->nunreachable];
            lg_job_say(&p->job, "node %s answers again", nd->name);
        }
    }
    psi_nodetab_free(&t);
}

static void ask_nodes(struct psrun *p)
{
    struct psmsg_buf b = {0};
    psmsg_begin(&b, PSM_NODES, 0);
    if (lg_conn_send(&p->conn, &b, 0, &p->nodes_req) < 0) p->nodes_req = 0;
    psmsg_buf_free(&b);
}

static void time_limit_reached(struct psrun *p)
{
    p->deadline = 0;
    lg_job_say(&p->job, "time limit of %g s reached: terminating the job", p->o.time_limit);
    lg_exitagg_add(&p->job.agg, LG_NO_RANK, LG_EXIT_TIMEOUT);
    end_job(p, SIGTERM);
}

/* The time limit is due by the clock: with gang scheduling only the time the job ran counts
 * (its quanta frozen do not, as Slurm's suspended time does not), so psid is asked. */
static void ask_gang(struct psrun *p)
{
    struct psmsg_buf b = {0};
    psmsg_begin(&b, PSM_GANG, 0);
    if (lg_conn_send(&p->conn, &b, 0, &p->gang_req) < 0) p->gang_req = 0;
    psmsg_buf_free(&b);
    if (!p->gang_req)
        time_limit_reached(p);
    else
        p->deadline = now() + 2.0; /* no answer by then: the limit as by the clock */
}

static void on_gang(struct psrun *p, const struct psmsg *m)
{
    uint32_t q = 0, quanta = 0, ran = 0;
    bool found = false;
    if (m->type == PSM_GANG_REPLY && psmsg_get_u32(&m->body, PSF_QUANTUM_MS, &q) == 0 && q) {
        size_t pos = 0;
        struct psmsg_field f;
        while (!found && psmsg_next(&m->body, &pos, &f)) {
            struct psmsg_view v = {f.val, f.len};
            uint64_t job = 0;
            found = f.tag == PSF_GANG_JOB && psmsg_get_u64(&v, PSF_JOB, &job) == 0 &&
                    job == p->job.jobid && psmsg_get_u32(&v, PSF_QUANTA, &quanta) == 0 &&
                    psmsg_get_u32(&v, PSF_RAN, &ran) == 0 && ran <= quanta;
        }
    }
    double t = now(), frozen = found ? (quanta - ran) * (q / 1000.0) : 0;
    double ran_s = t - p->run_start - frozen;
    if (ran_s >= p->o.time_limit - 0.001)
        time_limit_reached(p);
    else
        p->deadline = t + (p->o.time_limit - ran_s);
}

static void read_psid(struct psrun *p)
{
    for (int round = 0; round < 16; round++) {
        ssize_t r = lg_conn_read(&p->conn);
        if (r < 0 && (errno == EAGAIN || errno == EINTR)) return;
        if (r <= 0) {
            if (!lg_job_ended(&p->job))
                lg_job_say(&p->job, "lost the connection to psid: %s",
                           r == 0 ? "closed" : strerror(errno));
            p->conn_lost = true;
            return;
        }
        struct psmsg m;
        int n;
        while ((n = lg_conn_next(&p->conn, &m)) == 1) {
            if (p->gang_req && m.id == p->gang_req &&
                (m.type == PSM_GANG_REPLY || m.type == PSM_ERROR)) {
                p->gang_req = 0;
                if (p->deadline) on_gang(p, &m);
                continue;
            }
            if (m.type == PSM_NODES_REPLY && p->nodes_req && m.id == p->nodes_req) {
                p->nodes_req = 0;
                on_nodes(p, &m);
                continue;
            }
            bool had_id = p->job.spawned;
            if (lg_job_handle(&p->job, &m) < 0) {
                lg_job_say(&p->job, "%s", strerror(p->job.error));
                p->conn_lost = true;
                return;
            }
            if (!had_id && p->job.spawned) {
                if (p->o.verbose) {
                    char tid[32];
                    lg_job_say(&p->job, "job %s: %" PRIu32 " ranks",
                               psi_tid_str(p->job.jobid, tid, sizeof tid), p->o.np);
                }
                for (int i = 0; i < p->npending; i++) lg_job_signal(&p->job, p->pending[i]);
                p->npending = 0;
            }
        }
        if (n < 0) {
            lg_job_say(&p->job, "malformed message from psid");
            p->conn_lost = true;
            return;
        }
    }
}

static void read_stdin(struct psrun *p, size_t room)
{
    static uint8_t buf[INPUT_CHUNK];
    if (room > sizeof buf) room = sizeof buf;
    ssize_t r;
    do r = read(STDIN_FILENO, buf, room);
    while (r < 0 && errno == EINTR);
    if (r < 0 && errno == EAGAIN) return;
    if (r <= 0) {
        p->stdin_done = true;
        lg_job_input(&p->job, NULL, 0);
        return;
    }
    lg_job_input(&p->job, buf, (size_t)r);
}

static void write_out(struct psrun *p, int s)
{
    ssize_t w = lg_outq_write(&p->job.out[s], p->out[s].fd, p->out[s].max, lg_job_written, &p->job);
    if (w >= 0 || errno == EAGAIN) return;
    int e = errno;
    lg_job_discard(&p->job, s);
    if (s == 0 && e == EPIPE && !p->sigpipe_sent) {
        /* nobody reads our stdout: as in a shell pipeline, the writers get SIGPIPE */
        p->sigpipe_sent = true;
        signal_job(p, SIGPIPE);
    } else if (s == 0) {
        lg_job_say(&p->job, "cannot write to stdout: %s; output dropped", strerror(e));
    }
}

static void check_timers(struct psrun *p)
{
    double t = now();
    if (p->job.spawned && !lg_job_ended(&p->job) && !p->conn_lost && !p->nodes_req &&
        t >= p->nodes_at) {
        p->nodes_at = t + NODES_POLL_S;
        ask_nodes(p);
    }
    if (p->o.time_limit && !p->limit_armed && p->job.spawned) {
        /* the time limit counts from the start, not the time a spawn waited in a queue */
        p->limit_armed = true;
        p->run_start = t;
        p->deadline = t + p->o.time_limit;
    }
    if (p->deadline && t >= p->deadline) {
        if (p->gang_req || p->conn_lost)
            time_limit_reached(p); /* psid did not answer in time */
        else
            ask_gang(p);
    }
    if (p->kill_at && t >= p->kill_at) {
        p->kill_at = 0;
        if (!lg_job_ended(&p->job)) {
            lg_job_say(&p->job, "the job did not end within %g s: SIGKILL", p->o.kill_delay);
            kill_job(p);
        }
    }
    if (p->give_up_at && t >= p->give_up_at && !lg_job_ended(&p->job)) {
        uint32_t left = p->o.np - p->job.ended;
        lg_job_say(&p->job,
                   "%" PRIu32 " rank%s not ended %g s after SIGKILL (their output is "
                   "still open): leaving them to psid",
                   left, left == 1 ? "" : "s", GIVE_UP_DELAY);
        p->gave_up = true;
        p->give_up_at = 0;
        lg_exitagg_add(&p->job.agg, LG_NO_RANK, 128 + SIGKILL);
        lg_job_discard(&p->job, 0);
    }
    if (p->job.lost && !p->ending && !lg_job_ended(&p->job)) {
        /* as srun: a job that lost a node cannot go on (its MPI world is broken) */
        lg_job_say(&p->job, "a node of the job was lost: terminating the job");
        end_job(p, SIGTERM);
    }
    if (p->job.mpi_fatal && !p->ending && !lg_job_ended(&p->job)) {
        /* as mpiexec: an MPI job does not go on without one of its ranks */
        lg_job_say(&p->job, "%s: ending the MPI job (SIGKILL to every rank)", p->job.mpi_why);
        lg_job_teardown(&p->job);
        kill_job(p);
    }
    if (p->o.kill_on_bad && p->job.failed && !p->ending && !lg_job_ended(&p->job)) {
        lg_job_say(&p->job, "rank %" PRIu32 " failed: terminating the job (--kill-on-bad-exit)",
                   p->job.agg.rank);
        end_job(p, SIGTERM);
    }
}

static int poll_timeout(const struct psrun *p)
{
    double t = now(), next = 0;
    if (p->deadline) next = p->deadline;
    if (p->job.spawned && !lg_job_ended(&p->job) && !p->conn_lost && !p->nodes_req &&
        (!next || p->nodes_at < next))
        next = p->nodes_at;
    if (p->kill_at && (!next || p->kill_at < next)) next = p->kill_at;
    if (p->give_up_at && (!next || p->give_up_at < next)) next = p->give_up_at;
    if (!next) return -1;
    double ms = (next - t) * 1000.0 + 1;
    return ms < 0 ? 0 : ms > 60000 ? 60000 : (int)ms;
}

/* The descriptors psrun waits on, as watches of the event loop (psloop.h). What it waits
 * for changes with the job (room in the stdin window, output queued, requests for psid
 * queued), so the watches are set again before every round. */
enum { W_PSID, W_SIG, W_IN, W_OUT, W_ERR, NW };

/* an output file: written while its queue holds something (a regular file is always ready:
 * the write may block on a slow disk, which is the flow control: psrun acknowledges later
 * and the ranks block in write) */
static void on_file(void *ctx, uint32_t events)
{
    struct ofile *f = ctx;
    struct psrun *p = f->p;
    (void)events;
    ssize_t w = lg_outq_write(&p->job.files[f->idx], f->f.fd, f->f.max, lg_job_written, &p->job);
    if (w >= 0 || errno == EAGAIN || errno == EINTR) return;
    lg_job_say(&p->job, "cannot write to %s: %s; the output for it is dropped",
               p->routes.paths.v[f->idx], strerror(errno));
    lg_job_file_failed(&p->job, f->idx);
}

static void watch_files(struct psrun *p)
{
    for (size_t i = 0; i < p->nfiles; i++) {
        struct ofile *f = &p->files[i];
        bool want = !lg_outq_empty(&p->job.files[i]);
        if (want == f->watched) continue;
        if (!want) {
            loop_fd_del(p->loop, f->f.fd);
        } else if (loop_fd(p->loop, f->f.fd, EPOLLOUT, on_file, f) < 0) {
            on_file(f, EPOLLERR);
            continue;
        }
        f->watched = want;
    }
}

static void on_psid(void *ctx, uint32_t events)
{
    if (events & (EPOLLIN | EPOLLHUP | EPOLLERR)) read_psid(ctx);
}

static void on_sig(void *ctx, uint32_t events)
{
    (void)events;
    read_signals(ctx);
}

static void on_stdin(void *ctx, uint32_t events)
{
    struct psrun *p = ctx;
    (void)events;
    read_stdin(p, p->stdin_room);
}

static void on_stdout(void *ctx, uint32_t events)
{
    (void)events;
    write_out(ctx, 0);
}

static void on_stderr(void *ctx, uint32_t events)
{
    (void)events;
    write_out(ctx, 1);
}

/* Watch slot w's descriptor fd for events (0: not at all). A descriptor the loop cannot
 * watch (closed, say) is handed to its callback at once, as poll reports POLLNVAL. */
static void watch(struct psrun *p, int w, int fd, uint32_t events)
{
    static const loop_fd_fn fn[NW] = {on_psid, on_sig, on_stdin, on_stdout, on_stderr};
    if (p->watch_fd[w] >= 0 && (p->watch_fd[w] != fd || !events)) {
        loop_fd_del(p->loop, p->watch_fd[w]);
        p->watch_fd[w] = -1;
    }
    if (!events || (p->watch_fd[w] == fd && p->watch_ev[w] == events)) return;
    if (loop_fd(p->loop, fd, events, fn[w], p) < 0) {
        fn[w](p, EPOLLERR);
        return;
    }
    p->watch_fd[w] = fd;
    p->watch_ev[w] = events;
}

static int loop(struct psrun *p)
{
    for (int w = 0; w < NW; w++) p->watch_fd[w] = -1;
    for (;;) {
        bool outputs_empty = lg_outq_empty(&p->job.out[0]) && lg_outq_empty(&p->job.out[1]);
        for (size_t i = 0; i < p->nfiles && outputs_empty; i++)
            outputs_empty = lg_outq_empty(&p->job.files[i]);
        if (outputs_empty && (lg_job_ended(&p->job) || p->conn_lost || p->gave_up)) break;
        watch(p, W_PSID, p->conn.fd,
              p->conn_lost ? 0 : EPOLLIN | (lg_outq_empty(&p->conn.tx) ? 0 : EPOLLOUT));
        watch(p, W_SIG, p->sigfd, EPOLLIN);
        p->stdin_room = 0;
        if (!p->stdin_done && !p->conn_lost) {
            if (!lg_job_input_wanted(&p->job))
                p->stdin_done = true;
            else
                p->stdin_room = lg_job_input_room(&p->job);
        }
        watch(p, W_IN, STDIN_FILENO, p->stdin_room && !p->stdin_done ? EPOLLIN : 0);
        for (int s = 0; s < 2; s++)
            watch(p, W_OUT + s, p->out[s].fd, lg_outq_empty(&p->job.out[s]) ? 0 : EPOLLOUT);
        watch_files(p);
        int ms = poll_timeout(p);
        if (loop_step(p->loop, ms < 0 ? UINT64_MAX : loop_now() + (uint64_t)ms * 1000000u) < 0) {
            fprintf(stderr, "psrun: epoll_wait: %s\n", strerror(errno));
            return 1;
        }
        check_timers(p);
        if (!p->conn_lost) {
            lg_job_flush_acks(&p->job);
            if (lg_conn_flush(&p->conn) < 0) {
                if (!lg_job_ended(&p->job))
                    lg_job_say(&p->job, "lost the connection to psid: %s", strerror(errno));
                p->conn_lost = true;
            }
        }
        if (p->job.error) return 1;
    }
    if (p->job.spawn_failed) {
        fprintf(stderr, "psrun: cannot start the job: %s\n",
                p->job.spawn_text[0] ? p->job.spawn_text : strerror(p->job.spawn_errno));
        return 1;
    }
    if (p->job.torn)
        fprintf(stderr, "psrun: %" PRIu32 " rank%s killed as the job ended\n", p->job.torn,
                p->job.torn == 1 ? "" : "s");
    int code = lg_job_exit_code(&p->job);
    if (!lg_job_ended(&p->job) && !code) code = LG_EXIT_LOST;
    return code;
}

static int setup_signals(struct psrun *p)
{
    sigset_t set;
    sigemptyset(&set);
    int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
        /* a signal ignored on entry stays ignored: nohup psrun, psrun & in a script */
        struct sigaction old;
        if (sigaction(sigs[i], NULL, &old) == 0 && old.sa_handler == SIG_IGN) continue;
        sigaddset(&set, sigs[i]);
    }
    signal(SIGPIPE, SIG_IGN);
    p->sigset = set;
    if (sigprocmask(SIG_BLOCK, &set, NULL) < 0) return -1;
    p->sigfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
    return p->sigfd < 0 ? -1 : 0;
}

/* --stats, --stats-file: the job's accounting (logger/stats.h) */
static void write_stats(struct psrun *p, uint64_t elapsed_us)
{
    if (p->o.stats) {
        fflush(stdout);
        lg_stats_write(stderr, &p->job, job_name(&p->o), elapsed_us);
    }
    if (!p->o.stats_file) return;
    FILE *f = fopen(p->o.stats_file, "we");
    if (!f) {
        fprintf(stderr, "psrun: --stats-file %s: %s\n", p->o.stats_file, strerror(errno));
        return;
    }
    lg_stats_write(f, &p->job, job_name(&p->o), elapsed_us);
    if (fclose(f) != 0)
        fprintf(stderr, "psrun: --stats-file %s: %s\n", p->o.stats_file, strerror(errno));
}

/* -c and --cpu-bind's CPUs against the partition's nodes (their CPU counts in the node
 * table): a value no node can take is a usage error, before anything runs. */
static int check_cpus(struct psrun *p, const uint32_t *ids, size_t nids)
{
    struct pscpuset named;
    uint32_t most = 0, least = UINT32_MAX;
    const char *least_name = "?";
    for (size_t i = 0; i < (nids ? nids : 1); i++) /* no list: every node that is up */
        for (size_t k = 0; k < p->nodes.n; k++)
            if ((nids ? p->nodes.v[k].id == ids[i] : p->nodes.v[k].state == PSNODE_UP) &&
                p->nodes.v[k].cpus) {
                uint32_t n = p->nodes.v[k].cpus;
                if (n > most) most = n;
                if (n < least) {
                    least = n;
                    least_name = p->nodes.v[k].name;
                }
            }
    if (!most) return 0; /* the table does not say */
    if (p->o.cpt > most) {
        fprintf(stderr, "psrun: -c %u: more CPUs than any node of the partition has (%u)\n",
                p->o.cpt, most);
        return -1;
    }
    uint32_t mode = p->o.bind & PSBIND_MODE_MASK;
    if (mode != PSBIND_MAP_CPU && mode != PSBIND_MASK_CPU) return 0;
    if (pscpu_map_check(p->o.bind_map, mode == PSBIND_MASK_CPU, &named, NULL, 0) < 0) return -1;
    for (unsigned c = least; c < PSCPU_MAX; c++)
        if (pscpu_isset(&named, c)) {
            fprintf(stderr, "psrun: --cpu-bind=%s: CPU %u is outside node %s (%u CPUs: 0-%u)\n",
                    p->o.bind_arg, c, least_name, least, least - 1);
            return -1;
        }
    return 0;
}

static int run(struct psrun *p)
{
    int brc = p->o.bcast ? bcast_prepare(p) : 0;
    if (brc) return brc;
    if (setup_signals(p) < 0) {
        fprintf(stderr, "psrun: signalfd: %s\n", strerror(errno));
        return 1;
    }
    if (psi_open(&p->psi, NULL) < 0) {
        fprintf(stderr, "psrun: cannot reach psid at %s: %s\n", psi_socket_path(), strerror(errno));
        return 1;
    }
    if (psi_nodes(&p->psi, &p->nodes) < 0) {
        fprintf(stderr, "psrun: cannot read the node table: %s\n", strerror(errno));
        return 1;
    }
    struct lg_partition part;
    char err[512];
    uint32_t *ids = NULL;
    size_t nids = 0;
    struct lg_strv skipped = {0};
    if (lg_partition_get(p->o.nodes, getenv, &part, err, sizeof err) < 0 ||
        lg_partition_resolve(&part, &p->nodes, &ids, &nids, &skipped, err, sizeof err) < 0) {
        fprintf(stderr, "psrun: %s\n", err);
        lg_partition_free(&part);
        lg_strv_free(&skipped);
        return 1;
    }
    if (p->o.verbose && part.source) {
        fprintf(stderr, "psrun: nodes from %s:", part.source);
        for (size_t i = 0; i < nids; i++) {
            char nn[64];
            fprintf(stderr, " %s", psi_nodetab_name(&p->nodes, ids[i], nn, sizeof nn));
        }
        fputc('\n', stderr);
    }
    for (size_t i = 0; i < skipped.n; i++)
        fprintf(stderr, "psrun: warning: node '%s' (from %s) is down, not used\n", skipped.v[i],
                part.source);
    lg_partition_free(&part);
    lg_strv_free(&skipped);
    if (check_cpus(p, ids, nids) < 0) {
        free(ids);
        return 2;
    }

    /* -o/-e other than psrun's own streams: the spawn is held until the files are open;
     * --bcast: until the program is on the job's nodes */
    bool hold = p->o.out.kind != LG_OUT_ALL || p->o.err.kind != LG_OUT_ALL || p->o.bcast;
    uint32_t spawn_id = 0;
    uint64_t jobid = 0;
    if (hold && held_spawn(p, ids, nids, &spawn_id, &jobid) < 0) {
        free(ids);
        return 1;
    }
    /* the connection now belongs to the loop */
    lg_conn_from_psi(&p->conn, &p->psi);
    int rc = hold ? 0 : send_spawn(p, ids, nids, &spawn_id);
    free(ids);
    if (rc < 0) return 1;
    struct lg_job_cfg cfg = {.np = p->o.np,
                             .label = p->o.label,
                             .verbose = p->o.verbose > 0,
                             .input = p->o.input,
                             .prog = p->o.argv[0],
                             .nodes = &p->nodes,
                             .mpi = p->o.mpi != PSPMI_MODE_NONE,
                             .cpu_verbose = (p->o.bind & PSBIND_VERBOSE) != 0};
    if (lg_job_init(&p->job, &cfg, &p->conn, spawn_id) < 0) {
        fprintf(stderr, "psrun: out of memory\n");
        return 1;
    }
    if (hold) {
        const uint32_t *route[2] = {p->routes.route[0], p->routes.route[1]};
        struct psmsg_buf b = {0};
        p->job.spawned = true;
        p->job.jobid = jobid;
        psmsg_begin(&b, PSM_SPAWN_GO, 0);
        psmsg_put_u64(&b, PSF_JOB, jobid);
        if (lg_job_set_routes(&p->job, route, p->nfiles) < 0 ||
            lg_conn_send(&p->conn, &b, 0, NULL) < 0) {
            fprintf(stderr, "psrun: out of memory\n");
            return 1;
        }
        if (p->o.verbose) {
            char tid[32];
            lg_job_say(&p->job, "job %s: %" PRIu32 " ranks", psi_tid_str(jobid, tid, sizeof tid),
                       p->o.np);
        }
    }
    open_out(&p->out[0], STDOUT_FILENO);
    open_out(&p->out[1], STDERR_FILENO);
    if (!(p->loop = loop_new())) {
        fprintf(stderr, "psrun: event loop: %s\n", strerror(errno));
        return 1;
    }
    double started = now();
    rc = loop(p);
    loop_free(p->loop);
    if ((p->o.stats || p->o.stats_file) && p->job.spawned && !p->job.spawn_failed)
        write_stats(p, (uint64_t)((now() - started) * 1e6));
    return rc;
}

int main(int argc, char **argv)
{
    if (psc_version_asked(argc, argv, "psrun")) return 0;
    struct psrun p;
    memset(&p, 0, sizeof p);
    p.sigfd = -1;
    p.bcast_fd = -1;
    p.psi.fd = -1;
    p.conn.fd = -1;
    int rc = parse_args(argc, argv, &p.o);
    if (rc) return rc < 0 ? 0 : rc;
    rc = run(&p);
    lg_job_free(&p.job);
    free(p.unreachable);
    lg_conn_close(&p.conn);
    psi_close(&p.psi);
    psi_nodetab_free(&p.nodes);
    lg_strv_free(&p.o.exports);
    free(p.o.mp_argv[2]);
    for (int s = 0; s < 2; s++)
        if (p.out[s].own) close(p.out[s].fd);
    for (size_t i = 0; i < p.nfiles; i++) close(p.files[i].f.fd);
    free(p.files);
    lg_routes_free(&p.routes);
    if (p.sigfd >= 0) close(p.sigfd);
    if (p.bcast_fd >= 0) close(p.bcast_fd);
    return rc;
}
