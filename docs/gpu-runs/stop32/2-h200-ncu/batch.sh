#!/bin/bash
# stop 32, call 2: where the short path's one-warp poster batch still
# waits (ncu source counters, SASS), then its checks: the runner's GPU
# tests, memcheck and racecheck, port failures at 1 ms
top=$PWD; gpu=$top/.gpu; out=$OUT
export LD_LIBRARY_PATH=$gpu/lib:/usr/local/cuda/lib64 UCX_MODULE_DIR=$gpu/ucx_modules
export PATH=$PATH:/usr/local/cuda/bin
nvidia-smi -L > $out/gpu.txt 2>&1; nproc >> $out/gpu.txt
T0=$(date +%s)
timeout 200 ncu --replay-mode application -k regex:bench_post --launch-skip 1 --launch-count 1 \
  --section SourceCounters --section WarpStateStats -o /tmp/poster \
  $gpu/gda_ft_gpu_bench_B -n 256 -1 > /tmp/ncu_poster.log 2>&1
echo "ncu exit $? $(( $(date +%s) - T0 )) s"; tail -2 /tmp/ncu_poster.log
ncu -i /tmp/poster.ncu-rep --page source --print-source sass --csv 2>&1 | gzip > $out/poster_sass.csv.gz
ncu -i /tmp/poster.ncu-rep --page details > $out/poster_details.txt 2>&1
GDA_FT_BUILDDIR=$gpu/rt timeout 280 $gpu/rt/test/gtest-free/gda_ft_tests -v -f 'gpu.*' > $out/runner_gpu.log 2>&1
echo "runner exit $? $(( $(date +%s) - T0 )) s"; grep -E '^\[ (OK|FAIL)|passed' $out/runner_gpu.log | tail -5
for s in "memcheck poster_fault -b 4 -w 1" "memcheck warp_fault -b 1 -w 8" "racecheck poster_fault -b 2 -w 2" "racecheck thread_fault -b 1 -w 4"; do
  set -- $s
  echo "=== $1 $2" >> $out/sanitizer.log
  timeout 150 compute-sanitizer --tool $1 $gpu/gda_ft_gpu_chan -s $2 $3 $4 $5 $6 -i 400 >> $out/sanitizer.log 2>&1
  echo "$1 $2 exit $? $(( $(date +%s) - T0 )) s"
done
grep -E 'SUMMARY' $out/sanitizer.log
timeout 150 $gpu/gda_ft_gpu_chan -s warp_fault -b 4 -w 2 -D 1000 -i 1000 -m host -r 20 > $out/warp_fault_1000us.log 2>&1
echo "warp_fault 1 ms exit $? $(( $(date +%s) - T0 )) s"; grep -E 'interruption \(port|passed' $out/warp_fault_1000us.log | tail -3
