#!/bin/bash
# stop 33, call 2: the bench's step marks out of the measured kernel (F:
# no marks; E: as before), and a whole warp's post with its mask known
# (G), in turns, one warp; instructions of each
top=$PWD; gpu=$top/.gpu; out=$OUT
export LD_LIBRARY_PATH=$gpu/lib:/usr/local/cuda/lib64 UCX_MODULE_DIR=$gpu/ucx_modules
export PATH=$PATH:/usr/local/cuda/bin
nvidia-smi -L > $out/gpu.txt 2>&1; nproc >> $out/gpu.txt
T0=$(date +%s)
for i in 1 2 3; do
  for v in E F G; do
    timeout 60 $gpu/gda_ft_gpu_bench_$v -n 64 -1 > $out/one_${v}_$i.log 2>&1
    echo "== one warp $v $i exit $? $(( $(date +%s) - T0 )) s"
  done
done
for v in F G; do
  timeout 120 ncu --metrics smsp__inst_executed.sum -k regex:bench_post --launch-count 7 \
    $gpu/gda_ft_gpu_bench_$v -n 256 -1 > $out/ncu_inst_$v.log 2>&1
  echo "ncu $v exit $? $(( $(date +%s) - T0 )) s"; grep -E 'inst_executed' $out/ncu_inst_$v.log | tr '\n' ' '; echo
done
timeout 60 $gpu/gda_ft_gpu_bench_steps -n 64 > $out/steps.log 2>&1; echo "steps exit $?"; cat $out/steps.log | tail -4
which cuobjdump nvdisasm
