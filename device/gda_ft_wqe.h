/*
 * gda_ft device datapath: mlx5 send WQEs, receive WQEs and doorbells.
 *
 * Three layers, each usable on its own:
 *  - segment builders (gda_ft_wqe_set_*): fill one 16-byte segment (two for
 *    the 8-byte masked compare-swap, several for inline data) in host byte
 *    order arguments, big-endian in memory;
 *  - post functions (gda_ft_sq_post_*): reserve WQEBBs in the send queue,
 *    build one complete WQE and return its index (the free-running 16-bit
 *    WQEBB counter that the CQE's wqe_counter reports back);
 *  - the doorbell (gda_ft_sq_ring_db): tells the HCA about everything posted
 *    since the last one.
 *
 * A WQE may span several 64-byte WQEBBs; one that crosses the end of the
 * ring continues at its start, as mlx5 hardware reads it, so every segment
 * address goes through gda_ft_wqe_seg(), which wraps.
 *
 * The send queue has one poster at a time (see gda_ft_dev_sq_t).
 */
#ifndef GDA_FT_WQE_H_
#define GDA_FT_WQE_H_

#include "gda_ft_dev_types.h"
#include "gda_ft_mlx5_prm.h"

#if !GDA_FT_ON_DEVICE
#  include <string.h>
#  include <unistd.h>
#endif


/* flags of the post functions */
enum {
    GDA_FT_WQE_SIGNALED  = 1u << 0, /* generate a CQE (CQ_UPDATE) */
    GDA_FT_WQE_FENCE     = 1u << 1, /* wait for earlier reads/atomics */
    GDA_FT_WQE_SOLICITED = 1u << 2  /* solicited event at the receiver */
};

/* ctrl.qpn_ds holds ds in 6 bits */
#define GDA_FT_WQE_MAX_DS      63

/* Largest inline payload of any WQE: ctrl + raddr + inline header */
#define GDA_FT_WQE_MAX_INLINE \
    ((unsigned)((GDA_FT_WQE_MAX_DS - 2) * GDA_FT_MLX5_DS_SIZE - \
                sizeof(gda_ft_mlx5_inline_seg_t)))


/* ---- geometry ------------------------------------------------------------ */

/* Size of a WQE in WQEBBs, from its size in 16-byte segments: the only
 * place where it is computed */
GDA_FT_DEV_FUNC unsigned gda_ft_wqe_ds_to_wqebbs(unsigned ds)
{
    return (ds * GDA_FT_MLX5_DS_SIZE + GDA_FT_MLX5_WQE_BB - 1) /
           GDA_FT_MLX5_WQE_BB;
}

/* 16-byte segments taken by an inline segment of len bytes */
GDA_FT_DEV_FUNC unsigned gda_ft_wqe_inline_ds(uint32_t len)
{
    return (unsigned)((sizeof(gda_ft_mlx5_inline_seg_t) + len +
                       GDA_FT_MLX5_DS_SIZE - 1) / GDA_FT_MLX5_DS_SIZE);
}

/* Address of 16-byte segment `seg` of the WQE starting at WQEBB `wqe_idx`,
 * wrapped to the start of the ring when the WQE crosses its end */
GDA_FT_DEV_FUNC void *gda_ft_wqe_seg(const gda_ft_dev_sq_t *sq,
                                     uint16_t wqe_idx, unsigned seg)
{
    uint32_t ring_bytes = sq->wqebb_cnt * GDA_FT_MLX5_WQE_BB;
    uint32_t offset     = ((uint32_t)wqe_idx * GDA_FT_MLX5_WQE_BB +
                           seg * GDA_FT_MLX5_DS_SIZE) & (ring_bytes - 1);

    return sq->buf + offset;
}

/* A message length a data segment can carry (the top bit means inline) */
GDA_FT_DEV_FUNC int gda_ft_wqe_length_valid(uint32_t length)
{
    return !(length & GDA_FT_MLX5_INLINE_SEG);
}

GDA_FT_DEV_FUNC uint8_t gda_ft_wqe_fm_ce_se(unsigned flags)
{
    uint8_t fm_ce_se = 0;

    if (flags & GDA_FT_WQE_SIGNALED) {
        fm_ce_se |= GDA_FT_MLX5_WQE_CTRL_CQ_UPDATE;
    }
    if (flags & GDA_FT_WQE_FENCE) {
        fm_ce_se |= GDA_FT_MLX5_WQE_CTRL_FENCE;
    }
    if (flags & GDA_FT_WQE_SOLICITED) {
        fm_ce_se |= GDA_FT_MLX5_WQE_CTRL_SOLICITED;
    }
    return fm_ce_se;
}

GDA_FT_DEV_FUNC void gda_ft_wqe_copy_bytes(void *dst, const void *src,
                                           uint32_t length)
{
#if GDA_FT_ON_DEVICE
    uint8_t       *d = (uint8_t*)dst;
    const uint8_t *s = (const uint8_t*)src;
    uint32_t       i;

    for (i = 0; i < length; ++i) {
        d[i] = s[i];
    }
#else
    memcpy(dst, src, length);
#endif
}

/*
 * Copies one 64-byte WQEBB (both 64-byte aligned): its eight words are
 * loaded before any is stored, and the first segment also goes to
 * *ctrl_p unless NULL. A kernel reading a ring in host-mapped memory pays
 * a PCIe round trip per dependent load: a byte loop costs 64 of them per
 * WQEBB, and a replay of a few hundred WQEs took milliseconds.
 */
GDA_FT_DEV_FUNC void gda_ft_wqe_copy_bb(void *dst, const void *src,
                                        gda_ft_mlx5_ctrl_seg_t *ctrl_p)
{
    const uint64_t *s = (const uint64_t*)src;
    uint64_t       *d = (uint64_t*)dst;
    uint64_t       w[GDA_FT_MLX5_WQE_BB / sizeof(uint64_t)];
    unsigned       i;

    for (i = 0; i < GDA_FT_MLX5_WQE_BB / sizeof(uint64_t); ++i) {
        w[i] = s[i];
    }
    for (i = 0; i < GDA_FT_MLX5_WQE_BB / sizeof(uint64_t); ++i) {
        d[i] = w[i];
    }
    if (ctrl_p != NULL) {
        gda_ft_wqe_copy_bytes(ctrl_p, w, sizeof(*ctrl_p));
    }
}


/* ---- segment builders ---------------------------------------------------- */

/*
 * Stores one 16-byte segment given as four words as they lie in
 * (little-endian) memory: on a GPU one 16-byte store, which across PCIe is
 * one write where a segment's fields stored one by one were up to four.
 * Segments are 16-byte aligned in every ring.
 */
GDA_FT_DEV_FUNC void gda_ft_wqe_store_seg(void *seg, uint32_t w0, uint32_t w1,
                                          uint32_t w2, uint32_t w3)
{
#if GDA_FT_ON_DEVICE
    *(uint4*)seg = make_uint4(w0, w1, w2, w3);
#else
    uint32_t w[4] = {w0, w1, w2, w3};

    memcpy(seg, w, sizeof(w));
#endif
}

/* A segment of two big-endian 8-byte fields */
GDA_FT_DEV_FUNC void gda_ft_wqe_store_seg_be64(void *seg, uint64_t first,
                                               uint64_t second)
{
    uint64_t first_be  = gda_ft_htobe64(first);
    uint64_t second_be = gda_ft_htobe64(second);

    gda_ft_wqe_store_seg(seg, (uint32_t)first_be, (uint32_t)(first_be >> 32),
                         (uint32_t)second_be, (uint32_t)(second_be >> 32));
}

/* Writes a control segment; returns the doorbell word of its WQE */
GDA_FT_DEV_FUNC uint64_t
gda_ft_wqe_set_ctrl(void *seg, uint8_t opcode, uint8_t opmod,
                    uint16_t wqe_idx, uint32_t qpn, unsigned ds,
                    uint8_t fm_ce_se, uint32_t imm)
{
    uint32_t opmod_idx_opcode = gda_ft_htobe32(((uint32_t)opmod << 24) |
                                               ((uint32_t)wqe_idx << 8) |
                                               opcode);
    uint32_t qpn_ds           = gda_ft_htobe32((qpn << 8) | (ds & 0x3f));

    /* signature and rsvd 0, then fm_ce_se: byte 11 */
    gda_ft_wqe_store_seg(seg, opmod_idx_opcode, qpn_ds,
                         (uint32_t)fm_ce_se << 24, gda_ft_htobe32(imm));
    /* the segment's first 8 bytes as they lie in (little-endian) memory:
     * what a doorbell carries, so that the poster need not read them back
     * from a ring that may be across PCIe */
    return ((uint64_t)qpn_ds << 32) | opmod_idx_opcode;
}

GDA_FT_DEV_FUNC void gda_ft_wqe_set_raddr(void *seg, uint64_t raddr,
                                          uint32_t rkey)
{
    uint64_t be = gda_ft_htobe64(raddr);

    gda_ft_wqe_store_seg(seg, (uint32_t)be, (uint32_t)(be >> 32),
                         gda_ft_htobe32(rkey), 0);
}

GDA_FT_DEV_FUNC void gda_ft_wqe_set_data(void *seg, uint32_t length,
                                         uint32_t lkey, uint64_t addr)
{
    uint64_t be = gda_ft_htobe64(addr);

    gda_ft_wqe_store_seg(seg, gda_ft_htobe32(length), gda_ft_htobe32(lkey),
                         (uint32_t)be, (uint32_t)(be >> 32));
}

/* Inline segment at segment `seg` of the WQE at `wqe_idx`: header, then the
 * data, which may run past the end of the ring and continue at its start */
GDA_FT_DEV_FUNC void
gda_ft_wqe_set_inline(const gda_ft_dev_sq_t *sq, uint16_t wqe_idx,
                      unsigned seg, const void *data, uint32_t length)
{
    gda_ft_mlx5_inline_seg_t *iseg =
            (gda_ft_mlx5_inline_seg_t*)gda_ft_wqe_seg(sq, wqe_idx, seg);
    uint8_t  *dst     = (uint8_t*)(iseg + 1);
    uint8_t  *end     = sq->buf + sq->wqebb_cnt * GDA_FT_MLX5_WQE_BB;
    uint32_t  to_end  = (uint32_t)(end - dst);

    iseg->byte_count = gda_ft_htobe32(length | GDA_FT_MLX5_INLINE_SEG);
    if (length <= to_end) {
        gda_ft_wqe_copy_bytes(dst, data, length);
    } else {
        gda_ft_wqe_copy_bytes(dst, data, to_end);
        gda_ft_wqe_copy_bytes(sq->buf, (const uint8_t*)data + to_end,
                              length - to_end);
    }
}

/*
 * Inline data of at most 16 bytes given as two words (the bytes as they
 * lie in little-endian memory), stored with its header as one segment and,
 * past 12 bytes, a word of the next. A caller's operands stay in
 * registers: a byte copy from their address puts them in local memory,
 * which on a GPU every acquire's L1 invalidation sends to L2 and back, a
 * round trip per read. Data that would wrap the ring takes the byte copy.
 */
GDA_FT_DEV_FUNC void
gda_ft_wqe_set_inline_words(const gda_ft_dev_sq_t *sq, uint16_t wqe_idx,
                            unsigned seg, uint64_t lo, uint64_t hi,
                            uint32_t length)
{
    gda_ft_mlx5_inline_seg_t *iseg =
            (gda_ft_mlx5_inline_seg_t*)gda_ft_wqe_seg(sq, wqe_idx, seg);
    uint32_t *dst = (uint32_t*)(iseg + 1);
    int wide      = (length > 3 * sizeof(uint32_t));
    uint64_t data[2];

    if (wide &&
        ((uint8_t*)(dst + 4) > sq->buf + sq->wqebb_cnt * GDA_FT_MLX5_WQE_BB)) {
        data[0] = lo;
        data[1] = hi;
        gda_ft_wqe_set_inline(sq, wqe_idx, seg, data, length);
        return;
    }
    /* the bytes past length are not read */
    gda_ft_wqe_store_seg(iseg, gda_ft_htobe32(length | GDA_FT_MLX5_INLINE_SEG),
                         (uint32_t)lo, (uint32_t)(lo >> 32), (uint32_t)hi);
    if (wide) {
        dst[3] = (uint32_t)(hi >> 32);
    }
}

/* Standard 8-byte atomics: swap_add is the swap value (CS) or addend (FA) */
GDA_FT_DEV_FUNC void gda_ft_wqe_set_atomic(void *seg, uint64_t swap_add,
                                           uint64_t compare)
{
    gda_ft_wqe_store_seg_be64(seg, swap_add, compare);
}

GDA_FT_DEV_FUNC void
gda_ft_wqe_set_masked_cs32(void *seg, uint32_t swap, uint32_t compare,
                           uint32_t swap_mask, uint32_t compare_mask)
{
    gda_ft_wqe_store_seg(seg, gda_ft_htobe32(swap), gda_ft_htobe32(compare),
                         gda_ft_htobe32(swap_mask),
                         gda_ft_htobe32(compare_mask));
}

/* 8-byte masked compare-swap: 32 bytes, given as its two 16-byte halves
 * because the second may wrap to the start of the ring */
GDA_FT_DEV_FUNC void
gda_ft_wqe_set_masked_cs64(void *seg0, void *seg1, uint64_t swap,
                           uint64_t compare, uint64_t swap_mask,
                           uint64_t compare_mask)
{
    gda_ft_wqe_store_seg_be64(seg0, swap, compare);
    gda_ft_wqe_store_seg_be64(seg1, swap_mask, compare_mask);
}

GDA_FT_DEV_FUNC void gda_ft_wqe_set_masked_fa32(void *seg, uint32_t add,
                                                uint32_t field_boundary)
{
    gda_ft_wqe_store_seg(seg, gda_ft_htobe32(add),
                         gda_ft_htobe32(field_boundary), 0, 0);
}

GDA_FT_DEV_FUNC void gda_ft_wqe_set_masked_fa64(void *seg, uint64_t add,
                                                uint64_t field_boundary)
{
    gda_ft_wqe_store_seg_be64(seg, add, field_boundary);
}


/* ---- send queue ---------------------------------------------------------- */

/* wqebb_cnt: power of 2, at most 32768; buf: 64-byte aligned. wake_fd and
 * wake_armed: the HCA QP's (gda_ft_sq_wake), -1 and NULL when none */
GDA_FT_HOST_DEV_FUNC void
gda_ft_dev_sq_init(gda_ft_dev_sq_t *sq, void *buf, uint32_t wqebb_cnt,
                   uint32_t qpn, volatile uint32_t *dbrec,
                   volatile uint64_t *uar, int wake_fd,
                   const int32_t *wake_armed, unsigned max_inline)
{
    sq->version      = GDA_FT_DEV_VERSION;
    sq->wqebb_mask   = (uint16_t)(wqebb_cnt - 1);
    sq->wqebb_cnt    = wqebb_cnt;
    sq->buf          = (uint8_t*)buf;
    sq->dbrec        = dbrec;
    sq->uar          = uar;
    sq->qpn          = qpn;
    sq->wake_fd      = wake_fd;
    sq->pi           = 0;
    sq->last_wqe_idx = 0;
    sq->ci           = 0;
    sq->max_inline   = (uint16_t)((max_inline < GDA_FT_WQE_MAX_INLINE) ?
                                  max_inline : GDA_FT_WQE_MAX_INLINE);
    sq->db_pi        = 0;
    sq->reserved0    = 0;
    sq->reserved1    = 0;
    sq->wake_armed   = wake_armed;
}

/* WQEBBs that can be posted before the oldest outstanding WQE retires */
GDA_FT_DEV_FUNC uint32_t gda_ft_sq_free_wqebbs(const gda_ft_dev_sq_t *sq)
{
    return sq->wqebb_cnt - (uint16_t)(sq->pi - sq->ci);
}

GDA_FT_DEV_FUNC int gda_ft_sq_has_space(const gda_ft_dev_sq_t *sq,
                                        unsigned ds)
{
    return gda_ft_wqe_ds_to_wqebbs(ds) <= gda_ft_sq_free_wqebbs(sq);
}

/* Takes the WQEBBs of a WQE of `ds` segments; *wqe_idx_p: its first one */
GDA_FT_DEV_FUNC gda_ft_dev_status_t
gda_ft_sq_reserve(gda_ft_dev_sq_t *sq, unsigned ds, uint16_t *wqe_idx_p)
{
    unsigned wqebbs = gda_ft_wqe_ds_to_wqebbs(ds);

    if ((ds > GDA_FT_WQE_MAX_DS) || (wqebbs > sq->wqebb_cnt)) {
        return GDA_FT_DEV_ERROR;
    }
    if (wqebbs > gda_ft_sq_free_wqebbs(sq)) {
        return GDA_FT_DEV_NO_RESOURCE;
    }

    *wqe_idx_p = sq->pi;
    sq->pi     = (uint16_t)(sq->pi + wqebbs);
    return GDA_FT_DEV_OK;
}

/* Writes the ctrl segment of a reserved WQE whose other segments are built,
 * and makes it the one the next doorbell announces */
GDA_FT_DEV_FUNC void
gda_ft_sq_finish_wqe(gda_ft_dev_sq_t *sq, uint16_t wqe_idx, uint8_t opcode,
                     uint8_t opmod, unsigned ds, unsigned flags, uint32_t imm,
                     uint16_t *wqe_idx_p)
{
    gda_ft_wqe_set_ctrl(gda_ft_wqe_seg(sq, wqe_idx, 0), opcode, opmod,
                        wqe_idx, sq->qpn, ds, gda_ft_wqe_fm_ce_se(flags), imm);
    sq->last_wqe_idx = wqe_idx;
    if (wqe_idx_p != NULL) {
        *wqe_idx_p = wqe_idx;
    }
}

GDA_FT_DEV_FUNC gda_ft_dev_status_t
gda_ft_sq_post_nop(gda_ft_dev_sq_t *sq, unsigned flags, uint16_t *wqe_idx_p)
{
    const unsigned      ds = 1;
    uint16_t            wqe_idx;
    gda_ft_dev_status_t status;

    status = gda_ft_sq_reserve(sq, ds, &wqe_idx);
    if (status != GDA_FT_DEV_OK) {
        return status;
    }

    gda_ft_sq_finish_wqe(sq, wqe_idx, GDA_FT_MLX5_OPCODE_NOP, 0, ds, flags, 0,
                         wqe_idx_p);
    return GDA_FT_DEV_OK;
}

/* ctrl + raddr [+ data]: RDMA WRITE (+IMM) and READ; a zero length carries
 * no data segment (a zero byte_count means 2 GiB to mlx5) */
GDA_FT_DEV_FUNC gda_ft_dev_status_t
gda_ft_sq_post_rdma(gda_ft_dev_sq_t *sq, uint8_t opcode, uint64_t laddr,
                    uint32_t lkey, uint32_t length, uint64_t raddr,
                    uint32_t rkey, uint32_t imm, unsigned flags,
                    uint16_t *wqe_idx_p)
{
    unsigned            ds = (length != 0) ? 3 : 2;
    uint16_t            wqe_idx;
    gda_ft_dev_status_t status;

    if (!gda_ft_wqe_length_valid(length)) {
        return GDA_FT_DEV_ERROR;
    }

    status = gda_ft_sq_reserve(sq, ds, &wqe_idx);
    if (status != GDA_FT_DEV_OK) {
        return status;
    }

    gda_ft_wqe_set_raddr(gda_ft_wqe_seg(sq, wqe_idx, 1), raddr, rkey);
    if (length != 0) {
        gda_ft_wqe_set_data(gda_ft_wqe_seg(sq, wqe_idx, 2), length, lkey,
                            laddr);
    }
    gda_ft_sq_finish_wqe(sq, wqe_idx, opcode, 0, ds, flags, imm, wqe_idx_p);
    return GDA_FT_DEV_OK;
}

GDA_FT_DEV_FUNC gda_ft_dev_status_t
gda_ft_sq_post_rdma_write(gda_ft_dev_sq_t *sq, uint64_t laddr, uint32_t lkey,
                          uint32_t length, uint64_t raddr, uint32_t rkey,
                          unsigned flags, uint16_t *wqe_idx_p)
{
    return gda_ft_sq_post_rdma(sq, GDA_FT_MLX5_OPCODE_RDMA_WRITE, laddr, lkey,
                               length, raddr, rkey, 0, flags, wqe_idx_p);
}

/* imm in host order; the receiver's CQE carries it big-endian */
GDA_FT_DEV_FUNC gda_ft_dev_status_t
gda_ft_sq_post_rdma_write_imm(gda_ft_dev_sq_t *sq, uint64_t laddr,
                              uint32_t lkey, uint32_t length, uint64_t raddr,
                              uint32_t rkey, uint32_t imm, unsigned flags,
                              uint16_t *wqe_idx_p)
{
    return gda_ft_sq_post_rdma(sq, GDA_FT_MLX5_OPCODE_RDMA_WRITE_IMM, laddr,
                               lkey, length, raddr, rkey, imm, flags,
                               wqe_idx_p);
}

GDA_FT_DEV_FUNC gda_ft_dev_status_t
gda_ft_sq_post_rdma_read(gda_ft_dev_sq_t *sq, uint64_t laddr, uint32_t lkey,
                         uint32_t length, uint64_t raddr, uint32_t rkey,
                         unsigned flags, uint16_t *wqe_idx_p)
{
    return gda_ft_sq_post_rdma(sq, GDA_FT_MLX5_OPCODE_RDMA_READ, laddr, lkey,
                               length, raddr, rkey, 0, flags, wqe_idx_p);
}

/* ctrl [+ raddr] + inline: RDMA WRITE or SEND (+IMM) of up to
 * sq->max_inline bytes copied into the WQE; imm in host order (the
 * receiver's CQE carries it), left zero by opcodes without one */
GDA_FT_DEV_FUNC gda_ft_dev_status_t
gda_ft_sq_post_inline_imm(gda_ft_dev_sq_t *sq, uint8_t opcode,
                          int with_raddr, const void *data, uint32_t length,
                          uint64_t raddr, uint32_t rkey, uint32_t imm,
                          unsigned flags, uint16_t *wqe_idx_p)
{
    unsigned            hdr_ds = with_raddr ? 2 : 1;
    unsigned            ds;
    uint16_t            wqe_idx;
    gda_ft_dev_status_t status;

    if (length > sq->max_inline) {
        return GDA_FT_DEV_ERROR;
    }

    ds     = hdr_ds + gda_ft_wqe_inline_ds(length);
    status = gda_ft_sq_reserve(sq, ds, &wqe_idx);
    if (status != GDA_FT_DEV_OK) {
        return status;
    }

    if (with_raddr) {
        gda_ft_wqe_set_raddr(gda_ft_wqe_seg(sq, wqe_idx, 1), raddr, rkey);
    }
    gda_ft_wqe_set_inline(sq, wqe_idx, hdr_ds, data, length);
    gda_ft_sq_finish_wqe(sq, wqe_idx, opcode, 0, ds, flags, imm, wqe_idx_p);
    return GDA_FT_DEV_OK;
}

GDA_FT_DEV_FUNC gda_ft_dev_status_t
gda_ft_sq_post_inline(gda_ft_dev_sq_t *sq, uint8_t opcode, int with_raddr,
                      const void *data, uint32_t length, uint64_t raddr,
                      uint32_t rkey, unsigned flags, uint16_t *wqe_idx_p)
{
    return gda_ft_sq_post_inline_imm(sq, opcode, with_raddr, data, length,
                                     raddr, rkey, 0, flags, wqe_idx_p);
}

GDA_FT_DEV_FUNC gda_ft_dev_status_t
gda_ft_sq_post_rdma_write_inline(gda_ft_dev_sq_t *sq, const void *data,
                                 uint32_t length, uint64_t raddr,
                                 uint32_t rkey, unsigned flags,
                                 uint16_t *wqe_idx_p)
{
    return gda_ft_sq_post_inline(sq, GDA_FT_MLX5_OPCODE_RDMA_WRITE, 1, data,
                                 length, raddr, rkey, flags, wqe_idx_p);
}

GDA_FT_DEV_FUNC gda_ft_dev_status_t
gda_ft_sq_post_send_inline(gda_ft_dev_sq_t *sq, const void *data,
                           uint32_t length, unsigned flags,
                           uint16_t *wqe_idx_p)
{
    return gda_ft_sq_post_inline(sq, GDA_FT_MLX5_OPCODE_SEND, 0, data, length,
                                 0, 0, flags, wqe_idx_p);
}

/* ctrl [+ data]: SEND (+IMM) from registered memory */
GDA_FT_DEV_FUNC gda_ft_dev_status_t
gda_ft_sq_post_send_common(gda_ft_dev_sq_t *sq, uint8_t opcode,
                           uint64_t laddr, uint32_t lkey, uint32_t length,
                           uint32_t imm, unsigned flags, uint16_t *wqe_idx_p)
{
    unsigned            ds = (length != 0) ? 2 : 1;
    uint16_t            wqe_idx;
    gda_ft_dev_status_t status;

    if (!gda_ft_wqe_length_valid(length)) {
        return GDA_FT_DEV_ERROR;
    }

    status = gda_ft_sq_reserve(sq, ds, &wqe_idx);
    if (status != GDA_FT_DEV_OK) {
        return status;
    }

    if (length != 0) {
        gda_ft_wqe_set_data(gda_ft_wqe_seg(sq, wqe_idx, 1), length, lkey,
                            laddr);
    }
    gda_ft_sq_finish_wqe(sq, wqe_idx, opcode, 0, ds, flags, imm, wqe_idx_p);
    return GDA_FT_DEV_OK;
}

GDA_FT_DEV_FUNC gda_ft_dev_status_t
gda_ft_sq_post_send(gda_ft_dev_sq_t *sq, uint64_t laddr, uint32_t lkey,
                    uint32_t length, unsigned flags, uint16_t *wqe_idx_p)
{
    return gda_ft_sq_post_send_common(sq, GDA_FT_MLX5_OPCODE_SEND, laddr, lkey,
                                      length, 0, flags, wqe_idx_p);
}

GDA_FT_DEV_FUNC gda_ft_dev_status_t
gda_ft_sq_post_send_imm(gda_ft_dev_sq_t *sq, uint64_t laddr, uint32_t lkey,
                        uint32_t length, uint32_t imm, unsigned flags,
                        uint16_t *wqe_idx_p)
{
    return gda_ft_sq_post_send_common(sq, GDA_FT_MLX5_OPCODE_SEND_IMM, laddr,
                                      lkey, length, imm, flags, wqe_idx_p);
}

/*
 * Atomics: ctrl + raddr + operand segments (op_ds of them) + data. The data
 * segment names the local buffer of `size` bytes where the HCA writes the
 * old remote value, big-endian. Reserves the WQE and writes raddr and data;
 * the caller writes the operands at segment 2 and finishes the WQE.
 */
GDA_FT_DEV_FUNC gda_ft_dev_status_t
gda_ft_sq_begin_atomic(gda_ft_dev_sq_t *sq, unsigned op_ds, uint64_t laddr,
                       uint32_t lkey, uint32_t size, uint64_t raddr,
                       uint32_t rkey, unsigned *ds_p, uint16_t *wqe_idx_p)
{
    unsigned            ds = 2 + op_ds + 1;
    gda_ft_dev_status_t status;

    status = gda_ft_sq_reserve(sq, ds, wqe_idx_p);
    if (status != GDA_FT_DEV_OK) {
        return status;
    }

    gda_ft_wqe_set_raddr(gda_ft_wqe_seg(sq, *wqe_idx_p, 1), raddr, rkey);
    gda_ft_wqe_set_data(gda_ft_wqe_seg(sq, *wqe_idx_p, 2 + op_ds), size, lkey,
                        laddr);
    *ds_p = ds;
    return GDA_FT_DEV_OK;
}

GDA_FT_DEV_FUNC gda_ft_dev_status_t
gda_ft_sq_post_atomic_fa(gda_ft_dev_sq_t *sq, uint64_t laddr, uint32_t lkey,
                         uint64_t raddr, uint32_t rkey, uint64_t add,
                         unsigned flags, uint16_t *wqe_idx_p)
{
    uint16_t            wqe_idx;
    unsigned            ds;
    gda_ft_dev_status_t status;

    status = gda_ft_sq_begin_atomic(sq, 1, laddr, lkey, sizeof(uint64_t),
                                    raddr, rkey, &ds, &wqe_idx);
    if (status != GDA_FT_DEV_OK) {
        return status;
    }

    gda_ft_wqe_set_atomic(gda_ft_wqe_seg(sq, wqe_idx, 2), add, 0);
    gda_ft_sq_finish_wqe(sq, wqe_idx, GDA_FT_MLX5_OPCODE_ATOMIC_FA, 0, ds,
                         flags, 0, wqe_idx_p);
    return GDA_FT_DEV_OK;
}

GDA_FT_DEV_FUNC gda_ft_dev_status_t
gda_ft_sq_post_atomic_cs(gda_ft_dev_sq_t *sq, uint64_t laddr, uint32_t lkey,
                         uint64_t raddr, uint32_t rkey, uint64_t compare,
                         uint64_t swap, unsigned flags, uint16_t *wqe_idx_p)
{
    uint16_t            wqe_idx;
    unsigned            ds;
    gda_ft_dev_status_t status;

    status = gda_ft_sq_begin_atomic(sq, 1, laddr, lkey, sizeof(uint64_t),
                                    raddr, rkey, &ds, &wqe_idx);
    if (status != GDA_FT_DEV_OK) {
        return status;
    }

    gda_ft_wqe_set_atomic(gda_ft_wqe_seg(sq, wqe_idx, 2), swap, compare);
    gda_ft_sq_finish_wqe(sq, wqe_idx, GDA_FT_MLX5_OPCODE_ATOMIC_CS, 0, ds,
                         flags, 0, wqe_idx_p);
    return GDA_FT_DEV_OK;
}

/* Masked compare-swap: the bits of swap_mask are swapped where the bits of
 * compare_mask compare equal */
GDA_FT_DEV_FUNC gda_ft_dev_status_t
gda_ft_sq_post_masked_cs32(gda_ft_dev_sq_t *sq, uint64_t laddr, uint32_t lkey,
                           uint64_t raddr, uint32_t rkey, uint32_t compare,
                           uint32_t swap, uint32_t compare_mask,
                           uint32_t swap_mask, unsigned flags,
                           uint16_t *wqe_idx_p)
{
    uint16_t            wqe_idx;
    unsigned            ds;
    gda_ft_dev_status_t status;

    status = gda_ft_sq_begin_atomic(sq, 1, laddr, lkey, sizeof(uint32_t),
                                    raddr, rkey, &ds, &wqe_idx);
    if (status != GDA_FT_DEV_OK) {
        return status;
    }

    gda_ft_wqe_set_masked_cs32(gda_ft_wqe_seg(sq, wqe_idx, 2), swap, compare,
                               swap_mask, compare_mask);
    gda_ft_sq_finish_wqe(sq, wqe_idx, GDA_FT_MLX5_OPCODE_ATOMIC_MASKED_CS,
                         GDA_FT_MLX5_OPMOD_EXT_ATOMIC(2), ds, flags, 0,
                         wqe_idx_p);
    return GDA_FT_DEV_OK;
}

GDA_FT_DEV_FUNC gda_ft_dev_status_t
gda_ft_sq_post_masked_cs64(gda_ft_dev_sq_t *sq, uint64_t laddr, uint32_t lkey,
                           uint64_t raddr, uint32_t rkey, uint64_t compare,
                           uint64_t swap, uint64_t compare_mask,
                           uint64_t swap_mask, unsigned flags,
                           uint16_t *wqe_idx_p)
{
    uint16_t            wqe_idx;
    unsigned            ds;
    gda_ft_dev_status_t status;

    status = gda_ft_sq_begin_atomic(sq, 2, laddr, lkey, sizeof(uint64_t),
                                    raddr, rkey, &ds, &wqe_idx);
    if (status != GDA_FT_DEV_OK) {
        return status;
    }

    gda_ft_wqe_set_masked_cs64(gda_ft_wqe_seg(sq, wqe_idx, 2),
                               gda_ft_wqe_seg(sq, wqe_idx, 3), swap, compare,
                               swap_mask, compare_mask);
    gda_ft_sq_finish_wqe(sq, wqe_idx, GDA_FT_MLX5_OPCODE_ATOMIC_MASKED_CS,
                         GDA_FT_MLX5_OPMOD_EXT_ATOMIC(3), ds, flags, 0,
                         wqe_idx_p);
    return GDA_FT_DEV_OK;
}

/* Masked fetch-add: field_boundary bits end independent fields, so that a
 * carry does not cross them */
GDA_FT_DEV_FUNC gda_ft_dev_status_t
gda_ft_sq_post_masked_fa32(gda_ft_dev_sq_t *sq, uint64_t laddr, uint32_t lkey,
                           uint64_t raddr, uint32_t rkey, uint32_t add,
                           uint32_t field_boundary, unsigned flags,
                           uint16_t *wqe_idx_p)
{
    uint16_t            wqe_idx;
    unsigned            ds;
    gda_ft_dev_status_t status;

    status = gda_ft_sq_begin_atomic(sq, 1, laddr, lkey, sizeof(uint32_t),
                                    raddr, rkey, &ds, &wqe_idx);
    if (status != GDA_FT_DEV_OK) {
        return status;
    }

    gda_ft_wqe_set_masked_fa32(gda_ft_wqe_seg(sq, wqe_idx, 2), add,
                               field_boundary);
    gda_ft_sq_finish_wqe(sq, wqe_idx, GDA_FT_MLX5_OPCODE_ATOMIC_MASKED_FA,
                         GDA_FT_MLX5_OPMOD_EXT_ATOMIC(2), ds, flags, 0,
                         wqe_idx_p);
    return GDA_FT_DEV_OK;
}

GDA_FT_DEV_FUNC gda_ft_dev_status_t
gda_ft_sq_post_masked_fa64(gda_ft_dev_sq_t *sq, uint64_t laddr, uint32_t lkey,
                           uint64_t raddr, uint32_t rkey, uint64_t add,
                           uint64_t field_boundary, unsigned flags,
                           uint16_t *wqe_idx_p)
{
    uint16_t            wqe_idx;
    unsigned            ds;
    gda_ft_dev_status_t status;

    status = gda_ft_sq_begin_atomic(sq, 1, laddr, lkey, sizeof(uint64_t),
                                    raddr, rkey, &ds, &wqe_idx);
    if (status != GDA_FT_DEV_OK) {
        return status;
    }

    gda_ft_wqe_set_masked_fa64(gda_ft_wqe_seg(sq, wqe_idx, 2), add,
                               field_boundary);
    gda_ft_sq_finish_wqe(sq, wqe_idx, GDA_FT_MLX5_OPCODE_ATOMIC_MASKED_FA,
                         GDA_FT_MLX5_OPMOD_EXT_ATOMIC(3), ds, flags, 0,
                         wqe_idx_p);
    return GDA_FT_DEV_OK;
}


/* ---- doorbell ------------------------------------------------------------ */

/*
 * CPU posters wake a software HCA that sleeps on the QP's eventfd. With
 * wake_armed, only when it has said it sleeps: the engine says so, then
 * reads every doorbell record once more before it sleeps, and we write
 * the record, then read its word, each side with a full fence between,
 * so that one of us sees the other (a system call saved per doorbell).
 */
GDA_FT_DEV_FUNC void gda_ft_sq_wake(const gda_ft_dev_sq_t *sq)
{
#if !GDA_FT_ON_DEVICE
    uint64_t one = 1;
    ssize_t  ret;

    if (sq->wake_fd < 0) {
        return;
    }
    if (sq->wake_armed != NULL) {
        __atomic_thread_fence(__ATOMIC_SEQ_CST);
        if (!__atomic_load_n(sq->wake_armed, __ATOMIC_RELAXED)) {
            return;
        }
    }
    ret = write(sq->wake_fd, &one, sizeof(one));
    (void)ret; /* a saturated counter still wakes the reader */
#else
    (void)sq;
#endif
}

/*
 * Tells the HCA about every WQE posted since the last doorbell: the SQ
 * counter in dbrec[1], then the first 8 bytes of the last WQE's ctrl
 * segment to the doorbell register. Does nothing when nothing is new.
 */
GDA_FT_DEV_FUNC void gda_ft_sq_ring_db(gda_ft_dev_sq_t *sq)
{
    const uint64_t *ctrl;

    if (sq->pi == sq->db_pi) {
        return;
    }

    ctrl = (const uint64_t*)gda_ft_wqe_seg(sq, sq->last_wqe_idx, 0);
    gda_ft_dev_fence_store();
    gda_ft_dev_write_once_u32(&sq->dbrec[GDA_FT_MLX5_SND_DBR],
                              gda_ft_htobe32(sq->pi));
    gda_ft_dev_fence_mmio();
    gda_ft_dev_write_once_u64(sq->uar, *ctrl);
#if !GDA_FT_ON_DEVICE
    gda_ft_dev_fence_mmio();
#endif
    sq->db_pi = sq->pi;
    gda_ft_sq_wake(sq);
}


/* ---- receive queue ------------------------------------------------------- */

/* wqe_cnt: power of 2, at most 32768; stride: power of 2, >= 16 */
GDA_FT_DEV_FUNC void
gda_ft_dev_rq_init(gda_ft_dev_rq_t *rq, void *buf, uint32_t wqe_cnt,
                   uint32_t stride, volatile uint32_t *dbrec)
{
    rq->version  = GDA_FT_DEV_VERSION;
    rq->wqe_mask = (uint16_t)(wqe_cnt - 1);
    rq->wqe_cnt  = wqe_cnt;
    rq->buf      = (uint8_t*)buf;
    rq->dbrec    = dbrec;
    rq->stride   = stride;
    rq->pi       = 0;
    rq->ci       = 0;
}

GDA_FT_DEV_FUNC void *gda_ft_rq_wqe(const gda_ft_dev_rq_t *rq,
                                    uint16_t wqe_idx)
{
    return rq->buf + (uint32_t)(wqe_idx & rq->wqe_mask) * rq->stride;
}

/* One receive WQE of data segments; a list shorter than the WQE ends with
 * an invalid-lkey segment. Zero-length elements are left out. */
GDA_FT_DEV_FUNC gda_ft_dev_status_t
gda_ft_rq_post(gda_ft_dev_rq_t *rq, const gda_ft_dev_sge_t *sge,
               unsigned num_sge, uint16_t *wqe_idx_p)
{
    unsigned  max_sge = rq->stride / GDA_FT_MLX5_DS_SIZE;
    uint8_t  *wqe;
    unsigned  i, seg;

    if (num_sge > max_sge) {
        return GDA_FT_DEV_ERROR;
    }
    for (i = 0; i < num_sge; ++i) {
        if (!gda_ft_wqe_length_valid(sge[i].length)) {
            return GDA_FT_DEV_ERROR;
        }
    }
    if ((uint16_t)(rq->pi - rq->ci) >= rq->wqe_cnt) {
        return GDA_FT_DEV_NO_RESOURCE;
    }

    wqe = (uint8_t*)gda_ft_rq_wqe(rq, rq->pi);
    for (i = 0, seg = 0; i < num_sge; ++i) {
        if (sge[i].length != 0) {
            gda_ft_wqe_set_data(wqe + seg++ * GDA_FT_MLX5_DS_SIZE,
                                sge[i].length, sge[i].lkey, sge[i].addr);
        }
    }
    if (seg < max_sge) {
        gda_ft_wqe_set_data(wqe + seg * GDA_FT_MLX5_DS_SIZE, 0,
                            GDA_FT_MLX5_INVALID_LKEY, 0);
    }

    if (wqe_idx_p != NULL) {
        *wqe_idx_p = rq->pi;
    }
    rq->pi = (uint16_t)(rq->pi + 1);
    return GDA_FT_DEV_OK;
}

/* Publishes the posted receive WQEs: dbrec[0] = RQ counter */
GDA_FT_DEV_FUNC void gda_ft_rq_ring_db(gda_ft_dev_rq_t *rq)
{
    gda_ft_dev_fence_store();
    gda_ft_dev_write_once_u32(&rq->dbrec[GDA_FT_MLX5_RCV_DBR],
                              gda_ft_htobe32(rq->pi));
}

#endif
