/*
 * Device post rate through concurrent channels (not a test; numbers for
 * docs/benchmarks.md). Warp-level batches of 32 WQEs, one doorbell each,
 * side by side in one run:
 *   ft_on   the channel API with failover armed (deadline, peer health,
 *           mailbox)
 *   poster  the same through a poster (gda_ft_dev_poster_t), which
 *           remembers the channel between the warp's posts
 *   defer   ft_on, a publication leaving its doorbell to the next one
 *           when that is already reserved (db_defer: BENCH_DB_DEFER
 *           WQEBBs at most, or GDA_FT_BENCH_DB_DEFER)
 *   ft_off  the same API and rings as ft_on with failover disarmed
 *   floor   a bare loop: each lane writes its 64-byte WQE into the ring,
 *           lane 0 writes the doorbell record (a release store), a fence,
 *           and the doorbell with the last lane's doorbell word (the warp
 *           owns the ring: no reservation, no slots, no PSNs)
 *   bare    the same loop into a ring of the warp's own in host-mapped
 *           memory that no QP reads, with a doorbell record and register
 *           of its own there: the floor for any number of warps, as the
 *           issue measured it
 *   bare_rt the bare loop, the batch placed by one fetch-add on a word of
 *           the warp's own in GPU memory: one round trip to L2 a batch,
 *           the least any ring that warps share pays
 *   bare_log  bare_rt, each lane also building its operation and writing
 *           a 48-byte slot (keys, index, post time) into GPU memory: the
 *           least a replay log adds; neither is a datapath (no turn, no
 *           PSNs, no failover), they bound what one can reach
 * for 8-byte inline puts, 4 KiB puts, and put_signal (31 lanes put 4 KiB,
 * the last one adds to the peer's signal word: the data, then its
 * signal), with 1 warp, with one warp per channel, and with 8 warps per
 * channel (no `floor` there: it needs a QP ring of its own per warp).
 * Then one warp whose batches are 1 and 4 WQEs (its first lanes) per
 * doorbell: the batchings the issue measured the floor at. Then on 64
 * channels: one warp per channel, and 8 warps per SM of the GPU (1056 on
 * an H100). Times come from %globaltimer around each warp's posting
 * loop; the software HCA drains the rings meanwhile.
 *
 *   gda_ft_gpu_bench [-n BATCHES] [-1]
 *
 * -1: one warp only (its three batchings), for profilers.
 *
 * The same source built with GDA_FT_BENCH_STEPS (gda_ft_gpu_bench_steps)
 * times the steps of one warp's posts instead (SM cycles at the API's
 * GDA_FT_DEV_POST_MARK), FT on, through a poster, and FT off: where a
 * batch's time goes. The rates come from the build without the marks:
 * a mark is ten instructions even when it does not time, and the clock
 * reads hold the compiler's scheduling.
 */
#define BENCH_STEPS 6   /* 0: between posts, then the API's marks 1..5 */

#ifdef GDA_FT_BENCH_STEPS
__device__ static void bench_mark(unsigned step);
#define GDA_FT_DEV_POST_MARK(_step) bench_mark(_step)
#else
#define bench_mark(_step)
#endif

#include "gpu_runner.cuh"

#include <unistd.h>

#define BENCH_CHANNELS   16
#define BENCH_MANY_CHANNELS 64
#define BENCH_RING       16384
#define BENCH_BARE_RING  256      /* WQEBBs of a warp's own ring (bare) */
#define BENCH_LANES      32
#define BENCH_DB_DEFER   256      /* WQEBBs left unrung at most (defer;
                                     GDA_FT_BENCH_DB_DEFER overrides) */

enum { BENCH_INLINE8, BENCH_PUT4K, BENCH_PUT_SIGNAL, BENCH_KINDS };
enum {
    BENCH_FT_ON, BENCH_POSTER, BENCH_DEFER, BENCH_FT_OFF, BENCH_FLOOR,
    BENCH_BARE, BENCH_BARE_RT, BENCH_BARE_LOG, BENCH_MODES
};

static const char *bench_kind_name[] = {"put inline 8 B", "put 4 KiB",
                                        "put_signal 4 KiB"};
static const char *bench_mode_name[] = {"ft_on", "poster", "defer",
                                        "ft_off", "floor", "bare",
                                        "bare_rt", "bare_log"};

#ifdef GDA_FT_BENCH_STEPS
static const char *bench_step_name[BENCH_STEPS] = {
    "build the operation", "reserve", "write WQEs and slots",
    "wait for the turn", "stamp PSNs and time", "doorbell, release"
};

/* whether the posts' steps are timed (the last pass only) */
__constant__ int bench_timing;
/* the first warp's lane 0: cycles spent in each step, over a run */
__shared__ long long bench_step_sum[BENCH_STEPS];
__shared__ long long bench_step_last;
__device__ unsigned long long bench_step_cycles[BENCH_STEPS];

__device__ static void bench_mark(unsigned step)
{
    long long now;

    if (bench_timing && (threadIdx.x == 0) && (blockIdx.x == 0)) {
        now                   = clock64();
        bench_step_sum[step] += now - bench_step_last;
        bench_step_last       = now;
    }
}
#endif

/* One lane's WQE of the floor for an operation of `kind` into sq (the
 * channel's primary ring, or a warp's own), in a batch of `lanes`;
 * returns its doorbell word */
__device__ static uint64_t bench_floor_wqe(const gda_ft_dev_sq_t *sq,
                                           const gda_ft_chan_t *chan,
                                           uint64_t idx,
                                           const gda_ft_dev_mem_list_t *ml,
                                           int kind, unsigned lane,
                                           unsigned lanes)
{
    const gda_ft_dev_mem_elem_t *data = &ml->elems[CHAN_ELEM_DATA];
    const gda_ft_dev_mem_elem_t *sig  = &ml->elems[CHAN_ELEM_SIGNAL];
    uint16_t i     = (uint16_t)idx;
    uint8_t opcode = GDA_FT_MLX5_OPCODE_RDMA_WRITE;
    unsigned ds    = 3;

    if ((kind == BENCH_PUT_SIGNAL) && (lane == lanes - 1)) {
        opcode = GDA_FT_MLX5_OPCODE_ATOMIC_FA;
        ds     = 4;
        gda_ft_wqe_set_raddr(gda_ft_wqe_seg(sq, i, 1), sig->raddr,
                             sig->rkey[0]);
        gda_ft_wqe_set_atomic(gda_ft_wqe_seg(sq, i, 2), 1, 0);
        gda_ft_wqe_set_data(gda_ft_wqe_seg(sq, i, 3), 8,
                            chan->scratch_lkey[0], chan->scratch_addr);
    } else if (kind == BENCH_INLINE8) {
        gda_ft_wqe_set_raddr(gda_ft_wqe_seg(sq, i, 1),
                             data->raddr + lane * 8, data->rkey[0]);
        /* as the channel writes it: words from registers */
        gda_ft_wqe_set_inline_words(sq, i, 2, lane, 0, 8);
    } else {
        gda_ft_wqe_set_raddr(gda_ft_wqe_seg(sq, i, 1),
                             data->raddr + lane * 4096, data->rkey[0]);
        gda_ft_wqe_set_data(gda_ft_wqe_seg(sq, i, 2), 4096,
                            data->lkey[0], data->laddr + lane * 4096);
    }
    return gda_ft_wqe_set_ctrl(gda_ft_wqe_seg(sq, i, 0), opcode, 0, i,
                               sq->qpn, ds,
                               (lane == lanes - 1) ?
                               GDA_FT_MLX5_WQE_CTRL_CQ_UPDATE : 0, 0);
}

/* This lane's operation of a batch of `kind` and `lanes`; 0 if it could
 * not be built (a signal word past the memory list's element) */
__device__ static int bench_lane_op(gda_ft_chan_op_t *op,
                                     const gda_ft_chan_t *chan,
                                     const gda_ft_dev_mem_list_t *ml,
                                     int kind, unsigned warp, unsigned lane,
                                     unsigned lanes)
{
    int built;

    if (kind == BENCH_INLINE8) {
        built          = gda_ft_dev_op_rdma(op, GDA_FT_CHAN_OP_PUT, ml,
                                            CHAN_ELEM_DATA, 0,
                                            (uint64_t)lane * 8, 8);
        op->inl        = 1;
        op->operand[0] = lane;
        return built;
    } else if ((kind == BENCH_PUT_SIGNAL) && (lane == lanes - 1)) {
        return gda_ft_dev_op_signal(op, chan, ml, CHAN_ELEM_SIGNAL, warp * 8,
                                    1);
    }
    return gda_ft_dev_op_rdma(op, GDA_FT_CHAN_OP_PUT, ml, CHAN_ELEM_DATA,
                              (uint64_t)lane * 4096, (uint64_t)lane * 4096,
                              4096);
}

/* Every warp posts `batches` batches of `lanes` WQEs (its first lanes) */
__global__ void bench_post_kernel(gda_ft_dev_endpoint_t ep,
                                  gda_ft_dev_mem_list_t ml,
                                  unsigned batches, unsigned lanes, int kind,
                                  int mode, const gda_ft_dev_sq_t *bare,
                                  unsigned long long *words,
                                  gda_ft_chan_slot_t *logs, uint64_t *times)
{
    unsigned lane = threadIdx.x % 32;
    unsigned mask = (lanes < 32) ? (1u << lanes) - 1 : 0xffffffffu;
    unsigned warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
    gda_ft_chan_t *chan = &ep.channels[warp % ep.num_channels];
    gda_ft_chan_path_t *p = &chan->path[GDA_FT_CHAN_PRIMARY];
    const gda_ft_dev_sq_t *sq = (mode >= BENCH_BARE) ? &bare[warp] : &p->sq;
    gda_ft_dev_poster_t poster;
    gda_ft_dev_request_t req;
    gda_ft_dev_status_t status;
    gda_ft_chan_op_t op;
    uint64_t start, base = 0, first, at, db;
    unsigned b;

    if (lane >= lanes) {
        return;
    }
    gda_ft_dev_poster_init(&poster, &ep, warp % ep.num_channels);
    if (mode == BENCH_FLOOR) {
        base = gda_ft_chan_ring_idx(p, GDA_FT_CHAN_WORD_INDEX(chan->word));
    }
    if (mode >= BENCH_BARE) {
        base = sq->pi;
    }
    first = base;
#ifdef GDA_FT_BENCH_STEPS
    if (threadIdx.x == 0) {
        for (b = 0; b < BENCH_STEPS; ++b) {
            bench_step_sum[b] = 0;
        }
        bench_step_last = clock64();
    }
#endif
    start = gda_ft_dev_now_ns();
    for (b = 0; b < batches; ++b) {
        bench_mark(0);
        if (mode >= BENCH_FLOOR) {
            at = base;
            if (mode >= BENCH_BARE_RT) {
                if (lane == 0) {
                    at = atomicAdd(&words[warp], lanes);
                }
                at = first + __shfl_sync(mask, at, 0);
            }
            db = bench_floor_wqe(sq, chan, at + lane, &ml, kind, lane, lanes);
            if ((mode == BENCH_BARE_LOG) &&
                bench_lane_op(&op, chan, &ml, kind, warp, lane, lanes)) {
                gda_ft_chan_slot_write(&logs[warp * BENCH_BARE_RING +
                                             ((at + lane) %
                                              BENCH_BARE_RING)],
                                       &op, at + lane, gda_ft_dev_now_ns(),
                                       (uint32_t)(at + lane), 1,
                                       gda_ft_chan_slot_flags(&op), 1);
            }
            db    = __shfl_sync(mask, db, lanes - 1);
            base  = at + lanes;
            if (lane == 0) {
                /* the release store orders the WQEs before it */
                gda_ft_atomic_store_rel32_sys(
                        (uint32_t*)&sq->dbrec[GDA_FT_MLX5_SND_DBR],
                        gda_ft_htobe32((uint16_t)base));
                gda_ft_dev_fence_mmio();
                gda_ft_dev_write_once_u64(sq->uar, db);
            }
            __syncwarp(mask);
            continue;
        }
        if (!__all_sync(mask, bench_lane_op(&op, chan, &ml, kind, warp, lane,
                                            lanes))) {
            break;
        }
        status = (mode == BENCH_POSTER) ?
                 gda_ft_dev_poster_post_warp(&poster, &op, &req) :
                 gda_ft_dev_post_warp(chan, &op, &req);
        if (status != GDA_FT_DEV_OK) {
            break;
        }
    }
    if (lane == 0) {
        times[2 * warp]     = start;
        times[2 * warp + 1] = (b == batches) ? gda_ft_dev_now_ns() : 0;
    }
#ifdef GDA_FT_BENCH_STEPS
    if (bench_timing && (threadIdx.x == 0) && (blockIdx.x == 0)) {
        for (b = 0; b < BENCH_STEPS; ++b) {
            bench_step_cycles[b] = bench_step_sum[b];
        }
    }
#endif
}

/* Waits on the device until every channel has drained */
__global__ void bench_quiet_kernel(gda_ft_dev_endpoint_t ep, int *ok)
{
    unsigned c = threadIdx.x;

    if (c < ep.num_channels) {
        ok[c] = (gda_ft_dev_quiet(&ep, c, 10000000000ull) == GDA_FT_DEV_OK);
    }
}

static uint32_t bench_db_defer = BENCH_DB_DEFER;

/* Arms or disarms failover on every channel, and sets how many WQEBBs a
 * publication may leave unrung (no kernel runs) */
static void bench_set_ft(chan_world_t *w, int on, uint32_t db_defer)
{
    gda_ft_chan_t chans[CHAN_WORLD_MAX_CHANNELS];
    unsigned c;

    gpu_copy(chans, w->chans, w->params.nchan * sizeof(*chans));
    for (c = 0; c < w->params.nchan; ++c) {
        chans[c].deadline_ns = on ? w->params.deadline_ns : 0;
        chans[c].health      = on ? w->health : NULL;
        chans[c].mbox        = on ? w->a[c].mbox : NULL;
        chans[c].db_defer    = db_defer;
    }
    gpu_copy(w->chans, chans, w->params.nchan * sizeof(*chans));
}

/*
 * Rings of the warps' own for the bare floor: host-mapped, each with its
 * doorbell record and register in host-mapped memory too, a cache line
 * apart. No QP reads them. Returns the send queues, in GPU memory.
 */
static gda_ft_dev_sq_t *bench_bare_init(unsigned warps, void **mem_p)
{
    size_t ring = BENCH_BARE_RING * GDA_FT_MLX5_WQE_BB;
    gda_ft_dev_sq_t *sqs = (gda_ft_dev_sq_t*)calloc(warps, sizeof(*sqs));
    gda_ft_dev_sq_t *sqs_dev;
    uint8_t *mem;
    unsigned wp;

    GPU_CHECK_CUDA(cudaHostAlloc((void**)&mem, warps * (ring + 128),
                                 cudaHostAllocMapped));
    for (wp = 0; wp < warps; ++wp) {
        gda_ft_dev_sq_init(&sqs[wp], mem + wp * ring, BENCH_BARE_RING,
                           0x100 + wp,
                           (uint32_t*)(mem + warps * ring + wp * 128),
                           (uint64_t*)(mem + warps * ring + wp * 128 + 64),
                           -1, NULL, GDA_FT_WQE_MAX_INLINE);
    }
    GPU_CHECK_CUDA(cudaMalloc(&sqs_dev, warps * sizeof(*sqs)));
    gpu_copy(sqs_dev, sqs, warps * sizeof(*sqs));
    free(sqs);
    *mem_p = mem;
    return sqs_dev;
}

static void bench_bare_fini(gda_ft_dev_sq_t *sqs, void *mem)
{
    cudaFree(sqs);
    cudaFreeHost(mem);
}

/* One measurement: ns per WQE per warp (mean) and WQEs per second, with
 * batches of `lanes` WQEs */
static int bench_run(chan_world_t *w, unsigned warps, unsigned batches,
                     unsigned lanes, int kind, int mode, double *ns_per_wqe,
                     double *rate)
{
    uint64_t *times_dev, *times = (uint64_t*)calloc(2 * warps, 8);
    uint64_t first = UINT64_MAX, last = 0;
    unsigned wp, threads = (warps < 8 ? warps : 8) * 32;
    int ok[BENCH_MANY_CHANNELS], *ok_dev, good = 1;
    gda_ft_dev_sq_t *bare       = NULL;
    void *bare_mem              = NULL;
    unsigned long long *words   = NULL;
    gda_ft_chan_slot_t *logs    = NULL;
    double sum = 0;

    if (mode >= BENCH_BARE) {
        bare = bench_bare_init(warps, &bare_mem);
        GPU_CHECK_CUDA(cudaMalloc(&words, warps * sizeof(*words)));
        GPU_CHECK_CUDA(cudaMemset(words, 0, warps * sizeof(*words)));
        GPU_CHECK_CUDA(cudaMalloc(&logs, (size_t)warps * BENCH_BARE_RING *
                                         sizeof(*logs)));
    }
    GPU_CHECK_CUDA(cudaMalloc(&times_dev, 2 * warps * 8));
    GPU_CHECK_CUDA(cudaMalloc(&ok_dev, sizeof(ok)));
    bench_post_kernel<<<(warps * 32) / threads, threads>>>(
            w->ep, w->ml, batches, lanes, kind, mode, bare, words, logs,
            times_dev);
    GPU_CHECK_CUDA(cudaDeviceSynchronize());
    gpu_copy(times, times_dev, 2 * warps * 8);
    for (wp = 0; wp < warps; ++wp) {
        good  &= (times[2 * wp + 1] != 0);
        sum   += (double)(times[2 * wp + 1] - times[2 * wp]) /
                 (batches * lanes);
        first  = (times[2 * wp] < first) ? times[2 * wp] : first;
        last   = (times[2 * wp + 1] > last) ? times[2 * wp + 1] : last;
    }
    *ns_per_wqe = sum / warps;
    *rate       = (double)warps * batches * lanes / ((last - first) / 1e9);
    if (mode >= BENCH_BARE) {
        bench_bare_fini(bare, bare_mem);
        cudaFree(words);
        cudaFree(logs);
    } else if (mode != BENCH_FLOOR) {
        bench_quiet_kernel<<<1, BENCH_MANY_CHANNELS>>>(w->ep, ok_dev);
        GPU_CHECK_CUDA(cudaDeviceSynchronize());
        gpu_copy(ok, ok_dev, sizeof(ok));
        for (wp = 0; wp < w->params.nchan; ++wp) {
            good &= ok[wp];
        }
    }
    cudaFree(times_dev);
    cudaFree(ok_dev);
    free(times);
    return good;
}

#ifdef GDA_FT_BENCH_STEPS
/* The first warp's steps, FT on, through a poster, deferring doorbells
 * and FT off, posting alone and then beside 7 more warps on each of the
 * channels: ns per batch in each step */
static void bench_steps(chan_world_t *w, unsigned batches)
{
    static const unsigned warp_counts[] = {1, 8 * BENCH_CHANNELS};
    unsigned long long cycles[BENCH_STEPS], total;
    unsigned s, i, warps, batches_now;
    int mode, on = 1, off = 0;
    double ns, rate;

    GPU_CHECK_CUDA(cudaMemcpyToSymbol(bench_timing, &on, sizeof(on)));
    for (i = 0; i < sizeof(warp_counts) / sizeof(warp_counts[0]); ++i) {
        warps       = warp_counts[i];
        batches_now = BENCH_RING / (((warps + BENCH_CHANNELS - 1) /
                                     BENCH_CHANNELS) * BENCH_LANES);
        batches_now = (batches_now < batches) ? batches_now : batches;
        printf("\nsteps of a 32-WQE warp batch, put inline 8 B, %u warps "
               "on %u channels (the first warp's, ns per batch, from SM "
               "cycles scaled to the run's time)\n", warps,
               (warps < BENCH_CHANNELS) ? warps : BENCH_CHANNELS);
        for (mode = BENCH_FT_ON; mode <= BENCH_FT_OFF; ++mode) {
            bench_set_ft(w, mode != BENCH_FT_OFF,
                         (mode == BENCH_DEFER) ? bench_db_defer : 0);
            if (!bench_run(w, warps, batches_now, BENCH_LANES,
                           BENCH_INLINE8, mode, &ns, &rate)) {
                printf("FAIL: %s did not complete\n", bench_mode_name[mode]);
                break;
            }
            GPU_CHECK_CUDA(cudaMemcpyFromSymbol(cycles, bench_step_cycles,
                                                sizeof(cycles)));
            for (s = 0, total = 0; s < BENCH_STEPS; ++s) {
                total += cycles[s];
            }
            printf("%-6s %7.0f ns per batch, %.3g WQE/s:",
                   bench_mode_name[mode], ns * BENCH_LANES, rate);
            for (s = 0; s < BENCH_STEPS; ++s) {
                printf(" %s %.0f%s", bench_step_name[s],
                       ns * BENCH_LANES * cycles[s] / (double)total,
                       (s + 1 < BENCH_STEPS) ? "," : "\n");
            }
        }
    }
    GPU_CHECK_CUDA(cudaMemcpyToSymbol(bench_timing, &off, sizeof(off)));
}
#endif

/* A table's point: how many warps post, how many WQEs (lanes) a batch */
typedef struct bench_point {
    unsigned warps;
    unsigned lanes;
} bench_point_t;

/* Prints one row of a measurement, against the floor's rate and the bare
 * floor's (0: none) */
static void bench_print(int kind, const bench_point_t *pt, int mode,
                        double ns, double rate, double floor_rate,
                        double bare_rate)
{
    printf("%-16s %6u %6u  %-6s %12.1f %14.3g", bench_kind_name[kind],
           pt->warps, pt->lanes, bench_mode_name[mode], ns, rate);
    printf((floor_rate != 0) ? " %8.2f" : " %8s",
           (floor_rate != 0) ? rate / floor_rate : 0, "-");
    if (bare_rate != 0) {
        printf(" %8.2f", rate / bare_rate);
    }
    printf("\n");
}

/*
 * Every kind at each of npt points on w's channels, each mode in turn;
 * the QP floor where every warp has a channel of its own. A run posts at
 * most what the rings hold, so that no post waits for the software HCA;
 * batches smaller than a warp get more of them, up to 8 times. Returns 0
 * when a run did not complete.
 */
static int bench_table(chan_world_t *w, const chan_world_params_t *params,
                       const bench_point_t *points, unsigned npt,
                       unsigned batches)
{
    double ns[BENCH_MODES], rate[BENCH_MODES];
    unsigned pt, warps, per_chan, batches_now, most;
    int kind, mode;

    for (kind = BENCH_INLINE8; kind < BENCH_KINDS; ++kind) {
        for (pt = 0; pt < npt; ++pt) {
            warps       = points[pt].warps;
            per_chan    = (warps + params->nchan - 1) / params->nchan;
            batches_now = BENCH_RING / (per_chan * points[pt].lanes);
            most        = batches * (BENCH_LANES / points[pt].lanes);
            most        = (most < 8 * batches) ? most : 8 * batches;
            batches_now = (batches_now < most) ? batches_now : most;
            for (mode = BENCH_FT_ON; mode < BENCH_MODES; ++mode) {
                ns[mode] = rate[mode] = 0;
                if ((mode == BENCH_FLOOR) && (per_chan > 1)) {
                    continue;   /* the warps would share a QP's ring */
                }
                bench_set_ft(w, mode != BENCH_FT_OFF,
                             (mode == BENCH_DEFER) ? bench_db_defer : 0);
                if (!bench_run(w, warps, batches_now, points[pt].lanes, kind,
                               mode, &ns[mode], &rate[mode]) &&
                    (mode < BENCH_FLOOR)) {
                    printf("FAIL: %s did not complete\n",
                           bench_mode_name[mode]);
                    return 0;
                }
                if (mode == BENCH_FLOOR) {
                    /* the floor wrote WQEs behind the channels' backs */
                    chan_world_fini(w);
                    chan_world_init(w, params);
                    chan_world_guard_start(w);
                }
            }
            for (mode = BENCH_FT_ON; mode < BENCH_MODES; ++mode) {
                if (rate[mode] != 0) {
                    bench_print(kind, &points[pt], mode, ns[mode],
                                rate[mode], rate[BENCH_FLOOR],
                                rate[BENCH_BARE]);
                }
            }
            printf("%-16s %6u %6u  ft_on/ft_off rate: %.3f, "
                   "poster/ft_on: %.3f\n", bench_kind_name[kind], warps,
                   points[pt].lanes,
                   rate[BENCH_FT_ON] / rate[BENCH_FT_OFF],
                   rate[BENCH_POSTER] / rate[BENCH_FT_ON]);
        }
    }
    return 1;
}

int main(int argc, char **argv)
{
    static const bench_point_t points[] = {
        {1, BENCH_LANES}, {BENCH_CHANNELS, BENCH_LANES},
        {8 * BENCH_CHANNELS, BENCH_LANES}
    };
    static const bench_point_t batchings[] = {{1, 1}, {1, 4}};
    unsigned batches = 64;
    bench_point_t many[2];
    chan_world_params_t params;
    int opt, sms = 0, one_warp = 0;
    chan_world_t w;

    while ((opt = getopt(argc, argv, "n:1")) != -1) {
        if (opt == 'n') {
            batches = atoi(optarg);
        } else if (opt == '1') {
            one_warp = 1;
        } else {
            fprintf(stderr, "usage: %s [-n BATCHES] [-1]\n", argv[0]);
            return 2;
        }
    }
    if (getenv("GDA_FT_BENCH_DB_DEFER") != NULL) {
        bench_db_defer = atoi(getenv("GDA_FT_BENCH_DB_DEFER"));
    }
    printf("defer: up to %u WQEBBs unrung\n", bench_db_defer);
    gpu_require_device();
    GPU_CHECK_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount,
                                          0));

    chan_world_default_params(&params);
    params.nchan       = BENCH_CHANNELS;
    params.mem         = gpu_mem;
    params.wqebb_cnt   = BENCH_RING;
    params.data_len    = BENCH_LANES * 4096;
    params.signal_len  = 8 * 8 * sms;     /* a signal word per warp */
    params.deadline_ns = 1000000000ull;  /* nothing fails here */
    chan_world_init(&w, &params);
    chan_world_guard_start(&w);

#ifdef GDA_FT_BENCH_STEPS
    (void)one_warp;
    bench_steps(&w, batches);
    chan_world_fini(&w);
    return 0;
#endif
    printf("%-16s %6s %6s  %-6s %12s %14s %8s %8s\n", "operation", "warps",
           "WQE/db", "mode", "ns/WQE/warp", "WQE/s", "vs floor", "vs bare");
    if (!bench_table(&w, &params, points, one_warp ? 1 : 3, batches)) {
        return 1;
    }

    /* one warp, fewer WQEs per doorbell (the batch of 32 is above) */
    printf("\none warp, batches of 1 and 4 WQEs per doorbell\n");
    if (!bench_table(&w, &params, batchings, 2, batches)) {
        return 1;
    }
    chan_world_fini(&w);
    if (one_warp) {
        return 0;
    }

    /* many warps: a channel each, then 8 on every SM */
    printf("\n%u channels, %d SMs\n", BENCH_MANY_CHANNELS, sms);
    params.nchan = BENCH_MANY_CHANNELS;
    many[0].warps = BENCH_MANY_CHANNELS;
    many[0].lanes = BENCH_LANES;
    many[1].warps = 8 * sms;
    many[1].lanes = BENCH_LANES;
    chan_world_init(&w, &params);
    chan_world_guard_start(&w);
    if (!bench_table(&w, &params, many, 2, batches)) {
        return 1;
    }
    chan_world_fini(&w);
    return 0;
}
