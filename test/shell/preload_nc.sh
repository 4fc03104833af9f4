#!/bin/bash
# preload_nc.sh - unmodified programs (netcat-openbsd, socat) under libpspreload on a 2-node
# loopback cluster (node 0 at 127.0.0.1, node 1 at 127.0.0.2), byte-exact (sha256) both ways:
#  - the library on both sides: PSP_STATS shows the connection accelerated on both, the
#    bytes carried by RDP (all but the first few, which go on the kernel socket until the
#    negotiation's answer: at least 75 %);
#  - on one side only: the connection stays on TCP, and the side with the library says why
#    (no_library);
#  - to another address of this machine, a listener without the library (the client waiting
#    for its answer, PSP_SYNC=1): TCP, no_library;
#  - socat with the library on the client only: TCP, no_library;
#  - a program under the library that finds no psid: TCP, byte-exact;
#  - PSP_STRICT=1 to a peer without the library: the connect fails with a clear error;
#  - PSP_DISABLE=1: the library stays out of the way;
#  - psrun --preload: ranks on both nodes run under the library (a listener rank on node 1,
#    a connecting rank on node 0), and pspreload finds the library by itself;
#  - psstat sockets lists a live accelerated connection on both nodes (path, addresses,
#    bytes), and nothing once it is closed.
# Every program is started in the background by pid and killed on exit; every wait bounded.
# shellcheck source-path=SCRIPTDIR source=lib/cluster.sh
source "$(dirname "$0")/lib/cluster.sh"
LIB=$TOP/build/lib/libpspreload.so
MB=${PRELOAD_NC_MB:-100}
cluster_up 2
all_up 5000 || {
    fail "preload nc: cluster up" "not all up"
    exit 1
}
if [ ! -f "$LIB" ]; then
    fail "preload nc: library" "library not built ($LIB)"
    exit 1
fi
for p in nc socat sha256sum; do
    command -v "$p" >/dev/null || {
        fail "preload nc: $p" "not installed (scripts/install-deps.sh --check)"
        exit 1
    }
done
head -c $((MB << 20)) /dev/urandom >"$CDIR/in.bin"
SUM=$(sha256sum <"$CDIR/in.bin")
PORT=$(free_port 16)

# on NODE LIB IN CMD...: on NODE, with the library (yes/no), stdin from IN, run CMD in the
# background (a background job's stdin would be /dev/null); $! is its pid
on() {
    local node=$1 lib=$2 in=$3
    shift 3
    if [ "$lib" = yes ] || [ "$lib" = sync ]; then # sync: PSP_SYNC=1, the answer first
        PSID_SOCKET=$CDIR/psid-$node.sock LD_PRELOAD=$LIB PSP_STATS=$CDIR/stats.$node \
            PSP_SYNC=$([ "$lib" = sync ] && echo 1 || echo 0) "$@" <"$in" &
    else
        PSID_SOCKET=$CDIR/psid-$node.sock "$@" <"$in" &
    fi
    PIDS+=($!)
}
listening() { ss -Hltn "sport = :$1" | grep -q .; } # listening PORT
# finish PID...: wait for each, 90 s at most (then it is killed: the check fails); the
# programs run without timeout(1), so that the trap's SIGKILL by pid reaches them
finish() {
    for p; do
        wait_until 90000 bash -c "! kill -0 $p 2>/dev/null" || kill -KILL "$p" 2>/dev/null
        wait "$p" 2>/dev/null
    done
}
# stat NODE KEY: the value of KEY in node's last stats line
stat() { tail -1 "$CDIR/stats.$1" 2>/dev/null | tr ' ' '\n' | sed -n "s/^$2=//p"; }
fresh() { rm -f "$CDIR"/stats.* "$CDIR/out.bin"; }

# nc: client -> server, both sides under the library
run_nc() { # run_nc PORT SERVER_LIB CLIENT_LIB
    fresh
    on 1 "$2" /dev/null nc -l 127.0.0.2 "$1" >"$CDIR/out.bin"
    local s=$!
    wait_until 3000 listening "$1"
    on 0 "$3" "$CDIR/in.bin" nc -N 127.0.0.2 "$1"
    local c=$!
    finish "$c" "$s"
}
# most_rdp NODE DIR: the bytes of NODE's direction DIR (tx, rx) are all counted, on the
# kernel socket first (until the negotiation's answer) and over RDP after, and at least 75 %
# of them over RDP (the negotiation takes milliseconds: 11 MB of the 100 went on TCP once
# under make check's load; the same-node test asks 75 % too)
most_rdp() {
    local r t
    r=$(stat "$1" "rdp_$2_bytes") t=$(stat "$1" "tcp_$2_bytes")
    [[ -n $r && -n $t && $((r + t)) == $((MB << 20)) && $((r * 4)) -ge $(((MB << 20) * 3)) ]]
}
run_nc "$PORT" yes yes
# messages per path: at least one DATA message per 64 KiB, the same number on both sides
[[ $(sha256sum <"$CDIR/out.bin") == "$SUM" && $(stat 0 accelerated) == 1 &&
    $(stat 1 accelerated) == 1 ]] && most_rdp 1 rx && most_rdp 0 tx &&
    [[ $(stat 1 rdp_rx_msgs) -ge $(($(stat 1 rdp_rx_bytes) >> 16)) &&
        $(stat 0 rdp_tx_msgs) == $(stat 1 rdp_rx_msgs) ]]
check "preload nc: ${MB} MB client->server, library on both sides: accelerated, byte-exact" $? \
    "$(cat "$CDIR"/stats.* 2>/dev/null)"

# nc: server -> client (the server speaks first)
fresh
on 1 yes "$CDIR/in.bin" nc -N -l 127.0.0.2 $((PORT + 1))
s=$!
wait_until 3000 listening $((PORT + 1))
on 0 yes /dev/null nc -d 127.0.0.2 $((PORT + 1)) >"$CDIR/out.bin"
finish $! "$s"
[[ $(sha256sum <"$CDIR/out.bin") == "$SUM" && $(stat 0 accelerated) == 1 ]] && most_rdp 0 rx
check "preload nc: ${MB} MB server->client (server speaks first): accelerated, byte-exact" $? \
    "$(cat "$CDIR"/stats.* 2>/dev/null)"

run_nc $((PORT + 2)) no yes
[[ $(sha256sum <"$CDIR/out.bin") == "$SUM" && $(stat 0 accelerated) == 0 &&
    $(stat 0 no_library) == 1 && $(stat 0 tcp_tx_bytes) == $((MB << 20)) &&
    $(stat 0 tcp_tx_msgs) -ge 1 && $(stat 0 rdp_tx_msgs) == 0 ]]
check "preload nc: library on the client only: TCP, no_library, its bytes counted, byte-exact" $? \
    "$(cat "$CDIR"/stats.* 2>/dev/null)"

run_nc $((PORT + 3)) yes no
[[ $(sha256sum <"$CDIR/out.bin") == "$SUM" && $(stat 1 accelerated) == 0 &&
    $(stat 1 no_library) == 1 ]]
check "preload nc: library on the server only: TCP, no_library, byte-exact" $? \
    "$(cat "$CDIR"/stats.* 2>/dev/null)"

# socat both ways
run_socat() { # run_socat PORT SERVER_LIB CLIENT_LIB: in.bin from node 0 to out.bin on node 1
    fresh
    on 1 "$2" /dev/null socat -u TCP-LISTEN:"$1",bind=127.0.0.2,reuseaddr \
        "OPEN:$CDIR/out.bin,creat,trunc"
    local s=$!
    wait_until 3000 listening "$1"
    on 0 "$3" /dev/null socat -u "OPEN:$CDIR/in.bin" TCP:127.0.0.2:"$1"
    finish $! "$s"
}
run_socat $((PORT + 4)) yes yes
[[ $(sha256sum <"$CDIR/out.bin") == "$SUM" && $(stat 0 accelerated) == 1 &&
    $(stat 1 accelerated) == 1 ]]
check "preload nc: socat ${MB} MB, library on both sides: accelerated, byte-exact" $? \
    "$(cat "$CDIR"/stats.* 2>/dev/null)"
fresh
on 1 yes /dev/null socat -u "OPEN:$CDIR/in.bin" \
    TCP-LISTEN:$((PORT + 5)),bind=127.0.0.2,reuseaddr
s=$!
wait_until 3000 listening $((PORT + 5))
on 0 yes /dev/null socat -u TCP:127.0.0.2:$((PORT + 5)) "OPEN:$CDIR/out.bin,creat,trunc"
finish $! "$s"
[[ $(sha256sum <"$CDIR/out.bin") == "$SUM" && $(stat 0 accelerated) == 1 ]]
check "preload nc: socat ${MB} MB the other way: accelerated, byte-exact" $? \
    "$(cat "$CDIR"/stats.* 2>/dev/null)"

# socat with the library on one side only: TCP, no_library
run_socat $((PORT + 13)) no sync
[[ $(sha256sum <"$CDIR/out.bin") == "$SUM" && $(stat 0 accelerated) == 0 &&
    $(stat 0 no_library) == 1 ]]
check "preload nc: socat ${MB} MB, library on the client only: TCP, no_library, byte-exact" $? \
    "$(cat "$CDIR"/stats.* 2>/dev/null)"

# another address of this machine (127.0.0.9, no node's): the same-node path is asked, and
# the plain listener there is not under the library: TCP
fresh
nc -l 127.0.0.9 $((PORT + 6)) >"$CDIR/out.bin" &
s=$!
PIDS+=("$s")
wait_until 3000 listening $((PORT + 6))
echo hello >"$CDIR/hello"
on 0 sync "$CDIR/hello" nc -N 127.0.0.9 $((PORT + 6))
finish $! "$s"
[[ $(cat "$CDIR/out.bin") == hello && $(stat 0 no_library) == 1 && $(stat 0 shm) == 0 ]]
check "preload nc: another address of this machine, no library there: TCP, no_library" $? \
    "$(cat "$CDIR"/stats.* 2>/dev/null)"

# a program that finds no psid (its socket names nothing): everything passes through
fresh
on 1 no /dev/null nc -l 127.0.0.2 $((PORT + 14)) >"$CDIR/out.bin"
s=$!
wait_until 3000 listening $((PORT + 14))
PSID_SOCKET=$CDIR/nothing.sock LD_PRELOAD=$LIB timeout 60 nc -N 127.0.0.2 $((PORT + 14)) \
    <"$CDIR/in.bin"
rc=$?
finish "$s"
[[ $rc == 0 && $(sha256sum <"$CDIR/out.bin") == "$SUM" ]]
check "preload nc: no psid to be found: the program runs on TCP, byte-exact" $? "nc rc $rc"

# PSP_STRICT: a connection between nodes that would stay on TCP fails
fresh
on 1 no /dev/null nc -l 127.0.0.2 $((PORT + 7)) >"$CDIR/out.bin"
s=$!
wait_until 3000 listening $((PORT + 7))
echo hello | PSID_SOCKET=$CDIR/psid-0.sock LD_PRELOAD=$LIB PSP_STRICT=1 timeout 20 \
    nc -N 127.0.0.2 $((PORT + 7)) 2>"$CDIR/strict.err"
rc=$?
kill "$s" 2>/dev/null
[[ $rc -ne 0 && $(cat "$CDIR/strict.err") == *"pspreload: strict"* && ! -s $CDIR/out.bin ]]
check "preload nc: PSP_STRICT=1 to a peer without the library fails with a clear error" $? \
    "rc $rc: $(cat "$CDIR/strict.err")"

# PSP_DISABLE: no negotiation, no statistics
fresh
on 1 no /dev/null nc -l 127.0.0.2 $((PORT + 7)) >"$CDIR/out.bin"
s=$!
wait_until 3000 listening $((PORT + 7))
echo hello | PSID_SOCKET=$CDIR/psid-0.sock LD_PRELOAD=$LIB PSP_DISABLE=1 PSP_STRICT=1 \
    PSP_STATS="$CDIR/stats.0" timeout 20 nc -N 127.0.0.2 $((PORT + 7))
finish "$s"
[[ $(cat "$CDIR/out.bin") == hello && ! -e $CDIR/stats.0 ]]
check "preload nc: PSP_DISABLE=1 passes everything through" $? "$(cat "$CDIR"/stats.* 2>/dev/null)"
# psrun --preload: one job's rank on node 1 listens, another job's rank on node 0 connects
fresh
head -c 1000000 /dev/urandom >"$CDIR/small.bin"
PSID_SOCKET=$CDIR/psid-0.sock PSP_STATS=$CDIR/stats.1 "$BIN/psrun" --preload -w 1 \
    -i none nc -l 127.0.0.2 $((PORT + 8)) >"$CDIR/out.bin" 2>"$CDIR/psrun1.err" &
s=$!
PIDS+=("$s")
wait_until 5000 listening $((PORT + 8))
# (the connecting rank waits for its negotiation, PSP_SYNC=1: under load 1 MB can be sent
# and the connection closed before the answer comes, and it stays on TCP as short)
PSID_SOCKET=$CDIR/psid-0.sock PSP_STATS=$CDIR/stats.0 PSP_SYNC=1 timeout 30 "$BIN/psrun" \
    --preload -w 0 nc -N 127.0.0.2 $((PORT + 8)) <"$CDIR/small.bin" 2>"$CDIR/psrun0.err"
finish "$s"
[[ $(sha256sum <"$CDIR/out.bin") == $(sha256sum <"$CDIR/small.bin") &&
    $(stat 0 accelerated) == 1 && $(stat 1 accelerated) == 1 ]]
check "preload nc: psrun --preload: ranks on two nodes, accelerated, byte-exact" $? \
    "$(cat "$CDIR"/stats.* "$CDIR"/psrun*.err 2>/dev/null)"

# pspreload finds the library next to itself
fresh
on 1 no /dev/null nc -l 127.0.0.2 $((PORT + 9)) >"$CDIR/out.bin"
s=$!
wait_until 3000 listening $((PORT + 9))
PSID_SOCKET=$CDIR/psid-0.sock PSP_SYNC=1 timeout 20 "$BIN/pspreload" --stats="$CDIR/stats.0" \
    nc -N 127.0.0.2 $((PORT + 9)) <"$CDIR/hello"
finish "$s"
[[ $(cat "$CDIR/out.bin") == hello && $(stat 0 no_library) == 1 ]]
check "preload nc: pspreload runs a program under the library (found by itself)" $? \
    "$(cat "$CDIR"/stats.* 2>/dev/null)"
check_usage "preload nc: pspreload without a program prints the usage, exit 2" "$BIN/pspreload"

# psstat sockets: a connection held open (its client's stdin a fifo we keep open)
fresh
mkfifo "$CDIR/in.fifo"
on 1 yes /dev/null nc -l 127.0.0.2 $((PORT + 10)) >"$CDIR/out.bin"
s=$!
wait_until 3000 listening $((PORT + 10))
on 0 yes "$CDIR/in.fifo" nc -N 127.0.0.2 $((PORT + 10))
c=$!
exec {hold}>"$CDIR/in.fifo"
echo hi >&"$hold"
wait_until 5000 grep -q hi "$CDIR/out.bin"
# (the bytes can arrive before each end's psid has the connection's record: a bounded wait)
listed() {
    j0=$(PSID_SOCKET=$CDIR/psid-0.sock "$BIN/psstat" --json sockets)
    j1=$(PSID_SOCKET=$CDIR/psid-1.sock "$BIN/psstat" --json sockets)
    t=$(PSID_SOCKET=$CDIR/psid-0.sock "$BIN/psstat" sockets)
    json_true "$j0" ".sockets | length == 1 and .[0].path == \"rdp\" and
        .[0].remote == \"127.0.0.2:$((PORT + 10))\" and .[0].tx_bytes == 3 and .[0].uid == $(id -u)" &&
        json_true "$j1" ".sockets | length == 1 and .[0].local == \"127.0.0.2:$((PORT + 10))\" and
        .[0].rx_bytes == 3" && [[ $(wc -l <<<"$t") == 2 && $t == *" rdp "* ]]
}
wait_until 5000 listed
check "preload nc: psstat sockets lists the connection on both nodes" $? "$j0 / $j1 / $t"
exec {hold}>&-
finish "$c" "$s"
unlisted() {
    j0=$(PSID_SOCKET=$CDIR/psid-0.sock "$BIN/psstat" --json sockets)
    json_true "$j0" '.sockets | length == 0'
}
wait_until 5000 unlisted
check "preload nc: ... and nothing once it is closed" $? "$j0"
# rules: from the environment, and from a file (a bad line names file:line)
fresh
on 1 yes /dev/null nc -l 127.0.0.2 $((PORT + 11)) >"$CDIR/out.bin"
s=$!
wait_until 3000 listening $((PORT + 11))
PSID_SOCKET=$CDIR/psid-0.sock LD_PRELOAD=$LIB PSP_STATS=$CDIR/stats.0 \
    PSP_RULES="!127.0.0.2/32:$((PORT + 11)),127.0.0.0/8" timeout 20 nc -N 127.0.0.2 \
    $((PORT + 11)) <"$CDIR/hello"
finish "$s"
[[ $(cat "$CDIR/out.bin") == hello && $(stat 0 rule) == 1 ]]
check "preload nc: PSP_RULES '!ADDR/LEN:PORT' keeps that destination on TCP (rule)" $? \
    "$(cat "$CDIR"/stats.* 2>/dev/null)"
printf '# preload rules\n10.0.0.0/8:1-1000\n\n!10.1.0.0/16 # comment\n300.1.2.3\n' >"$CDIR/rules"
out=$(PSID_SOCKET=$CDIR/psid-0.sock LD_PRELOAD=$LIB PSP_RULES_FILE=$CDIR/rules /bin/true 2>&1)
[[ $out == "pspreload: $CDIR/rules:5: bad rule near '300.1.2.3': the library is off" ]]
check "preload nc: a bad line of the rules file is named by file:line" $? "$out"

# Under CPU contention the acceptor's first handshake datagram may reach the connector
# before the connector has learned the pair key (its psid's event and the acceptor's reply
# travel different paths): it is dropped, and must be retransmitted at RDP's first timeout.
# A timer left unarmed by a thread other than the progress thread once stalled such a
# connection until RDP gave up (20 s): the server speaks first, 12 times, with a busy CPU,
# both sides negotiating before their first byte (PSP_SYNC=1).
head -c $((2 << 20)) /dev/urandom >"$CDIR/two.bin"
SUM2=$(sha256sum <"$CDIR/two.bin")
yes >/dev/null &
hog=$!
PIDS+=("$hog")
bad="" acc=0
for i in $(seq 12); do
    fresh
    on 1 sync "$CDIR/two.bin" nc -N -l 127.0.0.2 $((PORT + 12 + i % 2))
    s=$!
    wait_until 3000 listening $((PORT + 12 + i % 2))
    PSID_SOCKET=$CDIR/psid-0.sock LD_PRELOAD=$LIB PSP_STATS=$CDIR/stats.0 PSP_SYNC=1 timeout 10 \
        nc -d 127.0.0.2 $((PORT + 12 + i % 2)) >"$CDIR/out.bin"
    rc=$?
    finish "$s"
    [[ $rc == 0 && $(sha256sum <"$CDIR/out.bin") == "$SUM2" ]] ||
        bad+=" run $i: exit $rc, $(wc -c <"$CDIR/out.bin") bytes;"
    [[ $(stat 0 accelerated) == 1 ]] && acc=$((acc + 1))
done
kill "$hog"
# a negotiation slower than its bound under such load leaves that connection on TCP, as it
# should; most must still be accelerated
[[ -z $bad && $acc -ge 6 ]]
check "preload nc: 12 times server first under a CPU hog: byte-exact, in time, most accelerated" \
    $? "$bad accelerated $acc of 12"
exit $((FAILS > 0))
