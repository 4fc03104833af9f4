#!/bin/bash
# bench/tree.sh - the launch tree (issue 33 point 2): `psrun -N N --ppn 1 /bin/true` on two
# virtual clusters of N nodes (pslocal, loopback, SWIM membership so that heartbeats do not
# grow with N), one with psid.tree_width 32 (the default: a launch tree of depth 2 for
# N = 64 and 128) and one with tree_width 65536 (today's flat fan-out: the home sends a
# spawn to every node and gets every rank's answer), measured in the same hyperfine
# invocation (-N, warm-up, then RUNS runs of each in turn). Both clusters run during the
# whole row. After the timing, one more job on each cluster gives the home's message
# counts from its log ("home messages: S spawn sent, A start answers received, E exits
# received"). All psids share the machine's CPUs: on 2 vCPUs a launch is bound by the
# total work of the N nodes, not by the tree's latency; see the model in bench/RESULTS.md.
# Tables (markdown) on stdout, progress on stderr; raw hyperfine JSON in bench/out/.
#
# usage: bench/tree.sh [--help]
# env:   RUNS (10), WARMUP (2), NS ("64 128"), WIDTH (32)
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
# shellcheck source-path=SCRIPTDIR source=lib/common.sh
. "$HERE/lib/common.sh"
bench_no_args "$0" "$@"

BIN=$ROOT/build/bin
RUNS=${RUNS:-10}
WARMUP=${WARMUP:-2}
NS=${NS:-64 128}
WIDTH=${WIDTH:-32}
OUT=$ROOT/bench/out
mkdir -p "$OUT"
STAMP=$(date -u +%Y%m%dT%H%M%SZ)
command -v hyperfine >/dev/null || {
    echo "bench/tree.sh: hyperfine not found" >&2
    exit 1
}

W=$(mktemp -d /tmp/pstree.XXXXXX)
CLUSTERS=()
cleanup() {
    local d
    for d in "${CLUSTERS[@]}"; do "$BIN/pslocal" down --dir "$d" >/dev/null 2>&1 || true; done
    rm -rf "$W"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

up() { # up DIR N WIDTH
    CLUSTERS+=("$1")
    "$BIN/pslocal" up -n "$2" --cpus 4 --dir "$1" --timeout 120 --membership swim \
        --log-level info --tree-width "$3" >"$W/up.log" 2>&1 || {
        cat "$W/up.log" >&2
        exit 1
    }
}
cpu_ms() { # cpu_ms DIR: node 0's psid's CPU time so far (user + system), ms
    local pid
    pid=$("$BIN/pslocal" status --dir "$1" | awk '$1 == 0 {print $4}')
    awk -v hz="$(getconf CLK_TCK)" '{print int(($14 + $15) * 1000 / hz)}' "/proc/$pid/stat"
}
counts() { # counts DIR: the home's message line of the last job
    grep "home messages:" "$1"/psid-0.log* 2>/dev/null | tail -1 | sed 's/.*home messages: //'
}

echo "| N nodes | tree (width $WIDTH) median [min, max] ms | flat median [min, max] ms | flat / tree | home psid CPU per job, tree / flat (ms) | home messages, tree | home messages, flat |"
echo "|---|---|---|---|---|---|---|"
for n in $NS; do
    echo "N=$n: starting 2 x $n psids" >&2
    up "$W/t$n" "$n" "$WIDTH"
    up "$W/f$n" "$n" 65536
    json=$OUT/tree-$STAMP-n$n.json
    ct0=$(cpu_ms "$W/t$n") cf0=$(cpu_ms "$W/f$n")
    hyperfine -N --warmup "$WARMUP" --runs "$RUNS" --export-json "$json" \
        -n tree "env PSID_SOCKET=$W/t$n/psid-0.sock $BIN/psrun -N $n --ppn 1 /bin/true" \
        -n flat "env PSID_SOCKET=$W/f$n/psid-0.sock $BIN/psrun -N $n --ppn 1 /bin/true" >&2
    jobs=$((RUNS + WARMUP))
    cpu="$(awk -v a="$(($(cpu_ms "$W/t$n") - ct0))" -v j=$jobs 'BEGIN {printf "%.1f", a / j}') / $(awk -v a="$(($(cpu_ms "$W/f$n") - cf0))" -v j=$jobs 'BEGIN {printf "%.1f", a / j}')"
    PSID_SOCKET=$W/t$n/psid-0.sock "$BIN/psrun" -N "$n" --ppn 1 /bin/true
    PSID_SOCKET=$W/f$n/psid-0.sock "$BIN/psrun" -N "$n" --ppn 1 /bin/true
    sleep 1
    row=$(jq -r '[.results[] | (.median * 1000), (.min * 1000), (.max * 1000)] |
        "\(.[0]|floor) [\(.[1]|floor), \(.[2]|floor)] | \(.[3]|floor) [\(.[4]|floor), \(.[5]|floor)] | \((.[3] / .[0]) * 100 | floor / 100)"' "$json")
    echo "| $n | $row | $cpu | $(counts "$W/t$n") | $(counts "$W/f$n") |"
    for d in "$W/t$n" "$W/f$n"; do "$BIN/pslocal" down --dir "$d" >/dev/null 2>&1 || true; done
    CLUSTERS=()
done
# the cost of one hop: a chain (tree_width 1: each node forwards to one child and waits
# for its answer) against flat, on CHAIN nodes, where the CPUs are not the bound
nc=${CHAIN:-8}
up "$W/chain" "$nc" 1
up "$W/cflat" "$nc" 65536
json=$OUT/tree-$STAMP-chain$nc.json
hyperfine -N --warmup "$WARMUP" --runs "$RUNS" --export-json "$json" \
    -n chain "env PSID_SOCKET=$W/chain/psid-0.sock $BIN/psrun -N $nc --ppn 1 /bin/true" \
    -n flat "env PSID_SOCKET=$W/cflat/psid-0.sock $BIN/psrun -N $nc --ppn 1 /bin/true" >&2
echo
echo "| $nc nodes | chain (width 1, depth $((nc - 1))) median [min, max] ms | flat median [min, max] ms | per hop: (chain - flat) / $((nc - 2)) ms |"
echo "|---|---|---|---|"
jq -r --argjson h $((nc - 2)) '[.results[] | (.median * 1000), (.min * 1000), (.max * 1000)] |
    "| | \(.[0]*10|floor/10) [\(.[1]*10|floor/10), \(.[2]*10|floor/10)] | \(.[3]*10|floor/10) [\(.[4]*10|floor/10), \(.[5]*10|floor/10)] | \((.[0] - .[3]) / $h * 100 | floor / 100) |"' "$json"
echo
echo "Command: \`env PSID_SOCKET=DIR/psid-0.sock psrun -N N --ppn 1 /bin/true\` on \`pslocal up -n N --cpus 4 --membership swim --tree-width $WIDTH|65536\`; hyperfine -N --warmup $WARMUP --runs $RUNS, both in one invocation ($(nproc) CPUs, shared)."
