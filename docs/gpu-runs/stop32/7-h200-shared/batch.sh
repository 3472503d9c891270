#!/bin/bash
# stop 32, call 8: the shared reservation's loads in one round (D: the
# ring size and health pointer before the word's acquire, the switch
# hint not waited for) against the tree before this stop (A), in turns:
# the one-warp rows twice, the whole bench once; D's checks
top=$PWD; gpu=$top/.gpu; out=$OUT
export LD_LIBRARY_PATH=$gpu/lib:/usr/local/cuda/lib64 UCX_MODULE_DIR=$gpu/ucx_modules
export PATH=$PATH:/usr/local/cuda/bin
nvidia-smi -L > $out/gpu.txt 2>&1; nproc >> $out/gpu.txt
T0=$(date +%s)
for i in 1 2; do
  for v in A D; do
    timeout 60 $gpu/gda_ft_gpu_bench_$v -n 64 -1 > $out/one_${v}_$i.log 2>&1
    echo "== one warp $v $i exit $? $(( $(date +%s) - T0 )) s"
  done
done
for v in A D; do
  timeout 100 $gpu/gda_ft_gpu_bench_$v -n 64 > $out/bench_${v}.log 2>&1
  echo "== $v exit $? $(( $(date +%s) - T0 )) s"
done
grep -h -E 'ft_on  ' $out/one_*_1.log $out/bench_*.log | head -40
GDA_FT_BUILDDIR=$gpu/rt timeout 100 $gpu/rt/test/gtest-free/gda_ft_tests -v -f 'gpu.*' > $out/runner_gpu.log 2>&1
echo "runner exit $? $(( $(date +%s) - T0 )) s"; grep -E 'passed' $out/runner_gpu.log | tail -1
for s in "memcheck warp_fault -b 1 -w 8" "racecheck poster_fault -b 2 -w 2"; do
  set -- $s
  echo "=== $1 $2" >> $out/sanitizer.log
  timeout 60 compute-sanitizer --tool $1 $gpu/gda_ft_gpu_chan -s $2 $3 $4 $5 $6 -i 400 >> $out/sanitizer.log 2>&1
  echo "$1 $2 exit $? $(( $(date +%s) - T0 )) s"
done
grep -E 'SUMMARY' $out/sanitizer.log
