#!/bin/bash
# preload_errors.sh - the kernel's connect and bind errors are the program's, with
# libpspreload or without (the real connect always happens): test/shell/lib/sockerrs.py
# (python3, a dynamically linked program) on node 0 of a 2-node loopback cluster gets
# ECONNREFUSED from a closed port of node 1, EADDRINUSE binding a listener's address,
# EADDRNOTAVAIL connecting a second socket from the same local port to the same peer, and
# ETIMEDOUT from a listener whose accept queue is full (one SYN retry). Its transcript on
# kernel TCP, and under the library (PSP_SYNC=1) with a peer without the library and with
# one under it, must be the same. ENETUNREACH needs a node without a default route:
# test/netns/preload.sh has it.
# shellcheck source-path=SCRIPTDIR source=lib/cluster.sh
source "$(dirname "$0")/lib/cluster.sh"
LIB=$TOP/build/lib/libpspreload.so
ERRS=$TOP/test/shell/lib/sockerrs.py
cluster_up 2
all_up 5000 || {
    fail "preload errors: cluster up" "not all up"
    exit 1
}
[ -f "$LIB" ] || {
    fail "preload errors: library" "not built ($LIB)"
    exit 1
}
P=$(free_port 6)
listening() { ss -Hltn "sport = :$1" | grep -q .; }

# run TAG PEER_LIB CLIENT_LIB: the peer (nc -lk on node 1) and the client's transcript
run() {
    local env=() penv=()
    [ "$2" = yes ] && penv=(LD_PRELOAD="$LIB")
    [ "$3" = yes ] && env=(LD_PRELOAD="$LIB" PSP_SYNC=1 PSP_STATS="$CDIR/$1.stats")
    env PSID_SOCKET="$CDIR/psid-1.sock" "${penv[@]}" nc -lk 127.0.0.2 "$P" >/dev/null 2>&1 &
    local s=$!
    PIDS+=("$s")
    wait_until 3000 listening "$P"
    env PSID_SOCKET="$CDIR/psid-0.sock" "${env[@]}" timeout 30 python3 "$ERRS" 127.0.0.2 "$P" \
        $((P + 1)) >"$CDIR/$1.out" 2>&1
    echo "exit $?" >>"$CDIR/$1.out"
    kill "$s" 2>/dev/null
    wait "$s" 2>/dev/null
    P=$((P + 2))
}
run kernel no no
grep -q "full accept queue: ETIMEDOUT" "$CDIR/kernel.out"
check "preload errors: the kernel's own transcript has every error" $? "$(cat "$CDIR/kernel.out")"
run plain no yes
d=$(diff "$CDIR/kernel.out" "$CDIR/plain.out")
check "preload errors: under the library, peer without it: the kernel's errors" $? "$d"
run both yes yes
d=$(diff "$CDIR/kernel.out" "$CDIR/both.out")
[ -z "$d" ] && grep -q "accelerated=1" "$CDIR/both.stats"
check "preload errors: under the library, peer under it: the kernel's errors" $? \
    "$d $(cat "$CDIR/both.stats" 2>/dev/null)"
exit $((FAILS > 0))
