/*
 * sockinfo.h - what the kernel says of a socket (sockinfo.c): a descriptor a client passed
 * with a request, and sock_diag's exact lookups in psid's own network namespace.
 *
 * The preload's negotiation binds every registration and every claim to a kernel object the
 * client really holds (docs/security.md, "The claim rule"). An address is not an identity:
 * any user can make a private user and network namespace and there a socket with any
 * 4-tuple. So a passed socket is known by what the kernel says of that very object: its
 * cookie (SO_COOKIE, unique for the boot), its network namespace (SO_NETNS_COOKIE, likewise),
 * its addresses as getsockname and getpeername give them, whether it listens; and a socket
 * psid did not get is known by what sock_diag finds in psid's namespace with the cookie
 * checked by the kernel. Nothing here is taken from a message.
 */
#ifndef PSCLUSTER_PSID_SOCKINFO_H
#define PSCLUSTER_PSID_SOCKINFO_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

struct sockinfo {
    int type;       /* SOCK_STREAM, SOCK_DGRAM */
    bool listening; /* SO_ACCEPTCONN */
    uint64_t cookie, netns;
    struct sockaddr_storage local; /* AF_INET or AF_INET6 */
    struct sockaddr_storage peer;  /* AF_UNSPEC: not connected */
};

/* What the kernel says of fd, a TCP (want SOCK_STREAM) or UDP (SOCK_DGRAM) socket of IPv4 or
 * IPv6: 0, or an errno value with *why (ENOTSOCK: not such a socket; EAFNOSUPPORT: not IP;
 * EOPNOTSUPP: the kernel cannot say which network namespace it is in, SO_NETNS_COOKIE of
 * Linux 5.14). fd is not closed. */
int sockinfo_of(int fd, int want, struct sockinfo *si, const char **why);

/* The cookie of the network namespace this process is in (a socket's SO_NETNS_COOKIE), or 0
 * when the kernel cannot say. */
uint64_t sockinfo_own_netns(void);

/* The TCP socket from local to remote in psid's network namespace (sock_diag's exact lookup;
 * IPv4 addresses also as v4-mapped in an IPv6 socket). With cookie != 0 the kernel finds it
 * only if it is that socket. Only a socket somebody holds counts (not a TIME_WAIT or
 * SYN_RECV remnant). 0 with its cookie, inode and owner's uid in the out-parameters
 * (each may be NULL); -1 if there is none. */
int sockinfo_diag(const struct sockaddr_storage *local, const struct sockaddr_storage *remote,
                  uint64_t cookie, uint64_t *found_cookie, uint64_t *ino, uint32_t *uid);

/* Addresses: the port; the address as text (a v4-mapped IPv6 address as its IPv4 one);
 * whether it is the wildcard; whether a and b are one address and port (v4-mapped counts
 * as IPv4); whether a and b are one address, ports aside. */
uint16_t sockinfo_port(const struct sockaddr_storage *ss);
void sockinfo_addr_text(const struct sockaddr_storage *ss, char out[46]);
bool sockinfo_wildcard(const struct sockaddr_storage *ss);
bool sockinfo_same(const struct sockaddr_storage *a, const struct sockaddr_storage *b);
bool sockinfo_same_host(const struct sockaddr_storage *a, const struct sockaddr_storage *b);

#endif
