# shellcheck shell=bash
# bench/lib/slurm.sh - a private one-node Slurm for the benchmarks (bench/psid.sh,
# bench/launch.sh) to compare against, set up as ../shared/peers/07_slurm.sh does it:
# slurmctld + slurmd in the foreground (-D) as background jobs of the calling script,
# AuthType=auth/none + CredType=cred/none (no munge), everything in a directory of its own,
# ports of its own (not 07_slurm.sh's), the machine's one node advertised with SLURM_CPUS CPUs.
# Source it, do not run it.
#
#   slurm_available        0 if slurmctld, slurmd and srun are installed
#   slurm_up DIR [CTLPORT] [CPUS]  write DIR/slurm.conf, start the daemons, wait (20 s at most)
#                          until the node is idle and `srun -n 1 /bin/true` works; exports
#                          SLURM_CONF; 0, or 1 with the end of the logs on stderr
#   slurm_down             scancel everything, stop the daemons by pid; safe to call twice
# The caller's EXIT trap must call slurm_down. Needs bench/lib/common.sh (stop_pids) sourced.

SLURM_PIDS=()

slurm_available() {
    command -v slurmctld >/dev/null && command -v slurmd >/dev/null && command -v srun >/dev/null
}

slurm_up() { # slurm_up DIR [CTLPORT] [CPUS]
    local dir=$1 ctlport=${2:-16837} cpus=${3:-256} node st ok=0
    node=$(hostname -s)
    rm -rf "$dir"
    mkdir -p "$dir/state" "$dir/spool"
    export SLURM_CONF=$dir/slurm.conf
    cat >"$SLURM_CONF" <<EOF
# one-node Slurm for pscluster's benchmarks (bench/lib/slurm.sh; after 07_slurm.sh)
ClusterName=psbench
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=$ctlport
SlurmdPort=$((ctlport + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/none
CredType=cred/none
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SwitchType=switch/none
MpiDefault=none
ReturnToService=2
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
PluginDir=/usr/lib/x86_64-linux-gnu/slurm-wlm
MailProg=/bin/true
SlurmdParameters=config_overrides
NodeName=$node NodeAddr=127.0.0.1 CPUs=$cpus Boards=1 SocketsPerBoard=1 CoresPerSocket=$cpus ThreadsPerCore=1 RealMemory=4000 State=UNKNOWN
PartitionName=bench Nodes=$node Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
EOF
    slurmctld -D -c -f "$SLURM_CONF" >>"$dir/slurmctld.out" 2>&1 &
    SLURM_PIDS+=($!)
    for _ in $(seq 200); do
        ss -Hltn "sport = :$ctlport" 2>/dev/null | grep -q . && break
        sleep 0.05
    done
    slurmd -D -f "$SLURM_CONF" -N "$node" >>"$dir/slurmd.out" 2>&1 &
    SLURM_PIDS+=($!)
    for _ in $(seq 200); do
        st=$(timeout 5 sinfo -h -n "$node" -o %T 2>/dev/null || true)
        case $st in idle*)
            ok=1
            break
            ;;
        esac
        sleep 0.1
    done
    if ((ok)) && timeout 20 srun -n 1 /bin/true; then
        return 0
    fi
    echo "slurm_up: the node did not become usable (state '$st'); logs in $dir:" >&2
    tail -n 10 "$dir/slurmctld.log" "$dir/slurmd.log" >&2 || true
    return 1
}

slurm_down() {
    if ((${#SLURM_PIDS[@]})); then
        timeout 5 scancel --quiet --user=root 2>/dev/null || true
        sleep 0.3
    fi
    stop_pids 5 "${SLURM_PIDS[@]}"
    SLURM_PIDS=()
}
