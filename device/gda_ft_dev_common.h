/*
 * gda_ft device datapath: what the channels (gda_ft_chan_*.h) and their
 * host half share: the clock, 24-bit PSN arithmetic, and which error
 * syndromes blame one operation.
 */
#ifndef GDA_FT_DEV_COMMON_H_
#define GDA_FT_DEV_COMMON_H_

#include "gda_ft_mlx5_prm.h"

#if !GDA_FT_ON_DEVICE
#  include <time.h>
#endif

/* Monotonic nanoseconds: %globaltimer on the GPU, CLOCK_MONOTONIC here.
 * Never compare one with the other. */
GDA_FT_DEV_FUNC uint64_t gda_ft_dev_now_ns(void)
{
#if GDA_FT_ON_DEVICE
    uint64_t t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
#else
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
#endif
}

/* Log2 of a power of two */
GDA_FT_DEV_FUNC uint32_t gda_ft_dev_log2(uint32_t pow2)
{
#if GDA_FT_ON_DEVICE
    return 31 - __clz(pow2);
#else
    return 31 - __builtin_clz(pow2);
#endif
}

/* PSNs are 24-bit sequence numbers */
GDA_FT_DEV_FUNC uint32_t gda_ft_dev_psn_add(uint32_t psn, uint32_t n)
{
    return (psn + n) & 0xffffff;
}

GDA_FT_DEV_FUNC int32_t gda_ft_dev_psn_diff(uint32_t a, uint32_t b)
{
    return ((int32_t)((a - b) << 8)) >> 8;
}

/* Error syndromes that blame the operation, not the path to the peer:
 * another path would refuse it too */
GDA_FT_DEV_FUNC int gda_ft_dev_syndrome_is_op_error(uint8_t syndrome)
{
    switch (syndrome) {
    case GDA_FT_MLX5_SYND_LOCAL_LENGTH_ERR:
    case GDA_FT_MLX5_SYND_LOCAL_QP_OP_ERR:
    case GDA_FT_MLX5_SYND_LOCAL_PROT_ERR:
    case GDA_FT_MLX5_SYND_LOCAL_ACCESS_ERR:
    case GDA_FT_MLX5_SYND_REMOTE_INVAL_REQ_ERR:
    case GDA_FT_MLX5_SYND_REMOTE_ACCESS_ERR:
        return 1;
    default:
        return 0;
    }
}

#endif
