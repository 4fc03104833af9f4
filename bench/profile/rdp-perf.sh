#!/bin/bash
# bench/profile/rdp-perf.sh - where RDP's time goes: profile rdpbench (server and client) with
# `perf record -a -g -e cpu-clock` and sort its samples into cost categories by the leaf frame
# and the system call on the call chain:
#   MAC               the per-packet AES-256-GCM / ChaCha20-Poly1305 over header + payload
#                     (Intel IPsec-MB where built in; else libsodium below 2 KiB, libcrypto above)
#   kernel: SYSCALL   kernel time under that system call (sendmmsg includes the loopback or
#                     veth delivery to the receiver, which runs in the sender's context)
#   user copies       libc memcpy/memmove (fragmenting into packets, reassembly, echo copies)
#   generate/verify   rdpbench's own message generation and checking (TCP runs pay it too)
#   librdp + other    the protocol code itself
# Not part of `make bench` (it lives outside bench/*.sh); run it by hand, as root, on a quiet
# machine: the first line of each case says which share of all samples was rdpbench's.
#
# usage: bench/profile/rdp-perf.sh [--help] [CASE...]
# cases: mac lo-pp16 lo-pp64k lo-st64k lo-st64k-cc ns1500-pp64k ns1500-st64k ns9000-pp64k
#        ns1500-pp64k-vs (default: all; ns* need root; mac = bench/profile/macspeed.c, MAC time
#        per packet size; -cc: with --mac chacha20poly1305 instead of the default, AES-256-GCM
#        where the CPU has it; -vs: the same round trips over kernel TCP in the same run, and
#        both sides' CPU time per round trip by category, RDP's beside TCP's)
# env:   RDPBENCH (build/bin/rdpbench), FREQ (perf sampling Hz, 4999), KEEP=1 keeps perf.data
#        files in bench/out/perf/
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
# shellcheck source-path=SCRIPTDIR source=../lib/common.sh
. "$HERE/../lib/common.sh"
BIN=${RDPBENCH:-$ROOT/build/bin/rdpbench}
FREQ=${FREQ:-4999}
ALL=(mac lo-pp16 lo-pp64k lo-st64k lo-st64k-cc ns1500-pp64k ns1500-st64k ns9000-pp64k ns1500-pp64k-vs)
cases=()
for a in "$@"; do
    case $a in
    -h | --help)
        bench_help "$0"
        exit 0
        ;;
    mac | lo-pp16 | lo-pp64k | lo-st64k | lo-st64k-cc | ns1500-pp64k | ns1500-st64k | ns9000-pp64k | \
        ns1500-pp64k-vs) cases+=("$a") ;;
    *)
        echo "usage: bench/profile/rdp-perf.sh [--help] [CASE...]  (cases: ${ALL[*]})" >&2
        exit 2
        ;;
    esac
done
((${#cases[@]})) || cases=("${ALL[@]}")
command -v perf >/dev/null || {
    echo "rdp-perf: needs perf (scripts/install-deps.sh --bench installs linux-perf)" >&2
    exit 1
}
[[ -x $BIN ]] || {
    echo "rdp-perf: $BIN not built" >&2
    exit 1
}

tmp=$(mktemp -d)
cleanup() {
    stop_server
    rm -rf "$tmp"
}
trap cleanup EXIT


# categorise DATA [TRIPS]: perf script output -> "share category" lines, rdpbench samples only;
# with TRIPS (a --vs-tcp ping-pong of that many round trips, warm-up included), CPU time per
# round trip by category for the RDP phase and the TCP phase (from the first sample in TCP's
# send or receive after one in RDP's sendmmsg, give or take the control connection's few)
categorise() {
    perf script -i "$1" -F comm,pid,ip,sym,dso 2>/dev/null | awk -v trips="${2:-0}" -v freq="$FREQ" '
        function flush() {
            if (!n) return
            total++
            if (comm ~ /^rdpbench/) { # also a copy under another name (RDPBENCH)
                rdp++
                if (tcp && ++ntcp >= 10) intcp = 1 # not the few of the control connection
                if (leaf ~ /libsodium|libcrypto|libIPSec_MB/) c = "MAC (IPsec-MB, libsodium, libcrypto)"
                else if (leaf ~ /kernel\.kallsyms/) c = "kernel: " (sc != "" ? sc : "irq/softirq/other")
                else if (leaf ~ / (__)?mem(move|cpy)/) c = "user copies (libc memcpy/memmove)"
                else if (leaf ~ / (msg_check|make_msg|msg_fill)/) c = "rdpbench generate/verify"
                else if (leaf ~ /rdpbench\)/) c = "librdp + rdpbench other"
                else c = "other user code (libc, vdso)"
                cnt[c]++
                ph[intcp + 0, c]++
                phn[intcp + 0]++
            }
            n = 0; sc = ""; tcp = 0
        }
        /^\t/ {
            if (n == 0) leaf = $0
            if (sc == "" && match($0, /__x64_sys_[a-z0-9_]+/)) sc = substr($0, RSTART + 10, RLENGTH - 10)
            if (sc == "" && match($0, / (ksys|do)_(read|write|readv|writev) /)) {
                sc = substr($0, RSTART + 1, RLENGTH - 2)
                sub(/^(ksys|do)_/, "", sc)
            }
            if ($0 ~ /__x64_sys_sendmmsg/) rdpseen = 1
            if (rdpseen && $0 ~ / tcp_(sendmsg|recvmsg) /) tcp = 1
            n++; next
        }
        /^ *$/ { flush(); next }
        { flush(); comm = $1; n = 0 }
        END {
            flush()
            printf "rdpbench: %d of %d samples (%.0f %% of both CPUs'\'' samples)\n", rdp, total, 100 * rdp / (total ? total : 1)
            if (trips > 0) {
                us = 1e6 / freq / trips
                printf "%9.1f %9.1f  us of CPU per round trip, both sides: RDP, TCP\n", phn[0] * us, phn[1] * us
                for (k in cnt) printf "%9.1f %9.1f  %s\n", ph[0, k] * us, ph[1, k] * us, k
            } else {
                for (k in cnt) printf "%5.1f %%  %s\n", 100 * cnt[k] / (rdp ? rdp : 1), k
            }
        }' | { read -r head; echo "$head"; sort -rn; }
}

profile() { # profile CASE [TRIPS] PREFIX... -- CLIENT-ARGS...  (TRIPS: see categorise)
    local name=$1 trips=0 pre=() data
    shift
    [[ $1 =~ ^[0-9]+$ ]] && trips=$1 && shift
    while [[ $1 != -- ]]; do
        pre+=("$1")
        shift
    done
    shift
    data=$tmp/$name.data
    echo
    echo "### $name: rdpbench client SERVER $*"
    perf record -a -g -e cpu-clock -F "$FREQ" -o "$data" -- \
        "${pre[@]}" "$BIN" client "$SRV_ADDR" "$@" --seed 1 2>&1 |
        grep -E '^(rdp|tcp) (stream|pingpong):|^ratio' || true
    categorise "$data" "$trips"
    if [[ ${KEEP:-0} == 1 ]]; then
        mkdir -p "$ROOT/bench/out/perf"
        cp "$data" "$ROOT/bench/out/perf/"
    fi
}

echo "# rdp-perf: $(date -u +%Y-%m-%dT%H:%M:%SZ), kernel $(uname -r), $(nproc) cpus, load $(cut -d' ' -f1-3 /proc/loadavg)"
need_lo=0 need_ns=0
for c in "${cases[@]}"; do
    case $c in
    mac)
        echo
        mb=()
        [[ -e /usr/include/intel-ipsec-mb.h ]] && mb=(-DHAVE_IPSEC_MB -lIPSec_MB)
        echo "### mac: cc -O2 bench/profile/macspeed.c -lsodium -lcrypto ${mb[*]} && ./macspeed"
        cc -std=gnu11 -O2 -o "$tmp/macspeed" "$HERE/macspeed.c" -lsodium -lcrypto "${mb[@]}"
        "$tmp/macspeed"
        ;;
    lo-*) need_lo=1 ;;
    *) need_ns=1 ;;
    esac
done
if ((need_lo)); then
    start_server 127.0.0.1
    for c in "${cases[@]}"; do
        case $c in
        lo-pp16) profile "$c" env -- --mode pingpong --size 16 --count 20000 ;;
        lo-pp64k) profile "$c" env -- --mode pingpong --size 65536 --count 5000 ;;
        lo-st64k) profile "$c" env -- --mode stream --size 65536 --count 20000 ;;
        lo-st64k-cc) profile "$c" env -- --mode stream --size 65536 --count 20000 --mac chacha20poly1305 ;;
        esac
    done
    stop_server
fi
if ((need_ns)); then
    if ((EUID != 0)); then
        echo "rdp-perf: namespace cases skipped (need root)"
        exit 0
    fi
    # shellcheck source-path=SCRIPTDIR source=../../test/netns/lib/netns.sh
    . "$ROOT/test/netns/lib/netns.sh"
    ns_up 2 "rp$$"
    start_server "$(ns_addr 1)" ip netns exec "$(ns_name 1)"
    for c in "${cases[@]}"; do
        case $c in
        ns1500-pp64k) profile "$c" ip netns exec "$(ns_name 0)" -- --mode pingpong --size 65536 --count 2000 ;;
        ns1500-st64k) profile "$c" ip netns exec "$(ns_name 0)" -- --mode stream --size 65536 --count 5000 ;;
        ns1500-pp64k-vs)
            profile "$c" 4100 ip netns exec "$(ns_name 0)" -- --mode pingpong --size 65536 --count 4000 \
                --warmup 100 --vs-tcp
            ;;
        ns9000-pp64k)
            ns_mtu 9000
            profile "$c" ip netns exec "$(ns_name 0)" -- --mode pingpong --size 65536 --count 2000 --mtu 9000
            ns_mtu 1500
            ;;
        esac
    done
    stop_server
    ns_down
fi
