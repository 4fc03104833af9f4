/*
 * pskill.c - send a signal to tasks anywhere in the cluster, by task id, like kill(1).
 *
 *   pskill [-s SIG | -SIG] TID...        TID: NODE:PID, NODE a node id or name
 *   pskill [-s SIG | -SIG] --job JOB...  every task of a job (JOB: its psrun's task id)
 *   pskill -l [SIG]                      list signal names, or name / number one
 *
 * SIG is a number or a name (TERM, SIGTERM, term); the default is TERM. Each target is one
 * PSM_SIGNAL request to the local psid, which routes it to the task's node; errors are
 * printed as kill(1) prints them ("pskill: 2:4711: No such process") and make the exit
 * status 1; a malformed task id is a bad command line (exit 2, nothing sent). Manual:
 * docs/man/pskill.1.
 */
#include "psi.h"
#include "psversion.h"
#include "psi_signames.h"
#include "psi_tid.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage_text[] =
    "usage: pskill [-s SIG | -SIG] TID...\n"
    "       pskill [-s SIG | -SIG] --job JOB...\n"
    "       pskill -l [SIG]\n"
    "\n"
    "Send signal SIG (default TERM) to tasks anywhere in the cluster.\n"
    "  TID               a task id NODE:PID; NODE is a node id or a node name\n"
    "  -s, --signal SIG  the signal: a number or a name (TERM, SIGTERM, term)\n"
    "  -SIG              the same, as in kill -9 or kill -KILL\n"
    "  -j, --job         the arguments are jobs (the task id of the job's psrun): signal\n"
    "                    every task of them\n"
    "  -v, --verbose     say how many tasks of each job got the signal\n"
    "  -l, --list        list the signal names; with SIG, translate it\n"
    "  -h, --help        this text\n"
    "Exit status: 0 if every signal was delivered, 1 otherwise, 2 for a bad command line.\n"
    "The psid asked is the one at $PSID_SOCKET (default " PSI_DEFAULT_SOCKET ").\n";

static int usage(FILE *f, int rc)
{
    fputs(usage_text, f);
    return rc;
}

static int list(const char *arg)
{
    char b[32];
    if (arg) {
        int sig = psi_sig_parse(arg);
        if (sig < 0) {
            fprintf(stderr, "pskill: %s: invalid signal\n", arg);
            return 1;
        }
        /* a number gives its name, a name its number (kill -l) */
        if (arg[0] >= '0' && arg[0] <= '9')
            printf("%s\n", psi_sig_name(sig, b, sizeof b) + 3);
        else
            printf("%d\n", sig);
        return 0;
    }
    for (int sig = 1; sig < NSIG; sig++)
        printf("%2d) %-12s%s", sig, psi_sig_name(sig, b, sizeof b), sig % 5 == 0 ? "\n" : " ");
    printf("\n");
    return 0;
}

/* one PSM_SIGNAL: 0, or the errno (the reply's, or of the call) */
static int send_signal(struct psi *c, uint16_t tag, uint64_t target, int sig, uint32_t *count)
{
    struct psmsg_buf req = {0};
    struct psmsg rep;
    psmsg_begin(&req, PSM_SIGNAL, 0);
    psmsg_put_u64(&req, tag, target);
    psmsg_put_u32(&req, PSF_SIGNAL, (uint32_t)sig);
    int r = psi_call(c, &req, &rep);
    psmsg_buf_free(&req);
    if (r < 0) return errno ? errno : EIO;
    if (rep.type != PSM_SIGNAL_REPLY) return EPROTO;
    uint32_t e = 0;
    psmsg_get_u32(&rep.body, PSF_ERRNO, &e);
    if (count) psmsg_get_u32(&rep.body, PSF_COUNT, count);
    return (int)e;
}

int main(int argc, char **argv)
{
    if (psc_version_asked(argc, argv, "pskill")) return 0;
    static const struct option opts[] = {
        {"signal", required_argument, 0, 's'}, {"job", no_argument, 0, 'j'},
        {"list", no_argument, 0, 'l'},         {"verbose", no_argument, 0, 'v'},
        {"help", no_argument, 0, 'h'},         {0, 0, 0, 0}};
    int sig = SIGTERM, o;
    bool job = false, listing = false, verbose = false;
    /* kill -9 / kill -KILL: a signal as the first argument */
    if (argc > 1 && argv[1][0] == '-' && argv[1][1] && argv[1][1] != '-' &&
        !strchr("sjlvh", argv[1][1])) {
        if ((sig = psi_sig_parse(argv[1] + 1)) < 0) {
            fprintf(stderr, "pskill: %s: invalid signal\n", argv[1] + 1);
            return usage(stderr, 2);
        }
        argv[1] = argv[0];
        argv++;
        argc--;
    }
    while ((o = getopt_long(argc, argv, "s:jlvh", opts, NULL)) != -1) {
        switch (o) {
        case 's':
            if ((sig = psi_sig_parse(optarg)) < 0) {
                fprintf(stderr, "pskill: %s: invalid signal\n", optarg);
                return usage(stderr, 2);
            }
            break;
        case 'j':
            job = true;
            break;
        case 'l':
            listing = true;
            break;
        case 'v':
            verbose = true;
            break;
        case 'h':
            return usage(stdout, 0);
        default:
            return usage(stderr, 2);
        }
    }
    if (listing) {
        if (argc - optind > 1) return usage(stderr, 2);
        return list(optind < argc ? argv[optind] : NULL);
    }
    if (optind >= argc) {
        fprintf(stderr, "pskill: no %s given\n", job ? "job" : "task id");
        return usage(stderr, 2);
    }
    /* a malformed task id is a bad command line, found before psid is asked anything; an
     * unknown node or task is not (exit 1, below) */
    for (int i = optind; i < argc; i++) {
        char err[256];
        if (psi_tid_check(argv[i], err, sizeof err) < 0) {
            fprintf(stderr, "pskill: %s%s\n", job ? "job " : "", err);
            return usage(stderr, 2);
        }
    }
    struct psi c;
    if (psi_open(&c, NULL) < 0) {
        fprintf(stderr, "pskill: cannot reach psid at %s: %s\n", psi_socket_path(),
                strerror(errno));
        return 1;
    }
    struct psi_nodetab nodes;
    if (psi_nodes(&c, &nodes) < 0) {
        fprintf(stderr, "pskill: cannot read the node table: %s\n", strerror(errno));
        psi_close(&c);
        return 1;
    }
    int rc = 0;
    for (int i = optind; i < argc; i++) {
        uint64_t tid;
        char err[256];
        if (psi_tid_parse(argv[i], &nodes, &tid, err, sizeof err) < 0) {
            fprintf(stderr, "pskill: %s\n", err);
            rc = 1;
            continue;
        }
        uint32_t count = 0;
        int e = send_signal(&c, job ? PSF_JOB : PSF_TID, tid, sig, job ? &count : NULL);
        if (e == 0 && job && count == 0) e = ESRCH;
        if (e) {
            fprintf(stderr, "pskill: %s%s: %s\n", job ? "job " : "", argv[i], strerror(e));
            rc = 1;
            if (e == ECONNRESET || e == EPIPE) break; /* psid is gone */
        } else if (verbose && job) {
            printf("job %s: %" PRIu32 " task%s signalled\n", argv[i], count, count == 1 ? "" : "s");
        }
    }
    psi_nodetab_free(&nodes);
    psi_close(&c);
    return rc;
}
