#!/bin/bash
# stop 29, calls 3 and 4: where the engine's long gaps go: the CPU time
# and context switches of the engine thread per gap between two passes
# (UCX_GDA_FT_SOFT_PASS_CPU_TIME=y), fault-free at 1 ms (60 s) and
# 200 us (30 s)
gpu=$PWD/.gpu
export LD_LIBRARY_PATH=$gpu/lib:/usr/local/cuda/lib64 UCX_MODULE_DIR=$gpu/ucx_modules
export UCX_GDA_FT_SOFT_PASS_CPU_TIME=y
for run in "1000 60" "200 30"; do
  set -- $run
  timeout 90 $gpu/gda_ft_gpu_chan -s steady -b 4 -w 2 -D $1 -T $2 -i 2000000 \
      -m host > $OUT/gaps_${1}us.log 2>&1
  echo "$1 us exit $?"; grep -h "engine:\|deadline," $OUT/gaps_${1}us.log
done
cat /proc/loadavg; grep -h "^cpu " /proc/stat
