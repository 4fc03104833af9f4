#!/bin/bash
# preload_programs.sh - real servers and clients under libpspreload on a 2-node loopback
# cluster (servers on node 1 at 127.0.0.2, clients on node 0), byte-exact:
#  - curl fetches a 20 MB file from python3's http.server: accelerated on both sides (the
#    bytes before the move on TCP; with PSP_SYNC=1 all over RDP), and with the server alone
#    under the library: TCP (no_library);
#  - redis-server with redis-cli SET and GET of a 1 MB value (accelerated, or "short" when
#    over before the move; with PSP_SYNC=1 over RDP), and redis-benchmark (50 connections,
#    SET and GET) exiting 0: every connection accelerated;
#  - iperf3 (a 2 s test): client and server exit 0, and on both sides both of its
#    connections, the control and the data connection, are accelerated;
#  - sockperf ping-pong over TCP for 2 s: exits 0 with its latency summary, accelerated on
#    both sides (the server ends on SIGINT, its way to stop, so that it writes its counters);
#  - redis-cli, iperf3 and sockperf with the library on the client's side only (PSP_SYNC=1:
#    the client waits for the answer at its connect): the same results, every connection on
#    TCP for the reason no_library.
# Every server started by pid and killed on exit; every wait bounded.
# shellcheck source-path=SCRIPTDIR source=lib/cluster.sh
source "$(dirname "$0")/lib/cluster.sh"
LIB=$TOP/build/lib/libpspreload.so
cluster_up 2
all_up 5000 || {
    fail "preload programs: cluster up" "not all up"
    exit 1
}
if [ ! -f "$LIB" ]; then
    fail "preload programs: library" "library not built ($LIB)"
    exit 1
fi
for p in curl python3 redis-server redis-cli redis-benchmark iperf3 sockperf; do
    command -v "$p" >/dev/null || {
        fail "preload programs: $p" "not installed (scripts/install-deps.sh --check)"
        exit 1
    }
done
PORT=$(free_port 8)
listening() { ss -Hltn "sport = :$1" | grep -q .; } # listening PORT
stat() { tail -1 "$1" 2>/dev/null | tr ' ' '\n' | sed -n "s/^$2=//p"; } # stat FILE KEY
# node0/node1 CMD...: run CMD on that node with the library, counters to $CDIR/stats.TAG
node0() { PSID_SOCKET=$CDIR/psid-0.sock LD_PRELOAD=$LIB PSP_STATS=$CDIR/stats.$TAG "$@"; }
node1() { PSID_SOCKET=$CDIR/psid-1.sock LD_PRELOAD=$LIB PSP_STATS=$CDIR/stats.$TAG "$@"; }

mkdir -p "$CDIR/www"
head -c 20000000 /dev/urandom >"$CDIR/www/f.bin"
(cd "$CDIR/www" && TAG=http node1 exec python3 -m http.server --bind 127.0.0.2 \
    "$PORT" >/dev/null 2>&1) &
PIDS+=($!)
wait_until 10000 listening "$PORT"
# paced at 40 MB/s (half a second): the negotiation runs beside the transfer and must win
# before its end, which an unpaced 20 MB on loopback can beat on a loaded machine ("short")
TAG=curl node0 timeout 30 curl -s --limit-rate 40M -o "$CDIR/got.bin" \
    "http://127.0.0.2:$PORT/f.bin"
rc=$?
cmp -s "$CDIR/got.bin" "$CDIR/www/f.bin" && [ $rc -eq 0 ] &&
    [ "$(stat "$CDIR/stats.curl" accelerated)" = 1 ] &&
    [ "$(($(stat "$CDIR/stats.curl" rdp_rx_bytes) + $(stat "$CDIR/stats.curl" tcp_rx_bytes)))" -gt 20000000 ] &&
    [ "$(stat "$CDIR/stats.curl" rdp_rx_bytes)" -gt 5000000 ]
check "preload programs: curl gets 20 MB from python3 http.server, accelerated, byte-exact" $? \
    "curl rc $rc: $(cat "$CDIR/stats.curl" 2>/dev/null)"
# (the bytes before the move ride TCP: 0.2-4.4 MB of the 20 idle, 8 under make check's load;
# with PSP_SYNC=1 the connection asks at its connect and waits: all of them over RDP)
TAG=curls PSP_SYNC=1 node0 timeout 30 curl -s -o "$CDIR/got3.bin" "http://127.0.0.2:$PORT/f.bin"
rc=$?
cmp -s "$CDIR/got3.bin" "$CDIR/www/f.bin" && [ $rc -eq 0 ] &&
    [ "$(stat "$CDIR/stats.curls" accelerated)" = 1 ] &&
    [ "$(stat "$CDIR/stats.curls" tcp_rx_bytes)" = 0 ] &&
    [ "$(stat "$CDIR/stats.curls" rdp_rx_bytes)" -gt 20000000 ]
check "preload programs: curl with PSP_SYNC=1: all 20 MB over RDP, byte-exact" $? \
    "curl rc $rc: $(cat "$CDIR/stats.curls" 2>/dev/null)"
timeout 30 curl -s -o "$CDIR/got2.bin" "http://127.0.0.2:$PORT/f.bin"
cmp -s "$CDIR/got2.bin" "$CDIR/www/f.bin"
check "preload programs: curl without the library from the same server: TCP, byte-exact" $?

TAG=redis node1 exec redis-server --bind 127.0.0.2 --port $((PORT + 1)) --save '' \
    --appendonly no --daemonize no >"$CDIR/redis.log" 2>&1 &
PIDS+=($!)
wait_until 10000 listening $((PORT + 1))
head -c 1000000 /dev/urandom | base64 -w0 >"$CDIR/val"
# A connection moves up once it has lived PSP_UPGRADE_US (1 ms): a SET or GET that is over
# sooner may end on TCP, counted as "short" and nothing else. With PSP_SYNC=1 it asks at the
# connect and waits: its bytes must go over RDP.
TAG=rset node0 timeout 20 redis-cli -h 127.0.0.2 -p $((PORT + 1)) -x SET k <"$CDIR/val" >/dev/null
TAG=rget node0 timeout 20 redis-cli -h 127.0.0.2 -p $((PORT + 1)) --raw GET k >"$CDIR/val2"
moved_or_short() { # moved_or_short TAG: one connection, accelerated or left on TCP as short
    [ "$(($(stat "$CDIR/stats.$1" accelerated) + $(stat "$CDIR/stats.$1" short)))" = 1 ] &&
        [ "$(stat "$CDIR/stats.$1" tcp)" = "$(stat "$CDIR/stats.$1" short)" ]
}
cmp -s <(
    cat "$CDIR/val"
    echo
) "$CDIR/val2" && moved_or_short rset && moved_or_short rget
check "preload programs: redis-cli SET and GET of 1 MB, byte-exact, accelerated or short" $? \
    "$(cat "$CDIR"/stats.rset "$CDIR"/stats.rget 2>/dev/null)"
# sync_set_get SETTAG GETTAG PORT VAL: redis-cli SET of the value in file VAL and GET of it
# back, each waiting for its connection's answer (PSP_SYNC=1); true if the value came back
sync_set_get() {
    TAG=$1 PSP_SYNC=1 node0 timeout 20 redis-cli -h 127.0.0.2 -p "$3" -x SET k <"$4" >/dev/null
    TAG=$2 PSP_SYNC=1 node0 timeout 20 redis-cli -h 127.0.0.2 -p "$3" --raw GET k >"$4.got"
    cmp -s <(
        cat "$4"
        echo
    ) "$4.got"
}
head -c 1000000 /dev/urandom | base64 -w0 >"$CDIR/val3"
sync_set_get rset2 rget2 $((PORT + 1)) "$CDIR/val3" && [ "$(stat "$CDIR/stats.rset2" accelerated)" = 1 ] &&
    [ "$(stat "$CDIR/stats.rget2" accelerated)" = 1 ] &&
    [ "$(stat "$CDIR/stats.rset2" rdp_tx_bytes)" -gt 1000000 ] &&
    [ "$(stat "$CDIR/stats.rget2" rdp_rx_bytes)" -gt 1000000 ]
check "preload programs: redis-cli SET and GET of 1 MB with PSP_SYNC=1: over RDP, byte-exact" $? \
    "$(cat "$CDIR"/stats.rset2 "$CDIR"/stats.rget2 2>/dev/null)"
TAG=bench node0 timeout 60 redis-benchmark -h 127.0.0.2 -p $((PORT + 1)) -q -n 10000 -c 50 \
    -t set,get >"$CDIR/bench.out" 2>&1
rc=$?
[ $rc -eq 0 ] && grep -q "GET: .* requests per second" "$CDIR/bench.out" &&
    [ "$(stat "$CDIR/stats.bench" accelerated)" -ge 50 ] &&
    [ "$(($(stat "$CDIR/stats.bench" tcp) - $(stat "$CDIR/stats.bench" short)))" = 0 ]
check "preload programs: redis-benchmark, 50 connections, every one accelerated" $? \
    "rc $rc: $(tail -2 "$CDIR/bench.out") $(cat "$CDIR/stats.bench" 2>/dev/null)"

# iperf3: -1, the server ends after one test and so writes its counters (timeout bounds the
# wait for it)
TAG=iperfs node1 exec timeout 30 iperf3 -s -1 -B 127.0.0.2 -p $((PORT + 2)) >"$CDIR/iperfs.out" 2>&1 &
spid=$!
PIDS+=("$spid")
wait_until 10000 listening $((PORT + 2))
TAG=iperfc node0 timeout 30 iperf3 -c 127.0.0.2 -p $((PORT + 2)) -t 2 >"$CDIR/iperfc.out" 2>&1
rc=$?
wait "$spid"
src=$?
[ $rc -eq 0 ] && [ $src -eq 0 ] && grep -q "receiver" "$CDIR/iperfc.out" &&
    [ "$(stat "$CDIR/stats.iperfc" accelerated)" = 2 ] &&
    [ "$(stat "$CDIR/stats.iperfc" tcp)" = 0 ] &&
    [ "$(stat "$CDIR/stats.iperfs" accelerated)" = 2 ] &&
    [ "$(stat "$CDIR/stats.iperfs" tcp)" = 0 ]
check "preload programs: iperf3 -t 2, control and data connection accelerated on both sides" $? \
    "client rc $rc, server rc $src: $(tail -3 "$CDIR/iperfc.out" | tr '\n' ' ') $(cat "$CDIR/stats.iperfc" "$CDIR/stats.iperfs" 2>/dev/null)"

# sockperf: the server runs until SIGINT
TAG=sps node1 exec sockperf sr --tcp -i 127.0.0.2 -p $((PORT + 3)) >"$CDIR/sps.out" 2>&1 &
spid=$!
PIDS+=("$spid")
wait_until 10000 listening $((PORT + 3))
TAG=spc node0 timeout 30 sockperf pp --tcp -i 127.0.0.2 -p $((PORT + 3)) -t 2 \
    >"$CDIR/spc.out" 2>&1
rc=$?
kill -INT "$spid"
wait_until 10000 grep -q . "$CDIR/stats.sps"
[ $rc -eq 0 ] && grep -q "Summary: Latency is [0-9.]* usec" "$CDIR/spc.out" &&
    [ "$(stat "$CDIR/stats.spc" accelerated)" = 1 ] &&
    [ "$(stat "$CDIR/stats.spc" tcp)" = 0 ] &&
    [ "$(stat "$CDIR/stats.sps" accelerated)" = 1 ]
check "preload programs: sockperf ping-pong over TCP for 2 s, accelerated on both sides" $? \
    "rc $rc: $(grep -E "Summary|ERROR" "$CDIR/spc.out" | tr '\n' ' ') $(cat "$CDIR/stats.spc" "$CDIR/stats.sps" 2>/dev/null)"

# the library on the client's side only: TCP, no_library (PSP_SYNC=1: the answer comes at
# the connect, so the reason is the only one possible)
one_side() { # one_side TAG N: N connections, all on TCP for want of the library there
    [ "$(stat "$CDIR/stats.$1" accelerated)" = 0 ] && [ "$(stat "$CDIR/stats.$1" tcp)" = "$2" ] &&
        [ "$(stat "$CDIR/stats.$1" no_library)" = "$2" ]
}
redis-server --bind 127.0.0.2 --port $((PORT + 4)) --save '' --appendonly no \
    --daemonize no >"$CDIR/redis2.log" 2>&1 &
PIDS+=($!)
wait_until 10000 listening $((PORT + 4))
sync_set_get r1set r1get $((PORT + 4)) "$CDIR/val" && one_side r1set 1 && one_side r1get 1
check "preload programs: redis-cli SET and GET of 1 MB, library on the client only: TCP, no_library, byte-exact" \
    $? "$(cat "$CDIR"/stats.r1set "$CDIR"/stats.r1get 2>/dev/null)"

timeout 30 iperf3 -s -1 -B 127.0.0.2 -p $((PORT + 5)) >"$CDIR/iperfs1.out" 2>&1 &
spid=$!
PIDS+=("$spid")
wait_until 10000 listening $((PORT + 5))
TAG=iperf1 PSP_SYNC=1 node0 timeout 30 iperf3 -c 127.0.0.2 -p $((PORT + 5)) -t 1 \
    >"$CDIR/iperfc1.out" 2>&1
rc=$?
wait "$spid"
src=$?
[ $rc -eq 0 ] && [ $src -eq 0 ] && grep -q "receiver" "$CDIR/iperfc1.out" && one_side iperf1 2
check "preload programs: iperf3 -t 1, library on the client only: both connections TCP, no_library" \
    $? "client rc $rc, server rc $src: $(cat "$CDIR/stats.iperf1" 2>/dev/null)"

sockperf sr --tcp -i 127.0.0.2 -p $((PORT + 6)) >"$CDIR/sps1.out" 2>&1 &
PIDS+=($!)
wait_until 10000 listening $((PORT + 6))
TAG=spc1 PSP_SYNC=1 node0 timeout 30 sockperf pp --tcp -i 127.0.0.2 -p $((PORT + 6)) -t 1 \
    >"$CDIR/spc1.out" 2>&1
rc=$?
[ $rc -eq 0 ] && grep -q "Summary: Latency is [0-9.]* usec" "$CDIR/spc1.out" && one_side spc1 1
check "preload programs: sockperf ping-pong, library on the client only: TCP, no_library" $? \
    "rc $rc: $(grep -E "Summary|ERROR" "$CDIR/spc1.out" | tr '\n' ' ') $(cat "$CDIR/stats.spc1" 2>/dev/null)"
exit $((FAILS > 0))
