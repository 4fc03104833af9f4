#!/bin/bash
# psid_preload.sh - psid's side of the preload negotiation (psid/preload.c) on a 2-node
# loopback cluster, driven by test/tools/pldrive as processes under the library would, with
# real sockets passed to psid:
#  - connect, then accept: the acceptor gets the connector's endpoint, connection id and the
#    pair key; the connector gets its outcome as an event with the acceptor's endpoint and
#    the same key; a connection is taken once;
#  - every other case means TCP, with its reason: no listener registered, the same node, not a cluster address, a socket not bound to the
#    node's address, no endpoint opened, no socket passed;
#  - a connector that closed its socket before the accept: the acceptor gets ENOENT (the
#    socket's inode is checked with sock_diag), the connector an error outcome;
#  - a claim that comes before the connector's request (the SYN goes first) waits for it
#    (the connector's psid is probed); one whose request never comes is TCP, and the request
#    refused when it comes after all; the same on one node, where the claim itself waits;
#  - a connection nobody takes: the connector's outcome is ETIMEDOUT after PSI_PL_ACCEPT_MS;
#  - a client passing more descriptors than psid takes is disconnected, psid stays up;
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
# say NAME COMMAND [MS]: its answer line (empty after MS, default 3 s, without one)
say() {
    local n
    n=$(wc -l <"$CDIR/$1.out")
    echo "$2" >&"${FD[$1]}"
    wait_until "${3:-3000}" more_lines "$CDIR/$1.out" "$n" || return 1
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
lo=$(say L "open 40001 127.0.0.2")
co=$(say C "open 40002 127.0.0.1")
[[ $lo == "open 0 node 1 ep "* && $co == "open 0 node 0 ep "* ]]
check "preload: each process gets an endpoint of its node" $? "$lo / $co"
[ "$(say L "listen 127.0.0.2 5000")" = "listen 0" ]
check "preload: a listening socket is registered" $? "$(tail -1 "$CDIR/L.out")"

c1=$(say C "connect 127.0.0.2 5000 77 127.0.0.1")
a1=$(say L "accept")
key=$(field key "$a1")
[[ $c1 == "connect 0" && $a1 == "accept 0 node 0 ep $(field ep "$co") udp 40002 addr 127.0.0.1 key "*" conn 77" && ${#key} = 64 ]]
check "preload: the accept of a negotiated connection gets the connector's endpoint, id and key" $? "$c1 / $a1"
e1=$(say C "event")
[[ $e1 == "outcome 77 0 node 1 ep $(field ep "$lo") udp 40001 addr 127.0.0.2 key $key" ]]
check "preload: the connector's outcome names the acceptor, with the same key" $? "$e1"

# the acceptor's claim before the connector's request (the library's SYN goes first): the
# listener's psid probes the connector's, which holds the probe until the request comes (up
# to 200 ms: the connector's user has an endpoint) and answers it as the claim
say C "early 127.0.0.2 5000 91 127.0.0.1" >/dev/null
n=$(wc -l <"$CDIR/L.out")
echo accept >&"${FD[L]}"
wait_until 20 more_lines "$CDIR/L.out" "$n" && early="answered before the request"
an=$(say C "announce 91")
wait_until 3000 more_lines "$CDIR/L.out" "$n"
a6=$(sed -n "$((n + 1))p" "$CDIR/L.out")
e6=$(say C "event")
[[ -z ${early:-} && $an == "announce 0" && $a6 == "accept 0 "*"conn 91" &&
    $e6 == "outcome 91 0 "*"key $(field key "$a6")" ]]
check "preload: a claim before the connector's request waits for it, then both are told" $? \
    "${early:-} / $an / $a6 / $e6"
# ... and a request that never comes: the acceptor goes TCP, and the request, when it comes
# after all, is refused (the two sides never disagree)
say C "early 127.0.0.2 5000 92 127.0.0.1" >/dev/null
a7=$(say L "accept")
an=$(say C "announce 92")
e7=$(say C "event")
[[ $a7 == "accept 2 no such connection negotiated" &&
    $an == "announce 2 accepted on TCP before the request came" &&
    $e7 == "outcome 92 2 accepted on TCP before the request came" ]]
check "preload: a claim whose request never came: TCP; the late request is refused" $? \
    "$a7 / $an / $e7"

# on one node (a connection negotiates once it lived PSP_UPGRADE_US, so the accept's claim
# may come first): the claim waits for the request, which takes it at once; and a claim
# whose request never comes is TCP after 200 ms, the request refused when it comes after all
start SL 0
start SC 0
s1=$(say SL "open 40011 127.0.0.1")
s2=$(say SC "open 40012 127.0.0.1")
s3=$(say SL "listen 127.0.0.1 5010")
say SC "early 127.0.0.1 5010 95 127.0.0.1" >/dev/null
n=$(wc -l <"$CDIR/SL.out")
echo accept-shm >&"${FD[SL]}"
wait_until 20 more_lines "$CDIR/SL.out" "$n" && early="answered before the request"
an=$(say SC "announce-same 95")
wait_until 3000 more_lines "$CDIR/SL.out" "$n"
a8=$(sed -n "$((n + 1))p" "$CDIR/SL.out")
e8=$(say SC "event")
[[ $s1 == "open 0 "* && $s2 == "open 0 "* && $s3 == "listen 0" && -z ${early:-} &&
    $an == "announce-same 0" && $a8 == "accept-shm 0 "*"conn 95" && $e8 == "outcome 95 0 "* ]]
check "preload: on one node, a claim before the request waits for it, then both are told" $? \
    "$s1 / $s2 / $s3 / ${early:-} / $an / $a8 / $e8"
say SC "early 127.0.0.1 5010 96 127.0.0.1" >/dev/null
t0=$(now_ms)
a9=$(say SL "accept-shm")
dt=$(($(now_ms) - t0))
an=$(say SC "announce-same 96")
[[ $a9 == "accept-shm 2 no such connection negotiated" && $dt -ge 150 &&
    $an == "announce-same 2 accepted on TCP before the request came" ]]
check "preload: on one node, a claim whose request never came: TCP after 200 ms, the late request refused" \
    $? "$a9 after $dt ms / $an"

# declined (the acceptor execs a program with the socket, as inetd): the connector's
# outcome is TCP (ETIMEDOUT) at once, not after the 10 s bound
cd1=$(say C "connect 127.0.0.2 5000 90 127.0.0.1")
d1=$(say L "decline")
t0=$(now_ms)
e1=$(say C "event")
dt=$(($(now_ms) - t0))
[[ $cd1 == "connect 0" && $d1 == "decline 0" && $e1 == "outcome 90 110 "* && $dt -lt 2000 ]]
check "preload: a declined connection: the connector's outcome is TCP at once" $? \
    "$cd1 / $d1 / $e1 / ${dt} ms"

# reasons for TCP
r=$(say C "connect 127.0.0.2 5001 78 127.0.0.1")
[[ $r == "connect 111 listener not registered" ]]
check "preload: no listener registered -> ECONNREFUSED, TCP" $? "$r"
r=$(say C "connect 127.0.0.1 5000 79 127.0.0.1")
[[ $r == "connect 18 same node" ]]
check "preload: the same node -> EXDEV, TCP (until the same-node path)" $? "$r"
r=$(say C "connect 198.51.100.7 5000 80 127.0.0.1")
[[ $r == "connect 113 not a cluster address" ]]
check "preload: an address outside the cluster -> EHOSTUNREACH, TCP (no connect made)" $? "$r"
r=$(say C "connect 127.0.0.2 5000 81 127.0.0.3")
[[ $r == "connect 99 not bound to the node's address" ]]
check "preload: a socket bound to another address -> EADDRNOTAVAIL" $? "$r"
r1=$(say C "nofd connect")
r2=$(say L "nofd accept")
r3=$(say L "nofd listen")
[[ $r1 == "nofd 9 no socket passed with the request" && $r2 == "nofd 9 "* && $r3 == "nofd 9 "* ]]
check "preload: a request that must carry a socket and does not -> EBADF" $? "$r1 / $r2 / $r3"

# an endpoint is a UDP socket the process holds, bound to its node's address: psid reads
# the port from the socket passed, so no process can name another's port as its own
start M 0
r1=$(say M "nofd open")
r2=$(say M "open 40006 127.0.0.3")
r3=$(say M "open 40007 127.0.0.1")
[[ $r1 == "nofd 9 no socket passed with the request" &&
    $r2 == "open 99 not bound to the node's address" && $r3 == "open 0 node 0 ep "* ]]
check "preload: an endpoint must be a UDP socket of the caller's on the node's address" $? \
    "$r1 / $r2 / $r3"

start N 0
r1=$(say N "listen 127.0.0.1 5002")
r2=$(say N "connect 127.0.0.2 5000 82 127.0.0.1")
r3=$(say N "open 40003 127.0.0.1")
r4=$(say N "open 40004 127.0.0.1")
[[ $r1 == "listen 107 no endpoint open" && $r2 == "connect 107 no endpoint open" &&
    $r3 == "open 0 "* && $r4 == "open 114 endpoint already open" ]]
check "preload: without an endpoint ENOTCONN; one endpoint per connection (EALREADY)" $? \
    "$r1 / $r2 / $r3 / $r4"

# another connector: another pair key
c3=$(say N "connect 127.0.0.2 5000 83 127.0.0.1")
a3=$(say L "accept")
[[ $c3 == "connect 0" && $a3 == "accept 0 "* && $(field key "$a3") != "$key" ]]
check "preload: another connector gets another pair key" $? "$c3 / $a3"
e3=$(say N "event")
[[ $e3 == "outcome 83 0 "*"key $(field key "$a3")" ]]
check "preload: ... and the same one as its acceptor" $? "$e3"

# the connector's socket closed before the accept
c4=$(say C "connect 127.0.0.2 5000 84 127.0.0.1")
say C "close 84" >/dev/null
a4=$(say L "accept")
e4=$(say C "event")
[[ $c4 == "connect 0" && $a4 == "accept 2 "* && $e4 == "outcome 84 104 "* ]]
check "preload: a connector's socket gone before the accept: ENOENT, the connector told" $? \
    "$c4 / $a4 / $e4"

# a port two processes of one user listen on (SO_REUSEPORT: the kernel gives each connection
# to one of them, and whichever accepts it claims it): negotiated; nobody takes this one, so
# the connector's outcome is ETIMEDOUT after PSI_PL_ACCEPT_MS (10 s)
start X 1
say X "open 40005 127.0.0.2" >/dev/null
say X "listen 127.0.0.2 5000" >/dev/null
t0=$(now_ms)
c5=$(say C "connect 127.0.0.2 5000 85 127.0.0.1")
[[ $c5 == "connect 0" ]]
check "preload: a listener shared by two processes of one user is negotiated" $? "$c5"
e5=$(say C "event" 14000)
dt=$(($(now_ms) - t0))
[[ $e5 == "outcome 85 110 not accepted in time" && $dt -ge 9000 ]]
check "preload: a connection nobody takes: ETIMEDOUT after 10 s" $? "$c5 / $e5 / ${dt} ms"
[ "$(say X "unlisten 5000")" = "unlisten 0" ]
check "preload: unlisten takes the registration back" $? "$(tail -1 "$CDIR/X.out")"

# too many descriptors: that client is closed, psid is not
f=$(say X "flood")
[[ $f == "flood 104" || $f == "flood 32" ]] && all_up 3000
check "preload: a client passing too many descriptors is closed; psid stays up" $? "$f"

# registrations die with the process
stop L
r=$(say C "connect 127.0.0.2 5000 87 127.0.0.1")
[[ $r == "connect 111 listener not registered" ]]
check "preload: a listener's registration dies with its process" $? "$r"
stop C
stop N
stop X
exit $((FAILS > 0))
