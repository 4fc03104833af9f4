#!/bin/bash
# mpi_bounds.sh - the bounds of a PMI job's key-value store (pmi.max_kvs_keys,
# pmi.max_kvs_bytes: docs/pmi.md) on a 2-node loopback cluster, from a raw PMI client
# (test/tools/pmichat):
#  - max_kvs_keys = 16: a rank's puts past 16 keys get "rc=-1" naming the bound, psrun
#    prints the note, the keys put before the bound are there after the fence;
#  - max_kvs_bytes = 65536: two ranks on two nodes each put 36,000 bytes (under the bound on
#    its own node); the fence's union would pass it: both ranks' barrier_out is rc=-1 with
#    the reason, and the psids live on.
# Every wait is bounded; the daemons are killed by pid on exit (lib/cluster.sh).
# shellcheck source-path=SCRIPTDIR source=lib/cluster.sh
source "$(dirname "$0")/lib/cluster.sh"
CHAT=$TOP/build/test/tools/pmichat
require_built "mpi bounds" "$CHAT" "$BIN/psrun"
cluster_ready 2 "mpi bounds"
export PSID_SOCKET=$CDIR/psid-0.sock

# restart_with LINE: both daemons again, with LINE added to the configuration
restart_with() {
    cp "$CDIR/psid.conf" "$CDIR/psid-b.conf"
    echo "$1" >>"$CDIR/psid-b.conf"
    kill_node 0
    kill_node 1
    start_node 0 "$CDIR/psid-b.conf"
    start_node 1 "$CDIR/psid-b.conf"
    all_up 5000
}

restart_with "pmi = { max_kvs_keys = 16; };" || {
    fail "mpi bounds: restart with max_kvs_keys" "not all up"
    exit 1
}
steps=("cmd=init pmi_version=1 pmi_subversion=1" cmd=get_my_kvsname)
for i in $(seq 0 19); do steps+=("cmd=put kvsname=%K key=k$i value=$i"); done
steps+=(cmd=barrier_in "cmd=get kvsname=%K key=k3" cmd=finalize)
timeout 30 "$BIN/psrun" -n 1 "$CHAT" "${steps[@]}" >"$CDIR/keys.out" 2>&1
rc=$?
refused=$(grep -c "put_result rc=-1 msg=the_job's_key-value_store_is_over_its_bound_of_16_keys_(pmi.max_kvs_keys)" "$CDIR/keys.out")
[ "$rc" = 0 ] && [ "$refused" -ge 4 ] && grep -q "get_result rc=0 value=3$" "$CDIR/keys.out" &&
    grep -q "psrun: rank 0 .*PMI put refused: .*16 keys" "$CDIR/keys.out"
check "mpi bounds: puts past max_kvs_keys = 16 refused with the reason ($refused of 20), the rest kept, psrun told" $? \
    "rc $rc: $(head -c 1500 "$CDIR/keys.out")"

restart_with "pmi = { max_kvs_bytes = 65536; };" || {
    fail "mpi bounds: restart with max_kvs_bytes" "not all up"
    exit 1
}
val=$(printf 'v%.0s' $(seq 900))
steps=("cmd=init pmi_version=1 pmi_subversion=1" cmd=get_my_kvsname)
for i in $(seq 0 39); do steps+=("cmd=put kvsname=%K key=r%R-$i value=$val"); done
steps+=(cmd=barrier_in cmd=finalize)
timeout 30 "$BIN/psrun" -n 2 --ppn 1 --label "$CHAT" "${steps[@]}" >"$CDIR/bytes.out" 2>&1
rc=$?
[ "$rc" = 0 ] && [ "$(grep -c "put_result rc=0" "$CDIR/bytes.out")" = 80 ] &&
    [ "$(grep -c "barrier_out rc=-1 msg=the_job's_key-value_store_is_over_its_bound_of_65536_bytes" "$CDIR/bytes.out")" = 2 ]
check "mpi bounds: a fence whose union passes max_kvs_bytes fails on both nodes with the reason" $? \
    "rc $rc: $(grep -v put_result "$CDIR/bytes.out" | head -c 1500)"
kill -0 "${PIDS[0]}" && kill -0 "${PIDS[1]}"
check "mpi bounds: both psids live on" $? "a psid died"
exit $((FAILS > 0))
