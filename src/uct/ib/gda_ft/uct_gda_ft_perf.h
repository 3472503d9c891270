/*
 * gda_ft UCT transport: the performance estimates both kinds of interface
 * report in iface_query, for UCP to pick its lanes by.
 *
 * UCP sends its own interfaces' estimates to the peer in the worker
 * address. UCX_ADDRESS_VERSION=v2 (UCX 1.13, ucp_address.c) packs each in
 * one byte (UCS_FP8, ucp_types.h): 4 bits of exponent and 4 of mantissa,
 * latency in ns from 16 to 126976, overhead in ns from 1 to 3968,
 * bandwidth from 512 MiB/s to 4 TiB/s. A value between two steps is
 * truncated, one above the range becomes half the range's top (1 ms of
 * latency arrives as 65.5 us), one below it its bottom, and a bandwidth in
 * [256, 512) MiB/s arrives as almost 0 B/s. So every value here is one the
 * byte carries exactly, (1 + k/16) * 2^e in range: the peer sees what we
 * use, with either address version.
 */
#ifndef UCT_GDA_FT_PERF_H_
#define UCT_GDA_FT_PERF_H_

#include <ucs/sys/math.h>


/*
 * Software HCA, measured with ucx_perftest between two processes over UDP
 * loopback (2 cores): put_lat ~20 us, put_bw of 64 KiB 420 to 700 MB/s
 * (docs/benchmarks.md); the CPU cost of a post includes the doorbell and
 * the engine's wake-up write.
 */
#define UCT_GDA_FT_PERF_SOFT_LATENCY    20480e-9          /* 1.25 * 2^14 ns */
#define UCT_GDA_FT_PERF_SOFT_OVERHEAD   1536e-9           /* 1.5 * 2^10 ns */
#define UCT_GDA_FT_PERF_SOFT_BANDWIDTH  (512.0 * UCS_MBYTE)  /* 2^29 B/s */

/* A ConnectX port: ~2 us, near the line rate of 100 Gb/s */
#define UCT_GDA_FT_PERF_HW_LATENCY      2048e-9           /* 2^11 ns */
#define UCT_GDA_FT_PERF_HW_OVERHEAD     80e-9             /* 1.25 * 2^6 ns */
#define UCT_GDA_FT_PERF_HW_BANDWIDTH    (11776.0 * UCS_MBYTE) /* 1.4375 *
                                                                 2^33 B/s */

/*
 * The out-of-band channel (a TCP connection), slow on purpose so that UCP
 * uses it for wireup only: the slowest latency and overhead, and the least
 * bandwidth, that the address carries
 */
#define UCT_GDA_FT_PERF_OOB_LATENCY     126976e-9         /* 1.9375 * 2^16 ns */
#define UCT_GDA_FT_PERF_OOB_OVERHEAD    3968e-9           /* 1.9375 * 2^11 ns */
#define UCT_GDA_FT_PERF_OOB_BANDWIDTH   (512.0 * UCS_MBYTE)  /* 2^29 B/s */

#endif
