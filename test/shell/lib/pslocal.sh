# shellcheck shell=bash
# test/shell/lib/pslocal.sh - what the pslocal tests (test/shell/pslocal_loopback.sh,
# test/netns/pslocal.sh) share. Source it after setting name (the test's name); it sets ROOT,
# BIN and PSLOCAL, and exits with SKIP if pslocal or psid is not built.
#   pass WHAT / fail WHAT [WHY]     result lines "PASS: name: WHAT"; fail counts FAILS
#   check WHAT CMD...               pass WHAT if CMD succeeds, else fail WHAT
#   pl ARG...                       pslocal ARG..., bounded to 30 s
#   psids_of DIR / count_psids DIR  pids / number of the running psids of the cluster in DIR
#   wait_no_psids DIR               up to 5 s until no psid of DIR runs (status 0), else 1
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
