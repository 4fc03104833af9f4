#!/bin/bash
# gang_failover.sh - no job stays frozen because its scheduler is gone (issue 32,
# docs/gang.md). A 2-node cluster of 1 CPU per node, gang.quantum_ms 200; node 0 schedules
# (the lowest-numbered node that is up) and runs nothing; jobs A and B each have a CPU-bound
# rank on node 1 (their client on node 1 too), so they take turns there. Failure detection
# is slowed (heartbeat.dead_limit 50: 5 s) so that the switch watchdog acts alone:
#  - node 0's psid is killed (SIGKILL); within 3 quanta, plus a quantum of the watchdog's
#    tick and 300 ms of slack, both jobs make progress on node 1 (the one that was frozen
#    has been thawed), and node 1 says why;
#  - once node 1 sees node 0 down it schedules from its own report and the jobs take turns
#    again (the takeover).
# shellcheck source-path=SCRIPTDIR source=lib/cluster.sh
source "$(dirname "$0")/lib/cluster.sh"
# shellcheck source-path=SCRIPTDIR source=lib/gang.sh
source "$(dirname "$0")/lib/gang.sh"
Q=200
PSID_HB_EXTRA="dead_limit = 50;" gang_cluster "gang failover" 1 $Q
export PSID_SOCKET=$CDIR/psid-1.sock # the jobs' home is node 1: node 0 dies
gang_start "gang failover" A 20 "1" -w 1
A=$GJOB
gang_start "gang failover" B 20 "1" -w 1
B=$GJOB
wait_line "$CDIR/psid-0.log" "gang: job .* in row 1 of 2" 5000
check "gang failover: node 0 schedules A and B in two rows" $? \
    "$(grep "gang:" "$CDIR/psid-0.log" | head -5)"
# a few switches, then the scheduler goes
wait_until 5000 eval '[ "$(wc -l <"$CDIR/B.1")" -ge 200 ]'
tk=$(now_ms)
kill_node 0
bound=$((4 * Q + 300))
# a switch node 0 sent just before it died takes effect 5 ms later; after that one of the
# jobs is frozen, so progress of both after tk + Q means that one was thawed
t2=$((tk + Q))
wait_until $((bound + 2000)) eval '[ -n "$(gang_first_after A 1 '"$t2"')" ] &&
    [ -n "$(gang_first_after B 1 '"$t2"')" ]'
ta=$(gang_first_after A 1 "$t2")
tb=$(gang_first_after B 1 "$t2")
late=$((${ta:-999999} > ${tb:-999999} ? ${ta:-999999} : ${tb:-999999}))
echo "gang failover: both jobs progressed $((late - tk)) ms after the scheduler was killed"
[ $((late - tk)) -le "$bound" ]
check "gang failover: the frozen job is thawed within 3 quanta" $? \
    "A at +$((${ta:-999999} - tk)) ms, B at +$((${tb:-999999} - tk)) ms (bound $bound ms)"
# the watchdog, or RDP declared node 0 down before it (then node 1 took over at once)
wait_line "$CDIR/psid-1.log" "no switch heard for 3 quanta\|node 0 (n0) down" 2000
check "gang failover: node 1 says why" $? "$(grep "gang:" "$CDIR/psid-1.log" | tail -3)"
wait_line "$CDIR/psid-1.log" "gang: job .* in row 1 of 2" 15000
check "gang failover: node 1 takes over the schedule" $? "$(grep "gang:" "$CDIR/psid-1.log" | tail -3)"
kill "$A" "$B" 2>/dev/null
wait_until 5000 eval '! kill -0 "$A" 2>/dev/null && ! kill -0 "$B" 2>/dev/null'
check "gang failover: the jobs end with their psrun" $? "psrun still runs"
exit $((FAILS > 0))
