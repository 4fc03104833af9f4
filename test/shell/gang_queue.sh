#!/bin/bash
# gang_queue.sh - with gang scheduling, a job that fits no row of the matrix waits in the home
# node's queue and starts when a row has room (issue 32, docs/gang.md "The queue"). A 2-node
# cluster of 1 CPU per node, gang.quantum_ms 100, mpl 2: jobs A and B of a CPU-bound rank
# per node fill both rows (each would spin for 60 s; the test ends them); then
#  - one user's 17th queued spawn is refused with the reason (the queue holds 16 of one
#    user), and the 16 leave the queue when their psruns end;
#  - spawns of 920 KB each (-x of 8 variables of 115,000 bytes): 4 are queued, the 5th
#    passes the 4 MiB a user's queued spawns may hold and is refused with that reason;
#  - C (a rank per node) is queued: psrun says "job queued (place 1)"; when it has waited
#    longer than its -t 2, A is ended (its psrun gets SIGTERM): C starts then, while B still
#    runs, and exits 0 (the time limit counts from the start);
#  - D, the same with -o FILE (psrun holds the spawn for its output files and waits for the
#    answer on its own): queued too, psrun says so at once, and its output reaches the files;
#  - E is queued, then its psrun is ended (SIGTERM): its spawn leaves the queue and no rank
#    of it ever starts;
#  - psstat jobs (and --json) shows the matrix: A and B in rows 0 and 1, one running and one
#    frozen, each with its share of the quanta, and the queue (C and D, place and wait);
#  - a job larger than the nodes even alone (3 ranks on 2 CPUs) is refused at once with the
#    reason, not queued.
# Everything started is ended by pid (cluster.sh's trap); waits are bounded polls.
# shellcheck source-path=SCRIPTDIR source=lib/cluster.sh
source "$(dirname "$0")/lib/cluster.sh"
# shellcheck source-path=SCRIPTDIR source=lib/gang.sh
source "$(dirname "$0")/lib/gang.sh"
N="gang queue"
gang_cluster "$N" 1 100

gang_start "$N" A 60 "0 1"
A=$GJOB
gang_start "$N" B 60 "0 1"
B=$GJOB

queued() { grep -q "psrun: job queued (place $2): gang scheduling: it fits no row" "$CDIR/$1.out"; }
gone() { [ "$(grep -c 'left the queue: its client is gone' "$CDIR/psid-0.log")" -ge "$1" ]; }

# fill K WHAT REASON GONE [PSRUN ARGS...]: K psruns of one user (-N 2 ARGS -- true) are
# queued, the next is refused with REASON (a grep pattern), and the K leave the queue when
# their psruns end (GONE: psid's count of spawns that left the queue then)
fill() {
    local k=$1 what=$2 reason=$3 left=$4 i p out rc ps=()
    shift 4
    rm -f "$CDIR"/fill*.out
    for i in $(seq "$k"); do
        "$BIN/psrun" -N 2 "$@" -- true >"$CDIR/fill$i.out" 2>&1 &
        ps+=($!)
        STRAY+=($!)
    done
    nq() { cat "$CDIR"/fill*.out 2>/dev/null | grep -c 'psrun: job queued'; }
    wait_until 10000 eval "[ \"\$(nq)\" = $k ]"
    check "$N: $k spawns$what of one user queued" $? "$(nq) queued"
    out=$(timeout 10 "$BIN/psrun" -N 2 "$@" -- true 2>&1)
    rc=$?
    [ $rc -ne 0 ] && grep -q "$reason" <<<"$out"
    check "$N: a user's next queued spawn$what is refused with the reason" $? "rc $rc: $out"
    for p in "${ps[@]}"; do kill -TERM "$p" 2>/dev/null; done
    for p in "${ps[@]}"; do wait "$p" 2>/dev/null; done
    wait_until 5000 gone "$left"
    check "$N: the $k psruns ended while queued: their spawns left the queue" $? \
        "$(grep -c 'left the queue' "$CDIR/psid-0.log") in psid's log"
}
# a user's 17th: refused
fill 16 "" "the queue is full (256 spawns on this node, 16 of one user)" 16
# the bytes a user's queued spawns hold: 4 of 920 KB fit its 4 MiB, the 5th does not
big=$(head -c 115000 /dev/zero | tr '\0' x)
xs=()
for i in $(seq 8); do xs+=(-x "BIG$i=$big"); done
fill 4 " of 920 KB" "the queue has no room for its 9[0-9]* bytes (.* left of the 4 MiB of one user, 32 MiB on this node)" \
    20 "${xs[@]}"

# C: queued behind the two rows
"$BIN/psrun" -N 2 -t 2 -- sh -c 'date +%s%3N; sleep 1' >"$CDIR/C.out" 2>&1 &
C=$!
STRAY+=("$C")
wait_until 5000 queued C 1
c_queued=$(now_ms)
check "$N: a job that fits no row is queued, psrun says so (place 1)" $? "$(cat "$CDIR/C.out")"
# D: the same with an output file (the held spawn's own wait for the answer)
"$BIN/psrun" -N 2 -o "$CDIR/D.%t" -- echo d-ran >"$CDIR/D.out" 2>&1 &
D=$!
STRAY+=("$D")
wait_until 5000 queued D 2
check "$N: a held spawn (-o FILE) is queued too, psrun says so at once (place 2)" $? \
    "$(cat "$CDIR/D.out")"
# E: queued, then its psrun ends: it leaves the queue
"$BIN/psrun" -N 2 -- sh -c "touch $CDIR/E.ran" >"$CDIR/E.out" 2>&1 &
E=$!
STRAY+=("$E")
wait_until 5000 queued E 3
check "$N: a third queued spawn is at place 3" $? "$(cat "$CDIR/E.out")"
kill -TERM "$E"
wait "$E" 2>/dev/null
wait_until 5000 gone 21
check "$N: ... its psrun ended: it left the queue" $? ""
# psstat jobs shows the matrix: A and B in rows 0 and 1, one running, one frozen, each with
# its share of the quanta so far, and this node's queue (C and D)
"$BIN/psstat" jobs >"$CDIR/st.txt" 2>&1
"$BIN/psstat" --json jobs >"$CDIR/st.json" 2>&1
python3 - "$CDIR/st.json" >"$CDIR/st.check" 2>&1 <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
g = d["gang"]
assert g["quantum_ms"] == 100 and g["rows"] == 2 and g["scheduler"] == 0, g
run = [j for j in d["jobs"] if "row" in j]
assert sorted(j["row"] for j in run) == [0, 1], run
assert sorted(j["state"] for j in run) == ["frozen", "running"], run
assert all(20 <= j["share_pct"] <= 80 for j in run), run
q = [j for j in d["jobs"] if j.get("state") == "queued"]
assert [j["queued"] for j in q] == [1, 2] and all(j["tasks"] == 2 for j in q), q
print("ok")
PY
grep -q "^gang scheduling: quantum 100 ms, 2 rows" "$CDIR/st.txt" && grep -q "^ok$" "$CDIR/st.check" &&
    grep -q "^(queued 2) .* queued " "$CDIR/st.txt"
check "$N: psstat jobs shows the matrix (rows, states, shares) and the queue, --json too" $? \
    "$(cat "$CDIR/st.txt" "$CDIR/st.check")"
# too large even alone: refused at once
out=$(timeout 10 "$BIN/psrun" -n 3 -- true 2>&1)
rc=$?
[ $rc -ne 0 ] && grep -q "does not fit the nodes even alone" <<<"$out" && ! grep -q queued <<<"$out"
check "$N: a job larger than the nodes even alone is refused at once" $? "rc $rc: $out"

# C starts when A ends, while B runs; D after it. C waits past its -t 2 first.
wait_until 5000 eval "[ \$((\$(now_ms) - $c_queued)) -ge 2500 ]"
! grep -q '^[0-9]' "$CDIR/C.out"
check "$N: C has not started while both rows are taken" $? "$(cat "$CDIR/C.out")"
kill -TERM "$A"
wait_until 10000 eval '! kill -0 "$A" 2>/dev/null'
check "$N: job A ends (its psrun got SIGTERM)" $? "psrun $A still runs"
wait "$A" 2>/dev/null
wait_until 5000 eval "grep -q '^[0-9]' $CDIR/C.out"
c_start=$(grep -m1 '^[0-9]' "$CDIR/C.out")
a_end=$(cat "$CDIR/A.0" "$CDIR/A.1" | sort -n | tail -1)
[ -n "$c_start" ] && [ "$c_start" -ge "$a_end" ] && [ $((c_start - a_end)) -lt 2000 ]
check "$N: C starts when A's row empties ($((${c_start:-0} - a_end)) ms after A's last progress)" \
    $? "C $c_start, A's last $a_end: $(cat "$CDIR/C.out")"
wait "$C"
rc=$?
[ $rc = 0 ] && ! grep -q "time limit" "$CDIR/C.out"
check "$N: C exits 0: its -t 2 counts from its start, not from the queue (rc $rc)" $? \
    "$(cat "$CDIR/C.out")"
wait_until 15000 eval '! kill -0 "$D" 2>/dev/null'
wait "$D"
rc=$?
[ $rc = 0 ] && grep -qx d-ran "$CDIR/D.0" && grep -qx d-ran "$CDIR/D.1"
check "$N: the held job D starts after C and writes its files (rc $rc)" $? "$(cat "$CDIR/D.out")"
[ ! -e "$CDIR/E.ran" ]
check "$N: the spawn whose psrun ended while queued never started" $? ""
grep -q "spawn of uid .* queued (place 1)" "$CDIR/psid-0.log" &&
    grep -q "a queued spawn of uid .* left the queue after" "$CDIR/psid-0.log"
check "$N: psid logs the queue" $? "$(grep -i queue "$CDIR/psid-0.log" | head -5)"
kill -TERM "$B"
wait "$B" 2>/dev/null
# B made progress after C started (B may be frozen the moment C starts: its last stamp then
# is older; its last of all is not)
b_end=$(cat "$CDIR/B.0" "$CDIR/B.1" | sort -n | tail -1)
[ -n "$c_start" ] && [ -n "$b_end" ] && [ "$c_start" -lt "$b_end" ]
check "$N: C started while B ran" $? "C $c_start, B's last $b_end"
exit 0
