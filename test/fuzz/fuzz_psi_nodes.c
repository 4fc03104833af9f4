/*
 * fuzz_psi_nodes.c - libFuzzer target for libpsi's node table decoder and its name parsers:
 * any bytes that frame as a message are decoded as a PSM_NODES_REPLY; the first line of the
 * input (up to a NUL or newline) is also expanded as a hostlist, parsed as a task id against
 * the decoded table and as a signal name.
 */
#include "psi_hostlist.h"
#include "psi_nodes.h"
#include "psi_signames.h"
#include "psi_tid.h"

#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct psi_nodetab t = {0};
    struct psmsg m;
    if (psmsg_parse(data, size, &m) == 0 && psi_nodetab_parse(&m, &t) == 0) {
        char nb[64];
        for (size_t i = 0; i < t.n; i++) {
            psi_nodetab_lookup(&t, t.v[i].name);
            psi_nodetab_lookup(&t, t.v[i].addr);
            psi_nodetab_name(&t, t.v[i].id, nb, sizeof nb);
        }
    }
    char line[256];
    size_t n = 0;
    while (n < size && n < sizeof line - 1 && data[n] && data[n] != '\n') {
        line[n] = (char)data[n];
        n++;
    }
    line[n] = '\0';
    char err[256];
    struct psi_names names = {0};
    psi_hostlist_expand(line, &names, err, sizeof err);
    psi_names_free(&names);
    uint64_t tid;
    psi_tid_check(line, err, sizeof err);
    psi_tid_parse(line, &t, &tid, err, sizeof err);
    psi_tid_parse(line, NULL, &tid, err, sizeof err);
    char sb[32];
    int sig = psi_sig_parse(line);
    if (sig >= 0) psi_sig_name(sig, sb, sizeof sb);
    psi_nodetab_free(&t);
    return 0;
}
