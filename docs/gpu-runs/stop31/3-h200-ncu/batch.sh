#!/bin/bash
# stop 31, call 3: where a lone warp's poster batch spends its cycles:
# ncu's per-instruction counts and stall samples (SASS) of the 1-warp
# inline poster launch and of the floor
top=$PWD; gpu=$top/.gpu; out=$OUT
export LD_LIBRARY_PATH=$gpu/lib:/usr/local/cuda/lib64 UCX_MODULE_DIR=$gpu/ucx_modules
export PATH=$PATH:/usr/local/cuda/bin
nvidia-smi -L > $out/gpu.txt 2>&1
for m in poster:1 floor:3; do
  n=${m%%:*}; skip=${m##*:}
  timeout 240 ncu --replay-mode application -k regex:bench_post --launch-skip $skip --launch-count 1 \
    --section SourceCounters --section WarpStateStats --section LaunchStats -o /tmp/$n \
    $gpu/gda_ft_gpu_bench -n 256 > /tmp/ncu_$n.log 2>&1
  echo "$n ncu exit $?"; tail -3 /tmp/ncu_$n.log
  ncu -i /tmp/$n.ncu-rep --page source --print-source sass --csv 2>&1 | gzip > $out/${n}_sass.csv.gz
  ncu -i /tmp/$n.ncu-rep --page details 2>&1 > $out/${n}_details.txt
done
ls -la $out; zcat $out/poster_sass.csv.gz | head -3
