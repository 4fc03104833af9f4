/*
 * lifecycle.h - the states of a connection the library follows (struct conn's st) and the
 * one function that moves it between them; lifecycle.c has the table of the transitions
 * allowed, with the event behind each (docs/preload-design.md, "The lifecycle").
 *
 * The state is written by conn_enter only, under psp.lock (scripts/check-lifecycle.sh
 * finds any other write). It is read without the lock in the wrappers (a look, checked
 * again under it): the predicates below take the state as read once (cs_fast(c->st) is one
 * atomic load), so a chain of tests sees one state.
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
 * naming both states, so that the tests catch it. With the state, c->ops: its transport's
 * operations (xport.h). Whether it was in the table. */
bool conn_enter(struct conn *c, enum conn_state to);
/* Whether the table lists from -> to. */
bool conn_transition_ok(enum conn_state from, enum conn_state to);
const char *conn_state_name(enum conn_state st); /* "CS_RDP", ...; "CS_?" out of range */

/* --- the sets of states the code tests, each on one read of the state --- */

/* On the fast path, connected and not moving: its bytes go over RDP or shared memory. */
static inline bool cs_fast(enum conn_state st)
{
    return st == CS_RDP || st == CS_SHM;
}

/* The TCP phase: the program's bytes go through the kernel socket while the negotiation
 * is due (CS_PLAIN) or under way (CS_CONNECTING). */
static inline bool cs_tcp_phase(enum conn_state st)
{
    return st == CS_PLAIN || st == CS_CONNECTING;
}

/* Not this process's yet: its first use claims it (an accept's, or a fork's orphan). */
static inline bool cs_unclaimed(enum conn_state st)
{
    return st == CS_ACCEPTED || st == CS_ORPHAN;
}

/* Back on TCP for good: the kernel socket is the program's (CS_DRAIN: after the bytes held
 * for it). A move back is over once here. */
static inline bool cs_on_tcp(enum conn_state st)
{
    return st == CS_TCP || st == CS_DRAIN;
}

/* The kernel socket is the program's alone, its calls pass through: on TCP, or an orphan
 * (after its claim: one the owner could not move). */
static inline bool cs_kernel_only(enum conn_state st)
{
    return st == CS_TCP || st == CS_ORPHAN;
}

/* Its stream on the fast path is open: on RDP, or moving back to TCP (a same-node
 * connection moving has no RDP peer: callers that mean RDP check c->peer too). */
static inline bool cs_rdp_or_switch(enum conn_state st)
{
    return st == CS_RDP || st == CS_SWITCH;
}

/* Tied to this process's endpoint: negotiating, on the fast path, or moving off it. A
 * fork's child cannot carry it on its own (fork.c). */
static inline bool cs_endpoint_bound(enum conn_state st)
{
    return cs_tcp_phase(st) || cs_fast(st) || st == CS_SWITCH;
}

/* The kernel socket's readiness is the program's (poll, select): the TCP phase, TCP, and
 * one not claimed (an orphan that stays so could not be moved: the kernel's). */
static inline bool cs_kernel_ready(enum conn_state st)
{
    return st == CS_TCP || cs_unclaimed(st) || cs_tcp_phase(st);
}

#endif
