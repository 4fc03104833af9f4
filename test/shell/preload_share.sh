#!/bin/bash
# preload_share.sh - one user cannot fill psid's table of same-node connections waiting for
# an accept (issue: psid holds against hostile local users, point 3): psid keeps at most
# 4096 such waits, a quarter of them per listener's and per connector's uid (root has no
# share). nobody's program under the library connects 4200 times to two listeners of its
# own and never accepts (without the share, the table would be full):
#  - 1024 of its connections wait on the same-node path, the other 3176 stay on TCP with the
#    reason "limit" (PSP_STATS), and every one of them is still connected;
#  - meanwhile root's same-node connection (a second program pair) travels on shared memory.
# And, on the way: setpriv runs under the library (libcap-ng's constructor reads first).
# Root only (nobody is a second uid). Every process is ended by pid (cluster.sh's trap).
# shellcheck source-path=SCRIPTDIR source=lib/cluster.sh
source "$(dirname "$0")/lib/cluster.sh"
if [ "$(id -u)" != 0 ] || ! command -v setpriv >/dev/null || ! command -v python3 >/dev/null; then
    echo "SKIP: preload share: needs root, setpriv and python3 (a hog of another uid)"
    exit 0
fi
LIB=$TOP/build/lib/libpspreload.so
N="preload share"
[ -f "$LIB" ] || {
    fail "$N: build" "not built ($LIB)"
    exit 1
}
cluster_up 1
all_up 5000 || {
    fail "$N: cluster up" "not all up"
    exit 1
}
PORT=$(free_port 4)
SOCK=$CDIR/psid-0.sock
AS_NOBODY=(setpriv --reuid=nobody --regid="$(id -g nobody)" --clear-groups)
lib() { PSID_SOCKET=$SOCK LD_PRELOAD=$LIB "$@"; }
stat() { tail -1 "$1" 2>/dev/null | tr ' ' '\n' | sed -n "s/^$2=//p"; }
# setpriv links libcap-ng, whose constructor reads before the library's constructor ran (a
# NULL real read crashed every program started that way)
lib setpriv --reuid=nobody --regid="$(id -g nobody)" --clear-groups /bin/true
check "$N: setpriv under the library (a library constructor that reads before ours)" $? "crashed"

# the hog: 4200 connections to two listeners of its own (a kernel backlog holds 4096),
# never accepted: without a share they would fill psid's table of 4096; "connected N" when
# done, then it holds them until its stdin closes. Each connection negotiates at its connect
# (PSP_UPGRADE_US=0), and root's pair before its first byte (PSP_SYNC=1), so that their
# answers are in before the checks.
cat >"$CDIR/hog.py" <<'EOF'
import resource, socket, sys
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
ls, cs = [], []
for port in (int(sys.argv[1]), int(sys.argv[2])):
    l = socket.socket()
    l.bind(("127.0.0.1", port))
    l.listen(4096)
    ls.append(l)
    for _ in range(2100):
        c = socket.socket()
        c.connect(("127.0.0.1", port))
        cs.append(c)
alive = sum(1 for c in cs if c.getpeername())
print("connected", alive, flush=True)
sys.stdin.read()
EOF
chmod 755 "$CDIR" && chmod 644 "$CDIR/hog.py"
mkfifo "$CDIR/hold"
chmod 666 "$CDIR/hold"
exec 3<>"$CDIR/hold"
touch "$CDIR/stats.hog" && chmod 666 "$CDIR/stats.hog"
lib "${AS_NOBODY[@]}" env PSP_STATS="$CDIR/stats.hog" PSP_UPGRADE_US=0 python3 "$CDIR/hog.py" \
    "$PORT" "$((PORT + 2))" \
    <"$CDIR/hold" >"$CDIR/hog.out" 2>&1 3>&- &
hog=$!
PIDS+=("$hog")
wait_until 60000 grep -q "^connected" "$CDIR/hog.out"
connected=$(sed -n 's/^connected //p' "$CDIR/hog.out")

# root's pair while the hog holds its connections
lib env PSP_STATS="$CDIR/stats.srv" PSP_SYNC=1 python3 -c '
import socket, sys
l = socket.socket(); l.bind(("127.0.0.1", int(sys.argv[1]))); l.listen(1)
print("listening", flush=True)
c, _ = l.accept(); c.sendall(c.recv(100)); c.close()' "$((PORT + 1))" >"$CDIR/srv.out" 2>&1 &
srv=$!
PIDS+=("$srv")
wait_until 5000 grep -q "^listening" "$CDIR/srv.out"
reply=$(lib env PSP_STATS="$CDIR/stats.cli" PSP_SYNC=1 timeout 10 python3 -c '
import socket, sys
c = socket.create_connection(("127.0.0.1", int(sys.argv[1]))); c.sendall(b"ping")
print(c.recv(100).decode())' "$((PORT + 1))" 2>&1)
wait_until 5000 eval '! kill -0 "$srv" 2>/dev/null'
[ "$reply" = ping ] && [ "$(stat "$CDIR/stats.cli" shm)" = 1 ] && [ "$(stat "$CDIR/stats.srv" shm)" = 1 ]
check "$N: root's same-node connection on shared memory while nobody holds its 1024 waits" $? \
    "reply '$reply': $(tail -1 "$CDIR/stats.cli"); $(tail -1 "$CDIR/stats.srv")"

exec 3>&- # the hog's stdin closes: it exits and writes its counters
wait_until 10000 eval '! kill -0 "$hog" 2>/dev/null'
limit=$(stat "$CDIR/stats.hog" limit)
[ "$connected" = 4200 ] && [ "$limit" = 3176 ]
check "$N: nobody's 4200 connections all connected, 3176 of them on TCP for its share (limit)" $? \
    "connected '$connected', counters: $(tail -1 "$CDIR/stats.hog")"
exit $((FAILS > 0))
