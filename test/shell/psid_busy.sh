#!/bin/bash
# psid_busy.sh - no false deaths under load: a 4-node loopback cluster runs for
# BUSY_SECONDS (10 in make check; make soak runs 60) while user processes (two per CPU, at the default nice
# level) saturate every core; no daemon may declare another one down.
# shellcheck source-path=SCRIPTDIR source=lib/cluster.sh
source "$(dirname "$0")/lib/cluster.sh"
secs=${BUSY_SECONDS:-10}

cluster_up 4
all_up 5000 || {
    fail "busy: cluster up" "not all up after 5 s"
    exit 1
}
hogs=()
for _ in $(seq $((2 * $(nproc)))); do
    (while :; do :; done) &
    hogs+=($!)
done
PIDS+=("${hogs[@]}")
end=$(($(now_ms) + secs * 1000))
while [ "$(now_ms)" -lt "$end" ]; do
    sleep 1
    grep -q "down:" "$CDIR"/psid-*.log && break
done
{ kill -KILL "${hogs[@]}"; wait "${hogs[@]}"; } 2>/dev/null
if grep -h "down:" "$CDIR"/psid-*.log; then
    fail "busy: no false death with saturated CPUs for ${secs} s" "see the lines above"
else
    pass "busy: no false death with saturated CPUs for ${secs} s"
fi
all_up 3000 || fail "busy: all up afterwards" "a node is down"
exit $((FAILS > 0))
