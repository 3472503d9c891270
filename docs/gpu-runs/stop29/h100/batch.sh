#!/bin/bash
# stop 29, call 1: the soft HCA's link check on the kernel's notices (and
# the control socket asked every 100 us) against the tree before it (old/),
# fault-free 60 s at 1 ms and 200 us, in turns; the runner's GPU tests; the
# port failures at both deadlines on the new tree
top=$PWD; gpu=$top/.gpu; out=$OUT
export LD_LIBRARY_PATH=$gpu/lib:/usr/local/cuda/lib64 UCX_MODULE_DIR=$gpu/ucx_modules
export PATH=$PATH:/usr/local/cuda/bin
nvidia-smi -L > $out/gpu.txt 2>&1; nproc >> $out/gpu.txt
T0=$(date +%s)
t0=$(date +%s)
GDA_FT_BUILDDIR=$gpu/rt timeout 200 $gpu/rt/test/gtest-free/gda_ft_tests -v -f 'gpu.*' > $out/runner_gpu.log 2>&1
echo "runner exit $? $(( $(date +%s) - t0 )) s"; tail -2 $out/runner_gpu.log
load="-b 4 -w 2"
for d in ${DEADLINES:-1000 200}; do
  for v in new old; do
    b=$gpu/gda_ft_gpu_chan; [ $v = old ] && b=$gpu/old/gda_ft_gpu_chan
    timeout 90 $b -s steady $load -D $d -T ${SECS:-60} -i 2000000 -m host > $out/steady_${d}us_$v.log 2>&1
    echo "steady $d us $v exit $?: $(grep -h 'engine:' $out/steady_${d}us_$v.log | cut -c1-60) | $(grep -h 'deadline,' $out/steady_${d}us_$v.log)"
    grep -h "longest\|in doubt" $out/steady_${d}us_$v.log | cut -c1-200
  done
done
echo "A/B done $(( $(date +%s) - T0 )) s"
if [ -n "${FAULTS:-1}" ]; then
  for d in 1000 200; do
    timeout 150 $gpu/gda_ft_gpu_chan -s warp_fault $load -D $d -i 1000 -m host -r 20 > $out/warp_fault_${d}us.log 2>&1
    echo "warp_fault $d exit $? $(( $(date +%s) - T0 )) s"; tail -6 $out/warp_fault_${d}us.log
  done
fi
