#!/bin/bash
# gang_off.sh - gang.quantum_ms 0 (the default) is today's behaviour (issue 32,
# docs/gang.md): on a 2-node cluster of 1 CPU per node with a gang group of quantum 0, job A
# (a rank per node) takes every CPU, job B is refused as before ("do not fit the partition's
# free CPUs"), the daemons say nothing of gang scheduling, and B with --overbook runs next to
# A without ever being frozen: neither goes 100 ms without progress.
# shellcheck source-path=SCRIPTDIR source=lib/cluster.sh
source "$(dirname "$0")/lib/cluster.sh"
# shellcheck source-path=SCRIPTDIR source=lib/gang.sh
source "$(dirname "$0")/lib/gang.sh"
gang_cluster "gang off" 1 0
gang_start "gang off" A 6 "0 1"
A=$GJOB
out=$(timeout 10 "$BIN/psrun" -N 2 -- true 2>&1)
rc=$?
[ $rc -ne 0 ] && grep -q "do not fit" <<<"$out"
check "gang off: a job over the free CPUs is refused, as without gang" $? "rc $rc: $out"
gang_start "gang off" B 2 "0 1" -N 2 --overbook
B=$GJOB
wait_until 10000 eval '! kill -0 "$B" 2>/dev/null'
check "gang off: job B ends" $? "psrun $B still runs"
from=$(($(head -1 "$CDIR/B.0") + 100))
to=$(tail -1 "$CDIR/B.0")
ta=$(tail -1 "$CDIR/A.0")
[ "$ta" -lt "$to" ] && to=$ta # the time both exist
ga=$(gang_max_gap A 0 "$from" "$to")
gb=$(gang_max_gap B 0 "$from" "$to")
echo "node 0: over $((to - from)) ms the longest stall of A $ga ms, of B $gb ms"
[ "$ga" -lt 100 ] && [ "$gb" -lt 100 ]
check "gang off: A and B share the node at once (no time slices)" $? "stalls: A $ga ms, B $gb ms"
! grep -q "gang:" "$CDIR"/psid-*.log
check "gang off: no gang scheduling in the logs" $? "$(grep -h "gang:" "$CDIR"/psid-*.log | head -3)"
wait_until 10000 eval '! kill -0 "$A" 2>/dev/null'
check "gang off: job A ends" $? "psrun $A still runs"
exit $((FAILS > 0))
