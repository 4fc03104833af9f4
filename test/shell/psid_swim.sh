#!/bin/bash
# psid_swim.sh - heartbeat.mode = "swim" (SWIM membership, docs/swim.md) on a 16-node
# loopback cluster with down_grace_ms = 6000 (no root needed):
#  - every node sees every node up soon after start (each daemon pings all once at start);
#  - a job of 16 ranks, one per node, runs (placement has every node's CPUs and tasks);
#  - a refuted suspicion: psid 9 SIGSTOPped for 0.3 s, again until some node suspects it;
#    the suspicion is refuted, no node declares it unreachable, and a job with a rank there
#    exits 0;
#  - psid 11 SIGSTOPped for 2 s (less than the grace): declared unreachable, never down,
#    up again everywhere after SIGCONT, and a job with a rank there exits 0;
#  - psid 5 SIGKILLed: unreachable at every other node within 1.5 s (the daemons' log
#    timestamps), and psstat nodes on several nodes says so;
#  - psid 5 restarted: every node declares the old incarnation down at once (not after the
#    grace) and the new one up;
#  - psid 3 SIGTERMed: every other node sees it leave (down: left) within 1 s;
#  - a psid with another cluster key: its SWIM packets are dropped for their MAC and
#    counted like heartbeats, it is never up; junk on the heartbeat port is dropped.
# shellcheck source-path=SCRIPTDIR source=lib/cluster.sh
source "$(dirname "$0")/lib/cluster.sh"

N=16
GRACE=6000
PSID_HB_MODE=swim PSID_DOWN_GRACE_MS=$GRACE cluster_up $N
PSRUN=$BIN/psrun
export PSID_SOCKET=$CDIR/psid-0.sock
STOPPED=
cont() { [ -n "$STOPPED" ] && kill -CONT "$STOPPED" 2>/dev/null; STOPPED=; }
end_all() {
    cont
    cleanup
}
trap end_all EXIT

# the number of nodes observer $1 sees in state $2 (one psstat call)
count_state() {
    PSID_SOCKET=$CDIR/psid-$1.sock "$BIN/psstat" --json nodes 2>/dev/null | grep -o "\"state\":\"$2\"" | grep -c .
}
all_see_up() {
    local o
    for o in $(seq 0 $((N - 1))); do [ "$(count_state "$o" up)" = "$N" ] || return 1; done
}
# milliseconds of the day of a log line's "HH:MM:SS.mmm" (and of date's now)
ms_of() { awk -F'[:. ]' '{ print (($1 * 60 + $2) * 60 + $3) * 1000 + $4; exit }' <<<"$1"; }
now_tod() { ms_of "$(date +%H:%M:%S.%3N)"; }
# logs (other than node $1's own) with a line matching $2 (one grep: the machine may be busy)
logs_with() {
    grep -l -- "$2" "$CDIR"/psid-*.log | grep -vc "/psid-$1\.log$"
}
# times (ms after $3) at which observers other than node $1 logged the text $2: $4 = max
# the latest of each observer's (99999: one has not), min the earliest (one awk: the machine
# may be busy)
log_times() {
    awk -v pat="$2" -v t0="$3" -v own="psid-$1.log" -v n=$((N - 1)) -v want="$4" '
        index($0, pat) && substr(FILENAME, length(FILENAME) - length(own) + 1) != own &&
        substr(FILENAME, length(FILENAME) - length(own)) != "/" own {
            split($1, h, /[:.]/)
            t = ((h[1] * 60 + h[2]) * 60 + h[3]) * 1000 + h[4] - t0
            if (t < 0) t += 86400000
            last[FILENAME] = t
            if (first == "" || t < first) first = t
        }
        END { w = 0; k = 0
              for (f in last) { k++; if (last[f] > w) w = last[f] }
              print (want == "min" ? (first == "" ? 99999 : first) : (k < n ? 99999 : w)) }' \
        "$CDIR"/psid-*.log
}
worst_after() { log_times "$1" "$2" "$3" max; }
first_after() { log_times "$1" "$2" "$3" min; }
# bg_job FILE ARGS...: psrun in the background (bounded by -t), output to FILE
bg_job() {
    local f=$1
    shift
    "$PSRUN" -t 40 "$@" >"$f" 2>&1 &
    JOB=$!
    PIDS+=("$JOB")
}
# job_ok NAME FILE LINES: the job exits 0 with LINES lines "ok"
job_ok() {
    local rc
    wait_until 20000 bash -c "! kill -0 $JOB 2>/dev/null"
    wait "$JOB"
    rc=$?
    [ $rc -eq 0 ] && [ "$(grep -c '^ok$' "$2")" = "$3" ]
    check "$1" $? "rc=$rc, $(grep -c '^ok$' "$2") ok lines: $(tail -5 "$2")"
}

if wait_until 8000 all_see_up; then pass "swim: $N nodes up everywhere"; else
    fail "swim: $N nodes up everywhere" "node 0 sees $(count_state 0 up) up"
    tail -n 3 "$CDIR"/psid-0.log
    exit 1
fi

# ---- a job across all nodes
out=$(timeout 30 "$PSRUN" -t 20 -n $N --ppn 1 -l sh -c 'echo ok' 2>&1)
[ $? -eq 0 ] && [ "$(grep -c ': ok$' <<<"$out")" = "$N" ]
check "swim: a job of $N ranks, one per node, runs" $? "$out"

# ---- short pauses: suspected, refuted, never unreachable; the job goes on
bg_job "$CDIR/j1" -n $N --ppn 1 sh -c 'sleep 8; echo ok'
sleep 1
for _ in $(seq 10); do
    kill -STOP "${PIDS[9]}" && STOPPED=${PIDS[9]}
    sleep 0.3
    cont
    sleep 0.5
    [ "$(logs_with 9 'node 9 (n9) suspected')" -gt 0 ] && break
done
sleep 0.5
s=$(logs_with 9 'node 9 (n9) suspected')
r=$(logs_with 9 'node 9 (n9): suspicion refuted')
u=$(logs_with 9 'node 9 (n9) unreachable')
[ "$s" -gt 0 ] && [ "$r" -gt 0 ] && [ "$u" = 0 ]
check "swim: 0.3 s pauses: suspected, refuted, not unreachable" $? \
    "$s nodes suspected it, $r saw it refuted, $u declared it unreachable"
job_ok "swim: a job with a rank on the paused node exits 0" "$CDIR/j1" $N

# ---- stopped for 2 s, less than the grace: unreachable, not down, back
bg_job "$CDIR/j2" -n $N --ppn 1 sh -c 'sleep 5; echo ok'
sleep 1
t0=$(now_ms)
kill -STOP "${PIDS[11]}" && STOPPED=${PIDS[11]}
ms=$(wait_state 0 11 unreachable 1900)
u=$?
el=$(($(now_ms) - t0))
[ $el -lt 2000 ] && sleep "$(awk -v r=$((2000 - el)) 'BEGIN { print r / 1000 }')"
cont
t0=$(now_ms)
back() { all_see_up; }
wait_until 3000 back
b=$?
d=$(logs_with 11 'node 11 (n11) down')
[ $u = 0 ] && [ $b = 0 ] && [ "$d" = 0 ]
check "swim: stopped 2 s: unreachable ($ms ms), never down, up again" $? \
    "unreachable at node 0: $u; up everywhere after SIGCONT: $b ($(($(now_ms) - t0)) ms); $d nodes declared it down"
job_ok "swim: a job with a rank on the stopped node exits 0" "$CDIR/j2" $N

# ---- SIGKILL: unreachable everywhere within 1.5 s
sleep 1
t0=$(now_tod)
kill_node 5 KILL
sleep 1.6
ok=0
for o in 0 7 15; do [ "$(state_of $o 5)" = unreachable ] || ok=1; done
check "swim: 1.6 s after a SIGKILL, psstat nodes on nodes 0, 7, 15 says unreachable" $ok \
    "$(state_of 0 5) $(state_of 7 5) $(state_of 15 5)"
w=$(worst_after 5 'node 5 (n5) unreachable' "$t0")
f=$(first_after 5 'node 5 (n5) unreachable' "$t0")
echo "node 5 killed: unreachable at the first node after $f ms, at every node after $w ms"
[ "$w" -lt 1500 ]
check "swim: a SIGKILLed psid is unreachable at every other node within 1.5 s ($w ms)" $? \
    "$(logs_with 5 'node 5 (n5) unreachable') of $((N - 1)) logged it; worst $w ms"

# ---- restarted: the old incarnation down at once, the new one up
start_node 5
restarted() { [ "$(logs_with 5 'node 5 (n5) down: restarted')" = $((N - 1)) ]; }
t0=$(now_ms)
wait_until 3000 restarted
rs=$?
wait_until 3000 all_see_up
check "swim: a restarted psid is down at once (restart) and up again everywhere" $((rs + $?)) \
    "$(logs_with 5 'node 5 (n5) down: restarted') nodes saw the restart after $(($(now_ms) - t0)) ms; node 0 sees $(count_state 0 up) up"

# ---- SIGTERM: it leaves, everyone knows at once
t0=$(now_tod)
kill_node 3 TERM
left() { [ "$(logs_with 3 'node 3 (n3) down: left')" = $((N - 1)) ]; }
wait_until 3000 left
w=$(worst_after 3 'node 3 (n3) down: left' "$t0")
[ "$w" -lt 1000 ]
check "swim: a SIGTERMed psid is down (left) everywhere at once ($w ms)" $? \
    "$(logs_with 3 'node 3 (n3) down: left') of $((N - 1)) logged it; worst $w ms"

# ---- another key: dropped for the MAC, never up; junk dropped
head -c 32 /dev/urandom >"$CDIR/otherkey"
chmod 600 "$CDIR/otherkey"
sed "s|key_file = \"$CDIR/key\"|key_file = \"$CDIR/otherkey\"|" "$CDIR/psid.conf" >"$CDIR/other.conf"
start_node 3 "$CDIR/other.conf"
if ms=$(wait_state 0 3 up 1500); then
    fail "swim: a psid with another key is never up" "seen up after $ms ms"
else
    pass "swim: a psid with another key is never up"
fi
grep -q "dropped: mac: bad mac" "$CDIR/psid-0.log"
check "swim: SWIM packets under another key are dropped and logged (mac)" $? \
    "$(grep -c 'bad mac' "$CDIR/psid-0.log") lines in psid-0.log"
kill_node 3 KILL
hbport=$(sed -n 's/.*heartbeat = { mode = "swim"; port = \([0-9]*\).*/\1/p' "$CDIR/psid.conf")
printf 'junk' >/dev/udp/127.0.0.1/"$hbport"
head -c 56 /dev/zero >/dev/udp/127.0.0.1/"$hbport"
jhb() { [ "$(grep -c "heartbeat from 127.0.0.1 dropped: malformed" "$CDIR/psid-0.log")" -ge 2 ]; }
wait_until 3000 jhb
check "swim: junk on the heartbeat port is dropped and logged" $? \
    "$(grep -c "heartbeat from 127.0.0.1 dropped" "$CDIR/psid-0.log") drop lines"
[ "$(count_state 0 up)" -ge $((N - 1)) ]
check "swim: the cluster is well after all that" $? "node 0 sees $(count_state 0 up) up"

exit $((FAILS > 0))
