/*
 * psi_signames.h - libpsi: signal names and numbers as kill(1) and the shell know them:
 * "TERM", "SIGTERM", "term", "15", "RTMIN+2".
 */
#ifndef PSCLUSTER_PSI_SIGNAMES_H
#define PSCLUSTER_PSI_SIGNAMES_H

#include <stddef.h>

/* The signal named by s (a number 0..NSIG-1, or a name with or without SIG, any case), or
 * -1. 0 is accepted (kill -0: check only). */
int psi_sig_parse(const char *s);
/* "SIGTERM", "SIGRTMIN+2", or "SIG%d"; into buf (at least 16 bytes). Returns buf. */
const char *psi_sig_name(int sig, char *buf, size_t n);

#endif
