/*
 * gda_ft device datapath: mlx5 completion queues.
 *
 * Two kinds of CQ, both in mlx5 CQE64 format:
 *  - a ring of cqe_cnt CQEs with owner bits, consumed in order;
 *  - a collapsed CQ: one CQE that the HCA overwrites with every completion,
 *    read by comparing its wqe_counter with the WQE the caller waits for.
 *
 * A poll never blocks and never traps: it returns GDA_FT_DEV_INPROGRESS
 * (nothing new), GDA_FT_DEV_OK, or GDA_FT_DEV_ERROR for an error CQE
 * (REQ_ERR, RESP_ERR) with the syndrome in gda_ft_dev_cqe_info_t. Deadlines
 * belong to the caller.
 */
#ifndef GDA_FT_CQ_H_
#define GDA_FT_CQ_H_

#include "gda_ft_wqe.h"


/* Marks every CQE as not yet written: opcode INVALID, owner 1, rest zero,
 * as rdma-core initializes mlx5 CQ buffers */
GDA_FT_DEV_FUNC void gda_ft_cq_init_buf(void *buf, uint32_t cqe_cnt)
{
    uint64_t            *words = (uint64_t*)buf;
    gda_ft_mlx5_cqe64_t *cqes  = (gda_ft_mlx5_cqe64_t*)buf;
    uint32_t             i;

    for (i = 0; i < cqe_cnt * (GDA_FT_MLX5_CQE_SIZE / sizeof(uint64_t)); ++i) {
        words[i] = 0;
    }
    for (i = 0; i < cqe_cnt; ++i) {
        cqes[i].op_own = (GDA_FT_MLX5_CQE_INVALID << 4) |
                         GDA_FT_MLX5_CQE_OWNER_MASK;
    }
}

/* cqe_cnt: power of 2; 1 for a collapsed CQ */
GDA_FT_DEV_FUNC void gda_ft_dev_cq_init(gda_ft_dev_cq_t *cq, void *buf,
                                        uint32_t cqe_cnt, int collapsed)
{
    unsigned i;

    cq->version   = GDA_FT_DEV_VERSION;
    cq->collapsed = collapsed ? 1 : 0;
    cq->reserved0 = 0;
    cq->cqe_cnt   = cqe_cnt;
    cq->buf       = (uint8_t*)buf;
    cq->ci        = 0;
    for (i = 0; i < sizeof(cq->reserved) / sizeof(cq->reserved[0]); ++i) {
        cq->reserved[i] = 0;
    }
}

GDA_FT_DEV_FUNC int gda_ft_cq_opcode_is_error(uint8_t opcode)
{
    return (opcode == GDA_FT_MLX5_CQE_REQ_ERR) ||
           (opcode == GDA_FT_MLX5_CQE_RESP_ERR);
}

GDA_FT_DEV_FUNC int gda_ft_cq_opcode_has_imm(uint8_t opcode)
{
    return (opcode == GDA_FT_MLX5_CQE_RESP_WR_IMM) ||
           (opcode == GDA_FT_MLX5_CQE_RESP_SEND_IMM);
}

/* Reads a CQE whose op_own and wqe_counter the caller has already read */
GDA_FT_DEV_FUNC gda_ft_dev_status_t
gda_ft_cq_read_cqe(const volatile gda_ft_mlx5_cqe64_t *cqe, uint8_t op_own,
                   uint16_t wqe_counter, gda_ft_dev_cqe_info_t *info)
{
    const volatile gda_ft_mlx5_err_cqe_t *err =
            (const volatile gda_ft_mlx5_err_cqe_t*)cqe;
    uint8_t                               opcode = op_own >> 4;

    info->wqe_counter = wqe_counter;
    info->opcode      = opcode;
    info->qpn         = gda_ft_be32toh(cqe->sop_drop_qpn) & 0xffffff;
    info->reserved[0] = 0;
    info->reserved[1] = 0;

    if (gda_ft_cq_opcode_is_error(opcode)) {
        info->byte_cnt    = 0;
        info->imm         = 0;
        info->syndrome    = err->syndrome;
        info->vendor_synd = err->vendor_err_synd;
        info->wqe_opcode  = (uint8_t)(gda_ft_be32toh(err->s_wqe_opcode_qpn) >>
                                      24);
        return GDA_FT_DEV_ERROR;
    }

    info->byte_cnt    = gda_ft_be32toh(cqe->byte_cnt);
    info->imm         = gda_ft_cq_opcode_has_imm(opcode) ?
                        gda_ft_be32toh(cqe->imm_inval_pkey) : 0;
    info->syndrome    = 0;
    info->vendor_synd = 0;
    info->wqe_opcode  = 0;
    return GDA_FT_DEV_OK;
}

/*
 * Splits a CQE's last word, read in one load (wqe_counter, signature,
 * op_own: bytes 60..63, which the HCA writes last, in one store), into the
 * WQE counter and op_own
 */
GDA_FT_DEV_FUNC uint8_t gda_ft_cq_split_tail(uint32_t tail,
                                             uint16_t *counter_p)
{
    uint8_t bytes[4];

    gda_ft_wqe_copy_bytes(bytes, &tail, sizeof(bytes));
    *counter_p = (uint16_t)((bytes[0] << 8) | bytes[1]);
    return bytes[3];
}

/* Owner bit software expects at consumer index ci: flips every pass */
GDA_FT_DEV_FUNC uint8_t gda_ft_cq_sw_owner(const gda_ft_dev_cq_t *cq)
{
    return (cq->ci & cq->cqe_cnt) ? 1 : 0;
}

/* Consumes the next CQE of a ring CQ, if the HCA has written it */
GDA_FT_DEV_FUNC gda_ft_dev_status_t
gda_ft_cq_poll_ring(gda_ft_dev_cq_t *cq, gda_ft_dev_cqe_info_t *info)
{
    const volatile gda_ft_mlx5_cqe64_t *cqe =
            (const volatile gda_ft_mlx5_cqe64_t*)
            (cq->buf + (cq->ci & (cq->cqe_cnt - 1)) * GDA_FT_MLX5_CQE_SIZE);
    uint16_t wqe_counter;
    uint8_t  op_own;

    op_own = gda_ft_cq_split_tail(gda_ft_dev_read_once_u32(
            (const volatile uint32_t*)&cqe->wqe_counter), &wqe_counter);
    if (((op_own >> 4) == GDA_FT_MLX5_CQE_INVALID) ||
        ((op_own & GDA_FT_MLX5_CQE_OWNER_MASK) != gda_ft_cq_sw_owner(cq))) {
        return GDA_FT_DEV_INPROGRESS;
    }

    gda_ft_dev_fence_load();
    cq->ci++;
    return gda_ft_cq_read_cqe(cqe, op_own, wqe_counter, info);
}

/*
 * Checks a collapsed CQ for the completion of WQE `wqe_idx` (or a later
 * one, which implies it). wqe_counter and opcode are read together in one
 * load; the other fields may already belong to a later completion. An
 * error CQE is returned whatever WQE it names: the QP is in error.
 */
GDA_FT_DEV_FUNC gda_ft_dev_status_t
gda_ft_cq_poll_collapsed(const gda_ft_dev_cq_t *cq, uint16_t wqe_idx,
                         gda_ft_dev_cqe_info_t *info)
{
    const volatile gda_ft_mlx5_cqe64_t *cqe =
            (const volatile gda_ft_mlx5_cqe64_t*)cq->buf;
    uint16_t wqe_counter;
    uint8_t  op_own;

    op_own = gda_ft_cq_split_tail(gda_ft_dev_read_once_u32(
            (const volatile uint32_t*)&cqe->wqe_counter), &wqe_counter);

    if ((op_own >> 4) == GDA_FT_MLX5_CQE_INVALID) {
        return GDA_FT_DEV_INPROGRESS;
    }
    if (!gda_ft_cq_opcode_is_error(op_own >> 4) &&
        GDA_FT_U16_LT(wqe_counter, wqe_idx)) {
        return GDA_FT_DEV_INPROGRESS;
    }

    gda_ft_dev_fence_load();
    return gda_ft_cq_read_cqe(cqe, op_own, wqe_counter, info);
}

/*
 * Retires send WQEs up to and including the one at wqe_counter (a
 * signalled WQE's completion retires the unsignalled ones before it).
 * Reads that WQE's size from its ctrl segment, still in the ring. Returns
 * the number of WQEBBs freed; 0 for a counter outside [ci, pi) or one that
 * does not name the start of a WQE.
 */
GDA_FT_DEV_FUNC unsigned gda_ft_sq_retire(gda_ft_dev_sq_t *sq,
                                          uint16_t wqe_counter)
{
    const gda_ft_mlx5_ctrl_seg_t *ctrl;
    uint16_t                      next_ci;
    unsigned                      freed;

    if (!GDA_FT_U16_LE(sq->ci, wqe_counter) ||
        !GDA_FT_U16_LT(wqe_counter, sq->pi)) {
        return 0;
    }

    ctrl = (const gda_ft_mlx5_ctrl_seg_t*)gda_ft_wqe_seg(sq, wqe_counter, 0);
    if (GDA_FT_MLX5_CTRL_WQE_IDX(ctrl) != wqe_counter) {
        return 0;
    }

    next_ci = (uint16_t)(wqe_counter +
                         gda_ft_wqe_ds_to_wqebbs(GDA_FT_MLX5_CTRL_DS(ctrl)));
    freed   = (uint16_t)(next_ci - sq->ci);
    sq->ci  = next_ci;
    return freed;
}

/* Retires receive WQEs up to and including wqe_counter (a RESP CQE's) */
GDA_FT_DEV_FUNC unsigned gda_ft_rq_retire(gda_ft_dev_rq_t *rq,
                                          uint16_t wqe_counter)
{
    uint16_t next_ci = (uint16_t)(wqe_counter + 1);
    unsigned freed;

    if (!GDA_FT_U16_LE(rq->ci, wqe_counter) ||
        !GDA_FT_U16_LT(wqe_counter, rq->pi)) {
        return 0;
    }

    freed  = (uint16_t)(next_ci - rq->ci);
    rq->ci = next_ci;
    return freed;
}

#endif
