#!/bin/bash
# bench/headline.sh - refresh the headline figures: the table at the top of bench/RESULTS.md
# and its copy in README.md. Each row is marked by an HTML comment with its id in its first
# cell (<!-- hl:ID -->); this script runs the benchmark behind each row asked for, reads
# pscluster's figure and its peer's from the benchmark's own table (the median each prints,
# and the ratio it computed, else pscluster / peer), and rewrites that row in both files
# with today's date and the commit measured (HEAD, "+dirty" with uncommitted changes).
# `bench/run.sh --headline [ID...]` and `make bench BENCH="--headline [ID...]"` call it.
#
# Rows (ID: the benchmark it runs):
#   rdp-pp16      RDP ping-pong 16 B against kernel TCP, loopback
#                 (RUNS=5 PATHS=lo SWEEP= bench/rdp.sh)
#   rdp-loss      RDP stream under 5 % loss against kernel TCP, namespaces, MTU 1500 (root)
#                 (RUNS=5 PATHS=netns SWEEP= bench/rdp.sh)
#   launch128     psrun -n 128 /bin/true on 4 nodes against MPICH's mpiexec
#                 (SLURM=0 NOROOT=0 PROFILE=0 NS=128 NODES=4 bench/launch.sh)
#   pl-pp16       sockperf 16 B ping-pong between two nodes under the library against
#                 kernel TCP (RUNS=3 MODES=lo PARTS=pp bench/preload.sh)
#   pl-same-get   redis-benchmark -c 50 GET on one node under the library (shared memory)
#                 against kernel TCP (RUNS=3 MODES=same PARTS=redis bench/preload.sh)
#   (rdp-loss and rdp-pp16 share one run when both are asked for.)
# Each benchmark's whole output is kept in bench/out/headline-ID-DATE.md.
#
# usage: bench/headline.sh [--help] [--dry-run] [--from FILE] [ID...]   (default: every row)
#   --dry-run    print the new rows, change no file
#   --from FILE  read the figures from FILE, a benchmark output kept before (one ID only),
#                instead of running the benchmark (the date is then FILE's modification day)
# exit: 0 if every row asked for was refreshed, 1 otherwise, 2 on a bad command line
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
cd "$ROOT"
FILES=(bench/RESULTS.md README.md)
ALL=(rdp-pp16 rdp-loss launch128 pl-pp16 pl-same-get)

usage() { sed -n '2,/^set -euo/{/^#/s/^# \{0,1\}//p}' "$0"; }
dry=0 from='' ids=()
while (($#)); do
    case $1 in
    -h | --help)
        usage
        exit 0
        ;;
    --dry-run) dry=1 ;;
    --from)
        from=${2:-}
        [[ -f $from ]] || {
            echo "headline: --from needs a file (got '${2:-}')" >&2
            exit 2
        }
        shift
        ;;
    -*)
        echo "headline: unknown option $1" >&2
        usage >&2
        exit 2
        ;;
    *)
        [[ " ${ALL[*]} " == *" $1 "* ]] || {
            echo "headline: no row '$1' (rows: ${ALL[*]})" >&2
            exit 2
        }
        ids+=("$1")
        ;;
    esac
    shift
done
((${#ids[@]})) || ids=("${ALL[@]}")
if [[ -n $from ]] && ((${#ids[@]} != 1)); then
    echo "headline: --from reads one row's benchmark: name one ID" >&2
    exit 2
fi

# cell FILE ROWREGEX HEADER: the cell under HEADER (the header of the table the row is in)
# of the first line matching ROWREGEX, trimmed; a bold figure (**x**) is taken alone.
cell() {
    awk -F'|' -v re="$2" -v want="$3" '
        function trim(s) { gsub(/^[ \t]+|[ \t]+$/, "", s); return s }
        /^\|/ && prev ~ /^\|/ && $0 ~ /^\|[ :|-]+$/ { hdr = prev }   # a separator row
        /^\|/ { prev = $0 }
        !/^\|/ { prev = "" }
        $0 ~ re && hdr != "" {
            n = split(hdr, h, "|")
            for (i = 1; i <= n; i++) if (trim(h[i]) == want) {
                c = trim($i)
                if (match(c, /\*\*[^*]+\*\*/)) c = substr(c, RSTART + 2, RLENGTH - 4)
                print c; found = 1; exit
            }
        }
        END { exit !found }' "$1"
}

# The rows: label, unit, the benchmark, where its figures are, and which way is better.
declare -A LABEL CMD ROWRE HP HQ HR UNIT PEER BETTER
LABEL[rdp-pp16]="RDP ping-pong 16 B, loopback: round trip, p50"
CMD[rdp-pp16]="RUNS=5 PATHS=lo SWEEP= bench/rdp.sh"
ROWRE[rdp-pp16]='^[|] loopback [|] 65536 [|] ping-pong 16 B [|]'
HP[rdp-pp16]=RDP HQ[rdp-pp16]=TCP HR[rdp-pp16]=RDP/TCP UNIT[rdp-pp16]=µs
PEER[rdp-pp16]="kernel TCP" BETTER[rdp-pp16]=lower

LABEL[rdp-loss]="RDP stream 64 KiB under 5 % loss, namespaces, MTU 1500"
CMD[rdp-loss]="RUNS=5 PATHS=netns SWEEP= bench/rdp.sh"
ROWRE[rdp-loss]='^[|] netns [|] 1500 [|] nftables'
HP[rdp-loss]="RDP Gbit/s" HQ[rdp-loss]="TCP Gbit/s" HR[rdp-loss]="RDP/TCP (lossy)"
UNIT[rdp-loss]=Gbit/s PEER[rdp-loss]="kernel TCP" BETTER[rdp-loss]=higher

LABEL[launch128]="launch \`-n 128 /bin/true\` on 4 nodes, start to exit"
CMD[launch128]="SLURM=0 NOROOT=0 PROFILE=0 NS=128 NODES=4 bench/launch.sh"
ROWRE[launch128]='^[|] 128 [|]'
HP[launch128]="psrun, 4 nodes" HQ[launch128]="mpiexec (hydra, fork)" HR[launch128]=""
UNIT[launch128]=ms PEER[launch128]="MPICH mpiexec" BETTER[launch128]=lower

LABEL[pl-pp16]="preload, two nodes: sockperf ping-pong 16 B, median"
CMD[pl-pp16]="RUNS=3 MODES=lo PARTS=pp bench/preload.sh"
ROWRE[pl-pp16]='^[|] lo [|] sockperf ping-pong 16 B, median latency'
HP[pl-pp16]=libpspreload HQ[pl-pp16]="kernel TCP" HR[pl-pp16]=ratio UNIT[pl-pp16]=µs
PEER[pl-pp16]="kernel TCP" BETTER[pl-pp16]=lower

LABEL[pl-same-get]="preload, one node (shared memory): redis-benchmark -c 50 GET"
CMD[pl-same-get]="RUNS=3 MODES=same PARTS=redis bench/preload.sh"
ROWRE[pl-same-get]='^[|] same [|] redis-benchmark -c 50 GET'
HP[pl-same-get]=libpspreload HQ[pl-same-get]="kernel TCP" HR[pl-same-get]=ratio
UNIT[pl-same-get]=req/s PEER[pl-same-get]="kernel TCP" BETTER[pl-same-get]=higher

commit=$(git rev-parse --short HEAD 2>/dev/null || echo '?')
if [[ $commit != '?' ]] && ! git diff --quiet HEAD -- . ':!bench/RESULTS.md' ':!README.md' 2>/dev/null; then
    commit+="+dirty"
fi
mkdir -p bench/out
stamp=$(date -u +%Y%m%dT%H%M%SZ)

# run ID: the benchmark of row ID into bench/out (once per command), its file on stdout
declare -A RAN
run() {
    local id=$1 cmd=${CMD[$1]} out
    if [[ -n $from ]]; then
        echo "$from"
        return
    fi
    if [[ -n ${RAN[$cmd]:-} ]]; then
        echo "${RAN[$cmd]}"
        return
    fi
    out=bench/out/headline-$id-$stamp.md
    echo "headline: $id: $cmd" >&2
    if ! env $cmd >"$out"; then # the command's words: VAR=VALUE... SCRIPT
        echo "headline: $id: the benchmark failed (its output: $out)" >&2
        return 1
    fi
    RAN[$cmd]=$out
    echo "$out"
}

# row ID FILE: the table row of ID from the benchmark output FILE
row() {
    local id=$1 f=$2 p q r day
    p=$(cell "$f" "${ROWRE[$id]}" "${HP[$id]}") || return 1
    q=$(cell "$f" "${ROWRE[$id]}" "${HQ[$id]}") || return 1
    p=${p//,/} q=${q//,/}
    [[ $p =~ ^[0-9.]+$ && $q =~ ^[0-9.]+$ ]] || return 1
    r=''
    [[ -n ${HR[$id]} ]] && r=$(cell "$f" "${ROWRE[$id]}" "${HR[$id]}" || true)
    [[ $r =~ ^[0-9.]+$ ]] || r=$(awk -v a="$p" -v b="$q" 'BEGIN { printf "%.2f", a / b }')
    r=$(awk -v r="$r" 'BEGIN { printf "%.2f", r }')
    day=$(date -u -r "$f" +%Y-%m-%d)
    printf '| %s <!-- hl:%s --> | %s %s | %s %s %s | %s (%s is better) | %s, %s | `%s` |\n' \
        "${LABEL[$id]}" "$id" "$(fmt "$p")" "${UNIT[$id]}" "${PEER[$id]}" "$(fmt "$q")" \
        "${UNIT[$id]}" "$r" "${BETTER[$id]}" "$day" "$commit" "${CMD[$id]}"
}
# numbers as the benchmarks print them, thousands with a comma
fmt() { awk -v x="$1" 'BEGIN { if (x >= 10000 && x == int(x)) { s = sprintf("%d", x)
    while (match(s, /[0-9][0-9][0-9][0-9]($|,)/)) s = substr(s, 1, RSTART) "," substr(s, RSTART + 1)
    print s } else print x }'; }

status=0
for id in "${ids[@]}"; do
    if ! f=$(run "$id"); then
        status=1
        continue
    fi
    if ! new=$(row "$id" "$f"); then
        echo "headline: $id: no figures for this row in $f" >&2
        status=1
        continue
    fi
    echo "$new"
    ((dry)) && continue
    for file in "${FILES[@]}"; do
        grep -qF -- "<!-- hl:$id -->" "$file" || continue
        NEW=$new awk -v tag="<!-- hl:$id -->" 'index($0, tag) { print ENVIRON["NEW"]; next } { print }' \
            "$file" >"$file.tmp" && mv "$file.tmp" "$file"
        echo "headline: $id: row rewritten in $file" >&2
    done
done
exit $status
