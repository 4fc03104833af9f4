#!/bin/bash
# demo.sh - the quick start (`make demo`): a virtual 4-node cluster on this machine, used the
# way a user would, in well under a minute; then RDP, the protocol under it, under injected
# faults. Only loopback addresses (127.0.0.1-4) are used, and everything started is stopped
# on exit (pslocal down, and the job, pswait and the rdpbench server by pid), also on failure.
# Every step checks what it shows; the first that fails ends the demo with
# "demo: FAILED: step N: why" on stderr and exit status 1. The last line of a good run is
# "demo: done. ...".
#
#  1. pslocal starts four psid daemons (2 CPUs each) and psstat shows the nodes;
#  2. psrun runs a job of 8 ranks across them: labelled output, placement with task ids;
#  3. a longer job runs, one rank per node; psstat lists its tasks; pskill signals one rank
#     on another node; pswait, waiting for another rank, is told when it ends (a death
#     notification);
#     psstat rdp shows this node's RDP connections to the others (packets, RTT, drops);
#  4. unmodified programs under libpspreload: curl on node 0 fetches a file from python3's
#     http.server on node 1, both started with pspreload: the connection travels over RDP
#     (PSP_STATS says accelerated=1); the same curl from a server without the library (node
#     2) falls back to TCP (no_library=1); the bytes are the same;
#  5. one psid is killed: the others declare its node dead in under a second, and the job
#     that had a rank there hears "node lost" and ends (as a Slurm step would);
#  6. RDP delivers 300 verified messages through 10% loss, 5% duplication, 5% reordering
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
for t in psid pslocal psrun pskill psstat pswait rdpbench pspreload; do
    [[ -x $B/$t ]] || {
        echo "demo: $B/$t is not built; run: make demo" >&2
        exit 1
    }
done

DIR=$(mktemp -d /tmp/pscluster-demo.XXXXXX)
SRV=""
JOB=""
PW=""
HTTP=""
HTTP2=""
cleanup() {
    local p
    set +e # all of it, whatever fails (a process that already ended)
    for p in "$JOB" "$PW" "$SRV" "$HTTP" "$HTTP2"; do
        [[ -n $p ]] && kill "$p" 2>/dev/null
    done
    wait 2>/dev/null
    "$B/pslocal" down --dir "$DIR" >/dev/null 2>&1
    rm -rf "$DIR"
}
trap cleanup EXIT
STEP=""
step() {
    STEP=${1%%.*}
    printf '\n\033[1m== %s\033[0m\n' "$*"
}
# fail WHY: the demo stops here (cleanup runs on exit)
fail() {
    echo "demo: FAILED: step $STEP: $*" >&2
    exit 1
}
# anything else that fails (set -e) says where, and ends the demo the same way
trap 'echo "demo: FAILED: step $STEP: \"$BASH_COMMAND\" exited with status $? (line $LINENO)" >&2
exit 1' ERR
run() {
    printf '$ %s\n' "$*"
    "$@"
}
# until_ok SECONDS CMD...: poll CMD every 10 ms until it succeeds (0) or SECONDS pass (1)
until_ok() {
    local deadline=$(($(date +%s%N) + $1 * 1000000000))
    shift
    until "$@"; do
        (($(date +%s%N) > deadline)) && return 1
        sleep 0.01
    done
}
lines() { grep -c "$2" "$1" || true; } # lines FILE REGEX: how many lines match

step "1. a virtual cluster: four psid daemons on 127.0.0.1-4, 2 CPUs each"
run "$B/pslocal" up -n 4 --dir "$DIR" || fail "pslocal up could not start the cluster"
export PSID_SOCKET=$DIR/psid-0.sock
run "$B/psstat" nodes | tee "$DIR/nodes.out" || fail "psstat nodes failed"
(($(lines "$DIR/nodes.out" ' up ') == 4)) || fail "psstat nodes does not show 4 nodes up"

step "2. one job, 8 ranks across the nodes: where each rank runs, and its output"
run "$B/psrun" -n 8 -v -l sh -c 'echo "hello from rank $PSI_RANK of $PSI_SIZE on $PSI_NODENAME (task $PSI_TID)"' |
    tee "$DIR/hello.out" || fail "the job of 8 ranks failed"
(($(lines "$DIR/hello.out" '^[0-7]: hello from rank [0-7] of 8 on n[0-3] ') == 8)) ||
    fail "the job did not print 8 labelled hello lines"

step "3. a longer job; its tasks anywhere in the cluster; signals and a death notification"
# one rank per node, wherever the load average would put them: rank I runs on node I
echo "\$ psrun -n 4 --ppn 1 -v sleep 120 &"
"$B/psrun" -n 4 --ppn 1 -v sleep 120 >"$DIR/job.out" 2>&1 &
JOB=$!
job_started() { (($(lines "$DIR/job.out" '^psrun: rank') >= 4)); }
until_ok 5 job_started || fail "the 4 ranks of the job did not start: $(cat "$DIR/job.out")"
run "$B/psstat" tasks | tee "$DIR/tasks.out" || fail "psstat tasks failed"
(($(lines "$DIR/tasks.out" ' sleep$') == 4)) || fail "psstat tasks does not list the 4 ranks"
t2=$(sed -n 's/^psrun: rank 2: .*task \([0-9]*:[0-9]*\).*/\1/p' "$DIR/job.out" | head -1)
t3=$(sed -n 's/^psrun: rank 3: .*task \([0-9]*:[0-9]*\).*/\1/p' "$DIR/job.out" | head -1)
[[ -n $t2 && -n $t3 ]] || fail "no task ids of ranks 2 and 3 in psrun's output"
echo "(rank 2 is task $t2, rank 3 is task $t3)"
"$B/pswait" -v "$t3" >"$DIR/pswait.out" 2>&1 &
PW=$!
pswait_ready() { grep -q watching "$DIR/pswait.out"; }
until_ok 5 pswait_ready || fail "pswait did not start watching $t3: $(cat "$DIR/pswait.out")"
echo "\$ pswait $t3 &        # tell me when rank 3 ends"
run "$B/pskill" -s USR1 "$t3" || fail "pskill -s USR1 $t3 failed"
# pswait exits with the task's status: 128 + 10 for SIGUSR1
rc=0
wait "$PW" || rc=$?
PW=""
grep -v watching "$DIR/pswait.out" || true
((rc == 138)) && grep -q "killed by signal 10" "$DIR/pswait.out" ||
    fail "pswait did not report rank 3 killed by SIGUSR1 (exit status $rc)"
run "$B/pskill" -s TERM "$t2" || fail "pskill -s TERM $t2 failed"
# a task on a node that does not exist: pskill says so and fails
if run "$B/pskill" 9:1; then fail "pskill 9:1 succeeded, but there is no node 9"; fi
run "$B/psstat" rdp | tee "$DIR/rdp.out" || fail "psstat rdp failed"
(($(lines "$DIR/rdp.out" ' established ') == 3)) ||
    fail "psstat rdp does not show 3 established connections"

step "4. an unmodified program across nodes under libpspreload, and its fallback to TCP"
mkdir -p "$DIR/www"
head -c 5000000 /dev/urandom >"$DIR/www/data.bin"
PORT=$((20000 + RANDOM % 20000))
# the servers: python3's http.server on node 1 under the library, on node 2 without it
(cd "$DIR/www" && PSID_SOCKET=$DIR/psid-1.sock exec "$B/pspreload" python3 -m http.server \
    --bind 127.0.0.2 "$PORT" >"$DIR/http1.log" 2>&1) &
HTTP=$!
(cd "$DIR/www" && PSID_SOCKET=$DIR/psid-2.sock exec python3 -m http.server --bind 127.0.0.3 \
    "$PORT" >"$DIR/http2.log" 2>&1) &
HTTP2=$!
http_up() { curl -s -o /dev/null "http://$1:$PORT/" 2>/dev/null; }
echo "\$ pspreload python3 -m http.server --bind 127.0.0.2 $PORT &     # on node 1"
echo "\$ python3 -m http.server --bind 127.0.0.3 $PORT &               # on node 2, no library"
until_ok 10 http_up 127.0.0.2 && until_ok 10 http_up 127.0.0.3 ||
    fail "python3's http.server did not start: $(cat "$DIR"/http*.log)"
run "$B/pspreload" --stats curl -s -o "$DIR/got1.bin" "http://127.0.0.2:$PORT/data.bin" \
    2>&1 | tee "$DIR/stats1.out" || fail "curl under the library failed"
cmp -s "$DIR/got1.bin" "$DIR/www/data.bin" || fail "curl got other bytes over RDP"
grep -q "accelerated=1 " "$DIR/stats1.out" || fail "the connection was not accelerated"
run "$B/pspreload" --stats curl -s -o "$DIR/got2.bin" "http://127.0.0.3:$PORT/data.bin" \
    2>&1 | tee "$DIR/stats2.out" || fail "curl to the server without the library failed"
cmp -s "$DIR/got2.bin" "$DIR/www/data.bin" || fail "curl got other bytes over TCP"
grep -q "no_library=1 " "$DIR/stats2.out" || fail "the fallback was not counted as no_library"
echo "(the same 5 MB both times: over RDP from node 1, over TCP from node 2)"
kill "$HTTP" "$HTTP2"
wait "$HTTP" "$HTTP2" 2>/dev/null || true
HTTP=""
HTTP2=""

step "4b. two processes of one node: a TCP connection through shared memory"
# sockperf ping-pong, 16 B, on node 0 (127.0.0.1): kernel TCP, then both under the library
PP=$((PORT + 1))
pp_listening() { ss -Hltn "sport = :$PP" | grep -q .; }
# pp PREFIX...: the median one-way latency (us) of a 1 s ping-pong, in PPR; the client's
# stats, if under the library, in $DIR/pp.stats
pp() {
    "$@" sockperf sr --tcp -i 127.0.0.1 -p $PP >"$DIR/sr.log" 2>&1 &
    SRV=$!
    until_ok 5 pp_listening || fail "sockperf's server did not start: $(cat "$DIR/sr.log")"
    # --mps: sockperf sizes its table of round trips by a rate it assumes (600 k/s)
    "$@" sockperf pp --tcp -i 127.0.0.1 -p $PP -m 16 -t 1 --mps 5000000 >"$DIR/pp.out" \
        2>"$DIR/pp.stats" ||
        fail "sockperf ping-pong failed: $(tail -3 "$DIR/pp.out")"
    kill "$SRV"
    wait "$SRV" 2>/dev/null || true
    SRV=""
    PP=$((PP + 1))
    PPR=$(sed -n 's/.*percentile 50.000 = *\([0-9.]*\).*/\1/p' "$DIR/pp.out")
}
echo "\$ sockperf sr --tcp -i 127.0.0.1 -p PORT &  sockperf pp --tcp -i 127.0.0.1 -p PORT -m 16 -t 1 --mps 5000000"
pp env
k=$PPR
echo "\$ the same, both under pspreload --stats"
pp "$B/pspreload" --stats
l=$PPR
grep '^pspreload:' "$DIR/pp.stats" || true
grep -q ' shm=1 ' "$DIR/pp.stats" || fail "the connection did not take the same-node path"
[[ -n $k && -n $l ]] || fail "no latency in sockperf's output"
echo "same node, 16 B, one-way latency (median): kernel TCP $k us, libpspreload $l us" \
    "($(awk -v a="$l" -v b="$k" 'BEGIN { printf "%.2f", a / b }')x)"

step "5. a node fails: psid on node 1 is killed; the others notice, the job hears it"
t0=$(date +%s%N)
run kill -KILL "$(cat "$DIR/psid-1.pid")" || fail "could not kill psid 1"
node1_down() { "$B/psstat" --json nodes | grep -q '"id":1,[^}]*"state":"down"'; }
until_ok 5 node1_down || fail "node 1 was not declared down within 5 s"
echo "node 1 declared down after $((($(date +%s%N) - t0) / 1000000)) ms"
run "$B/psstat" nodes || fail "psstat nodes failed"
# a lost node ends its job (as with srun): psrun tells why and exits
job_ended() { ! kill -0 "$JOB" 2>/dev/null; }
until_ok 5 job_ended || fail "the job did not end within 5 s of losing node 1"
rc=0
wait "$JOB" || rc=$?
JOB=""
echo "--- what the job's psrun said (exit status $rc):"
cat "$DIR/job.out"
((rc != 0)) && grep -q "node lost" "$DIR/job.out" ||
    fail "psrun did not report the lost node (exit status $rc)"
run "$B/pslocal" down --dir "$DIR" || fail "pslocal down failed"

step "6. RDP, the protocol between the daemons: verified delivery through injected faults"
"$B/rdpbench" server 127.0.0.1:0 >"$DIR/srv.log" 2>&1 &
SRV=$!
srv_ready() { grep -q "listening on" "$DIR/srv.log"; }
until_ok 5 srv_ready || fail "the rdpbench server did not start: $(cat "$DIR/srv.log")"
ADDR=$(sed -n 's/.*listening on \([0-9.]*:[0-9]*\).*/\1/p' "$DIR/srv.log")
[[ -n $ADDR ]] || fail "no address in the rdpbench server's output"
run "$B/rdpbench" client "$ADDR" --mode stream --size 1-65536 --count 300 \
    --loss 0.1 --dup 0.05 --reorder 0.05 --corrupt 0.01 >"$DIR/stream.out" 2>&1 ||
    fail "rdpbench stream through injected faults failed: $(tail -3 "$DIR/stream.out")"
grep -E "verified|retransmits|drops|injected" "$DIR/stream.out" || true
grep -q "^rdp stream: 300 messages .* verified" "$DIR/stream.out" ||
    fail "rdpbench did not verify 300 messages"
run "$B/rdpbench" client "$ADDR" --mode pingpong --size 16 --count 2000 --vs-tcp \
    >"$DIR/pingpong.out" 2>&1 ||
    fail "rdpbench ping-pong against TCP failed: $(tail -3 "$DIR/pingpong.out")"
grep -E "pingpong|ratio" "$DIR/pingpong.out" || true
grep -q "^rdp pingpong: 2000 round trips verified" "$DIR/pingpong.out" &&
    grep -q "^ratio rdp/tcp" "$DIR/pingpong.out" ||
    fail "rdpbench did not verify 2000 round trips and compare them with TCP"
echo
echo "demo: done. 'make check' runs the tests; README.md says where to read on."
