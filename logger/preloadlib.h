/*
 * preloadlib.h - where libpspreload.so is, for the tools that start programs under it
 * (pspreload, psrun --preload): $PSPRELOAD_LIB, else ../lib/libpspreload.so next to the
 * running program's own directory (build/bin -> build/lib in the build tree, PREFIX/bin ->
 * PREFIX/lib when installed; the Makefile's PRELOAD_RELDIR replaces ../lib, as the Debian
 * packages do: /usr/bin -> /usr/lib/TRIPLET/pscluster).
 */
#ifndef PSCLUSTER_LOGGER_PRELOADLIB_H
#define PSCLUSTER_LOGGER_PRELOADLIB_H

#include <stddef.h>

/* The library's absolute path into out: 0, or -1 (not found or not readable; out holds
 * the path tried). */
int lg_preload_lib(char *out, size_t n);
/* The same for another library of the installation in that directory (name, e.g.
 * "libpmi.so": the PMI libraries are installed beside libpspreload.so), or $envvar if set. */
int lg_pscluster_lib(const char *name, const char *envvar, char *out, size_t n);

#endif
