#!/bin/bash
# bench/rdp.sh - RDP against kernel TCP, side by side in the same run (rdpbench --vs-tcp: each
# client run measures RDP, then the same verified workload over TCP with TCP_NODELAY).
#
# Paths: loopback 127.0.0.1 (RDP MTU 65536), and as root two network namespaces on a private
# bridge (198.18.0.1 -> 198.18.0.2, no uplink) at MTU 1500 (Ethernet default) and MTU 9000
# (jumbo frames, typical of cluster fast networks).
# Workloads: ping-pong RTT with 16 B, 1 KiB, 64 KiB messages; stream throughput with 64 KiB
# messages, with RDP's default MAC choice (auto: AES-256-GCM where both CPUs have AES-NI),
# then 16 B, 64 KiB ping-pong and the stream again with --mac chacha20poly1305 (what CPUs
# without AES-NI get), and across namespaces the stream without UDP GSO/GRO (--no-offload,
# both sides); then the stream with 5 % loss: the RDP fault injector on loopback (--loss 0.05 on
# both sides: RDP only, TCP runs lossless) and nftables `numgen random` drop of 5 % of the
# packets entering each namespace (RDP and TCP alike).
# On loopback also a stream between endpoints with different MTUs (65536 and 1500), each way.
# Then ping-pong at the sizes of SWEEP (default 4 KiB, 16 KiB, 256 KiB; empty: none), to show
# how the ratio moves between and beyond the issue's three sizes.
# Every figure is the median over RUNS client runs (default 5); the ratio column is the median
# of the per-run RDP/TCP ratios (RTT: RDP p50 / TCP p50, lower is better for RDP; throughput:
# RDP / TCP, higher is better). Raw JSON, one line per run: bench/out/rdp-*.jsonl.
#
# usage: bench/rdp.sh [--help]
# env:   RUNS (5), PATHS ("lo netns"), RDPBENCH (build/bin/rdpbench),
#        PP_COUNT (5000), PP64K_COUNT (2000), ST_COUNT (20000), LOSS_COUNT (2000),
#        SWEEP ("4096 16384 262144": bytes, 1..1048576), SWEEP_COUNT (1000)
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
# shellcheck source-path=SCRIPTDIR source=lib/common.sh
. "$HERE/lib/common.sh"
bench_no_args "$0" "$@"

BIN=${RDPBENCH:-$ROOT/build/bin/rdpbench}
RUNS=${RUNS:-5}
PATHS=${PATHS:-lo netns}
PP_COUNT=${PP_COUNT:-5000}
PP64K_COUNT=${PP64K_COUNT:-2000}
ST_COUNT=${ST_COUNT:-20000}
LOSS_COUNT=${LOSS_COUNT:-2000}
SWEEP=${SWEEP-4096 16384 262144}
SWEEP_COUNT=${SWEEP_COUNT:-1000}
OUT=$ROOT/bench/out
mkdir -p "$OUT"
STAMP=$(date -u +%Y%m%dT%H%M%SZ)
JSONL=$OUT/rdp-$STAMP.jsonl
: >"$JSONL"

[[ -x $BIN ]] || {
    echo "bench/rdp.sh: $BIN not built (make build-all)" >&2
    exit 1
}
command -v jq >/dev/null || {
    echo "bench/rdp.sh: needs jq (scripts/install-deps.sh --bench)" >&2
    exit 1
}
[[ $RUNS =~ ^[1-9][0-9]*$ ]] || {
    echo "bench/rdp.sh: RUNS must be a positive number" >&2
    exit 2
}
for sz in $SWEEP; do
    if ! [[ $sz =~ ^[1-9][0-9]*$ ]] || ((sz > 1048576)); then
        echo "bench/rdp.sh: SWEEP: sizes from 1 to 1048576 bytes, not '$sz'" >&2
        exit 2
    fi
done

# libsodium's AES-256-GCM needs AES-NI and PCLMUL
HAVE_AESGCM=0
grep -qw aes /proc/cpuinfo && grep -qw pclmulqdq /proc/cpuinfo && HAVE_AESGCM=1

tmp=$(mktemp -d)
cleanup() {
    stop_server
    rm -rf "$tmp"
}
trap cleanup EXIT # (ns_up chains it after its own ns_down)

fmt() { awk -v v="$1" -v d="${2:-2}" 'BEGIN { if (v == "NA") print "NA"; else printf "%.*f\n", d, v }'; }

# run_case LABEL CLIENT-PREFIX... -- CLIENT-ARGS...: RUNS client runs with --vs-tcp --json;
# appends "label rdp tcp ratio rdp_retrans rdp_timeouts" per run to $tmp/LABEL.
run_case() {
    local label=$1 pre=() args=() r j
    shift
    while [[ $1 != -- ]]; do
        pre+=("$1")
        shift
    done
    shift
    args=("$@")
    : >"$tmp/$label"
    echo "  $label: rdpbench client $SRV_ADDR ${args[*]} --vs-tcp --json  (x$RUNS)" >&2
    for ((r = 1; r <= RUNS; r++)); do
        if ! j=$(timeout -k 5 180 "${pre[@]}" "$BIN" client "$SRV_ADDR" "${args[@]}" --seed "$r" \
            --vs-tcp --json --timeout 30 2>"$tmp/client.err"); then
            echo "bench/rdp.sh: run $r of $label failed:" >&2
            tail -n 20 "$tmp/client.err" >&2
            tail -n 20 "$tmp/server.log" >&2
            return 1
        fi
        echo "$j" | jq -c --arg l "$label" '. + {label: $l}' >>"$JSONL"
        echo "$j" | jq -r 'if .mode == "pingpong"
            then [.rdp.rtt_us.median, .tcp.rtt_us.median, .ratio, .rdp.rtt_us.p99, .tcp.rtt_us.p99,
                  .client.retransmits + .server.retransmits, .client.timeouts + .server.timeouts]
            else [.rdp.gbps, .tcp.gbps, .ratio, 0, 0,
                  .client.retransmits + .server.retransmits, .client.timeouts + .server.timeouts]
            end | @tsv' >>"$tmp/$label"
    done
}

col() { awk -v c="$2" '{ print $c }' "$tmp/$1" | median; }

ROWS=()
LOSSROWS=()
# emit LABEL PATH MTU WHAT KIND(lat|bw)
emit() {
    local l=$1 p=$2 m=$3 w=$4 kind=$5 rdp tcp ratio
    rdp=$(col "$l" 1)
    tcp=$(col "$l" 2)
    ratio=$(col "$l" 3)
    if [[ $kind == lat ]]; then
        ROWS+=("| $p | $m | $w | RTT p50 µs | **$(fmt "$rdp")** (p99 $(fmt "$(col "$l" 4)")) | **$(fmt "$tcp")** (p99 $(fmt "$(col "$l" 5)")) | $(fmt "$ratio" 3) | $RUNS |")
    else
        ROWS+=("| $p | $m | $w | Gbit/s | **$(fmt "$rdp")** | **$(fmt "$tcp")** | $(fmt "$ratio" 3) | $RUNS |")
    fi
}
# emit_loss LABEL-LOSSY LABEL-CLEAN PATH MTU HOW TCP-LOSSY(yes|no)
emit_loss() {
    local l=$1 c=$2 p=$3 m=$4 how=$5 tl=$6 r0 r1 t0 t1 tcpcell
    r1=$(col "$l" 1)
    r0=$(col "$c" 1)
    t1=$(col "$l" 2)
    t0=$(col "$c" 2)
    if [[ $tl == yes ]]; then
        tcpcell="$(fmt "$t0") → **$(fmt "$t1")** ($(awk -v a="$t1" -v b="$t0" 'BEGIN { printf "%.0f", 100 * a / b }') %)"
    else
        tcpcell="$(fmt "$t1") (not lossy: the injector is inside RDP)"
    fi
    LOSSROWS+=("| $p | $m | $how | $(fmt "$r0") → **$(fmt "$r1")** ($(awk -v a="$r1" -v b="$r0" 'BEGIN { printf "%.0f", 100 * a / b }') %) | $tcpcell | $(fmt "$(col "$l" 3)" 3) | $(fmt "$(col "$l" 6)" 0) / $(fmt "$(col "$l" 7)" 0) | $RUNS |")
}

# size_name BYTES: 4096 -> "4 KiB", 1048576 -> "1 MiB", 1000 -> "1000 B"
size_name() {
    local b=$1
    if ((b % 1048576 == 0)); then
        echo "$((b / 1048576)) MiB"
    elif ((b % 1024 == 0)); then
        echo "$((b / 1024)) KiB"
    else
        echo "$b B"
    fi
}

workloads() { # workloads TAG PATH MTU PREFIX... -- EXTRA-ARGS...
    local tag=$1 p=$2 m=$3 pre=() extra=()
    shift 3
    while [[ $1 != -- ]]; do
        pre+=("$1")
        shift
    done
    shift
    extra=("$@")
    run_case "$tag-pp16" "${pre[@]}" -- --mode pingpong --size 16 --count "$PP_COUNT" "${extra[@]}"
    emit "$tag-pp16" "$p" "$m" "ping-pong 16 B" lat
    run_case "$tag-pp1k" "${pre[@]}" -- --mode pingpong --size 1024 --count "$PP_COUNT" "${extra[@]}"
    emit "$tag-pp1k" "$p" "$m" "ping-pong 1 KiB" lat
    run_case "$tag-pp64k" "${pre[@]}" -- --mode pingpong --size 65536 --count "$PP64K_COUNT" "${extra[@]}"
    emit "$tag-pp64k" "$p" "$m" "ping-pong 64 KiB" lat
    run_case "$tag-st64k" "${pre[@]}" -- --mode stream --size 65536 --count "$ST_COUNT" "${extra[@]}"
    emit "$tag-st64k" "$p" "$m" "stream 64 KiB" bw
    if ((HAVE_AESGCM)); then # the default chose AES-256-GCM: show the other MAC too
        local cc=(--mac chacha20poly1305)
        run_case "$tag-pp16-cc" "${pre[@]}" -- --mode pingpong --size 16 --count "$PP_COUNT" \
            "${cc[@]}" "${extra[@]}"
        emit "$tag-pp16-cc" "$p" "$m" "ping-pong 16 B, MAC chacha20poly1305" lat
        run_case "$tag-pp64k-cc" "${pre[@]}" -- --mode pingpong --size 65536 --count "$PP64K_COUNT" \
            "${cc[@]}" "${extra[@]}"
        emit "$tag-pp64k-cc" "$p" "$m" "ping-pong 64 KiB, MAC chacha20poly1305" lat
        run_case "$tag-st64k-cc" "${pre[@]}" -- --mode stream --size 65536 --count "$ST_COUNT" \
            "${cc[@]}" "${extra[@]}"
        emit "$tag-st64k-cc" "$p" "$m" "stream 64 KiB, MAC chacha20poly1305" bw
    fi
    if [[ $tag == ns* ]]; then # the server runs with --no-offload too (SRV_ARGS)
        SRV_ARGS=(--no-offload)
        start_server "$SRV_IP" "${SRV_PRE[@]}"
        SRV_ARGS=()
        run_case "$tag-st64k-nooff" "${pre[@]}" -- --mode stream --size 65536 --count "$ST_COUNT" \
            --no-offload "${extra[@]}"
        emit "$tag-st64k-nooff" "$p" "$m" "stream 64 KiB, no GSO/GRO" bw
        start_server "$SRV_IP" "${SRV_PRE[@]}"
    fi
    local sz
    for sz in $SWEEP; do
        run_case "$tag-pp$sz" "${pre[@]}" -- --mode pingpong --size "$sz" --count "$SWEEP_COUNT" \
            "${extra[@]}"
        emit "$tag-pp$sz" "$p" "$m" "ping-pong $(size_name "$sz") (sweep)" lat
    done
    # the loss comparison's clean reference: same count as the lossy run
    run_case "$tag-st64k-ref" "${pre[@]}" -- --mode stream --size 65536 --count "$LOSS_COUNT" "${extra[@]}"
}

echo "# rdpbench vs kernel TCP: $(date -u +%Y-%m-%dT%H:%M:%SZ), $(hostname), kernel $(uname -r)," \
    "$(nproc) cpus, RUNS=$RUNS" >&2
t_start=$SECONDS

for path in $PATHS; do
    case $path in
    lo)
        echo "## loopback" >&2
        start_server 127.0.0.1
        workloads lo "loopback" 65536 env --
        # nodes with different MTUs (a server with its own --mtu): packets at the smaller one's
        # size, both ways
        SRV_ARGS=(--mtu 1500)
        start_server 127.0.0.1 env
        run_case lo-st64k-to1500 env -- --mode stream --size 65536 --count "$ST_COUNT" --mtu 65536
        emit lo-st64k-to1500 "loopback" "65536 → 1500" "stream 64 KiB, to a peer at MTU 1500" bw
        SRV_ARGS=(--mtu 65536)
        start_server 127.0.0.1 env
        run_case lo-st64k-from1500 env -- --mode stream --size 65536 --count "$ST_COUNT" --mtu 1500
        emit lo-st64k-from1500 "loopback" "1500 → 65536" "stream 64 KiB, from a peer at MTU 1500" bw
        SRV_ARGS=()
        # 5 % loss from the RDP fault injector on both sides (the server's own option)
        SRV_ARGS=(--loss 0.05)
        start_server 127.0.0.1 env
        SRV_ARGS=()
        run_case lo-st64k-loss5 env -- --mode stream --size 65536 --count "$LOSS_COUNT" --loss 0.05
        emit_loss lo-st64k-loss5 lo-st64k-ref loopback 65536 "injector 5 % (both sides, both directions)" no
        stop_server
        ;;
    netns)
        if ((EUID != 0)); then
            echo "## namespaces: skipped (needs root)" >&2
            continue
        fi
        # shellcheck source-path=SCRIPTDIR source=../test/netns/lib/netns.sh
        . "$ROOT/test/netns/lib/netns.sh"
        ns_up 2 "rb$$"
        for mtu in 1500 9000; do
            echo "## namespaces, MTU $mtu" >&2
            ns_noloss
            ns_mtu "$mtu"
            SRV_IP=$(ns_addr 1)
            SRV_PRE=(ip netns exec "$(ns_name 1)")
            start_server "$SRV_IP" "${SRV_PRE[@]}"
            workloads "ns$mtu" "netns" "$mtu" ip netns exec "$(ns_name 0)" -- --mtu "$mtu"
            ns_loss 5
            run_case "ns$mtu-st64k-loss5" ip netns exec "$(ns_name 0)" -- --mode stream --size 65536 \
                --count "$LOSS_COUNT" --mtu "$mtu"
            ns_noloss
            emit_loss "ns$mtu-st64k-loss5" "ns$mtu-st64k-ref" netns "$mtu" \
                "nftables numgen 5 % drop, each way" yes
            stop_server
        done
        ns_down
        ;;
    *)
        echo "bench/rdp.sh: unknown path '$path' (lo, netns)" >&2
        exit 2
        ;;
    esac
done

echo
echo "### RDP vs kernel TCP (rdpbench --vs-tcp; medians over $RUNS runs; $(date -u +%Y-%m-%d), $(nproc) cpus, kernel $(uname -r))"
echo
echo "| path | MTU | workload | metric | RDP | TCP | RDP/TCP | runs |"
echo "| --- | ---: | --- | --- | ---: | ---: | ---: | ---: |"
printf '%s\n' "${ROWS[@]}"
echo
echo "MTU 1500: Ethernet default; MTU 9000: jumbo frames (cluster fast networks); loopback: 65536."
echo "Counts: ping-pong $PP_COUNT round trips ($PP64K_COUNT for 64 KiB${SWEEP:+, $SWEEP_COUNT for the sweep})"
echo "after min(N/10, 100) warm-up; stream $ST_COUNT messages of 64 KiB."
echo
echo "### Stream 64 KiB under 5 % loss ($LOSS_COUNT messages; clean → lossy, retained %)"
echo
echo "| path | MTU | loss | RDP Gbit/s | TCP Gbit/s | RDP/TCP (lossy) | RDP retransmits / timeouts (both sides) | runs |"
echo "| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: |"
printf '%s\n' "${LOSSROWS[@]}"
echo
echo "(raw JSON: ${JSONL#"$ROOT"/}; $((SECONDS - t_start)) s)"
