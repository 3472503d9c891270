#!/bin/bash
#
# Two builds of the plugin side by side: ucx_perftest message rates of
# each, in turns (A B A B ..., the first alternating), with the ratio A/B of
# every pair and the median of the ratios. For a change's before and after
# on a noisy machine: keep a copy of the old libuct_gda_ft.so, build the new
# one, run this.
#
#   contrib/bench-plugins.sh DIR_A DIR_B [REPS] [-- PERFTEST ARGS]
#
#   DIR_A, DIR_B  folders holding libuct_gda_ft.so (a build's .libs)
#   REPS          pairs per test (default 9)
#   PERFTEST ARGS one test (default: the two below)
#
# BENCH_ENV_A, BENCH_ENV_B: settings of each side's runs (VAR=value ...),
# to compare one build two ways (DIR_A and DIR_B the same folder):
#
#   BENCH_ENV_A=UCX_GDA_FT_RESOLVE=y BENCH_ENV_B=UCX_GDA_FT_RESOLVE=n \
#       contrib/bench-plugins.sh build/.libs build/.libs
#
# Default tests: UCT put_bw zero-copy of 8 bytes (-x gda_ft, 200000
# iterations) and UCP ucp_put_bw of 64 KiB (UCX_TLS=gda_ft,tcp, 20000).
# Each gda_ft process has two soft HCAs (server 127.0.0.1/.2, client
# 127.0.0.3/.4). The figure is the client's overall message rate.
#
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
[ $# -ge 2 ] || { sed -n '2,/^set -e/p' "$0" | sed -e '/^set -e/d' \
                  -e 's/^# \{0,1\}//' >&2; exit 1; }
dir_a=$(cd "$1" && pwd)
dir_b=$(cd "$2" && pwd)
shift 2
reps=9
if [ $# -gt 0 ] && [ "$1" != "--" ]; then
    reps=$1
    shift
fi
[ "${1:-}" != "--" ] || shift
tests=()
if [ $# -gt 0 ]; then
    tests+=("$*")
else
    tests+=("-t put_bw -D zcopy -s 8 -n 200000 -x gda_ft -d gda0:1")
    tests+=("UCP -t ucp_put_bw -s 65536 -n 20000")
fi

tcp_port=$((20000 + RANDOM % 20000))
udp_port=$((tcp_port + 1))

# env for one side: $1 = first address byte (1 server, 3 client)
side_env() {
    echo "UCX_GDA_FT_SOFT_CTL_DIR= UCX_GDA_FT_SOFT_DEVICES=gda0=127.0.0.$1:$udp_port,gda1=127.0.0.$(($1 + 1)):$udp_port"
}

# one run: $1 plugin folder, $2 test, $3 settings; prints the overall
# message rate
run_one() {
    local dir=$1 args=$2 extra="${3:-}" rate
    if [ "${args#UCP }" != "$args" ]; then
        args=${args#UCP }
        extra="$extra UCX_TLS=gda_ft,tcp UCX_NET_DEVICES=all"
    fi
    env $(side_env 1) $extra GDA_FT_BUILD_DIR=$dir \
        timeout 120 "$top/contrib/gda_ft-run.sh" ucx_perftest -p $tcp_port \
        $args >/dev/null 2>&1 &
    local server=$!
    sleep 0.5
    rate=$(env $(side_env 3) $extra GDA_FT_BUILD_DIR=$dir timeout 120 \
           "$top/contrib/gda_ft-run.sh" ucx_perftest 127.0.0.1 -p $tcp_port \
           $args 2>/dev/null | awk '/^Final:/ {print $NF}')
    wait $server || true
    echo "${rate:-0}"
}

median() {
    sort -g | awk '{v[NR] = $1}
                   END {m = v[int((NR + 1) / 2)]
                        if (NR % 2 == 0) m = (m + v[NR / 2 + 1]) / 2
                        print m}'
}

env_a=${BENCH_ENV_A:-}
env_b=${BENCH_ENV_B:-}
echo "A: $dir_a $env_a"
echo "B: $dir_b $env_b"
for t in "${tests[@]}"; do
    ra=(); rb=(); ratios=()
    for i in $(seq 1 "$reps"); do
        if [ $((i % 2)) -eq 1 ]; then
            a=$(run_one "$dir_a" "$t" "$env_a")
            b=$(run_one "$dir_b" "$t" "$env_b")
        else
            b=$(run_one "$dir_b" "$t" "$env_b")
            a=$(run_one "$dir_a" "$t" "$env_a")
        fi
        ra+=("$a"); rb+=("$b")
        ratios+=("$(awk -v a="$a" -v b="$b" 'BEGIN {printf "%.4f", (b > 0) ? a / b : 0}')")
    done
    printf "%s\n  A msg/s: %s\n  B msg/s: %s\n  A/B:     %s\n" "$t" \
           "${ra[*]}" "${rb[*]}" "${ratios[*]}"
    printf "  median A %s, median B %s, median A/B %s\n" \
           "$(printf '%s\n' "${ra[@]}" | median)" \
           "$(printf '%s\n' "${rb[@]}" | median)" \
           "$(printf '%s\n' "${ratios[@]}" | median)"
done
