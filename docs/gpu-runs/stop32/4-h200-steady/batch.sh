#!/bin/bash
# stop 32, call 4: the tree as committed: kernel vs CPU posters, and 60 s
# fault-free at a 1 ms deadline
top=$PWD; gpu=$top/.gpu; out=$OUT
export LD_LIBRARY_PATH=$gpu/lib:/usr/local/cuda/lib64 UCX_MODULE_DIR=$gpu/ucx_modules
export PATH=$PATH:/usr/local/cuda/bin
nvidia-smi -L > $out/gpu.txt 2>&1; nproc >> $out/gpu.txt
T0=$(date +%s)
timeout 150 $gpu/gda_ft_gpu_vs_cpu > $out/gpu_vs_cpu.log 2>&1
echo "vs_cpu exit $? $(( $(date +%s) - T0 )) s"; tail -12 $out/gpu_vs_cpu.log
timeout 90 $gpu/gda_ft_gpu_chan -s steady -b 4 -w 2 -D 1000 -T 60 -i 2000000 -m host > $out/steady_1000us.log 2>&1
echo "steady 1 ms exit $? $(( $(date +%s) - T0 )) s"; grep -E 'deadline,|longest|passed|engine:' $out/steady_1000us.log | tail -6
