/*
 * The CPU poster of the kernel-vs-CPU benchmark (see chan_bench.h). The
 * kernel's side, test/perf/gda_ft_gpu_vs_cpu.cu, makes the same calls.
 */
#include "chan_bench.h"

gda_ft_dev_status_t chan_bench_put_latency(chan_world_t *w, unsigned n,
                                           uint64_t *samples)
{
    gda_ft_dev_status_t status = GDA_FT_DEV_OK;
    gda_ft_dev_request_t req;
    uint64_t start;
    unsigned i;

    for (i = 0; (i < n) && (status == GDA_FT_DEV_OK); ++i) {
        start  = gda_ft_dev_now_ns();
        status = gda_ft_dev_put_single(&w->ep, &w->ml, CHAN_ELEM_DATA, 0, 0,
                                       8, 0, &req);
        if (status == GDA_FT_DEV_OK) {
            status = gda_ft_dev_quiet(&w->ep, 0, 0);
        }
        samples[i] = gda_ft_dev_now_ns() - start;
    }
    return status;
}

gda_ft_dev_status_t chan_bench_put_stream(chan_world_t *w, unsigned count,
                                          uint32_t len, unsigned window,
                                          uint64_t *elapsed_ns)
{
    unsigned slots             = (unsigned)(w->params.data_len / len);
    gda_ft_dev_status_t status = GDA_FT_DEV_OK;
    uint64_t start             = gda_ft_dev_now_ns(), off;
    gda_ft_dev_request_t req;
    unsigned i;

    for (i = 0; (i < count) && (status == GDA_FT_DEV_OK); ++i) {
        off    = (uint64_t)(i % slots) * len;
        status = gda_ft_dev_put_single(&w->ep, &w->ml, CHAN_ELEM_DATA, off,
                                       off, len, 0, &req);
        if ((status == GDA_FT_DEV_OK) && ((i % window) == window - 1)) {
            status = gda_ft_dev_quiet(&w->ep, 0, 0);
        }
    }
    if (status == GDA_FT_DEV_OK) {
        status = gda_ft_dev_quiet(&w->ep, 0, 0);
    }
    *elapsed_ns = gda_ft_dev_now_ns() - start;
    return status;
}
