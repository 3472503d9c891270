#!/bin/bash
#
# The GPU measurements of docs/device-datapath.md, on a GPU machine, from
# binaries built here and carried in .gpu/ (see that document):
#
#   contrib/gpu-runs.sh OUTDIR [device|host|hostpoll|bench|sanitizer]...
#
# device:    kernels through device channels: 60 s fault-free at 1 ms and
#            200 us deadlines (false switches), 20 port failures at each
#            (the interruption), 5 with the words in GPU memory
# host:      the host path (UCP puts and atomics, UCX_TLS=gda_ft) through
#            20 port failures at 1 ms and 200 us deadlines, the guardian at
#            its default interval and at the former 1 ms, interleaved
# hostpoll:  the same at 1 ms with the server progressing every 1 ms (the
#            program's default) and without pause, interleaved
# bench:     device post rate (gda_ft_gpu_bench; one warp's steps from
#            gda_ft_gpu_bench_steps),
#            the fence costs behind it (gda_ft_gpu_fences) and kernel vs
#            CPU posters (gda_ft_gpu_vs_cpu)
# engine:    the soft HCA's engine under the device channels' steady load:
#            loopback against the kernel's UDP side by side, 8 and 2 warps,
#            1 ms and 200 us deadlines, the switches' reasons
# threads:   the soft HCA with one engine thread against one per device
#            (UCX_GDA_FT_SOFT_THREADS), side by side: the device channels'
#            steady load at 1 ms and 200 us, port failures at both; the
#            host path through port failures at 200 us and 1 ms
# sanitizer: compute-sanitizer memcheck and racecheck on small runs
# moe:       the main job (docs/moe.md) under MPS: the DeepEP decoding
#            shape on 132 CTAs, CPU threads, 4 ranks, failover off
# perf:      gda_ft_perf (UCP, src/ucp_ext) from kernels and from CPU
#            threads side by side: put_lat, put_bw at warp level, fadd_lat,
#            with and without a port failure
# targets:   the same gda_ft_perf runs with the peer's channel targets in
#            mapped and in host memory (DEVICE_CHANNEL_TARGETS), in turns,
#            5 pairs each
#
# Debian's UCX 1.13 libraries travel in .gpu/lib; UCX_MODULE_DIR points
# at an empty directory so that UCX 1.13 loads none of the machine's own
# UCX modules.
#
set -u
out=${1:?usage: $0 OUTDIR [device|host|sanitizer]...}
shift
parts=${*:-device host hostpoll bench sanitizer}
top=$(cd "$(dirname "$0")/.." && pwd)
gpu=$top/.gpu
mkdir -p "$out"
export LD_LIBRARY_PATH=$gpu/lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export UCX_MODULE_DIR=$gpu/ucx_modules
export PATH=$PATH:/usr/local/cuda/bin
chan=$gpu/gda_ft_gpu_chan

limit=${GPU_RUN_LIMIT:-150}   # seconds per command

run() {   # LOG COMMAND...: the command's output into LOG, its tail shown
    local log=$out/$1
    shift
    echo "=== $* ($(date +%T))" | tee -a "$log"
    timeout -k 5 "$limit" "$@" >>"$log" 2>&1
    echo "exit $?" >>"$log"
    grep -E -e 'interruption|steady:|passed|FAIL|longest|Final|paths|fault:' \
         -e 'RESULT|engine:' "$log" | tail -8
}

for part in $parts; do
    case $part in
    device)
        # 8 warps on 4 channels: the software HCA's one engine thread then
        # answers well within a deadline of 200 us (with 512 warps it
        # queues for milliseconds: docs/device-datapath.md)
        load="-b 4 -w 2"
        for d in 1000 200; do
            run steady_deadline_${d}us.log $chan -s steady $load -D $d \
                -T 60 -i 2000000 -m host
            run warp_fault_deadline_${d}us.log $chan -s warp_fault $load \
                -D $d -i 1000 -m host -r 20
        done
        run warp_fault_deadline_1000us_gpu_words.log $chan -s warp_fault \
            $load -D 1000 -i 1000 -r 5
        ;;
    host)
        export GDA_FT_BUILD_DIR=$gpu/plugin
        for d in 1ms 200us; do
            for i in $(seq 1 20); do
                for g in auto 1ms; do
                    UCX_TLS=gda_ft,tcp UCX_NET_DEVICES=all \
                    UCX_GDA_FT_DEADLINE=$d UCX_GDA_FT_GUARD_INTERVAL=$g \
                    UCX_GDA_FT_SOFT_CTL_DIR= \
                        "$top/contrib/gda_ft-run.sh" \
                        $gpu/gda_ft_ucp_failover --mode down -n 400 \
                        -f 130 --amo fetch -s 65536 --timeout 30 \
                        >"$out/host_tmp.log" 2>&1
                    echo "deadline $d guard $g exit $? $(grep -h \
                        FAILOVER "$out/host_tmp.log")" \
                        >>"$out/host_failover.log"
                    [ $i -eq 1 ] && cp "$out/host_tmp.log" \
                        "$out/host_run_${d}_$g.log"
                done
            done
        done
        rm -f "$out/host_tmp.log"
        tail -4 "$out/host_failover.log"
        ;;
    hostpoll)
        # the peer's progress cadence: the server pauses 1 ms between two
        # progress calls (the program's default) or not at all
        export GDA_FT_BUILD_DIR=$gpu/plugin
        for i in $(seq 1 20); do
            for p in 0.001 0; do
                UCX_TLS=gda_ft,tcp UCX_NET_DEVICES=all \
                UCX_GDA_FT_DEADLINE=1ms UCX_GDA_FT_SOFT_CTL_DIR= \
                    "$top/contrib/gda_ft-run.sh" \
                    $gpu/gda_ft_ucp_failover --mode down -n 400 -f 130 \
                    --amo fetch -s 65536 --timeout 30 --poll-pause $p \
                    >"$out/host_tmp.log" 2>&1
                echo "deadline 1ms poll-pause $p exit $? $(grep -h \
                    FAILOVER "$out/host_tmp.log")" \
                    >>"$out/host_poll_pause.log"
            done
        done
        rm -f "$out/host_tmp.log"
        tail -4 "$out/host_poll_pause.log"
        ;;
    bench)
        run post_rate_bench.log $gpu/gda_ft_gpu_bench -n 64
        run post_steps.log $gpu/gda_ft_gpu_bench_steps -n 64
        run fences.log $gpu/gda_ft_gpu_fences
        run gpu_vs_cpu.log $gpu/gda_ft_gpu_vs_cpu
        ;;
    perf)
        # both sides in their own process on the one GPU; the test's
        # options travel from the client to the server
        pair() {   # LOG SERVER_ARGS CLIENT_ARGS...
            local log=$1 sargs=$2
            shift 2
            GDA_FT_PERF=$gpu/gda_ft_perf GDA_FT_PERF_SERVER_ARGS=$sargs \
                run "$log" "$top/contrib/gda_ft-perf-local.sh" "$@"
        }
        for mode in gpu cpu; do
            pair perf_put_lat_$mode.log --$mode --$mode -t put_lat -n 2000
            pair perf_put_bw_warp_$mode.log --cpu --$mode -t put_bw \
                -L warp -T 8 -c 2 -s 4096 -n 400
            pair perf_put_bw_warp_8B_$mode.log --cpu --$mode -t put_bw \
                -L warp -T 8 -c 2 -s 8 -n 2000
            pair perf_fadd_lat_$mode.log --cpu --$mode -t fadd_lat -n 1000
            pair perf_put_bw_warp_fault_$mode.log --cpu --$mode -t put_bw \
                -L warp -T 8 -c 2 -s 4096 -n 600 --fault=300
        done
        ;;
    targets)
        for i in 1 2 3 4 5; do
            order="mapped host"
            [ $((i % 2)) -eq 0 ] && order="host mapped"
            for where in $order; do
                for mode in cpu gpu; do
                    for size in 4096 8; do
                        UCX_GDA_FT_DEVICE_CHANNEL_TARGETS=$where \
                        GDA_FT_PERF=$gpu/gda_ft_perf \
                        GDA_FT_PERF_SERVER_ARGS=--cpu \
                            timeout -k 5 "$limit" \
                            "$top/contrib/gda_ft-perf-local.sh" --$mode \
                            -t put_bw -L warp -T 8 -c 2 -s $size -n 2000 \
                            >"$out/targets_tmp.log" 2>&1
                        echo "targets $where $mode $size exit $? $(awk \
                            '/^Final:/ {print $(NF-1), $NF}' \
                            "$out/targets_tmp.log")" >>"$out/targets.log"
                    done
                done
            done
        done
        rm -f "$out/targets_tmp.log"
        cat "$out/targets.log"
        ;;
    moe)
        export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps
        export CUDA_MPS_LOG_DIRECTORY=/tmp/mpslog
        mkdir -p /tmp/mps /tmp/mpslog
        nvidia-cuda-mps-control -d
        shape="--hidden 7168 --tokens 128 --iters 60 --channels 2"
        ( cd "$out" &&
          run moe_gpu_deepep_shape.log $gpu/moe --gpu --blocks 132 \
              --workers 128 $shape --plot moe_deepep_shape.png &&
          run moe_cpu_deepep_shape.log $gpu/moe --cpu --workers 8 $shape \
              --plot moe_deepep_shape_cpu.png &&
          run moe_gpu.log $gpu/moe --gpu --workers 128 &&
          run moe_gpu_4ranks.log $gpu/moe --gpu --workers 128 --ranks 4 \
              --fault-rank 2 --iters 40 --fault-at 10 --up-at 25 &&
          run moe_gpu_compare.log $gpu/moe --gpu --workers 128 --compare \
              --retry-window 3 --plot moe_timeline_gpu.png )
        echo quit | nvidia-cuda-mps-control
        ;;
    engine)
        steady() {   # LOG DEADLINE_US BLOCKS WARPS
            UCX_LOG_LEVEL=diag run "$1" $chan -s steady -b "$3" -w "$4" \
                -D "$2" -T 20 -i 2000000 -m host
            grep -o 'reason [0-9]*' "$out/$1" | sort | uniq -c
        }
        for lb in y n; do
            UCX_GDA_FT_SOFT_LOOPBACK=$lb steady steady_1ms_lb$lb.log 1000 4 2
        done
        steady steady_200us_8warps.log 200 4 2
        steady steady_1ms_2warps.log 1000 1 2
        steady steady_200us_2warps.log 200 1 2
        run warp_fault_1ms_x10.log $chan -s warp_fault -b 4 -w 2 -D 1000 \
            -i 1000 -m host -r 10
        ;;
    threads)
        for d in 1000 200; do
            for t in 1 4; do
                UCX_GDA_FT_SOFT_THREADS=$t UCX_LOG_LEVEL=diag \
                    run steady_${d}us_threads$t.log $chan -s steady -b 4 \
                    -w 2 -D $d -T 20 -i 2000000 -m host
            done
            UCX_GDA_FT_SOFT_THREADS=4 run warp_fault_${d}us_threads4.log \
                $chan -s warp_fault -b 4 -w 2 -D $d -i 1000 -m host -r 10
        done
        export GDA_FT_BUILD_DIR=$gpu/plugin
        for d in 200us 1ms; do
            for i in $(seq 1 10); do
                for t in 1 2; do
                    UCX_TLS=gda_ft,tcp UCX_NET_DEVICES=all \
                    UCX_GDA_FT_DEADLINE=$d UCX_GDA_FT_SOFT_THREADS=$t \
                    UCX_GDA_FT_SOFT_CTL_DIR= \
                        "$top/contrib/gda_ft-run.sh" \
                        $gpu/gda_ft_ucp_failover --mode down -n 400 \
                        -f 130 --amo fetch -s 65536 --timeout 30 \
                        --poll-pause 0 >"$out/host_tmp.log" 2>&1
                    echo "deadline $d threads $t exit $? $(grep -h \
                        FAILOVER "$out/host_tmp.log")" \
                        >>"$out/host_threads.log"
                done
            done
        done
        rm -f "$out/host_tmp.log"
        tail -4 "$out/host_threads.log"
        ;;
    sanitizer)
        run memcheck_warp_fault.log compute-sanitizer --tool memcheck \
            $chan -s warp_fault -b 1 -w 8 -i 400
        run racecheck_thread_fault.log compute-sanitizer --tool racecheck \
            $chan -s thread_fault -b 1 -w 4 -i 400
        # posters: a warp per channel, so that the memo's way is taken
        run memcheck_poster_fault.log compute-sanitizer --tool memcheck \
            $chan -s poster_fault -b 4 -w 1 -i 400
        run racecheck_poster_fault.log compute-sanitizer --tool racecheck \
            $chan -s poster_fault -b 2 -w 2 -i 400
        ;;
    *)
        echo "unknown part $part" >&2
        exit 2
        ;;
    esac
done
