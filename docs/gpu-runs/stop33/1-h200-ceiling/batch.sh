#!/bin/bash
# stop 33, call 1: what one round trip a batch and a replay log cost a
# bare loop (bare_rt, bare_log: the ceiling of any shared, logged ring),
# beside the datapath; the instructions of each mode's one-warp batch;
# the poster's SASS with its stall samples, kept this time
top=$PWD; gpu=$top/.gpu; out=$OUT
export LD_LIBRARY_PATH=$gpu/lib:/usr/local/cuda/lib64 UCX_MODULE_DIR=$gpu/ucx_modules
export PATH=$PATH:/usr/local/cuda/bin
nvidia-smi -L > $out/gpu.txt 2>&1; nproc >> $out/gpu.txt
T0=$(date +%s)
for i in 1 2; do
  timeout 60 $gpu/gda_ft_gpu_bench_E -n 64 -1 > $out/one_E_$i.log 2>&1
  echo "== one warp E $i exit $? $(( $(date +%s) - T0 )) s"
done
timeout 120 $gpu/gda_ft_gpu_bench_E -n 64 > $out/bench_E.log 2>&1
echo "== E exit $? $(( $(date +%s) - T0 )) s"
grep -h -E ' 1 +(32|1|4)  ' $out/one_E_1.log | head -50
timeout 120 ncu --metrics smsp__inst_executed.sum,smsp__cycles_active.avg -k regex:bench_post --launch-count 7 \
  $gpu/gda_ft_gpu_bench_E -n 256 -1 > $out/ncu_inst.log 2>&1
echo "ncu inst exit $? $(( $(date +%s) - T0 )) s"; grep -E 'inst_executed|cycles_active' $out/ncu_inst.log
timeout 200 ncu --replay-mode application -k regex:bench_post --launch-skip 1 --launch-count 1 \
  --section SourceCounters --section WarpStateStats -o /tmp/poster \
  $gpu/gda_ft_gpu_bench_E -n 256 -1 > /tmp/ncu_poster.log 2>&1
echo "ncu src exit $? $(( $(date +%s) - T0 )) s"; tail -2 /tmp/ncu_poster.log
ncu -i /tmp/poster.ncu-rep --page source --print-source sass --csv 2>&1 | gzip > $out/poster_sass.csv.gz
ls -la $out
