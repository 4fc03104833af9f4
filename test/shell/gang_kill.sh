#!/bin/bash
# gang_kill.sh - a frozen job can be ended (issue 32: "psrun's Ctrl-C and pskill act on a
# frozen job at once"), and the matrix shrinks after it. A 2-node cluster of 1 CPU per node,
# gang.quantum_ms 200: jobs A and B alternate; while B is frozen (no progress for half a
# quantum on node 0) its psrun gets SIGTERM (SIGINT is ignored by a background psrun):
#  - psrun ends and B's tasks are gone within the kill delay (1 s) and a quantum;
#  - afterwards A runs alone: over the next second it never stalls for half a quantum.
# shellcheck source-path=SCRIPTDIR source=lib/cluster.sh
source "$(dirname "$0")/lib/cluster.sh"
# shellcheck source-path=SCRIPTDIR source=lib/gang.sh
source "$(dirname "$0")/lib/gang.sh"
Q=200
gang_cluster "gang kill" 1 $Q
gang_start "gang kill" A 20 "0 1"
A=$GJOB
gang_start "gang kill" B 20 "0 1"
B=$GJOB
wait_until 5000 eval '[ $(($(now_ms) - $(tail -1 "$CDIR/B.0"))) -ge $((Q / 2)) ]'
check "gang kill: B is frozen" $? "B's last progress $(($(now_ms) - $(tail -1 "$CDIR/B.0"))) ms ago"
read -ra P <<<"$(pids_in "$CDIR/B.out")"
tk=$(now_ms)
kill -TERM "$B" # a background psrun of a script ignores SIGINT (bash)
wait_until $((1000 + Q + 2000)) eval '! kill -0 "$B" 2>/dev/null && procs_gone '"${P[*]}"
rc=$?
echo "gang kill: psrun and B's tasks gone $(($(now_ms) - tk)) ms after SIGTERM"
check "gang kill: a frozen job ends on psrun's SIGTERM" $rc "psrun $B or tasks ${P[*]} still there"
ts=$(($(now_ms) + 2 * Q)) # not t0: wait_until has a local t0, which its eval would see
wait_until 5000 eval '[ "$(tail -1 "$CDIR/A.0")" -ge $((ts + 1000)) ] &&
    [ "$(tail -1 "$CDIR/A.1")" -ge $((ts + 1000)) ]'
for n in 0 1; do
    g=$(gang_max_gap A "$n" "$ts" $((ts + 1000)))
    echo "node $n: A's longest stall alone $g ms"
    [ "$g" -lt $((Q / 2)) ]
    check "gang kill: node $n: A runs alone afterwards" $? "stall $g ms"
done
kill "$A" 2>/dev/null
wait_until 5000 eval '! kill -0 "$A" 2>/dev/null'
check "gang kill: A ends with its psrun" $? "psrun $A still runs"
exit $((FAILS > 0))
