#!/bin/bash
# psid_bcast.sh - file broadcast (psid/bcast.c, psbcast, psrun --bcast) on a 5-node loopback
# cluster with a broadcast tree of width 2: node 0 (the home) has children 1 and 2, node 1
# has 3 and 4 (depth 2). All nodes share this machine's file system, so every
# destination names the node (%N), as a node-local path would not need to.
#  - psbcast of a 3 MiB file (12 chunks: more than the window of 4) to every node: each copy
#    byte-exact, with the source's mode; the home opened 2 subtrees only;
#  - psrun --bcast: each rank runs its node's copy ($0 says so), removed after the job;
#    --bcast-keep (and the default destination /tmp/psbcast.JOB.NODE.NAME) leaves them;
#  - a node whose copy cannot be made (its directory missing) fails the launch, named, with
#    the reason; nothing starts, and the other nodes' copies are removed;
#  - a file already there: every node fails without --force, -f replaces it;
#  - as another user (root only): written as that user, refused where that user may not write;
#  - bad command lines exit 2 with usage;
#  - a node stopped, then killed mid-broadcast: the broadcast ends, within a bound, naming it.
# shellcheck source-path=SCRIPTDIR source=lib/cluster.sh
source "$(dirname "$0")/lib/cluster.sh"
PSBCAST=$BIN/psbcast
PSRUN=$BIN/psrun
require_built bcast "$PSBCAST"
N=5
PSID_CONF_EXTRA="tree_width = 2; bcast_width = 2;" cluster_ready $N bcast
export PSID_SOCKET=$CDIR/psid-0.sock
D=$CDIR/dest
PROG=prog-$$.sh
cleanup_bcast() { rm -f /tmp/psbcast.*."$PROG"; }
trap 'cleanup_bcast; cleanup' EXIT
mkdirs() { for i in $(seq 0 $((N - 1))); do mkdir -p "$D/n$i"; done; }
mkdirs
head -c $((3 << 20)) /dev/urandom >"$CDIR/src"
chmod 750 "$CDIR/src"

# byte-exact on every node, over a tree of depth 2
out=$(timeout 20 "$PSBCAST" -v "$CDIR/src" "$D/%N/copy" 2>&1)
rc=$?
ok=1
for i in $(seq 0 $((N - 1))); do
    cmp -s "$CDIR/src" "$D/n$i/copy" && [ "$(stat -c %a "$D/n$i/copy")" = 750 ] || ok=0
done
[ $rc = 0 ] && [ $ok = 1 ] && echo "$out" | grep -q "to 5 of 5 nodes" &&
    pass "bcast: a 3 MiB file byte-exact on all 5 nodes, mode 750 kept ($(echo "$out" | sed -n 's/.* in \([0-9.]* ms\).*/\1/p'))" ||
    fail "bcast: byte-exact copies" "rc=$rc ok=$ok $out $(ls -l "$D"/*)"
wait_until 3000 grep -q "have the copy" "$CDIR/psid-0.log" || true
grep -q "over a tree of width 2: 2 opens sent" "$CDIR/psid-0.log" &&
    grep -q "12 chunks) to 5 nodes: 5 have the copy, 0 failed" "$CDIR/psid-0.log" &&
    pass "bcast: the home sent 2 opens (width 2, depth 2) and 12 chunks per child" ||
    fail "bcast: the tree at the home" "$(grep broadcast "$CDIR/psid-0.log")"

# an existing file: each node fails without --force; -f replaces it
out=$(timeout 20 "$PSBCAST" "$CDIR/src" "$D/%N/copy" 2>&1)
rc=$?
[ $rc = 1 ] && [ "$(echo "$out" | grep -c "exists already")" = $N ] &&
    pass "bcast: a file already there fails every node without --force, each named" ||
    fail "bcast: existing file" "rc=$rc $out"
head -c 1000 /dev/urandom >"$CDIR/small"
out=$(timeout 20 "$PSBCAST" -f "$CDIR/small" "$D/%N/copy" 2>&1)
rc=$?
ok=1
for i in $(seq 0 $((N - 1))); do cmp -s "$CDIR/small" "$D/n$i/copy" || ok=0; done
[ $rc = 0 ] && [ $ok = 1 ] && pass "bcast: --force replaces the copies" || fail "bcast: --force" "rc=$rc $out"

# psrun --bcast: each rank runs its node's copy, removed after the job
printf '#!/bin/sh\necho "$PSI_RANK $0"\n' >"$CDIR/$PROG"
chmod 755 "$CDIR/$PROG"
out=$(timeout 20 "$PSRUN" -N $N --ppn 1 --bcast="$D/%N/prog" "$CDIR/$PROG" 2>&1)
rc=$?
ok=1
for i in $(seq 0 $((N - 1))); do echo "$out" | grep -qx "$i $D/n$i/prog" || ok=0; done
[ $rc = 0 ] && [ $ok = 1 ] && pass "bcast: psrun --bcast runs each rank from its node's copy" ||
    fail "bcast: psrun --bcast" "rc=$rc $out"
gone() { ! ls "$D"/n*/prog >/dev/null 2>&1; }
wait_until 5000 gone && pass "bcast: the copies are removed after the job" ||
    fail "bcast: removal after the job" "$(ls "$D"/n*/)"

# --bcast-keep, default destination /tmp/psbcast.JOB.NODE.NAME
out=$(timeout 20 "$PSRUN" -N $N --ppn 1 --bcast --bcast-keep "$CDIR/$PROG" 2>&1)
rc=$?
sleep 0.3 # the removal, if it came, would come within this
kept=$(ls /tmp/psbcast.*."$PROG" 2>/dev/null | wc -l)
[ $rc = 0 ] && [ "$kept" = $N ] && echo "$out" | grep -q "^0 /tmp/psbcast\.0:[0-9]*\.n0\.$PROG$" &&
    pass "bcast: --bcast-keep leaves the $N copies at the default destination" ||
    fail "bcast: --bcast-keep" "rc=$rc kept=$kept $out"
cleanup_bcast

# a node whose copy fails: the launch fails naming it; nothing starts; the others removed
rm -rf "$D/n3"
out=$(timeout 20 "$PSRUN" -N $N --ppn 1 --bcast="$D/%N/prog" "$CDIR/$PROG" 2>&1)
rc=$?
[ $rc = 1 ] && echo "$out" | grep -q "node 3 (n3): cannot create $D/n3/prog: No such file or directory" &&
    ! echo "$out" | grep -q "/prog$" && echo "$out" | grep -q "failed on 1 of 5 nodes: nothing started" &&
    pass "bcast: a node whose copy fails fails the launch, named with the reason; nothing starts" ||
    fail "bcast: a failed node" "rc=$rc $out"
wait_until 5000 gone && pass "bcast: the other nodes' copies of the failed launch are removed" ||
    fail "bcast: removal after a failed launch" "$(ls "$D"/n*/)"
mkdirs

# as another user: written as that user, refused where that user may not write
if [ "$(id -u)" = 0 ] && command -v runuser >/dev/null; then
    mkdir -p "$CDIR/u" "$CDIR/r"
    chown nobody "$CDIR/u"
    chmod 755 "$CDIR/r"
    chmod 644 "$CDIR/small"
    out=$(cd / && runuser -u nobody -- env PSID_SOCKET="$PSID_SOCKET" timeout 20 "$PSBCAST" \
        "$CDIR/small" "$CDIR/u/%N" 2>&1 </dev/null)
    rc=$?
    owners=$(stat -c %U "$CDIR"/u/n* 2>/dev/null | sort -u)
    [ $rc = 0 ] && [ "$owners" = nobody ] && [ "$(ls "$CDIR/u" | wc -l)" = $N ] &&
        pass "bcast: another user's copies are written as that user (owner nobody)" ||
        fail "bcast: as another user" "rc=$rc owners=$owners $out"
    out=$(cd / && runuser -u nobody -- env PSID_SOCKET="$PSID_SOCKET" timeout 20 "$PSBCAST" \
        "$CDIR/small" "$CDIR/r/%N" 2>&1 </dev/null)
    rc=$?
    [ $rc = 1 ] && [ "$(echo "$out" | grep -c "Permission denied")" = $N ] &&
        [ -z "$(ls "$CDIR/r")" ] &&
        pass "bcast: where the user may not write, every node refuses (EACCES), nothing made" ||
        fail "bcast: a directory the user cannot write" "rc=$rc $out"
else
    echo "SKIP: bcast: as another user (needs root and runuser)"
fi

# bad command lines
check_usage "bcast: psbcast without DEST exits 2 with usage" "$PSBCAST" "$CDIR/src"
check_usage "bcast: psbcast -F 0 exits 2 with usage" "$PSBCAST" -F 0 "$CDIR/src" "$D/x"
out=$("$PSRUN" --bcast-keep true 2>&1)
rc=$?
[ $rc = 2 ] && echo "$out" | grep -q "without --bcast" && pass "bcast: psrun --bcast-keep alone exits 2" ||
    fail "bcast: psrun --bcast-keep alone" "rc=$rc $out"
out=$("$PSRUN" --bcast=/tmp/x%t true 2>&1)
rc=$?
[ $rc = 2 ] && pass "bcast: psrun --bcast=DEST with %t exits 2" || fail "bcast: --bcast %t" "rc=$rc $out"

# a node stopped, then killed mid-broadcast (node 4, a leaf under 1): the broadcast ends
# without it, naming it, the others have their copies
head -c $((8 << 20)) /dev/urandom >"$CDIR/big"
kill_midway 4 "$CDIR/lost.out" timeout 30 "$PSBCAST" "$CDIR/big" "$D/%N/big"
rc=$RC ms=$MS
out=$(cat "$CDIR/lost.out")
ok=1
for i in 0 1 2 3; do cmp -s "$CDIR/big" "$D/n$i/big" || ok=0; done
[ $rc = 1 ] && echo "$out" | grep -q "node 4 (n4): was lost during the broadcast" && [ $ok = 1 ] &&
    [ $ms -lt 15000 ] &&
    pass "bcast: node 4 killed mid-broadcast: done in $ms ms, node 4 named, the 4 others byte-exact" ||
    fail "bcast: node lost mid-broadcast" "rc=$rc ms=$ms ok=$ok $out"
exit $((FAILS > 0))
