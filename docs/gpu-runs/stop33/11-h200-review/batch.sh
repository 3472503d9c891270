#!/bin/bash
# stop 33, call 11: the review's refactor (K): the runner's GPU tests, one
# warp's rates against I in turns, 20 port failures at 1 ms
top=$PWD; gpu=$top/.gpu; out=$OUT
export LD_LIBRARY_PATH=$gpu/lib:/usr/local/cuda/lib64 UCX_MODULE_DIR=$gpu/ucx_modules
nvidia-smi -L > $out/gpu.txt 2>&1; nproc >> $out/gpu.txt
T0=$(date +%s)
GDA_FT_BUILDDIR=$gpu/rt timeout 200 $gpu/rt/test/gtest-free/gda_ft_tests -v -f 'gpu.*' > $out/runner_gpu.log 2>&1
echo "runner exit $? $(( $(date +%s) - T0 )) s"; grep -E 'passed' $out/runner_gpu.log | tail -1
for i in 1 2; do for v in I K; do echo "### $v $i" >> $out/one.log; timeout 60 $gpu/gda_ft_gpu_bench_$v -n 64 -1 >> $out/one.log 2>&1; done; done
timeout 100 $gpu/gda_ft_gpu_chan -s warp_fault -b 4 -w 2 -D 1000 -i 1000 -m host -r 20 > $out/warp_fault_1000us.log 2>&1
echo "warp_fault exit $?"; grep -E 'interruption \(port|passed' $out/warp_fault_1000us.log | tail -2
