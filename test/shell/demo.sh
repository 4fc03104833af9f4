#!/bin/bash
# test/shell/demo.sh - scripts/demo.sh (`make demo`, run directly: the tree is built):
#   - it exits 0 and its output shows every step working: 4 nodes up, 8 labelled hello
#     lines, pswait told of SIGUSR1, pskill refusing node 9, curl accelerated under the
#     preload library and falling back against a server without it, node 1 declared down
#     and the job hearing "node lost", 300 messages and 2000 round trips verified, "demo:
#     done";
#   - a step that fails fails the demo: in a copy of the tree whose build/bin holds the real
#     tools but one wrapper, (a) rdpbench client exits 1, (b) rdpbench client exits 0 but
#     verifies nothing, (c) pspreload runs the program without the library, (d) psstat never
#     shows node 1 down; each time the demo exits 1 with
#     "demo: FAILED: step N" and without "demo: done";
#   - every time, the demo's directory is removed and none of its daemons is left running.
# Every run is bounded by timeout (60 s; a good run takes about 1 s, (c) 5 s).
set -u
# shellcheck source-path=SCRIPTDIR source=lib/cluster.sh
. "$(dirname "$0")/lib/cluster.sh"
CDIR=$(mktemp -d)

for t in psid pslocal psrun pskill psstat pswait rdpbench pspreload; do
    if [[ ! -x $BIN/$t ]]; then
        echo "SKIP: demo: $BIN/$t is not built"
        exit 0
    fi
done

# run_demo SCRIPT LOG -> the demo's exit status; its output (stdout and stderr) in LOG
run_demo() {
    local rc=0
    timeout -k 5 60 bash "$1" >"$2" 2>&1 || rc=$?
    return "$rc"
}

# left_behind LOG: what the demo of LOG left (its directory, daemons naming it); empty if none
left_behind() {
    local dir
    dir=$(sed -n 's/^\$ .*pslocal up -n 4 --dir \(\/tmp\/pscluster-demo\.[A-Za-z0-9]*\)$/\1/p' "$1")
    if [[ -z $dir ]]; then
        echo "no 'pslocal up --dir' line in the output"
        return
    fi
    [[ -e $dir ]] && echo "$dir still exists"
    pgrep -f -- "$dir/" | sed 's/^/process /' || true
}

# has LOG REGEX: LOG has a line matching REGEX (grep -E)
has() { grep -Eq -- "$2" "$1"; }

# the real demo
log=$CDIR/demo.log
rc=0
run_demo "$TOP/scripts/demo.sh" "$log" || rc=$?
check "demo: exits 0" "$rc" "exit $rc: $(grep -m1 '^demo: FAILED' "$log" || tail -3 "$log")"
bad=()
for re in '^pslocal: 4 nodes up in ' \
    '^3: hello from rank 3 of 8 on n[0-3] \(task [0-9]+:[0-9]+\)$' \
    '^[0-9]+:[0-9]+ killed by signal 10 ' \
    '^pskill: 9:1: no node 9' \
    '^pspreload: pid=[0-9]+ accelerated=1 tcp=0 ' \
    '^pspreload: pid=[0-9]+ accelerated=0 tcp=1 not_cluster=0 no_library=1 ' \
    '^pspreload: pid=[0-9]+ accelerated=1 .* shm=1 ' \
    '^same node, 16 B, one-way latency \(median\): kernel TCP [0-9.]+ us, libpspreload [0-9.]+ us' \
    '^node 1 declared down after [0-9]+ ms$' \
    '^psrun: rank 1 \(node n1, task 1:[0-9]+\): node lost$' \
    '^rdp stream: 300 messages \([0-9]+ payload bytes\) verified ' \
    '^rdp pingpong: 2000 round trips verified' \
    '^ratio rdp/tcp \(RTT median\): [0-9.]+$'; do
    has "$log" "$re" || bad+=("$re")
done
n=$(grep -Ec '^[0-7]: hello from rank [0-7] of 8 on n[0-3] ' "$log")
((n == 8)) || bad+=("8 hello lines (got $n)")
[[ $(tail -n 1 "$log") == "demo: done. "* ]] || bad+=("last line 'demo: done. ...'")
has "$log" 'demo: FAILED' && bad+=("(and it said 'demo: FAILED')")
((${#bad[@]} == 0))
check "demo: the output shows every step working" $? "missing: ${bad[*]}"
left=$(left_behind "$log")
[[ -z $left ]]
check "demo: leaves nothing behind" $? "$left"

# broken NAME STEP TOOL WRAPPER-BODY: in a copy of the tree of its own (scripts/demo.sh, and
# build/bin with the real tools), TOOL replaced by a script (REAL is the real tool, "$@" its
# arguments); the demo must fail at STEP, say so, and clean up. Its check line; its status.
broken() {
    local name=$1 step=$2 tool=$3 body=$4 log=$CDIR/broken-$3-$2-${#4}.log rc=0 why=() t
    local tree=$CDIR/tree-$tool-$step-${#body}
    mkdir -p "$tree/scripts" "$tree/build/bin"
    cp "$TOP/scripts/demo.sh" "$tree/scripts/"
    for t in psid pslocal psrun pskill psstat pswait rdpbench pspreload; do
        ln -s "$BIN/$t" "$tree/build/bin/$t"
    done
    rm "$tree/build/bin/$tool"
    printf '#!/bin/bash\nREAL=%q\n%s\n' "$BIN/$tool" "$body" >"$tree/build/bin/$tool"
    chmod 755 "$tree/build/bin/$tool"
    run_demo "$tree/scripts/demo.sh" "$log" || rc=$?
    ((rc == 1)) || why+=("exit $rc, not 1")
    has "$log" "^demo: FAILED: step $step: " || why+=("no 'demo: FAILED: step $step:'")
    has "$log" '^demo: done' && why+=("it said 'demo: done'")
    left=$(left_behind "$log")
    [[ -z $left ]] || why+=("left behind: $left")
    ((${#why[@]} == 0))
    check "demo: fails at step $step when $name" $? "${why[*]}: $(grep -m1 FAILED "$log")"
    ((${#why[@]} == 0))
}

# two at a time (each its own cluster and tree): their check lines as they end
pids=()
# shellcheck disable=SC2016 # the bodies expand in the wrappers
{
    broken "rdpbench client fails" 6 rdpbench \
        '[[ $1 == client ]] && { echo "rdpbench: broken" >&2; exit 1; }; exec "$REAL" "$@"' &
    pids+=($!)
    broken "rdpbench client verifies nothing" 6 rdpbench \
        '[[ $1 == client ]] && { "$REAL" "$@" | grep -v verified; exit 0; }; exec "$REAL" "$@"' &
    pids+=($!)
    for p in "${pids[@]}"; do wait "$p" || FAILS=$((FAILS + 1)); done
    pids=()
    broken "the preload library is not loaded" 4 pspreload \
        '[[ $1 == --stats ]] && shift; exec "$@"' &
    pids+=($!)
    broken "node 1 is never seen down" 5 psstat \
        'set -o pipefail; "$REAL" "$@" | sed "s/down/up/g"' &
    pids+=($!)
    for p in "${pids[@]}"; do wait "$p" || FAILS=$((FAILS + 1)); done
}
exit $((FAILS > 0))
