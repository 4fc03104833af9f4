#!/bin/bash
# bench/launch.sh - job launch: `psrun -n N /bin/true`, start to exit, on 4 and 8 virtual nodes
# (pslocal, loopback), side by side with MPICH's `mpiexec -n N /bin/true` (hydra, fork launcher,
# as ../shared/peers/06_mpich.sh) and, where Slurm can be started (root, packages
# installed), `srun -n N /bin/true` on a private one-node Slurm (bench/lib/slurm.sh, after
# ../shared/peers/07_slurm.sh: auth/none, 256 advertised CPUs).
#
# Every N is one hyperfine invocation (-N: no shell; warm-up, then RUNS runs of each command in
# turn), so all launchers of a row are measured within seconds of each other. Both clusters
# run during the whole benchmark; psrun is started as `env PSID_SOCKET=DIR/psid-0.sock psrun`
# (one exec more than the peers, ~0.4 ms, counted against psrun). The clusters advertise 64
# CPUs per node (--cpus 64), so N = 128 fits without overbooking on 4 nodes; all nodes share
# the machine's 2 vCPUs, as mpiexec's and srun's processes do.
# Diagnostic column (root only, NOROOT=0 turns it off): psrun on a 4-node cluster whose psids run
# as nobody (`setpriv --reuid=nobody ... pslocal up`, psrun under the same setpriv: one exec
# more). Such a psid starts tasks without switching users, so its children skip getpwuid() and
# initgroups(): the difference to the root column is the cost of those per-task lookups.
# PROFILE (default: on as root with perf) adds "where the time goes": `perf record -a -g` over
# PROFILE_JOBS (20) launches of N=PROFILE_N (128) on the 4-node cluster and over as many
# `mpiexec -n N /bin/true`, samples sorted by process and call chain (see profile() below).
# If build/bin/psrun does not exist, the script waits PSRUN_WAIT seconds for it, then measures
# test/tools/jobdrive (`jobdrive run N /bin/true`: the same protocol, no output handling) and
# says so in the table.
# BASE=TREE (an older checkout, built) adds a column for the same jobs on a 4-node cluster of
# TREE's build (TREE/build/bin: its pslocal, psids and psrun), measured in the same hyperfine
# runs, and the ratio this build / BASE: the "no regression against the previous build" check.
# Tables (markdown) on stdout, progress on stderr; raw hyperfine JSON in bench/out/.
# Machine noise is high on the 2-vCPU VM: read min / median / max and the ratios of one run.
#
# usage: bench/launch.sh [--help]
# env:   RUNS (10), WARMUP (2), NS ("1 8 32 128"), NODES ("4 8"), PSRUN_WAIT (0 s),
#        SLURM (auto|0|1; auto: as root, installing slurmctld, slurmd, slurm-client with
#        scripts/install-deps.sh if missing), MPICH (auto|0|1), NOROOT (auto|0),
#        PROFILE (auto|0|1), PROFILE_N (128), PROFILE_JOBS (20), BASE (none)
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
# shellcheck source-path=SCRIPTDIR source=lib/common.sh
. "$HERE/lib/common.sh"
bench_no_args "$0" "$@"

BIN=$ROOT/build/bin
RUNS=${RUNS:-10}
WARMUP=${WARMUP:-2}
NS=${NS:-1 8 32 128}
NODES=${NODES:-4 8}
PSRUN_WAIT=${PSRUN_WAIT:-0}
SLURM=${SLURM:-auto}
MPICH=${MPICH:-auto}
NOROOT=${NOROOT:-auto}
PROFILE=${PROFILE:-auto}
PROFILE_N=${PROFILE_N:-128}
PROFILE_JOBS=${PROFILE_JOBS:-20}
BASE=${BASE:-}
OUT=$ROOT/bench/out
mkdir -p "$OUT"
STAMP=$(date -u +%Y%m%dT%H%M%SZ)

[[ $RUNS =~ ^[1-9][0-9]*$ && $WARMUP =~ ^[0-9]+$ ]] || {
    echo "bench/launch.sh: RUNS must be positive, WARMUP a number" >&2
    exit 2
}
for t in hyperfine jq; do
    command -v "$t" >/dev/null || {
        echo "bench/launch.sh: needs $t (scripts/install-deps.sh --bench)" >&2
        exit 1
    }
done
[[ -z $BASE || (-x $BASE/build/bin/pslocal && -x $BASE/build/bin/psrun) ]] || {
    echo "bench/launch.sh: BASE=$BASE: no build/bin/pslocal and psrun there (make in it)" >&2
    exit 2
}
[[ -x $BIN/pslocal ]] || {
    echo "bench/launch.sh: $BIN/pslocal not built (make)" >&2
    exit 1
}
# shellcheck source-path=SCRIPTDIR source=lib/slurm.sh
. "$HERE/lib/slurm.sh"

log() { echo "$*" >&2; }

waited=0
while [[ ! -x $BIN/psrun ]] && ((waited < PSRUN_WAIT)); do
    sleep 1
    waited=$((waited + 1))
done
if [[ -x $BIN/psrun ]]; then
    LAUNCHER=psrun
    LCMD="$BIN/psrun -n"
else
    LAUNCHER=jobdrive
    LCMD="$ROOT/build/test/tools/jobdrive run"
    [[ -x ${LCMD%% *} ]] || {
        echo "bench/launch.sh: neither psrun nor jobdrive is built (make build-tests)" >&2
        exit 1
    }
    log "bench/launch.sh: $BIN/psrun does not exist: measuring jobdrive instead"
fi

W=$(mktemp -d /tmp/psbench-launch.XXXXXX)
chmod 755 "$W"
cd "$W" # the tasks' working directory: readable by nobody too
CLUSTERS=()
cleanup() {
    local d
    cd /
    for d in "${CLUSTERS[@]}"; do "$BIN/pslocal" down --dir "$d" >/dev/null 2>&1 || true; done
    [[ -n $BASE && -d $W/base ]] && "$BASE/build/bin/pslocal" down --dir "$W/base" >/dev/null 2>&1
    true
    slurm_down
    rm -rf "$W"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

for n in $NODES; do
    d=$W/c$n
    CLUSTERS+=("$d")
    "$BIN/pslocal" up -n "$n" --cpus 64 --dir "$d" --timeout 30 >"$W/up.log" 2>&1 || {
        cat "$W/up.log" >&2
        exit 1
    }
done

if [[ -n $BASE ]]; then
    "$BASE/build/bin/pslocal" up -n 4 --cpus 64 --dir "$W/base" --timeout 30 >"$W/up.log" 2>&1 || {
        cat "$W/up.log" >&2
        exit 1
    }
    BASE_ID="$(git -C "$BASE" rev-parse --short HEAD 2>/dev/null || echo "$BASE")"
fi

AS_NOBODY=(setpriv --reuid=nobody --regid=nogroup --clear-groups)
HAVE_NOROOT=0
if [[ $NOROOT != 0 && $LAUNCHER == psrun && $EUID == 0 ]] && command -v setpriv >/dev/null &&
    id nobody >/dev/null 2>&1 && getent group nogroup >/dev/null; then
    mkdir "$W/nr"
    chown nobody "$W/nr"
    CLUSTERS+=("$W/nr/c4")
    if "${AS_NOBODY[@]}" "$BIN/pslocal" up -n 4 --cpus 64 --dir "$W/nr/c4" --timeout 30 \
        >"$W/up.log" 2>&1; then
        HAVE_NOROOT=1
    else
        log "bench/launch.sh: the cluster as nobody did not start; no diagnostic column"
        cat "$W/up.log" >&2
    fi
fi

HAVE_MPI=0
if [[ $MPICH != 0 ]] && command -v mpiexec >/dev/null; then
    HAVE_MPI=1
elif [[ $MPICH == 1 ]]; then
    echo "bench/launch.sh: MPICH=1 but no mpiexec (apt-get install mpich)" >&2
    exit 1
fi
HAVE_SLURM=0
if [[ $SLURM == 1 || ($SLURM == auto && $EUID == 0) ]]; then
    slurm_available || "$ROOT/scripts/install-deps.sh" slurmctld slurmd slurm-client >&2 || true
fi
if [[ $SLURM == 1 || ($SLURM == auto && $EUID == 0) ]] && slurm_available; then
    log "starting a one-node Slurm (auth/none) in $W/slurm"
    if slurm_up "$W/slurm" 16847 256; then
        HAVE_SLURM=1
    elif [[ $SLURM == 1 ]]; then
        exit 1
    fi
fi

log "# bench/launch.sh: $(date -u +%Y-%m-%dT%H:%M:%SZ), $(hostname), kernel $(uname -r), $(nproc) cpus," \
    "load $(cut -d' ' -f1-3 /proc/loadavg), RUNS=$RUNS WARMUP=$WARMUP, launcher $LAUNCHER"
t_start=$SECONDS

# one hyperfine per N; columns: NAME=COMMAND
declare -A MED MIN MAX
names=()
for n in $NODES; do names+=("$LAUNCHER-$n"); done
[[ -n $BASE ]] && names+=(base)
((HAVE_NOROOT)) && names+=(noroot)
((HAVE_MPI)) && names+=(mpiexec)
((HAVE_SLURM)) && names+=(srun)
for np in $NS; do
    cmds=()
    for n in $NODES; do
        cmds+=("env PSID_SOCKET=$W/c$n/psid-0.sock $LCMD $np /bin/true")
    done
    [[ -n $BASE ]] &&
        cmds+=("env PSID_SOCKET=$W/base/psid-0.sock $BASE/build/bin/psrun -n $np /bin/true")
    ((HAVE_NOROOT)) &&
        cmds+=("${AS_NOBODY[*]} env PSID_SOCKET=$W/nr/c4/psid-0.sock $LCMD $np /bin/true")
    ((HAVE_MPI)) && cmds+=("mpiexec -n $np /bin/true")
    ((HAVE_SLURM)) && cmds+=("srun -n $np /bin/true")
    js=$OUT/launch-$STAMP-n$np.json
    log "  N=$np: ${#cmds[@]} commands x $RUNS runs"
    if ! hyperfine -N --warmup "$WARMUP" --runs "$RUNS" --export-json "$js" "${cmds[@]}" \
        >"$W/hf.log" 2>&1; then
        log "bench/launch.sh: hyperfine failed at N=$np:"
        tail -n 20 "$W/hf.log" >&2
        exit 1
    fi
    for ((k = 0; k < ${#names[@]}; k++)); do
        read -r mi me ma < <(jq -r ".results[$k] | [.min, .median, .max] | map(. * 1000) | @tsv" "$js")
        MIN[${names[$k]}-$np]=$mi
        MED[${names[$k]}-$np]=$me
        MAX[${names[$k]}-$np]=$ma
    done
done

# profile: perf over a launch burst of psrun (4-node cluster) and of mpiexec; prints a table
# of the share of all CPU samples (both vCPUs, idle included) per process and call chain
PROF_ROWS=()
profile() {
    local d=$W/c4 pids others t0 t1 cats k
    local -A A B
    # the daemons: the 4-node cluster's, and every other psid running now (other clusters,
    # other users' tests) to tell them apart from the children forked during the burst
    pids=$(cat "$d"/psid-*.pid | paste -sd,)
    others=$(pgrep -x psid | paste -sd,)
    t0=$(date +%s%N)
    perf record -q -o "$W/perf-psrun.data" -a -g -F 2999 -e cpu-clock -- bash -c \
        "for i in \$(seq $PROFILE_JOBS); do PSID_SOCKET=$d/psid-0.sock $BIN/psrun -n $PROFILE_N /bin/true; done" \
        >/dev/null 2>"$W/perf.log"
    t1=$(date +%s%N)
    PROF_PSRUN_MS=$(((t1 - t0) / 1000000 / PROFILE_JOBS))
    t0=$(date +%s%N)
    perf record -q -o "$W/perf-mpiexec.data" -a -g -F 2999 -e cpu-clock -- bash -c \
        "for i in \$(seq $PROFILE_JOBS); do mpiexec -n $PROFILE_N /bin/true; done" >/dev/null 2>>"$W/perf.log"
    t1=$(date +%s%N)
    PROF_MPI_MS=$(((t1 - t0) / 1000000 / PROFILE_JOBS))
    # one sample: a header line "COMM PID", then one line per frame "<tab>IP SYM"
    # shellcheck disable=SC2016 # an awk program
    local classify='
        function flush(   c) {
            if (comm == "") return
            n++
            if (comm == "psid" && (pid in X) && !(pid in D)) c = "other psid daemons (other clusters)"
            else if (comm == "psid" && (pid in D)) {
                if (ch ~ /sys_clone/) c = "psid daemons: fork (clone: copying the daemon)"
                else if (ch ~ /__x64_sys_|do_syscall_64/) c = "psid daemons: other system calls"
                else c = "psid daemons: user code, page faults"
            } else if (comm == "psid") {
                if (ch ~ /nss|_dl_|dl_open|initgroups|getpw|getgr|nscd|do_lookup_x|check_match/)
                    c = "psid children before exec: getpwuid + initgroups (NSS: files, dlopen libnss_systemd)"
                else if (ch ~ /execve/) c = "psid children before exec: execve"
                else if (ch ~ /page_fault/) c = "psid children before exec: page faults (copy-on-write)"
                else c = "psid children before exec: other (setsid, signal reset, env; NSS parts perf could not unwind)"
            } else if (comm == "true") c = "the tasks (/bin/true: exec, ld.so, exit)"
            else if (comm == "psrun") c = "psrun"
            else if (comm == "hydra_pmi_proxy") c = "hydra_pmi_proxy (incl. its children before exec)"
            else if (comm == "mpiexec") c = "mpiexec"
            else if (comm == "swapper") c = "idle"
            else { c = "other processes"; O[comm]++ }
            C[c]++
        }
        BEGIN { split(daemons, a, ","); for (i in a) D[a[i]] = 1
                split(others, a, ","); for (i in a) X[a[i]] = 1 }
        /^[^\t]/ { flush(); pid = $NF; $NF = ""; comm = $0; sub(/ +$/, "", comm); ch = ""; next }
        /^\t/ { ch = ch " " $2 }
        END { flush(); for (c in C) printf "%s\t%.1f\n", c, 100 * C[c] / n
              for (o in O) if (O[o] >= n / 100) printf "other: %s\t%.1f\n", o, 100 * O[o] / n }'
    while IFS=$'\t' read -r k v; do A[$k]=$v; done < <(perf script -i "$W/perf-psrun.data" \
        -F comm,pid,ip,sym 2>/dev/null | awk -v daemons="$pids" -v others="$others" "$classify")
    while IFS=$'\t' read -r k v; do B[$k]=$v; done < <(perf script -i "$W/perf-mpiexec.data" \
        -F comm,pid,ip,sym 2>/dev/null | awk -v daemons="$pids" -v others="$others" "$classify")
    cats=$(for k in $(printf '%s\n' "${!A[@]}" "${!B[@]}" | sort -u | tr ' ' '\001'); do
        k=${k//$'\001'/ }
        printf '%s\t%s\n' "${A[$k]:-0.0}" "$k"
    done | sort -t $'\t' -k1,1gr | cut -f2)
    local ncpu
    ncpu=$(nproc)
    pct() { # share of samples -> "S % (C ms)", C: CPU ms per launch
        awk -v s="${1:-0}" -v w="$2" -v c="$ncpu" 'BEGIN { printf "%.1f %% (%.1f ms)", s, s / 100 * w * c }'
    }
    while IFS= read -r k; do
        [[ -n $k ]] || continue
        PROF_ROWS+=("| $k | $(pct "${A[$k]:-0}" "$PROF_PSRUN_MS") | $(pct "${B[$k]:-0}" "$PROF_MPI_MS") |")
    done <<<"$cats"
}

if [[ $PROFILE != 0 ]]; then
    if ((EUID == 0 && HAVE_MPI)) && command -v perf >/dev/null && [[ -d $W/c4 && $LAUNCHER == psrun ]]; then
        log "  profile: perf over $PROFILE_JOBS x psrun -n $PROFILE_N and mpiexec -n $PROFILE_N"
        profile
    elif [[ $PROFILE == 1 ]]; then
        log "bench/launch.sh: PROFILE=1 needs root, perf, mpiexec, psrun and a 4-node cluster"
    fi
fi

cell() { awk -v a="${MIN[$1]}" -v m="${MED[$1]}" -v b="${MAX[$1]}" \
    'BEGIN { printf "**%.1f** (%.1f-%.1f)", m, a, b }'; }
rat() { awk -v a="${MED[$1]}" -v b="${MED[$2]}" 'BEGIN { printf "%.2f", a / b }'; }

when="$(date -u +%Y-%m-%d), $(nproc) cpus, kernel $(uname -r)"
echo
echo "### Launch: \`-n N /bin/true\`, start to exit, ms median (min-max) over $RUNS runs ($when)"
echo
hdr="| N |"
sep="| ---: |"
for nm in "${names[@]}"; do
    case $nm in
    base) hdr+=" BASE $BASE_ID: psrun, 4 nodes |" ;;
    noroot) hdr+=" diagnostic: psrun, 4 nodes, psids not root |" ;;
    mpiexec) hdr+=" mpiexec (hydra, fork) |" ;;
    srun) hdr+=" srun (one-node Slurm) |" ;;
    *) hdr+=" $LAUNCHER, ${nm##*-} nodes |" ;;
    esac
    sep+=" ---: |"
done
if [[ -n $BASE && " $NODES " == *" 4 "* ]]; then
    hdr+=" this build / BASE, 4 nodes |"
    sep+=" ---: |"
fi
for nm in "${names[@]}"; do
    [[ $nm == "$LAUNCHER"-* || $nm == noroot || $nm == base ]] && continue
    for n in $NODES; do
        hdr+=" $nm / $LAUNCHER $n |"
        sep+=" ---: |"
    done
done
echo "$hdr"
echo "$sep"
for np in $NS; do
    line="| $np |"
    for nm in "${names[@]}"; do line+=" $(cell "$nm-$np") |"; done
    [[ -n $BASE && " $NODES " == *" 4 "* ]] && line+=" $(rat "$LAUNCHER-4-$np" "base-$np") |"
    for nm in "${names[@]}"; do
        [[ $nm == "$LAUNCHER"-* || $nm == noroot || $nm == base ]] && continue
        for n in $NODES; do line+=" $(rat "$nm-$np" "$LAUNCHER-$n-$np") |"; done
    done
    echo "$line"
done
echo
echo "Ratios: peer median / $LAUNCHER median; above 1 means $LAUNCHER is faster."
[[ -n $BASE ]] && echo "BASE: \`env PSID_SOCKET=DIR/psid-0.sock $BASE/build/bin/psrun -n N /bin/true\` on its own \`pslocal up -n 4 --cpus 64\` ($BASE_ID); this build / BASE above 1 means this build is slower."
if [[ $LAUNCHER == jobdrive ]]; then
    echo "psrun did not exist: the $LAUNCHER columns are test/tools/jobdrive (same protocol, no output handling)."
fi
echo "Commands: \`env PSID_SOCKET=DIR/psid-0.sock ${LCMD#"$ROOT"/} N /bin/true\` on \`pslocal up -n 4|8 --cpus 64\`;"
((HAVE_NOROOT)) && echo "diagnostic: \`${AS_NOBODY[*]} env PSID_SOCKET=DIR/psid-0.sock psrun -n N /bin/true\` on a 4-node cluster started by \`${AS_NOBODY[*]} pslocal up\` (its psids start tasks without getpwuid/initgroups; not a deployment mode: a psid must be root to start other users' tasks);"
((HAVE_MPI)) && echo "\`mpiexec -n N /bin/true\` ($(mpiexec --version 2>/dev/null | awk '/Version:/ { print "MPICH hydra " $2 }'));"
((HAVE_SLURM)) && echo "\`srun -n N /bin/true\` ($(srun --version), auth/none, one node with 256 CPUs);"
echo "each \`hyperfine -N --warmup $WARMUP --runs $RUNS --export-json ... CMD...\` per N;" \
    "raw: bench/out/launch-$STAMP-n*.json. ($((SECONDS - t_start)) s)"
if ((${#PROF_ROWS[@]})); then
    echo
    echo "### Where the time goes: share of all CPU samples during $PROFILE_JOBS launches of N=$PROFILE_N"
    echo
    echo "\`perf record -a -g -F 2999 -e cpu-clock\` over \`psrun -n $PROFILE_N /bin/true\` x $PROFILE_JOBS (4-node cluster;"
    echo "${PROF_PSRUN_MS} ms per launch under perf) and over \`mpiexec -n $PROFILE_N /bin/true\` x $PROFILE_JOBS"
    echo "(${PROF_MPI_MS} ms per launch); samples of both vCPUs, idle included, sorted by process and call chain;"
    echo "in parentheses: CPU ms per launch (share x wall time per launch x $(nproc) CPUs). \"other: NAME\" rows break"
    echo "down \"other processes\" (the loop's bash, perf, other users' work on the machine) where >= 1 %."
    echo
    echo "| where | psrun burst: share (CPU ms per launch) | mpiexec burst: share (CPU ms per launch) |"
    echo "| --- | ---: | ---: |"
    printf '%s\n' "${PROF_ROWS[@]}"
fi
