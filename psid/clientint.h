/*
 * clientint.h - the inside of client.c that its unit test reaches (test/unit/
 * test_client_fds.c): the client and the client table, the bounds on descriptors passed,
 * the accept callback and the loop's before-wait hook. Not a public header: the rest of
 * psid sees daemon.h's client_* functions.
 */
#ifndef PSCLUSTER_PSID_CLIENTINT_H
#define PSCLUSTER_PSID_CLIENTINT_H

#include "daemon.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/un.h>

#define CLIENT_FDS      4  /* descriptors passed and not yet taken by their message */
#define CLIENT_OUT_SETS 64 /* messages with descriptors queued for a client, not yet sent */

/* Descriptors to pass with the byte at stream offset at (the first of their message). */
struct out_fds {
    uint64_t at;
    unsigned n;
    int fds[CLIENT_OUT_FDS];
};

struct client {
    struct psid *d;
    int fd;
    struct ucred cred;
    int pidfd; /* the client process, for notification signals (never a recycled pid) */
    uint8_t *in;
    size_t inlen, incap;
    uint8_t *out;
    size_t outlen, outoff, outcap;
    uint64_t out_pos;     /* stream offset of out[0] */
    struct out_fds *ofds; /* by offset: CLIENT_OUT_SETS once allocated */
    unsigned nofds;
    bool closing;     /* close once the output is flushed */
    bool sets_full;   /* a module found no room for descriptors: tell it when there is */
    bool in_dispatch; /* handling its requests */
    bool dead;        /* connection over; freed by clients_reap */
    bool want_write;  /* on the list of clients with output queued since the hook ran */
    bool held;        /* on the list of clients with requests held back behind replies */
    /* descriptors in flight (fdflight.h): queued in ofds, and sent since its socket was last
     * seen with nothing unread; fl_waiting: room was refused for them; fl_blocked: the
     * kernel refused a send (its count of psid's descriptors in flight is full) */
    unsigned fl_queued, fl_sent;
    bool fl_waiting, fl_blocked;
    uint64_t active; /* loop_now() of its last request */
    /* descriptors passed with SCM_RIGHTS, each with the stream offset of the byte it came
     * with (the last byte of its read: the kernel ends a read after a passed descriptor),
     * which is the first byte of the message it belongs to (psi_call_fd) */
    int fds[CLIENT_FDS];
    uint64_t fd_at[CLIENT_FDS];
    unsigned nfds;
    uint64_t in_pos; /* stream offset of in[0] */
    uint64_t msg_at; /* stream offset of the message being handled */
    struct client *next;
    struct client *next_dead;
    struct client *next_write, *next_held;
};

struct clients {
    int lfd;
    char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
    struct client *list;
    struct client *dead;   /* marked by client_kill, not yet reaped */
    struct client *writes; /* output queued, to be written by the hook (want_write) */
    struct client *held;   /* requests held back behind unread replies (hold) */
    uint64_t again;        /* a timer due at once: the hook had more to do */
    unsigned n;
    size_t in_total;        /* request buffers of all clients (IN_BUDGET) */
    struct uid_count *uids; /* connections per uid (not root) */
    struct fdflight *fl;    /* descriptors passed and not yet taken (fdflight.h) */
    uint64_t fl_timer;      /* looks again while room was refused or a send was */
    size_t nuids, capuids;
    int spare_fd;       /* /dev/null, given up to accept and refuse when out of fds */
    uint64_t fd_warned; /* loop_now() of the last "out of descriptors" line */
    uint64_t idle_timer;
};

struct uid_count {
    uint32_t uid;
    unsigned n;
    bool warned; /* over the limit, logged once until it drops under again */
};

/* The listening socket is readable: accept (the loop's callback; a test calls it). */
void clients_on_accept(void *ctx, uint32_t events);
/* The loop's before-wait hook: writes, resumes held requests, frees dead clients. */
void clients_before_wait(void *ctx);
/* Write what is queued for c (its descriptors with their bytes); false if c was closed. */
bool client_flush_out(struct client *c);
/* Mark c dead and take its socket out of the loop; freed by clients_reap. */
void client_kill(struct client *c);
/* Free the dead clients (ctx: the psid). */
void clients_reap(void *ctx);

#endif
