/*
 * error.c - formatting of configuration error messages.
 *
 * Every message psconf_load() returns has the shape "FILE:LINE: KEY: what is wrong", so that
 * editors and humans can jump to the spot. The line is left out when there is none (a
 * missing key at top level, a file that cannot be opened), the key when there is none (a
 * syntax error). Files pulled in by @include are named as libconfig names them, relative to
 * the configuration's directory, which is prefixed. Only the first error is kept: loading
 * stops there.
 */
#include "internal.h"

#include <stdio.h>
#include <string.h>

static int verror(struct conf_ctx *x, const char *file, unsigned line, const char *key,
                  const char *fmt, va_list ap)
{
    if (x->failed || !x->err || x->errlen == 0) {
        x->failed = 1;
        return -1;
    }
    x->failed = 1;
    size_t n = 0;
    int r;
    const char *dir = "", *sep = "";
    if (!file) {
        file = x->path;
    } else if (strcmp(file, x->path) != 0 && file[0] != '/' && strcmp(x->dir, ".") != 0) {
        dir = x->dir; /* an @include: libconfig names it relative to our directory */
        sep = "/";
    }
    if (line)
        r = snprintf(x->err, x->errlen, "%s%s%s:%u: ", dir, sep, file, line);
    else
        r = snprintf(x->err, x->errlen, "%s%s%s: ", dir, sep, file);
    if (r > 0) n = (size_t)r;
    if (key && n < x->errlen) {
        r = snprintf(x->err + n, x->errlen - n, "%s: ", key);
        if (r > 0) n += (size_t)r;
    }
    if (n < x->errlen) vsnprintf(x->err + n, x->errlen - n, fmt, ap);
    return -1;
}

int conf_error(struct conf_ctx *x, const char *file, unsigned line, const char *key,
               const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    verror(x, file, line, key, fmt, ap);
    va_end(ap);
    return -1;
}

int conf_error_at(struct conf_ctx *x, struct conf_where w, const char *key, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    verror(x, w.file, w.line, key, fmt, ap);
    va_end(ap);
    return -1;
}

struct conf_where conf_where_of(const config_setting_t *s)
{
    struct conf_where w = {config_setting_source_file(s), config_setting_source_line(s)};
    return w;
}
