/*
 * gda_ft device datapath: atomic operations on words that many posters
 * share (GPU threads of one kernel, or CPU threads).
 *
 * The concurrent channel (gda_ft_chan*.h) needs compare-and-swap, fetch-or,
 * fetch-add, max, and loads and stores with acquire / release order, all on
 * naturally aligned 32- and 64-bit words. They are named here once, for
 * CUDA (device-scope atomics; the words they touch are read-modify-written
 * by GPU threads only, the host only reads them or writes single-writer
 * mailboxes) and for C (GCC __atomic builtins, which ThreadSanitizer
 * understands).
 *
 * Acquire and release on the GPU come in two scopes. The channel's own
 * words (reservation, ready, completed, state, slots) are touched by GPU
 * threads alone: device scope, which keeps them in L2. What the host
 * shares (the mailbox, a CQE the HCA writes, the doorbell record the HCA
 * reads) takes the *_sys variants: system scope.
 */
#ifndef GDA_FT_DEV_ATOMIC_H_
#define GDA_FT_DEV_ATOMIC_H_

#include "gda_ft_dev_def.h"

#if !GDA_FT_ON_DEVICE
#  include <sched.h>
#endif

#if GDA_FT_ON_DEVICE

GDA_FT_DEV_FUNC uint64_t gda_ft_atomic_cas64(uint64_t *p, uint64_t expect,
                                             uint64_t desired)
{
    return (uint64_t)atomicCAS((unsigned long long*)p,
                               (unsigned long long)expect,
                               (unsigned long long)desired);
}

GDA_FT_DEV_FUNC uint32_t gda_ft_atomic_cas32(uint32_t *p, uint32_t expect,
                                             uint32_t desired)
{
    return atomicCAS((unsigned*)p, expect, desired);
}

/* A CAS that acquires what the writer of the value it replaced released:
 * cheaper than a relaxed CAS and a fence, which would also wait for every
 * store the thread has in flight (the last doorbell, on PCIe) */
GDA_FT_DEV_FUNC uint64_t gda_ft_atomic_cas64_acq(uint64_t *p, uint64_t expect,
                                                 uint64_t desired)
{
    uint64_t found;

    asm volatile("atom.acquire.gpu.cas.b64 %0, [%1], %2, %3;"
                 : "=l"(found) : "l"(p), "l"(expect), "l"(desired)
                 : "memory");
    return found;
}

GDA_FT_DEV_FUNC uint64_t gda_ft_atomic_fetch_or64(uint64_t *p, uint64_t v)
{
    return (uint64_t)atomicOr((unsigned long long*)p, (unsigned long long)v);
}

GDA_FT_DEV_FUNC uint64_t gda_ft_atomic_fetch_add64(uint64_t *p, uint64_t v)
{
    return (uint64_t)atomicAdd((unsigned long long*)p, (unsigned long long)v);
}

GDA_FT_DEV_FUNC uint32_t gda_ft_atomic_fetch_add32(uint32_t *p, uint32_t v)
{
    return atomicAdd((unsigned*)p, v);
}

GDA_FT_DEV_FUNC uint64_t gda_ft_atomic_max64(uint64_t *p, uint64_t v)
{
    return (uint64_t)atomicMax((unsigned long long*)p, (unsigned long long)v);
}

GDA_FT_DEV_FUNC uint64_t gda_ft_atomic_load_acq64(const uint64_t *p)
{
    uint64_t v;

    asm volatile("ld.acquire.gpu.u64 %0, [%1];"
                 : "=l"(v) : "l"(p) : "memory");
    return v;
}

GDA_FT_DEV_FUNC uint32_t gda_ft_atomic_load_acq32(const uint32_t *p)
{
    uint32_t v;

    asm volatile("ld.acquire.gpu.u32 %0, [%1];"
                 : "=r"(v) : "l"(p) : "memory");
    return v;
}

GDA_FT_DEV_FUNC uint32_t gda_ft_atomic_load_acq32_sys(const uint32_t *p)
{
    uint32_t v;

    asm volatile("ld.acquire.sys.u32 %0, [%1];"
                 : "=r"(v) : "l"(p) : "memory");
    return v;
}

/* A word that may change under the reader, who needs no order with it */
GDA_FT_DEV_FUNC uint64_t gda_ft_atomic_load_rlx64(const uint64_t *p)
{
    return *(const volatile uint64_t*)p;
}

GDA_FT_DEV_FUNC uint32_t gda_ft_atomic_load_rlx32(const uint32_t *p)
{
    return *(const volatile uint32_t*)p;
}

GDA_FT_DEV_FUNC void gda_ft_atomic_store_rlx64(uint64_t *p, uint64_t v)
{
    *(volatile uint64_t*)p = v;
}

GDA_FT_DEV_FUNC void gda_ft_atomic_store_rel64(uint64_t *p, uint64_t v)
{
    asm volatile("st.release.gpu.u64 [%0], %1;"
                 :: "l"(p), "l"(v) : "memory");
}

GDA_FT_DEV_FUNC void gda_ft_atomic_store_rel32(uint32_t *p, uint32_t v)
{
    asm volatile("st.release.gpu.u32 [%0], %1;"
                 :: "l"(p), "r"(v) : "memory");
}

GDA_FT_DEV_FUNC void gda_ft_atomic_store_rel32_sys(uint32_t *p, uint32_t v)
{
    asm volatile("st.release.sys.u32 [%0], %1;"
                 :: "l"(p), "r"(v) : "memory");
}

/* Lets a spinning thread give others of its warp a turn */
GDA_FT_DEV_FUNC void gda_ft_cpu_relax(void)
{
    __nanosleep(32);
}

#else /* host */

GDA_FT_DEV_FUNC uint64_t gda_ft_atomic_cas64(uint64_t *p, uint64_t expect,
                                             uint64_t desired)
{
    __atomic_compare_exchange_n(p, &expect, desired, 0, __ATOMIC_ACQ_REL,
                                __ATOMIC_ACQUIRE);
    return expect;  /* the value found: equals the old expect on success */
}

GDA_FT_DEV_FUNC uint32_t gda_ft_atomic_cas32(uint32_t *p, uint32_t expect,
                                             uint32_t desired)
{
    __atomic_compare_exchange_n(p, &expect, desired, 0, __ATOMIC_ACQ_REL,
                                __ATOMIC_ACQUIRE);
    return expect;
}

GDA_FT_DEV_FUNC uint64_t gda_ft_atomic_cas64_acq(uint64_t *p, uint64_t expect,
                                                 uint64_t desired)
{
    return gda_ft_atomic_cas64(p, expect, desired);
}

GDA_FT_DEV_FUNC uint64_t gda_ft_atomic_fetch_or64(uint64_t *p, uint64_t v)
{
    return __atomic_fetch_or(p, v, __ATOMIC_ACQ_REL);
}

GDA_FT_DEV_FUNC uint64_t gda_ft_atomic_fetch_add64(uint64_t *p, uint64_t v)
{
    return __atomic_fetch_add(p, v, __ATOMIC_ACQ_REL);
}

GDA_FT_DEV_FUNC uint32_t gda_ft_atomic_fetch_add32(uint32_t *p, uint32_t v)
{
    return __atomic_fetch_add(p, v, __ATOMIC_ACQ_REL);
}

GDA_FT_DEV_FUNC uint64_t gda_ft_atomic_max64(uint64_t *p, uint64_t v)
{
    uint64_t old = __atomic_load_n(p, __ATOMIC_ACQUIRE);

    while ((old < v) &&
           !__atomic_compare_exchange_n(p, &old, v, 1, __ATOMIC_ACQ_REL,
                                        __ATOMIC_ACQUIRE)) {
    }
    return old;
}

GDA_FT_DEV_FUNC uint64_t gda_ft_atomic_load_acq64(const uint64_t *p)
{
    return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

GDA_FT_DEV_FUNC uint32_t gda_ft_atomic_load_acq32(const uint32_t *p)
{
    return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

GDA_FT_DEV_FUNC uint64_t gda_ft_atomic_load_rlx64(const uint64_t *p)
{
    return __atomic_load_n(p, __ATOMIC_RELAXED);
}

GDA_FT_DEV_FUNC uint32_t gda_ft_atomic_load_rlx32(const uint32_t *p)
{
    return __atomic_load_n(p, __ATOMIC_RELAXED);
}

GDA_FT_DEV_FUNC void gda_ft_atomic_store_rlx64(uint64_t *p, uint64_t v)
{
    __atomic_store_n(p, v, __ATOMIC_RELAXED);
}

GDA_FT_DEV_FUNC void gda_ft_atomic_store_rel64(uint64_t *p, uint64_t v)
{
    __atomic_store_n(p, v, __ATOMIC_RELEASE);
}

GDA_FT_DEV_FUNC void gda_ft_atomic_store_rel32(uint32_t *p, uint32_t v)
{
    __atomic_store_n(p, v, __ATOMIC_RELEASE);
}

/* On a CPU, one scope */
#define gda_ft_atomic_load_acq32_sys  gda_ft_atomic_load_acq32
#define gda_ft_atomic_store_rel32_sys gda_ft_atomic_store_rel32

/* CPU posters often outnumber cores (and a software HCA needs one): a
 * waiter gives its core away rather than spin */
GDA_FT_DEV_FUNC void gda_ft_cpu_relax(void)
{
    sched_yield();
}

#endif /* GDA_FT_ON_DEVICE */

#endif
