#!/bin/bash
# bench/bcast.sh - file broadcast (issue 33 point 3): a SIZE_MB file copied to every node of
# a virtual cluster of N nodes (pslocal, loopback, SWIM membership) with psbcast, down a tree
# of width 2 and of width 4 (psid.bcast_width's default), against two peers in the same
# hyperfine invocation (-N, warm-up, then RUNS runs of each in turn):
#   flat  psbcast --fanout N: the home sends the file to every node itself (a fan-out)
#   cp    a loop of cp, one copy per node from one place: what a script without a
#         broadcast does (scp to each node on a real cluster; on one machine, cp)
# Every copy goes to a node's own directory on tmpfs (/dev/shm: the nodes share this
# machine's file system; a node-local disk on a real cluster). After the timing, each
# variant's psid CPU (utime + stime of every psid of the cluster) per broadcast, from the
# daemons' /proc/PID/stat before and after the runs. Then the cost of one hop: a chain
# (width 1) of CHAIN nodes against flat on the same cluster, with a file of one chunk (256
# KiB: the pipeline's fill, hop by hop) and with the whole file.
# All psids share the machine's CPUs: on 2 vCPUs a broadcast is bound by the total work of
# the N nodes (receive, MAC, write, hash, forward), not by the tree; see the model in
# bench/RESULTS.md. Tables (markdown) on stdout, progress on stderr; raw JSON in bench/out/.
#
# usage: bench/bcast.sh [--help]
# env:   RUNS (5), WARMUP (1), NS ("16 64"), SIZE_MB (12), CHAIN (8)
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
# shellcheck source-path=SCRIPTDIR source=lib/common.sh
. "$HERE/lib/common.sh"
bench_no_args "$0" "$@"

BIN=$ROOT/build/bin
RUNS=${RUNS:-5}
WARMUP=${WARMUP:-1}
NS=${NS:-16 64}
SIZE_MB=${SIZE_MB:-12}
CHAIN=${CHAIN:-8}
OUT=$ROOT/bench/out
mkdir -p "$OUT"
STAMP=$(date -u +%Y%m%dT%H%M%SZ)
command -v hyperfine >/dev/null || {
    echo "bench/bcast.sh: hyperfine not found" >&2
    exit 1
}

W=$(mktemp -d /tmp/psbcast-bench.XXXXXX)
S=$(mktemp -d /dev/shm/psbcast-bench.XXXXXX)
CLUSTER=
cleanup() {
    [[ -n $CLUSTER ]] && "$BIN/pslocal" down --dir "$CLUSTER" >/dev/null 2>&1
    rm -rf "$W" "$S"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

up() { # up DIR N
    CLUSTER=$1
    "$BIN/pslocal" up -n "$2" --cpus 4 --dir "$1" --timeout 120 --membership swim \
        --log-level info >"$W/up.log" 2>&1 || {
        cat "$W/up.log" >&2
        exit 1
    }
    for ((i = 0; i < $2; i++)); do mkdir -p "$S/d/n$i"; done
}
down() {
    "$BIN/pslocal" down --dir "$CLUSTER" >/dev/null 2>&1 || true
    CLUSTER=
    rm -rf "$S/d"
}
cpu_ms() { # all psids of the cluster: user + system CPU so far, ms
    local pid t=0 hz
    hz=$(getconf CLK_TCK)
    for pid in $("$BIN/pslocal" status --dir "$CLUSTER" | awk '{print $4}'); do
        t=$((t + $(awk '{print $14 + $15}' "/proc/$pid/stat")))
    done
    echo $((t * 1000 / hz))
}
row() { # row JSON: "median [min, max]" of each result, ms
    jq -r '[.results[] | "\(.median * 1000 | floor) [\(.min * 1000 | floor), \(.max * 1000 | floor)]"] | join(" | ")' "$1"
}
med() { # med JSON NAME: median ms of one command
    jq -r --arg n "$2" '.results[] | select(.command == $n) | .median * 1000 | floor' "$1"
}

head -c $((SIZE_MB << 20)) /dev/urandom >"$W/src"
echo "| N nodes | tree width 2 median [min, max] ms | tree width 4 | flat (width N) | cp loop | flat / tree w2 | cp / tree w2 | psid CPU per broadcast, w2 / w4 / flat (ms) | copies MB/s, tree w2 |"
echo "|---|---|---|---|---|---|---|---|---|"
for n in $NS; do
    echo "N=$n: starting $n psids" >&2
    up "$W/c$n" "$n"
    export PSID_SOCKET=$W/c$n/psid-0.sock
    json=$OUT/bcast-$STAMP-n$n.json
    # the cp loop writes where psbcast does; -f replaces what the last run left
    printf 'for i in $(seq 0 %d); do cp %s %s/d/n$i/f; done\n' $((n - 1)) "$W/src" "$S" >"$W/cp.sh"
    hyperfine -N --warmup "$WARMUP" --runs "$RUNS" --export-json "$json" \
        -n w2 "$BIN/psbcast -f -F 2 $W/src $S/d/%N/f" \
        -n w4 "$BIN/psbcast -f -F 4 $W/src $S/d/%N/f" \
        -n flat "$BIN/psbcast -f -F $n $W/src $S/d/%N/f" \
        -n cp "bash $W/cp.sh" >&2
    for i in $(seq 0 $((n - 1))); do cmp -s "$W/src" "$S/d/n$i/f" || echo "N=$n: node $i's copy differs" >&2; done
    cpu=()
    for w in 2 4 "$n"; do
        c0=$(cpu_ms)
        for ((r = 0; r < RUNS; r++)); do "$BIN/psbcast" -f -F "$w" "$W/src" "$S/d/%N/f"; done
        cpu+=("$(awk -v a="$(($(cpu_ms) - c0))" -v r="$RUNS" 'BEGIN {printf "%.0f", a / r}')")
    done
    m2=$(med "$json" w2) mf=$(med "$json" flat) mc=$(med "$json" cp)
    ratios=$(awk -v t="$m2" -v f="$mf" -v c="$mc" 'BEGIN {printf "%.2f | %.2f", f / t, c / t}')
    rate=$(awk -v t="$m2" -v s="$SIZE_MB" -v n="$n" 'BEGIN {printf "%.0f", s * 1.048576 * n / (t / 1000)}')
    echo "| $n | $(row "$json") | $ratios | ${cpu[0]} / ${cpu[1]} / ${cpu[2]} | $rate |"
    down
done

# one hop: a chain of CHAIN nodes (each forwards to one child) against flat
echo "N=$CHAIN: starting $CHAIN psids (chain)" >&2
up "$W/chain" "$CHAIN"
export PSID_SOCKET=$W/chain/psid-0.sock
head -c $((256 << 10)) /dev/urandom >"$W/one"
json=$OUT/bcast-$STAMP-chain$CHAIN.json
hyperfine -N --warmup "$WARMUP" --runs $((RUNS * 2)) --export-json "$json" \
    -n chain1 "$BIN/psbcast -f -F 1 $W/one $S/d/%N/one" \
    -n flat1 "$BIN/psbcast -f -F $CHAIN $W/one $S/d/%N/one" \
    -n chain "$BIN/psbcast -f -F 1 $W/src $S/d/%N/f" \
    -n flat "$BIN/psbcast -f -F $CHAIN $W/src $S/d/%N/f" >&2
echo
echo "| $CHAIN nodes | chain (width 1, depth $((CHAIN - 1))), 1 chunk, median [min, max] ms | flat, 1 chunk | chain, $SIZE_MB MiB | flat, $SIZE_MB MiB | per hop, 1 chunk: (chain - flat) / $((CHAIN - 2)) ms | per hop, $SIZE_MB MiB |"
echo "|---|---|---|---|---|---|---|"
h1=$(awk -v a="$(med "$json" chain1)" -v b="$(med "$json" flat1)" -v h=$((CHAIN - 2)) 'BEGIN {printf "%.2f", (a - b) / h}')
hf=$(awk -v a="$(med "$json" chain)" -v b="$(med "$json" flat)" -v h=$((CHAIN - 2)) 'BEGIN {printf "%.2f", (a - b) / h}')
echo "| | $(row "$json") | $h1 | $hf |"
down
echo
echo "Command: \`psbcast -f -F WIDTH FILE /dev/shm/.../%N/f\` (a $SIZE_MB MiB file) on \`pslocal up -n N --cpus 4 --membership swim\`; hyperfine -N --warmup $WARMUP --runs $RUNS, all variants in one invocation ($(nproc) CPUs, shared); $(date -u +%Y-%m-%d), $(git -C "$ROOT" rev-parse --short HEAD)."
