/*
 * fnv1a.h - the 64-bit FNV-1a hash of a string: psid names its cgroup directory after the
 * hash of its client socket path (psid/cgroup.c), and pslocal finds it again by the same
 * hash (pslocal/down.c). Not for anything an attacker chooses against.
 */
#ifndef PSCLUSTER_FNV1A_H
#define PSCLUSTER_FNV1A_H

#include <stdint.h>

static inline uint64_t fnv1a64(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (; *s; s++) h = (h ^ (uint8_t)*s) * 0x100000001b3ull;
    return h;
}

#endif
