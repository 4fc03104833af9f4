#!/bin/bash
# test/shell/rdpbench.sh - the benchmark tool itself, on loopback: it must verify what it
# measures, report it as JSON that bench/rdp.sh can read, and refuse bad input.
#   - pingpong and stream with --vs-tcp --json: exit 0, every message counted on both
#     transports, a ratio, the MAC implementation named
#   - stream with random sizes and the fault injector on both sides: still every message
#   - the portable MAC on one side only (--mac-impl portable): the MAC libraries interoperate
#   - a server with another key: the client fails (exit 1) and says why (the control
#     connection compares key fingerprints; RDP itself under a wrong key: rdp_security)
#   - without --key both sides say they use the fixed benchmark key; a --key file that
#     cannot be used (missing, short, open to others): exit 1 naming the file and the reason,
#     as psid and psconf do for a bad key_file (the command line itself is well-formed)
#   - RDPBENCH_TEST_FAULT=dup:N: the checker catches a duplicated message
#   - RDP tunables at the library's limits run; one past them: exit 2 with the range, on the
#     client and on the server (before rdp_open would refuse them)
#   - bad command lines: exit 2 with usage
set -u
# shellcheck source-path=SCRIPTDIR source=lib/cluster.sh
. "$(dirname "$0")/lib/cluster.sh"
RB=$BIN/rdpbench
CDIR=$(mktemp -d)

# server LOG [ARGS...]: start an rdpbench server on 127.0.0.1, port 0; sets SRV (ADDR:PORT)
server() {
    local log=$CDIR/$1
    shift
    "$RB" server 127.0.0.1:0 --timeout 20 "$@" >"$log" 2>&1 &
    PIDS+=($!)
    SRV=""
    wait_until 5000 grep -q '^server: listening on ' "$log" || return 1
    SRV=$(sed -n 's/^server: listening on \([^ ]*\) .*/\1/p' "$log")
}

stop_servers() {
    local p
    for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null; done
    for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null; done
    PIDS=()
}

# jcheck NAME JSON JQ-EXPR: pass if the expression is true of the JSON
jcheck() {
    if json_true "$2" "$3"; then pass "$1"; else fail "$1" "not ($3): $2"; fi
}

server srv1.log || fail "rdpbench: server starts" "$(cat "$CDIR/srv1.log")"

out=$("$RB" client "$SRV" --mode pingpong --size 1024 --count 300 --vs-tcp --json 2>"$CDIR/c1.err")
check "rdpbench: pingpong --vs-tcp --json exits 0" $? "$(tail -5 "$CDIR/c1.err")"
# no --key: each side says it uses the fixed key (the client on stderr under --json)
grep -qx "server: no --key given: using the fixed benchmark key (public, not secret)" \
    "$CDIR/srv1.log" &&
    grep -qx "client: no --key given: using the fixed benchmark key (public, not secret)" \
        "$CDIR/c1.err"
check "rdpbench: without --key both sides name the fixed benchmark key" $? \
    "server: $(head -2 "$CDIR/srv1.log") client: $(head -2 "$CDIR/c1.err")"
jcheck "rdpbench: pingpong JSON has both RTTs and their ratio" "$out" \
    '.mode == "pingpong" and .rdp.rtt_us.median > 0 and .tcp.rtt_us.median > 0 and .ratio > 0'
jcheck "rdpbench: JSON names the MAC implementation" "$out" \
    '.mac_impl == "portable" or (.mac_impl | startswith("ipsec-mb/"))'

out=$("$RB" client "$SRV" --mode stream --size 65536 --count 200 --vs-tcp --json 2>"$CDIR/c2.err")
check "rdpbench: stream --vs-tcp --json exits 0" $? "$(tail -5 "$CDIR/c2.err")"
jcheck "rdpbench: stream JSON counts every message on both transports" "$out" \
    '.rdp.msgs == 200 and .tcp.msgs == 200 and .rdp.bytes == 200 * 65536 and .ratio > 0'
stop_servers

# faults on both sides; random sizes up to 1 MiB
server srv2.log --loss 0.1 --dup 0.05 --reorder 0.1 --corrupt 0.01 ||
    fail "rdpbench: server with faults starts" "$(cat "$CDIR/srv2.log")"
out=$("$RB" client "$SRV" --mode stream --size 1-1048576 --count 100 --json \
    --loss 0.1 --dup 0.05 --reorder 0.1 --corrupt 0.01 2>"$CDIR/c3.err")
check "rdpbench: stream under injected faults exits 0" $? "$(tail -5 "$CDIR/c3.err")"
jcheck "rdpbench: under faults every message arrives, some were retransmitted" "$out" \
    '.rdp.msgs == 100 and .client.retransmits > 0 and .client.inj_drop > 0'
stop_servers

# one side computes its MACs with the portable libraries, the other with the best one
server srv3.log || fail "rdpbench: server starts" "$(cat "$CDIR/srv3.log")"
for mac in aes256gcm chacha20poly1305; do
    out=$("$RB" client "$SRV" --mode stream --size 1-100000 --count 300 --mac "$mac" \
        --mac-impl portable --json 2>"$CDIR/c4.err")
    check "rdpbench: portable MAC ($mac) interoperates with the server's" $? \
        "$(tail -5 "$CDIR/c4.err")"
    jcheck "rdpbench: --mac-impl portable is used ($mac)" "$out" \
        '.mac_impl == "portable" and .rdp.msgs == 300 and .client.drops.bad_mac == 0'
done
stop_servers

# a server that takes whole messages (--joined) and a client that takes them in pieces
server srv5.log --joined || fail "rdpbench: --joined server starts" "$(cat "$CDIR/srv5.log")"
out=$("$RB" client "$SRV" --mode pingpong --size 1-1048576 --count 200 --mtu 9000 --json \
    2>"$CDIR/c6.err")
check "rdpbench: pieces (client) and joined (server) pingpong, 1 B..1 MiB, exits 0" $? \
    "$(tail -5 "$CDIR/c6.err")"
jcheck "rdpbench: every message both ways (warm-up included)" "$out" \
    '.client.msgs_recv == 220 and .server.msgs_recv == 220 and .client.drops.malformed == 0'
stop_servers

# two MTUs: the client's 64 KiB datagrams would be too large for a server at MTU 1500, so
# packets in both directions carry the smaller payload (RDP's handshake)
server srv7.log --mtu 1500 || fail "rdpbench: server at MTU 1500 starts" "$(cat "$CDIR/srv7.log")"
out=$("$RB" client "$SRV" --mode pingpong --size 1-1048576 --count 100 --mtu 65536 --json \
    2>"$CDIR/c7.err")
check "rdpbench: client at MTU 65536, server at 1500, exits 0" $? "$(tail -5 "$CDIR/c7.err")"
jcheck "rdpbench: both MTUs reported, every message both ways, none too large" "$out" \
    '.mtu == 65536 and .server_mtu == 1500 and .client.msgs_recv == 110 and
     .server.msgs_recv == 110 and .server.drops.malformed == 0 and .client.losses == 0'
# 1500 - 20 (IPv4) - 8 (UDP) - 64 (RDP header and MAC): the smaller MTU's, on both sides
jcheck "rdpbench: both sides send packets of the smaller MTU, windows open" "$out" \
    '.client.payload == 1408 and .server.payload == 1408 and .client.peer_wnd > 0 and
     .client.rcv_wnd > 0 and .server.peer_wnd > 0 and .server.rcv_wnd > 0'
stop_servers

# a message that arrives wrong is caught by a server taking it in pieces, and whole (--joined)
for side in pieces joined; do
    sargs=(--mtu 9000)
    [ "$side" = joined ] && sargs+=(--joined)
    for f in flip:5 swap:7 dup:6; do
        server srv6.log "${sargs[@]}" || fail "rdpbench: server starts" "$(cat "$CDIR/srv6.log")"
        RDPBENCH_TEST_FAULT=$f "$RB" client "$SRV" --mode stream --size 100000 --count 20 \
            --mtu 9000 --timeout 5 >"$CDIR/c7.out" 2>&1
        rc=$?
        case $f in
        flip:5) want="message #5 (100000 bytes): byte 50000 is 0x.*corrupted" ;;
        swap:7) want="message #7 expected, got #8 .*lost or reordered" ;;
        dup:6) want="message #7 expected, got #6 .* again: duplicated" ;;
        esac
        if [ "$rc" -ne 0 ] && wait_until 5000 grep -q "verification failed: .*$want" "$CDIR/srv6.log"
        then
            pass "rdpbench: $f is caught by a server receiving $side"
        else
            fail "rdpbench: $f is caught by a server receiving $side" \
                "client exit $rc; server: $(tail -3 "$CDIR/srv6.log")"
        fi
        stop_servers
    done
done

# another key: refused before any message is sent
printf 'a different cluster key, 32 bytes or more.....\n' >"$CDIR/other.key"
chmod 600 "$CDIR/other.key"
server srv4.log --key "$CDIR/other.key" || fail "rdpbench: keyed server starts" "$(cat "$CDIR/srv4.log")"
"$RB" client "$SRV" --mode pingpong --size 16 --count 10 --timeout 3 >"$CDIR/c5.out" 2>&1
rc=$?
if [ "$rc" -eq 1 ] && grep -q "key mismatch" "$CDIR/c5.out"; then
    pass "rdpbench: wrong key: client exits 1, naming the key mismatch"
else
    fail "rdpbench: wrong key: client exits 1, naming the key mismatch" \
        "exit $rc: $(tail -3 "$CDIR/c5.out")"
fi
stop_servers

# --key FILE that cannot be used: exit 1, the file and the reason, no usage text; before
# anything listens or connects (the client's server port is closed; timeout: a server that
# did not refuse would wait for clients)
head -c 31 /dev/urandom >"$CDIR/short.key"
chmod 600 "$CDIR/short.key"
head -c 32 /dev/urandom >"$CDIR/open.key"
chmod 644 "$CDIR/open.key"
for k in "missing.key:No such file or directory" "short.key:31 bytes, a key needs at least 32" \
    "open.key:mode 0644 lets group or others at the key"; do
    f=$CDIR/${k%%:*}
    for role in server client; do
        args=(server 127.0.0.1:0 --key "$f")
        [ "$role" = client ] &&
            args=(client 127.0.0.1:1 --key "$f" --mode pingpong --size 16 --count 1)
        out=$(timeout 10 "$RB" "${args[@]}" 2>&1)
        rc=$?
        if [ "$rc" -eq 1 ] && [ "$(wc -l <<<"$out")" -eq 1 ] &&
            [[ $out == "rdpbench: --key $f: ${k#*:}"* ]]; then
            pass "rdpbench: $role --key ${k%%:*}: exit 1, one line naming the file and why"
        else
            fail "rdpbench: $role --key ${k%%:*}: exit 1, one line naming the file and why" \
                "exit $rc: $(head -3 <<<"$out")"
        fi
    done
done

# the RDP tunables at the library's limits (include/rdp.h) work on both sides ...
lim=(--mtu 576 --rto-min-us 200000 --max-retrans 1000 --sndbuf 65536 --rcvbuf 65536 --sock-buf 1)
server srv8.log "${lim[@]}" || fail "rdpbench: server at the tunables' limits starts" \
    "$(cat "$CDIR/srv8.log")"
out=$("$RB" client "$SRV" --mode pingpong --size 1-3000 --count 20 "${lim[@]}" --json \
    2>"$CDIR/c8.err")
check "rdpbench: both sides at the RDP tunables' limits run" $? "$(tail -3 "$CDIR/c8.err")"
jcheck "rdpbench: at the limits every message both ways" "$out" '.client.msgs_recv == 22'
stop_servers
# ... and one step past them is a usage error that gives the range, on either side, before
# any socket (a server would otherwise listen and then fail at rdp_open, exit 1)
for t in "--sndbuf 100:65536..4294967296 bytes" "--rcvbuf 65535:65536..4294967296 bytes" \
    "--rto-min-us 300000:1..200000 (at most RDP's rto_max_us)" \
    "--rto-min-us 0:1..200000 (at most RDP's rto_max_us)" \
    "--max-retrans 1001:1..1000" "--max-retrans 0:1..1000" "--mtu 575:576..65536" \
    "--mtu 65537:576..65536" "--sock-buf 0:1..4294967296 bytes"; do
    opt=${t%%:*}
    for role in server client; do
        args=(server 127.0.0.1:0)
        [ "$role" = client ] && args=(client 127.0.0.1:1 --mode pingpong --size 16 --count 1)
        # shellcheck disable=SC2086 # opt is an option and its value
        out=$(timeout 10 "$RB" "${args[@]}" $opt 2>&1)
        rc=$?
        if [ "$rc" -eq 2 ] && grep -qxF -- "rdpbench: $opt: must be ${t#*:}" <<<"$out" &&
            grep -q "^usage: rdpbench" <<<"$out"; then
            pass "rdpbench: $role $opt: exit 2, the range"
        else
            fail "rdpbench: $role $opt: exit 2, the range" "exit $rc: $(head -2 <<<"$out")"
        fi
    done
done

# bad command lines
for args in "client" "client 127.0.0.1:1 --mode nope --size 1 --count 1" \
    "client 127.0.0.1:1 --mode stream --size 0 --count 1" "server 127.0.0.1:1 --mac md5" \
    "server 127.0.0.1:1 --mac-impl fast" \
    "bogus"; do
    # shellcheck disable=SC2086 # word splitting intended
    check_usage "rdpbench: usage error ($args) -> exit 2" "$RB" $args
done

exit $((FAILS > 0))
