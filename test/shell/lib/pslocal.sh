# shellcheck shell=bash
# test/shell/lib/pslocal.sh - what the pslocal tests (test/shell/pslocal_loopback.sh,
# test/netns/pslocal.sh) share. Source it after setting name (the test's name); it sets ROOT,
# BIN and PSLOCAL, and exits with SKIP if pslocal or psid is not built.
#   pass WHAT / fail WHAT [WHY]     result lines "PASS: name: WHAT"; fail counts FAILS
#   check WHAT CMD...               pass WHAT if CMD succeeds, else fail WHAT
#   pl ARG...                       pslocal ARG..., bounded to 30 s
#   psids_of DIR / count_psids DIR  pids / number of the running psids of the cluster in DIR
#   wait_no_psids DIR               up to 5 s until no psid of DIR runs (status 0), else 1
#   cluster_tmp_up NODES PREFIX     a cluster of NODES in D=TMP/c, TMP=/tmp/PREFIX.XXXXXX, its
#                                   environment here; on exit OWN_PIDS killed, the cluster
#                                   down, TMP removed; "cluster up" fails and exits if not up
#   psrun_in SECONDS OUT ARG...     psrun ARG... bounded, output in OUT, status in RC
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
BIN=$ROOT/build/bin
PSLOCAL=$BIN/pslocal
# shellcheck disable=SC2154 # name: set by the test that sources this
if [[ ! -x $PSLOCAL || ! -x $BIN/psid ]]; then
    echo "SKIP: $name: build/bin/pslocal or build/bin/psid is not built"
    exit 0
fi

FAILS=0
pass() { echo "PASS: $name: $1"; }
fail() {
    echo "FAIL: $name: $1${2:+ ($2)}"
    FAILS=$((FAILS + 1))
}
check() {
    local what=$1
    shift
    if "$@"; then pass "$what"; else fail "$what"; fi
}
pl() { timeout 30 "$PSLOCAL" "$@"; }

# by their command line (zombies have none)
psids_of() { pgrep -f -- "-f $1/psid.conf" || true; }
count_psids() { psids_of "$1" | grep -c . || true; }
wait_no_psids() {
    local deadline=$((SECONDS + 5))
    while ((SECONDS < deadline)); do
        [[ $(count_psids "$1") == 0 ]] && return 0
        sleep 0.05
    done
    return 1
}

OWN_PIDS=()
cluster_tmp_cleanup() {
    local p
    trap '' INT TERM
    for p in "${OWN_PIDS[@]}"; do kill -KILL "$p" 2>/dev/null; done
    [[ -d $D ]] && timeout 20 "$PSLOCAL" down --dir "$D" >/dev/null 2>&1
    rm -rf "$TMP"
}
cluster_tmp_up() {
    TMP=$(mktemp -d "/tmp/$2.XXXXXX")
    D=$TMP/c
    trap cluster_tmp_cleanup EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
    pl up -n "$1" --dir "$D" >"$TMP/up.out" 2>&1 || {
        fail "cluster up" "$(cat "$TMP/up.out")"
        exit 1
    }
    eval "$("$PSLOCAL" env --dir "$D")"
}
psrun_in() {
    local secs=$1 out=$2
    shift 2
    timeout "$secs" "$BIN/psrun" "$@" >"$out" 2>&1
    # shellcheck disable=SC2034 # RC: the caller's
    RC=$?
}
