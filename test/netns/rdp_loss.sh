#!/bin/bash
# rdp_loss.sh - RDP delivers every message complete, in order and exactly once across a lossy
# link: two network namespaces on a private bridge, nftables dropping 10 % of the packets
# arriving in each namespace (so both directions), and an rdpbench stream of log-uniform
# random sizes 1 B .. 1 MiB from a client in namespace 0 to a server in namespace 1.
# rdpbench verifies the index and every byte of each message and exits 1 on any loss,
# duplicate, reordering, corruption, lost connection or stall (--timeout).
#
# Count: RDP_LOSS_COUNT (default 10000 messages, ~760 MB of payload; see the PASS line for
# the time it took). Key: a fresh random key file (exercises --key).
# Prints PASS: rdp_loss_netns, FAIL: rdp_loss_netns: WHY, or SKIP (not root).
#
# usage: test/netns/rdp_loss.sh [--help]   (run by scripts/run-tests.sh in `make check`)
set -euo pipefail

case ${1:-} in
"") ;;
-h | --help)
    sed -n '2,/^set -euo/{/^#/s/^# \{0,1\}//p}' "$0"
    exit 0
    ;;
*)
    echo "usage: test/netns/rdp_loss.sh [--help]" >&2
    exit 2
    ;;
esac

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
BIN=${RDPBENCH:-$ROOT/build/bin/rdpbench}
COUNT=${RDP_LOSS_COUNT:-10000}
LOSS=10
NAME=rdp_loss_netns

if ((EUID != 0)); then
    echo "SKIP: $NAME: needs root"
    exit 0
fi
# shellcheck source-path=SCRIPTDIR source=lib/netns.sh
. "$HERE/lib/netns.sh"
ns_require_root

fail() {
    echo "FAIL: $NAME: $*"
    exit 1
}
[[ -x $BIN ]] || fail "$BIN not built (make build-all)"

tmp=$(mktemp -d)
srv_pid=""
cleanup() {
    if [[ -n $srv_pid ]]; then
        kill "$srv_pid" 2>/dev/null || true
        wait "$srv_pid" 2>/dev/null || true
    fi
    rm -rf "$tmp"
}
trap cleanup EXIT # ns_up chains this trap after its own ns_down
ns_up 2 || fail "could not set up the namespaces"
ns_loss "$LOSS" || fail "could not install the nftables loss rule"

(umask 077 && head -c 32 /dev/urandom >"$tmp/key")
srv_ip=$(ns_addr 1)
port=7411

# The server runs in namespace 1 until we kill it (or ns_down does).
ns_exec 1 "$BIN" server "$srv_ip:$port" --once --key "$tmp/key" --timeout 30 \
    >"$tmp/server.log" 2>&1 &
srv_pid=$!
if ! ns_wait_port 1 "$port" tcp 10; then
    cat "$tmp/server.log"
    fail "server did not start"
fi

t0=$EPOCHREALTIME
set +e
# Bounded: rdpbench gives up after 30 s without progress; timeout(1) caps the whole run.
timeout -k 5 240 ip netns exec "$(ns_name 0)" "$BIN" client "$srv_ip:$port" --mode stream \
    --size 1-1048576 --count "$COUNT" --key "$tmp/key" --timeout 30 >"$tmp/client.log" 2>&1
rc=$?
set -e
secs=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')
cat "$tmp/client.log"

# The server (--once) exits by itself after the session; wait for it, bounded (15 s: its
# last acknowledgements may be lost too, and a loaded make check once needed more than 5 s).
for _ in $(seq 150); do
    kill -0 "$srv_pid" 2>/dev/null || break
    sleep 0.1
done
srv_rc=0
if kill -0 "$srv_pid" 2>/dev/null; then
    kill "$srv_pid" 2>/dev/null || true
    wait "$srv_pid" 2>/dev/null || true
    srv_rc=124
else
    wait "$srv_pid" || srv_rc=$?
fi
srv_pid=""
echo "--- server:"
cat "$tmp/server.log"

((rc == 0)) || fail "client exited with status $rc after $secs s (see above)"
((srv_rc == 0)) || fail "server exited with status $srv_rc"
grep -q "^rdp stream: $COUNT messages .* verified" "$tmp/client.log" ||
    fail "client did not report $COUNT verified messages"
grep -q "^server: $COUNT messages .* verified" "$tmp/server.log" ||
    fail "server did not report $COUNT verified messages"
# the loss rule did drop packets (else this would be a lossless run)
grep -Eq "^client rdp: .*, retransmits [1-9][0-9]*," "$tmp/client.log" ||
    fail "the client retransmitted nothing: no packet was lost"
echo "PASS: $NAME ($COUNT messages of 1 B..1 MiB, ${LOSS}% loss each way, $secs s)"
