#!/bin/bash
# psrun_cpu.sh - psrun's -c, --cpu-bind and --mem (issue 31 point 2) on a 2-node loopback
# cluster (the nodes are psids of this machine; each binds within its own CPUs):
#  - --cpu-bind=cores / threads / map_cpu / mask_cpu: each rank's Cpus_allowed_list, read in
#    the rank from /proc/self/status, is what PSI_CPUS and --cpu-bind=verbose say;
#  - the default binds (cores) when the job fills the node, and not when it does not;
#  - two jobs on one node at once get disjoint cores; a third that needs cores waits for none
#    (no free core, no --overbook: refused with the reason), with --overbook it shares;
#  - -c counts in placement (-c 2 on 2-CPU nodes: a rank per node), for the jobs already
#    running too (a node whose -c 2 rank holds both CPUs takes no other rank);
#  - --mem (and --mem-per-cpu, times the CPUs of the job's ranks on the node): a rank past
#    the limit is killed by the OOM killer and reported as such, through
#    cgroup v2's memory.max or, on a hybrid hierarchy, a v1 memory cgroup per job (whose
#    directory goes with the job); skipped, with the reason, where psid has neither;
#  - bad values (a CPU outside the node, --mem=0, an unknown binding, -c 0) exit 2 before
#    anything runs.
# Every psrun runs under timeout; background ones are waited for by pid.
# shellcheck source-path=SCRIPTDIR source=lib/cluster.sh
source "$(dirname "$0")/lib/cluster.sh"
# shellcheck source=lib/psrun.sh
source "$(dirname "$0")/lib/psrun.sh"

cluster_ready 2 psrun_cpu
export PSID_SOCKET=$CDIR/psid-0.sock
cd "$CDIR" || exit 1

# the CPUs psid may use here: a rank is bound within them
own=$(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/self/status)
ncpu=$(nproc)
[ "$ncpu" -ge 2 ] || {
    echo "SKIP: psrun_cpu: this machine has $ncpu CPU; binding tests need 2"
    exit 0
}
first=${own%%[-,]*}
# a rank that prints its rank, PSI_CPUS and what the kernel says it may run on
show='echo "$PSI_RANK ${PSI_CPUS:-unbound} $(sed -n "s/^Cpus_allowed_list:[[:space:]]*//p" /proc/self/status)"'

settle
run "$PSRUN" -n 1 -w 0 --cpu-bind=cores sh -c "$show"
read -r _ cpus allowed <<<"$OUT"
[ $RC -eq 0 ] && [ "$cpus" != unbound ] && [ "$cpus" = "$allowed" ] && [ "$allowed" != "$own" ]
check "--cpu-bind=cores: the rank runs on its core only (Cpus_allowed_list = PSI_CPUS)" $? \
    "rc=$RC out '$OUT' own $own $ERR"

settle
run "$PSRUN" -n 2 -w 0 --cpu-bind=verbose,threads sh -c "$show"
a0=$(awk '$1 == 0 {print $3}' <<<"$OUT")
a1=$(awk '$1 == 1 {print $3}' <<<"$OUT")
v=$(grep -c "cpu-bind: rank [01] (node n0): CPUs " <<<"$ERR")
[ $RC -eq 0 ] && [ -n "$a0" ] && [ -n "$a1" ] && [ "$a0" != "$a1" ] && [ "$v" -eq 2 ]
check "--cpu-bind=verbose,threads: two ranks on two CPUs, each said" $? "rc=$RC '$OUT' $ERR"

settle
run "$PSRUN" -n 2 -w 0 sh -c "$show"
n=$(awk '$2 == $3 && $2 != "unbound"' <<<"$OUT" | wc -l)
[ $RC -eq 0 ] && [ "$n" -eq 2 ]
check "default: a job that fills the node is bound to cores" $? "rc=$RC '$OUT' $ERR"
settle
run "$PSRUN" -n 1 -w 0 sh -c "$show"
read -r _ cpus allowed <<<"$OUT"
[ $RC -eq 0 ] && [ "$cpus" = unbound ] && [ "$allowed" = "$own" ]
check "default: a job that leaves CPUs free is not bound" $? "rc=$RC '$OUT' $ERR"

settle
run "$PSRUN" -n 2 -w 0 --cpu-bind="map_cpu:$first,$first" sh -c "$show"
n=$(awk -v c="$first" '$3 == c' <<<"$OUT" | wc -l)
[ $RC -eq 0 ] && [ "$n" -eq 2 ]
check "--cpu-bind=map_cpu: both ranks on CPU $first" $? "rc=$RC '$OUT' $ERR"
settle
run "$PSRUN" -n 1 -w 0 --cpu-bind="mask_cpu:0x$(printf %x $((1 << first)))" sh -c "$show"
read -r _ cpus allowed <<<"$OUT"
[ $RC -eq 0 ] && [ "$allowed" = "$first" ]
check "--cpu-bind=mask_cpu: the rank on the mask's CPU" $? "rc=$RC '$OUT' $ERR"

# ---- two jobs at once on one node: disjoint cores
settle
timeout 20 "$PSRUN" -n 1 -w 1 --cpu-bind=cores sh -c "$show >job1.cpus; exec sleep 30" \
    </dev/null >/dev/null 2>&1 &
j1=$!
STRAY+=("$j1")
wait_until 5000 test -s job1.cpus
timeout 20 "$PSRUN" -n 1 -w 1 --cpu-bind=cores sh -c "$show >job2.cpus; exec sleep 30" \
    </dev/null >/dev/null 2>&1 &
j2=$!
STRAY+=("$j2")
wait_until 5000 test -s job2.cpus
c1=$(awk '{print $3}' job1.cpus 2>/dev/null)
c2=$(awk '{print $3}' job2.cpus 2>/dev/null)
[ -n "$c1" ] && [ -n "$c2" ] && [ "$c1" != "$c2" ] &&
    [ -z "$(comm -12 <(tr ',' '\n' <<<"$c1" | sort) <(tr ',' '\n' <<<"$c2" | sort))" ]
check "two jobs on one node get disjoint cores ($c1 | $c2)" $? "job1 '$c1' job2 '$c2'"
run "$PSRUN" -n 1 -w 1 --overbook --cpu-bind=cores true
r_ob=$RC
run "$PSRUN" -n 1 -w 1 --cpu-bind=cores true
[ $RC -ne 0 ] && [[ $ERR == *"free"* ]] && [ "$r_ob" -eq 0 ]
check "no free core: a third job is refused, with --overbook it shares" $? \
    "rc=$RC overbook rc=$r_ob $ERR"
kill -TERM "$j1" "$j2"
wait "$j1" "$j2" 2>/dev/null

# ---- -c in placement: 2 CPUs per rank on 2-CPU nodes: a rank per node, bound to both
settle
run "$PSRUN" -n 2 -c 2 sh -c 'echo $PSI_RANK $PSI_NODE $PSI_CPUS'
got=$(awk '{print $2}' <<<"$OUT" | sort | tr '\n' ' ')
n=$(awk -v o="$own" '$3 == o' <<<"$OUT" | wc -l)
[ $RC -eq 0 ] && [ "$got" = "0 1 " ] && [ "$n" -eq 2 ]
check "-c 2: a rank per node, bound to both CPUs" $? "rc=$RC '$OUT' $ERR"
run "$PSRUN" -n 3 -c 2 true
[ $RC -ne 0 ] && [[ $ERR == *"do not fit"* ]]
check "-c 2 -n 3 on two 2-CPU nodes: does not fit" $? "rc=$RC $ERR"

# ---- another job's -c counts too: a running rank of -c 2 holds both CPUs of node 1
settle
timeout 20 "$PSRUN" -n 1 -w 1 -c 2 sh -c "$show >jobc.cpus; exec sleep 30" \
    </dev/null >/dev/null 2>&1 &
jc=$!
STRAY+=("$jc")
wait_until 5000 test -s jobc.cpus
wait_until 5000 sh -c "'$BIN/psstat' --json nodes | grep -q '\"id\":1,[^}]*\"cpus_used\":2,'"
used=$?
run "$PSRUN" -n 2 sh -c 'echo $PSI_NODE'
got=$(sort <<<"$OUT" | tr '\n' ' ')
r2=$RC
run "$PSRUN" -n 3 true
[ $used -eq 0 ] && [ $r2 -eq 0 ] && [ "$got" = "0 0 " ] && [ $RC -ne 0 ] &&
    [[ $ERR == *"do not fit"* ]]
check "a running -c 2 rank holds 2 CPUs in placement: -n 2 goes to the other node, -n 3 does not fit" \
    $? "cpus_used seen: $used, -n 2: rc=$r2 nodes '$got', -n 3: rc=$RC $ERR"
kill -TERM "$jc"
wait "$jc" 2>/dev/null

# ---- --mem
cgdir=$(sed -n "s/.*each job's tasks in a cgroup under \([^ ]*\).*/\1/p" psid-0.log | head -1)
if ! grep -q "memory controller on" psid-0.log; then
    echo "SKIP: psrun_cpu: --mem killed and reported: the memory controller is not available" \
        "to psid's cgroup (${cgdir:-none}; controllers: $(cat "$cgdir/cgroup.controllers" 2>/dev/null))"
    run "$PSRUN" -n 1 -w 0 --mem=64M true
    [ $RC -ne 0 ] && [[ $ERR == *"memory controller"* ]]
    check "--mem without a memory controller: refused with the reason" $? "rc=$RC $ERR"
else
    settle
    run "$PSRUN" -n 1 -w 0 --mem=32M python3 -c 'x = bytearray(256 << 20); print(len(x))'
    [ $RC -eq 137 ] && [[ $ERR == *"rank 0 (node n0): out of memory (limit 32 MiB)"* ]]
    check "--mem=32M: a rank over it is killed and reported" $? "rc=$RC $ERR"
    run "$PSRUN" -n 1 -w 0 --mem=256M python3 -c 'x = bytearray(16 << 20); print(len(x))'
    check "--mem=256M: a rank within it runs" $RC "rc=$RC $ERR"
    # --mem-per-cpu: times the CPUs of the job's ranks on the node (one rank of -c 2: 32 MiB)
    run "$PSRUN" -n 1 -w 0 -c 2 --mem-per-cpu=16M python3 -c 'x = bytearray(256 << 20)'
    [ $RC -eq 137 ] && [[ $ERR == *"rank 0 (node n0): out of memory (limit 32 MiB)"* ]]
    check "--mem-per-cpu=16M with -c 2: the limit is 32 MiB, a rank over it is killed" $? \
        "rc=$RC $ERR"
    # on a hybrid hierarchy the limit is a v1 memory cgroup per job: gone with the job
    v1=$(sed -n "s/.*memory controller on: cgroup v1, \([^)]*\)).*/\1/p" psid-0.log | head -1)
    if [ -n "$v1" ]; then
        no_jobs() { ! compgen -G "$v1/job-*" >/dev/null; }
        wait_until 3000 no_jobs
        check "--mem through cgroup v1 ($v1): the jobs' directories are removed after them" $? \
            "$(ls -d "$v1"/job-* 2>/dev/null)"
    fi
fi

# ---- bad values: exit 2, nothing runs
marker=$CDIR/ran
for bad in "--cpu-bind=map_cpu:4096" "--cpu-bind=map_cpu:$ncpu,0" "--cpu-bind=mask_cpu:0x100000" \
    "--cpu-bind=sockets" "--cpu-bind=map_cpu:" "--mem=0" "--mem=12Q" "--mem-per-cpu=0" "-c 0" \
    "-c 99"; do
    # shellcheck disable=SC2086 # the option and its value are two words
    run "$PSRUN" -n 1 $bad touch "$marker"
    [ $RC -eq 2 ] && [[ $ERR == "psrun: "* ]] && [ ! -e "$marker" ]
    check "bad value '$bad': exit 2 with a message" $? "rc=$RC err '$ERR'"
done

exit $((FAILS > 0))
