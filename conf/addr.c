/*
 * addr.c - node addresses.
 *
 * Nodes are given as IPv4 literals today; everything downstream keeps them in a
 * sockaddr_storage so that IPv6 needs changes here only. A node address must be a unicast
 * address a daemon can bind: not 0.0.0.0, not broadcast, not multicast. Comparison ignores
 * the port, which is the cluster-wide rdp.port and set once the whole file is read.
 */
#include "internal.h"

#include <arpa/inet.h>
#include <string.h>

int conf_addr_parse(const char *s, struct sockaddr_storage *ss, socklen_t *len, char *str,
                    const char **why)
{
    struct in_addr a4;
    struct in6_addr a6;
    if (inet_pton(AF_INET, s, &a4) != 1) {
        *why = inet_pton(AF_INET6, s, &a6) == 1 ? "IPv6 addresses are not supported yet"
                                                : "not an IPv4 address (like 10.0.0.1)";
        return -1;
    }
    uint32_t h = ntohl(a4.s_addr);
    if (h == 0 || h == 0xffffffffu || (h >> 28) == 0xe) {
        *why = "not a unicast address";
        return -1;
    }
    struct sockaddr_in *sin = (struct sockaddr_in *)ss;
    memset(ss, 0, sizeof *ss);
    sin->sin_family = AF_INET;
    sin->sin_addr = a4;
    *len = sizeof *sin;
    inet_ntop(AF_INET, &a4, str, INET6_ADDRSTRLEN);
    return 0;
}

void conf_addr_set_port(struct sockaddr_storage *ss, unsigned port)
{
    if (ss->ss_family == AF_INET)
        ((struct sockaddr_in *)ss)->sin_port = htons((uint16_t)port);
    else if (ss->ss_family == AF_INET6)
        ((struct sockaddr_in6 *)ss)->sin6_port = htons((uint16_t)port);
}

int conf_addr_cmp(const struct sockaddr *a, const struct sockaddr *b)
{
    if (a->sa_family != b->sa_family) return a->sa_family < b->sa_family ? -1 : 1;
    if (a->sa_family == AF_INET) {
        const struct sockaddr_in *x = (const void *)a, *y = (const void *)b;
        return memcmp(&x->sin_addr, &y->sin_addr, sizeof x->sin_addr);
    }
    if (a->sa_family == AF_INET6) {
        const struct sockaddr_in6 *x = (const void *)a, *y = (const void *)b;
        int r = memcmp(&x->sin6_addr, &y->sin6_addr, sizeof x->sin6_addr);
        if (r) return r;
        return (x->sin6_scope_id > y->sin6_scope_id) - (x->sin6_scope_id < y->sin6_scope_id);
    }
    return 0;
}
