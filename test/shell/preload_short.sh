#!/bin/bash
# preload_short.sh - many short connections between nodes under the library: PLSEM_SHORT
# (100000) connections one after the other from node 0 to a server on node 1 (both under
# the library, as programs run it: a connection negotiates only once it lived 1 ms), each
# a byte each way and closed by the client first, so that its port stays in TIME_WAIT.
# Binding the connector's socket to the node's address with port 0 before its connect
# could neither reuse a port in TIME_WAIT nor share one between destinations: after about
# the size of the ephemeral range the bind failed, and the rest went TCP with reason error.
# The library binds the address alone (IP_BIND_ADDRESS_NO_PORT) and leaves the port to the
# kernel's connect: every connection is answered, none is counted as error, as without the
# library (the kernel's run first, for comparison).
# shellcheck source-path=SCRIPTDIR source=lib/cluster.sh
source "$(dirname "$0")/lib/cluster.sh"
LIB=${PRELOAD_LIB:-$TOP/build/lib/libpspreload.so}
SEM=$TOP/build/test/tools/plsem
N=${PLSEM_SHORT:-100000}
export PLSEM_SHORT=$N
NAME="preload short connections"
cluster_up 2
all_up 5000 || {
    fail "$NAME: cluster up" "not all up"
    exit 1
}
PORT=$(free_port 2)
# run TAG PORT LIB: a server on node 1, and the client's N connections (bounded)
run() {
    local tag=$1 port=$2 env=()
    [ "$3" = yes ] && env=(LD_PRELOAD="$LIB" PSP_STATS="$CDIR/$tag.stats")
    env PSID_SOCKET="$CDIR/psid-1.sock" "${env[@]}" "$SEM" server 127.0.0.2 "$port" cmd \
        >"$CDIR/$tag.srv" 2>&1 &
    local s=$! t0
    PIDS+=("$s")
    wait_line "$CDIR/$tag.srv" '^ready' 3000
    t0=$(now_ms)
    env PSID_SOCKET="$CDIR/psid-0.sock" "${env[@]}" timeout 300 "$SEM" client 127.0.0.2 "$port" \
        short >"$CDIR/$tag.cli" 2>&1
    echo "exit $? after $(($(now_ms) - t0)) ms" >>"$CDIR/$tag.cli"
    kill "$s" 2>/dev/null
    wait "$s" 2>/dev/null
}
run tcp "$PORT" no
run lib $((PORT + 1)) yes
want="short connections $N: $N answered"
if ! grep -qx "$want" "$CDIR/tcp.cli"; then
    skip_msg=$(tr '\n' ' ' <"$CDIR/tcp.cli")
    echo "SKIP: $NAME: the kernel alone does not make them here: $skip_msg"
elif ! grep -qx "$want" "$CDIR/lib.cli"; then
    fail "$NAME: $N" "with the library: $(tr '\n' ' ' <"$CDIR/lib.cli") (kernel: $(tr '\n' ' ' <"$CDIR/tcp.cli"))"
elif ! grep -q ' error=0 ' "$CDIR/lib.stats"; then
    fail "$NAME: $N" "connections went TCP with reason error: $(cat "$CDIR/lib.stats")"
else
    pass "$NAME: $N answered, none counted as error ($(sed -n 's/^exit 0 after //p' "$CDIR/lib.cli"); the kernel: $(sed -n 's/^exit 0 after //p' "$CDIR/tcp.cli"))"
fi
exit $((FAILS > 0))
