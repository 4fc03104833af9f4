/*
 * lifecycle.h - the states of a connection the library follows (struct conn's st) and the
 * one function that moves it between them; lifecycle.c has the table of the transitions
 * allowed, with the event behind each (docs/preload-design.md, "The lifecycle").
 *
 * The state is written by conn_enter only, under psp.lock (scripts/check-lifecycle.sh
 * finds any other write). It is read without the lock in the wrappers (a look, checked
 * again under it).
 */
#ifndef PSCLUSTER_PRELOAD_LIFECYCLE_H
#define PSCLUSTER_PRELOAD_LIFECYCLE_H

#include <stdbool.h>

enum conn_state {
    CS_NEW,        /* a record being made (conn_new): never seen outside it */
    CS_PLAIN,      /* ours, on the kernel socket; its negotiation starts once it lived
                    * PSP_UPGRADE_US (conn.c, "The TCP phase"): a short one never asks */
    CS_CONNECTING, /* negotiating: psid was asked (the connector's request, or the acceptor's
                    * claim), the answer is not here yet; the bytes travel on the kernel
                    * socket meanwhile (conn.c, "The TCP phase") */
    CS_ACCEPTED,   /* acceptor: accepted on a registered listener, not yet claimed (the
                    * kernel socket's, until the first use claims it) */
    CS_RDP,        /* bytes travel over RDP */
    CS_DRAIN,      /* back on TCP; bytes held for it are still being written to the socket */
    CS_TCP,        /* plain TCP from now on */
    CS_ORPHAN,     /* inherited over fork from a process whose endpoint this is not */
    CS_SWITCH,     /* moving back to TCP (fork, exec): see conn.c, "The move to TCP" */
    CS_SHM,        /* bytes travel through shared memory (same node, shm.c) */
    CS__COUNT
};

struct conn;

/* Move c to state to (under psp.lock). A transition the table does not list is made all
 * the same (the caller relies on it: refusing would leave the connection half-moved), and
 * counted (psp.bad_transitions, PSP_STATS bad_transitions); under PSP_STRICT it aborts,
 * naming both states, so that the tests catch it. Whether it was in the table. */
bool conn_enter(struct conn *c, enum conn_state to);
/* Whether the table lists from -> to. */
bool conn_transition_ok(enum conn_state from, enum conn_state to);
const char *conn_state_name(enum conn_state st); /* "CS_RDP", ...; "CS_?" out of range */

#endif
