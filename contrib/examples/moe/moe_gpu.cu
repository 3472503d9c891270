/*
 * moe's GPU runner (libmoe_gpu.so, loaded by moe where a GPU is): one
 * iteration of moe.h in a kernel of one block, its threads the workers,
 * on a non-blocking stream so that the host progresses UCP meanwhile.
 */
#define MOE_BARRIER() __syncthreads()
#include "moe.h"

#include <stdio.h>

typedef struct {
    cudaStream_t  stream;
    moe_ctx_t    *ctx;       /* device */
    moe_result_t *results;   /* host-mapped */
} moe_gpu_run_t;

__global__ void moe_kernel(const moe_ctx_t *ctx, unsigned workers,
                           moe_result_t *results)
{
    moe_result_t r = {0};

    moe_iteration(ctx, threadIdx.x, workers, &r);
    results[threadIdx.x] = r;
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

extern "C" void *moe_gpu_launch(const moe_ctx_t *ctx, unsigned workers,
                                moe_result_t **results_p)
{
    moe_gpu_run_t *run = new moe_gpu_run_t();

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
    moe_kernel<<<1, workers, 0, run->stream>>>(run->ctx, workers,
                                               run->results);
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
