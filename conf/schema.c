/*
 * schema.c - the configuration schema and the walk over libconfig's tree.
 *
 * Each group of the file (top level, rdp, heartbeat, psid) has a table of the keys it may
 * hold: name, type, range, and where the value goes in struct psconf. The walk visits the
 * settings in file order, so the first error reported is the first one in the file: an
 * unknown key (usually a typo), a value of the wrong type, a number out of range, a string
 * that does not parse. Rules that involve several keys wait for validate.c; the node list is
 * handed to nodes.c, which uses the same walk for each node's group.
 */
#include "internal.h"
#include "rdp.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

const char *conf_type_name(int t)
{
    switch (t) {
    case CONFIG_TYPE_INT:
    case CONFIG_TYPE_INT64:
        return "integer";
    case CONFIG_TYPE_FLOAT:
        return "float";
    case CONFIG_TYPE_STRING:
        return "string";
    case CONFIG_TYPE_BOOL:
        return "boolean";
    case CONFIG_TYPE_ARRAY:
        return "array [...]";
    case CONFIG_TYPE_LIST:
        return "list (...)";
    case CONFIG_TYPE_GROUP:
        return "group {...}";
    default:
        return "nothing";
    }
}

const char *conf_name_problem(const char *s)
{
    size_t n = strlen(s);
    if (n == 0) return "empty name";
    if (n >= PSCONF_NAME_MAX) return "name longer than 63 characters";
    for (size_t i = 0; i < n; i++) {
        char ch = s[i];
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
              ch == '.' || ch == '_' || ch == '-'))
            return "name may only hold the characters A-Z a-z 0-9 . _ -";
    }
    return NULL;
}

int conf_read_int(struct conf_ctx *x, const config_setting_t *s, const char *key, long long min,
                  long long max, long long *out)
{
    struct conf_where w = conf_where_of(s);
    int t = config_setting_type(s);
    if (t != CONFIG_TYPE_INT && t != CONFIG_TYPE_INT64)
        return conf_error_at(x, w, key, "wrong type: expected integer, got %s", conf_type_name(t));
    if (t == CONFIG_TYPE_INT) {
        struct conf_bigint *b = conf_intscan_match(x, s);
        if (b) return conf_error_at(x, w, key, "%s out of range %lld..%lld", b->text, min, max);
    }
    long long v = config_setting_get_int64(s);
    if (v < min || v > max)
        return conf_error_at(x, w, key, "%lld out of range %lld..%lld", v, min, max);
    *out = v;
    return 0;
}

static int read_bool(struct conf_ctx *x, const config_setting_t *s, const char *key, long long *out)
{
    int t = config_setting_type(s);
    if (t != CONFIG_TYPE_BOOL)
        return conf_error_at(x, conf_where_of(s), key, "wrong type: expected true or false, got %s",
                             conf_type_name(t));
    *out = config_setting_get_bool(s) != 0;
    return 0;
}

int conf_read_string(struct conf_ctx *x, const config_setting_t *s, const char *key,
                     const char **out)
{
    int t = config_setting_type(s);
    if (t != CONFIG_TYPE_STRING)
        return conf_error_at(x, conf_where_of(s), key, "wrong type: expected string, got %s",
                             conf_type_name(t));
    *out = config_setting_get_string(s);
    return 0;
}

/* Copy a path-like value, refusing empty and over-long ones. */
static int set_path(struct conf_ctx *x, char *dst, size_t len, const char *key, const char *val,
                    struct conf_where w)
{
    if (!*val) return conf_error_at(x, w, key, "empty path");
    if (strlen(val) >= len)
        return conf_error_at(x, w, key, "path longer than %zu characters", len - 1);
    strcpy(dst, val);
    return 0;
}

/* A name (cluster, user) into dst[PSCONF_NAME_MAX]: checked by conf_name_problem. */
static int set_name(struct conf_ctx *x, char *dst, const char *key, const char *val,
                    struct conf_where w)
{
    const char *why = conf_name_problem(val);
    if (why) return conf_error_at(x, w, key, "\"%s\": %s", val, why);
    strcpy(dst, val);
    return 0;
}

static int set_cluster(struct conf_ctx *x, void *base, const char *key, const char *val,
                       struct conf_where w)
{
    return set_name(x, ((struct psconf *)base)->cluster, key, val, w);
}

static int set_user(struct conf_ctx *x, void *base, const char *key, const char *val,
                    struct conf_where w)
{
    return set_name(x, ((struct psconf *)base)->user, key, val, w);
}

static int set_key_file(struct conf_ctx *x, void *base, const char *key, const char *val,
                        struct conf_where w)
{
    struct psconf *c = base;
    return set_path(x, c->key_file, sizeof c->key_file, key, val, w);
}

static int set_log_level(struct conf_ctx *x, void *base, const char *key, const char *val,
                         struct conf_where w)
{
    struct psconf *c = base;
    if (psconf_log_level_parse(val, &c->log_level) < 0)
        return conf_error_at(
            x, w, key, "\"%s\" is not a log level (error, warning, notice, info, debug)", val);
    return 0;
}

static int set_mac(struct conf_ctx *x, void *base, const char *key, const char *val,
                   struct conf_where w)
{
    struct psconf *c = base;
    enum rdp_mac_alg alg;
    if (rdp_mac_alg_parse(val, &alg) < 0)
        return conf_error_at(x, w, key,
                             "\"%s\" is not a MAC choice (auto, chacha20poly1305, aes256gcm)", val);
    if (!rdp_mac_available(alg))
        return conf_error_at(x, w, key, "\"%s\" needs AES-NI, which this CPU lacks", val);
    c->mac = alg;
    return 0;
}

static int set_mac_impl(struct conf_ctx *x, void *base, const char *key, const char *val,
                        struct conf_where w)
{
    struct psconf *c = base;
    enum rdp_mac_impl impl;
    if (rdp_mac_impl_parse(val, &impl) < 0)
        return conf_error_at(x, w, key,
                             "\"%s\" is not a MAC implementation (best, portable, ipsec-mb)", val);
    if (!rdp_mac_impl_available(impl))
        return conf_error_at(x, w, key, "\"%s\" is not built in or cannot run on this CPU", val);
    c->mac_impl = impl;
    return 0;
}

static int set_hb_mode(struct conf_ctx *x, void *base, const char *key, const char *val,
                       struct conf_where w)
{
    struct psconf *c = base;
    if (strcmp(val, "multicast") == 0)
        c->hb_mode = PSCONF_HB_MULTICAST;
    else if (strcmp(val, "unicast") == 0)
        c->hb_mode = PSCONF_HB_UNICAST;
    else if (strcmp(val, "swim") == 0)
        c->hb_mode = PSCONF_HB_SWIM;
    else
        return conf_error_at(x, w, key, "\"%s\" is not a mode (multicast, unicast, swim)", val);
    return 0;
}

static int set_hb_group(struct conf_ctx *x, void *base, const char *key, const char *val,
                        struct conf_where w)
{
    struct psconf *c = base;
    struct in_addr a;
    if (inet_pton(AF_INET, val, &a) != 1)
        return conf_error_at(x, w, key, "\"%s\" is not an IPv4 address", val);
    c->hb_group.sin_addr = a;
    return 0;
}

static int set_socket(struct conf_ctx *x, void *base, const char *key, const char *val,
                      struct conf_where w)
{
    struct psconf *c = base;
    return set_path(x, c->socket_fmt, sizeof c->socket_fmt, key, val, w);
}

#define UINT_KEY(n, id, lo, hi, field)                                                             \
    {                                                                                              \
        n, CT_INT, id, lo, hi, CS_UNSIGNED, offsetof(struct psconf, field), NULL, NULL             \
    }
#define SIZE_KEY(n, id, lo, hi, field)                                                             \
    {                                                                                              \
        n, CT_INT, id, lo, hi, CS_SIZE, offsetof(struct psconf, field), NULL, NULL                 \
    }
#define BOOL_KEY(n, id, field)                                                                     \
    {                                                                                              \
        n, CT_BOOL, id, 0, 1, CS_UNSIGNED, offsetof(struct psconf, field), NULL, NULL              \
    }
#define STR_KEY(n, id, fn)                                                                         \
    {                                                                                              \
        n, CT_STRING, id, 0, 0, CS_NONE, 0, fn, NULL                                               \
    }
#define GROUP_KEY(n, id, tab)                                                                      \
    {                                                                                              \
        n, CT_GROUP, id, 0, 0, CS_NONE, 0, NULL, tab                                               \
    }

static const struct conf_key rdp_keys[] = {
    UINT_KEY("port", CK_RDP_PORT, 1, 65535, rdp_port),
    UINT_KEY("mtu", CK_MTU, 576, 65536, mtu),
    UINT_KEY("rto_min_us", CK_RTO_MIN, 100, 10000000, rto_min_us),
    UINT_KEY("rto_max_us", CK_RTO_MAX, 100, 10000000, rto_max_us),
    UINT_KEY("rto_init_us", CK_RTO_INIT, 100, 10000000, rto_init_us),
    UINT_KEY("max_retrans", CK_MAX_RETRANS, 1, 1000, max_retrans),
    UINT_KEY("ack_delay_us", CK_ACK_DELAY, 0, 100000, ack_delay_us),
    SIZE_KEY("sndbuf", CK_SNDBUF, 65536, 1073741824, sndbuf),
    SIZE_KEY("rcvbuf", CK_RCVBUF, 65536, 1073741824, rcvbuf),
    SIZE_KEY("sock_buf", CK_SOCK_BUF, 65536, 1073741824, sock_buf),
    STR_KEY("mac", CK_MAC, set_mac),
    STR_KEY("mac_impl", CK_MAC_IMPL, set_mac_impl),
    BOOL_KEY("offload", CK_OFFLOAD, offload),
    {0},
};

static const struct conf_key hb_keys[] = {
    UINT_KEY("interval_ms", CK_HB_INTERVAL, 10, 60000, hb_interval_ms),
    UINT_KEY("dead_limit", CK_HB_DEAD_LIMIT, 2, 1000, hb_dead_limit),
    UINT_KEY("down_grace_ms", CK_HB_DOWN_GRACE, 0, 3600000, hb_down_grace_ms),
    STR_KEY("mode", CK_HB_MODE, set_hb_mode),
    STR_KEY("group", CK_HB_GROUP, set_hb_group),
    UINT_KEY("port", CK_HB_PORT, 1, 65535, hb_port),
    {0},
};

static const struct conf_key psid_keys[] = {
    STR_KEY("socket", CK_SOCKET, set_socket),
    UINT_KEY("kill_delay_ms", CK_KILL_DELAY, 0, 3600000, kill_delay_ms),
    UINT_KEY("max_clients", CK_MAX_CLIENTS, 16, 1000000, max_clients),
    UINT_KEY("max_clients_per_uid", CK_MAX_CLIENTS_UID, 1, 1000000, max_clients_uid),
    UINT_KEY("client_idle_s", CK_CLIENT_IDLE, 0, 86400, client_idle_s),
    UINT_KEY("max_tasks_per_uid", CK_MAX_TASKS_UID, 1, 1000000, max_tasks_uid),
    UINT_KEY("done_jobs", CK_DONE_JOBS, 0, 100000, done_jobs),
    UINT_KEY("tree_width", CK_TREE_WIDTH, 1, 65536, tree_width),
    UINT_KEY("bcast_width", CK_BCAST_WIDTH, 1, 65536, bcast_width),
    STR_KEY("user", CK_USER, set_user),
    BOOL_KEY("root_jobs", CK_ROOT_JOBS, root_jobs),
    BOOL_KEY("cgroups", CK_CGROUPS, cgroups),
    {0},
};

static const struct conf_key pmi_keys[] = {
    UINT_KEY("tree_width", CK_PMI_TREE_WIDTH, 1, 4096, pmi_tree_width),
    SIZE_KEY("max_kvs_bytes", CK_PMI_MAX_BYTES, 65536, 1073741824, pmi_max_kvs_bytes),
    UINT_KEY("max_kvs_keys", CK_PMI_MAX_KEYS, 16, 100000000, pmi_max_kvs_keys),
    {0},
};

static const struct conf_key gang_keys[] = {
    UINT_KEY("quantum_ms", CK_GANG_QUANTUM, 0, 3600000, gang_quantum_ms),
    UINT_KEY("mpl", CK_GANG_MPL, 1, 64, gang_mpl),
    {0},
};

static const struct conf_key root_keys[] = {
    STR_KEY("cluster", CK_CLUSTER, set_cluster),
    STR_KEY("key_file", CK_KEY_FILE, set_key_file),
    STR_KEY("log_level", CK_LOG_LEVEL, set_log_level),
    GROUP_KEY("rdp", CK_RDP, rdp_keys),
    GROUP_KEY("heartbeat", CK_HB, hb_keys),
    GROUP_KEY("psid", CK_PSID, psid_keys),
    GROUP_KEY("pmi", CK_PMI, pmi_keys),
    GROUP_KEY("gang", CK_GANG, gang_keys),
    {"nodes", CT_NODES, CK_NODES, 0, 0, CS_NONE, 0, NULL, NULL},
    {0},
};

static void store_int(void *base, const struct conf_key *k, long long v)
{
    char *p = (char *)base + k->off;
    switch (k->store) {
    case CS_UNSIGNED: {
        unsigned u = (unsigned)v;
        memcpy(p, &u, sizeof u);
        break;
    }
    case CS_U32: {
        uint32_t u = (uint32_t)v;
        memcpy(p, &u, sizeof u);
        break;
    }
    case CS_SIZE: {
        size_t z = (size_t)v;
        memcpy(p, &z, sizeof z);
        break;
    }
    case CS_NONE:
        break;
    }
}

int conf_walk_group(struct conf_ctx *x, void *base, const config_setting_t *g, const char *prefix,
                    const struct conf_key *keys, struct conf_where *where)
{
    int n = config_setting_length(g);
    for (int i = 0; i < n; i++) {
        const config_setting_t *s = config_setting_get_elem(g, (unsigned)i);
        const char *name = config_setting_name(s);
        struct conf_where w = conf_where_of(s);
        char key[256];
        if (prefix)
            snprintf(key, sizeof key, "%s.%s", prefix, name);
        else
            snprintf(key, sizeof key, "%s", name);

        const struct conf_key *k = keys;
        while (k->name && strcmp(k->name, name) != 0) k++;
        if (!k->name) return conf_error_at(x, w, key, "unknown key");
        where[k->id] = w;

        switch (k->type) {
        case CT_INT: {
            long long v;
            if (conf_read_int(x, s, key, k->min, k->max, &v) < 0) return -1;
            store_int(base, k, v);
            break;
        }
        case CT_BOOL: {
            long long v = 0;
            if (read_bool(x, s, key, &v) < 0) return -1;
            store_int(base, k, v);
            break;
        }
        case CT_STRING: {
            const char *v;
            if (conf_read_string(x, s, key, &v) < 0) return -1;
            if (k->set(x, base, key, v, w) < 0) return -1;
            break;
        }
        case CT_GROUP:
            if (!config_setting_is_group(s))
                return conf_error_at(x, w, key, "wrong type: expected group {...}, got %s",
                                     conf_type_name(config_setting_type(s)));
            if (conf_walk_group(x, base, s, key, k->sub, where) < 0) return -1;
            break;
        case CT_NODES:
            if (conf_nodes_parse(x, base, s) < 0) return -1;
            break;
        }
    }
    return 0;
}

int conf_walk_root(struct conf_ctx *x, struct psconf *c, const config_setting_t *root)
{
    if (conf_walk_group(x, c, root, NULL, root_keys, x->where) < 0) return -1;
    if (!x->where[CK_KEY_FILE].line) return conf_error(x, NULL, 0, "key_file", "missing");
    if (!x->where[CK_NODES].line) return conf_error(x, NULL, 0, "nodes", "missing");
    return 0;
}
