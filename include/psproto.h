/*
 * psproto.h - message types and field tags of psid's protocols (encoding: psmsg.h).
 *
 * Client protocol: a local program connects to its node's psid on a UNIX stream socket
 * (path: PSID_SOCKET, else PSI_DEFAULT_SOCKET) and sends requests; each reply carries the
 * request's id. psid identifies the caller with SO_PEERCRED and never reads a uid from a
 * message. Any request may be answered with PSM_ERROR (PSF_ERRNO, PSF_TEXT).
 *
 * Daemon protocol: messages between psids travel as RDP messages with the same encoding
 * (types from 0x1000 on).
 *
 * Numbers are never reused; new fields get new tags, and readers skip tags they do not know.
 */
#ifndef PSCLUSTER_PSPROTO_H
#define PSCLUSTER_PSPROTO_H

#define PSI_DEFAULT_SOCKET "/run/pscluster/psid.sock"

enum psm_type {
    PSM_ERROR = 1,        /* reply: PSF_ERRNO, PSF_TEXT */
    PSM_NODES = 10,       /* request: the node table */
    PSM_NODES_REPLY = 11, /* PSF_NODE records, PSF_SELF */

    /* daemon to daemon (over RDP) */
    PSM_D_HELLO = 0x1000, /* PSF_NODE_ID, PSF_INCARNATION: sent when a connection comes up */
};

enum psf_tag {
    PSF_ERRNO = 1,        /* u32 */
    PSF_TEXT = 2,         /* string */
    PSF_SELF = 3,         /* u32: the answering node's id */
    PSF_NODE_ID = 10,     /* u32 */
    PSF_NAME = 11,        /* string */
    PSF_ADDR = 12,        /* string: numeric address */
    PSF_STATE = 13,       /* u32: enum psnode_state */
    PSF_LOAD = 14,        /* u32: 1-minute load average x 1000 */
    PSF_TASKS = 15,       /* u32 */
    PSF_CPUS = 16,        /* u32 */
    PSF_INCARNATION = 17, /* u64 */
    PSF_AGE_MS = 18,      /* u32: ms since the node was last heard from */

    PSF_NODE = 0x8001, /* record: PSF_NODE_ID, PSF_NAME, PSF_ADDR, PSF_STATE, ... */
};

enum psnode_state {
    PSNODE_DOWN = 0, /* never heard from, declared dead, or left */
    PSNODE_UP = 1,
};

#endif
