#!/bin/bash
# psid_limits.sh - one user cannot lock out another (hardening issue, point 3), on a
# 2-node loopback cluster with small limits (max_clients_per_uid 20, client_idle_s 2):
#  - a user's connections past the per-uid limit are refused with EUSERS and the limit in
#    the text; psid logs the uid once, not per attempt; root still gets in (root only);
#    when the user's connections close, the user gets in again;
#  - a client that sends nothing and holds nothing is closed after the idle timeout; one
#    that holds a notification is not;
#  - out of file descriptors (psid under a low RLIMIT_NOFILE), connections are refused with
#    EMFILE instead of psid spinning on accept, and psid answers again once they close.
# The user is nobody when the test runs as root, else the test's own user (then the root
# checks are skipped, said so).
# shellcheck source-path=SCRIPTDIR source=lib/cluster.sh
source "$(dirname "$0")/lib/cluster.sh"
CH=$TOP/build/test/tools/connhold
JD=$TOP/build/test/tools/jobdrive
PSID_CONF_EXTRA="max_clients_per_uid = 20; client_idle_s = 2;"
cluster_up 2
all_up 5000 || {
    fail "limits: cluster up" "not all up"
    exit 1
}
SOCK=$CDIR/psid-0.sock
if [ "$(id -u)" = 0 ] && command -v runuser >/dev/null; then
    as_user() { (cd / && runuser -u nobody -- env PSID_SOCKET="$SOCK" "$@"); }
    uid=$(id -u nobody)
else
    as_user() { env PSID_SOCKET="$SOCK" "$@"; }
    uid=$(id -u)
fi
# hold NAME N: a connhold of the user's with N connections, fed by a fifo kept open
hold() {
    mkfifo "$CDIR/$1.in"
    as_user "$CH" "$2" <"$CDIR/$1.in" >"$CDIR/$1.out" 2>&1 &
    PIDS+=($!)
    exec {HOLD_FD}>"$CDIR/$1.in"
    wait_line "$CDIR/$1.out" "^ok" 5000
}
release() { exec {HOLD_FD}>&-; }

hold h1 25
grep -q "^ok 20 refused 5 errno 87: too many connections of uid $uid (limit 20)$" "$CDIR/h1.out"
check "limits: past max_clients_per_uid: EUSERS with the limit in the text" $? "$(cat "$CDIR/h1.out")"
[ "$(grep -c "too many connections of uid $uid" "$CDIR/psid-0.log")" = 1 ]
check "limits: the uid is logged once, not per refused attempt" $? \
    "$(grep -c "too many connections of uid" "$CDIR/psid-0.log") lines"
if [ "$(id -u)" = 0 ]; then
    PSID_SOCKET=$SOCK timeout 5 "$BIN/psstat" nodes >/dev/null
    check "limits: root gets in while the user is at the limit" $? "psstat failed"
else
    echo "SKIP: limits: root gets in (needs root)"
fi
release
# the released connections close as connhold exits; then the user gets in again
gets_in() { [ "$(as_user timeout 5 "$CH" 1 </dev/null)" = "ok 1 refused 0" ]; }
wait_until 3000 gets_in
check "limits: when the user's connections close, the user gets in again" $? \
    "$(as_user timeout 5 "$CH" 1 </dev/null)"

# idle: a client that holds nothing is closed; one holding a notification is not
PSID_SOCKET=$SOCK JOBDRIVE_NODES=1 "$JD" run 1 sleep 60 >"$CDIR/job.out" &
PIDS+=($!)
wait_line "$CDIR/job.out" "started" 5000
tid=$(sed -n 's/^rank 0 started \([0-9]*:[0-9]*\) .*/\1/p' "$CDIR/job.out")
PSID_SOCKET=$SOCK "$JD" watch "$tid" 0 >"$CDIR/watch.out" &
WATCH=$!
PIDS+=("$WATCH")
wait_line "$CDIR/watch.out" "^registered 0" 3000
hold h2 1
wait_line "$CDIR/psid-0.log" "uid $uid idle for 2 s: closed" 6000
check "limits: a client that sends nothing and holds nothing is closed after client_idle_s" $? \
    "$(grep idle "$CDIR/psid-0.log" | tail -2)"
# the watcher connected before h2 and was idle as long; give the scan (every 0.5 s) a round more
t0=$(now_ms)
wait_until 2000 test "$(($(now_ms) - t0))" -ge 1000
kill -0 "$WATCH" 2>/dev/null && ! grep -q "^dead\|lost" "$CDIR/watch.out" &&
    ! grep -q "pid $WATCH uid [0-9]* idle" "$CDIR/psid-0.log"
check "limits: a client that holds a notification is not closed for being idle" $? \
    "$(cat "$CDIR/watch.out"); $(grep idle "$CDIR/psid-0.log" | tail -3)"
release

# memory: 8 connections that send node-table requests for 5 s and never read the replies
# (psid stops reading them: back-pressure), then a client that floods its job's input past
# the window (refused, closed); psid's peak RSS stays under 64 MiB (1.8 GB and 1.3 GB before)
CS=$TOP/build/test/tools/clientstorm
hwm() { awk '/^VmHWM/ { print $2 }' "/proc/${PIDS[0]}/status"; } # kB
fl=$(PSID_SOCKET=$SOCK timeout 30 "$CS" flood 8 5000)
peak=$(hwm)
[[ $fl == "sent "* ]] && [ "$peak" -lt 65536 ] && PSID_SOCKET=$SOCK timeout 5 "$BIN/psstat" nodes >/dev/null
check "memory: a request flood that never reads: psid's peak RSS under 64 MiB (${peak} kB)" $? \
    "$fl; VmHWM $peak kB"
echo "memory: request flood: $fl; psid-0 VmHWM $peak kB"
fl=$(PSID_SOCKET=$SOCK JOBDRIVE_NODES=0 timeout 30 "$CS" inflood 5000 sleep 30)
peak=$(hwm)
# refused: EPROTO, or the connection already closed (EPIPE, ECONNRESET) when it is read
[[ $fl =~ ^input\ [0-9]+\ bytes,\ refused\ (71|32|104)$ ]] && [ "$peak" -lt 65536 ] &&
    grep -q "its client sends input beyond the window; dropped" "$CDIR/psid-0.log"
check "memory: input past the window: refused (EPROTO), peak RSS under 64 MiB (${peak} kB)" $? \
    "$fl; VmHWM $peak kB"
echo "memory: input flood: $fl; psid-0 VmHWM $peak kB"

# out of descriptors: node 1 again under RLIMIT_NOFILE 64, 100 connections of root
if [ "$(id -u)" = 0 ] && command -v prlimit >/dev/null; then
    kill_node 1 TERM
    prlimit --nofile=64:64 "$BIN/psid" -f "$CDIR/psid.conf" --node 1 --foreground \
        >>"$CDIR/psid-1.log" 2>&1 &
    PIDS[1]=$!
    wait_state 0 1 up 5000 >/dev/null
    mkfifo "$CDIR/h3.in"
    PSID_SOCKET=$CDIR/psid-1.sock "$CH" 100 <"$CDIR/h3.in" >"$CDIR/h3.out" 2>&1 &
    PIDS+=($!)
    exec {HOLD_FD}>"$CDIR/h3.in"
    wait_line "$CDIR/h3.out" "^ok" 10000
    cpu() { awk '{ print $14 + $15 }' "/proc/${PIDS[1]}/stat"; } # ticks, user + system
    c0=$(cpu)
    t0=$(now_ms)
    wait_until 2000 test "$(($(now_ms) - t0))" -ge 1000
    c1=$(cpu)
    grep -q "refused [1-9][0-9]* errno 24: psid is out of file descriptors" "$CDIR/h3.out" &&
        [ $((c1 - c0)) -lt 30 ]
    check "limits: out of descriptors: refused with EMFILE, psid not spinning" $? \
        "$(cat "$CDIR/h3.out"); cpu ticks in 1 s: $((c1 - c0))"
    release
    wait_until 5000 bash -c "PSID_SOCKET=$CDIR/psid-1.sock timeout 2 $BIN/psstat nodes >/dev/null 2>&1"
    check "limits: psid answers again once the connections close" $? "no answer"
else
    echo "SKIP: limits: out of descriptors (needs root and prlimit)"
fi
exit $((FAILS > 0))
