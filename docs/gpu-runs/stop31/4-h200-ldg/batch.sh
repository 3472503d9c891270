#!/bin/bash
# stop 31, call 4: a channel's unchanging fields through the read-only
# cache (B) against the tree (A), in turns; the poster scenario with the
# channels in host-mapped memory (B)
top=$PWD; gpu=$top/.gpu; out=$OUT
export LD_LIBRARY_PATH=$gpu/lib:/usr/local/cuda/lib64 UCX_MODULE_DIR=$gpu/ucx_modules
export PATH=$PATH:/usr/local/cuda/bin
nvidia-smi -L > $out/gpu.txt 2>&1
for i in 1 2 3; do
  for v in A B; do
    b=$gpu/gda_ft_gpu_bench; [ $v = B ] && b=$gpu/gda_ft_gpu_bench_B
    timeout 120 $b -n 64 > $out/bench_${v}_$i.log 2>&1
    echo "== $v $i exit $?"
    grep -E ' (1|16)  (ft_on|poster|floor)|per batch' $out/bench_${v}_$i.log
  done
done > $out/ab.log
cat $out/ab.log
timeout 100 $gpu/gda_ft_gpu_chan -s poster_fault -b 4 -w 1 -i 2000 -m host > $out/poster_fault_host.log 2>&1
echo "poster_fault host exit $?"; tail -4 $out/poster_fault_host.log
