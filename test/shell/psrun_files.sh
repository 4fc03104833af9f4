#!/bin/bash
# psrun_files.sh - psrun -o/-e/--open-mode (issue 31 point 1) on a 4-node loopback cluster
# (2 CPUs per node):
#  - srun's patterns expand per rank and per node: %j (= PSI_JOB), %J, %t, %3t, %n, %N
#    (= PSI_NODENAME), %u, %x, %%; one file per distinct name, lines whole;
#  - stderr follows -o's file without -e; -e apart; -l labels in the files;
#  - --open-mode=truncate (default) and append;
#  - srun's modes: none, a rank number;
#  - nothing lost at the job's end: 4 ranks x 4 MB into files, checksums per rank;
#  - bad values exit 2 before anything runs (unknown pattern, %A, --open-mode, a rank out
#    of range); a file that cannot be opened names the path and the reason and starts no rank;
#  - --output-on-node: each rank's node opens the files (as the user, in the job's directory),
#    patterns expanded there (%N, %n, %t, %j), stderr following -o, -e apart, truncated once
#    per job and node or appended; a file the node cannot open fails the rank with the path.
# Every psrun runs under timeout.
# shellcheck source-path=SCRIPTDIR source=lib/cluster.sh
source "$(dirname "$0")/lib/cluster.sh"
# shellcheck source=lib/psrun.sh
source "$(dirname "$0")/lib/psrun.sh"

cluster_ready 4 psrun_files
export PSID_SOCKET=$CDIR/psid-0.sock
W=$CDIR/w
mkdir -p "$W"
cd "$W" || exit 1
me=$(id -un)

# ---- patterns per rank and per node
run "$PSRUN" -n 8 -o 'r-%j-%t-%3t-%N-%n-%u-%x-%%.out' sh -c \
    'echo "out $PSI_RANK $PSI_JOB $PSI_NODENAME"; echo "err $PSI_RANK" >&2'
ok=0
why=""
n=$(find . -name 'r-*.out' | wc -l)
[ "$n" -eq 8 ] || {
    ok=1
    why="$n files"
}
for r in $(seq 0 7); do
    f=$(find . -name "r-*-$r-$(printf %03d "$r")-*.out" | head -1)
    if [ -z "$f" ]; then
        ok=1
        why="$why; no file for rank $r"
        continue
    fi
    read -r _ rr job node <"$f"
    want="./r-$job-$r-$(printf %03d "$r")-$node-$((r / 2))-$me-sh-%.out"
    if [ "$rr" != "$r" ] || [ "$f" != "$want" ] || ! grep -qx "err $r" "$f" ||
        [ "$(wc -l <"$f")" -ne 2 ]; then
        ok=1
        why="$why; rank $r: $f (want $want): $(tr '\n' '|' <"$f")"
    fi
done
[ $RC -eq 0 ] && [ -z "$OUT" ]
check "patterns: -o with %j %t %3t %N %n %u %x %% gives each rank its file, stderr in it" \
    $((ok + $?)) "rc=$RC $why $ERR"

run "$PSRUN" -n 4 -o 'J-%J.out' true
job=$(find . -name 'J-*.0.out' | sed 's/^.\/J-//; s/\.0\.out$//')
[ $RC -eq 0 ] && [[ $job =~ ^[0-9]+:[0-9]+$ ]]
check "patterns: %J is the job id and step 0" $? "rc=$RC files: $(ls) $ERR"
rm -f J-*

settle
run "$PSRUN" -n 8 -l -o 'node-%N.out' -e 'node-%N.err' sh -c 'echo "o $PSI_RANK"; echo "e $PSI_RANK" >&2'
ok=0
why=""
for i in 0 1 2 3; do
    a=$((2 * i))
    b=$((2 * i + 1))
    o=$(sort "node-n$i.out" 2>/dev/null | tr '\n' '|')
    e=$(sort "node-n$i.err" 2>/dev/null | tr '\n' '|')
    [ "$o" = "$a: o $a|$b: o $b|" ] && [ "$e" = "$a: e $a|$b: e $b|" ] || {
        ok=1
        why="$why n$i: out '$o' err '$e'"
    }
done
check "patterns: a file per node (%N), -e apart, -l labels in the files" $((ok + RC)) "rc=$RC$why $ERR"

# ---- open modes
run "$PSRUN" -n 2 -o mode.out sh -c 'echo "first $PSI_RANK"'
run "$PSRUN" -n 2 -o mode.out sh -c 'echo "second $PSI_RANK"'
got=$(sort mode.out | tr '\n' ' ')
[ $RC -eq 0 ] && [ "$got" = "second 0 second 1 " ]
check "--open-mode: truncate by default (one file shared by the ranks)" $? "rc=$RC got '$got' $ERR"
run "$PSRUN" -n 2 --open-mode=append -o mode.out sh -c 'echo "third $PSI_RANK"'
got=$(sort mode.out | tr '\n' ' ')
[ $RC -eq 0 ] && [ "$got" = "second 0 second 1 third 0 third 1 " ]
check "--open-mode=append keeps what was there" $? "rc=$RC got '$got' $ERR"

# ---- srun's modes
run "$PSRUN" -n 4 -o none sh -c 'echo "o $PSI_RANK"; echo "e $PSI_RANK" >&2'
[ $RC -eq 0 ] && [ -z "$OUT" ] && [ -z "$ERR" ]
check "-o none: output dropped" $? "rc=$RC out '$OUT' err '$ERR'"
run "$PSRUN" -n 4 -o 2 -e none sh -c 'echo "o $PSI_RANK"; echo "e $PSI_RANK" >&2'
[ $RC -eq 0 ] && [ "$OUT" = "o 2" ] && [ -z "$ERR" ]
check "-o RANK: only that rank's output comes to psrun" $? "rc=$RC out '$OUT' err '$ERR'"

# ---- nothing lost at the end: 4 ranks x 4 MB each, no newline at the end
settle
seq 1 600000 | head -c 4000000 >"$CDIR/seq"
want=$(md5sum <"$CDIR/seq")
TMO=60 run "$PSRUN" -n 4 -o 'big-%t.out' cat "$CDIR/seq"
ok=0
for r in 0 1 2 3; do [ "$(md5sum <"big-$r.out")" = "$want" ] || ok=1; done
check "no output lost: 4 ranks x 4 MB into their files, checksums" $((ok + RC)) "rc=$RC $ERR"
rm -f big-*.out

# ---- bad values: exit 2, nothing runs
marker=$CDIR/ran
for bad in '%q' 'x-%A' 'x-%' '%123456t'; do
    run "$PSRUN" -n 2 -o "$bad" touch "$marker"
    [ $RC -eq 2 ] && [[ $ERR == *"$bad"* ]] && [ ! -e "$marker" ]
    check "bad pattern '$bad': exit 2 with a message, nothing runs" $? "rc=$RC err '$ERR'"
done
run "$PSRUN" -n 2 -e 'e-%z' touch "$marker"
[ $RC -eq 2 ] && [[ $ERR == *"unknown pattern %z"* ]] && [ ! -e "$marker" ]
check "bad pattern in -e: exit 2" $? "rc=$RC err '$ERR'"
run "$PSRUN" -n 2 --open-mode=sideways -o x touch "$marker"
[ $RC -eq 2 ] && [[ $ERR == *"--open-mode sideways"* ]] && [ ! -e "$marker" ]
check "bad --open-mode: exit 2" $? "rc=$RC err '$ERR'"
run "$PSRUN" -n 2 -o 5 touch "$marker"
[ $RC -eq 2 ] && [[ $ERR == *"not a rank"* ]] && [ ! -e "$marker" ]
check "-o RANK out of range: exit 2" $? "rc=$RC err '$ERR'"
run "$PSRUN" -n 4 -o "$CDIR/nodir/out-%t" touch "$marker"
[ $RC -eq 1 ] && [[ $ERR == *"cannot open output file $CDIR/nodir/out-0: No such file or directory"* ]] &&
    [ ! -e "$marker" ]
check "a file that cannot be opened: path and reason, no rank starts" $? "rc=$RC err '$ERR'"
# the held job left nothing behind
idle 3000
check "a refused job leaves no task" $? "tasks still counted"

# ---- --output-on-node
mkdir -p "$W/on" && cd "$W/on" || exit 1
run "$PSRUN" -n 4 -w 0,1 --output-on-node -o 'on-%N-%n-%t-%j.out' sh -c \
    'echo "out $PSI_RANK $PSI_NODENAME $PSI_JOB"; echo "err $PSI_RANK" >&2'
ok=0
for f in on-*.out; do
    [ -e "$f" ] || continue
    IFS=- read -r _ nn ni t j <<<"${f%.out}"
    # the name's node and rank are the ones the rank saw; stderr followed stdout
    if grep -qx "out $t $nn $j" "$f" && grep -qx "err $t" "$f" && [ "$(stat -c %U "$f")" = "$me" ] &&
        { [ "$nn/$ni" = n0/0 ] || [ "$nn/$ni" = n1/1 ]; }; then ok=$((ok + 1)); fi
done
[ $RC -eq 0 ] && [ "$ok" -eq 4 ] && [ -z "$OUT" ] && [ -z "$ERR" ]
check "--output-on-node: each rank's file, named and written on its node" $? \
    "rc=$RC ok=$ok $(ls) out '$OUT' err '$ERR'"
run "$PSRUN" -n 2 -w 0 --output-on-node -o 'sep-%t.out' -e 'sep-%t.err' sh -c \
    'echo "out $PSI_RANK"; echo "err $PSI_RANK" >&2'
[ $RC -eq 0 ] && [ "$(cat sep-1.out)" = "out 1" ] && [ "$(cat sep-1.err)" = "err 1" ]
check "--output-on-node: -e's file apart" $? "rc=$RC $(ls) $ERR"
for k in 1 2; do
    run "$PSRUN" -n 4 -w 0,1 --output-on-node -o 'shared-%N.out' sh -c 'echo "job'$k' $PSI_RANK"'
done
t0=$(sort shared-n0.out | tr '\n' ' ')
run "$PSRUN" -n 4 -w 0,1 --output-on-node --open-mode=append -o 'shared-%N.out' sh -c \
    'echo "job3 $PSI_RANK"'
t1=$(sort shared-n1.out | tr '\n' ' ')
[ "$t0" = "job2 0 job2 1 " ] && [ "$t1" = "job2 2 job2 3 job3 2 job3 3 " ]
check "--output-on-node: a node's shared file truncated once per job, or appended" $? \
    "n0 '$t0' n1 '$t1'"
run "$PSRUN" -n 2 -w 1 --output-on-node -o "$CDIR/nodir/on-%t" true
[ $RC -ne 0 ] && [[ $ERR == *"cannot open its output file $CDIR/nodir/on-0: No such file or directory"* ]]
check "--output-on-node: a file the node cannot open fails the rank, naming it" $? "rc=$RC $ERR"
run "$PSRUN" -n 2 --output-on-node -o 'x-%q' touch "$marker"
[ $RC -eq 2 ] && [ ! -e "$marker" ]
check "--output-on-node: an unknown pattern exits 2" $? "rc=$RC $ERR"

exit $((FAILS > 0))
