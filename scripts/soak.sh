#!/bin/bash
# soak.sh - `make soak`: the long runs that make check keeps short (it stays well under 10
# minutes): psid_busy for 60 s with every CPU saturated, RDP's fault run with 10,000
# messages, and the same-node epoll0 scenario 200 times under CPU load (20 in make check).
# CI runs it after make check (.ci/run). Prints the tests' PASS:/FAIL: lines and, last,
# "soak: N passed, N failed"; exit 1 if anything failed.
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
EPOLL0_RUNS=200 timeout 600 bash test/shell/preload_epoll0.sh | tail -3
result "preload same-node epoll0, 200 runs under load" "${PIPESTATUS[0]}"
echo "soak: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
