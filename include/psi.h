/*
 * psi.h - the client library: how programs talk to their node's psid.
 *
 * A connection is a UNIX stream socket to psid (PSID_SOCKET, else PSI_DEFAULT_SOCKET). Two
 * kinds of message come back on it (psproto.h):
 *  - replies, one per request, carrying the request's id: psi_call waits for its own;
 *  - events, which psid sends when something happens (psm_is_event: a watched task died, a
 *    job's ranks started, printed or ended). An event that arrives while psi_call waits for
 *    a reply is queued, never taken for the reply, and psi_next_event hands events out in
 *    the order they came.
 * Either may come with descriptors psid passes along (SCM_RIGHTS): psi_take_fd takes those of
 * the message last handed out.
 * To wait for events together with other descriptors: poll psi_fd for POLLIN, but first
 * take every event already read (psi_next_event with timeout 0 until it returns 0), since
 * those no longer make the descriptor readable.
 *
 * The typed calls are below (notify, release, signal), in psi_nodes.h (the node table) and
 * psi_tasklist.h (the cluster's tasks);
 * the names people write are parsed by psi_tid.h (task ids), psi_hostlist.h (node lists) and
 * psi_signames.h (signals).
 */
#ifndef PSCLUSTER_PSI_H
#define PSCLUSTER_PSI_H

#include "psmsg.h"
#include "psproto.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The framed reader every client of psid uses (rx.c). Messages handed out by psi_rx_next
 * point into the buffer and stay valid until the next psi_rx_read. Descriptors psid passes
 * with a message (SCM_RIGHTS on its first byte) are held until taken (psi_rx_take_fd) or
 * closed: at most PSI_RX_FDS at a time, more are closed as they come. A zeroed struct is an
 * empty reader. */
#define PSI_RX_FDS 8
struct psi_rx {
    uint8_t *buf;
    size_t len, pos, cap;
    uint64_t base;   /* stream offset of buf[0] */
    uint64_t cur_at; /* stream offset of the message last handed out, if cur */
    bool cur;
    unsigned nfds;
    int fds[PSI_RX_FDS];        /* received, close-on-exec, in the order passed */
    uint64_t fd_at[PSI_RX_FDS]; /* the stream offset each came with */
};
/* Read once from fd (EINTR is retried). Bytes read, 0 at end of stream, -1 and errno. The
 * messages handed out are dropped first, with their descriptors not taken. */
ssize_t psi_rx_read(struct psi_rx *rx, int fd);
/* The next whole message: 1 (in *m), 0 (more bytes needed), -1 (malformed, errno EPROTO).
 * The previous message's descriptors not taken are closed. */
int psi_rx_next(struct psi_rx *rx, struct psmsg *m);
/* The next descriptor passed with the message last handed out by psi_rx_next, in the order
 * psid passed them, now the caller's (close-on-exec); -1 when none is left. */
int psi_rx_take_fd(struct psi_rx *rx);
/* Whether psi_rx_next would return without more bytes. */
bool psi_rx_whole(const struct psi_rx *rx);
/* Free the buffer and close the descriptors held. */
void psi_rx_free(struct psi_rx *rx);

/* Events read ahead of a reply, in arrival order; at most PSI_EVQ_MAX bytes. */
#define PSI_EVQ_MAX (64u << 20)
struct psi_ev;

struct psi {
    int fd;
    uint32_t next_id;
    struct psi_rx rx;
    struct psi_ev *evq, **evq_tail;
    size_t evq_bytes;
    struct psi_ev *cur; /* the event last handed out, if it came from the queue */
    char path[108];
};

/* Connect to psid at path (NULL: $PSID_SOCKET, else PSI_DEFAULT_SOCKET). 0, or -1 and errno. */
int psi_open(struct psi *c, const char *path);
/* Use fd, a stream already connected to psid (a test's socketpair, an inherited socket). */
void psi_open_fd(struct psi *c, int fd);
void psi_close(struct psi *c);
/* The connection's descriptor, to poll for POLLIN (see above). */
int psi_fd(const struct psi *c);
/* Send the request built in req (psmsg_begin with any id: psi_call sets it) and read its
 * reply into *reply (valid until the next call on c). A PSM_ERROR reply returns -1 with
 * errno from PSF_ERRNO, and its PSF_TEXT in *reply (also one with id 0: psid refusing the
 * connection, e.g. EUSERS past a limit); EPROTO for a malformed reply; ENOBUFS when more than
 * PSI_EVQ_MAX bytes of events arrived first; other errno values for I/O errors (ECONNRESET: psid
 * closed the connection). */
int psi_call(struct psi *c, struct psmsg_buf *req, struct psmsg *reply);
/* psi_call for a request without fields (PSM_NODES, PSM_TASKS, PSM_RDP, PSM_PL_SOCKETS):
 * its reply into *reply, as psi_call. */
int psi_ask(struct psi *c, uint16_t type, struct psmsg *reply);
/* psi_call with descriptor fd passed along (SCM_RIGHTS, with the request's first byte): the
 * PSM_PL_* requests that name a socket (psproto.h). fd < 0: none. */
int psi_call_fd(struct psi *c, struct psmsg_buf *req, int fd, struct psmsg *reply);
/* psi_call, with ev called for each event that comes while it waits (the event is queued
 * as well): a caller that waits long (a spawn queued by gang scheduling) can say so. */
int psi_call_ev(struct psi *c, struct psmsg_buf *req, struct psmsg *reply,
                void (*ev)(void *ctx, const struct psmsg *m), void *ctx);
/* Send a request and do not wait (its reply will be dropped when it comes). Returns the
 * request id, or 0 and errno. */
uint32_t psi_send(struct psi *c, struct psmsg_buf *req);
/* psi_send with descriptor fd passed along (as psi_call_fd). */
uint32_t psi_send_fd(struct psi *c, struct psmsg_buf *req, int fd);
/* The next event into *ev (valid until the next call on c): 1; 0 when none came within
 * timeout_ms (0: do not wait, -1: wait as long as it takes); -1 and errno (EINTR: a signal
 * arrived; ECONNRESET: psid closed the connection; EPROTO). */
int psi_next_event(struct psi *c, struct psmsg *ev, int timeout_ms);
/* Whether psi_next_event(c, ev, 0) would return an event without reading. */
bool psi_event_pending(const struct psi *c);
/* The next descriptor psid passed with the message last handed out (the reply of psi_call or
 * psi_call_fd, the event of psi_next_event; also an event queued while a call waited), in
 * the order psid passed them: the caller's now, to close (close-on-exec is set). -1 when
 * none is left. Descriptors not taken are closed when the next message is handed out (by
 * any call that reads on c) and by psi_close. */
int psi_take_fd(struct psi *c);
/* The socket path psi_open(NULL) uses. */
const char *psi_socket_path(void);

/* Typed requests (calls.c). Each returns 0, or -1 and errno: psid's answer (ESRCH, EPERM,
 * EINVAL, ...) or an error of the connection. */
/* Notify this connection when task tid ends: with signal sig, or (sig 0) a PSM_DEAD event. */
int psi_notify(struct psi *c, uint64_t tid, int sig);
/* Cancel a notification this connection registered for tid. */
int psi_release(struct psi *c, uint64_t tid);
/* Send sig to task tid anywhere in the cluster, as kill(2) would. */
int psi_signal(struct psi *c, uint64_t tid, int sig);
/* Send sig to every task of job; *count (may be NULL) is the number of tasks reached. */
int psi_signal_job(struct psi *c, uint64_t job, int sig, uint32_t *count);

/* The preload library's listener registration: psid learns that the listening TCP socket fd
 * (passed along) accepts under the library, so connections to it from other nodes and from
 * this one are negotiated (PSM_PL_LISTEN); PSM_PL_DECLINE, with an accepted socket: this
 * one stays on TCP. */
int psi_pl_listen(struct psi *c, int fd);
int psi_pl_decline(struct psi *c, int fd);

/* A PSM_DEAD event, decoded. */
struct psi_dead {
    uint64_t tid;
    bool lost;       /* the task's node was lost; status is 0 */
    uint32_t status; /* wait(2) status */
};
/* 0 if ev is a well-formed PSM_DEAD, else -1 (EINVAL). */
int psi_dead_parse(const struct psmsg *ev, struct psi_dead *d);

#endif
