#!/bin/bash
# test/shell/make_targets.sh - the Makefile's public targets beyond `make check` itself:
#   - every script a recipe runs is in the tree and executable (`make fuzz` once called a
#     scripts/fuzz.sh that never existed)
#   - each public target first asks scripts/install-deps.sh for its own set of packages (`make
#     -n`): all and install the build set, check, soak and fuzz --check, demo --demo, bench
#     --bench, deb and deb-check --deb
#     (test/shell/install_deps.sh tests the sets themselves)
#   - `make bench` builds the test programs that bench/psid.sh drives, not only the tools
#   - `make install DESTDIR=... PREFIX=/usr` puts the tools, libraries, headers, libpsi's
#     pkg-config file, man pages and the example configuration where INSTALL says
#   (`make fuzz` itself, every fuzz target run and passed, is checked by make soak, which
#   builds the fuzz tree: scripts/soak.sh)
# The tree is already built (make check builds it first), so the inner makes only install
# and run.
set -u
# shellcheck source-path=SCRIPTDIR source=lib/cluster.sh
. "$(dirname "$0")/lib/cluster.sh"
CDIR=$(mktemp -d)
cd "$TOP" || exit 1
unset MAKEFLAGS MFLAGS MAKELEVEL # a fresh make, not a child of make check's

missing=()
while read -r sc; do
    [[ -x $sc ]] || missing+=("$sc")
done < <(grep -oE '(scripts|bench|test)/[A-Za-z0-9_./-]+\.sh' Makefile | sort -u)
((${#missing[@]} == 0))
check "make: every script a recipe runs exists and is executable" $? "missing: ${missing[*]}"

wrong=()
for tw in all= install= check=--check soak=--check fuzz=--check demo=--demo bench=--bench deb=--deb \
    deb-check=--deb; do
    t=${tw%%=*} opt=${tw#*=}
    want="scripts/install-deps.sh${opt:+ $opt}"
    # -n: the recipes are printed, not run (sub-makes run, with -n too)
    first=$(make -n --no-print-directory "$t" 2>&1 | head -1)
    [[ $first == "$want" ]] || wrong+=("$t: '$first', not '$want'")
done
((${#wrong[@]} == 0))
check "make: each public target first runs install-deps.sh for its set" $? "${wrong[*]}"

# make bench on a fresh tree builds the test programs bench/psid.sh drives (a fresh BUILD
# directory, -n: only printed)
bl=$(make -n --no-print-directory bench BUILD="$CDIR/bb" 2>&1)
nb=()
for t in sigstamp jobdrive; do
    grep -q -- "-o $CDIR/bb/test/tools/$t\b" <<<"$bl" || nb+=("$t")
done
((${#nb[@]} == 0))
check "make bench builds the test programs the benchmarks drive" $? "not built: ${nb[*]}"

make --no-print-directory install DESTDIR="$CDIR/root" PREFIX=/usr >"$CDIR/install.log" 2>&1
check "make install exits 0" $? "$(tail -5 "$CDIR/install.log")"
absent=()
for f in bin/psid bin/psrun bin/pskill bin/psstat bin/pslocal bin/rdpbench lib/librdp.a \
    include/rdp.h share/man/man1/psrun.1 share/man/man8/psid.8 share/doc/pscluster/psid.conf \
    lib/systemd/system/psid.service lib/pkgconfig/psi.pc; do
    [[ -e $CDIR/root/usr/$f ]] || absent+=("$f")
done
((${#absent[@]} == 0))
check "make install: tools, library, header, man pages, example configuration, unit" $? \
    "not installed under DESTDIR/usr: ${absent[*]}"
# the installed example, with a key file of our own in place of /etc/pscluster/cluster.key
head -c 64 /dev/urandom >"$CDIR/key"
chmod 600 "$CDIR/key"
sed "s|^key_file = .*|key_file = \"$CDIR/key\";|" "$CDIR/root/usr/share/doc/pscluster/psid.conf" \
    >"$CDIR/psid.conf"
"$CDIR/root/usr/bin/psconf" check "$CDIR/psid.conf" >"$CDIR/psconf.log" 2>&1
check "make install: the installed psconf accepts the installed example configuration" $? \
    "$(cat "$CDIR/psconf.log")"

exit $((FAILS > 0))
