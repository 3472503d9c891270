/*
 * The CPU side of the kernel-vs-CPU benchmark: chan_bench.h's posters
 * compiled for the CPU.
 */
#include "chan_bench.h"

gda_ft_dev_status_t chan_bench_cpu_latency(chan_world_t *w, unsigned n,
                                           uint64_t *samples)
{
    return chan_bench_latency(&w->ep, &w->ml, n, samples);
}

gda_ft_dev_status_t chan_bench_cpu_stream(chan_world_t *w, unsigned count,
                                          uint32_t len, unsigned window,
                                          uint64_t *elapsed_ns)
{
    return chan_bench_stream(&w->ep, &w->ml, count, len, window,
                             (unsigned)(w->params.data_len / len),
                             elapsed_ns);
}
