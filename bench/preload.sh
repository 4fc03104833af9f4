#!/bin/bash
# bench/preload.sh - unmodified programs under libpspreload against the same programs on
# kernel TCP, side by side in one run, on 2-node virtual clusters (pslocal): loopback
# (127.0.0.1 -> 127.0.0.2) and, as root, namespaces (198.18.0.1 -> 198.18.0.2 over veth
# pairs on a private bridge) at MTU 1500 (netns) and 9000 (netns9000), where the stream is
# measured again with LOSS_PCT % of packets dropped each way (nftables numgen in each
# node's namespace). Server on node 1, client on node 0; each row runs
# kernel TCP and the library alternately, RUNS times, and reports the medians and the ratio
# (library / kernel; for latency lower is better, for rates higher is better):
#  - sockperf ping-pong, TCP, 16 B, 1 KiB and 65000 B (sockperf's largest is 65506)
#    messages: median latency (us); and 16 B with the library busy-polling (PSP_BUSY_POLL)
#  - iperf3, one TCP stream, 3 s: Gbit/s received
#  - redis-benchmark -c 50 SET and GET: requests/s
#  - connection setup: redis-benchmark -k 0 -c 1 PING (connect, accept, one round trip,
#    close per request): requests/s
#  - memory per idle accelerated connection: the client's RSS growth over 1000 idle
#    connections (test/tools/plsem-like load via redis-benchmark is not idle; measured with
#    python3 opening 1000 sockets), kB per connection
# Mode same: both ends on one node (127.0.0.1, a 1-node pslocal cluster), the library's
# same-node path (shared memory) against kernel TCP over loopback, and against a UNIX
# domain socket where the program can use one (ping-pong: test/tools/uxpp over a
# socketpair; redis-benchmark -s): sockperf ping-pong 16 B, 1 KiB, 65000 B and 16 B
# busy-polling; iperf3 one and four streams; redis-benchmark -c 50 SET and GET;
# connection setup; and the CPU time of client and server per ping-pong round trip.
# Tables (markdown) on stdout, progress on stderr.
#
# usage: bench/preload.sh [--help]
# env:   RUNS (3), MODES ("lo netns netns9000 same"), SECONDS_PER_RUN (3), BUSY_US (50:
#        PSP_BUSY_POLL of the busy-polling ping-pong row), LOSS_PCT (5: the loss row),
#        PARTS ("pp busy stream loss redis memory": the rows to run; e.g. PARTS=pp for the
#        ping-pong rows alone)
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
# shellcheck source-path=SCRIPTDIR source=lib/common.sh
. "$HERE/lib/common.sh"
bench_no_args "$0" "$@"

BIN=$ROOT/build/bin
LIB=$ROOT/build/lib/libpspreload.so
RUNS=${RUNS:-3}
MODES=${MODES:-lo netns netns9000 same}
SECS=${SECONDS_PER_RUN:-3}
BUSY_US=${BUSY_US:-50}
LOSS_PCT=${LOSS_PCT:-5}
PARTS=" ${PARTS:-pp busy stream loss redis memory} "
part() { [[ $PARTS == *" $1 "* ]]; }
for f in "$BIN/pslocal" "$LIB"; do
    [[ -e $f ]] || {
        echo "bench/preload.sh: $f not built (make)" >&2
        exit 1
    }
done
for p in sockperf iperf3 redis-server redis-benchmark python3 jq; do
    command -v "$p" >/dev/null || {
        echo "bench/preload.sh: $p missing (scripts/install-deps.sh --bench)" >&2
        exit 1
    }
done

W=$(mktemp -d)
CDIR=
SRV=
cleanup() {
    [[ -n $SRV ]] && stop_pids 2 "$SRV"
    [[ -n $CDIR ]] && "$BIN/pslocal" down --dir "$CDIR" >/dev/null 2>&1
    rm -rf "$W"
}
trap cleanup EXIT
log() { echo "$*" >&2; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "NA" || b == "NA" || b == 0) print "NA"; else printf "%.2f\n", a / b }'; }

# prefix NODE LIB: CMD=(the words that run a command as if on NODE, under the library if LIB
# is yes); pslocal exec and env exec, so a background job's pid is the program's own
prefix() {
    CMD=("$BIN/pslocal" exec "$1" --dir "$CDIR" --)
    [[ $2 == yes ]] && CMD+=(env LD_PRELOAD="$LIB" PSP_STATS="$W/stats" PSP_BUSY_POLL="$BUSY")
    return 0
}
on() { # on NODE LIB CMD...: in the foreground
    prefix "$1" "$2"
    shift 2
    "${CMD[@]}" "$@"
}
SN=1                                                       # the server's node: 0 in mode same
listening() { on "$SN" no ss -Hltn "sport = :$1" | grep -q .; }
serve() { # serve LIB PORT CMD...: a server on node SN in the background (SRV)
    local lib=$1 port=$2
    shift 2
    prefix "$SN" "$lib"
    "${CMD[@]}" "$@" >"$W/server.log" 2>&1 &
    SRV=$!
    for _ in $(seq 100); do
        listening "$port" && return 0
        sleep 0.05
    done
    log "bench/preload.sh: server $* did not listen"
    cat "$W/server.log" >&2
    return 1
}
unserve() {
    stop_pids 2 "$SRV"
    SRV=
}

ROWS=()
# row LABEL UNIT BETTER(lower|higher) FILE-PREFIX: the medians of $W/PREFIX.{no,yes} and,
# where measured, of the UNIX socket's $W/PREFIX.unix
row() {
    local k l u=- ur=-
    k=$(median <"$W/$4.no")
    l=$(median <"$W/$4.yes")
    if [[ -s $W/$4.unix ]]; then
        u=$(median <"$W/$4.unix")
        ur=$(ratio "$l" "$u")
    fi
    ROWS+=("| $MODE | $1 | $k | $l | $(ratio "$l" "$k") | $u | $ur | $3 is better |")
}

# cpu_of PID: its user + system CPU time so far, seconds
cpu_of() { awk -v hz="$(getconf CLK_TCK)" '{ printf "%.3f\n", ($14 + $15) / hz }' "/proc/$1/stat"; }
# cpu_per_rt SERVER_SECONDS < sockperf's output with `times` after it: microseconds of
# CPU (client and server) per round trip
cpu_per_rt() {
    awk -v s="$1" '/ReceivedMessages=/ { for (i = 1; i <= NF; i++) if ($i ~ /^ReceivedMessages=/) {
            split($i, a, "[=;]"); n = a[2] } }
        /^[0-9]+m[0-9.]+s [0-9]+m[0-9.]+s$/ { k++; if (k == 2) { c = 0
            for (i = 1; i <= 2; i++) { split($i, b, "[ms]"); c += b[1] * 60 + b[2] } } }
        END { if (n > 0) printf "%.2f\n", (s + c) * 1e6 / n }'
}

P=12000 # a fresh port for every server (a killed server's port may be in TIME_WAIT)
MPS=    # mode same: --mps 5000000 (sockperf sizes its table of round trips by its default
# rate, 600 k/s, and stops with "_seqN > m_maxSequenceNo" when the transport is faster)
BUSY=0 # PSP_BUSY_POLL of the library's runs
pingpong() { # pingpong SIZE [BUSY_US]: with BUSY_US, the library busy-polls (PSP_BUSY_POLL)
    local lib r tag=pp$1${2:+b}
    BUSY=${2:-0}
    : >"$W/$tag.no"
    : >"$W/$tag.yes"
    : >"$W/$tag.unix"
    : >"$W/cpu$tag.no"
    : >"$W/cpu$tag.yes"
    for ((r = 1; r <= RUNS; r++)); do
        for lib in no yes; do
            P=$((P + 1))
            serve "$lib" $P sockperf sr --tcp -i "$ADDR" -p $P || return 1
            # shellcheck disable=SC2016 # expanded by the inner bash
            on 0 "$lib" bash -c 'timeout 60 sockperf pp --tcp -i "$0" -p "$1" -m "$2" -t "$3" $4; times' \
                "$ADDR" $P "$1" "$SECS" "$MPS" >"$W/pp.out" 2>&1 || true
            sed -n 's/.*percentile 50.000 = *\([0-9.]*\).*/\1/p' "$W/pp.out" >>"$W/$tag.$lib"
            if [[ $MODE == same ]]; then # CPU of both per round trip, us: client + server
                cpu_per_rt "$(cpu_of "$SRV")" <"$W/pp.out" >>"$W/cpu$tag.$lib" || true
            fi
            unserve
        done
        if [[ $MODE == same && -z ${2:-} ]]; then
            "$ROOT/build/test/tools/uxpp" "$1" "$SECS" >>"$W/$tag.unix" || true
        fi
    done
    BUSY=0
    row "sockperf ping-pong $1 B${2:+, library with PSP_BUSY_POLL=$2}, median latency (us)" us \
        lower "$tag"
    if [[ $MODE == same ]]; then
        row "  CPU per round trip, client and server (us)" us lower "cpu$tag"
    fi
}

stream() { # stream [TAG LABEL [IPERF3-ARGS]]: one iperf3 stream, kernel TCP and the library
    local lib r tag=${1:-ip} label=${2:-"iperf3, one stream (Gbit/s)"} extra=${3:-}
    : >"$W/$tag.no"
    : >"$W/$tag.yes"
    for ((r = 1; r <= RUNS; r++)); do
        for lib in no yes; do
            P=$((P + 1))
            serve "$lib" $P iperf3 -s -B "$ADDR" -p $P -1 || return 1
            # shellcheck disable=SC2086 # extra: words
            on 0 "$lib" timeout 60 iperf3 -c "$ADDR" -p $P -t "$SECS" $extra -J |
                jq '.end.sum_received.bits_per_second / 1e9' >>"$W/$tag.$lib" || true
            wait "$SRV" 2>/dev/null || true
            SRV=
        done
    done
    row "$label" Gbit/s higher "$tag"
}

# loss PERCENT: nftables in every node's namespace drops that share of what arrives on
# its link (both directions, so), as test/netns/lib/netns.sh's ns_loss does; 0: none
loss() {
    local ns thr
    thr=$(awk -v p="$1" 'BEGIN { printf "%d", p * 10 + 0.5 }')
    for ns in $(awk '$1 == "netns" { print $2 }' "$CDIR/pslocal.state"); do
        if ((thr == 0)); then
            ip netns exec "$ns" nft delete table inet psloss 2>/dev/null || true
            continue
        fi
        ip netns exec "$ns" nft -f - <<EOF || return 1
table inet psloss
delete table inet psloss
table inet psloss {
    chain in {
        type filter hook input priority -10; policy accept;
        iifname != "lo" numgen random mod 1000 < $thr drop
    }
}
EOF
    done
}

redis() {
    local lib r t
    for t in set get; do
        : >"$W/rb$t.no"
        : >"$W/rb$t.yes"
    done
    : >"$W/cs.no"
    : >"$W/cs.yes"
    : >"$W/rbset.unix"
    : >"$W/rbget.unix"
    : >"$W/cs.unix"
    for ((r = 1; r <= RUNS; r++)); do
        for lib in no yes; do
            P=$((P + 1))
            serve "$lib" $P redis-server --bind "$ADDR" --port $P --save '' \
                --appendonly no --protected-mode no --unixsocket "$W/redis.sock" || return 1
            if [[ $MODE == same && $lib == no ]]; then # the UNIX socket, for reference
                on 0 no timeout 120 redis-benchmark -s "$W/redis.sock" -q -c 50 -n 50000 \
                    -t set,get 2>/dev/null | tr '\r' '\n' >"$W/rb.out" || true
                sed -n 's/^SET: \([0-9.]*\) requests per second.*/\1/p' "$W/rb.out" >>"$W/rbset.unix"
                sed -n 's/^GET: \([0-9.]*\) requests per second.*/\1/p' "$W/rb.out" >>"$W/rbget.unix"
                on 0 no timeout 120 redis-benchmark -s "$W/redis.sock" -q -c 1 -k 0 -n 2000 \
                    -t ping 2>/dev/null | tr '\r' '\n' |
                    sed -n 's/^PING_INLINE: \([0-9.]*\) requests per second.*/\1/p' >>"$W/cs.unix" || true
            fi
            on 0 "$lib" timeout 120 redis-benchmark -h "$ADDR" -p $P -q -c 50 -n 50000 \
                -t set,get 2>/dev/null | tr '\r' '\n' >"$W/rb.out" || true
            sed -n 's/^SET: \([0-9.]*\) requests per second.*/\1/p' "$W/rb.out" >>"$W/rbset.$lib"
            sed -n 's/^GET: \([0-9.]*\) requests per second.*/\1/p' "$W/rb.out" >>"$W/rbget.$lib"
            on 0 "$lib" timeout 120 redis-benchmark -h "$ADDR" -p $P -q -c 1 -k 0 -n 2000 \
                -t ping 2>/dev/null | tr '\r' '\n' |
                sed -n 's/^PING_INLINE: \([0-9.]*\) requests per second.*/\1/p' >>"$W/cs.$lib" || true
            unserve
        done
    done
    row "redis-benchmark -c 50 SET (requests/s)" rps higher rbset
    row "redis-benchmark -c 50 GET (requests/s)" rps higher rbget
    row "connection setup: connect, 1 round trip, close (per s)" rps higher cs
}

idle_memory() { # the client's RSS growth per idle accelerated connection, kB
    local lib
    for lib in no yes; do
        P=$((P + 1))
        serve "$lib" $P python3 -c "
import socket, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(('$ADDR', $P)); s.listen(2048); c = []
while True:
    a, _ = s.accept(); a.send(b'x'); c.append(a)" || return 1
        on 0 "$lib" timeout 120 python3 -c "
import socket, resource
def rss():
    return int(open('/proc/self/status').read().split('VmRSS:')[1].split()[0])
base = rss(); c = []
for i in range(1000):
    s = socket.create_connection(('$ADDR', $P)); s.recv(1); c.append(s)
print((rss() - base) / 1000.0)" >"$W/mem.$lib"
        unserve
    done
    ROWS+=("| $MODE | memory per idle connection, client RSS (kB) | $(cat "$W/mem.no") | $(cat "$W/mem.yes") | $(ratio "$(cat "$W/mem.yes")" "$(cat "$W/mem.no")") | - | - | lower is better |")
}

for MODE in $MODES; do
    args=()
    case $MODE in
    lo) ADDR=127.0.0.2 SN=1 MPS= ;;
    same) ADDR=127.0.0.1 SN=0 MPS="--mps 5000000" ;;
    netns | netns9000)
        if [[ $(id -u) -ne 0 ]]; then
            log "bench/preload.sh: namespaces need root: skipped"
            continue
        fi
        ADDR=198.18.0.2 SN=1 MPS=
        args=(--netns)
        [[ $MODE == netns9000 ]] && args+=(--mtu 9000)
        ;;
    *)
        echo "bench/preload.sh: unknown mode '$MODE' (lo, netns, netns9000, same)" >&2
        exit 2
        ;;
    esac
    CDIR=$W/$MODE
    nodes=2
    [[ $MODE == same ]] && nodes=1
    log "== $MODE: pslocal up -n $nodes ${args[*]}"
    "$BIN/pslocal" up -n $nodes --dir "$CDIR" --timeout 20 "${args[@]}" >"$W/up.log" 2>&1 || {
        cat "$W/up.log" >&2
        exit 1
    }
    if part pp; then
        for sz in 16 1024 65000; do # sockperf's largest message is 65506 bytes
            log "  sockperf ping-pong $sz B (x$RUNS each)"
            pingpong "$sz"
        done
    fi
    if part busy; then
        log "  sockperf ping-pong 16 B, the library busy-polling $BUSY_US us (x$RUNS each)"
        pingpong 16 "$BUSY_US"
    fi
    if part stream; then
        log "  iperf3 (x$RUNS each)"
        stream
        if [[ $MODE == same ]]; then
            log "  iperf3, four streams (x$RUNS each)"
            stream ip4 "iperf3, four streams (Gbit/s)" "-P 4"
        fi
    fi
    if [[ $MODE == netns* ]] && part loss; then
        log "  iperf3 with ${LOSS_PCT} % loss each way (x$RUNS each)"
        loss "$LOSS_PCT" && stream ipl "iperf3, one stream, ${LOSS_PCT} % loss each way (Gbit/s)"
        loss 0
    fi
    if part redis; then
        log "  redis-benchmark (x$RUNS each)"
        redis
    fi
    if part memory; then
        log "  memory per idle connection"
        idle_memory
    fi
    "$BIN/pslocal" down --dir "$CDIR" >/dev/null 2>&1 || log "bench/preload.sh: pslocal down failed"
    CDIR=
done

# every library run must have been accelerated: a fallback would measure kernel TCP twice
acc=$(grep -c 'accelerated=[1-9]' "$W/stats" 2>/dev/null || true)
tcp=$(grep -c ' tcp=[1-9]' "$W/stats" 2>/dev/null || true)
log "library processes: ${acc:-0} with accelerated connections, ${tcp:-0} with connections on TCP"
[[ ${tcp:-0} -eq 0 ]] || grep ' tcp=[1-9]' "$W/stats" | head -5 >&2
echo "| path | what | kernel TCP | libpspreload | ratio | UNIX socket | ratio to UNIX | |"
echo "|---|---|---:|---:|---:|---:|---:|---|"
printf '%s\n' "${ROWS[@]}"
