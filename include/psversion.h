/*
 * psversion.h - what every pscluster program prints for --version: "NAME (pscluster)
 * VERSION", the version being debian/changelog's first line, which the Makefile passes as
 * PSC_VERSION. Asked as the first argument, as GNU programs take it.
 */
#ifndef PSCLUSTER_PSVERSION_H
#define PSCLUSTER_PSVERSION_H

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#ifndef PSC_VERSION
#define PSC_VERSION "unknown"
#endif

/* Whether argv[1] is --version; if so, the line is printed on stdout. */
static inline bool psc_version_asked(int argc, char **argv, const char *name)
{
    if (argc < 2 || strcmp(argv[1], "--version") != 0) return false;
    printf("%s (pscluster) %s\n", name, PSC_VERSION);
    return true;
}

#endif
