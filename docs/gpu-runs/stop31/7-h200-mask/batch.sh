#!/bin/bash
# stop 31, call 7: a whole warp's post with its mask known to the
# compiler (B) against the tree (A), the bench with many warps, in turns;
# then B's checks: the runner's GPU tests, memcheck and racecheck, port
# failures at 1 ms
top=$PWD; gpu=$top/.gpu; out=$OUT
export LD_LIBRARY_PATH=$gpu/lib:/usr/local/cuda/lib64 UCX_MODULE_DIR=$gpu/ucx_modules
export PATH=$PATH:/usr/local/cuda/bin
nvidia-smi -L > $out/gpu.txt 2>&1; nproc >> $out/gpu.txt
T0=$(date +%s)
for i in 1 2; do
  for v in A B; do
    b=$gpu/gda_ft_gpu_bench; [ $v = B ] && b=$gpu/gda_ft_gpu_bench_B
    timeout 150 $b -n 64 > $out/bench_${v}_$i.log 2>&1
    echo "== $v $i exit $? $(( $(date +%s) - T0 )) s"
    grep -E '(ft_on|poster|floor|bare) ' $out/bench_${v}_$i.log | grep -E ' (1|16|64|1056)  '
    grep FAIL $out/bench_${v}_$i.log
  done
done
GDA_FT_BUILDDIR=$gpu/rt timeout 280 $gpu/rt/test/gtest-free/gda_ft_tests -v -f 'gpu.*' > $out/runner_gpu.log 2>&1
echo "runner exit $? $(( $(date +%s) - T0 )) s"; grep -E '^\[ (OK|FAIL)|passed' $out/runner_gpu.log | tail -5
for s in "memcheck poster_fault -b 4 -w 1" "memcheck warp_fault -b 1 -w 8" "racecheck poster_fault -b 2 -w 2" "racecheck thread_fault -b 1 -w 4"; do
  set -- $s
  echo "=== $1 $2" >> $out/sanitizer.log
  timeout 150 compute-sanitizer --tool $1 $gpu/gda_ft_gpu_chan -s $2 $3 $4 $5 $6 -i 400 >> $out/sanitizer.log 2>&1
  echo "$1 $2 exit $? $(( $(date +%s) - T0 )) s"
done
grep -E 'SUMMARY' $out/sanitizer.log
timeout 150 $gpu/gda_ft_gpu_chan -s warp_fault -b 4 -w 2 -D 1000 -i 1000 -m host -r 20 > $out/warp_fault_1000us.log 2>&1
echo "warp_fault 1 ms exit $? $(( $(date +%s) - T0 )) s"; grep -E 'interruption \(port|passed' $out/warp_fault_1000us.log | tail -3
