/*
 * xport.h - a connection's transport: the operations of the data path whose implementation
 * differs between the kernel's TCP (xkernel.c), RDP (xrdp.c) and shared memory (shm.c), in
 * the manner of Onload's protocol implementations and libvma's socket_fd_api; and what those
 * files share with conn.c, which keeps what is common (the buffers, credit, the read and
 * write loops, the lifecycle's moves) and calls through c->ops.
 *
 * conn_enter (lifecycle.c) sets c->ops with the state: xrdp_ops on CS_RDP, xshm_ops on
 * CS_SHM; CS_SWITCH and CS_ORPHAN keep the transport they move off (a fork's child: its
 * owner's); every other state is the kernel's (xkernel_ops), but while a channel is still
 * mapped (c->shm: a fork's child's connection the owner moved to TCP) shared memory's, whose
 * look at the rings the readiness still takes. So xshm_ops is the transport exactly when
 * c->shm is there, and also in the CS_SHM of a channel that could not be mapped (a reset
 * connection); every operation copes with that. All run under psp.lock.
 *
 * An operation that a transport does not have is NULL, and conn.c calls only what the
 * state allows: the fast path's operations (write, flush, await, up, sw_init, close) in
 * CS_RDP or CS_SHM, the move back's (sw_progress, reset) in CS_SWITCH.
 */
#ifndef PSCLUSTER_PRELOAD_XPORT_H
#define PSCLUSTER_PRELOAD_XPORT_H

#include "lifecycle.h"

/* (included by psp.h, at its end) */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

struct conn;
struct chunk;
struct neg_peer;

struct conn_ops {
    const char *name;      /* "tcp", "rdp", "shm": the path psid's report names (PSF_PATH) */
    enum conn_state state; /* its state on the fast path (CS_TCP: the kernel's): where a
                            * move back that failed leaves the connection */
    /* The transport's state into c's fields (rx_bytes, credit, the ends), and a move to TCP
     * under way on, before c's fields are looked at. NULL: they are always up to date. */
    void (*sync)(struct conn *c);
    /* Copy up to want of the bytes c holds (rx_bytes) into iov at offset done; MSG_PEEK
     * leaves them, MSG_TRUNC takes them without copying. The bytes copied. */
    size_t (*read)(struct conn *c, const struct iovec *iov, int iovcnt, size_t done, size_t want,
                   int flags);
    /* Send up to n (at most c's credit) of iov's bytes from offset done, nothing held before
     * them: the bytes taken, or -1 with errno (EAGAIN: no room now, wait). */
    ssize_t (*write)(struct conn *c, const struct iovec *iov, int iovcnt, size_t done, size_t n);
    void (*flush)(struct conn *c); /* send what c->hold holds, as far as credit goes */
    /* What is owed to the peer and could not go before: our UP, credit, the end (FIN, or
     * at the last close CLOSE, RST with SO_LINGER 0), after what a cork held. */
    void (*send_owed)(struct conn *c);
    /* Before a wait for events (POLLIN, POLLOUT): spin a while for them (spin), then ask
     * the peer to wake us; whether they are there already. NULL: the wait does it all. */
    bool (*await)(struct conn *c, short events, bool spin);
    void (*up)(struct conn *c);          /* the move up (conn_up): our UP, the epoll sets */
    void (*sw_init)(struct conn *c);     /* the move back, as the side that asks */
    void (*sw_progress)(struct conn *c); /* ... its next steps (CS_SWITCH) */
    void (*reset)(struct conn *c);       /* the peer hears a reset (a move back failed) */
    /* The program closed its last descriptor: the transport's end. Whether it dealt with c
     * (false: conn.c destroys it). */
    bool (*close)(struct conn *c);
};

extern const struct conn_ops xkernel_ops, xrdp_ops, xshm_ops;

/* --- conn.c: what the transports share --- */
struct chunk *chunk_new(size_t n);
void chunk_free(struct chunk *ch);
void free_chunks(struct chunk *ch);
void hold_consume(struct conn *c, size_t n); /* n bytes of c->hold went out */
/* The slice [off, off+n) of iov in out[0..max): its entries; *got the bytes they hold. */
int iov_slice(const struct iovec *iov, int iovcnt, size_t off, size_t n, struct iovec *out, int max,
              size_t *got);
/* The receive queue's bytes (c->rxq) into iov (as conn_ops.read), credit given back. */
size_t conn_rxq_read(struct conn *c, const struct iovec *iov, int iovcnt, size_t done, size_t want,
                     int flags);
void conn_uncork(struct conn *c);      /* what a cork held goes (the fast path's flush) */
void conn_send_owed(struct conn *c);   /* c->ops->send_owed */
void conn_destroy(struct conn *c);     /* the connection ends */
void conn_up(struct conn *c);          /* it has its fast path: UP, then bytes there */
void conn_sw_progress(struct conn *c); /* a move back goes on (CS_SWITCH) */
void conn_sw_begin(struct conn *c, enum conn_sw role);
void conn_sw_fail(struct conn *c, int err);
/* The move back is over for the bytes' part: the held ones to the socket (CS_DRAIN while
 * some are left), then CS_TCP. */
void conn_sw_end(struct conn *c);

/* --- xkernel.c: the kernel socket --- */
/* Bytes on the kernel socket (the TCP phase, or the peer's still to read), never
 * blocking: what recvmsg or sendmsg returned, counted. */
ssize_t kernel_io(struct conn *c, bool out, const struct iovec *iov, int iovcnt, size_t done,
                  size_t n, int flags);
short kernel_poll(const struct conn *c, short events); /* its readiness now */
void kernel_push(struct conn *c); /* bytes a MSG_MORE of the TCP phase left there go out */
bool drain_hold(struct conn *c);  /* c->hold to the socket, not blocking: whether all went */
void guard_out(struct conn *c);   /* the guard's EPOLLOUT, once: more of the hold can go */

/* --- xrdp.c: RDP --- */
/* The negotiation's answer gave c an RDP peer: c is CS_RDP, moved up (and a zombie ended).
 * -1: no RDP for it; 1: it was a zombie, now destroyed. */
int xrdp_begin(struct conn *c, const struct neg_peer *p);
void xrdp_unhash(struct conn *c); /* out of the (peer, id, connector) table (its destroy) */
/* A closed connection's last messages are delivered, or will never be. */
bool xrdp_delivered(const struct conn *c);
void xrdp_timers(uint64_t now); /* messages for unknown connections that waited too long */
void xrdp_fork_child(void);     /* a fork's child: no RDP peer is its own */

#endif
