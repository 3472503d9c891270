#!/bin/bash
# stop 30, call 5: a warp's stamp without reading its slot back (stamp),
# and with the post time read once per batch (clock), against the tree
# before (head), in turns; the GPU checks on the stamp tree
top=$PWD; gpu=$top/.gpu; out=$OUT
export LD_LIBRARY_PATH=$gpu/lib:/usr/local/cuda/lib64 UCX_MODULE_DIR=$gpu/ucx_modules
export PATH=$PATH:/usr/local/cuda/bin
nvidia-smi -L > $out/gpu.txt 2>&1; nproc >> $out/gpu.txt
T0=$(date +%s)
for i in 1 2 3; do
  for v in head stamp clock; do
    b=$gpu/gda_ft_gpu_bench_$v; [ $v = stamp ] && b=$gpu/gda_ft_gpu_bench
    echo "=== $v run $i" >> $out/bench_ab.log
    timeout 120 $b -n 64 >> $out/bench_ab.log 2>&1
    echo "exit $?" >> $out/bench_ab.log
  done
done
echo "bench done $(( $(date +%s) - T0 )) s"
GDA_FT_BUILDDIR=$gpu/rt timeout 280 $gpu/rt/test/gtest-free/gda_ft_tests -v -f 'gpu.*' > $out/runner_gpu.log 2>&1
echo "runner exit $? $(( $(date +%s) - T0 )) s"; grep -E '^\[ (OK|FAIL)|passed' $out/runner_gpu.log | tail -5
for s in "memcheck poster_fault -b 4 -w 1" "memcheck warp_fault -b 1 -w 8" "racecheck poster_fault -b 2 -w 2"; do
  set -- $s
  echo "=== $1 $2" >> $out/sanitizer.log
  timeout 150 compute-sanitizer --tool $1 $gpu/gda_ft_gpu_chan -s $2 $3 $4 $5 $6 -i 400 >> $out/sanitizer.log 2>&1
  echo "$1 $2 exit $? $(( $(date +%s) - T0 )) s"
done
grep -E 'SUMMARY' $out/sanitizer.log
timeout 120 $gpu/gda_ft_gpu_chan -s poster_fault -b 4 -w 1 -D 1000 -i 20000 -m host -r 20 > $out/poster_fault_1000us.log 2>&1
echo "poster_fault 1 ms exit $? $(( $(date +%s) - T0 )) s"; grep -E 'interruption \(port|passed' $out/poster_fault_1000us.log | tail -3
