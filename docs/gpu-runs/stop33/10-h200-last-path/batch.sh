#!/bin/bash
# stop 33, call 10: the port failures that lost both paths (calls 8, 9): the
# tree before this stop (C, 8d9d04b) and with the last path sat out (J)
# in turns: 1 ms
# with the words in GPU memory (5 failures a run), 200 us (20 a run)
top=$PWD; gpu=$top/.gpu; out=$OUT
export LD_LIBRARY_PATH=$gpu/lib:/usr/local/cuda/lib64 UCX_MODULE_DIR=$gpu/ucx_modules
nvidia-smi -L > $out/gpu.txt 2>&1; nproc >> $out/gpu.txt
T0=$(date +%s)
for i in 1 2 3; do
  for v in C J; do
    b=$gpu/gda_ft_gpu_chan_C; [ $v = J ] && b=$gpu/gda_ft_gpu_chan
    echo "### $v $i" >> $out/gpu_words.log
    timeout 60 $b -s warp_fault -b 4 -w 2 -D 1000 -i 1000 -r 5 >> $out/gpu_words.log 2>&1
    echo "gpu words $v $i exit $? $(( $(date +%s) - T0 )) s: $(grep -E '[0-9]+ passed' $out/gpu_words.log | tail -1)"
  done
done
for v in C J; do
  b=$gpu/gda_ft_gpu_chan_C; [ $v = J ] && b=$gpu/gda_ft_gpu_chan
  echo "### $v" >> $out/wf200.log
  timeout 120 $b -s warp_fault -b 4 -w 2 -D 200 -i 1000 -m host -r 20 >> $out/wf200.log 2>&1
  echo "200us $v exit $? $(( $(date +%s) - T0 )) s: $(grep -E '[0-9]+ passed' $out/wf200.log | tail -1)"
done
# J: both ports down still ends in NO_PATH within two deadlines; the
# runner's GPU tests
timeout 60 $gpu/gda_ft_gpu_chan -s both_down -b 4 -w 2 -D 1000 -m host > $out/both_down.log 2>&1
echo "both_down exit $? $(( $(date +%s) - T0 )) s"; grep -E "passed|NO_PATH|no path" $out/both_down.log | tail -4
GDA_FT_BUILDDIR=$gpu/rt timeout 200 $gpu/rt/test/gtest-free/gda_ft_tests -v -f 'gpu.*' > $out/runner_gpu.log 2>&1
echo "runner exit $? $(( $(date +%s) - T0 )) s"; grep -E 'passed' $out/runner_gpu.log | tail -1
