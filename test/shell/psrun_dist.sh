#!/bin/bash
# psrun_dist.sh - psrun's -m, -N, -J, --multi-prog and --exclusive (issue 31 point 3) on a
# 4-node loopback cluster (2 CPUs per node):
#  - -m block (default), cyclic, plane=N: which rank lands on which node (PSI_NODE);
#  - -N 2 (a rank per node without -n), -N 2 -n 4, -N 1-3 takes the fewest that hold it;
#  - -J: the name in psstat tasks (text and --json) and in -o's %x;
#  - --multi-prog: programs and arguments per rank, %t, %o, '*';
#  - --exclusive: refused next to another job's task, and keeps another job off its node;
#  - bad values exit 2 before anything runs.
# Every psrun runs under timeout; background ones are waited for by pid.
# shellcheck source-path=SCRIPTDIR source=lib/cluster.sh
source "$(dirname "$0")/lib/cluster.sh"
# shellcheck source=lib/psrun.sh
source "$(dirname "$0")/lib/psrun.sh"

cluster_ready 4 psrun_dist
export PSID_SOCKET=$CDIR/psid-0.sock
cd "$CDIR" || exit 1
# rank:node pairs of a job that prints "RANK NODE"
pairs() { sort -n <<<"$OUT" | awk '{printf "%s:%s ", $1, $2}'; }

for m in "block:0:0 1:0 2:1 3:1 4:2 5:2 6:3 7:3 " "cyclic:0:0 1:1 2:2 3:3 4:0 5:1 6:2 7:3 "; do
    settle
    run "$PSRUN" -n 8 -m "${m%%:*}" sh -c 'echo $PSI_RANK $PSI_NODE'
    got=$(pairs)
    [ $RC -eq 0 ] && [ "$got" = "${m#*:}" ]
    check "-m ${m%%:*}: ranks over the nodes" $? "rc=$RC got '$got' $ERR"
done
settle
run "$PSRUN" -n 6 -w 0-2 -m plane=2 sh -c 'echo $PSI_RANK $PSI_NODE'
got=$(pairs)
[ $RC -eq 0 ] && [ "$got" = "0:0 1:0 2:1 3:1 4:2 5:2 " ]
check "-m plane=2: two ranks per node in turn" $? "rc=$RC got '$got' $ERR"
settle
run "$PSRUN" -n 8 -w 0-1 --overbook --ppn 4 -m plane=3 sh -c 'echo $PSI_RANK $PSI_NODE'
got=$(pairs)
[ $RC -eq 0 ] && [ "$got" = "0:0 1:0 2:0 3:1 4:1 5:1 6:0 7:1 " ]
check "-m plane=3 on two nodes" $? "rc=$RC got '$got' $ERR"

settle
run "$PSRUN" -N 2 sh -c 'echo $PSI_RANK $PSI_NODE'
got=$(pairs)
[ $RC -eq 0 ] && [ "$got" = "0:0 1:1 " ]
check "-N 2 without -n: a rank on each of 2 nodes" $? "rc=$RC got '$got' $ERR"
settle
run "$PSRUN" -N 2 -n 4 sh -c 'echo $PSI_RANK $PSI_NODE'
got=$(pairs)
[ $RC -eq 0 ] && [ "$got" = "0:0 1:0 2:1 3:1 " ]
check "-N 2 -n 4: two nodes, filled" $? "rc=$RC got '$got' $ERR"
settle
run "$PSRUN" -N 1-3 -n 4 sh -c 'echo $PSI_NODE'
n=$(sort -u <<<"$OUT" | wc -l)
[ $RC -eq 0 ] && [ "$n" -eq 2 ]
check "-N 1-3 -n 4: the fewest nodes that hold the job (2)" $? "rc=$RC nodes $n $ERR"

# ---- -J
settle
timeout 20 "$PSRUN" -n 2 -J namedjob -o 'name-%x-%t' sh -c 'echo up; exec sleep 30' </dev/null 2>/dev/null &
jp=$!
STRAY+=("$jp")
wait_until 5000 grep -qs up name-namedjob-1
rc1=$?
txt=$(timeout 10 "$BIN/psstat" tasks 2>&1)
js=$(timeout 10 "$BIN/psstat" --json tasks 2>&1)
kill -TERM "$jp"
wait "$jp" 2>/dev/null
n=$(grep -c ' namedjob  *sh$' <<<"$txt")
[ $rc1 -eq 0 ] && [ "$n" -eq 2 ] && json_true "$js" '[.tasks[] | select(.name == "namedjob")] | length == 2'
check "-J: the name in psstat tasks, its --json and %x" $? "rc=$rc1 $txt $js"

# ---- --multi-prog
cat >"$CDIR/mp.conf" <<'CONF'
# srun's format
0      echo zero %t %o
1-2,4  echo "some ranks" %t %o
*      sh -c 'echo rest $PSI_RANK'
CONF
run "$PSRUN" -n 6 --multi-prog "$CDIR/mp.conf"
got=$(sort <<<"$OUT" | tr '\n' '|')
[ $RC -eq 0 ] && [ "$got" = "rest 3|rest 5|some ranks 1 0|some ranks 2 1|some ranks 4 2|zero 0 0|" ]
check "--multi-prog: a program per rank, %t, %o, *" $? "rc=$RC got '$got' $ERR"
printf '0 true\n' >"$CDIR/mp-short.conf"
run "$PSRUN" -n 2 --multi-prog "$CDIR/mp-short.conf"
[ $RC -eq 2 ] && [[ $ERR == *"rank 1 has no line"* ]]
check "--multi-prog: a rank without a line, exit 2" $? "rc=$RC $ERR"
printf '0-1 true\n1 false\n' >"$CDIR/mp-twice.conf"
run "$PSRUN" -n 2 --multi-prog "$CDIR/mp-twice.conf"
[ $RC -eq 2 ] && [[ $ERR == *"line 2: rank 1 has a line already"* ]]
check "--multi-prog: a rank on two lines, exit 2" $? "rc=$RC $ERR"

# ---- --exclusive
settle
timeout 20 "$PSRUN" -n 1 -w 1 sh -c 'echo up >shared.up; exec sleep 30' </dev/null >/dev/null 2>&1 &
sp=$!
STRAY+=("$sp")
wait_until 5000 test -s shared.up
run "$PSRUN" -n 1 -w 1 --exclusive true
[ $RC -ne 0 ] && [[ $ERR == *"--exclusive"* ]]
check "--exclusive: refused on a node with another job's task" $? "rc=$RC $ERR"
kill -TERM "$sp"
wait "$sp" 2>/dev/null
settle
timeout 20 "$PSRUN" -n 1 -w 2 --exclusive sh -c 'echo up >excl.up; exec sleep 30' </dev/null \
    >/dev/null 2>&1 &
xp=$!
STRAY+=("$xp")
wait_until 5000 test -s excl.up
run "$PSRUN" -n 1 -w 2 true
[ $RC -ne 0 ] && [[ $ERR == *"runs job "*" exclusively"* ]]
check "--exclusive: another job is kept off the node" $? "rc=$RC $ERR"
run "$PSRUN" -n 1 -w 3 true
check "--exclusive: other nodes take jobs" $RC "rc=$RC $ERR"
kill -TERM "$xp"
wait "$xp" 2>/dev/null
settle
run "$PSRUN" -n 1 -w 2 true
check "--exclusive: the node is shared again after the job" $RC "rc=$RC $ERR"

# ---- bad values: exit 2, nothing runs
marker=$CDIR/ran
for bad in "-m sideways" "-m plane=0" "-m arbitrary" "-N 0" "-N 3-2" "-N 5 -n 2" "-N x"; do
    # shellcheck disable=SC2086 # the option and its value are two words
    run "$PSRUN" $bad touch "$marker"
    [ $RC -eq 2 ] && [[ $ERR == "psrun: "* ]] && [ ! -e "$marker" ]
    check "bad value '$bad': exit 2 with a message" $? "rc=$RC err '$ERR'"
done

exit $((FAILS > 0))
