#!/bin/bash
# bench/mpi.sh - an MPI job's launch under psrun (psid's PMI server, docs/pmi.md) against
# MPICH's own launcher, in one run: `psrun -n N mpi_hello -q` on a one-node pslocal cluster
# advertising 128 CPUs, and `mpiexec.hydra -n N mpi_hello -q` on this machine (both start N
# MPICH processes on the same 2 vCPUs: the programs' own MPI_Init is in both times), for each
# N of NS; then the same two launchers with /bin/true (the launch alone, no MPI); then the
# longest MPI_Init of INIT_N ranks under each (mpi_hello -t; psrun's job on a second pslocal
# cluster of 4 nodes, 32 CPUs each, so that its fences cross the tree of psids) and the fence
# messages that job's home psid handled (its log line "pmi: job ...: F fences, M fence
# messages in, K out (C children, the root)": at most C+1 per fence each way).
# Every row is one hyperfine invocation (-N, WARMUP warm-up runs, then RUNS runs of each
# command in turn), so the two commands of a row are measured within seconds of each other.
# Table (markdown) on stdout: median and min of each and the ratio psrun / mpiexec (the
# issue's target: at most 0.7). Progress on stderr; raw hyperfine JSON in bench/out/.
#
# usage: bench/mpi.sh [--help]
# env:   RUNS (5), WARMUP (1), NS ("8 32 128"), INIT_N (128)
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
# shellcheck source-path=SCRIPTDIR source=lib/common.sh
. "$HERE/lib/common.sh"
bench_no_args "$0" "$@"

BIN=$ROOT/build/bin
HELLO=$ROOT/build/test/mpi/mpi_hello
RUNS=${RUNS:-5}
WARMUP=${WARMUP:-1}
NS=${NS:-8 32 128}
INIT_N=${INIT_N:-128}
OUT=$ROOT/bench/out
mkdir -p "$OUT"
STAMP=$(date -u +%Y%m%dT%H%M%SZ)
for t in hyperfine jq mpiexec.hydra; do
    command -v "$t" >/dev/null || {
        echo "bench/mpi.sh: needs $t (scripts/install-deps.sh --bench)" >&2
        exit 1
    }
done
[[ -x $BIN/pslocal && -x $BIN/psrun && -x $HELLO ]] || {
    echo "bench/mpi.sh: build/bin/psrun, pslocal or build/test/mpi/mpi_hello not built (make build-tests)" >&2
    exit 1
}

tmp=$(mktemp -d /tmp/bench-mpi.XXXXXX)
D=$tmp/c
D4=$tmp/c4
cleanup() {
    [[ -d $D ]] && timeout 20 "$BIN/pslocal" down --dir "$D" >/dev/null 2>&1
    [[ -d $D4 ]] && timeout 20 "$BIN/pslocal" down --dir "$D4" >/dev/null 2>&1
    rm -rf "$tmp"
}
trap cleanup EXIT
log() { echo "$*" >&2; }

timeout 30 "$BIN/pslocal" up -n 1 --cpus 128 --dir "$D" --log-level info >&2
timeout 30 "$BIN/pslocal" up -n 4 --cpus 32 --dir "$D4" --log-level info >&2
SOCK=$D/psid-0.sock

# row LABEL N PROG...: one hyperfine run of psrun and mpiexec with PROG; prints the table row
row() {
    local label=$1 n=$2 json
    shift 2
    json=$OUT/mpi-$STAMP-$label-$n.json
    log "== $label, N=$n"
    hyperfine -N --warmup "$WARMUP" --runs "$RUNS" --export-json "$json" \
        "env PSID_SOCKET=$SOCK $BIN/psrun -n $n $*" "mpiexec.hydra -n $n $*" >&2
    jq -r --arg l "$label" --arg n "$n" '.results as $r |
        "| \($l) | \($n) | \($r[0].median * 1000 | floor) (\($r[0].min * 1000 | floor)) | \($r[1].median * 1000 | floor) (\($r[1].min * 1000 | floor)) | \(($r[0].median / $r[1].median) * 100 | floor / 100) |"' "$json"
}

echo "| program | N | psrun ms median (min) | mpiexec.hydra ms median (min) | psrun / mpiexec |"
echo "|---|---|---|---|---|"
for n in $NS; do row mpi_hello "$n" "$HELLO" -q; done
for n in $NS; do row true "$n" /bin/true; done

# MPI_Init's time at INIT_N ranks, and the home's fence messages of that job
log "== MPI_Init at $INIT_N ranks"
ps_init=$(PSID_SOCKET=$D4/psid-0.sock "$BIN/psrun" -n "$INIT_N" "$HELLO" -q -t | sed -n 's/^init_ms //p')
mp_init=$(mpiexec.hydra -n "$INIT_N" "$HELLO" -q -t | sed -n 's/^init_ms //p')
fence=$(grep "pmi: job .*fence messages in" "$D4/psid-0.log" | tail -1 | sed "s/.*pmi: job [0-9:]*: //" || true)
echo
echo "| MPI_Init, longest of $INIT_N ranks | psrun | mpiexec.hydra |"
echo "|---|---|---|"
echo "| ms | $ps_init | $mp_init |"
echo
echo "home psid of the $INIT_N-rank job on 4 nodes: $fence"
