#!/bin/bash
# psid_leftovers.sh - a job ends when its tasks end, whatever they leave behind (issue 29,
# point 1). A task has ended when its own process has exited: its end is reported with its
# status, what it left is killed (its process group by the privileged child; the job's
# cgroup when it was the job's last task on the node), and output still buffered is
# delivered for a bounded time, then closed. On a 2-node loopback cluster, psrun on node 0:
#  - the issue's reproduction, `sh -c '(setsid sleep 300 &) ; sleep 1'`, on the remote node
#    and on psrun's own: psrun returns 0 within 5 s and the orphan is gone;
#  - a daemon that double-forks out of the task's session and keeps its stdout and stderr
#    (writing to stderr), on both nodes: psrun returns the task's status (3) within 5 s with
#    the task's output, and the daemon is gone;
#  - two ranks on one node, rank 0 leaving such a daemon and exiting at once while rank 1
#    runs 3 s: rank 0's output is closed 1 s after its exit (psid says so), the job ends
#    with rank 1, and the daemon dies with the job;
#  - rank 0 writes 300 KiB, leaves a holder of its output and exits while the job's client
#    acknowledges nothing for 3 s (longer than the 1 s bound: flow control does not count
#    against it): every byte arrives.
# Needs a writable cgroup2 hierarchy for the daemons' deaths (root); skipped otherwise.
# Every process a check starts is ended by pid on exit.
# shellcheck source-path=SCRIPTDIR source=lib/cluster.sh
source "$(dirname "$0")/lib/cluster.sh"
cluster_up 2
all_up 5000 || {
    fail "leftovers: cluster up" "not all up"
    exit 1
}
export PSID_SOCKET=$CDIR/psid-0.sock
if ! grep -q "each job's tasks in a cgroup under" "$CDIR/psid-1.log"; then
    echo "SKIP: leftovers: $(grep -ho "tasks are tracked by process group only.*" "$CDIR/psid-1.log")"
    exit 0
fi
alive_of() { for p in "$@"; do procs_gone "$p" || echo "$p"; done | tr '\n' ' '; }

# run_job NAME OUT PSRUN-ARGS...: psrun under a 30 s timeout; sets rc, ms and P (the pids
# printed as "pid N", recorded to be ended)
run_job() {
    local out=$2 t0
    shift 2
    t0=$(now_ms)
    timeout 30 "$BIN/psrun" "$@" >"$out" 2>&1
    rc=$?
    ms=$(($(now_ms) - t0))
    read -ra P <<<"$(pids_in "$out")"
    STRAY+=("${P[@]}")
}

# 1. the issue's reproduction, on the remote node and on psrun's own
for w in 1 0; do
    run_job repro "$CDIR/o1-$w" -n 1 -w "$w" -- sh -c '(setsid sleep 300 & echo "pid $!") ; sleep 1'
    [ "$rc" -eq 0 ] && [ "$ms" -lt 5000 ] && [ ${#P[@]} -eq 1 ] && wait_until 2000 procs_gone "${P[@]}"
    check "leftovers: (setsid sleep 300 &); sleep 1 on node $w: psrun returns 0 in $ms ms, the orphan is gone" $? \
        "rc $rc, $ms ms, pids ${P[*]}, alive: $(alive_of "${P[@]}"): $(head -c 300 "$CDIR/o1-$w")"
done

# 2. a daemon that double-forks and keeps stdout and stderr; the task exits 3
cat >"$CDIR/daemon.sh" <<'EOF'
#!/bin/sh
# the task; a child of it starts the daemon in a session of its own and exits (a double
# fork): the daemon keeps the task's stdout and stderr and writes to stderr
# shellcheck disable=SC2016 # expanded by the daemon's shell
sh -c 'setsid sh -c '\''echo "pid $$"; while :; do sleep 0.1; echo tick >&2; done'\'' &'
sleep 0.3
echo "task done"
exit 3
EOF
chmod 755 "$CDIR/daemon.sh"
for w in 1 0; do
    run_job daemon "$CDIR/o2-$w" -n 1 -w "$w" -- "$CDIR/daemon.sh"
    [ "$rc" -eq 3 ] && [ "$ms" -lt 5000 ] && [ ${#P[@]} -eq 1 ] && grep -q "^task done$" "$CDIR/o2-$w" &&
        wait_until 2000 procs_gone "${P[@]}"
    check "leftovers: a double-forked daemon holding stdout and stderr on node $w: psrun returns the task's 3 in $ms ms, the daemon is gone" $? \
        "rc $rc, $ms ms, pids ${P[*]}, alive: $(alive_of "${P[@]}"): $(head -c 300 "$CDIR/o2-$w")"
done

# 3. two ranks on node 1: rank 0 leaves the daemon and exits, rank 1 runs on
# shellcheck disable=SC2016 # expanded by the task's shell
rank_sh='if [ "$PSI_RANK" = 0 ]; then exec '"$CDIR"'/daemon.sh; else sleep 3; echo "rank 1 done"; fi'
run_job two "$CDIR/o3" -n 2 -w 1 -- sh -c "$rank_sh"
[ "$rc" -eq 3 ] && [ "$ms" -lt 6000 ] && [ ${#P[@]} -eq 1 ] && grep -q "^rank 1 done$" "$CDIR/o3" &&
    grep -q "task 1:[0-9]* (rank 0) exited 1.0 s ago and something it left still holds its output open: closed" \
        "$CDIR/psid-1.log" && wait_until 2000 procs_gone "${P[@]}"
check "leftovers: rank 0 leaves a daemon, rank 1 runs 3 s: rank 0's output closed 1 s after its exit, the job ends in $ms ms, the daemon with it" $? \
    "rc $rc, $ms ms, pids ${P[*]}, alive: $(alive_of "${P[@]}"): $(head -c 300 "$CDIR/o3"); $(grep -h "still holds" "$CDIR"/psid-*.log)"

# 4. a slow reader: everything the task wrote before it exited arrives. jobdrive holds its
# acknowledgements back for 3 s: psid reads one window (256 KiB) and stops; the other 44 KiB
# wait in the pipe while the task has exited, and a leftover holds the pipe open.
# shellcheck disable=SC2016 # expanded by the task's shell
big_sh='if [ "$PSI_RANK" = 0 ]; then (setsid sleep 304 &); head -c 307200 /dev/zero; else sleep 5; fi'
t0=$(now_ms)
out=$(JOBDRIVE_NODES=1 JOBDRIVE_ACK_DELAY_MS=3000 timeout 30 "$TOP/build/test/tools/jobdrive" \
    run 2 sh -c "$big_sh")
ms=$(($(now_ms) - t0))
n=$(awk '$1 == "rank" && $2 == 0 && $3 == "out" { n += $4 } END { print n + 0 }' <<<"$out")
[ "$n" = 307200 ] && grep -q "^rank 0 exit 0$" <<<"$out"
check "leftovers: 300 KiB written before the exit reach a client that acknowledges nothing for 3 s ($n bytes, $ms ms)" $? \
    "got $n bytes: $(tail -3 <<<"$out")"
exit $((FAILS > 0))
