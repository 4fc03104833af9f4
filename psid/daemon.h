/*
 * daemon.h - the state of one psid, passed to every module (no hidden globals):
 *
 *   main.c        command line, configuration, start-up and shutdown
 *   loop.c        the event loop
 *   selfnode.c    which configured node this machine is (interface addresses, libnl)
 *   hbwire.c      the heartbeat packet: encoding, MAC, validating decoding
 *   membership.c  heartbeats, the node table, declaring nodes dead
 *   rdplink.c     the RDP endpoint to the other daemons and the dispatch of their messages
 *   client.c      the UNIX socket for local clients: framing, SO_PEERCRED, requests
 */
#ifndef PSCLUSTER_PSID_DAEMON_H
#define PSCLUSTER_PSID_DAEMON_H

#include "loop.h"
#include "psconf.h"
#include "psproto.h"
#include "rdp.h"

#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>

/* What this daemon knows about one node of the configuration. */
struct psid_node {
    const struct psconf_node *conf;
    enum psnode_state state;
    uint64_t incarnation; /* 0: never heard from */
    uint64_t last_seq;    /* of its heartbeats, against replay */
    uint64_t last_heard;  /* loop_now() of its last heartbeat */
    uint32_t load_milli, tasks, cpus;
};

struct clients;

struct psid {
    struct psconf conf;
    const struct psconf_node *self;
    uint64_t incarnation; /* CLOCK_REALTIME ns at start */
    struct loop *loop;
    rdp_t *rdp;
    struct psid_node *nodes; /* parallel to conf.nodes */
    int hb_fd;
    bool hb_multicast;
    uint64_t hb_seq;
    uint64_t hb_next; /* when the next heartbeat is due */
    struct clients *clients;
    int sig_fd;
    bool stopping;
};

/* membership.c */
int membership_start(struct psid *d);
void membership_leave(struct psid *d);
void membership_rdp_lost(struct psid *d, uint32_t node, enum rdp_lost_reason why);
struct psid_node *psid_node(struct psid *d, uint32_t id);

/* rdplink.c */
int rdplink_start(struct psid *d);
void rdplink_stop(struct psid *d);

/* client.c */
int clients_start(struct psid *d);
void clients_stop(struct psid *d);

/* selfnode.c */
const struct psconf_node *selfnode_find(const struct psconf *c, char *err, size_t errlen);

#endif
