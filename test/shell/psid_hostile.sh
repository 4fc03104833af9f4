#!/bin/bash
# psid_hostile.sh - psid against clients that misbehave (issue: psid holds against hostile
# local users). The daemons are the ASan/UBSan build (build/san/bin/psid) where it exists,
# so that a use after free or a double free is caught where it happens, not by luck.
#  1. No callback frees what its caller still holds:
#     - a watcher that registered a death notification and then shut its reading side
#       (psid's send to it fails with EPIPE) while the task dies: on the task's own node
#       and on another node;
#     - 100 watchers of one task, each closing, shutting its reading side or reading at a
#       random moment while the task dies; every reader hears of the death;
#     - 40 jobs whose clients close or stop reading at random moments while their ranks
#       print and exit; every reader sees all its ranks end;
#     - watchers and jobs on a node that is lost, at random moments.
#     After each: every psid is alive, answers, and its log has no sanitizer report.
#  2. A forged ICMP port unreachable (no key needed) for node 0's RDP traffic to node 1,
#     sent during a 2-node job (root: a raw socket): the job exits 0, no node is lost.
# The random choices take a seed, printed with each check, to reproduce a failure.
# shellcheck source-path=SCRIPTDIR source=lib/cluster.sh
source "$(dirname "$0")/lib/cluster.sh"
JD=$TOP/build/test/tools/jobdrive
CS=$TOP/build/test/tools/clientstorm
if [ -x "$TOP/build/san/bin/psid" ]; then
    PSID_BIN=$TOP/build/san/bin/psid
    export ASAN_OPTIONS=abort_on_error=1:detect_leaks=0 UBSAN_OPTIONS=halt_on_error=1
else
    echo "note: build/san/bin/psid not built; running the plain psid"
fi
cluster_up 2
all_up 5000 || {
    fail "hostile: cluster up" "not all up"
    exit 1
}
export PSID_SOCKET=$CDIR/psid-0.sock JOBDRIVE_OVERBOOK=1

# healthy NODE...: each daemon is running, answers psstat, and logged no sanitizer report
healthy() {
    local i
    for i in "$@"; do
        [ -n "${PIDS[$i]}" ] && kill -0 "${PIDS[$i]}" 2>/dev/null || return 1
        PSID_SOCKET=$CDIR/psid-$i.sock timeout 5 "$BIN/psstat" nodes >/dev/null 2>&1 || return 1
        ! grep -qE "AddressSanitizer|runtime error|double free|corrupted" "$CDIR/psid-$i.log" ||
            return 1
    done
}
# revive: restart a daemon that died in an earlier check, so that each check stands alone
revive() {
    local i
    for i in 0 1; do
        [ -n "${PIDS[$i]}" ] && kill -0 "${PIDS[$i]}" 2>/dev/null && continue
        echo "note: psid-$i is gone; restarting it"
        mv "$CDIR/psid-$i.log" "$CDIR/psid-$i.log.died.$(now_ms)"
        start_node "$i"
    done
    all_up 5000
}
why_not() { # the end of each log, for a failure message
    local i
    for i in "$@"; do echo "psid-$i: $(tail -c 1500 "$CDIR/psid-$i.log")"; done
}
# start_job NAME NP SECONDS: jobdrive with NP ranks of sleep in the background; waits for all
start_job() {
    "$JD" run "$2" sleep "$3" >"$CDIR/$1.out" &
    PIDS+=($!)
    wait_until 5000 lines_are "$CDIR/$1.out" started "$2"
}
lines_are() { [ "$(grep -c "$2" "$1")" = "$3" ]; } # lines_are FILE PATTERN COUNT
# tid_on JOB NODE: the task id of a rank of JOB on NODE (empty if none)
tid_on() {
    sed -n "s/^rank [0-9]* started \([0-9]*:[0-9]*\) on node $2$/\1/p" "$CDIR/$1.out" | head -1
}

# 1a. the reproduction of the issue, with the task on node 1 and then on node 0
for node in 1 0; do
    JOBDRIVE_NODES=$node start_job "j$node" 1 60 || fail "hostile 1: job up" "$(cat "$CDIR/j$node.out")"
    tid=$(tid_on "j$node" "$node")
    [ -n "$tid" ] || {
        fail "hostile 1: a rank on node $node" "$(cat "$CDIR/j$node.out")"
        continue
    }
    "$CS" deaf "$tid" >"$CDIR/deaf$node.out" 2>&1 &
    DEAF=$!
    PIDS+=("$DEAF")
    wait_line "$CDIR/deaf$node.out" "^deaf" 3000
    grep -q "^registered 0" "$CDIR/deaf$node.out"
    reg=$?
    "$JD" signal "$tid" 9 >/dev/null
    # the task's exit reached its job's client, so the notification went out too
    wait_line "$CDIR/j$node.out" "^rank 0 exit 9$" 3000
    ended=$?
    [ "$reg" = 0 ] && [ "$ended" = 0 ] && wait_until 1000 healthy 0 1
    check "hostile 1: a watcher that shut its reading side, task on node $node dies" $? \
        "registered: $(cat "$CDIR/deaf$node.out"); $(why_not 0 1)"
    kill "$DEAF" 2>/dev/null
done

# 1b. 100 watchers of one task, random fates, while it dies (on the other node, then local)
for node in 1 0; do
    revive
    seed=$RANDOM
    JOBDRIVE_NODES=$node start_job "w$node" 1 60 || fail "hostile 1: job up" "$(cat "$CDIR/w$node.out")"
    tid=$(tid_on "w$node" "$node")
    "$CS" watchers "$tid" 100 1500 "$seed" >"$CDIR/ws$node.out" 2>&1 &
    CSP=$!
    PIDS+=("$CSP")
    wait_line "$CDIR/ws$node.out" "^registered" 5000
    sleep 0.$((RANDOM % 5)) # somewhere among the random closes
    "$JD" signal "$tid" 15 >/dev/null
    wait_until 12000 grep -q "^readers" "$CDIR/ws$node.out"
    read -r _ readers _ heard _ _ < <(grep "^readers" "$CDIR/ws$node.out")
    grep -q "^registered 100$" "$CDIR/ws$node.out" && [ -n "${readers:-}" ] &&
        [ "$readers" = "$heard" ] && healthy 0 1
    check "hostile 1: 100 watchers closing at random while task $tid dies (seed $seed)" $? \
        "$(cat "$CDIR/ws$node.out"); $(why_not 0 1)"
    kill "$CSP" 2>/dev/null
done

# 1c. 40 jobs of 4 ranks whose clients close or stop reading at random while ranks exit
revive
seed=$RANDOM
"$CS" jobs 40 4 4000 "$seed" sh -c 'echo out; echo err >&2; exit 3' >"$CDIR/jobs.out" 2>&1
read -r _ _ _ spawned _ readers _ complete < <(grep "^jobs" "$CDIR/jobs.out")
[ "${spawned:-}" = 40 ] && [ "${readers:-x}" = "${complete:-y}" ] && healthy 0 1
check "hostile 1: 40 jobs whose clients go away at random while ranks exit (seed $seed)" $? \
    "$(cat "$CDIR/jobs.out"); $(why_not 0 1)"

# 1d. node 1 is lost while node 0's clients watch its tasks and run jobs on it, closing at
# random; every reader hears "lost"
revive
seed=$RANDOM
JOBDRIVE_NODES=1 start_job lost 2 60 || fail "hostile 1: job up" "$(cat "$CDIR/lost.out")"
tid=$(tid_on lost 1)
"$CS" watchers "${tid:-1:1}" 100 3000 "$seed" >"$CDIR/wl.out" 2>&1 &
PIDS+=($!)
"$CS" jobs 20 2 3000 "$seed" sleep 60 >"$CDIR/jl.out" 2>&1 &
PIDS+=($!)
wait_line "$CDIR/wl.out" "^registered" 5000
sleep 0.$((RANDOM % 5))
kill_node 1 KILL
wait_until 12000 grep -q "^readers" "$CDIR/wl.out"
read -r _ readers _ heard _ lost < <(grep "^readers" "$CDIR/wl.out")
[ -n "$tid" ] && grep -q "^registered 100$" "$CDIR/wl.out" && [ -n "${readers:-}" ] &&
    [ "$readers" = "$heard" ] && [ "$heard" = "$lost" ] && healthy 0
check "hostile 1: 100 watchers closing at random while their task's node is lost (seed $seed)" \
    $? "$(cat "$CDIR/wl.out"); job: $(cat "$CDIR/lost.out"); $(why_not 0)"
wait_until 12000 grep -q "^jobs" "$CDIR/jl.out" && healthy 0
check "hostile 1: 20 jobs whose clients go away at random while a node is lost (seed $seed)" \
    $? "$(cat "$CDIR/jl.out"); $(why_not 0)"

# 2. a forged ICMP error during a job (the review's packet): a hint only
revive
if [ "$(id -u)" = 0 ]; then
    rdpport=$(sed -n 's/.*rdp = { port = \([0-9]*\).*/\1/p' "$CDIR/psid.conf")
    log0=$(wc -l <"$CDIR/psid-0.log") # what the earlier checks logged is not this one's
    "$BIN/psrun" -n 2 -w 0-1 --ppn 1 -l sh -c 'echo ready; sleep 1.5; echo done' \
        >"$CDIR/icmp.out" 2>&1 </dev/null &
    RUN=$!
    PIDS+=("$RUN")
    wait_until 5000 lines_are "$CDIR/icmp.out" ': ready$' 2
    "$TOP/build/test/tools/icmpforge" 127.0.0.1 "$rdpport" 127.0.0.2 "$rdpport" 127.0.0.1
    sent=$?
    wait "$RUN" # bounded: the ranks end after 1.5 s, or the test's time limit ends psrun
    rc=$?
    [ "$sent" = 0 ] && [ "$rc" = 0 ] && [ "$(grep -c ': done$' "$CDIR/icmp.out")" = 2 ] &&
        ! grep -q "lost" "$CDIR/icmp.out" &&
        ! tail -n +$((log0 + 1)) "$CDIR/psid-0.log" | grep -q "lost\|down"
    check "hostile 2: a forged ICMP port unreachable during a job: exit 0, nothing lost" $? \
        "sent $sent, exit $rc: $(tr '\n' ' ' <"$CDIR/icmp.out"); $(tail -n +$((log0 + 1)) "$CDIR/psid-0.log" | grep "lost\|down" | tail -2)"
else
    echo "SKIP: hostile 2: a forged ICMP error (needs root for a raw socket)"
fi
exit $((FAILS > 0))
