#!/bin/bash
# stop 32, call 1: the post's short path (B: shapes once, geometry in the
# memo, the path read during the CAS, slots written whole in the turn,
# failover code out of line) against the tree (A), the same bench source,
# in turns; then ncu instruction counts of the one-warp launches of each
top=$PWD; gpu=$top/.gpu; out=$OUT
export LD_LIBRARY_PATH=$gpu/lib:/usr/local/cuda/lib64 UCX_MODULE_DIR=$gpu/ucx_modules
export PATH=$PATH:/usr/local/cuda/bin
nvidia-smi -L > $out/gpu.txt 2>&1; nproc >> $out/gpu.txt
T0=$(date +%s)
for i in 1 2; do
  for v in A B; do
    b=$gpu/gda_ft_gpu_bench_$v
    timeout 150 $b -n 64 > $out/bench_${v}_$i.log 2>&1
    echo "== $v $i exit $? $(( $(date +%s) - T0 )) s"
    grep -E '(ft_on|poster|floor|bare) ' $out/bench_${v}_$i.log | grep -E ' (1|16|64|1056) +(1|4|32)  '
    grep -E 'FAIL|^poster ' $out/bench_${v}_$i.log
  done
done
for v in A B; do
  timeout 100 ncu --metrics smsp__inst_executed.sum,sm__cycles_elapsed.max -k regex:bench_post -c 5 $gpu/gda_ft_gpu_bench_$v -n 64 -1 > $out/ncu_$v.log 2>&1
  echo "ncu $v exit $? $(( $(date +%s) - T0 )) s"
  grep -E 'bench_post|inst_executed|cycles' $out/ncu_$v.log | head -20
done
