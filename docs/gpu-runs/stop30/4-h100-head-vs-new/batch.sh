#!/bin/bash
# stop 30, call 4: port failures at 1 ms and 30 s fault-free, the tree
# before this stop (head) against this one (new), in turns on one machine
top=$PWD; gpu=$top/.gpu; out=$OUT
export LD_LIBRARY_PATH=$gpu/lib:/usr/local/cuda/lib64 UCX_MODULE_DIR=$gpu/ucx_modules
export PATH=$PATH:/usr/local/cuda/bin
nvidia-smi -L > $out/gpu.txt 2>&1; nproc >> $out/gpu.txt
T0=$(date +%s)
for i in 1 2; do
  for v in head new; do
    b=$gpu/gda_ft_gpu_chan; [ $v = head ] && b=$gpu/gda_ft_gpu_chan_head
    timeout 100 $b -s warp_fault -b 4 -w 2 -D 1000 -i 1000 -m host -r 10 >> $out/warp_fault_1000us_$v.log 2>&1
    echo "warp_fault $v $i exit $? $(( $(date +%s) - T0 )) s: $(grep -E 'passed' $out/warp_fault_1000us_$v.log | tail -1) $(grep -c 'lost both' $out/warp_fault_1000us_$v.log)"
  done
done
for v in head new; do
  b=$gpu/gda_ft_gpu_chan; [ $v = head ] && b=$gpu/gda_ft_gpu_chan_head
  timeout 60 $b -s steady -b 4 -w 2 -D 1000 -T 30 -i 2000000 -m host > $out/steady_1000us_$v.log 2>&1
  echo "steady $v exit $? $(( $(date +%s) - T0 )) s"; grep -E 'deadline,|engine:' $out/steady_1000us_$v.log | cut -c1-200
done
for v in head new; do grep -h 'interruption (port' $out/warp_fault_1000us_$v.log; done
