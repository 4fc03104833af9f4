/*
 * addr.c - numeric socket addresses for rdpbench (see addr.h).
 */
#include "addr.h"

#include "opts.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

int rb_addr_parse(const char *s, bool need_port, struct sockaddr_storage *ss, socklen_t *len)
{
    char host[INET6_ADDRSTRLEN + 8];
    const char *port = NULL;
    size_t hl;
    if (s[0] == '[') {
        const char *close = strchr(s, ']');
        if (!close) return -1;
        hl = (size_t)(close - s - 1);
        if (close[1] == ':')
            port = close + 2;
        else if (close[1] != '\0')
            return -1;
        s++;
    } else {
        const char *colon = strrchr(s, ':');
        if (colon && colon == strchr(s, ':')) {
            hl = (size_t)(colon - s);
            port = colon + 1;
        } else {
            hl = strlen(s); /* no port, or a bare IPv6 address */
        }
    }
    if (hl == 0 || hl >= sizeof host) return -1;
    memcpy(host, s, hl);
    host[hl] = '\0';
    if (need_port && !port) return -1;
    uint64_t pv = 0;
    if (port && !rb_parse_u64(port, 0, 65535, &pv)) return -1;
    char pbuf[8];
    snprintf(pbuf, sizeof pbuf, "%u", (unsigned)pv);
    struct addrinfo hints = {.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV,
                             .ai_family = AF_UNSPEC,
                             .ai_socktype = SOCK_DGRAM},
                    *ai;
    if (getaddrinfo(host, pbuf, &hints, &ai) != 0) return -1;
    memcpy(ss, ai->ai_addr, ai->ai_addrlen);
    *len = ai->ai_addrlen;
    freeaddrinfo(ai);
    return 0;
}

uint16_t rb_addr_port(const struct sockaddr_storage *ss)
{
    if (ss->ss_family == AF_INET6) return ntohs(((const struct sockaddr_in6 *)ss)->sin6_port);
    return ntohs(((const struct sockaddr_in *)ss)->sin_port);
}

void rb_addr_set_port(struct sockaddr_storage *ss, uint16_t port)
{
    if (ss->ss_family == AF_INET6)
        ((struct sockaddr_in6 *)ss)->sin6_port = htons(port);
    else
        ((struct sockaddr_in *)ss)->sin_port = htons(port);
}

const char *rb_addr_str(const struct sockaddr_storage *ss, char *buf, size_t len)
{
    char ip[INET6_ADDRSTRLEN] = "?";
    if (ss->ss_family == AF_INET6) {
        inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)ss)->sin6_addr, ip, sizeof ip);
        snprintf(buf, len, "[%s]:%u", ip, rb_addr_port(ss));
    } else {
        inet_ntop(AF_INET, &((const struct sockaddr_in *)ss)->sin_addr, ip, sizeof ip);
        snprintf(buf, len, "%s:%u", ip, rb_addr_port(ss));
    }
    return buf;
}

bool rb_addr_is_loopback(const struct sockaddr_storage *ss)
{
    if (ss->ss_family == AF_INET)
        return (ntohl(((const struct sockaddr_in *)ss)->sin_addr.s_addr) >> 24) == 127;
    const struct in6_addr *a = &((const struct sockaddr_in6 *)ss)->sin6_addr;
    if (IN6_IS_ADDR_LOOPBACK(a)) return true;
    return IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127;
}

bool rb_addr_is_any(const struct sockaddr_storage *ss)
{
    if (ss->ss_family == AF_INET)
        return ((const struct sockaddr_in *)ss)->sin_addr.s_addr == htonl(INADDR_ANY);
    return IN6_IS_ADDR_UNSPECIFIED(&((const struct sockaddr_in6 *)ss)->sin6_addr);
}
