/*
 * lifecycle.c - the life of a connection the library follows, as one state machine
 * (lifecycle.h; docs/preload-design.md, "The lifecycle").
 *
 * A connection starts on its kernel socket (the TCP phase), asks psid once it lived
 * PSP_UPGRADE_US (the negotiation), moves up onto RDP or shared memory when the answer is
 * yes, and back to its kernel socket when a fork's child or an exec needs it there (the
 * move to TCP); it ends by the program's close, or its connect's failure. The states:
 *
 *   NEW         a record being made (conn_new); never seen outside it
 *   PLAIN       ours, on the kernel socket, its negotiation due at its age PSP_UPGRADE_US
 *   CONNECTING  psid was asked (the request, or the acceptor's claim); bytes on the kernel
 *   ACCEPTED    accepted on a registered listener, not claimed yet (the kernel's until then)
 *   RDP         bytes over RDP
 *   SHM         bytes through shared memory (same node)
 *   SWITCH      moving back to TCP (conn.c, "The move to TCP")
 *   DRAIN       back on TCP; bytes held for it still going out to the socket first
 *   TCP         the kernel's from now on
 *   ORPHAN      a fork's child's inherited connection, still the parent endpoint's
 *
 * The transitions, each with the event that makes it (where in the code):
 *
 *   NEW        -> PLAIN       connect, the TCP phase first (sock.c)
 *   NEW        -> CONNECTING  connect, asking at once: PSP_SYNC, PSP_UPGRADE_US=0 (sock.c)
 *   NEW        -> ACCEPTED    accept on a registered listener (sock.c)
 *   NEW        -> TCP         a connection left on TCP, followed to count its bytes (sock.c)
 *   PLAIN      -> PLAIN       its connect is under way: its age starts (conn_plain)
 *   PLAIN      -> CONNECTING  its age reached PSP_UPGRADE_US: negotiation starts
 *   PLAIN      -> TCP         never negotiated: fork, exec, MSG_OOB, limit, psid lost, closed
 *   PLAIN      -> TCP         its connect failed (untrack)
 *   PLAIN      -> ORPHAN      fork, in the child
 *   ACCEPTED   -> PLAIN       the first use claims it (conn_claim)
 *   ACCEPTED   -> TCP         claimed without an endpoint (fallback), or exec'd with (exec.c)
 *   ACCEPTED   -> RDP         PSP_STRICT's fallback: no peer, every call fails
 *   CONNECTING -> RDP         psid's answer with an RDP peer (rdp_begin)
 *   CONNECTING -> RDP         PSP_STRICT's fallback: no peer, every call fails
 *   CONNECTING -> SHM         psid's answer with a channel (shm_attach; unmappable: reset)
 *   CONNECTING -> TCP         fallback: the answer is no, psid lost, the request failed
 *   CONNECTING -> TCP         its connect failed (untrack)
 *   CONNECTING -> ORPHAN      fork, in the child
 *   RDP        -> SWITCH      fork's child uses it, closed forked, exec, MSG_OOB, peer asks
 *   RDP        -> TCP         its connect failed after its outcome came (untrack)
 *   RDP        -> ORPHAN      fork, in the child
 *   SHM        -> SWITCH      fork's child uses it, closed forked, exec, MSG_OOB, peer asks
 *   SHM        -> ORPHAN      fork, in the child
 *   SWITCH     -> TCP         the move is over, nothing held
 *   SWITCH     -> DRAIN       the move is over, bytes held for the socket
 *   SWITCH     -> RDP         the move failed (SWITCH_NS, RST, bad RETURN): reset
 *   SWITCH     -> SHM         the move failed (SWITCH_NS, ring broken): reset
 *   SWITCH     -> ORPHAN      fork, in the child
 *   DRAIN      -> TCP         the held bytes are out (the guard's EPOLLOUT)
 *   DRAIN      -> ORPHAN      fork, in the child
 *   ORPHAN     -> TCP         the owner moved it (fork.c, at the child's first use)
 *   TCP        -> TCP         its connect failed after a fallback (untrack)
 *
 * Nothing else: a state is left only as listed. The fast path is left through SWITCH, and
 * nothing returns to the TCP phase; RDP -> TCP and TCP -> TCP are a connect that fails
 * after its outcome came (PSP_STRICT's record without a peer, an answer that raced a reset,
 * a fallback because psid went away): the record ends without a word to a peer.
 * conn_fallback writes DRAIN for held bytes, which a connection in the TCP phase or
 * unclaimed does not have (its writes went to the kernel): from CONNECTING and ACCEPTED it
 * gives TCP. conn_enter checks each move against the table, and sets the transport's
 * operations with the state (xport.h); a move not there is counted (PSP_STATS
 * bad_transitions) and, under PSP_STRICT, aborts (test_lifecycle.c;
 * scripts/check-lifecycle.sh keeps this table, the code's and docs/preload-design.md's the
 * same).
 */
#include "psp.h"

#include <stdio.h>
#include <stdlib.h>

#define TO(s) (1u << (s))
static const unsigned allowed[CS__COUNT] = {
    [CS_NEW] = TO(CS_PLAIN) | TO(CS_CONNECTING) | TO(CS_ACCEPTED) | TO(CS_TCP),
    [CS_PLAIN] = TO(CS_PLAIN) | TO(CS_CONNECTING) | TO(CS_TCP) | TO(CS_ORPHAN),
    [CS_ACCEPTED] = TO(CS_PLAIN) | TO(CS_TCP) | TO(CS_RDP),
    [CS_CONNECTING] = TO(CS_RDP) | TO(CS_SHM) | TO(CS_TCP) | TO(CS_ORPHAN),
    [CS_RDP] = TO(CS_SWITCH) | TO(CS_TCP) | TO(CS_ORPHAN),
    [CS_SHM] = TO(CS_SWITCH) | TO(CS_ORPHAN),
    [CS_SWITCH] = TO(CS_TCP) | TO(CS_DRAIN) | TO(CS_RDP) | TO(CS_SHM) | TO(CS_ORPHAN),
    [CS_DRAIN] = TO(CS_TCP) | TO(CS_ORPHAN),
    [CS_ORPHAN] = TO(CS_TCP),
    [CS_TCP] = TO(CS_TCP),
};

bool conn_transition_ok(enum conn_state from, enum conn_state to)
{
    return (unsigned)from < CS__COUNT && (unsigned)to < CS__COUNT && (allowed[from] & TO(to));
}

const char *conn_state_name(enum conn_state st)
{
    static const char *const names[CS__COUNT] = {
        [CS_NEW] = "CS_NEW",           [CS_PLAIN] = "CS_PLAIN",   [CS_CONNECTING] = "CS_CONNECTING",
        [CS_ACCEPTED] = "CS_ACCEPTED", [CS_RDP] = "CS_RDP",       [CS_DRAIN] = "CS_DRAIN",
        [CS_TCP] = "CS_TCP",           [CS_ORPHAN] = "CS_ORPHAN", [CS_SWITCH] = "CS_SWITCH",
        [CS_SHM] = "CS_SHM",
    };
    return (unsigned)st < CS__COUNT ? names[st] : "CS_?";
}

/* The transport of a connection in state to (xport.h): the fast path's on it; a move back
 * and an orphan keep the one they move off; the rest is the kernel's, but while a channel is
 * still mapped (a fork's child's, moved to TCP by its owner). */
static const struct conn_ops *conn_ops_for(const struct conn *c, enum conn_state to)
{
    switch (to) {
    case CS_RDP:
        return &xrdp_ops;
    case CS_SHM:
        return &xshm_ops;
    case CS_SWITCH:
    case CS_ORPHAN:
        return c->ops;
    default:
        return c->shm ? &xshm_ops : &xkernel_ops;
    }
}

bool conn_enter(struct conn *c, enum conn_state to)
{
    enum conn_state from = c->st;
    bool ok = conn_transition_ok(from, to);
    if (!ok) {
        psp.bad_transitions++;
        if (psp.strict) {
            fprintf(stderr, "pspreload: strict: connection state %s -> %s is not in the table\n",
                    conn_state_name(from), conn_state_name(to));
            abort();
        }
    }
    c->st = to;
    c->ops = conn_ops_for(c, to);
    return ok;
}
