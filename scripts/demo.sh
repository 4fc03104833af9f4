#!/bin/bash
# demo.sh - the quick start (`make demo`): what works so far, in under 30 seconds.
#
# For now that is RDP, the reliable datagram protocol under the cluster daemon: an rdpbench
# server on 127.0.0.1, and clients that send verified messages to it (every message is checked
# for order, exactly-once delivery and every byte) -- first through RDP's fault injector
# (10 % loss, 5 % duplication, 5 % reordering, 1 % corruption), then side by side with kernel
# TCP. Only loopback is used. The server is stopped by pid on exit, also on failure.
#
# usage: scripts/demo.sh [--help]
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN=${RDPBENCH:-$ROOT/build/bin/rdpbench}
case ${1:-} in
"") ;;
-h | --help)
    sed -n '2,/^set -euo/{/^#/s/^# \{0,1\}//p}' "$0"
    exit 0
    ;;
*)
    echo "usage: scripts/demo.sh [--help]" >&2
    exit 2
    ;;
esac
[[ -x $BIN ]] || {
    echo "demo: $BIN is not built; run: make demo" >&2
    exit 1
}

tmp=$(mktemp -d)
srv=""
cleanup() {
    if [[ -n $srv ]]; then
        kill "$srv" 2>/dev/null || true
        wait "$srv" 2>/dev/null || true
    fi
    rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

bold="" off=""
if [[ -t 1 ]]; then bold=$'\033[1m' off=$'\033[0m'; fi
say() { printf '\n%s== %s%s\n' "$bold" "$*" "$off"; }
# client ARGS...: run an rdpbench client against the server (bounded), show its report
client() {
    echo "\$ rdpbench client $addr $*"
    timeout -k 5 60 "$BIN" client "$addr" --seed 42 "$@" 2>&1 | grep -v '^client: no --key given'
}
t0=$SECONDS

say "1. Start an RDP benchmark server on 127.0.0.1 (TCP control + RDP over UDP, same port)"
"$BIN" server 127.0.0.1:0 >"$tmp/server.log" 2>&1 &
srv=$!
addr=""
for _ in $(seq 100); do
    addr=$(sed -n 's/^server: listening on \([^ ]*\) .*/\1/p' "$tmp/server.log")
    [[ -n $addr ]] && break
    kill -0 "$srv" 2>/dev/null || break
    sleep 0.05
done
[[ -n $addr ]] || {
    cat "$tmp/server.log"
    echo "demo: the server did not start" >&2
    exit 1
}
echo "server pid $srv listening on $addr (no --key: a fixed, public benchmark key)"

say "2. Ping-pong through a hostile network: the client's fault injector drops 10 %, duplicates 5 %,
   reorders 5 % and corrupts 1 % of all packets, both ways. Every echo must come back exactly once,
   in order, byte for byte; retransmissions repair the losses, the MAC rejects the corruption."
client --mode pingpong --size 1-16384 --count 1000 --loss 0.1 --dup 0.05 --reorder 0.05 --corrupt 0.01

say "3. Stream 2000 messages of random size (1 B .. 1 MiB, log-uniform) through the same faults:
   RDP fragments and reassembles them; the server checks each one."
client --mode stream --size 1-1048576 --count 2000 --loss 0.1 --dup 0.05 --reorder 0.05 --corrupt 0.01

say "4. A clean ping-pong, RDP then kernel TCP (TCP_NODELAY) with the same verified messages"
client --mode pingpong --size 1024 --count 5000 --vs-tcp

say "5. Stop the server (pid $srv)"
kill "$srv"
wait "$srv" 2>/dev/null || true
srv=""
echo "done in $((SECONDS - t0)) s. Benchmarks: make bench (bench/RESULTS.md); tests: make check."
