/*
 * files.c - the cluster's directory (see pslocal.h): paths in it, files written whole, the
 * files `down` removes, a log's last lines, and the checks that DIR holds a cluster.
 */
#include "pslocal.h"

#include <dirent.h>
#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* DIR/NAME into buf; exits if it does not fit. */
void pl_path_in(char *buf, size_t len, const char *dir, const char *fmt, ...)
{
    char name[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(name, sizeof name, fmt, ap);
    va_end(ap);
    int r = snprintf(buf, len, "%s/%s", dir, name);
    if (r < 0 || (size_t)r >= len) errx(1, "%s/%s: path too long", dir, name);
}

bool pl_exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

/* Write a whole file atomically (temporary file, rename) with the given mode. */
void pl_write_file(const char *path, const void *data, size_t len, mode_t mode)
{
    char tmp[PATH_MAX];
    if (snprintf(tmp, sizeof tmp, "%s.tmp", path) >= (int)sizeof tmp) errx(1, "%s: too long", path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, mode);
    if (fd < 0) err(1, "%s", tmp);
    if (fchmod(fd, mode) < 0) err(1, "%s", tmp);
    const char *p = data;
    while (len) {
        ssize_t w = write(fd, p, len);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0) err(1, "%s", tmp);
        p += w;
        len -= (size_t)w;
    }
    if (fsync(fd) < 0 || close(fd) < 0) err(1, "%s", tmp);
    if (rename(tmp, path) < 0) err(1, "rename %s", path);
}

/* mkdir -p */
void pl_make_dirs(const char *path)
{
    char p[PATH_MAX];
    if (snprintf(p, sizeof p, "%s", path) >= (int)sizeof p) errx(1, "%s: path too long", path);
    for (char *s = p + 1; *s; s++) {
        if (*s != '/') continue;
        *s = '\0';
        if (mkdir(p, 0777) < 0 && errno != EEXIST) err(1, "mkdir %s", p);
        *s = '/';
    }
    if (mkdir(p, 0777) < 0 && errno != EEXIST) err(1, "mkdir %s", p);
}

/* The last LOG_TAIL_LINES lines of a log to stderr, indented. */
void pl_print_log_tail(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        warn("%s", path);
        return;
    }
    char buf[4096 + 1];
    off_t size = lseek(fd, 0, SEEK_END);
    off_t from = size > 4096 ? size - 4096 : 0;
    ssize_t r = pread(fd, buf, 4096, from);
    close(fd);
    if (r <= 0) {
        fprintf(stderr, "  (%s is empty)\n", path);
        return;
    }
    buf[r] = '\0';
    size_t n = (size_t)r;
    if (n && buf[n - 1] == '\n') buf[--n] = '\0';
    const char *start = buf;
    int lines = 0;
    for (size_t i = n; i > 0; i--) {
        if (buf[i - 1] == '\n' && ++lines == LOG_TAIL_LINES) {
            start = buf + i;
            break;
        }
    }
    fprintf(stderr, "  --- last lines of %s ---\n", path);
    for (const char *l = start; *l;) {
        const char *e = strchr(l, '\n');
        size_t ll = e ? (size_t)(e - l) : strlen(l);
        fprintf(stderr, "  | %.*s\n", (int)ll, l);
        l += ll + (e ? 1 : 0);
    }
}

void pl_unlink_matching(const char *dir, const char *suffix, bool sockets_only)
{
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    size_t sl = strlen(suffix);
    while ((e = readdir(d))) {
        size_t l = strlen(e->d_name);
        unsigned id;
        if (strncmp(e->d_name, "psid-", 5) || l <= sl || strcmp(e->d_name + l - sl, suffix))
            continue;
        if (sscanf(e->d_name, "psid-%u", &id) != 1) continue;
        char p[PATH_MAX];
        pl_path_in(p, sizeof p, dir, "%s", e->d_name);
        struct stat st;
        if (lstat(p, &st) < 0) continue;
        if (sockets_only && !S_ISSOCK(st.st_mode)) continue;
        if (unlink(p) < 0 && errno != ENOENT) warn("%s", p);
    }
    closedir(d);
}

void pl_unlink_in(const char *dir, const char *name)
{
    char p[PATH_MAX];
    pl_path_in(p, sizeof p, dir, "%s", name);
    if (unlink(p) < 0 && errno != ENOENT) warn("%s", p);
}

/* realpath of an existing DIR with a cluster configuration in it; exits otherwise. */
void pl_cluster_dir(const char *dir, char *out)
{
    if (!realpath(dir, out)) err(1, "%s", dir);
    char conf[PATH_MAX];
    pl_path_in(conf, PATH_MAX, out, CONF_FILE);
    if (!pl_exists(conf))
        errx(1, "%s: no cluster here (no %s; 'pslocal up --dir %s')", out, CONF_FILE, dir);
}

void pl_load_conf(const char *dir, struct psconf *c)
{
    char conf[PATH_MAX], msg[512];
    pl_path_in(conf, sizeof conf, dir, CONF_FILE);
    if (psconf_load(conf, c, msg, sizeof msg) < 0) errx(1, "%s", msg);
}
