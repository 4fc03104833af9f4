/*
 * validate.c - rules that involve more than one key.
 *
 * The schema walk checks each value on its own; what is left are relations: the RTO bounds
 * must be ordered, the heartbeat group must be a multicast address when heartbeats are
 * multicast, heartbeats and RDP need distinct ports, and psid's socket template must expand
 * to a valid absolute UNIX socket path for every configured node. An error is reported at
 * the key the user wrote (if only one of the keys involved was written, at that one).
 * Last, the cluster-wide ports are filled into the node and group addresses.
 */
#include "internal.h"

#include <arpa/inet.h>
#include <sys/un.h>

/* The first of the given keys that appears in the file (or the file itself). */
static struct conf_where pick(const struct conf_ctx *x, int a, int b, const char **key,
                              const char *ka, const char *kb)
{
    if (x->where[a].line || !x->where[b].line) {
        *key = ka;
        return x->where[a];
    }
    *key = kb;
    return x->where[b];
}

static int check_rto(struct conf_ctx *x, const struct psconf *c)
{
    const char *key;
    struct conf_where w;
    if (c->rto_min_us > c->rto_max_us) {
        w = pick(x, CK_RTO_MIN, CK_RTO_MAX, &key, "rdp.rto_min_us", "rdp.rto_max_us");
        return conf_error_at(x, w, key, "rto_min_us (%u) is larger than rto_max_us (%u)",
                             c->rto_min_us, c->rto_max_us);
    }
    if (c->rto_init_us < c->rto_min_us || c->rto_init_us > c->rto_max_us) {
        int other = c->rto_init_us < c->rto_min_us ? CK_RTO_MIN : CK_RTO_MAX;
        w = pick(x, CK_RTO_INIT, other, &key, "rdp.rto_init_us",
                 other == CK_RTO_MIN ? "rdp.rto_min_us" : "rdp.rto_max_us");
        return conf_error_at(x, w, key,
                             "rto_init_us (%u) must lie between rto_min_us (%u) and "
                             "rto_max_us (%u)",
                             c->rto_init_us, c->rto_min_us, c->rto_max_us);
    }
    return 0;
}

static int check_heartbeat(struct conf_ctx *x, const struct psconf *c)
{
    const char *key;
    struct conf_where w;
    if (c->hb_mode == PSCONF_HB_MULTICAST && !IN_MULTICAST(ntohl(c->hb_group.sin_addr.s_addr))) {
        char a[INET_ADDRSTRLEN];
        inet_ntop(AF_INET, &c->hb_group.sin_addr, a, sizeof a);
        w = pick(x, CK_HB_GROUP, CK_HB_MODE, &key, "heartbeat.group", "heartbeat.mode");
        return conf_error_at(x, w, key,
                             "%s is not a multicast address (224.0.0.0/4); give one, or set "
                             "heartbeat.mode = \"unicast\"",
                             a);
    }
    if (c->hb_port == c->rdp_port) {
        w = pick(x, CK_HB_PORT, CK_RDP_PORT, &key, "heartbeat.port", "rdp.port");
        return conf_error_at(x, w, key,
                             "heartbeat.port and rdp.port are both %u; they need different ports",
                             c->hb_port);
    }
    return 0;
}

static int check_socket(struct conf_ctx *x, const struct psconf *c)
{
    struct conf_where w = x->where[CK_SOCKET];
    const char *key = "psid.socket";
    if (c->socket_fmt[0] != '/')
        return conf_error_at(x, w, key, "\"%s\": must be an absolute path", c->socket_fmt);
    uint32_t max = 0;
    for (size_t i = 0; i < c->nnodes; i++)
        if (c->nodes[i].id > max) max = c->nodes[i].id;
    char buf[2];
    long n = conf_socket_expand(c->socket_fmt, max, buf, sizeof buf);
    if (n < 0)
        return conf_error_at(x, w, key,
                             "\"%s\": bad %% sequence (%%n is the node id, %%%% a percent sign)",
                             c->socket_fmt);
    size_t lim = sizeof(((struct sockaddr_un *)0)->sun_path) - 1;
    if ((size_t)n > lim)
        return conf_error_at(x, w, key,
                             "\"%s\" expands to %ld characters for node %u; a UNIX socket path "
                             "holds at most %zu",
                             c->socket_fmt, n, (unsigned)max, lim);
    return 0;
}

int conf_validate(struct conf_ctx *x, struct psconf *c)
{
    if (check_rto(x, c) < 0 || check_heartbeat(x, c) < 0 || check_socket(x, c) < 0) return -1;
    c->hb_group.sin_family = AF_INET;
    c->hb_group.sin_port = htons((uint16_t)c->hb_port);
    for (size_t i = 0; i < c->nnodes; i++) conf_addr_set_port(&c->nodes[i].addr, c->rdp_port);
    return 0;
}
