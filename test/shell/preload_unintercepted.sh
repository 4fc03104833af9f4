#!/bin/bash
# preload_unintercepted.sh - programs the preload library cannot intercept still work, on
# TCP, against a server under the library on another node (2-node loopback cluster): a
# client that makes its socket calls as raw system calls (test/tools/rawcat, as Go's
# runtime does; LD_PRELOAD loads the library, which sees nothing), the same client linked
# statically (rawcat-static: the loader never preloads), and, as root on a file system
# that honours set-user-ID bits, a set-user-ID copy of nc (the loader ignores LD_PRELOAD).
# Each sends 4 MiB to the server and, the other way, takes 4 MiB from a server that
# speaks first: byte-exact (sha256), the server's side on TCP with its reason (PSP_STATS:
# accelerated=0, and no_library=1, or short=1 where the connection ended first: a process
# that loaded the library has an endpoint, and its psid waits up to 200 ms for a request
# that raw calls never send), and the client's library, when loaded at all, with no
# connection of its own to count.
# shellcheck source-path=SCRIPTDIR source=lib/cluster.sh
source "$(dirname "$0")/lib/cluster.sh"
LIB=$TOP/build/lib/libpspreload.so
RAW=$TOP/build/test/tools/rawcat
cluster_up 2
all_up 5000 || {
    fail "preload unintercepted: cluster up" "not all up"
    exit 1
}
for f in "$LIB" "$RAW" "$RAW-static"; do
    [ -f "$f" ] || {
        fail "preload unintercepted: $(basename "$f")" "not built"
        exit 1
    }
done
head -c $((4 << 20)) /dev/urandom >"$CDIR/in.bin"
SUM=$(sha256sum <"$CDIR/in.bin")
PORT=$(free_port 8)
NC=$(readlink -f "$(command -v nc)")

listening() { ss -Hltn "sport = :$1" | grep -q .; }
stat() { tail -1 "$CDIR/stats.$1" 2>/dev/null | tr ' ' '\n' | sed -n "s/^$2=//p"; }
# the server's connection stayed on TCP, for want of the library on the other side
server_tcp() {
    [[ $(stat 1 accelerated) == 0 && $(stat 1 tcp) == 1 &&
        $(($(stat 1 no_library) + $(stat 1 short))) == 1 ]]
}
# the client's library saw no connection: not loaded (no line), or loaded and blind
client_blind() {
    [ ! -s "$CDIR/stats.0" ] || [[ $(stat 0 accelerated) == 0 && $(stat 0 tcp) == 0 ]]
}
finish() {
    for p; do
        wait_until 60000 bash -c "! kill -0 $p 2>/dev/null" || kill -KILL "$p" 2>/dev/null
        wait "$p" 2>/dev/null
    done
}

# case NAME PORT DIR CLIENT...: DIR "to" the server (the client sends in.bin) or "from" it
case_run() {
    local name=$1 port=$2 dir=$3 s c
    shift 3
    rm -f "$CDIR"/stats.* "$CDIR/out.bin"
    if [ "$dir" = to ]; then
        PSID_SOCKET=$CDIR/psid-1.sock LD_PRELOAD=$LIB PSP_STATS=$CDIR/stats.1 \
            nc -l 127.0.0.2 "$port" </dev/null >"$CDIR/out.bin" &
    else
        PSID_SOCKET=$CDIR/psid-1.sock LD_PRELOAD=$LIB PSP_STATS=$CDIR/stats.1 \
            nc -N -l 127.0.0.2 "$port" <"$CDIR/in.bin" &
    fi
    s=$!
    PIDS+=("$s")
    wait_until 3000 listening "$port"
    if [ "$dir" = to ]; then
        PSID_SOCKET=$CDIR/psid-0.sock LD_PRELOAD=$LIB PSP_STATS=$CDIR/stats.0 "$@" \
            <"$CDIR/in.bin" >"$CDIR/client.out" 2>&1 &
    else
        PSID_SOCKET=$CDIR/psid-0.sock LD_PRELOAD=$LIB PSP_STATS=$CDIR/stats.0 "$@" \
            </dev/null >"$CDIR/out.bin" 2>"$CDIR/client.out" &
    fi
    c=$!
    PIDS+=("$c")
    finish "$c" "$s"
    [[ $(sha256sum <"$CDIR/out.bin") == "$SUM" ]] && server_tcp && client_blind
    check "preload unintercepted: $name, 4 MiB $dir the server: TCP, byte-exact" $? \
        "$(cat "$CDIR/client.out" "$CDIR"/stats.* 2>/dev/null)"
}

case_run "raw system calls" "$PORT" to "$RAW" 127.0.0.2 "$PORT" send
case_run "raw system calls" $((PORT + 1)) from "$RAW" 127.0.0.2 $((PORT + 1)) recv
case_run "static" $((PORT + 2)) to "$RAW-static" 127.0.0.2 $((PORT + 2)) send
case_run "static" $((PORT + 3)) from "$RAW-static" 127.0.0.2 $((PORT + 3)) recv

# set-user-ID: as root, a copy of nc owned by nobody, set-user-ID, where the file system
# honours the bit (the loader then runs it in secure mode and ignores LD_PRELOAD)
if [ "$(id -u)" != 0 ]; then
    echo "SKIP: preload unintercepted: set-user-ID (needs root)"
elif findmnt -no OPTIONS --target "$CDIR" | grep -qw nosuid || ! id nobody >/dev/null 2>&1; then
    echo "SKIP: preload unintercepted: set-user-ID ($CDIR is mounted nosuid, or no user nobody)"
else
    cp "$NC" "$CDIR/nc-suid"
    chown nobody "$CDIR/nc-suid"
    chmod 4755 "$CDIR/nc-suid"
    chmod 755 "$CDIR"
    case_run "set-user-ID nc" $((PORT + 4)) to "$CDIR/nc-suid" -N 127.0.0.2 $((PORT + 4))
    [ ! -e "$CDIR/stats.0" ]
    check "preload unintercepted: set-user-ID nc: the loader did not preload the library" $? \
        "$(cat "$CDIR/stats.0" 2>/dev/null)"
fi
exit $((FAILS > 0))
