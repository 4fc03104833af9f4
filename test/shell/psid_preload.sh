#!/bin/bash
# psid_preload.sh - psid's side of the preload negotiation (psid/preload.c) on a 2-node
# loopback cluster, driven by test/tools/pldrive as processes under the library would:
#  - a connect to a port with one registered listener on the other node gets the listener's
#    endpoint and a pair key; the listener's process, after its accept, gets the
#    connector's endpoint and the same key; the record is then gone;
#  - every other case means TCP, with its reason: no listener registered, a port two
#    processes listen on, the same node, not a cluster address, no endpoint opened;
#  - the key goes only to the two processes of the pair: another process of the listener's
#    node cannot take the connection; another connector gets another key;
#  - registrations die with their process; an endpoint is one per connection.
# shellcheck source-path=SCRIPTDIR source=lib/cluster.sh
source "$(dirname "$0")/lib/cluster.sh"
PL=$TOP/build/test/tools/pldrive
cluster_up 2
all_up 5000 || {
    fail "preload: cluster up" "not all up"
    exit 1
}
declare -A FD
# start NAME NODE: a pldrive on NODE's psid, fed through a fifo
start() {
    mkfifo "$CDIR/$1.in"
    (
        # not the others' fifos: their ends must close when their writer closes them
        for f in "${FD[@]}"; do exec {f}>&-; done
        PSID_SOCKET=$CDIR/psid-$2.sock exec "$PL" <"$CDIR/$1.in" >"$CDIR/$1.out" 2>&1
    ) &
    PIDS+=($!)
    eval "PID_$1=$!"
    local fd
    exec {fd}>"$CDIR/$1.in"
    FD[$1]=$fd
}
# say NAME COMMAND: its answer line (empty after 3 s without one)
say() {
    local n
    n=$(wc -l <"$CDIR/$1.out")
    echo "$2" >&"${FD[$1]}"
    wait_until 3000 more_lines "$CDIR/$1.out" "$n" || return 1
    sed -n "$((n + 1))p" "$CDIR/$1.out"
}
stop() { # stop NAME: end of input; the process exits
    local fd=${FD[$1]} pid
    exec {fd}>&-
    pid=$(eval "echo \$PID_$1")
    wait_until 3000 bash -c "! kill -0 $pid 2>/dev/null"
}
more_lines() { [ "$(wc -l <"$1")" -gt "$2" ]; } # more_lines FILE N
field() { sed -n "s/.* $1 \([^ ]*\).*/\1/p" <<<"$2"; } # field NAME LINE

start L 1
start C 0
lo=$(say L "open 40001")
co=$(say C "open 40002")
[[ $lo == "open 0 node 1 ep "* && $co == "open 0 node 0 ep "* ]]
check "preload: each process gets an endpoint of its node" $? "$lo / $co"
[ "$(say L "listen 5000")" = "listen 0" ]
check "preload: a listening port is registered" $? "$(tail -1 "$CDIR/L.out")"

c1=$(say C "connect 127.0.0.2 5000 6000")
key=$(field key "$c1")
[[ $c1 == "connect 0 node 1 ep $(field ep "$lo") udp 40001 addr 127.0.0.2 key "* && ${#key} = 64 ]]
check "preload: connect to a registered listener gets its endpoint and a pair key" $? "$c1"
a1=$(say L "accept 127.0.0.1 6000 5000")
[[ $a1 == "accept 0 node 0 ep $(field ep "$co") udp 40002 addr 127.0.0.1 key $key" ]]
check "preload: the listener's accept gets the connector's endpoint and the same key" $? "$a1"
[[ $(say L "accept 127.0.0.1 6000 5000") == "accept 2 "* ]]
check "preload: a negotiated connection is taken once (then ENOENT)" $? "$(tail -1 "$CDIR/L.out")"

# reasons for TCP
r=$(say C "connect 127.0.0.2 5001 6001")
[[ $r == "connect 111 listener not registered" ]]
check "preload: no listener registered -> ECONNREFUSED, TCP" $? "$r"
r=$(say C "connect 127.0.0.1 5000 6001")
[[ $r == "connect 18 same node" ]]
check "preload: the same node -> EXDEV, TCP (until the same-node path)" $? "$r"
r=$(say C "connect 198.51.100.7 5000 6001")
[[ $r == "connect 113 not a cluster address" ]]
check "preload: an address outside the cluster -> EHOSTUNREACH, TCP" $? "$r"
start N 0
r1=$(say N "listen 5000")
r2=$(say N "connect 127.0.0.2 5000 6009")
r3=$(say N "open 40003")
r4=$(say N "open 40004")
[[ $r1 == "listen 107 no endpoint open" && $r2 == "connect 107 no endpoint open" &&
    $r3 == "open 0 "* && $r4 == "open 114 endpoint already open" ]]
check "preload: without an endpoint ENOTCONN; one endpoint per connection (EALREADY)" $? \
    "$r1 / $r2 / $r3 / $r4"

# the key goes to the pair's processes only
start X 1
say X "open 40005" >/dev/null
c2=$(say C "connect 127.0.0.2 5000 6002")
x=$(say X "accept 127.0.0.1 6002 5000")
a2=$(say L "accept 127.0.0.1 6002 5000")
[[ $c2 == "connect 0 "* && $x == "accept 2 "* && $a2 == "accept 0 "*" key $(field key "$c2")" ]]
check "preload: another process of the listener's node cannot take the connection" $? \
    "$c2 / $x / $a2"
c3=$(say N "connect 127.0.0.2 5000 6003")
[[ $c3 == "connect 0 "* && $(field key "$c3") != "$key" && -n $(field key "$c3") ]]
check "preload: another connector gets another pair key" $? "$c3"

# a port two processes listen on is ambiguous: TCP
say X "listen 5000" >/dev/null
r=$(say C "connect 127.0.0.2 5000 6004")
[[ $r == "connect 98 listener shared by several processes" ]]
check "preload: a listener shared by two processes -> TCP" $? "$r"
[ "$(say X "unlisten 5000")" = "unlisten 0" ] && [[ $(say C "connect 127.0.0.2 5000 6005") == "connect 0 "* ]]
check "preload: unlisten takes the registration back" $? "$(tail -2 "$CDIR/C.out")"

# registrations die with the process
stop L
r=$(say C "connect 127.0.0.2 5000 6006")
[[ $r == "connect 111 listener not registered" ]]
check "preload: a listener's registration dies with its process" $? "$r"
stop C
stop N
stop X
exit $((FAILS > 0))
