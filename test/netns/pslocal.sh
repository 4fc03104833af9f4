#!/bin/bash
# pslocal.sh - `pslocal up --netns` (root only): a 3-node cluster, one network namespace per
# node on a private bridge (198.18.0.0/24, no uplink, no default route):
#  - up: 3 namespaces, the bridge, 3 running psids, multicast heartbeats, every node up;
#  - exec 1 -- ip addr shows 198.18.0.2; nodes reach each other; no default route;
#  - down: no namespace, veth, bridge or psid left; a second down succeeds;
#  - after kill -9 of a daemon and a namespace already gone (a half-made or crashed cluster),
#    down still removes everything.
# Everything pslocal creates is named after the test's DIR (psl<hash>-I, psv<hash>-I,
# psb<hash>); the EXIT trap runs `pslocal down` and then removes whatever the state file
# still names. Prints PASS:/FAIL:/SKIP: lines; exits 1 if anything failed.
set -u

# shellcheck disable=SC1091 # the helpers beside this script
. "$(dirname "$0")/lib/netns.sh"
ns_require_root

name=pslocal
# shellcheck source-path=SCRIPTDIR source=../shell/lib/pslocal.sh
. "$(dirname "$0")/../shell/lib/pslocal.sh"

TMP=$(mktemp -d /tmp/pslocal-netns.XXXXXX)
D=$TMP/cluster

# Names from the state file (what down must remove), kept for the checks after down.
NSS=() LINKS=()
read_state() {
    NSS=() LINKS=()
    local k v
    while read -r k v _; do
        case $k in
        netns) NSS+=("$v") ;;
        veth | bridge) LINKS+=("$v") ;;
        esac
    done <"$D/pslocal.state"
}

cleanup() {
    trap '' INT TERM
    # belt and braces: whatever the last state file named
    pslocal_teardown "$PSLOCAL" "$D" "${NSS[@]/#/netns:}" "${LINKS[@]/#/link:}"
    rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

ns_left() { # how many of NSS still exist
    local ns n=0
    for ns in "${NSS[@]}"; do [[ -e /run/netns/$ns ]] && n=$((n + 1)); done
    echo $n
}
links_left() {
    local l n=0
    for l in "${LINKS[@]}"; do ip link show "$l" >/dev/null 2>&1 && n=$((n + 1)); done
    echo $n
}
nothing_left() { [[ $(ns_left) == 0 && $(links_left) == 0 ]] && wait_no_psids "$D"; }

# up_seen I -> how many nodes node I sees up
up_seen() {
    timeout 10 "$PSLOCAL" exec "$1" --dir "$D" -- "$BIN/psstat" nodes --json 2>/dev/null |
        grep -o '"state":"up"' | grep -c . || true
}

# ---- up
out=$(pl up -n 3 --netns --dir "$D" 2>&1)
rc=$?
[[ -f $D/pslocal.state ]] && read_state
if [[ $rc == 0 ]]; then pass "up -n 3 --netns"; else
    fail "up -n 3 --netns" "exit $rc"
    echo "$out"
    exit 1
fi
check "3 namespaces recorded and present" \
    bash -c "[[ ${#NSS[@]} == 3 && $(ns_left) == 3 ]]"
check "the bridge and 3 veths exist" bash -c "[[ ${#LINKS[@]} == 4 && $(links_left) == 4 ]]"
check "3 psids run" test "$(count_psids "$D")" = 3
ok=1
for i in 0 1 2; do
    pid=$(cat "$D/psid-$i.pid")
    [[ $(ip netns identify "$pid" 2>/dev/null) == "${NSS[$i]}" ]] || ok=0
done
check "each psid runs in its node's namespace" test $ok = 1
check "multicast heartbeats configured" grep -q 'mode = "multicast"' "$D/psid.conf"
check "... and used (3 daemon logs, none fell back to unicast)" \
    bash -c "[ \$(find '$D' -maxdepth 1 -name 'psid-*.log' -size +0 | wc -l) = 3 ] &&
             ! grep -qi 'falling back to unicast' '$D'/psid-*.log"
out=$(pl status --dir "$D")
check "status: 3 nodes running at 198.18.0.1-3" \
    test "$(grep -cE '^[0-2] n[0-2] 198\.18\.0\.[1-3] [0-9]+ running$' <<<"$out")" = 3

# ---- exec
out=$(pl exec 1 --dir "$D" -- ip addr)
check "exec 1 -- ip addr shows 198.18.0.2" grep -q 'inet 198\.18\.0\.2/24' <<<"$out"
# ... in a network namespace of its own, not the host's
host_ns=$(readlink /proc/self/ns/net)
node_ns=$(pl exec 1 --dir "$D" -- readlink /proc/self/ns/net)
check "... in a network namespace other than the host's ($node_ns, host $host_ns)" \
    bash -c "[[ '$node_ns' == net:* && '$node_ns' != '$host_ns' ]]"
check "exec n0 -- ping 198.18.0.3" pl exec n0 --dir "$D" -- ping -c1 -W2 -q 198.18.0.3 >/dev/null
routes=$(pl exec 2 --dir "$D" -- ip route show)
rc=$?
check "no default route in a node's namespace (only the bridge's subnet)" \
    bash -c "[[ $rc == 0 ]] && grep -q '^198\.18\.0\.0/24 ' <<<'$routes' && ! grep -q '^default' <<<'$routes'"
pl exec 2 --dir "$D" -- sh -c 'exit 5'
check "exec exits with the command's status" test $? = 5
if [[ -x $BIN/psstat ]]; then
    ok=1
    for i in 0 1 2; do [[ $(up_seen $i) == 3 ]] || ok=0; done
    check "every node sees 3 nodes up (multicast on the bridge)" test $ok = 1
fi

# ---- down
pl down --dir "$D" >/dev/null
check "down" test $? = 0
check "... no namespace, veth, bridge or psid left" nothing_left
check "... state, pid files and sockets removed" \
    test -z "$(find "$D" -maxdepth 1 \( -name '*.pid' -o -name '*.sock' -o -name pslocal.state \))"
pl down --dir "$D" >/dev/null
check "a second down succeeds" test $? = 0

# ---- a crashed cluster: a daemon killed, a namespace gone, a process left in another
out=$(pl up -n 3 --netns --dir "$D" 2>&1)
rc=$?
[[ -f $D/pslocal.state ]] && read_state
check "up again in the same DIR" test $rc = 0
if [[ $rc == 0 ]]; then
    kill -KILL "$(cat "$D/psid-1.pid")"
    ip netns pids "${NSS[2]}" | xargs -r kill -KILL # psid 2 dies with its namespace
    ip netns del "${NSS[2]}"
    ip netns exec "${NSS[0]}" sleep 60 &
    straggler=$!
    # wait until it is inside the namespace, or down would not have to end it
    inside=1
    for _ in $(seq 100); do
        ip netns pids "${NSS[0]}" | grep -qx "$straggler" && inside=0 && break
        sleep 0.05
    done
    check "a process is left in a namespace" test $inside = 0
    out=$(pl down --dir "$D" 2>&1)
    rc=$?
    [[ $rc == 0 ]] || echo "$out"
    check "down after kill -9 and a namespace already gone" test $rc = 0
    check "... nothing left" nothing_left
    check "... the process left in a namespace is ended" \
        bash -c "! kill -0 $straggler 2>/dev/null || [[ \$(ps -o stat= -p $straggler) == Z* ]]"
    wait "$straggler" 2>/dev/null
fi

((FAILS == 0))
