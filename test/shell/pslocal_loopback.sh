#!/bin/bash
# pslocal_loopback.sh - pslocal in loopback mode (no root needed):
#  - bad command lines: usage and exit 2; --netns without root: exit 1;
#  - up -n 4: 4 pid files, 4 running psids, a valid config, a 0600 key, every node up;
#  - env (eval'd: PSID_SOCKET, PSLOCAL_DIR), exec (by id and name, exit status, unknown
#    node, unknown command), status (running/stopped, exit 0/3);
#  - a second up in the same DIR is refused; a second cluster in another DIR runs at the
#    same time on other ports and sees only its own nodes;
#  - kill -9 of one daemon: status shows it, down still works; down is idempotent, keeps
#    logs and config, --purge removes them; no process is left;
#  - down never signals a pid whose process is not that DIR's psid (a recycled pid);
#  - a daemon that never opens its socket: up times out, names the node, stops the rest.
# Prints PASS:/FAIL:/SKIP: lines; exits 1 if anything failed. Every wait is bounded.
# shellcheck disable=SC2016 # $PSID_SOCKET in single quotes is for the inner shell
set -u

name=pslocal_loopback
# shellcheck source-path=SCRIPTDIR source=lib/pslocal.sh
. "$(dirname "$0")/lib/pslocal.sh"
HAVE_PSSTAT=0
[[ -x $BIN/psstat ]] && HAVE_PSSTAT=1

TMP=$(mktemp -d /tmp/pslocal-test.XXXXXX)
D1=$TMP/c1 D2=$TMP/c2 D3=$TMP/c3
OWN_PIDS=() # processes this script started itself

cleanup() {
    local d p
    trap '' INT TERM
    for d in "$D1" "$D2" "$D3"; do
        [[ -d $d ]] && timeout 20 "$PSLOCAL" down --dir "$d" >/dev/null 2>&1
    done
    for p in "${OWN_PIDS[@]}"; do kill -KILL "$p" 2>/dev/null; done
    rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# files DIR REGEX -> names of the files in DIR that match REGEX
files() { find "$1" -mindepth 1 -maxdepth 1 -printf '%f\n' 2>/dev/null | grep -E "$2"; }

# up_nodes DIR -> how many nodes node 0 of DIR sees "up"
up_nodes() {
    PSID_SOCKET=$1/psid-0.sock timeout 10 "$BIN/psstat" nodes --json 2>/dev/null |
        grep -o '"state":"up"' | grep -c . || true
}

# ---- command lines
check "no arguments: exit 2" bash -c "'$PSLOCAL' >/dev/null 2>&1; [[ \$? == 2 ]]"
check "--help: usage on stdout, exit 0" bash -c "'$PSLOCAL' --help | grep -q '^usage: pslocal up'"
check "unknown command: exit 2" bash -c "'$PSLOCAL' frobnicate --dir /tmp 2>/dev/null; [[ \$? == 2 ]]"
check "up without --dir: exit 2" \
    bash -c "env -u PSLOCAL_DIR '$PSLOCAL' up 2>/dev/null; [[ \$? == 2 ]]"
check "up -n 0: exit 2" bash -c "'$PSLOCAL' up -n 0 --dir '$D3' 2>/dev/null; [[ \$? == 2 ]]"
check "down --cpus: exit 2" bash -c "'$PSLOCAL' down --cpus 2 --dir '$D3' 2>/dev/null; [[ \$? == 2 ]]"
check "up --mtu without --netns: exit 2" \
    bash -c "'$PSLOCAL' up --mtu 9000 --dir '$D3' 2>/dev/null; [[ \$? == 2 ]]"
check "up --netns --mtu 100 (under RDP's least): exit 2" \
    bash -c "'$PSLOCAL' up --netns --mtu 100 --dir '$D3' 2>/dev/null; [[ \$? == 2 ]]"
check "exec without a command: exit 2" \
    bash -c "'$PSLOCAL' exec 1 --dir '$D3' -- 2>/dev/null; [[ \$? == 2 ]]"
if ((EUID == 0)) && command -v setpriv >/dev/null; then
    out=$(setpriv --reuid=65534 --regid=65534 --clear-groups "$PSLOCAL" up --netns --dir "$D3" 2>&1)
    rc=$?
else
    out=$("$PSLOCAL" up --netns --dir "$D3" 2>&1)
    rc=$?
fi
if [[ $rc == 1 && $out == "pslocal: --netns needs root" ]]; then
    pass "--netns without root: exit 1 and says why"
else
    fail "--netns without root: exit 1 and says why" "exit $rc: $out"
fi
rm -rf "$D3"

# ---- up
out=$(pl up -n 4 --dir "$D1" 2>&1)
rc=$?
if [[ $rc == 0 ]]; then pass "up -n 4"; else
    fail "up -n 4" "exit $rc"
    echo "$out"
    exit 1
fi
n=$(files "$D1" '^psid-[0-9]+\.pid$' | wc -l)
check "4 pid files" test "$n" = 4
ok=1
for i in 0 1 2 3; do
    pid=$(cat "$D1/psid-$i.pid" 2>/dev/null)
    tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q -- "-f $D1/psid.conf --node $i" || ok=0
done
check "4 running psids, one per pid file" test $ok = 1
check "the config is valid" bash -c "'$BIN/psconf' check '$D1/psid.conf' >/dev/null"
check "cluster.key: 32 bytes, mode 600" \
    test "$(stat -c '%s %a' "$D1/cluster.key")" = "32 600"
check "loopback addresses and unicast heartbeats" \
    grep -q 'mode = "unicast"' "$D1/psid.conf"
if ((HAVE_PSSTAT)); then
    check "node 0 sees 4 nodes up" test "$(up_nodes "$D1")" = 4
fi

# ---- env
out=$(pl env --dir "$D1")
check "env: export PSID_SOCKET=DIR/psid-0.sock" grep -qx "export PSID_SOCKET=$D1/psid-0.sock" <<<"$out"
got=$(env -u PSID_SOCKET -u PSLOCAL_DIR bash -c "eval \"\$1\"; echo \"\$PSID_SOCKET \$PSLOCAL_DIR\"" _ "$out")
check "env: eval sets PSID_SOCKET and PSLOCAL_DIR" test "$got" = "$D1/psid-0.sock $D1"
if ((HAVE_PSSTAT)); then
    got=$(env -u PSID_SOCKET bash -c "eval \"\$1\"; timeout 10 '$BIN/psstat' nodes --json" _ "$out" |
        grep -o '"state":"up"' | grep -c .)
    check "env: psstat reaches node 0" test "$got" = 4
fi

# ---- exec
got=$(pl exec 2 --dir "$D1" -- sh -c 'echo "$PSID_SOCKET"')
check "exec 2: PSID_SOCKET is node 2's socket" test "$got" = "$D1/psid-2.sock"
got=$(pl exec n3 --dir "$D1" -- sh -c 'echo "$PSID_SOCKET"')
check "exec n3 (by name)" test "$got" = "$D1/psid-3.sock"
got=$(PSLOCAL_DIR=$D1 timeout 30 "$PSLOCAL" exec 1 sh -c 'echo "$PSID_SOCKET"')
check "exec with \$PSLOCAL_DIR and without --" test "$got" = "$D1/psid-1.sock"
pl exec 1 --dir "$D1" -- sh -c 'exit 7'
check "exec: exits with the command's status" test $? = 7
pl exec 9 --dir "$D1" -- true 2>/dev/null
check "exec: unknown node: exit 1" test $? = 1
pl exec 1 --dir "$D1" -- /nonexistent/cmd 2>/dev/null
check "exec: unknown command: exit 127" test $? = 127
if ((HAVE_PSSTAT)); then
    got=$(pl exec 3 --dir "$D1" -- "$BIN/psstat" nodes --json | grep -o '"self":[0-9]*')
    check "exec 3: psstat talks to node 3" test "$got" = '"self":3'
fi

# ---- status
out=$(pl status --dir "$D1")
rc=$?
check "status: exit 0 when all run" test $rc = 0
check "status: 4 lines 'ID NAME ADDRESS PID running'" \
    test "$(grep -cE '^[0-3] n[0-3] 127\.0\.0\.[1-4] [0-9]+ running$' <<<"$out")" = 4

# ---- a second up in the same DIR is refused, the running cluster untouched
pl up -n 2 --dir "$D1" >/dev/null 2>&1
rc=$?
check "up in a DIR with a running cluster: refused (exit 1)" test $rc = 1
check "... and the running cluster is untouched" test "$(count_psids "$D1")" = 4

# ---- a second cluster at the same time
out=$(pl up -n 3 --dir "$D2" 2>&1)
rc=$?
if [[ $rc == 0 ]]; then pass "a second cluster (other DIR) comes up"; else
    fail "a second cluster (other DIR) comes up" "exit $rc: $out"
fi
p1=$(awk '/port =/ { print $3 }' "$D1/psid.conf" | tr -d ';' | sort | tr '\n' ' ')
p2=$(awk '/port =/ { print $3 }' "$D2/psid.conf" | tr -d ';' | sort | tr '\n' ' ')
# both configs name their ports, and no port is in both
shared=$(comm -12 <(tr ' ' '\n' <<<"$p1" | grep . | sort) <(tr ' ' '\n' <<<"$p2" | grep . | sort))
check "... on other ports ($p1/ $p2)" test -n "$p1" -a -n "$p2" -a -z "$shared"
check "... 3 psids of its own" test "$(count_psids "$D2")" = 3
if ((HAVE_PSSTAT)); then
    check "... which see their own 3 nodes up" test "$(up_nodes "$D2")" = 3
    check "... and the first cluster still 4" test "$(up_nodes "$D1")" = 4
fi

# ---- kill -9 of one daemon, then down
victim=$(cat "$D2/psid-1.pid")
kill -KILL "$victim"
deadline=$((SECONDS + 5))
while ((SECONDS < deadline)) && [[ -r /proc/$victim/cmdline && -n $(tr -d '\0' <"/proc/$victim/cmdline") ]]; do
    sleep 0.05
done
out=$(pl status --dir "$D2")
rc=$?
check "status after kill -9: exit 3, node 1 stopped" \
    bash -c "[[ $rc == 3 ]] && grep -qE '^1 n1 127\.0\.0\.2 [0-9]+ stopped$' <<<'$out'"
pl down --dir "$D2" >/dev/null
check "down after kill -9 of one daemon" test $? = 0
check "... no psid of that cluster left" wait_no_psids "$D2"
check "... pid files, sockets and state removed" \
    test -z "$(files "$D2" '\.(pid|sock)$|^pslocal\.state$')"
check "... logs and config kept" test -f "$D2/psid.conf" -a -f "$D2/psid-0.log"
pl down --dir "$D2" >/dev/null
check "a second down succeeds" test $? = 0

# ---- down never signals a process that is not that DIR's psid (a recycled pid)
sleep 60 &
decoy=$!
OWN_PIDS+=("$decoy")
echo "$decoy" >"$D2/psid-0.pid"
pl down --dir "$D2" >/dev/null
check "down leaves a foreign pid from a stale pid file alone" kill -0 "$decoy"
check "... and removes the stale pid file" test ! -e "$D2/psid-0.pid"
{
    kill -KILL "$decoy"
    wait "$decoy"
} 2>/dev/null

# ---- down of the first cluster, --purge
t0=$SECONDS
pl down --dir "$D1" >/dev/null
rc=$?
check "down -n 4 cluster" test $rc = 0
check "... within the 3 s grace + slack" test $((SECONDS - t0)) -le 5
check "... no psid left" wait_no_psids "$D1"
check "... sockets and pid files removed" test -z "$(files "$D1" '\.(pid|sock)$')"
out=$(pl up -n 2 --dir "$D1" 2>&1)
check "up again in the same DIR after down" test $? = 0
pl down --dir "$D1" --purge >/dev/null
check "down --purge removes everything, DIR too" test ! -e "$D1"
pl down --dir "$D1" >/dev/null 2>&1
check "down of a purged DIR succeeds" test $? = 0

# ---- a daemon that never opens its socket: up times out and cleans up
cat >"$TMP/psid" <<'EOF'
#!/bin/sh
echo "stand-in psid $*, never ready"
trap 'kill $!; exit 0' TERM
sleep 60 &
wait
EOF
chmod +x "$TMP/psid"
out=$(PSLOCAL_PSID=$TMP/psid timeout 30 "$PSLOCAL" up -n 2 --dir "$D3" --timeout 1 2>&1)
rc=$?
check "up with a daemon that never gets ready: exit 1" test $rc = 1
check "... names the node and shows its log" \
    bash -c "grep -q 'node 0 not ready' <<<\"\$1\" && grep -q 'never ready' <<<\"\$1\"" _ "$out"
check "... and stops what it started" wait_no_psids "$D3"
check "... leaving no pid files" test -z "$(files "$D3" '\.pid$')"

((FAILS == 0))
