#!/bin/sh
#
# Runs the MPI failover test (test/mpi/gda_ft_mpi_test) on 2 ranks of this
# host over the gda_ft UCX transport on software HCAs, with rank 1's primary
# soft port failing in the middle of the run (fault schedule), and checks
# the result.
#
#   contrib/mpi-failover.sh                    # port down at 1.5 s
#   contrib/mpi-failover.sh --mode none        # no failure
#   contrib/mpi-failover.sh --mode updown      # down at 1.5 s, up at 3 s
#   contrib/mpi-failover.sh --mode flap        # down and up 6 times in 6 s
#   contrib/mpi-failover.sh --atomic-mode device  # atomics on the HCAs
#   contrib/mpi-failover.sh -- --fence --no-acc   # arguments of the program
#
# Each rank declares its own soft HCAs (MPMD: one app context per rank):
#   rank 0: r0a=127.0.0.1:P,r0b=127.0.0.2:P   rank 1: r1a=127.0.0.3:P,r1b=127.0.0.4:P
# and runs with the plugin preloaded, UCX_TLS=gda_ft,tcp (--tls) and Open
# MPI's UCX components:
#   --mca pml ucx --mca osc ucx --mca pml_ucx_tls any --mca pml_ucx_devices any
# (Open MPI 4.1 enables pml ucx only for its own list of transports and
# devices, mlx5-like ones, unless told "any"; Debian's openmpi-mca-params.conf
# also disables pml ucx and osc ucx by default, which --mca overrides.)
# With --pml ob1, point-to-point messages go over Open MPI's TCP BTL and only
# the one-sided operations (osc ucx) over gda_ft.
#
# gda_ft carries active messages (eager messages) and rendezvous data, and
# UCX wires its endpoints up over gda_ft's out-of-band channel (device
# <hca>:oob), so --tls gda_ft alone works too. --rndv-rails N sets
# UCX_MAX_RNDV_RAILS (UCX's default otherwise).
#
# Atomics (osc ucx's locks, accumulates and fetch-and-ops) run in
# UCX_ATOMIC_MODE=cpu by default: the target's UCX executes them from
# gda_ft's exactly-once active messages, so a failure in flight leaves
# none in doubt. With --atomic-mode device the HCAs execute them, and a
# fetching atomic whose reply a failure lost is in doubt (design §5 rule 4):
# the program's own counters then tell whether the in-doubt outcome is
# honest (each counter holds the successful increments, plus at most those
# of the failed epoch).
# UCX_GDA_FT_* settings of the caller's environment (UCX_GDA_FT_SOFT_DROP,
# ...) reach both ranks.
#
# Exit status: 0 when the program passes and, with a fault, the transport
# logged a switch to the backup path; 1 when not; 77 when mpirun, the program
# or the plugin is missing; 2 on a usage error.
#
set -u

usage() {
    cat <<EOF
Usage: $0 [OPTIONS] [-- PROGRAM_ARGS...]
  -m, --mode MODE    none | down (default) | updown | flap: rank 1's
                     primary port (flap: down at 1 s and up half a
                     second later, 6 times, one a second)
  -a, --at TIME      when it goes down, schedule time (default 1500ms)
  -u, --up TIME      updown: when it comes back (default 3s)
  -A, --atomic-mode M  UCX_ATOMIC_MODE: cpu (default) | device
  -p, --pml PML      ucx (default) | ob1 (messages over Open MPI's TCP BTL)
  -r, --rndv-rails N UCX_MAX_RNDV_RAILS (default: UCX's)
  -l, --tls TLS      UCX_TLS (default gda_ft,tcp)
  -t, --time SEC     minimum run time of the program (default 5)
  -n, --iters N      minimum iterations of the program (default 200)
  -B, --build DIR    build tree (default: \$GDA_FT_BUILD_DIR, else <src>/build)
  -k, --keep         keep the log file
  -q, --quiet        print only the summary lines
  -h, --help
Environment: MPIRUN (default: mpirun from PATH), MPIRUN_ARGS (more options),
  MPI_FAILOVER_LIMIT (seconds until a run counts as a hang and is killed,
  after its ranks' state is recorded; default: the minimum time + 120).
EOF
}

script_dir=$(cd "$(dirname "$0")" && pwd)
src_dir=$(cd "$script_dir/.." && pwd)
build_dir=${GDA_FT_BUILD_DIR:-$src_dir/build}
mode=down
atomic_mode=cpu
fault_at=1500ms
up_at=3s
pml=ucx
rndv_rails=default
tls=gda_ft,tcp
min_time=5
iters=200
keep=0
quiet=0

while [ $# -gt 0 ]; do
    case "$1" in
    -m|--mode)  mode=$2; shift 2 ;;
    -a|--at)    fault_at=$2; shift 2 ;;
    -u|--up)    up_at=$2; shift 2 ;;
    -A|--atomic-mode) atomic_mode=$2; shift 2 ;;
    -p|--pml)   pml=$2; shift 2 ;;
    -r|--rndv-rails) rndv_rails=$2; shift 2 ;;
    -l|--tls)   tls=$2; shift 2 ;;
    -t|--time)  min_time=$2; shift 2 ;;
    -n|--iters) iters=$2; shift 2 ;;
    -B|--build) build_dir=$2; shift 2 ;;
    -k|--keep)  keep=1; shift ;;
    -q|--quiet) quiet=1; shift ;;
    -h|--help)  usage; exit 0 ;;
    --)         shift; break ;;
    *)          usage >&2; exit 2 ;;
    esac
done

case "$mode" in none|down|updown|flap) ;; *) usage >&2; exit 2 ;; esac
case "$atomic_mode" in cpu|device) ;; *) usage >&2; exit 2 ;; esac
case "$pml" in ucx|ob1) ;; *) usage >&2; exit 2 ;; esac

# a build tree's .libs, or the directory itself (as gda_ft-run.sh takes it)
case "$build_dir" in
*/.libs) build_dir=$(dirname "$build_dir") ;;
esac

mpirun=${MPIRUN:-$(command -v mpirun || true)}
if [ -z "$mpirun" ] || [ ! -x "$mpirun" ]; then
    echo "mpi-failover: SKIP: mpirun not found (install openmpi-bin)" >&2
    exit 77
fi
prog=$build_dir/test/mpi/gda_ft_mpi_test
if [ ! -x "$prog" ]; then
    echo "mpi-failover: SKIP: $prog not built (configure did not find" \
         "mpicc, or 'make build-tests' was not run)" >&2
    exit 77
fi
lib=$build_dir/.libs/libuct_gda_ft.so
if [ ! -f "$lib" ]; then
    echo "mpi-failover: SKIP: $lib not built ('make all')" >&2
    exit 77
fi

port=$((20000 + $$ % 40000))
dev0="r0a=127.0.0.1:$port,r0b=127.0.0.2:$port"
dev1="r1a=127.0.0.3:$port,r1b=127.0.0.4:$port"
case "$mode" in
none)   faults="" ;;
down)   faults="$fault_at:r1a:1:down" ;;
updown) faults="$fault_at:r1a:1:down;$up_at:r1a:1:up" ;;
flap)   faults="1000ms:r1a:1:down;1500ms:r1a:1:up;2000ms:r1a:1:down"
        faults="$faults;2500ms:r1a:1:up;3000ms:r1a:1:down;3500ms:r1a:1:up"
        faults="$faults;4000ms:r1a:1:down;4500ms:r1a:1:up;5000ms:r1a:1:down"
        faults="$faults;5500ms:r1a:1:up;6000ms:r1a:1:down;6500ms:r1a:1:up" ;;
esac

# Open MPI 4.1 applies the -x options before the first app context only to
# that context: every context gets the whole list
common="-x UCX_TLS=$tls -x LD_PRELOAD=$lib
        -x UCX_ATOMIC_MODE=$atomic_mode
        -x UCX_GDA_FT_SOFT_CTL_DIR=${UCX_GDA_FT_SOFT_CTL_DIR:-}
        -x UCX_NET_DEVICES=${UCX_NET_DEVICES:-all}
        -x UCX_LOG_LEVEL=${UCX_LOG_LEVEL:-diag}"
if [ "$rndv_rails" != default ]; then
    common="$common -x UCX_MAX_RNDV_RAILS=$rndv_rails"
fi
# other gda_ft settings of the caller's environment reach both ranks
for var in $(env | sed -n 's/^\(UCX_GDA_FT_[A-Z0-9_]*\)=.*/\1/p'); do
    case "$var" in
    UCX_GDA_FT_SOFT_DEVICES|UCX_GDA_FT_SOFT_FAULTS|UCX_GDA_FT_SOFT_CTL_DIR) ;;
    *) common="$common -x $var" ;;
    esac
done
args="-n $iters -t $min_time $*"

# nothing may hang: the run is killed after the minimum time plus 2 minutes
limit=${MPI_FAILOVER_LIMIT:-$(awk -v t="$min_time" 'BEGIN { printf "%d", t + 120 }')}
log=$(mktemp /tmp/gda_ft_mpi_failover.XXXXXX.log)
# shellcheck disable=SC2086
set -- "$mpirun" --allow-run-as-root --oversubscribe --bind-to none \
    --mca pml "$pml" --mca osc ucx --mca btl self,tcp \
    --mca pml_ucx_tls any --mca pml_ucx_devices any \
    ${MPIRUN_ARGS:-} \
    -np 1 $common -x UCX_GDA_FT_SOFT_DEVICES="$dev0" \
        "$prog" $args \
    : -np 1 $common -x UCX_GDA_FT_SOFT_DEVICES="$dev1" \
        -x UCX_GDA_FT_SOFT_FAULTS="$faults" \
        "$prog" $args

# The processes under pid $1, children first
descendants() {
    for child in $(pgrep -P "$1"); do
        descendants "$child"
        echo "$child"
    done
}

# What a hang leaves to look at, taken before the kill: each rank's
# endpoints (path, counters, active messages sent and received) through
# the transport's control socket, which UCX's async thread serves whatever
# the rank's own thread is stuck in, its soft ports where
# UCX_GDA_FT_SOFT_CTL_DIR gives their socket, and its threads' stacks
# where gdb is installed
hang_state() {
    softctl=$build_dir/src/tools/gda_ft_softctl
    for pid in $(descendants "$1" | sort -u); do
        case "$(cat "/proc/$pid/cmdline" 2>/dev/null | tr '\0' ' ')" in
        *gda_ft_mpi_test*) ;;
        *) continue ;;
        esac
        echo "mpi-failover: hang: rank process $pid"
        if [ -x "$softctl" ] && [ -n "${UCX_GDA_FT_SOFT_CTL_DIR:-}" ]; then
            "$softctl" -d "$UCX_GDA_FT_SOFT_CTL_DIR" -p "$pid" stats 2>&1
        fi
        if [ -x "$softctl" ]; then
            "$softctl" -p "$pid" counters 2>&1
        fi
        if command -v gdb >/dev/null; then
            gdb -p "$pid" -batch -ex "thread apply all bt 12" 2>&1 |
                grep "^#\|^Thread"
        fi
    done
}

# Runs mpirun; 5 s before the limit, a watchdog records the state of a
# run that is still going
run_mpirun() {
    timeout "$limit" "$@" &
    run_pid=$!
    # (its output away from ours: a tee would wait for its sleep)
    ( sleep $((limit - 5)) && kill -0 "$run_pid" 2>/dev/null &&
      hang_state "$run_pid" >"$log.hang" 2>&1 ) >/dev/null 2>&1 &
    watchdog=$!
    wait "$run_pid"
    echo $? >"$log.rc"
    pkill -P "$watchdog" sleep 2>/dev/null
    wait "$watchdog" 2>/dev/null
}

[ $quiet -eq 1 ] || echo "mpi-failover: $*"
if [ $quiet -eq 1 ]; then
    run_mpirun "$@" >"$log" 2>&1
else
    run_mpirun "$@" 2>&1 | tee "$log"
fi
rc=$(cat "$log.rc")
rm -f "$log.rc"

switches=$(grep -c "switched to the backup path" "$log")
in_doubt=$(grep -c "is in doubt" "$log")
# atomics in doubt because the peer executed them and their reply was lost
# on the failing link (the peer said so): the documented outcome
reply_lost=$(sed -n 's/.*settled with the peer.s word: .* \([0-9][0-9]*\) atomics in doubt/\1/p' "$log" |
             awk '{ n += $1 } END { print n + 0 }')
result=FAIL
if [ "$rc" -eq 0 ] &&
   grep -q "MPI \(failover test\|atomics bench\): .*RESULT PASS" "$log"; then
    result=PASS
fi
# the program's --bench line (contrib/mpi-atomics-bench.sh reads it)
grep -h "MPI atomics bench:" "$log"

# the program's own verdict on the data, whatever the transport logged:
# every byte and counter checked against what each rank saw complete
program_field() {   # NAME: its value in the program's RESULT line, or -1
    sed -n "s/.*MPI failover test: RESULT .* $1=\([0-9]*\).*/\1/p" "$log" |
        awk '{ v = $1 } END { print (NR ? v : -1) }'
}
data_errors=$(program_field data_errors)
rma_failures=$(program_field rma_failures)

reason=""
if grep -q "no auxiliary transport" "$log"; then
    reason="UCX could not wire up the ranks over $tls (no auxiliary transport)"
elif [ "$rc" -eq 124 ]; then
    reason="mpirun killed after $limit s: a hang"
    keep=1
    # the end of the run and the ranks' state, where CI keeps it
    echo "mpi-failover: hang: the log's last lines:"
    tail -n 40 "$log" | cut -c1-400
    cat "$log.hang" 2>/dev/null
elif grep -q "an RMA call of iteration" "$log"; then
    reason="an MPI one-sided call failed at the failover ($in_doubt atomics in doubt)"
elif [ "$mode" != none ] && [ "$switches" -eq 0 ] && [ $result = PASS ]; then
    reason="no switch to the backup path was logged (did the run end before $fault_at?)"
    result=FAIL
elif [ $result != PASS ]; then
    reason="mpirun exit $rc, see the log"
    keep=1
fi

echo "mpi-failover: mode=$mode atomic_mode=$atomic_mode pml=$pml" \
     "tls=$tls rndv_rails=$rndv_rails" \
     "result=$result" \
     "exit=$rc switches=$switches" \
     "rma_failures=$rma_failures data_errors=$data_errors" \
     "atomics_in_doubt=$in_doubt reply_lost=$reply_lost${reason:+ reason=\"$reason\"}"
rm -f "$log.hang"
if [ $keep -eq 1 ]; then
    echo "mpi-failover: log $log"
else
    rm -f "$log"
fi
[ $result = PASS ] && exit 0
exit 1
