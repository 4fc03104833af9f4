#!/bin/bash
# psid_privsep.sh - psid's privilege separation (groundwork issue, section 3; privsep.h):
#  - the engine (psid's pid, which parses the network and the clients) runs as psid.user,
#    with no capability, no_new_privs and a seccomp filter (issue 29, point 3); its
#    privileged child runs as root and is titled "psid-N[priv]";
#  - tasks still start as their users: nobody's as nobody, root's as root;
#  - the privileged child is the subreaper of the tasks: their orphans become its own;
#  - psid.root_jobs = false: root's job is refused with the reason, nobody's runs;
#  - the privileged child killed: the engine says so and stops (exit 1);
#  - the engine killed: the privileged child kills the tasks and ends;
#  - a psid.user that does not exist: psid exits 1 at start, naming it and the fix.
# Root only (the split changes identity only when psid starts as root).
# shellcheck source-path=SCRIPTDIR source=lib/cluster.sh
source "$(dirname "$0")/lib/cluster.sh"
if [ "$(id -u)" != 0 ] || ! command -v setpriv >/dev/null; then
    echo "SKIP: privsep: needs root (psid splits its identity only when started as root)"
    exit 0
fi
if ! getent passwd pscluster >/dev/null; then
    fail "privsep: the user pscluster exists" "make check's install-deps.sh adds it"
    exit 1
fi
AS_NOBODY=(setpriv --reuid=nobody --regid="$(id -g nobody)" --clear-groups)
PSCLUSTER_UID=$(id -u pscluster)
# the privileged child of an engine pid
priv_of() { pgrep -P "$1" -x psid-priv; }
status_field() { awk -v k="$2:" '$1 == k { print $2 }' "/proc/$1/status"; }

cluster_up 2
all_up 5000 || {
    fail "privsep: cluster up" "not all up"
    exit 1
}
export PSID_SOCKET=$CDIR/psid-0.sock
eng=${PIDS[0]}
priv=$(priv_of "$eng")
[ "$(status_field "$eng" Uid)" = "$PSCLUSTER_UID" ] && [ "$(status_field "$eng" CapEff)" = 0000000000000000 ] &&
    [ "$(status_field "$eng" NoNewPrivs)" = 1 ] && [ "$(status_field "$eng" Seccomp)" = 2 ] &&
    [ -n "$priv" ] && [ "$(status_field "$priv" Uid)" = 0 ] &&
    [ "$(tr '\0' ' ' <"/proc/$priv/cmdline" | sed 's/ *$//')" = "psid-0[priv]" ]
check "privsep: the engine (pid $eng) runs as pscluster without capabilities, no_new_privs and a seccomp filter; its child $priv as root, titled psid-0[priv]" $? \
    "engine uid $(status_field "$eng" Uid) caps $(status_field "$eng" CapEff) nnp $(status_field "$eng" NoNewPrivs) seccomp $(status_field "$eng" Seccomp); child '$priv'"

out=$(timeout 20 "${AS_NOBODY[@]}" "$BIN/psrun" -n 2 -- id -un 2>&1)
[ "$(sort -u <<<"$out")" = nobody ]
check "privsep: nobody's 2 ranks run as nobody" $? "$out"
out=$(timeout 20 "$BIN/psrun" -n 2 -- id -u 2>&1)
[ "$(sort -u <<<"$out")" = 0 ]
check "privsep: root's 2 ranks run as root" $? "$out"

# the subreaper: what a task leaves behind is the privileged child's, not init's
"$BIN/psrun" -w 0 -- sh -c '(setsid sleep 310 </dev/null >/dev/null 2>&1 &); sleep 3' >"$CDIR/job0" 2>&1 &
job=$!
wait_until 5000 eval '[ -n "$(pgrep -f "^sleep 310$")" ]'
orphan=$(pgrep -f "^sleep 310$")
ppid=$(status_field "$orphan" PPid)
[ -n "$orphan" ] && [ "$ppid" = "$(priv_of "$eng")" ]
check "privsep: an orphan a task left (pid $orphan) is the privileged child's ($ppid)" $? \
    "orphan '$orphan' ppid '$ppid', child $(priv_of "$eng")"
wait_until 10000 eval '! kill -0 "$job" 2>/dev/null' || fail "privsep: the subreaper job ends" "still running"
{
    kill -KILL "$job"
    wait "$job"
} 2>/dev/null

# the privileged child killed: the engine stops, saying why
job_out=$CDIR/job1
"${AS_NOBODY[@]}" "$BIN/psrun" -w 1 -- sleep 300 >"$job_out" 2>&1 &
job=$!
wait_until 5000 eval '[ -n "$(pgrep -u nobody -x sleep -P "$(priv_of "${PIDS[1]}")")" ]'
kill -KILL "$(priv_of "${PIDS[1]}")"
wait_until 5000 eval '! kill -0 "${PIDS[1]}" 2>/dev/null'
wait "${PIDS[1]}"
rc=$?
PIDS[1]=
[ "$rc" = 1 ] && grep -q "the privileged child is gone" "$CDIR/psid-1.log"
check "privsep: the privileged child killed: the engine stops with exit 1 and says why" $? \
    "rc $rc: $(tail -3 "$CDIR/psid-1.log")"
start_node 1 # its successor sweeps the orphaned task (cgroup.c)
all_up 10000 >/dev/null
wait_until 20000 eval '! kill -0 "$job" 2>/dev/null'

# the engine killed: the privileged child kills the tasks and ends
"${AS_NOBODY[@]}" "$BIN/psrun" -w 1 -- sleep 301 >"$CDIR/job2" 2>&1 &
job=$!
wait_until 5000 eval '[ -n "$(pgrep -u nobody -f "^sleep 301$")" ]'
task=$(pgrep -u nobody -f "^sleep 301$")
priv=$(priv_of "${PIDS[1]}")
kill_node 1
wait_until 5000 eval '! kill -0 "$priv" 2>/dev/null && ! kill -0 "$task" 2>/dev/null'
check "privsep: the engine killed: its child killed task $task and ended" $? \
    "child $priv alive: $(kill -0 "$priv" 2>/dev/null && echo yes), task alive: $(kill -0 "$task" 2>/dev/null && echo yes)"
wait_until 20000 eval '! kill -0 "$job" 2>/dev/null'
{
    kill -KILL "$job"
    wait "$job"
} 2>/dev/null

# root_jobs = false, and a missing user, on a one-node cluster of their own
sed -e 's/psid = {/psid = { root_jobs = false;/' "$CDIR/psid.conf" >"$CDIR/noroot.conf"
start_node 1 "$CDIR/noroot.conf"
all_up 10000 >/dev/null
out=$(PSID_SOCKET=$CDIR/psid-1.sock timeout 20 "$BIN/psrun" -w 1 -- id -u 2>&1)
rc=$?
[ "$rc" -ne 0 ] && grep -q "psid.root_jobs is false: no task runs as root here" <<<"$out" &&
    [ "$(PSID_SOCKET=$CDIR/psid-1.sock timeout 20 "${AS_NOBODY[@]}" "$BIN/psrun" -w 1 -- id -un 2>&1)" = nobody ]
check "privsep: root_jobs = false: root's job refused with the reason, nobody's runs" $? "rc $rc: $out"

kill_node 1 TERM # its ports and socket for the next check
sed -e 's/psid = {/psid = { user = "no-such-user-here";/' "$CDIR/psid.conf" >"$CDIR/nouser.conf"
out=$(timeout 10 "$BIN/psid" -f "$CDIR/nouser.conf" --node 1 --foreground 2>&1)
rc=$?
[ "$rc" = 1 ] && grep -q 'psid.user "no-such-user-here" does not exist: create it (useradd' <<<"$out"
check "privsep: a psid.user that does not exist: exit 1 at start, naming it and the fix" $? \
    "rc $rc: $(tail -2 <<<"$out")"
exit $((FAILS > 0))
