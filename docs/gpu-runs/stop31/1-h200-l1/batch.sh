#!/bin/bash
# stop 31, call 1: does a channel's unchanging field stay in L1 after
# what a post does to its line; the post-rate bench on the tree
top=$PWD; gpu=$top/.gpu; out=$OUT
export LD_LIBRARY_PATH=$gpu/lib:/usr/local/cuda/lib64 UCX_MODULE_DIR=$gpu/ucx_modules
export PATH=$PATH:/usr/local/cuda/bin
nvidia-smi -L > $out/gpu.txt 2>&1; nproc >> $out/gpu.txt
for i in 1 2; do $gpu/gda_ft_gpu_fences > $out/fences_$i.log 2>&1; done
cat $out/fences_2.log
timeout 120 $gpu/gda_ft_gpu_bench -n 64 > $out/bench.log 2>&1
grep -E ' 1  | 16  |steps|per batch' $out/bench.log
