#!/bin/bash
# stop 30, call 2: the doorbell's fence, sc (fence.sc.sys, which also
# invalidates L1) against release (fence.release.sys), in turns, both with
# the floor's inline WQE written as the channel writes it; the SASS of
# the fences
top=$PWD; gpu=$top/.gpu; out=$OUT
export LD_LIBRARY_PATH=$gpu/lib:/usr/local/cuda/lib64 UCX_MODULE_DIR=$gpu/ucx_modules
export PATH=$PATH:/usr/local/cuda/bin
nvidia-smi -L > $out/gpu.txt 2>&1
cuobjdump -sass $gpu/fz.cubin > $out/fences_sass.txt 2>&1
grep -E 'Function|MEMBAR|CCTL|FENCE|ST\.|ERRBAR' $out/fences_sass.txt
for i in 1 2 3; do
  for v in sc rel; do
    timeout 120 $gpu/gda_ft_gpu_bench_$v -n 64 > $out/bench_${v}_$i.log 2>&1
    echo "== $v $i exit $?"
    grep -E ' 1  |steps|ns per batch' $out/bench_${v}_$i.log | grep -v 'rate:' | head -20
    grep -E ' 16  ' $out/bench_${v}_$i.log | grep -E 'ft_on |poster|floor'
  done
done
