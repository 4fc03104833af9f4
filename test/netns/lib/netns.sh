# shellcheck shell=bash
# test/netns/lib/netns.sh - helpers for the namespace tests in test/netns/*.sh.
# Source it, do not run it:  . "$(dirname "$0")/lib/netns.sh"
#
# Test hosts are network namespaces on a private bridge with no uplink, no address on the
# bridge and no default route: their traffic cannot leave the bridge. Addresses 198.18.0.(i+1)/24.
#
#   ns_require_root         SKIP the test (exit 0) unless root and `ip netns add` works
#   ns_up N [PREFIX]        namespaces PREFIX-0 .. PREFIX-(N-1) (PREFIX default psns$$), each
#                           with interface $NS_IF on the bridge psbr$$; waits until namespace 0
#                           pings namespace 1; installs EXIT/INT/TERM traps that call ns_down
#   ns_down                 kill the processes left in the namespaces, delete everything
#                           ns_up created; safe to call twice
#   ns_exec I CMD...        run CMD in namespace I
#   ns_name I / ns_addr I   the name / the IPv4 address of namespace I
#   ns_count                how many namespaces are up
#   ns_loss PCT             drop PCT % (0-100, decimals allowed: 0.5) of the packets arriving
#                           on $NS_IF in every namespace (nftables, table inet psloss)
#   ns_noloss               remove that again
#   ns_mtu BYTES            set the MTU of every veth (both ends) and of the bridge
#   pslocal_teardown PSLOCAL DIR NAMES...
#                           `pslocal down --dir DIR`, then whatever it left of NAMES
#                           ("netns:NAME", "link:NAME", as the cluster's state file named them
#                           while it was up): processes killed, namespaces and links deleted
#   ns_wait_port I PORT [udp|tcp] [SECONDS]
#                           wait (default 10 s) until something listens on PORT in namespace I
#
# Traps: ns_up chains to the EXIT/INT/TERM traps set before it (they run after ns_down).
# A trap set after ns_up replaces ns_up's: call ns_down from it.
# Namespace and link names embed the test script's pid ($$), so concurrent tests don't collide
# and scripts/run-tests.sh can remove what a killed test left behind.

NS_IF=eth0           # the interface inside each namespace
NS_NET=198.18.0      # the /24 of the test hosts
NS_UP_TIMEOUT=10     # seconds ns_up waits for the first ping

_NS_NAMES=()         # namespaces created
_NS_VETH=()          # host ends of the veth pairs
_NS_BR=""            # the bridge
_NS_TRAPPED=0
_NS_OLD_EXIT="" _NS_OLD_INT="" _NS_OLD_TERM=""

_ns_err() { echo "netns: $*" >&2; }

_ns_run() { # _ns_run CMD... -> run, and on failure say which command failed
    "$@" && return 0
    _ns_err "failed: $*"
    return 1
}

_ns_index() { # _ns_index I -> 0 if I names an existing namespace
    if [[ ! $1 =~ ^[0-9]+$ ]] || (($1 >= ${#_NS_NAMES[@]})); then
        _ns_err "no namespace $1 (have ${#_NS_NAMES[@]})"
        return 1
    fi
}

ns_require_root() {
    local name
    name=$(basename "$0" .sh)
    if ((EUID != 0)) || ! command -v ip >/dev/null; then
        echo "SKIP: $name: needs root"
        exit 0
    fi
    local probe="psns$$-probe"
    if ! ip netns add "$probe" 2>/dev/null; then
        echo "SKIP: $name: needs root (ip netns add fails here)"
        exit 0
    fi
    ip netns del "$probe" 2>/dev/null || true
}

# Third word of a `trap -p` line: the command, unquoted.
_ns_trap_cmd() { printf '%s' "$3"; }

_ns_install_traps() {
    ((_NS_TRAPPED)) && return 0
    _NS_TRAPPED=1
    local sig line cmd
    for sig in EXIT INT TERM; do
        line=$(trap -p "$sig")
        cmd=""
        [[ -n $line ]] && cmd=$(eval "_ns_trap_cmd $line")
        case $sig in
        EXIT)
            _NS_OLD_EXIT=$cmd
            trap '_ns_on_exit' EXIT
            ;;
        INT | TERM)
            # An ignored signal ('') stays ignored.
            if [[ -n $line && -z $cmd ]]; then continue; fi
            if [[ $sig == INT ]]; then
                _NS_OLD_INT=$cmd
                trap '_ns_on_signal "$_NS_OLD_INT" 130' INT
            else
                _NS_OLD_TERM=$cmd
                trap '_ns_on_signal "$_NS_OLD_TERM" 143' TERM
            fi
            ;;
        esac
    done
}

_ns_on_exit() {
    local rc=$?
    set +e
    # Neither a second signal nor a reader gone (an interrupted tee) may stop the cleanup.
    trap '' INT TERM PIPE
    ns_down
    trap - EXIT
    if [[ -n $_NS_OLD_EXIT ]]; then
        _ns_status "$rc" # the old trap sees the exit status in $?
        eval "$_NS_OLD_EXIT"
    fi
    exit "$rc"
}

_ns_status() { return "$1"; }

_ns_on_signal() { # _ns_on_signal OLD-HANDLER STATUS; exit runs the EXIT trap
    set +e
    trap '' INT TERM PIPE
    [[ -n $1 ]] && eval "$1"
    exit "$2"
}

ns_up() {
    local n=${1:-} prefix=${2:-psns$$} i ns hv
    if [[ ! $n =~ ^[0-9]+$ ]] || ((n < 1 || n > 250)); then
        _ns_err "ns_up: need a count of 1..250, got '$n'"
        return 1
    fi
    if ((${#_NS_NAMES[@]})); then
        _ns_err "ns_up: namespaces are up already (ns_down first)"
        return 1
    fi
    _ns_install_traps
    # Each object is recorded as soon as it exists, so that ns_down removes a half-made set
    # and nothing it did not make.
    _ns_run ip link add name "psbr$$" type bridge || return 1
    _NS_BR=psbr$$
    # No IPv6 link-local chatter from the host side either.
    [[ -w /proc/sys/net/ipv6/conf/$_NS_BR/disable_ipv6 ]] &&
        echo 1 >"/proc/sys/net/ipv6/conf/$_NS_BR/disable_ipv6"
    _ns_run ip link set "$_NS_BR" up || return 1
    for ((i = 0; i < n; i++)); do
        ns=$prefix-$i
        hv=psv$$-$i
        _ns_run ip netns add "$ns" || return 1
        _NS_NAMES+=("$ns")
        _ns_run ip link add "$hv" type veth peer name "$NS_IF" netns "$ns" || return 1
        _NS_VETH+=("$hv")
        [[ -w /proc/sys/net/ipv6/conf/$hv/disable_ipv6 ]] &&
            echo 1 >"/proc/sys/net/ipv6/conf/$hv/disable_ipv6"
        _ns_run ip link set "$hv" master "$_NS_BR" || return 1
        _ns_run ip link set "$hv" up || return 1
        _ns_run ip -n "$ns" link set lo up || return 1
        _ns_run ip -n "$ns" addr add "$(ns_addr "$i")/24" dev "$NS_IF" || return 1
        _ns_run ip -n "$ns" link set "$NS_IF" up || return 1
    done
    ((n >= 2)) || return 0
    local deadline=$((SECONDS + NS_UP_TIMEOUT))
    while ((SECONDS < deadline)); do
        ip netns exec "${_NS_NAMES[0]}" ping -c1 -W1 -q "$(ns_addr 1)" >/dev/null 2>&1 && return 0
        sleep 0.1
    done
    _ns_err "ns_up: ${_NS_NAMES[0]} cannot ping $(ns_addr 1) after ${NS_UP_TIMEOUT} s"
    return 1
}

ns_down() {
    local ns pids p hv deadline
    for ns in "${_NS_NAMES[@]}"; do
        # Processes the test left running in the namespace: TERM, then KILL after 2 s.
        pids=$(ip netns pids "$ns" 2>/dev/null | grep -vxE "$$|${BASHPID:-$$}" || true)
        if [[ -n $pids ]]; then
            for p in $pids; do kill -TERM "$p" 2>/dev/null || true; done
            deadline=$((SECONDS + 2))
            while ((SECONDS < deadline)) && [[ -n $(ip netns pids "$ns" 2>/dev/null) ]]; do
                sleep 0.05
            done
            for p in $(ip netns pids "$ns" 2>/dev/null); do kill -KILL "$p" 2>/dev/null || true; done
        fi
        ip netns del "$ns" 2>/dev/null || true
    done
    for hv in "${_NS_VETH[@]}"; do
        ip link del "$hv" 2>/dev/null || true
    done
    [[ -n $_NS_BR ]] && { ip link del "$_NS_BR" 2>/dev/null || true; }
    _NS_NAMES=() _NS_VETH=() _NS_BR=""
    return 0
}

ns_count() { echo "${#_NS_NAMES[@]}"; }

ns_name() {
    _ns_index "${1:-}" || return 1
    echo "${_NS_NAMES[$1]}"
}

ns_addr() {
    if [[ ! ${1:-} =~ ^[0-9]+$ ]] || (($1 > 249)); then
        _ns_err "ns_addr: bad index '${1:-}'"
        return 1
    fi
    echo "$NS_NET.$(($1 + 1))"
}

ns_exec() {
    _ns_index "${1:-}" || return 1
    local ns=${_NS_NAMES[$1]}
    shift
    ip netns exec "$ns" "$@"
}

ns_loss() {
    local pct=${1:-} thr ns
    if [[ ! $pct =~ ^[0-9]+([.][0-9]+)?$ ]] || ! awk -v p="$pct" 'BEGIN { exit !(p <= 100) }'; then
        _ns_err "ns_loss: need a percentage 0..100, got '$pct'"
        return 1
    fi
    thr=$(awk -v p="$pct" 'BEGIN { printf "%d", p * 10 + 0.5 }')
    local rule="iifname != \"lo\" numgen random mod 1000 < $thr drop"
    ((thr == 0)) && rule=""
    ((thr >= 1000)) && rule="iifname != \"lo\" drop"
    for ns in "${_NS_NAMES[@]}"; do
        # Declare, delete and define in one transaction: replaces an earlier ns_loss.
        _ns_run ip netns exec "$ns" nft -f - <<EOF || return 1
table inet psloss
delete table inet psloss
table inet psloss {
    chain input {
        type filter hook input priority 0; policy accept;
        $rule
    }
}
EOF
    done
}

ns_noloss() {
    local ns
    for ns in "${_NS_NAMES[@]}"; do
        ip netns exec "$ns" nft delete table inet psloss 2>/dev/null || true
    done
}

ns_mtu() {
    local mtu=${1:-} i
    if [[ ! $mtu =~ ^[0-9]+$ ]] || ((mtu < 68 || mtu > 65535)); then
        _ns_err "ns_mtu: need 68..65535 bytes, got '$mtu'"
        return 1
    fi
    for ((i = 0; i < ${#_NS_NAMES[@]}; i++)); do
        _ns_run ip link set "${_NS_VETH[$i]}" mtu "$mtu" || return 1
        _ns_run ip -n "${_NS_NAMES[$i]}" link set "$NS_IF" mtu "$mtu" || return 1
    done
    _ns_run ip link set "$_NS_BR" mtu "$mtu"
}

ns_wait_port() { # ns_wait_port I PORT [udp|tcp] [SECONDS]
    local i=${1:-} port=${2:-} proto=${3:-udp} secs=${4:-10} opt deadline
    _ns_index "$i" || return 1
    case $proto in
    udp) opt=-Hlun ;;
    tcp) opt=-Hltn ;;
    *)
        _ns_err "ns_wait_port: protocol udp or tcp, got '$proto'"
        return 1
        ;;
    esac
    deadline=$((SECONDS + secs))
    while ((SECONDS < deadline)); do
        [[ -n $(ns_exec "$i" ss "$opt" "sport = :$port" 2>/dev/null) ]] && return 0
        sleep 0.05
    done
    _ns_err "ns_wait_port: nothing on $proto port $port in $(ns_name "$i") after $secs s"
    return 1
}

pslocal_teardown() {
    local pl=$1 dir=$2 item ns p
    shift 2
    timeout 20 "$pl" down --dir "$dir" >/dev/null 2>&1
    for item; do
        case $item in
        netns:*)
            ns=${item#netns:}
            [[ -e /run/netns/$ns ]] || continue
            for p in $(ip netns pids "$ns" 2>/dev/null); do kill -KILL "$p" 2>/dev/null; done
            ip netns del "$ns" 2>/dev/null
            ;;
        link:*) ip link del "${item#link:}" 2>/dev/null ;;
        esac
    done
    return 0
}
