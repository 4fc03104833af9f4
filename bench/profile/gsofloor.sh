#!/bin/bash
# bench/profile/gsofloor.sh - the floor under RDP's large-message round trip across two network
# namespaces: bench/profile/gsofloor.c, a 64 KiB ping-pong over plain UDP with GSO/GRO (no
# header, no MAC, no reliability) against kernel TCP, in alternating rounds, for each given
# size of GSO send. Not part of `make bench`; run it by hand, as root, on a quiet machine.
#
# usage: bench/profile/gsofloor.sh [--help] [MTU [SLICE...]]
#        MTU of the veth pair (1500), SLICE bytes per GSO send (16384 32768 65000)
# env:   ROUNDS (5), SIZE (65536), DGRAM (MTU - 28: bytes per datagram; larger, and each send
#        of SLICE bytes is one datagram that the kernel cuts into IP fragments, no GSO)
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
# shellcheck source-path=SCRIPTDIR source=../lib/common.sh
. "$HERE/../lib/common.sh"
bench_help_arg "$0" "${1:-}"
mtu=${1:-1500}
shift || true
slices=("$@")
((${#slices[@]})) || slices=(16384 32768 65000)
[[ $mtu =~ ^[0-9]+$ ]] || {
    echo "usage: bench/profile/gsofloor.sh [--help] [MTU [SLICE...]]" >&2
    exit 2
}
((EUID == 0)) || {
    echo "gsofloor: needs root (network namespaces)" >&2
    exit 1
}
tmp=$(mktemp -d)
srv=
cleanup() {
    [[ -n $srv ]] && kill "$srv" 2>/dev/null && wait "$srv" 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT
cc -std=gnu11 -O2 -o "$tmp/gsofloor" "$ROOT/bench/profile/gsofloor.c"
# shellcheck source-path=SCRIPTDIR source=../../test/netns/lib/netns.sh
. "$ROOT/test/netns/lib/netns.sh"
ns_up 2 "gf$$"
ns_noloss
ns_mtu "$mtu"
echo "# gsofloor: $(date -u +%FT%TZ), kernel $(uname -r), $(nproc) cpus, MTU $mtu"
for slice in "${slices[@]}"; do
    ip netns exec "$(ns_name 1)" "$tmp/gsofloor" server "$(ns_addr 1)" 7100 &
    srv=$!
    ns_wait_port 1 7100 tcp 5
    ip netns exec "$(ns_name 0)" "$tmp/gsofloor" client "$(ns_addr 1)" 7100 "$mtu" "$slice" \
        "${ROUNDS:-5}" "${SIZE:-65536}" "${DGRAM:-$((mtu - 28))}"
    kill "$srv"
    wait "$srv" 2>/dev/null || true
    srv=
done
ns_down
