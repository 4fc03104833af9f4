# test/shell/lib/cluster.sh - helpers for integration tests on loopback clusters. Source it.
# shellcheck shell=bash
#   cluster_up N DIR        config + key in DIR, N psids on 127.0.0.1..N (unicast heartbeats);
#                           $PSID_CONF_EXTRA: more keys of the psid group (limits);
#                           $PSID_DOWN_GRACE_MS: heartbeat.down_grace_ms (default 0: a silent
#                           node is down as soon as it is unreachable, as the tests of "down"
#                           expect; psid_grace.sh tests the grace); $PSID_HB_MODE:
#                           heartbeat.mode (default unicast; psid_swim.sh: swim); $PSID_HB_EXTRA: more keys
#                           of the heartbeat group; $PSID_CONF_TOP: more top-level lines
#                           (a gang group); $PSID_CPUS: each node's cpus (default 2);
#                           $PSID_LOG_LEVEL: log_level (default info)
#   start_node I / kill_node I [SIG]   one daemon, by the pid we recorded ($PSID_BIN, default
#                           build/bin/psid: a test may run the ASan/UBSan build instead)
#   state_of OBSERVER NODE  "up", "unreachable" or "down", as OBSERVER's psid sees NODE
#                           (node_state OBSERVER NODE: the same into $STATE, without a subshell)
#   wait_state OBS NODE STATE MS   poll until it is so (bounded); prints elapsed ms
#   pass NAME / fail NAME WHY      result lines for scripts/run-tests.sh
#   check NAME STATUS WHY   pass NAME if STATUS is 0, else fail NAME WHY
#   now_ms, wait_until MS CMD..., wait_line FILE PATTERN MS   wait.sh's (bounded polls)
#   check_usage NAME CMD... pass NAME if CMD exits 2 and prints a usage text
#   require_built NAME FILE...  fail NAME's build check and exit unless every FILE exists
#   cluster_ready N NAME    cluster_up N and wait until all are up, or fail NAME and exit
#   pids_in FILE            the pids of FILE's lines "pid N" (what a job printed of itself)
#   procs_gone PID...       none of them runs (a zombie counts as gone: it waits for its
#                           parent, which for an orphan is whatever reaps for pid 1)
#   kill_midway NODE OUT CMD...  node NODE stopped, CMD started (output in OUT), NODE killed
#                           0.3 s later (while CMD waits on it), CMD waited for: RC its
#                           status, MS the milliseconds from its start
#   STRAY+=(PID...)         processes a test saw that may outlive it (a job's leftovers):
#                           killed by pid on exit with the daemons
# Every daemon started is killed by pid on exit (trap), also when a test fails. The cluster's
# directory (configuration, logs) is removed then, unless PSTEST_KEEP is set.
set -u
TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
# shellcheck source=wait.sh
source "$TOP/test/shell/lib/wait.sh" # now_ms, wait_until, wait_line
BIN=$TOP/build/bin
FAILS=0
PIDS=()
STRAY=()

pass() { echo "PASS: $1"; }
fail() {
    echo "FAIL: $1: $2"
    FAILS=$((FAILS + 1))
}
check() { if [ "$2" -eq 0 ]; then pass "$1"; else fail "$1" "$3"; fi; }
# json_true TEXT EXPR: TEXT is one JSON value and the jq expression is true of it (jq -e alone
# succeeds on empty input, so a tool that printed nothing would pass)
json_true() { jq -e --slurp "length == 1 and (.[0] | $2)" <<<"$1" >/dev/null 2>&1; }

pids_in() { sed -n 's/^pid \([0-9]*\)$/\1/p' "$1" | tr '\n' ' '; }
procs_gone() {
    local p
    for p in "$@"; do
        [ -r "/proc/$p/stat" ] && [ "$(cut -d' ' -f3 "/proc/$p/stat" 2>/dev/null)" != Z ] && return 1
    done
    return 0
}


require_built() { # require_built NAME FILE...
    local name=$1 f
    shift
    for f in "$@"; do
        [ -e "$f" ] || {
            fail "$name: build" "$f not built (make build-tests)"
            exit 1
        }
    done
}

cluster_ready() { # cluster_ready N NAME
    cluster_up "$1"
    all_up 5000 || {
        fail "$2: cluster up" "not all up"
        exit 1
    }
}

check_usage() {
    local name=$1 out rc
    shift
    out=$("$@" 2>&1)
    rc=$?
    if [ "$rc" -eq 2 ] && echo "$out" | grep -q "usage"; then
        pass "$name"
    else
        fail "$name" "exit $rc: $(echo "$out" | head -3)"
    fi
}

# cgroup_sweep: the job cgroups of daemons killed with SIGKILL (each psid logs "each job's
# tasks in a cgroup under DIR"): what is left in them is killed, the directories removed
cgroup_sweep() {
    local cg j t
    for cg in $(sed -n "s/.*each job's tasks in a cgroup under //p" "$CDIR"/psid-*.log* 2>/dev/null |
        sort -u); do
        for j in "$cg"/job-*; do
            [ -d "$j" ] || continue
            echo 1 >"$j/cgroup.kill"
            for t in $(seq 40); do rmdir "$j" && break || sleep 0.05; done
        done
        rmdir "$cg"
    done 2>/dev/null
}

cleanup() {
    local p
    # one redirection for both, so that bash's "Killed" notices go with the errors
    {
        for p in "${PIDS[@]}"; do [ -n "$p" ] && kill -KILL "$p"; done
        [ ${#STRAY[@]} -gt 0 ] && kill -KILL "${STRAY[@]}"
        wait
    } 2>/dev/null
    [ -n "${CDIR:-}" ] && {
        cgroup_sweep
        if [ -n "${PSTEST_KEEP:-}" ]; then echo "kept: $CDIR"; else rm -rf "$CDIR"; fi
    }
}
trap cleanup EXIT

# free_port N: the first of N consecutive ports that no TCP or UDP socket uses, below the
# kernel's ephemeral range (32768 and up by default), so that neither a connection of
# another test nor a listener of this one takes them while the test runs. The cluster
# uses port and port+1 (RDP, heartbeat); preload tests use TCP ports from there up.
free_port() {
    local n=$1 p i used low
    low=$(cut -f1 /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)
    [ "$low" -gt 21000 ] || low=32768
    used=" $(ss -Htuan 2>/dev/null | awk '{k = split($5, a, ":"); printf "%s ", a[k]}') "
    for _ in $(seq 50); do
        p=$((20000 + RANDOM % (low - 20000 - n - 1)))
        for ((i = 0; i <= n; i++)); do
            case $used in *" $((p + i)) "*)
                p=
                break
                ;;
            esac
        done
        [ -n "$p" ] && {
            echo "$p"
            return
        }
    done
    echo 29886
}

cluster_up() { # cluster_up N [extra rdp/heartbeat lines]
    NNODES=$1
    CDIR=$(mktemp -d /tmp/pstest.XXXXXX)
    chmod 755 "$CDIR" # other users' clients reach the (0666) sockets
    local port i
    port=$(free_port "$NNODES")
    head -c 32 /dev/urandom >"$CDIR/key"
    chmod 600 "$CDIR/key"
    {
        echo "cluster = \"test\";"
        echo "key_file = \"$CDIR/key\";"
        echo "log_level = \"${PSID_LOG_LEVEL:-info}\";"
        echo "rdp = { port = $port; mtu = 65536; };"
        echo "heartbeat = { mode = \"${PSID_HB_MODE:-unicast}\"; port = $((port + 1)); down_grace_ms = ${PSID_DOWN_GRACE_MS:-0}; ${PSID_HB_EXTRA:-} };"
        echo "psid = { socket = \"$CDIR/psid-%n.sock\"; kill_delay_ms = 1000; ${PSID_CONF_EXTRA:-} };"
        echo "${PSID_CONF_TOP:-}"
        echo "nodes = ("
        for i in $(seq 0 $((NNODES - 1))); do
            echo "  { id = $i; name = \"n$i\"; address = \"127.0.0.$((i + 1))\"; cpus = ${PSID_CPUS:-2}; }$([ "$i" -lt $((NNODES - 1)) ] && echo ,)"
        done
        echo ");"
    } >"$CDIR/psid.conf"
    for i in $(seq 0 $((NNODES - 1))); do start_node "$i"; done
}

start_node() { # start_node I [CONFIG]
    local i=$1 conf=${2:-$CDIR/psid.conf}
    "${PSID_BIN:-$BIN/psid}" -f "$conf" --node "$i" --foreground >>"$CDIR/psid-$i.log" 2>&1 &
    PIDS[$i]=$!
}

kill_node() { # kill_node I [SIGNAL]
    kill -"${2:-KILL}" "${PIDS[$1]}" 2>/dev/null
    wait "${PIDS[$1]}" 2>/dev/null
    PIDS[$1]=
}

kill_midway() { # kill_midway NODE OUT CMD...
    local node=$1 out=$2 t0 pid
    shift 2
    kill -STOP "${PIDS[$node]}"
    t0=$(now_ms)
    "$@" >"$out" 2>&1 &
    pid=$!
    STRAY+=("$pid")
    sleep 0.3
    kill_node "$node"
    wait "$pid"
    # shellcheck disable=SC2034 # RC, MS: the caller's
    RC=$? MS=$(($(now_ms) - t0))
}

# node_state OBSERVER NODE: STATE is what OBSERVER's psid says of NODE ("" if it does not
# answer); one process (psstat)
node_state() {
    local js re="\"id\":$2,[^}]*\"state\":\"([a-z]*)\""
    js=$(PSID_SOCKET=$CDIR/psid-$1.sock "$BIN/psstat" --json nodes 2>/dev/null)
    STATE=
    if [[ $js =~ $re ]]; then STATE=${BASH_REMATCH[1]}; fi
}
state_of() { # state_of OBSERVER NODE
    local STATE
    node_state "$1" "$2"
    [ -z "$STATE" ] || echo "$STATE"
}

wait_state() { # wait_state OBSERVER NODE STATE TIMEOUT_MS -> prints elapsed ms, status 0/1
    local t0=$((${EPOCHREALTIME/[.,]/} / 1000)) t STATE NAP_FD rc=0
    nap_open
    while :; do
        node_state "$1" "$2"
        t=$((${EPOCHREALTIME/[.,]/} / 1000 - t0))
        [ "$STATE" = "$3" ] && break
        ((t > $4)) && rc=1 && break
        nap 0.01
    done
    nap_close
    echo "$t"
    return $rc
}

idle() { # idle TIMEOUT_MS: node 0 answers and sees no task anywhere
    local end=$((${EPOCHREALTIME/[.,]/} / 1000 + $1)) out NAP_FD rc=0
    nap_open
    while :; do
        # an unreachable psid prints nothing, which must not count as idle
        out=$(PSID_SOCKET=$CDIR/psid-0.sock "$BIN/psstat" --json nodes 2>/dev/null) &&
            [[ $out == *'"cpus_used":0'* && ! $out =~ \"cpus_used\":[1-9] ]] && break
        ((${EPOCHREALTIME/[.,]/} / 1000 > end)) && rc=1 && break
        nap 0.02
    done
    nap_close
    return $rc
}

all_up() { # all_up TIMEOUT_MS: every node sees every node up (one psstat a look)
    # shellcheck disable=SC2034 # NAP_FD: nap_open's, for this function
    local o js rest n end NAP_FD rc=0
    nap_open
    for o in $(seq 0 $((NNODES - 1))); do
        end=$((${EPOCHREALTIME/[.,]/} / 1000 + $1))
        while :; do
            js=$(PSID_SOCKET=$CDIR/psid-$o.sock "$BIN/psstat" --json nodes 2>/dev/null)
            rest=$js n=0
            while [[ $rest == *'"state":"up"'* ]]; do
                rest=${rest#*'"state":"up"'}
                n=$((n + 1))
            done
            ((n == NNODES)) && break
            ((${EPOCHREALTIME/[.,]/} / 1000 > end)) && rc=1 && break 2
            nap 0.01
        done
    done
    nap_close
    return $rc
}
