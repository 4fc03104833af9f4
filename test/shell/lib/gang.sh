# test/shell/lib/gang.sh - helpers of the gang scheduling tests (test/shell/gang_*.sh). Source
# it after cluster.sh.
# shellcheck shell=bash
#   gang_cluster NAME CPUS QUANTUM   a 2-node cluster of CPUS per node with gang.quantum_ms
#                           QUANTUM and mpl 2 ($PSID_HB_EXTRA as cluster_up), every node up,
#                           PSID_SOCKET at node 0; else fail "NAME: cluster up" and exit
#   gang_job NAME SECS [PSRUN ARGS...]   psrun in the background of test/tools/gangspin, one
#                           rank per node given by the args (default -N 2), each appending a
#                           CLOCK_REALTIME ms stamp per ~2 ms of its CPU time to
#                           $CDIR/NAME.<node>; sets GJOB (psrun's pid, ended by pid on exit)
#   gang_start TAG NAME SECS "NODES" [PSRUN ARGS...]  gang_job, then check "TAG: job NAME
#                           runs": it makes progress on each of NODES within 5 s
#   gang_wait_progress NAME NODE MS     until NAME's file on NODE has a stamp (bounded)
#   gang_overlap A B NODE FROM TO       over 10 ms slots of [FROM, TO) ms: "both a b" (slots
#                           in which both, only A, only B made progress)
#   gang_max_gap NAME NODE FROM TO      the longest time (ms) in [FROM, TO) in which NAME made
#                           no progress on NODE: a frozen job's gaps are a quantum or more,
#                           the kernel's own time-slicing of busy CPUs gives tens of ms
#   gang_first_after NAME NODE T        the first stamp of NAME on NODE at or after T (ms),
#                           or nothing
SPIN=$TOP/build/test/tools/gangspin
require_built "gang: build" "$SPIN"

gang_cluster() {
    PSID_CPUS=$2 PSID_CONF_TOP="gang = { quantum_ms = $3; mpl = 2; };" cluster_up 2
    all_up 5000 || {
        fail "$1: cluster up" "not all up"
        exit 1
    }
    export PSID_SOCKET=$CDIR/psid-0.sock
}

gang_job() {
    local name=$1 secs=$2
    shift 2
    [ $# -gt 0 ] || set -- -N 2
    "$BIN/psrun" "$@" -- sh -c "exec $SPIN $CDIR/$name.\$PSI_NODE $secs" \
        >"$CDIR/$name.out" 2>&1 &
    GJOB=$!
    STRAY+=("$GJOB")
}

gang_start() {
    local tag=$1 name=$2 secs=$3 nodes=$4 n ok=0
    shift 4
    gang_job "$name" "$secs" "$@"
    for n in $nodes; do gang_wait_progress "$name" "$n" 5000 || ok=1; done
    check "$tag: job $name runs" $ok "$(cat "$CDIR/$name.out")"
}

gang_wait_progress() {
    local f=$CDIR/$1.$2
    wait_until "$3" eval "[ -s $f ]"
}

gang_overlap() {
    awk -v from="$4" -v to="$5" '
        { k = FILENAME == ARGV[1] ? 1 : 2 }
        $1 >= from && $1 < to { s = int(($1 - from) / 10); seen[k, s] = 1 }
        END {
            n = int((to - from) / 10)
            for (i = 0; i < n; i++) {
                a = ((1, i) in seen); b = ((2, i) in seen)
                both += a && b; oa += a && !b; ob += b && !a
            }
            printf "%d %d %d\n", both, oa, ob
        }' "$CDIR/$1.$3" "$CDIR/$2.$3"
}

gang_max_gap() {
    awk -v from="$3" -v to="$4" '
        BEGIN { last = from }
        $1 >= from && $1 < to { if ($1 - last > gap) gap = $1 - last; last = $1 }
        END { if (to - last > gap) gap = to - last; printf "%d\n", gap }' "$CDIR/$1.$2"
}

gang_first_after() {
    awk -v t="$3" '$1 >= t { printf "%.0f\n", $1; exit }' "$CDIR/$1.$2"
}
