#!/bin/bash
# stop 31, call 8: the tree as committed, fault-free for 60 s at a 1 ms
# deadline (false switches), 8 warps on 4 channels, words host-mapped
top=$PWD; gpu=$top/.gpu; out=$OUT
export LD_LIBRARY_PATH=$gpu/lib:/usr/local/cuda/lib64 UCX_MODULE_DIR=$gpu/ucx_modules
export PATH=$PATH:/usr/local/cuda/bin
nvidia-smi -L > $out/gpu.txt 2>&1
T0=$(date +%s)
timeout 90 $gpu/gda_ft_gpu_chan -s steady -b 4 -w 2 -D 1000 -T 60 -i 2000000 -m host > $out/steady_1000us.log 2>&1
echo "steady 1 ms exit $? $(( $(date +%s) - T0 )) s"; grep -E 'deadline,|longest|passed|engine:' $out/steady_1000us.log | tail -6
