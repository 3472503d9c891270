#!/bin/bash
#
# Two-node testbed on one machine: network namespaces gdaftA and gdaftB
# joined by two veth pairs, one per rail, so that two soft HCA processes
# talk over real interfaces that can be taken down ("ip link set ... down").
#
#   rail N:  gdaftA gdaftAN 10.11.N.1/24 <--veth--> 10.11.N.2/24 gdaftBN gdaftB
#
# Usage: contrib/netns-testbed.sh up | down | status
#                                 rail-down N [A|B] | rail-up N
#                                 exec A|B COMMAND...
#
#   up         create what is missing (idempotent), bring everything up
#   down       delete both namespaces and their interfaces (idempotent)
#   rail-down  set rail N's interface down on side A (default) or B: the
#              other side loses its carrier
#   rail-up    set both ends of rail N up again
#   exec       run COMMAND in namespace A or B
#
# Soft HCA devices in the namespaces, e.g.
#   A: UCX_GDA_FT_SOFT_DEVICES=soft0=10.11.1.1,soft1=10.11.2.1
#   B: UCX_GDA_FT_SOFT_DEVICES=soft0=10.11.1.2,soft1=10.11.2.2
#
# Needs root (CAP_NET_ADMIN, CAP_SYS_ADMIN). Names can be changed with
# GDA_FT_NETNS_A / GDA_FT_NETNS_B (interface names are NAME + rail number
# and must fit 15 characters).
#
set -euo pipefail

ns_a=${GDA_FT_NETNS_A:-gdaftA}
ns_b=${GDA_FT_NETNS_B:-gdaftB}
rails=2
mtu=9000    # a 4096-byte RoCE payload plus headers, unfragmented

prog=$(basename "$0")

die() {
    echo "$prog: $*" >&2
    exit 1
}

usage() {
    sed -n '2,/^$/s/^# \{0,1\}//p' "$0" >&2
    exit 2
}

ns_exists() {
    ip netns list 2>/dev/null | awk '{print $1}' | grep -qx "$1"
}

# interface of rail $2 on side $1 (A or B)
ifname() {
    local name
    if [ "$1" = A ]; then name=$ns_a$2; else name=$ns_b$2; fi
    [ ${#name} -le 15 ] ||
        die "interface name '$name' is longer than 15 characters"
    echo "$name"
}

nsname() {
    if [ "$1" = A ]; then echo "$ns_a"; else echo "$ns_b"; fi
}

check_rail() {
    [[ "$1" =~ ^[0-9]+$ ]] && [ "$1" -ge 1 ] && [ "$1" -le $rails ] ||
        die "rail must be 1..$rails, not '$1'"
}

cmd_up() {
    local ns side r a b

    command -v ip >/dev/null || die "'ip' (iproute2) is not installed"
    for ns in "$ns_a" "$ns_b"; do
        if ! ns_exists "$ns"; then
            ip netns add "$ns" || die "cannot create network namespace" \
                "$ns (needs root / CAP_NET_ADMIN)"
        fi
        ip -n "$ns" link set lo up
    done

    for r in $(seq 1 $rails); do
        a=$(ifname A "$r")
        b=$(ifname B "$r")
        if ! ip -n "$ns_a" link show "$a" >/dev/null 2>&1 ||
           ! ip -n "$ns_b" link show "$b" >/dev/null 2>&1; then
            # half of a pair left behind: remove it, then make a new pair
            ip -n "$ns_a" link del "$a" >/dev/null 2>&1 || true
            ip -n "$ns_b" link del "$b" >/dev/null 2>&1 || true
            ip link add "$a" netns "$ns_a" mtu $mtu type veth \
                peer name "$b" netns "$ns_b" mtu $mtu
        fi
        ip -n "$ns_a" addr replace "10.11.$r.1/24" dev "$a"
        ip -n "$ns_b" addr replace "10.11.$r.2/24" dev "$b"
        ip -n "$ns_a" link set "$a" up
        ip -n "$ns_b" link set "$b" up
        echo "rail $r: $ns_a $a 10.11.$r.1 <-> 10.11.$r.2 $b $ns_b"
    done

    # The kernel reports a new carrier up to a second later (linkwatch);
    # until then a soft HCA on the interface sees its port down
    for r in $(seq 1 $rails); do
        wait_carrier "$ns_a" "$(ifname A "$r")"
        wait_carrier "$ns_b" "$(ifname B "$r")"
    done
}

wait_carrier() {
    local i

    for i in $(seq 1 50); do
        if ip -n "$1" link show "$2" 2>/dev/null | grep -q 'state UP'; then
            return 0
        fi
        sleep 0.1
    done
    die "$2 in $1 has no carrier after 5 s"
}

cmd_down() {
    local ns

    for ns in "$ns_a" "$ns_b"; do
        if ns_exists "$ns"; then
            ip netns del "$ns" || die "cannot delete network namespace $ns"
        fi
    done
}

cmd_status() {
    local ns

    for ns in "$ns_a" "$ns_b"; do
        if ns_exists "$ns"; then
            echo "== $ns"
            ip -n "$ns" -brief addr show
        else
            echo "== $ns: absent"
        fi
    done
}

cmd_rail() {
    local state=$1 r=$2 side=${3:-A}

    check_rail "$r"
    ns_exists "$ns_a" && ns_exists "$ns_b" ||
        die "testbed is not up (run: $prog up)"
    case $side in
    A|B) ;;
    *) die "side must be A or B, not '$side'" ;;
    esac

    if [ "$state" = down ]; then
        ip -n "$(nsname "$side")" link set "$(ifname "$side" "$r")" down
    else
        ip -n "$ns_a" link set "$(ifname A "$r")" up
        ip -n "$ns_b" link set "$(ifname B "$r")" up
        wait_carrier "$ns_a" "$(ifname A "$r")"
        wait_carrier "$ns_b" "$(ifname B "$r")"
    fi
}

[ $# -ge 1 ] || usage
cmd=$1
shift
case $cmd in
up)        [ $# -eq 0 ] || usage; cmd_up ;;
down)      [ $# -eq 0 ] || usage; cmd_down ;;
status)    [ $# -eq 0 ] || usage; cmd_status ;;
rail-down) [ $# -ge 1 ] && [ $# -le 2 ] || usage; cmd_rail down "$@" ;;
rail-up)   [ $# -eq 1 ] || usage; cmd_rail up "$1" ;;
exec)
    [ $# -ge 2 ] || usage
    case $1 in
    A|B) ns=$(nsname "$1"); shift; exec ip netns exec "$ns" "$@" ;;
    *) die "side must be A or B, not '$1'" ;;
    esac
    ;;
-h|--help|help) usage ;;
*) usage ;;
esac
