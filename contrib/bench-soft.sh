#!/bin/bash
#
# Software HCA vs UCX's own tcp transport, on loopback, in one run.
#
#   contrib/bench-soft.sh [-b BUILD_DIR] [-r REPS] [-s SIZES] [-q] [-k]
#
#   -b DIR    build tree holding test/perf/gda_ft_soft_bench
#             (default: $GDA_FT_BUILD_DIR, the current directory, or
#             <top>/build)
#   -r N      repetitions (default 5); soft and tcp runs alternate, and
#             the one that goes first alternates too
#   -s LIST   write bandwidth message sizes (default 4096,65536,1048576)
#   -q        quick: 2 repetitions, shorter runs (a smoke test)
#   -k        keep the raw logs
#
# Each repetition runs, for every size, one RDMA WRITE bandwidth test and
# one 8-byte ping-pong latency test:
#   soft: gda_ft_soft_bench (two processes, each with its own soft HCA on
#         127.0.0.1 / 127.0.0.2, one RC QP between them)
#   tcp:  ucx_perftest server + client, UCX_TLS=tcp UCX_NET_DEVICES=lo,
#         ucp_put_bw -s SIZE and ucp_put_lat -s 8 (median with -R 50 and
#         p99 with -R 99, two runs)
# and prints a table of the medians over the repetitions with the ratio
# soft/tcp (above 1 is better for soft in bandwidth, worse in latency).
# MB/s are 2^20 bytes per second in both, as ucx_perftest prints them.
#
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
build_dir=${GDA_FT_BUILD_DIR:-}
reps=5
sizes=4096,65536,1048576
quick=no
keep=no

usage() {
    sed -n '3,26p' "$0" | sed 's/^# \{0,1\}//'
}

while getopts "b:r:s:qkh" opt; do
    case $opt in
    b) build_dir=$OPTARG ;;
    r) reps=$OPTARG ;;
    s) sizes=$OPTARG ;;
    q) quick=yes ;;
    k) keep=yes ;;
    h) usage; exit 0 ;;
    *) usage >&2; exit 2 ;;
    esac
done

if [ -z "$build_dir" ]; then
    if [ -x ./test/perf/gda_ft_soft_bench ]; then
        build_dir=.
    else
        build_dir=$top/build
    fi
fi
bench=$build_dir/test/perf/gda_ft_soft_bench
if [ ! -x "$bench" ]; then
    echo "bench-soft.sh: $bench not found: build first (make all)," \
         "or give the build tree with -b" >&2
    exit 1
fi

# Run lengths: about one second per measurement
soft_args="-t 1.0 -W 0.2 -n 20000 -w 1000"
tcp_lat_iters=20000
tcp_lat_warmup=1000
if [ $quick = yes ]; then
    reps=2
    soft_args="-t 0.3 -W 0.1 -n 3000 -w 300"
    tcp_lat_iters=3000
    tcp_lat_warmup=300
fi

# ucx_perftest iterations for about one second of a given size
tcp_bw_iters() {
    local size=$1 n
    n=$(( (600 * 1024 * 1024) / size ))
    [ $quick = yes ] && n=$(( n / 4 ))
    [ $n -lt 50 ] && n=50
    echo $n
}


# ---- checks ------------------------------------------------------------------

command -v ucx_perftest >/dev/null ||
    { echo "bench-soft.sh: ucx_perftest not found (ucx-utils)" >&2; exit 1; }
command -v ss >/dev/null || echo "bench-soft.sh: no ss(8): waiting blindly" >&2

lo_flags=$(cat /sys/class/net/lo/flags 2>/dev/null || echo 0)
if [ $(( lo_flags & 1 )) -eq 0 ]; then
    echo "bench-soft.sh: the loopback interface is down" >&2
    exit 1
fi
if command -v ip >/dev/null &&
   ! ip route get 127.0.0.2 2>/dev/null | grep -q '^local'; then
    echo "bench-soft.sh: 127.0.0.2 is not a local address (soft bench1)" >&2
    exit 1
fi

logs=$(mktemp -d "${TMPDIR:-/tmp}/gda_ft_bench.XXXXXX")
server_pid=""
cleanup() {
    if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then
        kill "$server_pid" 2>/dev/null || true
    fi
    if [ $keep = no ]; then
        rm -rf "$logs"
    fi
}
trap cleanup EXIT

# One TCP port per ucx_perftest pair, never reused in a run
tcp_port=$(( 20000 + ($$ % 20000) ))

export UCX_WARN_UNUSED_ENV_VARS=n


# ---- tcp: one ucx_perftest server/client pair --------------------------------

# tcp_run LOG ARGS...: sets tcp_line to the client's CSV result line
tcp_line=""
tcp_run() {
    local log=$1 i
    shift
    tcp_port=$(( tcp_port + 1 ))
    UCX_TLS=tcp UCX_NET_DEVICES=lo \
        timeout 120 ucx_perftest -p $tcp_port "$@" >"$log.server" 2>&1 &
    server_pid=$!
    for i in $(seq 100); do
        if command -v ss >/dev/null; then
            [ -n "$(ss -Hltn "sport = :$tcp_port" 2>/dev/null)" ] && break
        elif [ "$i" -gt 5 ]; then
            break
        fi
        sleep 0.05
    done
    if ! UCX_TLS=tcp UCX_NET_DEVICES=lo \
         timeout 120 ucx_perftest 127.0.0.1 -p $tcp_port -f -v "$@" \
         >"$log" 2>&1; then
        echo "bench-soft.sh: ucx_perftest $* failed:" >&2
        tail -5 "$log" "$log.server" >&2
        exit 1     # cleanup stops the server
    fi
    wait $server_pid || true
    server_pid=""
    # the CSV line follows its header "iterations,..."
    tcp_line=$(awk -F, '/^iterations,/ {getline; print; exit}' "$log")
    if [ -z "$tcp_line" ]; then
        echo "bench-soft.sh: no result in $log" >&2
        exit 1
    fi
}

# tcp_suite REP: appends "tcp METRIC VALUE" lines to results
tcp_suite() {
    local rep=$1 size n
    for size in ${sizes//,/ }; do
        n=$(tcp_bw_iters "$size")
        tcp_run "$logs/tcp.$rep.bw.$size" -t ucp_put_bw -s "$size" \
                -n "$n" -w $(( n / 10 + 1 ))
        # iterations,percentile,avg_lat,overall_lat,avg_bw,overall_bw,...
        echo "$rep tcp bw_$size $(echo "$tcp_line" | cut -d, -f6)" \
            >>"$logs/results"
    done
    tcp_run "$logs/tcp.$rep.lat50" -t ucp_put_lat -s 8 \
            -n $tcp_lat_iters -w $tcp_lat_warmup -R 50
    echo "$rep tcp lat_median $(echo "$tcp_line" | cut -d, -f2)" \
        >>"$logs/results"
    tcp_run "$logs/tcp.$rep.lat99" -t ucp_put_lat -s 8 \
            -n $tcp_lat_iters -w $tcp_lat_warmup -R 99
    echo "$rep tcp lat_p99 $(echo "$tcp_line" | cut -d, -f2)" \
        >>"$logs/results"
}


# ---- soft: one gda_ft_soft_bench run -----------------------------------------

soft_suite() {
    local rep=$1 log
    log=$logs/soft.$rep
    # shellcheck disable=SC2086
    if ! timeout 300 "$bench" -s "$sizes" $soft_args >"$log" 2>&1; then
        echo "bench-soft.sh: gda_ft_soft_bench failed:" >&2
        tail -5 "$log" >&2
        exit 1
    fi
    awk -v rep="$rep" '
        function field(name,   i, kv) {
            for (i = 3; i <= NF; ++i) {
                split($i, kv, "=")
                if (kv[1] == name) return kv[2]
            }
            return ""
        }
        $1 == "soft" && $2 == "write_bw" {
            print rep, "soft", "bw_" field("size"), field("MBps")
            print rep, "soft", "wire_" field("size"), field("wire_ratio")
        }
        $1 == "soft" && $2 == "lat" {
            print rep, "soft", "lat_median", field("usec_median")
            print rep, "soft", "lat_p99", field("usec_p99")
        }' "$log" >>"$logs/results"
}


# ---- run ---------------------------------------------------------------------

echo "# bench-soft.sh: $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs," \
     "$(ucx_info -v | sed -n -e 's/^# Version //p' -e 's/^# Library version: //p' | head -1 | sed 's/^/UCX /')," \
     "load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# reps=$reps sizes=$sizes soft: $bench $soft_args"
: >"$logs/results"
start=$(date +%s)
for rep in $(seq "$reps"); do
    if [ $(( rep % 2 )) -eq 1 ]; then order="soft tcp"; else order="tcp soft"; fi
    for which in $order; do
        printf '# rep %s/%s: %s\n' "$rep" "$reps" "$which"
        "${which}_suite" "$rep"
    done
done
echo "# $(( $(date +%s) - start )) s, load average $(cut -d' ' -f1-3 /proc/loadavg)"


# ---- table -------------------------------------------------------------------

awk -v reps="$reps" -v sizes="$sizes" '
    function median(list,   a, n, i, j, t) {
        n = split(list, a, " ")
        for (i = 1; i <= n; ++i)
            for (j = i + 1; j <= n; ++j)
                if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
        if (n == 0) return ""
        return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
    }
    function values(list,   a, n, i, s) {
        n = split(list, a, " ")
        s = ""
        for (i = 1; i <= n; ++i) s = s sprintf("%s%.1f", (i > 1 ? " " : ""), a[i])
        return s
    }
    { v[$2, $3] = v[$2, $3] (v[$2, $3] == "" ? "" : " ") $4 }
    function row(label, unit, key,   s, t, ms, mt) {
        s = v["soft", key]; t = v["tcp", key]
        ms = median(s); mt = median(t)
        printf "| %-22s | %-4s | %-30s | %-32s | %9.1f | %9.1f | %8.2f |\n",
               label, unit, values(s), values(t), ms, mt,
               (mt > 0) ? ms / mt : 0
    }
    END {
        print ""
        printf "| %-22s | %-4s | %-30s | %-32s | %9s | %9s | %8s |\n",
               "measurement", "unit", "soft, per repetition",
               "tcp, per repetition", "soft med.", "tcp med.", "soft/tcp"
        print "|------------------------|------|--------------------------------|----------------------------------|-----------|-----------|----------|"
        n = split(sizes, sz, ",")
        for (i = 1; i <= n; ++i)
            row("RDMA WRITE bw " sz[i], "MB/s", "bw_" sz[i])
        row("8 B put latency median", "usec", "lat_median")
        row("8 B put latency p99", "usec", "lat_p99")
        print ""
        printf "soft data packets sent per packet needed (1.00: no retransmission):"
        for (i = 1; i <= n; ++i)
            printf "%s %s: %s", (i > 1 ? ";" : ""), sz[i], v["soft", "wire_" sz[i]]
        print ""
    }' "$logs/results"

if [ $keep = yes ]; then
    echo "# raw logs: $logs"
fi
