#!/bin/bash
# mpi_lib.sh - the PMI client libraries (issue 30, docs/pmi.md "The client libraries") on a
# pslocal loopback cluster of 4 nodes:
#  - PMI-1 through libpmi: test/pmi/pmi1_hello (linked against build/lib/libpmi.so) at 8
#    ranks, 2 per node: rank, size, universe, appnum, put (a value with spaces) / barrier /
#    get of every rank's value, the clique from PMI_process_mapping; PMI_Abort(5): exit 5;
#  - PMI-2 through libpmi2: test/pmi/pmi2_hello under --mpi=pmi2 at 8 ranks: the job id, a
#    value with ';' and '=', the fence, job attributes (PMI_process_mapping, universeSize),
#    localRanks, a node attribute waited for; PMI2_Abort: psrun names the rank, exit 1;
#  - both as singletons (no PMI_FD): rank 0 of 1, their own store;
#  - Open MPI (Debian's 4.1, its flux component loading libpmi.so, psrun giving
#    FLUX_PMI_LIBRARY_PATH and psid FLUX_JOB_ID): hello + Allreduce at 4 ranks on one node
#    (shared memory) and at 8 ranks on 4 nodes over TCP (self,tcp: pslocal's nodes share one
#    host name and /dev/shm, so Open MPI's shared-memory segments, named by host, job and
#    local rank, would collide between them; on real nodes they do not).
# Every wait is bounded; the cluster goes down (by its pid files) on exit.
set -u

name=mpi_lib
# shellcheck source-path=SCRIPTDIR source=lib/pslocal.sh
. "$(dirname "$0")/lib/pslocal.sh"
PT=$ROOT/build/test/pmi
if [[ ! -x $PT/pmi1_hello || ! -x $PT/pmi2_hello || ! -e $ROOT/build/lib/libpmi.so ]]; then
    echo "SKIP: $name: build/test/pmi or build/lib/libpmi.so not built"
    exit 0
fi

cluster_tmp_up 4 mpi-lib
# run OUT ARGS...: psrun ARGS (bounded to 60 s), output in OUT, status in RC
run() { psrun_in 60 "$@"; }
# --- PMI-1 through libpmi: 8 ranks on 4 nodes, the cliques are the node pairs
run "$TMP/p1" -n 8 "$PT/pmi1_hello"
ok=0
for r in 0 1 2 3 4 5 6 7; do
    lo=$((r / 2 * 2))
    grep -q "^pmi1 $r of 8 universe 8 appnum 0 clique 2: $lo,$((lo + 1)) ok$" "$TMP/p1" || ok=1
done
check "PMI-1 through libpmi: 8 ranks on 4 nodes, put / barrier / get, cliques (rc $RC)" \
    [ "$RC$ok" = 00 ]
[[ $RC$ok == 00 ]] || cat "$TMP/p1"
run "$TMP/a1" -n 4 -w 0,1 "$PT/pmi1_hello" abort 5
[[ $RC == 5 ]] && grep -q "aborted the job (MPI_Abort), exit code 5" "$TMP/a1"
check "PMI_Abort(5) through libpmi: psrun names the rank, exits 5 (rc $RC)" [ $? = 0 ]
[[ $RC == 5 ]] || cat "$TMP/a1"

# --- PMI-2 through libpmi2
run "$TMP/p2" -n 8 --mpi=pmi2 "$PT/pmi2_hello"
ok=0
for r in 0 1 2 3 4 5 6 7; do
    lo=$((r / 2 * 2))
    grep -Eq "^pmi2 $r of 8 job kvs_[0-9]+_[0-9]+ mapping \(vector,\(0,4,2\)\) local 2: $lo,$((lo + 1)) ok$" \
        "$TMP/p2" || ok=1
done
check "PMI-2 through libpmi2: 8 ranks on 4 nodes, put / fence / get, attributes (rc $RC)" \
    [ "$RC$ok" = 00 ]
[[ $RC$ok == 00 ]] || cat "$TMP/p2"
run "$TMP/a2" -n 4 -w 0,1 --mpi=pmi2 "$PT/pmi2_hello" abort
[[ $RC == 1 ]] && grep -q "aborted the job (MPI_Abort), exit code 1: pmi2_hello aborts" "$TMP/a2"
check "PMI2_Abort through libpmi2: psrun names the rank and the message, exits 1 (rc $RC)" \
    [ $? = 0 ]
[[ $RC == 1 ]] || cat "$TMP/a2"

# --- singletons: no PMI_FD
(unset PMI_FD PMI_RANK PMI_SIZE && timeout 10 "$PT/pmi1_hello" && timeout 10 "$PT/pmi2_hello") \
    >"$TMP/single" 2>&1
RC=$?
[[ $RC == 0 ]] && grep -q "^pmi1 0 of 1 universe 1 appnum 0 clique 1: 0 ok$" "$TMP/single" &&
    grep -Eq "^pmi2 0 of 1 job singinit_kvs_[0-9]+ mapping none local 1: 0 ok$" "$TMP/single"
check "both libraries as singletons (no PMI_FD): rank 0 of 1, their own store (rc $RC)" [ $? = 0 ]
[[ $RC == 0 ]] || cat "$TMP/single"

# --- Open MPI through its flux component and libpmi.so, no mpirun
OMPI=$TMP/ompi_hello
if command -v mpicc.openmpi >/dev/null &&
    mpicc.openmpi -O2 "$ROOT/test/mpi/mpi_hello.c" -o "$OMPI" 2>"$TMP/ompicc"; then
    hello_ok() { # FILE N
        local f=$1 n=$2 r want=$(($2 * ($2 + 1) / 2))
        for ((r = 0; r < n; r++)); do
            grep -q "^hello $r of $n on " "$f" && grep -q "^sum $r $want ok$" "$f" || return 1
        done
        [[ $(grep -c '^hello ' "$f") == "$n" ]]
    }
    run "$TMP/o1" -n 4 -w 0 --overbook "$OMPI"
    hello_ok "$TMP/o1" 4
    check "Open MPI hello + Allreduce, 4 ranks on one node (flux component, libpmi) (rc $RC)" \
        [ "$RC$?" = 00 ]
    [[ $RC == 0 ]] || head -30 "$TMP/o1"
    run "$TMP/o2" -n 8 -x OMPI_MCA_btl=self,tcp "$OMPI"
    hello_ok "$TMP/o2" 8
    check "Open MPI hello + Allreduce, 8 ranks on 4 nodes over TCP (rc $RC)" [ "$RC$?" = 00 ]
    [[ $RC == 0 ]] || head -30 "$TMP/o2"
else
    echo "SKIP: $name: Open MPI (mpicc.openmpi: openmpi-bin, libopenmpi-dev) not there"
fi

exit $((FAILS > 0))
