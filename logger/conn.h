/*
 * conn.h - psrun's side of the psid socket: framed messages over a non-blocking stream.
 *
 * Receiving: lg_conn_read reads what is there into a buffer; lg_conn_next hands out one
 * whole message at a time, valid until the next lg_conn_read (libpsi's psi_rx: the one
 * reader of psid's frames). Sending: lg_conn_send queues a built message; lg_conn_flush writes as
 * much as the socket takes. Nothing blocks.
 */
#ifndef PSCLUSTER_LOGGER_CONN_H
#define PSCLUSTER_LOGGER_CONN_H

#include "outq.h"
#include "psi.h"
#include "psmsg.h"

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct lg_conn {
    int fd;
    struct psi_rx rx;
    struct lg_outq tx;
    uint32_t next_id;
};

/* Take over fd (made non-blocking); ids of requests start at first_id. */
void lg_conn_init(struct lg_conn *c, int fd, uint32_t first_id);
/* Take over psi's connection after its calls: the descriptor, the next request id and
 * whatever psi has read ahead; psi is left closed. */
void lg_conn_from_psi(struct lg_conn *c, struct psi *psi);
/* Read once. Returns bytes read, 0 at end of stream, -1 and errno (EAGAIN: nothing). */
ssize_t lg_conn_read(struct lg_conn *c);
/* The next whole message: 1 (in *m), 0 (need more bytes), -1 (malformed stream, errno
 * EPROTO). */
int lg_conn_next(struct lg_conn *c, struct psmsg *m);
/* Finish b with id (0: the next request id, returned through *idp if not NULL) and queue it;
 * b is reset for reuse. 0, or -1 and errno. */
int lg_conn_send(struct lg_conn *c, struct psmsg_buf *b, uint32_t id, uint32_t *idp);
/* Write queued bytes. 0 (all written or the socket is full), -1 and errno otherwise. */
int lg_conn_flush(struct lg_conn *c);
/* Close fd and free everything. */
void lg_conn_close(struct lg_conn *c);

#endif
