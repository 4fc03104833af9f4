#!/bin/bash
# deb-check.sh - `make deb-check` (CI runs it after make soak) and `make deb` (--build-only):
# build the Debian packages of debian/ and check them.
#
#   1. the tree's files (tracked and new, not ignored) are copied to a scratch directory and
#      `dpkg-buildpackage -us -uc -b` builds the packages there (it cleans and writes beside
#      the tree it builds, and so never touches this tree's build/); they go to build/deb/
#   2. lintian over the .changes: no error (warnings are shown)
#   3. each package's files (dpkg-deb -c): the daemon, its unit with Delegate=yes, the
#      configuration as a conffile, the postinst that adds the user pscluster, the man pages;
#      every tool; the preload library; libpsi's headers, library and pkg-config file
#   4. a smoke run of the packages unpacked into one directory (dpkg-deb -x), as no package
#      is installed: psid --version, psconf check of the shipped configuration, a program
#      built against libpsi-dev through pkg-config, pspreload finding the library, and a
#      2-node pslocal cluster of the unpacked psid: both nodes up, a job of 2 ranks through
#      the unpacked psrun, then down
# Prints PASS:/FAIL: lines and last "deb-check: N passed, N failed"; exit 1 if anything
# failed. Every wait is bounded; what it starts it ends (pslocal down), also on failure.
#
# usage: scripts/deb-check.sh [--build-only]
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT" || exit 1
build_only=0
case "${1:-}" in
--build-only) build_only=1 ;;
"") ;;
*)
    echo "usage: scripts/deb-check.sh [--build-only]" >&2
    exit 2
    ;;
esac

OUT=$ROOT/build/deb
WORK=$(mktemp -d /tmp/deb-check.XXXXXX)
CL='' # the pslocal cluster's directory, once up
passed=0 failed=0
cleanup() {
    [[ -n $CL ]] && timeout 30 "$WORK/root/usr/bin/pslocal" down --dir "$CL" >/dev/null 2>&1
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

pass() {
    echo "PASS: deb: $1"
    passed=$((passed + 1))
}
fail() {
    echo "FAIL: deb: $1${2:+ ($2)}"
    failed=$((failed + 1))
}
check() { if [[ $2 == 0 ]]; then pass "$1"; else fail "$1" "${3:-}"; fi; }
finish() {
    echo "deb-check: $passed passed, $failed failed"
    ((failed == 0))
    exit
}

# ---- 1. build
version=$(dpkg-parsechangelog -S Version)
arch=$(dpkg --print-architecture)
triplet=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
src=$WORK/src/pscluster-$version
mkdir -p "$src"
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    git ls-files -z -co --exclude-standard | while IFS= read -r -d '' f; do
        [[ -e $f ]] && printf '%s\0' "$f"
    done | tar -c --null -T - | tar -x -C "$src"
else
    tar -c --exclude=./build --exclude=./.git . | tar -x -C "$src"
fi
t0=$SECONDS
(cd "$src" && timeout 900 dpkg-buildpackage -us -uc -b) >"$WORK/build.log" 2>&1
rc=$?
check "dpkg-buildpackage -us -uc -b builds the packages ($((SECONDS - t0)) s)" $rc \
    "exit $rc: $(tail -20 "$WORK/build.log")"
((rc == 0)) || finish
rm -rf "$OUT"
mkdir -p "$OUT"
cp "$WORK"/src/*.deb "$WORK"/src/*.changes "$WORK"/src/*.buildinfo "$OUT"/
echo "deb-check: packages in build/deb/:"
(cd "$OUT" && ls -1 ./*.deb | sed 's|^\./|  |')
((build_only)) && finish

deb() { echo "$OUT/${1}_${version}_$arch.deb"; }
PKGS=(psid pscluster-tools pscluster-preload libpsi-dev)
absent=()
for p in "${PKGS[@]}"; do [[ -f $(deb "$p") ]] || absent+=("$p"); done
check "the four packages: ${PKGS[*]}" ${#absent[@]} "missing: ${absent[*]}"

# ---- 2. lintian
lintian --fail-on error --info "$OUT"/*.changes >"$WORK/lintian.log" 2>&1
rc=$?
check "lintian: no error" $rc "$(grep '^E:' "$WORK/lintian.log" | head -20)"
if grep -q '^[WI]:' "$WORK/lintian.log"; then
    echo "deb-check: lintian's warnings and notes:"
    grep '^[WI]:' "$WORK/lintian.log" | sed 's/^/  /'
fi

# ---- 3. contents
# has PACKAGE PATH...: every PATH is in PACKAGE's file list
has() {
    local p=$1 f list missing=()
    shift
    list=$(dpkg-deb -c "$(deb "$p")" | awk '{ print $6 }' | sed 's|^\./|/|')
    for f in "$@"; do grep -qxF "$f" <<<"$list" || missing+=("$f"); done
    check "$p holds $*" ${#missing[@]} "missing: ${missing[*]}"
}
has psid /usr/bin/psid /lib/systemd/system/psid.service /etc/pscluster/psid.conf \
    /usr/share/man/man8/psid.8.gz /usr/share/doc/psid/copyright
tools=(psrun pskill psstat pswait pslocal psconf pspreload rdpbench psbcast)
has pscluster-tools "${tools[@]/#//usr/bin/}"
has pscluster-tools /usr/share/man/man1/psrun.1.gz /usr/share/man/man1/pspreload.1.gz \
    /usr/share/man/man1/psbcast.1.gz
has pscluster-preload "/usr/lib/$triplet/pscluster/libpspreload.so"
has libpsi-dev /usr/include/pscluster/psi.h /usr/include/pscluster/psproto.h \
    "/usr/lib/$triplet/libpsi.a" "/usr/lib/$triplet/pkgconfig/psi.pc"

dpkg-deb -e "$(deb psid)" "$WORK/ctl"
grep -qxF /etc/pscluster/psid.conf "$WORK/ctl/conffiles" 2>/dev/null
check "psid: /etc/pscluster/psid.conf is a conffile" $? "$(cat "$WORK/ctl/conffiles" 2>&1)"
grep -q 'adduser --system .*pscluster' "$WORK/ctl/postinst" 2>/dev/null
check "psid: postinst adds the system user pscluster" $?
dpkg-deb --fsys-tarfile "$(deb psid)" | tar -xO ./lib/systemd/system/psid.service \
    >"$WORK/unit" 2>/dev/null
grep -qx 'Delegate=yes' "$WORK/unit" && grep -qx 'ExecStart=/usr/bin/psid .*' "$WORK/unit"
check "psid: the unit has Delegate=yes and starts /usr/bin/psid" $? "$(cat "$WORK/unit")"

# ---- 4. smoke run of the unpacked tree
R=$WORK/root
for p in "${PKGS[@]}"; do dpkg-deb -x "$(deb "$p")" "$R"; done
# every program of the packages says its version, the changelog's
ver=$(dpkg-parsechangelog -S Version 2>/dev/null || sed -n '1s/^[^(]*(\([^)]*\)).*/\1/p' debian/changelog)
for t in psid psrun pskill psstat pswait pslocal psconf; do
    out=$(timeout 10 "$R/usr/bin/$t" --version 2>&1)
    rc=$?
    [[ $rc == 0 && $out == "$t (pscluster) $ver" ]]
    check "unpacked $t --version: exit 0, \"$t (pscluster) $ver\"" $? "exit $rc: $out"
done

head -c 32 /dev/urandom >"$WORK/key"
chmod 600 "$WORK/key"
sed "s|^key_file = .*|key_file = \"$WORK/key\";|" "$R/etc/pscluster/psid.conf" >"$WORK/psid.conf"
out=$(timeout 10 "$R/usr/bin/psconf" check "$WORK/psid.conf" 2>&1)
check "unpacked psconf accepts the packaged /etc/pscluster/psid.conf" $? "$out"

cat >"$WORK/tid.c" <<'EOF'
#include <psi_tid.h>
#include <stdio.h>
#include <string.h>
int main(void)
{
    char buf[64];
    psi_tid_str(((unsigned long long)3 << 32) | 4711, buf, sizeof buf);
    puts(buf);
    return strcmp(buf, "3:4711") != 0;
}
EOF
pc="$R/usr/lib/$triplet/pkgconfig"
flags=$(PKG_CONFIG_PATH=$pc pkg-config --define-variable=includedir="$R/usr/include/pscluster" \
    --define-variable=libdir="$R/usr/lib/$triplet" --cflags --libs psi 2>&1)
# shellcheck disable=SC2086 # the flags are words
out=$(cc -std=gnu11 -Wall -Werror "$WORK/tid.c" $flags -o "$WORK/tid" 2>&1 && "$WORK/tid" 2>&1)
check "a program built with pkg-config psi against the unpacked libpsi-dev runs" $? \
    "flags: $flags: $out"

out=$(PSPRELOAD_LIB='' timeout 10 "$R/usr/bin/pspreload" --stats=/dev/null true 2>&1)
check "unpacked pspreload finds the unpacked library next to it and runs a program" $? "$out"

CL=$WORK/cluster
out=$(timeout 60 "$R/usr/bin/pslocal" up -n 2 --dir "$CL" 2>&1)
rc=$?
check "unpacked pslocal starts a 2-node cluster of the unpacked psid" $rc "$out"
if ((rc == 0)); then
    ps -o args= -p "$(cat "$CL"/psid-0.pid 2>/dev/null || echo 1)" | grep -q "^$R/usr/bin/psid "
    check "the cluster's psid is the unpacked one" $? \
        "$(ps -o args= -p "$(cat "$CL"/psid-0.pid 2>/dev/null || echo 1)")"
    ups=$(PSID_SOCKET=$CL/psid-0.sock timeout 10 "$R/usr/bin/psstat" nodes --json 2>&1 |
        grep -o '"state":"up"' | grep -c .)
    check "unpacked psstat: both nodes up" $((ups != 2)) "$ups up"
    out=$(PSID_SOCKET=$CL/psid-0.sock timeout 30 "$R/usr/bin/psrun" -n 2 --ppn 1 -l \
        sh -c 'echo ok' 2>&1)
    rc=$?
    [[ $rc == 0 && $(grep -c ': ok$' <<<"$out") == 2 ]]
    check "unpacked psrun: a job of 2 ranks, one per node, both answer" $? "exit $rc: $out"
    timeout 30 "$R/usr/bin/pslocal" down --dir "$CL" >"$WORK/down.log" 2>&1
    check "unpacked pslocal down stops the cluster" $? "$(cat "$WORK/down.log")"
    CL=''
fi
finish
