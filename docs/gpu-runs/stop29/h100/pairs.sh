#!/bin/bash
# stop 29, call 2: 4 pairs of 30 s fault-free at 1 ms and at 200 us, the
# tree with the link check on the kernel's notices (new) against the tree
# before it (old/), in turns, the first of each pair alternating
gpu=$PWD/.gpu
export LD_LIBRARY_PATH=$gpu/lib:/usr/local/cuda/lib64 UCX_MODULE_DIR=$gpu/ucx_modules
for d in 1000 200; do for i in 1 2 3 4; do
  if [ $((i % 2)) = 1 ]; then order="new old"; else order="old new"; fi
  for v in $order; do
    b=$gpu/gda_ft_gpu_chan; [ $v = old ] && b=$gpu/old/gda_ft_gpu_chan
    timeout 60 $b -s steady -b 4 -w 2 -D $d -T 30 -i 2000000 -m host \
        > $OUT/pair_${d}us_${i}_$v.log 2>&1
    echo "$d us pair $i $v: $(grep -h 'deadline,' $OUT/pair_${d}us_${i}_$v.log | sed 's/.*deadline, //') | $(grep -ho 'housekeeping [0-9.]* ms' $OUT/pair_${d}us_${i}_$v.log) $(grep -ho '<1ms [0-9]* <4ms [0-9]* >=4ms [0-9]*' $OUT/pair_${d}us_${i}_$v.log)"
  done
done; done
