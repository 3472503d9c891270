/*
 * How a kernel's reads of host memory slow the copy engines: the latency
 * of cudaMemcpyAsync copies into GPU memory (what the software HCA's
 * engine does for every packet to or from GPU memory) while warps spin,
 * each load in turns in one run, with its ratio to the idle GPU:
 *
 *   idle      no kernel
 *   host N    N warps, each reading a host-mapped word per loop (a
 *             channel's CQE in host memory, polled by every waiter)
 *   gpu N     N warps, each reading a GPU word per loop
 *   turn N    N warps taking turns with a CAS on a GPU word: the holder
 *             reads the host word, the others only the GPU word (the
 *             datapath's host turn, gda_ft_chan_poll.h)
 *
 *   gda_ft_gpu_pcie [blocks [warps_per_block]]   (default 64 8)
 */
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define PCIE_COPY_LEN   4096
#define PCIE_BATCH      64
#define PCIE_ROUNDS     200
#define PCIE_ROUND_US   8000000.0   /* a load's copies stop after this */

enum {
    PCIE_IDLE = 0,
    PCIE_HOST = 1,
    PCIE_GPU  = 2,
    PCIE_TURN = 3
};

typedef struct {
    const char *name;
    int         mode;
    int         small;   /* 8 warps instead of the full load */
} pcie_load_t;

#define PCIE_CHECK(_call) \
    do { \
        cudaError_t _err = (_call); \
        if (_err != cudaSuccess) { \
            fprintf(stderr, "%s: %s\n", #_call, cudaGetErrorString(_err)); \
            exit(1); \
        } \
    } while (0)

static double pcie_now_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

/* Lane 0 of every warp spins until *stop (GPU memory) is set */
__global__ void pcie_spin(const volatile int *stop,
                          const volatile uint64_t *host_word,
                          const volatile uint64_t *gpu_word,
                          unsigned long long *turn, int mode,
                          unsigned long long *polls)
{
    unsigned long long n = 0;
    uint64_t sink        = 0;

    if ((threadIdx.x % 32) != 0) {
        return;
    }
    while (!*stop) {
        if (mode == PCIE_HOST) {
            sink += *host_word;
        } else if (mode == PCIE_GPU) {
            sink += *gpu_word;
        } else if (atomicCAS(turn, 0ull, 1ull) == 0ull) {
            sink += *host_word;
            __threadfence();
            atomicExch(turn, 0ull);
        } else {
            sink += *gpu_word;
        }
        ++n;
        __nanosleep(32);
    }
    atomicAdd(polls, n + (sink & 0));
}

static int pcie_cmp(const void *a, const void *b)
{
    double x = *(const double*)a, y = *(const double*)b;

    return (x > y) - (x < y);
}

static double pcie_median(double *v, int n)
{
    qsort(v, n, sizeof(*v), pcie_cmp);
    return v[n / 2];
}

int main(int argc, char **argv)
{
    static const pcie_load_t loads[] = {
        {"idle", PCIE_IDLE, 0}, {"host", PCIE_HOST, 1},
        {"host", PCIE_HOST, 0}, {"gpu", PCIE_GPU, 0},
        {"turn", PCIE_TURN, 0}
    };
    int blocks = (argc > 1) ? atoi(argv[1]) : 64;
    int warps  = (argc > 2) ? atoi(argv[2]) : 8;
    double one[PCIE_ROUNDS], batch[PCIE_ROUNDS], idle_batch = 0;
    unsigned long long *polls, *turn, count;
    uint64_t *host_word, *gpu_word;
    cudaStream_t kernel_stream, copy_stream;
    char *staging, *dst;
    int *stop, one_int = 1;
    double start, t0;
    int k, n, grid, block;
    unsigned l;

    if ((blocks <= 0) || (warps <= 0) || (warps > 32)) {
        fprintf(stderr, "usage: %s [blocks [warps_per_block (1..32)]]\n",
                argv[0]);
        return 2;
    }
    PCIE_CHECK(cudaHostAlloc((void**)&host_word, 64, cudaHostAllocMapped));
    PCIE_CHECK(cudaHostAlloc((void**)&staging, PCIE_COPY_LEN * PCIE_BATCH,
                             cudaHostAllocDefault));
    PCIE_CHECK(cudaMalloc((void**)&dst, PCIE_COPY_LEN * PCIE_BATCH));
    PCIE_CHECK(cudaMalloc((void**)&gpu_word, 64));
    PCIE_CHECK(cudaMalloc((void**)&stop, sizeof(*stop)));
    PCIE_CHECK(cudaMalloc((void**)&turn, sizeof(*turn)));
    PCIE_CHECK(cudaMalloc((void**)&polls, sizeof(*polls)));
    PCIE_CHECK(cudaStreamCreateWithFlags(&kernel_stream,
                                         cudaStreamNonBlocking));
    PCIE_CHECK(cudaStreamCreateWithFlags(&copy_stream,
                                         cudaStreamNonBlocking));
    memset(host_word, 0, 64);
    memset(staging, 1, PCIE_COPY_LEN * PCIE_BATCH);

    printf("%d x %d warps; a 4 KiB copy into GPU memory and %d of them, "
           "each waited for, median of up to %d\n", blocks, warps,
           PCIE_BATCH, PCIE_ROUNDS);
    printf("| load | warps | 4 KiB copy (us) | %d copies (us) | x idle | "
           "polls/s |\n| --- | --- | --- | --- | --- | --- |\n",
           PCIE_BATCH);
    for (l = 0; l < sizeof(loads) / sizeof(loads[0]); ++l) {
        grid  = loads[l].small ? 4 : blocks;
        block = loads[l].small ? 64 : warps * 32;
        PCIE_CHECK(cudaMemset(stop, 0, sizeof(*stop)));
        PCIE_CHECK(cudaMemset(turn, 0, sizeof(*turn)));
        PCIE_CHECK(cudaMemset(polls, 0, sizeof(*polls)));
        PCIE_CHECK(cudaDeviceSynchronize());
        if (loads[l].mode != PCIE_IDLE) {
            pcie_spin<<<grid, block, 0, kernel_stream>>>(
                    stop, host_word, gpu_word, turn, loads[l].mode, polls);
            PCIE_CHECK(cudaGetLastError());
            usleep(100000);
        }

        t0 = pcie_now_us();
        for (n = 0; (n < PCIE_ROUNDS) &&
                    ((pcie_now_us() - t0) < PCIE_ROUND_US); ++n) {
            start = pcie_now_us();
            PCIE_CHECK(cudaMemcpyAsync(dst, staging, PCIE_COPY_LEN,
                                       cudaMemcpyHostToDevice, copy_stream));
            PCIE_CHECK(cudaStreamSynchronize(copy_stream));
            one[n] = pcie_now_us() - start;
            start  = pcie_now_us();
            for (k = 0; k < PCIE_BATCH; ++k) {
                PCIE_CHECK(cudaMemcpyAsync(dst + k * PCIE_COPY_LEN,
                                           staging + k * PCIE_COPY_LEN,
                                           PCIE_COPY_LEN,
                                           cudaMemcpyHostToDevice,
                                           copy_stream));
            }
            PCIE_CHECK(cudaStreamSynchronize(copy_stream));
            batch[n] = pcie_now_us() - start;
        }

        /* the stop flag is in GPU memory: set through the copy stream */
        PCIE_CHECK(cudaMemcpyAsync(stop, &one_int, sizeof(one_int),
                                   cudaMemcpyHostToDevice, copy_stream));
        PCIE_CHECK(cudaStreamSynchronize(copy_stream));
        PCIE_CHECK(cudaStreamSynchronize(kernel_stream));
        PCIE_CHECK(cudaMemcpy(&count, polls, sizeof(count),
                              cudaMemcpyDeviceToHost));
        if (l == 0) {
            idle_batch = pcie_median(batch, n);
        }
        printf("| %s | %d | %.1f | %.1f | %.1f | %.2fM |\n",
               loads[l].name, (loads[l].mode == PCIE_IDLE) ? 0 :
               grid * block / 32, pcie_median(one, n),
               pcie_median(batch, n), pcie_median(batch, n) / idle_batch,
               count / (pcie_now_us() - t0));
    }
    return 0;
}
