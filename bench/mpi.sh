#!/bin/bash
# bench/mpi.sh - an MPI job's launch under psrun (psid's PMI server, docs/pmi.md) against
# MPICH's own launcher, in one run: `psrun -n N mpi_hello -q` on a one-node pslocal cluster
# advertising 128 CPUs, and `mpiexec.hydra -n N mpi_hello -q` on this machine (both start N
# MPICH processes on the same 2 vCPUs: the programs' own MPI_Init is in both times), for each
# N of NS; then the same two launchers with /bin/true (the launch alone, no MPI); then the
# longest MPI_Init of INIT_N ranks under each (mpi_hello -t; psrun's job on a second pslocal
# cluster of 4 nodes, 32 CPUs each, so that its fences cross the tree of psids) and the fence
# messages that job's home psid handled (its log line "pmi: job ...: F fences, M fence
# messages in, K out (C children, the root)": at most C+1 per fence each way). Last (root,
# PP_RUNS > 0), MPI traffic over the preload (issue 30 point 5): test/mpi/mpi_pingpong (8 B to
# 4 MiB, UCX_TLS=tcp,self) between the two nodes of `pslocal up -n 2 --netns`, plain and
# under `psrun --preload`, PP_RUNS times each in turn; per size the median of the runs'
# half round trips and stream rates, and the ratios (a failed or hung run is left out and
# counted).
# Every row is one hyperfine invocation (-N, WARMUP warm-up runs, then RUNS runs of each
# command in turn), so the two commands of a row are measured within seconds of each other.
# Table (markdown) on stdout: median and min of each and the ratio psrun / mpiexec (the
# issue's target: at most 0.7). Progress on stderr; raw hyperfine JSON in bench/out/.
#
# usage: bench/mpi.sh [--help]
# env:   RUNS (5), WARMUP (1), NS ("8 32 128"), INIT_N (128), PP_RUNS (3; 0: no ping-pong)
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
PP_RUNS=${PP_RUNS:-3}
PP=$ROOT/build/test/mpi/mpi_pingpong
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
DN=$tmp/cn
cleanup() {
    [[ -d $DN ]] && timeout 20 "$BIN/pslocal" down --dir "$DN" >/dev/null 2>&1
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

# MPI ping-pong and stream between namespace nodes, plain and under the library
if ((PP_RUNS > 0)) && [[ $EUID == 0 && -x $PP && -e $ROOT/build/lib/libpspreload.so ]]; then
    log "== MPI ping-pong between namespace nodes, $PP_RUNS runs each way"
    timeout 60 "$BIN/pslocal" up -n 2 --netns --dir "$DN" >&2
    bad=0
    for ((i = 1; i <= PP_RUNS; i++)); do
        for mode in plain pre; do
            extra=()
            [[ $mode == pre ]] && extra=(--preload -x "PSP_STATS=$tmp/stats.$i")
            PSID_SOCKET=$DN/psid-0.sock timeout 180 "$BIN/psrun" -n 2 -N 2 "${extra[@]}" \
                -x UCX_TLS=tcp,self "$PP" >"$tmp/pp.$mode.$i" 2>&1 || true
            grep -q '^check .* ok$' "$tmp/pp.$mode.$i" || bad=$((bad + 1))
        done
    done
    echo
    echo "| MPI size (B) | latency µs, TCP | latency µs, preload | ratio | MB/s, TCP | MB/s, preload | ratio |"
    echo "|---:|---:|---:|---:|---:|---:|---:|"
    # the median over runs of each size's lat_us and bw_MBs, per mode
    awk '
        FNR == 1 { mode = FILENAME ~ /pp\.pre\./ ? "pre" : "plain" }
        $1 == "pp" && $NF == "ok" { n = ++cnt[mode, $2]; lat[mode, $2, n] = $4; bw[mode, $2, n] = $6; sizes[$2] = 1 }
        function med(a, m, s, k,   v, i, j, t) {
            for (i = 1; i <= k; i++) v[i] = a[m, s, i]
            for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++) if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
            return k % 2 ? v[(k + 1) / 2] : (v[k / 2] + v[k / 2 + 1]) / 2
        }
        END {
            for (s in sizes) {
                a = cnt["plain", s]; b = cnt["pre", s]
                if (!a || !b) continue
                lp = med(lat, "plain", s, a); lq = med(lat, "pre", s, b)
                bp = med(bw, "plain", s, a); bq = med(bw, "pre", s, b)
                printf "| %d | %s | %s | %.2f | %s | %s | %.2f |\n", s, lp, lq, lq / lp, bp, bq, (bp > 0 ? bq / bp : 0)
            }
        }' "$tmp"/pp.plain.* "$tmp"/pp.pre.* | sort -t'|' -k2,2n
    acc=$(cat "$tmp"/stats.* 2>/dev/null | tr ' ' '\n' | sed -n 's/^accelerated=//p' | awk '{ s += $1 } END { print s + 0 }')
    tcp=$(cat "$tmp"/stats.* 2>/dev/null | tr ' ' '\n' | sed -n 's/^tcp=//p' | awk '{ s += $1 } END { print s + 0 }')
    echo
    echo "\`psrun -n 2 -N 2 [--preload] -x UCX_TLS=tcp,self build/test/mpi/mpi_pingpong\` on \`pslocal up -n 2 --netns\`,"
    echo "$PP_RUNS runs each, alternating; medians of the runs' per-size figures (latency: half a round"
    echo "trip; ratio preload / TCP: above 1 is slower for latency, faster for MB/s). Under the library:"
    echo "$acc connections accelerated, $tcp on TCP (PSP_STATS); runs without a checksum: $bad."
elif ((PP_RUNS > 0)); then
    log "bench/mpi.sh: the ping-pong needs root (namespace nodes), mpi_pingpong and libpspreload.so: skipped"
fi
