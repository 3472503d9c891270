#!/bin/bash
#
# The gda_ft UCX transport on software HCAs, in one run: ucx_perftest with
# the failover machinery on and off and over UCX's tcp, then the failover
# interruption as a distribution over repeated runs.
#
#   contrib/bench-gda-ft.sh [-b BUILD_DIR] [-r REPS] [-f RUNS] [-d DEADLINE]
#                           [-q] [-k]
#
#   -b DIR    build tree holding .libs/libuct_gda_ft.so and
#             test/ucp/gda_ft_ucp_failover (make all build-tests; default:
#             $GDA_FT_BUILD_DIR, the current directory, or <top>/build)
#   -r N      perftest repetitions (default 7)
#   -f N      failover runs per deadline (default 20)
#   -d TIME   the short deadline to compare with the default (100ms)
#   -q        quick: 2 repetitions, 3 failover runs, shorter runs (a smoke
#             test)
#   -k        keep the raw logs
#
# Part 1, ucx_perftest (server + client; each gda_ft process has two soft
# HCAs, server gda0=127.0.0.1 gda1=127.0.0.2, client gda0=127.0.0.3
# gda1=127.0.0.4, one UDP port; tcp: UCX_TLS=tcp UCX_NET_DEVICES=lo):
#   UCT put_bw -D zcopy -s 65536, put_lat -D short -s 8 (-x gda_ft -d gda0:1)
#       with UCX_GDA_FT_FAILOVER=y (default) and =n
#   UCP ucp_put_bw -s 65536, ucp_put_lat -s 8 with UCX_TLS=gda_ft,tcp
#       (failover y and n; the client's log must show rma(gda_ft/gda0:1))
#       and with UCX_TLS=tcp
#   UCP tag_bw -s 65536 (rendezvous), tag_lat -s 8 (eager, active
#       messages) with UCX_TLS=gda_ft alone (failover y and n; the log must
#       show tag(gda_ft/gda0:1)) and with UCX_TLS=tcp
# The variants of each test take turns, the one that goes first rotating
# with the repetition. Bandwidth: overall MB/s (2^20 bytes/s); latency:
# the median half round trip (ucx_perftest's 50th percentile), usec.
# Failover=y runs in which the transport switched to the backup path
# although no fault was injected are counted and reported.
#
# Part 2, gda_ft_ucp_failover --mode down: the client's puts and atomics
# run, the server's primary port goes down at iteration 133 of 400, and
# the program prints interruption_ms, the time from the port going down to
# the first fetching atomic posted after it that completes (on the backup).
# RUNS runs with the default deadline (auto: 1s on soft HCAs) and RUNS
# with -d, alternating; plus, with -d, a few runs without a fault that
# count switches nobody asked for (false triggers).
#
# About 75 s on an otherwise idle 2-CPU machine, 2.5 min with other work
# on it; a ucx_perftest run longer than 60 s is stopped and counts as failed.
#
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
build_dir=${GDA_FT_BUILD_DIR:-}
reps=7
fo_runs=20
short_deadline=100ms
quick=no
keep=no

usage() {
    sed -n '3,44p' "$0" | sed 's/^# \{0,1\}//'
}

while getopts "b:r:f:d:qkh" opt; do
    case $opt in
    b) build_dir=$OPTARG ;;
    r) reps=$OPTARG ;;
    f) fo_runs=$OPTARG ;;
    d) short_deadline=$OPTARG ;;
    q) quick=yes ;;
    k) keep=yes ;;
    h) usage; exit 0 ;;
    *) usage >&2; exit 2 ;;
    esac
done

if [ -z "$build_dir" ]; then
    if [ -f ./.libs/libuct_gda_ft.so ]; then
        build_dir=.
    else
        build_dir=$top/build
    fi
fi
build_dir=$(cd "$build_dir" && pwd)
if [ ! -f "$build_dir/.libs/libuct_gda_ft.so" ]; then
    echo "bench-gda-ft.sh: $build_dir/.libs/libuct_gda_ft.so not found:" \
         "build first (make all), or give the build tree with -b" >&2
    exit 1
fi
fo_prog=$build_dir/test/ucp/gda_ft_ucp_failover
if [ ! -x "$fo_prog" ]; then
    echo "bench-gda-ft.sh: $fo_prog not found: make build-tests" >&2
    exit 1
fi
run=$top/contrib/gda_ft-run.sh

# Iterations: the same work for every variant of a test
bw_iters=2000          # 125 MiB of 64 KiB puts
bw_warmup=200
lat_iters=2000
lat_warmup=200
perf_timeout=60        # one ucx_perftest run: 1 to 10 s on a busy 2-CPU box
fo_none_runs=8         # fault-free runs with the short deadline
fo_none_iters=2000
if [ $quick = yes ]; then
    reps=2
    fo_runs=3
    fo_none_runs=1
    bw_iters=300
    bw_warmup=50
    lat_iters=500
    lat_warmup=50
    fo_none_iters=400
fi


# ---- checks ------------------------------------------------------------------

command -v ucx_perftest >/dev/null ||
    { echo "bench-gda-ft.sh: ucx_perftest not found (ucx-utils)" >&2; exit 1; }
command -v ss >/dev/null || echo "bench-gda-ft.sh: no ss(8): waiting blindly" >&2

lo_flags=$(cat /sys/class/net/lo/flags 2>/dev/null || echo 0)
if [ $(( lo_flags & 1 )) -eq 0 ]; then
    echo "bench-gda-ft.sh: the loopback interface is down" >&2
    exit 1
fi
if command -v ip >/dev/null; then
    for a in 127.0.0.2 127.0.0.3 127.0.0.4; do
        if ! ip route get $a 2>/dev/null | grep -q '^local'; then
            echo "bench-gda-ft.sh: $a is not a local address" >&2
            exit 1
        fi
    done
fi

logs=$(mktemp -d "${TMPDIR:-/tmp}/gda_ft_bench2.XXXXXX")
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

# One port number per run, used as the UDP port of the soft fabric and the
# TCP port of ucx_perftest; 61000 and above: outside Linux's ephemeral
# range and the ranges test/gtest-free uses (21000-60999)
port=$(( 61000 + ($$ % 40) * 100 ))

export UCX_WARN_UNUSED_ENV_VARS=n
export GDA_FT_BUILD_DIR=$build_dir
# a survived switch is a diagnostic: the runs below count those lines
export UCX_LOG_LEVEL=diag


# ---- part 1: one ucx_perftest server/client pair -------------------------------

# perf_env VARIANT SIDE: the environment assignments of one process
perf_env() {
    local variant=$1 side=$2 d0 d1
    if [ "$side" = server ]; then d0=127.0.0.1; d1=127.0.0.2
    else                          d0=127.0.0.3; d1=127.0.0.4; fi
    case $variant in
    tcp) echo "UCX_TLS=tcp UCX_NET_DEVICES=lo" ;;
    *)   echo "UCX_GDA_FT_SOFT_CTL_DIR= UCX_GDA_FT_SOFT_DEVICES=gda0=$d0:$port,gda1=$d1:$port" \
              "UCX_GDA_FT_FAILOVER=$([ "$variant" = on ] && echo y || echo n)"
    esac
}

# perf_run NAME VARIANT LEVEL ARGS...: appends "REP NAME VARIANT VALUE"
# (VALUE: "fail" when the run failed) and "REP NAME VARIANT switches N"
perf_run() {
    local name=$1 variant=$2 level=$3 log i senv cenv final value sw tls lane
    shift 3
    port=$(( port + 1 ))
    log=$logs/perf.$rep.$name.$variant
    senv=$(perf_env "$variant" server)
    cenv=$(perf_env "$variant" client)
    if [ "$level" != uct ] && [ "$variant" != tcp ]; then
        tls=$([ "$level" = tag ] && echo gda_ft || echo gda_ft,tcp)
        senv="$senv UCX_TLS=$tls UCX_NET_DEVICES=all"
        cenv="$cenv UCX_TLS=$tls UCX_NET_DEVICES=all UCX_LOG_LEVEL=info"
    fi
    # shellcheck disable=SC2086
    env $senv timeout $perf_timeout "$run" ucx_perftest -p $port "$@" \
        >"$log.server" 2>&1 &
    server_pid=$!
    for i in $(seq 200); do
        if command -v ss >/dev/null; then
            [ -n "$(ss -Hltn "sport = :$port" 2>/dev/null)" ] && break
        elif [ "$i" -gt 10 ]; then
            break
        fi
        sleep 0.05
    done
    value=fail
    # shellcheck disable=SC2086
    if env $cenv timeout $perf_timeout "$run" ucx_perftest 127.0.0.1 -p $port "$@" \
           >"$log" 2>&1 && wait $server_pid; then
        final=$(grep '^Final:' "$log" | tail -1)
        # Final: iters lat50 lat_avg lat_overall bw_avg bw_overall mr_avg mr_all
        case $name in
        *bw*)  value=$(echo "$final" | awk '{print $7}') ;;
        *lat*) value=$(echo "$final" | awk '{print $3}') ;;
        esac
        [ -n "$value" ] || value=fail
        lane=$([ "$level" = tag ] && echo 'tag(gda_ft/gda0:1' ||
               echo 'rma(gda_ft/gda0:1)')
        if [ "$level" != uct ] && [ "$variant" != tcp ] &&
           ! grep -qF "$lane" "$log"; then
            echo "bench-gda-ft.sh: $name $variant: UCP did not choose" \
                 "gda_ft ($lane, see $log)" >&2
            value=fail
        fi
    else
        # the client failed (or the server): do not wait for the server's
        # timeout
        kill "$server_pid" 2>/dev/null || true
        wait "$server_pid" 2>/dev/null || true
    fi
    server_pid=""
    if [ "$value" = fail ]; then
        echo "bench-gda-ft.sh: ucx_perftest $* ($variant) failed:" >&2
        grep -h -E 'UCX  (ERROR|WARN)' "$log" "$log.server" | tail -n 2 >&2 ||
            true
    fi
    sw=$(cat "$log" "$log.server" | grep -c 'switched to the backup path' || true)
    echo "$rep $name $variant $value" >>"$logs/perf"
    echo "$rep $name $variant $sw" >>"$logs/switches"
}

uct="-x gda_ft -d gda0:1"
perf_test() {
    local name=$1 variants=$2 n v i k
    shift 2
    # rotate the variants: the one that goes first changes with rep
    set -- $variants
    n=$#
    for (( i = 0; i < n; ++i )); do
        k=$(( (i + rep - 1) % n + 1 ))
        v=${!k}
        case $name in
        uct_bw)  perf_run $name $v uct -t put_bw -D zcopy -s 65536 \
                          -n $bw_iters -w $bw_warmup $uct ;;
        uct_lat) perf_run $name $v uct -t put_lat -D short -s 8 \
                          -n $lat_iters -w $lat_warmup $uct ;;
        ucp_bw)  perf_run $name $v ucp -t ucp_put_bw -s 65536 \
                          -n $bw_iters -w $bw_warmup ;;
        ucp_lat) perf_run $name $v ucp -t ucp_put_lat -s 8 \
                          -n $lat_iters -w $lat_warmup ;;
        tag_bw)  perf_run $name $v tag -t tag_bw -s 65536 \
                          -n $bw_iters -w $bw_warmup ;;
        tag_lat) perf_run $name $v tag -t tag_lat -s 8 \
                          -n $lat_iters -w $lat_warmup ;;
        esac
    done
}


# ---- part 2: one failover program run ------------------------------------------

# fo_run LABEL MODE DEADLINE ITERS: appends "LABEL INTERRUPTION_MS REASON
# FALSE EARLY PASS" to $logs/failover: REASON, what detected the first
# switch (retry: the error completion after the QP's retries, deadline,
# none); FALSE, the path failures nobody caused: with --mode none every
# one, with --mode down a switch logged before the fault and any failure
# of the backup path (its port stays up); EARLY, 1 when the switch came
# before the fault (its interruption_ms measures nothing)
fo_run() {
    local label=$1 mode=$2 deadline=$3 iters=$4 log ms reason false early pass
    port=$(( port + 1 ))
    log=$logs/fo.$label.$fo_i
    if env UCX_GDA_FT_DEADLINE="$deadline" timeout 120 "$run" "$fo_prog" \
           --mode "$mode" -n "$iters" -p $port >"$log" 2>&1; then
        pass=pass
    else
        pass=FAIL
    fi
    ms=$(sed -n 's/.*FAILOVER .*interruption_ms=\([-0-9.]*\).*/\1/p' "$log" |
         head -1)
    [ -n "$ms" ] || ms=-1
    read -r reason false early < <(awk -v mode="$mode" '
        /fault injected/ && !fault { fault = NR }
        /switched to the backup path/ && !sw {
            sw = NR
            if (/no completion for/) reason = "deadline"
            else if (/RETRY_EXC/)    reason = "retry"
            else                     reason = "other"
        }
        /gda_ft: ep .* path to peer QP .* failed/ { fails++ }
        /gda_ft: ep .* backup path to peer QP .* failed/ { backup_fails++ }
        END {
            if (reason == "") reason = "none"
            early = (mode != "none" && sw && (!fault || sw < fault)) ? 1 : 0
            if (mode == "none") false = fails
            else false = backup_fails + early
            print reason, false + 0, early
        }' "$log")
    echo "$label $ms $reason $false $early $pass" >>"$logs/failover"
    if [ $pass = FAIL ]; then
        echo "bench-gda-ft.sh: gda_ft_ucp_failover ($label, deadline" \
             "$deadline) failed:" >&2
        grep -E 'RESULT|FAILOVER|UCX  (ERROR|WARN)' "$log" |
            grep -v 'is in doubt' | tail -5 >&2 || true
    fi
}


# ---- run -----------------------------------------------------------------------

echo "# bench-gda-ft.sh: $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs," \
     "$(ucx_info -v | sed -n -e 's/^# Version //p' -e 's/^# Library version: //p' | head -1 | sed 's/^/UCX /')," \
     "load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# build $build_dir; reps=$reps bw: -n $bw_iters -w $bw_warmup," \
     "lat: -n $lat_iters -w $lat_warmup; failover runs=$fo_runs per deadline" \
     "(auto, $short_deadline) + $fo_none_runs fault-free at $short_deadline"
: >"$logs/perf"
: >"$logs/switches"
: >"$logs/failover"
start=$(date +%s)
for rep in $(seq "$reps"); do
    printf '# perftest rep %s/%s (%s s, load %s)\n' "$rep" "$reps" \
           $(( $(date +%s) - start )) "$(cut -d' ' -f1 /proc/loadavg)"
    perf_test uct_bw  "on off"
    perf_test uct_lat "on off"
    perf_test ucp_bw  "on off tcp"
    perf_test ucp_lat "on off tcp"
    perf_test tag_bw  "on off tcp"
    perf_test tag_lat "on off tcp"
done
perf_end=$(date +%s)
for fo_i in $(seq "$fo_runs"); do
    [ $(( fo_i % 5 )) -eq 1 ] &&
        printf '# failover run %s/%s (%s s, load %s)\n' "$fo_i" "$fo_runs" \
               $(( $(date +%s) - start )) "$(cut -d' ' -f1 /proc/loadavg)"
    if [ $(( fo_i % 2 )) -eq 1 ]; then
        fo_run auto down auto 400
        fo_run short down "$short_deadline" 400
    else
        fo_run short down "$short_deadline" 400
        fo_run auto down auto 400
    fi
    if [ "$fo_i" -le "$fo_none_runs" ]; then
        fo_run short_nofault none "$short_deadline" $fo_none_iters
    fi
done
end=$(date +%s)
echo "# $(( end - start )) s (perftest $(( perf_end - start )) s, failover" \
     "$(( end - perf_end )) s), load average $(cut -d' ' -f1-3 /proc/loadavg)"


# ---- tables --------------------------------------------------------------------

awk '
    function median(list,   a, n, i, j, t) {
        n = split(list, a, " ")
        for (i = 1; i <= n; ++i)
            for (j = i + 1; j <= n; ++j)
                if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
        if (n == 0) return ""
        return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
    }
    # the values that did not fail, and how many failed
    function ok(list,   a, n, i, s) {
        n = split(list, a, " ")
        s = ""
        for (i = 1; i <= n; ++i)
            if (a[i] != "fail") s = s (s == "" ? "" : " ") a[i]
        return s
    }
    function values(list,   a, n, i, s) {
        n = split(list, a, " ")
        s = ""
        for (i = 1; i <= n; ++i)
            s = s (i > 1 ? " " : "") \
                (a[i] == "fail" ? "fail" : sprintf("%.1f", a[i]))
        return (s == "") ? "-" : s
    }
    function med(key) { return median(ok(v[key])) }
    function fmt(x) { return (x == "") ? "-" : sprintf("%.1f", x) }
    function ratio(a, b) {
        return (a == "" || b == "" || b + 0 == 0) ? "-" : sprintf("%.2f", a / b)
    }
    FILENAME ~ /perf$/ {
        k = $2 SUBSEP $3; v[k] = v[k] (v[k] == "" ? "" : " ") $4
        pv[$2, $3, $1] = $4; if ($1 > nrep) nrep = $1; next
    }
    FILENAME ~ /switches$/ {
        if ($3 == "on") { runs_on++; if ($4 > 0) { sw_runs++; sw_list = sw_list " " $2 "(rep " $1 ")" } }
        next
    }
    function row(label, unit, name,   on, off, tcp) {
        on = med(name SUBSEP "on"); off = med(name SUBSEP "off")
        tcp = med(name SUBSEP "tcp")
        printf "| %-24s | %-4s | %-32s | %-32s | %-32s | %8s | %8s | %8s | %6s | %7s | %7s |\n",
               label, unit, values(v[name SUBSEP "on"]),
               values(v[name SUBSEP "off"]), values(v[name SUBSEP "tcp"]),
               fmt(on), fmt(off), fmt(tcp), ratio(on, off), ratio(on, tcp),
               ratio(off, tcp)
    }
    # median over the repetitions of the ratio of two runs of one repetition
    function paired(name, a, b,   r, x, y, l) {
        l = ""
        for (r = 1; r <= nrep; ++r) {
            x = pv[name, a, r]; y = pv[name, b, r]
            if (x != "" && y != "" && x != "fail" && y != "fail" && y + 0 > 0)
                l = l (l == "" ? "" : " ") (x / y)
        }
        l = median(l)
        return (l == "") ? "-" : sprintf("%.2f", l)
    }
    function prow(label, name) {
        printf "| %-24s | %6s | %6s | %7s |\n", label,
               paired(name, "on", "off"), paired(name, "on", "tcp"),
               paired(name, "off", "tcp")
    }
    END {
        print ""
        printf "| %-24s | %-4s | %-32s | %-32s | %-32s | %8s | %8s | %8s | %6s | %7s | %7s |\n",
               "measurement", "unit", "gda_ft failover on, per rep.",
               "gda_ft failover off, per rep.", "tcp, per rep.", "on med.",
               "off med.", "tcp med.", "on/off", "on/tcp", "off/tcp"
        print "|--------------------------|------|----------------------------------|----------------------------------|----------------------------------|----------|----------|----------|--------|---------|---------|"
        row("UCT put_bw zcopy 64 KiB", "MB/s", "uct_bw")
        row("UCT put_lat short 8 B", "usec", "uct_lat")
        row("UCP put_bw 64 KiB", "MB/s", "ucp_bw")
        row("UCP put_lat 8 B", "usec", "ucp_lat")
        row("UCP tag_bw 64 KiB (rndv)", "MB/s", "tag_bw")
        row("UCP tag_lat 8 B (eager)", "usec", "tag_lat")
        print ""
        print "paired: the median over the repetitions of the ratio of the two runs of one repetition"
        print ""
        printf "| %-24s | %6s | %6s | %7s |\n", "paired ratio", "on/off", "on/tcp", "off/tcp"
        print "|--------------------------|--------|--------|---------|"
        prow("UCT put_bw zcopy 64 KiB", "uct_bw")
        prow("UCT put_lat short 8 B", "uct_lat")
        prow("UCP put_bw 64 KiB", "ucp_bw")
        prow("UCP put_lat 8 B", "ucp_lat")
        prow("UCP tag_bw 64 KiB (rndv)", "tag_bw")
        prow("UCP tag_lat 8 B (eager)", "tag_lat")
        print ""
        printf "failover-on perftest runs that switched to the backup path with no fault injected: %d of %d%s\n",
               sw_runs, runs_on, sw_list
    }' "$logs/perf" "$logs/switches"

awk -v short="$short_deadline" '
    function sort(a, n,   i, j, t) {
        for (i = 1; i <= n; ++i)
            for (j = i + 1; j <= n; ++j)
                if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
    }
    {
        lab = $1; runs[lab]++
        if ($6 != "pass") fails[lab]++
        by[lab, $3]++
        falses[lab] += $4
        if ($4 > 0) false_runs[lab]++
        if ($2 + 0 >= 0 && $5 == 0) { n[lab]++; val[lab, n[lab]] = $2 }
        list[lab] = list[lab] (list[lab] == "" ? "" : " ") \
                    (($2 + 0 >= 0) ? $2 : "none") ($5 != 0 ? "(E)" : "") \
                    ($6 != "pass" ? "(F)" : "")
    }
    function line(lab, name,   a, i, m, p90) {
        m = n[lab]
        for (i = 1; i <= m; ++i) a[i] = val[lab, i]
        sort(a, m)
        p90 = (m > 0) ? a[int(0.9 * m + 0.999999)] : ""
        printf "| %-10s | %4d | %4d | %6s | %6s | %6s | %6s | %-21s | %6d | %9d |\n",
               name, runs[lab], m, m ? sprintf("%.1f", a[1]) : "-",
               m ? sprintf("%.1f", (m % 2) ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2) : "-",
               m ? sprintf("%.1f", p90) : "-", m ? sprintf("%.1f", a[m]) : "-",
               sprintf("%d retry, %d deadline", by[lab, "retry"], by[lab, "deadline"]),
               fails[lab], false_runs[lab]
    }
    END {
        print ""
        print "failover interruption (ms): server primary port down -> first completion on the backup"
        print ""
        printf "| %-10s | %4s | %4s | %6s | %6s | %6s | %6s | %-21s | %6s | %9s |\n",
               "deadline", "runs", "used", "min", "median", "p90", "max",
               "switch detected by", "failed", "false trg"
        print "|------------|------|------|--------|--------|--------|--------|-----------------------|--------|-----------|"
        line("auto", "auto (1s)")
        line("short", short)
        print ""
        print "per run, auto:  " list["auto"]
        print "per run, " short ": " list["short"]
        print "used: runs in the statistics (an interruption measured, no switch before the fault)"
        print "(E): switched before the fault; (F): the run failed (RESULT FAIL); failed, false trg:"
        print "runs that failed, runs with a path failure nobody caused (a switch before the fault,"
        print "or the backup path failing: its port stays up)"
        printf "fault-free runs with deadline %s: %d, with a false trigger %d, failed %d\n",
               short, runs["short_nofault"], false_runs["short_nofault"],
               fails["short_nofault"]
    }' "$logs/failover"

if [ $keep = yes ]; then
    echo "# raw logs: $logs"
fi
