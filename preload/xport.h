/*
 * xport.h - a connection's transport: what the files of the transports (xkernel.c, the
 * kernel socket) share with conn.c, which keeps what is common. All under psp.lock.
 */
#ifndef PSCLUSTER_PRELOAD_XPORT_H
#define PSCLUSTER_PRELOAD_XPORT_H

/* (included by psp.h, at its end) */

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <sys/uio.h>

struct conn;
struct chunk;

/* --- conn.c: what the transports share --- */
void chunk_free(struct chunk *ch);
void free_chunks(struct chunk *ch);
/* The slice [off, off+n) of iov in out[0..max): its entries; *got the bytes they hold. */
int iov_slice(const struct iovec *iov, int iovcnt, size_t off, size_t n, struct iovec *out, int max,
              size_t *got);

/* --- xkernel.c: the kernel socket --- */
/* Bytes on the kernel socket (the TCP phase, or the peer's still to read), never
 * blocking: what recvmsg or sendmsg returned, counted. */
ssize_t kernel_io(struct conn *c, bool out, const struct iovec *iov, int iovcnt, size_t done,
                  size_t n, int flags);
short kernel_poll(const struct conn *c, short events); /* its readiness now */
void kernel_push(struct conn *c); /* bytes a MSG_MORE of the TCP phase left there go out */
bool drain_hold(struct conn *c);  /* c->hold to the socket, not blocking: whether all went */
void guard_out(struct conn *c);   /* the guard's EPOLLOUT, once: more of the hold can go */

#endif
