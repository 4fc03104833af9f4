#!/bin/bash
# test/shell/psconf.sh - the configuration tool: `psconf show` prints the effective
# configuration as a file that `psconf check` accepts again with the same values (text) and
# as JSON; bad files are named with file:line:key; bad command lines exit 2.
set -u
# shellcheck source-path=SCRIPTDIR source=lib/cluster.sh
. "$(dirname "$0")/lib/cluster.sh"
PC=$BIN/psconf
CDIR=$(mktemp -d)
head -c 64 /dev/urandom >"$CDIR/key"
chmod 600 "$CDIR/key"
cat >"$CDIR/a.conf" <<EOF
cluster = "t";
key_file = "$CDIR/key";
rdp = { mtu = 9000; mac = "chacha20poly1305"; mac_impl = "portable"; offload = false; };
heartbeat = { mode = "unicast"; };
nodes = ( { id = 0; name = "a"; address = "127.0.0.1"; cpus = 2; },
          { id = 5; name = "b"; address = "127.0.0.2"; } );
EOF

"$PC" check "$CDIR/a.conf" >"$CDIR/check.out" 2>&1
check "psconf: check accepts a valid file" $? "$(cat "$CDIR/check.out")"
grep -q "ok: 2 nodes" "$CDIR/check.out"
check "psconf: check counts the nodes" $? "$(cat "$CDIR/check.out")"

"$PC" show "$CDIR/a.conf" >"$CDIR/b.conf" 2>"$CDIR/show.err"
check "psconf: show exits 0" $? "$(cat "$CDIR/show.err")"
"$PC" check "$CDIR/b.conf" >"$CDIR/check2.out" 2>&1
check "psconf: show's output is a valid configuration" $? "$(cat "$CDIR/check2.out")"
"$PC" show "$CDIR/a.conf" --json >"$CDIR/a.json" 2>"$CDIR/json.err" &&
    "$PC" show "$CDIR/b.conf" --json >"$CDIR/b.json" 2>>"$CDIR/json.err"
# the same but for where each was read from (path, line numbers)
norm='del(.path) | del(.. | .line?)'
if json_true "$(cat "$CDIR/a.json")" 'type == "object"' &&
    json_true "$(cat "$CDIR/b.json")" 'type == "object"' &&
    [ "$(jq -S "$norm" "$CDIR/a.json")" = "$(jq -S "$norm" "$CDIR/b.json")" ]; then
    pass "psconf: show, then show of that, gives the same configuration"
else
    fail "psconf: show, then show of that, gives the same configuration" \
        "$(cat "$CDIR/json.err"; diff <(jq -S "$norm" "$CDIR/a.json") <(jq -S "$norm" "$CDIR/b.json") | head -5)"
fi
if json_true "$(cat "$CDIR/a.json")" '.rdp.mtu == 9000 and .rdp.mac == "chacha20poly1305" and
          .rdp.mac_impl == "portable" and .rdp.offload == false and (.nodes | length) == 2'; then
    pass "psconf: show --json has the file's values"
else
    fail "psconf: show --json has the file's values" "$(head -c 400 "$CDIR/a.json")"
fi

# a bad value: file, line and key in the message, exit 1
sed 's/mac_impl = "portable"/mac_impl = "fastest"/' "$CDIR/a.conf" >"$CDIR/bad.conf"
"$PC" check "$CDIR/bad.conf" >"$CDIR/bad.out" 2>&1
rc=$?
if [ "$rc" -eq 1 ] && grep -q "bad.conf:3: rdp.mac_impl: .*not a MAC implementation" "$CDIR/bad.out"; then
    pass "psconf: a bad rdp.mac_impl is named with file:line:key"
else
    fail "psconf: a bad rdp.mac_impl is named with file:line:key" "exit $rc: $(cat "$CDIR/bad.out")"
fi

for args in "" "show" "frobnicate x.conf" "show $CDIR/a.conf --xml"; do
    # shellcheck disable=SC2086 # word splitting intended
    check_usage "psconf: usage error ($args) -> exit 2" "$PC" $args
done

exit $((FAILS > 0))
