#!/bin/bash
# bench/psid.sh - psid's failure detection, signal latency and death-notification latency on
# 4-node virtual clusters (pslocal), against the floors and peers measured in the same run.
#
# Clusters: loopback (pslocal up -n 4: unicast heartbeats, 127.0.0.1-4) and, as root,
# namespaces (pslocal up -n 4 --netns: multicast heartbeats, 198.18.0.1-4 on a private bridge
# without uplink). Default heartbeat settings (interval 100 ms, dead_limit 8).
#
#  - failure detection: SIGKILL of one psid (and, in namespaces, `ip link set` of its host-side
#    veth down) -> the time until EVERY other node's psid says it is down. The helper
#    test/tools/sigstamp ("detect") connects to the three observers first, runs the kill, then
#    asks each for its node table every 1 ms. The victim rotates over nodes 1-3; after each run
#    it is restarted (or its link set up) and every node must see every node up again.
#  - signal latency: from just before the request to the moment the target task's handler
#    runs (the task, `sigstamp task`, stamps CLOCK_REALTIME in its SIGUSR1 handler). Rows:
#    kill(2) to a local process (the floor), psid's PSM_SIGNAL to a task on the requester's node
#    and on another node; then whole commands, process start included: kill(1), pskill, and
#    `scancel --signal=USR1` to a task under srun when Slurm can be started (bench/lib/slurm.sh).
#  - notification latency: a task stamps the time in its SIGUSR2 handler and _exits; a watcher
#    (`sigstamp watch`: PSM_NOTIFY with signal SIGUSR1) stamps the time in its handler. Watcher
#    on the task's node and on another node; the floor is pidfd_open+poll on the local process.
#
# Peer figures for failure detection are published defaults, not measured here: ParaStation's
# psid ~10-20 s, Slurm's SlurmdTimeout 300 s.
# Tables (markdown) on stdout, progress on stderr. Machine noise is high on the 2-vCPU VM: read
# min / median / max, and the ratios taken within one run.
#
# usage: bench/psid.sh [--help]
# env:   RUNS (5: failure-detection runs per row), SIG_COUNT (50: signals per psid/kill row),
#        CMD_COUNT (20: per command row), NOTIFY_RUNS (15), MODES ("lo netns"),
#        SLURM (auto|0|1: the scancel row; auto = as root, installing slurmctld, slurmd and
#        slurm-client with scripts/install-deps.sh if missing)
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
# shellcheck source-path=SCRIPTDIR source=lib/common.sh
. "$HERE/lib/common.sh"
bench_no_args "$0" "$@"

BIN=$ROOT/build/bin
SS=$ROOT/build/test/tools/sigstamp
JD=$ROOT/build/test/tools/jobdrive
RUNS=${RUNS:-5}
SIG_COUNT=${SIG_COUNT:-50}
CMD_COUNT=${CMD_COUNT:-20}
NOTIFY_RUNS=${NOTIFY_RUNS:-15}
MODES=${MODES:-lo netns}
SLURM=${SLURM:-auto}
NNODES=4

for f in "$BIN/pslocal" "$BIN/psid" "$BIN/psstat" "$BIN/pskill" "$SS" "$JD"; do
    [[ -x $f ]] || {
        echo "bench/psid.sh: $f not built (make build-tests)" >&2
        exit 1
    }
done
for v in RUNS SIG_COUNT CMD_COUNT NOTIFY_RUNS; do
    [[ ${!v} =~ ^[1-9][0-9]*$ ]] || {
        echo "bench/psid.sh: $v must be a positive number" >&2
        exit 2
    }
done
# shellcheck source-path=SCRIPTDIR source=lib/slurm.sh
. "$HERE/lib/slurm.sh"

W=$(mktemp -d /tmp/psbench-psid.XXXXXX)
chmod 755 "$W"
CLUSTERS=() # cluster directories to `pslocal down`
MINE=()     # pids of what this script started (jobdrive, restarted psids, watchers, srun)
cleanup() {
    local d
    stop_pids 3 "${MINE[@]}"
    for d in "${CLUSTERS[@]}"; do "$BIN/pslocal" down --dir "$d" >/dev/null 2>&1 || true; done
    slurm_down
    rm -rf "$W"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

log() { echo "$*" >&2; }
now_ms() { echo $(($(date +%s%N) / 1000000)); }

# stats: numbers on stdin -> "min median max n" (NA NA NA 0 if none)
stats() {
    sort -g | awk '{ a[NR] = $1 }
        END { if (NR == 0) { print "NA NA NA 0"; exit }
              m = NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2
              printf "%.6g %.6g %.6g %d\n", a[1], m, a[NR], NR }'
}
# mmm FILE COLUMN DIVISOR DECIMALS -> "min / **median** / max"
mmm() {
    awk -v c="$2" -v d="$3" '{ print $c / d }' "$1" | stats |
        awk -v p="$4" '{ if ($4 == 0) print "NA"; else printf "%.*f / **%.*f** / %.*f\n", p, $1, p, $2, p, $3 }'
}
med() { awk -v c="$2" -v d="$3" '{ print $c / d }' "$1" | stats | awk '{ print $2 }'; }
cnt() { wc -l <"$1" | tr -d ' '; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "NA" || b == "NA" || b == 0) print "NA"; else printf "%.1f\n", a / b }'; }

# wait_line FILE REGEX MS: until a line of FILE matches (bounded)
wait_line() {
    local t0
    t0=$(now_ms)
    until grep -qE "$2" "$1" 2>/dev/null; do
        (($(now_ms) - t0 > $3)) && return 1
        sleep 0.005
    done
}

# every node of cluster DIR sees every node up, within MS
all_up() {
    local dir=$1 ms=$2 t0 i n
    t0=$(now_ms)
    for ((i = 0; i < NNODES; i++)); do
        while :; do
            n=$(PSID_SOCKET=$dir/psid-$i.sock timeout 5 "$BIN/psstat" --json nodes 2>/dev/null |
                grep -o '"state":"up"' | wc -l) || n=0
            ((n == NNODES)) && break
            (($(now_ms) - t0 > ms)) && return 1
            sleep 0.02
        done
    done
}

cluster_up() { # cluster_up NAME [--netns] -> sets CDIR
    CDIR=$W/$1
    shift
    CLUSTERS+=("$CDIR")
    "$BIN/pslocal" up -n "$NNODES" --cpus 2 --dir "$CDIR" --timeout 20 "$@" >"$W/up.log" 2>&1 || {
        cat "$W/up.log" >&2
        return 1
    }
    all_up "$CDIR" 10000
}

# restart node I of cluster DIR the way pslocal started it (detached, same arguments) and
# point its pid file at the new daemon, so that `pslocal down` stops it too
restart_node() {
    local dir=$1 i=$2 ns
    local args=("$BIN/psid" -f "$dir/psid.conf" --node "$i" --foreground)
    ns=$(awk -v i="$i" '$1 == "netns" && $3 == i { print $2 }' "$dir/pslocal.state")
    [[ -n $ns ]] && args=(ip netns exec "$ns" "${args[@]}")
    setsid "${args[@]}" </dev/null >>"$dir/psid-$i.log" 2>&1 &
    MINE+=($!)
    echo "$!" >"$dir/psid-$i.pid"
}

gone() { # gone PID MS: wait until PID has ended
    local t0
    t0=$(now_ms)
    while kill -0 "$1" 2>/dev/null; do
        (($(now_ms) - t0 > $2)) && return 1
        sleep 0.005
    done
}

DET_ROWS=()
# detection LABEL KIND(kill|link): RUNS runs on cluster $CDIR
detection() {
    local label=$1 kind=$2 r v pid veth obs out f=$W/det-$1
    : >"$f"
    for ((r = 0; r < RUNS; r++)); do
        v=$((1 + r % (NNODES - 1)))
        obs=()
        for ((i = 0; i < NNODES; i++)); do ((i == v)) || obs+=("$CDIR/psid-$i.sock"); done
        if [[ $kind == kill ]]; then
            pid=$(cat "$CDIR/psid-$v.pid")
            out=$("$SS" detect "$v" 20000 "${obs[@]}" -- kill -KILL "$pid")
            wait "$pid" 2>/dev/null || true # reaps it if we restarted it earlier
            gone "$pid" 5000
            restart_node "$CDIR" "$v"
        else
            veth=$(awk '$1 == "veth" { print $2 }' "$CDIR/pslocal.state" | sed -n "$((v + 1))p")
            [[ $veth == *-$v ]] || {
                log "bench/psid.sh: no veth for node $v in $CDIR/pslocal.state"
                return 1
            }
            out=$("$SS" detect "$v" 20000 "${obs[@]}" -- ip link set "$veth" down)
            ip link set "$veth" up
        fi
        # "max" (every observer), the first observer to notice, and when every observer saw
        # it no longer up (unreachable: no new work goes there)
        echo "$out" | awk '$1 == "max" { m = $2 } $1 == "observer" { if (f == "" || $3 < f) f = $3 }
            $1 == "max_unreach" { u = $2 } END { print m, f, u }' >>"$f"
        log "    $label run $((r + 1)): node $v unreachable everywhere after $(tail -n 1 "$f" | awk '{ printf "%.1f", $3 / 1000 }') ms, down after $(tail -n 1 "$f" | awk '{ printf "%.1f", $1 / 1000 }') ms"
        all_up "$CDIR" 15000 || {
            log "bench/psid.sh: $label: the cluster did not recover after run $((r + 1))"
            return 1
        }
        sleep 0.3
    done
    DET_ROWS+=("| $label | $(mmm "$f" 3 1000 0) | $(mmm "$f" 1 1000 0) | $(med "$f" 2 1000 | awk '{ printf "%.0f", $1 }') | $(cnt "$f") |")
}

# idle MS: no node of $CDIR has a task (the previous job's are gone), within MS
idle() {
    local t0
    t0=$(now_ms)
    while PSID_SOCKET=$CDIR/psid-0.sock timeout 5 "$BIN/psstat" --json nodes 2>/dev/null |
        grep -q '"cpus_used":[1-9]'; do
        (($(now_ms) - t0 > $1)) && return 1
        sleep 0.01
    done
}

# start_tasks NP -> JPID, $W/job.out; waits until every rank's handlers are in place
start_tasks() {
    idle 10000 || log "bench/psid.sh: warning: tasks of an earlier job still there"
    rm -rf "$W/st"
    mkdir -p "$W/st"
    PSID_SOCKET=$CDIR/psid-0.sock "$JD" run "$1" "$SS" task "$W/st" >"$W/job.out" 2>&1 &
    JPID=$!
    MINE+=("$JPID")
    local t0
    t0=$(now_ms)
    until (($(grep -c started "$W/job.out") == $1)) &&
        (($(find "$W/st" -name '*.ready' | wc -l) == $1)); do
        (($(now_ms) - t0 > 10000)) && {
            log "bench/psid.sh: tasks did not start:"
            cat "$W/job.out" >&2
            return 1
        }
        sleep 0.01
    done
}
stop_tasks() {
    kill -TERM "$JPID" 2>/dev/null || true
    wait "$JPID" 2>/dev/null || true
}
# tid_on NODE [NTH]: the task id of the NTH (1) rank placed on NODE
tid_on() {
    sed -n "s/^rank [0-9]* started \([0-9]*:[0-9]*\) on node $1\$/\1/p" "$W/job.out" | sed -n "${2:-1}p"
}

SIG_ROWS=()
CMD_ROWS=()
# sigrow LABEL COMMAND-FOR-THE-TABLE FILE: append a row from sigstamp's "reply handler" lines
sigrow() {
    SIG_ROWS+=("| $1 | $2 | $(mmm "$3" 2 1 1) | $(med "$3" 1 1 | awk '{ printf "%.1f", $1 }') | $(cnt "$3") |")
}
cmdrow() {
    CMD_ROWS+=("| $1 | $2 | $(mmm "$3" 2 1000 2) | $(mmm "$3" 1 1000 2) | $(cnt "$3") |")
}
declare -A MED # label -> median latency (µs), for the ratios

signals() { # signals TAG: on cluster $CDIR
    local tag=$1 ltid rtid lpid rpid
    start_tasks 8
    ltid=$(tid_on 0)
    rtid=$(tid_on 3)
    lpid=${ltid#*:}
    rpid=${rtid#*:}
    log "    signals: local task $ltid, remote task $rtid"
    "$SS" kill "$lpid" 10 "$W/st/$lpid.sig" "$SIG_COUNT" 20 >"$W/sig-$tag-kill"
    PSID_SOCKET=$CDIR/psid-0.sock "$SS" signal "$ltid" 10 "$W/st/$lpid.sig" "$SIG_COUNT" 20 \
        >"$W/sig-$tag-local"
    PSID_SOCKET=$CDIR/psid-0.sock "$SS" signal "$rtid" 10 "$W/st/$rpid.sig" "$SIG_COUNT" 20 \
        >"$W/sig-$tag-remote"
    MED[$tag-kill]=$(med "$W/sig-$tag-kill" 2 1)
    MED[$tag-local]=$(med "$W/sig-$tag-local" 2 1)
    MED[$tag-remote]=$(med "$W/sig-$tag-remote" 2 1)
    sigrow "$tag: kill(2), local process (floor)" "\`kill(PID, SIGUSR1)\`" "$W/sig-$tag-kill"
    sigrow "$tag: psid, task on the requester's node" "PSM_SIGNAL to node 0's task, via node 0" \
        "$W/sig-$tag-local"
    sigrow "$tag: psid, task on another node" "PSM_SIGNAL to node 3's task, via node 0" \
        "$W/sig-$tag-remote"
    if [[ $tag == lo ]]; then
        "$SS" cmd "$W/st/$rpid.sig" "$CMD_COUNT" 20 -- kill -USR1 "$rpid" >"$W/cmd-kill"
        PSID_SOCKET=$CDIR/psid-0.sock "$SS" cmd "$W/st/$rpid.sig" "$CMD_COUNT" 20 -- \
            "$BIN/pskill" -s USR1 "$rtid" >"$W/cmd-pskill"
        MED[cmd-kill]=$(med "$W/cmd-kill" 2 1)
        MED[cmd-pskill]=$(med "$W/cmd-pskill" 2 1)
        cmdrow "kill(1), local process" "\`kill -USR1 PID\`" "$W/cmd-kill"
        cmdrow "pskill, task on another node (loopback cluster)" "\`pskill -s USR1 3:PID\` on node 0" \
            "$W/cmd-pskill"
    fi
    stop_tasks
}

scancel_row() { # a task under srun, signalled with scancel
    local sdir=$W/slurmst t0 spid jid f
    mkdir -p "$sdir"
    srun -n 1 -J pssig "$SS" task "$sdir" >/dev/null 2>&1 &
    MINE+=($!)
    spid=$!
    t0=$(now_ms)
    until f=$(find "$sdir" -name '*.ready' | head -n 1) && [[ -n $f ]]; do
        (($(now_ms) - t0 > 20000)) && {
            log "bench/psid.sh: the srun task did not start"
            return 1
        }
        sleep 0.02
    done
    jid=$(squeue -h -n pssig -o %i | head -n 1)
    f=${f%.ready}.sig
    "$SS" cmd "$f" "$CMD_COUNT" 20 -- scancel --signal=USR1 "$jid" >"$W/cmd-scancel"
    MED[cmd-scancel]=$(med "$W/cmd-scancel" 2 1)
    cmdrow "scancel, task under srun (one-node Slurm, auth/none)" "\`scancel --signal=USR1 JOBID\`" \
        "$W/cmd-scancel"
    scancel "$jid" 2>/dev/null || true
    gone "$spid" 10000 || kill -KILL "$spid" 2>/dev/null || true
    wait "$spid" 2>/dev/null || true
}

NOT_ROWS=()
notifications() { # notifications TAG: on cluster $CDIR
    local tag=$1 r a b c pid out
    : >"$W/not-$tag-local"
    : >"$W/not-$tag-remote"
    : >"$W/not-$tag-pidfd"
    # watch KIND TID-OR-PID WATCHER-NODE: one sample into $W/not-$tag-KIND
    watch1() {
        local kind=$1 t=$2 p=${2#*:} wpid fired ex
        if [[ $kind == pidfd ]]; then
            "$SS" pidwatch "$p" 10 >"$W/w.out" 2>&1 &
            wpid=$!
            MINE+=("$wpid")
            wait_line "$W/w.out" '^ready' 5000
        else
            PSID_SOCKET=$CDIR/psid-$3.sock "$SS" watch "$t" 10 10 >"$W/w.out" 2>&1 &
            wpid=$!
            MINE+=("$wpid")
            wait_line "$W/w.out" '^registered 0' 5000 || {
                log "bench/psid.sh: watch $t: $(cat "$W/w.out")"
                return 1
            }
        fi
        kill -USR2 "$p"
        wait "$wpid" || {
            log "bench/psid.sh: watch $t: $(cat "$W/w.out")"
            return 1
        }
        fired=$(sed -n 's/^fired //p' "$W/w.out")
        ex=$(cat "$W/st/$p.exit")
        echo "$(((fired - ex) / 1000)).$(((fired - ex) % 1000 / 100))" >>"$W/not-$tag-$kind"
        sleep 0.02
    }
    for ((r = 0; r < NOTIFY_RUNS; r++)); do
        start_tasks 8
        a=$(tid_on 0 1)
        b=$(tid_on 0 2)
        c=$(tid_on 2 1)
        watch1 local "$a" 0
        watch1 remote "$c" 0
        watch1 pidfd "$b"
        stop_tasks
    done
    MED[not-$tag-pidfd]=$(med "$W/not-$tag-pidfd" 1 1)
    MED[not-$tag-local]=$(med "$W/not-$tag-local" 1 1)
    MED[not-$tag-remote]=$(med "$W/not-$tag-remote" 1 1)
    NOT_ROWS+=("| $tag: pidfd_open + poll, local process (floor) | $(mmm "$W/not-$tag-pidfd" 1 1 0) | 1.0 | $(cnt "$W/not-$tag-pidfd") |")
    NOT_ROWS+=("| $tag: psid, watcher on the task's node | $(mmm "$W/not-$tag-local" 1 1 0) | $(ratio "${MED[not-$tag-local]}" "${MED[not-$tag-pidfd]}") | $(cnt "$W/not-$tag-local") |")
    NOT_ROWS+=("| $tag: psid, watcher on another node | $(mmm "$W/not-$tag-remote" 1 1 0) | $(ratio "${MED[not-$tag-remote]}" "${MED[not-$tag-pidfd]}") | $(cnt "$W/not-$tag-remote") |")
}

log "# bench/psid.sh: $(date -u +%Y-%m-%dT%H:%M:%SZ), $(hostname), kernel $(uname -r), $(nproc) cpus," \
    "load $(cut -d' ' -f1-3 /proc/loadavg), RUNS=$RUNS SIG_COUNT=$SIG_COUNT CMD_COUNT=$CMD_COUNT NOTIFY_RUNS=$NOTIFY_RUNS"
t_start=$SECONDS
for mode in $MODES; do
    case $mode in
    lo)
        log "## loopback cluster (unicast heartbeats)"
        cluster_up lo
        detection "loopback, unicast heartbeats: SIGKILL of a psid" kill
        log "  signals"
        signals lo
        log "  notifications"
        notifications lo
        "$BIN/pslocal" down --dir "$CDIR" >/dev/null
        ;;
    netns)
        if ((EUID != 0)); then
            log "## namespaces: skipped (needs root)"
            continue
        fi
        log "## namespace cluster (multicast heartbeats)"
        cluster_up ns --netns
        detection "namespaces, multicast heartbeats: SIGKILL of a psid" kill
        detection "namespaces, multicast heartbeats: link down (host veth)" link
        log "  signals"
        signals ns
        log "  notifications"
        notifications ns
        "$BIN/pslocal" down --dir "$CDIR" >/dev/null
        ;;
    *)
        echo "bench/psid.sh: unknown mode '$mode' (lo, netns)" >&2
        exit 2
        ;;
    esac
done

if [[ $SLURM == 1 || ($SLURM == auto && $EUID == 0) ]]; then
    slurm_available || "$ROOT/scripts/install-deps.sh" slurmctld slurmd slurm-client >&2 || true
fi
if [[ $SLURM == 1 || ($SLURM == auto && $EUID == 0) ]] && slurm_available; then
    log "## Slurm (one node, auth/none): scancel"
    if slurm_up "$W/slurm" 16837 64; then
        scancel_row || true
    fi
    slurm_down
fi

when="$(date -u +%Y-%m-%d), $(nproc) cpus, kernel $(uname -r)"
echo
echo "### Failure detection: failure -> every other node says \"unreachable\", then \"down\" ($when)"
echo
echo "4 nodes, heartbeat interval 100 ms, dead_limit 8 (defaults), heartbeat.down_grace_ms 2000"
echo "(pslocal's; psid's own default is 10000); sigstamp detect polls the three observers every"
echo "1 ms from the moment the kill / \`ip link set VETH down\` returned. Unreachable: no new"
echo "work goes to the node; down: its jobs hear \"node lost\" (after the grace, or at once on"
echo "evidence such as a restarted daemon)."
echo
echo "| cluster and failure | unreachable at every observer, ms min / median / max | down at every observer, ms min / median / max | down at the first, ms median | runs |"
echo "| --- | ---: | ---: | ---: | ---: |"
printf '%s\n' "${DET_ROWS[@]}"
echo "| ParaStation psid (published defaults, not measured) | | ~10000-20000 | | |"
echo "| Slurm: SlurmdTimeout default (published default, not measured) | | 300000 | | |"
echo
echo "### Signal latency: request -> the task's SIGUSR1 handler ($when)"
echo
echo "| path | how | handler µs min / median / max | request returned, µs median | signals |"
echo "| --- | --- | ---: | ---: | ---: |"
printf '%s\n' "${SIG_ROWS[@]}"
for t in lo ns; do
    [[ -n ${MED[$t-kill]:-} ]] || continue
    echo
    echo "$t: psid / kill(2) floor, medians: same node $(ratio "${MED[$t-local]}" "${MED[$t-kill]}")x," \
        "another node $(ratio "${MED[$t-remote]}" "${MED[$t-kill]}")x."
done
if ((${#CMD_ROWS[@]})); then
    echo
    echo "Whole commands, process start included (from just before fork to the handler):"
    echo
    echo "| tool | command | handler ms min / median / max | command exit ms min / median / max | signals |"
    echo "| --- | --- | ---: | ---: | ---: |"
    printf '%s\n' "${CMD_ROWS[@]}"
    if [[ -n ${MED[cmd-scancel]:-} ]]; then
        echo
        echo "scancel / pskill (medians, to the handler): $(ratio "${MED[cmd-scancel]}" "${MED[cmd-pskill]}")x;" \
            "pskill / kill(1): $(ratio "${MED[cmd-pskill]}" "${MED[cmd-kill]}")x."
    else
        echo
        echo "scancel: not measured (Slurm not installed or not root); peers measured ~12 ms scancel -> srun exit."
        echo "pskill / kill(1) (medians): $(ratio "${MED[cmd-pskill]:-NA}" "${MED[cmd-kill]:-NA}")x."
    fi
fi
echo
echo "### Notification latency: the task's last timestamp before _exit -> the watcher's handler ($when)"
echo
echo "| path | µs min / median / max | / floor (medians) | runs |"
echo "| --- | ---: | ---: | ---: |"
printf '%s\n' "${NOT_ROWS[@]}"
echo
echo "($((SECONDS - t_start)) s)"
