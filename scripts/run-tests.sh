#!/bin/bash
# run-tests.sh - the test driver of `make check`, run after the build trees exist.
#
# Steps, in order (each shows its full output and wall time):
#   a. build/test/unit-tests            plain
#   b. build/san/test/unit-tests        ASan + UBSan
#   c. build/test/rdp-tests             protocol tests on loopback
#   d. build/san/test/rdp-tests         ASan + UBSan, RDP_TEST_QUICK=1
#   e. test/shell/*.sh                  integration tests on loopback clusters (no root)
#   e. test/netns/*.sh                  namespace tests (root only)
#   f. build/fuzz/*                     each fuzz target for FUZZ_SECONDS (clang only)
# The scripts of e and the targets of f run CHECK_JOBS at a time (default: the CPUs, at most
# 4), each shown whole when it ends; a few run alone (SOLO, below).
#   g. style                            clang-format (the tree's one C style) and shellcheck
#                                       (warnings and worse) over the tracked sources
# CUnit binaries are counted from their "Run Summary" table, namespace scripts from their
# PASS:/FAIL:/SKIP: lines, fuzz targets as one test each. A step that is not built is skipped.
# The last line is "check: N passed, N failed, N skipped"; the exit status is 1 if anything
# failed or no test ran.
#
# Environment: STEP_TIMEOUT (seconds per step, default 300), FUZZ_SECONDS (default 5), STEPS
# (the steps to run, by letter, e.g. "f" for `make fuzz`; default all: abcdefg), FUZZ_MERGE=1
# (`make fuzz`: after a passing run, the inputs that reach new code are merged into the seed
# corpus test/fuzz/corpus/NAME, to be committed).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

STEP_TIMEOUT=${STEP_TIMEOUT:-300}
FUZZ_SECONDS=${FUZZ_SECONDS:-5} # make fuzz runs 60 s each
STEPS=${STEPS:-abcdefg}
[[ $STEPS =~ ^[a-g]+$ ]] || {
    echo "run-tests: STEPS is letters a to g (got '$STEPS')" >&2
    exit 2
}
want() { [[ $STEPS == *"$1"* ]]; } # want LETTER: whether that step runs
SAN_ENV=(ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1)

passed=0 failed=0 skipped=0
summary=() # one line per step, repeated at the end
tail_pid="" # the tail showing the running step's output

tmp=$(mktemp -d)
# stop_group PGID: TERM to a step's process group, up to 15 s for its own cleanup, then KILL.
stop_group() {
    local pg=$1 deadline
    kill -TERM -- "-$pg" 2>/dev/null || return 0
    deadline=$((SECONDS + 15))
    while ((SECONDS < deadline)) && kill -0 -- "-$pg" 2>/dev/null; do sleep 0.1; done
    kill -KILL -- "-$pg" 2>/dev/null || true
}

# On the way out, a step still running (an interrupted run) is stopped with its whole group;
# the step's own cleanup output is still shown (tail follows the log until the step is gone).
cleanup() {
    local pg pid
    while read -r pg; do # background steps still running
        kill -0 -- "-$pg" 2>/dev/null && stop_group "$pg"
    done < <(cat "$tmp/bg.pgids" 2>/dev/null)
    pg=$(cat "$tmp/step.pgid" 2>/dev/null || true)
    if [[ -n $pg ]] && kill -0 -- "-$pg" 2>/dev/null; then
        echo "run-tests: interrupted; stopping the running step"
        stop_group "$pg"
        pid=$(cat "$tmp/netns.pid" 2>/dev/null || true)
        [[ -n $pid ]] && netns_leftovers "$pid" >/dev/null
    fi
    if [[ -n $tail_pid ]]; then
        sleep 0.3
        kill -KILL "$tail_pid" 2>/dev/null || true
    fi
    rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

header() { printf '\n==== %s ====\n' "$*"; }

skip() { # skip NAME WHY
    echo "SKIP: $1 $2"
    skipped=$((skipped + 1))
    summary+=("$(printf '%-32s skipped: %s' "$1" "$2")")
}

# run_logged LOG CMD... -> run CMD under timeout in a session of its own, output to LOG and
# shown as it comes (tail); sets step_rc and step_secs. Never fails itself. When CMD ends,
# whatever it left running in its process group is killed.
run_logged() {
    local log=$1 t0 t1 pid
    shift
    t0=$EPOCHREALTIME
    : >"$log"
    setsid timeout -k 10 "$STEP_TIMEOUT" "$@" </dev/null >"$log" 2>&1 &
    pid=$!
    echo "$pid" >"$tmp/step.pgid"
    # tail outlives a TERM to our group: it ends when the step does.
    (
        trap '' TERM
        exec tail -n +1 -s 0.2 -f --pid="$pid" "$log"
    ) &
    tail_pid=$!
    step_rc=0
    { wait "$pid"; } 2>/dev/null || step_rc=$?
    kill -KILL -- "-$pid" 2>/dev/null || true
    rm -f "$tmp/step.pgid"
    wait "$tail_pid" 2>/dev/null || true
    tail_pid=""
    t1=$EPOCHREALTIME
    step_secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
    # timeout: 124, or 137 when TERM was not enough (a command killed by KILL is 137 too).
    if ((step_rc == 124)) || { ((step_rc == 137)) &&
        awk -v s="$step_secs" -v t="$STEP_TIMEOUT" 'BEGIN { exit !(s >= t) }'; }; then
        echo "TIMEOUT: no result after ${STEP_TIMEOUT} s"
    fi
}

record() { # record NAME PASS FAIL SKIP
    passed=$((passed + $2)) failed=$((failed + $3)) skipped=$((skipped + $4))
    summary+=("$(printf '%-32s %3d passed %3d failed %3d skipped  %7s s' "$1" "$2" "$3" "$4" "$step_secs")")
    printf -- '---- %s: %d passed, %d failed, %d skipped, exit %d, %s s\n' \
        "$1" "$2" "$3" "$4" "$step_rc" "$step_secs"
}

# A CUnit binary built from test/lib/runner.c.
cunit_step() { # cunit_step LETTER NAME BINARY [VAR=VALUE...]
    local letter=$1 name=$2 bin=$3 log p=0 f=0 s=0 line
    shift 3
    header "$letter. $name"
    if [[ ! -x $bin ]]; then
        skip "$name" "not built ($bin)"
        return
    fi
    log=$tmp/$letter.log
    run_logged "$log" env "$@" "$bin"
    # "Run Summary:    Type  Total    Ran Passed Failed Inactive"
    # "               tests      4      4      3      1        0"
    line=$(awk '/^Run Summary:/ { on = 1 } on && $1 == "tests" && NF == 6 { print; exit }' "$log")
    if [[ -n $line ]]; then
        read -r _ _ _ p f s <<<"$line"
        # The tests passed but the binary did not (a leak report at exit, a crash after the
        # summary): one failure more.
        if ((step_rc != 0 && f == 0)); then
            echo "FAIL: $name exited with status $step_rc after its tests"
            f=1
        fi
    else
        echo "FAIL: $name: no CUnit run summary (exit status $step_rc)"
        f=1
    fi
    record "$name" "$p" "$f" "$s"
}

netns_works() {
    ((EUID == 0)) || return 1
    command -v ip >/dev/null || return 1
    local probe=psck$$
    ip netns add "$probe" 2>/dev/null || return 1
    ip netns del "$probe" 2>/dev/null || true
}

# Delete what a namespace test script with pid PID left behind (names from
# test/netns/lib/netns.sh, which embed the script's pid). Prints what it removed.
netns_leftovers() { # netns_leftovers PID
    local pid=$1 ns link found=()
    while read -r ns _; do
        [[ $ns == "psns$pid-"* ]] || continue
        found+=("netns $ns")
        local p
        for p in $(ip netns pids "$ns" 2>/dev/null); do kill -KILL "$p" 2>/dev/null || true; done
        ip netns del "$ns" 2>/dev/null || true
    done < <(ip netns list 2>/dev/null)
    for link in "psbr$pid" $(ip -o link show 2>/dev/null | awk -F': ' '{ print $2 }' |
        sed 's/@.*//' | grep -E "^psv$pid-[0-9]+$" || true); do
        ip link show "$link" >/dev/null 2>&1 || continue
        found+=("link $link")
        ip link del "$link" 2>/dev/null || true
    done
    ((${#found[@]} == 0)) || echo "${found[*]}"
}

# tally NAME LOG: the PASS:/FAIL:/SKIP: lines of a test script's LOG, with its exit status
# (step_rc), into p, f and s of the caller: a script that failed without a FAIL: line counts
# as one failure, one that succeeded and reported nothing as one pass.
tally() {
    p=$(grep -c '^PASS: ' "$2" || true)
    f=$(grep -c '^FAIL: ' "$2" || true)
    s=$(grep -c '^SKIP: ' "$2" || true)
    if ((step_rc != 0 && f == 0)); then
        echo "FAIL: $1 exited with status $step_rc"
        f=1
    elif ((step_rc == 0 && p + f + s == 0)); then
        p=1
    fi
}

# Steps in the background, LANES at once: each in a session of its own under timeout, its
# output shown whole when it ends; whatever it left running in its process group is killed
# then. bg_start KEY LOG CMD...; bg_next: waits for one to end, sets bg_key, step_rc and
# step_secs, and shows its output.
declare -A bg_pid=() bg_log=() bg_t0=()
bg_start() {
    local key=$1 log=$2
    shift 2
    : >"$log"
    setsid timeout -k 10 "$STEP_TIMEOUT" "$@" </dev/null >"$log" 2>&1 &
    bg_pid[$key]=$!
    bg_log[$key]=$log
    bg_t0[$key]=$EPOCHREALTIME
    echo "$!" >>"$tmp/bg.pgids"
}
bg_next() {
    local pid k t1
    step_rc=0
    wait -n -p pid "${bg_pid[@]}" 2>/dev/null || step_rc=$?
    bg_key=
    for k in "${!bg_pid[@]}"; do [[ ${bg_pid[$k]} == "$pid" ]] && bg_key=$k; done
    [[ -n $bg_key ]] || return 1
    kill -KILL -- "-$pid" 2>/dev/null || true
    t1=$EPOCHREALTIME
    step_secs=$(awk -v a="${bg_t0[$bg_key]}" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
    printf '\n-- %s\n' "$bg_key"
    cat "${bg_log[$bg_key]}"
    if ((step_rc == 124)) || { ((step_rc == 137)) &&
        awk -v s="$step_secs" -v t="$STEP_TIMEOUT" 'BEGIN { exit !(s >= t) }'; }; then
        echo "TIMEOUT: no result after ${STEP_TIMEOUT} s"
    fi
    unset "bg_pid[$bg_key]"
}

# pool ITEM...: start_one ITEM for each, LANES at once, and done_one for each as it ends
# (bg_key, step_rc, step_secs set, its output shown); an item whose base name is in SOLO
# runs alone. The scripts of a step each run on clusters of their own (their own
# directories, ports, daemons and namespaces), so they can run side by side; SOLO holds the
# CPU hogs and floods, the timing of failure detection, and the tree's own make.
LANES=${CHECK_JOBS:-$(nproc)}
((LANES > 4)) && LANES=4
((LANES < 1)) && LANES=1
SOLO=" psid_spawnflood psid_stress psid_busy psid_grace make_targets preload_flood preload_burst "
pool() {
    local item base
    for item in "$@" ""; do
        base=$(basename "$item" .sh)
        # a lane free (all of them before a solo item, and at the end)
        while ((${#bg_pid[@]} > 0)) &&
            { [[ -z $item || $SOLO == *" $base "* ]] || ((${#bg_pid[@]} >= LANES)); }; do
            bg_next || break
            done_one "$bg_key"
        done
        [[ -z $item ]] && break
        start_one "$item"
        if [[ $SOLO == *" $base "* ]] && bg_next; then done_one "$bg_key"; fi
    done
}

netns_step() {
    local scripts=()
    header "e. namespace tests (test/netns/*.sh, $LANES at a time)"
    shopt -s nullglob
    scripts=(test/netns/*.sh)
    shopt -u nullglob
    if ((${#scripts[@]} == 0)); then
        echo "(no namespace tests yet)"
        return
    fi
    if ! netns_works; then
        echo "SKIP: namespace tests need root (and a working 'ip netns add')"
        skipped=$((skipped + ${#scripts[@]}))
        summary+=("$(printf '%-32s skipped: need root' "namespace tests")")
        return
    fi
    # exec keeps the pid, so the script's $$ (and the names its namespaces get) is known
    start_one() {
        local base
        base=$(basename "$1" .sh)
        rm -f "$tmp/netns-$base.pid"
        # shellcheck disable=SC2016 # $$ and $1 belong to the inner shell
        bg_start "$1" "$tmp/netns-$base.log" bash -c 'echo $$ >"$1"; exec bash "$2"' netns-test \
            "$tmp/netns-$base.pid" "$1"
    }
    done_one() {
        local name base pid left p f s
        base=$(basename "$1" .sh)
        name=netns/$base
        tally "$name" "${bg_log[$1]}"
        pid=$(cat "$tmp/netns-$base.pid" 2>/dev/null || true)
        if [[ -n $pid ]]; then
            left=$(netns_leftovers "$pid")
            if [[ -n $left ]]; then
                echo "FAIL: $name left behind (now removed): $left"
                f=$((f + 1))
            fi
        fi
        record "$name" "$p" "$f" "$s"
    }
    pool "${scripts[@]}"
}

# Integration scripts on loopback clusters: PASS:/FAIL:/SKIP: lines, like the namespace
# tests, but no root needed. Each script cleans up after itself (trap); whatever it left
# running in its process group is killed when it ends.
shell_step() {
    local scripts=()
    header "e. integration tests (test/shell/*.sh, $LANES at a time)"
    shopt -s nullglob
    scripts=(test/shell/*.sh)
    shopt -u nullglob
    if ((${#scripts[@]} == 0)); then
        echo "(no integration tests yet)"
        return
    fi
    start_one() { bg_start "$1" "$tmp/shell-$(basename "$1" .sh).log" bash "$1"; }
    done_one() {
        local p f s name
        name=shell/$(basename "$1" .sh)
        tally "$name" "${bg_log[$1]}"
        record "$name" "$p" "$f" "$s"
    }
    pool "${scripts[@]}"
}

fuzz_step() {
    local bins=() b
    header "f. fuzz targets (build/fuzz/*, ${FUZZ_SECONDS} s each, $LANES at a time)"
    for b in build/fuzz/*; do
        [[ -f $b && -x $b ]] && bins+=("$b")
    done
    if ! command -v clang >/dev/null; then
        if ((${#bins[@]})); then skip "fuzz" "needs clang"; else echo "(clang not installed)"; fi
        return
    fi
    if ((${#bins[@]} == 0)); then
        if compgen -G 'test/fuzz/fuzz_*.c' >/dev/null; then
            skip "fuzz" "targets not built (build/fuzz/)"
        else
            echo "(no fuzz targets yet)"
        fi
        return
    fi
    start_one() {
        local b=$1 name work corpus art extra=()
        name=$(basename "$b")
        # The repository's corpus is copied: libFuzzer adds to the directory it is given.
        work=$tmp/corpus-$name
        mkdir -p "$work"
        for corpus in "test/fuzz/corpus/$name" "test/fuzz/corpus/${name#fuzz_}"; do
            if [[ -d $corpus ]]; then
                cp -R "$corpus/." "$work/"
                break
            fi
        done
        # Crash inputs are kept under build/ to reproduce with: BINARY FILE
        art=build/fuzz-artifacts/$name
        mkdir -p "$art"
        [[ -f test/fuzz/${name#fuzz_}.dict ]] && extra+=("-dict=test/fuzz/${name#fuzz_}.dict")
        [[ -f test/fuzz/$name.dict ]] && extra+=("-dict=test/fuzz/$name.dict")
        bg_start "$b" "$tmp/fuzz-$name.log" "$b" -max_total_time="$FUZZ_SECONDS" -timeout=10 \
            -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$art/" \
            "${extra[@]}" "$work"
    }
    done_one() {
        local b=$1 name p f
        name=$(basename "$b")
        if ((step_rc == 0)); then
            p=1 f=0
            echo "PASS: $name"
            if [[ ${FUZZ_MERGE:-0} == 1 ]]; then
                mkdir -p "test/fuzz/corpus/$name"
                "$b" -merge=1 "test/fuzz/corpus/$name" "$tmp/corpus-$name" \
                    >"$tmp/merge-$name.log" 2>&1 &&
                    echo "$name: $(grep -o 'MERGE-OUTER: [0-9]* new files' "$tmp/merge-$name.log" ||
                        echo "merge said nothing") -> test/fuzz/corpus/$name/"
            fi
        else
            p=0 f=1
            echo "FAIL: $name (exit status $step_rc; inputs kept in build/fuzz-artifacts/$name/)"
        fi
        record "fuzz/$name" "$p" "$f" 0
    }
    pool "${bins[@]}"
}

# The tracked files ending in one of the suffixes given (git ls-files; find outside a checkout).
tracked() {
    local pat=() x
    for x in "$@"; do pat+=("*$x"); done
    if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
        git ls-files -- "${pat[@]}"
    else
        for x in "$@"; do find . -path ./build -prune -o -type f -name "*$x" -print; done |
            sed 's|^\./||'
    fi
}

# style_check NAME TOOL HINT CMD...: run a style checker over the tree as one test.
style_check() {
    local name=$1 tool=$2 hint=$3 log
    shift 3
    if ! command -v "$tool" >/dev/null; then
        skip "$name" "$tool not installed (scripts/install-deps.sh --check installs it)"
        return
    fi
    log=$tmp/${name//\//-}.log
    run_logged "$log" "$@"
    if ((step_rc == 0)); then
        echo "PASS: $name"
        record "$name" 1 0 0
    else
        echo "FAIL: $name (exit status $step_rc; $hint)"
        record "$name" 0 1 0
    fi
}

style_step() {
    local c=() sh=()
    header "g. style"
    mapfile -t c < <(tracked .c .h)
    mapfile -t sh < <(tracked .sh; [[ -f .ci/run ]] && echo .ci/run)
    style_check style/clang-format clang-format "'make format' fixes it" \
        clang-format --dry-run -Werror "${c[@]}"
    style_check style/shellcheck shellcheck "shellcheck -x -S warning FILE says where" \
        shellcheck -x -S warning "${sh[@]}"
}

echo "run-tests: $(uname -sr), $(nproc) cpus, step timeout ${STEP_TIMEOUT} s"

want a && cunit_step a "unit-tests" build/test/unit-tests
want b && cunit_step b "unit-tests (asan+ubsan)" build/san/test/unit-tests "${SAN_ENV[@]}"
want c && cunit_step c "rdp-tests" build/test/rdp-tests
want d && cunit_step d "rdp-tests (asan+ubsan, quick)" build/san/test/rdp-tests "${SAN_ENV[@]}" \
    RDP_TEST_QUICK=1
want e && shell_step
want e && netns_step
want f && fuzz_step
want g && style_step

header "summary"
printf '  %s\n' "${summary[@]}"
echo
if ((passed + failed == 0)); then
    echo "run-tests: no test ran"
fi
echo "check: $passed passed, $failed failed, $skipped skipped"
((failed == 0 && passed > 0))
