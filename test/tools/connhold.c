/*
 * connhold.c - holds N connections to psid ($PSID_SOCKET), for the tests of psid's client
 * limits (test/shell/psid_hostile.sh). Each connection asks for the node table; prints
 * "ok K refused R" and, for the first refusal, " errno E: TEXT"; then holds every accepted
 * connection until its standard input ends.
 *
 *   connhold N
 */
#include "psi.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    int n = argc == 2 ? atoi(argv[1]) : 0;
    if (n <= 0) {
        fprintf(stderr, "usage: connhold N\n");
        return 2;
    }
    struct psi *c = calloc((size_t)n, sizeof *c);
    int ok = 0, refused = 0, first_err = 0;
    char text[256] = "";
    for (int i = 0; c && i < n; i++) {
        if (psi_open(&c[i], NULL) < 0) {
            if (!refused++) first_err = errno, snprintf(text, sizeof text, "connect");
            continue;
        }
        struct psmsg_buf b = {0};
        struct psmsg m = {0};
        psmsg_begin(&b, PSM_NODES, 0);
        int r = psi_call(&c[i], &b, &m);
        psmsg_buf_free(&b);
        if (r == 0) {
            ok++;
            continue;
        }
        if (!refused++) {
            first_err = errno;
            if (m.type == PSM_ERROR) psmsg_get_str(&m.body, PSF_TEXT, text, sizeof text);
        }
        psi_close(&c[i]);
    }
    printf("ok %d refused %d", ok, refused);
    if (refused) printf(" errno %d: %s", first_err, text);
    printf("\n");
    fflush(stdout);
    char buf[64];
    while (read(0, buf, sizeof buf) > 0) {
    }
    return 0;
}
