#!/bin/bash
# mpi_pmi.sh - MPI programs under psrun: psid's PMI server (issue 30, docs/pmi.md), on a
# pslocal loopback cluster of 4 nodes (2 CPUs each), with Debian's MPICH (test/mpi/):
#  - hello and MPI_Allreduce at 8 ranks (2 per node) and 32 (--overbook): every rank says
#    "hello R of N" and checks the sum; a ring of Send/Recv over 2 nodes;
#  - the PMI-1 wire, step by step from a raw client (test/tools/pmichat), against the golden
#    transcript test/shell/golden/mpi_pmi1.txt: init, maxes, appnum, kvsname, universe,
#    a missing key (rc=-1), put / fence / get across nodes, PMI_process_mapping
#    ((vector,(0,2,2)) for 2 nodes of 2 ranks), spawn refused with a reason, finalize;
#  - PMI_DEBUG=1 exported: psrun shows psid's side of the same exchange (every request and
#    answer, per rank) against test/shell/golden/mpi_pmi1_psid.txt; and for MPICH's hello
#    (whose own PMI client prints nothing) each rank's transcript from init to finalize_ack;
#  - PMI-2 (--mpi=pmi2): fullinit, kvs-put / kvs-fence / kvs-get, info-getjobattr;
#  - malformed input: a line over 1024 bytes, a key or value over its limit, another KVS
#    name, no cmd=, a token without '=': each gets an error answer with its reason, the
#    channel goes on, no psid dies;
#  - MPI_Abort(3): psrun exits 3 and names the rank; a rank SIGKILLed while the others wait
#    in MPI_Barrier: the job ends within 1 s, psrun names the rank and the signal, no rank is
#    left; a rank that exits 0 without MPI_Finalize: the job ends with a message, exit 1;
#  - --mpi=none: the ranks are singletons (what psrun did before); no PMI_PORT ever.
# Every wait is bounded; the cluster goes down (by its pid files) on exit.
set -u

name=mpi_pmi
# shellcheck source-path=SCRIPTDIR source=lib/pslocal.sh
. "$(dirname "$0")/lib/pslocal.sh"
MPI=$ROOT/build/test/mpi
CHAT=$ROOT/build/test/tools/pmichat
GOLDEN=$ROOT/test/shell/golden
if [[ ! -x $MPI/mpi_hello || ! -x $MPI/mpi_fail || ! -x $CHAT ]]; then
    echo "SKIP: $name: build/test/mpi (mpicc: scripts/install-deps.sh --check) or pmichat not built"
    exit 0
fi

cluster_tmp_up 4 mpi-pmi
PSIDS_BEFORE=$(psids_of "$D" | sort | tr '\n' ' ')
now_ms() { echo $(($(date +%s%N) / 1000000)); }
procs_gone() { # PID...: none runs (a zombie counts as gone)
    local p
    for p in "$@"; do
        [[ -r /proc/$p/stat && $(cut -d' ' -f3 "/proc/$p/stat" 2>/dev/null) != Z ]] && return 1
    done
    return 0
}
# run OUT ARGS...: psrun ARGS (bounded to 60 s), output in OUT, status in RC
run() { psrun_in 60 "$@"; }

# --- hello, allreduce, ring
hello_ok() { # FILE N: every rank's hello and a right sum
    local f=$1 n=$2 r want=$(($2 * ($2 + 1) / 2))
    for ((r = 0; r < n; r++)); do
        grep -q "^hello $r of $n on " "$f" && grep -q "^sum $r $want ok$" "$f" || return 1
    done
    [[ $(grep -c '^hello ' "$f") == "$n" ]]
}
run "$TMP/h8" -n 8 "$MPI/mpi_hello"
[[ $RC == 0 ]] && hello_ok "$TMP/h8" 8
check "hello + Allreduce at 8 ranks on 4 nodes: every rank right (rc $RC)" [ $? = 0 ]
[[ $RC == 0 ]] || cat "$TMP/h8"
run "$TMP/h32" -n 32 --overbook "$MPI/mpi_hello"
[[ $RC == 0 ]] && hello_ok "$TMP/h32" 32
check "hello + Allreduce at 32 ranks on 4 nodes: every rank right (rc $RC)" [ $? = 0 ]
[[ $RC == 0 ]] || tail -20 "$TMP/h32"
run "$TMP/ring" -n 4 -w 0,1 "$MPI/mpi_fail" ring
[[ $RC == 0 ]] && grep -q "^ring 12 ok$" "$TMP/ring"
check "ring of Send/Recv, 4 ranks on 2 nodes (rc $RC)" [ $? = 0 ]

# --- the PMI-1 wire against the golden transcript (2 nodes of 2 ranks)
run "$TMP/p1raw" -n 4 -w 0,1 --label "$CHAT" "cmd=init pmi_version=1 pmi_subversion=1" \
    cmd=get_maxes cmd=get_appnum cmd=get_my_kvsname cmd=get_universe_size \
    "cmd=get kvsname=%K key=k%N" "cmd=put kvsname=%K key=k%R value=v%R" cmd=barrier_in \
    "cmd=get kvsname=%K key=k%N" "cmd=get kvsname=%K key=PMI_process_mapping" \
    -n:mcmd=spawn -n:nprocs=1 -n:execname=/bin/true -n:totspawns=1 -n:spawnssofar=1 endcmd \
    cmd=finalize
sort -s -n -k1,1 "$TMP/p1raw" | grep -v '^psrun: ' >"$TMP/p1"
[[ $RC == 0 ]] && diff -u "$GOLDEN/mpi_pmi1.txt" "$TMP/p1" >"$TMP/p1.diff"
check "PMI-1 transcript of 4 ranks on 2 nodes matches golden/mpi_pmi1.txt (rc $RC)" [ $? = 0 ]
[[ -s $TMP/p1.diff ]] && head -30 "$TMP/p1.diff"
grep -q "MPI_Comm_spawn (PMI spawn) is not supported under psrun" "$TMP/p1raw"
check "spawn: the rank gets an error with the reason, psrun says so" [ $? = 0 ]

# --- PMI_DEBUG: psid's transcript, per rank in order (ranks interleave), the KVS name as %K
P1_CMDS=("cmd=init pmi_version=1 pmi_subversion=1" cmd=get_maxes cmd=get_appnum
    cmd=get_my_kvsname cmd=get_universe_size "cmd=get kvsname=%K key=k%N"
    "cmd=put kvsname=%K key=k%R value=v%R" cmd=barrier_in "cmd=get kvsname=%K key=k%N"
    "cmd=get kvsname=%K key=PMI_process_mapping" -n:mcmd=spawn -n:nprocs=1
    -n:execname=/bin/true -n:totspawns=1 -n:spawnssofar=1 endcmd cmd=finalize)
transcript() { # FILE: psrun's pmi[R] lines as "R: > ..." sorted by rank, in order
    sed -n 's/^psrun: pmi\[\([0-9]*\)\] /\1: /p' "$1" | sed 's/kvs_[0-9]*_[0-9]*/%K/g' |
        sort -s -n -k1,1
}
run "$TMP/dbgraw" -n 4 -w 0,1 -x PMI_DEBUG=1 "$CHAT" "${P1_CMDS[@]}"
transcript "$TMP/dbgraw" >"$TMP/dbg"
[[ $RC == 0 ]] && diff -u "$GOLDEN/mpi_pmi1_psid.txt" "$TMP/dbg" >"$TMP/dbg.diff"
check "PMI_DEBUG=1: psid's transcript of 4 ranks on 2 nodes matches golden/mpi_pmi1_psid.txt (rc $RC)" \
    [ $? = 0 ]
[[ -s $TMP/dbg.diff ]] && head -30 "$TMP/dbg.diff"
run "$TMP/dbgoff" -n 2 -w 0,1 "$CHAT" "${P1_CMDS[@]}"
[[ $RC == 0 ]] && ! grep -q '^psrun: pmi\[' "$TMP/dbgoff"
check "without PMI_DEBUG no transcript (rc $RC)" [ $? = 0 ]
many=("cmd=init pmi_version=1 pmi_subversion=1")
for ((i = 0; i < 4000; i++)); do many+=(cmd=get_maxes); done
run "$TMP/dbgcut" -n 1 -x PMI_DEBUG=1 "$CHAT" "${many[@]}" cmd=finalize
shown=$(grep -c '^psrun: pmi\[0\] < cmd=maxes ' "$TMP/dbgcut")
[[ $RC == 0 && $(grep -c '^< cmd=maxes ' "$TMP/dbgcut") == 4000 && $shown -gt 1000 && $shown -lt 4000 ]] &&
    grep -q 'PMI_DEBUG: the transcript of this node is cut here (256 KiB per job and node)' "$TMP/dbgcut"
check "PMI_DEBUG: the transcript is cut at 256 KiB per job and node, with a note; the rank gets every answer ($shown of 4000 shown, rc $RC)" \
    [ $? = 0 ]
run "$TMP/dbgmpi" -n 4 -w 0,1 -x PMI_DEBUG=1 "$MPI/mpi_hello"
transcript "$TMP/dbgmpi" >"$TMP/dbgm"
ok=0
for r in 0 1 2 3; do
    grep "^$r: " "$TMP/dbgm" >"$TMP/dbgm.$r"
    [[ $(head -1 "$TMP/dbgm.$r") == "$r: > cmd=init pmi_version=1 pmi_subversion=1" &&
        $(tail -1 "$TMP/dbgm.$r") == "$r: < cmd=finalize_ack rc=0" &&
        $(grep -c '> cmd=barrier_in$' "$TMP/dbgm.$r") == $(grep -c '> cmd=barrier_in$' "$TMP/dbgm.0") &&
        $(grep -c '< cmd=barrier_out rc=0$' "$TMP/dbgm.$r") == $(grep -c '> cmd=barrier_in$' "$TMP/dbgm.$r") ]] || ok=1
done
[[ $RC == 0 ]] && hello_ok "$TMP/dbgmpi" 4 && [[ $ok == 0 ]]
check "PMI_DEBUG=1 with MPICH's hello: every rank's transcript from init to finalize_ack, a barrier_out per barrier_in (rc $RC)" \
    [ $? = 0 ]

# --- PMI-2
run "$TMP/p2" -n 4 -w 0,1 --mpi=pmi2 --label "$CHAT" "cmd=init pmi_version=2 pmi_subversion=0" \
    "-2:cmd=fullinit;pmirank=%R;" "-2:cmd=kvs-put;key=k%R;value=v;;%R;" "-2:cmd=kvs-fence;" \
    "-2:cmd=kvs-get;key=k%N;" "-2:cmd=info-getjobattr;key=PMI_process_mapping;" \
    "-2:cmd=finalize;"
ok=0
for r in 0 1 2 3; do
    n=$(((r + 1) % 4))
    grep -q "^$r: < cmd=fullinit-response;rc=0;.*rank=$r;size=4;" "$TMP/p2" &&
        grep -q "^$r: < cmd=kvs-get-response;rc=0;found=TRUE;value=v;;$n;$" "$TMP/p2" &&
        grep -q "^$r: < cmd=info-getjobattr-response;rc=0;found=TRUE;value=(vector,(0,2,2));$" \
            "$TMP/p2" && grep -q "^$r: < cmd=finalize-response;rc=0;$" "$TMP/p2" || ok=1
done
check "PMI-2: fullinit, put / fence / get across nodes (';' escaped), process mapping (rc $RC)" \
    [ "$RC$ok" = 00 ]
[[ $ok == 0 ]] || cat "$TMP/p2"

# --- malformed input: an error answer with the reason each time, the channel goes on (a
# value over 1024 bytes makes a PMI-1 line over its limit too; PMI-2 frames can carry one)
long_key=$(printf 'k%.0s' $(seq 70))
long_val=$(printf 'v%.0s' $(seq 1030))
run "$TMP/bad" -n 1 "$CHAT" "cmd=init pmi_version=1 pmi_subversion=1" cmd=get_my_kvsname \
    -long:2000 "cmd=put kvsname=%K key=$long_key value=1" "cmd=put kvsname=%K key=a value=$long_val" \
    "cmd=put kvsname=other key=a value=1" "cmd=get kvsname=other key=PMI_process_mapping" \
    "hello=1" "garbage" "cmd=nosuch" "cmd=get_universe_size" cmd=finalize
exp=("< cmd=error rc=-1 msg=a_line_longer_than_1024_bytes"
    "< cmd=put_result rc=-1 msg=a_key_longer_than_64_bytes"
    "< cmd=put_result rc=-1 msg=not_the_job's_KVS_name"
    "< cmd=get_result rc=-1 msg=not_the_job's_KVS_name"
    "< cmd=error rc=-1 msg=no_cmd=_in_the_line"
    "< cmd=error rc=-1 msg="
    "< cmd=error rc=-1 msg=an_unknown_command:_nosuch"
    "< cmd=universe_size rc=0 size=1")
ok=0
for e in "${exp[@]}"; do grep -qF -- "$e" "$TMP/bad" || {
    ok=1
    echo "missing: $e"
}; done
check "malformed PMI-1 lines: each answered with its reason, the channel goes on (rc $RC)" \
    [ "$RC$ok" = 00 ]
[[ $ok == 0 ]] || cat "$TMP/bad"
run "$TMP/bad2" -n 1 --mpi=pmi2 "$CHAT" "cmd=init pmi_version=2 pmi_subversion=0" \
    "-2:cmd=fullinit;pmirank=0;" "-2:cmd=kvs-put;key=$long_key;value=1;" "-2:cmd=kvs-put;key=a;value=$long_val;" \
    "-2:nocmd" \
    "-2:cmd=kvs-get;key=x;" "-2:cmd=finalize;"
grep -q "kvs-put-response;rc=-1;errmsg=a key longer than 64 bytes;" "$TMP/bad2" &&
    grep -q "error;rc=-1;errmsg=a value longer than 1024 bytes;" "$TMP/bad2" &&
    grep -q "error;rc=-1;errmsg=a pair without '=';" "$TMP/bad2" &&
    grep -q "finalize-response;rc=0;" "$TMP/bad2"
check "malformed PMI-2 frames: error answers, the channel goes on (rc $RC)" [ "$?$RC" = 00 ]
[[ $(psids_of "$D" | sort | tr '\n' ' ') == "$PSIDS_BEFORE" && $(count_psids "$D") == 4 ]]
check "every psid still runs after the malformed input" [ $? = 0 ]

# --- failures
run "$TMP/abort" -n 4 "$MPI/mpi_fail" abort 3
[[ $RC == 3 ]] && grep -q "rank 1 (node .*) aborted the job (MPI_Abort), exit code 3" "$TMP/abort"
check "MPI_Abort(3): psrun exits 3 and names the rank (rc $RC)" [ $? = 0 ]
[[ $RC == 3 ]] || cat "$TMP/abort"

"$BIN/psrun" -n 4 -w 0,1 --label "$MPI/mpi_fail" hang >"$TMP/hang" 2>&1 &
psrun_pid=$!
OWN_PIDS+=("$psrun_pid")
wait_for() { # MS CMD...
    local end=$(($(now_ms) + $1))
    shift
    until "$@"; do
        (($(now_ms) > end)) && return 1
        sleep 0.02
    done
}
# each rank prints its pid, then waits in MPI_Barrier (rank 1 sleeps instead: no rank can
# leave the barrier without it)
four_pids() { [[ $(grep -c "^[0-9]*: pid " "$TMP/hang") == 4 ]] && grep -q "^1: waiting$" "$TMP/hang"; }
wait_for 20000 four_pids
ranks=$(sed -n 's/^[0-9]*: pid //p' "$TMP/hang" | tr '\n' ' ')
victim=$(sed -n 's/^1: pid //p' "$TMP/hang")
t0=$(now_ms)
kill -KILL "$victim"
wait_for 5000 bash -c "! kill -0 $psrun_pid 2>/dev/null"
t1=$(now_ms)
wait "$psrun_pid"
RC=$?
gone=1
# shellcheck disable=SC2086 # the pids are words
wait_for 2000 procs_gone $ranks && gone=0
[[ $RC == 137 ]] && grep -q "rank 1 (node .*): killed by signal 9 (SIGKILL)" "$TMP/hang" &&
    (((t1 - t0) <= 1000)) && [[ $gone == 0 ]]
check "rank 1 SIGKILLed in a barrier: job over in $((t1 - t0)) ms (<= 1000), rank and signal named, no rank left (rc $RC)" [ $? = 0 ]
[[ $RC == 137 ]] || cat "$TMP/hang"

t0=$(now_ms)
run "$TMP/nofinal" -n 4 "$MPI/mpi_fail" nofinal
t1=$(now_ms)
[[ $RC == 1 ]] && grep -q "rank 1 .*without finalizing PMI (no MPI_Finalize)" "$TMP/nofinal"
check "a rank that exits 0 without MPI_Finalize: the job ends in $((t1 - t0)) ms with a message, exit 1 (rc $RC)" [ $? = 0 ]
[[ $RC == 1 ]] || cat "$TMP/nofinal"

# --- --mpi=none: singletons; the PMI channel is the inherited socket, never a port
run "$TMP/none" -n 2 --mpi=none "$MPI/mpi_hello"
[[ $RC == 0 && $(grep -c "^hello 0 of 1 " "$TMP/none") == 2 ]]
check "--mpi=none: two singletons (rank 0 of 1), as before PMI (rc $RC)" [ $? = 0 ]
run "$TMP/env" -n 2 -w 0,1 --label sh -c 'env | grep "^PMI_" | sort; ls -l /proc/self/fd/3'
[[ $RC == 0 ]] && [[ $(grep -c ": PMI_FD=3$" "$TMP/env") == 2 ]] && ! grep -q PMI_PORT "$TMP/env" &&
    [[ $(grep -c "socket:" "$TMP/env") == 2 ]]
check "the ranks' PMI is fd 3, a socket (PMI_FD=3, no PMI_PORT) (rc $RC)" [ $? = 0 ]

exit $((FAILS > 0))
