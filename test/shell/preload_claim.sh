#!/bin/bash
# preload_claim.sh - a connection under libpspreload is claimed only by its own endpoint
# (the preload trust issue, point 1). nobody, a hostile local user, tries three ways on a
# 2-node loopback cluster (test/tools/plsteal):
#  - same node: root's plain TCP server (no library) on 127.0.0.1:P; nobody makes a private
#    user and network namespace, listens on 127.0.0.1:P there and registers it with psid,
#    then makes a look-alike socket of root's connection (its 4-tuple) in that namespace
#    and claims it. Root's client under the library sends six secret lines.
#  - across nodes: the same with root's server on node 1's address (127.0.0.2), nobody's
#    claim on node 1's psid (which would hand out the pair key).
#  - the squat: nobody opens a same-node-only endpoint in psid's namespace on an unused
#    address (127.0.0.9) and registers port P there; root's server under the library listens
#    on 127.0.0.1:P and root's client connects.
# The two namespace attacks run twice: with the endpoint opened in the private namespace
# (psid refuses it), and opened in psid's namespace first (-e: psid must refuse each later
# socket, the listener and the look-alike, as not in the endpoint's namespace).
# Required: nobody is given nothing (no channel, no key: plsteal exits 0 and prints
# "stolen-total 0"), root's client reads its own server's replies, byte for byte; in the
# squat, root's connection is accelerated (shared memory).
# Root only (a second uid). Every process is ended by pid (cluster.sh's trap).
# shellcheck source-path=SCRIPTDIR source=lib/cluster.sh
source "$(dirname "$0")/lib/cluster.sh"
if [ "$(id -u)" != 0 ] || ! command -v setpriv >/dev/null || ! command -v python3 >/dev/null; then
    echo "SKIP: preload claim: needs root (a second uid), setpriv and python3"
    exit 0
fi
LIB=$TOP/build/lib/libpspreload.so
STEAL=$TOP/build/test/tools/plsteal
N="preload claim"
require_built "$N" "$LIB" "$STEAL"
cluster_ready 2 "$N"
PORT=$(free_port 8)
AS_NOBODY=(setpriv --reuid=nobody --regid="$(id -g nobody)" --clear-groups)
stat() { tail -1 "$1" 2>/dev/null | tr ' ' '\n' | sed -n "s/^$2=//p"; }
listening() { ss -Hltn "sport = :$1" | grep -q .; }
gone() { ! kill -0 "$1" 2>/dev/null; }

# root's line server, not under the library: "ok LINE" for each line
cat >"$CDIR/server.py" <<'EOF'
import socket, sys
l = socket.socket()
l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
l.bind((sys.argv[1], int(sys.argv[2])))
l.listen(8)
while True:
    c, _ = l.accept()
    f = c.makefile("rwb", buffering=0)
    for line in f:
        f.write(b"ok " + line)
    c.close()
EOF
# root's client: connects, writes its port to PORTFILE, waits WAIT s (the attacker's
# window), then sends six secret lines and prints each reply
cat >"$CDIR/client.py" <<'EOF'
import socket, sys, time
s = socket.create_connection((sys.argv[1], int(sys.argv[2])))
with open(sys.argv[3] + ".tmp", "w") as f:
    f.write("%d\n" % s.getsockname()[1])
import os
os.rename(sys.argv[3] + ".tmp", sys.argv[3])
time.sleep(float(sys.argv[4]))
f = s.makefile("rwb", buffering=0)
for i in range(6):
    f.write(b"secret %d of root\n" % i)
    print(f.readline().decode().rstrip("\n"), flush=True)
EOF
errno() { python3 -c "import errno; print(errno.$1)"; }
expected() { for i in 0 1 2 3 4 5; do echo "ok secret $i of root"; done; }

# attack NAME SERVER_ADDR SERVER_NODE PORT MODE...: root's server (plain), root's client under
# the library on node 0, plsteal as nobody with MODE's arguments
attack() {
    local name=$1 saddr=$2 snode=$3 port=$4 srv cl st
    shift 4
    rm -f "$CDIR/cport.$port"
    python3 "$CDIR/server.py" "$saddr" "$port" 2>"$CDIR/srv.$port.err" &
    srv=$!
    PIDS+=("$srv")
    wait_until 20000 listening "$port" || fail "$N: $name: server listens" "port $port"
    "${AS_NOBODY[@]}" "$STEAL" look -s "$CDIR/psid-$snode.sock" -a "$saddr" -p "$port" \
        -c 127.0.0.1 -f "$CDIR/cport.$port" -t 4 "$@" >"$CDIR/steal.$port" 2>&1 &
    st=$!
    PIDS+=("$st")
    wait_line "$CDIR/steal.$port" '^listen ' 5000
    PSID_SOCKET=$CDIR/psid-0.sock LD_PRELOAD=$LIB PSP_STATS=$CDIR/stats.$port \
        timeout 30 python3 "$CDIR/client.py" "$saddr" "$port" "$CDIR/cport.$port" 2 \
        >"$CDIR/client.$port" 2>"$CDIR/client.$port.err" &
    cl=$!
    PIDS+=("$cl")
    wait_until 30000 gone "$cl"
    wait "$cl"
    local crc=$?
    wait_until 10000 gone "$st"
    wait "$st"
    local src=$?
    kill "$srv" 2>/dev/null
    if [ "$src" = 4 ]; then
        echo "SKIP: $N: $name: no private user namespace here ($(head -1 "$CDIR/steal.$port"))"
        return
    fi
    cat "$CDIR/steal.$port" >>"$CDIR/steal.all"
    [ "$src" = 0 ] && ! grep -q '^claim-got\|^stolen [1-9]\|^injected' "$CDIR/steal.$port"
    check "$N: $name: another user's look-alike socket is given nothing" $? \
        "plsteal exit $src: $(grep -m3 '^claim\|^stolen\|^open\|^listen' "$CDIR/steal.$port" | tr '\n' ' ')"
    # refused for the reason that holds: its namespace is not served, or (endpoint in
    # psid's) its listener and its look-alike are not in the endpoint's namespace
    if [ "$*" = -e ]; then
        grep -q "^listen $(errno EXDEV) the socket is not in the endpoint's network namespace" \
            "$CDIR/steal.$port" &&
            grep -q "^claim $(errno EXDEV) the socket is not in the endpoint's network namespace" \
                "$CDIR/steal.$port"
    else
        grep -q "^open $(errno EPERM) a network namespace psid does not serve" "$CDIR/steal.$port"
    fi
    check "$N: $name: psid refuses it for the right reason" $? "$(head -c 400 "$CDIR/steal.$port")"
    [ "$crc" = 0 ] && [ "$(cat "$CDIR/client.$port")" = "$(expected)" ]
    check "$N: $name: root's client reads its own server's six replies, byte for byte" $? \
        "exit $crc: $(head -c 300 "$CDIR/client.$port" "$CDIR/client.$port.err" | tr '\n' ' ')"
}

attack "same node, private namespace" 127.0.0.1 0 "$PORT"
attack "across nodes, private namespace" 127.0.0.2 1 $((PORT + 1))
attack "same node, endpoint in psid's namespace" 127.0.0.1 0 $((PORT + 3)) -e
attack "across nodes, endpoint in psid's namespace" 127.0.0.2 1 $((PORT + 4)) -e

# the squat: nobody's same-node-only endpoint on 127.0.0.9 registers port P; root's server
# under the library on 127.0.0.1:P; root's connection must still be accelerated
Q=$((PORT + 2))
"${AS_NOBODY[@]}" "$STEAL" squat -s "$CDIR/psid-0.sock" -a 127.0.0.9 -p "$Q" -t 20 \
    >"$CDIR/squat" 2>&1 &
SQ=$!
PIDS+=("$SQ")
wait_line "$CDIR/squat" '^listen ' 5000
PSID_SOCKET=$CDIR/psid-0.sock LD_PRELOAD=$LIB PSP_STATS=$CDIR/stats.sqs \
    python3 "$CDIR/server.py" 127.0.0.1 "$Q" 2>"$CDIR/sqs.err" &
SRV=$!
PIDS+=("$SRV")
listening_at() { ss -Hltn "src $1" | grep -q .; }
wait_until 20000 listening_at "127.0.0.1:$Q" || fail "$N: squat: root's server listens" "port $Q"
PSID_SOCKET=$CDIR/psid-0.sock LD_PRELOAD=$LIB PSP_STATS=$CDIR/stats.sqc \
    timeout 30 python3 "$CDIR/client.py" 127.0.0.1 "$Q" "$CDIR/cport.$Q" 0.5 \
    >"$CDIR/client.sq" 2>"$CDIR/client.sq.err"
rc=$?
[ "$rc" = 0 ] && [ "$(cat "$CDIR/client.sq")" = "$(expected)" ] &&
    [ "$(stat "$CDIR/stats.sqc" shm)" = 1 ]
check "$N: a same-node-only endpoint on another address does not take a port from root's listener: shared memory" $? \
    "exit $rc, squat: $(tr '\n' ' ' <"$CDIR/squat"), client stats: $(tail -1 "$CDIR/stats.sqc" 2>/dev/null)"
kill "$SQ" "$SRV" 2>/dev/null
exit 0
