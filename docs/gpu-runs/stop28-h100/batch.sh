#!/bin/bash
# stop 28, call 1: the tree after the re-arm back-off, the resting guardian
# of failed endpoints and the replay clock (host code the GPU runs use):
# the runner's GPU tests, the MoE job, the short deadlines
top=$PWD; gpu=$top/.gpu; out=$OUT
export LD_LIBRARY_PATH=$gpu/lib:/usr/local/cuda/lib64 UCX_MODULE_DIR=$gpu/ucx_modules
export PATH=$PATH:/usr/local/cuda/bin
nvidia-smi -L > $out/gpu.txt 2>&1; nproc >> $out/gpu.txt
t0=$(date +%s)
GDA_FT_BUILDDIR=$gpu/rt timeout 200 $gpu/rt/test/gtest-free/gda_ft_tests -v -f 'gpu.*' > $out/runner_gpu.log 2>&1
echo "runner exit $? $(( $(date +%s) - t0 )) s"; tail -4 $out/runner_gpu.log
for p in ${PARTS:-moe device}; do
  t0=$(date +%s)
  GPU_RUN_LIMIT=150 contrib/gpu-runs.sh $out $p > $out/part_$p.txt 2>&1
  echo "== $p $(( $(date +%s) - t0 )) s"; tail -16 $out/part_$p.txt
done
rm -f $out/*.csv $out/*.png
