/*
 * addr.h - rdpbench's socket addresses: numeric ADDR:PORT as its command line takes them,
 * and the few questions the roles ask of an address.
 */
#ifndef PSCLUSTER_RDPBENCH_ADDR_H
#define PSCLUSTER_RDPBENCH_ADDR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

/* "a.b.c.d:port", "[v6]:port", or (need_port false) a bare address. 0, or -1. */
int rb_addr_parse(const char *s, bool need_port, struct sockaddr_storage *ss, socklen_t *len);
uint16_t rb_addr_port(const struct sockaddr_storage *ss);
void rb_addr_set_port(struct sockaddr_storage *ss, uint16_t port);
/* "a.b.c.d:port" or "[v6]:port" into buf. Returns buf. */
const char *rb_addr_str(const struct sockaddr_storage *ss, char *buf, size_t len);
bool rb_addr_is_loopback(const struct sockaddr_storage *ss);
bool rb_addr_is_any(const struct sockaddr_storage *ss);

#endif
