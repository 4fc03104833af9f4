/*
 * sandbox.h - what psid's engine gives up after the split (privsep.h): see sandbox.c.
 */
#ifndef PSCLUSTER_PSID_SANDBOX_H
#define PSCLUSTER_PSID_SANDBOX_H

#include <stdbool.h>
#include <stddef.h>

/* Confine the calling process, the engine, for the rest of its life: no_new_privs, not
 * dumpable; where the kernel has Landlock, no writing to the file system but beneath the
 * directories writable[0..n) (NULL entries skipped), no TCP, no signals or abstract sockets
 * outside itself; a seccomp filter of the system calls the engine makes, any other stopping
 * it with a line in the log (ident's; to stderr, and to syslog if use_syslog). log_to (a
 * test build's, PSID_TEST_SECCOMP_LOG; NULL otherwise): the filter lets every call through,
 * and the number of each it would have refused is appended to that file. 0 with what is in
 * force said in err, or -1 with why in err. */
int sandbox_engine(const char *const *writable, size_t n, const char *ident, bool use_syslog,
                   const char *log_to, char *err, size_t errlen);

#endif
