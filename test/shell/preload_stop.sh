#!/bin/bash
# preload_stop.sh - a stopped process keeps its connections, and a broken stream never looks
# complete (issue 28, point 2; docs/preload-design.md, "Stopped, killed and lost peers").
# Streams of test/tools/plstream under the library, on a 2-node loopback cluster: between
# nodes (server on node 1 at 127.0.0.2, RDP) and on one node (127.0.0.1, shared memory);
# the client sends PRELOAD_STOP_BYTES (100 MB by default), paced at PRELOAD_STOP_RATE MB/s
# (20 by default: 5 s of stream, so that each stop comes in mid-stream on any machine; it
# does not catch up on the time it was stopped; 40 MB/s cost a third more CPU for the same
# checks), the server receives, each prints the SHA-256 of what it moved.
#  - stop: the receiver, and (another pair) the sender, stopped with SIGSTOP for
#    PRELOAD_STOP_S seconds (default 6; make soak runs 60) mid-stream, on both paths at
#    once: nothing ends while they are stopped, the stream resumes when they are continued
#    (the time to the first new bytes at both ends is printed), and completes: the same
#    bytes and SHA-256 at both ends, a clean end, accelerated.
#  - frozen: both processes of a pair stopped for PRELOAD_FREEZE_S seconds (default 12: past
#    RDP's loss bound, the five keepalive probes of a doubt and a closed connection's 10 s
#    wait; make soak runs 60),
#    continued sender first or receiver first (3 s apart, longer than RDP's loss bound, so
#    the first one's connection stalls and its doubt is answered by the stopped peer's
#    kernel), on both paths: each completes byte-exact.
#  - killed: one side stopped, its peer killed with SIGKILL meanwhile; continued, the
#    survivor ends with ECONNRESET (a receiver after the bytes that came; a sender's write),
#    never a clean end of stream, on both paths and both directions.
# PRELOAD_STOP_PARTS picks scenarios (default "stop frozen killed").
# shellcheck source-path=SCRIPTDIR source=lib/cluster.sh
source "$(dirname "$0")/lib/cluster.sh"
LIB=$TOP/build/lib/libpspreload.so
ST=$TOP/build/test/tools/plstream
STOP_S=${PRELOAD_STOP_S:-6}
FREEZE_S=${PRELOAD_FREEZE_S:-12}
PARTS=${PRELOAD_STOP_PARTS:-stop frozen killed}
BYTES=${PRELOAD_STOP_BYTES:-100000000}
RATE=${PRELOAD_STOP_RATE:-20} # MB/s: the stop comes in mid-stream, whatever the machine
cluster_up 2
all_up 5000 || {
    fail "preload stop: cluster up" "not all up"
    exit 1
}
PORT=$(free_port 20)
declare -A SRV CLI CARGS

ms() { date +%s%3N; }

# pairs PATH:TAG...: for each, a server (receiver) and a client (sender) of one stream of
# $BYTES bytes; PATH rdp: the server on node 1, shm: on node 0 (the client's). The servers
# first, then the clients together, so that every stream is under way at once. Each
# connection's first use waits for its negotiation (PSP_SYNC): under load a late answer
# would leave it on TCP, which is not what this tests.
pairs() {
    local p tag node addr
    declare -A port
    for p in "$@"; do
        tag=${p#*:} node=1 addr=127.0.0.2
        [ "${p%%:*}" = shm ] && node=0 addr=127.0.0.1
        PORT=$((PORT + 1))
        port[$tag]=$PORT
        env PSID_SOCKET="$CDIR/psid-$node.sock" LD_PRELOAD="$LIB" PSP_SYNC=1 \
            PSP_STATS="$CDIR/$tag.s.stats" "$ST" listen "$addr" "$PORT" recv 0 \
            --progress "$CDIR/$tag.s.prog" >"$CDIR/$tag.s.out" 2>&1 &
        SRV[$tag]=$!
        PIDS+=("$!")
    done
    for p in "$@"; do
        tag=${p#*:}
        wait_line "$CDIR/$tag.s.out" listening 10000 || echo "$tag: the server did not listen"
    done
    for p in "$@"; do
        tag=${p#*:} addr=127.0.0.2
        [ "${p%%:*}" = shm ] && addr=127.0.0.1
        env PSID_SOCKET="$CDIR/psid-0.sock" LD_PRELOAD="$LIB" PSP_STATS="$CDIR/$tag.c.stats" \
            PSP_SYNC=1 "$ST" connect "$addr" "${port[$tag]}" send "$BYTES" --rate "$RATE" \
            --progress "$CDIR/$tag.c.prog" ${CARGS[$tag]:-} >"$CDIR/$tag.c.out" 2>&1 &
        CLI[$tag]=$!
        PIDS+=("$!")
    done
}

bytes_of() { tail -1 "$1" 2>/dev/null | cut -d' ' -f2; } # the last progress line's count
moved() { [ "$(bytes_of "$1")" -ge "$2" ] 2>/dev/null; }
alive() { kill -0 "$1" 2>/dev/null; }
ended() { ! alive "${SRV[$1]}" && ! alive "${CLI[$1]}"; }
all_ended() {
    local t
    for t in "$@"; do ended "$t" || return 1; done
}
# a pair's streams under way: its receiver got 16 MB
under_way() {
    local t
    for t in "$@"; do moved "$CDIR/$t.s.prog" 16000000 || return 1; done
}

# after MS FILE: ms from MS to the first progress line after it that moved past its count
# at MS (empty if none)
after() {
    awk -v t="$1" '$1 <= t { b = $2 } $1 > t && $2 > b { print $1 - t; exit }' "$2" 2>/dev/null
}
# resume TAG MS: the time to the first new bytes at both ends, the later one
resume() {
    local a b
    a=$(after "$2" "$CDIR/$1.c.prog")
    b=$(after "$2" "$CDIR/$1.s.prog")
    [ -n "$a" ] && [ -n "$b" ] && echo $((a > b ? a : b))
}

# whole TAG PATH: both ends moved the same bytes, the sender closed after all of them, the
# receiver read a clean end, and the connection took its fast path
whole() {
    local s c key=accelerated=1
    [ "$2" = shm ] && key=shm=1
    s=$(tail -1 "$CDIR/$1.s.out")
    c=$(tail -1 "$CDIR/$1.c.out")
    [[ $c == "sent $BYTES "*" end ok" && $s == "received $BYTES "*" end eof" ]] &&
        [[ $(cut -d' ' -f3 <<<"$c") == "$(cut -d' ' -f3 <<<"$s")" ]] &&
        grep -q " $key " "$CDIR/$1.s.stats" && grep -q " $key " "$CDIR/$1.c.stats"
}
why() { cat "$CDIR/$1.c.out" "$CDIR/$1.s.out" "$CDIR/$1".*.stats 2>/dev/null | tr '\n' ' '; }

if [[ " $PARTS " == *" stop "* ]]; then
    T=(rdp-recv rdp-send shm-recv shm-send)
    CARGS[rdp-recv]="--keepalive 77" # its doubt's probes are the library's, not the program's
    pairs rdp:rdp-recv rdp:rdp-send shm:shm-recv shm:shm-send
    wait_until 30000 under_way "${T[@]}" || echo "stop: the streams did not get under way"
    VICT=("${SRV[rdp-recv]}" "${CLI[rdp-send]}" "${SRV[shm-recv]}" "${CLI[shm-send]}")
    kill -STOP "${VICT[@]}"
    sleep "$STOP_S" # the stop is the point: nothing may end meanwhile
    up=0
    for t in "${T[@]}"; do alive "${SRV[$t]}" && alive "${CLI[$t]}" && up=$((up + 1)); done
    cont=$(ms)
    kill -CONT "${VICT[@]}"
    wait_until 120000 all_ended "${T[@]}"
    for t in "${T[@]}"; do
        role=sender
        [ "${t#*-}" = recv ] && role=receiver
        whole "$t" "${t%%-*}" && [ "$up" = 4 ]
        check "preload stop: the $role stopped ${STOP_S} s (${t%%-*}): whole, first new bytes $(resume "$t" "$cont") ms after SIGCONT" \
            $? "alive through the stop: $up of 4; $(why "$t")"
    done
    grep -qx "keepalive kept" "$CDIR/rdp-recv.c.out"
    check "preload stop: the program's keepalive settings, set and read while the library probes the stopped peer" \
        $? "$(tr '\n' ' ' <"$CDIR/rdp-recv.c.out")"
fi

if [[ " $PARTS " == *" frozen "* ]]; then
    T=(rdp-sf rdp-rf shm-sf shm-rf)
    pairs rdp:rdp-sf rdp:rdp-rf shm:shm-sf shm:shm-rf
    wait_until 30000 under_way "${T[@]}" || echo "frozen: the streams did not get under way"
    ALL=()
    for t in "${T[@]}"; do ALL+=("${SRV[$t]}" "${CLI[$t]}"); done
    kill -STOP "${ALL[@]}"
    up=0
    for t in "${T[@]}"; do alive "${SRV[$t]}" && alive "${CLI[$t]}" && up=$((up + 1)); done
    sleep "$FREEZE_S"
    kill -CONT "${CLI[rdp-sf]}" "${CLI[shm-sf]}" "${SRV[rdp-rf]}" "${SRV[shm-rf]}"
    sleep 3 # the first one alone for longer than RDP's loss bound
    kill -CONT "${SRV[rdp-sf]}" "${SRV[shm-sf]}" "${CLI[rdp-rf]}" "${CLI[shm-rf]}"
    wait_until 120000 all_ended "${T[@]}"
    for t in "${T[@]}"; do
        first=sender
        [ "${t#*-}" = rf ] && first=receiver
        whole "$t" "${t%%-*}" && [ "$up" = 4 ]
        check "preload stop: both frozen ${FREEZE_S} s, the $first continued 3 s first (${t%%-*}): whole" \
            $? "under way at the freeze: $up of 4; $(why "$t")"
    done
fi

if [[ " $PARTS " == *" killed "* ]]; then
    T=(rdp-recv rdp-send shm-recv shm-send) # the survivor's role
    pairs rdp:krdp-recv rdp:krdp-send shm:kshm-recv shm:kshm-send
    K=()
    for t in "${T[@]}"; do K+=("k$t"); done
    wait_until 30000 under_way "${K[@]}" || echo "killed: the streams did not get under way"
    kill -STOP "${SRV[krdp-recv]}" "${CLI[krdp-send]}" "${SRV[kshm-recv]}" "${CLI[kshm-send]}"
    kill -KILL "${CLI[krdp-recv]}" "${SRV[krdp-send]}" "${CLI[kshm-recv]}" "${SRV[kshm-send]}"
    dead() { ! alive "${CLI[krdp-recv]}" && ! alive "${SRV[krdp-send]}" &&
        ! alive "${CLI[kshm-recv]}" && ! alive "${SRV[kshm-send]}"; }
    wait_until 5000 dead
    sleep 1 # the survivors stopped a while after the death
    kill -CONT "${SRV[krdp-recv]}" "${CLI[krdp-send]}" "${SRV[kshm-recv]}" "${CLI[kshm-send]}"
    wait_until 30000 all_ended "${K[@]}"
    for t in "${T[@]}"; do
        if [ "${t#*-}" = recv ]; then
            out=$(tail -1 "$CDIR/k$t.s.out")
            [[ $out == "received "*" end ECONNRESET" ]]
            check "preload stop: the receiver stopped, its sender killed (${t%%-*}): ECONNRESET after the bytes that came, not EOF" \
                $? "$out; $(why "k$t")"
        else
            out=$(tail -1 "$CDIR/k$t.c.out")
            [[ $out == "sent "*" end ECONNRESET" || $out == "sent "*" end EPIPE" ]]
            check "preload stop: the sender stopped, its receiver killed (${t%%-*}): its write fails (ECONNRESET)" \
                $? "$out; $(why "k$t")"
        fi
    done
fi
exit $((FAILS > 0))
