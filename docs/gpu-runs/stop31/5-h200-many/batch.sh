#!/bin/bash
# stop 31, call 5: the post-rate bench with the bare floor (a ring of the
# warp's own that no QP reads) and the many-warp rows (64 channels: one
# warp each, then 8 warps per SM), twice
top=$PWD; gpu=$top/.gpu; out=$OUT
export LD_LIBRARY_PATH=$gpu/lib:/usr/local/cuda/lib64 UCX_MODULE_DIR=$gpu/ucx_modules
export PATH=$PATH:/usr/local/cuda/bin
nvidia-smi -L > $out/gpu.txt 2>&1
for i in 1 2; do
  timeout 250 $gpu/gda_ft_gpu_bench -n 64 > $out/bench_$i.log 2>&1
  echo "== bench $i exit $?"
done
cat $out/bench_1.log
grep -vE 'rate:|steps|per batch' $out/bench_2.log | tail -40
