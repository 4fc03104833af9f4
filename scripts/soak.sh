#!/bin/bash
# soak.sh - `make soak`: the long runs that make check leaves out or keeps short (it stays
# under 8 minutes on 2 CPUs): psid_busy for 60 s with every CPU saturated, RDP's fault run
# with 10,000 messages, and the suites of run-tests.sh's LONG list (the preload semantics
# suites over RDP and over shared memory, the demo, the spawn flood and the stress run:
# 30-100 s each), through run-tests.sh, as many at a time as make check runs. CI runs it after make check (.ci/run). Prints the tests'
# PASS:/FAIL: lines and, last, "soak: N passed, N failed"; exit 1 if anything failed.
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT" || exit 1
passed=0 failed=0
result() { # result NAME STATUS
    if [ "$2" -eq 0 ]; then
        echo "PASS: soak: $1"
        passed=$((passed + 1))
    else
        echo "FAIL: soak: $1 (exit status $2)"
        failed=$((failed + 1))
    fi
}
BUSY_SECONDS=${BUSY_SECONDS:-60} timeout 300 bash test/shell/psid_busy.sh
result "psid_busy, ${BUSY_SECONDS:-60} s" $?
out=$(RDP_TEST_SOAK=1 timeout 600 build/test/rdp-tests rdp_delivery 2>&1)
rc=$?
echo "$out" | tail -8
# the CUnit summary must show the suite's tests run and none failed
echo "$out" | awk '$1 == "tests" && NF == 6 && $5 == 0 && $4 > 0 { ok = 1 } END { exit !ok }'
ok=$?
result "rdp_delivery, 10,000 messages through faults" $((rc | ok))
# the suites make check leaves to soak (run-tests.sh's LONG), each test counted
long=$(sed -n 's/^LONG=" \(.*\) "$/\1/p' scripts/run-tests.sh)
out=$(STEPS=e ONLY="$long" scripts/run-tests.sh 2>&1)
rc=$?
echo "$out"
line=$(grep -E '^check: [0-9]+ passed, [0-9]+ failed' <<<"$out" | tail -1)
if [[ $line =~ ^check:\ ([0-9]+)\ passed,\ ([0-9]+)\ failed ]]; then
    passed=$((passed + BASH_REMATCH[1])) failed=$((failed + BASH_REMATCH[2]))
    ((rc != 0 && BASH_REMATCH[2] == 0)) && result "the suites $long (run-tests.sh)" "$rc"
else
    result "the suites $long (run-tests.sh said no count)" 1
fi
echo "soak: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
