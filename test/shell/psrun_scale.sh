#!/bin/bash
# psrun_scale.sh - the issue's volume and placement cases on a 4-node loopback cluster:
#  - 100 MB of output from each of 4 ranks arrives complete and in order per rank
#    (every rank prints the same numbered lines; with --label each rank's stream is cut
#    out and checksummed against the expected one);
#  - 50 MB of stdin reaches rank 0, and every rank with --input all;
#  - with one node busy (its CPUs taken by another job), a 2-task job avoids it;
#  - SIGKILL to a psid, then a restart: the node rejoins and takes work again.
# shellcheck source-path=SCRIPTDIR source=lib/cluster.sh
source "$(dirname "$0")/lib/cluster.sh"
PSRUN=$BIN/psrun
cluster_up 4
all_up 5000 || {
    fail "psrun scale: cluster up" "not all up"
    exit 1
}
export PSID_SOCKET=$CDIR/psid-0.sock

# 100 MB per rank: seq 1 12500000 prints 100,888,897 bytes
want=$(seq 1 12500000 | md5sum | cut -d' ' -f1)
t0=$(now_ms)
timeout 120 "$PSRUN" -n 4 -l seq 1 12500000 </dev/null >"$CDIR/out" 2>"$CDIR/err"
rc=$?
ms=$(($(now_ms) - t0))
ok=1
for r in 0 1 2 3; do
    got=$(grep "^$r: " "$CDIR/out" | cut -c4- | md5sum | cut -d' ' -f1)
    [ "$got" = "$want" ] || ok=0
done
size=$(stat -c %s "$CDIR/out")
rm -f "$CDIR/out"
[ $rc = 0 ] && [ $ok = 1 ] && pass "output: 4 ranks x 100 MB complete and in order per rank ($size bytes labelled, $ms ms)" ||
    fail "output: 4 x 100 MB" "rc=$rc ok=$ok size=$size $(head -c 300 "$CDIR/err")"

head -c 50000000 /dev/urandom >"$CDIR/in"
want=$(md5sum <"$CDIR/in" | cut -d' ' -f1)
got=$(timeout 60 "$PSRUN" -n 2 -w 2,3 md5sum <"$CDIR/in" 2>&1 | sort -u)
got0=$(timeout 60 "$PSRUN" -n 2 -w 2,3 -l md5sum <"$CDIR/in" 2>&1)
echo "$got0" | grep -q "^0: $want " && ! echo "$got0" | grep -q "^1: $want " &&
    pass "stdin: 50 MB reach rank 0 (on another node), complete" || fail "stdin: 50 MB to rank 0" "$got0"
got=$(timeout 60 "$PSRUN" -n 4 -i all md5sum <"$CDIR/in" 2>&1 | sort | uniq -c)
[ "$(echo "$got" | awk '{print $1, $2}')" = "4 $want" ] &&
    pass "stdin: 50 MB reach every one of 4 ranks with --input all" ||
    fail "stdin: 50 MB to all" "$got"
rm -f "$CDIR/in"

# node 1 busy: a job holds both its CPUs; a 2-task job must go elsewhere
idle 3000 || fail "placement: idle before" "tasks still counted"
"$PSRUN" -n 2 -w 1 sleep 30 </dev/null >/dev/null 2>&1 &
BUSY=$!
PIDS+=("$BUSY")
until PSID_SOCKET=$CDIR/psid-0.sock "$BIN/psstat" --json nodes | grep -q '"id":1,[^}]*"cpus_used":2'; do
    kill -0 $BUSY 2>/dev/null || break
    sleep 0.02
done
got=$(timeout 20 "$PSRUN" -n 2 sh -c 'echo $PSI_NODE' </dev/null 2>&1)
rc=$?
nodes=$(sort <<<"$got" | tr '\n' ' ')
# two ranks, each on a node other than the busy node 1
[ $rc -eq 0 ] && [[ $nodes =~ ^[023]\ [023]\ $ ]]
check "placement: a 2-task job avoids the busy node (went to nodes: $nodes)" $? "rc=$rc: $got"
kill -TERM $BUSY
wait $BUSY 2>/dev/null

# restart: the node comes back and takes work
kill_node 2 KILL
wait_state 0 2 down 3000 >/dev/null || fail "restart: node 2 down" "not declared down"
start_node 2
ms=$(wait_state 0 2 up 3000) || ms=99999
got=$(timeout 20 "$PSRUN" -n 2 -w 2 sh -c 'echo $PSI_NODE' </dev/null 2>&1 | tr '\n' ' ')
[ "$ms" -lt 3000 ] && [ "$got" = "2 2 " ] &&
    pass "restart: a restarted psid rejoins ($ms ms) and takes work again" ||
    fail "restart: rejoin and take work" "after $ms ms: $got"
exit $((FAILS > 0))
