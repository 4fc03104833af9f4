#!/bin/bash
# psid_notify.sh - death notifications on a 4-node loopback cluster:
#  - a client on node 0 watching a task on node 2 gets a message with its exit status;
#  - or the signal it chose;
#  - a released notification does not fire;
#  - ESRCH for no such task; EPERM for another user's task (as root);
#  - pswait: how a task ended; no such task or node: exit 1; a bad command line (also a
#    malformed task id): usage, exit 2;
#  - when a node dies, every notification about its tasks fires with "lost";
#  - pswait A B where A dies between the two registrations (a scripted psid puts A's death
#    before B's reply): both deaths are printed, none taken for a reply.
# shellcheck source-path=SCRIPTDIR source=lib/cluster.sh
source "$(dirname "$0")/lib/cluster.sh"
JD=$TOP/build/test/tools/jobdrive
cluster_up 4
all_up 5000 || {
    fail "notify: cluster up" "not all up"
    exit 1
}
export PSID_SOCKET=$CDIR/psid-0.sock
"$JD" run 8 sleep 30 >"$CDIR/job.out" &
JPID=$!
PIDS+=("$JPID")
for _ in $(seq 200); do [ "$(grep -c started "$CDIR/job.out")" = 8 ] && break; sleep 0.02; done
tid() { sed -n "s/^rank $1 started \([0-9]*:[0-9]*\) .*/\1/p" "$CDIR/job.out"; }

# message on exit (rank 4 is on node 2)
"$JD" watch "$(tid 4)" 0 >"$CDIR/w1.out" &
PIDS+=($!)
wait_line "$CDIR/w1.out" "^registered 0" 2000
# signal on exit (rank 5, node 2), SIGUSR1
PSID_SOCKET=$CDIR/psid-1.sock "$JD" watch "$(tid 5)" 10 >"$CDIR/w2.out" &
PIDS+=($!)
wait_line "$CDIR/w2.out" "^registered 0" 2000
# released: must not fire (rank 2, node 1); a second watcher on the same task, not released,
# tells when the notifications about its death have gone out
"$JD" watch "$(tid 2)" 0 release >"$CDIR/w3.out" &
W3=$!
PIDS+=("$W3")
"$JD" watch "$(tid 2)" 0 >"$CDIR/w3b.out" &
PIDS+=($!)
wait_line "$CDIR/w3.out" "^released 0" 2000 && wait_line "$CDIR/w3b.out" "^registered 0" 2000
released_ok=$?
# node 3 will die (ranks 6 and 7)
"$JD" watch "$(tid 6)" 0 >"$CDIR/w4.out" &
PIDS+=($!)
wait_line "$CDIR/w4.out" "^registered 0" 2000

"$JD" signal "$(tid 4)" 15 >/dev/null
"$JD" signal "$(tid 5)" 9 >/dev/null
"$JD" signal "$(tid 2)" 15 >/dev/null
wait_line "$CDIR/w1.out" "^dead $(tid 4) status 15$" 3000 &&
    pass "notify: message with the exit status of a task on another node" ||
    fail "notify: message" "$(cat "$CDIR/w1.out")"
wait_line "$CDIR/w2.out" "^signal 10$" 3000 && pass "notify: the chosen signal (SIGUSR1)" ||
    fail "notify: signal" "$(cat "$CDIR/w2.out")"
# the released watcher was set up, stayed connected until rank 2 died and its other watcher
# heard of it, and heard nothing itself
wait_line "$CDIR/w3b.out" "^dead $(tid 2) status 15$" 3000 && [ "$released_ok" = 0 ] &&
    kill -0 "$W3" 2>/dev/null && ! grep -q dead "$CDIR/w3.out"
check "notify: a released notification does not fire" $? \
    "released: $(cat "$CDIR/w3.out"); not released: $(cat "$CDIR/w3b.out")"
kill "$W3" 2>/dev/null

out=$("$JD" watch 2:999999 0)
echo "$out" | grep -q "^registered 3$" && pass "notify: no such task -> ESRCH" ||
    fail "notify: ESRCH" "$out"
if [ "$(id -u)" = 0 ] && command -v runuser >/dev/null; then
    out=$(runuser -u nobody -- env PSID_SOCKET="$CDIR/psid-1.sock" timeout 5 "$JD" watch "$(tid 0)" 0)
    echo "$out" | grep -q "^registered 1$" && pass "notify: another user's task -> EPERM" ||
        fail "notify: EPERM" "$out"
else
    echo "SKIP: notify: EPERM needs root"
fi

# pswait, the user's tool: a task on another node killed by SIGTERM, by node name
"$BIN/pswait" -v "n1:$(tid 3 | cut -d: -f2)" >"$CDIR/pw.out" 2>&1 &
PW=$!
PIDS+=("$PW")
wait_line "$CDIR/pw.out" "watching" 2000
"$JD" signal "$(tid 3)" 15 >/dev/null
wait $PW
rc=$?
[ $rc = 143 ] && grep -q "^$(tid 3) killed by signal 15 (Terminated)$" "$CDIR/pw.out" &&
    pass "pswait: prints how a remote task ended, exit 128+15" ||
    fail "pswait" "exit $rc: $(cat "$CDIR/pw.out")"
out=$("$BIN/pswait" 1:999999 2>&1)
rc=$?
[ $rc = 1 ] && echo "$out" | grep -q "No such process" && pass "pswait: no such task -> error, exit 1" ||
    fail "pswait: no such task" "exit $rc: $out"
# a bad command line is exit 2 with the usage, also a malformed task id, even next to a good
# one (nothing is watched: no "watching"); a node not in the cluster is not one (exit 1)
check_usage "pswait: usage error (no TID) -> exit 2" "$BIN/pswait"
check_usage "pswait: usage error (--bogus) -> exit 2" "$BIN/pswait" --bogus 1:1
for bad in 1:x 2: :5 1:0 abc; do
    out=$(timeout 5 "$BIN/pswait" -v "$(tid 1)" "$bad" 2>&1)
    rc=$?
    [ $rc = 2 ] && [ "$(head -1 <<<"$out")" = "pswait: $bad: not a task id (NODE:PID)" ] &&
        grep -q "^usage: pswait" <<<"$out" && ! grep -q watching <<<"$out"
    check "pswait: malformed task id '$bad' -> named, usage, exit 2" $? "exit $rc: $out"
done
out=$(timeout 5 "$BIN/pswait" n9:100 2>&1)
rc=$?
[ $rc = 1 ] && [ "$out" = "pswait: n9:100: no node 'n9' in the cluster" ]
check "pswait: a node not in the cluster -> error, exit 1" $? "exit $rc: $out"
"$BIN/pswait" -v "$(tid 7)" >"$CDIR/pw2.out" 2>&1 &
PW=$!
PIDS+=("$PW")
wait_line "$CDIR/pw2.out" "watching" 2000

kill_node 3 KILL
wait_line "$CDIR/w4.out" "^dead $(tid 6) lost$" 3000 &&
    pass "notify: a node's death fires its tasks' notifications with 'lost'" ||
    fail "notify: node death" "$(cat "$CDIR/w4.out")"
wait $PW
rc=$?
[ $rc = 255 ] && grep -q "node lost" "$CDIR/pw2.out" && pass "pswait: a lost node, exit 255" ||
    fail "pswait: lost node" "exit $rc: $(cat "$CDIR/pw2.out")"

# the order a real psid gives only by chance: fakepsid answers each NOTIFY and sends the
# task's death right after, with id 0
"$TOP/build/test/tools/fakepsid" "$CDIR/fake.sock" >"$CDIR/fake.out" 2>&1 &
PIDS+=($!)
wait_line "$CDIR/fake.out" "^ready" 3000
out=$(PSID_SOCKET=$CDIR/fake.sock timeout 5 "$BIN/pswait" n0:1203 1:1307 2>&1)
rc=$?
[ $rc = 7 ] && [ "$out" = "$(printf '0:1203 exited with status 3\n1:1307 exited with status 7')" ]
check "pswait: a task that dies between two registrations is not taken for a reply" $? \
    "exit $rc: $out"
exit $((FAILS > 0))
