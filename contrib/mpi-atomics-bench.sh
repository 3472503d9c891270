#!/bin/sh
#
# What exactly-once atomics cost MPI: Open MPI's osc ucx accumulate and
# fetch-and-op (each followed by MPI_Win_flush) between 2 ranks over
# gda_ft, with UCX_ATOMIC_MODE=cpu (the target's UCX executes them from
# gda_ft's active messages) and =device (the HCAs execute them), the two
# alternated ROUNDS times in one run, and their ratio.
#
#   contrib/mpi-atomics-bench.sh [ROUNDS [OPS]]     (default 5 rounds of 2000)
#
# Exit status: 0 when every run counted right, else 1; 77 when mpirun or
# the program is missing (as contrib/mpi-failover.sh).
#
set -u
rounds=${1:-5}
ops=${2:-2000}
script_dir=$(cd "$(dirname "$0")" && pwd)
out=$(mktemp /tmp/gda_ft_mpi_atomics.XXXXXX)
rc=0

i=0
while [ $i -lt "$rounds" ]; do
    for mode in cpu device; do
        "$script_dir/mpi-failover.sh" -q --mode none -A $mode -- \
            --bench "$ops" >"$out.run" 2>&1
        ret=$?
        [ $ret -eq 77 ] && { cat "$out.run"; rm -f "$out" "$out.run"; \
                             exit 77; }
        [ $ret -eq 0 ] || { cat "$out.run"; rc=1; }
        grep -h "MPI atomics bench:" "$out.run" | tee -a "$out"
    done
    i=$((i + 1))
done
rm -f "$out.run"

# medians per mode and their ratio
awk '
    function median(a, n,   i, j, t) {
        for (i = 1; i <= n; ++i)
            for (j = i + 1; j <= n; ++j)
                if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
        return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
    }
    {
        for (f = 1; f <= NF; ++f) {
            split($f, kv, "=")
            if (kv[1] == "atomic_mode")     m = kv[2]
            if (kv[1] == "accumulate_us")   acc = kv[2]
            if (kv[1] == "fetch_and_op_us") fop = kv[2]
        }
        n[m]++; A[m, n[m]] = acc; F[m, n[m]] = fop
    }
    END {
        for (m in n) {
            for (i = 1; i <= n[m]; ++i) { a[i] = A[m, i]; b[i] = F[m, i] }
            ma[m] = median(a, n[m]); mf[m] = median(b, n[m])
            printf "median %s: accumulate %.2f us, fetch-and-op %.2f us " \
                   "(%d runs)\n", m, ma[m], mf[m], n[m]
        }
        if (("cpu" in n) && ("device" in n))
            printf "cpu/device: accumulate %.2f, fetch-and-op %.2f\n",
                   ma["cpu"] / ma["device"], mf["cpu"] / mf["device"]
    }' "$out"
rm -f "$out"
exit $rc
