/*
 * tcp.h - rdpbench's kernel TCP: the control connection's setup, and the TCP baseline's
 * blocking I/O with TCP_NODELAY and 4-byte length framing (the best case for kernel TCP, as
 * in the peers' pingpong.c).
 */
#ifndef PSCLUSTER_RDPBENCH_TCP_H
#define PSCLUSTER_RDPBENCH_TCP_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

/* poll one descriptor for ev: 0, or -1 (errno ETIMEDOUT after timeout_ms). */
int rb_wait_fd(int fd, short ev, int timeout_ms);
/* TCP_NODELAY and send/receive timeouts of timeout_s. 0, or -1 and errno. */
int rb_tcp_socket_opts(int fd, unsigned timeout_s);
/* Connect with a bounded wait; the socket is left non-blocking. fd, or -1 and errno. */
int rb_tcp_connect(const struct sockaddr_storage *sa, socklen_t len, unsigned timeout_s);
/* Listen on sa (port 0: any; *sa gets the bound address). fd, or -1 and errno. */
int rb_tcp_listen(struct sockaddr_storage *sa, socklen_t len);
/* Read exactly n bytes (readfull.h): 1, 0 on EOF before the first byte, -1 on an error,
 * ETIMEDOUT after the socket's timeout, EPIPE at a short EOF. */
int rb_read_full(int fd, void *buf, size_t n);
/* One frame: a u32 length, then the bytes. 0, or -1 and errno (ETIMEDOUT). */
int rb_write_frame(int fd, const void *msg, size_t len);
/* Read one frame into buf (RDP_MAX_MSG bytes): its length, 0 on clean EOF, -2 for an empty
 * frame; -1 and why. */
ssize_t rb_read_frame(int fd, uint8_t *buf, char *why, size_t wl);

#endif
