/*
 * wait.c - waiting for a cluster that `up` started (see pslocal.h): every socket accepts,
 * then every node sees every node up, asked of its psid through libpsi's node table.
 */
#include "pslocal.h"

#include "psi.h"
#include "psi_nodes.h"

#include <err.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

static bool socket_accepts(const char *path)
{
    int types[] = {SOCK_STREAM, SOCK_SEQPACKET};
    for (size_t t = 0; t < 2; t++) {
        int fd = socket(AF_UNIX, types[t] | SOCK_CLOEXEC, 0);
        if (fd < 0) return false;
        struct sockaddr_un a = {.sun_family = AF_UNIX};
        size_t l = strlen(path);
        if (l >= sizeof a.sun_path) {
            close(fd);
            return false;
        }
        memcpy(a.sun_path, path, l + 1);
        int r = connect(fd, (struct sockaddr *)&a, sizeof a);
        int e = errno;
        close(fd);
        if (r == 0) return true;
        if (e != EPROTOTYPE) return false;
    }
    return false;
}

/* Ask node viewer's psid for its node table (libpsi, within the deadline): the first node
 * it does not see up (0..n-1), n if all are up, or -1 if it did not answer (why in out). */
static int first_not_up(const struct pl_up *u, unsigned viewer, int64_t deadline, char *out,
                        size_t outlen)
{
    char sock[PATH_MAX];
    if (psconf_socket_path(&u->conf, viewer, sock, sizeof sock) < 0) return -1;
    struct psi c;
    if (psi_open(&c, sock) < 0) {
        snprintf(out, outlen, "%s: %s", sock, strerror(errno));
        return -1;
    }
    int64_t left = deadline - pl_now_ms();
    if (left < 100) left = 100;
    if (left > 2000) left = 2000;
    struct timeval tv = {.tv_sec = left / 1000, .tv_usec = (left % 1000) * 1000};
    setsockopt(c.fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    struct psi_nodetab t;
    int r = -1;
    if (psi_nodes(&c, &t) == 0) {
        r = (int)u->n;
        for (unsigned i = 0; i < u->n && r == (int)u->n; i++) {
            const struct psi_node *nd = psi_nodetab_id(&t, i);
            if (!nd || nd->state != PSNODE_UP) r = (int)i;
        }
        psi_nodetab_free(&t);
    } else {
        snprintf(out, outlen, "node table: %s", strerror(errno));
    }
    psi_close(&c);
    return r;
}

/*
 * Wait until every socket accepts connections and then (asking psid) until node 0 sees every
 * node up - and the other nodes too, one after the other, so that whatever runs next finds
 * the same cluster from any node. 0, or -1 (reported, with the log of the node to blame).
 */
int pl_wait_ready(struct pl_up *u)
{
    int64_t deadline = pl_now_ms() + (int64_t)(u->o->timeout * 1000);
    bool *ok = calloc(u->n, sizeof *ok);
    if (!ok) err(1, "calloc");
    unsigned ready = 0, viewer = 0; /* nodes before viewer have seen all nodes up */
    int bad = -1, missing = -2;     /* missing: from first_not_up() */
    char psout[65536] = "", why[128] = "";
    while (!pl_got_signal) {
        for (unsigned i = 0; i < u->n; i++) {
            int st;
            if (u->pids[i] > 0 && waitpid(u->pids[i], &st, WNOHANG) == u->pids[i]) {
                u->pids[i] = 0;
                pl_describe_exit(i, st);
                char log[PATH_MAX];
                pl_path_in(log, sizeof log, u->dir, "psid-%u.log", i);
                pl_print_log_tail(log);
                free(ok);
                return -1;
            }
            if (ok[i]) continue;
            char sock[PATH_MAX];
            if (psconf_socket_path(&u->conf, i, sock, sizeof sock) == 0 && socket_accepts(sock)) {
                ok[i] = true;
                ready++;
            }
        }
        if (ready == u->n) {
            while (viewer < u->n &&
                   (missing = first_not_up(u, viewer, deadline, psout, sizeof psout)) == (int)u->n)
                viewer++;
            if (viewer == u->n) break;
        }
        if (pl_now_ms() >= deadline) {
            if (ready < u->n) {
                for (unsigned i = 0; i < u->n; i++)
                    if (!ok[i]) {
                        bad = (int)i;
                        break;
                    }
                snprintf(why, sizeof why, "its socket does not accept connections");
            } else if (missing >= 0) {
                bad = missing;
                snprintf(why, sizeof why, "node %u does not see it up", viewer);
            } else {
                bad = (int)viewer;
                snprintf(why, sizeof why, "its psid gives no usable node table");
            }
            break;
        }
        pl_sleep_ms(ready == u->n ? 50 : 20);
    }
    free(ok);
    if (pl_got_signal) {
        warnx("interrupted by signal %d", (int)pl_got_signal);
        return -1;
    }
    if (bad < 0) return 0;
    char log[PATH_MAX];
    warnx("node %d not ready after %g s: %s", bad, u->o->timeout, why);
    if (missing == -1 && psout[0]) fprintf(stderr, "  %.400s\n", psout);
    pl_path_in(log, sizeof log, u->dir, "psid-%d.log", bad);
    pl_print_log_tail(log);
    return -1;
}
