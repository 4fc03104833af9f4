#!/bin/bash
# bench/pmifence.sh - a PMI fence across the tree of psids (docs/pmi.md, issue 30 point 3):
# for each node count of NODES, a pslocal loopback cluster of that many nodes, one rank per
# node (psrun --ppn 1) of test/tools/pmichat doing FENCES fences in a row (barrier_in ->
# barrier_out, no puts: the tree's latency); every rank prints the median and the longest
# of its fences, the table takes the largest median over the ranks. Also the messages the
# job's home psid handled per fence (its log line "pmi: job ...: F fences, M fence messages
# in, K out (C children, the root)"), at tree width K (pmi.tree_width, default 16).
# All psids share this machine's CPUs: at 64 nodes the figure is an upper bound.
# Table (markdown) on stdout, progress on stderr.
#
# usage: bench/pmifence.sh [--help]
# env:   NODES ("4 8 64"), FENCES (200)
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
# shellcheck source-path=SCRIPTDIR source=lib/common.sh
. "$HERE/lib/common.sh"
bench_no_args "$0" "$@"

BIN=$ROOT/build/bin
CHAT=$ROOT/build/test/tools/pmichat
NODES=${NODES:-4 8 64}
FENCES=${FENCES:-200}
[[ -x $BIN/pslocal && -x $BIN/psrun && -x $CHAT ]] || {
    echo "bench/pmifence.sh: build/bin/psrun, pslocal or build/test/tools/pmichat not built (make build-tests)" >&2
    exit 1
}
tmp=$(mktemp -d /tmp/bench-pmifence.XXXXXX)
D=
cleanup() {
    [[ -n $D && -d $D ]] && timeout 30 "$BIN/pslocal" down --dir "$D" >/dev/null 2>&1
    rm -rf "$tmp"
}
trap cleanup EXIT

echo "| nodes | fence median µs (largest over ranks) | longest fence µs | home: fence messages in / out per fence |"
echo "|---:|---:|---:|---|"
for n in $NODES; do
    D=$tmp/c$n
    echo "== $n nodes" >&2
    timeout 60 "$BIN/pslocal" up -n "$n" --cpus 1 --dir "$D" --log-level info --timeout 30 >&2
    PSID_SOCKET=$D/psid-0.sock timeout 120 "$BIN/psrun" -n "$n" --ppn 1 "$CHAT" \
        "cmd=init pmi_version=1 pmi_subversion=1" "-fences:$FENCES" cmd=finalize >"$tmp/out$n"
    med=$(sed -n 's/^fence_us \([0-9]*\) .*/\1/p' "$tmp/out$n" | sort -n | tail -1)
    max=$(sed -n 's/^fence_us [0-9]* \([0-9]*\)/\1/p' "$tmp/out$n" | sort -n | tail -1)
    line=$(grep "pmi: job .*fence messages in" "$D/psid-0.log" | tail -1 || true)
    f=$(sed -n 's/.*: \([0-9]*\) fences, \([0-9]*\) fence messages in, \([0-9]*\) out.*/\1 \2 \3/p' <<<"$line")
    read -r nf min mout <<<"${f:-1 0 0}"
    echo "| $n | $med | $max | $(awk -v a="$min" -v b="$mout" -v f="$nf" 'BEGIN { printf "%.1f / %.1f", a / f, b / f }') $(sed 's/.*out //' <<<"$line") |"
    timeout 30 "$BIN/pslocal" down --dir "$D" >/dev/null 2>&1
    D=
done
