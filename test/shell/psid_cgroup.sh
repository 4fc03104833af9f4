#!/bin/bash
# psid_cgroup.sh - a psid that dies does not leave jobs unseen, and a job's end ends every
# process of it (issue: psid holds against hostile local users, point 7). Each job's tasks
# on a node are in a cgroup v2 directory under psid's own cgroup (psid/cgroup.c):
#  - a daemon a task started with setsid (out of its process group) is killed when the
#    job ends normally;
#  - when psrun is killed, the tasks and such a daemon are gone within the kill delay;
#  - `kill -9` of a node's whole psid (engine and privileged child) leaves its tasks
#    running; the psid started after it kills them at once and says so;
#  - a psid stopped cleanly removes its cgroup directory.
# Needs a writable cgroup2 hierarchy (root); skipped with the reason psid logs otherwise.
# Every process the checks start is ended by pid (a killed psid's tasks, too, by cluster.sh).
# shellcheck source-path=SCRIPTDIR source=lib/cluster.sh
source "$(dirname "$0")/lib/cluster.sh"
cluster_up 2
all_up 5000 || {
    fail "cgroup: cluster up" "not all up"
    exit 1
}
export PSID_SOCKET=$CDIR/psid-0.sock
base=$(sed -n "s/.*each job's tasks in a cgroup under //p" "$CDIR/psid-1.log")
if [ -z "$base" ]; then
    echo "SKIP: cgroup: $(grep -ho "tasks are tracked by process group only.*" "$CDIR/psid-1.log")"
    exit 0
fi
# bg_job OUT DAEMON_SECS TASK_SECS: psrun of 2 ranks on node 1 in the background, each rank
# starting a setsid daemon and printing its own pid and the daemon's; sets JOB (psrun's
# pid) and P (the 4 pids, once printed)
bg_job() {
    "$BIN/psrun" -w 1 -n 2 -- sh -c "setsid sleep $2 </dev/null >/dev/null 2>&1 & echo \"pid \$!\"; echo \"pid \$\$\"; exec sleep $3" \
        >"$1" 2>&1 &
    JOB=$!
    local bg_out=$1 # seen by the eval inside wait_until (bash's locals are dynamic)
    wait_until 5000 eval '[ "$(pids_in "$bg_out" | wc -w)" -ge 4 ]'
    read -ra P <<<"$(pids_in "$bg_out")"
    STRAY+=("${P[@]}")
}

# 1. a normal end: what the task left behind goes with it
timeout 20 "$BIN/psrun" -w 1 -- sh -c 'setsid sleep 300 </dev/null >/dev/null 2>&1 & echo "pid $!"' \
    >"$CDIR/o1" 2>&1
rc=$?
read -ra P <<<"$(pids_in "$CDIR/o1")"
STRAY+=("${P[@]}")
[ "$rc" -eq 0 ] && [ ${#P[@]} -eq 1 ] && wait_until 3000 procs_gone "${P[@]}"
check "cgroup: a daemon a task started with setsid is killed when the job ends" $? \
    "rc $rc, pids ${P[*]}: $(head -c 300 "$CDIR/o1")"

# 2. psrun killed: the tasks, and what escaped their process groups, within the kill delay
bg_job "$CDIR/o2" 301 302
{
    kill -KILL "$JOB"
    wait "$JOB"
} 2>/dev/null
t0=$(now_ms)
[ ${#P[@]} -eq 4 ] && wait_until 4000 procs_gone "${P[@]}"
check "cgroup: psrun killed: 2 tasks and their 2 setsid daemons gone ($(($(now_ms) - t0)) ms, kill delay 1000)" $? \
    "pids ${P[*]}, alive: $(for p in "${P[@]}"; do kill -0 "$p" 2>/dev/null && echo "$p"; done)"

# 3. kill -9 of psid-1: its tasks live on; its successor kills them at once
bg_job "$CDIR/o3" 303 304
# the whole psid at once, engine and privileged child (as the OOM killer or a kill of the
# process group would): nobody is left to end the tasks (a lone engine's end, the child
# handles: psid_privsep.sh)
kill -KILL "$(pgrep -P "${PIDS[1]}" -x psid-priv)" "${PIDS[1]}" 2>/dev/null
wait "${PIDS[1]}" 2>/dev/null
PIDS[1]=
alive=0
for p in "${P[@]}"; do kill -0 "$p" 2>/dev/null && alive=$((alive + 1)); done
t0=$(now_ms)
start_node 1
[ "$alive" -eq 4 ] && wait_until 5000 procs_gone "${P[@]}" &&
    wait_line "$CDIR/psid-1.log" "4 processes of job-0-[0-9]*, left by a psid before this one, killed" 2000
check "cgroup: kill -9 of psid-1 and its child left 4 processes of a job; the next psid-1 killed them ($(($(now_ms) - t0)) ms)" $? \
    "alive after the kill: $alive of ${P[*]}; $(grep -h "left by" "$CDIR/psid-1.log")"
wait_until 20000 eval '! kill -0 "$JOB" 2>/dev/null' # psrun hears that node 1 was lost
check "cgroup: and the job's psrun ends" $? "psrun $JOB still running"
all_up 10000 >/dev/null

# 4. a clean stop removes the directory
kill_node 1 TERM
wait_until 3000 eval '[ ! -d "$base" ]'
check "cgroup: psid stopped with SIGTERM removes its cgroup $base" $? "$(ls "$base" 2>&1 | head -3)"
exit $((FAILS > 0))
