/*
 * moe's GPU runner (libmoe_gpu.so, loaded by moe where a GPU is): each
 * phase of moe.h's iteration a kernel over blocks x threads workers (the
 * waits one thread), queued on a non-blocking stream so that the host
 * progresses UCP meanwhile. A kernel's end is the barrier between phases.
 */
#include "moe.h"

#include <stdio.h>

typedef struct {
    cudaStream_t  stream;
    moe_ctx_t    *ctx;       /* device */
    moe_result_t *results;   /* host-mapped */
} moe_gpu_run_t;

__global__ void moe_kernel(const moe_ctx_t *ctx, unsigned phase,
                           unsigned workers, moe_result_t *results)
{
    unsigned w = blockIdx.x * blockDim.x + threadIdx.x;

    moe_phase(ctx, phase, w, workers, &results[w]);
}

static int moe_gpu_check(cudaError_t err, const char *what)
{
    if (err != cudaSuccess) {
        fprintf(stderr, "moe GPU runner: %s: %s\n", what,
                cudaGetErrorString(err));
        return -1;
    }
    return 0;
}

extern "C" int moe_gpu_available(void)
{
    int count = 0;

    return (cudaGetDeviceCount(&count) == cudaSuccess) && (count > 0);
}

/* One rank per GPU, as expert-parallel jobs run: rank r on GPU r mod the
 * GPUs this process sees; ranks that share a GPU need MPS to run their
 * kernels side by side. Returns the GPU, or -1. */
extern "C" int moe_gpu_select(unsigned rank)
{
    int count = 0, gpu;

    if (moe_gpu_check(cudaGetDeviceCount(&count), "cudaGetDeviceCount") ||
        (count <= 0)) {
        return -1;
    }
    gpu = (int)(rank % (unsigned)count);
    return moe_gpu_check(cudaSetDevice(gpu), "cudaSetDevice") ? -1 : gpu;
}

extern "C" void *moe_gpu_alloc(size_t len)
{
    void *ptr = NULL;

    return moe_gpu_check(cudaMalloc(&ptr, len), "cudaMalloc") ? NULL : ptr;
}

extern "C" int moe_gpu_copy(void *dst, const void *src, size_t len)
{
    return moe_gpu_check(cudaMemcpy(dst, src, len, cudaMemcpyDefault),
                         "copy");
}

extern "C" void *moe_gpu_launch(const moe_ctx_t *ctx, unsigned blocks,
                                unsigned threads, moe_result_t **results_p)
{
    moe_gpu_run_t *run = new moe_gpu_run_t();
    unsigned workers   = blocks * threads, phase;

    if (moe_gpu_check(cudaStreamCreateWithFlags(&run->stream,
                                                cudaStreamNonBlocking),
                      "stream") ||
        moe_gpu_check(cudaMalloc(&run->ctx, sizeof(*ctx)), "cudaMalloc") ||
        moe_gpu_check(cudaMemcpyAsync(run->ctx, ctx, sizeof(*ctx),
                                      cudaMemcpyHostToDevice, run->stream),
                      "context") ||
        moe_gpu_check(cudaHostAlloc(&run->results,
                                    workers * sizeof(*run->results),
                                    cudaHostAllocMapped), "cudaHostAlloc")) {
        return NULL;
    }
    memset(run->results, 0, workers * sizeof(*run->results));
    for (phase = 0; phase < MOE_NUM_PHASES; ++phase) {
        if (MOE_PHASE_SINGLE(phase)) {
            moe_kernel<<<1, 1, 0, run->stream>>>(run->ctx, phase, workers,
                                                 run->results);
        } else {
            moe_kernel<<<blocks, threads, 0, run->stream>>>(
                    run->ctx, phase, workers, run->results);
        }
    }
    if (moe_gpu_check(cudaGetLastError(), "launch")) {
        return NULL;
    }
    *results_p = run->results;
    return run;
}

extern "C" int moe_gpu_done(void *arg)
{
    return cudaStreamQuery(((moe_gpu_run_t*)arg)->stream) !=
           cudaErrorNotReady;
}

extern "C" int moe_gpu_finish(void *arg)
{
    moe_gpu_run_t *run = (moe_gpu_run_t*)arg;
    int ret = moe_gpu_check(cudaStreamSynchronize(run->stream), "kernel");

    cudaFree(run->ctx);
    cudaFreeHost(run->results);
    cudaStreamDestroy(run->stream);
    delete run;
    return ret;
}
