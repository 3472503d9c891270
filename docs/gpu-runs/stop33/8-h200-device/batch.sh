#!/bin/bash
# stop 33, call 8: the tree as committed through the failover
# measurements (contrib/gpu-runs.sh device): 60 s fault-free and 20 port
# failures at 1 ms and 200 us deadlines, 5 with the words in GPU memory
top=$PWD; out=$OUT
nvidia-smi -L > $out/gpu.txt 2>&1; nproc >> $out/gpu.txt
T0=$(date +%s)
GPU_RUN_LIMIT=100 timeout 560 contrib/gpu-runs.sh $out device > $out/summary.txt 2>&1
echo "device exit $? $(( $(date +%s) - T0 )) s"
cat $out/summary.txt | grep -vE "^ok " | tail -40
