#!/bin/bash
# gang_stream.sh - network preemption (issue 32 point 2): a job whose ranks stream over the
# preload library loses nothing while the gang scheduler freezes and thaws it. A 2-node
# cluster of 2 CPUs per node, gang.quantum_ms 50, mpl 2: job S (psrun --preload, 4 ranks, 2
# per node) moves two streams of test/tools/plstream at once, one between the nodes (rank 0
# to rank 2 at 127.0.0.2: RDP) and one on node 0 (rank 0 to rank 1 at 127.0.0.1: shared
# memory), each paced at 100 MB/s so that it spans many quanta; job B (a CPU-bound rank per CPU) takes the other row, so S is frozen every other
# quantum, both ends at once (and thawed in whatever order the nodes' freezers take):
#  - each stream arrives whole: the same bytes and SHA-256 at both ends, a clean end;
#  - both stayed on the fast path: accelerated (RDP, and shm for the same-node one), no
#    connection left on TCP, none moved back (switched), RDP's retransmissions under 10 % of
#    its messages (no storm at the thaw);
#  - the streams were frozen while under way: their receivers' progress shows at least 3
#    pauses of 40 ms or more.
# GANG_STREAM_BYTES, GANG_STREAM_Q and GANG_STREAM_RATE change the size, the quantum and the
# pace (bench/gang.sh runs 1 GB at 20 ms). Everything started is ended by pid (cluster.sh's
# trap); waits are bounded polls.
# shellcheck source-path=SCRIPTDIR source=lib/cluster.sh
source "$(dirname "$0")/lib/cluster.sh"
# shellcheck source-path=SCRIPTDIR source=lib/gang.sh
source "$(dirname "$0")/lib/gang.sh"
N="gang stream"
LIB=$TOP/build/lib/libpspreload.so
ST=$TOP/build/test/tools/plstream
require_built "$N" "$LIB" "$ST"
BYTES=${GANG_STREAM_BYTES:-300000000}
RATE=${GANG_STREAM_RATE:-100} # MB/s while it runs
gang_cluster "$N" 2 "${GANG_STREAM_Q:-50}"
P1=$(free_port 2)
P2=$((P1 + 1))

# rank 0 sends both streams, ranks 1 and 2 receive them, rank 3 has nothing to do
cat >"$CDIR/stream.sh" <<SCRIPT
#!/bin/sh
# a listener is up once plstream said so: its listen() returned, so psid knows it too (the
# kernel's listening socket, which ss shows, comes a moment earlier: a connect then, under
# PSP_SYNC, found no listener registered and stayed on TCP)
up() { grep -qs '^listening' "$CDIR/\$1.out"; }
echo "rank \$PSI_RANK node \$PSI_NODE" >$CDIR/where.\$PSI_RANK
case \$PSI_RANK in
0)
    n=0
    until up r.s && up s.s; do
        n=\$((n + 1)); [ \$n -gt 400 ] && exit 3; sleep 0.05
    done
    PSP_STATS=$CDIR/r.c.stats $ST connect 127.0.0.2 $P1 send $BYTES --rate $RATE --progress $CDIR/r.c.prog >$CDIR/r.c.out 2>&1 &
    PSP_STATS=$CDIR/s.c.stats $ST connect 127.0.0.1 $P2 send $BYTES --rate $RATE --progress $CDIR/s.c.prog >$CDIR/s.c.out 2>&1
    wait ;;
1) exec env PSP_STATS=$CDIR/s.s.stats $ST listen 127.0.0.1 $P2 recv 0 --progress $CDIR/s.s.prog >$CDIR/s.s.out 2>&1 ;;
2) exec env PSP_STATS=$CDIR/r.s.stats $ST listen 127.0.0.2 $P1 recv 0 --progress $CDIR/r.s.prog >$CDIR/r.s.out 2>&1 ;;
esac
SCRIPT
chmod +x "$CDIR/stream.sh"

gang_start "$N" B 60 "0 1" -n 4 -N 2 --ppn 2
B=$GJOB
"$BIN/psrun" -n 4 -N 2 --ppn 2 --preload -x PSP_SYNC=1 -- "$CDIR/stream.sh" >"$CDIR/S.out" 2>&1 &
S=$!
STRAY+=("$S")
wait_until $((120000 + 3 * BYTES / RATE / 1000)) eval '! kill -0 "$S" 2>/dev/null'
check "$N: the streaming job ends" $? "$(cat "$CDIR/S.out")"
wait "$S"
rc=$?
# whole TAG KEY: both ends moved BYTES, the same SHA-256, a clean end, KEY in both stats,
# nothing on TCP, nothing moved back
whole() {
    local s c
    s=$(tail -1 "$CDIR/$1.s.out" 2>/dev/null)
    c=$(tail -1 "$CDIR/$1.c.out" 2>/dev/null)
    [[ $c == "sent $BYTES "*" end ok" && $s == "received $BYTES "*" end eof" ]] &&
        [[ $(cut -d' ' -f3 <<<"$c") == "$(cut -d' ' -f3 <<<"$s")" ]] &&
        grep -q " $2 " "$CDIR/$1.s.stats" && grep -q " $2 " "$CDIR/$1.c.stats" &&
        grep -q " tcp=0 " "$CDIR/$1.s.stats" && grep -q " tcp=0 " "$CDIR/$1.c.stats" &&
        grep -q " switched=0 " "$CDIR/$1.s.stats" && grep -q " switched=0 " "$CDIR/$1.c.stats"
}
why() { cat "$CDIR"/where.* "$CDIR/$1".*.out "$CDIR/$1".*.stats 2>/dev/null | tr '\n' ' '; }
stat_of() { tr ' ' '\n' <"$1" | sed -n "s/^$2=//p" | tail -1; }
whole r accelerated=1
check "$N: the stream between the nodes arrives whole, on RDP throughout (rc $rc)" $? "$(why r)"
whole s shm=1
check "$N: the stream on one node arrives whole, on shared memory throughout" $? "$(why s)"
tx=$(stat_of "$CDIR/r.c.stats" rdp_tx_msgs)
re=$(stat_of "$CDIR/r.c.stats" rdp_retransmits)
[ -n "$tx" ] && [ -n "$re" ] && [ $((re * 10)) -lt "$tx" ]
check "$N: no retransmission storm at the thaws ($re retransmissions of $tx messages)" $? "$(why r)"
# pauses of a receiver's progress (40 ms or more between lines while bytes were to come)
pauses() { awk -v b="$BYTES" 'NR > 1 && p < b && $1 - t >= 40 { n++ } { t = $1; p = $2 } END { print n + 0 }' "$1"; }
pr=$(pauses "$CDIR/r.s.prog")
ps=$(pauses "$CDIR/s.s.prog")
[ "$pr" -ge 3 ] && [ "$ps" -ge 3 ]
check "$N: both streams were frozen while under way ($pr and $ps pauses of 40 ms or more)" $? \
    "$(head -3 "$CDIR/r.s.prog" 2>/dev/null)"
[ -n "${GANG_STREAM_KEEP:-}" ] && cp -r "$CDIR" "$GANG_STREAM_KEEP"
kill -TERM "$B" 2>/dev/null
wait "$B" 2>/dev/null
exit 0
