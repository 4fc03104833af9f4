/*
 * pmiwire.h - the two PMI wires a parallel program's processes speak to their process
 * manager, parsed and written: PMI-1 (MPICH's "simple" PMI) and PMI-2. psid's PMI server
 * (psid/pmi.c) and the client libraries libpmi.so and libpmi2.so (pmi/) share this code.
 * Every input a parser takes comes from a user program: each length is checked before use,
 * nothing is read outside the buffer given, nothing is allocated. Fuzz targets:
 * test/fuzz/fuzz_pmi1.c, test/fuzz/fuzz_pmi2.c; unit tests: test/unit/test_pmiwire.c.
 *
 * PMI-1: lines of space-separated key=value tokens ended by a newline, at most
 * PMI1_LINE_MAX bytes with the newline; a value may hold '='. The pair value=..., which
 * MPICH and the libraries write last, takes the rest of the line, spaces included (Open MPI's
 * flux component pads its values with spaces; Flux's server reads a put so); any other
 * value holds no space (MPICH hex-encodes what could). A command is cmd=NAME, or mcmd=spawn
 * followed by lines of single key=value tokens up to the line "endcmd" (MPI_Comm_spawn). cmd=put
 * kvsname=kvs_0_17 key=-bcast-1-0 value=2F6465...\n
 *
 * PMI-2: after a PMI-1 style "cmd=init pmi_version=2 pmi_subversion=0" line and its answer,
 * every command is a frame: PMI2_LEN_DIGITS bytes holding the decimal length of the rest,
 * left-aligned and padded with spaces, then that many bytes of key=value pairs each ended
 * by ';', where a ';' inside a value is written ";;". The first pair is cmd=NAME.
 *     "42    cmd=kvs-put;key=-bcast-1-0;value=2F64...;"
 *
 * Limits: keys up to PMI_KEY_MAX bytes, values up to PMI_VAL_MAX, KVS names up to
 * PMI_KVSNAME_MAX, PMI2_FRAME_MAX bytes in a PMI-2 frame, PMI_MAX_PAIRS pairs parsed in a
 * command (more: c->truncated, the first ones are there).
 */
#ifndef PSCLUSTER_PMIWIRE_H
#define PSCLUSTER_PMIWIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PMI1_LINE_MAX   1024 /* a PMI-1 line with its newline */
#define PMI_KEY_MAX     64   /* keylen_max */
#define PMI_VAL_MAX     1024 /* vallen_max */
#define PMI_KVSNAME_MAX 256  /* kvsname_max */
#define PMI_MAX_PAIRS   32
#define PMI2_LEN_DIGITS 6
#define PMI2_FRAME_MAX  (64u << 10) /* bytes after the length field (MPICH's client: 64 KiB) */

/* A pair points into the parsed buffer (PMI-1) or the caller's scratch (PMI-2): not
 * NUL-terminated, lengths given. */
struct pmi_kv {
    const char *key, *val;
    size_t klen, vlen;
};

struct pmi_cmd {
    struct pmi_kv kv[PMI_MAX_PAIRS];
    size_t n;
    bool truncated; /* more than PMI_MAX_PAIRS pairs: the rest were not parsed */
};

/* PMI-1 framing: the length of the first whole line in buf[0..n) without its newline, 1 with
 * *len set; 0 if no newline yet (and n < PMI1_LINE_MAX); -1 if the line is longer than
 * PMI1_LINE_MAX (then *len is where to resume: n, the line's rest is to be skipped up to
 * its newline). */
int pmi1_frame(const char *buf, size_t n, size_t *len);
/* Parse one PMI-1 line (without its newline) into pairs. 0, or -1 with *why: a token
 * without '=', an empty key, a key over PMI_KEY_MAX, a control character or NUL. */
int pmi1_parse(const char *line, size_t len, struct pmi_cmd *c, const char **why);

/* PMI-2 framing: 1 with *len (the bytes after the length field) once a whole frame is in
 * buf[0..n); 0 if not yet; -1 with *why if the length field is not a decimal number padded
 * with spaces, or over PMI2_FRAME_MAX. */
int pmi2_frame(const char *buf, size_t n, size_t *len, const char **why);
/* Parse a PMI-2 frame's body p[0..len) into pairs; unescaped keys and values are copied to
 * scratch (at least len bytes). 0, or -1 with *why: a pair without '=' or not ended by ';',
 * an empty key, a key over PMI_KEY_MAX, a value over PMI_VAL_MAX, a NUL. */
int pmi2_parse(const char *p, size_t len, char *scratch, size_t scratchlen, struct pmi_cmd *c,
               const char **why);

/* The value of key in c, or NULL. */
const struct pmi_kv *pmi_get(const struct pmi_cmd *c, const char *key);
/* Whether pair kv's value is exactly s. */
bool pmi_is(const struct pmi_kv *kv, const char *s);
/* The value of key as a decimal integer in [min, max]: 0, or -1 if absent or not one. */
int pmi_get_int(const struct pmi_cmd *c, const char *key, long min, long max, long *out);
/* Copy a pair's value into out (NUL-terminated): -1 if it does not fit. */
int pmi_copy(const struct pmi_kv *kv, char *out, size_t outsz);

/* Writing: a buffer the caller owns; errors (no room) are sticky, pmi_out_end tells. */
struct pmi_out {
    char *p;
    size_t cap, len;
    bool v2;     /* PMI-2: a length field first, ';' after every pair, ';' doubled in values */
    bool failed; /* it did not fit */
};
void pmi_out_begin(struct pmi_out *o, char *buf, size_t cap, bool v2, const char *cmd);
void pmi_out_add(struct pmi_out *o, const char *key, const char *val);
void pmi_out_addn(struct pmi_out *o, const char *key, const char *val, size_t vlen);
void pmi_out_addi(struct pmi_out *o, const char *key, long v);
/* Finish (PMI-1: the newline; PMI-2: the length field): the frame's length, or 0 if it did
 * not fit. */
size_t pmi_out_end(struct pmi_out *o);

/* PMI_process_mapping ("(vector,(NODE,NNODES,PPN),...)"): the node index of rank r of a
 * job of size ranks, and the ranks on that node (its clique), in order. Returns the number
 * of ranks on r's node (up to max written to clique), or -1 if the mapping is malformed or
 * does not cover r. */
long pmi_map_clique(const char *map, long size, long r, long *clique, long max);

#endif
