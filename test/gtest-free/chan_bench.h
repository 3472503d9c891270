/*
 * The posters of the kernel-vs-CPU benchmark (test/perf/gda_ft_gpu_vs_cpu):
 * written once, compiled for a CUDA thread there and for a CPU thread in
 * chan_bench.c, making the same device API calls.
 */
#ifndef CHAN_BENCH_H_
#define CHAN_BENCH_H_

#include "chan_harness.h"

/* n times: an 8-byte put on channel 0, then quiet; samples[i] gets the
 * nanoseconds of the i-th. Returns the first failure, or OK. */
GDA_FT_DEV_FUNC gda_ft_dev_status_t
chan_bench_latency(const gda_ft_dev_endpoint_t *ep,
                   const gda_ft_dev_mem_list_t *ml, unsigned n,
                   uint64_t *samples)
{
    gda_ft_dev_status_t status = GDA_FT_DEV_OK;
    gda_ft_dev_request_t req;
    uint64_t start;
    unsigned i;

    for (i = 0; (i < n) && (status == GDA_FT_DEV_OK); ++i) {
        start  = gda_ft_dev_now_ns();
        status = gda_ft_dev_put_single(ep, ml, CHAN_ELEM_DATA, 0, 0, 8, 0,
                                       &req);
        if (status == GDA_FT_DEV_OK) {
            status = gda_ft_dev_quiet(ep, 0, 0);
        }
        samples[i] = gda_ft_dev_now_ns() - start;
    }
    return status;
}

/* count puts of len bytes on channel 0, cycling over `slots` offsets,
 * quiet every `window` and at the end; *elapsed_ns gets the time */
GDA_FT_DEV_FUNC gda_ft_dev_status_t
chan_bench_stream(const gda_ft_dev_endpoint_t *ep,
                  const gda_ft_dev_mem_list_t *ml, unsigned count,
                  uint32_t len, unsigned window, unsigned slots,
                  uint64_t *elapsed_ns)
{
    gda_ft_dev_status_t status = GDA_FT_DEV_OK;
    uint64_t start             = gda_ft_dev_now_ns(), off;
    gda_ft_dev_request_t req;
    unsigned i;

    for (i = 0; (i < count) && (status == GDA_FT_DEV_OK); ++i) {
        off    = (uint64_t)(i % slots) * len;
        status = gda_ft_dev_put_single(ep, ml, CHAN_ELEM_DATA, off, off, len,
                                       0, &req);
        if ((status == GDA_FT_DEV_OK) && ((i % window) == window - 1)) {
            status = gda_ft_dev_quiet(ep, 0, 0);
        }
    }
    if (status == GDA_FT_DEV_OK) {
        status = gda_ft_dev_quiet(ep, 0, 0);
    }
    *elapsed_ns = gda_ft_dev_now_ns() - start;
    return status;
}

#ifdef __cplusplus
extern "C" {
#endif

/* The CPU thread's calls, on a world in host memory (chan_bench.c) */
gda_ft_dev_status_t chan_bench_cpu_latency(chan_world_t *w, unsigned n,
                                           uint64_t *samples);
gda_ft_dev_status_t chan_bench_cpu_stream(chan_world_t *w, unsigned count,
                                          uint32_t len, unsigned window,
                                          uint64_t *elapsed_ns);

#ifdef __cplusplus
}
#endif

#endif
