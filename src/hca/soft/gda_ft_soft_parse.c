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
        __atomic_store_n(&qp->next_psn,
                         gda_ft_psn_add(qp->next_psn, op->npkts),
                         __ATOMIC_RELAXED);   /* read by qp_query */
    }

    return (ds * GDA_FT_MLX5_DS_SIZE + GDA_FT_MLX5_WQE_BB - 1) /
           GDA_FT_MLX5_WQE_BB;
}

/* Takes the WQEs the doorbell gave; 1 when it took any */
int gda_ft_soft_req_parse(gda_ft_soft_qp_t *qp)
{
    uint16_t pi  = gda_ft_soft_sq_pi(qp);
    unsigned cnt = qp->super.init.sq_wqebb_cnt;
    int work     = 0;

    while ((qp->sq_parse != pi) && ((qp->op_tail - qp->op_head) < cnt)) {
        qp->sq_parse += gda_ft_soft_parse_wqe(
                qp, gda_ft_soft_op_at(qp, qp->op_tail), qp->sq_parse);
        ++qp->op_tail;
        work = 1;
    }
    return work;
}

/* Copies between [offset, offset+len) of the op's local buffers and buf:
 * into them when into_op, else out of them; a copy of device memory the
 * CUDA runtime refuses is noted in refusal with tag (an error returned
 * when that is known at once) */
static ucs_status_t gda_ft_soft_op_copy(const gda_ft_soft_op_t *op,
                                        uint32_t offset, uint8_t *buf,
                                        uint32_t len, int into_op,
                                        gda_ft_soft_refusal_t *refusal,
                                        uint32_t tag)
{
    ucs_status_t status = UCS_OK;
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
            status = gda_ft_soft_mem_copy(local, op->sge[i].mem_type, buf,
                                          GDA_FT_HCA_MEM_HOST, chunk,
                                          refusal, tag);
        } else {
            status = gda_ft_soft_mem_copy(buf, GDA_FT_HCA_MEM_HOST, local,
                                          op->sge[i].mem_type, chunk,
                                          refusal, tag);
        }
        if (status != UCS_OK) {
            return status;
        }
        buf    += chunk;
        len    -= chunk;
        offset  = 0;
    }
    return status;
}

/* Whether op sends a message of its own that has not been read yet */
static int gda_ft_soft_op_unread(const gda_ft_soft_op_t *op)
{
    return (op->inline_data == NULL) && !gda_ft_soft_op_needs_response(op);
}

/* Whether the op's message is in device memory, to be read whole before
 * it is sent (CUDA_SNAPSHOT) */
static int gda_ft_soft_op_snapshots(const gda_ft_soft_op_t *op)
{
    return (op->length <= GDA_FT_SOFT_SNAPSHOT_MAX) &&
           gda_ft_soft_engine.config.cuda_snapshot &&
           gda_ft_soft_op_in_device_memory(op);
}

/*
 * Reads an unread op's message in device memory into a snapshot: the whole
 * message at once, rather than a copy per packet and again per
 * retransmission. Its pieces in device memory are queued on the engine
 * thread's read stream (host pieces copied now); the op goes out once they
 * have landed. Returns 1 when queued, 0 when there is no room for them
 * now, -1 when the message is not read this way (too large, no read
 * stream: gda_ft_soft_op_gather copies it). The buffers may not change
 * before the operation completes, as on any HCA.
 */
static int gda_ft_soft_op_read(gda_ft_soft_op_t *op)
{
    gda_ft_soft_read_piece_t pieces[GDA_FT_SOFT_MAX_SGE];
    gda_ft_soft_snapshot_t *snapshot;
    unsigned i, count = 0;
    uint32_t offset   = 0;
    int ret;

    if (!gda_ft_soft_op_snapshots(op)) {
        return -1;
    }
    for (i = 0; i < op->num_sge; offset += op->sge[i++].length) {
        if (op->sge[i].mem_type == GDA_FT_HCA_MEM_CUDA) {
            pieces[count].src      = (const void*)(uintptr_t)op->sge[i].addr;
            pieces[count].offset   = offset;
            pieces[count++].length = op->sge[i].length;
        }
    }
    snapshot = gda_ft_soft_snapshot_alloc(op->length);
    if (snapshot == NULL) {
        return -1;
    }
    ret = gda_ft_soft_mem_read_snapshot(snapshot, pieces, count);
    if (ret <= 0) {
        gda_ft_soft_snapshot_free(snapshot);
        return ret;
    }
    for (i = 0, offset = 0; i < op->num_sge;
         offset += op->sge[i++].length) {
        if (op->sge[i].mem_type != GDA_FT_HCA_MEM_CUDA) {
            (void)gda_ft_soft_op_copy(op, offset, snapshot->data + offset,
                                      op->sge[i].length, 0, NULL, 0);
        }
    }
    op->snapshot    = snapshot;
    op->inline_data = snapshot->data;
    return 1;
}

/*
 * The messages in device memory of the ops from op_send on, up to
 * CUDA_READ_BATCH of them (at least the next), are read ahead in one batch
 * while the engine goes on; the op at op_send goes out once its own has
 * landed. Reads land in the order they were queued, and room for them is
 * given in that order: a QP reads ahead only behind its next op, and no
 * further than its send window, so that no buffer is read long before the
 * QP could send it. A QP tops its reads up once half of them have gone
 * out, not after each send. The reads the QPs of a pass queue go out
 * together at its end (gda_ft_soft_mem_reads_submit): a batch is a
 * cudaMemcpyAsync call per run of copies that continue each other and an
 * event, and runs form only within a batch.
 */
int gda_ft_soft_req_ready(gda_ft_soft_qp_t *qp)
{
    unsigned window = ucs_max(gda_ft_soft_engine.config.cuda_read_batch, 1);
    gda_ft_soft_op_t *op;
    int ret;

    if ((int)(qp->read_ahead - qp->op_send) < 0) {
        qp->read_ahead = qp->op_send;
    }
    if ((qp->read_ahead - qp->op_send) > window / 2) {
        window = 0;   /* more than half still ahead: no top-up yet */
    }
    while ((qp->read_ahead != qp->op_tail) &&
           ((qp->read_ahead - qp->op_send) < window)) {
        op = gda_ft_soft_op_at(qp, qp->read_ahead);
        if (gda_ft_psn_diff(op->first_psn, qp->acked_psn) >
            GDA_FT_SOFT_MAX_PKTS_INFLIGHT) {
            break;   /* beyond the send window */
        }
        if ((op->syndrome == 0) && gda_ft_soft_op_unread(op)) {
            ret = gda_ft_soft_op_read(op);
            if (ret == 0) {
                /* reads that landed since free their room */
                (void)gda_ft_soft_mem_reads_land();
                ret = gda_ft_soft_op_read(op);
            }
            if (ret == 0) {
                break;
            }
        }
        ++qp->read_ahead;
    }

    op = gda_ft_soft_op_at(qp, qp->op_send);
    if (op->snapshot != NULL) {
        if (!gda_ft_soft_snapshot_landed(op->snapshot)) {
            (void)gda_ft_soft_mem_reads_land();
        }
        if (!gda_ft_soft_snapshot_landed(op->snapshot)) {
            return 0;
        }
        if (op->snapshot->refusal.refused) {
            /* its message could not be read: it fails once the oldest */
            op->syndrome = GDA_FT_MLX5_SYND_LOCAL_PROT_ERR;
            return 0;
        }
        return 1;
    }
    /* its message is not read ahead: none, or copied as it is sent, or no
     * room for it yet */
    return qp->read_ahead != qp->op_send;
}

void gda_ft_soft_op_release_data(gda_ft_soft_op_t *op)
{
    if (op->snapshot != NULL) {
        gda_ft_soft_snapshot_free(op->snapshot);
    } else {
        free(op->inline_data);
    }
    op->snapshot    = NULL;
    op->inline_data = NULL;
}

/* Copies [offset, offset+len) of the op's local data into dst: from its
 * inline data or snapshot, else from its buffers */
ucs_status_t gda_ft_soft_op_gather(gda_ft_soft_op_t *op, uint32_t offset,
                                   uint8_t *dst, uint32_t len)
{
    if (op->inline_data != NULL) {
        memcpy(dst, op->inline_data + offset, len);
        return UCS_OK;
    }
    return gda_ft_soft_op_copy(op, offset, dst, len, 0, NULL, 0);
}

/* Copies src into [offset, offset+len) of the op's local buffers */
void gda_ft_soft_op_scatter(const gda_ft_soft_op_t *op, uint32_t offset,
                            const uint8_t *src, uint32_t len,
                            gda_ft_soft_refusal_t *refusal, uint32_t tag)
{
    /* read only: it is the source of this copy */
    (void)gda_ft_soft_op_copy(op, offset, (uint8_t*)src, len, 1, refusal,
                              tag);
}
