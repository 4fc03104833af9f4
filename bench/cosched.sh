#!/bin/bash
# bench/cosched.sh - busy polling when the node has more runnable threads than CPUs (issue
# 32 point 3): on one node (a 1-node pslocal cluster, 127.0.0.1, the library's same-node
# path through shared memory), sockperf ping-pong of small messages under libpspreload with
# PSP_BUSY_POLL against the same ping-pong on kernel TCP, each on an idle node and with
# SPINNERS CPU-bound processes (`sh -c 'while :; do :; done'`, ended by pid) beside it.
# Every round runs each case once, interleaved (idle: kernel, library; loaded: kernel,
# library), RUNS rounds; the table has the medians of sockperf's median round trip and of
# its mean (time per round trip), and the ratio library / kernel TCP (lower is better; the
# target is at most 1.0 under load).
# BASE=TREE (a checkout with build/lib/libpspreload.so) adds that library, run against
# this tree's cluster, in the same rounds: a before/after of the spin rule in one run.
# Every library process writes PSP_STATS; the script checks that each was accelerated and
# prints the spin rule's counters of the library's runs (spins, sleeps, samples).
# Table (markdown) on stdout, progress on stderr.
#
# usage: bench/cosched.sh [--help]
# env:   RUNS (5), SECONDS_PER_RUN (2), SIZE (16: bytes per message), BUSY_US (50:
#        PSP_BUSY_POLL of the library's runs), SPINNERS (4), BASE (none), KEEP (1: keep the
#        scratch directory, with sockperf's output and the PSP_STATS lines)
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
# shellcheck source-path=SCRIPTDIR source=lib/common.sh
. "$HERE/lib/common.sh"
bench_no_args "$0" "$@"

BIN=$ROOT/build/bin
LIB=$ROOT/build/lib/libpspreload.so
RUNS=${RUNS:-5}
SECS=${SECONDS_PER_RUN:-2}
SIZE=${SIZE:-16}
BUSY_US=${BUSY_US:-50}
SPINNERS=${SPINNERS:-4}
BASE=${BASE:-}
for f in "$BIN/pslocal" "$LIB"; do
    [[ -e $f ]] || {
        echo "bench/cosched.sh: $f not built (make)" >&2
        exit 1
    }
done
[[ -z $BASE || -e $BASE/build/lib/libpspreload.so ]] || {
    echo "bench/cosched.sh: BASE=$BASE: no build/lib/libpspreload.so there (make in it)" >&2
    exit 1
}
command -v sockperf >/dev/null || {
    echo "bench/cosched.sh: sockperf missing (scripts/install-deps.sh --bench)" >&2
    exit 1
}

W=$(mktemp -d)
CDIR=$W/cluster
SRV=
SPIN_PIDS=()
cleanup() {
    [[ -n $SRV ]] && stop_pids 2 "$SRV"
    ((${#SPIN_PIDS[@]})) && stop_pids 1 "${SPIN_PIDS[@]}"
    "$BIN/pslocal" down --dir "$CDIR" >/dev/null 2>&1 || true
    if [[ -n ${KEEP:-} ]]; then log "kept $W"; else rm -rf "$W"; fi
}
trap cleanup EXIT
log() { echo "[${SECONDS}s] $*" >&2; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "NA" || b == "NA" || b == 0) print "NA"; else printf "%.2f\n", a / b }'; }

spinners_on() {
    local i
    for ((i = 0; i < SPINNERS; i++)); do
        sh -c 'while :; do :; done' &
        SPIN_PIDS+=($!)
    done
    sleep 0.2 # they are running before the ping-pong starts
}
spinners_off() {
    ((${#SPIN_PIDS[@]})) && stop_pids 1 "${SPIN_PIDS[@]}"
    SPIN_PIDS=()
}

# prefix WHO: CMD=(the words that run a command as a task of node 0, under the library WHO
# names: no, kernel TCP; yes, this tree's; base, BASE's); pslocal exec and env exec, so a
# background job's pid is the program's own
prefix() {
    CMD=("$BIN/pslocal" exec 0 --dir "$CDIR" --)
    case $1 in
    yes) CMD+=(env LD_PRELOAD="$LIB" PSP_STATS="$W/stats.$1" PSP_BUSY_POLL="$BUSY_US") ;;
    base) CMD+=(env LD_PRELOAD="$BASE/build/lib/libpspreload.so" PSP_STATS="$W/stats.$1"
        PSP_BUSY_POLL="$BUSY_US") ;;
    esac
    return 0
}
P=14000 # a fresh port for every server (a killed server's port may be in TIME_WAIT)
# pingpong WHO LOAD: one sockperf ping-pong; its median round trip (us) to $W/LOAD.WHO
pingpong() {
    P=$((P + 1))
    while ss -Hltn "sport = :$P" | grep -q .; do P=$((P + 1)); done # (someone else's)
    prefix "$1"
    "${CMD[@]}" sockperf sr --tcp -i 127.0.0.1 -p $P >"$W/server.log" 2>&1 &
    SRV=$!
    for _ in $(seq 100); do
        ss -Hltn "sport = :$P" | grep -q . && break
        sleep 0.05
    done
    # the library registers the listener with psid just after listen: a client too quick
    # would find no library there and stay on TCP (the stats check below)
    sleep 0.3
    # --mps: sockperf sizes its table of round trips by its rate, 600 k/s by default, and
    # stops with "_seqN > m_maxSequenceNo" when the transport is faster
    "${CMD[@]}" timeout 60 sockperf pp --tcp -i 127.0.0.1 -p $P -m "$SIZE" -t "$SECS" \
        --mps 5000000 >"$W/pp.out" 2>&1 || true
    sed -n 's/.*percentile 50.000 = *\([0-9.]*\).*/\1/p' "$W/pp.out" >>"$W/$2.$1"
    sed -n 's/.*avg-latency=\([0-9.]*\).*/\1/p' "$W/pp.out" >>"$W/$2.$1.avg"
    log "    $1: median $(tail -n 1 "$W/$2.$1") us, mean $(tail -n 1 "$W/$2.$1.avg") us"
    stop_pids 2 "$SRV"
    SRV=
}

WHOS=(no yes)
[[ -n $BASE ]] && WHOS+=(base)
log "== pslocal up -n 1"
"$BIN/pslocal" up -n 1 --dir "$CDIR" --timeout 20 >"$W/up.log" 2>&1 || {
    cat "$W/up.log" >&2
    exit 1
}
for ((r = 1; r <= RUNS; r++)); do
    for load in idle loaded; do
        log "  round $r/$RUNS, $load: ${WHOS[*]}"
        [[ $load == loaded ]] && spinners_on
        for who in "${WHOS[@]}"; do pingpong "$who" "$load"; done
        [[ $load == loaded ]] && spinners_off
    done
done

# every library run must have been accelerated: a fallback would measure kernel TCP twice
for who in "${WHOS[@]:1}"; do
    acc=$(grep -c 'accelerated=[1-9]' "$W/stats.$who" 2>/dev/null || true)
    tcp=$(grep -c ' tcp=[1-9]' "$W/stats.$who" 2>/dev/null || true)
    log "library ($who): ${acc:-0} processes with accelerated connections, ${tcp:-0} with connections on TCP"
    { grep -o 'spin_[a-z]*=[0-9]*' "$W/stats.$who" 2>/dev/null || true; } |
        awk -F= '{ s[$1] += $2 } END { for (k in s) printf "  %s=%d", k, s[k]; if (NR) print "" }' >&2
done
ncpu=$(nproc)
echo "On one node, $ncpu CPUs; sockperf ping-pong $SIZE B, round trip (us), medians of $RUNS runs;"
echo "library with PSP_BUSY_POLL=$BUSY_US; loaded: $SPINNERS CPU-bound spinners beside it. sockperf's"
echo "median counts round trips, its mean is time per round trip (a spinning pair that runs"
echo "together for a moment makes many fast round trips, then one that lasts a time slice)."
echo
hdr="| node | what | kernel TCP | libpspreload | ratio library / kernel |"
sep="|---|---|---:|---:|---:|"
if [[ -n $BASE ]]; then
    hdr+=" BASE library ($(git -C "$BASE" rev-parse --short HEAD 2>/dev/null || echo "$BASE")) | ratio BASE / kernel |"
    sep+="---:|---:|"
fi
echo "$hdr"
echo "$sep"
for load in idle loaded; do
    for stat in "" .avg; do
        k=$(median <"$W/$load.no$stat")
        l=$(median <"$W/$load.yes$stat")
        what="sockperf's median"
        [[ -n $stat ]] && what="sockperf's mean"
        line="| $load$([[ $load == loaded ]] && echo " ($SPINNERS spinners)") | $what | $k | $l | $(ratio "$l" "$k") |"
        if [[ -n $BASE ]]; then
            b=$(median <"$W/$load.base$stat")
            line+=" $b | $(ratio "$b" "$k") |"
        fi
        echo "$line"
    done
done
