#!/bin/bash
# psid_tree.sh - the launch tree (psid/spawntree.c) on an 8-node loopback cluster with
# psid.tree_width 2: node 0 (the home) has children 1 and 2, those 3..6, and 3 has 7.
#  - a job on all 8 nodes starts and ends: every rank's output and exit status arrive;
#  - the home sent its spawn to at most k other nodes (its 2 children; its own ranks' spawn
#    and answers go to itself, no network: counted apart) and received at most k start
#    answers from them (its log's per-job message count);
#  - ends come up the tree: a job whose ranks all exit 0 (each with 100 kB of output) gives
#    the home at most k messages of ends, and every byte of output arrives before its
#    rank's end; an end that ends the job (status 1) goes up at once;
#  - a job of 2 ranks per node over the tree: statuses per rank;
#  - an MPI job (PMI plan through the tree; fence and Allreduce);
#  - a rank that cannot start below the tree: psrun fails, naming it, the others still run;
#  - a node of the tree dies mid-launch (stopped before, killed while the launch waits on
#    it): node 3, an inner node's child (its parent answers for it), then node 2, the
#    home's child (the home answers for its subtree): psrun fails with a message naming
#    it, within a bound, no hang, and no task is left;
#  - an inner node dies while its subtree's ranks run: their ends reach the home around
#    it (their node sends them there), psrun names the lost rank and ends, no hang.
# shellcheck source-path=SCRIPTDIR source=lib/cluster.sh
source "$(dirname "$0")/lib/cluster.sh"
PSRUN=$BIN/psrun
K=2
PSID_CONF_EXTRA="tree_width = $K;" cluster_up 8
all_up 8000 || {
    fail "tree: cluster up" "not all up"
    exit 1
}
export PSID_SOCKET=$CDIR/psid-0.sock

# the home's message counts of its last job: "spawn sent S, start answers received A, exits E"
counts() { # counts N: the Nth job's line of node 0's log
    grep "home messages:" "$CDIR/psid-0.log" | sed -n "${1}p"
}
has_jobs() { [ "$(grep -c "home messages:" "$CDIR/psid-0.log")" -ge "$1" ]; }

out=$(timeout 30 "$PSRUN" -N 8 --ppn 1 -l sh -c 'echo "r$PSI_RANK n$PSI_NODE"; exit $((PSI_RANK + 1))' 2>&1)
rc=$?
ok=1
for r in 0 1 2 3 4 5 6 7; do echo "$out" | grep -q "^$r: r$r n$r$" || ok=0; done
[ $ok = 1 ] && [ $rc -ne 0 ] && pass "tree: a job on 8 nodes starts down a width-2 tree; every rank's output arrives" ||
    fail "tree: 8 nodes" "rc=$rc $out"
wait_until 3000 has_jobs 1 || true
line=$(counts 1)
sent=$(echo "$line" | sed -n 's/.* \([0-9]*\) spawn sent.*/\1/p')
got=$(echo "$line" | sed -n 's/.* \([0-9]*\) start answers received.*/\1/p')
exits=$(echo "$line" | sed -n 's/.* \([0-9]*\) exits received.*/\1/p')
[ -n "$sent" ] && [ "$sent" -le $K ] && [ "$got" -le $K ] && [ -n "$exits" ] &&
    [ "$exits" -ge 1 ] && [ "$exits" -le 7 ] && echo "$line" | grep -q "launch tree of width $K" &&
    pass "tree: the home sent $sent spawns and got $got start answers from other nodes (<= k = $K); $exits messages of ends (each status other than 0 goes up at once)" ||
    fail "tree: home message count" "$line"

# ends combined: every rank exits 0 after 100 kB of output; the home hears k messages of
# ends, and each rank's output is whole (its end waits at the home for its output's end)
out=$(timeout 30 "$PSRUN" -N 8 --ppn 1 sh -c 'head -c 100000 /dev/zero | tr "\0" x; echo' 2>&1)
rc=$?
bytes=$(printf '%s\n' "$out" | awk 'length($0) == 100000 && /^x+$/' | wc -l)
wait_until 3000 has_jobs 2 || true
line=$(counts 2)
exits=$(echo "$line" | sed -n 's/.* \([0-9]*\) exits received.*/\1/p')
[ $rc = 0 ] && [ "$bytes" = 8 ] && [ -n "$exits" ] && [ "$exits" -le $K ] &&
    pass "tree: 8 ranks end with status 0: $exits messages of ends at the home (<= k = $K), each rank's 100 kB of output whole" ||
    fail "tree: ends combined" "rc=$rc whole outputs $bytes of 8; $line"

# exit statuses per rank, 2 ranks per node (the status of the job: the first failed rank's)
out=$(timeout 30 "$PSRUN" -n 16 --ppn 2 -l sh -c 'echo "x$PSI_RANK"; [ $PSI_RANK = 9 ] && exit 3; exit 0' 2>&1)
rc=$?
ok=1
for r in $(seq 0 15); do echo "$out" | grep -q "^$r: x$r$" || ok=0; done
[ $ok = 1 ] && [ $rc = 3 ] && pass "tree: 16 ranks, 2 per node: output of each, rank 9's status 3 is the job's" ||
    fail "tree: 16 ranks statuses" "rc=$rc $out"
wait_until 3000 has_jobs 3 || true
line=$(counts 3)
got=$(echo "$line" | sed -n 's/.* \([0-9]*\) start answers received.*/\1/p')
[ -n "$got" ] && [ "$got" -le $K ] && pass "tree: 16 ranks, $got start answers at the home" ||
    fail "tree: 16 ranks count" "$line"

# an MPI job over the tree: each node's PMI plan (mode and mapping common, its fence
# parent and children its own) arrives through the tree; the fence and Allreduce work
MPI=$TOP/build/test/mpi
if [ -x "$MPI/mpi_hello" ]; then
    out=$(timeout 60 "$PSRUN" -n 16 --ppn 2 "$MPI/mpi_hello" 2>&1)
    rc=$?
    ok=1
    for r in $(seq 0 15); do
        echo "$out" | grep -q "^hello $r of 16 on " && echo "$out" | grep -q "^sum $r 136 ok$" || ok=0
    done
    [ $rc = 0 ] && [ $ok = 1 ] && pass "tree: an MPI job of 16 ranks on 8 nodes: hello and Allreduce right" ||
        fail "tree: MPI over the tree" "rc=$rc $out"
else
    echo "SKIP: tree: MPI job (build/test/mpi not built)"
fi

# a rank that cannot start, below the tree (node 7, place 7: under 3, under 1)
out=$(timeout 30 "$PSRUN" -N 8 --ppn 1 sh -c '[ "$PSI_NODE" = 7 ] && exec /nonexistent/x; echo ok' 2>&1)
rc=$?
[ $rc -ne 0 ] && echo "$out" | grep -q "nonexistent" &&
    pass "tree: a rank that cannot start on a leaf fails the job with its reason" ||
    fail "tree: failure on a leaf" "rc=$rc $out"

# a node of the tree dies mid-launch: node 3 (under 1, above 7) is stopped before the
# launch, so that its answers and 7's cannot come, and killed once the launch waits on it
kill_midway 3 "$CDIR/lost.out" timeout 60 "$PSRUN" -N 8 --ppn 1 sleep 30
rc=$RC ms=$MS
out=$(cat "$CDIR/lost.out")
[ $rc -ne 0 ] && [ $rc -ne 124 ] && echo "$out" | grep -q "rank 7 .*node 3 (n3) of the launch tree was lost" &&
    [ $ms -lt 30000 ] &&
    pass "tree: node 3 killed mid-launch: psrun fails in $ms ms, rank 7 below it names it" ||
    fail "tree: node lost mid-launch" "rc=$rc ms=$ms $out"
idle 8000 || fail "tree: every task gone after the failed launch" "$("$BIN/psstat" tasks 2>&1 | head)"

# the home's own child dies mid-launch: node 2 (places 5 and 6 below it) stopped, then
# killed; the home answers for 5 and 6 itself (7 nodes left: 0, 1, 2, 4..7 up, 3 down)
wait_state 0 3 down 15000 >/dev/null || true
kill_midway 2 "$CDIR/lost2.out" timeout 60 "$PSRUN" -w 0,1,2,4,5,6,7 --ppn 1 -n 7 sleep 30
rc=$RC ms=$MS
out=$(cat "$CDIR/lost2.out")
[ $rc -ne 0 ] && [ $rc -ne 124 ] && echo "$out" | grep -q "node 2 (n2) of the launch tree was lost" &&
    [ $ms -lt 30000 ] &&
    pass "tree: the home's child 2 killed mid-launch: psrun fails in $ms ms, naming it" ||
    fail "tree: home's child lost mid-launch" "rc=$rc ms=$ms $out"
idle 8000 || fail "tree: every task gone after the second failed launch" "$("$BIN/psstat" tasks 2>&1 | head)"

# an inner node dies while its subtree's ranks run: nodes 0, 1, 4, 5, 6, 7 are up (places
# 1..5 in that order: 5 and 6 are under 1, 7 under 4); node 1 killed once every rank runs:
# the ends of 5 and 6 come to the home from their nodes (they keep what they sent up)
wait_state 0 2 down 15000 >/dev/null || true
rm -f "$CDIR"/run.*
timeout 60 "$PSRUN" -w 0,1,4,5,6,7 --ppn 1 -n 6 sh -c "touch $CDIR/run.\$PSI_RANK; sleep 3" \
    >"$CDIR/inner.out" 2>&1 &
RPID=$!
STRAY+=("$RPID")
six_run() { [ "$(find "$CDIR" -maxdepth 1 -name 'run.*' | wc -l)" = 6 ]; }
wait_until 15000 six_run
t0=$(now_ms)
kill_node 1
wait $RPID
rc=$?
ms=$(($(now_ms) - t0))
out=$(cat "$CDIR/inner.out")
[ $rc -ne 0 ] && [ $rc -ne 124 ] && echo "$out" | grep -q "rank 1 .*n1" &&
    ! echo "$out" | grep -Eq "rank [2-5] .*(lost|n1)" &&
    pass "tree: inner node 1 killed while its subtree runs: the others' ends arrive around it, psrun ends in $ms ms" ||
    fail "tree: inner node lost while running" "rc=$rc ms=$ms $out"
idle 8000 || fail "tree: every task gone after the inner node's loss" "$("$BIN/psstat" tasks 2>&1 | head)"
