/*
 * What the GPU programs over device channels share: CUDA error checks,
 * and the memory of a channel world on one GPU (rings in host memory
 * mapped into it, the posters' words in GPU memory). The runner hooks the
 * test harness asks of a program are gpu_runner.cuh's.
 */
#ifndef GDA_FT_GPU_WORLD_CUH_
#define GDA_FT_GPU_WORLD_CUH_

extern "C" {
#include "chan_harness.h"
#include "soft_harness.h"
#include "gda_ft_test.h"
}

#include <cuda_runtime.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GPU_SKIP        77       /* exit status without a GPU */

#define GPU_CHECK_CUDA(_call) \
    do { \
        cudaError_t _e = (_call); \
        if (_e != cudaSuccess) { \
            GDA_FT_FAIL("%s: %s", #_call, cudaGetErrorString(_e)); \
        } \
    } while (0)

/* ---- memory ------------------------------------------------------------- */

static void *gpu_alloc_mapped(size_t size, void *arg)
{
    void *ptr;

    (void)arg;
    if (cudaHostAlloc(&ptr, size, cudaHostAllocMapped) != cudaSuccess) {
        return NULL;
    }
    memset(ptr, 0, size);
    return ptr;  /* unified addressing: the GPU uses the same pointer */
}

static void gpu_free_mapped(void *ptr, void *arg)
{
    (void)arg;
    cudaFreeHost(ptr);
}

static void *gpu_alloc_device(size_t size, void *arg)
{
    void *ptr;

    (void)arg;
    if ((cudaMalloc(&ptr, size) != cudaSuccess) ||
        (cudaMemset(ptr, 0, size) != cudaSuccess)) {
        return NULL;
    }
    return ptr;
}

static void gpu_free_device(void *ptr, void *arg)
{
    (void)arg;
    cudaFree(ptr);
}

static void gpu_copy(void *dst, const void *src, size_t len)
{
    GPU_CHECK_CUDA(cudaMemcpy(dst, src, len, cudaMemcpyDefault));
}

/* Copies beside running kernels: on a stream of its own that waits for
 * nothing (cudaMemcpy would wait for every kernel) */
static void gpu_read(void *dst, const void *src, size_t len)
{
    cudaStream_t stream;

    GPU_CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    GPU_CHECK_CUDA(cudaMemcpyAsync(dst, src, len, cudaMemcpyDefault, stream));
    GPU_CHECK_CUDA(cudaStreamSynchronize(stream));
    cudaStreamDestroy(stream);
}

/* The bulk data in host memory mapped into the GPU: the software HCA moves
 * it with plain copies, where GPU memory costs a CUDA copy and a stream
 * synchronization per packet, which with tens of thousands of puts in
 * flight slows the engine past the deadline. Signals, counters and fetch
 * results live in GPU memory (the CUDA copy path). */
static const chan_world_mem_t gpu_mem = {
    {gpu_alloc_mapped, gpu_free_mapped, NULL, GDA_FT_HCA_MEM_HOST_MAPPED},
    {gpu_alloc_device, gpu_free_device, NULL, GDA_FT_HCA_MEM_CUDA},
    {gpu_alloc_mapped, gpu_free_mapped, NULL, GDA_FT_HCA_MEM_HOST_MAPPED},
    {gpu_alloc_device, gpu_free_device, NULL, GDA_FT_HCA_MEM_CUDA},
    gpu_copy,
    gpu_read
};

static double gpu_now(void)
{
    return soft_now_sec();
}

/* Exits with GPU_SKIP, saying why, where no GPU is */
static void gpu_require_device(void)
{
    int count = 0;

    if ((cudaGetDeviceCount(&count) != cudaSuccess) || (count == 0)) {
        printf("SKIP: no CUDA device\n");
        exit(GPU_SKIP);
    }
}

#endif
