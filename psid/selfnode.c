/*
 * selfnode.c - which configured node is this machine: the node whose address is assigned
 * to one of this machine's (this network namespace's) interfaces, read with libnl-route.
 */
#include "daemon.h"

#include <arpa/inet.h>
#include <netlink/netlink.h>
#include <netlink/route/addr.h>
#include <stdio.h>
#include <string.h>

const struct psconf_node *selfnode_find(const struct psconf *c, char *err, size_t errlen)
{
    struct nl_sock *sk = nl_socket_alloc();
    struct nl_cache *cache = NULL;
    const struct psconf_node *found = NULL;
    int matches = 0;
    if (!sk || nl_connect(sk, NETLINK_ROUTE) < 0 || rtnl_addr_alloc_cache(sk, &cache) < 0) {
        snprintf(err, errlen, "cannot read interface addresses (netlink)");
        goto out;
    }
    for (struct nl_object *o = nl_cache_get_first(cache); o; o = nl_cache_get_next(o)) {
        struct rtnl_addr *a = (struct rtnl_addr *)o;
        struct nl_addr *local = rtnl_addr_get_local(a);
        if (!local || nl_addr_get_family(local) != AF_INET) continue;
        struct sockaddr_in sin = {.sin_family = AF_INET};
        memcpy(&sin.sin_addr, nl_addr_get_binary_addr(local), sizeof sin.sin_addr);
        const struct psconf_node *n = psconf_node_by_addr(c, (struct sockaddr *)&sin);
        if (n && n != found) {
            found = n;
            matches++;
        }
    }
    if (matches == 0)
        snprintf(err, errlen,
                 "no configured node address is assigned to this machine; "
                 "use --node");
    else if (matches > 1)
        snprintf(err, errlen,
                 "several configured node addresses are on this machine; "
                 "use --node");
out:
    if (cache) nl_cache_free(cache);
    if (sk) nl_socket_free(sk);
    return matches == 1 ? found : NULL;
}
