#!/bin/bash
# preload_restart.sh - psid can restart under live connections (issue 28, point 3;
# docs/preload-design.md, "psid restarts"). On a 2-node loopback cluster, two streams of
# test/tools/plstream under the library run through the restarts: one between nodes (server
# on node 1, client on node 0: RDP) and one on node 1 (shared memory); and two servers
# listen on node 1 from before them. Then node 1's psid is killed with SIGKILL and started
# again, and after it node 0's:
#  - each stream completes byte-exact (the same SHA-256 at both ends, a clean end, on its
#    fast path): an established connection does not need psid, and a psid's crash, its
#    restart and the other node's judgement of it (down, a new incarnation: PSM_PL_NODE_LOST)
#    end nothing;
#  - a new connection to each server started before the restarts, made once the psid
#    answers again, takes the fast path: the library registered its listener again
#    (within a second of psid being back, with backoff while none answered).
# Streams are paced (PRELOAD_RESTART_RATE MB/s, 20 by default: 40 cost 40 % more CPU for the
# same checks) to outlast the restarts.
# shellcheck source-path=SCRIPTDIR source=lib/cluster.sh
source "$(dirname "$0")/lib/cluster.sh"
LIB=$TOP/build/lib/libpspreload.so
ST=$TOP/build/test/tools/plstream
RATE=${PRELOAD_RESTART_RATE:-20}
BYTES=$((RATE * 1000000 * 14)) # 14 s of stream
cluster_up 2
all_up 5000 || {
    fail "preload restart: cluster up" "not all up"
    exit 1
}
PORT=$(free_port 8)

# on NODE TAG ARGS...: plstream under the library as a process of NODE (its psid); each
# connection's first use waits for its negotiation (PSP_SYNC), so that under load it is not
# left on TCP by a late answer, which is not what this tests
on() {
    local node=$1 tag=$2
    shift 2
    env PSID_SOCKET="$CDIR/psid-$node.sock" LD_PRELOAD="$LIB" PSP_STATS="$CDIR/$tag.stats" \
        PSP_SYNC=1 "$ST" "$@" >"$CDIR/$tag.out" 2>&1 &
    PIDS+=("$!")
}
alive() { kill -0 "$1" 2>/dev/null; }
answers() { PSID_SOCKET=$CDIR/psid-$1.sock "$BIN/psstat" nodes >/dev/null 2>&1; }
moved() { [ "$(tail -1 "$1" 2>/dev/null | cut -d' ' -f2)" -ge "$2" ] 2>/dev/null; }

# the two streams, and the two servers that wait for a connection after the restarts
on 1 xs listen 127.0.0.2 $((PORT + 1)) recv 0 --progress "$CDIR/xs.prog"
XS=$!
on 1 ys listen 127.0.0.2 $((PORT + 2)) recv 0
YS=$!
on 1 ls listen 127.0.0.2 $((PORT + 3)) recv 0
on 1 ms listen 127.0.0.2 $((PORT + 4)) recv 0
for t in xs ys ls ms; do
    wait_line "$CDIR/$t.out" listening 10000 || echo "$t: the server did not listen"
done
on 0 xc connect 127.0.0.2 $((PORT + 1)) send "$BYTES" --rate "$RATE"
XC=$!
on 1 yc connect 127.0.0.2 $((PORT + 2)) send "$BYTES" --rate "$RATE"
YC=$!
wait_until 10000 moved "$CDIR/xs.prog" 20000000 || echo "the streams did not get under way"

restart() { # restart NODE: SIGKILL, gone for a while, started again; ms until it answers
    local t0
    kill_node "$1"
    sleep 1.5 # the other node declares it down meanwhile (no grace in this cluster)
    t0=$(now_ms)
    start_node "$1"
    wait_until 10000 answers "$1"
    echo $(($(now_ms) - t0))
}
up1=$(restart 1)
all_up 10000 || echo "node 1 did not come back"
sleep 1 # the library's bound: registered again within a second of psid answering
t0=$(now_ms)
on 0 lc connect 127.0.0.2 $((PORT + 3)) send 1000000
LC=$!
on 1 mc connect 127.0.0.2 $((PORT + 4)) send 1000000
MC=$!
news() { ! alive "$LC" && ! alive "$MC"; }
wait_until 20000 news || echo "the new connections did not end"
up0=$(restart 0)
all_up 10000 || echo "node 0 did not come back"
xflow=0 yflow=0 # each stream still under way after both restarts
alive "$XC" && alive "$XS" && xflow=1
alive "$YC" && alive "$YS" && yflow=1
done_all() { ! alive "$XC" && ! alive "$YC" && ! alive "$XS" && ! alive "$YS" && ! alive "$LC" &&
    ! alive "$MC"; }
wait_until 60000 done_all

# whole C S KEY: the sender wrote everything and closed, the receiver read all of it and a
# clean end, the same SHA-256, both on the fast path (KEY in PSP_STATS)
whole() {
    local c s
    c=$(tail -1 "$CDIR/$1.out")
    s=$(tail -1 "$CDIR/$2.out")
    [[ $c == "sent "*" end ok" && $s == "received "*" end eof" ]] &&
        [[ $(cut -d' ' -f2,3 <<<"$c") == "$(cut -d' ' -f2,3 <<<"$s")" ]] &&
        grep -q " $3 " "$CDIR/$1.stats" && grep -q " $3 " "$CDIR/$2.stats"
}
why() { cat "$CDIR/$1.out" "$CDIR/$2.out" "$CDIR/$1.stats" "$CDIR/$2.stats" 2>/dev/null | tr '\n' ' '; }
whole xc xs accelerated=1 && [ "$xflow" = 1 ] && [[ $(tail -1 "$CDIR/xc.out") == "sent $BYTES "* ]]
check "preload restart: a stream between nodes through both psids' SIGKILL and restart: whole, on RDP" \
    $? "$(why xc xs)"
whole yc ys shm=1 && [ "$yflow" = 1 ] && [[ $(tail -1 "$CDIR/yc.out") == "sent $BYTES "* ]]
check "preload restart: a stream on one node through its psid's SIGKILL and restart: whole, in shared memory" \
    $? "$(why yc ys)"
whole lc ls accelerated=1
check "preload restart: a new connection to a server listening since before the restart (between nodes): accelerated" \
    $? "$(why lc ls)"
whole mc ms shm=1
check "preload restart: a new connection to a server listening since before the restart (one node): shared memory" \
    $? "$(why mc ms)"
echo "psid answered again $up1 ms (node 1) and $up0 ms (node 0) after its start; new connections 1 s later"
exit $((FAILS > 0))
