/*
 * gda_ft_ucp_pressure's GPU runner (libgda_ft_ucp_pressure_gpu.so, loaded
 * by the program where a GPU is): one poster per warp, its first lane
 * running gda_ft_ucp_pressure.h's poster, on a non-blocking stream so that
 * the host progresses UCP meanwhile.
 */
#include "gda_ft_ucp_pressure.h"

#include <stdio.h>

typedef struct {
    cudaStream_t    stream;
    pressure_ctx_t *ctx;    /* device */
} pressure_gpu_run_t;

__global__ void pressure_kernel(const pressure_ctx_t *ctx)
{
    unsigned thread = blockIdx.x * blockDim.x + threadIdx.x;

    if ((thread % 32) == 0) {
        pressure_poster(ctx, thread / 32);
    }
}

static int pressure_gpu_check(cudaError_t err, const char *what)
{
    if (err != cudaSuccess) {
        fprintf(stderr, "gda_ft_ucp_pressure GPU runner: %s: %s\n", what,
                cudaGetErrorString(err));
        return -1;
    }
    return 0;
}

/* GPU index mod the GPUs this process sees, made current; -1 without one */
extern "C" int pressure_gpu_select(unsigned index)
{
    int count = 0, gpu;

    if ((cudaGetDeviceCount(&count) != cudaSuccess) || (count <= 0)) {
        return -1;
    }
    gpu = (int)(index % (unsigned)count);
    return pressure_gpu_check(cudaSetDevice(gpu), "cudaSetDevice") ? -1 : gpu;
}

extern "C" int pressure_gpu_copy(void *dst, const void *src, size_t len)
{
    return pressure_gpu_check(cudaMemcpy(dst, src, len, cudaMemcpyDefault),
                              "copy");
}

/* Host memory that kernels read (the stop word) */
extern "C" void *pressure_gpu_host_alloc(size_t len)
{
    void *ptr = NULL;

    return pressure_gpu_check(cudaHostAlloc(&ptr, len, cudaHostAllocMapped),
                              "cudaHostAlloc") ? NULL : ptr;
}

extern "C" void *pressure_gpu_launch(const pressure_ctx_t *ctx,
                                     unsigned blocks, unsigned warps)
{
    pressure_gpu_run_t *run = new pressure_gpu_run_t();

    if (pressure_gpu_check(cudaStreamCreateWithFlags(&run->stream,
                                                     cudaStreamNonBlocking),
                           "stream") ||
        pressure_gpu_check(cudaMalloc(&run->ctx, sizeof(*ctx)),
                           "cudaMalloc") ||
        pressure_gpu_check(cudaMemcpy(run->ctx, ctx, sizeof(*ctx),
                                      cudaMemcpyHostToDevice), "context")) {
        delete run;
        return NULL;
    }
    pressure_kernel<<<blocks, warps * 32, 0, run->stream>>>(run->ctx);
    if (pressure_gpu_check(cudaGetLastError(), "launch")) {
        delete run;
        return NULL;
    }
    return run;
}

extern "C" int pressure_gpu_done(void *arg)
{
    return cudaStreamQuery(((pressure_gpu_run_t*)arg)->stream) !=
           cudaErrorNotReady;
}

extern "C" int pressure_gpu_finish(void *arg)
{
    pressure_gpu_run_t *run = (pressure_gpu_run_t*)arg;
    int ret = pressure_gpu_check(cudaStreamSynchronize(run->stream),
                                 "kernel");

    cudaFree(run->ctx);
    cudaStreamDestroy(run->stream);
    delete run;
    return ret;
}
