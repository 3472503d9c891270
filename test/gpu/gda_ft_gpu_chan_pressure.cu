/*
 * gda_ft_gpu_chan's pressure scenario: the smallest rings full across
 * false switches and, with -F, port failures on both sides; every
 * operation reported OK is checked at its target (see gda_ft_gpu_chan.cu).
 */
#include "gpu_chan.cuh"

#include <pthread.h>
#include <unistd.h>

/* ---- pressure: full rings through false switches and flaps ------------ */

/* What a warp of the pressure kernel saw */
typedef struct gpu_pressure_out {
    uint32_t status;     /* first failure, or a GPU_VIOLATION_* << 8 */
    uint32_t iters;      /* iterations done */
    uint32_t last_ok;    /* 1 + the last iteration that ended OK */
    uint32_t no_path;    /* iterations that ended NO_PATH, and went on
                            once the channel took a path back */
    uint32_t sig_ok;     /* signals that ended OK */
    uint32_t sig_doubt;  /* signals that ended IN_DOUBT or NO_PATH */
    uint32_t bad_iter;   /* where the violation was seen */
    uint32_t bad_lane;
} gpu_pressure_out_t;

/* How long a warp waits for its channel to take a path back */
#define GPU_REGAIN_WAIT_NS 10000000000ull

/*
 * After NO_PATH, what a program that goes on does: waits until its
 * channel took a path back (a path re-armed: gda_ft_chan_regain), the
 * failure reported once by a quiet. OK once it has; NO_PATH when it did
 * not within GPU_REGAIN_WAIT_NS.
 */
__device__ static gda_ft_dev_status_t
gpu_await_regain(const gda_ft_dev_endpoint_t *ep, unsigned warp)
{
    uint64_t start = gda_ft_dev_now_ns();
    gda_ft_dev_status_t status;

    do {
        status = gda_ft_dev_quiet(ep, warp % ep->num_channels, 1000000000ull);
        if (status == GDA_FT_DEV_OK) {
            return status;
        }
        if ((status != GDA_FT_DEV_NO_PATH) &&
            (status != GDA_FT_DEV_IN_DOUBT) &&
            (status != GDA_FT_DEV_TIMEOUT)) {
            return status;
        }
    } while ((gda_ft_dev_now_ns() - start) < GPU_REGAIN_WAIT_NS);
    return GDA_FT_DEV_NO_PATH;
}

/* Reported OK, and yet: */
enum {
    GPU_VIOLATION_PUT_LOST  = 1, /* a put's bytes are not at the target */
    GPU_VIOLATION_FADD_SLOT = 2  /* a fetch-add's result never written */
};

#define GPU_RESULT_UNWRITTEN 0xffffffffffffffffull

/* Byte j of the put of (warp, lane) in iteration it */
__host__ __device__ static uint8_t gpu_pattern(unsigned warp, unsigned lane,
                                               unsigned it, unsigned j)
{
    return chan_pattern_byte(warp * GPU_LANES_PUT + lane, it, j);
}

__host__ __device__ static uint32_t gpu_put_len(unsigned lane, unsigned it)
{
    return 8 + ((it * 31 + lane * 7) % (GPU_REGION - 8));
}

/*
 * Every warp, per iteration, through its poster: 30 puts of a pattern new
 * in every iteration, a signal and a fetch-add on one shared counter, the
 * signal and the fetch-add awaited. Whatever ends OK is checked at once:
 * the fetch-add's completion covers the puts posted before it, whose
 * bytes must be at the target, and its result slot must be written.
 */
__global__ void gpu_pressure_kernel(gda_ft_dev_endpoint_t ep,
                                    gda_ft_dev_mem_list_t ml, unsigned iters,
                                    const volatile int *stop,
                                    gpu_pressure_out_t *out, uint8_t *fadd)
{
    unsigned lane = threadIdx.x % 32;
    unsigned warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
    const gda_ft_dev_mem_elem_t *data = &ml.elems[CHAN_ELEM_DATA];
    uint64_t off  = ((uint64_t)warp * GPU_LANES_PUT + lane) * GPU_REGION;
    uint8_t *src  = (uint8_t*)data->laddr + off;
    const volatile uint8_t *dst = (const volatile uint8_t*)data->raddr + off;
    uint32_t status = GDA_FT_DEV_OK, sig_ok = 0, sig_doubt = 0, len, j;
    uint32_t last_ok = 0, no_path = 0;
    volatile uint64_t *result;
    gda_ft_dev_poster_t poster;
    gda_ft_dev_request_t req;
    gda_ft_chan_op_t op;
    unsigned it, bad_it = 0, mine = 0, bad;
    uint64_t loff;
    int put_ok;

    gda_ft_dev_poster_init(&poster, &ep, warp % ep.num_channels);
    for (it = 0; it < iters; ++it) {
        if (__shfl_sync(0xffffffff, (lane == 0) ? *stop : 0, 0)) {
            break;
        }
        len  = gpu_put_len(lane, it);
        loff = ((uint64_t)warp * iters + it) * 8;
        if (lane < GPU_LANES_PUT) {
            for (j = 0; j < len; ++j) {
                src[j] = gpu_pattern(warp, lane, it, j);
            }
            gda_ft_dev_op_rdma(&op, GDA_FT_CHAN_OP_PUT, &ml, CHAN_ELEM_DATA,
                               off, off, len);
        } else if (lane == GPU_LANES_PUT) {
            gda_ft_dev_op_signal(&op, poster.chan, &ml, CHAN_ELEM_SIGNAL,
                                 warp * 8, 1);
        } else {
            result  = (volatile uint64_t*)(ml.elems[CHAN_ELEM_COUNTER].laddr +
                                           loff);
            *result = GPU_RESULT_UNWRITTEN;
            gda_ft_dev_op_atomic(&op, GDA_FT_CHAN_OP_ATOMIC,
                                 GDA_FT_MLX5_OPCODE_ATOMIC_FA, &ml,
                                 CHAN_ELEM_COUNTER, loff, 0, 1, 0);
        }
        __threadfence_system();   /* before the HCA reads or writes */
        status = gda_ft_dev_poster_post_warp(&poster, &op, &req);
        if ((status == GDA_FT_DEV_OK) && (lane >= GPU_LANES_PUT)) {
            do {
                status = gda_ft_dev_progress(&req);
            } while (status == GDA_FT_DEV_INPROGRESS);
            if (lane == GPU_LANES_PUT) {
                sig_ok    += (status == GDA_FT_DEV_OK);
                sig_doubt += (gpu_fadd_outcome(status) == GPU_FADD_DOUBT);
            } else {
                fadd[warp * iters + it] = gpu_fadd_outcome(status);
                if ((status == GDA_FT_DEV_OK) &&
                    (*result == GPU_RESULT_UNWRITTEN)) {
                    status = GPU_VIOLATION_FADD_SLOT << 8;
                    mine   = 1;
                    bad_it = it;
                }
            }
            if (status == GDA_FT_DEV_IN_DOUBT) {
                status = GDA_FT_DEV_OK;
            }
        }
        /* the fetch-add completed: so did every put before it */
        put_ok = __shfl_sync(0xffffffff, (int)status, 31) == GDA_FT_DEV_OK;
        if (put_ok && (lane < GPU_LANES_PUT) && (status == GDA_FT_DEV_OK)) {
            for (j = 0; j < len; ++j) {
                if (dst[j] != gpu_pattern(warp, lane, it, j)) {
                    status = GPU_VIOLATION_PUT_LOST << 8;
                    mine   = 1;
                    bad_it = it;
                    break;
                }
            }
        }
        status = __reduce_max_sync(0xffffffff, status);
        if (status == GDA_FT_DEV_NO_PATH) {
            /* its signal and fetch-add ran once or not at all (counted
             * as in doubt), its puts are not checked: on once the
             * channel is back */
            ++no_path;
            status = __shfl_sync(0xffffffff, (lane == 0) ?
                                 (uint32_t)gpu_await_regain(&ep, warp) : 0,
                                 0);
            if (status == GDA_FT_DEV_OK) {
                continue;
            }
        }
        if (status != GDA_FT_DEV_OK) {
            break;
        }
        last_ok = it + 1;
    }
    if ((status == GDA_FT_DEV_OK) && (lane == 0)) {
        status = gpu_quiet(&ep, warp);
        if (status == GDA_FT_DEV_NO_PATH) {
            /* the failure of the channel since the last quiet, any
             * warp's: a NO_PATH that warp went on from */
            status = gpu_await_regain(&ep, warp);
        }
    }
    /* the lowest lane that saw a violation names it */
    bad = __ballot_sync(0xffffffff, mine);
    if ((bad != 0) && (lane == (unsigned)(__ffs(bad) - 1))) {
        out[warp].bad_iter = bad_it;
        out[warp].bad_lane = lane;
    }
    if (lane == GPU_LANES_PUT) {
        out[warp].sig_ok    = sig_ok;
        out[warp].sig_doubt = sig_doubt;
    }
    if (lane == 0) {
        out[warp].status  = status;
        out[warp].iters   = it;
        out[warp].last_ok = last_ok;
        out[warp].no_path = no_path;
    }
}

/* Takes ports of both sides down and up, one at a time (a path is always
 * up), while the kernel posts */
typedef struct gpu_flapper {
    chan_world_t *w;
    unsigned      flaps;
    unsigned      done;
    unsigned      down_ms;
    unsigned      up_ms;
    int           stop;
} gpu_flapper_t;

static void *gpu_flap(void *arg)
{
    gpu_flapper_t *f = (gpu_flapper_t*)arg;
    unsigned dev;

    for (f->done = 0; (f->done < f->flaps) &&
                      !__atomic_load_n(&f->stop, __ATOMIC_ACQUIRE);
         ++f->done) {
        usleep(f->up_ms * 1000);
        dev = f->done % 4;   /* A's primary, A's backup, B's, B's */
        gda_ft_soft_port_set_up(f->w->dev[dev], 1, 0);
        usleep(f->down_ms * 1000);
        gda_ft_soft_port_set_up(f->w->dev[dev], 1, 1);
    }
    return NULL;
}

/* Everything the pressure kernel's warps reported OK, and the end state */
static void gpu_verify_pressure(chan_world_t *w, const gpu_run_t *run,
                                const gpu_pressure_out_t *out,
                                const uint8_t *fadd)
{
    unsigned warps = run->blocks * run->warps_per_block, wp, lane, it;
    size_t nfadd = (size_t)warps * run->iters, i, ok = 0, doubt = 0;
    size_t len = w->params.data_len, nvals = 0, bad_bytes = 0;
    uint64_t *res = (uint64_t*)malloc(nfadd * 8), counter, *vals;
    uint64_t *sig = (uint64_t*)malloc(warps * 8);
    uint8_t *dst = (uint8_t*)malloc(len);
    unsigned bad_warps = 0, bad_sig = 0, dup = 0, no_path = 0;
    char what[200];
    uint32_t n, j;

    gpu_copy(dst, w->dst, len);
    gpu_copy(sig, w->signals, warps * 8);
    gpu_copy(res, w->results, nfadd * 8);
    gpu_copy(&counter, w->counters, 8);
    for (wp = 0; wp < warps; ++wp) {
        if (out[wp].status != GDA_FT_DEV_OK) {
            if (bad_warps++ < 4) {
                printf("warp %u: %s at iteration %u lane %u\n", wp,
                       ((out[wp].status >> 8) == GPU_VIOLATION_PUT_LOST) ?
                       "put reported OK, its bytes not at the target" :
                       ((out[wp].status >> 8) == GPU_VIOLATION_FADD_SLOT) ?
                       "fetch-add reported OK, its result never written" :
                       gda_ft_dev_status_str(
                               (gda_ft_dev_status_t)out[wp].status),
                       out[wp].bad_iter, out[wp].bad_lane);
            }
            continue;
        }
        bad_sig += (sig[wp] < out[wp].sig_ok) ||
                   (sig[wp] > out[wp].sig_ok + out[wp].sig_doubt);
        no_path += out[wp].no_path;
        /* each region holds its last put: nothing ran again after OK
         * (unless a put after it ended NO_PATH, which may have run) */
        it = out[wp].iters - 1;
        for (lane = 0; (out[wp].iters > 0) &&
                       (out[wp].last_ok == out[wp].iters) &&
                       (lane < GPU_LANES_PUT);
             ++lane) {
            i = ((size_t)wp * GPU_LANES_PUT + lane) * GPU_REGION;
            n = gpu_put_len(lane, it);
            for (j = 0; j < n; ++j) {
                bad_bytes += (dst[i + j] != gpu_pattern(wp, lane, it, j));
            }
        }
    }
    vals = (uint64_t*)malloc((nfadd + 1) * sizeof(*vals));
    for (i = 0; i < nfadd; ++i) {
        if (fadd[i] == GPU_FADD_OK) {
            vals[nvals++] = gda_ft_dev_fetched(&w->ep, &res[i]);
            ++ok;
        }
        doubt += (fadd[i] == GPU_FADD_DOUBT);
    }
    qsort(vals, nvals, sizeof(*vals), chan_cmp_u64);
    for (i = 0; i < nvals; ++i) {
        dup += (vals[i] >= counter) || ((i > 0) && (vals[i] == vals[i - 1]));
    }

    snprintf(what, sizeof(what), "pressure: every warp's operations OK or "
             "in doubt, each checked when it completed, or NO_PATH and its "
             "channel back (%u warps not; %u iterations NO_PATH and on)",
             bad_warps, no_path);
    gpu_check(bad_warps == 0, what);
    snprintf(what, sizeof(what), "pressure: every signal word between its "
             "OK and OK + in-doubt signals (%u warps not)", bad_sig);
    gpu_check(bad_sig == 0, what);
    snprintf(what, sizeof(what), "pressure: every region holds its last "
             "put (%zu bytes differ)", bad_bytes);
    gpu_check(bad_bytes == 0, what);
    snprintf(what, sizeof(what), "pressure: counter %lu between %zu OK and "
             "%zu + %zu in-doubt fetch-adds", (unsigned long)counter, ok, ok,
             doubt);
    gpu_check((counter >= ok) && (counter <= ok + doubt), what);
    snprintf(what, sizeof(what), "pressure: %zu fetched values distinct and "
             "below the counter (%u not)", nvals, dup);
    gpu_check(dup == 0, what);
    free(res);
    free(sig);
    free(dst);
    free(vals);
}

/*
 * The smallest rings full across switches: a deadline that the load
 * exceeds (false switches) and, with -F, ports of both sides failing one
 * at a time. Every OK exact, no channel without a path while one is up.
 */
void gpu_pressure_scenario(const gpu_run_t *run)
{
    unsigned warps = run->blocks * run->warps_per_block, on_primary, c;
    gpu_pressure_out_t *out_dev, *out;
    gda_ft_chan_t chans[CHAN_WORLD_MAX_CHANNELS];
    uint8_t *fadd_dev, *fadd;
    gda_ft_chan_counters_t sum;
    gpu_flapper_t flapper;
    pthread_t flap_thread;
    cudaStream_t stream;
    uint32_t lost = 0, regains = 0;
    int *stop;
    double t0;
    char what[200];
    chan_world_t w;

    gpu_world_init(&w, run, run->deadline_ns);
    out  = (gpu_pressure_out_t*)calloc(warps, sizeof(*out));
    fadd = (uint8_t*)calloc((size_t)warps * run->iters, 1);
    GPU_CHECK_CUDA(cudaMalloc(&out_dev, warps * sizeof(*out)));
    GPU_CHECK_CUDA(cudaMalloc(&fadd_dev, (size_t)warps * run->iters));
    GPU_CHECK_CUDA(cudaMemset(out_dev, 0, warps * sizeof(*out)));
    GPU_CHECK_CUDA(cudaMemset(fadd_dev, 0, (size_t)warps * run->iters));
    GPU_CHECK_CUDA(cudaHostAlloc(&stop, sizeof(*stop), cudaHostAllocMapped));
    *stop = 0;
    GPU_CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));

    memset(&flapper, 0, sizeof(flapper));
    flapper.w       = &w;
    flapper.flaps   = run->flaps;
    flapper.down_ms = (unsigned)(3 * run->deadline_ns / 1000000) + 1;
    flapper.up_ms   = (unsigned)(8 * run->deadline_ns / 1000000) + 1;
    printf("pressure: %u warps, %u channels of %u WQEBBs, deadline %.3f ms, "
           "%s data, %u port failures (%u ms down, %u ms up)\n", warps,
           w.params.nchan, w.params.wqebb_cnt, run->deadline_ns / 1e6,
           run->gpu_data ? "GPU" : "host-mapped", run->flaps,
           flapper.down_ms, flapper.up_ms);
    t0 = gpu_now();
    gpu_pressure_kernel<<<run->blocks, run->warps_per_block * 32, 0,
                          stream>>>(w.ep, w.ml, run->iters, stop, out_dev,
                                    fadd_dev);
    GPU_CHECK_CUDA(cudaGetLastError());
    pthread_create(&flap_thread, NULL, gpu_flap, &flapper);
    while ((gpu_now() - t0 < run->seconds) &&
           (cudaStreamQuery(stream) == cudaErrorNotReady)) {
        usleep(1000);
    }
    if (run->flaps == 0) {
        __atomic_store_n(&flapper.stop, 1, __ATOMIC_RELEASE);
    }
    pthread_join(flap_thread, NULL);
    *(volatile int*)stop = 1;
    while (cudaStreamQuery(stream) == cudaErrorNotReady) {
        if (gpu_now() - t0 > run->seconds + GPU_WATCHDOG_S) {
            printf("FAIL the kernel did not return\n");
            gpu_dump(&w);
            fflush(stdout);
            _exit(1);
        }
        usleep(1000);
    }
    GPU_CHECK_CUDA(cudaStreamSynchronize(stream));
    printf("pressure: the kernel returned after %.3f s, %u port failures\n",
           gpu_now() - t0, flapper.done);
    gpu_copy(out, out_dev, warps * sizeof(*out));
    gpu_copy(fadd, fadd_dev, (size_t)warps * run->iters);
    gpu_verify_pressure(&w, run, out, fadd);

    gpu_counters(&w, &sum, &on_primary);
    gpu_chans_host(&w, chans);
    for (c = 0; c < w.params.nchan; ++c) {
        lost    += chans[c].outcomes_lost;
        regains += chans[c].regains;
    }
    printf("pressure: switches %u replays %u resolved %u confirmed %u in "
           "doubt %u failbacks %u no_path %u regains %u\n", sum.switches,
           sum.replays, sum.resolved, sum.confirmed, sum.in_doubt,
           sum.failbacks, sum.no_path, regains);
    snprintf(what, sizeof(what), "pressure: paths switched under full rings "
             "(%u switches)", sum.switches);
    gpu_check(sum.switches > 0, what);
    gpu_check(sum.no_path == 0, "pressure: no channel lost both paths");
    snprintf(what, sizeof(what), "pressure: every channel that lost both "
             "paths took one back (%u of %u)", regains, sum.no_path);
    gpu_check(regains == sum.no_path, what);
    snprintf(what, sizeof(what), "pressure: no failure overwritten before "
             "its request read it (%u)", lost);
    gpu_check(lost == 0, what);
    if (gpu_failed != 0) {
        gpu_dump(&w);
    } else {
        gpu_print_hca_stats(&w);
    }
    cudaStreamDestroy(stream);
    cudaFreeHost(stop);
    cudaFree(out_dev);
    cudaFree(fadd_dev);
    free(out);
    free(fadd);
    chan_world_fini(&w);
}
