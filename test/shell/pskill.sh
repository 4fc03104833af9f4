#!/bin/bash
# pskill.sh - pskill and `psstat tasks` on a 4-node loopback cluster:
#  - psstat tasks lists a running job's ranks (task id, job, rank, user, state, command),
#    also as JSON;
#  - pskill NODE:PID ends a task on another node (psrun reports it), by node id and by
#    node name, -SIG and -s SIG; the same task again: "No such process", exit 1;
#  - pskill --job reaches every rank (each prints that it got SIGUSR1);
#  - another user gets EPERM ("Operation not permitted");
#  - bad input: an invalid signal or a bad task id: exit 2; a node not in the cluster: exit 1.
# shellcheck source-path=SCRIPTDIR source=lib/cluster.sh
source "$(dirname "$0")/lib/cluster.sh"

PSRUN=$BIN/psrun
PSKILL=$BIN/pskill
PSSTAT=$BIN/psstat
[ -x "$PSKILL" ] && [ -x "$PSRUN" ] || {
    echo "SKIP: pskill: not built"
    exit 0
}
ranks_up() { [ "$(grep -c 'task [0-9]*:' "$1")" -ge "$2" ]; }
tid_of() { grep -o "rank $2: node .*, task [0-9]*:[0-9]*" "$1" | sed 's/.*task //'; }

cluster_up 4
if ! all_up 5000; then
    fail "pskill: cluster up" "not all nodes up after 5 s"
    exit 1
fi
export PSID_SOCKET=$CDIR/psid-0.sock

# a job of 4 ranks, one per node, that report SIGUSR1 and otherwise wait
"$PSRUN" -t 60 -v -l -n 4 --ppn 1 sh -c \
    'trap "echo got USR1" USR1; while :; do sleep 0.05; done' >"$CDIR/job" 2>&1 </dev/null &
JP=$!
PIDS+=("$JP")
if ! wait_until 5000 ranks_up "$CDIR/job" 4; then
    fail "pskill: job started" "$(cat "$CDIR/job")"
    exit 1
fi
# the job's id: psid's number, not psrun's pid (psrun -v says it)
JOB=$(sed -n 's/^psrun: job \([0-9]*:[0-9]*\): 4 ranks$/\1/p' "$CDIR/job")
[ -n "$JOB" ] && [ "$JOB" != "0:$JP" ]
check "the job's id is psid's, not psrun's task id" $? "job '$JOB', psrun 0:$JP: $(head -3 "$CDIR/job")"

# ---- psstat tasks
out=$("$PSSTAT" tasks)
n=$(grep -cE "^[0-3]:[0-9]+ +$JOB +[0-3] +root +running +sh +sh$" <<<"$out")
[ "$n" -eq 4 ] && head -1 <<<"$out" | grep -q "^TID *JOB *RANK *USER *STATE *NAME *COMMAND"
check "psstat tasks: the job's 4 ranks" $? "$out"
json=$("$PSSTAT" --json tasks)
n=$(grep -o "\"job\":\"$JOB\",\"rank\":[0-3],\"uid\":0,\"user\":\"root\",\"state\":\"running\",\"name\":\"sh\",\"command\":\"sh\"" <<<"$json" | wc -l)
[ "$n" -eq 4 ] && jq empty <<<"$json" 2>/dev/null
check "psstat --json tasks" $? "$json"

# ---- pskill --job: every rank
"$PSKILL" -s USR1 --job "$JOB"
rc=$?
wait_until 3000 eval '[ "$(grep -c "got USR1" "$CDIR/job")" -ge 4 ]'
got=$(grep "got USR1" "$CDIR/job" | sort | tr '\n' ' ')
[ $rc -eq 0 ] && [ "$got" = "0: got USR1 1: got USR1 2: got USR1 3: got USR1 " ]
check "pskill --job reaches every rank" $? "rc=$rc got: $got"

# ---- pskill one remote task, by node id
tid2=$(tid_of "$CDIR/job" 2)
node2=${tid2%%:*}
pid2=${tid2##*:}
"$PSKILL" "$tid2"
rc=$?
wait_until 3000 grep -q "rank 2 (node n$node2, task $tid2): killed by signal 15 (SIGTERM)" "$CDIR/job"
ok=$?
[ $rc -eq 0 ] && [ $ok -eq 0 ] && ! kill -0 "$pid2" 2>/dev/null
check "pskill NODE:PID ends a task on another node" $? "rc=$rc tid=$tid2: $(cat "$CDIR/job")"

out=$("$PSKILL" "$tid2" 2>&1)
rc=$?
[ $rc -eq 1 ] && [ "$out" = "pskill: $tid2: No such process" ]
check "pskill: the same task again -> No such process, exit 1" $? "rc=$rc: $out"

# ---- by node name, with -SIG; and EPERM for another user
tid3=$(tid_of "$CDIR/job" 3)
name3=n${tid3%%:*}
if command -v setpriv >/dev/null && [ "$(id -u)" = 0 ]; then
    out=$(setpriv --reuid=65534 --regid=65534 --clear-groups "$PSKILL" -KILL "$name3:${tid3##*:}" 2>&1)
    rc=$?
    [ $rc -eq 1 ] && [ "$out" = "pskill: $name3:${tid3##*:}: Operation not permitted" ]
    check "pskill: another user's task -> Operation not permitted" $? "rc=$rc: $out"
else
    echo "SKIP: pskill: EPERM (needs root and setpriv)"
fi
"$PSKILL" -KILL "$name3:${tid3##*:}"
rc=$?
wait_until 3000 grep -q "rank 3 (node $name3, task $tid3): killed by signal 9 (SIGKILL)" "$CDIR/job"
ok=$?
[ $rc -eq 0 ] && [ $ok -eq 0 ]
check "pskill -KILL NAME:PID" $? "rc=$rc tid=$tid3: $(cat "$CDIR/job")"

tid1=$(tid_of "$CDIR/job" 1)
"$PSKILL" -s INT "$tid1"
rc=$?
wait_until 3000 grep -q "rank 1 (node n[0-3], task $tid1): killed by signal 2 (SIGINT)" "$CDIR/job"
ok=$?
[ $rc -eq 0 ] && [ $ok -eq 0 ]
check "pskill -s INT" $? "rc=$rc: $(cat "$CDIR/job")"

# ---- the rest of the job, and then the job is gone
"$PSKILL" --job "$JOB"
rc=$?
wait "$JP"
jrc=$?
out=$("$PSKILL" --job "$JOB" 2>&1)
rc2=$?
[ $rc -eq 0 ] && [ $jrc -eq 143 ] && [ $rc2 -eq 1 ] && [ "$out" = "pskill: job $JOB: No such process" ]
check "pskill --job: the rest; psrun exits with the first failure; then ESRCH" $? \
    "rc=$rc psrun=$jrc then rc=$rc2 '$out'"
out=$("$PSSTAT" tasks 2>&1)
rc=$?
[ $rc -eq 0 ] && head -1 <<<"$out" | grep -q "^TID" && [ -z "$(tail -n +2 <<<"$out")" ]
check "psstat tasks: empty after the job" $? "rc=$rc: $out"

# ---- bad input
out=$("$PSKILL" -s BOGUS 1:1 2>&1)
[ $? -eq 2 ] && grep -q "BOGUS: invalid signal" <<<"$out"
check "bad input: pskill -s BOGUS -> exit 2" $? "$out"
out=$("$PSKILL" -NOPE 1:1 2>&1)
[ $? -eq 2 ] && grep -q "NOPE: invalid signal" <<<"$out"
check "bad input: pskill -NOPE -> exit 2" $? "$out"
out=$("$PSKILL" 2>&1)
[ $? -eq 2 ] && grep -q "usage" <<<"$out"
check "bad input: pskill without a task id -> usage, exit 2" $? "$out"
out=$("$PSKILL" n9:100 2>&1)
[ $? -eq 1 ] && [ "$out" = "pskill: n9:100: no node 'n9' in the cluster" ]
check "bad input: unknown node -> message, exit 1" $? "$out"
# a malformed task id is a bad command line: named, usage, exit 2, and nothing sent, not
# even to the well-formed one before it (rank 1 is gone: a signal would be "No such process")
out=$("$PSKILL" "$tid1" 1:x 2>&1)
rc=$?
[ $rc -eq 2 ] && [ "$(head -1 <<<"$out")" = "pskill: 1:x: not a task id (NODE:PID)" ] &&
    grep -q "^usage: pskill" <<<"$out" && ! grep -q "No such process" <<<"$out"
check "bad input: malformed task id -> named, usage, exit 2, nothing sent" $? "rc=$rc: $out"
out=$("$PSKILL" --job x: 2>&1)
rc=$?
[ $rc -eq 2 ] && [ "$(head -1 <<<"$out")" = "pskill: job x:: not a task id (NODE:PID)" ]
check "bad input: malformed job id -> exit 2" $? "rc=$rc: $out"
out=$("$PSKILL" -l 9)
[ "$out" = KILL ] && [ "$("$PSKILL" -l TERM)" = 15 ]
check "pskill -l" $? "$out"
out=$("$PSSTAT" bogus 2>&1)
[ $? -eq 2 ] && grep -q "nodes|tasks" <<<"$out"
check "bad input: psstat bogus -> usage, exit 2" $? "$out"

exit $((FAILS > 0))
