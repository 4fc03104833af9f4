#!/bin/bash
# mpi_preload.sh - MPI traffic under the preload library between namespace nodes (issue 30
# point 5; root only): `pslocal up -n 2 --netns` (one network namespace per node, as on a
# real cluster: each node's UCX listens on its own addresses), Debian's MPICH over UCX's
# tcp transport (UCX_TLS=tcp,self) running test/mpi/mpi_pingpong between the nodes, plain
# and under `psrun --preload`:
#  - both runs: every size "ok", the same checksum of what was received;
#  - under the library: every UCX connection accelerated (on TCP only "short" ones: UCX
#    connects both ways at once and closes the duplicate within a few ms), the messages'
#    bytes over RDP (rank 0 sends about 240 MB), TCP only for the first bytes.
# A run that printed every result and then did not return from MPI_Finalize passes with a
# note (test/shell/mpi_preload.sh says why). Every wait is bounded; the cluster goes down on
# exit (pslocal down, by its state file).
set -u

# shellcheck disable=SC1091 # the helpers beside this script
. "$(dirname "$0")/lib/netns.sh"
ns_require_root

name=mpi_preload_netns
# shellcheck source-path=SCRIPTDIR source=../shell/lib/pslocal.sh
. "$(dirname "$0")/../shell/lib/pslocal.sh"
PP=$ROOT/build/test/mpi/mpi_pingpong
if [[ ! -x $PP || ! -e $ROOT/build/lib/libpspreload.so ]]; then
    echo "SKIP: $name: build/test/mpi/mpi_pingpong (mpicc) or libpspreload.so not built"
    exit 0
fi

TMP=$(mktemp -d /tmp/mpi-preload-netns.XXXXXX)
D=$TMP/c
trap cluster_tmp_cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
pl up -n 2 --netns --dir "$D" >"$TMP/up.out" 2>&1 || {
    fail "cluster up" "$(cat "$TMP/up.out")"
    exit 1
}
eval "$("$PSLOCAL" env --dir "$D")"

# shellcheck source-path=SCRIPTDIR source=../shell/lib/mpipp.sh
. "$(dirname "$0")/../shell/lib/mpipp.sh"
pp_both 60 "between namespace nodes"

if [[ $HUNG == 1 ]]; then
    echo "SKIP: $name: PSP_STATS (the run under the library was ended in MPI_Finalize)"
    exit $((FAILS > 0))
fi
ok=0 rdp_all=0
[[ $(grep -c '^pspreload: ' "$TMP/stats" 2>/dev/null) == 2 ]] || ok=1
for l in 1 2; do
    acc=$(stat_of "$TMP/stats" $l accelerated) tcp=$(stat_of "$TMP/stats" $l tcp)
    sh=$(stat_of "$TMP/stats" $l short) bad=$(stat_of "$TMP/stats" $l bad_msgs)
    rdp=$(stat_of "$TMP/stats" $l rdp_tx_bytes) slow=$(stat_of "$TMP/stats" $l tcp_tx_bytes)
    rdp_all=$((rdp_all + ${rdp:-0}))
    [[ ${acc:-0} -ge 4 && ${tcp:-1} == "${sh:-0}" && ${bad:-1} == 0 && ${slow:-1} -lt 65536 ]] || ok=1
done
((rdp_all > 200000000)) || ok=1
check "PSP_STATS: every UCX connection accelerated (but short ones), the data over RDP" [ $ok = 0 ]
[[ $ok == 0 ]] || cat "$TMP/stats"

exit $((FAILS > 0))
