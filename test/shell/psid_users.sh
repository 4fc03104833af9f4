#!/bin/bash
# psid_users.sh - who tasks run as (root only; skipped otherwise):
#  - psid as root starts a user's tasks as that user (uid, gid, groups), on every node;
#  - psid not running as root starts only its own user's tasks: another user's spawn is
#    refused with EPERM and a reason, on the node that would run it.
# shellcheck source-path=SCRIPTDIR source=lib/cluster.sh
source "$(dirname "$0")/lib/cluster.sh"
if [ "$(id -u)" != 0 ] || ! command -v runuser >/dev/null || ! command -v setpriv >/dev/null; then
    echo "SKIP: users: needs root (to act as another user)"
    exit 0
fi
PSRUN=$BIN/psrun
cluster_up 4
all_up 5000 || {
    fail "users: cluster up" "not all up"
    exit 1
}
want="$(id -u nobody) $(id -g nobody)"
got=$(cd / && runuser -u nobody -- env PSID_SOCKET="$CDIR/psid-0.sock" timeout 20 "$PSRUN" -n 4 -w 0-3 --ppn 1 \
    sh -c 'echo "$(id -u) $(id -g) $PSI_NODE"' </dev/null 2>&1 | sort)
exp=$(for n in 0 1 2 3; do echo "$want $n"; done)
[ "$got" = "$exp" ] && pass "users: a root psid runs nobody's tasks as nobody on every node" ||
    fail "users: tasks as the requesting user" "$got"
for i in 0 1 2 3; do kill_node "$i" TERM; done

# daemons running as nobody
chown nobody "$CDIR" "$CDIR/key"
for i in 0 1 2 3; do
    setpriv --reuid=nobody --regid="$(id -g nobody)" --clear-groups \
        "$BIN/psid" -f "$CDIR/psid.conf" --node "$i" --foreground >>"$CDIR/psid-$i.log" 2>&1 &
    PIDS[$i]=$!
done
all_up 5000 || {
    fail "users: cluster of nobody's daemons up" "not all up"
    exit 1
}
out=$(cd / && PSID_SOCKET="$CDIR/psid-0.sock" timeout 20 "$PSRUN" -n 2 -w 1 true </dev/null 2>&1)
rc=$?
[ $rc -ne 0 ] && echo "$out" | grep -q "does not run as root and may only start its own user's tasks" &&
    pass "users: a psid not running as root refuses root's tasks (EPERM, with the reason)" ||
    fail "users: non-root psid refuses others" "rc=$rc: $out"
got=$(cd / && runuser -u nobody -- env PSID_SOCKET="$CDIR/psid-0.sock" timeout 20 "$PSRUN" -n 2 -w 1 id -u </dev/null 2>&1 | sort -u)
[ "$got" = "$(id -u nobody)" ] && pass "users: a psid not running as root runs its own user's tasks" ||
    fail "users: non-root psid runs its own user" "$got"
exit $((FAILS > 0))
