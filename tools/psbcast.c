/*
 * psbcast.c - copy a file to node-local storage of many nodes, like Slurm's sbcast, over a
 * tree of their psids (psid/bcast.c, psi_bcast.h): pipelined in chunks, each copy checked
 * (BLAKE2b of the whole file) before it is put in place, written as the user.
 *
 *   psbcast [-f] [-p] [-F WIDTH] [-w LIST | -N N] [-v] FILE DEST
 *
 * The file is opened here (so only what the user can read is sent) and passed to the local
 * psid, which reads it. DEST is a pattern (%N node name, %n node index, %j the broadcast's
 * id, %u user, %%); a relative one is taken from this directory, one ending in '/' is a
 * directory for FILE's name. The copies stay (sbcast's). Exit status 0 when every node has
 * its copy, 1 when one has not (each named, with the reason), 2 for a bad command line.
 * Manual: docs/man/psbcast.1.
 */
#include "psi.h"
#include "psi_bcast.h"
#include "psi_nodes.h"
#include "psloop.h"
#include "psversion.h"
#include "../logger/partition.h"
#include "../psi/decimal.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <libgen.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char usage_text[] =
    "usage: psbcast [OPTIONS] FILE DEST\n"
    "\n"
    "Copy FILE to DEST on every node (node-local storage), down a tree of the nodes' psids,\n"
    "pipelined in chunks; each copy is checked (BLAKE2b) before it is put in place, with\n"
    "FILE's mode & 0777, written as you. Slurm's sbcast.\n"
    "\n"
    "  DEST                  the copy's path on each node: %N node name, %n the node's\n"
    "                        index in the list, %j the broadcast's id, %u user, %%; relative:\n"
    "                        from this directory; ending in '/': a directory, FILE's name\n"
    "  -w, --nodelist LIST   these nodes: ids, names, ranges (0-3,5  n[0-3]); default\n"
    "                        $PSI_NODES, $PSI_HOSTS, $PSI_HOSTFILE, $SLURM_JOB_NODELIST,\n"
    "                        $PBS_NODEFILE, else every node that is up\n"
    "  -N, --nodes N         only the first N of them\n"
    "  -f, --force           replace a file already at DEST (else that node fails)\n"
    "  -p, --preserve        FILE's modification and access times too\n"
    "  -F, --fanout WIDTH    children per node of the tree (default psid.bcast_width)\n"
    "  -v, --verbose         say how long it took, and the broadcast's id\n"
    "  -h, --help            this text\n"
    "Exit status: 0 if every node has its copy, 1 otherwise (each such node named, with the\n"
    "reason), 2 for a bad command line.\n"
    "The psid asked is the one at $PSID_SOCKET (default " PSI_DEFAULT_SOCKET ").\n";

static int usage(FILE *f, int rc)
{
    fputs(usage_text, f);
    return rc;
}

/* a count of 1..65536 (nodes, children) */
static int parse_count(const char *s, uint32_t *out)
{
    return psi_decimal_u32(s, out) < 0 || *out < 1 || *out > 65536 ? -1 : 0;
}

/* The nodes: the partition's (command line, environment, allocation), else every node that
 * is up; the first nmax of them (0: all). 0, or -1 (said). */
static int nodes_of(struct psi *c, const char *wopt, uint32_t nmax, struct psi_nodetab *tab,
                    uint32_t **ids, size_t *n)
{
    struct lg_partition part;
    struct lg_strv skipped = {0};
    char err[512];
    *ids = NULL;
    *n = 0;
    if (psi_nodes(c, tab) < 0) {
        fprintf(stderr, "psbcast: cannot read the node table: %s\n", strerror(errno));
        return -1;
    }
    if (lg_partition_get(wopt, getenv, &part, err, sizeof err) < 0 ||
        lg_partition_resolve(&part, tab, ids, n, &skipped, err, sizeof err) < 0) {
        fprintf(stderr, "psbcast: %s\n", err);
        lg_partition_free(&part);
        lg_strv_free(&skipped);
        return -1;
    }
    for (size_t i = 0; i < skipped.n; i++)
        fprintf(stderr, "psbcast: warning: node '%s' (from %s) is down, not used\n", skipped.v[i],
                part.source);
    lg_partition_free(&part);
    lg_strv_free(&skipped);
    if (!*n && nmax) { /* no source: the nodes that are up, in the table's order */
        if (!(*ids = calloc(tab->n ? tab->n : 1, sizeof **ids))) return -1;
        for (size_t i = 0; i < tab->n; i++)
            if (tab->v[i].state == PSNODE_UP) (*ids)[(*n)++] = tab->v[i].id;
    }
    if (nmax && *n < nmax) {
        fprintf(stderr, "psbcast: -N %u: only %zu nodes to choose from\n", nmax, *n);
        return -1;
    }
    if (nmax) *n = nmax;
    return 0;
}

int main(int argc, char **argv)
{
    if (psc_version_asked(argc, argv, "psbcast")) return 0;
    static const struct option opts[] = {
        {"nodelist", required_argument, 0, 'w'}, {"nodes", required_argument, 0, 'N'},
        {"force", no_argument, 0, 'f'},          {"preserve", no_argument, 0, 'p'},
        {"fanout", required_argument, 0, 'F'},   {"verbose", no_argument, 0, 'v'},
        {"help", no_argument, 0, 'h'},           {0, 0, 0, 0}};
    const char *wopt = NULL;
    uint32_t nmax = 0, width = 0, flags = PSBCAST_F_KEEP;
    bool verbose = false;
    int o;
    while ((o = getopt_long(argc, argv, "+w:N:fpF:vh", opts, NULL)) != -1) {
        switch (o) {
        case 'w':
            wopt = optarg;
            break;
        case 'N':
            if (parse_count(optarg, &nmax) < 0) {
                fprintf(stderr, "psbcast: -N %s: not a number of nodes (1..65536)\n", optarg);
                return usage(stderr, 2);
            }
            break;
        case 'f':
            flags |= PSBCAST_F_FORCE;
            break;
        case 'p':
            flags |= PSBCAST_F_PRESERVE;
            break;
        case 'F':
            if (parse_count(optarg, &width) < 0) {
                fprintf(stderr, "psbcast: -F %s: not a fanout (1..65536)\n", optarg);
                return usage(stderr, 2);
            }
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
    if (argc - optind != 2) {
        fprintf(stderr, "psbcast: %s\n",
                argc - optind < 2 ? "FILE and DEST are needed" : "too many arguments");
        return usage(stderr, 2);
    }
    const char *file = argv[optind], *arg = argv[optind + 1];
    char *copy = strdup(file), base[512], dest[PSBCAST_DEST_MAX];
    if (!copy || psi_bcast_escape(basename(copy), base, sizeof base) < 0 ||
        psi_bcast_dest(arg, base, dest, sizeof dest) < 0) {
        fprintf(stderr, "psbcast: %s: the destination is too long\n", arg);
        free(copy);
        return 2;
    }
    free(copy);
    int fd = open(file, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        fprintf(stderr, "psbcast: %s: %s\n", file, fd < 0 ? strerror(errno) : "not a regular file");
        if (fd >= 0) close(fd);
        return 1;
    }
    struct psi c;
    if (psi_open(&c, NULL) < 0) {
        fprintf(stderr, "psbcast: cannot reach psid at %s: %s\n", psi_socket_path(),
                strerror(errno));
        close(fd);
        return 1;
    }
    struct psi_nodetab tab = {0};
    uint32_t *ids = NULL;
    size_t n = 0;
    int rc = 1;
    if (nodes_of(&c, wopt, nmax, &tab, &ids, &n) < 0) goto out;
    struct psi_bcast_req r = {
        .fd = fd, .dest = dest, .nodes = ids, .n = n, .flags = flags, .width = width};
    struct psi_bcast_result res;
    uint64_t t0 = loop_now();
    if (psi_bcast(&c, &r, &res) < 0) {
        fprintf(stderr, "psbcast: %s: %s\n", file,
                res.fails[0].text[0] ? res.fails[0].text : strerror(errno));
        goto out;
    }
    double dt = (double)(loop_now() - t0) / 1e9;
    psi_bcast_report(stderr, "psbcast", &res, &tab);
    if (verbose) {
        char id[32];
        snprintf(id, sizeof id, "%" PRIu32 ":%" PRId32, PSTID_NODE(res.id), PSTID_PID(res.id));
        fprintf(stderr,
                "psbcast: %s (%" PRIu64 " bytes) to %u of %u nodes as %s in %.1f ms (broadcast "
                "%s, %.1f ms in psid)\n",
                file, res.bytes, res.ok, res.ok + res.failed, dest, dt * 1e3, id,
                (double)res.elapsed_us / 1e3);
    }
    rc = res.failed ? 1 : 0;
out:
    free(ids);
    psi_nodetab_free(&tab);
    psi_close(&c);
    close(fd);
    return rc;
}
