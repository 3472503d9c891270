#!/bin/bash
#
# A seeded soak: UCP puts, gets, fetching and posted atomics and active
# messages between two processes (test/ucp/gda_ft_ucp_failover) over gda_ft
# on soft HCAs, run after run for MINUTES, each run with faults the seed
# picks: the server's primary port down or down and up again, packet drops,
# delays, reordering and lost responses (ACKs, read and atomic responses)
# on every port. Every run verifies every byte put and got, the counter and
# every message; a run that fails stops the soak and keeps its log.
#
#   contrib/soak.sh [--no-setup] SEED MINUTES [SCALE]
#
# SCALE (default 1) multiplies each run's iterations: longer runs spend
# less of the soak starting processes and wiring up.
#
# The last line: "soak: seed S, R runs, O operations, E integrity errors,
# D duplicated atomics, I in doubt (accounted for)". Exit status 0 when
# every run passed. The same seed gives the same sequence of runs. Sets up
# first, as contrib/test.sh does, unless --no-setup (a machine that got
# the build from elsewhere: GDA_FT_BUILD_DIR then holds
# test/ucp/gda_ft_ucp_failover and .libs/libuct_gda_ft.so).
#
set -u

setup=1
if [ "${1:-}" = "--no-setup" ]; then
    setup=0
    shift
fi

seed=${1:?usage: $0 SEED MINUTES}
minutes=${2:?usage: $0 SEED MINUTES}
scale=${3:-1}
case $seed$minutes$scale in
*[!0-9]*) echo "soak: SEED, MINUTES and SCALE are whole numbers" >&2
          exit 2 ;;
esac
top=$(cd "$(dirname "$0")/.." && pwd)
build_dir=${GDA_FT_BUILD_DIR:-$top/build}
prog=$build_dir/test/ucp/gda_ft_ucp_failover
if [ $setup -eq 1 ]; then
    GDA_FT_BUILD_DIR=$build_dir "$top/contrib/setup.sh" >/dev/null || exit 2
fi

RANDOM=$seed
pick() {   # VAR CHOICES...: VAR gets one, by the seeded generator (no
           # subshell: bash seeds a subshell's generator anew)
    local var=$1
    shift
    local choices=("$@")
    printf -v "$var" '%s' "${choices[$((RANDOM % ${#choices[@]}))]}"
}
field() {   # LOG LINE_PREFIX NAME: the value of NAME= on that line, or 0
    sed -n "s/.*$2.* $3=\\([0-9]*\\).*/\\1/p" "$1" | head -1 | grep . || echo 0
}

log=$(mktemp "${TMPDIR:-/tmp}/gda_ft_soak.XXXXXX.log")
end=$(( $(date +%s) + minutes * 60 ))
runs=0 ops=0 errors=0 dups=0 doubt=0
while [ "$(date +%s)" -lt "$end" ]; do
    pick iters 300 600 1200
    iters=$((iters * scale))
    pick mode none down updown updown
    pick drop 0 0 0.0005 0.002
    pick delay 0 0 0.001
    pick reorder 0 0 0.001
    pick ackdrop 0 0 0.001 0.005
    pick amo mixed fetch post
    pick size 4096 65536 1048576 3145728
    pick am --am --am ""
    pick get --get --get ""
    run_seed=$RANDOM
    args="--mode $mode -n $iters -f $((iters / 3)) -u $((2 * iters / 3))"
    args="$args --amo $amo -s $size${am:+ $am}${get:+ $get} --timeout 60"
    desc="run $runs: $args drop=$drop delay=$delay reorder=$reorder"
    desc="$desc ackdrop=$ackdrop"
    desc="$desc soft_seed=$run_seed"
    env GDA_FT_BUILD_DIR="$build_dir/.libs" UCX_TLS=gda_ft,tcp \
        UCX_NET_DEVICES=all UCX_GDA_FT_SOFT_CTL_DIR= \
        UCX_GDA_FT_SOFT_SEED=$run_seed UCX_GDA_FT_SOFT_DROP=$drop \
        UCX_GDA_FT_SOFT_DELAY=$delay UCX_GDA_FT_SOFT_DELAY_TIME=200us \
        UCX_GDA_FT_SOFT_REORDER=$reorder UCX_GDA_FT_SOFT_ACK_DROP=$ackdrop \
        "$top/contrib/gda_ft-run.sh" "$prog" $args >"$log" 2>&1
    rc=$?
    runs=$((runs + 1))
    run_ops=$(( $(field "$log" "SUMMARY client" puts_ok) +
                $(field "$log" "SUMMARY client" amo_ok) +
                $(field "$log" "SUMMARY client" gets_ok) +
                $(field "$log" "SUMMARY client" am_sent) ))
    ops=$((ops + run_ops))
    dups=$((dups + $(field "$log" "SUMMARY client" fetch_dups)))
    doubt=$((doubt + $(field "$log" "SUMMARY client" amo_err)))
    if [ $rc -ne 0 ] || ! grep -q "\[launcher\] RESULT PASS" "$log"; then
        errors=$((errors + 1))
        echo "soak: FAIL $desc (exit $rc), log $log"
        grep -E "RESULT|VERIFY|SUMMARY" "$log" | head -8
        break
    fi
    echo "soak: ok   $desc: $run_ops operations"
done

echo "soak: seed $seed, $runs runs, $ops operations, $errors integrity" \
     "errors, $dups duplicated atomics, $doubt in doubt (accounted for)"
[ $errors -eq 0 ] && rm -f "$log"
[ $errors -eq 0 ] && [ $dups -eq 0 ]
