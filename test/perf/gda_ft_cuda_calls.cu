/*
 * What a CUDA call costs the calling thread: the calls the software HCA's
 * engine makes for GPU memory, each timed over 19 200 copies of 4 KiB
 * between pinned host memory and device memory on a non-blocking stream
 * (the time in the calls, not the copies' own), three rounds:
 *
 *   cudaMemcpyAsync, and the driver's cuMemcpyHtoDAsync/DtoHAsync
 *   cudaMemcpyBatchAsync with 1 to 64 copies a call
 *   cudaEventRecord, cudaEventQuery on a done event,
 *   cudaPointerGetAttributes
 *   a copy, an event and a wait for it (a round trip)
 *
 *   gda_ft_cuda_calls            the table
 *   gda_ft_cuda_calls freed      what a freed device pointer does: asked
 *                                about, copied into naming the direction,
 *                                then in a batch (which may end the
 *                                process: run it last)
 */
#include <cuda.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define CALLS_N    19200
#define CALLS_LEN  4096
#define CALLS_SPAN (64ul << 20)

static double calls_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static char *calls_at(char *base, int i)
{
    return base + ((size_t)i * CALLS_LEN) % CALLS_SPAN;
}

enum {
    CALLS_RUNTIME_H2D,
    CALLS_RUNTIME_D2H,
    CALLS_DRIVER_H2D,
    CALLS_DRIVER_D2H,
    CALLS_COPY_KINDS
};

static const char *calls_copy_names[] = {
    "cudaMemcpyAsync H2D", "cudaMemcpyAsync D2H", "cuMemcpyHtoDAsync",
    "cuMemcpyDtoHAsync"
};

/* A call a copy, of the given kind; us per call */
static double calls_copies(char *host, char *dev, int kind, cudaStream_t s)
{
    double start;
    int i;

    cudaStreamSynchronize(s);
    start = calls_now();
    for (i = 0; i < CALLS_N; ++i) {
        switch (kind) {
        case CALLS_RUNTIME_H2D:
            cudaMemcpyAsync(calls_at(dev, i), calls_at(host, i), CALLS_LEN,
                            cudaMemcpyHostToDevice, s);
            break;
        case CALLS_RUNTIME_D2H:
            cudaMemcpyAsync(calls_at(host, i), calls_at(dev, i), CALLS_LEN,
                            cudaMemcpyDeviceToHost, s);
            break;
        case CALLS_DRIVER_H2D:
            cuMemcpyHtoDAsync((CUdeviceptr)calls_at(dev, i),
                              calls_at(host, i), CALLS_LEN, (CUstream)s);
            break;
        default:
            cuMemcpyDtoHAsync(calls_at(host, i),
                              (CUdeviceptr)calls_at(dev, i), CALLS_LEN,
                              (CUstream)s);
            break;
        }
    }
    return (calls_now() - start) / CALLS_N * 1e6;
}

/* n copies a call, host to device (h2d) or back; us per copy */
static double calls_batch(char *host, char *dev, int n, int h2d,
                          cudaStream_t s)
{
    struct cudaMemcpyAttributes attrs;
    void *dst[64];
    const void *src[64];
    size_t len[64], idx = 0;
    double start;
    int i, k;

    memset(&attrs, 0, sizeof(attrs));
    attrs.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
    cudaStreamSynchronize(s);
    start = calls_now();
    for (i = 0; i < CALLS_N; i += n) {
        for (k = 0; k < n; ++k) {
            dst[k] = h2d ? calls_at(dev, i + k) : calls_at(host, i + k);
            src[k] = h2d ? calls_at(host, i + k) : calls_at(dev, i + k);
            len[k] = CALLS_LEN;
        }
        cudaMemcpyBatchAsync(dst, src, len, n, &attrs, &idx, 1, s);
    }
    return (calls_now() - start) / CALLS_N * 1e6;
}

static void calls_table(void)
{
    static const int sizes[] = {1, 2, 4, 8, 16, 32, 64};
    struct cudaPointerAttributes pa;
    cudaStream_t s;
    cudaEvent_t e;
    char *host, *dev;
    double start;
    int round, i, b, c;

    cudaHostAlloc((void**)&host, CALLS_SPAN, 0);
    cudaMalloc((void**)&dev, CALLS_SPAN);
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    cudaEventCreateWithFlags(&e, cudaEventDisableTiming);
    for (round = 0; round < 3; ++round) {
        for (c = 0; c < CALLS_COPY_KINDS; ++c) {
            printf("round %d: %s %.2f us\n", round, calls_copy_names[c],
                   calls_copies(host, dev, c, s));
        }
        for (b = 0; b < (int)(sizeof(sizes) / sizeof(sizes[0])); ++b) {
            printf("round %d: cudaMemcpyBatchAsync of %2d: H2D %.2f us, "
                   "D2H %.2f us a copy\n", round, sizes[b],
                   calls_batch(host, dev, sizes[b], 1, s),
                   calls_batch(host, dev, sizes[b], 0, s));
        }
        cudaStreamSynchronize(s);
        start = calls_now();
        for (i = 0; i < CALLS_N; ++i) {
            cudaEventRecord(e, s);
        }
        printf("round %d: cudaEventRecord %.2f us\n", round,
               (calls_now() - start) / CALLS_N * 1e6);
        cudaStreamSynchronize(s);
        start = calls_now();
        for (i = 0; i < CALLS_N; ++i) {
            cudaEventQuery(e);
        }
        printf("round %d: cudaEventQuery (done) %.2f us\n", round,
               (calls_now() - start) / CALLS_N * 1e6);
        start = calls_now();
        for (i = 0; i < CALLS_N; ++i) {
            cudaPointerGetAttributes(&pa, calls_at(dev, i));
        }
        printf("round %d: cudaPointerGetAttributes %.3f us\n", round,
               (calls_now() - start) / CALLS_N * 1e6);
        start = calls_now();
        for (i = 0; i < 2000; ++i) {
            cudaMemcpyAsync(dev, host, CALLS_LEN, cudaMemcpyHostToDevice, s);
            cudaEventRecord(e, s);
            cudaEventSynchronize(e);
        }
        printf("round %d: copy, record, synchronize %.2f us\n", round,
               (calls_now() - start) / 2000 * 1e6);
    }
}

static void calls_freed(void)
{
    struct cudaMemcpyAttributes attrs;
    struct cudaPointerAttributes pa;
    void *dst[2];
    const void *src[2];
    size_t len[2] = {CALLS_LEN, CALLS_LEN}, idx = 0;
    char *host, *dev, *gone;
    cudaStream_t s;
    int ret;

    cudaHostAlloc((void**)&host, 1 << 20, 0);
    cudaMalloc((void**)&dev, 1 << 20);
    cudaMalloc((void**)&gone, 1 << 20);
    cudaFree(gone);
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    memset(&pa, 0, sizeof(pa));
    ret = cudaPointerGetAttributes(&pa, gone + 4096);
    printf("freed: cudaPointerGetAttributes %d, type %d\n", ret,
           (int)pa.type);
    printf("freed: cudaMemcpyAsync H2D %d\n",
           (int)cudaMemcpyAsync(gone, host, CALLS_LEN,
                                cudaMemcpyHostToDevice, s));
    fflush(stdout);
    memset(&attrs, 0, sizeof(attrs));
    attrs.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
    dst[0] = dev;
    dst[1] = gone;
    src[0] = src[1] = host;
    ret = cudaMemcpyBatchAsync(dst, src, len, 2, &attrs, &idx, 1, s);
    printf("freed: cudaMemcpyBatchAsync %d, then synchronize %d\n", ret,
           (int)cudaStreamSynchronize(s));
}

int main(int argc, char **argv)
{
    cudaSetDevice(0);
    if ((argc > 1) && !strcmp(argv[1], "freed")) {
        calls_freed();
    } else {
        calls_table();
    }
    return 0;
}
