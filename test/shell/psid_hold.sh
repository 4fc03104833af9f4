#!/bin/bash
# psid_hold.sh - a held spawn (PSF_HOLD: psrun's output files and --bcast) starts its ranks
# whenever its client says go, however long the client took: the spawn credentials are made
# at the go, not at the placement (their life is 120 s, spawncred.h). On a 2-node loopback
# cluster, jobdrive (test/tools) holds a spawn of 2 ranks, one per node, and lets it go:
#  - after 1 s: both ranks start, on both nodes, and exit 0;
#  - with PSID_HOLD_LONG=1 (make soak), after 125 s, longer than a credential lives: the
#    same (before the credentials were made at the go, both ranks failed: "expired").
# Every process a check starts is ended by pid on exit (cluster.sh).
# shellcheck source-path=SCRIPTDIR source=lib/cluster.sh
source "$(dirname "$0")/lib/cluster.sh"
JD=$TOP/build/test/tools/jobdrive
require_built hold "$JD"
PSID_CPUS=1 cluster_ready 2 hold # a CPU a node: the ranks go one to each
export PSID_SOCKET=$CDIR/psid-0.sock

# held MS: a held spawn of 2 ranks (true), let go MS ms after the placement; checked
held() {
    local ms=$1 out rc
    out=$(JOBDRIVE_HOLD_MS=$ms timeout $((ms / 1000 + 60)) "$JD" run 2 true 2>&1)
    rc=$?
    [ $rc -eq 0 ] && grep -q "^go after $ms ms$" <<<"$out" &&
        grep -q "^rank 0 started .* on node 0$" <<<"$out" &&
        grep -q "^rank 1 started .* on node 1$" <<<"$out" &&
        grep -q "^rank 0 exit 0$" <<<"$out" && grep -q "^rank 1 exit 0$" <<<"$out"
    check "hold: a spawn held for $((ms / 1000)) s starts both ranks at its go, on both nodes, and they exit 0" $? \
        "rc $rc: $(tr '\n' ';' <<<"$out" | head -c 600)"
}
held 1000
if [ "${PSID_HOLD_LONG:-0}" = 1 ]; then
    held "${PSID_HOLD_LONG_MS:-125000}"
else
    echo "SKIP: hold: a spawn held longer than a credential lives (125 s: make soak, PSID_HOLD_LONG=1)"
fi
exit $((FAILS > 0))
