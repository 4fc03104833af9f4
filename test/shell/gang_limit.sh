#!/bin/bash
# gang_limit.sh - with gang scheduling a job's time limit (-t) counts the time it ran, not the
# quanta it spent frozen (issue 32 point 1; Slurm's suspended time does not count either). A
# 2-node cluster of 1 CPU per node, gang.quantum_ms 100, mpl 2: job B (a CPU-bound rank per
# node, 8 s) and job A (the same, 30 s, with -t 2) take turns, so A runs about half the time:
#  - A is ended by its time limit (psrun says so, exit status 124) after more than 3 s of wall
#    time (2 s would be the limit by the clock), and within 8 s;
#  - without a second job, -t 2 ends a job after 2 s (not later): nothing frozen, nothing added.
# Everything started is ended by pid (cluster.sh's trap); waits are bounded polls.
# shellcheck source-path=SCRIPTDIR source=lib/cluster.sh
source "$(dirname "$0")/lib/cluster.sh"
# shellcheck source-path=SCRIPTDIR source=lib/gang.sh
source "$(dirname "$0")/lib/gang.sh"
N="gang limit"
gang_cluster "$N" 1 100

gang_start "$N" B 8 "0 1"
B=$GJOB
t0=$(now_ms)
gang_start "$N" A 30 "0 1" -N 2 -t 2
A=$GJOB
wait_until 12000 eval '! kill -0 "$A" 2>/dev/null'
t1=$(now_ms)
wait "$A"
rc=$?
wall=$((t1 - t0))
[ $rc = 124 ] && grep -q "time limit of 2 s reached" "$CDIR/A.out" && [ $wall -gt 3000 ] &&
    [ $wall -lt 8000 ]
check "$N: -t 2 under gang scheduling ends the job after 2 s of its run time ($wall ms of wall time, rc $rc)" \
    $? "$(cat "$CDIR/A.out")"
wait_until 15000 eval '! kill -0 "$B" 2>/dev/null'
wait "$B"

t0=$(now_ms)
gang_job C 30 -N 2 -t 2
C=$GJOB
wait_until 8000 eval '! kill -0 "$C" 2>/dev/null'
t1=$(now_ms)
wait "$C"
rc=$?
[ $rc = 124 ] && [ $((t1 - t0)) -ge 1900 ] && [ $((t1 - t0)) -lt 3500 ]
check "$N: -t 2 alone ends the job after 2 s ($((t1 - t0)) ms, rc $rc)" $? "$(cat "$CDIR/C.out")"
exit 0
