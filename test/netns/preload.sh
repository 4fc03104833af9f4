#!/bin/bash
# preload.sh - libpspreload across network namespaces (root only): a 2-node `pslocal up
# --netns` cluster (198.18.0.1 and 198.18.0.2 on a private bridge, MTU 1500, multicast
# heartbeats), the server on node 1 and the client on node 0, byte-exact (sha256):
#  - nc, 20 MB client->server, the library on both sides: accelerated on both (PSP_STATS;
#    at least 75 % of the bytes over RDP, the rest on the kernel socket before the answer);
#  - nc with the library on the client only: TCP, no_library;
#  - nc to an address on the bridge that is no cluster node's: TCP, not_cluster;
#  - a connect to an address without a route: ENETUNREACH, with the library as without;
#  - a node lost (its link down) under a read blocked on a connection to it: ETIMEDOUT or
#    ECONNRESET, not a hang;
#  - curl against python3's http.server, 5 MB: accelerated;
#  - 18 short connections from a node with 10 ephemeral ports to two listeners, each
#    waiting for its negotiation (PSP_SYNC=1): all accelerated (the kernel's connect picks
#    the port, per destination);
#  - redis-benchmark (50 connections, SET and GET; its short first connection, which asks
#    the server's configuration, may end before its answer: short), iperf3 (-t 2: control
#    and data connections) and sockperf ping-pong (2 s): accelerated on both sides;
#  - nc, 20 MB, with 5 % of packets dropped on both links (nftables numgen in each
#    namespace): accelerated, byte-exact, RDP's retransmissions at work under the library.
#  - a receiver stopped with SIGSTOP for 6 s mid-stream (test/tools/plstream, 200 MB paced
#    at 40 MB/s): the stream goes on when it is continued and completes byte-exact, on RDP.
# Everything pslocal creates is named after the test's directory; the EXIT trap runs
# `pslocal down` and removes what its state file still names. Every program is started by
# pid and killed on exit; every wait is bounded. Prints PASS:/FAIL:/SKIP: lines.
set -u

# shellcheck disable=SC1091 # the helpers beside this script
. "$(dirname "$0")/lib/netns.sh"
# shellcheck source=../shell/lib/wait.sh
. "$(dirname "$0")/../shell/lib/wait.sh" # wait_until
ns_require_root

TOP=$(cd "$(dirname "$0")/../.." && pwd)
PSLOCAL=$TOP/build/bin/pslocal
LIB=$TOP/build/lib/libpspreload.so
TMP=$(mktemp -d /tmp/preload-netns.XXXXXX)
D=$TMP/cluster
FAILS=0
PIDS=()
NSS=()

pass() { echo "PASS: preload netns: $1"; }
fail() {
    echo "FAIL: preload netns: $1: $2"
    FAILS=$((FAILS + 1))
}
check() { if [ "$2" -eq 0 ]; then pass "$1"; else fail "$1" "$3"; fi; }

cleanup() {
    local p
    trap '' INT TERM
    for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null; done
    pslocal_teardown "$PSLOCAL" "$D" "${NSS[@]/#/netns:}"
    rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

for p in nc curl python3 sha256sum nft redis-server redis-benchmark iperf3 sockperf; do
    command -v "$p" >/dev/null || {
        fail "$p" "not installed (scripts/install-deps.sh --check)"
        exit 1
    }
done
[ -f "$LIB" ] || {
    fail "library" "not built ($LIB)"
    exit 1
}
if ! "$PSLOCAL" up -n 2 --netns --dir "$D" --timeout 20 >"$TMP/up.log" 2>&1; then
    fail "pslocal up --netns" "$(tail -3 "$TMP/up.log")"
    exit 1
fi
while read -r k v _; do [[ $k == netns ]] && NSS+=("$v"); done <"$D/pslocal.state"

# on NODE LIB IN OUT CMD...: CMD on NODE in the background, stdin IN, stdout OUT, with the
# library when LIB is yes (its counters to $TMP/stats.NODE); $! is the program's own pid
on() {
    local node=$1 lib=$2 in=$3 out=$4 env=()
    shift 4
    [ "$lib" = yes ] && env=(LD_PRELOAD="$LIB" PSP_STATS="$TMP/stats.$node")
    [ "$lib" = sync ] && env=(LD_PRELOAD="$LIB" PSP_STATS="$TMP/stats.$node" PSP_SYNC=1)
    "$PSLOCAL" exec "$node" --dir "$D" -- env "${env[@]}" "$@" <"$in" >"$out" 2>>"$TMP/err.$node" &
    PIDS+=($!)
}
listening() { "$PSLOCAL" exec 1 --dir "$D" -- ss -Hltn "sport = :$1" | grep -q .; }
gone() { ! kill -0 "$1" 2>/dev/null; }
finish() { # finish PID...: wait for each, 90 s at most, then kill it
    local p
    for p; do
        wait_until 90000 gone "$p" || kill -KILL "$p" 2>/dev/null
        wait "$p" 2>/dev/null
    done
}
stat() { tail -1 "$TMP/stats.$1" 2>/dev/null | tr ' ' '\n' | sed -n "s/^$2=//p"; }
fresh() { rm -f "$TMP"/stats.* "$TMP/out.bin"; }
nc_run() { # nc_run PORT SERVER_LIB CLIENT_LIB: IN from node 0 to node 1
    fresh
    on 1 "$2" /dev/null "$TMP/out.bin" nc -l 198.18.0.2 "$1"
    local s=$!
    wait_until 5000 listening "$1"
    on 0 "$3" "$TMP/in.bin" /dev/null nc -N 198.18.0.2 "$1"
    finish $! "$s"
}

head -c $((20 << 20)) /dev/urandom >"$TMP/in.bin"
SUM=$(sha256sum <"$TMP/in.bin")

nc_run 6001 yes yes
# all of it counted, at least 75 % over RDP (the rest before the negotiation's answer,
# which takes milliseconds under load: as in preload_nc.sh)
r=$(stat 1 rdp_rx_bytes) t=$(stat 1 tcp_rx_bytes)
[[ $(sha256sum <"$TMP/out.bin") == "$SUM" && $(stat 0 accelerated) == 1 &&
    $(stat 1 accelerated) == 1 && $((r + t)) == $((20 << 20)) && $((r * 4)) -ge $((15 << 20)) ]]
check "nc 20 MB between namespaces, library on both sides: accelerated, byte-exact" $? \
    "$(cat "$TMP"/stats.* "$TMP"/err.* 2>/dev/null | tail -5)"

nc_run 6002 no yes
[[ $(sha256sum <"$TMP/out.bin") == "$SUM" && $(stat 0 accelerated) == 0 &&
    $(stat 0 no_library) == 1 ]]
check "nc, library on the client only: TCP (no_library), byte-exact" $? \
    "$(cat "$TMP"/stats.* 2>/dev/null)"

# an address on the bridge that is no cluster node's (a second address in node 1's
# namespace): the library's connection to it stays on TCP, reason not_cluster
"$PSLOCAL" exec 1 --dir "$D" -- ip addr add 198.18.0.99/24 dev eth0
fresh
on 1 no /dev/null "$TMP/out.bin" nc -l 198.18.0.99 6004
s=$!
wait_until 5000 listening 6004
on 0 yes "$TMP/in.bin" /dev/null nc -N 198.18.0.99 6004
finish $! "$s"
[[ $(sha256sum <"$TMP/out.bin") == "$SUM" && $(stat 0 accelerated) == 0 &&
    $(stat 0 not_cluster) == 1 ]]
check "nc to an address that is no cluster node's: TCP (not_cluster), byte-exact" $? \
    "$(cat "$TMP"/stats.* 2>/dev/null)"

# ENETUNREACH: a node's namespace has no default route; a connect to an address outside
# fails at once, with the library as without it (no packet leaves: there is no route)
unreach() { # unreach LIB: what a connect to 203.0.113.1:9 from node 0 says
    local env=()
    [ "$1" = yes ] && env=(LD_PRELOAD="$LIB" PSP_SYNC=1)
    "$PSLOCAL" exec 0 --dir "$D" -- env "${env[@]}" timeout 10 python3 -c '
import errno, socket
s = socket.socket()
try:
    s.connect(("203.0.113.1", 9)); print("connected")
except OSError as e:
    print(errno.errorcode.get(e.errno, e.errno))' 2>&1
}
u0=$(unreach no) u1=$(unreach yes)
[[ $u0 == ENETUNREACH && $u1 == "$u0" ]]
check "connect to an address without a route: ENETUNREACH with the library as without" $? \
    "kernel: $u0, library: $u1"

# one psid, two namespaces: programs in node 1's namespace that are node 0's psid's clients
# (a container on node 0, its psid socket reached by path), to and from node 0's own
# namespace: same node, through shared memory, found by the connection's addresses
S0=$(
    eval "$("$PSLOCAL" env --dir "$D")"
    echo "$PSID_SOCKET"
)
XIN=$TMP/x.bin
head -c $((5 << 20)) /dev/urandom >"$XIN"
XSUM=$(sha256sum <"$XIN")
xns_run() { # xns_run PORT LISTEN-ADDR SERVER-NODE CLIENT-NODE [SOURCE-ADDR]: XIN from
    # client to server
    fresh
    rm -f "$TMP"/stats.x*
    on "$3" yes /dev/null "$TMP/out.bin" env PSID_SOCKET="$S0" PSP_STATS="$TMP/stats.xs" \
        nc -l "$2" "$1"
    local s=$!
    wait_until 5000 "listening$3" "$1"
    # the data 0.5 s after the connect: its negotiation is done by then, however loaded
    # the machine (nc on its own sends 5 MB within the first millisecond, on TCP)
    on "$4" no "$XIN" /dev/null sh -c '{ sleep 0.5; cat; } | env LD_PRELOAD="$3" \
        PSID_SOCKET="$4" PSP_STATS="$5" nc -N $6 "$1" "$2"' sh "$2" "$1" "$LIB" "$S0" \
        "$TMP/stats.xc" "${5:+-s $5}"
    finish $! "$s"
}
listening1() { listening "$1"; }
listening0() { "$PSLOCAL" exec 0 --dir "$D" -- ss -Hltn "sport = :$1" | grep -q .; }
xns_ok() { # both ends on shared memory, byte-exact, all of it over shared memory
    [[ $(sha256sum <"$TMP/out.bin") == "$XSUM" && $(stat xs shm) == 1 && $(stat xc shm) == 1 &&
        $(stat xs shm_rx_bytes) == $((5 << 20)) ]]
}
xns_run 6010 198.18.0.99 1 0
xns_ok
check "one psid, two namespaces: node 0's nc to a listener of node 0's psid in another namespace (198.18.0.99): shared memory, byte-exact" $? \
    "$(cat "$TMP"/stats.x* "$TMP"/err.* 2>/dev/null | tail -4)"
# (from the container's own address: one of node 1's would make it node 1's connection)
xns_run 6011 198.18.0.1 0 1 198.18.0.99
xns_ok
check "one psid, two namespaces: from the other namespace (198.18.0.99) to node 0's address: shared memory, byte-exact" $? \
    "$(cat "$TMP"/stats.x* "$TMP"/err.* 2>/dev/null | tail -4)"

fresh
mkdir -p "$TMP/www"
head -c $((5 << 20)) /dev/urandom >"$TMP/www/f.bin"
on 1 yes /dev/null /dev/null python3 -m http.server 6003 --bind 198.18.0.2 --directory "$TMP/www"
s=$!
wait_until 10000 listening 6003
on 0 yes /dev/null "$TMP/out.bin" curl -s --max-time 60 http://198.18.0.2:6003/f.bin
finish $!
kill "$s" 2>/dev/null
finish "$s"
[[ $(sha256sum <"$TMP/out.bin") == $(sha256sum <"$TMP/www/f.bin") && $(stat 0 accelerated) == 1 ]]
check "curl 5 MB from python3's http.server between namespaces: accelerated, byte-exact" $? \
    "$(cat "$TMP"/stats.* 2>/dev/null)"

# many short connections from a node with 10 ephemeral ports, to two listeners: the kernel
# picks the port at connect, per destination, so 18 connections fit (9 each, the client's
# ends in TIME_WAIT); binding port 0 before the connect, as the library once did, ran out
# after 10 and left the rest on TCP (reason error)
"$PSLOCAL" exec 0 --dir "$D" -- sysctl -qw net.ipv4.ip_local_port_range="40000 40009"
cat >"$TMP/many.py" <<'PY'
import select, socket, sys
if sys.argv[1] == "server":
    ls = []
    for port in (6005, 6006):
        l = socket.socket(); l.bind(("198.18.0.2", port)); l.listen(64); ls.append(l)
    for _ in range(18):
        r, _, _ = select.select(ls, [], [], 30)
        if not r: break
        c, _ = r[0].accept()
        c.sendall(c.recv(1)); c.recv(1); c.close()
else:
    for i in range(18):
        c = socket.create_connection(("198.18.0.2", 6005 + i % 2), timeout=10)
        c.sendall(b"x"); assert c.recv(1) == b"x"; c.close()
    print("done")
PY
fresh
on 1 sync /dev/null /dev/null python3 "$TMP/many.py" server
s=$!
wait_until 10000 listening 6006
on 0 sync /dev/null "$TMP/out.bin" python3 "$TMP/many.py" client
finish $! "$s"
[[ $(cat "$TMP/out.bin") == "done" && $(stat 0 accelerated) == 18 && $(stat 0 error) == 0 ]]
check "18 short connections from a node with 10 ports, to two listeners: all accelerated" $? \
    "$(cat "$TMP/out.bin"; cat "$TMP"/stats.* "$TMP"/err.* 2>/dev/null | tail -5)"
"$PSLOCAL" exec 0 --dir "$D" -- sysctl -qw net.ipv4.ip_local_port_range="32768 60999"

# redis-benchmark, iperf3 and sockperf between the namespaces, the library on both sides
fresh
on 1 yes /dev/null "$TMP/redis.log" redis-server --bind 198.18.0.2 --port 6007 --save '' \
    --appendonly no --protected-mode no
rs=$!
wait_until 10000 listening 6007
on 0 yes /dev/null "$TMP/bench.out" timeout 60 redis-benchmark -h 198.18.0.2 -p 6007 -q \
    -n 10000 -c 50 -t set,get
wait $!
rc=$?
kill "$rs" 2>/dev/null
finish "$rs"
[[ $rc -eq 0 ]] && grep -q "GET: .* requests per second" "$TMP/bench.out" &&
    (($(stat 0 accelerated) >= 50)) && [[ $(($(stat 0 tcp) - $(stat 0 short))) == 0 ]]
check "redis-benchmark, 50 connections, SET and GET: every one accelerated" $? \
    "rc $rc: $(tail -2 "$TMP/bench.out") $(cat "$TMP"/stats.* 2>/dev/null)"

fresh
on 1 yes /dev/null "$TMP/iperfs.out" timeout 30 iperf3 -s -1 -B 198.18.0.2 -p 6008
is=$!
wait_until 10000 listening 6008
on 0 yes /dev/null "$TMP/iperfc.out" timeout 30 iperf3 -c 198.18.0.2 -p 6008 -t 2
wait $!
rc=$?
wait "$is"
src=$?
[[ $rc -eq 0 && $src -eq 0 && $(stat 0 accelerated) == 2 && $(stat 0 tcp) == 0 &&
    $(stat 1 accelerated) == 2 ]] && grep -q receiver "$TMP/iperfc.out"
check "iperf3 -t 2: control and data connection accelerated on both sides" $? \
    "client rc $rc, server rc $src: $(tail -3 "$TMP/iperfc.out" | tr '\n' ' ') $(cat "$TMP"/stats.* 2>/dev/null)"

fresh
on 1 yes /dev/null "$TMP/sps.out" sockperf sr --tcp -i 198.18.0.2 -p 6009
ss_pid=$!
wait_until 10000 listening 6009
on 0 yes /dev/null "$TMP/spc.out" timeout 30 sockperf pp --tcp -i 198.18.0.2 -p 6009 -t 2
wait $!
rc=$?
kill -INT "$ss_pid" 2>/dev/null
finish "$ss_pid"
[[ $rc -eq 0 && $(stat 0 accelerated) == 1 && $(stat 0 tcp) == 0 &&
    $(stat 1 accelerated) == 1 ]] && grep -q "Summary: Latency is [0-9.]* usec" "$TMP/spc.out"
check "sockperf ping-pong over TCP for 2 s: accelerated on both sides" $? \
    "rc $rc: $(grep -E 'Summary|ERROR' "$TMP/spc.out" | tr '\n' ' ') $(cat "$TMP"/stats.* 2>/dev/null)"

# 5 % of what arrives on each node's link dropped (so, both directions)
for ns in "${NSS[@]}"; do
    ip netns exec "$ns" nft -f - <<EOF
table inet psloss {
    chain in {
        type filter hook input priority -10; policy accept;
        iifname != "lo" numgen random mod 1000 < 50 counter drop
    }
}
EOF
done
nc_run 6004 yes yes
dropped=0
for ns in "${NSS[@]}"; do
    n=$(ip netns exec "$ns" nft list table inet psloss 2>/dev/null |
        sed -n 's/.*counter packets \([0-9]*\).*/\1/p')
    dropped=$((dropped + ${n:-0}))
    ip netns exec "$ns" nft delete table inet psloss 2>/dev/null
done
[[ $(sha256sum <"$TMP/out.bin") == "$SUM" && $(stat 0 accelerated) == 1 &&
    $(stat 1 accelerated) == 1 && $dropped -gt 100 ]]
check "nc 20 MB with 5 % loss each way ($dropped packets dropped): accelerated, byte-exact" \
    $? "$(wc -c <"$TMP/out.bin") bytes; $(cat "$TMP"/stats.* "$TMP"/err.* 2>/dev/null | tail -5)"

# a stopped receiver between namespaces (MTU 1500, RDP's datagrams coalesced): stopped
# 6 s mid-stream, the stream goes on when it is continued and completes byte-exact, on RDP
# (its connection stalled, its doubt answered by the stopped process's kernel)
fresh
ST=$TOP/build/test/tools/plstream
on 1 sync /dev/null "$TMP/stop.srv" "$ST" listen 198.18.0.2 6013 recv 0 --progress "$TMP/stop.prog"
s=$!
wait_until 10000 listening 6013
on 0 sync /dev/null "$TMP/stop.cli" "$ST" connect 198.18.0.2 6013 send 200000000 --rate 40
c=$!
moved() { [ "$(tail -1 "$TMP/stop.prog" 2>/dev/null | cut -d' ' -f2)" -ge 16000000 ] 2>/dev/null; }
wait_until 20000 moved
kill -STOP "$s"
sleep 6 # the stop is the point: nothing may end meanwhile
up=0
kill -0 "$c" 2>/dev/null && up=1
kill -CONT "$s"
finish "$c" "$s"
cli=$(tail -1 "$TMP/stop.cli") srv=$(tail -1 "$TMP/stop.srv")
[[ $up == 1 && $cli == "sent 200000000 "*" end ok" && $srv == "received 200000000 "*" end eof" &&
    $(cut -d' ' -f3 <<<"$cli") == "$(cut -d' ' -f3 <<<"$srv")" && $(stat 0 accelerated) == 1 &&
    $(stat 1 accelerated) == 1 ]]
check "a receiver stopped 6 s mid-stream: the stream goes on, byte-exact, on RDP" $? \
    "$cli / $srv; $(cat "$TMP"/stats.* 2>/dev/null)"

# a lost node (last: its link stays down): a read blocked on an accelerated connection to
# it ends with an error (ETIMEDOUT or ECONNRESET), never a hang, once RDP or psid gives the
# node up; the reader sleeps in the RDP socket's read itself (wait.c), so its wake-up is
# the library's kick
cat >"$TMP/lost.py" <<'PY'
import errno, socket, sys, time
if sys.argv[1] == "server":
    l = socket.socket()
    l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    l.bind(("198.18.0.2", 6012))
    l.listen(1)
    print("listening", flush=True)
    c, _ = l.accept()
    c.recv(1)
    time.sleep(300)
else:
    s = socket.create_connection(("198.18.0.2", 6012), timeout=10)
    s.settimeout(None)
    s.sendall(b"x")
    print("reading", flush=True)
    t0 = time.monotonic()
    try:
        r = "data" if s.recv(1) else "eof"
    except OSError as e:
        r = errno.errorcode.get(e.errno, str(e.errno))
    print(r, "after", round(time.monotonic() - t0), "s", flush=True)
PY
fresh
on 1 sync /dev/null "$TMP/lost.srv" python3 "$TMP/lost.py" server
wait_until 10000 listening 6012
on 0 sync /dev/null "$TMP/lost.cli" python3 "$TMP/lost.py" client
c=$!
wait_until 10000 grep -q reading "$TMP/lost.cli"
sleep 0.5 # (in its read)
"$PSLOCAL" exec 1 --dir "$D" -- ip link set eth0 down
wait_until 60000 gone "$c"
ended=$?
finish "$c"
grep -Eq "^(ETIMEDOUT|ECONNRESET) after [0-9]+ s" "$TMP/lost.cli" && [ $ended -eq 0 ] &&
    [[ $(stat 0 accelerated) == 1 ]]
check "a node lost under a blocked read: an error within 60 s, not a hang ($(grep -E \
    "^(ETIMEDOUT|ECONNRESET) after" "$TMP/lost.cli"))" $? \
    "$(cat "$TMP/lost.cli" "$TMP"/stats.0 2>/dev/null)"
exit $((FAILS > 0))
