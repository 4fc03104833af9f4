#!/bin/bash
# test/shell/install_deps.sh - scripts/install-deps.sh against a fake dpkg, dpkg-query, apt-get
# and apt-cache first on PATH, so that what this machine has installed does not matter and
# nothing is installed:
#   - --list prints exactly the build set, plus the --check, --demo, --bench or --deb set asked for
#     (each package once); libipsec-mb-dev on amd64 only; libclang-rt-N-dev after clang's N;
#     only the packages missing, nothing when none is
#   - not as root (setpriv to nobody when the test runs as root): with the build set present
#     plain `install-deps.sh` prints nothing and exits 0 (a user can build); with packages
#     missing it prints "apt-get update && apt-get install -y --no-install-recommends PKGS",
#     exits 1 and runs no apt-get
#   - as root (only when the test runs as root): installs exactly the missing packages and
#     says so, runs `apt-get update` only when a package has no install candidate, and does
#     nothing at all when everything is present
#   - an unknown option prints the usage and exits 2; --help exits 0
set -u
# shellcheck source-path=SCRIPTDIR source=lib/cluster.sh
. "$(dirname "$0")/lib/cluster.sh"
CDIR=$(mktemp -d)
chmod 755 "$CDIR" # nobody runs the script copy and the fakes in here
F=$CDIR/fake
mkdir -p "$F/bin"
# a copy, so that nobody can read it wherever the tree is
cp "$TOP/scripts/install-deps.sh" "$F/install-deps.sh"
chmod 755 "$F" "$F/install-deps.sh"

# The fakes' state: installed (one package a line), arch, version-PKG (dpkg's ${Version}),
# nocandidate (packages apt-cache has no candidate for), apt.log (every apt-get call).
# dpkg-query -W -f=FORMAT PKG...: FORMAT (\${Package}, \${Status}, \${Version}, backslash
# escapes) for each PKG installed; "no packages found" and exit 1 for the others
cat >"$F/bin/dpkg-query" <<EOF
#!/bin/bash
fmt= pkgs=() rc=0
for a; do case \$a in -W) ;; -f=*) fmt=\${a#-f=} ;; *) pkgs+=("\$a") ;; esac; done
declare -A inst=()
while read -r p; do [[ -n \$p ]] && inst[\$p]=1; done <"$F/installed"
for pkg in "\${pkgs[@]}"; do
    if [[ -z \${inst[\$pkg]:-} ]]; then
        echo "dpkg-query: no packages found matching \$pkg" >&2
        rc=1
        continue
    fi
    out=\${fmt//'\${Package}'/\$pkg}
    out=\${out//'\${Status}'/install ok installed}
    if [[ \$out == *'\${Version}'* ]]; then
        ver=1.0-1
        [[ -f "$F/version-\$pkg" ]] && ver=\$(<"$F/version-\$pkg")
        out=\${out//'\${Version}'/\$ver}
    fi
    printf '%b' "\$out"
done
exit \$rc
EOF
cat >"$F/bin/dpkg" <<EOF
#!/bin/bash
[[ \$1 == --print-architecture ]] && cat "$F/arch"
EOF
cat >"$F/bin/apt-cache" <<EOF
#!/bin/bash
if grep -qxF -- "\$2" "$F/nocandidate"; then
    echo "  Candidate: (none)"
else
    echo "  Candidate: 1.0-1"
fi
EOF
cat >"$F/bin/apt-get" <<EOF
#!/bin/bash
echo "\$*" >>"$F/apt.log"
[[ " \$* " == *" install "* ]] || exit 0
skip=0
for a; do
    if ((skip)); then skip=0; continue; fi
    case \$a in -o) skip=1 ;; -*|install) ;; *) echo "\$a" >>"$F/installed" ;; esac
done
EOF
chmod 755 "$F"/bin/*

# the sets (the build set without libipsec-mb-dev, which amd64 adds)
BUILD="build-essential pkg-config libconfig-dev libsodium-dev libssl-dev libnl-3-dev"
BUILD+=" libnl-route-3-dev libseccomp-dev"
CHECK="libcunit1-dev iproute2 nftables iputils-ping procps jq clang libclang-rt-14-dev"
CHECK+=" clang-format shellcheck netcat-openbsd socat curl python3 redis-server redis-tools"
CHECK+=" iperf3 sockperf mpich libmpich-dev openmpi-bin libopenmpi-dev"
BENCH="sockperf iperf3 hyperfine mpich linux-perf valgrind stress-ng iproute2"
BENCH+=" nftables iputils-ping procps jq"
DEB="dpkg-dev debhelper lintian procps jq"

# state ARCH [PKG...]: a fresh fake system of ARCH with PKG... installed
state() {
    echo "$1" >"$F/arch"
    shift
    printf '%s\n' "$@" >"$F/installed"
    : >"$F/nocandidate"
    rm -f "$F"/version-*
    : >"$F/apt.log"
    chmod 666 "$F/apt.log" # so that an apt-get call by nobody would show
}

# deps ARG... / deps_user ARG...: the script as this user / as nobody; sets out, err, rc
# (run_deps CMD...: CMD's standard output, standard error and exit status)
run_deps() {
    rc=0
    "$@" >"$CDIR/out" 2>"$CDIR/err" || rc=$?
    out=$(cat "$CDIR/out")
    err=$(cat "$CDIR/err")
}
deps() { run_deps env PATH="$F/bin:$PATH" bash "$F/install-deps.sh" "$@"; }
deps_user() {
    if ((EUID == 0)); then
        run_deps setpriv --reuid=nobody --regid=nogroup --clear-groups \
            env PATH="$F/bin:$PATH" bash "$F/install-deps.sh" "$@"
    else
        deps "$@"
    fi
}

# same_set NAME EXPECTED: out is exactly the words of EXPECTED (any order), each once, exit 0
same_set() {
    local got want dups
    got=$(tr ' ' '\n' <<<"$out" | grep . | sort)
    want=$(tr ' ' '\n' <<<"$2" | grep . | sort -u)
    dups=$(uniq -d <<<"$got")
    [[ $rc == 0 && $got == "$want" && -z $dups ]]
    check "install-deps: $1" $? \
        "exit $rc; got: $out; want: $(tr '\n' ' ' <<<"$want")${dups:+; twice: $dups}"
}

# --list: the sets, against a system with nothing installed
state amd64
deps --list
same_set "--list (build) on amd64: the build set and libipsec-mb-dev" "$BUILD libipsec-mb-dev"
deps --list --demo
same_set "--list --demo: the build set, curl, python3 and sockperf" "$BUILD libipsec-mb-dev curl python3 sockperf"
deps --list --check
same_set "--list --check: the build and check sets" "$BUILD libipsec-mb-dev $CHECK"
deps --list --bench
same_set "--list --bench: the build and bench sets" "$BUILD libipsec-mb-dev $BENCH"
deps --list --deb
same_set "--list --deb: the build set and the packaging tools" "$BUILD libipsec-mb-dev $DEB"
deps --list --check --bench extra-pkg
same_set "--list --check --bench PKG: all of them, each once" \
    "$BUILD libipsec-mb-dev $CHECK $BENCH extra-pkg"
state arm64
deps --list --check
same_set "--list --check on arm64: no libipsec-mb-dev" "$BUILD $CHECK"
state amd64 clang
echo "1:16.0.6-15~deb12u1" >"$F/version-clang"
deps --list --check
same_set "--list --check with clang 16 installed: libclang-rt-16-dev" \
    "$BUILD libipsec-mb-dev ${CHECK/clang libclang-rt-14-dev/libclang-rt-16-dev}"

# --list: only what is missing
# shellcheck disable=SC2086 # the sets are word lists
{
    state amd64 $BUILD libipsec-mb-dev jq
    sed -i '/^libssl-dev$/d' "$F/installed"
    deps --list
    same_set "--list: only the missing package of the set" "libssl-dev"
    deps --list --bench
    same_set "--list --bench: the missing ones, not jq (installed)" "libssl-dev ${BENCH/ jq/}"
    state amd64 $BUILD libipsec-mb-dev
    deps --list
    [[ $rc == 0 && -z $out$err ]]
    check "install-deps: --list with the set installed prints nothing" $? "exit $rc: $out $err"

    # not as root
    deps_user
    [[ $rc == 0 && -z $out$err ]]
    check "install-deps: not root, build set installed: nothing printed, exit 0" $? \
        "exit $rc: $out $err"
    deps --list --check
    missing=$out
    deps_user --check
    [[ $rc == 1 && -z $out && -n $missing ]] &&
        grep -qxF "apt-get update && apt-get install -y --no-install-recommends $missing" <<<"$err" &&
        grep -q "as root" <<<"$err" && [[ ! -s $F/apt.log ]]
    check "install-deps: not root, check set missing: prints the update && install command, exit 1" \
        $? "exit $rc; stdout: $out; stderr: $err; apt-get calls: $(cat "$F/apt.log")"
}
state amd64
deps_user --bench
[[ $rc == 1 ]] &&
    grep -q "^apt-get update && apt-get install -y --no-install-recommends build-essential .*sockperf" \
        <<<"$err"
check "install-deps: not root, nothing installed, --bench: the command names build and bench packages" \
    $? "exit $rc: $err"

# as root, with the fake apt-get
if ((EUID == 0)); then
    # shellcheck disable=SC2086
    state amd64 $BUILD libipsec-mb-dev
    sed -i '/^libssl-dev$/d; /^libsodium-dev$/d' "$F/installed"
    deps
    calls=$(cat "$F/apt.log")
    [[ $rc == 0 && $out == "install-deps: installing: libsodium-dev libssl-dev"* &&
        $out == *"install-deps: installed 2 package(s)" ]] &&
        [[ $calls == "install "*"--no-install-recommends"*" libsodium-dev libssl-dev" ]]
    check "install-deps: root: installs just the missing, says so, no apt-get update" $? \
        "exit $rc; out: $out; err: $err; apt-get calls: $calls"
    deps --list
    [[ $rc == 0 && -z $out ]]
    check "install-deps: root: afterwards nothing is missing" $? "exit $rc: $out"

    : >"$F/apt.log"
    sed -i '/^libssl-dev$/d' "$F/installed"
    echo libssl-dev >"$F/nocandidate"
    deps
    calls=$(cat "$F/apt.log")
    [[ $rc == 0 && $(head -1 <<<"$calls") == "update "* &&
        $(sed -n 2p <<<"$calls") == "install "*" libssl-dev" ]] &&
        (($(wc -l <<<"$calls") == 2))
    check "install-deps: root: apt-get update first when a package has no candidate" $? \
        "exit $rc; err: $err; apt-get calls: $calls"

    : >"$F/apt.log"
    deps
    [[ $rc == 0 && -z $out$err && ! -s $F/apt.log ]]
    check "install-deps: root: everything present: prints nothing, runs no apt-get" $? \
        "exit $rc: $out $err; apt-get calls: $(cat "$F/apt.log")"
else
    echo "SKIP: install-deps: the root path (needs root)"
fi

check_usage "install-deps: an unknown option prints the usage, exit 2" \
    env PATH="$F/bin:$PATH" bash "$F/install-deps.sh" --bogus
check_usage "install-deps: an unknown option after --list too" \
    env PATH="$F/bin:$PATH" bash "$F/install-deps.sh" --list --bogus
deps --help
[[ $rc == 0 && $out == *--check*--demo*--bench*--deb*--list* ]]
check "install-deps: --help describes --check, --demo, --bench, --deb, --list" $? "exit $rc: $out"
exit $((FAILS > 0))
