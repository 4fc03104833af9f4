#!/bin/bash
# psid_jobid.sh - a job id used again does not hand the old job's tasks to its new owner
# (issue: psid holds against hostile local users, point 5). A job id was once psrun's
# NODE:PID, and a recycled pid gave its new process a dead job's lingering tasks. Job ids
# are psid's numbers now, never reused while the home knows the job; this forces the
# collision anyway: root's job J has a task that ignores SIGTERM (it lingers for the kill
# delay after psrun is killed); node 0 is restarted numbering its jobs from J
# (psid --first-job), so nobody's next job is J too. Then:
#  - nobody's input to "its" job J does not reach root's lingering task;
#  - nobody's pskill --job J does not signal it;
#  - root's task is still there, its stdin untouched.
# Root only (nobody is a second uid).
# shellcheck source-path=SCRIPTDIR source=lib/cluster.sh
source "$(dirname "$0")/lib/cluster.sh"
if [ "$(id -u)" != 0 ] || ! command -v setpriv >/dev/null; then
    echo "SKIP: job id collision: needs root (a job of root and one of nobody)"
    exit 0
fi
AS_NOBODY=(setpriv --reuid=nobody --regid="$(id -g nobody)" --clear-groups)
cluster_up 2
all_up 5000 || {
    fail "job id: cluster up" "not all up"
    exit 1
}
# a long kill delay, so that root's task lingers through the rest
kill_node 0
kill_node 1
sed -i 's/kill_delay_ms = 1000;/kill_delay_ms = 60000;/' "$CDIR/psid.conf"
start_node 0
start_node 1
all_up 5000 || {
    fail "job id: cluster up again" "not all up"
    exit 1
}
export PSID_SOCKET=$CDIR/psid-0.sock
jobid() { sed -n 's/^psrun: job \(0:[0-9]*\): 1 ranks$/\1/p' "$1"; }

# root's job: a task that ignores SIGTERM and copies its stdin to a file
mkfifo "$CDIR/in"
exec 3<>"$CDIR/in" # held open: root's psrun never sees EOF on its input
"$BIN/psrun" -v -w 1 -i all -- sh -c 'trap "" TERM; echo ready; exec cat >"$0"' "$CDIR/victim" \
    <"$CDIR/in" >"$CDIR/root.out" 2>&1 &
root_psrun=$!
PIDS+=("$root_psrun")
wait_until 5000 grep -q "^ready$" "$CDIR/root.out"
J=$(jobid "$CDIR/root.out")
task=$(pgrep -x cat -P "$(pgrep -x psid-priv -P "${PIDS[1]}")")
{
    kill -KILL "$root_psrun"
    wait "$root_psrun"
} 2>/dev/null
# the home forgets the job at once; node 1 sends SIGTERM, which the task ignores
wait_line "$CDIR/psid-0.log" "job $J: its client is gone" 3000
[ -n "$J" ] && [ -n "$task" ] && kill -0 "$task" 2>/dev/null
check "job id: root's job $J lost its psrun; its task $task lingers (SIGTERM ignored)" $? \
    "job '$J' task '$task': $(cat "$CDIR/root.out")"

# node 0 again, numbering its jobs from J
kill_node 0
"$BIN/psid" -f "$CDIR/psid.conf" --node 0 --foreground --first-job "${J#0:}" >>"$CDIR/psid-0.log" 2>&1 &
PIDS[0]=$!
all_up 10000 >/dev/null
printf 'INJECTED\n' >"$CDIR/inject"
chmod 644 "$CDIR/inject"
timeout 20 "${AS_NOBODY[@]}" "$BIN/psrun" -v -w 1 -i all -- sh -c 'cat >/dev/null; echo read' \
    <"$CDIR/inject" >"$CDIR/nobody.out" 2>&1
rc=$?
[ "$rc" = 0 ] && [ "$(jobid "$CDIR/nobody.out")" = "$J" ] && grep -q "^read$" "$CDIR/nobody.out"
check "job id: nobody's next job is $J too, and reads its own input" $? \
    "rc $rc: $(cat "$CDIR/nobody.out")"
out=$(timeout 20 "${AS_NOBODY[@]}" "$BIN/pskill" -s KILL --job "$J" 2>&1)
prc=$?
[ ! -s "$CDIR/victim" ] && kill -0 "$task" 2>/dev/null && [ "$prc" -ne 0 ]
check "job id: nobody's input and pskill --job $J reach not root's task ($(head -1 <<<"$out"))" $? \
    "victim file: '$(cat "$CDIR/victim")', task alive: $(kill -0 "$task" 2>/dev/null && echo yes || echo no), pskill rc $prc"
kill -KILL "$task" 2>/dev/null
exit $((FAILS > 0))
