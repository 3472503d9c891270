#!/bin/bash
# stop 30, call 3: the tree with the release fence, `ready` stored
# relaxed after it, and slots in three stores; the bench against the
# steps before it, in turns; the GPU checks on the tree
top=$PWD; gpu=$top/.gpu; out=$OUT
export LD_LIBRARY_PATH=$gpu/lib:/usr/local/cuda/lib64 UCX_MODULE_DIR=$gpu/ucx_modules
export PATH=$PATH:/usr/local/cuda/bin
nvidia-smi -L > $out/gpu.txt 2>&1; nproc >> $out/gpu.txt
T0=$(date +%s)
for i in 1 2 3; do
  for v in relready rlx all; do
    b=$gpu/gda_ft_gpu_bench_$v; [ $v = all ] && b=$gpu/gda_ft_gpu_bench
    echo "=== $v run $i" >> $out/bench_ab.log
    timeout 120 $b -n 64 >> $out/bench_ab.log 2>&1
    echo "exit $?" >> $out/bench_ab.log
  done
done
echo "bench done $(( $(date +%s) - T0 )) s"
GDA_FT_BUILDDIR=$gpu/rt timeout 280 $gpu/rt/test/gtest-free/gda_ft_tests -v -f 'gpu.*' > $out/runner_gpu.log 2>&1
echo "runner exit $? $(( $(date +%s) - T0 )) s"; grep -E '^\[ (OK|FAIL)|passed' $out/runner_gpu.log | tail -5
for s in "memcheck poster_fault -b 4 -w 1" "memcheck warp_fault -b 1 -w 8" "racecheck poster_fault -b 2 -w 2" "racecheck thread_fault -b 1 -w 4"; do
  set -- $s
  echo "=== $1 $2" >> $out/sanitizer.log
  timeout 150 compute-sanitizer --tool $1 $gpu/gda_ft_gpu_chan -s $2 $3 $4 $5 $6 -i 400 >> $out/sanitizer.log 2>&1
  echo "$1 $2 exit $? $(( $(date +%s) - T0 )) s"
done
grep -E 'SUMMARY' $out/sanitizer.log
timeout 120 $gpu/gda_ft_gpu_chan -s poster_fault -b 4 -w 1 -D 1000 -i 20000 -m host -r 20 > $out/poster_fault_1000us.log 2>&1
echo "poster_fault 1 ms exit $? $(( $(date +%s) - T0 )) s"; grep -E 'interruption \(port|passed' $out/poster_fault_1000us.log | tail -3
timeout 120 $gpu/gda_ft_gpu_chan -s warp_fault -b 4 -w 1 -D 1000 -i 20000 -m host -r 20 > $out/warp_fault_1000us_4warps.log 2>&1
echo "warp_fault 4 warps 1 ms exit $? $(( $(date +%s) - T0 )) s"; grep -E 'interruption \(port|passed' $out/warp_fault_1000us_4warps.log | tail -3
timeout 150 $gpu/gda_ft_gpu_chan -s warp_fault -b 4 -w 2 -D 1000 -i 1000 -m host -r 20 > $out/warp_fault_1000us.log 2>&1
echo "warp_fault 1 ms exit $? $(( $(date +%s) - T0 )) s"; grep -E 'interruption \(port|passed' $out/warp_fault_1000us.log | tail -3
timeout 90 $gpu/gda_ft_gpu_chan -s steady -b 4 -w 2 -D 1000 -T 60 -i 2000000 -m host > $out/steady_1000us.log 2>&1
echo "steady 1 ms exit $? $(( $(date +%s) - T0 )) s"; grep -E 'deadline,|longest|passed' $out/steady_1000us.log | tail -4
