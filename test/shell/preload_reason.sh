#!/bin/bash
# preload_reason.sh - the reason PSP_STATS gives an accepted connection whose claim found
# no request (psid's ENOENT), on a 2-node loopback cluster, the acceptor under the library
# on node 1 (python3):
#  - the connector under the library on node 0 writes a byte and closes at once (it never
#    asks: a connection negotiates once it lived 1 ms); the acceptor reads it 20 ms later
#    and keeps its socket 2 s. That is UCX's tcp transport closing the duplicate of two
#    connections made both ways at once: it was counted "no_library" on the acceptor,
#    although both ends run under the library; it ended before its negotiation: "short".
#  - the connector without the library keeps its connection open: "no_library", as before.
# Every process is ended by pid (cluster.sh's trap).
# shellcheck source-path=SCRIPTDIR source=lib/cluster.sh
source "$(dirname "$0")/lib/cluster.sh"
if ! command -v python3 >/dev/null; then
    echo "SKIP: preload reason: needs python3"
    exit 0
fi
LIB=$TOP/build/lib/libpspreload.so
N="preload reason"
require_built "$N" "$LIB"
cluster_ready 2 "$N"
PORT=$(free_port 2)
stat() { tr ' ' '\n' <"$1" 2>/dev/null | sed -n "s/^$2=//p"; }

# the acceptor: one connection, read 20 ms after its accept, kept HOLD s after the
# peer's end
cat >"$CDIR/acc.py" <<'EOF'
import socket, sys, time
l = socket.socket()
l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
l.bind((sys.argv[1], int(sys.argv[2])))
l.listen(8)
print("ready", flush=True)
c, _ = l.accept()
time.sleep(0.02)
got = c.recv(10)
print("got", got.decode(), flush=True)
time.sleep(float(sys.argv[3]))
c.close()
EOF
# the connector: a byte, then its close (at once, or after HOLD s)
cat >"$CDIR/con.py" <<'EOF'
import socket, sys, time
s = socket.create_connection((sys.argv[1], int(sys.argv[2])))
s.send(b"x")
time.sleep(float(sys.argv[3]))
s.close()
EOF

# run TAG PORT CONNECTOR_HOLD CONNECTOR_LIB(yes/no): the acceptor's stats in TAG.acc
run() {
    local tag=$1 port=$2 hold=$3 env=() a
    [ "$4" = yes ] && env=(LD_PRELOAD="$LIB" PSP_STATS="$CDIR/$tag.con")
    PSID_SOCKET="$CDIR/psid-1.sock" LD_PRELOAD="$LIB" PSP_STATS="$CDIR/$tag.acc" \
        timeout 20 python3 "$CDIR/acc.py" 127.0.0.2 "$port" 2 >"$CDIR/$tag.out" 2>&1 &
    a=$!
    PIDS+=("$a")
    wait_line "$CDIR/$tag.out" '^ready' 5000
    env PSID_SOCKET="$CDIR/psid-0.sock" "${env[@]}" timeout 20 python3 "$CDIR/con.py" \
        127.0.0.2 "$port" "$hold" >"$CDIR/$tag.cout" 2>&1
    wait "$a"
}

run short "$PORT" 0 yes
[ "$(stat "$CDIR/short.acc" short)" = 1 ] && [ "$(stat "$CDIR/short.acc" no_library)" = 0 ] &&
    grep -qx 'got x' "$CDIR/short.out"
check "$N: a connection its connector (under the library) closed at once is short, not no_library" \
    $? "acceptor: $(cat "$CDIR/short.acc" 2>/dev/null) / $(cat "$CDIR/short.out")"

run plain $((PORT + 1)) 3 no
[ "$(stat "$CDIR/plain.acc" no_library)" = 1 ] && grep -qx 'got x' "$CDIR/plain.out"
check "$N: a connector without the library is still no_library" \
    $? "acceptor: $(cat "$CDIR/plain.acc" 2>/dev/null) / $(cat "$CDIR/plain.out")"

exit $((FAILS > 0))
