#!/bin/bash
# psid_linkcut.sh - link cuts shorter and longer than the grace, between two nodes in network
# namespaces with multicast heartbeats (root only; an isolated bridge in 198.18.0.0/24),
# heartbeat.down_grace_ms = 2000. The jobs span the cut, one rank on each node:
#  - a cut (node 1's veth down on the bridge side) shorter than the grace: each side sees the
#    other unreachable, then up again, and a job across the cut completes (exit 0);
#  - a cut beyond the grace: each side sees the other unreachable
#    within the heartbeats' bound, then down once the grace has passed (no quorum: both);
#    two jobs run across it, one whose home is node 0 and one whose home is node 1; both
#    psruns end by themselves with "node lost" for the rank across the cut and exit
#    255; no task of either job is left on either node (checked by pid, process group);
#  - during the cut each side still runs jobs of its own;
#  - the link restored: both see each other up again (the time is printed), and a new job
#    across both nodes completes.
here=$(dirname "$0")
source "$here/lib/netns.sh"
ns_require_root
# pass, fail, check, now_ms, wait_until, state_of; cleanup kills $PIDS by pid, removes $CDIR
# shellcheck source=../shell/lib/cluster.sh
source "$here/../shell/lib/cluster.sh"

CDIR=$(mktemp -d /tmp/pscut.XXXXXX)
D=$CDIR
TASKPIDS=() # the jobs' tasks: their process groups are killed at the end, whatever happened
end_all() {
    local p
    for p in "${TASKPIDS[@]}"; do kill -KILL -- "-$p" 2>/dev/null; done
    cleanup
}
trap end_all EXIT # ns_up chains it after its own ns_down
ns_up 2 || {
    fail "linkcut: namespaces" "ns_up failed"
    exit 1
}
GRACE=2000
head -c 32 /dev/urandom >"$D/key"
chmod 600 "$D/key"
cat >"$D/psid.conf" <<CONF
cluster = "cut";
key_file = "$D/key";
log_level = "info";
heartbeat = { mode = "multicast"; down_grace_ms = $GRACE; };
psid = { socket = "$D/psid-%n.sock"; kill_delay_ms = 1000; };
nodes = (
  { id = 0; name = "n0"; address = "$(ns_addr 0)"; cpus = 2; },
  { id = 1; name = "n1"; address = "$(ns_addr 1)"; cpus = 2; }
);
CONF
start() { # ip netns exec execs psid, so $! is the daemon itself
    ip netns exec "$(ns_name "$1")" "$BIN/psid" -f "$D/psid.conf" --foreground \
        >>"$D/psid-$1.log" 2>&1 &
    PIDS[$1]=$!
}
is_state() { [ "$(state_of "$1" "$2")" = "$3" ]; }
both() { is_state 0 1 "$1" && is_state 1 0 "$1"; }

start 0
start 1
wait_until 5000 both up
check "linkcut: 2 nodes up over multicast heartbeats" $? "0 sees $(state_of 0 1), 1 sees $(state_of 1 0)"

# bg_job HOME TAG: a job of two ranks, one per node, from HOME's psid; psrun -v to D/TAG,
# its pid in $LAST
bg_job() {
    PSID_SOCKET=$D/psid-$1.sock "$BIN/psrun" -v -l -n 2 --ppn 1 -w "n$1,n$((1 - $1))" \
        sh -c 'echo ready; sleep 60; echo done' >"$D/$2" 2>&1 </dev/null &
    LAST=$!
    PIDS+=("$LAST")
}
pids_of() { grep -o 'task [01]:[0-9]*' "$D/$1" | sed 's/.*://'; }
started() { [ "$(grep -c ': ready$' "$D/$1")" -eq 2 ] && [ "$(pids_of "$1" | wc -l)" -eq 2 ]; }
# a cut shorter than the grace ends nothing: unreachable, then up again, the job completes
link=psv$$-1
PSID_SOCKET=$D/psid-0.sock "$BIN/psrun" -l -n 2 --ppn 1 -w n0,n1 \
    sh -c 'echo ready; sleep 3; echo done' >"$D/short" 2>&1 </dev/null &
JOB_short=$!
PIDS+=("$JOB_short")
ready2() { [ "$(grep -c ': ready$' "$D/short")" -eq 2 ]; }
wait_until 10000 ready2
ip link set "$link" down
wait_until 3000 both unreachable
check "linkcut: a short cut makes each side unreachable to the other" $? \
    "0 sees $(state_of 0 1), 1 sees $(state_of 1 0)"
ip link set "$link" up
wait_until 5000 both up
check "linkcut: ... up again when the link returns, before the grace" $? \
    "0 sees $(state_of 0 1), 1 sees $(state_of 1 0)"
short_done() { ! kill -0 "$JOB_short" 2>/dev/null; }
wait_until 15000 short_done
wait "$JOB_short"
rc=$?
[ $rc -eq 0 ] && [ "$(grep -c '^[01]: done$' "$D/short")" -eq 2 ]
check "linkcut: ... and the job across it completes (exit 0)" $? "rc=$rc: $(cat "$D/short")"

bg_job 0 a
JOB_a=$LAST
bg_job 1 b
JOB_b=$LAST
wait_until 10000 started a && wait_until 10000 started b
check "linkcut: a job from each side, across both nodes" $? "$(cat "$D/a" "$D/b")"
for p in $(pids_of a) $(pids_of b); do TASKPIDS+=("$p"); done

# cut node 1's link on the bridge side, beyond the grace
ip link set "$link" down
t0=$(now_ms)
wait_until 3000 both unreachable
check "linkcut: each side sees the other unreachable ($(($(now_ms) - t0)) ms)" $? \
    "0 sees $(state_of 0 1), 1 sees $(state_of 1 0)"
wait_until $((GRACE + 4000)) both down
rc=$?
ms=$(($(now_ms) - t0))
[ $rc -eq 0 ] && [ "$ms" -ge "$GRACE" ]
check "linkcut: each side declares the other down after the grace ($ms ms; no quorum)" $? \
    "after $ms ms: 0 sees $(state_of 0 1), 1 sees $(state_of 1 0)"

# both psruns end by themselves, with a message
ended() { ! kill -0 "$JOB_a" 2>/dev/null && ! kill -0 "$JOB_b" 2>/dev/null; }
wait_until 10000 ended
check "linkcut: both psruns end by themselves" $? "$(cat "$D/a" "$D/b")"
wait "$JOB_a"
rca=$?
wait "$JOB_b"
rcb=$?
[ $rca -eq 255 ] && [ $rcb -eq 255 ] &&
    grep -qE '^psrun: rank 1 \(node n1, task 1:[0-9]+\): node lost$' "$D/a" &&
    grep -qE '^psrun: rank 1 \(node n0, task 0:[0-9]+\): node lost$' "$D/b"
check "linkcut: each job hears 'node lost' for its rank across the cut (exit 255)" $? \
    "a: rc=$rca: $(cat "$D/a") / b: rc=$rcb: $(cat "$D/b")"
gone() { # no process left in any task's group
    local p
    for p in "${TASKPIDS[@]}"; do kill -0 -- "-$p" 2>/dev/null && return 1; done
    return 0
}
wait_until 5000 gone
check "linkcut: no task of either job left on either node" $? \
    "$(for p in "${TASKPIDS[@]}"; do ps -o pid=,args= -g "$p"; done)"

# each side keeps working on its own
out0=$(PSID_SOCKET=$D/psid-0.sock timeout 20 "$BIN/psrun" -n 2 sh -c 'echo $PSI_NODE' 2>&1)
out1=$(PSID_SOCKET=$D/psid-1.sock timeout 20 "$BIN/psrun" -n 2 sh -c 'echo $PSI_NODE' 2>&1)
[ "$out0" = "$(printf '0\n0')" ] && [ "$out1" = "$(printf '1\n1')" ]
check "linkcut: during the cut each side runs jobs on its own nodes" $? "'$out0' / '$out1'"

ip link set "$link" up
t0=$(now_ms)
wait_until 15000 both up
rc=$?
heal=$(($(now_ms) - t0))
echo "the nodes see each other up again $heal ms after the link returned"
check "linkcut: both see each other up again after the link returns ($heal ms)" $rc \
    "0 sees $(state_of 0 1), 1 sees $(state_of 1 0)"
out=$(PSID_SOCKET=$D/psid-0.sock timeout 30 "$BIN/psrun" -l -n 2 --ppn 1 -w n0,n1 \
    sh -c 'echo "on $PSI_NODE"' 2>&1)
rc=$?
[ $rc -eq 0 ] && grep -q "^0: on 0$" <<<"$out" && grep -q "^1: on 1$" <<<"$out"
check "linkcut: a job across both nodes completes after the heal" $? "rc=$rc: $out"
[ "$FAILS" -gt 0 ] && tail -n 15 "$D"/psid-*.log

for i in 0 1; do kill -TERM "${PIDS[$i]}" 2>/dev/null; done
for i in 0 1; do wait "${PIDS[$i]}" 2>/dev/null; done
PIDS=()
exit $((FAILS > 0))
