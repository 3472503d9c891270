#!/bin/bash
# stop 32, call 7: the MoE main job on the tree as committed
# (contrib/gpu-runs.sh moe: under MPS, 2 and 4 ranks, the DeepEP shape,
# failover on against off)
top=$PWD; out=$OUT
nvidia-smi -L > $out/gpu.txt 2>&1; nproc >> $out/gpu.txt
GPU_RUN_LIMIT=100 timeout 420 contrib/gpu-runs.sh $out moe
ls $out
