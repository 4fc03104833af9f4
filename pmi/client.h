/*
 * client.h - what libpmi.so (pmi/libpmi.c) and libpmi2.so (pmi/libpmi2.c) share: the
 * channel to psid's PMI server in PMI_FD (or a singleton's store when there is none), one
 * request and its answer at a time under a lock, PMI_DEBUG's transcript, the clique from
 * PMI_process_mapping. Internal: each library links its own copy, exports only its API.
 */
#ifndef PSCLUSTER_PMI_CLIENT_H
#define PSCLUSTER_PMI_CLIENT_H

#include "pmiwire.h"

#include <stdbool.h>
#include <stddef.h>

/* Open the channel: PMI_FD, PMI_RANK and PMI_SIZE; with none of them a singleton (rank 0 of
 * 1). v2: the PMI-2 handshake (cmd=init pmi_version=2), else PMI-1's. 0, or -1 with a
 * message on stderr. */
int pmic_open(bool v2);
void pmic_close(void);
bool pmic_is_open(void);
bool pmic_single(void);
long pmic_rank(void);
long pmic_size(void);

/* A request: pmic_begin gives the writer over the library's request buffer. */
struct pmi_out *pmic_begin(const char *cmd);
/* Send the request and wait for the answer `want` (or the server's "error"), parsed into *c
 * (valid until the next call). 0: rc=0; 1: an answer with another rc (its msg/errmsg is in
 * c); -1: the channel failed or the request did not fit (said on stderr). */
int pmic_call(const char *want, struct pmi_cmd *c);
/* Send the request, no answer awaited (abort). */
int pmic_send_only(void);
/* The reason an answer gave ("msg" or "errmsg"), for messages. */
const char *pmic_why(const struct pmi_cmd *c);

/* A singleton's store: 0, or -1 (out of memory). */
int pmic_local_put(const char *key, const char *val);
const char *pmic_local_get(const char *key);

/* The ranks on this node from a PMI_process_mapping value (NULL: none), worked out once and
 * kept until pmic_close: the ranks and *n their count (this rank alone if the mapping is
 * missing or malformed); NULL and *n -1 out of memory. pmic_clique_known: the kept ones, or
 * NULL and *n -1 before the first pmic_clique. */
const int *pmic_clique(const char *map, long *n);
const int *pmic_clique_known(long *n);
/* The finalize exchange (ack: the answer's command; none in a singleton), then pmic_close:
 * 0, or -1 if the server did not answer so. */
int pmic_finalize(const char *ack);

void pmic_lock(void);
void pmic_unlock(void);

/* Copy s into out[0..outlen) NUL-terminated: 0, or -1 if it does not fit (out gets what
 * fits). */
int pmic_strcopy(char *out, long outlen, const char *s, size_t n);

#endif
