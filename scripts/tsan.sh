#!/bin/bash
# tsan.sh - `make tsan`: the preload library and plsem of the ThreadSanitizer tree
# (build/tsan) on the semantics suite, between two nodes and on one (shared memory): each
# scenario with the library and without, as make check runs them. It passes when no run
# printed a report of ThreadSanitizer's; the suite's own verdicts (transcripts, which a 5-15
# times slower program may change in their timing) are shown, and counted apart.
# TSAN_SCENARIOS="..." runs only those; TSAN_KEEP=DIR keeps the reports there.
# Prints "tsan: N reports (of M processes), suite: P passed, F failed"; exit 1 on a report.
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT" || exit 1
T=$ROOT/build/tsan
if [ ! -x "$T/test/tools/plsem" ] || [ ! -f "$T/lib/libpspreload.so" ]; then
    echo "tsan: build/tsan is not built (make tsan builds it)" >&2
    exit 1
fi
# The runtime comes with plsem (linked with it); the library is preloaded alone, so that its
# wrappers come before the runtime's interceptors: the program's read is the library's, and
# the library's calls (its locks too) are the runtime's to see. (Preloaded after the runtime,
# the library would run inside the interceptor of a blocking call, where the runtime ignores
# the locks it takes, and reports races that are none.)
logs=$(mktemp -d /tmp/pstsan.XXXXXX)
trap 'rm -rf "$logs"' EXIT
# die_after_fork=0: several scenarios fork (and a child execs plsem again); the child's
# reports count as the parent's. report_signal_unsafe=0: rdpwait reads a connection in a
# signal handler on purpose, on top of the same thread's read asleep in the RDP socket (the
# library allocates there). The suppressions are the test program's own races (see the
# file).
export TSAN_OPTIONS="log_path=$logs/tsan die_after_fork=0 halt_on_error=0 \
report_signal_unsafe=0 suppressions=$ROOT/scripts/tsan.supp ${TSAN_OPTIONS:-}"
# cancel and cancelall are left to test/shell/preload_cancel.sh (ASan and the lock
# checker): after a cancellation in poll, ThreadSanitizer does not see the locks the
# thread's cleanup handlers take (its poll interceptor is left as if still inside: a
# preloaded poll with a cleanup that locks, cancelled, reports a race with another thread
# under the same lock), and every cleanup of the library's locks.
scen=${TSAN_SCENARIOS:-$(sed -n 's/^SCEN=${PRELOAD_SCENARIOS:-\(.*\)}$/\1/p' \
    test/shell/preload_semantics.sh | tr ' ' '\n' | grep -vx 'cancel\|cancelall' | tr '\n' ' ')}
out=$logs/suite.log
for same in 0 1; do
    PRELOAD_SAME_NODE=$same PRELOAD_LIB=$T/lib/libpspreload.so PRELOAD_SEM=$T/test/tools/plsem \
        PRELOAD_SCENARIOS="$scen" \
        bash test/shell/preload_semantics.sh 2>&1 | grep -E '^(PASS|FAIL|SKIP):' | tee -a "$out"
done
reports=$(cat "$logs"/tsan.* 2>/dev/null | grep -c 'WARNING: ThreadSanitizer')
procs=$(find "$logs" -name 'tsan.*' | wc -l)
if [ "$reports" -gt 0 ]; then
    echo "tsan: the reports, by place:"
    cat "$logs"/tsan.* | grep '^SUMMARY: ThreadSanitizer' | sort | uniq -c | sort -rn | head -30
fi
[ -n "${TSAN_KEEP:-}" ] && mkdir -p "$TSAN_KEEP" && cp "$logs"/tsan.* "$TSAN_KEEP/" 2>/dev/null
echo "tsan: $reports reports (of $procs processes), suite: $(grep -c '^PASS' "$out") passed," \
    "$(grep -c '^FAIL' "$out") failed"
[ "$reports" -eq 0 ]
