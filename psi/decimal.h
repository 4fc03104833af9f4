/*
 * decimal.h - libpsi's private parser of plain unsigned decimals on command lines (node ids,
 * pids): digits only, no sign, no white space, no base prefix.
 */
#ifndef PSCLUSTER_PSI_DECIMAL_H
#define PSCLUSTER_PSI_DECIMAL_H

#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

/* 0 with *out, or -1 if s is not a decimal up to UINT32_MAX. */
static inline int psi_decimal_u32(const char *s, uint32_t *out)
{
    if (!isdigit((unsigned char)*s)) return -1;
    char *end;
    errno = 0;
    unsigned long v = strtoul(s, &end, 10);
    if (*end || errno || v > UINT32_MAX) return -1;
    *out = (uint32_t)v;
    return 0;
}

#endif
