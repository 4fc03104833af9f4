#!/bin/bash
# run-tests.sh - the test driver of `make check`, run after the build trees exist.
#
# Suites, by the letter of their kind (STEPS):
#   a. build/test/unit-tests            plain
#   b. build/san/test/unit-tests        ASan + UBSan
#   c. build/test/rdp-tests             protocol tests on loopback
#   d. build/san/test/rdp-tests         ASan + UBSan, RDP_TEST_QUICK=1
#   e. test/shell/*.sh                  integration tests on loopback clusters (no root)
#   e. test/netns/*.sh                  namespace tests (root only)
#   f. build/fuzz/*                     each fuzz target for FUZZ_SECONDS (clang only; not in
#                                       the default STEPS: make fuzz and make soak ask for it)
#   g. style                            clang-format (the tree's one C style) over the tracked
#                                       sources; scripts/check-lifecycle.sh (the preload
#                                       library's connection state: written in lifecycle.c
#                                       only); and with SOAK=1 (make soak) shellcheck
#                                       (warnings and worse) over the tracked scripts
# Every suite runs on its own (its own cluster, ports, directories and namespaces), so all of
# them go into one pool, each in a session of its own under STEP_TIMEOUT, its output shown
# whole when it ends. The few in SOLO (below: CPU hogs, floods and the latencies they are
# measured against, the tree's own make, the timing of RDP's protocol tests) run first, each
# alone. Then the pool: CHECK_JOBS suites at a time (default: the CPUs, at most 4), and
# beside them up to CHECK_LIGHT more (default 2) of those in LIGHT (below: suites that wait
# for clusters, timers and peers, their CPU time a third of their wall time or less); and
# beside all of those, one at a time, the suites of QUIET (the timing of failure detection),
# at nice -10, so that the others' work does not delay them (as root; without root they run
# alone, as SOLO's). Each takes the longest suite first, by the times of the last run
# (build/check-times) or, on a fresh tree, by those committed in test/check-times. The suites
# of LONG (the preload semantics suites, the demo, the spawn flood and the stress run: 30-100
# s each) run in `make soak`, not here (SOAK=1 runs them here too).
# CUnit binaries are counted from their "Run Summary" table, scripts from their
# PASS:/FAIL:/SKIP: lines, fuzz targets as one test each. A suite that is not built is
# skipped. The summary lists every suite, then the slowest, the wall time and (under make
# check) make check's whole time against its budget of 8 minutes, and the last
# line is "check: N passed, N failed, N skipped"; the exit status is 1 if anything failed or
# no test ran.
#
# Environment: STEP_TIMEOUT (seconds per suite, default 300), FUZZ_SECONDS (default 5), STEPS
# (the kinds to run, by letter, e.g. "f" for `make fuzz`; default abcdeg, make check's: the
# fuzz tree is built and run by make soak and make fuzz), FUZZ_MERGE=1
# (`make fuzz`: after a passing run, the inputs that reach new code are merged into the seed
# corpus test/fuzz/corpus/NAME, to be committed), CHECK_JOBS, CHECK_LIGHT, SOAK=1 (the LONG
# suites too), ONLY="NAME..." (only the scripts of test/shell and test/netns of these base
# names, LONG or not: `make soak` runs the LONG ones so).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

STEP_TIMEOUT=${STEP_TIMEOUT:-300}
FUZZ_SECONDS=${FUZZ_SECONDS:-5} # make fuzz runs 60 s each
STEPS=${STEPS:-abcdeg}
[[ $STEPS =~ ^[a-g]+$ ]] || {
    echo "run-tests: STEPS is letters a to g (got '$STEPS')" >&2
    exit 2
}
want() { [[ $STEPS == *"$1"* ]]; } # want LETTER: whether that kind of suite runs
SAN_ENV=(ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1)

# The pool's lanes (matched by the first word of a suite's base name). SOLO: run alone,
# first. QUIET: one at a time beside the pool, at nice QUIET_NICE (root only: else they join
# SOLO). LIGHT: up to LIGHT_LANES of them beside the LANES others (their CPU time, measured in
# a cpuacct cgroup per suite on 2 CPUs, at most a third of their wall time). LONG: make soak's
# (scripts/soak.sh), not make check's (a namespace test as netns/NAME).
LANES=${CHECK_JOBS:-$(nproc)}
((LANES > 4)) && LANES=4
((LANES < 1)) && LANES=1
LIGHT_LANES=${CHECK_LIGHT:-2}
SOLO=" psid_spawnflood psid_stress psid_busy make_targets rdp-tests preload_flood psid_plhostile preload_cosched "
QUIET=" psid_grace psid_swim "
QUIET_NICE=-10
if ((EUID != 0)); then # (only root may raise a priority)
    SOLO="$SOLO${QUIET# }"
    QUIET=" "
fi
LIGHT=" preload_errors psid_leftovers preload_claim psid_limits preload_reason rdp_loss psid_hold"
LIGHT+=" preload_epoll0 preload_forge psid_preload preload_lowfd psid_replay psid_hostile "
LONG=" preload_semantics preload_same demo psid_spawnflood psid_stress netns/mpi_preload "
# The seconds each suite took in the last run (written at the end of every run), and in a
# run on a 2-CPU machine, committed, for a tree that has not run yet: the order, longest first.
TIMES=build/check-times
HINTS=test/check-times

passed=0 failed=0 skipped=0
finished=0 # 1 once every suite has ended (a group found at exit is one being reaped)
summary=()       # one line per suite, repeated at the end
failed_suites=() # the suites with failures, named again last (with their FAIL: lines)
t_start=$EPOCHREALTIME

tmp=$(mktemp -d)
# stop_group PGID: TERM to a suite's process group, up to 15 s for its own cleanup, then KILL.
stop_group() {
    local pg=$1 deadline
    kill -TERM -- "-$pg" 2>/dev/null || return 0
    deadline=$((SECONDS + 15))
    while ((SECONDS < deadline)) && kill -0 -- "-$pg" 2>/dev/null; do sleep 0.1; done
    kill -KILL -- "-$pg" 2>/dev/null || true
}

# On the way out, suites still running (an interrupted run) are stopped with their whole
# groups, and what namespace tests left is removed.
cleanup() {
    local pg f pid
    while read -r pg; do
        if kill -0 -- "-$pg" 2>/dev/null; then
            ((finished)) || echo "run-tests: interrupted; stopping a running suite"
            stop_group "$pg"
        fi
    done < <(cat "$tmp/bg.pgids" 2>/dev/null)
    for f in "$tmp"/netns-*.pid; do
        [[ -f $f ]] || continue
        pid=$(cat "$f" 2>/dev/null || true)
        [[ -n $pid ]] && netns_leftovers "$pid" >/dev/null
    done
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

record() { # record NAME PASS FAIL SKIP
    passed=$((passed + $2)) failed=$((failed + $3)) skipped=$((skipped + $4))
    (($3 == 0)) || failed_suites+=("$1")
    summary+=("$(printf '%-32s %3d passed %3d failed %3d skipped  %7s s' "$1" "$2" "$3" "$4" "$step_secs")")
    printf '%s\t%s\n' "$1" "$step_secs" >>"$tmp/times"
    printf -- '---- %s: %d passed, %d failed, %d skipped, exit %d, %s s\n' \
        "$1" "$2" "$3" "$4" "$step_rc" "$step_secs"
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

# Suites in the background, LANES at once: each in a session of its own under timeout, its
# output shown whole when it ends; whatever it left running in its process group is killed
# then. bg_start KEY LOG CMD...; bg_next: waits for one to end, sets bg_key, step_rc and
# step_secs, and shows its output.
declare -A bg_pid=() bg_log=() bg_t0=()
bg_start() {
    local key=$1 log=$2
    shift 2
    : >"$log"
    local prio=()
    is_quiet "$key" && prio=(nice -n "$QUIET_NICE")
    ${prio[@]+"${prio[@]}"} setsid timeout -k 10 "$STEP_TIMEOUT" "$@" </dev/null >"$log" 2>&1 &
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
    # (its failures again at the end, where CI's short excerpt of the output shows them)
    grep -E '^(FAIL|TIMEOUT):' "${bg_log[$bg_key]}" | cut -c1-300 >>"$tmp/fails" || true
    if ((step_rc == 124)) || { ((step_rc == 137)) &&
        awk -v s="$step_secs" -v t="$STEP_TIMEOUT" 'BEGIN { exit !(s >= t) }'; }; then
        echo "TIMEOUT: no result after ${STEP_TIMEOUT} s"
    fi
    unset "bg_pid[$bg_key]"
}

# ---- the suites: queue_* adds one (its key is the name it is reported by), start_one and
# done_one run and count it by its kind.
declare -A KIND=() WHAT=()
QUEUE=()
queue() { # queue NAME KIND WHAT
    QUEUE+=("$1")
    KIND[$1]=$2
    WHAT[$1]=$3
}

# A CUnit binary built from test/lib/runner.c; WHAT: "BINARY [VAR=VALUE...]".
queue_cunit() { # queue_cunit NAME BINARY [VAR=VALUE...]
    local name=$1 bin=$2
    shift 2
    if [[ ! -x $bin ]]; then
        skip "$name" "not built ($bin)"
        return
    fi
    queue "$name" cunit "$bin $*"
}
cunit_done() { # cunit_done NAME
    local name=$1 log=${bg_log[$1]} p=0 f=0 s=0 line
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

# Integration scripts on loopback clusters: PASS:/FAIL:/SKIP: lines, like the namespace
# tests, but no root needed. Each script cleans up after itself (trap); whatever it left
# running in its process group is killed when it ends.
queue_shell() {
    local sc base
    shopt -s nullglob
    for sc in test/shell/*.sh; do
        base=$(basename "$sc" .sh)
        if [[ -n ${ONLY:-} ]]; then
            [[ " $ONLY " == *" $base "* ]] || continue
        elif [[ $LONG == *" $base "* && ${SOAK:-0} != 1 ]]; then
            continue
        fi
        queue "shell/$base" shell "$sc"
    done
    shopt -u nullglob
}

# Namespace tests: as the integration scripts, as root; what one left behind is a failure
# (and removed).
queue_netns() {
    local scripts=() sc
    shopt -s nullglob
    scripts=(test/netns/*.sh)
    shopt -u nullglob
    ((${#scripts[@]})) || return 0
    if ! netns_works; then
        echo "SKIP: namespace tests need root (and a working 'ip netns add')"
        skipped=$((skipped + ${#scripts[@]}))
        summary+=("$(printf '%-32s skipped: need root' "namespace tests")")
        return
    fi
    for sc in "${scripts[@]}"; do
        local b
        b=$(basename "$sc" .sh)
        if [[ -n ${ONLY:-} ]]; then
            [[ " $ONLY " == *" $b "* || " $ONLY " == *" netns/$b "* ]] || continue
        elif [[ $LONG == *" netns/$b "* && ${SOAK:-0} != 1 ]]; then
            continue
        fi
        queue "netns/$b" netns "$sc"
    done
}
netns_done() {
    local name=$1 base pid left p f s
    base=${name#netns/}
    tally "$name" "${bg_log[$1]}"
    pid=$(cat "$tmp/netns-$base.pid" 2>/dev/null || true)
    if [[ -n $pid ]]; then
        left=$(netns_leftovers "$pid")
        if [[ -n $left ]]; then
            echo "FAIL: $name left behind (now removed): $left"
            f=$((f + 1))
        fi
        rm -f "$tmp/netns-$base.pid"
    fi
    record "$name" "$p" "$f" "$s"
}

queue_fuzz() {
    local bins=() b
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
        fi
        return
    fi
    for b in "${bins[@]}"; do queue "fuzz/$(basename "$b")" fuzz "$b"; done
}
fuzz_start() {
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
    bg_start "fuzz/$name" "$tmp/fuzz-$name.log" "$b" -max_total_time="$FUZZ_SECONDS" -timeout=10 \
        -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$art/" \
        "${extra[@]}" "$work"
}
fuzz_done() {
    local key=$1 b=${WHAT[$1]} name p f
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
    record "$key" "$p" "$f" 0
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

# The style checkers over the tree, one test each; the file lists go to files in $tmp.
queue_style() {
    local c=() sh=()
    mapfile -t c < <(tracked .c .h)
    mapfile -t sh < <(tracked .sh; [[ -f .ci/run ]] && echo .ci/run)
    printf '%s\n' "${c[@]}" >"$tmp/style-c.list"
    printf '%s\n' "${sh[@]}" >"$tmp/style-sh.list"
    queue_style_one style/clang-format clang-format "$tmp/style-c.list"
    # (the script linter over the 100-odd scripts takes 40 s of CPU, 60-100 s of a lane in make
    # check: make soak runs it, SOAK=1, and CI runs make soak too)
    if [[ ${SOAK:-0} == 1 ]]; then
        queue_style_one style/shellcheck shellcheck "$tmp/style-sh.list"
    fi
    queue style/lifecycle style scripts/check-lifecycle.sh
}
queue_style_one() { # NAME TOOL LIST
    if ! command -v "$2" >/dev/null; then
        skip "$1" "$2 not installed (scripts/install-deps.sh --check installs it)"
        return
    fi
    queue "$1" style "$3"
}
style_start() {
    local files=()
    [[ $1 == style/lifecycle ]] || mapfile -t files <"${WHAT[$1]}" # (a script, not a list)
    case $1 in
    style/clang-format) bg_start "$1" "$tmp/style-cf.log" clang-format --dry-run -Werror "${files[@]}" ;;
    style/shellcheck) bg_start "$1" "$tmp/style-sc.log" shellcheck -x -S warning "${files[@]}" ;;
    style/lifecycle) bg_start "$1" "$tmp/style-lc.log" bash "${WHAT[$1]}" ;;
    esac
}
style_done() {
    local hint="'make format' fixes it"
    [[ $1 == style/shellcheck ]] && hint="shellcheck -x -S warning FILE says where"
    [[ $1 == style/lifecycle ]] && hint="its output above says what"
    if ((step_rc == 0)); then
        echo "PASS: $1"
        record "$1" 1 0 0
    else
        echo "FAIL: $1 (exit status $step_rc; $hint)"
        record "$1" 0 1 0
    fi
}

start_one() {
    local key=$1 base
    base=$(basename "$key")
    case ${KIND[$key]} in
    cunit)
        # shellcheck disable=SC2086 # WHAT is "BINARY VAR=VALUE...", words without blanks
        set -- ${WHAT[$key]}
        bg_start "$key" "$tmp/cunit-${key//[^a-z0-9]/_}.log" env "${@:2}" "$1"
        ;;
    shell) bg_start "$key" "$tmp/shell-$base.log" bash "${WHAT[$key]}" ;;
    netns)
        # exec keeps the pid, so the script's $$ (and the names its namespaces get) is known
        # shellcheck disable=SC2016 # $$ and $1 belong to the inner shell
        bg_start "$key" "$tmp/netns-$base.log" bash -c 'echo $$ >"$1"; exec bash "$2"' \
            netns-test "$tmp/netns-$base.pid" "${WHAT[$key]}"
        ;;
    fuzz) fuzz_start "${WHAT[$key]}" ;;
    style) style_start "$key" ;;
    esac
}
done_one() {
    case ${KIND[$1]} in
    cunit) cunit_done "$1" ;;
    shell)
        local p f s
        tally "$1" "${bg_log[$1]}"
        record "$1" "$p" "$f" "$s"
        ;;
    netns) netns_done "$1" ;;
    fuzz) fuzz_done "$1" ;;
    style) style_done "$1" ;;
    esac
}

# WALL[NAME]: the seconds a suite took (HINTS, then TIMES over them)
declare -A WALL=()
while IFS=$'\t' read -r n w _; do WALL[$n]=$w; done < <(cat "$HINTS" "$TIMES" 2>/dev/null)

# is_solo NAME / is_quiet NAME / is_light NAME: whether NAME is in SOLO / QUIET / LIGHT (its
# base name's first word: both rdp-tests binaries)
in_list() { # in_list LIST NAME
    local base=${2##*/}
    [[ $1 == *" ${base%% *} "* ]]
}
is_solo() { in_list "$SOLO" "$1"; }
is_quiet() { in_list "$QUIET" "$1"; }
is_light() { in_list "$LIGHT" "$1"; }

# pool ITEM...: start_one ITEM for each, and done_one for each as it ends (bg_key, step_rc,
# step_secs set, its output shown). An item whose base name is in SOLO runs alone, and the
# items after it wait for it. The others start in their order while fewer than LANES run
# that are not light; beyond that, a light one may start out of its order while fewer than
# LANES + LIGHT_LANES run in all.
pool() {
    local pending=("$@") i item heavy busy solo_on=0 quiet_on=0 started
    while :; do
        started=
        heavy=0 busy=0 # the pool's suites running (not solo or quiet), and those not light
        for item in "${!bg_pid[@]}"; do
            is_quiet "$item" && continue
            busy=$((busy + 1))
            is_light "$item" || heavy=$((heavy + 1))
        done
        for i in "${!pending[@]}"; do
            item=${pending[$i]}
            if is_solo "$item"; then
                ((${#bg_pid[@]} == 0)) && started=$item
                break
            fi
            ((solo_on)) && break
            if is_quiet "$item"; then
                ((quiet_on)) && continue
                started=$item
                break
            fi
            ((busy >= LANES + LIGHT_LANES)) && break
            if is_light "$item" || ((heavy < LANES)); then
                started=$item
                break
            fi
        done
        if [[ -n $started ]]; then
            unset "pending[$i]"
            is_solo "$started" && solo_on=1
            is_quiet "$started" && quiet_on=1
            start_one "$started"
            continue
        fi
        ((${#bg_pid[@]})) || break
        bg_next || break
        is_solo "$bg_key" && solo_on=0
        is_quiet "$bg_key" && quiet_on=0
        done_one "$bg_key"
    done
}

echo "run-tests: $(uname -sr), $(nproc) cpus, $LANES suites at a time and $LIGHT_LANES light" \
    "ones, timeout ${STEP_TIMEOUT} s each"

want a && queue_cunit "unit-tests" build/test/unit-tests
want b && queue_cunit "unit-tests (asan+ubsan)" build/san/test/unit-tests "${SAN_ENV[@]}"
want c && queue_cunit "rdp-tests" build/test/rdp-tests
want d && queue_cunit "rdp-tests (asan+ubsan, quick)" build/san/test/rdp-tests "${SAN_ENV[@]}" \
    RDP_TEST_QUICK=1
want e && queue_shell
want e && queue_netns
want f && queue_fuzz
want g && queue_style

# the order: SOLO first, then QUIET and the rest, each longest first
solo=() quiet=() rest=()
longest_first() { # longest_first NAME...: by WALL, longest first
    (($#)) || return 0
    for k; do printf '%s\t%s\n' "${WALL[$k]:-5}" "$k"; done |
        sort -t$'\t' -k1,1 -g -r | cut -f2-
}
for k in "${QUEUE[@]}"; do
    if is_solo "$k"; then
        solo+=("$k")
    elif is_quiet "$k"; then
        quiet+=("$k")
    else
        rest+=("$k")
    fi
done
mapfile -t quiet < <(longest_first ${quiet[@]+"${quiet[@]}"})
mapfile -t rest < <(longest_first ${rest[@]+"${rest[@]}"})
header "${#QUEUE[@]} suites: ${#solo[@]} alone first; then the rest, $LANES at a time and" \
    "$LIGHT_LANES light ones, with ${#quiet[@]} quiet ones beside them one at a time, longest first"
pool ${solo[@]+"${solo[@]}"} ${quiet[@]+"${quiet[@]}"} ${rest[@]+"${rest[@]}"}
finished=1

# the times of this run, for the next one's order (merged: suites not run keep theirs)
if [[ -d build && -f $tmp/times ]]; then
    { cat "$tmp/times"; cat "$TIMES" 2>/dev/null || true; } | awk -F'\t' '!seen[$1]++' >"$TIMES.new" &&
        mv "$TIMES.new" "$TIMES"
fi

header "summary"
printf '  %s\n' "${summary[@]}"
if [[ -f $tmp/times ]]; then
    echo
    echo "  the slowest suites (seconds; the budget of make check is 8 minutes on 2 CPUs):"
    sort -t$'\t' -k2,2 -g -r "$tmp/times" | head -8 |
        awk -F'\t' '{ printf "    %8.1f  %s\n", $2, $1 }'
fi
wall=$(awk -v a="$t_start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.0f", b - a }')
echo "  tests: ${wall} s wall, $LANES at a time and up to $LIGHT_LANES light ones beside them"
# make check's own time, the build included: the make that runs this script (its parent, or
# the shell between them) has been running that long. The budget is 8 minutes on 2 CPUs.
if [[ $STEPS == abcdeg && -z ${ONLY:-} ]]; then
    pp=$PPID
    for _ in 1 2; do
        if [[ $(ps -o comm= -p "$pp" 2>/dev/null) == make ]]; then
            all=$(ps -o etimes= -p "$pp" | tr -d ' ')
            echo "  make check: ${all} s, build included (budget: 480 s on 2 CPUs; load average" \
                "now $(cut -d' ' -f1 /proc/loadavg))"
            ((all <= 480)) || echo "  over budget: make a slow suite faster, or move it to" \
                "make soak (LONG above)"
            break
        fi
        pp=$(ps -o ppid= -p "$pp" 2>/dev/null | tr -d ' ')
        [[ -n $pp ]] || break
    done
fi
echo
if ((${#failed_suites[@]})); then
    echo "  failed: ${failed_suites[*]}"
    head -20 "$tmp/fails" 2>/dev/null | sed 's/^/    /'
fi
if ((passed + failed == 0)); then
    echo "run-tests: no test ran"
fi
echo "check: $passed passed, $failed failed, $skipped skipped"
((failed == 0 && passed > 0))
