/*
 * psi_hostlist.h - libpsi: node lists as people and batch systems write them.
 *
 *   n[0-3,7],m5        Slurm hostlist: n0 n1 n2 n3 n7 m5
 *   node[01-03]-ib     zero padding kept (width of the lower bound), suffixes kept
 *   r[1-2]n[1-2]       several brackets: r1n1 r1n2 r2n1 r2n2
 *   0-3,5              node ids and id ranges: "0" "1" "2" "3" "5"
 *   n0 n1, n2          items separated by commas and/or white space (PSI_HOSTS)
 *
 * Expansion is pure: names come out as strings, in order, duplicates kept; deciding
 * what a name means is the node table's job (psi_nodes.h). At most PSI_HOSTLIST_MAX names
 * come out.
 */
#ifndef PSCLUSTER_PSI_HOSTLIST_H
#define PSCLUSTER_PSI_HOSTLIST_H

#include <stddef.h>

#define PSI_HOSTLIST_MAX 65536

/* A list of owned names; starts zeroed; v[n] == NULL once anything was added. */
struct psi_names {
    char **v;
    size_t n, cap;
};
void psi_names_free(struct psi_names *l);

/* Append the names of list s to out. 0, or -1 with a message in err (syntax error, too many
 * names) or errno ENOMEM. */
int psi_hostlist_expand(const char *s, struct psi_names *out, char *err, size_t errsz);
/* Append the names in a host file (one per line, or several separated by white space;
 * '#' starts a comment; PBS_NODEFILE, PSI_HOSTFILE). 0, or -1 with a message in err. */
int psi_hostfile_read(const char *path, struct psi_names *out, char *err, size_t errsz);

#endif
