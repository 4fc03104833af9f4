#!/bin/bash
# install-deps.sh - install the Debian 12 packages pscluster needs, and only those missing.
#
# Every public make target runs this first, asking for its own set; when everything is
# present it prints nothing. The build set is always wanted; the options add to it:
#   (none)    build: what compiling the libraries and tools needs (make, make install)
#   --check   the tests and checks: CUnit, clang and libFuzzer, clang-format, shellcheck,
#             iproute2, nftables, ping, procps, jq, the real programs of the preload
#             tests, and MPICH for the MPI tests (make check, make soak, make fuzz)
#   --demo    what the demo needs beyond the build: curl, python3, sockperf (make demo)
#   --bench   the benchmark peers and the namespace tools the benchmarks use (make bench)
#   --deb     the Debian packaging tools, and what the packages' smoke run uses (make deb,
#             make deb-check, which CI runs)
# With --check, --demo, --bench or --deb, as root, it also adds the system user psid's engine runs as
# (psid.user, default pscluster: conf/psid.conf) when it is missing, and says so.
#
# usage: scripts/install-deps.sh [--check] [--demo] [--bench] [--deb] [--list] [PKG...]
#   --list    print the packages that would be installed (one line, nothing if none), exit 0
#   PKG...    further packages to require (for scripts that need one more tool)
#
# As root it runs `apt-get update` only when a package has no install candidate or the first
# install attempt fails (an empty or stale apt cache), then
# `apt-get install -y --no-install-recommends`, and prints what it installs. Not as root it
# prints the command for root to run (`apt-get update && apt-get install ...`) and exits 1.
set -euo pipefail

usage() {
    echo "usage: scripts/install-deps.sh [--check] [--demo] [--bench] [--deb] [--list] [PKG...]" >&2
    exit 2
}

# clang-14 only recommends the compiler-rt package that carries libFuzzer and the sanitizer
# runtimes; --no-install-recommends therefore needs it named. Its name follows clang's major.
clang_major=14
if ver=$(dpkg-query -W -f='${Version}' clang 2>/dev/null) && [[ $ver =~ ^([0-9]+:)?([0-9]+) ]]; then
    clang_major=${BASH_REMATCH[2]}
fi

# make all / make install: the compiler and make, and the libraries pkg-config finds
# (libconfig, libsodium, libcrypto, libnl-route-3.0, libseccomp: psid's engine's sandbox).
build_pkgs=(
    build-essential pkg-config
    libconfig-dev libsodium-dev libssl-dev libnl-3-dev libnl-route-3-dev libseccomp-dev
)
# Intel IPsec-MB, the fast packet MAC (rdp/mac_ipsecmb.c), exists for amd64 only; elsewhere
# RDP computes the MAC with libsodium and libcrypto.
if [[ $(dpkg --print-architecture 2>/dev/null) == amd64 ]]; then
    build_pkgs+=(libipsec-mb-dev)
fi
# make check / make soak / make fuzz: the unit tests (CUnit), the integration and namespace
# tests (ss and ip, nft, ping, pgrep, jq), the real programs of the preload tests (nc, socat, curl,
# python3, redis, and iperf3 and sockperf, which make bench uses too), the fuzz targets
# (clang, libFuzzer) and the style checks; MPICH (mpicc, mpiexec.hydra) for the MPI programs
# the PMI tests run under psrun (test/mpi/, test/shell/mpi_pmi.sh), and Open MPI (its flux
# component loads libpmi.so: test/shell/mpi_lib.sh).
check_pkgs=(
    libcunit1-dev
    iproute2 nftables iputils-ping procps jq
    clang "libclang-rt-${clang_major}-dev"
    clang-format shellcheck
    netcat-openbsd socat curl python3 redis-server redis-tools iperf3 sockperf
    mpich libmpich-dev openmpi-bin libopenmpi-dev
)
# make demo: scripts/demo.sh uses the built tools, curl and python3's http.server for the
# step that shows an unmodified program under the preload library, and sockperf for the
# same-node round trip.
demo_pkgs=(curl python3 sockperf)
# make bench: the peers, and the tools of the namespace paths (bench/rdp.sh, bench/psid.sh).
bench_pkgs=(
    sockperf iperf3 hyperfine mpich linux-perf valgrind stress-ng
    iproute2 nftables iputils-ping procps jq
)
# make deb / make deb-check: dpkg-buildpackage (dpkg-dev), debhelper, lintian, and what
# scripts/deb-check.sh drives (ps and pgrep, jq for psstat --json)
deb_pkgs=(dpkg-dev debhelper lintian procps jq)

want=("${build_pkgs[@]}")
list_only=0
want_user=0
while (($#)); do
    case $1 in
    --check)
        want+=("${check_pkgs[@]}")
        want_user=1
        ;;
    --demo)
        want+=("${demo_pkgs[@]}")
        want_user=1
        ;;
    --bench)
        want+=("${bench_pkgs[@]}")
        want_user=1
        ;;
    --deb)
        want+=("${deb_pkgs[@]}")
        want_user=1
        ;;
    --list) list_only=1 ;;
    -h | --help)
        sed -n '2,/^set -euo/{/^#/s/^# \{0,1\}//p}' "$0"
        exit 0
        ;;
    -*)
        echo "install-deps: unknown option $1" >&2
        usage
        ;;
    *) want+=("$1") ;;
    esac
    shift
done

# not_installed PKG...: those of the PKGs dpkg does not say are installed, one a line (one
# dpkg-query for all of them: make check asks first, each time)
not_installed() {
    local p st
    local -A have=()
    (($#)) || return 0
    while read -r p st; do
        [[ $st == "install ok installed" ]] && have[$p]=1
    done < <(dpkg-query -W -f='${Package} ${Status}\n' "$@" 2>/dev/null || true)
    for p; do [[ -n ${have[$p]:-} ]] || echo "$p"; done
}

asked=()
declare -A seen=()
for p in "${want[@]}"; do
    [[ -n ${seen[$p]:-} ]] && continue
    seen[$p]=1
    asked+=("$p")
done
mapfile -t missing < <(not_installed "${asked[@]}")

if ((list_only)); then
    ((${#missing[@]})) && echo "${missing[*]}"
    exit 0
fi

# psid started as root runs its engine as this user (psid/privcall.c); tests and the demo
# start psid as root. A psid not started as root needs no user.
if ((want_user && EUID == 0)) && ! getent passwd pscluster >/dev/null; then
    echo "install-deps: adding the system user pscluster (psid's unprivileged engine)"
    useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin pscluster
fi
((${#missing[@]})) || exit 0

if ((EUID != 0)); then
    # The update too: on a fresh system the package lists may be empty.
    echo "install-deps: missing Debian packages: ${missing[*]}" >&2
    echo "install-deps: run this as root (for example after sudo -i or su -), then try again:" >&2
    echo "apt-get update && apt-get install -y --no-install-recommends ${missing[*]}" >&2
    exit 1
fi

echo "install-deps: installing: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt_opts=(-y -q --no-install-recommends -o DPkg::Lock::Timeout=300)

# A package without an install candidate means the package lists are absent or too old.
need_update=0
for p in "${missing[@]}"; do
    policy=$(apt-cache policy "$p" 2>/dev/null || true)
    if [[ ! $policy =~ Candidate:\ [^\(] ]]; then
        need_update=1
        break
    fi
done

# apt's chatter goes to a log that is shown only when something fails.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
log=$tmp/apt.log
run_apt() { # run_apt ARGS... -> apt-get ARGS, output to the log; on failure show its tail
    if ! apt-get "$@" >>"$log" 2>&1; then
        echo "install-deps: apt-get $1 failed:" >&2
        tail -n 40 "$log" >&2
        return 1
    fi
}

updated=0
update() {
    ((updated)) && return 0
    updated=1
    run_apt update -q -o DPkg::Lock::Timeout=300
}

((need_update)) && update
if ! run_apt install "${apt_opts[@]}" "${missing[@]}"; then
    # Stale lists point at files the mirror no longer has: refresh once and retry.
    ((updated)) && exit 1
    echo "install-deps: refreshing the package lists and trying again" >&2
    update
    run_apt install "${apt_opts[@]}" "${missing[@]}"
fi

mapfile -t still < <(not_installed "${missing[@]}")
if ((${#still[@]})); then
    echo "install-deps: still missing after install: ${still[*]}" >&2
    exit 1
fi

# libFuzzer must link (make soak and make fuzz build with -fsanitize=fuzzer).
if [[ " ${missing[*]} " == *" clang "* || " ${missing[*]} " == *" libclang-rt-"* ]]; then
    printf '%s\n' '#include <stddef.h>' '#include <stdint.h>' \
        'int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { (void)d; (void)n; return 0; }' \
        >"$tmp/f.c"
    if ! clang -fsanitize=fuzzer,address,undefined "$tmp/f.c" -o "$tmp/f" >"$tmp/log" 2>&1; then
        echo "install-deps: warning: clang -fsanitize=fuzzer does not link:" >&2
        cat "$tmp/log" >&2
    fi
fi
echo "install-deps: installed ${#missing[@]} package(s)"
