/*
 * gda_ft device datapath: common definitions.
 *
 * Everything under device/ is written once and compiled twice: by nvcc for
 * CUDA kernels and by a C compiler for CPU posters and the CI tests. Shared
 * code uses only GDA_FT_DEV_FUNC and the helpers below; no C++-only
 * constructs.
 */
#ifndef GDA_FT_DEV_DEF_H_
#define GDA_FT_DEV_DEF_H_

#include <stdint.h>
#include <stddef.h>

/* GDA_FT_DEV_COLD_FUNC: a rarely taken path that a kernel calls rather
 * than inlines, so that the posts around it stay short in the instruction
 * cache (inlined, the failover code made a post kernel 2.5 times larger) */
#ifdef __CUDACC__
#  define GDA_FT_DEV_FUNC        static __device__ __forceinline__
#  define GDA_FT_DEV_COLD_FUNC   static __device__ __noinline__
#  define GDA_FT_ON_DEVICE       1
#else
#  define GDA_FT_DEV_FUNC        static inline
#  define GDA_FT_DEV_COLD_FUNC   static inline
#  define GDA_FT_ON_DEVICE       0
#endif

/* Paths of every connection, a primary and a backup RC QP: the one count
 * that the datapath, the transport and the wire formats size by */
#define GDA_FT_NUM_PATHS         2

/* For the few pure functions host code of a CUDA program calls too */
#ifdef __CUDACC__
#  define GDA_FT_HOST_DEV_FUNC   static __host__ __device__ __forceinline__
#else
#  define GDA_FT_HOST_DEV_FUNC   static inline
#endif

#if defined(__cplusplus)
#  define GDA_FT_STATIC_ASSERT(_cond, _msg) static_assert(_cond, #_msg)
#else
#  define GDA_FT_STATIC_ASSERT(_cond, _msg) _Static_assert(_cond, #_msg)
#endif

/* Byte order: mlx5 structures are big-endian on the wire and in memory.
 * The GPU's byte permute in device code, the compiler's built-ins in host
 * code (that of a CUDA program's host functions included) */
#if defined(__CUDA_ARCH__)
#  define gda_ft_bswap16(_x) ((uint16_t)__byte_perm((_x), 0, 0x4401))
#  define gda_ft_bswap32(_x) ((uint32_t)__byte_perm((_x), 0, 0x0123))
#  define gda_ft_bswap64(_x) \
    ((((uint64_t)gda_ft_bswap32((uint32_t)(_x))) << 32) | \
     gda_ft_bswap32((uint32_t)((uint64_t)(_x) >> 32)))
#else
#  define gda_ft_bswap16(_x) __builtin_bswap16(_x)
#  define gda_ft_bswap32(_x) __builtin_bswap32(_x)
#  define gda_ft_bswap64(_x) __builtin_bswap64(_x)
#endif

#define gda_ft_htobe16(_x) gda_ft_bswap16((uint16_t)(_x))
#define gda_ft_htobe32(_x) gda_ft_bswap32((uint32_t)(_x))
#define gda_ft_htobe64(_x) gda_ft_bswap64((uint64_t)(_x))
#define gda_ft_be16toh(_x) gda_ft_bswap16((uint16_t)(_x))
#define gda_ft_be32toh(_x) gda_ft_bswap32((uint32_t)(_x))
#define gda_ft_be64toh(_x) gda_ft_bswap64((uint64_t)(_x))

/* Wrap-safe comparisons of free-running 16-bit counters (WQE indices). */
#define GDA_FT_U16_LT(_a, _b) ((int16_t)((uint16_t)(_a) - (uint16_t)(_b)) < 0)
#define GDA_FT_U16_LE(_a, _b) ((int16_t)((uint16_t)(_a) - (uint16_t)(_b)) <= 0)

#endif
