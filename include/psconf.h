/*
 * psconf.h - the cluster configuration (public API).
 *
 * One file in libconfig syntax describes the whole cluster: its name, the key file, RDP
 * tunables, heartbeat settings, psid's local socket and the node table. psconf_load() parses
 * it, fills in defaults, checks every value (types, ranges, unknown keys, duplicates,
 * cross-field rules), reads the cluster key and returns the result as a plain struct that
 * the caller owns. Every error message names the file, the line and the key, e.g.
 *     /etc/pscluster/psid.conf:12: rdp.mtuu: unknown key
 *     /etc/pscluster/psid.conf: nodes: missing
 * The annotated example conf/psid.conf documents every key and its default.
 *
 * The library keeps no state outside the struct; any number of configurations can be loaded
 * side by side.
 */
#ifndef PSCLUSTER_PSCONF_H
#define PSCLUSTER_PSCONF_H

#include <limits.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

struct rdp_config; /* include/rdp.h */

#define PSCONF_NAME_MAX        64 /* cluster and node names: 1..63 characters + NUL */
#define PSCONF_MAX_NODE_ID     65535
#define PSCONF_FINGERPRINT_LEN 17 /* 16 hex digits + NUL */

/* swim: SWIM probing and gossip (psid/swim.c, docs/swim.md) instead of heartbeats to all */
enum psconf_hb_mode { PSCONF_HB_MULTICAST, PSCONF_HB_UNICAST, PSCONF_HB_SWIM };

enum psconf_log_level {
    PSCONF_LOG_ERROR,
    PSCONF_LOG_WARNING,
    PSCONF_LOG_NOTICE,
    PSCONF_LOG_INFO,
    PSCONF_LOG_DEBUG
};

struct psconf_node {
    uint32_t id;                     /* 0 .. PSCONF_MAX_NODE_ID */
    char name[PSCONF_NAME_MAX];      /* [A-Za-z0-9._-], not all digits */
    struct sockaddr_storage addr;    /* the node's address, port = rdp_port */
    socklen_t addrlen;               /* sizeof the family's sockaddr */
    char addr_str[INET6_ADDRSTRLEN]; /* the address in canonical text form */
    unsigned cpus;                   /* 1..4096 (default 1) */
    int line;                        /* line of the node's entry in the configuration */
};

struct psconf {
    char path[PATH_MAX];           /* the file as given to psconf_load() */
    char cluster[PSCONF_NAME_MAX]; /* default "pscluster" */
    char key_file[PATH_MAX];       /* resolved: relative paths are taken from path's directory */
    unsigned char key[32];         /* crypto_generichash (BLAKE2b, 32 bytes) of the key file */
    enum psconf_log_level log_level;

    /* rdp = { ... } (see struct rdp_config for their meaning) */
    unsigned rdp_port, mtu, rto_min_us, rto_max_us, rto_init_us, max_retrans, ack_delay_us;
    size_t sndbuf, rcvbuf, sock_buf;
    int mac;          /* enum rdp_mac_alg */
    int mac_impl;     /* enum rdp_mac_impl */
    unsigned offload; /* 1: UDP GSO/GRO where datagrams are MTU-sized */

    /* heartbeat = { ... } */
    unsigned hb_interval_ms, hb_dead_limit;
    unsigned hb_down_grace_ms; /* unreachable this long: down (its jobs end) */
    enum psconf_hb_mode hb_mode;
    struct sockaddr_in hb_group; /* multicast group, port = hb_port */
    unsigned hb_port;

    /* psid = { ... } */
    char socket_fmt[PATH_MAX];  /* psid's UNIX socket; %n = node id, %% = % */
    unsigned kill_delay_ms;     /* SIGTERM -> SIGKILL delay for orphaned tasks */
    unsigned max_clients;       /* client connections in all (root keeps a share) */
    unsigned max_clients_uid;   /* client connections of one uid (root: no limit) */
    unsigned max_tasks_uid;     /* tasks of one uid on a node, started and queued (root: none) */
    unsigned done_jobs;         /* records of ended jobs kept (psstat jobs --done); 0: none */
    unsigned tree_width;        /* children per node in a job's launch tree (psid/spawntree.c) */
    unsigned bcast_width;       /* children per node in a file broadcast's tree (psid/bcast.c) */
    char user[PSCONF_NAME_MAX]; /* the engine's identity when psid starts as root */
    unsigned root_jobs;         /* 1: tasks may run as root */
    unsigned cgroups;           /* 1: a cgroup per job where psid may make one; 0: process
                                 * groups only (Slurm's proctrack/pgid) */
    unsigned client_idle_s;     /* a client that sends nothing and holds nothing: closed
                                 * after this long; 0: never */

    /* pmi = { ... }: the PMI server of MPI jobs (docs/pmi.md) */
    unsigned pmi_tree_width;  /* children per node in a job's fence tree */
    size_t pmi_max_kvs_bytes; /* key and value bytes a job's store may hold on a node */
    unsigned pmi_max_kvs_keys;

    /* gang = { ... }: gang scheduling (docs/gang.md) */
    unsigned gang_quantum_ms; /* time slice of a row of the matrix; 0: no gang scheduling */
    unsigned gang_mpl;        /* multiprogramming level: rows of the matrix at most */

    struct psconf_node *nodes; /* sorted by id */
    size_t nnodes;
};

/* Defaults for every key (no nodes, no key file, zero key). Useful to build a configuration
 * in memory, e.g. in tests. */
void psconf_defaults(struct psconf *c);

/* Load and check path. 0, or -1 with a message "FILE:LINE: KEY: what is wrong" (or
 * "FILE: ..." when there is no line, e.g. the file is missing) in err; on error *out is left
 * zeroed and needs no psconf_free(). err may be NULL. */
int psconf_load(const char *path, struct psconf *out, char *err, size_t errlen);

/* Release what psconf_load() allocated and wipe the key; safe to call twice. */
void psconf_free(struct psconf *c);

/* Node lookups: NULL if there is no such node. */
const struct psconf_node *psconf_node_by_id(const struct psconf *c, uint32_t id);
const struct psconf_node *psconf_node_by_name(const struct psconf *c, const char *name);
/* Address only; the port is ignored. */
const struct psconf_node *psconf_node_by_addr(const struct psconf *c, const struct sockaddr *sa);
/* Look up "3" (an id: all digits) or "n3" (a name). */
const struct psconf_node *psconf_node_lookup(const struct psconf *c, const char *id_or_name);

/* Expand socket_fmt for node into buf. 0, or -1 and errno: ENAMETOOLONG (does not fit in
 * len, or longer than a UNIX socket path can be), EINVAL (bad % sequence). */
int psconf_socket_path(const struct psconf *c, uint32_t node, char *buf, size_t len);

/* Fill an rdp_config for node: node_id, bind = node address:rdp_port, key, every RDP
 * tunable. 0, or -1 and errno ENOENT if node is not in the configuration. */
int psconf_rdp_config(const struct psconf *c, uint32_t node, struct rdp_config *out);

/* "error", "warning", "notice", "info", "debug"; "unknown" for anything else. */
const char *psconf_log_level_name(enum psconf_log_level l);
/* The reverse: 0, or -1 if name is not a level. */
int psconf_log_level_parse(const char *name, enum psconf_log_level *l);
/* "multicast", "unicast"; "unknown" for anything else. */
const char *psconf_hb_mode_name(enum psconf_hb_mode m);

/* A short public fingerprint of the key (16 hex digits) so that operators can compare keys
 * across nodes without showing them. Not the key, nor a prefix of it. */
void psconf_key_fingerprint(const struct psconf *c, char out[PSCONF_FINGERPRINT_LEN]);

#endif
