#!/bin/bash
# psid_privforge.sh - the privileged child verifies what it is asked to do (issue 29, point
# 3; psid/privsep.h, docs/security.md "A compromised engine"). psids built with privcall.c's
# test hooks (build/test/psid-hooks) whose engines forge, as PSID_TEST_FORGE says:
#  - uid=65534: the engine asks its child to vouch for nobody on root's connection: the
#    child refuses, says so in its log, and root's job does not start;
#  - spawn-uid=65534: the engine asks its child to start root's rank as nobody with root's
#    credential: refused, logged, nothing runs as nobody;
#  - alter (on the remote node): a bit of the home's credential flipped: refused for its
#    MAC, logged;
#  - replay (on the remote node): every PRIV_SPAWN that started a task is sent again:
#    refused as a replay, logged, the job itself fine;
#  - the sandbox: an engine that makes a file outside its run directory gets EACCES
#    (Landlock, where the kernel has it); one that executes a program is ended by the
#    seccomp filter, which logs the system call;
#  - without forging, the same build runs jobs of root and of nobody across the nodes.
# Root only (the child switches users only when psid starts as root).
# shellcheck source-path=SCRIPTDIR source=lib/cluster.sh
source "$(dirname "$0")/lib/cluster.sh"
if [ "$(id -u)" != 0 ] || ! command -v setpriv >/dev/null; then
    echo "SKIP: privforge: needs root (psid splits its identity only when started as root)"
    exit 0
fi
export PSID_BIN=$TOP/build/test/psid-hooks
if [ ! -x "$PSID_BIN" ]; then
    fail "privforge: the test build of psid" "$PSID_BIN is not built (make build-tests)"
    exit 1
fi
AS_NOBODY=(setpriv --reuid=nobody --regid="$(id -g nobody)" --clear-groups)
NOBODY=$(id -u nobody)

cluster_up 2
all_up 5000 || {
    fail "privforge: cluster up" "not all up"
    exit 1
}
export PSID_SOCKET=$CDIR/psid-0.sock

# restart NODE FORGE: node NODE's psid again, its engine forging FORGE ("" for none)
restart() {
    kill_node "$1" TERM
    PSID_TEST_FORGE=$2 start_node "$1"
    all_up 10000 >/dev/null
}
# count_sleep: processes "sleep 311" of nobody (a forged task would be one)
nobody_sleeps() { pgrep -u nobody -f "^sleep 311$" | wc -l; }

out=$(timeout 20 "$BIN/psrun" -n 2 -- id -u 2>&1)
out2=$(timeout 20 "${AS_NOBODY[@]}" "$BIN/psrun" -n 2 -- id -u 2>&1)
[ "$(sort -u <<<"$out")" = 0 ] && [ "$(sort -u <<<"$out2")" = "$NOBODY" ]
check "privforge: without forging, root's and nobody's ranks run across both nodes as themselves" $? \
    "root: $out; nobody: $out2"

# refused NAME NODE TEXT LOG [PREFIX...]: `PREFIX psrun -w NODE -- sleep 311` fails with TEXT
# in its output, node NODE's log gets a line matching LOG, and no task of nobody runs
refused() {
    local name=$1 node=$2 text=$3 log=$4 out rc
    shift 4
    out=$(timeout 20 "$@" "$BIN/psrun" -w "$node" -- sleep 311 2>&1)
    rc=$?
    [ "$rc" -ne 0 ] && grep -q "$text" <<<"$out" && wait_line "$CDIR/psid-$node.log" "$log" 2000 &&
        [ "$(nobody_sleeps)" = 0 ]
    check "privforge: $name" $? "rc $rc: $out; log: $(grep -h "priv\]" "$CDIR/psid-$node.log" | tail -2)"
}

# 1. the engine asks its child to vouch for another uid
restart 0 uid="$NOBODY"
refused "an engine asking to vouch for nobody on root's connection: refused and logged by the child" 0 \
    "does not vouch for the job: the requesting client is uid 0 gid 0 (pid [0-9]*), not uid $NOBODY" \
    "psid-0\[priv\].*refused to vouch for job 0:[0-9]* of uid $NOBODY: the requesting client is uid 0"

# 2. the engine asks to start root's rank as another uid
restart 0 spawn-uid="$NOBODY"
refused "a forged PRIV_SPAWN for nobody with root's credential: refused and logged by the child" 0 \
    "rank 0 (node n0): spawn credential refused: it is for uid 0 gid 0, not uid $NOBODY" \
    "psid-0\[priv\].*refused to start rank 0 of job 0:[0-9]* as uid $NOBODY: spawn credential refused"
restart 0 ""

# 3. a remote node's engine alters the credential it got
restart 1 alter
refused "a remote credential altered by that node's engine: refused for its MAC and logged" 1 \
    "rank 0 (node n1): spawn credential refused: its MAC is wrong" \
    "psid-1\[priv\].*refused to start rank 0 of job 0:[0-9]* as uid $NOBODY: spawn credential refused: its MAC is wrong" \
    "${AS_NOBODY[@]}"

# 4. a remote node's engine replays each spawn
restart 1 replay
out=$(timeout 20 "${AS_NOBODY[@]}" "$BIN/psrun" -w 1 -- id -u 2>&1)
rc=$?
[ "$rc" -eq 0 ] && [ "$out" = "$NOBODY" ] &&
    wait_line "$CDIR/psid-1.log" "forge: a replayed PRIV_SPAWN was refused: spawn credential refused: replayed (its 1 ranks have started)" 2000 &&
    grep -q "psid-1\[priv\].*refused to start rank 0 of job 0:[0-9]* as uid $NOBODY: spawn credential refused: replayed" "$CDIR/psid-1.log" &&
    ! grep -q "forge: a replayed PRIV_SPAWN started" "$CDIR/psid-1.log"
check "privforge: a remote credential replayed by that node's engine: refused as a replay and logged; the job ran once" $? \
    "rc $rc: $out; log: $(grep -h "forge\|priv\]" "$CDIR/psid-1.log" | tail -3)"

# 5. the sandbox: no file outside the run directory, no exec
outside=$(mktemp -d /tmp/psforge.XXXXXX)
chmod 777 "$outside" # psid.user could write here, but for the sandbox
restart 1 write="$outside/engine-was-here"
if grep -q "the engine's sandbox: no_new_privs, Landlock" "$CDIR/psid-1.log"; then
    wait_line "$CDIR/psid-1.log" "forge: make $outside/engine-was-here: Permission denied" 2000 &&
        [ ! -e "$outside/engine-was-here" ]
    check "privforge: the engine cannot make a file outside its run directory (Landlock)" $? \
        "$(grep -h "forge:" "$CDIR/psid-1.log" | tail -1); $(ls "$outside")"
else
    echo "SKIP: privforge: no Landlock here: $(grep -ho "the engine's sandbox: .*" "$CDIR/psid-1.log" | tail -1)"
fi
rm -rf "$outside"
kill_node 1 TERM
PSID_TEST_FORGE="exec" start_node 1
eng=${PIDS[1]}
wait_until 10000 eval '! kill -0 "$eng" 2>/dev/null'
wait "$eng"
rc=$?
PIDS[1]=
[ "$rc" = 1 ] && grep -q "forge: executing /bin/true" "$CDIR/psid-1.log" &&
    grep -q "the engine's sandbox refused system call [0-9]* (psid/sandbox.c); stopping" "$CDIR/psid-1.log" &&
    ! grep -q "forge: exec:" "$CDIR/psid-1.log"
check "privforge: an engine that executes a program is stopped by its seccomp filter, which says so" $? \
    "rc $rc; $(grep -h "forge\|sandbox" "$CDIR/psid-1.log" | tail -3)"
exit $((FAILS > 0))
