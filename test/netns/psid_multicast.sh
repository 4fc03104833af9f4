#!/bin/bash
# psid_multicast.sh - membership across network namespaces with real multicast heartbeats
# (root only): three nodes on an isolated bridge in 198.18.0.0/24;
#  - every node sees every node up, over multicast;
#  - SIGKILL to one psid: the others declare it down within the bound (< 1300 ms);
#  - a restarted psid rejoins (< 500 ms);
#  - cutting a node's link: both sides declare each other down (< 1300 ms), and the node
#    rejoins when the link returns.
set -u
here=$(dirname "$0")
source "$here/lib/netns.sh"
ns_require_root
TOP=$(cd "$here/../.." && pwd)
BIN=$TOP/build/bin
FAILS=0
pass() { echo "PASS: $1"; }
fail() {
    echo "FAIL: $1: $2"
    FAILS=$((FAILS + 1))
}
now_ms() { echo $(($(date +%s%N) / 1000000)); }

D=$(mktemp -d /tmp/psmc.XXXXXX)
PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do [ -n "$p" ] && kill -KILL "$p" 2>/dev/null; done
    wait 2>/dev/null
    rm -rf "$D"
}
trap cleanup EXIT
ns_up 3 || {
    fail "multicast: namespaces" "ns_up failed"
    exit 1
}
head -c 32 /dev/urandom >"$D/key"
chmod 600 "$D/key"
cat >"$D/psid.conf" <<CONF
cluster = "mc";
key_file = "$D/key";
log_level = "info";
heartbeat = { mode = "multicast"; down_grace_ms = 0; }; # down when unreachable: the bound tested
psid = { socket = "$D/psid-%n.sock"; };
nodes = (
  { id = 0; name = "n0"; address = "$(ns_addr 0)"; cpus = 2; },
  { id = 1; name = "n1"; address = "$(ns_addr 1)"; cpus = 2; },
  { id = 2; name = "n2"; address = "$(ns_addr 2)"; cpus = 2; }
);
CONF
start() { # no --node: each daemon finds itself from its namespace's addresses
    # ip netns exec execs psid, so $! is the daemon itself (a function in the background
    # would be a subshell)
    ip netns exec "$(ns_name "$1")" "$BIN/psid" -f "$D/psid.conf" --foreground \
        >>"$D/psid-$1.log" 2>&1 &
    PIDS[$1]=$!
}
state_of() {
    PSID_SOCKET=$D/psid-$1.sock "$BIN/psstat" --json nodes 2>/dev/null |
        grep -o "\"id\":$2,[^}]*\"state\":\"[a-z]*\"" | sed 's/.*"state":"\([a-z]*\)"/\1/'
}
wait_state() { # OBSERVER NODE STATE TIMEOUT_MS -> elapsed ms
    local t0
    t0=$(now_ms)
    while [ "$(state_of "$1" "$2")" != "$3" ]; do
        [ $(($(now_ms) - t0)) -gt "$4" ] && {
            echo $(($(now_ms) - t0))
            return 1
        }
        sleep 0.01
    done
    echo $(($(now_ms) - t0))
}
worst_of() { # STATE NODE TIMEOUT OBSERVERS...
    local st=$1 n=$2 to=$3 w=0 ms o
    shift 3
    for o in "$@"; do
        ms=$(wait_state "$o" "$n" "$st" "$to") || ms=99999
        [ "$ms" -gt "$w" ] && w=$ms
    done
    echo "$w"
}

for i in 0 1 2; do start $i; done
ok=1
for o in 0 1 2; do for n in 0 1 2; do wait_state $o $n up 5000 >/dev/null || ok=0; done; done
if [ $ok = 1 ] && grep -q "(multicast)" "$D/psid-0.log"; then
    pass "multicast: 3 nodes up everywhere over multicast heartbeats"
else
    fail "multicast: 3 nodes up" "not all up after 5 s, or not multicast"
    tail -n 5 "$D"/psid-*.log
    exit 1
fi

kill -KILL "${PIDS[2]}"
wait "${PIDS[2]}" 2>/dev/null
w=$(worst_of down 2 3000 0 1)
[ "$w" -lt 1300 ] && pass "multicast: SIGKILLed node down ($w ms)" ||
    fail "multicast: SIGKILLed node down" "$w ms"
start 2
w=$(worst_of up 2 3000 0 1)
[ "$w" -lt 500 ] && pass "multicast: restarted node rejoins ($w ms)" ||
    fail "multicast: restarted node rejoins" "$w ms"

# cut node 1's link on the bridge side
link=psv$$-1
ip link set "$link" down
w=$(worst_of down 1 3000 0 2)
w1=$(worst_of down 0 3000 1)
[ "$w" -lt 1300 ] && [ "$w1" -lt 1300 ] &&
    pass "multicast: link cut detected on both sides ($w ms, $w1 ms)" ||
    fail "multicast: link cut detected" "$w ms / $w1 ms"
ip link set "$link" up
w=$(worst_of up 1 5000 0 2)
[ "$w" -lt 5000 ] && pass "multicast: node rejoins when its link returns ($w ms)" ||
    fail "multicast: node rejoins when its link returns" "$w ms"

for i in 0 1 2; do kill -TERM "${PIDS[$i]}" 2>/dev/null; done
for i in 0 1 2; do wait "${PIDS[$i]}" 2>/dev/null; done
PIDS=()
exit $((FAILS > 0))
