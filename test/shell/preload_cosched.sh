#!/bin/bash
# preload_cosched.sh - busy polling on an oversubscribed node (issue 32 point 3): with more
# CPU-bound spinners than the node has CPUs beside them (`sh -c 'while :; do :; done'`, at
# least 4, and 2 more than the CPUs), programs under libpspreload with PSP_BUSY_POLL=50 on
# the same-node path (shared memory, a 1-node loopback cluster) still do their work
# correctly, and their waits sleep instead of spinning (the spin rule, preload/cosched.c):
#  - both ends in one process (test/tools/plsame threads): 10000 request/response pairs of
#    varying sizes and 1 MiB one way, every byte checked, shm=2; the counters show samples
#    of the node's load and waits that did not spin (spin_skipped);
#  - sockperf ping-pong between two processes for 2 s: exits 0, no message dropped,
#    duplicated or out of order, shm on both sides, spin_skipped on both.
# No figure of time is checked (bench/cosched.sh measures them): only that the work is done
# and that the rule saw the load. About 15 s on 2 CPUs; run alone (run-tests.sh: SOLO).
# shellcheck source-path=SCRIPTDIR source=lib/cluster.sh
source "$(dirname "$0")/lib/cluster.sh"
LIB=$TOP/build/lib/libpspreload.so
PLS=$TOP/build/test/tools/plsame
N="preload cosched"
require_built "$N" "$LIB" "$PLS"
command -v sockperf >/dev/null || {
    fail "$N: sockperf" "not installed (scripts/install-deps.sh --check)"
    exit 1
}
cluster_up 1
all_up 5000 || {
    fail "$N: cluster up" "not all up"
    exit 1
}
PORT=$(free_port 4)
SOCK=$CDIR/psid-0.sock
# lib TAG CMD...: CMD on node 0 under the library, busy-polling, counters to stats.TAG
lib() {
    local tag=$1
    shift
    PSID_SOCKET=$SOCK LD_PRELOAD=$LIB PSP_STATS=$CDIR/stats.$tag PSP_BUSY_POLL=50 "$@"
}
# bg TAG CMD...: the same in the background, output to TAG.out; $! is the program's pid
bg() {
    local tag=$1
    shift
    PSID_SOCKET=$SOCK LD_PRELOAD=$LIB PSP_STATS=$CDIR/stats.$tag PSP_BUSY_POLL=50 "$@" \
        >"$CDIR/$tag.out" 2>&1 &
    PIDS+=($!)
}
listening() { ss -Hltn "sport = :$1" | grep -q .; }
stat() { tail -1 "$CDIR/stats.$1" 2>/dev/null | tr ' ' '\n' | sed -n "s/^$2=//p"; }
stats() { tail -qn1 "$@" 2>/dev/null | tr '\n' ' '; }
on_shm() { [[ $(stat "$1" shm) == "${2:-1}" && $(stat "$1" tcp) == 0 ]]; }
# slept TAG: the rule sampled the load and kept waits of TAG from spinning
slept() { [[ $(stat "$1" spin_samples) -gt 0 && $(stat "$1" spin_skipped) -gt 0 ]]; }

ncpu=$(nproc)
spinners=$((ncpu + 2))
((spinners < 4)) && spinners=4
for ((i = 0; i < spinners; i++)); do
    sh -c 'while :; do :; done' &
    PIDS+=($!)
done
echo "note: $spinners spinners on $ncpu CPUs"
sleep 0.2

# 1. both ends in one process
out=$(lib threads timeout 60 "$PLS" threads "$PORT" 10000 1 2>&1)
rc=$?
[[ $rc == 0 && $out == *"rr 10000 ok"* && $out == *"bulk $((1 << 20)) ok"* ]] &&
    on_shm threads 2 && slept threads
check "$N: one process, $spinners spinners: 10000 request/response pairs and 1 MiB checked, shm=2, waits slept" \
    $? "rc $rc: $out $(stats "$CDIR/stats.threads")"

# 2. sockperf between two processes (the server runs until SIGINT)
bg sps sockperf sr --tcp -i 127.0.0.1 -p $((PORT + 1))
s=$!
wait_until 10000 listening $((PORT + 1))
sleep 0.3 # (the listener's registration with psid follows its listen)
lib spc timeout 60 sockperf pp --tcp -i 127.0.0.1 -p $((PORT + 1)) -m 16 -t 2 --mps 5000000 \
    >"$CDIR/spc.out" 2>&1 # --mps: sockperf sizes its table by an assumed 600 k/s
rc=$?
kill -INT "$s"
wait_until 5000 grep -qs . "$CDIR/stats.sps"
[ $rc -eq 0 ] && grep -q "Summary: Latency is [0-9.]* usec" "$CDIR/spc.out" &&
    grep -q "# dropped messages = 0; # duplicated messages = 0; # out-of-order messages = 0" \
        "$CDIR/spc.out" && on_shm spc && on_shm sps && slept spc && slept sps
check "$N: sockperf ping-pong 16 B for 2 s beside $spinners spinners: exits 0, none lost, shm on both, waits slept" \
    $? "rc $rc: $(grep -E "Summary|messages|ERROR" "$CDIR/spc.out" | tr '\n' ' ') $(stats "$CDIR/stats.spc" "$CDIR/stats.sps")"
grep -E "Summary|percentile 50.000" "$CDIR/spc.out" | sed 's/^/note: /'
exit $((FAILS > 0))
