#!/bin/bash
# psrun_stats.sh - psrun's --stats and --stats-file and psstat jobs --done (issue 31 point 4)
# on a 2-node loopback cluster whose psids remember 2 ended jobs (psid.done_jobs):
#  - each rank burns 1 s of CPU and writes 10 MB, then prints what its own /proc says of it
#    (utime + stime with its reaped children's, as getrusage counts them; wchar): the rank's line of the table is at least that and not much more;
#  - the total line adds the ranks up (CPU from the nodes' cgroups, which count the same
#    processes), --stats prints the same table on stderr;
#  - psstat jobs --done (and --json) has the job with its usage, newest first, at most 2;
#  - psstat jobs lists a running job with its name and tasks;
#  - a bad psid.done_jobs is named with file:line:key.
# Every psrun runs under timeout; background ones are waited for by pid.
# shellcheck source-path=SCRIPTDIR source=lib/cluster.sh
source "$(dirname "$0")/lib/cluster.sh"
# shellcheck source=lib/psrun.sh
source "$(dirname "$0")/lib/psrun.sh"

command -v python3 >/dev/null || {
    echo "SKIP: psrun_stats: no python3 for the ranks that burn CPU"
    exit 0
}
PSID_CONF_EXTRA="done_jobs = 2;" cluster_ready 2 psrun_stats
export PSID_SOCKET=$CDIR/psid-0.sock
cd "$CDIR" || exit 1

# the rank: 1 s of CPU, 10 MB written, then "RANK CPU_MS WCHAR" from its own /proc
cat >burn.py <<'PY'
import os, time
t = time.process_time()
while time.process_time() - t < 1.0:
    pass
with open("out-%s" % os.environ["PSI_RANK"], "wb") as f:
    for _ in range(10):
        f.write(b"x" * 1000000)
tm = os.times()
wchar = [l.split()[1] for l in open("/proc/self/io") if l.startswith("wchar:")][0]
cpu = tm.user + tm.system + tm.children_user + tm.children_system
print(os.environ["PSI_RANK"], int(cpu * 1000), wchar)
PY
# [DD-][HH:]MM:SS.mmm -> ms; NNN.NNM -> bytes (rounded down)
ms() { awk -F'[-:.]' '{n = NF; s = $(n-1) + 60 * $(n-2) + (n > 3 ? 3600 * $(n-3) : 0); print s * 1000 + $n}' <<<"$1"; }
bytes() { awk '{printf "%d", substr($1, 1, length($1) - 1) * 1048576}' <<<"$1"; }
field() { awk -F'|' -v r="$1" -v c="$2" '$3 == r {print $c}' stats.txt; }

settle
run "$PSRUN" -N 2 -n 2 -J burner --stats --stats-file stats.txt python3 burn.py
head=$(head -1 stats.txt 2>/dev/null)
[ $RC -eq 0 ] && [ "$head" = "JobID|JobName|Rank|NodeList|Elapsed|UserCPU|SystemCPU|TotalCPU|MaxRSS|MaxDiskRead|MaxDiskWrite" ]
check "--stats-file: sacct's field names" $? "rc=$RC '$head' $ERR"
ok=0
for r in 0 1; do
    read -r _ own_ms own_w < <(awk -v r=$r '$1 == r' <<<"$OUT")
    t=$(ms "$(field $r 8)")
    w=$(bytes "$(field $r 11)")
    # the table: at least what the rank saw of itself (it measured before its end), at most
    # 400 ms more (the interpreter's exit); wchar to within the MiB rounding
    if [ -n "$own_ms" ] && [ "$t" -ge $((own_ms - 10)) ] && [ "$t" -le $((own_ms + 400)) ] &&
        [ "$t" -ge 1000 ] && [ "$w" -ge $((own_w - 10486)) ] && [ "$w" -ge 10000000 ]; then
        ok=$((ok + 1))
    else
        echo "rank $r: table ${t} ms ${w} B, its /proc ${own_ms:-?} ms ${own_w:-?} B"
    fi
done
[ "$ok" -eq 2 ]
check "each rank: CPU >= 1 s and its disk writes >= 10 MB, as its /proc says" $? "$(cat stats.txt)"
t0=$(ms "$(field 0 8)")
t1=$(ms "$(field 1 8)")
tt=$(ms "$(field total 8)")
w=$(bytes "$(field total 11)")
nodes=$(awk -F'|' '$3 == "node"' stats.txt | wc -l)
[ "$tt" -ge $((t0 + t1 - 100)) ] && [ "$tt" -le $((t0 + t1 + 300)) ] && [ "$w" -ge 20000000 ] &&
    [ "$nodes" -le 2 ]
check "the total adds the ranks up (CPU ${tt} ms of ${t0} + ${t1} ms, $w B written)" $? \
    "$(cat stats.txt)"
tail -n +2 stats.txt >file.rows
grep "^[^|]*|burner|" <<<"$ERR" >err.rows
cmp -s file.rows err.rows
check "--stats: the same table on stderr" $? "$ERR"

# ---- psstat jobs --done: the job, its usage; at most done_jobs (2), newest first
js=$(timeout 10 "$BIN/psstat" --json jobs --done 2>&1)
json_true "$js" '.done[0].name == "burner" and .done[0].ntasks == 2 and
    .done[0].user_cpu_us + .done[0].system_cpu_us >= 2000000 and .done[0].disk_write >= 20000000 and
    .done[0].status == 0'
check "psstat jobs --done --json: the job with its usage" $? "$js"
for n in 1 2; do run "$PSRUN" -n 1 -J "later$n" true; done
js=$(timeout 10 "$BIN/psstat" --json jobs --done 2>&1)
txt=$(timeout 10 "$BIN/psstat" jobs --done 2>&1)
json_true "$js" '[.done[].name] == ["later2", "later1"]' && grep -q "^JobID .*UserCPU" <<<"$txt" &&
    grep -q " later1 " <<<"$txt"
check "psstat jobs --done: a ring of psid.done_jobs, newest first" $? "$js $txt"
run "$PSRUN" -n 1 sh -c 'exit 3'
js=$(timeout 10 "$BIN/psstat" --json jobs --done 2>&1)
json_true "$js" '.done[0].status == 768'
check "psstat jobs --done: a failed job's first failed status" $? "$js"

# ---- psstat jobs: the running ones
settle
timeout 20 "$PSRUN" -n 2 -J sleeper sh -c 'echo up >up.$PSI_RANK; exec sleep 30' </dev/null \
    >/dev/null 2>&1 &
sp=$!
STRAY+=("$sp")
wait_until 5000 test -s up.1
js=$(timeout 10 "$BIN/psstat" --json jobs 2>&1)
kill -TERM "$sp"
wait "$sp" 2>/dev/null
json_true "$js" '[.jobs[] | select(.name == "sleeper" and .tasks == 2)] | length == 1'
check "psstat jobs: a running job, its name and tasks" $? "$js"

# ---- a bad psid.done_jobs: file:line:key
sed 's/done_jobs = 2;/done_jobs = 100001;/' psid.conf >bad.conf
out=$(timeout 10 "$BIN/psconf" check bad.conf 2>&1)
rc=$?
[ $rc -ne 0 ] && grep -q "bad.conf:[0-9]*: psid.done_jobs" <<<"$out"
check "psid.done_jobs out of range: file:line:key" $? "rc=$rc $out"

exit $((FAILS > 0))
