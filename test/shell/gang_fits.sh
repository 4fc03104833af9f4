#!/bin/bash
# gang_fits.sh - with gang scheduling on, a job that fits the running row starts at once and
# is never frozen (issue 32, docs/gang.md). A 2-node cluster of 2 CPUs per node,
# gang.quantum_ms 200: job A (a CPU-bound rank per node) and job B (the same) fit one row
# together, so the scheduler puts both in row 0 and there is no second row:
#  - B makes progress within one quantum (plus its start) of being started;
#  - A and B run side by side: neither is ever switched out, so on each node neither goes
#    half a quantum without progress while both exist (the machine's 2 CPUs carry the 4
#    ranks, and other tests': the kernel's own time-slicing leaves gaps of tens of ms).
# shellcheck source-path=SCRIPTDIR source=lib/cluster.sh
source "$(dirname "$0")/lib/cluster.sh"
# shellcheck source-path=SCRIPTDIR source=lib/gang.sh
source "$(dirname "$0")/lib/gang.sh"
Q=200
gang_cluster "gang fits" 2 $Q
gang_start "gang fits" A 8 "0 1"
A=$GJOB
# B comes after A has run a while (over 2 switches): 250 stamps of about 2 ms
wait_until 5000 eval '[ "$(wc -l <"$CDIR/A.0")" -ge 250 ]'
t=$(now_ms)
gang_start "gang fits" B 2 "0 1"
B=$GJOB
for n in 0 1; do
    first=$(head -1 "$CDIR/B.$n")
    echo "node $n: B's first progress $((first - t)) ms after psrun started"
    [ $((first - t)) -le $((Q + 500)) ]
    check "gang fits: node $n: B starts within a quantum" $? "after $((first - t)) ms"
done
wait_until 10000 eval '! kill -0 "$B" 2>/dev/null'
check "gang fits: job B ends" $? "psrun $B still runs"
for n in 0 1; do
    from=$(($(head -1 "$CDIR/B.$n") + 100))
    to=$(tail -1 "$CDIR/B.$n")
    ta=$(tail -1 "$CDIR/A.$n")
    [ "$ta" -lt "$to" ] && to=$ta # the time both exist
    ga=$(gang_max_gap A "$n" "$from" "$to")
    gb=$(gang_max_gap B "$n" "$from" "$to")
    echo "node $n: over $((to - from)) ms the longest stall of A $ga ms, of B $gb ms"
    [ "$ga" -lt $((Q / 2)) ] && [ "$gb" -lt $((Q / 2)) ]
    check "gang fits: node $n: A and B run side by side" $? "stalls: A $ga ms, B $gb ms"
done
! grep -q "in row 1 of" "$CDIR/psid-0.log"
check "gang fits: no second row" $? "$(grep "gang:" "$CDIR/psid-0.log" | head -5)"
wait_until 10000 eval '! kill -0 "$A" 2>/dev/null'
check "gang fits: job A ends" $? "psrun $A still runs"
exit $((FAILS > 0))
