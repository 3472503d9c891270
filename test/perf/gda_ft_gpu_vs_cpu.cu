/*
 * Kernel vs CPU posters (not a test; numbers for docs/benchmarks.md): the
 * same device API calls through the same software HCA, from one CUDA
 * thread and from one CPU thread, side by side in one run:
 *   latency    an 8-byte put, then quiet: p50, p99 and mean per round
 *   bandwidth  LEN-byte puts streamed, quiet every WINDOW
 * The kernel posts into channels in GPU memory with rings in host-mapped
 * memory; the CPU thread posts into a world all in host memory. Both move
 * host(-mapped) data, so what differs is the poster and where its
 * channel, rings and CQEs are.
 *
 *   gda_ft_gpu_vs_cpu [-n ROUNDS] [-c PUTS] [-l LEN] [-w WINDOW]
 */
#include "gpu_runner.cuh"

#include "chan_bench.h"

#include <unistd.h>

__global__ void vs_latency_kernel(gda_ft_dev_endpoint_t ep,
                                  gda_ft_dev_mem_list_t ml, unsigned n,
                                  uint64_t *samples, int *status)
{
    *status = chan_bench_latency(&ep, &ml, n, samples);
}

__global__ void vs_stream_kernel(gda_ft_dev_endpoint_t ep,
                                 gda_ft_dev_mem_list_t ml, unsigned count,
                                 uint32_t len, unsigned window, unsigned slots,
                                 uint64_t *elapsed, int *status)
{
    *status = chan_bench_stream(&ep, &ml, count, len, window, slots,
                                elapsed);
}

typedef struct vs_result {
    double p50_us, p99_us, mean_us;  /* latency */
    double gbps;                     /* bandwidth, GB/s */
} vs_result_t;

static int vs_cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t*)a, y = *(const uint64_t*)b;

    return (x > y) - (x < y);
}

static void vs_latency_stats(uint64_t *s, unsigned n, vs_result_t *r)
{
    double sum = 0;
    unsigned i;

    qsort(s, n, sizeof(*s), vs_cmp_u64);
    for (i = 0; i < n; ++i) {
        sum += s[i];
    }
    r->p50_us  = s[n / 2] / 1e3;
    r->p99_us  = s[(n * 99) / 100] / 1e3;
    r->mean_us = sum / n / 1e3;
}

static void vs_world_params(chan_world_params_t *params,
                            const chan_world_mem_t *mem, uint32_t len)
{
    chan_world_default_params(params);
    params->nchan       = 1;
    params->mem         = *mem;
    params->data_len    = 64 * (size_t)len;
    params->deadline_ns = 1000000000ull;   /* nothing fails here */
}

static int vs_kernel(unsigned n, unsigned count, uint32_t len,
                     unsigned window, vs_result_t *r)
{
    uint64_t *samples_dev, *elapsed_dev, elapsed;
    uint64_t *samples = (uint64_t*)malloc(n * sizeof(uint64_t));
    chan_world_params_t params;
    int *status_dev, status[2];
    chan_world_t w;

    vs_world_params(&params, &gpu_mem, len);
    chan_world_init(&w, &params);
    chan_world_guard_start(&w);
    GPU_CHECK_CUDA(cudaMalloc(&samples_dev, n * sizeof(uint64_t)));
    GPU_CHECK_CUDA(cudaMalloc(&elapsed_dev, sizeof(uint64_t)));
    GPU_CHECK_CUDA(cudaMalloc(&status_dev, 2 * sizeof(int)));
    vs_latency_kernel<<<1, 1>>>(w.ep, w.ml, n, samples_dev, status_dev);
    GPU_CHECK_CUDA(cudaDeviceSynchronize());
    vs_stream_kernel<<<1, 1>>>(w.ep, w.ml, count, len, window, 64,
                               elapsed_dev, status_dev + 1);
    GPU_CHECK_CUDA(cudaDeviceSynchronize());
    gpu_copy(samples, samples_dev, n * sizeof(uint64_t));
    gpu_copy(&elapsed, elapsed_dev, sizeof(elapsed));
    gpu_copy(status, status_dev, sizeof(status));
    vs_latency_stats(samples, n, r);
    r->gbps = (double)count * len / elapsed;
    cudaFree(samples_dev);
    cudaFree(elapsed_dev);
    cudaFree(status_dev);
    free(samples);
    chan_world_fini(&w);
    return (status[0] == GDA_FT_DEV_OK) && (status[1] == GDA_FT_DEV_OK);
}

static int vs_cpu(unsigned n, unsigned count, uint32_t len, unsigned window,
                  vs_result_t *r)
{
    uint64_t *samples = (uint64_t*)malloc(n * sizeof(uint64_t)), elapsed;
    chan_world_params_t params;
    gda_ft_dev_status_t s1, s2;
    chan_world_t w;

    vs_world_params(&params, &chan_world_host_mem, len);
    chan_world_init(&w, &params);
    chan_world_guard_start(&w);
    s1 = chan_bench_cpu_latency(&w, n, samples);
    s2 = chan_bench_cpu_stream(&w, count, len, window, &elapsed);
    vs_latency_stats(samples, n, r);
    r->gbps = (double)count * len / elapsed;
    free(samples);
    chan_world_fini(&w);
    return (s1 == GDA_FT_DEV_OK) && (s2 == GDA_FT_DEV_OK);
}

int main(int argc, char **argv)
{
    unsigned n = 2000, count = 4096, window = 16, round;
    uint32_t len = 65536;
    vs_result_t k, c;
    int opt;

    while ((opt = getopt(argc, argv, "n:c:l:w:")) != -1) {
        switch (opt) {
        case 'n': n = atoi(optarg); break;
        case 'c': count = atoi(optarg); break;
        case 'l': len = atoi(optarg); break;
        case 'w': window = atoi(optarg); break;
        default:
            fprintf(stderr, "usage: %s [-n ROUNDS] [-c PUTS] [-l LEN] "
                    "[-w WINDOW]\n", argv[0]);
            return 2;
        }
    }
    setenv("CUDA_MODULE_LOADING", "EAGER", 1);
    gpu_require_device();

    printf("%-7s %10s %10s %10s %12s\n", "poster", "p50 us", "p99 us",
           "mean us", "GB/s");
    /* alternated, three times: the machine's noise shows in the spread */
    for (round = 0; round < 3; ++round) {
        if (!vs_kernel(n, count, len, window, &k) ||
            !vs_cpu(n, count, len, window, &c)) {
            printf("FAIL: a poster got an error\n");
            return 1;
        }
        printf("%-7s %10.2f %10.2f %10.2f %12.3f\n", "kernel", k.p50_us,
               k.p99_us, k.mean_us, k.gbps);
        printf("%-7s %10.2f %10.2f %10.2f %12.3f\n", "cpu", c.p50_us,
               c.p99_us, c.mean_us, c.gbps);
        printf("kernel/cpu: latency p50 %.2f, bandwidth %.2f (%u-byte puts, "
               "quiet every %u)\n", k.p50_us / c.p50_us, k.gbps / c.gbps,
               len, window);
    }
    return 0;
}
