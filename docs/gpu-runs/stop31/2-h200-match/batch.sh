#!/bin/bash
# stop 31, call 2: the warp prefix's __match_all_sync against a shuffle
# and a vote (A: tree, B: shuffle), in turns; instructions a batch
# executes (ncu), the bench kernel's SASS
top=$PWD; gpu=$top/.gpu; out=$OUT
export LD_LIBRARY_PATH=$gpu/lib:/usr/local/cuda/lib64 UCX_MODULE_DIR=$gpu/ucx_modules
export PATH=$PATH:/usr/local/cuda/bin
nvidia-smi -L > $out/gpu.txt 2>&1; nproc >> $out/gpu.txt
for i in 1 2 3; do
  for v in A B; do
    b=$gpu/gda_ft_gpu_bench; [ $v = B ] && b=$gpu/gda_ft_gpu_bench_B
    timeout 120 $b -n 64 > $out/bench_${v}_$i.log 2>&1
    echo "== $v $i exit $?"
    grep -E ' 1  (ft_on|poster|floor)|per batch' $out/bench_${v}_$i.log
  done
done > $out/ab.log
cat $out/ab.log
which ncu || ls /usr/local/cuda/bin | grep -i ncu
NCU=$(which ncu || echo /usr/local/cuda/bin/ncu)
timeout 200 $NCU --metrics smsp__inst_executed.sum,sm__cycles_elapsed.max,smsp__inst_executed_op_global_st.sum,smsp__inst_executed_op_global_ld.sum -k regex:bench_post -c 4 $gpu/gda_ft_gpu_bench -n 64 > $out/ncu.log 2>&1
echo "ncu exit $?"; grep -E 'bench_post|inst_executed|cycles' $out/ncu.log | head -40
cuobjdump -sass -fun bench_post_kernel $gpu/gda_ft_gpu_bench 2>/dev/null | gzip > $out/bench_sass.txt.gz
ls -la $out
