#!/bin/bash
# stop 33, call 4: the look (the shared words a reservation starts from)
# read beside the geometry (I) against H (call 3) and G (before the
# published word), in turns: one warp 3 times; the whole bench for G and
# I; I's instructions, steps and checks (the runner's GPU tests, memcheck
# and racecheck, port failures at 1 ms)
top=$PWD; gpu=$top/.gpu; out=$OUT
export LD_LIBRARY_PATH=$gpu/lib:/usr/local/cuda/lib64 UCX_MODULE_DIR=$gpu/ucx_modules
export PATH=$PATH:/usr/local/cuda/bin
nvidia-smi -L > $out/gpu.txt 2>&1; nproc >> $out/gpu.txt
T0=$(date +%s)
for i in 1 2 3; do
  for v in G H I; do
    echo "### $v $i" >> $out/one.log
    timeout 60 $gpu/gda_ft_gpu_bench_$v -n 64 -1 >> $out/one.log 2>&1
  done
done
echo "one warp $(( $(date +%s) - T0 )) s"
for v in G I; do
  echo "### $v" >> $out/bench.log
  timeout 120 $gpu/gda_ft_gpu_bench_$v -n 64 >> $out/bench.log 2>&1
  echo "== $v exit $? $(( $(date +%s) - T0 )) s"
done
timeout 120 ncu --metrics smsp__inst_executed.sum -k regex:bench_post --launch-count 7 \
  $gpu/gda_ft_gpu_bench_I -n 256 -1 > $out/ncu_inst_I.log 2>&1
echo "ncu I exit $?"; grep -E 'inst_executed' $out/ncu_inst_I.log | tr '\n' ' '; echo
timeout 60 $gpu/gda_ft_gpu_bench_steps -n 64 > $out/steps.log 2>&1; tail -3 $out/steps.log
GDA_FT_BUILDDIR=$gpu/rt timeout 200 $gpu/rt/test/gtest-free/gda_ft_tests -v -f 'gpu.*' > $out/runner_gpu.log 2>&1
echo "runner exit $? $(( $(date +%s) - T0 )) s"; grep -E 'passed' $out/runner_gpu.log | tail -1
for s in "memcheck poster_fault -b 4 -w 1" "memcheck warp_fault -b 1 -w 8" "racecheck poster_fault -b 2 -w 2" "racecheck thread_fault -b 1 -w 4"; do
  set -- $s
  echo "=== $1 $2" >> $out/sanitizer.log
  timeout 100 compute-sanitizer --tool $1 $gpu/gda_ft_gpu_chan -s $2 $3 $4 $5 $6 -i 400 >> $out/sanitizer.log 2>&1
  echo "$1 $2 exit $? $(( $(date +%s) - T0 )) s"
done
grep -E 'SUMMARY' $out/sanitizer.log
timeout 100 $gpu/gda_ft_gpu_chan -s warp_fault -b 4 -w 2 -D 1000 -i 1000 -m host -r 20 > $out/warp_fault_1000us.log 2>&1
echo "warp_fault 1 ms exit $? $(( $(date +%s) - T0 )) s"; grep -E 'interruption \(port|passed' $out/warp_fault_1000us.log | tail -3
