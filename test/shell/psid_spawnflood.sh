#!/bin/bash
# psid_spawnflood.sh - spawning never starves membership (issue: psid holds against hostile
# local users, point 6). A review run of `psrun -n 5000 --overbook -w 1 -- sleep 1` by
# nobody stalled node 1's psid (fork and wait-for-exec one by one inside the loop) long
# enough that node 0 declared it down, and root's 2-node job died with "node lost"; ranks
# that never started were labelled with the wrong node. Checked here, on 2 nodes with
# max_tasks_per_uid = 1200, as nobody (root: setpriv; skipped otherwise):
#  - a job over the limit on a node fails at once, naming the node and the limit;
#  - 2,000 ranks of nobody start in batches while root's 2-node job runs: both exit 0 and
#    no node is declared down;
#  - the user's other jobs count: ranks past the limit on their node fail with EAGAIN and
#    the user's count in the text, the rest run;
#  - a job whose client is killed while its ranks wait in the queue leaves no task;
#  - a node lost while its ranks wait in the queue: each such rank is reported lost with
#    that node's name.
# shellcheck source-path=SCRIPTDIR source=lib/cluster.sh
source "$(dirname "$0")/lib/cluster.sh"
if [ "$(id -u)" != 0 ] || ! command -v setpriv >/dev/null; then
    echo "SKIP: spawn flood: needs root and setpriv (the flood runs as nobody)"
    exit 0
fi
# the daemons are the ASan/UBSan build where it exists: a use after free in the queue shows
if [ -x "$TOP/build/san/bin/psid" ]; then
    PSID_BIN=$TOP/build/san/bin/psid
    export ASAN_OPTIONS=abort_on_error=1:detect_leaks=0 UBSAN_OPTIONS=halt_on_error=1
fi
NOBODY=$(id -u nobody)
AS_NOBODY=(setpriv --reuid="$NOBODY" --regid="$(id -g nobody)" --clear-groups)
PSID_CONF_EXTRA="max_tasks_per_uid = 1200;" cluster_up 2
all_up 5000 || {
    fail "spawn flood: cluster up" "not all up"
    exit 1
}
export PSID_SOCKET=$CDIR/psid-0.sock
BG=() # background psruns, ended by pid on exit
LEFT=() # tasks a killed psid left behind, ended by pid on exit
end_bg() {
    local p
    for p in "${BG[@]}" "${LEFT[@]}"; do kill -KILL "$p" 2>/dev/null; done
    cleanup
}
trap end_bg EXIT
downs() { cat "$CDIR"/psid-*.log | grep -c " down: "; }
# tasks_of UID NODE: tasks of UID in NODE's table (psstat tasks on that node)
tasks_of() {
    local n
    n=$(PSID_SOCKET=$CDIR/psid-$2.sock "$BIN/psstat" --json tasks 2>/dev/null |
        jq --argjson u "$1" --argjson n "$2" '[.tasks[] | select(.uid == $u and .node == $n)] | length' 2>/dev/null)
    echo "${n:-0}"
}
# has_tasks UID NODE N: NODE has at least N tasks of UID (a condition for wait_until)
has_tasks() { [ "$(tasks_of "$1" "$2")" -ge "$3" ]; }
no_marked() { [ -z "$(marked_pids "$1")" ]; }
# marked_pids MARK: pids of nobody's processes whose command line is "sleep MARK"
marked_pids() { pgrep -u "$NOBODY" -f "^sleep $1\$" | tr '\n' ' '; }

# 1. over the limit: at once, with the node and the limit
t0=$(now_ms)
timeout 20 "${AS_NOBODY[@]}" "$BIN/psrun" -n 5000 --overbook -- sleep 1 >"$CDIR/o1" 2>&1
rc=$? ms=$(($(now_ms) - t0))
[ "$rc" -ne 0 ] && [ "$ms" -lt 5000 ] &&
    grep -qx "psrun: cannot start the job: 2500 ranks on node [01] (n[01]) exceed the limit of 1200 tasks per user and node (psid.max_tasks_per_uid)" "$CDIR/o1" &&
    [ "$(tasks_of "$NOBODY" 0)" = 0 ] && [ "$(tasks_of "$NOBODY" 1)" = 0 ]
check "spawn flood: 5000 ranks of nobody (2500 a node, limit 1200) fail at once ($ms ms), naming node and limit" $? \
    "rc $rc after $ms ms: $(head -c 600 "$CDIR/o1")"

# 2. a big job that fits, next to root's: both complete, nobody is declared down
d0=$(downs)
t0=$(now_ms)
timeout 60 "${AS_NOBODY[@]}" "$BIN/psrun" -n 2000 --overbook -- sleep 2 >"$CDIR/o2" 2>&1 &
BG+=($!)
big=$!
wait_until 10000 has_tasks "$NOBODY" 1 1
timeout 30 "$BIN/psrun" -n 2 -w 0,1 --overbook -- sh -c 'sleep 1; echo ok' >"$CDIR/o3" 2>&1
rrc=$?
wait "$big"
brc=$? ms=$(($(now_ms) - t0))
[ "$rrc" -eq 0 ] && [ "$(grep -cx ok "$CDIR/o3")" -eq 2 ] && [ "$brc" -eq 0 ] && [ ! -s "$CDIR/o2" ] &&
    [ "$(downs)" = "$d0" ]
check "spawn flood: 2000 ranks of nobody and root's 2-node job side by side: both exit 0, no node down ($ms ms)" $? \
    "root rc $rrc ($(head -c 300 "$CDIR/o3")), big rc $brc ($(head -c 300 "$CDIR/o2")), downs $d0 -> $(downs)"

# 3. the user's other jobs count on their node: the first job's 1000 tasks each read one byte
# from a fifo that the test holds open (for reading and writing: their opens do not wait;
# nothing else holds it), so that none ends before the 300 more were asked for, however
# slowly they start; then the test writes 50 bytes every 0.1 s: they end 50 at a time (a
# thousand exits at one instant stall a 2-CPU machine for longer than the heartbeat timeout)
mkfifo "$CDIR/gate" && chmod 666 "$CDIR/gate"
exec 9<>"$CDIR/gate"
timeout 60 "${AS_NOBODY[@]}" "$BIN/psrun" -w 1 -n 1000 --overbook -- \
    dd if="$CDIR/gate" of=/dev/null bs=1 count=1 status=none >"$CDIR/o4" 2>&1 9>&- &
BG+=($!)
first=$!
wait_until 30000 has_tasks "$NOBODY" 1 1000
timeout 30 "${AS_NOBODY[@]}" "$BIN/psrun" -w 1 -n 300 --overbook -- true >"$CDIR/o5" 2>&1 9>&-
rc=$?
# release: a byte per task (the pipe holds them all; a task that starts late finds its byte)
for _ in $(seq 20); do
    printf '%050d' 0 >&9
    sleep 0.1
done
wait "$first"
frc=$?
exec 9>&-
nfail=$(grep -c "^psrun: rank [0-9]* (node n1): user $NOBODY has 1000 tasks on node 1 (n1), limit 1200 (psid.max_tasks_per_uid): Resource temporarily unavailable$" "$CDIR/o5")
[ "$rc" -ne 0 ] && [ "$nfail" -eq 100 ] && [ "$frc" -eq 0 ]
check "spawn flood: with 1000 tasks of nobody on n1, 300 more: 100 fail with EAGAIN and the count, the first job exits 0" $? \
    "first job rc $frc ($(head -c 300 "$CDIR/o4")); rc $rc, $nfail such lines: $(head -c 300 "$CDIR/o5")"

# 4. the client killed while ranks wait in the queue: none starts afterwards, none is left
"${AS_NOBODY[@]}" "$BIN/psrun" -w 1 -n 1150 --overbook -- sleep 30.25 >"$CDIR/o6" 2>&1 &
BG+=($!)
victim=$!
wait_until 10000 has_tasks "$NOBODY" 1 1
at_kill=$(tasks_of "$NOBODY" 1)
{
    kill -KILL "$victim"
    wait "$victim"
} 2>/dev/null
wait_until 15000 no_marked 30.25
check "spawn flood: psrun killed with $at_kill of 1150 ranks started: no task left within 15 s" $? \
    "left: $(marked_pids 30.25 | wc -w) processes"
alive() {
    local i
    for i in 0 1; do
        kill -0 "${PIDS[$i]}" 2>/dev/null || return 1
        ! grep -qE "AddressSanitizer|runtime error" "$CDIR/psid-$i.log" || return 1
    done
}
alive
check "spawn flood: both psids alive after all that, no sanitizer report" $? \
    "$(tail -c 1500 "$CDIR/psid-0.log") $(tail -c 1500 "$CDIR/psid-1.log")"

# 5. a node lost while its ranks wait: reported lost, with that node's name
"${AS_NOBODY[@]}" "$BIN/psrun" -w 0,1 -n 2000 --overbook -- sleep 30.5 >"$CDIR/o7" 2>&1 &
BG+=($!)
lost=$!
wait_until 10000 has_tasks "$NOBODY" 1 1
kill_node 1
start_node 1 # a new incarnation: node 1's old one is down at once
wait_until 20000 eval '! kill -0 "$lost" 2>/dev/null'
gone=$?
wait "$lost"
rc=$?
# the killed psid could not end its tasks
read -ra LEFT <<<"$(marked_pids 30.5)"
n1=$(grep -c "^psrun: rank [0-9]* (node n1): node lost$" "$CDIR/o7")
n0=$(grep -c "^psrun: rank [0-9]* (node n0): node lost$" "$CDIR/o7")
[ "$gone" -eq 0 ] && [ "$rc" -ne 0 ] && [ "$n1" -gt 0 ] && [ "$n0" -eq 0 ]
check "spawn flood: node 1 lost while its ranks wait: $n1 unstarted ranks reported lost on n1, none on n0" $? \
    "psrun ended: $gone, rc $rc, n1 $n1, n0 $n0: $(grep "node lost" "$CDIR/o7" | head -3)"
[ ${#LEFT[@]} -gt 0 ] && kill -KILL "${LEFT[@]}" 2>/dev/null
exit $((FAILS > 0))
