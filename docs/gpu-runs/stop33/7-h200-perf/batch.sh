#!/bin/bash
# stop 33, call 7: gda_ft_perf (UCP, src/ucp_ext) from kernels and from
# CPU threads on the tree as committed (contrib/gpu-runs.sh perf): its
# channels carry the published word now (the GPU runner beside the
# program, as gda_ft_perf looks for it)
top=$PWD; out=$OUT
nvidia-smi -L > $out/gpu.txt 2>&1; nproc >> $out/gpu.txt
T0=$(date +%s)
GPU_RUN_LIMIT=60 timeout 560 contrib/gpu-runs.sh $out perf > $out/summary.txt 2>&1
echo "perf exit $? $(( $(date +%s) - T0 )) s"
cd $out && tar czf perf_logs.tgz perf_*.log && rm perf_*.log
grep -E "===|PASS|FAIL|exit" summary.txt | head -60
