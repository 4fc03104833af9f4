#!/bin/bash
# preload_forge.sh - a process of one uid can neither read from nor inject into another
# uid's accelerated connection, not even on the same node (root only; skipped otherwise).
# On a 2-node loopback cluster, root's socat on node 0 sends a file slowly to root's socat
# on node 1, both under libpspreload. While it runs:
#  - test/tools/plforge as nobody opens two endpoints of its own through the psids and
#    negotiates a connection between them, so that it holds a legitimate pair key; asks the
#    psids for the victims' key (PSM_PL_ACCEPT naming every endpoint id 1..16, without a
#    socket and with a plain TCP socket to the victims' listener), and claims a second
#    connection of root's that waits to be accepted, with a socket of the same connector
#    address and ports from another local address (PSM_PL_ACCEPT): every request refused,
#    the claim as "no such connection negotiated", no reply with a key; then sends from its own UDP socket to both victims' RDP ports
#    SYN, DATA and ACK with the victims' node ids, every endpoint id 1..16, its own key,
#    and garbage;
#  - plforge as root sends the same packets with the victim peer's source address and port
#    (a raw socket: they pass RDP's address check and meet the MAC), then captures 64 of
#    the victims' own packets on lo and replays each twice.
# The transfer must complete byte-exact (sha256), accelerated on both sides, both
# processes exiting 0, and the victims' PSP_STATS counting the forged datagrams as dropped
# (rdp_dropped; rdp_bad_mac for those sent from the peer's own address).
# Every process started is recorded in PIDS and killed by pid on exit; every wait bounded.
# shellcheck source-path=SCRIPTDIR source=lib/cluster.sh
source "$(dirname "$0")/lib/cluster.sh"
if [ "$(id -u)" != 0 ] || ! command -v setpriv >/dev/null || ! command -v socat >/dev/null; then
    echo "SKIP: preload forge: needs root (another uid, raw sockets), setpriv and socat"
    exit 0
fi
LIB=$TOP/build/lib/libpspreload.so
PLFORGE=$TOP/build/test/tools/plforge
for f in "$LIB" "$PLFORGE"; do
    [ -x "$f" ] || [ -f "$f" ] || {
        fail "preload forge: build" "$f not built (make build-tests)"
        exit 1
    }
done
cluster_up 2
all_up 5000 || {
    fail "preload forge: cluster up" "not all up"
    exit 1
}
PORT=$(free_port 2)
listening() { ss -Hltn "sport = :$1" | grep -q .; } # listening PORT
stat() { tail -1 "$1" 2>/dev/null | tr ' ' '\n' | sed -n "s/^$2=//p"; } # stat FILE KEY
# udp_of PID: the local ADDR:PORT of PID's UDP socket (the library's RDP endpoint)
udp_of() { ss -Huanp 2>/dev/null | grep "pid=$1," | awk '{ print $4 }' | head -1; }
has_udp() { [ -n "$(udp_of "$1")" ]; }
gone() { ! kill -0 "$1" 2>/dev/null; } # gone PID: it ended (and was reaped)
node0() { PSID_SOCKET=$CDIR/psid-0.sock LD_PRELOAD=$LIB PSP_STATS=$CDIR/stats.$TAG "$@"; }
node1() { PSID_SOCKET=$CDIR/psid-1.sock LD_PRELOAD=$LIB PSP_STATS=$CDIR/stats.$TAG "$@"; }

# 6 MB in 60 pieces, 0.25 s apart: a transfer of about 15 s that the attacks overlap (with
# room for a loaded machine)
CHUNK=100000 NCHUNK=60
head -c $((CHUNK * NCHUNK)) /dev/urandom >"$CDIR/data"
TAG=vs node1 exec socat -u TCP-LISTEN:"$PORT",bind=127.0.0.2,reuseaddr \
    CREATE:"$CDIR/got" 2>"$CDIR/vs.err" &
VS=$!
PIDS+=("$VS")
wait_until 10000 listening "$PORT" || fail "preload forge: victim server listens" "port $PORT"
mkfifo "$CDIR/feed"
TAG=vc node0 exec socat -u OPEN:"$CDIR/feed" TCP:127.0.0.2:"$PORT" \
    2>"$CDIR/vc.err" &
VC=$!
PIDS+=("$VC")
(
    for i in $(seq 0 $((NCHUNK - 1))); do
        dd if="$CDIR/data" bs=$CHUNK skip="$i" count=1 status=none
        sleep 0.25 # the pace of the transfer, not a wait for anything
    done
) >"$CDIR/feed" &
PIDS+=($!)
# The victims' endpoints: their UDP sockets, open once the connection was negotiated, and
# bytes arriving.
wait_until 10000 has_udp "$VC" && wait_until 10000 has_udp "$VS" &&
    wait_until 10000 test -s "$CDIR/got"
check "preload forge: the victims' connection runs, each with an RDP endpoint" $? \
    "client udp '$(udp_of "$VC")', server udp '$(udp_of "$VS")', got $(wc -c <"$CDIR/got" 2>/dev/null)"
V0=$(udp_of "$VC")
V1=$(udp_of "$VS")
[ -n "$V0" ] && [ -n "$V1" ] || exit 1

# A second connection of root's, negotiated but not yet accepted (its listener never
# accepts; psid keeps it PSI_PL_ACCEPT_MS, 10 s): the one a claim could steal. Its client
# set SO_REUSEADDR, as many do, so that another uid can bind the same address and port.
Q=$((PORT + 1))
# shellcheck disable=SC2016 # python, not shell
TAG=pends node1 exec python3 -c 'import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.2", int(sys.argv[1]))); s.listen(4); time.sleep(60)' "$Q" &
PIDS+=($!)
wait_until 10000 listening "$Q"
TAG=pendc node0 exec python3 -c 'import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.connect(("127.0.0.2", int(sys.argv[1])))
print(s.getsockname()[1], flush=True); time.sleep(60)' "$Q" >"$CDIR/pc.out" &
PIDS+=($!)
wait_until 10000 test -s "$CDIR/pc.out"
CPORT=$(head -1 "$CDIR/pc.out")

# nobody: its own key, the victims' key asked for, forged packets from its own socket
setpriv --reuid=65534 --regid=65534 --clear-groups timeout 30 "$PLFORGE" own \
    -0 "$CDIR/psid-0.sock" -1 "$CDIR/psid-1.sock" -l "127.0.0.2:$PORT" \
    -p "127.0.0.1:$CPORT/$Q" -t 2 "$V0" "$V1" >"$CDIR/forge.out" 2>&1
rc=$?
KEY=$(sed -n 's/^own-key ok .* key \([0-9a-f]*\)$/\1/p' "$CDIR/forge.out")
[ -n "$KEY" ]
check "preload forge: another uid holds a legitimate pair key of its own" $? \
    "rc $rc: $(grep -m1 own-key "$CDIR/forge.out")"
nsteal=$(grep -c '^steal accept' "$CDIR/forge.out")
nzero=$(grep -c '^steal accept[^ ]* 0 ' "$CDIR/forge.out")
! grep -q '^steal-key' "$CDIR/forge.out" && [ "$nsteal" -ge 32 ] && [ "$nzero" = 0 ] &&
    [ $rc -ne 3 ]
check "preload forge: psid refuses the victims' pair key to another uid ($nsteal requests)" $? \
    "$(grep -E '^steal-key|^steal accept[^ ]* 0 ' "$CDIR/forge.out" | head -3 | tr '\n' ' ')"
# ENOENT: a socket of another local address names no waiting connection, and no listener
# of the claimant's takes it (the listener's uid is checked after that)
# (the look-alike binds root's connector's local port: when another process of a test run
# in parallel holds that port for a connection of its own without SO_REUSEADDR, which the
# kernel allows for ephemeral ports to other destinations, the bind fails and nothing was
# tried; preload_claim.sh's plsteal attacks the same rule)
if grep -q "^steal claim-pending none Address already in use" "$CDIR/forge.out"; then
    echo "SKIP: preload forge: the claim of root's pending connection: its local port is held by another process (EADDRINUSE)"
else
    grep -Eq "^steal claim-pending 2 (no such connection negotiated|no listener of this user takes the socket)" \
        "$CDIR/forge.out"
    check "preload forge: psid refuses root's pending connection to another uid's claim" $? \
        "$(grep -m1 '^steal claim-pending' "$CDIR/forge.out")"
fi
sent=$(sed -n 's/^sent forged \([0-9]*\) garbage \([0-9]*\)$/\1 \2/p' "$CDIR/forge.out")
[ $rc -eq 0 ] && [ "${sent%% *}" -gt 0 ] 2>/dev/null && [ "${sent##* }" -gt 0 ]
check "preload forge: another uid sent forged and garbage RDP packets to both victims" $? \
    "rc $rc: $(tail -2 "$CDIR/forge.out" | tr '\n' ' ')"

# root: the same packets from the victim peer's address and port, then replays
if [ -n "$KEY" ]; then
    timeout 30 "$PLFORGE" spoof -k "$KEY" -t 1 -r 64 "$V0" "$V1" >"$CDIR/spoof.out" 2>&1
    rc=$?
    read -r _ nspoof _ ncap _ nrep < <(grep '^spoofed' "$CDIR/spoof.out")
    [ $rc -eq 0 ] && [ "${nspoof:-0}" -gt 0 ] && [ "${ncap:-0}" -gt 0 ] &&
        [ "${nrep:-0}" -gt 0 ]
    check "preload forge: forged packets from the victim peer's address, and replays, sent" $? \
        "rc $rc: $(cat "$CDIR/spoof.out")"
fi
kill -0 "$VC" 2>/dev/null
check "preload forge: the attacks overlapped the transfer (its client still running)" $? \
    "the victims' transfer ended before the attacks did"

wait_until 30000 gone "$VC" && wait_until 10000 gone "$VS"
wait "$VC"
rcc=$?
wait "$VS"
rcs=$?
[ $rcc -eq 0 ] && [ $rcs -eq 0 ]
check "preload forge: both victim processes exit 0 (no crash)" $? \
    "client rc $rcc, server rc $rcs: $(cat "$CDIR/vc.err" "$CDIR/vs.err" 2>/dev/null | head -3)"
[ "$(sha256sum <"$CDIR/got")" = "$(sha256sum <"$CDIR/data")" ]
check "preload forge: the victims' transfer is byte-exact (sha256)" $? \
    "got $(wc -c <"$CDIR/got" 2>/dev/null) of $((CHUNK * NCHUNK)) bytes"
[ "$(stat "$CDIR/stats.vc" accelerated)" = 1 ] && [ "$(stat "$CDIR/stats.vc" tcp)" = 0 ] &&
    [ "$(stat "$CDIR/stats.vs" accelerated)" = 1 ] && [ "$(stat "$CDIR/stats.vs" tcp)" = 0 ]
check "preload forge: the victims' connection stayed accelerated on both sides" $? \
    "$(cat "$CDIR/stats.vc" "$CDIR/stats.vs" 2>/dev/null)"
# the forged packets were seen and dropped, and counted (PSP_STATS of the victims)
d0=$(stat "$CDIR/stats.vc" rdp_dropped) d1=$(stat "$CDIR/stats.vs" rdp_dropped)
m0=$(stat "$CDIR/stats.vc" rdp_bad_mac) m1=$(stat "$CDIR/stats.vs" rdp_bad_mac)
drops=$((${d0:-0} + ${d1:-0})) macs=$((${m0:-0} + ${m1:-0}))
echo "# preload forge: rdp_dropped $drops, rdp_bad_mac $macs"
if [ -n "$KEY" ]; then # the spoofed ones came from the peer's address: they reach the MAC
    [ "$drops" -gt 0 ] && [ "$macs" -gt 0 ]
else
    [ "$drops" -gt 0 ]
fi
check "preload forge: the forged packets were dropped and counted (PSP_STATS rdp_dropped)" $? \
    "rdp_dropped $drops, rdp_bad_mac $macs: $(cat "$CDIR/stats.vc" "$CDIR/stats.vs" 2>/dev/null)"
exit $((FAILS > 0))
