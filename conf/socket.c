/*
 * socket.c - psid's UNIX socket path.
 *
 * The configured path is a template so that several daemons (one per node, e.g. a whole
 * test cluster on one machine) can share a file system: %n becomes the node id and %% a
 * percent sign; any other % is an error. The result must fit in sun_path with its NUL.
 */
#include "internal.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/un.h>

long conf_socket_expand(const char *fmt, uint32_t node, char *buf, size_t len)
{
    size_t n = 0;
    char id[16];
    int idlen = snprintf(id, sizeof id, "%u", (unsigned)node);
    for (const char *p = fmt; *p; p++) {
        const char *piece = p;
        size_t plen = 1;
        if (*p == '%') {
            p++;
            if (*p == 'n') {
                piece = id;
                plen = (size_t)idlen;
            } else if (*p != '%') {
                errno = EINVAL;
                return -1;
            }
        }
        for (size_t i = 0; i < plen; i++, n++)
            if (n + 1 < len) buf[n] = piece[i];
    }
    if (len) buf[n < len ? n : len - 1] = '\0';
    return (long)n;
}

int psconf_socket_path(const struct psconf *c, uint32_t node, char *buf, size_t len)
{
    long n = conf_socket_expand(c->socket_fmt, node, buf, len);
    if (n < 0) return -1;
    if ((size_t)n >= len || (size_t)n >= sizeof(((struct sockaddr_un *)0)->sun_path)) {
        if (len) buf[0] = '\0';
        errno = ENAMETOOLONG;
        return -1;
    }
    return 0;
}
