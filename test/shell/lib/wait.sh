# test/shell/lib/wait.sh - bounded waits for the test scripts (cluster.sh sources it, and so
# may a test that does not use it). Source it.
# shellcheck shell=bash
#   now_ms                  milliseconds since the epoch
#   wait_until MS CMD...    poll CMD every 50 ms until it succeeds (0) or MS have passed (1)
#   wait_line FILE PATTERN MS   poll FILE every 50 ms until it has a line matching PATTERN
#                           (grep's) (0), or MS have passed (1)
#   nap_open / nap SECONDS / nap_close   a pause without a process, for a loop of one's own
#                           (declare NAP_FD local in the function that opens it)
# The waits poll without processes of their own: a fork and exec costs 10-15 ms of CPU on a
# 2-CPU VM, so a poll that forked for the clock (date) and for the pause (sleep) used a third
# of a CPU while it waited, CPU the suites beside it in make check did not get. The clock is
# bash's ($EPOCHREALTIME, "s.us" in the locale's notation), the pause read's timeout on a pipe
# that nobody writes (nap_open opens it for one wait, nap_close closes it, and the command
# polled runs without it: no program a test starts inherits it).
now_ms() { echo $((${EPOCHREALTIME/[.,]/} / 1000)); }
nap_open() { exec {NAP_FD}<> <(:); }
nap() { read -rt "$1" -u "$NAP_FD" _NAP || :; }
nap_close() { exec {NAP_FD}<&-; }

wait_until() { # MS CMD...
    local end=$((${EPOCHREALTIME/[.,]/} / 1000 + $1)) NAP_FD rc=0
    shift
    nap_open
    until "$@" {NAP_FD}<&-; do
        ((${EPOCHREALTIME/[.,]/} / 1000 > end)) && rc=1 && break
        nap 0.05
    done
    nap_close
    return $rc
}

wait_line() { # FILE PATTERN MS
    wait_until "$3" grep -qs "$2" "$1"
}
