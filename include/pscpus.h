/*
 * pscpus.h - CPU sets, CPU binding and memory sizes as srun spells them (psi/cpus.c): psrun
 * checks what the user typed, psid applies it on each node, and both use these parsers.
 *
 * A CPU set is a bitmap of PSCPU_MAX bits, bit i of byte i / 8 for CPU i (the layout of the
 * kernel's cpu_set_t and of PRIV_F_CPUS on the privileged child's wire).
 *   list   "0-3,8,10-11": decimal CPU numbers and ranges (/proc's Cpus_allowed_list)
 *   map    srun's map_cpu:LIST, one CPU per rank of a node in turn: "0,2,4", "0x3",
 *          "1*4" (repeated)
 *   mask   srun's mask_cpu:LIST, one hexadecimal mask per rank in turn: "0x3,0xc", "f*2"
 * Sizes (--mem, --mem-per-cpu): a number with an optional suffix K, M, G or T (binary,
 * 1024-based, as Slurm's); a bare number is in MiB, as srun's.
 */
#ifndef PSCLUSTER_PSCPUS_H
#define PSCLUSTER_PSCPUS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PSCPU_MAX     1024 /* CPUs a set can name (the kernel's CPU_SETSIZE) */
#define PSCPU_BYTES   (PSCPU_MAX / 8)
#define PSCPU_MAP_MAX 1024 /* entries of a map_cpu or mask_cpu list */

struct pscpuset {
    uint8_t b[PSCPU_BYTES];
};

/* --cpu-bind, PSF_CPU_BIND: the mode, with PSBIND_VERBOSE or'ed in */
enum psbind {
    PSBIND_AUTO = 0, /* cores when the job's ranks fill the node's CPUs, else none */
    PSBIND_NONE = 1,
    PSBIND_CORES = 2,
    PSBIND_THREADS = 3,
    PSBIND_MAP_CPU = 4,  /* with PSF_CPU_MAP */
    PSBIND_MASK_CPU = 5, /* with PSF_CPU_MAP */
    PSBIND_MODE_MASK = 0xff,
    PSBIND_VERBOSE = 0x100,
};

static inline void pscpu_set(struct pscpuset *s, unsigned cpu)
{
    if (cpu < PSCPU_MAX) s->b[cpu / 8] |= (uint8_t)(1u << (cpu % 8));
}
static inline bool pscpu_isset(const struct pscpuset *s, unsigned cpu)
{
    return cpu < PSCPU_MAX && (s->b[cpu / 8] >> (cpu % 8) & 1);
}
unsigned pscpu_count(const struct pscpuset *s);
/* Whether every CPU of a is in b. */
bool pscpu_subset(const struct pscpuset *a, const struct pscpuset *b);
/* The first CPU of a that is not in b, or -1. */
int pscpu_first_outside(const struct pscpuset *a, const struct pscpuset *b);

/* A list into *s (cleared first): 0, or -1 with why (empty, a number past PSCPU_MAX - 1, a
 * range backwards, stray characters). */
int pscpu_parse_list(const char *str, struct pscpuset *s, char *why, size_t whylen);
/* *s as a list ("0-3,8"; "" when empty) into out: 0, or -1 if it does not fit. */
int pscpu_format_list(const struct pscpuset *s, char *out, size_t len);

/* --cpu-bind's value: the mode (PSBIND_VERBOSE when "verbose" is among its words) and, for
 * map_cpu and mask_cpu, a pointer to the LIST in str. Every entry of the list is checked
 * (pscpu_map_check). 0, or -1 with why. */
int pscpu_parse_bind(const char *str, uint32_t *mode, const char **list, char *why, size_t whylen);
/* A map_cpu (mask false) or mask_cpu (mask true) LIST: its number of entries (repeats
 * counted), or -1 with why. *all (may be NULL) gets every CPU it names. */
int pscpu_map_check(const char *list, bool mask, struct pscpuset *all, char *why, size_t whylen);
/* The CPUs of entry idx % entries of such a list into *s: 0, or -1 (a bad list). */
int pscpu_map_entry(const char *list, bool mask, uint32_t idx, struct pscpuset *s);

/* A size: 0 with *bytes, or -1 (not a number, a bad suffix, too large). def_unit: the
 * multiplier of a bare number (1 << 20 for srun's MiB). */
int ps_parse_size(const char *str, uint64_t def_unit, uint64_t *bytes);
/* bytes as "2 GiB", "1.5 MiB", "512 B" into out. */
void ps_format_size(uint64_t bytes, char *out, size_t len);

#endif
