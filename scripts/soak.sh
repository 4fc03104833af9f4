#!/bin/bash
# soak.sh - `make soak`: the long runs that make check leaves out or keeps short (make check
# stays under 8 minutes on 2 CPUs). CI runs it after make check (.ci/run):
#   - psid_busy for 60 s with every CPU saturated (make check runs it short);
#   - preload_stop's stops and freezes of 60 s (make check: 6 s and 12 s);
#   - RDP's fault run with 10,000 messages;
#   - psid_hold with a spawn held 125 s (make check: 1 s);
#   - the same-node epoll0 scenario 200 times under CPU load (make check runs it 20 times);
#   - preload_lowfd with every scenario (make check: those that make, copy, close or inherit
#     descriptors) and preload_burst's 10 bursts of 300 (make check: 4), with SOAK=1;
#   - shellcheck over the tracked scripts (run-tests.sh's style step with SOAK=1);
#   - the suites of run-tests.sh's LONG list (the preload semantics suites over RDP and over
#     shared memory, the demo, the spawn flood and the stress run: 30-100 s each), through
#     run-tests.sh (ONLY=...), as many at a time as make check runs, each test counted;
#   - `make fuzz` with FUZZ_SECONDS=5 and FUZZ_MERGE=0 (the seed corpus stays as it is):
#     every fuzz target runs and passes (clang only; make soak builds the fuzz tree first).
# Prints the tests' PASS:/FAIL: lines and, last, "soak: N passed, N failed"; exit 1 if
# anything failed.
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT" || exit 1
unset MAKEFLAGS MFLAGS MAKELEVEL # make fuzz below: a make of its own, not a child of soak's
passed=0 failed=0
fails=() # every FAIL: line, repeated last: CI shows the end of the output
result() { # result NAME STATUS
    if [ "$2" -eq 0 ]; then
        echo "PASS: soak: $1"
        passed=$((passed + 1))
    else
        echo "FAIL: soak: $1 (exit status $2)"
        fails+=("FAIL: soak: $1 (exit status $2)")
        failed=$((failed + 1))
    fi
}
LOG=$(mktemp)
trap 'rm -f "$LOG"' EXIT
# counted NAME WANT CMD...: CMD is run-tests.sh or make fuzz, shown as it runs; its closing
# "check: N passed, N failed" joins the counts. WANT: how many must pass (empty: any).
counted() {
    local name=$1 want=$2 rc line
    shift 2
    "$@" 2>&1 | tee "$LOG"
    rc=${PIPESTATUS[0]}
    mapfile -t -O "${#fails[@]}" fails < <(grep -E '^(FAIL|TIMEOUT):' "$LOG" | cut -c1-300)
    line=$(grep -E '^check: [0-9]+ passed, [0-9]+ failed' "$LOG" | tail -1)
    if [[ $line =~ ^check:\ ([0-9]+)\ passed,\ ([0-9]+)\ failed ]]; then
        passed=$((passed + BASH_REMATCH[1])) failed=$((failed + BASH_REMATCH[2]))
        if ((rc != 0 && BASH_REMATCH[2] == 0)); then
            result "$name" "$rc"
        elif [[ -n $want && ${BASH_REMATCH[1]} != "$want" ]]; then
            result "$name: ${BASH_REMATCH[1]} passed, not $want" 1
        fi
    else
        result "$name (no count)" 1
    fi
}

# direct NAME CMD...: a test script run here, its output shown, its FAIL: lines kept
direct() {
    local name=$1 rc
    shift
    "$@" 2>&1 | tee "$LOG"
    rc=${PIPESTATUS[0]}
    mapfile -t -O "${#fails[@]}" fails < <(grep -E '^FAIL:' "$LOG" | cut -c1-300)
    result "$name" "$rc"
}

direct "psid_busy, ${BUSY_SECONDS:-60} s" \
    env BUSY_SECONDS="${BUSY_SECONDS:-60}" timeout 300 bash test/shell/psid_busy.sh
# the stops and freezes of preload_stop.sh at 60 s (make check: 6 s and 12 s): receiver,
# sender, and both at once, both paths, byte-exact
direct "preload_stop, SIGSTOP 60 s, both ends frozen 60 s" \
    env PRELOAD_STOP_S=60 PRELOAD_FREEZE_S=60 PRELOAD_STOP_PARTS="stop frozen" timeout 420 \
    bash test/shell/preload_stop.sh
out=$(RDP_TEST_SOAK=1 timeout 600 build/test/rdp-tests rdp_delivery 2>&1)
rc=$?
echo "$out" | tail -8
# the CUnit summary must show the suite's tests run and none failed
echo "$out" | awk '$1 == "tests" && NF == 6 && $5 == 0 && $4 > 0 { ok = 1 } END { exit !ok }'
ok=$?
result "rdp_delivery, 10,000 messages through faults" $((rc | ok))
# a held spawn let go after 125 s, longer than a spawn credential lives (make check: 1 s)
direct "psid_hold, a spawn held 125 s" env PSID_HOLD_LONG=1 timeout 300 bash test/shell/psid_hold.sh
direct "preload same-node epoll0, 200 runs under load" \
    env EPOLL0_RUNS=200 timeout 600 bash test/shell/preload_epoll0.sh

# the suites make check leaves to soak (run-tests.sh's LONG)
long=$(sed -n 's/^LONG=" \(.*\) "$/\1/p' scripts/run-tests.sh)
counted "the suites $long" "" env STEPS=e ONLY="$long" scripts/run-tests.sh
counted "preload_lowfd and preload_burst in full" "" \
    env SOAK=1 STEPS=e ONLY="preload_lowfd preload_burst" scripts/run-tests.sh
# the style step with shellcheck (make check runs clang-format alone)
counted "clang-format and shellcheck" "" env SOAK=1 STEPS=g scripts/run-tests.sh

if command -v clang >/dev/null; then
    targets=$(find test/fuzz -maxdepth 1 -name 'fuzz_*.c' | wc -l)
    counted "make fuzz runs all $targets fuzz targets" "$targets" \
        env FUZZ_SECONDS=5 FUZZ_MERGE=0 make --no-print-directory fuzz
else
    echo "SKIP: soak: make fuzz (needs clang)"
fi
if ((${#fails[@]})); then
    echo
    echo "soak's failures:"
    printf '  %s\n' "${fails[@]:0:20}"
fi
echo "soak: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
