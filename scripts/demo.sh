#!/bin/bash
# demo.sh - the quick start (`make demo`): a virtual 4-node cluster on this machine, used the
# way a user would, in well under a minute; then RDP, the protocol under it, under injected
# faults. Only loopback addresses (127.0.0.1-4) are used, and everything started is stopped
# on exit (pslocal down, and the rdpbench server by pid), also on failure.
#
#  1. pslocal starts four psid daemons (2 CPUs each) and psstat shows the nodes;
#  2. psrun runs a job of 8 ranks across them: labelled output, placement with task ids;
#  3. a longer job runs; psstat lists its tasks; pskill signals one rank on another node;
#     pswait, waiting for another rank, is told when it ends (a death notification);
#     psstat rdp shows this node's RDP connections to the others (packets, RTT, drops);
#  4. one psid is killed: the others declare its node dead in under a second, and the job
#     that had a rank there hears "node lost" and ends (as a Slurm step would);
#  5. RDP delivers 300 verified messages through 10% loss, 5% duplication, 5% reordering
#     and 1% corruption, then is compared with kernel TCP.
#
# usage: scripts/demo.sh [--help]
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
B=$ROOT/build/bin
case ${1:-} in
"") ;;
-h | --help)
    sed -n '2,/^set -euo/{/^#/s/^# \{0,1\}//p}' "$0"
    exit 0
    ;;
*)
    echo "usage: scripts/demo.sh [--help]" >&2
    exit 2
    ;;
esac
for t in psid pslocal psrun pskill psstat pswait rdpbench; do
    [[ -x $B/$t ]] || {
        echo "demo: $B/$t is not built; run: make demo" >&2
        exit 1
    }
done

DIR=$(mktemp -d /tmp/pscluster-demo.XXXXXX)
SRV=""
JOB=""
cleanup() {
    [[ -n $JOB ]] && kill "$JOB" 2>/dev/null || true
    [[ -n $SRV ]] && kill "$SRV" 2>/dev/null || true
    wait 2>/dev/null || true
    "$B/pslocal" down --dir "$DIR" >/dev/null 2>&1 || true
    rm -rf "$DIR"
}
trap cleanup EXIT
step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
run() {
    printf '$ %s\n' "$*"
    "$@"
}

step "1. a virtual cluster: four psid daemons on 127.0.0.1-4, 2 CPUs each"
run "$B/pslocal" up -n 4 --dir "$DIR"
export PSID_SOCKET=$DIR/psid-0.sock
run "$B/psstat" nodes

step "2. one job, 8 ranks across the nodes: where each rank runs, and its output"
run "$B/psrun" -n 8 -v -l sh -c 'echo "hello from rank $PSI_RANK of $PSI_SIZE on $PSI_NODENAME (task $PSI_TID)"'

step "3. a longer job; its tasks anywhere in the cluster; signals and a death notification"
"$B/psrun" -n 4 -v sleep 20 >"$DIR/job.out" 2>&1 &
JOB=$!
for _ in $(seq 200); do [[ $(grep -c "^psrun: rank" "$DIR/job.out") -ge 4 ]] && break; sleep 0.02; done
run "$B/psstat" tasks
t2=$(sed -n 's/^psrun: rank 2: .*task \([0-9]*:[0-9]*\).*/\1/p' "$DIR/job.out" | head -1)
t3=$(sed -n 's/^psrun: rank 3: .*task \([0-9]*:[0-9]*\).*/\1/p' "$DIR/job.out" | head -1)
echo "(rank 2 is task $t2, rank 3 is task $t3)"
"$B/pswait" -v "$t3" >"$DIR/pswait.out" 2>&1 &
PW=$!
for _ in $(seq 200); do grep -q watching "$DIR/pswait.out" && break; sleep 0.01; done
echo "\$ pswait $t3 &        # tell me when rank 3 ends"
run "$B/pskill" -s USR1 "$t3"
wait $PW || true
cat "$DIR/pswait.out" | grep -v watching
run "$B/pskill" -s TERM "$t2"
run "$B/pskill" 9:1 || true
run "$B/psstat" rdp

step "4. a node fails: psid on node 1 is killed; the others notice, the job hears it"
t0=$(date +%s%N)
run kill -KILL "$(cat "$DIR/psid-1.pid")"
until "$B/psstat" --json nodes | grep -q '"id":1,[^}]*"state":"down"'; do
    (($(date +%s%N) - t0 > 5000000000)) && break
    sleep 0.01
done
echo "node 1 declared down after $((($(date +%s%N) - t0) / 1000000)) ms"
run "$B/psstat" nodes
# a lost node ends its job (as with srun): psrun tells why and exits
wait $JOB || true
JOB=""
echo "--- what the job's psrun said:"
cat "$DIR/job.out"
run "$B/pslocal" down --dir "$DIR"

step "5. RDP, the protocol between the daemons: verified delivery through injected faults"
"$B/rdpbench" server 127.0.0.1:0 >"$DIR/srv.log" 2>&1 &
SRV=$!
for _ in $(seq 200); do grep -q "listening on" "$DIR/srv.log" && break; sleep 0.01; done
ADDR=$(sed -n 's/.*listening on \([0-9.]*:[0-9]*\).*/\1/p' "$DIR/srv.log")
run "$B/rdpbench" client "$ADDR" --mode stream --size 1-65536 --count 300 \
    --loss 0.1 --dup 0.05 --reorder 0.05 --corrupt 0.01 2>&1 | grep -E "verified|retransmits|drops|injected" || true
run "$B/rdpbench" client "$ADDR" --mode pingpong --size 16 --count 2000 --vs-tcp 2>&1 |
    grep -E "pingpong|ratio" || true
echo
echo "demo: done. 'make check' runs the tests; README.md has the tour."
