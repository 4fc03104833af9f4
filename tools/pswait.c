/*
 * pswait.c - wait for tasks anywhere in the cluster to end, through psid's death
 * notifications: prints one line per task as it ends (its exit status, the signal that
 * killed it, or that its node was lost) and exits with the last task's status.
 *
 * usage: pswait [-v] TID...      (TID: NODE:PID, NODE an id or a name)
 */
#include "psi_tid.h"
#include "psversion.h"
#include "psi.h"

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

static const char usage_text[] = "usage: pswait [-v] TID...\n"
                                 "Wait until each task (NODE:PID, NODE an id or a name) ends; "
                                 "print how it ended.\n"
                                 "  -v, --verbose   say on stderr when each task is being watched\n"
                                 "Exit status: the last task's (128+N for signal N, 255 for a "
                                 "lost node);\n"
                                 "1 if a task cannot be watched (no such task or node); 2 for a "
                                 "bad command line\n"
                                 "(a malformed TID: then no task is watched).\n";

int main(int argc, char **argv)
{
    if (psc_version_asked(argc, argv, "pswait")) return 0;
    static const struct option opts[] = {
        {"verbose", no_argument, 0, 'v'}, {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    int o, verbose = 0;
    while ((o = getopt_long(argc, argv, "vh", opts, NULL)) != -1) {
        if (o == 'v') {
            verbose = 1;
            continue;
        }
        fputs(usage_text, o == 'h' ? stdout : stderr);
        return o == 'h' ? 0 : 2;
    }
    if (optind == argc) {
        fputs(usage_text, stderr);
        return 2;
    }
    /* a malformed TID is a bad command line, found before psid is asked anything; an unknown
     * node or task is not (exit 1, below) */
    for (int i = optind; i < argc; i++) {
        char err[256];
        if (psi_tid_check(argv[i], err, sizeof err) < 0) {
            fprintf(stderr, "pswait: %s\n", err);
            fputs(usage_text, stderr);
            return 2;
        }
    }
    struct psi c;
    if (psi_open(&c, NULL) < 0) {
        fprintf(stderr, "pswait: cannot reach psid at %s: %s\n", psi_socket_path(),
                strerror(errno));
        return 1;
    }
    struct psi_nodetab nodes; /* names in task ids, as pskill reads them */
    if (psi_nodes(&c, &nodes) < 0) {
        fprintf(stderr, "pswait: cannot read the node table: %s\n", strerror(errno));
        psi_close(&c);
        return 1;
    }
    int waiting = 0, rc = 0;
    for (int i = optind; i < argc; i++) {
        uint64_t tid;
        char err[256];
        if (psi_tid_parse(argv[i], &nodes, &tid, err, sizeof err) < 0) {
            fprintf(stderr, "pswait: %s\n", err);
            rc = 1;
            continue;
        }
        if (psi_notify(&c, tid, 0) < 0) {
            fprintf(stderr, "pswait: %s: %s\n", argv[i], strerror(errno));
            rc = 1;
            continue;
        }
        waiting++;
        if (verbose) fprintf(stderr, "pswait: watching %s\n", argv[i]);
    }
    /* deaths that came while later tasks were being registered are in psi's queue */
    while (waiting > 0) {
        struct psmsg m;
        struct psi_dead dead;
        if (psi_next_event(&c, &m, -1) < 0) {
            if (errno == EINTR) continue;
            fprintf(stderr, "pswait: lost the connection to psid: %s\n", strerror(errno));
            return 1;
        }
        if (psi_dead_parse(&m, &dead) < 0) continue;
        printf("%u:%d ", PSTID_NODE(dead.tid), PSTID_PID(dead.tid));
        if (dead.lost) {
            printf("node lost\n");
            rc = 255;
        } else if (WIFSIGNALED(dead.status)) {
            int sig = WTERMSIG(dead.status);
            printf("killed by signal %d (%s)\n", sig, strsignal(sig));
            rc = 128 + sig;
        } else {
            printf("exited with status %d\n", WEXITSTATUS(dead.status));
            rc = WEXITSTATUS(dead.status);
        }
        fflush(stdout);
        waiting--;
    }
    psi_nodetab_free(&nodes);
    psi_close(&c);
    return rc;
}
