#!/bin/bash
# stop 33, call 5: the tree with the published word and the look: the
# MoE main job (contrib/gpu-runs.sh moe: under MPS, 2 and 4 ranks, the
# DeepEP shape, failover on against off), the kernel against CPU
# posters, 25 s fault-free at a 1 ms deadline
top=$PWD; gpu=$top/.gpu; out=$OUT
nvidia-smi -L > $out/gpu.txt 2>&1; nproc >> $out/gpu.txt
T0=$(date +%s)
GPU_RUN_LIMIT=100 timeout 400 contrib/gpu-runs.sh $out moe
echo "moe exit $? $(( $(date +%s) - T0 )) s"
export LD_LIBRARY_PATH=$gpu/lib:/usr/local/cuda/lib64 UCX_MODULE_DIR=$gpu/ucx_modules
timeout 100 $gpu/gda_ft_gpu_vs_cpu > $out/gpu_vs_cpu.log 2>&1
echo "vs_cpu exit $? $(( $(date +%s) - T0 )) s"; tail -4 $out/gpu_vs_cpu.log
timeout 60 $gpu/gda_ft_gpu_chan -s steady -b 4 -w 2 -D 1000 -T 25 -i 2000000 -m host > $out/steady_1000us.log 2>&1
echo "steady 1 ms exit $? $(( $(date +%s) - T0 )) s"; grep -E 'deadline,|longest|passed|engine:' $out/steady_1000us.log | tail -6
grep -hE "RESULT|PASS|FAIL|interruption" $out/moe*.log | head -20
ls $out
