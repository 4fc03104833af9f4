/*
 * pswait.c - wait for tasks anywhere in the cluster to end, through psid's death
 * notifications: prints one line per task as it ends (its exit status, the signal that
 * killed it, or that its node was lost) and exits with the last task's status.
 *
 * usage: pswait [-v] TID...      (TID: NODE:PID, NODE an id or a name)
 */
#include "../logger/nodetab.h"
#include "psi.h"

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
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
        if (lg_tid_check(argv[i], err, sizeof err) < 0) {
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
    struct lg_nodetab nodes; /* names in task ids, as pskill reads them */
    if (lg_nodetab_fetch(&c, &nodes) < 0) {
        fprintf(stderr, "pswait: cannot read the node table: %s\n", strerror(errno));
        psi_close(&c);
        return 1;
    }
    int waiting = 0, rc = 0;
    for (int i = optind; i < argc; i++) {
        uint64_t tid;
        char err[256];
        if (lg_tid_parse(argv[i], &nodes, &tid, err, sizeof err) < 0) {
            fprintf(stderr, "pswait: %s\n", err);
            rc = 1;
            continue;
        }
        struct psmsg_buf b = {0};
        struct psmsg m;
        psmsg_begin(&b, PSM_NOTIFY, 0);
        psmsg_put_u64(&b, PSF_TID, tid);
        psmsg_put_u32(&b, PSF_SIGNAL, 0);
        int r = psi_call(&c, &b, &m);
        psmsg_buf_free(&b);
        uint32_t e = 0;
        if (r == 0) psmsg_get_u32(&m.body, PSF_ERRNO, &e);
        if (r < 0 || e) {
            fprintf(stderr, "pswait: %s: %s\n", argv[i], strerror(r < 0 ? errno : (int)e));
            rc = 1;
            continue;
        }
        waiting++;
        if (verbose) fprintf(stderr, "pswait: watching %s\n", argv[i]);
    }
    uint8_t buf[4096];
    size_t len = 0;
    while (waiting > 0) {
        ssize_t r = recv(c.fd, buf + len, sizeof buf - len, 0);
        if (r <= 0) {
            fprintf(stderr, "pswait: lost the connection to psid\n");
            return 1;
        }
        len += (size_t)r;
        for (;;) {
            uint32_t fl = len >= PSMSG_HDR ? psmsg_frame_len(buf, len) : 0;
            struct psmsg m;
            if (!fl || len < fl) break;
            if (psmsg_parse(buf, fl, &m) == 0 && m.type == PSM_DEAD) {
                uint64_t tid = 0;
                uint32_t st = 0;
                psmsg_get_u64(&m.body, PSF_TID, &tid);
                printf("%u:%d ", PSTID_NODE(tid), PSTID_PID(tid));
                if (psmsg_get_u32(&m.body, PSF_LOST, &st) == 0) {
                    printf("node lost\n");
                    rc = 255;
                } else {
                    psmsg_get_u32(&m.body, PSF_STATUS, &st);
                    if (WIFSIGNALED(st)) {
                        printf("killed by signal %d (%s)\n", WTERMSIG(st), strsignal(WTERMSIG(st)));
                        rc = 128 + WTERMSIG(st);
                    } else {
                        printf("exited with status %d\n", WEXITSTATUS(st));
                        rc = WEXITSTATUS(st);
                    }
                }
                fflush(stdout);
                waiting--;
            }
            memmove(buf, buf + fl, len - fl);
            len -= fl;
        }
    }
    lg_nodetab_free(&nodes);
    psi_close(&c);
    return rc;
}
