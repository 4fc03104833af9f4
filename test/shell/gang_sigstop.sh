#!/bin/bash
# gang_sigstop.sh - gang scheduling without a cgroup freezer (psid.cgroups = false, as on a
# node where psid may not write the cgroup2 hierarchy): each node stops and continues the
# tasks' process groups with SIGSTOP/SIGCONT through the privileged child (docs/gang.md, "No
# freezer"), and says so once. A 2-node cluster of 1 CPU per node, gang.quantum_ms 200, mpl
# 2, two CPU-bound jobs (test/tools/gangspin, a rank per node):
#  - psid says once per node that it stops process groups instead of freezing;
#  - over 10 ms slots the two jobs progress in the same slot rarely (as gang_basic.sh), and
#    each gets about half;
#  - a stopped task is seen stopped by the kernel (state T) while the other job runs;
#  - psrun's SIGTERM ends a stopped job within a few quanta (the task is continued to take
#    the signal), and the other job then runs alone to its end.
# Everything started is ended by pid (cluster.sh's trap); waits are bounded polls.
# shellcheck source-path=SCRIPTDIR source=lib/cluster.sh
source "$(dirname "$0")/lib/cluster.sh"
# shellcheck source-path=SCRIPTDIR source=lib/gang.sh
source "$(dirname "$0")/lib/gang.sh"
N="gang sigstop"
Q=200
PSID_CONF_EXTRA="cgroups = false;" gang_cluster "$N" 1 $Q

gang_start "$N" A 8 "0 1"
A=$GJOB
gang_start "$N" B 5 "0 1"
B=$GJOB
wait_until 3000 eval "[ \"\$(grep -c 'its process groups get SIGSTOP/SIGCONT instead' $CDIR/psid-0.log)\" -ge 1 ]"
c0=$(grep -c 'its process groups get SIGSTOP/SIGCONT instead' "$CDIR/psid-0.log")
c1=$(grep -c 'its process groups get SIGSTOP/SIGCONT instead' "$CDIR/psid-1.log")
[ "$c0" = 1 ] && [ "$c1" = 1 ] && grep -q "process group only (psid.cgroups = false)" "$CDIR/psid-0.log"
check "$N: each node says once that it stops process groups instead of freezing" $? "$c0, $c1"

# a task of the frozen row is stopped (state T) at some moment while the other runs
pids=$(sed -n 's/^pid //p' "$CDIR/A.out" "$CDIR/B.out")
stopped() {
    local p
    for p in $pids; do [ "$(cut -d' ' -f3 "/proc/$p/stat" 2>/dev/null)" = T ] && return 0; done
    return 1
}
wait_until 3000 stopped
check "$N: a task of the other row is stopped (state T)" $? "pids: $pids"

t0=$(now_ms)
wait_until 20000 eval '! kill -0 "$B" 2>/dev/null'
check "$N: job B ends" $? "psrun $B still runs"
for n in 0 1; do
    from=$(($(head -1 "$CDIR/B.$n") + 2 * Q))
    to=$(tail -1 "$CDIR/B.$n")
    ta=$(tail -1 "$CDIR/A.$n")
    [ "$ta" -lt "$to" ] && to=$ta
    read -r both oa ob <<<"$(gang_overlap A B "$n" "$from" "$to")"
    slots=$(((to - from) / 10))
    switches=$(((to - from) / Q + 1))
    any=$((both + oa + ob))
    [ "$any" -gt 0 ] && [ "$both" -le $((2 * switches + slots / 20)) ]
    check "$N: node $n: A and B never run together (beyond the switch)" $? \
        "both in $both slots of $slots ($switches switches)"
    share=$((100 * (oa + both) / (any > 0 ? any : 1)))
    [ "$share" -ge 35 ] && [ "$share" -le 65 ]
    check "$N: node $n: each job gets about half ($share %)" $? "only A $oa, only B $ob, both $both"
done
# A now alone; end it with SIGTERM via psrun: gone within a few quanta
kill -TERM "$A"
wait_until 5000 eval '! kill -0 "$A" 2>/dev/null'
check "$N: psrun's SIGTERM ends the job" $? "psrun $A still runs"
gone() {
    local p
    for p in $pids; do [ -e "/proc/$p" ] && [ "$(cut -d' ' -f3 "/proc/$p/stat" 2>/dev/null)" != Z ] && return 1; done
    return 0
}
wait_until 5000 gone
check "$N: no task of either job is left (none stays stopped)" $? "pids: $pids"
exit 0
