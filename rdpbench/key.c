/*
 * key.c - rdpbench's RDP key (see key.h).
 */
#include "key.h"

#include "readfull.h"

#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define KEY_FILE_MAX 4096

/* A --key FILE that cannot be used: the command line is well-formed, the file is not, so
 * exit 1 without the usage text, as psid and psconf do for a bad key_file. */
static void key_error(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
static void key_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "rdpbench: ");
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n");
    exit(1);
}

/* The key rule of conf/keyfile.c: a regular file, not open to group or others, 32..4096
 * bytes; the key is the 32-byte BLAKE2b hash of its contents. */
void rb_key_load(const char *path, unsigned char key[RDP_KEY_BYTES])
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0) key_error("--key %s: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) key_error("--key %s: not a regular file", path);
    if (st.st_mode & 077)
        key_error("--key %s: mode %04o lets group or others at the key; run chmod 600 %s", path,
                  (unsigned)(st.st_mode & 07777), path);
    unsigned char buf[KEY_FILE_MAX + 1];
    ssize_t got = read_full(fd, buf, sizeof buf); /* KEY_FILE_MAX + 1: to notice longer files */
    if (got < 0) key_error("--key %s: %s", path, strerror(errno));
    size_t n = (size_t)got;
    close(fd);
    if (n < 32)
        key_error("--key %s: %zu bytes, a key needs at least 32 (head -c 32 /dev/urandom > %s)",
                  path, n, path);
    if (n > KEY_FILE_MAX) key_error("--key %s: longer than %d bytes", path, KEY_FILE_MAX);
    crypto_generichash(key, RDP_KEY_BYTES, buf, n, NULL, 0);
    sodium_memzero(buf, sizeof buf);
}

void rb_key_fixed(unsigned char key[RDP_KEY_BYTES])
{
    static const char label[] = "pscluster rdpbench fixed benchmark key (public, not secret)";
    crypto_generichash(key, RDP_KEY_BYTES, (const unsigned char *)label, sizeof label - 1, NULL, 0);
}

void rb_key_check(const unsigned char key[RDP_KEY_BYTES], uint8_t out[RB_KEY_CHECK])
{
    static const char label[] = "rdpbench key check v1";
    crypto_generichash(out, RB_KEY_CHECK, (const unsigned char *)label, sizeof label - 1, key,
                       RDP_KEY_BYTES);
}
