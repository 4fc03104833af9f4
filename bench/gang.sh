#!/bin/bash
# bench/gang.sh - gang scheduling (issue 32, docs/gang.md), each figure a ratio or a
# distribution measured in one run, on pslocal loopback clusters of this machine:
#  1. switch time and skew: two CPU-bound jobs spanning every node of a cluster of --cpus 1
#     nodes (N in SWITCH_NODES) take turns at quantum SWITCH_Q ms for SWITCH_S seconds; from
#     the psids' debug lines "gang: switch S done in U us, L us after its time, done at T us"
#     of the switches that froze one job and thawed the other: per node, the switch's time
#     from the scheduler's decision (the 5 ms lead + L + U) p50/p99; per switch, the skew
#     between the nodes (the spread of T) p50/p99; and the model for 1024 nodes;
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
for t in "$BIN/pslocal" "$BIN/psrun" "$SPIN"; do
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
if [[ " $PARTS " == *" switch "* ]]; then
    echo
    echo "### Switch time and skew (quantum $SWITCH_Q ms, two jobs of one CPU-bound rank per node, nodes of 1 CPU)"
    echo
    echo "| nodes | switches | per node: decision to done, p50 / p99 (ms) | skew between nodes, p50 / p99 (ms) |"
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
        # "SEQ U L T" per node's line; switches that froze or thawed something (U > 0 lines
        # of seqs seen on every node), while both jobs ran (the middle of the run)
        cat "$d"/psid-*.log | sed -n 's/.*gang: switch \([0-9]*\) done in \([0-9]*\) us, \(-\{0,1\}[0-9]*\) us after its time, done at \([0-9]*\) us.*/\1 \2 \3 \4/p' \
            >"$tmp/sw$n.lines"
        awk -v n="$n" '{ if (!c[$1]++ || $4 < lo[$1]) lo[$1] = $4; if (c[$1] == 1 || $4 > hi[$1]) hi[$1] = $4 }
            END { for (s in c) if (c[s] == n) print s, (hi[s] - lo[s]) / 1000 }' "$tmp/sw$n.lines" |
            sort -n >"$tmp/sw$n.skew"
        # the middle half of the switches: both jobs surely running
        k=$(wc -l <"$tmp/sw$n.skew")
        awk -v k="$k" 'NR > k / 4 && NR <= 3 * k / 4' "$tmp/sw$n.skew" >"$tmp/sw$n.mid"
        awk 'NR == FNR { keep[$1] = 1; next } ($1 in keep) { print (5000 + $3 + $2) / 1000 }' \
            "$tmp/sw$n.mid" "$tmp/sw$n.lines" >"$tmp/sw$n.time"
        echo "| $n | $(wc -l <"$tmp/sw$n.mid") | $(pct 50 <"$tmp/sw$n.time") / $(pct 99 <"$tmp/sw$n.time") | $(cut -d' ' -f2 "$tmp/sw$n.mid" | pct 50) / $(cut -d' ' -f2 "$tmp/sw$n.mid" | pct 99) |"
        grep -q "no cgroup freezer" "$d"/psid-*.log && echo "(${n} nodes: no cgroup freezer: SIGSTOP/SIGCONT)"
        down "$d"
    done
    echo
    echo "Decision to done: the scheduler's 5 ms lead, then the node's lateness after the announced"
    echo "time and its freeze + thaw until cgroup.events agrees. Skew: the spread of the nodes'"
    echo "completion times (CLOCK_REALTIME: one clock here) of one switch. Model for 1024 nodes:"
    echo "each node's part does not depend on N (its own freezer and timer); the scheduler sends"
    echo "N switch records per quantum, which must leave within the lead: at the per-message cost"
    echo "psid's RDP send has here (~10 us), 1024 records take ~10 ms, so the lead must grow to"
    echo "about 2x that (or the record travel a tree), and the skew is then bounded by the nodes'"
    echo "clock agreement (PTP: microseconds; NTP on a LAN: ~0.1-1 ms) plus the per-node freeze"
    echo "time measured above."
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
