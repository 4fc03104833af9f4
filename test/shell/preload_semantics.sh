#!/bin/bash
# preload_semantics.sh - the socket semantics a program sees are the kernel's, with
# libpspreload or without: each scenario of test/tools/plsem runs on a 2-node loopback
# cluster (server on node 1 at 127.0.0.2, client on node 0) once on kernel TCP and once with
# the library on both sides, and the two transcripts (client and server) must be the same,
# and the library run's client accelerated (PSP_STATS), every state change of a connection
# one the library's lifecycle lists (PSP_STATS bad_transitions=0). Scenarios: echo,
# halfclose, peek (MSG_PEEK, MSG_WAITALL, MSG_DONTWAIT, FIONREAD), poll (poll, select, ppoll, POLLRDHUP), epoll (two
# sets, EPOLLET, EPOLLONESHOT and MOD, events 0, nested, EPOLLOUT, EPOLLRDHUP, DEL), sigpipe,
# linger0 (RST), nonblock (EINPROGRESS, SO_ERROR, a closed port), timeo (SO_RCVTIMEO,
# SO_SNDTIMEO), eintr (SA_RESTART or not), dup (dup, dup2, F_DUPFD_CLOEXEC), names (getsockname, SO_TYPE, fstat),
# threads, two (a connection not read does not stop another: EAGAIN, not memory), many
# (1000 connections in one process), fork (accept, then a child serves), crash (the peer
# dies of SIGKILL: EOF or reset, no hang), compute (the peer computes after writing: its
# bytes still arrive at once), sendfile (sendfile, and splice from a file through a pipe),
# closeall (the program closes every descriptor below the soft limit but its socket, as
# daemons do, reaching the library's own in the top quarter: they survive),
# v6mapped (an AF_INET6 listener on :: takes an IPv4 client), reuseport (two SO_REUSEPORT
# listeners in one process), relisten (listener closed, the port listened on anew), vectors
# (readv/writev, sendmsg/recvmsg with several iovecs, sendmmsg/recvmmsg, empty reads,
# MSG_TRUNC), fortify (__read_chk, __recv_chk, __recvfrom_chk, __poll_chk, __ppoll_chk,
# sendfile64), bulk (64 MiB each way at once), shutafter (shutdown after the peer closed),
# writeclosed (writes after the peer closed), epoll0 (events 0: EPOLLHUP, EPOLLERR), inetd
# (the server execs cat on the accepted socket, as inetd does: TCP at once, not_accepted),
# fork_both (parent and child of a fork both use a connection on RDP), fork_close (the
# parent closes it, the child goes on), forkidle (a child writes while the peer program
# touches nothing for 3 s: at once), fork_unread (bytes received before the fork, read
# by the parent in part and the child the rest), exec_rdp (the program execs itself with
# the connection), vfork and spawn (a vfork child, and a posix_spawn one, exec a program
# that writes and reads on the inherited connection; then the parent goes on with it):
# each moves the connection back to TCP (PSP_STATS switched=1), with the kernel's
# transcript; cork (TCP_CORK and MSG_MORE: what the server sees after each step, nothing
# while corked, all at the uncork or the plain send, the MSG_MORE bytes after ~200 ms); oob
# (MSG_OOB between bytes in line: the server takes the urgent byte at its mark);
# exitw (the server writes 4 MiB and ends with _exit: all of it
# arrives, then EOF, and the server's _exit ran the library's exit wait: its PSP_STATS
# line is there); upgrade (two connections, a ping-pong and a stream each way, from their
# first byte); upwrite (one write of 32 MiB to an echo, read back by a thread: without
# PSP_SYNC the connection moves up in the middle of that one call); nbflip (O_NONBLOCK
# changed by fcntl, by ioctl FIONBIO and by a fork's child after blocking reads: each read
# answers as the flags say now); eplazy (epoll registrations, which the library's waits
# look at themselves on the same-node path: a nested set, a poll on a set's descriptor, a
# nested set looked at without sleeping, two threads asleep in two sets: each wakes for a
# late answer; EPOLLET: an event for bytes that came since, none for bytes still there);
# rdpwait (a read that sleeps in the RDP socket's read itself: a signal handler with
# SA_RESTART that reads another connection on top of it, then a thread that polls beside
# it: each gets its byte); cancel (a thread blocked in a read is cancelled: the others
# go on reading and polling the connection); threadfds (200 threads that each waited once
# on a connection leave no descriptor behind); closefrom (closefrom, syscall(SYS_close_range)
# and fclose of a stream on a copy, as daemons close what they do not know: the connection
# goes on, the stream's number is a plain pipe's next); closerace (a thread busy on a
# connection while another closes it, 100 times: the next connection works); cancelall (a
# cancellation pending at the start of, and acting in the sleep of, each cancellation point
# the library wraps, and at random moments of loops over them: a new connection works after
# each; preload_cancel.sh runs it under ASan with the lock checker); epclose (an epoll set
# holding the connection is closed and a new one takes its number; urgent data then moves
# the connection to its kernel socket: the new set shows nothing of the old).
# The library's run waits for each connection's negotiation before its first byte
# (PSP_SYNC=1), so that the scenario tests the fast path from byte 0; the scenarios of
# PRELOAD_ASYNC (default: echo peek epoll bulk cork fork_unread upgrade upwrite) run a third time
# without it, where bytes start on the kernel socket and the connection moves up on the way
# (conn.c, "The TCP phase"): the same transcript again, and for upgrade bytes over both
# paths, TCP first. PRELOAD_SCENARIOS="..." runs only the scenarios named;
# PRELOAD_SEM_KEEP=DIR keeps the transcripts there. PRELOAD_SAME_NODE=1 runs the server on
# the client's node too (127.0.0.1, node 0's psid): the same-node path (shm), whose
# connections are counted as shm= in PSP_STATS (preload_same.sh).
# shellcheck source-path=SCRIPTDIR source=lib/cluster.sh
source "$(dirname "$0")/lib/cluster.sh"
LIB=${PRELOAD_LIB:-$TOP/build/lib/libpspreload.so}
SEM=${PRELOAD_SEM:-$TOP/build/test/tools/plsem}
PRE=${PRELOAD_PRE:-} # preloaded before the library: a sanitizer's runtime (make tsan, preload_cancel.sh)
SAME=${PRELOAD_SAME_NODE:-0}
SRV_NODE=1 SRV_ADDR=127.0.0.2 NAME="preload semantics"
[ "$SAME" = 1 ] && SRV_NODE=0 SRV_ADDR=127.0.0.1 NAME="preload same-node semantics"
NAME=${PRELOAD_NAME:-$NAME}
cluster_up 2
all_up 5000 || {
    fail "$NAME: cluster up" "not all up"
    exit 1
}
SCEN=${PRELOAD_SCENARIOS:-echo halfclose peek poll epoll sigpipe linger0 nonblock timeo eintr dup names threads two many fork crash compute sendfile closeall v6mapped reuseport relisten vectors fortify bulk shutafter writeclosed epoll0 inetd fork_both fork_close forkidle fork_unread exec_rdp vfork spawn cork oob exitw upgrade upwrite nbflip eplazy rdpwait cancel calls accept2 forkclose daemon others threadfds closefrom closerace cancelall epclose}
ASYNC=${PRELOAD_ASYNC-echo peek epoll bulk cork fork_unread upgrade upwrite}
PORT=$(free_port $((3 * $(wc -w <<<"$SCEN"))))

served() { [ -z "$(ss -Htn state established state close-wait "sport = :$1" 2>/dev/null)" ]; }
# run TAG PORT MODE SCENARIO LIB: one server and one client; transcripts in $CDIR/TAG.*;
# LIB: no, yes (PSP_SYNC=1), async (the library without PSP_SYNC)
run() {
    local tag=$1 port=$2 mode=$3 scen=$4 lib=$5 env=()
    [ "$lib" = yes ] && env=(LD_PRELOAD="${PRE:+$PRE }$LIB" PSP_STATS="$CDIR/$tag.stats" PSP_SYNC=1)
    [ "$lib" = async ] && env=(LD_PRELOAD="${PRE:+$PRE }$LIB" PSP_STATS="$CDIR/$tag.stats")
    env PSID_SOCKET="$CDIR/psid-$SRV_NODE.sock" "${env[@]}" "$SEM" server "$SRV_ADDR" "$port" \
        "$mode" >"$CDIR/$tag.srv" 2>&1 &
    local s=$!
    PIDS+=("$s")
    wait_line "$CDIR/$tag.srv" '^ready' 3000
    env PSID_SOCKET="$CDIR/psid-0.sock" "${env[@]}" timeout 30 "$SEM" client "$SRV_ADDR" "$port" \
        "$scen" >"$CDIR/$tag.cli" 2>&1
    echo "exit $?" >>"$CDIR/$tag.cli"
    # the server's last lines: it is done with its connections when none of them on its
    # port is still established or waiting for its close (a forked child's neither)
    wait_until 3000 served "$port"
    kill "$s" 2>/dev/null
    wait "$s" 2>/dev/null
}

# moved_up STATS N: the client's line of STATS says N connections accelerated, and bytes
# on the kernel socket first (both ways: on one node the move is quick enough to come
# before the server's first answer) and received on the fast path after (RDP's or shared
# memory's)
moved_up() {
    awk -v n="$2" '{ for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
           if (v["accelerated"] >= n && v["tcp_rx_bytes"] + v["tcp_tx_bytes"] > 0 &&
               v["rdp_rx_bytes"] + v["shm_rx_bytes"] > 0) ok = 1 }
         END { exit !ok }' "$1"
}

if [ ! -f "$LIB" ]; then
    for s in $SCEN; do fail "$NAME: $s" "library not built"; done
    exit 1
fi
i=0
for s in $SCEN; do
    mode=cmd
    case $s in two | many | fork | v6mapped | reuseport | relisten | inetd) mode=$s ;; upgrade | eplazy | rdpwait | closerace | cancelall) mode=cmdt ;; accept2) mode=acc2 ;; esac
    run "$s.tcp" $((PORT + i)) "$mode" "$s" no
    run "$s.lib" $((PORT + i + 1)) "$mode" "$s" yes
    async=no
    [[ " $ASYNC " == *" $s "* ]] && async=yes && run "$s.async" $((PORT + i + 2)) "$mode" "$s" async
    i=$((i + 3))
    # the client's connections that went over RDP: every one the scenario opens
    want=1
    case $s in reuseport | relisten | epoll0 | upgrade) want=2 ;; eplazy) want=4 ;; rdpwait | accept2) want=2 ;; inetd) want=0 ;; esac
    key=accelerated
    [ "$SAME" = 1 ] && key=shm
    acc=$(grep -o " $key=[0-9]*" "$CDIR/$s.lib.stats" 2>/dev/null | cut -d= -f2 | sort -n |
        tail -1)
    [ -n "${PRELOAD_SEM_KEEP:-}" ] && mkdir -p "$PRELOAD_SEM_KEEP" &&
        cp "$CDIR/$s".* "$PRELOAD_SEM_KEEP/"
    if ! d=$(diff "$CDIR/$s.tcp.cli" "$CDIR/$s.lib.cli"); then
        fail "$NAME: $s" "client transcripts differ (< kernel, > library): $d"
    elif ! d=$(diff "$CDIR/$s.tcp.srv" "$CDIR/$s.lib.srv"); then
        fail "$NAME: $s" "server transcripts differ: $d"
    elif grep -q ' bad_transitions=[1-9]' "$CDIR/$s".{lib,async}.stats 2>/dev/null; then
        # a connection's state moved where the lifecycle's table says it cannot
        # (preload/lifecycle.c)
        fail "$NAME: $s" "a state change not in the lifecycle's table: $(cat "$CDIR/$s".*.stats)"
    elif [ "$s" != names ] && [ "${acc:-0}" -lt "$want" ]; then
        # the client's line (the server is killed, and prints none): accelerated, so the
        # server took it under the library too; names sends no byte, so its outcome may
        # come after the client is gone
        fail "$NAME: $s" "not accelerated: $(cat "$CDIR/$s.lib.stats" 2>/dev/null)"
    elif [[ $s == fork_* || $s == exec_rdp || $s == vfork || $s == spawn ]] &&
        ! grep -q 'switched=1' "$CDIR/$s.lib.stats"; then
        fail "$NAME: $s" "not moved to TCP: $(cat "$CDIR/$s.lib.stats" 2>/dev/null)"
    elif [ "$s" = exitw ] && [ "$(grep -c . "$CDIR/$s.lib.stats")" -lt 2 ]; then
        # the server ends with _exit: its exit wait (delivery, then PSP_STATS) ran too
        fail "$NAME: $s" "no PSP_STATS line from the server's _exit: $(cat "$CDIR/$s.lib.stats")"
    elif [ "$s" = inetd ] && ! grep -q 'accelerated=0 tcp=1 .*not_accepted=1' \
        "$CDIR/$s.lib.stats"; then
        fail "$NAME: $s" "not declined: $(cat "$CDIR/$s.lib.stats" 2>/dev/null)"
    elif [ $async = yes ] && ! d=$(diff "$CDIR/$s.tcp.cli" "$CDIR/$s.async.cli"); then
        fail "$NAME: $s" "without PSP_SYNC: client transcripts differ (< kernel, > library): $d"
    elif [ $async = yes ] && ! d=$(diff "$CDIR/$s.tcp.srv" "$CDIR/$s.async.srv"); then
        fail "$NAME: $s" "without PSP_SYNC: server transcripts differ: $d"
    elif [[ $s == upgrade || $s == upwrite ]] && ! moved_up "$CDIR/$s.async.stats" "$want"; then
        fail "$NAME: $s" "without PSP_SYNC: not moved up with bytes on both paths: $(cat "$CDIR/$s.async.stats" 2>/dev/null)"
    elif ! grep -q '^exit 0' "$CDIR/$s.tcp.cli"; then
        fail "$NAME: $s" "the kernel run failed: $(cat "$CDIR/$s.tcp.cli")"
    else
        pass "$NAME: $s"
    fi
done
exit $((FAILS > 0))
