#!/bin/bash
# stop 30, call 7: after the review's refactor (gda_ft_chan_reserve_as):
# the runner's GPU tests, memcheck on posters, the bench once
top=$PWD; gpu=$top/.gpu; out=$OUT
export LD_LIBRARY_PATH=$gpu/lib:/usr/local/cuda/lib64 UCX_MODULE_DIR=$gpu/ucx_modules
export PATH=$PATH:/usr/local/cuda/bin
nvidia-smi -L > $out/gpu.txt 2>&1
GDA_FT_BUILDDIR=$gpu/rt timeout 280 $gpu/rt/test/gtest-free/gda_ft_tests -v -f 'gpu.*' > $out/runner_gpu.log 2>&1
echo "runner exit $?"; tail -1 $out/runner_gpu.log
timeout 150 compute-sanitizer --tool memcheck $gpu/gda_ft_gpu_chan -s poster_fault -b 4 -w 1 -i 400 > $out/memcheck_poster_fault.log 2>&1
echo "memcheck exit $?"; grep SUMMARY $out/memcheck_poster_fault.log
timeout 120 $gpu/gda_ft_gpu_bench -n 64 > $out/post_rate_bench.log 2>&1
echo "bench exit $?"; grep -E '  1  |  16  ' $out/post_rate_bench.log | grep -E 'ft_on |poster|floor'
