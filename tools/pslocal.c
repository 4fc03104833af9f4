/*
 * pslocal.c - a virtual pscluster on one machine: N psid daemons, each one a "node".
 *
 *   pslocal up [-n NODES] [--cpus K] [--netns] --dir DIR [--log-level L] [--port P]
 *              [--timeout S] [--gang MS [--mpl K]]
 *   pslocal down --dir DIR [--purge]
 *   pslocal status --dir DIR
 *   pslocal env --dir DIR
 *   pslocal exec NODE --dir DIR -- CMD [ARGS...]
 *
 * Everything a cluster needs lives in DIR: cluster.key, psid.conf and, per node I, the client
 * socket psid-I.sock, the pid file psid-I.pid and the log psid-I.log. pslocal.state records
 * the mode and what `up` made outside DIR (namespaces, veths, the bridge), so that `down`
 * removes exactly that, also after a crash. No other state exists: each command needs DIR only.
 *
 * Two modes:
 *  - loopback (default, any user): node I is 127.0.0.(I+1), heartbeats are unicast. The RDP
 *    port P and the heartbeat port P+1 must be free on every node address (probed with a UDP
 *    bind), so clusters in different DIRs can run side by side: by default the probe starts
 *    at 20000 + pid % 10000 and moves on; --port P takes exactly P and P+1.
 *  - namespaces (--netns, root only): node I runs under `ip netns exec psl<hash>-I` (hash of
 *    DIR), its veth eth0 on a bridge psb<hash> of its own: no uplink, no address on the
 *    bridge, no default route, multicast snooping off; address 198.18.0.(I+1)/24 and a route
 *    for 224.0.0.0/4 so the multicast heartbeats leave through eth0.
 *
 * Safety rules: a pid read from a pid file is signalled only while /proc/PID/cmdline is a psid
 * started with "-f DIR/psid.conf --node I". An object goes into the state file only after
 * `ip` made it, so a failed `up` never removes what it did not create (e.g. another cluster's
 * bridge). Every wait has a deadline. Processes found in the cluster's own namespaces at `down`
 * are the cluster's and are ended with them.
 *
 * The psid to run can be replaced for tests: $PSLOCAL_PSID names it (its file name must begin
 * with "psid" for the identity check); otherwise it is looked up next to this binary, then in
 * $PATH. Whether the nodes see each other up is asked of their psids through libpsi. Manual:
 * docs/man/pslocal.1.
 *
 * This file is the main only; the work is in pslocal/, a file per job (the list: the top of
 * pslocal/pslocal.h).
 */
#include "../pslocal/pslocal.h"
#include "psversion.h"

int main(int argc, char **argv)
{
    if (psc_version_asked(argc, argv, "pslocal")) return 0;
    struct pl_opts o;
    pl_opts_parse(argc, argv, &o);
    switch (o.cmd) {
    case C_UP:
        return pl_cmd_up(&o);
    case C_DOWN:
        return pl_cmd_down(&o);
    case C_STATUS:
        return pl_cmd_status(&o);
    case C_ENV:
        return pl_cmd_env(&o);
    case C_EXEC:
        return pl_cmd_exec(&o);
    }
    return 2;
}
