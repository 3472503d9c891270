#!/bin/bash
# stop 33, call 6: fault-free at a 1 ms deadline, 25 s each, the tree
# before this stop (C, 8d9d04b) and the tree as committed (I) in turns on
# one machine: do the faster plain posts hand the engine larger bursts?
top=$PWD; gpu=$top/.gpu; out=$OUT
export LD_LIBRARY_PATH=$gpu/lib:/usr/local/cuda/lib64 UCX_MODULE_DIR=$gpu/ucx_modules
nvidia-smi -L > $out/gpu.txt 2>&1; nproc >> $out/gpu.txt
T0=$(date +%s)
for i in 1 2 3 4; do
  for v in C I; do
    b=$gpu/gda_ft_gpu_chan_C; [ $v = I ] && b=$gpu/gda_ft_gpu_chan
    echo "### $v $i" >> $out/steady.log
    timeout 50 $b -s steady -b 4 -w 2 -D 1000 -T 25 -i 2000000 -m host >> $out/steady.log 2>&1
    echo "$v $i exit $? $(( $(date +%s) - T0 )) s"
  done
done
grep -E '^###|steady: |longest' $out/steady.log | grep -E '###|steady:|engine' | sed 's/gaps <16us.*longest/longest/'
