#!/bin/bash
# psrun.sh - psrun end to end on a 4-node loopback cluster (2 CPUs per node, kill delay 1 s):
#  - placement: -n 8 puts two ranks on every node; PSI_NODES, PSI_HOSTS, SLURM_JOB_NODELIST
#    and -w (ids, names, ranges) restrict it; --ppn; an unknown node and (at the end) a down
#    node given with -w are errors naming the node; a down node in an allocation is skipped;
#  - the tasks' environment (PSI_RANK, PSI_SIZE, PSI_TID, PSI_NODE, PSI_NODENAME, PSI_JOB,
#    PSID_SOCKET, -x, the default exports, --export-all), cwd and umask;
#  - --label output exactly; 8 ranks x 5.5 MB in order per rank (checksums); binary data on
#    stdout and stderr; stdin to rank 0, to all, to one, to none, 5 MB of it;
#  - flow control: a reader that stops blocks the task; psrun | head ends the job (SIGPIPE);
#  - exit statuses and their lines: all succeed, one fails, SIGSEGV, not found (127), not
#    executable (126), time limit (124), --kill-on-bad-exit (the SIGSEGV, not the SIGTERMs);
#  - signals: Ctrl-C once (SIGINT to every rank), twice (SIGKILL), SIGTERM with the kill
#    delay, SIGKILL to psrun leaves no task within kill_delay + 1 s;
#  - bad command lines: usage and exit 2.
# Every psrun runs under timeout; background ones are killed by pid on exit.
# shellcheck source-path=SCRIPTDIR source=lib/cluster.sh
source "$(dirname "$0")/lib/cluster.sh"
# shellcheck source=lib/psrun.sh
source "$(dirname "$0")/lib/psrun.sh"

cluster_up 4
if ! all_up 5000; then
    fail "psrun: cluster up" "not all nodes up after 5 s"
    exit 1
fi
export PSID_SOCKET=$CDIR/psid-0.sock
cd "$CDIR" || exit 1

# ---- placement and partitions
run "$PSRUN" -n 8 sh -c 'echo $PSI_RANK $PSI_NODE'
got=$(echo "$OUT" | per_node)
[ $RC -eq 0 ] && [ "$got" = "0:2 1:2 2:2 3:2 " ]
check "placement: -n 8 on 4 nodes of 2 CPUs: two ranks per node" $? "rc=$RC nodes: $got $ERR"

run "$PSRUN" -v -n 8 true
n=$(grep -cE '^psrun: rank [0-7]: node [0-3] \(n[0-3]\), task [0-3]:[0-9]+$' <<<"$ERR")
[ $RC -eq 0 ] && [ "$n" -eq 8 ]
check "placement: -v prints rank, node and task id" $? "rc=$RC lines=$n: $ERR"

settle
PSI_NODES=1,3 run "$PSRUN" -n 4 sh -c 'echo $PSI_RANK $PSI_NODE'
got=$(echo "$OUT" | per_node)
[ $RC -eq 0 ] && [ "$got" = "1:2 3:2 " ]
check "partition: PSI_NODES=1,3" $? "rc=$RC nodes: $got $ERR"

settle
SLURM_JOB_NODELIST='n[0,2]' run "$PSRUN" -n 4 sh -c 'echo $PSI_RANK $PSI_NODE'
got=$(echo "$OUT" | per_node)
[ $RC -eq 0 ] && [ "$got" = "0:2 2:2 " ]
check "partition: SLURM_JOB_NODELIST=n[0,2]" $? "rc=$RC nodes: $got $ERR"

settle
PSI_HOSTS="n3" SLURM_JOB_NODELIST='n[0-1]' run "$PSRUN" -n 2 sh -c 'echo $PSI_RANK $PSI_NODE'
got=$(echo "$OUT" | per_node)
[ $RC -eq 0 ] && [ "$got" = "3:2 " ]
check "partition: PSI_HOSTS before SLURM_JOB_NODELIST" $? "rc=$RC nodes: $got $ERR"

settle
PSI_NODES=0 run "$PSRUN" -w 1-2 --ppn 1 -n 2 sh -c 'echo $PSI_RANK $PSI_NODE'
got=$(echo "$OUT" | per_node)
[ $RC -eq 0 ] && [ "$got" = "1:1 2:1 " ]
check "partition: -w 1-2 --ppn 1 wins over PSI_NODES" $? "rc=$RC nodes: $got $ERR"

settle
run "$PSRUN" -w 'n[2]' -n 3 --overbook sh -c 'echo $PSI_RANK $PSI_NODE'
got=$(echo "$OUT" | per_node)
[ $RC -eq 0 ] && [ "$got" = "2:3 " ]
check "partition: -w n[2] --overbook, 3 ranks on one node" $? "rc=$RC nodes: $got $ERR"

run "$PSRUN" -w n1,n9 true
[ $RC -eq 1 ] && grep -q "n9" <<<"$ERR" && grep -q "not in the cluster" <<<"$ERR"
check "partition: unknown node is an error naming it" $? "rc=$RC: $ERR"

SLURM_JOB_NODELIST='x[1-2]' run "$PSRUN" true
[ $RC -eq 1 ] && grep -q "SLURM_JOB_NODELIST: node 'x1'" <<<"$ERR"
check "partition: unknown node in SLURM_JOB_NODELIST" $? "rc=$RC: $ERR"

# ---- environment, cwd, umask
mkdir -p "$CDIR/work dir"
cd "$CDIR/work dir" || exit 1
SECRET=s3 OMP_NUM_THREADS=3 run sh -c "umask 027; exec $PSRUN -n 2 -w 1 -x FOO=bar -x SECRET2 \
    sh -c 'echo \"\$PSI_RANK|\$PSI_SIZE|\$PSI_TID|\$PSI_NODE|\$PSI_NODENAME|\$PSI_JOB|\$PSID_SOCKET|\$FOO|\$OMP_NUM_THREADS|\${SECRET-unset}|\$(pwd)|\$(umask)\"'"
cd "$CDIR" || exit 1
r0=$(grep '^0|' <<<"$OUT")
r1=$(grep '^1|' <<<"$OUT")
IFS='|' read -r rank0 size tid node nname job sock foo omp secret cwd mask <<<"$r0"
ok=0
[ $RC -eq 0 ] && [ "$rank0" = 0 ] && [ "$size" = 2 ] && [ "$node" = 1 ] && [ "$nname" = n1 ] &&
    [ "$sock" = "$CDIR/psid-1.sock" ] && [[ $tid =~ ^1:[0-9]+$ ]] && [[ $job =~ ^0:[0-9]+$ ]] &&
    [ "$foo" = bar ] && [ "$omp" = 3 ] && [ "$secret" = unset ] && [ "$cwd" = "$CDIR/work dir" ] &&
    [ "$mask" = 0027 ] && grep -q "|$job|" <<<"$r1" && ! grep -q "|$tid|" <<<"$r1" || ok=1
check "environment: PSI_* and PSID_SOCKET, -x, defaults, cwd, umask" $ok "rc=$RC: $OUT $ERR"

SECRET=s3 run "$PSRUN" --export-all sh -c 'echo ${SECRET-unset}'
[ $RC -eq 0 ] && [ "$OUT" = s3 ]
check "environment: --export-all" $? "rc=$RC: $OUT $ERR"

# ---- output
run "$PSRUN" -n 3 -l sh -c 'printf "a\nb\n\n"; printf "tail"; printf "e1\ne2" >&2'
want_out=$(printf '0: a\n0: b\n0: \n0: tail\n1: a\n1: b\n1: \n1: tail\n2: a\n2: b\n2: \n2: tail')
want_err=$(printf '0: e1\n0: e2\n1: e1\n1: e2\n2: e1\n2: e2')
got_out=$(sort -s -t: -k1,1n <<<"$OUT")
got_err=$(sort -s -t: -k1,1n <<<"$ERR")
[ $RC -eq 0 ] && [ "$got_out" = "$want_out" ] && [ "$got_err" = "$want_err" ]
check "output: --label exact, partial last lines ended" $? "rc=$RC out: $OUT err: $ERR"

run "$PSRUN" -n 1 sh -c 'printf "no newline"'
[ $RC -eq 0 ] && [ "$(od -c "$CDIR/out" | head -1)" = "$(printf 'no newline' | od -c | head -1)" ]
check "output: without --label bytes are exact" $? "rc=$RC: $(od -c "$CDIR/out")"

t0=$(now_ms)
timeout -k 2 60 "$PSRUN" -n 8 -l sh -c 'seq 1 500000 | sed "s/^/r$PSI_RANK /"' >"$CDIR/big" 2>"$CDIR/err" </dev/null
RC=$?
ms=$(($(now_ms) - t0))
seq 1 500000 >"$CDIR/seq"
bad=""
for r in 0 1 2 3 4 5 6 7; do
    a=$(grep "^$r: " "$CDIR/big" | sed "s/^$r: r$r //" | md5sum)
    b=$(md5sum <"$CDIR/seq")
    [ "$a" = "$b" ] || bad="$bad $r"
done
torn=$(grep -cvE '^[0-7]: r[0-7] [0-9]+$' "$CDIR/big")
[ $RC -eq 0 ] && [ -z "$bad" ] && [ "$torn" -eq 0 ]
check "output: 8 ranks x $(($(stat -c %s "$CDIR/big") / 8 / 1000)) kB complete, in order, no torn line ($ms ms)" $? \
    "rc=$RC ranks wrong:$bad torn lines: $torn $(head -c 300 "$CDIR/err")"
rm -f "$CDIR/big" "$CDIR/seq"

head -c 5000000 /dev/urandom >"$CDIR/rand"
want=$(md5sum <"$CDIR/rand")
got=$(timeout 30 "$PSRUN" -n 1 -w 2 cat "$CDIR/rand" </dev/null | md5sum)
got2=$(timeout 30 "$PSRUN" -n 1 -w 3 sh -c 'cat "$0" >&2' "$CDIR/rand" 2>&1 >/dev/null </dev/null | md5sum)
[ "$got" = "$want" ] && [ "$got2" = "$want" ]
check "output: 5 MB of binary data on stdout and stderr of a remote rank" $? "md5 $got / $got2 != $want"

# ---- stdin
printf 'line1\nline2\n' >"$CDIR/in"
got=$(timeout 30 "$PSRUN" -n 3 -l sh -c 'cat' <"$CDIR/in" 2>&1)
[ "$got" = "$(printf '0: line1\n0: line2')" ]
check "stdin: to rank 0 by default" $? "got: $got"
got=$(timeout 30 "$PSRUN" -n 3 -l -i all cat <"$CDIR/in" 2>&1 | sort)
[ "$got" = "$(printf '0: line1\n0: line2\n1: line1\n1: line2\n2: line1\n2: line2')" ]
check "stdin: --input all" $? "got: $got"
got=$(timeout 30 "$PSRUN" -n 3 -l -i 2 cat <"$CDIR/in" 2>&1)
[ "$got" = "$(printf '2: line1\n2: line2')" ]
check "stdin: --input 2" $? "got: $got"
got=$(timeout 30 "$PSRUN" -n 2 -l -i none sh -c 'cat; echo eof' <"$CDIR/in" 2>&1 | sort)
[ "$got" = "$(printf '0: eof\n1: eof')" ]
check "stdin: --input none" $? "got: $got"
got=$(timeout 30 "$PSRUN" -n 1 -w 3 cat <"$CDIR/rand" 2>&1 | md5sum)
[ "$got" = "$want" ]
check "stdin: 5 MB to a remote rank, in order" $? "md5 $got != $want"
got=$(timeout 30 "$PSRUN" -n 4 -i all -w 1-2 --overbook md5sum <"$CDIR/rand" 2>&1 | sort -u)
[ "$got" = "$want" ]
check "stdin: 5 MB to all of 4 ranks" $? "got: $got"

# ---- flow control
# The task writes 500 blocks of 100 kB and counts them in a file; psrun's reader takes
# nothing until told. With flow control the count stops far below 500 (a pipe, psrun's
# window and psid's 256 KiB hold about a megabyte); without it the task writes all of it
# into psrun's memory. Then the reader takes everything: nothing lost.
rm -f "$CDIR/progress" "$CDIR/go"
( (timeout 120 "$PSRUN" -n 1 -w 2 sh -c "i=0; while [ \$i -lt 500 ]; do head -c 100000 /dev/zero; i=\$((i + 1)); echo \$i >'$CDIR/progress'; done" </dev/null; echo $? >"$CDIR/fcrc") |
    (until [ -e "$CDIR/go" ]; do sleep 0.05; done; wc -c >"$CDIR/count")) &
fcpid=$!
PIDS+=("$fcpid")
blocks() { cat "$CDIR/progress" 2>/dev/null || echo 0; }
last=-1
# the count has not moved for 1 s, or it reached the end
stalled() {
    local now
    now=$(blocks)
    [ "$now" = 500 ] && return 0
    if [ "$now" = "$last" ] && [ $(($(now_ms) - since)) -ge 1000 ]; then return 0; fi
    [ "$now" != "$last" ] && last=$now since=$(now_ms)
    return 1
}
since=$(now_ms)
wait_until 30000 stalled
held=$(blocks)
touch "$CDIR/go"
wait "$fcpid"
[ "$held" -gt 0 ] && [ "$held" -lt 100 ] && [ "$(cat "$CDIR/count")" = 50000000 ] && [ "$(blocks)" = 500 ]
check "flow control: a reader that stops blocks the task ($held of 500 blocks written); nothing lost" $? \
    "held $held, count $(cat "$CDIR/count" 2>/dev/null), blocks $(blocks), psrun rc $(cat "$CDIR/fcrc" 2>/dev/null)"

t0=$(now_ms)
got=$( (timeout 20 "$PSRUN" -n 2 yes 2>/dev/null </dev/null; echo $? >"$CDIR/rc") | head -n 1)
rc=$(cat "$CDIR/rc")
ms=$(($(now_ms) - t0))
[ "$got" = y ] && [ "$ms" -lt 10000 ] && [ "$rc" -eq 141 ]
check "flow control: psrun | head ends the job with SIGPIPE ($ms ms)" $? "rc=$rc got=$got"

# ---- exit statuses
run "$PSRUN" -n 4 true
[ $RC -eq 0 ] && [ -z "$ERR" ]
check "exit: all ranks succeed -> 0, nothing on stderr" $? "rc=$RC: $ERR"

run "$PSRUN" -n 4 sh -c 'exit $((PSI_RANK == 2 ? 7 : 0))'
[ $RC -eq 7 ] && [ "$(wc -l <<<"$ERR")" -eq 1 ] &&
    grep -qE '^psrun: rank 2 \(node n[0-3], task [0-3]:[0-9]+\): exited with status 7$' <<<"$ERR"
check "exit: one rank fails -> its code and one line" $? "rc=$RC: $ERR"

run "$PSRUN" -n 2 sh -c '[ $PSI_RANK = 1 ] && kill -SEGV $$; exit 0'
[ $RC -eq 139 ] && grep -qE '^psrun: rank 1 \(node n[0-3], task [0-3]:[0-9]+\): killed by signal 11 \(SIGSEGV\)' <<<"$ERR"
check "exit: SIGSEGV -> 139 and the signal's name" $? "rc=$RC: $ERR"

run "$PSRUN" -n 2 /nonexistent/prog
[ $RC -eq 127 ] && [ "$(grep -c 'cannot execute /nonexistent/prog: No such file or directory' <<<"$ERR")" -eq 2 ]
check "exit: program not found -> 127" $? "rc=$RC: $ERR"

printf '#!/bin/sh\necho hi\n' >"$CDIR/noexec"
chmod 644 "$CDIR/noexec"
run "$PSRUN" -n 1 "$CDIR/noexec"
[ $RC -eq 126 ] && grep -q "rank 0 (node n[0-3]): cannot execute $CDIR/noexec: Permission denied" <<<"$ERR"
check "exit: not executable -> 126" $? "rc=$RC: $ERR"

# an argument list near the 1 MiB limit: too long for psrun's own request -> the size and
# the limit, at once; just short enough for the request but not for the nodes' spawn
# message (a few fields more) -> psid says so at once, no hang; shorter -> it runs
bigargs() { # bigargs BYTES: arguments of 100000 bytes and a rest, BYTES in all
    local n=$1 chunk
    chunk=$(head -c 100000 /dev/zero | tr '\0' a)
    ARGS=()
    while ((n > 100000)); do
        ARGS+=("$chunk")
        n=$((n - 100000))
    done
    ARGS+=("${chunk:0:n}")
}
bigargs 1048576
run timeout 20 "$PSRUN" -n 1 -w 1 true "${ARGS[@]}"
over=$(sed -n 's/^psrun: argument list too long for a spawn (\([0-9]*\) bytes with the environment, limit 1048576)$/\1/p' <<<"$ERR")
[ $RC -eq 1 ] && [ -n "$over" ]
check "argv over 1 MiB: psrun names the size and the limit, exit 1" $? "rc=$RC: $ERR"
if [ -n "$over" ]; then
    bigargs $((1048576 - (over - 1048576) - 8)) # the request: 8 bytes under the limit
    t0=$(now_ms)
    run timeout 20 "$PSRUN" -n 1 -w 1 true "${ARGS[@]}"
    [ $RC -eq 1 ] && [ $(($(now_ms) - t0)) -lt 5000 ] &&
        grep -q "^psrun: cannot start the job: argument list too long for a spawn ([0-9]* bytes, limit 1048576)$" <<<"$ERR"
    check "argv just under 1 MiB: too long for the nodes' spawn message, said at once" $? \
        "rc=$RC after $(($(now_ms) - t0)) ms: $ERR"
    # (the home counts what each node adds: the frame to its privileged child carries the
    # rank's own variables, up to RANK_ENV_MAX, 1 KiB)
    bigargs $((1048576 - (over - 1048576) - 2048))
    run timeout 20 "$PSRUN" -n 1 -w 1 true "${ARGS[@]}"
    check "argv 2 KiB shorter: it runs" $RC "rc=$RC: $ERR"
fi

# the working directory: -D, and a rank that cannot change to it says so (not "cannot
# execute": psid's text names the directory)
run "$PSRUN" -n 1 -D /tmp pwd
[ $RC -eq 0 ] && [ "$OUT" = /tmp ]
check "-D DIR: the ranks run in DIR" $? "rc=$RC: $OUT $ERR"
run "$PSRUN" -n 1 -D /nonexistent/dir true
[ $RC -ne 0 ] && grep -q "rank 0 (node n[0-3]): cannot change to the directory /nonexistent/dir: No such file or directory" <<<"$ERR" &&
    ! grep -q "cannot execute" <<<"$ERR"
check "a directory that does not exist: named as such" $? "rc=$RC: $ERR"
if [ "$(id -u)" = 0 ] && command -v runuser >/dev/null; then
    mkdir -m 700 "$CDIR/private"
    OUT=$(cd / && runuser -u nobody -- env PSID_SOCKET="$PSID_SOCKET" timeout 20 "$PSRUN" -n 1 -D "$CDIR/private" true 2>&1)
    RC=$?
    [ $RC -ne 0 ] && grep -q "cannot change to the directory $CDIR/private: Permission denied" <<<"$OUT"
    check "a directory the user cannot enter: named, with Permission denied" $? "rc=$RC: $OUT"
else
    echo "SKIP: psrun: a directory the user cannot enter (needs root)"
fi

t0=$(now_ms)
run "$PSRUN" -t 1 -n 2 sleep 20
ms=$(($(now_ms) - t0))
[ $RC -eq 124 ] && grep -q "time limit" <<<"$ERR" && [ "$ms" -lt 4000 ]
check "exit: time limit -> 124 ($ms ms)" $? "rc=$RC after $ms ms: $ERR"

run "$PSRUN" -K -n 4 sh -c '[ $PSI_RANK = 2 ] && kill -SEGV $$; exec sleep 20'
first=$(grep -m1 'rank [0-9] (' <<<"$ERR")
[ $RC -eq 139 ] && grep -q "rank 2 (node" <<<"$first" && grep -q SIGSEGV <<<"$first" &&
    [ "$(grep -c 'SIGTERM' <<<"$ERR")" -eq 3 ]
check "exit: --kill-on-bad-exit ends the job; the SIGSEGV decides, not the SIGTERMs" $? "rc=$RC: $ERR"

# ---- signals
# a script's background jobs ignore SIGINT; perl restores the default so psrun catches it
nointr() { exec perl -e '$SIG{INT} = "DEFAULT"; exec @ARGV or die' -- "$@"; }
bg_psrun() { # bg_psrun FILE ARGS...: psrun in the background (bounded by -t), -v output to FILE
    local f=$1
    shift
    nointr "$PSRUN" -t 30 -v "$@" >"$f" 2>&1 </dev/null &
    BGPID=$!
    PIDS+=("$BGPID")
}
ranks_up() { [ "$(grep -c 'task [0-9]*:' "$1")" -ge "$2" ]; }
# readies FILE N: N ranks said "ready" (after installing their traps: no hedge sleep)
readies() { [ "$(grep -cE '(^|: )ready$' "$1")" -ge "$2" ]; }
task_pids() { grep -o 'task [0-9]*:[0-9]*' "$1" | sed 's/.*://' | sort -u; }

bg_psrun "$CDIR/int1" -n 4 -l sh -c 'trap "echo got INT; exit 3" INT; echo ready; while :; do sleep 0.05; done'
wait_until 5000 readies "$CDIR/int1" 4
kill -INT "$BGPID"
wait "$BGPID"
rc=$?
[ $rc -eq 3 ] && [ "$(grep -c ': got INT' "$CDIR/int1")" -eq 4 ] && grep -q "interrupt" "$CDIR/int1"
check "signals: Ctrl-C once -> SIGINT to every rank" $? "rc=$rc: $(cat "$CDIR/int1")"

bg_psrun "$CDIR/int2" -n 4 -l sh -c 'trap "echo got INT" INT; echo ready; while :; do sleep 0.05; done'
wait_until 5000 readies "$CDIR/int2" 4
t0=$(now_ms)
kill -INT "$BGPID"
sleep 0.3
kill -INT "$BGPID"
wait "$BGPID"
rc=$?
ms=$(($(now_ms) - t0))
[ $rc -eq 137 ] && [ "$(grep -c 'SIGKILL' "$CDIR/int2")" -eq 4 ] && [ "$ms" -lt 3000 ]
check "signals: Ctrl-C twice within a second -> SIGKILL ($ms ms)" $? "rc=$rc: $(cat "$CDIR/int2")"

# the ranks' children (background jobs of a non-interactive shell ignore SIGINT) keep the
# output open: the second Ctrl-C's SIGKILL reaches each rank's whole process group, so psrun
# ends at once with the first failure (the shells' SIGINT: 130) and no child survives
bg_psrun "$CDIR/int3" -n 2 -w 1 sh -c 'sleep 25 & echo $! >"$0.$PSI_RANK"; echo ready; wait; echo x' "$CDIR/child"
wait_until 5000 readies "$CDIR/int3" 2
t0=$(now_ms)
kill -INT "$BGPID"
sleep 0.2
kill -INT "$BGPID"
wait "$BGPID"
rc=$?
ms=$(($(now_ms) - t0))
survivors=0
for c in "$CDIR/child.0" "$CDIR/child.1"; do
    # a zombie is dead (orphans go to init, which may reap them late)
    st=$(awk '{print $3}' "/proc/$(cat "$c")/stat" 2>/dev/null)
    [ -n "$st" ] && [ "$st" != Z ] && survivors=$((survivors + 1))
done
kill -KILL "$(cat "$CDIR/child.0")" "$(cat "$CDIR/child.1")" 2>/dev/null
[ $rc -eq 130 ] && [ "$ms" -lt 3500 ] && [ $survivors -eq 0 ]
check "signals: Ctrl-C twice ends the ranks and their children ($ms ms)" $? \
    "rc=$rc, $survivors children alive: $(cat "$CDIR/int3")"

bg_psrun "$CDIR/term" --kill-delay 1 -n 4 sh -c 'trap "" TERM; echo ready; exec sleep 30'
wait_until 5000 readies "$CDIR/term" 4
t0=$(now_ms)
kill -TERM "$BGPID"
wait "$BGPID"
rc=$?
ms=$(($(now_ms) - t0))
[ $rc -eq 137 ] && [ "$ms" -ge 900 ] && [ "$ms" -lt 3000 ] && grep -q "SIGKILL" "$CDIR/term"
check "signals: SIGTERM forwarded, SIGKILL after the kill delay ($ms ms)" $? "rc=$rc: $(cat "$CDIR/term")"

bg_psrun "$CDIR/kill" -n 4 sh -c 'trap "" TERM; echo ready; exec sleep 30'
wait_until 5000 readies "$CDIR/kill" 4
pids=$(task_pids "$CDIR/kill")
alive() {
    local p
    for p in $pids; do kill -0 "$p" 2>/dev/null && return 0; done
    return 1
}
t0=$(now_ms)
disown "$BGPID" # no "Killed" notice from bash
kill -KILL "$BGPID"
wait_until 4000 eval '! alive'
ms=$(($(now_ms) - t0))
[ -n "$pids" ] && ! alive && [ "$ms" -lt 2000 ]
check "signals: SIGKILL to psrun leaves no task after kill_delay + 1 s ($ms ms)" $? \
    "tasks $pids; alive after $ms ms"

# ---- bad command lines
bad=""
for args in "" "-n 0 true" "-n x true" "-n 2 -i 5 true" "--bogus true" "-t -1 true" "-i some true"; do
    # shellcheck disable=SC2086
    run "$PSRUN" $args
    [ $RC -eq 2 ] && grep -q "usage\|psrun:" <<<"$ERR" || bad+="'$args': rc=$RC: $ERR; "
done
[ -z "$bad" ]
check "bad input: psrun usage errors exit 2" $? "$bad"
run "$PSRUN" --help
[ $RC -eq 0 ] && grep -q "^usage: psrun" <<<"$OUT"
check "bad input: psrun --help" $? "rc=$RC"
PSID_SOCKET=$CDIR/nonexistent.sock run "$PSRUN" true
[ $RC -eq 1 ] && grep -q "cannot reach psid" <<<"$ERR"
check "bad input: no psid -> exit 1" $? "rc=$RC: $ERR"

# ---- a node that is lost while the job runs, then is down
bg_psrun "$CDIR/lost" -n 2 -w 2-3 --ppn 1 sleep 8
wait_until 5000 ranks_up "$CDIR/lost" 2 && sleep 0.2
pids=$(task_pids "$CDIR/lost")
t0=$(now_ms)
kill_node 3 KILL
wait "$BGPID"
rc=$?
ms=$(($(now_ms) - t0))
for p in $pids; do kill -KILL "$p" 2>/dev/null; done # the lost node's task has no psid
grep -qE '^psrun: rank 1 \(node n3, task 3:[0-9]+\): node lost$' "$CDIR/lost" &&
    grep -q "rank 0 (node n2, task 2:[0-9]*): killed by signal 15" "$CDIR/lost" && [ $rc -eq 255 ]
check "exit: node lost -> 255, a line for the rank, the job ended ($ms ms)" $? \
    "rc=$rc: $(cat "$CDIR/lost")"
if wait_state 0 3 down 3000 >/dev/null; then
    run "$PSRUN" -w n2,n3 true
    [ $RC -eq 1 ] && grep -q "n3" <<<"$ERR" && grep -q "down" <<<"$ERR"
    check "partition: -w with a down node is an error naming it" $? "rc=$RC: $ERR"
    settle
    SLURM_JOB_NODELIST='n[2-3]' run "$PSRUN" -n 2 sh -c 'echo $PSI_RANK $PSI_NODE'
    got=$(echo "$OUT" | per_node)
    [ $RC -eq 0 ] && [ "$got" = "2:2 " ] && grep -q "n3.*down" <<<"$ERR"
    check "partition: a down node of an allocation is skipped with a warning" $? "rc=$RC $got: $ERR"
else
    fail "partition: down node" "node 3 not seen down"
fi

exit $((FAILS > 0))
