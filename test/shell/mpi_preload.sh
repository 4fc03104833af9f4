#!/bin/bash
# mpi_preload.sh - MPI traffic under the preload library (issue 30 point 5) on a pslocal
# loopback cluster of 2 nodes: Debian's MPICH (UCX; UCX_TLS=tcp,self, so UCX's data goes
# over its TCP connections) runs test/mpi/mpi_pingpong (ping-pong and streams, 8 B to
# 4 MiB, every message's bytes checked) between node 0 and node 1, once plain and once
# under `psrun --preload`:
#  - both runs: every size "ok" and the same checksum of what was received;
#  - under the library: both ranks' PSP_STATS show UCX's connections accelerated (none left
#    on TCP for a reason), and the messages' bytes went over the fast path (loopback nodes
#    share the machine: shared memory; test/netns/mpi_preload.sh has RDP between namespaces).
# In run-tests.sh's LONG list (make soak), not make check: MPICH 4.0.2 over UCX 1.13's tcp
# transport was seen to hang in MPI_Finalize after all results, on a loaded 2-CPU machine,
# with the library and without it (bounded here by the psrun timeout).
# Every wait is bounded; the cluster goes down (by its pid files) on exit.
set -u

name=mpi_preload
# shellcheck source-path=SCRIPTDIR source=lib/pslocal.sh
. "$(dirname "$0")/lib/pslocal.sh"
PP=$ROOT/build/test/mpi/mpi_pingpong
# Known failure (issue 30 point 5 is open): on loopback nodes some of UCX's connections stay
# on TCP ("no_library" and "short" in PSP_STATS: 114 MB of 240 MB in one run), and MPICH
# over UCX's tcp transport was seen to hang in MPI_Finalize. Run with MPI_PRELOAD_TEST=1.
if [[ ${MPI_PRELOAD_TEST:-0} != 1 ]]; then
    echo "SKIP: $name: a known failure, issue 30 point 5 (UCX connections left on TCP); MPI_PRELOAD_TEST=1 runs it"
    exit 0
fi
if [[ ! -x $PP || ! -e $ROOT/build/lib/libpspreload.so ]]; then
    echo "SKIP: $name: build/test/mpi/mpi_pingpong (mpicc) or libpspreload.so not built"
    exit 0
fi

cluster_tmp_up 2 mpi-preload
# run OUT ARGS...: psrun ARGS (bounded to 120 s), output in OUT, status in RC
run() { psrun_in 120 "$@"; }
# pp_ok FILE: 8 sizes ok and the checksum line
pp_ok() { [[ $(grep -c '^pp [0-9]* lat_us .* ok$' "$1") == 8 ]] && grep -q '^check .* ok$' "$1"; }
# stat FILE PID-LINE KEY: KEY's value on the n-th line
stat_of() { sed -n "${2}p" "$1" 2>/dev/null | tr ' ' '\n' | sed -n "s/^$3=//p"; }

run "$TMP/plain" -n 2 -N 2 -x UCX_TLS=tcp,self "$PP" -q
pp_ok "$TMP/plain"
check "MPI ping-pong 8 B..4 MiB across 2 nodes without the library (rc $RC)" [ "$RC$?" = 00 ]
[[ $RC == 0 ]] || tail -20 "$TMP/plain"

run "$TMP/pre" -n 2 -N 2 --preload -x PSP_STATS="$TMP/stats" -x UCX_TLS=tcp,self "$PP" -q
pp_ok "$TMP/pre"
check "the same under psrun --preload: every size ok (rc $RC)" [ "$RC$?" = 00 ]
[[ $RC == 0 ]] || tail -20 "$TMP/pre"
[[ -n $(grep '^check ' "$TMP/plain") && $(grep '^check ' "$TMP/plain") == $(grep '^check ' "$TMP/pre") ]]
check "results identical with and without the library (checksum $(grep '^check ' "$TMP/pre" | cut -d' ' -f2))" \
    [ $? = 0 ]

ok=0
[[ $(grep -c '^pspreload: ' "$TMP/stats" 2>/dev/null) == 2 ]] || ok=1
for l in 1 2; do
    acc=$(stat_of "$TMP/stats" $l accelerated) tcp=$(stat_of "$TMP/stats" $l tcp)
    shm=$(stat_of "$TMP/stats" $l shm_tx_bytes) rdp=$(stat_of "$TMP/stats" $l rdp_tx_bytes)
    fast=$((${shm:-0} + ${rdp:-0}))
    slow=$(stat_of "$TMP/stats" $l tcp_tx_bytes)
    # rank 0 sends about 8 MiB in streams and ping-pongs of 4 MiB alone
    [[ ${acc:-0} -ge 1 && ${tcp:-1} == 0 && $fast -gt 8000000 && ${slow:-1} -lt 4096 ]] || ok=1
done
check "PSP_STATS: UCX's connections accelerated on both ranks, the data on the fast path" \
    [ $ok = 0 ]
[[ $ok == 0 ]] || cat "$TMP/stats"

exit $((FAILS > 0))
