#!/bin/bash
# bench/preload-ab.sh - one row of bench/preload.sh for two builds of the library, A and B,
# alternately in one run: whether a change moved a figure, on this machine, now (the
# kernel's own figures move between hosts and hours; only side-by-side ratios mean much).
# Each build runs with its own psids (pslocal of that tree): the negotiation may differ.
# Both ends under the build's library, on a 2-node loopback cluster (127.0.0.1 ->
# 127.0.0.2), across network namespaces with NETNS=1 (root: 198.18.0.1 -> 198.18.0.2, a
# private bridge), or on one node with NODES=1. Prints one line per run and the medians.
#
# usage: bench/preload-ab.sh [--help] TREE_A TREE_B ROW [ENV...]
#   TREE_*: a source tree with build/ (build/bin/pslocal, build/lib/libpspreload.so), or
#           "kernel": kernel TCP, the programs without the library (on the other tree's
#           pslocal cluster, for the same addresses)
#   ROW:    pp16 | pp1k | pp64k (sockperf ping-pong 16 B, 1 KiB, 65000 B: median us)
#           setup (redis-benchmark -k 0 -c 1 PING_INLINE: connect, 1 round trip, close;
#           requests/s)
#           stream (iperf3, one stream for SECONDS_PER_RUN s: Gbit/s received)
#           get (redis-benchmark -c 50 GET, 20000 requests: requests/s)
#   ENV:    variables for both ends (e.g. PSP_BUSY_POLL=50)
# env:   RUNS (3), NODES (2), NETNS (0), SECONDS_PER_RUN (3)
set -euo pipefail

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; }
case "${1:-}" in
-h | --help)
    usage
    exit 0
    ;;
esac
if [ $# -lt 3 ]; then
    usage >&2
    exit 2
fi
A=$1 B=$2 ROW=$3
shift 3
EXTRA=("$@")
RUNS=${RUNS:-3} NODES=${NODES:-2} SECS=${SECONDS_PER_RUN:-3} NETNS=${NETNS:-0}
case "$ROW" in
pp16) SIZE=16 ;;
pp1k) SIZE=1024 ;;
pp64k) SIZE=65000 ;;
setup | stream | get) SIZE= ;;
*)
    usage >&2
    exit 2
    ;;
esac
[ "$A" = kernel ] && [ "$B" = kernel ] && {
    echo "preload-ab: one of the two must be a tree" >&2
    exit 2
}
for t in "$A" "$B"; do
    [ "$t" = kernel ] && continue
    [ -x "$t/build/bin/pslocal" ] && [ -f "$t/build/lib/libpspreload.so" ] || {
        echo "preload-ab: $t has no build/bin/pslocal or build/lib/libpspreload.so" >&2
        exit 2
    }
done
SRV_ADDR=127.0.0.$NODES SRV_NODE=$((NODES - 1)) UP=()
if [ "$NETNS" = 1 ]; then
    [ "$(id -u)" = 0 ] || {
        echo "preload-ab: NETNS=1 needs root (network namespaces)" >&2
        exit 2
    }
    SRV_ADDR=198.18.0.$NODES UP=(--netns)
fi
# on one node a round trip can take under 0.5 us: sockperf sizes its table of round trips
# by its rate ceiling, and overflows at its default (as in bench/preload.sh)
MPS=()
[ "$NODES" = 1 ] && MPS=(--mps 5000000)
DIR='' SRV=''
end() {
    [ -n "$SRV" ] && kill "$SRV" 2>/dev/null && wait "$SRV" 2>/dev/null
    [ -n "$DIR" ] && "$TREE/build/bin/pslocal" down --dir "$DIR" >/dev/null 2>&1
    [ -n "$DIR" ] && rm -rf "$DIR"
    SRV='' DIR=''
}
trap end EXIT
port() { # a free TCP port of this run, below the ephemeral range (a port some connection
    # holds as its own would fail the server's bind, and its client would run against nothing)
    local p low
    low=$(cut -f1 /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)
    [ "$low" -gt 21000 ] || low=32768
    for p in $(shuf -i 20000-$((low - 1)) -n 50); do
        ss -Hltn "sport = :$p" | grep -q . || {
            echo "$p"
            return
        }
    done
    return 1
}
# one TREE: the figure of one run
one() {
    TREE=$1
    [ "$TREE" = kernel ] && { [ "$A" = kernel ] && TREE=$B || TREE=$A; }
    local pl=$TREE/build/bin/pslocal lib=$TREE/build/lib/libpspreload.so p
    DIR=$(mktemp -d /tmp/preload-ab.XXXXXX)
    "$pl" up -n "$NODES" "${UP[@]}" --dir "$DIR" >/dev/null
    p=$(port)
    local env=(env LD_PRELOAD="$lib" "${EXTRA[@]}")
    [ "$1" = kernel ] && env=(env)
    if [ "$ROW" = stream ]; then
        "$pl" exec "$SRV_NODE" --dir "$DIR" -- "${env[@]}" iperf3 -s -B "$SRV_ADDR" -p "$p" \
            >/dev/null 2>&1 &
    elif [ -n "$SIZE" ]; then
        "$pl" exec "$SRV_NODE" --dir "$DIR" -- "${env[@]}" sockperf server --tcp -i "$SRV_ADDR" \
            -p "$p" >/dev/null 2>&1 &
    else
        "$pl" exec "$SRV_NODE" --dir "$DIR" -- "${env[@]}" redis-server --port "$p" --save '' --protected-mode no \
            --appendonly no --bind "$SRV_ADDR" >/dev/null 2>&1 &
    fi
    SRV=$!
    local up=no
    for _ in $(seq 200); do
        "$pl" exec "$SRV_NODE" --dir "$DIR" -- ss -Hltn "sport = :$p" | grep -q . && up=yes && break
        sleep 0.05
    done
    if [ $up = no ]; then # the server did not start: no figure for this run
        echo "preload-ab: the server did not listen on $p within 10 s" >&2
        end
        return
    fi
    if [ -n "$SIZE" ]; then
        "$pl" exec 0 --dir "$DIR" -- "${env[@]}" sockperf ping-pong --tcp -i "$SRV_ADDR" -p "$p" \
            -t "$SECS" -m "$SIZE" "${MPS[@]}" 2>&1 | grep -o 'percentile 50.000 = *[0-9.]*' | awk '{print $NF}'
    elif [ "$ROW" = stream ]; then
        "$pl" exec 0 --dir "$DIR" -- "${env[@]}" iperf3 -c "$SRV_ADDR" -p "$p" -t "$SECS" -f g \
            2>/dev/null | awk '/receiver/ {print $(NF - 2)}'
    elif [ "$ROW" = get ]; then
        "$pl" exec 0 --dir "$DIR" -- "${env[@]}" redis-benchmark -h "$SRV_ADDR" -p "$p" -q -c 50 \
            -n 20000 -t get 2>/dev/null | tr '\r' '\n' |
            grep -o '[0-9.]* requests per second' | tail -1 | awk '{print $1}'
    else
        "$pl" exec 0 --dir "$DIR" -- "${env[@]}" redis-benchmark -h "$SRV_ADDR" -p "$p" -q -c 1 \
            -k 0 -n 3000 -t ping_inline 2>/dev/null | tr '\r' '\n' |
            grep -o '[0-9.]* requests per second' | tail -1 | awk '{print $1}'
    fi
    end
}
median() { sort -g | awk '{v[NR] = $1} END {print NR ? (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) : "-"}'; }
ra=() rb=()
for ((r = 1; r <= RUNS; r++)); do
    x=$(one "$A") y=$(one "$B")
    echo "run $r: A $x B $y"
    ra+=("$x") rb+=("$y")
done
# (a run without a figure is left out)
ma=$(printf '%s\n' "${ra[@]}" | { grep . || true; } | median) mb=$(printf '%s\n' "${rb[@]}" | { grep . || true; } | median)
echo "$ROW ${EXTRA[*]}: median A $ma B $mb ratio B/A $(awk -v a="$ma" -v b="$mb" 'BEGIN {printf "%.2f", a ? b / a : 0}')"
