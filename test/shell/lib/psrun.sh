# test/shell/lib/psrun.sh - what the psrun suites share. Source it after lib/cluster.sh:
#   PSRUN                   build/bin/psrun; the suite is skipped (SKIP line, exit 0) unless built
#   run CMD...              CMD bounded by $TMO s (default 30), stdin /dev/null: stdout in
#                           $OUT, stderr in $ERR, status in $RC
#   settle                  wait (bounded) until node 0 sees no task anywhere: before a test
#                           that needs the nodes' CPUs exactly free
#   per_node                "node:count " pairs of the second column of its input (PSI_NODE)
# shellcheck shell=bash
PSRUN=$BIN/psrun
[ -x "$PSRUN" ] || {
    echo "SKIP: $(basename "$0" .sh): psrun not built"
    exit 0
}
# shellcheck disable=SC2034 # RC, OUT and ERR are for the suite that sources this
run() {
    timeout -k 2 "${TMO:-30}" "$@" >"$CDIR/out" 2>"$CDIR/err" </dev/null
    RC=$?
    OUT=$(cat "$CDIR/out")
    ERR=$(cat "$CDIR/err")
}
settle() { idle 3000 || fail "$(basename "$0" .sh): nodes idle" "tasks still counted after 3 s"; }
per_node() { awk '{print $2}' | sort | uniq -c | awk '{print $2 ":" $1}' | tr '\n' ' '; }
