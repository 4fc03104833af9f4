#!/bin/bash
# psid_plhostile.sh - the preload's tables and descriptor passing hold against a hostile user
# with a plain client on psid's socket (the psid trust issue, point 5; test/tools/plhostile),
# on a 2-node loopback cluster:
#  - descriptors in flight: 90 processes of nobody each negotiate 150 same-node connections
#    with themselves and never read the channels psid passes them (before: the kernel's count
#    of descriptors in flight, which belongs to the user psid runs as, passed psid's
#    RLIMIT_NOFILE and every further send with descriptors failed, which psid took as the
#    client's fault and closed root's clients). Root's job started before the flood ends
#    well, psstat answers on both nodes during it, root's same-node connection under the
#    library gets its channel, and psid's descriptors stay bounded.
#  - late claims: nobody claims one accepted socket of its own 4096 times every 250 ms
#    (before: 4096 entries, each polled with a sock_diag query every ms, 6.8 s of psid's CPU
#    in 10 s). psid's CPU stays under 30 % and root's psstat within 2x of idle.
#  - tombstones: nobody's IPv6 connections from source ports D to its [::1]:P, and its
#    connections from node 1's address (127.0.0.2:D) to its 127.0.0.5:P, claimed without a
#    request, leave tombstones; root's same-node IPv4 connection from 127.0.0.1:D to root's
#    server on 127.0.0.1:P, and root's connection from node 1 (127.0.0.2:D) to it, must not
#    meet them (the issue saw the first refused, "accepted on TCP before the request came",
#    and left on TCP, when a tomb named node and ports only: a tomb names the whole
#    connection and its acceptor's user now).
# Root only (a second uid). Every process is ended by pid (cluster.sh's trap).
# shellcheck source-path=SCRIPTDIR source=lib/cluster.sh
source "$(dirname "$0")/lib/cluster.sh"
N="psid hostile preload client"
if [ "$(id -u)" != 0 ] || ! command -v setpriv >/dev/null || ! command -v python3 >/dev/null; then
    echo "SKIP: $N: needs root (a second uid), setpriv and python3"
    exit 0
fi
LIB=$TOP/build/lib/libpspreload.so
HOST=$TOP/build/test/tools/plhostile
require_built "$N" "$LIB" "$HOST"
# psid runs with 4096 descriptors (prlimit execs it: PIDS stay psid's), so that the kernel's
# count of its descriptors in flight (RLIMIT_NOFILE of the user psid runs as) is within the
# flood's reach on any host
if command -v prlimit >/dev/null; then
    wrap=$TOP/build/test/psid-nofile4096
    printf '#!/bin/sh\nexec prlimit --nofile=4096:4096 %s "$@"\n' "${PSID_BIN:-$BIN/psid}" >"$wrap"
    chmod 755 "$wrap"
    PSID_BIN=$wrap
fi
cluster_ready 2 "$N"
AS_NOBODY=(setpriv --reuid=nobody --regid="$(id -g nobody)" --clear-groups)
SOCK=$CDIR/psid-0.sock
gone() { ! kill -0 "$1" 2>/dev/null; }
listening() { ss -Hltn "sport = :$1" | grep -q .; }
stat() { tail -1 "$1" 2>/dev/null | tr ' ' '\n' | sed -n "s/^$2=//p"; }
engine=${PIDS[0]} # (psid's engine: its privileged child is a child of it)
nfds() { find "/proc/$1/fd" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l; }
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat" 2>/dev/null; }

# root's echo server and client under the library (python): the client connects from
# source port SPORT (0: any) of SRC (default 127.0.0.1), sends one line, prints the reply
cat >"$CDIR/echo.py" <<'EOF'
import socket, sys
l = socket.socket()
l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
l.bind(("127.0.0.1", int(sys.argv[1])))
l.listen(64)
while True:
    c, _ = l.accept()
    f = c.makefile("rwb", buffering=0)
    for line in f:
        f.write(line)
    c.close()
EOF
cat >"$CDIR/client.py" <<'EOF'
import socket, sys, time
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
if int(sys.argv[2]):
    s.bind((sys.argv[3] if len(sys.argv) > 3 else "127.0.0.1", int(sys.argv[2])))
s.connect(("127.0.0.1", int(sys.argv[1])))
time.sleep(0.3)  # the connection negotiates once it lived a moment (PSP_UPGRADE_US)
f = s.makefile("rwb", buffering=0)
f.write(b"hello root\n")
print(f.readline().decode().rstrip("\n"), flush=True)
EOF
PORT=$(free_port 4)
python3 "$CDIR/echo.py" "$PORT" >/dev/null 2>&1 &
PIDS+=($!)
PSID_SOCKET=$SOCK LD_PRELOAD=$LIB python3 "$CDIR/echo.py" "$((PORT + 1))" >/dev/null 2>&1 &
PIDS+=($!)
wait_until 5000 listening "$((PORT + 1))" || fail "$N: root's echo server listens" "port $((PORT + 1))"
# root_echo TAG [SPORT NODE]: root's client on port PORT+1, on node NODE (default 0, from
# 127.0.0.1; node 1: from 127.0.0.2); 0 if it read its echo, accelerated (shared memory on
# node 0, RDP from node 1)
root_echo() {
    local node=${3:-0} key=shm
    [ "$node" = 1 ] && key=accelerated
    rm -f "$CDIR/st.$1"
    env PSID_SOCKET="$CDIR/psid-$node.sock" LD_PRELOAD="$LIB" PSP_STATS="$CDIR/st.$1" timeout 20 \
        python3 "$CDIR/client.py" "$((PORT + 1))" "${2:-0}" "127.0.0.$((node + 1))" \
        >"$CDIR/echo.$1" 2>&1
    [ "$(cat "$CDIR/echo.$1")" = "hello root" ] && [ "$(stat "$CDIR/st.$1" "$key")" = 1 ]
}
root_echo before
check "$N: root's same-node connection gets its channel before anything" $? \
    "$(cat "$CDIR/echo.before") $(tail -1 "$CDIR/st.before" 2>/dev/null)"

# 1. descriptors in flight
PSID_SOCKET=$SOCK "$BIN/psrun" -n 2 -w 0,1 -- sleep 9 >"$CDIR/job.out" 2>&1 &
job=$!
PIDS+=("$job")
fd0=$(nfds "$engine")
hp=()
base=$((PORT + 100))
for i in $(seq 0 89); do
    "${AS_NOBODY[@]}" "$HOST" fds "$SOCK" 127.0.0.1 $((base + i)) 150 7 >"$CDIR/fds.$i" 2>&1 &
    hp+=($!)
    PIDS+=($!)
done
sleep 3 # the flood under way (not a wait for a condition: the flood has no end state)
PSID_SOCKET=$SOCK "$BIN/psstat" nodes >"$CDIR/nodes0" 2>&1
r0=$?
PSID_SOCKET=$CDIR/psid-1.sock "$BIN/psstat" nodes >"$CDIR/nodes1" 2>&1
r1=$?
root_echo flood
re=$?
fdmax=$(nfds "$engine")
for p in "${hp[@]}"; do wait_until 15000 gone "$p"; done
sent=$(cat "$CDIR"/fds.* | sed -n 's/^fds //p' | awk '{ s += $1 } END { print s + 0 }')
wait_until 20000 gone "$job"
wait "$job"
jrc=$?
[ "$sent" -gt 6000 ]
check "$N: fds: nobody's 90 processes negotiated connections and read nothing ($sent)" $? \
    "$(head -3 "$CDIR"/fds.0)"
[ $r0 = 0 ] && [ $r1 = 0 ]
check "$N: fds: psstat nodes answers on both nodes during the flood" $? \
    "$(cat "$CDIR/nodes0" "$CDIR/nodes1")"
check "$N: fds: root's same-node connection gets its channel during the flood" $re \
    "$(cat "$CDIR/echo.flood") $(tail -1 "$CDIR/st.flood" 2>/dev/null)"
[ "$jrc" = 0 ]
check "$N: fds: root's job started before the flood ends well (psid kept its connection)" $? \
    "exit $jrc: $(tail -3 "$CDIR/job.out")"
[ -n "$fdmax" ] && [ "$fdmax" -lt $((fd0 + 6000)) ]
check "$N: fds: psid's descriptors stay bounded ($fd0 before, $fdmax during)" $? "$fd0 -> $fdmax"
all_up 5000
check "$N: fds: both psids live and see each other afterwards" $? "$(PSID_SOCKET=$SOCK "$BIN/psstat" nodes 2>&1)"

# 2. late claims
pn_ms() { # the median time (us) of 9 psstat nodes
    local i t0 v=()
    for i in 1 2 3 4 5 6 7 8 9; do
        t0=$(date +%s%N)
        PSID_SOCKET=$SOCK "$BIN/psstat" nodes >/dev/null 2>&1
        v+=($((($(date +%s%N) - t0) / 1000)))
    done
    printf '%s\n' "${v[@]}" | sort -n | sed -n 5p
}
idle=$(pn_ms)
"${AS_NOBODY[@]}" "$HOST" late "$SOCK" 127.0.0.1 $((PORT + 2)) 4096 6 >"$CDIR/late" 2>&1 &
lp=$!
PIDS+=("$lp")
sleep 1 # under way
t0=$(cpu_ticks "$engine")
w0=$(date +%s%N)
flooded=$(pn_ms)
sleep 2
t1=$(cpu_ticks "$engine")
w1=$(date +%s%N)
wait_until 15000 gone "$lp"
hz=$(getconf CLK_TCK)
pct=$(awk -v t=$((t1 - t0)) -v hz="$hz" -v ns=$((w1 - w0)) 'BEGIN { printf "%d", 100 * t / hz / (ns / 1e9) }')
claims=$(sed -n 's/^claims //p' "$CDIR/late")
[ "${claims:-0}" -gt 20000 ]
check "$N: late: nobody claimed one socket over and over (${claims:-0} claims)" $? "$(cat "$CDIR/late")"
# (a request with a descriptor costs psid what reading it costs, about 15 us here: 13,000 a
# second are ~20 %; without one entry per socket, the late table's sock_diag query per claim
# took 34-44 % in this test, and the table polled each ms took 68 % in the issue's)
[ "$pct" -lt 30 ]
check "$N: late: psid's CPU under the claim flood stays under 30 % ($pct %)" $? "$pct %"
[ -n "$idle" ] && [ -n "$flooded" ] && [ "$flooded" -le $((2 * idle + 5000)) ]
check "$N: late: root's psstat nodes within 2x of idle (idle $idle us, flood $flooded us)" $? \
    "idle $idle us, flood $flooded us"

# 3. tombstones: the issue's reproduction (nobody on IPv6, root's same-node IPv4 connection
# from a tombed source port), and the same across nodes (nobody's connections from node 1's
# address to another local address of node 0)
FROM=$((PORT + 300))
"${AS_NOBODY[@]}" "$HOST" tomb "$SOCK" ::1 $((PORT + 1)) ::1 "$FROM" 20 8 >"$CDIR/tomb6" 2>&1 &
PIDS+=($!)
"${AS_NOBODY[@]}" "$HOST" tomb "$SOCK" 127.0.0.5 $((PORT + 1)) 127.0.0.2 $((FROM + 20)) 20 8 \
    >"$CDIR/tomb" 2>&1 &
PIDS+=($!)
wait_line "$CDIR/tomb6" '^tombs ' 10000
wait_line "$CDIR/tomb" '^tombs ' 10000
sleep 1.8 # nobody's claims waited for nothing (PL_LATE_NS, 1.5 s) and left tombs (for 4 s)
root_echo tomb6 $((FROM + 5))
check "$N: tombs: root's same-node IPv4 connection from a port nobody tombed on IPv6 gets its channel" $? \
    "$(cat "$CDIR/tomb6") / $(cat "$CDIR/echo.tomb6") $(tail -1 "$CDIR/st.tomb6" 2>/dev/null)"
root_echo tomb $((FROM + 25)) 1
check "$N: tombs: root's connection from node 1 on a port nobody tombed to another address gets RDP" $? \
    "$(cat "$CDIR/tomb") / $(cat "$CDIR/echo.tomb") $(tail -1 "$CDIR/st.tomb" 2>/dev/null)"
exit 0
