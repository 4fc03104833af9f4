#!/bin/bash
# psid_replay.sh - an on-path recording of psid's RDP handshake, replayed after a restart,
# opens nothing (hardening issue, point 2; root only: AF_PACKET capture and raw sends):
#  - on a 2-node loopback cluster, node 1 is restarted and a job run across both while
#    test/tools/udpreplay records the RDP SYNs on lo (RDP connects on demand: the job's
#    first message makes the two psids' handshake);
#  - node 1 is restarted again (a new incarnation, new connection ids), and the recorded
#    SYNs are sent to it again, unchanged (source address and port included), 5 times each;
#  - node 1 answers them but no connection comes of it: a 2-node job started right after
#    completes (before the three-way handshake, a replayed SYN made a half-open phantom
#    connection on the restarted node and the next job hung), node 0 and node 1 see each
#    other up, and node 1's RDP counts the replays' own packets as dropped, or answers
#    them without a connection (psstat rdp).
# Every daemon and helper started by pid and killed on exit; every wait bounded.
# shellcheck source-path=SCRIPTDIR source=lib/cluster.sh
source "$(dirname "$0")/lib/cluster.sh"
if [ "$(id -u)" -ne 0 ]; then
    echo "SKIP: replay: needs root (AF_PACKET capture, raw sockets)"
    exit 0
fi
UR=$TOP/build/test/tools/udpreplay
cluster_up 2
all_up 5000 || {
    fail "replay: cluster up" "not all up"
    exit 1
}
port=$(sed -n 's/^rdp = { port = \([0-9]*\);.*/\1/p' "$CDIR/psid.conf")

# record the handshake of a restart
"$UR" capture -p "$port" -T syn -n 2 -t 10 "$CDIR/syn.cap" >"$CDIR/capture.out" 2>&1 &
cap=$!
PIDS+=("$cap")
# the capture socket is bound (AF_PACKET sees only what comes after)
wait_line "$CDIR/capture.out" '^capturing' 3000 || fail "replay: the capture started" "$(cat "$CDIR/capture.out")"
kill_node 1
start_node 1
all_up 8000
# RDP opens its connections on demand: a job across both nodes makes the handshake
PSID_SOCKET=$CDIR/psid-0.sock timeout 20 "$BIN/psrun" -n 2 --ppn 1 /bin/true >/dev/null 2>&1
wait_until 12000 bash -c "! kill -0 $cap 2>/dev/null"
wait "$cap"
captured=$(sed -n 's/^captured //p' "$CDIR/capture.out")
[[ ${captured:-0} -ge 1 ]]
check "replay: the RDP handshake of a restart recorded on lo (SYNs)" $? \
    "$(cat "$CDIR/capture.out")"

# a new incarnation of node 1, then the old SYNs again
kill_node 1
start_node 1
all_up 8000
check "replay: node 1 restarted again, both up" $? "0 sees 1 $(state_of 0 1), 1 sees 0 $(state_of 1 0)"
received() { PSID_SOCKET=$CDIR/psid-1.sock "$BIN/psstat" --json rdp | jq '.packets_received'; }
before=$(received)
sent=$("$UR" send -c 5 "$CDIR/syn.cap")
more() { [[ $(received) -gt $before ]]; }
# they must reach node 1's RDP (a recording sent back with lo's partial UDP checksum
# would be dropped by the kernel, and the test would prove nothing)
[[ $sent == "sent "* && ${sent#sent } -ge 5 ]] && wait_until 3000 more
check "replay: the recorded SYNs sent to the restarted node, 5 times each, and received" $? \
    "$sent; node 1 received $before -> $(received)"

# the next job across both nodes completes, and the two still see each other
out=$(PSID_SOCKET=$CDIR/psid-0.sock timeout 20 "$BIN/psrun" -n 2 --ppn 1 /bin/echo replayed 2>&1)
rc=$?
[[ $rc == 0 && $(grep -c replayed <<<"$out") == 2 ]]
check "replay: a 2-node job right after the replay completes" $? "rc $rc: $out"
sleep 1
[[ $(state_of 0 1) == up && $(state_of 1 0) == up ]]
check "replay: both nodes still see each other up a second later" $? \
    "0 sees 1 $(state_of 0 1), 1 sees 0 $(state_of 1 0)"
out=$(PSID_SOCKET=$CDIR/psid-0.sock timeout 20 "$BIN/psrun" -n 2 --ppn 1 /bin/echo again 2>&1)
[[ $? == 0 && $(grep -c again <<<"$out") == 2 ]]
check "replay: and a second job too" $? "$out"
exit $((FAILS > 0))
