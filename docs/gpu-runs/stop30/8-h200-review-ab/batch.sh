#!/bin/bash
# stop 30, call 8: the review's refactor in turns: reserve_as in
# reserve_wait's loop (C), the memo tried before the loop (A), the tree
# before the refactor (B)
gpu=$PWD/.gpu; out=$OUT
export LD_LIBRARY_PATH=$gpu/lib:/usr/local/cuda/lib64 UCX_MODULE_DIR=$gpu/ucx_modules
nvidia-smi -L > $out/gpu.txt 2>&1
for i in 1 2; do for v in C A B; do
  b=$gpu/gda_ft_gpu_bench_$v; [ $v = C ] && b=$gpu/gda_ft_gpu_bench
  echo "=== $v run $i" >> $out/bench.log
  timeout 100 $b -n 64 >> $out/bench.log 2>&1
  echo "== $v $i: $(grep -E '  1  poster' $out/bench.log | tail -3 | awk '{print $(NF-2)}' | tr '\n' ' ')"
done; done
