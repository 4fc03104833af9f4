#!/bin/bash
# psid_grace.sh - "unreachable" and "down" on a 2-node loopback cluster with
# heartbeat.down_grace_ms = 4000 (no root needed). A job of 2 ranks, one per node, runs from
# node 0 throughout:
#  - psid 1 SIGSTOPped for 3 s (a swap storm) while input for its rank waits in RDP: node 0
#    shows node 1 "unreachable" (psstat text and --json), never "down", and psstat tasks
#    says it cannot list node 1's tasks (stderr; --json "unreachable"); no new rank goes
#    there meanwhile (-w n1 is refused as unreachable, the default partition is node 0
#    alone); after SIGCONT node 1 is up again and the job completes: exit 0, the input
#    reached both ranks, every line of both ranks' output is there, and psrun said that
#    rank 1's node was unreachable and when it answered again;
#  - psid 1 SIGSTOPped beyond the grace: node 0 declares it down, not before the grace; the
#    job's psrun says "node lost" for the rank there and exits 255 (no hang); after SIGCONT
#    node 1 learns that node 0 dropped their connection and ends its rank of the job (its
#    process group is gone: checked by pid), and both nodes see each other up again;
#  - psid 1 SIGKILLed and restarted (a new incarnation) while a job runs: node 0 declares it
#    down on the new incarnation's first heartbeat, well before the grace would end, and the
#    job hears "node lost";
#  - (root, nftables) RDP from node 0 to node 1 dropped while heartbeats pass and input waits:
#    node 1 is unreachable for RDP's silence, down after the grace, its job hears "node
#    lost"; when RDP passes again, node 1 learns that node 0 dropped their connection and
#    ends its rank (checked by pid), and both are up again.
# shellcheck source-path=SCRIPTDIR source=lib/cluster.sh
source "$(dirname "$0")/lib/cluster.sh"

GRACE=4000
PSID_DOWN_GRACE_MS=$GRACE cluster_up 2
all_up 5000 || {
    fail "grace: cluster up" "not all up after 5 s"
    exit 1
}
export PSID_SOCKET=$CDIR/psid-0.sock
PSRUN=$BIN/psrun
STOPPED=
cont1() { [ -n "$STOPPED" ] && kill -CONT "${PIDS[1]}" 2>/dev/null; STOPPED=; }
TASKPIDS=() # the jobs' tasks on node 1: killed by pid at the end, whatever happened
end_tasks() {
    local p
    cont1
    for p in "${TASKPIDS[@]}"; do kill -KILL -- "-$p" 2>/dev/null; done
    cleanup
}
trap end_tasks EXIT

# bg_job FILE ARGS...: psrun -v in the background (bounded by -t), stdin from FILE.in (a
# fifo held open on descriptor 3 until close_input), output to FILE
bg_job() {
    local f=$1
    shift
    mkfifo "$f.in"
    "$PSRUN" -t 40 -v "$@" <"$f.in" >"$f" 2>&1 &
    JOB=$!
    PIDS+=("$JOB")
    exec 3>"$f.in"
}
close_input() { exec 3>&-; }
count() { grep -cE "$2" "$1"; }
readies() { [ "$(count "$1" '^[01]: ready$')" -ge 2 ] && [ -n "$(rank1_pid "$1")" ]; }
rank1_pid() { grep -o 'rank 1: node 1 (n1), task 1:[0-9]*' "$1" | sed 's/.*://' | head -1; }
job_done() { ! kill -0 "$JOB" 2>/dev/null; }
gone() { ! kill -0 -- "-$1" 2>/dev/null; } # no process left in the task's group
# check_lost NAME FILE: the job ends by itself, exit 255, "node lost" for its rank on node 1
check_lost() {
    local rc
    wait_until 10000 job_done
    wait "$JOB"
    rc=$?
    [ $rc -eq 255 ] && grep -qE '^psrun: rank 1 \(node n1, task 1:[0-9]+\): node lost$' "$2"
    check "$1" $? "rc=$rc: $(cat "$2")"
}
state_txt() { "$BIN/psstat" nodes | awk -v n="$1" '$1 == n { print $4 }'; }

# ---- 1. stopped for 3 s, less than the grace: the job goes on
bg_job "$CDIR/j1" -n 2 -w n0,n1 --ppn 1 -l -i all sh -c \
    'echo ready; read -r l; echo "got $l"; for i in 1 2 3 4 5 6 7 8; do echo "tick $i"; sleep 0.5; done; echo done'
wait_until 10000 readies "$CDIR/j1"
check "grace: a 2-node job started" $? "$(cat "$CDIR/j1")"
TASKPIDS+=("$(rank1_pid "$CDIR/j1")")
kill -STOP "${PIDS[1]}"
STOPPED=1
t0=$(now_ms)
echo hello >&3 # for rank 1 it waits in RDP, retransmitted, while psid 1 is stopped
ms=$(wait_state 0 1 unreachable 3000)
check "grace: a stopped psid is unreachable ($ms ms)" $? "node 1 is $(state_of 0 1)"
txt=$(state_txt 1)
[ "$txt" = unreachable ]
check "grace: psstat nodes (text) says unreachable" $? "'$txt': $("$BIN/psstat" nodes)"
out=$(timeout 10 "$BIN/psstat" tasks 2>&1 >/dev/null)
js=$(timeout 10 "$BIN/psstat" --json tasks 2>/dev/null | jq -c .unreachable)
[[ $out == "psstat: node n1 (1) is unreachable: its tasks are not listed" && $js == "[1]" ]]
check "grace: psstat tasks says whose tasks it cannot list" $? "'$out' / $js"
out=$(timeout 10 "$PSRUN" -w n1 true 2>&1)
rc=$?
[ $rc -eq 1 ] && grep -q "n1.*unreachable" <<<"$out"
check "grace: -w with an unreachable node is refused, naming it" $? "rc=$rc: $out"
out=$(timeout 10 "$PSRUN" -n 1 sh -c 'echo "on $PSI_NODE"' 2>&1)
[ "$out" = "on 0" ]
check "grace: no new rank is placed on an unreachable node" $? "$out"
# until 3 s after the stop, node 1 must never be seen down
never_down() {
    [ "$(state_of 0 1)" != down ] || return 2
    [ $(($(now_ms) - t0)) -ge 3000 ]
}
wait_until 5000 never_down
check "grace: not down within 3 s of the stop" $? "node 1 is $(state_of 0 1)"
kill -CONT "${PIDS[1]}"
STOPPED=
ms=$(wait_state 0 1 up 3000)
check "grace: up again after SIGCONT ($ms ms)" $? "node 1 is $(state_of 0 1)"
close_input
wait_until 20000 job_done
wait "$JOB"
rc=$?
[ $rc -eq 0 ] && [ "$(count "$CDIR/j1" '^[01]: got hello$')" -eq 2 ] &&
    [ "$(count "$CDIR/j1" '^[01]: tick [1-8]$')" -eq 16 ] && [ "$(count "$CDIR/j1" '^[01]: done$')" -eq 2 ] &&
    ! grep -q "lost" "$CDIR/j1"
check "grace: the job completes (exit 0, input and every line of output)" $? "rc=$rc: $(cat "$CDIR/j1")"
grep -q "^psrun: node n1 is unreachable: rank 1 of the job runs on there" "$CDIR/j1" &&
    grep -q "^psrun: node n1 answers again$" "$CDIR/j1"
check "grace: psrun says that rank 1's node is unreachable, and when it answers again" $? \
    "$(grep '^psrun' "$CDIR/j1")"
grep -q "node 1 (n1) up again after" "$CDIR/psid-0.log"
check "grace: node 0 logs unreachable and up again" $? "$(grep 'node 1' "$CDIR/psid-0.log" | tail -3)"
! grep -q "node 1 (n1) down" "$CDIR/psid-0.log"
check "grace: node 1 never declared down" $? "$(grep 'node 1 (n1) down' "$CDIR/psid-0.log")"

# ---- 2. stopped beyond the grace: down, the job ends with a message, no orphan
bg_job "$CDIR/j2" -n 2 -w n0,n1 --ppn 1 -l sh -c 'echo ready; sleep 30; echo done'
close_input
wait_until 10000 readies "$CDIR/j2"
check "grace: a second 2-node job started" $? "$(cat "$CDIR/j2")"
p1=$(rank1_pid "$CDIR/j2")
TASKPIDS+=("$p1")
kill -STOP "${PIDS[1]}"
STOPPED=1
t0=$(now_ms)
wait_state 0 1 down $((GRACE + 5000)) >/dev/null
rc=$?
ms=$(($(now_ms) - t0))
[ $rc -eq 0 ] && [ "$ms" -ge "$GRACE" ]
check "grace: stopped beyond the grace -> down after the grace ($ms ms, grace $GRACE)" $? \
    "node 1 is $(state_of 0 1) after $ms ms"
check_lost "grace: the job hears 'node lost' and ends (exit 255)" "$CDIR/j2"
kill -CONT "${PIDS[1]}"
STOPPED=
[ -n "$p1" ] && wait_until 10000 gone "$p1"
check "grace: node 1 ends its rank of the job once it runs again (no orphan)" $? \
    "task 1:$p1: $(ps -o pid,pgid,stat,args -g "$p1" 2>&1 | tail -n +2)"
grep -q "node 0 (n0) down: it replaced our RDP connection" "$CDIR/psid-1.log"
check "grace: node 1 learns that node 0 dropped their connection" $? \
    "$(grep 'node 0' "$CDIR/psid-1.log" | tail -3)"
wait_state 0 1 up 5000 >/dev/null && wait_state 1 0 up 5000 >/dev/null
check "grace: both nodes see each other up again" $? "0 sees $(state_of 0 1), 1 sees $(state_of 1 0)"

# ---- 3. killed and restarted: down at once on the new incarnation
idle 5000 || fail "grace: nodes idle" "tasks still counted after 5 s"
bg_job "$CDIR/j3" -n 2 -w n0,n1 --ppn 1 -l sh -c 'echo ready; sleep 30; echo done'
close_input
wait_until 10000 readies "$CDIR/j3"
check "grace: a third 2-node job started" $? "$(cat "$CDIR/j3")"
TASKPIDS+=("$(rank1_pid "$CDIR/j3")") # orphaned by the SIGKILL: ended at the end
kill_node 1 KILL
start_node 1
t0=$(now_ms)
# down and up again at the same heartbeat: the log says when
wait_line "$CDIR/psid-0.log" "node 1 (n1) down: restarted" 3000
rc=$?
ms=$(($(now_ms) - t0))
[ $rc -eq 0 ] && [ "$ms" -lt 2000 ]
check "grace: a restarted psid is down at once, not after the grace ($ms ms)" $? \
    "after $ms ms: $(grep 'node 1 (n1)' "$CDIR/psid-0.log" | tail -3)"
check_lost "grace: its job hears 'node lost' (exit 255)" "$CDIR/j3"
wait_state 0 1 up 3000 >/dev/null
check "grace: the restarted node is up again" $? "node 1 is $(state_of 0 1)"

# ---- 4. (root, nftables) RDP from node 0 to node 1 dropped, heartbeats pass: unreachable for
# RDP's silence, down after the grace; once RDP passes again node 1 learns of it
if [ "$(id -u)" -ne 0 ] || ! command -v nft >/dev/null; then
    echo "SKIP: grace: one-way RDP loss (needs root and nft)"
    exit $((FAILS > 0))
fi
NFT=psgrace$$
unblock() { nft delete table inet "$NFT" 2>/dev/null; }
trap 'unblock; end_tasks' EXIT
rdp_port=$(sed -n 's/^rdp = { port = \([0-9]*\);.*/\1/p' "$CDIR/psid.conf")
idle 5000 || fail "grace: nodes idle" "tasks still counted after 5 s"
wait_state 0 1 up 3000 >/dev/null && wait_state 1 0 up 3000 >/dev/null
bg_job "$CDIR/j4" -n 2 -w n0,n1 --ppn 1 -l -i all sh -c 'echo ready; read -r l; echo "got $l"; sleep 30'
wait_until 10000 readies "$CDIR/j4"
check "grace: a fourth 2-node job started" $? "$(cat "$CDIR/j4")"
p4=$(rank1_pid "$CDIR/j4")
TASKPIDS+=("$p4")
nft add table inet "$NFT" && nft add chain inet "$NFT" out '{ type filter hook output priority 0; }' &&
    nft add rule inet "$NFT" out ip saddr 127.0.0.1 ip daddr 127.0.0.2 udp dport "$rdp_port" drop
check "grace: RDP from node 0 to node 1 dropped (nftables)" $? "nft failed"
t0=$(now_ms)
echo hello >&3 # waits for an answer that cannot come
close_input
wait_state 0 1 unreachable 6000 >/dev/null && grep -q "node 1 (n1) unreachable: RDP unanswered" "$CDIR/psid-0.log"
check "grace: RDP unanswered while heartbeats pass -> unreachable ($(($(now_ms) - t0)) ms)" $? \
    "node 1 is $(state_of 0 1): $(grep 'node 1 (n1)' "$CDIR/psid-0.log" | tail -2)"
t1=$(now_ms)
downs() { grep -c "node 1 (n1) down: unreachable for down_grace_ms" "$CDIR/psid-0.log"; }
n0=$(downs) # case 2 logged one
more_downs() { [ "$(downs)" -gt "$n0" ]; }
wait_until $((GRACE + 3000)) more_downs
rc=$?
ms=$(($(now_ms) - t1))
[ $rc -eq 0 ] && [ "$ms" -ge $((GRACE - 1000)) ]
check "grace: ... and down after the grace ($ms ms after unreachable)" $? \
    "$(grep 'node 1 (n1)' "$CDIR/psid-0.log" | tail -3)"
check_lost "grace: its job hears 'node lost' (exit 255)" "$CDIR/j4"
unblock
[ -n "$p4" ] && wait_until 10000 gone "$p4" &&
    grep -q "node 0 (n0) down: it replaced our RDP connection" "$CDIR/psid-1.log"
check "grace: once RDP passes again, node 1 learns of it and ends its rank (no orphan)" $? \
    "task 1:$p4 $(gone "$p4" && echo gone || echo alive): $(grep 'node 0 (n0)' "$CDIR/psid-1.log" | tail -3)"
wait_state 0 1 up 5000 >/dev/null && wait_state 1 0 up 5000 >/dev/null
check "grace: both up again" $? "0 sees $(state_of 0 1), 1 sees $(state_of 1 0)"
exit $((FAILS > 0))
