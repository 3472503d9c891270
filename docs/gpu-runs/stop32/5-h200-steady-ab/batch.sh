#!/bin/bash
# stop 32, call 5: fault-free at a 1 ms deadline, 25 s each, the tree
# before this stop (A) and after (C) in turns on one machine: the
# switches and the engine's gaps (RUNS, SECS: which runs, how long)
top=$PWD; gpu=$top/.gpu; out=$OUT
export LD_LIBRARY_PATH=$gpu/lib:/usr/local/cuda/lib64 UCX_MODULE_DIR=$gpu/ucx_modules
nvidia-smi -L > $out/gpu.txt 2>&1; nproc >> $out/gpu.txt
for i in ${RUNS:-1 2}; do
  for v in A C; do
    b=$gpu/gda_ft_gpu_chan; [ $v = A ] && b=$gpu/gda_ft_gpu_chan_A
    timeout 60 $b -s steady -b 4 -w 2 -D 1000 -T ${SECS:-25} -i 2000000 -m host > $out/steady_${v}_$i.log 2>&1
    echo "== $v $i exit $?"; grep -E '^engine|steady: 2|switches|passed' $out/steady_${v}_$i.log | cut -c1-200
  done
done
