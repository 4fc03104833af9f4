#!/bin/bash
# gang_basic.sh - gang scheduling time-slices two jobs that do not fit together (issue 32,
# docs/gang.md). A 2-node cluster of 1 CPU per node, gang.quantum_ms 200, mpl 2: job A (a
# CPU-bound rank per node) is in row 0, job B (the same) does not fit it and gets row 1. Each
# rank logs a stamp per ~2 ms of its own CPU time (test/tools/gangspin), so its file shows
# when it ran. Over 10 ms slots of the time both jobs exist, on each node:
#  - the two jobs progress in the same slot rarely: at most 2 slots per switch (the switch
#    itself and the clock's granularity) plus 5 % of the slots;
#  - each job gets its share: 50 % of the slots in which anything ran, +-15 % (the machine
#    has 2 CPUs and may run other tests);
#  - the scheduler says where it put the jobs (row 0 and row 1 of 2);
#  - each node learns that a freeze or thaw took effect from the kernel's mark of a change of
#    the job's cgroup.events (EPOLLPRI), not by polling it: psid's debug line of a switch's
#    end counts the jobs that came to agree "by event", and a freeze of a CPU-bound task
#    always changes the file after psid opened it (the task must run into the freezer);
#  - when the jobs have ended, psid holds no cgroup.events open.
# (A third job that fits no row waits in the queue: gang_queue.sh.)
# Everything started is ended by pid (cluster.sh's trap); waits are bounded polls.
# shellcheck source-path=SCRIPTDIR source=lib/cluster.sh
source "$(dirname "$0")/lib/cluster.sh"
# shellcheck source-path=SCRIPTDIR source=lib/gang.sh
source "$(dirname "$0")/lib/gang.sh"
Q=200
PSID_LOG_LEVEL=debug gang_cluster "gang" 1 $Q

gang_start "gang" A 6 "0 1"
A=$GJOB
gang_start "gang" B 4 "0 1"
B=$GJOB
t0=$(now_ms)
wait_until 15000 eval '! kill -0 "$B" 2>/dev/null'
check "gang: job B ends" $? "psrun $B still runs"
t1=$(now_ms)

# the window: from B's first stamp + 2 quanta to its last stamp, on each node
for n in 0 1; do
    from=$(($(head -1 "$CDIR/B.$n") + 2 * Q))
    to=$(tail -1 "$CDIR/B.$n")
    ta=$(tail -1 "$CDIR/A.$n")
    [ "$ta" -lt "$to" ] && to=$ta # the time both exist
    read -r both oa ob <<<"$(gang_overlap A B "$n" "$from" "$to")"
    slots=$(((to - from) / 10))
    switches=$(((to - from) / Q + 1))
    any=$((both + oa + ob))
    echo "node $n: window $((to - from)) ms, $slots slots: both $both, only A $oa, only B $ob"
    [ "$any" -gt 0 ] && [ "$both" -le $((2 * switches + slots / 20)) ]
    check "gang: node $n: A and B never run together (beyond the switch)" $? \
        "both in $both slots of $slots ($switches switches)"
    share=$((100 * (oa + both) / (any > 0 ? any : 1)))
    echo "node $n: A's share $share %"
    [ "$share" -ge 35 ] && [ "$share" -le 65 ]
    check "gang: node $n: each job gets about half" $? "A's share $share % (only A $oa, only B $ob)"
done
grep -q "gang: job .* in row 0 of 1" "$CDIR/psid-0.log" &&
    grep -q "gang: job .* in row 1 of 2" "$CDIR/psid-0.log"
check "gang: the scheduler (node 0) puts A in row 0 and B in row 1" $? \
    "$(grep "gang:" "$CDIR/psid-0.log" | head -5)"
wait_until 10000 eval '! kill -0 "$A" 2>/dev/null'
check "gang: job A ends after B (thawed for good)" $? "psrun $A still runs $(($(now_ms) - t1)) ms after B"
# the switches' ends, by event: "done in U us, ..., K by event" with K > 0
for n in 0 1; do
    ev=$(grep -c "gang: switch [0-9]* done in .* [1-9][0-9]* by event" "$CDIR/psid-$n.log")
    all=$(grep -c "gang: switch [0-9]* done in " "$CDIR/psid-$n.log")
    [ "$ev" -ge 1 ]
    check "gang: node $n: the freezer's changes reach psid as events on cgroup.events" $? \
        "$ev of $all switches' ends with a job by event: $(grep -m3 'gang: switch' "$CDIR/psid-$n.log")"
done
# every cgroup.events psid opened is closed again (each waited switch ends within 200 ms)
events_open() {
    local f c=0
    for f in "/proc/${PIDS[$1]}"/fd/*; do [[ $(readlink "$f") == */cgroup.events ]] && c=$((c + 1)); done
    echo "$c"
}
for n in 0 1; do
    wait_until 2000 eval "[ \"\$(events_open $n)\" = 0 ]"
    check "gang: node $n: no cgroup.events left open after the jobs" $? "$(events_open "$n") open"
done
echo "gang: B ran $((t1 - t0)) ms of wall time for 4 s of its own"
exit $((FAILS > 0))
