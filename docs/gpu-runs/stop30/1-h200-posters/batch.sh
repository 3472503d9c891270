#!/bin/bash
# stop 30, call 1: posters (gda_ft_dev_poster_t): the runner's GPU tests
# (the poster scenario with them), the post-rate bench twice, the poster
# path under sanitizers, port failures at 1 ms through posters
top=$PWD; gpu=$top/.gpu; out=$OUT
export LD_LIBRARY_PATH=$gpu/lib:/usr/local/cuda/lib64 UCX_MODULE_DIR=$gpu/ucx_modules
export PATH=$PATH:/usr/local/cuda/bin
nvidia-smi -L > $out/gpu.txt 2>&1; nproc >> $out/gpu.txt
T0=$(date +%s)
for i in 1 2; do
  timeout 120 $gpu/gda_ft_gpu_bench -n 64 > $out/post_rate_bench_$i.log 2>&1
  echo "bench $i exit $? $(( $(date +%s) - T0 )) s"
done
grep -E 'floor|poster|rate:' $out/post_rate_bench_1.log | head -60
tail -5 $out/post_rate_bench_1.log
GDA_FT_BUILDDIR=$gpu/rt timeout 280 $gpu/rt/test/gtest-free/gda_ft_tests -v -f 'gpu.*' > $out/runner_gpu.log 2>&1
echo "runner exit $? $(( $(date +%s) - T0 )) s"; grep -E '^\[|passed' $out/runner_gpu.log | tail -8
timeout 150 compute-sanitizer --tool memcheck $gpu/gda_ft_gpu_chan -s poster_fault -b 4 -w 1 -i 400 > $out/memcheck_poster_fault.log 2>&1
echo "memcheck exit $? $(( $(date +%s) - T0 )) s"; tail -3 $out/memcheck_poster_fault.log
timeout 150 compute-sanitizer --tool racecheck $gpu/gda_ft_gpu_chan -s poster_fault -b 2 -w 2 -i 400 > $out/racecheck_poster_fault.log 2>&1
echo "racecheck exit $? $(( $(date +%s) - T0 )) s"; tail -3 $out/racecheck_poster_fault.log
timeout 120 $gpu/gda_ft_gpu_chan -s poster_fault -b 4 -w 1 -D 1000 -i 20000 -m host -r 20 > $out/poster_fault_1000us.log 2>&1
echo "poster_fault 1 ms exit $? $(( $(date +%s) - T0 )) s"; tail -6 $out/poster_fault_1000us.log
