# shellcheck shell=bash
# test/shell/lib/mpipp.sh - what test/shell/mpi_preload.sh and test/netns/mpi_preload.sh
# share: test/mpi/mpi_pingpong over UCX's tcp transport between the 2 nodes of the cluster
# in the environment, plain and under `psrun --preload`. Source it after lib/pslocal.sh
# (name, check, psrun_in) with PP set and the cluster up.
#   pp_ok FILE            8 sizes ok and the checksum line
#   pp_run SECS OUT ARG...  psrun_in SECS OUT ARG...; HUNG=1 when every result came and then
#                         MPI_Finalize did not return (UCX's tcp transport, openucx/ucx#8738:
#                         one rank in the PMI barrier does not progress UCX while the other's
#                         endpoint flush waits for it): counted as done, with a note
#   pp_both SECS WHERE    both runs and their checks (PSP_STATS of the second in TMP/stats)
#   stat_of FILE N KEY    KEY's value on the N-th line of FILE
pp_ok() { [[ $(grep -c '^pp [0-9]* lat_us .* ok$' "$1") == 8 ]] && grep -q '^check .* ok$' "$1"; }
# shellcheck disable=SC2034 # HUNG: the test's
pp_run() {
    local secs=$1
    shift
    psrun_in "$secs" "$@"
    HUNG=0
    if [[ $RC == 124 ]] && pp_ok "$1"; then
        HUNG=1
        # shellcheck disable=SC2154 # name: the test's
        echo "note: $name: every result came, then MPI_Finalize did not return in $secs s (UCX's tcp transport, openucx/ucx#8738): counted as done"
        RC=0
    fi
}
stat_of() { sed -n "${2}p" "$1" 2>/dev/null | tr ' ' '\n' | sed -n "s/^$3=//p"; }
pp_both() {
    local secs=$1 where=$2
    # shellcheck disable=SC2153 # PP, TMP: the test's
    pp_run "$secs" "$TMP/plain" -n 2 -N 2 -x UCX_TLS=tcp,self "$PP" -q
    pp_ok "$TMP/plain"
    check "MPI ping-pong 8 B..4 MiB $where without the library (rc $RC)" [ "$RC$?" = 00 ]
    [[ $RC == 0 ]] || tail -20 "$TMP/plain"
    pp_run "$secs" "$TMP/pre" -n 2 -N 2 --preload -x PSP_STATS="$TMP/stats" -x UCX_TLS=tcp,self "$PP" -q
    pp_ok "$TMP/pre"
    check "the same under psrun --preload: every size ok (rc $RC)" [ "$RC$?" = 00 ]
    [[ $RC == 0 ]] || tail -20 "$TMP/pre"
    [[ -n $(grep '^check ' "$TMP/plain") && $(grep '^check ' "$TMP/plain") == $(grep '^check ' "$TMP/pre") ]]
    check "results identical with and without the library (checksum $(grep '^check ' "$TMP/pre" | cut -d' ' -f2))" \
        [ $? = 0 ]
}
