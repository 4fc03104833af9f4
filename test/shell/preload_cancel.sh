#!/bin/bash
# preload_cancel.sh - cancellation and the lifetimes of the library's records under
# AddressSanitizer with the lock checker: the ASan tree's library (build/san, built with
# PSP_LOCK_CHECK: a thread that ends holding psp.lock or psi_lock aborts the process with a
# message), preloaded after ASan's runtime into plsem, runs, between two nodes and on one
# node, the semantics scenarios
# cancelall (a cancellation pending at the start of, and acting in the sleep of, each
# cancellation point the library wraps, and at random moments of loops over them), cancel,
# closerace (a descriptor closed under a thread busy on it: no use after free) and threadfds,
# each against the kernel's transcript (preload_semantics.sh); then no process of theirs may
# have reported anything (ASan, UBSan, LeakSanitizer: a cancelled poll's buffers). Skips
# when the ASan tree is not built (make check builds it).
# shellcheck source-path=SCRIPTDIR source=lib/cluster.sh
TOP=$(cd "$(dirname "$0")/../.." && pwd)
SAN=$TOP/build/san
NAME="preload cancellation (asan, lock checker)"
if [ ! -f "$SAN/lib/libpspreload.so" ]; then
    echo "SKIP: $NAME: the ASan tree is not built (build/san)"
    exit 0
fi
# plsem is the plain tree's (the kernel's runs are plain), the runtime preloaded first, as
# ASan wants to be the first library of a process
rt=$(ldd "$SAN/lib/libpspreload.so" | awk '/libasan/ { print $3 }')
logs=$(mktemp -d /tmp/pscancel.XXXXXX)
trap 'rm -rf "$logs"' EXIT
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:log_path=$logs/asan"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:log_path=$logs/ubsan"
fails=0
for same in 0 1; do
    out=$(PRELOAD_SAME_NODE=$same PRELOAD_LIB=$SAN/lib/libpspreload.so PRELOAD_PRE=$rt \
        PRELOAD_ASYNC="" \
        PRELOAD_SCENARIOS=${CANCEL_SCENARIOS:-"cancelall cancel closerace threadfds"} \
        bash "$TOP/test/shell/preload_semantics.sh" 2>&1)
    grep -E '^(PASS|FAIL|SKIP):' <<<"$out" | sed "s/^\([A-Z]*\): preload/\1: $NAME: preload/"
    fails=$((fails + $(grep -c '^FAIL' <<<"$out")))
done
if compgen -G "$logs/*" >/dev/null; then
    echo "FAIL: $NAME: reports: $(grep -h -m1 -E 'SUMMARY|lock check' "$logs"/* | sort | uniq -c)"
    for f in "$logs"/*; do head -30 "$f"; done | head -120
    fails=$((fails + 1))
else
    echo "PASS: $NAME: no report of ASan, UBSan, LSan or the lock checker"
fi
exit $((fails > 0))
