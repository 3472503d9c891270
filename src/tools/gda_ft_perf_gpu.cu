/*
 * gda_ft_perf's GPU runner (libgda_ft_perf_gpu.so, loaded by gda_ft_perf):
 * the posters of gda_ft_perf.h in a kernel, one CUDA thread or warp per
 * worker, on a non-blocking stream of its own so that the host keeps
 * progressing UCP (the channels' guardian) while the kernel runs.
 */
#include "gda_ft_perf.h"

#include <stdio.h>

#define GDA_FT_PERF_GPU_BLOCK 128

typedef struct {
    cudaStream_t          stream;
    gda_ft_perf_params_t *params;   /* device */
    gda_ft_perf_worker_t *results;  /* host-mapped: read while it runs */
} gda_ft_perf_gpu_run_t;

__global__ void gda_ft_perf_kernel(const gda_ft_perf_params_t *params,
                                   unsigned workers,
                                   gda_ft_perf_worker_t *results)
{
    unsigned tid    = blockIdx.x * blockDim.x + threadIdx.x;
    int warp        = (params->level == GDA_FT_PERF_LEVEL_WARP);
    unsigned worker = warp ? tid / GDA_FT_PERF_WARP_SIZE : tid;
    unsigned lane   = warp ? tid % GDA_FT_PERF_WARP_SIZE : 0;
    int streaming   = (params->test == GDA_FT_PERF_PUT_BW) ||
                      (params->test == GDA_FT_PERF_SIGNAL_BW);
    gda_ft_perf_worker_t other = {0};

    if (worker >= workers) {
        return;
    }
    /* the latency tests run on one lane of a warp */
    if (!streaming && (lane != 0)) {
        return;
    }
    /* lane 0 reports, where the host reads its progress while it runs */
    gda_ft_perf_worker_run(params, worker,
                           (lane == 0) ? &results[worker] : &other);
}

static int gda_ft_perf_gpu_check(cudaError_t err, const char *what)
{
    if (err != cudaSuccess) {
        fprintf(stderr, "gda_ft_perf GPU runner: %s: %s\n", what,
                cudaGetErrorString(err));
        return -1;
    }
    return 0;
}

/* Whether a GPU is there to run the kernel */
extern "C" int gda_ft_perf_gpu_available(void)
{
    int count = 0;

    return (cudaGetDeviceCount(&count) == cudaSuccess) && (count > 0);
}

/* GPU `index` mod the GPUs this process sees becomes current; returns
 * it, or -1 */
extern "C" int gda_ft_perf_gpu_select(unsigned index)
{
    int count = 0, gpu;

    if ((cudaGetDeviceCount(&count) != cudaSuccess) || (count <= 0)) {
        return -1;
    }
    gpu = (int)(index % (unsigned)count);
    return (cudaSetDevice(gpu) == cudaSuccess) ? gpu : -1;
}

extern "C" void *gda_ft_perf_gpu_launch(const gda_ft_perf_params_t *params,
                                        unsigned workers,
                                        gda_ft_perf_worker_t **results_p)
{
    gda_ft_perf_gpu_run_t *run = new gda_ft_perf_gpu_run_t();
    unsigned threads = workers * ((params->level == GDA_FT_PERF_LEVEL_WARP) ?
                                  GDA_FT_PERF_WARP_SIZE : 1);
    unsigned blocks  = (threads + GDA_FT_PERF_GPU_BLOCK - 1) /
                       GDA_FT_PERF_GPU_BLOCK;

    if (gda_ft_perf_gpu_check(cudaStreamCreateWithFlags(
                                      &run->stream, cudaStreamNonBlocking),
                              "stream") ||
        gda_ft_perf_gpu_check(cudaMalloc(&run->params, sizeof(*params)),
                              "cudaMalloc") ||
        gda_ft_perf_gpu_check(cudaMemcpyAsync(run->params, params,
                                              sizeof(*params),
                                              cudaMemcpyHostToDevice,
                                              run->stream), "params") ||
        gda_ft_perf_gpu_check(cudaHostAlloc(&run->results,
                                            workers * sizeof(*run->results),
                                            cudaHostAllocMapped),
                              "cudaHostAlloc")) {
        return NULL;
    }
    memset(run->results, 0, workers * sizeof(*run->results));
    gda_ft_perf_kernel<<<blocks, (threads < GDA_FT_PERF_GPU_BLOCK) ?
                                 threads : GDA_FT_PERF_GPU_BLOCK, 0,
                         run->stream>>>(run->params, workers, run->results);
    if (gda_ft_perf_gpu_check(cudaGetLastError(), "launch")) {
        return NULL;
    }
    *results_p = run->results;
    return run;
}

extern "C" int gda_ft_perf_gpu_done(void *arg)
{
    gda_ft_perf_gpu_run_t *run = (gda_ft_perf_gpu_run_t*)arg;

    return cudaStreamQuery(run->stream) != cudaErrorNotReady;
}

extern "C" int gda_ft_perf_gpu_finish(void *arg)
{
    gda_ft_perf_gpu_run_t *run = (gda_ft_perf_gpu_run_t*)arg;
    int ret = gda_ft_perf_gpu_check(cudaStreamSynchronize(run->stream),
                                    "kernel");

    cudaFree(run->params);
    cudaFreeHost(run->results);
    cudaStreamDestroy(run->stream);
    delete run;
    return ret;
}

extern "C" int gda_ft_perf_gpu_copy(void *dst, const void *src, size_t len)
{
    return gda_ft_perf_gpu_check(cudaMemcpy(dst, src, len,
                                            cudaMemcpyDefault), "copy");
}
