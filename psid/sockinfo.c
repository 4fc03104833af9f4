/*
 * sockinfo.c - what the kernel says of a socket (sockinfo.h): a passed descriptor's type,
 * addresses, cookie and network namespace; sock_diag's exact lookup of a TCP socket in
 * psid's own namespace; address helpers that treat a v4-mapped IPv6 address as IPv4.
 */
#include "sockinfo.h"

#include <arpa/inet.h>
#include <errno.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#ifndef SO_NETNS_COOKIE
#define SO_NETNS_COOKIE 71
#endif

uint16_t sockinfo_port(const struct sockaddr_storage *ss)
{
    return ntohs(ss->ss_family == AF_INET ? ((const struct sockaddr_in *)ss)->sin_port
                                          : ((const struct sockaddr_in6 *)ss)->sin6_port);
}

void sockinfo_addr_text(const struct sockaddr_storage *ss, char out[46])
{
    if (ss->ss_family == AF_INET) {
        inet_ntop(AF_INET, &((const struct sockaddr_in *)ss)->sin_addr, out, 46);
        return;
    }
    const struct in6_addr *a = &((const struct sockaddr_in6 *)ss)->sin6_addr;
    if (IN6_IS_ADDR_V4MAPPED(a))
        inet_ntop(AF_INET, a->s6_addr + 12, out, 46);
    else
        inet_ntop(AF_INET6, a, out, 46);
}

bool sockinfo_wildcard(const struct sockaddr_storage *ss)
{
    if (ss->ss_family == AF_INET)
        return ((const struct sockaddr_in *)ss)->sin_addr.s_addr == htonl(INADDR_ANY);
    return IN6_IS_ADDR_UNSPECIFIED(&((const struct sockaddr_in6 *)ss)->sin6_addr);
}

/* An IPv4 address as itself; a v4-mapped IPv6 address as the IPv4 address. */
static void unmap(const struct sockaddr_storage *in, struct sockaddr_storage *out)
{
    const struct sockaddr_in6 *a6 = (const void *)in;
    if (in->ss_family == AF_INET6 && IN6_IS_ADDR_V4MAPPED(&a6->sin6_addr)) {
        struct sockaddr_in *a4 = (void *)out;
        memset(out, 0, sizeof *out);
        a4->sin_family = AF_INET;
        a4->sin_port = a6->sin6_port;
        memcpy(&a4->sin_addr, a6->sin6_addr.s6_addr + 12, 4);
    } else {
        *out = *in;
    }
}

bool sockinfo_same_host(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
    struct sockaddr_storage x, y;
    unmap(a, &x);
    unmap(b, &y);
    if (x.ss_family != y.ss_family) return false;
    if (x.ss_family == AF_INET)
        return ((struct sockaddr_in *)&x)->sin_addr.s_addr ==
               ((struct sockaddr_in *)&y)->sin_addr.s_addr;
    return x.ss_family == AF_INET6 && !memcmp(&((struct sockaddr_in6 *)&x)->sin6_addr,
                                              &((struct sockaddr_in6 *)&y)->sin6_addr, 16);
}

bool sockinfo_same(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
    return sockinfo_port(a) == sockinfo_port(b) && sockinfo_same_host(a, b);
}

int sockinfo_of(int fd, int want, struct sockinfo *si, const char **why)
{
    int type = 0, proto = 0, acc = 0;
    socklen_t l = sizeof type;
    struct stat st;
    memset(si, 0, sizeof *si);
    if (fstat(fd, &st) < 0 || !S_ISSOCK(st.st_mode) ||
        getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &l) < 0 || type != want ||
        (l = sizeof proto, getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &proto, &l)) < 0 ||
        proto != (want == SOCK_STREAM ? IPPROTO_TCP : IPPROTO_UDP)) {
        *why = want == SOCK_STREAM ? "not a TCP socket" : "not a UDP socket";
        return ENOTSOCK;
    }
    si->type = type;
    l = sizeof si->local;
    if (getsockname(fd, (struct sockaddr *)&si->local, &l) < 0 ||
        (si->local.ss_family != AF_INET && si->local.ss_family != AF_INET6)) {
        *why = "not an IP socket";
        return EAFNOSUPPORT;
    }
    l = sizeof si->cookie;
    uint64_t ns = 0;
    socklen_t nl = sizeof ns;
    if (getsockopt(fd, SOL_SOCKET, SO_COOKIE, &si->cookie, &l) < 0 ||
        getsockopt(fd, SOL_SOCKET, SO_NETNS_COOKIE, &ns, &nl) < 0 || !ns) {
        *why = "the kernel cannot say which network namespace the socket is in "
               "(SO_NETNS_COOKIE, Linux 5.14)";
        return EOPNOTSUPP;
    }
    si->netns = ns;
    l = sizeof acc;
    if (type == SOCK_STREAM && getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &acc, &l) == 0)
        si->listening = acc != 0;
    l = sizeof si->peer;
    if (getpeername(fd, (struct sockaddr *)&si->peer, &l) < 0) si->peer.ss_family = AF_UNSPEC;
    return 0;
}

uint64_t sockinfo_own_netns(void)
{
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    uint64_t ns = 0;
    socklen_t l = sizeof ns;
    if (fd < 0) return 0;
    if (getsockopt(fd, SOL_SOCKET, SO_NETNS_COOKIE, &ns, &l) < 0) ns = 0;
    close(fd);
    return ns;
}

int sockinfo_diag(const struct sockaddr_storage *local_in, const struct sockaddr_storage *remote_in,
                  uint64_t cookie, uint64_t *found_cookie, uint64_t *ino, uint32_t *uid)
{
    struct sockaddr_storage local, remote;
    unmap(local_in, &local);
    unmap(remote_in, &remote);
    if (local.ss_family != remote.ss_family) return -1;
    int s = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
    if (s < 0) return -1;
    struct timeval tv = {0, 200000};
    setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    int found = -1;
    bool v4 = local.ss_family == AF_INET;
    for (int fam = v4 ? 0 : 1; fam < 2 && found < 0; fam++) {
        struct {
            struct nlmsghdr nh;
            struct inet_diag_req_v2 r;
        } q;
        memset(&q, 0, sizeof q);
        q.nh.nlmsg_len = sizeof q;
        q.nh.nlmsg_type = SOCK_DIAG_BY_FAMILY;
        q.nh.nlmsg_flags = NLM_F_REQUEST;
        q.r.sdiag_protocol = IPPROTO_TCP;
        q.r.idiag_states = ~0u;
        if (cookie) { /* the kernel compares it with the socket's own */
            q.r.id.idiag_cookie[0] = (uint32_t)cookie;
            q.r.id.idiag_cookie[1] = (uint32_t)(cookie >> 32);
        } else {
            q.r.id.idiag_cookie[0] = q.r.id.idiag_cookie[1] = INET_DIAG_NOCOOKIE;
        }
        if (v4) {
            const struct sockaddr_in *l4 = (const void *)&local, *r4 = (const void *)&remote;
            q.r.id.idiag_sport = l4->sin_port;
            q.r.id.idiag_dport = r4->sin_port;
            if (fam == 0) {
                q.r.sdiag_family = AF_INET;
                memcpy(q.r.id.idiag_src, &l4->sin_addr, 4);
                memcpy(q.r.id.idiag_dst, &r4->sin_addr, 4);
            } else { /* ::ffff:a.b.c.d */
                q.r.sdiag_family = AF_INET6;
                q.r.id.idiag_src[2] = q.r.id.idiag_dst[2] = htonl(0xffff);
                memcpy(&q.r.id.idiag_src[3], &l4->sin_addr, 4);
                memcpy(&q.r.id.idiag_dst[3], &r4->sin_addr, 4);
            }
        } else {
            const struct sockaddr_in6 *l6 = (const void *)&local, *r6 = (const void *)&remote;
            q.r.sdiag_family = AF_INET6;
            q.r.id.idiag_sport = l6->sin6_port;
            q.r.id.idiag_dport = r6->sin6_port;
            memcpy(q.r.id.idiag_src, &l6->sin6_addr, 16);
            memcpy(q.r.id.idiag_dst, &r6->sin6_addr, 16);
        }
        struct sockaddr_nl k = {.nl_family = AF_NETLINK};
        if (sendto(s, &q, sizeof q, 0, (struct sockaddr *)&k, sizeof k) < 0) break;
        union {
            struct nlmsghdr nh;
            char b[1024];
        } a;
        ssize_t n = recv(s, &a, sizeof a, 0);
        if (n < (ssize_t)NLMSG_LENGTH(sizeof(struct inet_diag_msg)) ||
            a.nh.nlmsg_type != SOCK_DIAG_BY_FAMILY)
            continue;
        const struct inet_diag_msg *dm = NLMSG_DATA(&a.nh);
        uint64_t c = (uint64_t)dm->id.idiag_cookie[0] | (uint64_t)dm->id.idiag_cookie[1] << 32;
        /* (the kernel checked the cookie already); no inode: a TIME_WAIT or SYN_RECV
         * remnant, no socket anybody holds; the kernel's lookup falls back to a listener
         * of the local address, which is not the connection asked for */
        if ((cookie && c != cookie) || !dm->idiag_inode || dm->idiag_state == 10 /* LISTEN */ ||
            dm->id.idiag_dport != q.r.id.idiag_dport ||
            memcmp(dm->id.idiag_dst, q.r.id.idiag_dst, sizeof dm->id.idiag_dst))
            continue;
        found = 0;
        if (found_cookie) *found_cookie = c;
        if (ino) *ino = dm->idiag_inode;
        if (uid) *uid = dm->idiag_uid;
    }
    close(s);
    return found;
}
