#!/bin/bash
# bench/gang.sh - gang scheduling (issue 32, docs/gang.md), each figure a ratio or a
# distribution measured in one run, on pslocal loopback clusters of this machine:
#  1. switch time and skew: two CPU-bound jobs spanning every node of a cluster of --cpus 1
#     nodes (N in SWITCH_NODES) take turns at quantum SWITCH_Q ms for SWITCH_S seconds; from
#     the psids' debug lines "gang: switch S done in U us, L us after its time, done at T us"
#     of the switches that froze one job and thawed the other: per node, the switch's time
#     from the scheduler's decision (the 5 ms lead + L + U) p50/p99; per switch, the skew
#     between the nodes (the spread of T) p50/p99; and the model for 1024 nodes; then, in the
#     same run, the platform's floor (test/tools/skewfloor -n N, SWITCH_S/SWITCH_Q rounds
#     every SWITCH_Q ms): N processes sleeping to common instants (clock_nanosleep
#     TIMER_ABSTIME) beside N CPU hogs, their lateness and its spread; and, as root with a
#     writable cgroup2, the switch alone: each of N processes freezes one of its two cgroups
#     of a hog and thaws the other at each instant and waits for frozen 1 (2N hogs, N
#     frozen, as the two jobs): the spread of the completions against psid's skew. A switch
#     a node did not finish before the next (or 200 ms) is cut, in both: it counts as longer
#     than all others, and a percentile on one shows as ">BOUND";
#  2. overhead: two jobs of fixed work (test/tools/gangspin --cpu WORK_S: each rank spins for
#     WORK_S s of its own CPU time) spanning every CPU of 4 nodes; each alone takes T; both at
#     once, gang-scheduled at 100 and 20 ms: the makespan against 2T (targets 1.02 and 1.05),
#     each job's share of the progress stamps while both ran (target 50 +- 2 %); and the
#     same two jobs without gang scheduling (the kernel's time-slicing) as the peer;
#  3. the coscheduling win: two jobs of two ranks, each a sockperf ping-pong (16 B,
#     PSP_BUSY_POLL=50) over the preload, on one node of 2 CPUs (shared memory) and across 2
#     nodes of 1 CPU (RDP): one job alone gives R round trips a second; both at once without
#     gang scheduling; both at once gang-scheduled at 20 and 50 ms: the sum of the two rates
#     against R (target at least 0.8);
#  4. network preemption: test/shell/gang_stream.sh with PREEMPT_BYTES at quantum PREEMPT_Q
#     (a stream between the nodes over RDP and one on a node over shared memory, frozen and
#     thawed every other quantum against a CPU-bound job): its checks, and the number of
#     freezes the receivers saw.
# Tables (markdown) on stdout, progress on stderr. Root is not needed; cgroup v2 with the
# freezer is (psid's job cgroups); without it psid stops process groups (SIGSTOP), said in
# the output.
#
# usage: bench/gang.sh [--help]
# env:   PARTS ("switch overhead cosched preempt"), SWITCH_NODES ("4 8 16"), SWITCH_Q (100),
#        SWITCH_S (6), WORK_S (4), COSCHED_S (4), PREEMPT_BYTES (1000000000), PREEMPT_Q (20),
#        PREEMPT_RATE (40: MB/s while it runs, so that 1 GB takes about a minute),
#        COSCHED_WHERE ("node nodes")
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
# shellcheck source-path=SCRIPTDIR source=lib/common.sh
. "$HERE/lib/common.sh"
bench_no_args "$0" "$@"

BIN=$ROOT/build/bin
SPIN=$ROOT/build/test/tools/gangspin
FLOOR=$ROOT/build/test/tools/skewfloor
LIB=$ROOT/build/lib/libpspreload.so
PARTS=${PARTS:-switch overhead cosched preempt}
SWITCH_NODES=${SWITCH_NODES:-4 8 16}
SWITCH_Q=${SWITCH_Q:-100}
SWITCH_S=${SWITCH_S:-6}
WORK_S=${WORK_S:-4}
COSCHED_S=${COSCHED_S:-4}
PREEMPT_BYTES=${PREEMPT_BYTES:-1000000000}
PREEMPT_Q=${PREEMPT_Q:-20}
PREEMPT_RATE=${PREEMPT_RATE:-40}
for t in "$BIN/pslocal" "$BIN/psrun" "$SPIN" "$FLOOR"; do
    [[ -x $t ]] || {
        echo "bench/gang.sh: $t not built (make build-tests)" >&2
        exit 1
    }
done
command -v sockperf >/dev/null || PARTS=${PARTS//cosched/}

tmp=$(mktemp -d /tmp/bench-gang.XXXXXX)
chmod 755 "$tmp"
CLUSTERS=()
JOBS=()
cleanup() {
    local d p
    for p in "${JOBS[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
    for d in "${CLUSTERS[@]}"; do timeout 30 "$BIN/pslocal" down --dir "$d" >/dev/null 2>&1 || true; done
    [[ -n ${GANG_KEEP:-} ]] && cp -r "$tmp" "$GANG_KEEP"
    rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
log() { echo "$*" >&2; }
ms() { date +%s%3N; }

# up DIR ARGS...: a pslocal cluster (pslocal up ARGS --dir DIR), every node up
up() {
    local d=$1
    shift
    CLUSTERS+=("$d")
    timeout 60 "$BIN/pslocal" up "$@" --dir "$d" --timeout 30 >"$tmp/up.log" 2>&1 || {
        cat "$tmp/up.log" >&2
        exit 1
    }
}
down() { timeout 30 "$BIN/pslocal" down --dir "$1" >/dev/null 2>&1 || true; }
# job DIR NAME ARGS...: psrun ARGS in the background on DIR's node 0; JOB its pid
job() {
    local d=$1 name=$2
    shift 2
    PSID_SOCKET=$d/psid-0.sock "$BIN/psrun" "$@" >"$tmp/$name.out" 2>&1 &
    JOB=$!
    JOBS+=("$JOB")
}
# pct P: the P-th percentile of the numbers on stdin
pct() { sort -n | awk -v p="$1" '{ v[NR] = $1 } END { if (!NR) { print "NA"; exit } i = int(p / 100 * NR + 0.999); if (i < 1) i = 1; print v[i] }'; }
when="$(date -u +%Y-%m-%dT%H:%MZ), $(nproc) CPUs, load $(cut -d' ' -f1 /proc/loadavg), $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null)"
echo "## bench/gang.sh, $when"

# ---- 1. switch time and skew
# kv PART KEY FILE: skewfloor's value KEY=US on FILE's line of PART (wake, freeze), in ms,
# ">BOUND" for a cut one (-1), or NA
kv() {
    sed -n "/^$1 nodes=/s/.* $2=\(-\{0,1\}[0-9]*\).*/\1/p" "$3" | awk -v b="$CUT_MS" '
        NR == 1 { if ($1 < 0) print ">" b; else printf "%.1f\n", $1 / 1000; f = 1 }
        END { if (!f) print "NA" }'
}
# ratio A B: A / B to 2 places, NA unless both are numbers and B > 0
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a ~ /^[0-9.]+$/ && b ~ /^[0-9.]+$/ && b > 0) printf "%.2f", a / b; else print "NA" }'; }
# floor_row N SKEW50 SKEW99 FILE: the table row of psid's skew beside skewfloor's output FILE
floor_row() {
    local n=$1 s50=$2 s99=$3 f=$4 f50 f99 fr
    f50=$(kv freeze spread_p50_us "$f")
    f99=$(kv freeze spread_p99_us "$f")
    fr="$f50 / $f99 ($(sed -n 's/^freeze nodes=.* cut=\([0-9]*\).*/\1/p' "$f") cut)"
    grep -q '^freeze unavailable' "$f" && fr="NA ($(sed -n 's/^freeze unavailable: //p' "$f"))"
    echo "| $n | $s50 / $s99 | $(kv wake spread_p50_us "$f") / $(kv wake spread_p99_us "$f") | $fr | $(ratio "$s50" "$f50"), $(ratio "$s99" "$f99") |"
}
floor_rows=()
# a switch that did not end in time (psid: the next switch came first, or 200 ms passed;
# skewfloor: the same bound) counts as longer than every other; a percentile on one is
# printed as ">BOUND" (ms)
CUT=999999
CUT_MS=$((SWITCH_Q < 200 ? SWITCH_Q : 200))
uncut() { awk -v cut="$CUT" -v b="$CUT_MS" '{ print ($1 == cut ? ">" b : $1) }'; }
if [[ " $PARTS " == *" switch "* ]]; then
    echo
    echo "### Switch time and skew (quantum $SWITCH_Q ms, two jobs of one CPU-bound rank per node, nodes of 1 CPU)"
    echo
    echo "| nodes | switches (cut) | per node: decision to done, p50 / p99 (ms) | skew between nodes, p50 / p99 (ms) |"
    echo "|---:|---:|---:|---:|"
    for n in $SWITCH_NODES; do
        d=$tmp/sw$n
        log "== switch: $n nodes"
        up "$d" -n "$n" --cpus 1 --gang "$SWITCH_Q" --log-level debug
        job "$d" A -N "$n" -- "$SPIN" /dev/null "$SWITCH_S"
        a=$JOB
        sleep 0.3
        job "$d" B -N "$n" -- "$SPIN" /dev/null "$SWITCH_S"
        b=$JOB
        wait "$a" "$b" || true
        # "SEQ U L T" per node's line
        cat "$d"/psid-*.log | sed -n 's/.*gang: switch \([0-9]*\) done in \([0-9]*\) us, \(-\{0,1\}[0-9]*\) us after its time, done at \([0-9]*\) us.*/\1 \2 \3 \4/p' \
            >"$tmp/sw$n.lines"
        # the middle half of the run's switches (both jobs surely running), by number: per
        # switch the skew (the spread of T) if every node logged its end, else CUT (a node's
        # switch outlasted the next switch or 200 ms: psid logs no end for it); per node and
        # switch the time from the decision (5 ms lead + L + U), or CUT
        awk -v n="$n" -v cut="$CUT" '
            { if (!c[$1]++ || $4 < lo[$1]) lo[$1] = $4; if (c[$1] == 1 || $4 > hi[$1]) hi[$1] = $4
              if (!min || $1 < min) min = $1; if ($1 > max) max = $1 }
            END { from = min + int((max - min) / 4); to = min + int(3 * (max - min) / 4)
                  for (s = from; s <= to; s++) print s, (c[s] == n ? (hi[s] - lo[s]) / 1000 : cut) }' \
            "$tmp/sw$n.lines" >"$tmp/sw$n.mid"
        awk -v n="$n" -v cut="$CUT" 'NR == FNR { keep[$1] = 1; next }
            ($1 in keep) { print (5000 + $3 + $2) / 1000; got[$1]++ }
            END { for (s in keep) for (i = got[s]; i < n; i++) print cut }' \
            "$tmp/sw$n.mid" "$tmp/sw$n.lines" >"$tmp/sw$n.time"
        skew50=$(cut -d' ' -f2 "$tmp/sw$n.mid" | pct 50 | uncut)
        skew99=$(cut -d' ' -f2 "$tmp/sw$n.mid" | pct 99 | uncut)
        echo "| $n | $(wc -l <"$tmp/sw$n.mid") ($(grep -c " $CUT$" "$tmp/sw$n.mid") cut) | $(pct 50 <"$tmp/sw$n.time" | uncut) / $(pct 99 <"$tmp/sw$n.time" | uncut) | $skew50 / $skew99 |"
        grep -q "no cgroup freezer" "$d"/psid-*.log && echo "(${n} nodes: no cgroup freezer: SIGSTOP/SIGCONT)"
        down "$d"
        # the floor, right after, on the same machine
        log "== switch floor: $n nodes"
        "$FLOOR" -n "$n" -r $((SWITCH_S * 1000 / SWITCH_Q)) -p "$SWITCH_Q" >"$tmp/floor$n" 2>&1 || true
        floor_rows+=("$(floor_row "$n" "$skew50" "$skew99" "$tmp/floor$n")")
    done

    echo
    echo "Decision to done: the scheduler's 5 ms lead, then the node's lateness after the announced"
    echo "time and its freeze + thaw until cgroup.events agrees. Skew: the spread of the nodes'"
    echo "completion times (CLOCK_REALTIME: one clock here) of one switch. A switch some node did"
    echo "not finish before the next one (or 200 ms) has no end in psid's log: it is cut and"
    echo "counts as longer than all others (a percentile on it: >${CUT_MS}). Model for 1024 nodes:"
    echo "each node's part does not depend on N (its own freezer and timer); the scheduler sends"
    echo "N switch records per quantum, which must leave within the lead: at the per-message cost"
    echo "psid's RDP send has here (~10 us), 1024 records take ~10 ms, so the lead must grow to"
    echo "about 2x that (or the record travel a tree), and the skew is then bounded by the nodes'"
    echo "clock agreement (PTP: microseconds; NTP on a LAN: ~0.1-1 ms) plus the per-node freeze"
    echo "time measured above."
    echo
    echo "Same run, the platform's floor (test/tools/skewfloor, no psid): \"wake\": N processes"
    echo "sleeping to the same instants beside N CPU hogs, the spread of their wake-ups;"
    echo "\"freeze\": each also freezes one cgroup of a hog and thaws another, as a switch does"
    echo "(2N hogs, N frozen), the spread of its frozen 1, cut as psid's (ms, p50 / p99):"
    echo
    echo "| nodes | psid's skew | floor: wake spread | floor: freeze spread | skew / freeze floor, p50 and p99 |"
    echo "|---:|---:|---:|---:|---:|"
    printf '%s\n' "${floor_rows[@]}"
fi

# ---- 2. overhead
# makespan D ARGS...: ms from starting the jobs to the last one's end, with N jobs given as
# "NAME:PSRUN ARGS" words separated by ';'
if [[ " $PARTS " == *" overhead "* ]]; then
    echo
    echo "### Overhead: two jobs of ${WORK_S} s of CPU per rank, each spanning the 4 CPUs of 4 nodes"
    echo
    echo "| scheduling | alone T (ms) | both: makespan (ms) | makespan / 2T | job A's share while both ran |"
    echo "|---|---:|---:|---:|---:|"
    for mode in 100 20 none; do
        d=$tmp/ov$mode
        log "== overhead: $mode"
        if [[ $mode == none ]]; then
            up "$d" -n 4 --cpus 1
            extra=(--overbook)
        else
            up "$d" -n 4 --cpus 1 --gang "$mode"
            extra=()
        fi
        t0=$(ms)
        job "$d" alone -N 4 "${extra[@]}" -- "$SPIN" --cpu "$tmp/ov$mode.alone" "$WORK_S"
        wait "$JOB" || true
        T=$(($(ms) - t0))
        rm -f "$tmp/ov$mode".[AB].*
        t0=$(ms)
        job "$d" A -N 4 "${extra[@]}" -- sh -c "exec $SPIN --cpu $tmp/ov$mode.A.\$PSI_NODE $WORK_S"
        a=$JOB
        job "$d" B -N 4 "${extra[@]}" -- sh -c "exec $SPIN --cpu $tmp/ov$mode.B.\$PSI_NODE $WORK_S"
        b=$JOB
        wait "$a" "$b" || true
        M=$(($(ms) - t0))
        # the share: A's stamps / all stamps, in the time both progressed
        share=$(awk 'FNR == 1 { k = FILENAME ~ /\.A\./ ? "A" : "B" } { if (!n[k]++ || $1 < s[k]) s[k] = $1; if ($1 > e[k]) e[k] = $1; t[k, NR] = $1 }
            END { from = s["A"] > s["B"] ? s["A"] : s["B"]; to = e["A"] < e["B"] ? e["A"] : e["B"]
                  for (x in t) { split(x, kk, SUBSEP); if (t[x] >= from && t[x] <= to) c[kk[1]]++ }
                  if (c["A"] + c["B"]) printf "%.1f %%", 100 * c["A"] / (c["A"] + c["B"]); else print "NA" }' \
            "$tmp/ov$mode".A.* "$tmp/ov$mode".B.*)
        label=$([[ $mode == none ]] && echo "none (kernel, --overbook)" || echo "gang, $mode ms")
        echo "| $label | $T | $M | $(awk -v m="$M" -v t="$T" 'BEGIN { printf "%.3f", m / (2 * t) }') | $share |"
        down "$d"
    done
fi

# ---- 3. the coscheduling win
# pp D NAME SERVER_ADDR PORT ARGS...: a ping-pong job (rank 0 the server at SERVER_ADDR,
# rank 1 the client for COSCHED_S s) under the library; its rate lands in $tmp/NAME.rate
pp_job() {
    local d=$1 name=$2 addr=$3 port=$4
    shift 4
    cat >"$tmp/$name.sh" <<SCRIPT
#!/bin/sh
if [ "\$PSI_RANK" = 0 ]; then
    sockperf sr --tcp -i $addr -p $port >/dev/null 2>&1 &
    srv=\$!
    n=0
    until [ -e $tmp/$name.done ]; do n=\$((n + 1)); [ \$n -gt 1200 ] && break; sleep 0.05; done
    kill \$srv
    exit 0
fi
n=0
until ss -Hltn "sport = :$port" | grep -q .; do n=\$((n + 1)); [ \$n -gt 200 ] && break; sleep 0.05; done
sockperf pp --tcp -i $addr -p $port -m 16 -t $COSCHED_S >$tmp/$name.pp 2>&1
touch $tmp/$name.done
exit 0
SCRIPT
    chmod +x "$tmp/$name.sh"
    job "$d" "$name" -n 2 "$@" --preload -x PSP_BUSY_POLL=50 -- "$tmp/$name.sh"
}
rate_of() { # round trips a second from sockperf's summary: ReceivedMessages / RunTime
    sed -n 's/.*\[Total Run\] RunTime=\([0-9.]*\) sec.*ReceivedMessages=\([0-9]*\).*/\2 \1/p' "$1" |
        awk 'NR == 1 && $2 > 0 { printf "%.0f", $1 / $2 }'
}
if [[ " $PARTS " == *" cosched "* ]]; then
    echo
    echo "### The coscheduling win: two jobs of a busy-polling 16 B ping-pong each (PSP_BUSY_POLL=50, over the preload)"
    echo
    echo "| where | one job alone: R (round trips/s) | both, no gang: sum / R | both, gang 50 ms: sum / R | both, gang 20 ms: sum / R |"
    echo "|---|---:|---:|---:|---:|"
    for where in ${COSCHED_WHERE:-node nodes}; do
        # rank 0 (the server) on node 0 at 127.0.0.1; rank 1 on node 0 or on node 1
        if [[ $where == node ]]; then
            cl=(-n 1 --cpus 2) place=(-w 0) label="one node of 2 CPUs (shared memory)"
        else
            cl=(-n 2 --cpus 1) place=(-w "0,1" --ppn 1) label="2 nodes of 1 CPU (RDP)"
        fi
        row="| $label |"
        R=
        for mode in alone none 50 20; do
            d=$tmp/cs$where$mode
            log "== cosched: $where, $mode"
            if [[ $mode == alone || $mode == none ]]; then up "$d" "${cl[@]}"; else up "$d" "${cl[@]}" --gang "$mode"; fi
            port=$(shuf -i 20000-40000 -n 1)
            over=()
            [[ $mode == none ]] && over=(--overbook)
            pp_job "$d" "cs$where$mode.1" 127.0.0.1 "$port" "${place[@]}" "${over[@]}"
            j1=$JOB
            j2=
            if [[ $mode != alone ]]; then
                pp_job "$d" "cs$where$mode.2" 127.0.0.1 $((port + 1)) "${place[@]}" "${over[@]}"
                j2=$JOB
            fi
            wait $j1 $j2 || true
            r1=$(rate_of "$tmp/cs$where$mode.1.pp")
            r2=0
            [[ -n $j2 ]] && r2=$(rate_of "$tmp/cs$where$mode.2.pp")
            if [[ $mode == alone ]]; then
                R=${r1:-0}
                row+=" $R |"
            else
                row+=" $(awk -v a="${r1:-0}" -v b="${r2:-0}" -v r="${R:-0}" 'BEGIN { if (r > 0) printf "%.2f (%.0f + %.0f)", (a + b) / r, a, b; else print "NA" }') |"
            fi
            down "$d"
        done
        echo "$row"
    done
    echo
    echo "Each job: rank 0 \`sockperf sr\`, rank 1 \`sockperf pp -m 16 -t $COSCHED_S\`, both under"
    echo "\`psrun --preload -x PSP_BUSY_POLL=50\`; rate = sockperf's ReceivedMessages / RunTime."
fi

# ---- 4. network preemption
if [[ " $PARTS " == *" preempt "* && -e $LIB ]]; then
    log "== preempt: $PREEMPT_BYTES bytes at quantum $PREEMPT_Q ms"
    echo
    echo "### Network preemption: two streams of $PREEMPT_BYTES bytes (RDP and shared memory) frozen every other $PREEMPT_Q ms quantum"
    echo
    t0=$(ms)
    GANG_STREAM_BYTES=$PREEMPT_BYTES GANG_STREAM_Q=$PREEMPT_Q GANG_STREAM_RATE=$PREEMPT_RATE \
        bash "$ROOT/test/shell/gang_stream.sh" 2>&1 | grep -E '^(PASS|FAIL)' | sed 's/^/    /' || true
    echo
    echo "($(($(ms) - t0)) ms in all; \`GANG_STREAM_BYTES=$PREEMPT_BYTES GANG_STREAM_Q=$PREEMPT_Q GANG_STREAM_RATE=$PREEMPT_RATE test/shell/gang_stream.sh\`)"
fi
