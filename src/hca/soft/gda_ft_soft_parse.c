/*
 * Software HCA send WQE parser: turns the mlx5 send WQEs a doorbell gave
 * into the requester's operations (segments, keys, operands, PSNs), and
 * moves an operation's local data: the snapshot of a message in device
 * memory, the gather of a packet's bytes and the scatter of a response's.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "gda_ft_soft_int.h"

#include <stdlib.h>
#include <string.h>

/* Pointer to the 16-byte segment 'seg' of the WQE at WQEBB counter 'bb' */
static const void *gda_ft_soft_wqe_seg(gda_ft_soft_qp_t *qp, uint16_t bb,
                                       unsigned seg)
{
    size_t ring = (size_t)qp->super.init.sq_wqebb_cnt * GDA_FT_MLX5_WQE_BB;
    size_t off  = ((size_t)(bb & (qp->super.init.sq_wqebb_cnt - 1)) *
                   GDA_FT_MLX5_WQE_BB + seg * GDA_FT_MLX5_DS_SIZE) % ring;

    return (const uint8_t*)qp->super.init.sq_buf + off;
}

/* Looks up a local key for an access of [addr, addr+len) */
static uint8_t gda_ft_soft_check_lkey(gda_ft_soft_qp_t *qp, uint32_t lkey,
                                      uint64_t addr, uint32_t len,
                                      unsigned access,
                                      gda_ft_hca_mem_type_t *mem_type)
{
    gda_ft_soft_mr_t *mr = gda_ft_soft_mr_lookup(lkey);
    uint64_t start, end;

    if ((mr == NULL) || (mr->super.pd != qp->super.pd)) {
        return GDA_FT_MLX5_SYND_LOCAL_PROT_ERR;
    }

    start = (uintptr_t)mr->super.addr;
    end   = start + mr->super.length;
    if ((addr < start) || (addr + len < addr) || (addr + len > end) ||
        ((mr->super.access & access) != access)) {
        return GDA_FT_MLX5_SYND_LOCAL_PROT_ERR;
    }

    *mem_type = mr->super.mem_type;
    return 0;
}

/*
 * Parses data or inline segments from segment 'seg' to 'ds' into op->sge.
 * Returns a syndrome, 0 on success.
 */
static uint8_t gda_ft_soft_parse_data(gda_ft_soft_qp_t *qp,
                                      gda_ft_soft_op_t *op, uint16_t bb,
                                      unsigned seg, unsigned ds,
                                      unsigned access)
{
    const gda_ft_mlx5_data_seg_t *dseg;
    uint32_t byte_count, copied, chunk;
    unsigned inl_segs;
    uint8_t synd;

    while (seg < ds) {
        dseg       = gda_ft_soft_wqe_seg(qp, bb, seg);
        byte_count = gda_ft_be32toh(dseg->byte_count);
        if (byte_count & GDA_FT_MLX5_INLINE_SEG) {
            byte_count &= ~GDA_FT_MLX5_INLINE_SEG;
            inl_segs    = (4 + byte_count + 15) / 16;
            if ((op->num_sge > 0) || (op->inline_data != NULL) ||
                (access != 0) || (byte_count > GDA_FT_SOFT_MAX_INLINE) ||
                (seg + inl_segs > ds)) {
                return GDA_FT_MLX5_SYND_LOCAL_LENGTH_ERR;
            }

            op->inline_data = malloc(ucs_max(byte_count, 1));
            if (op->inline_data == NULL) {
                return GDA_FT_MLX5_SYND_LOCAL_QP_OP_ERR;
            }

            /* Inline data may wrap around the ring: copy per segment */
            for (copied = 0; copied < byte_count; copied += chunk) {
                unsigned off = 4 + copied;
                const uint8_t *src = (const uint8_t*)
                        gda_ft_soft_wqe_seg(qp, bb, seg + off / 16) +
                        off % 16;
                chunk = ucs_min(16 - off % 16, byte_count - copied);
                memcpy(op->inline_data + copied, src, chunk);
            }
            op->length += byte_count;
            seg        += inl_segs;
            continue;
        }

        if ((op->num_sge == GDA_FT_SOFT_MAX_SGE) ||
            (op->inline_data != NULL)) {
            return GDA_FT_MLX5_SYND_LOCAL_LENGTH_ERR;
        }

        op->sge[op->num_sge].addr   = gda_ft_be64toh(dseg->addr);
        op->sge[op->num_sge].length = byte_count;
        if (byte_count > 0) {
            synd = gda_ft_soft_check_lkey(qp, gda_ft_be32toh(dseg->lkey),
                                          op->sge[op->num_sge].addr,
                                          byte_count, access,
                                          &op->sge[op->num_sge].mem_type);
            if (synd != 0) {
                return synd;
            }
        }
        op->length += byte_count;
        ++op->num_sge;
        ++seg;
    }
    return 0;
}

static uint8_t gda_ft_soft_parse_atomic(gda_ft_soft_qp_t *qp,
                                        gda_ft_soft_op_t *op, uint16_t bb,
                                        unsigned ds)
{
    const gda_ft_mlx5_atomic_seg_t *aseg;
    const uint32_t *w32;
    const uint64_t *w64;
    unsigned seg = 2, i;
    int size     = gda_ft_soft_op_atomic_size(op);
    uint8_t synd;

    switch (op->mlx5_opcode) {
    case GDA_FT_MLX5_OPCODE_ATOMIC_CS:
    case GDA_FT_MLX5_OPCODE_ATOMIC_FA:
        aseg           = gda_ft_soft_wqe_seg(qp, bb, seg++);
        op->operand[0] = gda_ft_be64toh(aseg->swap_add);
        op->operand[1] = gda_ft_be64toh(aseg->compare);
        break;
    default:
        if ((op->opmod & 8) == 0 || ((size != 4) && (size != 8))) {
            return GDA_FT_MLX5_SYND_LOCAL_QP_OP_ERR;
        }
        if (size == 4) {
            /* one segment: four 32-bit operands */
            w32 = gda_ft_soft_wqe_seg(qp, bb, seg++);
            for (i = 0; i < 4; ++i) {
                op->operand[i] = gda_ft_be32toh(w32[i]);
            }
        } else if (op->mlx5_opcode == GDA_FT_MLX5_OPCODE_ATOMIC_MASKED_CS) {
            /* two segments: swap, compare, swap_mask, compare_mask */
            for (i = 0; i < 2; ++i) {
                w64 = gda_ft_soft_wqe_seg(qp, bb, seg++);
                op->operand[2 * i]     = gda_ft_be64toh(w64[0]);
                op->operand[2 * i + 1] = gda_ft_be64toh(w64[1]);
            }
        } else {
            w64 = gda_ft_soft_wqe_seg(qp, bb, seg++);
            op->operand[0] = gda_ft_be64toh(w64[0]);
            op->operand[1] = gda_ft_be64toh(w64[1]);
        }
        break;
    }

    if (seg >= ds) {
        return GDA_FT_MLX5_SYND_LOCAL_LENGTH_ERR;
    }

    synd = gda_ft_soft_parse_data(qp, op, bb, seg, ds,
                                  GDA_FT_HCA_ACCESS_LOCAL_WRITE);
    if ((synd == 0) && (op->length != (uint32_t)size)) {
        synd = GDA_FT_MLX5_SYND_LOCAL_LENGTH_ERR;
    }
    return synd;
}

/* Parses one WQE into op; returns its size in WQEBBs */
unsigned gda_ft_soft_parse_wqe(gda_ft_soft_qp_t *qp,
                               gda_ft_soft_op_t *op, uint16_t bb)
{
    const gda_ft_mlx5_ctrl_seg_t *ctrl = gda_ft_soft_wqe_seg(qp, bb, 0);
    const gda_ft_mlx5_raddr_seg_t *raddr;
    unsigned ds, access, mtu;
    uint8_t synd = 0;

    memset(op, 0, sizeof(*op));
    op->mlx5_opcode = GDA_FT_MLX5_CTRL_OPCODE(ctrl);
    op->opmod       = GDA_FT_MLX5_CTRL_OPMOD(ctrl);
    op->wqe_idx     = GDA_FT_MLX5_CTRL_WQE_IDX(ctrl);
    op->signaled    = !!(ctrl->fm_ce_se & GDA_FT_MLX5_WQE_CTRL_CQ_UPDATE);
    op->fence       = !!(ctrl->fm_ce_se & GDA_FT_MLX5_WQE_CTRL_FM_MASK);
    op->imm         = ctrl->imm;
    ds              = GDA_FT_MLX5_CTRL_DS(ctrl);

    if ((ds == 0) || (ds > (unsigned)qp->super.init.sq_wqebb_cnt * 4)) {
        op->syndrome = GDA_FT_MLX5_SYND_LOCAL_QP_OP_ERR;
        return 1;
    }

    switch (op->mlx5_opcode) {
    case GDA_FT_MLX5_OPCODE_NOP:
        break;
    case GDA_FT_MLX5_OPCODE_SEND:
    case GDA_FT_MLX5_OPCODE_SEND_IMM:
        synd = gda_ft_soft_parse_data(qp, op, bb, 1, ds, 0);
        break;
    case GDA_FT_MLX5_OPCODE_RDMA_WRITE:
    case GDA_FT_MLX5_OPCODE_RDMA_WRITE_IMM:
    case GDA_FT_MLX5_OPCODE_RDMA_READ:
    case GDA_FT_MLX5_OPCODE_ATOMIC_CS:
    case GDA_FT_MLX5_OPCODE_ATOMIC_FA:
    case GDA_FT_MLX5_OPCODE_ATOMIC_MASKED_CS:
    case GDA_FT_MLX5_OPCODE_ATOMIC_MASKED_FA:
        if (ds < 2) {
            synd = GDA_FT_MLX5_SYND_LOCAL_LENGTH_ERR;
            break;
        }
        raddr     = gda_ft_soft_wqe_seg(qp, bb, 1);
        op->raddr = gda_ft_be64toh(raddr->raddr);
        op->rkey  = gda_ft_be32toh(raddr->rkey);
        if (gda_ft_soft_op_is_atomic(op)) {
            synd = gda_ft_soft_parse_atomic(qp, op, bb, ds);
        } else {
            access = gda_ft_soft_op_is_read(op) ?
                     GDA_FT_HCA_ACCESS_LOCAL_WRITE : 0;
            synd   = gda_ft_soft_parse_data(qp, op, bb, 2, ds, access);
        }
        break;
    default:
        synd = GDA_FT_MLX5_SYND_LOCAL_QP_OP_ERR;
        break;
    }

    op->syndrome = synd;
    if (synd == 0) {
        if (op->mlx5_opcode == GDA_FT_MLX5_OPCODE_NOP) {
            op->npkts = 0;
        } else if (gda_ft_soft_op_is_atomic(op)) {
            op->npkts = 1;
        } else {
            mtu       = (qp->mtu != 0) ? qp->mtu : 4096; /* flush of a
                                                         never-connected QP */
            op->npkts = ucs_max(1, (op->length + mtu - 1) / mtu);
        }
        op->first_psn = qp->next_psn;
        qp->next_psn  = gda_ft_psn_add(qp->next_psn, op->npkts);
    }

    return (ds * GDA_FT_MLX5_DS_SIZE + GDA_FT_MLX5_WQE_BB - 1) /
           GDA_FT_MLX5_WQE_BB;
}

static int gda_ft_soft_op_snapshot(gda_ft_soft_op_t *op, int queue);

/* Whether op sends a message of its own that has not been read yet */
static int gda_ft_soft_op_unread(const gda_ft_soft_op_t *op)
{
    return (op->inline_data == NULL) && !gda_ft_soft_op_needs_response(op);
}

/*
 * Takes the WQEs the doorbell gave. The messages in device memory of
 * those found in this pass are read with one wait for all of them, up to
 * CUDA_READ_BATCH of them: the WQEs behind wait for the next pass, so that
 * one wait never holds the engine thread's other QPs for long (unbounded,
 * 512 warps filling four rings made waits of 30 to 45 ms on an H200, every
 * QP of the thread silent for as long).
 */
int gda_ft_soft_req_parse(gda_ft_soft_qp_t *qp)
{
    uint16_t pi    = gda_ft_soft_sq_pi(qp);
    unsigned cnt   = qp->super.init.sq_wqebb_cnt;
    unsigned batch = gda_ft_soft_engine.config.cuda_read_batch;
    unsigned reads = 0;
    int work       = 0;
    gda_ft_soft_op_t *op;

    while ((qp->sq_parse != pi) && ((qp->op_tail - qp->op_head) < cnt) &&
           ((batch == 0) || (reads < batch))) {
        op            = gda_ft_soft_op_at(qp, qp->op_tail);
        qp->sq_parse += gda_ft_soft_parse_wqe(qp, op, qp->sq_parse);
        ++qp->op_tail;
        if ((batch != 0) && (op->syndrome == 0) &&
            gda_ft_soft_op_unread(op)) {
            reads += gda_ft_soft_op_snapshot(op, 1);
        }
        work = 1;
    }
    if (work) {
        gda_ft_soft_mem_flush();
    }
    return work;
}

/* Copies between [offset, offset+len) of the op's local buffers and buf:
 * into them when into_op, else out of them */
static void gda_ft_soft_op_copy(const gda_ft_soft_op_t *op, uint32_t offset,
                                uint8_t *buf, uint32_t len, int into_op)
{
    uint32_t chunk;
    void *local;
    unsigned i;

    for (i = 0; (i < op->num_sge) && (len > 0); ++i) {
        if (offset >= op->sge[i].length) {
            offset -= op->sge[i].length;
            continue;
        }
        chunk = ucs_min(op->sge[i].length - offset, len);
        local = (void*)(uintptr_t)(op->sge[i].addr + offset);
        if (into_op) {
            gda_ft_soft_mem_copy(local, op->sge[i].mem_type, buf,
                                 GDA_FT_HCA_MEM_HOST, chunk);
        } else {
            gda_ft_soft_mem_copy(buf, GDA_FT_HCA_MEM_HOST, local,
                                 op->sge[i].mem_type, chunk);
        }
        buf    += chunk;
        len    -= chunk;
        offset  = 0;
    }
}

/*
 * A snapshot of an operation's data in device memory: the whole message in
 * one read, rather than one copy and one wait per packet and again per
 * retransmission. Queued (queue: the pass's parse waits once for all it
 * queued; returns 1 when it queued a read) or, for a message that was not
 * read when its WQE was found, waited for when its first packet is built.
 * The buffers may not change before the operation completes, as on any
 * HCA.
 */
static int gda_ft_soft_op_snapshot(gda_ft_soft_op_t *op, int queue)
{
    uint32_t offset = 0;
    int queued      = 0;
    uint8_t *snapshot;
    unsigned i;

    for (i = 0; i < op->num_sge; ++i) {
        if (op->sge[i].mem_type == GDA_FT_HCA_MEM_CUDA) {
            break;
        }
    }
    if ((i == op->num_sge) || (op->length > GDA_FT_SOFT_SNAPSHOT_MAX) ||
        !gda_ft_soft_engine.config.cuda_snapshot) {
        return 0;
    }
    snapshot = malloc(ucs_max(op->length, 1));
    if (snapshot == NULL) {
        return 0;   /* copied packet by packet */
    }
    for (i = 0; i < op->num_sge; ++i) {
        if (queue && (op->sge[i].mem_type == GDA_FT_HCA_MEM_CUDA) &&
            gda_ft_soft_mem_read_queue(snapshot + offset,
                                       (void*)(uintptr_t)op->sge[i].addr,
                                       op->sge[i].length)) {
            queued = 1;
        } else {
            gda_ft_soft_op_copy(op, offset, snapshot + offset,
                                op->sge[i].length, 0);
        }
        offset += op->sge[i].length;
    }
    op->inline_data = snapshot;
    return queued;
}

/* Copies [offset, offset+len) of the op's local data into dst; a message
 * in device memory not read when its WQE was found is read whole now */
void gda_ft_soft_op_gather(gda_ft_soft_op_t *op, uint32_t offset,
                           uint8_t *dst, uint32_t len)
{
    if (gda_ft_soft_op_unread(op)) {
        (void)gda_ft_soft_op_snapshot(op, 0);
    }
    if (op->inline_data != NULL) {
        memcpy(dst, op->inline_data + offset, len);
    } else {
        gda_ft_soft_op_copy(op, offset, dst, len, 0);
    }
}

/* Copies src into [offset, offset+len) of the op's local buffers */
void gda_ft_soft_op_scatter(const gda_ft_soft_op_t *op,
                            uint32_t offset, const uint8_t *src,
                            uint32_t len)
{
    /* read only: it is the source of this copy */
    gda_ft_soft_op_copy(op, offset, (uint8_t*)src, len, 1);
}
