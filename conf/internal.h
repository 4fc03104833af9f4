/*
 * internal.h - what the conf/ modules share and nobody else sees.
 *
 * One struct conf_ctx lives on psconf_load()'s stack for the duration of a load: the file
 * being read, the error buffer, where each key was found (for messages about keys that are
 * checked against each other), and the integer-literal scan that makes up for libconfig
 * truncating big integers. Modules:
 *   error.c    formatting "FILE:LINE: KEY: message"
 *   schema.c   the key tables and the walk over libconfig's tree (types, ranges, unknown keys)
 *   nodes.c    the nodes list: per-node keys, duplicate ids/names/addresses, sorting
 *   validate.c rules that involve several keys
 *   keyfile.c  reading, checking and hashing the cluster key
 *   intscan.c  finding integer literals that libconfig silently truncated to 32 bits
 *   addr.c     node addresses
 *   socket.c   psid's socket path (psconf_socket_path)
 *   lookup.c   node lookups; rdpcfg.c: psconf_rdp_config(); names.c: enum names
 *   load.c     psconf_load() itself: the order of the steps above
 */
#ifndef PSCLUSTER_CONF_INTERNAL_H
#define PSCLUSTER_CONF_INTERNAL_H

#include "psconf.h"

#include <libconfig.h>
#include <stdarg.h>

/* Where a key was found; file NULL and line 0 when it was not given. */
struct conf_where {
    const char *file;
    unsigned line;
};

/* An integer literal without L suffix that does not fit in an int. */
struct conf_bigint {
    const char *file; /* libconfig's name for the file (compared by string) */
    unsigned line;
    int truncated; /* the value libconfig made of it */
    int used;      /* matched to a setting already */
    char text[32]; /* the literal as written (cut if longer) */
};

struct conf_intscan {
    char **files; /* names already scanned */
    size_t nfiles;
    struct conf_bigint *big;
    size_t nbig;
};

/* Keys whose location matters after the walk (cross-field rules, required keys). */
enum conf_key_id {
    CK_NONE,
    CK_CLUSTER,
    CK_KEY_FILE,
    CK_LOG_LEVEL,
    CK_RDP,
    CK_RDP_PORT,
    CK_MTU,
    CK_RTO_MIN,
    CK_RTO_MAX,
    CK_RTO_INIT,
    CK_MAX_RETRANS,
    CK_ACK_DELAY,
    CK_SNDBUF,
    CK_RCVBUF,
    CK_SOCK_BUF,
    CK_MAC,
    CK_MAC_IMPL,
    CK_OFFLOAD,
    CK_HB,
    CK_HB_INTERVAL,
    CK_HB_DEAD_LIMIT,
    CK_HB_DOWN_GRACE,
    CK_HB_MODE,
    CK_HB_GROUP,
    CK_HB_PORT,
    CK_PSID,
    CK_SOCKET,
    CK_KILL_DELAY,
    CK_MAX_CLIENTS,
    CK_MAX_CLIENTS_UID,
    CK_CLIENT_IDLE,
    CK_MAX_TASKS_UID,
    CK_DONE_JOBS,
    CK_TREE_WIDTH,
    CK_BCAST_WIDTH,
    CK_USER,
    CK_ROOT_JOBS,
    CK_CGROUPS,
    CK_NODES,
    CK_PMI,
    CK_PMI_TREE_WIDTH,
    CK_PMI_MAX_BYTES,
    CK_PMI_MAX_KEYS,
    CK_GANG,
    CK_GANG_QUANTUM,
    CK_GANG_MPL,
    CK__COUNT
};

struct conf_ctx {
    const char *path;   /* the configuration file */
    char dir[PATH_MAX]; /* its directory ("." if path has no slash) */
    char *err;          /* message buffer, may be NULL */
    size_t errlen;
    int failed; /* a message was written */
    struct conf_where where[CK__COUNT];
    struct conf_where *node_where; /* nodes.c: per node, where each of its keys is */
    struct conf_intscan ints;
};

/* error.c: format "FILE:LINE: KEY: message" (FILE defaults to the configuration file, no
 * ":LINE" if line is 0, no "KEY: " if key is NULL) into the context's buffer. Returns -1. */
int conf_error(struct conf_ctx *x, const char *file, unsigned line, const char *key,
               const char *fmt, ...) __attribute__((format(printf, 5, 6)));
int conf_error_at(struct conf_ctx *x, struct conf_where w, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* The location of a libconfig setting. */
struct conf_where conf_where_of(const config_setting_t *s);

/* schema.c: a table of keys per group; the walk checks names, types and ranges and stores
 * each value at its offset in base (a struct psconf, or a struct psconf_node for nodes). */
enum conf_type { CT_INT, CT_BOOL, CT_STRING, CT_GROUP, CT_NODES };
enum conf_store { CS_NONE, CS_UNSIGNED, CS_U32, CS_SIZE };
struct conf_key {
    const char *name;
    enum conf_type type;
    int id; /* index into the where array given to the walk */
    long long min, max;
    enum conf_store store; /* integers: the field's type at offset off */
    size_t off;
    /* strings: check and store the value */
    int (*set)(struct conf_ctx *x, void *base, const char *key, const char *val,
               struct conf_where w);
    const struct conf_key *sub; /* groups */
};
int conf_walk_group(struct conf_ctx *x, void *base, const config_setting_t *g, const char *prefix,
                    const struct conf_key *keys, struct conf_where *where);
int conf_walk_root(struct conf_ctx *x, struct psconf *c, const config_setting_t *root);
/* Read an integer setting, checking type and range [min, max]. */
int conf_read_int(struct conf_ctx *x, const config_setting_t *s, const char *key, long long min,
                  long long max, long long *out);
/* Read a string setting. */
int conf_read_string(struct conf_ctx *x, const config_setting_t *s, const char *key,
                     const char **out);
/* Check a cluster or node name: 1..63 characters of [A-Za-z0-9._-]. NULL if fine, or why not. */
const char *conf_name_problem(const char *s);
const char *conf_type_name(int libconfig_type);

/* nodes.c */
int conf_nodes_parse(struct conf_ctx *x, struct psconf *c, const config_setting_t *list);
int conf_nodes_check(struct conf_ctx *x, struct psconf *c);

/* validate.c: rules across keys; also sets the ports of the node and group addresses. */
int conf_validate(struct conf_ctx *x, struct psconf *c);

/* keyfile.c: resolve c->key_file against the configuration's directory, read and check the
 * file, hash it into c->key. */
int conf_key_load(struct conf_ctx *x, struct psconf *c);

/* intscan.c */
/* If the integer setting s was written as a literal that libconfig truncated, return it. */
struct conf_bigint *conf_intscan_match(struct conf_ctx *x, const config_setting_t *s);
/* Report a truncated literal that no setting claimed (-1), or 0. */
int conf_intscan_leftover(struct conf_ctx *x);
void conf_intscan_free(struct conf_intscan *s);

/* socket.c: expand fmt for node into buf like snprintf (the full length is returned even
 * if it does not fit); -1 and EINVAL on a % other than %n and %%. */
long conf_socket_expand(const char *fmt, uint32_t node, char *buf, size_t len);

/* addr.c */
/* Parse a node's IPv4 literal into ss (port 0) and its canonical text into str (at least
 * INET6_ADDRSTRLEN bytes). 0, or -1 with *why set. */
int conf_addr_parse(const char *s, struct sockaddr_storage *ss, socklen_t *len, char *str,
                    const char **why);
void conf_addr_set_port(struct sockaddr_storage *ss, unsigned port);
/* Order by family, then address bytes; ports are ignored. */
int conf_addr_cmp(const struct sockaddr *a, const struct sockaddr *b);

#endif
