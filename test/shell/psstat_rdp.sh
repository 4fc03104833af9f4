#!/bin/bash
# psstat_rdp.sh - `psstat rdp` on a 3-node loopback cluster (no root needed):
#  - after a job ran across the nodes, node 0 shows its RDP connections to nodes 1 and 2
#    established, with packets and messages both ways and a measured RTT, as JSON and as a
#    table (one row per peer, names from the node table);
#  - junk datagrams on node 0's RDP port are counted as dropped, by reason ("short");
#  - a node that is killed and declared dead is no longer shown established;
#  - bad input: an extra argument prints usage and exits 2.
# shellcheck source-path=SCRIPTDIR source=lib/cluster.sh
source "$(dirname "$0")/lib/cluster.sh"

rdp0() { PSID_SOCKET=$CDIR/psid-0.sock "$BIN/psstat" "$@" rdp 2>&1; }

cluster_up 3
if ! all_up 5000; then
    fail "psstat rdp: cluster up" "not all up after 5 s"
    exit 1
fi
port=$(sed -n 's/.*rdp = { port = \([0-9]*\);.*/\1/p' "$CDIR/psid.conf")

# a job on every node: spawn requests, output and exits travel over RDP
out=$(PSID_SOCKET=$CDIR/psid-0.sock timeout 20 "$BIN/psrun" -n 3 --ppn 1 /bin/echo hi 2>&1)
check "psstat rdp: a job ran on 3 nodes" $? "$out"

established() {
    json_true "$(rdp0 --json)" '.self == 0 and (.peers | length) == 2 and
        all(.peers[]; .state == "established" and .packets_sent > 0 and
            .packets_received > 0 and .messages_sent > 0 and .messages_received > 0 and
            .srtt_us > 0 and .cwnd > 0 and .mac != null)'
}
if wait_until 5000 established; then
    pass "psstat rdp: connections to nodes 1 and 2 established, with traffic (JSON)"
else
    fail "psstat rdp: connections established" "$(rdp0 --json)"
fi
out=$(rdp0)
if grep -q "NODE .*SRTT_US" <<<"$out" && grep -Eq "^1 +n1 +established" <<<"$out" &&
    grep -Eq "^2 +n2 +established" <<<"$out" && [ "$(grep -c established <<<"$out")" -eq 2 ]; then
    pass "psstat rdp: table, one row per peer"
else
    fail "psstat rdp: table" "$out"
fi

# junk on node 0's RDP port: too short to be a packet
for _ in 1 2 3; do printf 'x' >/dev/udp/127.0.0.1/"$port"; done
short() { json_true "$(rdp0 --json)" '.drops.short >= 3'; }
if wait_until 3000 short; then
    pass "psstat rdp: junk counted as dropped, by reason"
else
    fail "psstat rdp: junk counted" "$(rdp0 --json)"
fi

# node 2 dies: once membership declares it dead, node 0 drops the connection
kill_node 2 KILL
wait_state 0 2 down 3000 >/dev/null
gone() { json_true "$(rdp0 --json)" '.peers[] | select(.node == 2) | .state != "established"'; }
if wait_until 5000 gone; then
    pass "psstat rdp: the connection to a dead node is not shown established"
else
    fail "psstat rdp: dead node" "$(rdp0 --json)"
fi

check_usage "bad input: psstat rdp extra -> usage, exit 2" "$BIN/psstat" rdp extra

[ "$FAILS" -eq 0 ]
