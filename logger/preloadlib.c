/*
 * preloadlib.c - finding libpspreload.so and the PMI libraries (preloadlib.h).
 */
#include "preloadlib.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* libpspreload.so's directory relative to the program's own (the Makefile's PRELOAD_RELDIR:
 * build/bin -> build/lib, and the Debian packages' /usr/bin -> /usr/lib/TRIPLET/pscluster) */
#ifndef PSPRELOAD_RELDIR
#define PSPRELOAD_RELDIR "../lib"
#endif

int lg_pscluster_lib(const char *name, const char *envvar, char *out, size_t n)
{
    const char *env = envvar ? getenv(envvar) : NULL;
    if (env && *env) {
        snprintf(out, n, "%s", env);
        return access(out, R_OK);
    }
    char self[PATH_MAX];
    ssize_t l = readlink("/proc/self/exe", self, sizeof self - 1);
    if (l <= 0) return -1;
    self[l] = 0;
    char *slash = strrchr(self, '/');
    if (!slash) return -1;
    *slash = 0;
    if ((size_t)snprintf(out, n, "%s/" PSPRELOAD_RELDIR "/%s", self, name) >= n) return -1;
    char *abs = realpath(out, NULL);
    if (!abs) return -1;
    snprintf(out, n, "%s", abs);
    free(abs);
    return access(out, R_OK);
}

int lg_preload_lib(char *out, size_t n)
{
    return lg_pscluster_lib("libpspreload.so", "PSPRELOAD_LIB", out, n);
}
