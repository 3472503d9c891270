/*
 * gda_ft device datapath: descriptors shared by host and device, status
 * codes, and the memory-ordering helpers every datapath header uses.
 *
 * The descriptors are built by the host (src/uct, src/ucp_ext), copied as
 * they are into GPU memory, and used there by kernels and here by CPU
 * posters. Their layout is fixed: every field has an explicit offset,
 * padding is named, sizes are asserted, and each struct starts with a
 * version so that a kernel built against another layout can refuse it.
 */
#ifndef GDA_FT_DEV_TYPES_H_
#define GDA_FT_DEV_TYPES_H_

#include "gda_ft_dev_def.h"

/* Bumped whenever a descriptor's layout or meaning changes */
#define GDA_FT_DEV_VERSION 10  /* 2: channel interruption stamps, path
                                 progress in the peer's health; 3: a
                                 switch advanced by progress passes; 4:
                                 a re-armed path's ring starts after the
                                 host's probe (mailbox rearm_ring), which
                                 waits for the switch's end (done_epoch);
                                 the peer's finding (peer_left); 5: the
                                 channel's outcome table, the mailbox's
                                 awaits_rearm; 6: the endpoint's flags
                                 (the byte order of fetched values); 7:
                                 a memory element's length per end; 8:
                                 the peer's state (health peer_state,
                                 mailbox peer_state); 9: the channel's
                                 host turn; 10: a doorbell left to the
                                 next publication (rung, db_defer) */


/*
 * Status of a datapath call (design §6). Every wait ends with one of these;
 * an error completion is GDA_FT_DEV_ERROR with the CQE syndrome in
 * gda_ft_dev_cqe_info_t, never "not yet" and never a trap.
 */
typedef enum {
    GDA_FT_DEV_OK            = 0, /* done */
    GDA_FT_DEV_INPROGRESS    = 1, /* not completed yet: poll again */
    GDA_FT_DEV_NO_RESOURCE   = 2, /* send/receive queue full: retire first */
    GDA_FT_DEV_PATH_SWITCHED = 3, /* done, after moving to the backup path */
    GDA_FT_DEV_IN_DOUBT      = 4, /* atomic whose outcome cannot be known */
    GDA_FT_DEV_NO_PATH       = 5, /* both paths to the peer are gone */
    GDA_FT_DEV_ERROR         = 6, /* error completion or invalid argument */
    GDA_FT_DEV_TIMEOUT       = 7, /* a wait ran out of the caller's time */
    GDA_FT_DEV_PEER_GONE     = 8  /* the host half gave the peer up (both
                                     paths dead, no answer from it): posts
                                     and waits fail at once */
} gda_ft_dev_status_t;


/*
 * A status and a CQE syndrome packed into one 32-bit word, for channels that
 * carry a single integer (a kernel's error slot read by the host):
 * bits 0..7 status, bits 8..15 syndrome, bits 16..23 vendor syndrome.
 */
#define GDA_FT_DEV_RESULT(_status, _synd, _vendor_synd) \
    ((uint32_t)(_status) | ((uint32_t)(uint8_t)(_synd) << 8) | \
     ((uint32_t)(uint8_t)(_vendor_synd) << 16))
#define GDA_FT_DEV_RESULT_STATUS(_r)      ((gda_ft_dev_status_t)((_r) & 0xff))
#define GDA_FT_DEV_RESULT_SYNDROME(_r)    ((uint8_t)((_r) >> 8))
#define GDA_FT_DEV_RESULT_VENDOR_SYND(_r) ((uint8_t)((_r) >> 16))


/* What a CQ poll learned from one CQE, in host byte order */
typedef struct gda_ft_dev_cqe_info {
    uint32_t byte_cnt;     /* bytes received / read / atomic size */
    uint32_t qpn;          /* QP the completion belongs to */
    uint32_t imm;          /* immediate data of *_IMM receive completions */
    uint16_t wqe_counter;  /* index of the completed WQE */
    uint8_t  opcode;       /* GDA_FT_MLX5_CQE_* */
    uint8_t  syndrome;     /* GDA_FT_MLX5_SYND_* for error CQEs, else 0 */
    uint8_t  vendor_synd;  /* vendor syndrome for error CQEs, else 0 */
    uint8_t  wqe_opcode;   /* send opcode of the failed WQE (REQ_ERR) */
    uint8_t  reserved[2];
} gda_ft_dev_cqe_info_t;


/* One scatter/gather element of a receive WQE */
typedef struct gda_ft_dev_sge {
    uint64_t addr;
    uint32_t length;
    uint32_t lkey;
} gda_ft_dev_sge_t;


/*
 * Send queue of one RC QP. One poster owns it at a time (a thread, lane 0
 * of a warp, or a CPU thread holding the endpoint); the indices below are
 * free-running 16-bit counters in WQEBBs, compared with GDA_FT_U16_*.
 * Invariant: ci <= pi, pi - ci <= wqebb_cnt.
 */
typedef struct gda_ft_dev_sq {
    uint16_t           version;      /*  0: GDA_FT_DEV_VERSION */
    uint16_t           wqebb_mask;   /*  2: wqebb_cnt - 1 */
    uint32_t           wqebb_cnt;    /*  4: power of 2, at most 32768 */
    uint8_t           *buf;          /*  8: wqebb_cnt * 64 bytes */
    volatile uint32_t *dbrec;        /* 16: [0] RQ, [1] SQ counter, BE */
    volatile uint64_t *uar;          /* 24: 8-byte doorbell register */
    uint32_t           qpn;          /* 32 */
    int32_t            wake_fd;      /* 36: eventfd of a sleeping soft HCA,
                                        -1 when none (always on a GPU) */
    uint16_t           pi;           /* 40: next free WQEBB */
    uint16_t           last_wqe_idx; /* 42: first WQEBB of the last WQE */
    uint16_t           ci;           /* 44: WQEBBs before it are retired */
    uint16_t           max_inline;   /* 46: inline bytes the HCA accepts */
    uint16_t           db_pi;        /* 48: pi told to the HCA by the last
                                        doorbell */
    uint16_t           reserved0;    /* 50 */
    uint32_t           reserved1;    /* 52 */
    const int32_t     *wake_armed;   /* 56: nonzero while the soft HCA's
                                        engine sleeps or is about to: a
                                        doorbell writes wake_fd only then;
                                        NULL: every doorbell does */
} gda_ft_dev_sq_t;


/* Completion queue: a ring with owner bits, or one collapsed CQE */
typedef struct gda_ft_dev_cq {
    uint16_t  version;    /*  0: GDA_FT_DEV_VERSION */
    uint8_t   collapsed;  /*  2: 1: every completion overwrites CQE 0 */
    uint8_t   reserved0;  /*  3 */
    uint32_t  cqe_cnt;    /*  4: power of 2; 1 when collapsed */
    uint8_t  *buf;        /*  8: cqe_cnt * 64 bytes */
    uint32_t  ci;         /* 16: free-running consumer index (ring) */
    uint32_t  reserved[3];/* 20 */
} gda_ft_dev_cq_t;


/* Receive queue, for host SEND/RECV active messages */
typedef struct gda_ft_dev_rq {
    uint16_t           version;  /*  0: GDA_FT_DEV_VERSION */
    uint16_t           wqe_mask; /*  2: wqe_cnt - 1 */
    uint32_t           wqe_cnt;  /*  4: power of 2, at most 32768 */
    uint8_t           *buf;      /*  8: wqe_cnt * stride bytes */
    volatile uint32_t *dbrec;    /* 16: same record as the SQ's, [0] used */
    uint32_t           stride;   /* 24: bytes per WQE, power of 2, >= 16 */
    uint16_t           pi;       /* 28: next free receive WQE */
    uint16_t           ci;       /* 30: WQEs before it are consumed */
} gda_ft_dev_rq_t;


GDA_FT_STATIC_ASSERT(sizeof(void*) == 8, dev_pointer_size);
GDA_FT_STATIC_ASSERT(sizeof(gda_ft_dev_cqe_info_t) == 20, dev_cqe_info_size);
GDA_FT_STATIC_ASSERT(sizeof(gda_ft_dev_sge_t) == 16, dev_sge_size);
GDA_FT_STATIC_ASSERT(sizeof(gda_ft_dev_sq_t) == 64, dev_sq_size);
GDA_FT_STATIC_ASSERT(offsetof(gda_ft_dev_sq_t, buf) == 8, dev_sq_buf_offset);
GDA_FT_STATIC_ASSERT(offsetof(gda_ft_dev_sq_t, qpn) == 32, dev_sq_qpn_offset);
GDA_FT_STATIC_ASSERT(offsetof(gda_ft_dev_sq_t, pi) == 40, dev_sq_pi_offset);
GDA_FT_STATIC_ASSERT(offsetof(gda_ft_dev_sq_t, wake_armed) == 56,
                     dev_sq_wake_armed_offset);
GDA_FT_STATIC_ASSERT(offsetof(gda_ft_dev_sq_t, db_pi) == 48,
                     dev_sq_db_pi_offset);
GDA_FT_STATIC_ASSERT(sizeof(gda_ft_dev_cq_t) == 32, dev_cq_size);
GDA_FT_STATIC_ASSERT(offsetof(gda_ft_dev_cq_t, ci) == 16, dev_cq_ci_offset);
GDA_FT_STATIC_ASSERT(sizeof(gda_ft_dev_rq_t) == 32, dev_rq_size);
GDA_FT_STATIC_ASSERT(offsetof(gda_ft_dev_rq_t, pi) == 28, dev_rq_pi_offset);


GDA_FT_HOST_DEV_FUNC const char *
gda_ft_dev_status_str(gda_ft_dev_status_t status)
{
    switch (status) {
    case GDA_FT_DEV_OK:            return "ok";
    case GDA_FT_DEV_INPROGRESS:    return "in progress";
    case GDA_FT_DEV_NO_RESOURCE:   return "no resource";
    case GDA_FT_DEV_PATH_SWITCHED: return "path switched";
    case GDA_FT_DEV_IN_DOUBT:      return "in doubt";
    case GDA_FT_DEV_NO_PATH:       return "no path";
    case GDA_FT_DEV_ERROR:         return "error";
    case GDA_FT_DEV_TIMEOUT:       return "timeout";
    case GDA_FT_DEV_PEER_GONE:     return "peer gone";
    }
    return "unknown";
}


/*
 * Memory ordering. The datapath needs exactly three orderings, named here;
 * nothing else in device/ issues fences.
 *
 * gda_ft_dev_fence_store(): WQE and receive-segment stores become visible
 *     to the HCA (DMA or another thread) before the doorbell record store.
 * gda_ft_dev_fence_mmio():  the doorbell record is visible before the
 *     doorbell register write (rdma-core's mmio_wc_start), and on the host
 *     the write-combined doorbell leaves the CPU (mmio_flush_writes).
 * gda_ft_dev_fence_load():  the CQE owner/opcode byte is read before the
 *     rest of the CQE.
 *
 * Shared words are read and written once, through volatile accesses.
 */
#if GDA_FT_ON_DEVICE

GDA_FT_DEV_FUNC void gda_ft_dev_fence_store(void)
{
    __threadfence_system();
}

/* A release fence, not __threadfence_system(): that one is sequentially
 * consistent, so it also acquires, and invalidates the SM's L1 (CCTL.IVALL
 * in the SASS) on every doorbell: the next post's reads of the channel
 * went to L2 again (one warp's 32-WQE batch through a poster: 5.0 -> 4.5
 * us on an H200) */
GDA_FT_DEV_FUNC void gda_ft_dev_fence_mmio(void)
{
    asm volatile("fence.release.sys;" ::: "memory");
}

GDA_FT_DEV_FUNC void gda_ft_dev_fence_load(void)
{
    __threadfence_system();
}

#else /* host */

GDA_FT_DEV_FUNC void gda_ft_dev_fence_store(void)
{
#if defined(__aarch64__)
    __asm__ __volatile__("dmb oshst" ::: "memory");
#else
    __atomic_thread_fence(__ATOMIC_RELEASE);
#endif
}

GDA_FT_DEV_FUNC void gda_ft_dev_fence_mmio(void)
{
#if defined(__x86_64__)
    __asm__ __volatile__("sfence" ::: "memory");
#elif defined(__aarch64__)
    __asm__ __volatile__("dsb st" ::: "memory");
#else
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
#endif
}

GDA_FT_DEV_FUNC void gda_ft_dev_fence_load(void)
{
#if defined(__aarch64__)
    __asm__ __volatile__("dmb oshld" ::: "memory");
#else
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
#endif
}

#endif /* GDA_FT_ON_DEVICE */


/*
 * Words shared with the HCA (doorbell records, CQE tails). On the GPU a
 * volatile access, ordered by the fences above. On the CPU an acquire load
 * or release store: the same instruction on x86, and what ThreadSanitizer
 * needs to see the soft HCA's engine thread synchronize with the poster.
 */
#if GDA_FT_ON_DEVICE
#  define GDA_FT_DEV_LOAD_ONCE(_p)       (*(_p))
#  define GDA_FT_DEV_STORE_ONCE(_p, _v)  (*(_p) = (_v))
#else
#  define GDA_FT_DEV_LOAD_ONCE(_p)       __atomic_load_n(_p, __ATOMIC_ACQUIRE)
#  define GDA_FT_DEV_STORE_ONCE(_p, _v) \
        __atomic_store_n(_p, _v, __ATOMIC_RELEASE)
#endif

GDA_FT_DEV_FUNC uint8_t gda_ft_dev_read_once_u8(const volatile uint8_t *p)
{
    return GDA_FT_DEV_LOAD_ONCE(p);
}

GDA_FT_DEV_FUNC uint32_t gda_ft_dev_read_once_u32(const volatile uint32_t *p)
{
    return GDA_FT_DEV_LOAD_ONCE(p);
}

GDA_FT_DEV_FUNC void gda_ft_dev_write_once_u32(volatile uint32_t *p,
                                               uint32_t value)
{
    GDA_FT_DEV_STORE_ONCE(p, value);
}

GDA_FT_DEV_FUNC void gda_ft_dev_write_once_u64(volatile uint64_t *p,
                                               uint64_t value)
{
    GDA_FT_DEV_STORE_ONCE(p, value);
}

#endif
