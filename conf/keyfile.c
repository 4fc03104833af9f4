/*
 * keyfile.c - the cluster key.
 *
 * The key file holds at least 32 bytes of secret (random bytes, or any text); the key is the
 * 32-byte BLAKE2b hash of its contents, so every node that reads the same file gets the same
 * key whatever its length. The file must be a regular file that neither group nor others
 * may read or write: a key anyone can read authenticates nothing. A relative key_file is
 * taken from the configuration file's directory, so that a configuration and its key can be
 * moved together.
 */
#include "internal.h"

#include "readfull.h"

#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define KEY_MIN 32
#define KEY_MAX 4096

static int resolve(struct conf_ctx *x, struct psconf *c, struct conf_where w)
{
    if (c->key_file[0] == '/' || strcmp(x->dir, ".") == 0) return 0;
    char tmp[PATH_MAX];
    int r = snprintf(tmp, sizeof tmp, "%s/%s", x->dir, c->key_file);
    if (r < 0 || (size_t)r >= sizeof tmp)
        return conf_error_at(x, w, "key_file", "%s/%s: path too long", x->dir, c->key_file);
    memcpy(c->key_file, tmp, (size_t)r + 1);
    return 0;
}

int conf_key_load(struct conf_ctx *x, struct psconf *c)
{
    struct conf_where w = x->where[CK_KEY_FILE];
    const char *key = "key_file", *f = c->key_file;
    char eb[128];
    if (resolve(x, c, w) < 0) return -1;

    int fd = open(f, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0) return conf_error_at(x, w, key, "%s: %s", f, strerror_r(errno, eb, sizeof eb));
    struct stat st;
    if (fstat(fd, &st) < 0) {
        conf_error_at(x, w, key, "%s: %s", f, strerror_r(errno, eb, sizeof eb));
        close(fd);
        return -1;
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return conf_error_at(x, w, key, "%s: not a regular file", f);
    }
    if (st.st_mode & 077) {
        close(fd);
        return conf_error_at(x, w, key,
                             "%s: mode %04o lets group or others at the key; run chmod 600 %s", f,
                             (unsigned)(st.st_mode & 07777), f);
    }

    unsigned char buf[KEY_MAX + 1];
    ssize_t n = read_full(fd, buf, sizeof buf); /* KEY_MAX + 1: to notice longer files */
    int saved = errno;
    close(fd);
    int rc = 0;
    if (n < 0)
        rc = conf_error_at(x, w, key, "%s: %s", f, strerror_r(saved, eb, sizeof eb));
    else if (n < KEY_MIN)
        rc = conf_error_at(x, w, key,
                           "%s: %zd bytes, a key needs at least %d (head -c 32 /dev/urandom > %s)",
                           f, n, KEY_MIN, f);
    else if (n > KEY_MAX)
        rc = conf_error_at(x, w, key, "%s: longer than %d bytes", f, KEY_MAX);
    else if (sodium_init() < 0)
        rc = conf_error_at(x, w, key, "libsodium failed to initialize");
    else
        crypto_generichash(c->key, sizeof c->key, buf, (size_t)n, NULL, 0);
    sodium_memzero(buf, sizeof buf);
    return rc;
}

void psconf_key_fingerprint(const struct psconf *c, char out[PSCONF_FINGERPRINT_LEN])
{
    static const char label[] = "pscluster key fingerprint v1";
    unsigned char h[8];
    crypto_generichash_state st;
    crypto_generichash_init(&st, NULL, 0, sizeof h);
    crypto_generichash_update(&st, (const unsigned char *)label, sizeof label - 1);
    crypto_generichash_update(&st, c->key, sizeof c->key);
    crypto_generichash_final(&st, h, sizeof h);
    sodium_bin2hex(out, PSCONF_FINGERPRINT_LEN, h, sizeof h);
}
