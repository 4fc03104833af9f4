/*
 * spawncred.h - the spawn credential: the evidence on which psid's privileged child starts a
 * task as its user (privsep.h), in the manner of munge. The child of a job's home node makes
 * one per node the job runs on, after it has checked itself, from the kernel, that the
 * requesting client's connection belongs to the job's user; the child of that node checks it
 * before it starts each rank. The engines only carry it: the key is derived from the
 * cluster key in the privileged child, and the engine drops the cluster key at the split, so
 * a compromised engine can neither make one nor alter one.
 *
 * The wire (SPAWNCRED_LEN bytes, big-endian, fixed offsets):
 *     0  u8   version (1)                 36  u64  issued: CLOCK_REALTIME ns at the origin
 *     1  u8   reserved, 0 (3 bytes)       44  u8[16] nonce (random)
 *     4  u32  origin node (the job's home) 60  u8[32] digest of the program (below)
 *     8  u32  target node (where it runs)  92  u8[32] MAC: BLAKE2b-256 keyed with the spawn
 *    12  u32  uid                                    key over bytes 0..91
 *    16  u32  gid
 *    20  u32  nranks: ranks it starts on the target, each once
 *    24  u64  job id (its node is the origin)
 *    32  u32  reserved, 0
 * The digest covers what the task runs: every argument, then every variable of the job's
 * environment, each as a tag byte, its length (u32) and its bytes, then the working directory
 * (empty: none) and the umask (& 0777), under a label of its own; a job whose ranks' nodes
 * open its output files (psrun --output-on-node) has its patterns, open mode and name
 * hashed after the variables (spawncred_hash_out), and a job whose program is a pattern
 * (psrun --bcast: the copy's name on each node) a mark after those
 * (spawncred_hash_arg0_pattern). The rank's own variables
 * (PSI_RANK and the others) are not in it: the checking child allows only their names.
 *
 * A credential is good at its target for SPAWNCRED_TTL_NS after it was issued, and up to
 * SPAWNCRED_SKEW_NS before (clocks of two nodes differ); the checking child remembers each
 * one it took (origin, nonce) until then, and starts at most nranks ranks on it: a replay,
 * at the same node or after its ranks started, is refused.
 */
#ifndef PSCLUSTER_PSID_SPAWNCRED_H
#define PSCLUSTER_PSID_SPAWNCRED_H

#include <sodium.h>
#include <stddef.h>
#include <stdint.h>

#define SPAWNCRED_LEN      124
#define SPAWNCRED_VERSION  1
#define SPAWNCRED_TTL_NS   (120ull * 1000000000ull)
#define SPAWNCRED_SKEW_NS  (30ull * 1000000000ull)
#define SPAWNCRED_BOOK_MAX 65536 /* credentials a checking child remembers at once */

struct spawncred {
    uint32_t origin, target, uid, gid, nranks;
    uint64_t job, issued;
    uint8_t nonce[16];
    uint8_t digest[32];
};

/* The spawn key, from the cluster key (crypto_kdf, context "psspawn1"). */
void spawncred_key(const uint8_t cluster_key[32], uint8_t key[32]);
/* Encode and MAC c into out. */
void spawncred_encode(const struct spawncred *c, const uint8_t key[32], uint8_t out[SPAWNCRED_LEN]);
/* Decode a credential whose MAC is good: 0, or -1 with why (its length, version, reserved
 * bytes, MAC). */
int spawncred_decode(const uint8_t *in, size_t len, const uint8_t key[32], struct spawncred *c,
                     const char **why);

/* The digest of a program: init, every argument, every variable, then final with the
 * working directory and the umask. The state after the arguments and variables may be
 * copied to finish with several. */
struct spawncred_hash {
    crypto_generichash_state st;
};
void spawncred_hash_init(struct spawncred_hash *h);
void spawncred_hash_arg(struct spawncred_hash *h, const void *p, size_t n);
void spawncred_hash_env(struct spawncred_hash *h, const void *p, size_t n);
/* psrun --bcast: the first argument is a pattern each node expands (the job's PSF_ARG0_PATTERN);
 * a mark after the output files' part, only for such a job. */
void spawncred_hash_arg0_pattern(struct spawncred_hash *h);
void spawncred_hash_final(const struct spawncred_hash *h, const char *cwd, uint32_t umask,
                          uint8_t out[32]);
/* psrun --output-on-node: the output file patterns (NULL: none), the open mode and the job
 * name (%x) go into the digest after the variables, only for a job that has them (a job
 * without keeps the digest it had). */
void spawncred_hash_out(struct spawncred_hash *h, const char *out_pat, const char *err_pat,
                        uint32_t append, const char *name);

/* The credentials a checking child has taken, until they expire. */
struct spawncred_book;
struct spawncred_book *spawncred_book_new(void);
void spawncred_book_free(struct spawncred_book *b);
size_t spawncred_book_size(const struct spawncred_book *b);

/* What a spawn must match. */
struct spawncred_want {
    uint32_t node; /* this node: the target */
    uint32_t uid, gid;
    uint64_t job;
    uint8_t digest[32];
};
/* Check a credential for one rank's start and, if good, count the start in the book:
 * the MAC, the target, the job's home as origin, uid, gid, job and digest as wanted, the
 * time (now_real: CLOCK_REALTIME ns) within its life, and no more starts than its nranks
 * (now_mono: a monotonic clock, for the book's expiry). 0, or -1 with why. */
int spawncred_check(const uint8_t *in, size_t len, const uint8_t key[32],
                    const struct spawncred_want *w, uint64_t now_real, uint64_t now_mono,
                    struct spawncred_book *b, char *why, size_t whylen);

#endif
