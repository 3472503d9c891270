/*
 * What the files of gda_ft_gpu_chan share: the run's parameters, the
 * layout of what its warps post, a warp's last wait, the checks' tally,
 * and the world's setup and reports (gda_ft_gpu_chan.cu) that the
 * pressure scenario (gda_ft_gpu_chan_pressure.cu) uses too.
 */
#ifndef GDA_FT_GPU_CHAN_CUH_
#define GDA_FT_GPU_CHAN_CUH_

#include "gpu_world.cuh"

#define GPU_LANES_PUT   30       /* lanes 0..29 put, 30 signals, 31 adds */
#define GPU_REGION      256      /* bytes each (warp, lane) writes */
#define GPU_WATCHDOG_S  30       /* a kernel that runs longer (than its
                                    time, for a timed run) is stuck */


/* fetch-add outcome per (warp, iteration) */
enum { GPU_FADD_NONE = 0, GPU_FADD_OK = 1, GPU_FADD_DOUBT = 2 };

/* What a completed request says of its operation (gda_ft_device_api.h):
 * OK ran once; IN_DOUBT, NO_PATH and PEER_GONE ran once or not at all
 * (counted within the bounds as in doubt, and NO_PATH fails the run on its
 * own); any other failure did not run */
__device__ static inline uint8_t gpu_fadd_outcome(uint32_t status)
{
    switch (status) {
    case GDA_FT_DEV_OK:        return GPU_FADD_OK;
    case GDA_FT_DEV_IN_DOUBT:
    case GDA_FT_DEV_NO_PATH:
    case GDA_FT_DEV_PEER_GONE: return GPU_FADD_DOUBT;
    default:                   return GPU_FADD_NONE;
    }
}

typedef struct gpu_run {
    unsigned blocks, warps_per_block, iters;
    uint64_t deadline_ns;
    double   seconds;   /* a timed run: post until then (iters: at most) */
    unsigned repeat;    /* fault scenarios: runs */
    int      host_words;/* signals, counters, fetch results in host memory
                           mapped into the GPU, not GPU memory */
    int      gpu_data;  /* the puts' buffers in GPU memory too */
    unsigned wqebb_cnt; /* ring size (0: 512) */
    unsigned flaps;     /* pressure: ports of both sides down and up */
    unsigned db_defer;  /* WQEBBs a publication may leave unrung (0: each
                           rings) */
} gpu_run_t;

/* A warp's last wait on its channel: an operation in doubt was counted
 * when its request reported it */
__device__ static gda_ft_dev_status_t gpu_quiet(const gda_ft_dev_endpoint_t *ep,
                                                unsigned warp)
{
    gda_ft_dev_status_t status = gda_ft_dev_quiet(ep, warp % ep->num_channels,
                                                  0);

    return (status == GDA_FT_DEV_IN_DOUBT) ? GDA_FT_DEV_OK : status;
}

/* Checks passed and failed, printed at the end */
extern unsigned gpu_passed, gpu_failed;

/* One check: "ok" or "FAIL", and what */
void gpu_check(int ok, const char *what);

/* Four channels for the run's warps, the guardian started, every channel
 * warmed up and given deadline_ns */
void gpu_world_init(chan_world_t *w, const gpu_run_t *run,
                    uint64_t deadline_ns);

/* Reads the channels; works beside a running kernel (own stream) */
void gpu_chans_host(chan_world_t *w, gda_ft_chan_t *chans);

/* Channel and QP state, printed when a check fails */
void gpu_dump(chan_world_t *w);

/* The channels' counters summed, and how many are on their primary */
void gpu_counters(chan_world_t *w, gda_ft_chan_counters_t *sum,
                  unsigned *on_primary);

/* The soft HCAs' packet counters and the engine thread's pass gaps */
void gpu_print_hca_stats(chan_world_t *w);

/* Full rings through false switches and, with run->flaps, port failures
 * on both sides (gda_ft_gpu_chan_pressure.cu) */
void gpu_pressure_scenario(const gpu_run_t *run);

#endif
