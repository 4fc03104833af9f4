#!/bin/bash
# bench/run.sh - run the project's benchmarks (`make bench` calls it after building).
#
# Installs the benchmark peers first (scripts/install-deps.sh --bench, if that script exists;
# without root it only says what is missing), then runs every bench/*.sh other than itself in
# name order, or the ones named on the command line (e.g. `bench/run.sh rdp`). Each script
# prints its markdown tables on stdout; run.sh also keeps a copy in bench/out/NAME-DATE.md.
# Figures go to bench/RESULTS.md by hand, with the commands that produced them, except the
# headline table at its top (and its copy in README.md): --headline runs bench/headline.sh,
# which runs the benchmarks behind those rows (all, or the IDs named) and rewrites them.
# `make bench BENCH="--headline [ID...]"` does the same after building.
#
# usage: bench/run.sh [--help] [NAME...]
#        bench/run.sh --headline [ID...]   (bench/headline.sh --help: the rows)
# env:   passed through to the scripts (RUNS=N and their own knobs; see NAME.sh --help)
# exit:  0 if every script succeeded, 1 otherwise, 2 on a bad command line
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
cd "$ROOT"

if [[ ${1:-} == --headline ]]; then
    shift
    if [[ -x scripts/install-deps.sh ]]; then
        scripts/install-deps.sh --bench ||
            echo "bench/run.sh: warning: benchmark peers missing; rows that need them fail" >&2
    fi
    exec bench/headline.sh "$@"
fi

names=()
for a in "$@"; do
    case $a in
    -h | --help)
        sed -n '2,/^set -euo/{/^#/s/^# \{0,1\}//p}' "$0"
        exit 0
        ;;
    -*)
        echo "bench/run.sh: unknown option $a" >&2
        echo "usage: bench/run.sh [--help] [NAME...]" >&2
        exit 2
        ;;
    *) names+=("${a%.sh}") ;;
    esac
done

scripts=()
if ((${#names[@]})); then
    for n in "${names[@]}"; do
        if [[ ! -f bench/$n.sh || $n == run || $n == headline ]]; then
            echo "bench/run.sh: no benchmark bench/$n.sh" >&2
            exit 2
        fi
        scripts+=("bench/$n.sh")
    done
else
    for s in bench/*.sh; do
        [[ $(basename "$s") == run.sh || $(basename "$s") == headline.sh ]] && continue
        scripts+=("$s")
    done
fi

if [[ -x scripts/install-deps.sh ]]; then
    scripts/install-deps.sh --bench ||
        echo "bench/run.sh: warning: benchmark peers missing; scripts that need them may fail" >&2
fi

mkdir -p bench/out
stamp=$(date -u +%Y%m%dT%H%M%SZ)
failed=()
for s in "${scripts[@]}"; do
    name=$(basename "$s" .sh)
    echo "==== $s ($(date -u +%H:%M:%SZ))"
    t0=$SECONDS
    if bash "$s" | tee "bench/out/$name-$stamp.md"; then
        echo "---- $s: done in $((SECONDS - t0)) s (tables: bench/out/$name-$stamp.md)"
    else
        echo "---- $s: FAILED after $((SECONDS - t0)) s"
        failed+=("$s")
    fi
done
if ((${#failed[@]})); then
    echo "bench/run.sh: failed: ${failed[*]}"
    exit 1
fi
