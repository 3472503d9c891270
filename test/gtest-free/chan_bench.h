/*
 * The poster side of the kernel-vs-CPU benchmark, compiled for the CPU:
 * the same device API calls a kernel thread makes, from a CPU thread, on
 * a world whose channels live in host memory.
 */
#ifndef CHAN_BENCH_H_
#define CHAN_BENCH_H_

#include "chan_harness.h"

#ifdef __cplusplus
extern "C" {
#endif

/* n times: an 8-byte put on channel 0, then quiet; samples[i] gets the
 * nanoseconds of the i-th. Returns the first failure, or OK. */
gda_ft_dev_status_t chan_bench_put_latency(chan_world_t *w, unsigned n,
                                           uint64_t *samples);

/* count puts of len bytes on channel 0 (offsets cycling over the data),
 * quiet every `window` and at the end; *elapsed_ns gets the time. */
gda_ft_dev_status_t chan_bench_put_stream(chan_world_t *w, unsigned count,
                                          uint32_t len, unsigned window,
                                          uint64_t *elapsed_ns);

#ifdef __cplusplus
}
#endif

#endif
