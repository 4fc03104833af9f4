#!/bin/bash
# preload_same_programs.sh - real programs with both ends on one node (node 0, 127.0.0.1, a
# 1-node loopback cluster), everything under libpspreload unless said: each connection must
# travel on the same-node path (shared memory; PSP_STATS shm=, shm_tx_bytes, shm_rx_bytes).
#  - nc (netcat-openbsd) and socat move 100 MiB each way: sha256 equal, both sides shm=1 and
#    at least 75 % of the size in the receiver's shm_rx_bytes and the sender's shm_tx_bytes
#    (the rest went on the kernel socket before the negotiation's answer);
#  - curl gets a 20 MB file from python3's http.server: byte-exact, shm on both sides (the
#    server ends on SIGINT, so that it writes its counters);
#  - redis-benchmark -c 50 -n 20000 -t set,get exits 0, every one of its 50 connections on
#    shm (its short first one, which asks the configuration, may end on TCP: short);
#  - iperf3 -t 2: both exit 0, its control and data connection on shm on both sides;
#  - sockperf ping-pong over TCP for 2 s: exits 0, shm on both sides;
#  - both ends in one process (test/tools/plsame): a client and a server thread, 10000
#    request/response pairs and 64 MiB one way, checked; and one thread that connects
#    (nonblocking), polls, accepts, and moves 8 MiB each way between the two ends in one
#    poll loop: shm=2 (each end counts); and a busy epoll loop (it reads, then computes for
#    10 ms) fed one byte a millisecond: at most 12 doorbells for 400 bytes (lazy arming);
#  - SIGKILL of the reader, then of the writer, in the middle of a transfer (plsame; of 64 GiB
#    rather than 1 GiB: the same-node path moves 1 GiB in about 0.1 s here, too short a
#    window to kill it in the middle for sure; the kill comes once 128 MiB went, after about
#    50 ms): the other end sees EOF, EPIPE or ECONNRESET within 5 s, no hang; once it closed
#    its socket it maps no "memfd:pscluster-shm" any more, psid holds none, and /dev/shm has
#    no new file;
#  - a reader that stops reading for 10 s: the writer's count (from its own side) stops
#    growing within a ring's worth of the reader's, both processes' VmRSS + RssShmem stay
#    below 64 MB during the stall, and after it all 256 MiB arrive intact;
#  - PSP_STRICT=1 to a listener on 127.0.0.1 without the library: allowed, on TCP (a local
#    service is not a cluster connection), as it is on 127.0.0.9; to one under the library:
#    shm. (The 127.0.0.1 check fails today, a bug of the library: see there.)
# Every process is started by pid and killed on exit (cluster.sh's trap); every wait bounded.
# About 25 s on a 2-vCPU VM, 10 s of it the stall. Lines without PASS/FAIL are notes
# (outcomes, timings) for a reader of the log.
# shellcheck source-path=SCRIPTDIR source=lib/cluster.sh
source "$(dirname "$0")/lib/cluster.sh"
LIB=$TOP/build/lib/libpspreload.so
PLS=$TOP/build/test/tools/plsame
N="preload same-node"
MB=100
cluster_up 1
all_up 5000 || {
    fail "$N: cluster up" "not all up"
    exit 1
}
for f in "$LIB" "$PLS"; do
    [ -f "$f" ] || {
        fail "$N: build" "not built ($f): make build-tests"
        exit 1
    }
done
for p in nc socat sha256sum curl python3 redis-server redis-benchmark iperf3 sockperf; do
    command -v "$p" >/dev/null || {
        fail "$N: $p" "not installed (scripts/install-deps.sh --check)"
        exit 1
    }
done
PORT=$(free_port 18)
SOCK=$CDIR/psid-0.sock
T0=$(now_ms)

# on TAG IN CMD...: CMD on node 0 under the library, in the background, stdin from IN (a
# background job's would be /dev/null), counters to $CDIR/stats.TAG, stdout to $CDIR/TAG.out;
# $! is its pid, and it is killed on exit
on() {
    local tag=$1 in=$2
    shift 2
    PSID_SOCKET=$SOCK LD_PRELOAD=$LIB PSP_STATS=$CDIR/stats.$tag "$@" <"$in" >"$CDIR/$tag.out" \
        2>"$CDIR/$tag.err" &
    PIDS+=($!)
}
# lib TAG CMD...: CMD on node 0 under the library, in the foreground (bounded by the caller)
lib() {
    local tag=$1
    shift
    PSID_SOCKET=$SOCK LD_PRELOAD=$LIB PSP_STATS=$CDIR/stats.$tag "$@"
}
listening() { ss -Hltn "sport = :$1" | grep -q .; } # listening PORT
gone() { ! kill -0 "$1" 2>/dev/null; }             # gone PID
# finish MS PID...: wait for each, MS at most (then it is killed: the check fails)
finish() {
    local ms=$1 p
    shift
    for p; do
        wait_until "$ms" gone "$p" || kill -KILL "$p" 2>/dev/null
        wait "$p" 2>/dev/null
    done
}
# stat TAG KEY: KEY's value in TAG's last counters line
stat() { tail -1 "$CDIR/stats.$1" 2>/dev/null | tr ' ' '\n' | sed -n "s/^$2=//p"; }
stats() { tail -qn1 "$@" 2>/dev/null | tr '\n' ' '; } # stats FILE...: for failure texts
# on_shm TAG [N]: TAG's counters show N (1) connections on the same-node path and none on TCP
on_shm() { [[ $(stat "$1" shm) == "${2:-1}" && $(stat "$1" tcp) == 0 ]]; }
# last_wrote FILE: the last count a plsame writer printed
last_wrote() { sed -n 's/^wrote //p' "$1" 2>/dev/null | tail -1; }
wrote_beyond() { [[ $(last_wrote "$1") -ge $2 ]]; } # wrote_beyond FILE BYTES
# shm_maps PID: the process maps (or holds open) a channel's memfd
shm_maps() {
    grep -qs 'memfd:pscluster-shm' "/proc/$1/maps" ||
        find "/proc/$1/fd" -lname '*memfd:pscluster-shm*' 2>/dev/null | grep -q .
}
no_shm_maps() { ! shm_maps "$1"; }
# mem_kb PID: VmRSS + RssShmem in kB
mem_kb() { awk '/^(VmRSS|RssShmem):/ {s += $2} END {print s + 0}' "/proc/$1/status" 2>/dev/null; }

head -c $((MB << 20)) /dev/urandom >"$CDIR/in.bin"
SUM=$(sha256sum <"$CDIR/in.bin")
SIZE=$((MB << 20))
fresh() { rm -f "$CDIR"/stats.* "$CDIR/out.bin"; }
# most NODE DIR: of the whole size in that direction (tx, rx), at least 75 % in shared
# memory, the rest on the kernel socket before the negotiation's answer
most() {
    local m t
    m=$(stat "$1" "shm_$2_bytes") t=$(stat "$1" "tcp_$2_bytes")
    [[ -n $m && -n $t && $((m + t)) -ge $SIZE && $((m * 4)) -ge $((SIZE * 3)) ]]
}
# moved RX TX WHAT: the bytes came intact, both on shm, the whole size received and sent
moved() {
    [[ $(sha256sum <"$CDIR/out.bin") == "$SUM" ]] && on_shm "$1" && on_shm "$2" &&
        most "$1" rx && most "$2" tx
    check "$N nc/socat: $3" $? "$(stats "$CDIR"/stats.*)"
}

# 1. nc and socat, 100 MiB each way
fresh
on ncs /dev/null nc -l 127.0.0.1 "$PORT"
s=$!
wait_until 5000 listening "$PORT"
on ncc "$CDIR/in.bin" nc -N 127.0.0.1 "$PORT"
finish 60000 $! "$s"
mv "$CDIR/ncs.out" "$CDIR/out.bin"
moved ncs ncc "nc ${MB} MiB client->server: shm on both sides, byte-exact"

fresh
on ncs "$CDIR/in.bin" nc -N -l 127.0.0.1 $((PORT + 1))
s=$!
wait_until 5000 listening $((PORT + 1))
on ncc /dev/null nc -d 127.0.0.1 $((PORT + 1))
finish 60000 $! "$s"
mv "$CDIR/ncc.out" "$CDIR/out.bin"
moved ncc ncs "nc ${MB} MiB server->client: shm on both sides, byte-exact"

fresh
on sos /dev/null socat -u TCP-LISTEN:$((PORT + 2)),bind=127.0.0.1,reuseaddr \
    "OPEN:$CDIR/out.bin,creat,trunc"
s=$!
wait_until 5000 listening $((PORT + 2))
on soc /dev/null socat -u "OPEN:$CDIR/in.bin" TCP:127.0.0.1:$((PORT + 2))
finish 60000 $! "$s"
moved sos soc "socat ${MB} MiB client->server: shm on both sides, byte-exact"

fresh
on sos /dev/null socat -u "OPEN:$CDIR/in.bin" TCP-LISTEN:$((PORT + 3)),bind=127.0.0.1,reuseaddr
s=$!
wait_until 5000 listening $((PORT + 3))
on soc /dev/null socat -u TCP:127.0.0.1:$((PORT + 3)) "OPEN:$CDIR/out.bin,creat,trunc"
finish 60000 $! "$s"
moved soc sos "socat ${MB} MiB server->client: shm on both sides, byte-exact"
rm -f "$CDIR/in.bin" "$CDIR/out.bin"

# 2. curl from python3 -m http.server (it ends on SIGINT and so writes its counters)
mkdir -p "$CDIR/www"
head -c 20000000 /dev/urandom >"$CDIR/www/f.bin"
(cd "$CDIR/www" && PSID_SOCKET=$SOCK LD_PRELOAD=$LIB PSP_STATS=$CDIR/stats.http \
    exec python3 -m http.server --bind 127.0.0.1 $((PORT + 4)) >/dev/null 2>&1) &
s=$!
PIDS+=("$s")
wait_until 10000 listening $((PORT + 4))
lib curl timeout 30 curl -s -o "$CDIR/got.bin" "http://127.0.0.1:$((PORT + 4))/f.bin"
rc=$?
kill -INT "$s"
wait_until 5000 grep -qs . "$CDIR/stats.http"
# (the bytes before the move ride TCP: the response's header did once, under load)
cmp -s "$CDIR/got.bin" "$CDIR/www/f.bin" && [ $rc -eq 0 ] && on_shm curl &&
    [[ $(($(stat curl shm_rx_bytes) + $(stat curl tcp_rx_bytes))) -gt 20000000 &&
        $(stat curl shm_rx_bytes) -ge 15000000 && $(stat http shm) -ge 1 ]]
check "$N curl: 20 MB from python3 http.server, byte-exact, shm on both sides" $? \
    "curl rc $rc: $(stats "$CDIR/stats.curl" "$CDIR/stats.http")"
finish 5000 "$s"
rm -rf "$CDIR/www" "$CDIR/got.bin"

# 3. redis-benchmark, 50 connections
on redis /dev/null redis-server --bind 127.0.0.1 --port $((PORT + 5)) --save '' \
    --appendonly no --daemonize no
s=$!
wait_until 10000 listening $((PORT + 5))
lib bench timeout 60 redis-benchmark -h 127.0.0.1 -p $((PORT + 5)) -q -n 20000 -c 50 \
    -t set,get >"$CDIR/bench.out" 2>&1
rc=$?
[ $rc -eq 0 ] && grep -q "GET: .* requests per second" "$CDIR/bench.out" &&
    [[ $(stat bench shm) -ge 50 && $(($(stat bench tcp) - $(stat bench short))) == 0 ]]
check "$N redis: redis-benchmark -c 50 -n 20000 -t set,get exits 0, every connection on shm" \
    $? "rc $rc: $(tail -2 "$CDIR/bench.out" | tr '\n' ' ') $(stats "$CDIR/stats.bench")"
{ # one redirection for both: bash's "Killed" notice goes too
    kill -KILL "$s"
    wait "$s"
} 2>/dev/null

# 4. iperf3 (-1: the server ends after one test and writes its counters)
on iperfs /dev/null timeout 30 iperf3 -s -1 -B 127.0.0.1 -p $((PORT + 6))
s=$!
wait_until 10000 listening $((PORT + 6))
lib iperfc timeout 30 iperf3 -c 127.0.0.1 -p $((PORT + 6)) -t 2 >"$CDIR/iperfc.out" 2>&1
rc=$?
wait "$s"
src=$?
[ $rc -eq 0 ] && [ $src -eq 0 ] && grep -q receiver "$CDIR/iperfc.out" && on_shm iperfc 2 &&
    on_shm iperfs 2
check "$N iperf3: -t 2, both exit 0, control and data connection on shm on both sides" $? \
    "client rc $rc, server rc $src: $(tail -3 "$CDIR/iperfc.out" | tr '\n' ' ') $(stats "$CDIR/stats.iperfc" "$CDIR/stats.iperfs")"

# 5. sockperf ping-pong (the server runs until SIGINT)
on sps /dev/null sockperf sr --tcp -i 127.0.0.1 -p $((PORT + 7))
s=$!
wait_until 10000 listening $((PORT + 7))
lib spc timeout 30 sockperf pp --tcp -i 127.0.0.1 -p $((PORT + 7)) -t 2 --mps 5000000 \
    >"$CDIR/spc.out" 2>&1 # --mps: sockperf sizes its table by an assumed 600 k/s
rc=$?
kill -INT "$s"
wait_until 5000 grep -qs . "$CDIR/stats.sps"
[ $rc -eq 0 ] && grep -q "Summary: Latency is [0-9.]* usec" "$CDIR/spc.out" && on_shm spc &&
    on_shm sps
check "$N sockperf: ping-pong over TCP for 2 s, exits 0, shm on both sides" $? \
    "rc $rc: $(grep -E "Summary|ERROR" "$CDIR/spc.out" | tr '\n' ' ') $(stats "$CDIR/stats.spc" "$CDIR/stats.sps")"
finish 5000 "$s"

# 6. both ends in one process
out=$(lib threads timeout 30 "$PLS" threads $((PORT + 8)) 10000 64 2>&1)
rc=$?
[[ $rc == 0 && $out == *"rr 10000 ok"* && $out == *"bulk $((64 << 20)) ok"* ]] &&
    on_shm threads 2
check "$N one process: client and server threads, 10000 request/response pairs and 64 MiB, checked, shm=2" \
    $? "rc $rc: $out $(stats "$CDIR/stats.threads")"
out=$(lib pair timeout 30 "$PLS" pair $((PORT + 9)) 8 2>&1)
rc=$?
[[ $rc == 0 && $out == "pair $((8 << 20)) $((8 << 20)) ok" ]] && on_shm pair 2
check "$N one process: nonblocking connect and accept in one thread, 8 MiB each way in one poll loop, shm=2" \
    $? "rc $rc: $out $(stats "$CDIR/stats.pair")"
# a busy epoll loop: the writer rings no doorbell while the reader's waits find its bytes
# (lazy arming, preload/bells.c; an armed ring would cost one per read: about 40 here)
out=$(PSP_SYNC=1 lib busy timeout 30 "$PLS" busy $((PORT + 17)) 400 10 2>&1)
rc=$?
bells=$(grep -o 'shm_bells=[0-9]*' "$CDIR/stats.busy" 2>/dev/null | cut -d= -f2)
[[ $rc == 0 && $out == "busy 400 ok" && ${bells:-99} -le 12 ]] && on_shm busy 2
check "$N one process: a busy epoll loop takes 400 bytes written 1 ms apart with at most 12 doorbells" \
    $? "rc $rc: $out $(stats "$CDIR/stats.busy")"

# 7. SIGKILL of either end in the middle of a transfer
BIG=$((64 << 30))
shm_before=$(ls /dev/shm)
# killed VICTIM SURVIVOR PORT: start the pair (the reader, then the writer), kill VICTIM
# (recv or send) once 128 MiB went; SURVIVOR's outcome line must come within 5 s
killed() {
    local victim=$1 surv=$2 port=$3 r w s v t0 t line ropt=() sopt=()
    rm -f "$CDIR"/{recv,send}.out
    # -H: the survivor stays after its outcome, its socket closed
    if [ "$surv" = recv ]; then ropt=(-H); else sopt=(-H); fi
    on recv /dev/null "$PLS" recv "${ropt[@]}" 127.0.0.1 "$port"
    r=$!
    wait_line "$CDIR/recv.out" '^ready' 5000
    on send /dev/null "$PLS" send "${sopt[@]}" 127.0.0.1 "$port" "$BIG"
    w=$!
    wait_until 10000 wrote_beyond "$CDIR/send.out" $((128 << 20))
    if [ "$victim" = recv ]; then v=$r s=$w; else v=$w s=$r; fi
    t0=$(now_ms)
    {
        kill -KILL "$v"
        wait "$v"
    } 2>/dev/null
    wait_line "$CDIR/$surv.out" '^\(error\|eof\|done\)' 5000
    t=$(($(now_ms) - t0))
    line=$(grep -m1 '^\(error\|eof\|done\)' "$CDIR/$surv.out")
    echo "  ($victim killed after $(last_wrote "$CDIR/send.out") bytes written: the $surv's '$line' after $t ms)"
    if [ "$surv" = send ]; then
        [[ $line =~ ^error\ (EPIPE|ECONNRESET)\ after\ ([0-9]+)$ && ${BASH_REMATCH[2]} -lt $BIG ]]
    else
        [[ $line =~ ^(eof\ ([0-9]+)\ ok|error\ ECONNRESET\ after\ ([0-9]+))$ &&
            ${BASH_REMATCH[2]:-${BASH_REMATCH[3]}} -lt $BIG ]]
    fi
    check "$N kill: SIGKILL of the $victim in the middle: the $surv sees its end within 5 s" $? \
        "after $t ms: '$line' (the $surv: $(tail -2 "$CDIR/$surv.out" | tr '\n' ' ')$(cat "$CDIR/$surv.err"))"
    wait_line "$CDIR/$surv.out" '^closed' 2000 && wait_until 3000 no_shm_maps "$s"
    check "$N kill: ... the $surv, its socket closed, maps no pscluster-shm memfd" $? \
        "$(grep -s pscluster-shm "/proc/$s/maps") $(tail -1 "$CDIR/$surv.out")"
    {
        kill -KILL "$s"
        wait "$s"
    } 2>/dev/null
}
killed recv send $((PORT + 10))
killed send recv $((PORT + 11))
left=""
for p in "${PIDS[@]}"; do [ -n "$p" ] && shm_maps "$p" && left+=" $p"; done
new=$(comm -13 <(echo "$shm_before") <(ls /dev/shm))
[ -z "$left" ] && [ -z "$new" ]
check "$N kill: afterwards no process started (psid neither) maps a pscluster-shm memfd, no new file in /dev/shm" \
    $? "mapped by:$left; new in /dev/shm: $(echo "$new" | tr '\n' ' ')"

# 8. a reader that stops reading for 10 s. Both ends PSP_SYNC=1: every byte takes the ring,
# whose bound (the ring and the window, 2 MiB) is what is checked; without it a negotiation
# slowed by a loaded machine left the stream on the kernel socket past the pause, whose
# buffers hold more (make check: the writer 4.75 MiB ahead, then blocked)
STALL=10
TOTAL=$((256 << 20)) AT=$((32 << 20))
rm -f "$CDIR"/{recv,send}.out
on recv /dev/null env PSP_SYNC=1 "$PLS" recv -s "$AT:$STALL" 127.0.0.1 $((PORT + 12))
r=$!
wait_line "$CDIR/recv.out" '^ready' 5000
on send /dev/null env PSP_SYNC=1 "$PLS" send 127.0.0.1 $((PORT + 12)) "$TOTAL"
w=$!
wait_line "$CDIR/recv.out" '^pause' 10000
t0=$(now_ms)
maxr=0 maxw=0 w1="" w2=""
# samples until the reader resumes (bounded): the writer's count after 1 s of the stall and
# at its end, the larger memory of each process
while ! grep -q '^resume' "$CDIR/recv.out" && [ $(($(now_ms) - t0)) -lt $((STALL * 1000 + 3000)) ]; do
    t=$(($(now_ms) - t0))
    [ -z "$w1" ] && [ "$t" -ge 1000 ] && w1=$(last_wrote "$CDIR/send.out")
    # (kept only if the reader had not resumed when it was taken: it prints "resume" before
    # it reads again, and the start of our clock may lag the pause's under load)
    # (the last 3 s of the stall: a sample under load may take most of a second)
    if [ "$t" -ge $((STALL * 1000 - 3000)) ] && [ "$t" -lt $((STALL * 1000)) ]; then
        c=$(last_wrote "$CDIR/send.out")
        grep -q '^resume' "$CDIR/recv.out" || w2=$c
    fi
    m=$(mem_kb "$r")
    [ "${m:-0}" -gt "$maxr" ] && maxr=$m
    m=$(mem_kb "$w")
    [ "${m:-0}" -gt "$maxw" ] && maxw=$m
    sleep 0.25
done
at=$(sed -n 's/^pause //p' "$CDIR/recv.out")
echo "  (stall: reader paused at $at, writer at ${w1:-?} after 1 s, ${w2:-?} near the end; reader ${maxr} kB, writer ${maxw} kB)"
[[ -n $w1 && -n $w2 && $w1 == "$w2" && $w1 -le $((at + (4 << 20))) ]]
check "$N stall: the reader stops for ${STALL} s: the writer blocks (its count stops within 4 MiB of the reader's)" \
    $? "reader paused at $at, writer at ${w1:-?} after 1 s, ${w2:-?} at the end"
[[ $maxr -gt 0 && $maxw -gt 0 && $maxr -lt 65536 && $maxw -lt 65536 ]]
check "$N stall: ... both processes' VmRSS + RssShmem stay below 64 MB" $? \
    "reader ${maxr} kB, writer ${maxw} kB"
wait_line "$CDIR/recv.out" '^eof' 20000
finish 5000 "$w" "$r"
grep -qx "eof $TOTAL ok" "$CDIR/recv.out" && grep -qx "done $TOTAL" "$CDIR/send.out" &&
    on_shm recv && on_shm send
check "$N stall: ... then the reader resumes and all 256 MiB arrive intact, on shm" $? \
    "$(tail -1 "$CDIR/recv.out") / $(tail -1 "$CDIR/send.out") $(stats "$CDIR/stats.recv" "$CDIR/stats.send")"

# 9. PSP_STRICT=1: a local listener without the library is no cluster connection
echo hello >"$CDIR/hello"
# strict_plain ADDR PORT: a listener without the library on ADDR, a strict client under it
strict_plain() {
    local s rc
    rm -f "$CDIR/stats.strict"
    nc -l "$1" "$2" >"$CDIR/plain.out" 2>/dev/null &
    s=$!
    PIDS+=("$s")
    wait_until 5000 listening "$2"
    PSP_STRICT=1 lib strict timeout 20 nc -N "$1" "$2" <"$CDIR/hello" 2>"$CDIR/strict.err"
    rc=$?
    [ $rc = 0 ] || kill "$s" 2>/dev/null # refused: the listener waits for nothing
    finish 5000 "$s"
    [[ $rc == 0 && $(cat "$CDIR/plain.out") == hello && $(stat strict tcp) == 1 &&
        $(stat strict no_library) == 1 && $(stat strict shm) == 0 ]]
    check "$N strict: PSP_STRICT=1 to a listener on $1 without the library: allowed, on TCP" \
        $? "rc $rc: $(cat "$CDIR/strict.err") $(stats "$CDIR/stats.strict")"
}
# the node's own address (127.0.0.1 is node 0's in the node table) and another address of
# this machine: a local service without the library is not a cluster connection
strict_plain 127.0.0.1 $((PORT + 13))
strict_plain 127.0.0.9 $((PORT + 15))
on strs /dev/null nc -l 127.0.0.1 $((PORT + 14))
s=$!
wait_until 5000 listening $((PORT + 14))
PSP_STRICT=1 lib strictc timeout 20 nc -N 127.0.0.1 $((PORT + 14)) <"$CDIR/hello" \
    2>"$CDIR/strict.err"
rc=$?
finish 5000 "$s"
[[ $rc == 0 && $(cat "$CDIR/strs.out") == hello ]] && on_shm strictc && on_shm strs
check "$N strict: PSP_STRICT=1 to a listener on 127.0.0.1 under the library: shm" $? \
    "rc $rc: $(cat "$CDIR/strict.err") $(stats "$CDIR/stats.strictc" "$CDIR/stats.strs")"
# psstat sockets lists both ends of a live same-node connection (path shm); a process of
# another uid can read neither end's descriptors nor its mappings (as root only)
mkfifo "$CDIR/hold.fifo"
on holds /dev/null nc -l 127.0.0.1 $((PORT + 16))
s=$!
wait_until 5000 listening $((PORT + 16))
on holdc "$CDIR/hold.fifo" nc -N 127.0.0.1 $((PORT + 16))
c=$!
exec {hold}>"$CDIR/hold.fifo"
echo hi >&"$hold"
wait_until 5000 grep -q hi "$CDIR/holds.out"
j=$(PSID_SOCKET=$SOCK "$BIN/psstat" --json sockets)
json_true "$j" ".sockets | length == 2 and all(.path == \"shm\") and
    any(.remote == \"127.0.0.1:$((PORT + 16))\") and any(.local == \"127.0.0.1:$((PORT + 16))\")"
check "$N psstat sockets: both ends of a live connection, path shm" $? "$j"
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
    bell=$(ls -l "/proc/$c/fd" 2>/dev/null | awk '$NF ~ /^socket:/ && $9 >= 1000 { print $9 }' |
        tail -1)
    other() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@" >/dev/null 2>&1; }
    ! other cat "/proc/$c/maps" && ! other cat "/proc/$s/maps" && [ -n "$bell" ] &&
        ! other sh -c "exec 3<>/proc/$c/fd/$bell" && grep -q pscluster-shm "/proc/$c/maps"
    check "$N another uid can open neither the maps nor the doorbell of a connection" $? \
        "bell fd ${bell:-none}"
else
    echo "SKIP: $N another uid can open neither the maps nor the doorbell (needs root, setpriv)"
fi
exec {hold}>&-
finish 5000 "$c" "$s"
echo "($N programs: $((($(now_ms) - T0) / 1000)) s)"
exit $((FAILS > 0))
