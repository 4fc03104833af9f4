/*
 * rdpcfg.c - from the cluster configuration to one node's RDP endpoint configuration.
 *
 * The only place that knows both struct psconf and struct rdp_config: the endpoint binds
 * the node's configured address on rdp.port and uses the cluster key and every tunable.
 */
#include "internal.h"
#include "rdp.h"

#include <errno.h>
#include <string.h>

int psconf_rdp_config(const struct psconf *c, uint32_t node, struct rdp_config *out)
{
    const struct psconf_node *n = psconf_node_by_id(c, node);
    if (!n) {
        errno = ENOENT;
        return -1;
    }
    memset(out, 0, sizeof *out);
    out->node_id = node;
    memcpy(&out->bind, &n->addr, sizeof out->bind);
    conf_addr_set_port(&out->bind, c->rdp_port);
    out->bind_len = n->addrlen;
    memcpy(out->key, c->key, sizeof out->key);
    out->mtu = c->mtu;
    out->rto_min_us = c->rto_min_us;
    out->rto_max_us = c->rto_max_us;
    out->rto_init_us = c->rto_init_us;
    out->max_retrans = c->max_retrans;
    out->ack_delay_us = c->ack_delay_us;
    out->sndbuf = c->sndbuf;
    out->rcvbuf = c->rcvbuf;
    out->sock_buf = c->sock_buf;
    out->mac = (enum rdp_mac_alg)c->mac;
    out->mac_impl = (enum rdp_mac_impl)c->mac_impl;
    out->offload = c->offload ? 1 : 0;
    return 0;
}
