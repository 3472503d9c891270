/*
 * Kernels posting through concurrent device channels over software HCAs,
 * with the target's ports failing under them (design §6). One process,
 * one GPU: the kernels post on side A; side B is memory the software HCA
 * writes; the guardian (host half) runs in a thread. The rings live in
 * host memory mapped into the GPU, the channels and the data in GPU
 * memory.
 *
 *   gda_ft_gpu_chan [-s SCENARIO] [-b BLOCKS] [-w WARPS] [-i ITERS]
 *                   [-D DEADLINE_US] [-T SECONDS] [-r RUNS]
 *                   [-m gpu|host|gpu_data] [-R WQEBBS] [-F FLAPS]
 *                   [-B WQEBBS]
 *
 * Scenarios: warp_fault (warp-level posts, primary down mid-run and back),
 * thread_fault (thread-level), both_down (both ports down: every waiter
 * gets NO_PATH, the kernel exits), all (default: the three), steady (no
 * fault, for false switches at short deadlines), pressure (the smallest
 * rings full across false switches and, with -F, port failures on both
 * sides; every operation reported OK checked). -T posts for that long
 * (ITERS at most per warp), -r repeats the fault scenarios and prints the
 * distribution of their interruptions, -m host puts the words (signals,
 * counters, fetch results) in host memory mapped into the GPU, -m
 * gpu_data the puts' buffers in GPU memory beside them, -R sets the ring
 * size, -B how many WQEBBs a publication may leave for the next one to
 * ring (db_defer; 0, the default: each rings). Prints
 * one line per check and "N passed, N failed"; exits 77 without a GPU.
 * The pressure scenario is gda_ft_gpu_chan_pressure.cu's.
 */
#include "gpu_runner.cuh"
#include "gpu_chan.cuh"

#include <unistd.h>

unsigned gpu_passed, gpu_failed;

void gpu_check(int ok, const char *what)
{
    printf("%s %s\n", ok ? "ok  " : "FAIL", what);
    if (ok) {
        ++gpu_passed;
    } else {
        ++gpu_failed;
    }
}

/* ---- kernels ------------------------------------------------------------ */

typedef struct gpu_out {
    uint32_t status;       /* first failure of the warp, or OK */
    uint32_t signals;      /* signal adds that completed */
    uint32_t iters;        /* iterations done */
    uint32_t reserved;
    uint64_t max_wait_ns;  /* longest fetch-add round trip: a failover's
                              interruption, as the application sees it */
    uint64_t start_ns;     /* when the warp began (GPU clock) */
    uint64_t first_ns;     /* when its first fetch-add completed */
} gpu_out_t;

__device__ static void gpu_lane_op(gda_ft_chan_op_t *op,
                                   const gda_ft_chan_t *chan,
                                   const gda_ft_dev_mem_list_t *ml,
                                   unsigned warp, unsigned lane,
                                   unsigned it, unsigned iters)
{
    uint64_t off = ((uint64_t)warp * GPU_LANES_PUT + lane) * GPU_REGION;
    uint32_t len = 8 + ((it * 31 + lane * 7) % (GPU_REGION - 8));

    if (lane < GPU_LANES_PUT) {
        gda_ft_dev_op_rdma(op, GDA_FT_CHAN_OP_PUT, ml, CHAN_ELEM_DATA, off,
                           off, len);
    } else if (lane == GPU_LANES_PUT) {
        gda_ft_dev_op_signal(op, chan, ml, CHAN_ELEM_SIGNAL, warp * 8, 1);
    } else {
        gda_ft_dev_op_atomic(op, GDA_FT_CHAN_OP_ATOMIC,
                             GDA_FT_MLX5_OPCODE_ATOMIC_FA, ml,
                             CHAN_ELEM_COUNTER,
                             ((uint64_t)warp * iters + it) * 8, 0, 1, 0);
    }
}

/* How the posting kernel's lanes post */
enum {
    GPU_THREAD_LEVEL,   /* each lane on its own */
    GPU_WARP_LEVEL,     /* one reservation and doorbell per warp */
    GPU_WARP_POSTER     /* the same through the warp's poster */
};

/*
 * Every warp: per iteration, 30 puts, a signal and a fetch-add, posted by
 * its lanes at `level` (GPU_*), then the fetch-add awaited.
 */
__global__ void gpu_post_kernel(gda_ft_dev_endpoint_t ep,
                                gda_ft_dev_mem_list_t ml, unsigned iters,
                                int level, const volatile int *stop,
                                gpu_out_t *out, uint8_t *fadd)
{
    unsigned lane = threadIdx.x % 32;
    unsigned warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
    gda_ft_chan_t *chan = &ep.channels[warp % ep.num_channels];
    gda_ft_dev_poster_t poster;
    gda_ft_dev_request_t req;
    gda_ft_dev_status_t status = GDA_FT_DEV_OK;
    gda_ft_chan_op_t op;
    unsigned it, signals = 0;
    uint64_t t0, max_wait = 0;

    gda_ft_dev_poster_init(&poster, &ep, warp % ep.num_channels);
    if (lane == 0) {
        out[warp].start_ns = gda_ft_dev_now_ns();
    }
    for (it = 0; it < iters; ++it) {
        if (__shfl_sync(0xffffffff, (lane == 0) ? *stop : 0, 0)) {
            break;     /* a timed run is over */
        }
        gpu_lane_op(&op, chan, &ml, warp, lane, it, iters);
        if (level == GPU_WARP_POSTER) {
            status = gda_ft_dev_poster_post_warp(&poster, &op, &req);
        } else if (level == GPU_WARP_LEVEL) {
            status = gda_ft_dev_post_warp(chan, &op, &req);
        } else {
            status = gda_ft_dev_post(chan, &op, 1, &req);
        }
        if ((status == GDA_FT_DEV_OK) && (lane >= GPU_LANES_PUT)) {
            t0 = gda_ft_dev_now_ns();
            do {
                status = gda_ft_dev_progress(&req);
            } while (status == GDA_FT_DEV_INPROGRESS);
            if ((it == 0) && (lane == GPU_LANES_PUT + 1)) {
                out[warp].first_ns = gda_ft_dev_now_ns();
            }
            t0       = gda_ft_dev_now_ns() - t0;
            max_wait = (t0 > max_wait) ? t0 : max_wait;
            if (lane == GPU_LANES_PUT + 1) {
                fadd[warp * iters + it] = gpu_fadd_outcome(status);
            } else if (status == GDA_FT_DEV_OK) {
                ++signals;
            }
            if (status == GDA_FT_DEV_IN_DOUBT) {
                status = GDA_FT_DEV_OK;   /* reported, counted: go on */
            }
        }
        status = (gda_ft_dev_status_t)__reduce_max_sync(0xffffffff,
                                                        (unsigned)status);
        if (status != GDA_FT_DEV_OK) {
            break;
        }
    }
    if ((status == GDA_FT_DEV_OK) && (lane == 0)) {
        status = gpu_quiet(&ep, warp);
    }
    if (lane == GPU_LANES_PUT) {
        out[warp].signals = signals;
    }
    if (lane == GPU_LANES_PUT + 1) {
        out[warp].max_wait_ns = max_wait;
    }
    if (lane == 0) {
        out[warp].status = status;
        out[warp].iters   = it;
    }
}

/*
 * One thread per channel: a signal and a fetch-add of 0 through each, and
 * their completions awaited. The software HCA's first CUDA copies (its
 * stream, the runtime's first use in its thread) take far longer than a
 * short deadline; the world runs this before it sets the deadline.
 */
__global__ void gpu_warmup_kernel(gda_ft_dev_endpoint_t ep,
                                  gda_ft_dev_mem_list_t ml, int *status)
{
    unsigned c = threadIdx.x;
    gda_ft_dev_request_t req;
    gda_ft_dev_status_t st;

    st = gda_ft_dev_signal(&ep, &ml, CHAN_ELEM_SIGNAL, 0, 0, c, &req);
    while (st == GDA_FT_DEV_OK) {
        st = gda_ft_dev_progress(&req);
        if (st != GDA_FT_DEV_INPROGRESS) {
            break;
        }
        st = GDA_FT_DEV_OK;
    }
    if (st == GDA_FT_DEV_OK) {
        st = gda_ft_dev_atomic_fetch_add(&ep, &ml, CHAN_ELEM_COUNTER, 0, 0,
                                         0, c, &req);
    }
    while (st == GDA_FT_DEV_OK) {
        st = gda_ft_dev_progress(&req);
        if (st != GDA_FT_DEV_INPROGRESS) {
            break;
        }
        st = GDA_FT_DEV_OK;
    }
    status[c] = st;
}

/* Stamps the GPU clock when the host raises *flag (the port went down):
 * the interruption's start, on the clock the channels stamp its end with.
 * A negative flag releases it without a stamp. */
__global__ void gpu_clock_watch_kernel(const volatile int *flag,
                                       uint64_t *stamp)
{
    int value;

    while ((value = *flag) == 0) {
    }
    *stamp = (value > 0) ? gda_ft_dev_now_ns() : 0;
}

/* Waits (device side) until every channel is back on its primary */
__global__ void gpu_failback_kernel(gda_ft_dev_endpoint_t ep,
                                    uint64_t timeout_ns, int *done)
{
    uint64_t start = gda_ft_dev_now_ns();
    gda_ft_chan_t *chan;
    unsigned c, on_primary;

    do {
        on_primary = 0;
        for (c = 0; c < ep.num_channels; ++c) {
            chan = &ep.channels[c];
            gda_ft_chan_progress(chan);
            on_primary += (gda_ft_atomic_load_acq32(&chan->state) ==
                           GDA_FT_CHAN_ACTIVE) &&
                          (gda_ft_atomic_load_acq32(&chan->active) ==
                           GDA_FT_CHAN_PRIMARY);
        }
    } while ((on_primary < ep.num_channels) &&
             (gda_ft_dev_now_ns() - start < timeout_ns));
    *done = (on_primary == ep.num_channels);
}

/* ---- scenarios ---------------------------------------------------------- */

/* Host-mapped words the host writes while kernels run */
typedef struct gpu_flags {
    int stop;           /* the posting kernel ends its loop */
    int port_down;      /* 1: the port went down; -1: release the watcher */
} gpu_flags_t;

/* Runs the warm-up kernel, then sets each channel's deadline */
static void gpu_world_warmup(chan_world_t *w, uint64_t deadline_ns)
{
    unsigned c, nchan = w->params.nchan;
    int *status_dev, status[CHAN_WORLD_MAX_CHANNELS];

    GPU_CHECK_CUDA(cudaMalloc(&status_dev, nchan * sizeof(int)));
    gpu_warmup_kernel<<<1, nchan>>>(w->ep, w->ml, status_dev);
    GPU_CHECK_CUDA(cudaDeviceSynchronize());
    gpu_copy(status, status_dev, nchan * sizeof(int));
    cudaFree(status_dev);
    for (c = 0; c < nchan; ++c) {
        if (status[c] != GDA_FT_DEV_OK) {
            printf("FAIL warm-up of channel %u: %s\n", c,
                   gda_ft_dev_status_str((gda_ft_dev_status_t)status[c]));
            exit(1);
        }
        gpu_copy(&w->chans[c].deadline_ns, &deadline_ns,
                 sizeof(deadline_ns));
        w->params.deadline_ns = deadline_ns;
    }
}

void gpu_world_init(chan_world_t *w, const gpu_run_t *run,
                    uint64_t deadline_ns)
{
    chan_world_params_t params;
    unsigned warps = run->blocks * run->warps_per_block;

    chan_world_default_params(&params);
    params.nchan       = 4;
    params.mem         = gpu_mem;
    if (run->host_words) {
        /* the software HCA then moves every word with plain loads and
         * stores, where GPU memory costs it a CUDA copy and a stream
         * synchronization per atomic (a hardware HCA has neither) */
        params.mem.words = params.mem.data;
    } else if (run->gpu_data) {
        params.mem.data = params.mem.words;
    }
    params.data_len    = (size_t)warps * GPU_LANES_PUT * GPU_REGION;
    params.signal_len  = (size_t)warps * 8;
    params.counter_len = (size_t)warps * run->iters * 8;
    params.deadline_ns = 0;   /* set after the warm-up */
    params.grace_ns    = deadline_ns / 10;
    /* one retransmission (a datagram the loopback dropped) completes
     * within the deadline: 1.5 x 4.096 us x 2^timeout <= deadline */
    for (params.timeout = 10;
         (params.timeout > 1) &&
         (6144ull << params.timeout) > deadline_ns; --params.timeout) {
    }
    /* the software HCA sends a window in one burst over loopback UDP; a
     * smaller window keeps a replay from overflowing the socket buffers */
    params.wqebb_cnt   = (run->wqebb_cnt != 0) ? run->wqebb_cnt : 512;
    params.db_defer    = run->db_defer;
    chan_world_init(w, &params);
    chan_world_guard_start(w);
    gpu_world_warmup(w, deadline_ns);
}

/* Reads the channels; works beside a running kernel (own stream) */
void gpu_chans_host(chan_world_t *w, gda_ft_chan_t *chans)
{
    gpu_read(chans, w->chans, w->params.nchan * sizeof(*chans));
}

static void gpu_print_statuses(const gpu_out_t *out, unsigned warps);

/* Warps of a kernel that did not return: which finished, how */
static void gpu_dump_warps(const gpu_out_t *out_dev, unsigned warps)
{
    gpu_out_t *out = (gpu_out_t*)malloc(warps * sizeof(*out));
    unsigned wp, running = 0;

    gpu_read(out, out_dev, warps * sizeof(*out));
    for (wp = 0; wp < warps; ++wp) {
        running += (out[wp].status == 0xffffffffu);
    }
    printf("%u of %u warps still running; the others:\n", running, warps);
    gpu_print_statuses(out, warps);
    free(out);
}

/* Runs the posting kernel with the target's ports changed on the way:
 * down_mask after down_ms, back up after up_ms (0: never) */
static void gpu_run_kernel(chan_world_t *w, const gpu_run_t *run,
                           int level, unsigned down_mask,
                           unsigned down_ms, unsigned up_ms,
                           gpu_out_t *out_host, uint8_t *fadd_host,
                           double *t_down, double *t_end,
                           uint64_t *down_gpu_ns)
{
    unsigned warps = run->blocks * run->warps_per_block, p;
    cudaStream_t stream, watch_stream;
    gpu_flags_t *flags;
    uint64_t *stamp;
    gpu_out_t *out;
    uint8_t *fadd;

    double t_start = gpu_now();

    GPU_CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    GPU_CHECK_CUDA(cudaStreamCreateWithFlags(&watch_stream,
                                             cudaStreamNonBlocking));
    GPU_CHECK_CUDA(cudaHostAlloc(&flags, sizeof(*flags),
                                 cudaHostAllocMapped));
    memset(flags, 0, sizeof(*flags));
    GPU_CHECK_CUDA(cudaMalloc(&stamp, sizeof(*stamp)));
    GPU_CHECK_CUDA(cudaMalloc(&out, warps * sizeof(*out)));
    GPU_CHECK_CUDA(cudaMalloc(&fadd, (size_t)warps * run->iters));
    GPU_CHECK_CUDA(cudaMemset(out, 0xff, warps * sizeof(*out)));
    GPU_CHECK_CUDA(cudaMemset(fadd, 0, (size_t)warps * run->iters));

    gpu_clock_watch_kernel<<<1, 1, 0, watch_stream>>>(&flags->port_down,
                                                      stamp);
    gpu_post_kernel<<<run->blocks, run->warps_per_block * 32, 0, stream>>>(
            w->ep, w->ml, run->iters, level, &flags->stop, out, fadd);
    GPU_CHECK_CUDA(cudaGetLastError());
    *t_down = 0;
    if (run->seconds > 0) {
        usleep((useconds_t)(run->seconds * 1e6));
        ((volatile gpu_flags_t*)flags)->stop = 1;
    }
    if (down_mask != 0) {
        usleep(down_ms * 1000);
        *t_down = gpu_now();
        ((volatile gpu_flags_t*)flags)->port_down = 1;
        for (p = 0; p < 2; ++p) {
            if (down_mask & (1u << p)) {
                chan_world_port(w, p, 0);
            }
        }
        if (up_ms != 0) {
            usleep(up_ms * 1000);
            for (p = 0; p < 2; ++p) {
                if (down_mask & (1u << p)) {
                    chan_world_port(w, p, 1);
                }
            }
        }
    }
    /* a kernel that does not return is a failure to diagnose, not wait
     * for: the channels are read beside it on another stream */
    while (cudaStreamQuery(stream) == cudaErrorNotReady) {
        if ((gpu_now() - t_start) > GPU_WATCHDOG_S + run->seconds) {
            /* a timed run's warps finish their iteration and quiet */
            printf("FAIL the kernel did not return in %d s\n",
                   GPU_WATCHDOG_S);
            gpu_dump_warps(out, warps);
            gpu_dump(w);
            fflush(stdout);
            _exit(1);
        }
        usleep(1000);
    }
    GPU_CHECK_CUDA(cudaStreamSynchronize(stream));
    *t_end = gpu_now();
    if (down_mask == 0) {
        ((volatile gpu_flags_t*)flags)->port_down = -1;
    }
    GPU_CHECK_CUDA(cudaStreamSynchronize(watch_stream));
    gpu_copy(down_gpu_ns, stamp, sizeof(*stamp));
    gpu_copy(out_host, out, warps * sizeof(*out));
    gpu_copy(fadd_host, fadd, (size_t)warps * run->iters);
    cudaFree(out);
    cudaFree(fadd);
    cudaFree(stamp);
    cudaFreeHost(flags);
    cudaStreamDestroy(stream);
    cudaStreamDestroy(watch_stream);
}

/* How many warps ended with each status */
static void gpu_print_statuses(const gpu_out_t *out, unsigned warps)
{
    unsigned count[8] = {0}, wp, st;

    for (wp = 0; wp < warps; ++wp) {
        if (out[wp].status != 0xffffffffu) {   /* finished */
            ++count[(out[wp].status < 8) ? out[wp].status : 7];
        }
    }
    for (st = 0; st < 8; ++st) {
        if (count[st] != 0) {
            printf("  %u warps ended with %s\n", count[st],
                   gda_ft_dev_status_str((gda_ft_dev_status_t)st));
        }
    }
}

/* Bytes, signals, fetched values, counters of a run that must succeed */
static void gpu_verify(chan_world_t *w, const gpu_run_t *run,
                       const gpu_out_t *out, const uint8_t *fadd,
                       const char *name)
{
    unsigned warps = run->blocks * run->warps_per_block;
    size_t len = w->params.data_len, nfadd = (size_t)warps * run->iters;
    uint8_t *src = (uint8_t*)malloc(len), *dst = (uint8_t*)malloc(len);
    uint64_t *sig = (uint64_t*)malloc(warps * 8);
    uint64_t *res = (uint64_t*)malloc(nfadd * 8), counter, *vals;
    size_t i, nvals = 0, doubt = 0, total = 0;
    unsigned wp, lane, it, maxlen, bad = 0, ok_status = 1, sig_ok = 1;
    char what[160];

    gpu_copy(src, w->src, len);
    gpu_copy(dst, w->dst, len);
    gpu_copy(sig, w->signals, warps * 8);
    gpu_copy(res, w->results, nfadd * 8);
    gpu_copy(&counter, w->counters, 8);

    /* a timed run: each warp checked for the iterations it did */
    for (wp = 0; wp < warps; ++wp) {
        ok_status &= (out[wp].status == GDA_FT_DEV_OK) &&
                     ((run->seconds > 0) ? (out[wp].iters > 0) :
                                           (out[wp].iters == run->iters));
        sig_ok    &= (sig[wp] == out[wp].iters) &&
                     (out[wp].signals == out[wp].iters);
        total     += out[wp].iters;
        for (lane = 0; lane < GPU_LANES_PUT; ++lane) {
            for (maxlen = 0, it = 0; it < out[wp].iters; ++it) {
                uint32_t l = 8 + ((it * 31 + lane * 7) % (GPU_REGION - 8));
                maxlen = (l > maxlen) ? l : maxlen;
            }
            i    = ((size_t)wp * GPU_LANES_PUT + lane) * GPU_REGION;
            bad += (memcmp(src + i, dst + i, maxlen) != 0);
        }
    }
    vals = (uint64_t*)malloc(nfadd * sizeof(*vals));
    for (i = 0; i < nfadd; ++i) {
        if (fadd[i] == GPU_FADD_OK) {
            vals[nvals++] = gda_ft_dev_fetched(&w->ep, &res[i]);
        }
        doubt += (fadd[i] == GPU_FADD_DOUBT);
    }
    qsort(vals, nvals, sizeof(*vals), chan_cmp_u64);
    for (i = 1; i < nvals; ++i) {
        if ((vals[i] == vals[i - 1]) || (vals[i] >= total)) {
            break;
        }
    }

    snprintf(what, sizeof(what), "%s: every warp finished %s %u "
             "iterations (%zu in all)", name,
             (run->seconds > 0) ? "its" : "all", run->iters, total);
    gpu_check(ok_status, what);
    if (!ok_status) {
        gpu_print_statuses(out, warps);
    }
    snprintf(what, sizeof(what), "%s: every byte of %u warps x %u lanes "
             "exact (%u regions differ)", name, warps, GPU_LANES_PUT, bad);
    gpu_check(bad == 0, what);
    snprintf(what, sizeof(what), "%s: every signal exact", name);
    gpu_check(sig_ok, what);
    snprintf(what, sizeof(what), "%s: counter %lu == %zu fetch-adds (each "
             "ran once; %zu in doubt)", name, (unsigned long)counter, total,
             doubt);
    gpu_check(counter == total, what);
    snprintf(what, sizeof(what), "%s: %zu fetched values, none twice", name,
             nvals);
    gpu_check((nvals + doubt == total) && ((nvals < 2) || (i == nvals)),
              what);
    free(src);
    free(dst);
    free(sig);
    free(res);
    free(vals);
}

void gpu_counters(chan_world_t *w, gda_ft_chan_counters_t *sum,
                  unsigned *on_primary)
{
    gda_ft_chan_t chans[CHAN_WORLD_MAX_CHANNELS];
    unsigned c;

    gpu_chans_host(w, chans);
    memset(sum, 0, sizeof(*sum));
    *on_primary = 0;
    for (c = 0; c < w->params.nchan; ++c) {
        sum->switches  += chans[c].counters.switches;
        sum->replays   += chans[c].counters.replays;
        sum->resolved  += chans[c].counters.resolved;
        sum->confirmed += chans[c].counters.confirmed;
        sum->in_doubt  += chans[c].counters.in_doubt;
        sum->failbacks += chans[c].counters.failbacks;
        sum->no_path   += chans[c].counters.no_path;
        *on_primary    += (chans[c].active == GDA_FT_CHAN_PRIMARY);
    }
}

static int gpu_verbose;   /* -v */

/* The soft HCAs' packet counters and the engine thread's pass gaps */
void gpu_print_hca_stats(chan_world_t *w)
{
    gda_ft_soft_engine_stats_t es;
    char line[768];
    unsigned c;

    for (c = 0; c < 4; ++c) {
        gda_ft_soft_port_stats_t st = soft_port_stats(w->dev[c], 1);

        printf("tsoft%u: tx %lu rx %lu dropped %lu out_of_seq %lu dup %lu "
               "naks %lu retransmits %lu bad_state %lu\n", c,
               (unsigned long)st.tx_pkts, (unsigned long)st.rx_pkts,
               (unsigned long)st.fault_dropped,
               (unsigned long)st.rx_out_of_seq,
               (unsigned long)st.rx_duplicate, (unsigned long)st.tx_naks,
               (unsigned long)st.retransmits, (unsigned long)st.rx_bad_state);
    }
    gda_ft_soft_engine_stats(&es);
    gda_ft_soft_engine_stats_format(&es, line, sizeof(line));
    printf("engine: %s\n", line);
}

/* Channel states and the newest switch records, for a run that failed */
void gpu_dump(chan_world_t *w)
{
    gda_ft_chan_t chans[CHAN_WORLD_MAX_CHANNELS];
    const gda_ft_chan_mbox_t *mbox;
    const gda_ft_chan_record_t *rec;
    unsigned c, r;

    gpu_chans_host(w, chans);
    gpu_print_hca_stats(w);
    for (c = 0; c < w->params.nchan; ++c) {
        mbox = w->a[c].mbox;
        printf("chan %u: state %u active %u word 0x%lx ready %lu completed "
               "0x%lx failed %u/%u seen_rearm %u/%u rearm %u/%u link %u/%u "
               "records %u answered %u\n", c, chans[c].state,
               chans[c].active, (unsigned long)chans[c].word,
               (unsigned long)chans[c].ready,
               (unsigned long)chans[c].completed, chans[c].path[0].failed,
               chans[c].path[1].failed, chans[c].path[0].seen_rearm,
               chans[c].path[1].seen_rearm, mbox->rearm[0], mbox->rearm[1],
               mbox->link_up[0], mbox->link_up[1], mbox->req_seq,
               mbox->ans_seq);
        for (r = 0; r < 2; ++r) {
            gda_ft_hca_qp_query_attr_t qa, qb;

            gda_ft_hca_qp_query(w->a[c].path[r].qp, &qa);
            gda_ft_hca_qp_query(w->b[c].path[r].qp, &qb);
            const gda_ft_chan_path_t *cp = &chans[c].path[r];
            const gda_ft_mlx5_cqe64_t *cqe =
                    (const gda_ft_mlx5_cqe64_t*)cp->cqe;

            printf("  path %u: A state %d sq_psn 0x%x, B state %d rq_psn "
                   "0x%x, channel's next PSN 0x%x; doorbell %u, CQE "
                   "counter %u op_own 0x%x, ring_off %lu ring_next %lu\n",
                   r, qa.state, qa.sq_psn, qb.state, qb.rq_psn,
                   cp->next_psn, gda_ft_be32toh(cp->sq.dbrec[1]),
                   gda_ft_be16toh(cqe->wqe_counter), cqe->op_own,
                   (unsigned long)cp->ring_off,
                   (unsigned long)cp->ring_next);
        }
        for (r = 1; (r <= mbox->req_seq) && (r <= GDA_FT_CHAN_MBOX_RECORDS);
             ++r) {
            rec = &mbox->rec[r % GDA_FT_CHAN_MBOX_RECORDS];
            printf("  record %u: left path %u why %u freeze %lu resolve %u\n",
                   r, rec->failed, rec->why, (unsigned long)rec->freeze,
                   rec->resolve);
        }
    }
}

/* Interruptions seen (ns): from the port going down, as a GPU thread saw
 * it, to each channel's first completion on the backup */
#define GPU_MAX_INTERRUPTS 4096
static double gpu_interrupts[GPU_MAX_INTERRUPTS];
/* their two parts: port down to the replay's doorbell on the backup
 * (detection, grace, the host's answer, the copy), then to its first
 * completion */
static double gpu_interrupts_silent[GPU_MAX_INTERRUPTS];
static double gpu_interrupts_detected[GPU_MAX_INTERRUPTS];
static double gpu_interrupts_answered[GPU_MAX_INTERRUPTS];
static double gpu_interrupts_copied[GPU_MAX_INTERRUPTS];
static unsigned gpu_num_answered;
static double gpu_interrupts_moved[GPU_MAX_INTERRUPTS];
static double gpu_interrupts_served[GPU_MAX_INTERRUPTS];
static unsigned gpu_num_interrupts;
/* the host guardian's part of each switch it answered (host clock) */
static double gpu_answers_waited[GPU_MAX_INTERRUPTS];
static double gpu_answers_fence[GPU_MAX_INTERRUPTS];
static double gpu_answers_peer[GPU_MAX_INTERRUPTS];
static unsigned gpu_num_answers;

/* Each channel's last answered switch, once per run (a run switches each
 * channel once; a failback asks for no answer) */
static void gpu_note_answers(chan_world_t *w)
{
    const gda_ft_chan_host_answer_time_t *t;
    unsigned c;

    for (c = 0; c < w->params.nchan; ++c) {
        t = &w->a[c].answer_time;
        if ((t->seq == 0) || (gpu_num_answers == GPU_MAX_INTERRUPTS)) {
            continue;
        }
        gpu_answers_waited[gpu_num_answers] = t->waited_ns;
        gpu_answers_fence[gpu_num_answers]  = t->fence_ns;
        gpu_answers_peer[gpu_num_answers++] = t->peer_ns;
    }
}

static void gpu_note_interrupts(chan_world_t *w, uint64_t down_gpu_ns)
{
    gda_ft_chan_t chans[CHAN_WORLD_MAX_CHANNELS];
    unsigned c;

    gpu_chans_host(w, chans);
    for (c = 0; c < w->params.nchan; ++c) {
        if ((down_gpu_ns == 0) || (chans[c].recovered_ns < down_gpu_ns) ||
            (gpu_num_interrupts == GPU_MAX_INTERRUPTS)) {
            continue;   /* did not recover from this fault */
        }
        gpu_interrupts_silent[gpu_num_interrupts] =
                (double)(int64_t)(chans[c].silent_since_ns - down_gpu_ns);
        gpu_interrupts_detected[gpu_num_interrupts] =
                (double)(int64_t)(chans[c].detect_ns - down_gpu_ns);
        if (chans[c].answered_ns != 0) {
            /* signed: a channel that switched again after the fault (a
             * false switch at a short deadline) may hold the answer of
             * one switch beside the decision of another */
            gpu_interrupts_answered[gpu_num_answered] =
                    (double)(int64_t)(chans[c].answered_ns -
                                      chans[c].detect_ns);
            gpu_interrupts_copied[gpu_num_answered++] =
                    (double)(int64_t)(chans[c].switch_ns -
                                      chans[c].answered_ns);
        }
        gpu_interrupts_moved[gpu_num_interrupts]  = chans[c].switch_ns -
                                                    down_gpu_ns;
        gpu_interrupts_served[gpu_num_interrupts] = chans[c].recovered_ns -
                                                    chans[c].switch_ns;
        gpu_interrupts[gpu_num_interrupts++] = chans[c].recovered_ns -
                                               down_gpu_ns;
    }
    gpu_note_answers(w);
}

static int gpu_cmp_double(const void *a, const void *b)
{
    double x = *(const double*)a, y = *(const double*)b;

    return (x > y) - (x < y);
}

static void gpu_print_quantiles(const char *name, const char *what,
                                double *v, unsigned n, const gpu_run_t *run)
{
    qsort(v, n, sizeof(*v), gpu_cmp_double);
    printf("%s: %s, %u channel switches: min %.3f p50 %.3f p90 %.3f p99 "
           "%.3f max %.3f ms; deadline %.3f ms\n", name, what, n, v[0] / 1e6,
           v[n / 2] / 1e6, v[(n * 9) / 10] / 1e6, v[(n * 99) / 100] / 1e6,
           v[n - 1] / 1e6, run->deadline_ns / 1e6);
}

static void gpu_print_interrupts(const char *name, const gpu_run_t *run)
{
    unsigned n = gpu_num_interrupts;

    if (n == 0) {
        return;
    }
    gpu_print_quantiles(name, "interruption (port down to the first "
                        "completion on the backup)", gpu_interrupts, n, run);
    gpu_print_quantiles(name, "  port down to the channel's last progress "
                        "before the switch (negative: before the fault)",
                        gpu_interrupts_silent, n, run);
    gpu_print_quantiles(name, "  port down to the switch decided",
                        gpu_interrupts_detected, n, run);
    gpu_print_quantiles(name, "  of it, port down to the replay's doorbell",
                        gpu_interrupts_moved, n, run);
    gpu_print_quantiles(name, "  of it, doorbell to the first completion",
                        gpu_interrupts_served, n, run);
    if (gpu_num_answered != 0) {
        gpu_print_quantiles(name, "  switch decided to the host's answer "
                            "seen (GPU clock)", gpu_interrupts_answered,
                            gpu_num_answered, run);
        gpu_print_quantiles(name, "  host's answer seen to the replay's "
                            "doorbell (the copy)", gpu_interrupts_copied,
                            gpu_num_answered, run);
    }
    if (gpu_num_answers == 0) {
        return;
    }
    n = gpu_num_answers;
    gpu_print_quantiles(name, "  host: record seen to answering (grace, "
                        "guardian passes)", gpu_answers_waited, n, run);
    gpu_print_quantiles(name, "  host: our end fenced", gpu_answers_fence,
                        n, run);
    gpu_print_quantiles(name, "  host: the peer's end fenced, its word read",
                        gpu_answers_peer, n, run);
}

/* When the warps began, against the fault, and how long their first
 * fetch-add took: a run whose kernel began late meets the fault in its
 * first iteration, and a slow first round trip is a false switch */
static void gpu_print_start(const char *name, const gpu_out_t *out,
                            unsigned warps, uint64_t down_gpu_ns)
{
    uint64_t first = UINT64_MAX, last = 0, slowest = 0;
    unsigned wp;

    for (wp = 0; wp < warps; ++wp) {
        first   = (out[wp].start_ns < first) ? out[wp].start_ns : first;
        last    = (out[wp].start_ns > last) ? out[wp].start_ns : last;
        if (out[wp].first_ns > out[wp].start_ns) {
            slowest = (out[wp].first_ns - out[wp].start_ns > slowest) ?
                      out[wp].first_ns - out[wp].start_ns : slowest;
        }
    }
    printf("%s: warps began %.3f to %.3f ms before the port went down; "
           "slowest first fetch-add %.3f ms\n", name,
           (double)(int64_t)(down_gpu_ns - first) / 1e6,
           (double)(int64_t)(down_gpu_ns - last) / 1e6, slowest / 1e6);
}

static void gpu_fault_scenario(const gpu_run_t *run, int level)
{
    static const char *names[] = {"thread_fault", "warp_fault",
                                  "poster_fault"};
    const char *name = names[level];
    unsigned warps = run->blocks * run->warps_per_block, on_primary, wp;
    uint64_t max_wait = 0;
    gpu_out_t *out = (gpu_out_t*)calloc(warps, sizeof(*out));
    uint8_t *fadd = (uint8_t*)calloc((size_t)warps * run->iters, 1);
    gda_ft_chan_counters_t sum;
    double t_down, t_end, t0 = gpu_now();
    int *done_dev, done = 0;
    uint64_t down_gpu_ns;
    char what[200];
    chan_world_t w;

    gpu_world_init(&w, run, run->deadline_ns);
    gpu_run_kernel(&w, run, level, 1u << GDA_FT_CHAN_PRIMARY, 100,
                   300, out, fadd, &t_down, &t_end, &down_gpu_ns);
    printf("%s: %u warps x %u iterations in %.3f s\n", name, warps,
           run->iters, t_end - t0);
    gpu_note_interrupts(&w, down_gpu_ns);
    gpu_print_start(name, out, warps, down_gpu_ns);

    GPU_CHECK_CUDA(cudaMalloc(&done_dev, sizeof(int)));
    gpu_failback_kernel<<<1, 1>>>(w.ep, 10000000000ull, done_dev);
    GPU_CHECK_CUDA(cudaDeviceSynchronize());
    gpu_copy(&done, done_dev, sizeof(int));
    cudaFree(done_dev);

    gpu_verify(&w, run, out, fadd, name);
    for (wp = 0; wp < warps; ++wp) {
        max_wait = (out[wp].max_wait_ns > max_wait) ? out[wp].max_wait_ns :
                                                      max_wait;
    }
    printf("%s: longest fetch-add wait (the application's interruption) "
           "%.3f ms, deadline %.3f ms\n", name, max_wait / 1e6,
           run->deadline_ns / 1e6);
    gpu_counters(&w, &sum, &on_primary);
    printf("%s: switches %u replays %u resolved %u confirmed %u in doubt %u "
           "failbacks %u no_path %u\n", name, sum.switches, sum.replays,
           sum.resolved, sum.confirmed, sum.in_doubt, sum.failbacks,
           sum.no_path);
    snprintf(what, sizeof(what), "%s: every channel switched once (%u "
             "switches, 4 channels)", name, sum.switches);
    gpu_check(sum.switches == w.params.nchan, what);
    snprintf(what, sizeof(what), "%s: every channel failed back (%u of %u "
             "on the primary, %u failbacks)", name, on_primary,
             w.params.nchan, sum.failbacks);
    gpu_check(done && (on_primary == w.params.nchan) &&
              (sum.failbacks == sum.switches), what);
    gpu_check(sum.no_path == 0, "no channel lost both paths");
    if (gpu_failed != 0) {
        gpu_dump(&w);
    } else if (gpu_verbose) {
        gpu_print_hca_stats(&w);
    }
    chan_world_fini(&w);
    free(out);
    free(fadd);
}

/* No fault: nothing may switch, however long it runs and however short
 * the deadline */
static void gpu_steady_scenario(const gpu_run_t *run)
{
    unsigned warps = run->blocks * run->warps_per_block, on_primary, wp;
    gpu_out_t *out = (gpu_out_t*)calloc(warps, sizeof(*out));
    uint8_t *fadd = (uint8_t*)calloc((size_t)warps * run->iters, 1);
    gda_ft_chan_counters_t sum;
    double t_down, t_end, t0 = gpu_now();
    uint64_t max_wait = 0, down_gpu_ns;
    char what[200];
    chan_world_t w;

    gpu_world_init(&w, run, run->deadline_ns);
    printf("steady: %u warps posting for %.1f s (%u iterations at most)\n",
           warps, run->seconds, run->iters);
    gpu_run_kernel(&w, run, GPU_WARP_LEVEL, 0, 0, 0, out, fadd, &t_down,
                   &t_end, &down_gpu_ns);
    printf("steady: the kernel returned after %.3f s\n", t_end - t0);
    gpu_print_hca_stats(&w);
    gpu_verify(&w, run, out, fadd, "steady");
    gpu_counters(&w, &sum, &on_primary);
    for (wp = 0; wp < warps; ++wp) {
        max_wait = (out[wp].max_wait_ns > max_wait) ? out[wp].max_wait_ns :
                                                      max_wait;
    }
    snprintf(what, sizeof(what), "steady: %.1f s of traffic at a %.3f ms "
             "deadline, %u switches (longest fetch-add wait %.3f ms)",
             t_end - t0, run->deadline_ns / 1e6, sum.switches,
             max_wait / 1e6);
    gpu_check(sum.switches == 0, what);
    chan_world_fini(&w);
    free(out);
    free(fadd);
}

static void gpu_both_down_scenario(const gpu_run_t *run)
{
    unsigned warps = run->blocks * run->warps_per_block, wp, no_path = 0;
    unsigned min_iter = ~0u, max_iter = 0;
    gpu_out_t *out = (gpu_out_t*)calloc(warps, sizeof(*out));
    uint64_t deadline_ns = run->deadline_ns, down_gpu_ns;
    gpu_run_t long_run = *run;
    double t_down, t_end;
    uint8_t *fadd;
    char what[200];
    chan_world_t w;

    long_run.iters = 2000;     /* runs until the ports go */
    fadd = (uint8_t*)calloc((size_t)warps * long_run.iters, 1);
    gpu_world_init(&w, &long_run, deadline_ns);
    gpu_run_kernel(&w, &long_run, GPU_WARP_LEVEL, 3, 100, 0, out, fadd,
                   &t_down, &t_end, &down_gpu_ns);
    for (wp = 0; wp < warps; ++wp) {
        no_path  += (out[wp].status == GDA_FT_DEV_NO_PATH);
        min_iter  = (out[wp].iters < min_iter) ? out[wp].iters : min_iter;
        max_iter  = (out[wp].iters > max_iter) ? out[wp].iters : max_iter;
    }
    printf("both_down: warps stopped after %u to %u iterations\n", min_iter,
           max_iter);
    snprintf(what, sizeof(what), "both_down: %u of %u warps got NO_PATH",
             no_path, warps);
    gpu_check(no_path == warps, what);
    /* two deadlines, the host's answer, and the kernel's exit */
    snprintf(what, sizeof(what), "both_down: the kernel exited %.1f ms "
             "after the ports went down (2 deadlines: %.1f ms)",
             (t_end - t_down) * 1e3, 2 * deadline_ns / 1e6);
    gpu_check((t_end - t_down) < 2 * deadline_ns / 1e9 + 0.1, what);
    if (gpu_failed != 0) {
        gpu_dump(&w);
    }
    chan_world_fini(&w);
    free(out);
    free(fadd);
}

int main(int argc, char **argv)
{
    gpu_run_t run = {64, 8, 8, 100000000ull, 0, 1, 0, 0, 0, 0, 0};
    static const char *levels[] = {"thread", "warp", "poster"};
    const char *scenario = "all";
    char name[32];
    int opt, level;
    unsigned r;

    while ((opt = getopt(argc, argv, "s:b:w:i:D:T:r:m:R:F:B:v")) != -1) {
        switch (opt) {
        case 'v': gpu_verbose = 1; break;
        case 'm':
            run.host_words = !strcmp(optarg, "host");
            run.gpu_data   = !strcmp(optarg, "gpu_data");
            break;
        case 'R': run.wqebb_cnt = atoi(optarg); break;
        case 'F': run.flaps = atoi(optarg); break;
        case 'B': run.db_defer = atoi(optarg); break;
        case 'D': run.deadline_ns = strtoull(optarg, NULL, 0) * 1000; break;
        case 'T': run.seconds = atof(optarg); break;
        case 'r': run.repeat = atoi(optarg); break;
        case 's': scenario = optarg; break;
        case 'b': run.blocks = atoi(optarg); break;
        case 'w': run.warps_per_block = atoi(optarg); break;
        case 'i': run.iters = atoi(optarg); break;
        default:
            fprintf(stderr, "usage: %s [-s warp_fault|thread_fault|"
                    "poster_fault|"
                    "both_down|steady|pressure|all] [-b BLOCKS] [-w WARPS] "
                    "[-i ITERS] [-D DEADLINE_US] [-T SECONDS] [-r RUNS] "
                    "[-m gpu|host|gpu_data] [-R RING_WQEBBS] [-F FLAPS] "
                    "[-B DEFER_WQEBBS] "
                    "[-v: the HCAs' counters after every run]\n",
                    argv[0]);
            return 2;
        }
    }
    setvbuf(stdout, NULL, _IOLBF, 0);   /* a log that survives a kill */
    /* Every kernel loaded before the first launch: with lazy loading, the
     * posting kernel's first launch waits for the clock watcher, which
     * spins until the port goes down (measured: the posting kernel then
     * started after the fault, and a fault-free run never started) */
    setenv("CUDA_MODULE_LOADING", "EAGER", 1);
    gpu_require_device();

    for (level = GPU_WARP_POSTER; level >= GPU_THREAD_LEVEL; --level) {
        snprintf(name, sizeof(name), "%s_fault", levels[level]);
        if (strcmp(scenario, "all") && strcmp(scenario, name)) {
            continue;
        }
        for (r = 0; r < run.repeat; ++r) {
            gpu_fault_scenario(&run, level);
        }
        gpu_print_interrupts(name, &run);
        gpu_num_interrupts = gpu_num_answers = 0;
    }
    if (!strcmp(scenario, "all") || !strcmp(scenario, "both_down")) {
        gpu_both_down_scenario(&run);
    }
    if (!strcmp(scenario, "steady")) {
        gpu_steady_scenario(&run);
    }
    if (!strcmp(scenario, "pressure")) {
        gpu_pressure_scenario(&run);
    }
    printf("%u passed, %u failed\n", gpu_passed, gpu_failed);
    return (gpu_failed == 0) ? 0 : 1;
}
