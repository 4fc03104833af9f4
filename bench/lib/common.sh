# shellcheck shell=bash
# bench/lib/common.sh - pieces the benchmark scripts share. Source it, do not run it.
#
#   bench_help SCRIPT         print SCRIPT's comment header (the lines up to `set -euo`)
#   bench_help_arg SCRIPT [ARG]  if ARG is -h/--help: the header, exit 0 (scripts whose other
#                             arguments are positional)
#   bench_no_args SCRIPT ARG...  the command line of a script whose settings are all in the
#                             environment: no argument (go on), -h/--help (the header, exit 0),
#                             anything else (usage on stderr, exit 2)
#   stop_pids SECONDS PID...  SIGTERM to each, SIGKILL to what still runs SECONDS later, reap
#   median                    numbers on stdin, one per line -> their median (NA if none)
#
# An rdpbench server in the background, for scripts that set BIN (the rdpbench binary) and
# tmp (a scratch directory), and call stop_server from their EXIT trap:
#   start_server IP [PREFIX...]  start it on IP, port 0 (PREFIX: e.g. `ip netns exec NS`), with
#                             "${SRV_ARGS[@]}" as extra options; sets SRV_PID and SRV_ADDR
#                             (the ip:port it printed); 0, or 1 with its log on stderr
#   stop_server               stop it by pid; safe to call when none runs

bench_help() {
    sed -n '2,/^set -euo/{/^#/s/^# \{0,1\}//p}' "$1"
}

bench_help_arg() {
    case ${2:-} in
    -h | --help)
        bench_help "$1"
        exit 0
        ;;
    esac
}

bench_no_args() {
    local script=$1
    shift
    case ${1:-} in
    "") ;;
    -h | --help)
        bench_help "$script"
        exit 0
        ;;
    *)
        echo "usage: ${script#"$ROOT"/} [--help]  (settings via environment, see --help)" >&2
        exit 2
        ;;
    esac
}

stop_pids() {
    local secs=$1 p
    shift
    for p in "$@"; do kill -TERM "$p" 2>/dev/null || true; done
    for p in "$@"; do
        for _ in $(seq $((secs * 10))); do
            kill -0 "$p" 2>/dev/null || break
            sleep 0.1
        done
        kill -KILL "$p" 2>/dev/null || true
        wait "$p" 2>/dev/null || true
    done
}

SRV_PID=""
SRV_ADDR=""
SRV_ARGS=()

stop_server() {
    if [[ -n $SRV_PID ]]; then
        kill "$SRV_PID" 2>/dev/null || true
        wait "$SRV_PID" 2>/dev/null || true
        SRV_PID=""
    fi
}

# shellcheck disable=SC2154 # BIN and tmp are the caller's
start_server() {
    local ip=$1 log=$tmp/server.log
    shift
    stop_server
    "$@" "$BIN" server "$ip:0" --quiet --timeout 30 "${SRV_ARGS[@]}" >"$log" 2>&1 &
    SRV_PID=$!
    SRV_ADDR=""
    for _ in $(seq 100); do
        SRV_ADDR=$(sed -n 's/^server: listening on \([^ ]*\) .*/\1/p' "$log")
        [[ -n $SRV_ADDR ]] && return 0
        kill -0 "$SRV_PID" 2>/dev/null || break
        sleep 0.05
    done
    echo "${0##*/}: the rdpbench server did not start:" >&2
    cat "$log" >&2
    return 1
}

median() {
    sort -g | awk '{ a[NR] = $1 }
        END { if (NR == 0) { print "NA"; exit }
              if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2 }'
}
