#!/bin/bash
# bench/profile/rdp-timeline.sh - the critical path of one large message in a ping-pong, step
# by step: rdpbench built with -DRDP_TRACE (rdp/trace.h; build/trace/, separate from build/)
# records when rdp_send is called and returns, each sendmmsg and recvmmsg, and each delivery,
# on both ends; the two records share CLOCK_MONOTONIC and merge into one timeline. For every
# message (either direction) it prints the median over all messages of:
#   sender   rdp_send -> first sendmmsg   cutting, copying and MACs of the first slice
#            sendmmsg #k                  each send of the message (slices, RDP_PIPE_BYTES)
#            between sends #k and #k+1    MACs of the next slice
#            rdp_send, whole              call to return
#   receiver first sendmmsg -> wake       until its first read of the message returns
#            last sendmmsg -> delivery    the rest of the message read, checked, joined; of
#                                         it: the last read (often called before that send
#                                         returns: the packets arrive during the send), and
#                                         the MAC checks, joining and delivery after it
#            delivery -> answer sent      the application: rdpbench verifies the message
#                                         (the server then echoes it, the client makes the next)
#   one way  rdp_send -> the answer's rdp_send
# Then the same round trips over kernel TCP (--vs-tcp), for the RTT beside RDP's.
# The two processes are pinned to different CPUs (client 0, server 1; PIN=0 leaves them to
# the scheduler), so that the figures come from one placement. Not part of `make bench`: run
# it by hand, as root (network namespaces), on a quiet machine. The probes cost about 5 % of
# the round trip (two clock reads per step).
#
# usage: bench/profile/rdp-timeline.sh [--help] [MTU [SIZE [COUNT]]]
#        MTU of the veth pair (1500), SIZE message bytes (65536), COUNT round trips (2000)
# env:   PIN (1), KEEP=1 keeps the raw records in bench/out/timeline/
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
# shellcheck source-path=SCRIPTDIR source=../lib/common.sh
. "$HERE/../lib/common.sh"
bench_help_arg "$0" "${1:-}"
mtu=${1:-1500} size=${2:-65536} count=${3:-2000}
for v in "$mtu" "$size" "$count"; do
    [[ $v =~ ^[0-9]+$ ]] || {
        echo "usage: bench/profile/rdp-timeline.sh [--help] [MTU [SIZE [COUNT]]]" >&2
        exit 2
    }
done
((EUID == 0)) || {
    echo "rdp-timeline: needs root (network namespaces)" >&2
    exit 1
}

make -C "$ROOT" --no-print-directory BUILD=build/trace CFLAGS="-O2 -g -DRDP_TRACE" \
    build/trace/bin/rdpbench >/dev/null
BIN=$ROOT/build/trace/bin/rdpbench
tmp=$(mktemp -d)
cleanup() {
    stop_server
    rm -rf "$tmp"
}
trap cleanup EXIT

pin_srv=() pin_cli=()
if [[ ${PIN:-1} == 1 ]] && (($(nproc) >= 2)); then
    pin_srv=(taskset -c 1) pin_cli=(taskset -c 0)
fi
# shellcheck source-path=SCRIPTDIR source=../../test/netns/lib/netns.sh
. "$ROOT/test/netns/lib/netns.sh"
ns_up 2 "tl$$" >/dev/null
ns_mtu "$mtu"
export RDP_TRACE_FILE=$tmp/rec
# shellcheck disable=SC2034 # start_server (bench/lib/common.sh) reads it
SRV_ARGS=(--once)
start_server "$(ns_addr 1)" ip netns exec "$(ns_name 1)" "${pin_srv[@]}"
ip netns exec "$(ns_name 0)" "${pin_cli[@]}" "$BIN" client "$SRV_ADDR" --mtu "$mtu" \
    --mode pingpong --size "$size" --count "$count" --warmup 100 --vs-tcp 2>&1 | grep -E 'RTT us|ratio'
wait "$SRV_PID" || {
    echo "rdp-timeline: the server failed:" >&2
    cat "$tmp/server.log" >&2
    exit 1
}
SRV_PID=""
ns_down
recs=("$tmp"/rec.*)
((${#recs[@]} == 2)) || {
    echo "rdp-timeline: expected two records, found ${#recs[@]}" >&2
    exit 1
}
if [[ ${KEEP:-0} == 1 ]]; then
    mkdir -p "$ROOT/bench/out/timeline"
    cp "${recs[@]}" "$ROOT/bench/out/timeline/"
    echo "records kept in bench/out/timeline/"
fi

# Merge (time, process, event, argument), then walk message by message: a message starts at
# an rdp_send of one process and ends at the next rdp_send of the other (its answer).
for f in "${recs[@]}"; do awk -v p="${f##*.}" '{print $1, p, $2, $3}' "$f"; done | sort -n -k1,1 |
    awk -v size="$size" '
    function add(name, v) {
        if (!(name in rank)) rank[name] = ++nrank
        printf "%d\t%s\t%d\n", rank[name], name, v
    }
    function finish(endt,   k) {
        if (!start || !nsend || !deliv || !sendv_out) return
        add("sender   rdp_send -> first sendmmsg", sst[1] - start)
        for (k = 1; k <= nsend && k <= 4; k++) {
            add("sender   sendmmsg #" k, sen[k] - sst[k])
            if (k < nsend) add("sender   between sends #" k " and #" k + 1, sst[k + 1] - sen[k])
        }
        add("sender   rdp_send, whole", sendv_out - start)
        add("sender   sendmmsg calls (not us)", nsend * 1000)
        if (wake) add("receiver first sendmmsg -> first read", wake - sst[1])
        if (lastsend) add("receiver last sendmmsg -> delivery", deliv - lastsend)
        if (lastsend && rout > lastsend) {
            add("receiver   last read (recvmmsg)", rout - rin)
            add("receiver   last read -> delivery", deliv - rout)
        }
        add("receiver delivery -> answer sent", endt - deliv)
        add("one way  rdp_send -> answer sent", endt - start)
    }
    $3 == 1 {                           # SENDV_IN: a new message (the answer to the last)
        if ($4 < size) next
        if (start && $2 != from) finish($1)
        start = $1; from = $2; nsend = 0; deliv = 0; wake = 0; lastsend = 0; sendv_out = 0
        rin = rin_try = rout = 0
        next
    }
    !start { next }
    $2 == from && $3 == 2 && !sendv_out { sendv_out = $1 }
    $2 == from && $3 == 3 && !deliv { sst[++nsend] = $1 }
    $2 == from && $3 == 4 && !deliv { sen[nsend] = $1; lastsend = $1 }
    $2 != from && $3 == 5 && !deliv { rin_try = $1 }
    $2 != from && $3 == 6 && $4 > 0 && !deliv { rin = rin_try; rout = $1 }
    $2 != from && $3 == 6 && $4 > 0 && nsend && !wake { wake = $1 }
    $2 != from && $3 == 7 && $4 >= size && !deliv { deliv = $1 }' |
    sort -t "$(printf '\t')" -k1,1n -k3,3n |
    awk -F '\t' '
    function out() { if (n) printf "%-44s %8.2f %8d\n", name, (n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2) / 1000, n }
    BEGIN { printf "%-44s %8s %8s\n", "step", "median us", "messages" }
    $2 != name { out(); name = $2; n = 0 }
    { v[++n] = $3 }
    END { out() }'
