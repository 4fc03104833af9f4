#!/bin/bash
# psid_tasks.sh - global tasks on a 4-node loopback cluster (2 CPUs per node), driven
# through psid's client protocol directly (build/test/tools/jobdrive):
#  - 8 ranks go two per node, in blocks; PSI_* environment arrives;
#  - exit statuses; program not found (ENOENT) and not executable (EACCES);
#  - a signal to a task on another node; ESRCH; EPERM for another user (as root);
#    a signal to a whole job;
#  - the job's client dies (SIGKILL): its tasks on every node end within kill_delay + 1 s;
#  - output flow control: a client that does not acknowledge gets at most one window per
#    rank, and the task blocks instead of psid's memory growing;
#  - a node is lost: the job hears "lost" for its ranks there.
# shellcheck source-path=SCRIPTDIR source=lib/cluster.sh
source "$(dirname "$0")/lib/cluster.sh"
JD=$TOP/build/test/tools/jobdrive
export PSID_SOCKET

cluster_up 4
all_up 5000 || {
    fail "tasks: cluster up" "not all up"
    exit 1
}
PSID_SOCKET=$CDIR/psid-0.sock

out=$(timeout 20 "$JD" run 8 sh -c 'echo "$PSI_RANK $PSI_SIZE $PSI_NODE $PSI_NODENAME"')
ok=1
for r in 0 1 2 3 4 5 6 7; do
    echo "$out" | grep -q "^rank $r started [0-9]*:[0-9]* on node $((r / 2))$" || ok=0
    echo "$out" | grep -q "^rank $r exit 0$" || ok=0
done
[ $ok = 1 ] && pass "tasks: 8 ranks, two per node in blocks, all exit 0" ||
    fail "tasks: 8 ranks two per node" "$out"

out=$(timeout 20 "$JD" run 3 sh -c 'exit $((PSI_RANK + 3))')
echo "$out" | grep -q "^rank 0 exit 768$" && echo "$out" | grep -q "^rank 2 exit 1280$" &&
    pass "tasks: exit statuses come back per rank" || fail "tasks: exit statuses" "$out"

out=$(timeout 20 "$JD" run 1 /nonexistent/prog)
echo "$out" | grep -q "^rank 0 failed: 2 cannot execute /nonexistent/prog: No such file" &&
    pass "tasks: program not found -> ENOENT with reason" || fail "tasks: not found" "$out"
printf '#!/bin/sh\necho hi\n' >"$CDIR/noexec.sh"
chmod 644 "$CDIR/noexec.sh"
out=$(timeout 20 "$JD" run 1 "$CDIR/noexec.sh")
echo "$out" | grep -q "^rank 0 failed: 13 cannot execute .*Permission denied" &&
    pass "tasks: not executable -> EACCES with reason" || fail "tasks: not executable" "$out"

# a long-running job to signal
timeout 30 "$JD" run 4 sleep 30 >"$CDIR/job1.out" &
JPID=$!
PIDS+=("$JPID")
for _ in $(seq 200); do [ "$(grep -c started "$CDIR/job1.out")" = 4 ] && break; sleep 0.02; done
job=$(sed -n 's/^job //p' "$CDIR/job1.out")
tid3=$(sed -n 's/^rank 3 started \([0-9]*:[0-9]*\) .*/\1/p' "$CDIR/job1.out")
out=$(PSID_SOCKET=$CDIR/psid-1.sock "$JD" signal "$tid3" 15)
[ "$out" = "errno 0 count 0" ] || [ "$out" = "errno 0 count 1" ] &&
    pass "signals: SIGTERM to a task on another node" || fail "signals: remote task" "$out"
out=$(PSID_SOCKET=$CDIR/psid-1.sock "$JD" signal 2:999999 15)
echo "$out" | grep -q "^errno 3 " && pass "signals: no such task -> ESRCH" ||
    fail "signals: ESRCH" "$out"
if [ "$(id -u)" = 0 ] && command -v runuser >/dev/null; then
    tid0=$(sed -n 's/^rank 0 started \([0-9]*:[0-9]*\) .*/\1/p' "$CDIR/job1.out")
    out=$(runuser -u nobody -- env PSID_SOCKET="$CDIR/psid-2.sock" "$JD" signal "$tid0" 15)
    echo "$out" | grep -q "^errno 1 " && pass "signals: another user's task -> EPERM" ||
        fail "signals: EPERM" "$out"
else
    echo "SKIP: signals: EPERM needs root (to run as another user)"
fi
out=$(PSID_SOCKET=$CDIR/psid-3.sock "$JD" signal "job:$job" 9)
echo "$out" | grep -q "^errno 0 count 3$" && pass "signals: SIGKILL to the job reaches every rank" ||
    fail "signals: job signal" "$out"
wait $JPID
grep -q "^rank 3 exit 15$" "$CDIR/job1.out" && grep -q "^rank 0 exit 9$" "$CDIR/job1.out" &&
    pass "signals: exits report the signals" || fail "signals: exit statuses" "$(cat "$CDIR/job1.out")"

# the client dies: tasks everywhere end (kill_delay 1 s in this cluster)
idle 3000 || fail "tasks: every task gone after its job" "$("$BIN/psstat" nodes)"
"$JD" run 8 sh -c 'trap "" TERM; sleep 60' >"$CDIR/job2.out" &
JPID=$!
for _ in $(seq 200); do [ "$(grep -c started "$CDIR/job2.out")" = 8 ] && break; sleep 0.02; done
pids=$(sed -n 's/^rank [0-9]* started [0-9]*:\([0-9]*\) .*/\1/p' "$CDIR/job2.out")
n=$(echo $pids | wc -w)
[ "$n" = 8 ] || fail "parent death: 8 tasks started" "$n: $(cat "$CDIR/job2.out")"
kill -KILL $JPID
wait $JPID 2>/dev/null
t0=$(now_ms)
while [ $(($(now_ms) - t0)) -lt 4000 ]; do
    alive=0
    for p in $pids; do kill -0 "$p" 2>/dev/null && alive=$((alive + 1)); done
    [ $alive = 0 ] && break
    sleep 0.05
done
el=$(($(now_ms) - t0))
[ "$n" = 8 ] && [ "$alive" = 0 ] && [ "$el" -ge 900 ] && [ "$el" -lt 2500 ] &&
    pass "parent death: 8 tasks (ignoring SIGTERM) gone ${el} ms after the client's SIGKILL" ||
    fail "parent death" "$alive tasks alive after $el ms"

# flow control: no acknowledgements -> one window, the task blocks
JOBDRIVE_NO_ACK=1 "$JD" run 1 sh -c 'head -c 20000000 /dev/zero; echo done' >"$CDIR/job3.out" &
JPID=$!
PIDS+=("$JPID")
# the window fills (or, were it not kept, far more comes, or the task ends)
outbytes() { awk '/ out / {s += $4} END {print s + 0}' "$CDIR/job3.out"; }
full() { [ "$(outbytes)" -ge 262144 ] || grep -q exit "$CDIR/job3.out"; }
wait_until 5000 full
got=$(outbytes)
rss=$(awk '/VmRSS/ {print $2}' /proc/"${PIDS[0]}"/status)
if [ "$got" -le 262144 ] && [ "$got" -gt 0 ] && ! grep -q exit "$CDIR/job3.out" && [ "$rss" -lt 65536 ]; then
    pass "flow control: $got bytes delivered unacknowledged, task blocked, psid RSS ${rss} KiB"
else
    fail "flow control" "got $got bytes, rss $rss KiB: $(tail -2 "$CDIR/job3.out")"
fi
kill -KILL $JPID
wait $JPID 2>/dev/null

# a node is lost: ranks there are reported lost
idle 3000 || fail "tasks: every task gone after its job" "$("$BIN/psstat" nodes)"
"$JD" run 8 sleep 30 >"$CDIR/job4.out" &
JPID=$!
PIDS+=("$JPID")
for _ in $(seq 200); do [ "$(grep -c started "$CDIR/job4.out")" = 8 ] && break; sleep 0.02; done
kill_node 3 KILL
for _ in $(seq 300); do [ "$(grep -c lost "$CDIR/job4.out")" -ge 2 ] && break; sleep 0.01; done
grep -q "^rank 6 lost$" "$CDIR/job4.out" && grep -q "^rank 7 lost$" "$CDIR/job4.out" &&
    pass "node lost: the job hears 'lost' for its ranks there" ||
    fail "node lost" "$(cat "$CDIR/job4.out")"
kill -KILL $JPID
wait $JPID 2>/dev/null
exit $((FAILS > 0))
