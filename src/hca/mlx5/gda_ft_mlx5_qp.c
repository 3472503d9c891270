/*
 * mlx5 provider: CQ and RC QP as DEVX objects over caller memory, the QP
 * state changes, and what error CQEs mean.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "gda_ft_mlx5_int.h"
#include "gda_ft_mlx5_prm.h"

#include <ucs/arch/bitops.h>
#include <ucs/debug/assert.h>
#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <ucs/sys/math.h>
#include <ucs/type/class.h>
#include <errno.h>
#include <string.h>
#include <unistd.h>

static unsigned gda_ft_mlx5_log_page_size(void)
{
    return ucs_ilog2(sysconf(_SC_PAGESIZE)) - GDA_FT_MLX5_ADAPTER_PAGE_SHIFT;
}

/* The CQ's doorbell record: host memory of the provider's own (the
 * interface gives the CQ buffer only). [0] is the consumer index, which
 * the datapath does not publish: the CQ is created with overrun ignored,
 * and its users bound their outstanding work by the CQ size. */
static ucs_status_t gda_ft_mlx5_cq_dbr_alloc(gda_ft_mlx5_dev_t *dev,
                                             gda_ft_mlx5_cq_t *cq)
{
    void *ptr;
    ucs_status_t status;

    if (ucs_posix_memalign(&ptr, 64, 64, "gda_ft_mlx5_cq_dbr") != 0) {
        return UCS_ERR_NO_MEMORY;
    }

    memset(ptr, 0, 64);
    cq->dbrec = ptr;
    status    = gda_ft_mlx5_umem_reg(dev, ptr, 64, GDA_FT_HCA_MEM_HOST,
                                     &cq->dbr);
    if (status != UCS_OK) {
        ucs_free(ptr);
    }
    return status;
}

static void gda_ft_mlx5_cq_fill(gda_ft_mlx5_dev_t *dev, gda_ft_mlx5_cq_t *cq,
                                void *in)
{
    void *cqc = GDA_FT_MLX5_ADDR_OF(create_cq_in, in, cqc);
    int collapsed = !!(cq->super.attr.flags & GDA_FT_HCA_CQ_COLLAPSED);

    GDA_FT_MLX5_SET(create_cq_in, in, opcode, GDA_FT_MLX5_CMD_OP_CREATE_CQ);
    GDA_FT_MLX5_SET(create_cq_in, in, cq_umem_valid, 1);
    GDA_FT_MLX5_SET(create_cq_in, in, cq_umem_id,
                    gda_ft_mlx5_umem_id(&cq->buf));
    GDA_FT_MLX5_SET64(create_cq_in, in, cq_umem_offset, cq->buf.offset);

    GDA_FT_MLX5_SET(cqc, cqc, cqe_sz, 0);            /* 64-byte CQEs */
    /* Collapsed: every completion is written to entry 0. Once a QP fails,
     * the flushes of the WQEs behind the failed one overwrite its CQE, so
     * the entry read afterwards often holds WR_FLUSH rather than the
     * error that started it (see gda_ft_mlx5_syndrome_is_path_error) */
    GDA_FT_MLX5_SET(cqc, cqc, cc, collapsed);
    GDA_FT_MLX5_SET(cqc, cqc, oi, 1);
    GDA_FT_MLX5_SET(cqc, cqc, log_cq_size,
                    ucs_ilog2(cq->super.attr.cqe_cnt));
    GDA_FT_MLX5_SET(cqc, cqc, uar_page, dev->uar->page_id);
    GDA_FT_MLX5_SET(cqc, cqc, c_eqn, dev->eqn);
    GDA_FT_MLX5_SET(cqc, cqc, log_page_size, gda_ft_mlx5_log_page_size());
    GDA_FT_MLX5_SET(cqc, cqc, dbr_umem_valid, 1);
    GDA_FT_MLX5_SET(cqc, cqc, dbr_umem_id, gda_ft_mlx5_umem_id(&cq->dbr));
    GDA_FT_MLX5_SET64(cqc, cqc, dbr_addr, cq->dbr.offset);
}

ucs_status_t gda_ft_mlx5_cq_create(gda_ft_hca_dev_t *hca_dev,
                                   const gda_ft_hca_cq_attr_t *attr,
                                   gda_ft_hca_cq_t **cq_p)
{
    gda_ft_mlx5_dev_t *dev = ucs_derived_of(hca_dev, gda_ft_mlx5_dev_t);
    uint32_t in[GDA_FT_MLX5_ST_SZ_DW(create_cq_in)]   = {0};
    uint32_t out[GDA_FT_MLX5_ST_SZ_DW(create_cq_out)] = {0};
    gda_ft_mlx5_cq_t *cq;
    ucs_status_t status;

    cq = ucs_calloc(1, sizeof(*cq), "gda_ft_mlx5_cq");
    if (cq == NULL) {
        return UCS_ERR_NO_MEMORY;
    }

    cq->super.dev  = hca_dev;
    cq->super.attr = *attr;
    status = gda_ft_mlx5_umem_reg(dev, attr->buf,
                                  attr->cqe_cnt * GDA_FT_MLX5_CQE_SIZE,
                                  attr->mem_type, &cq->buf);
    if (status != UCS_OK) {
        goto err_free;
    }

    status = gda_ft_mlx5_cq_dbr_alloc(dev, cq);
    if (status != UCS_OK) {
        goto err_dereg_buf;
    }

    gda_ft_mlx5_cq_fill(dev, cq, in);
    cq->obj = gda_ft_mlx5_sys->obj_create(dev->ctx, in, sizeof(in), out,
                                          sizeof(out));
    if (!gda_ft_mlx5_cmd_done(hca_dev->attr.info.name, in, sizeof(in), out,
                              cq->obj != NULL)) {
        status = UCS_ERR_IO_ERROR;
        goto err_free_dbr;
    }

    cq->super.cqn = GDA_FT_MLX5_GET(create_cq_out, out, cqn);
    *cq_p         = &cq->super;
    return UCS_OK;

err_free_dbr:
    gda_ft_mlx5_umem_dereg(&cq->dbr);
    ucs_free((void*)cq->dbrec);
err_dereg_buf:
    gda_ft_mlx5_umem_dereg(&cq->buf);
err_free:
    ucs_free(cq);
    return status;
}

void gda_ft_mlx5_cq_destroy(gda_ft_hca_cq_t *hca_cq)
{
    gda_ft_mlx5_cq_t *cq = ucs_derived_of(hca_cq, gda_ft_mlx5_cq_t);
    int ret;

    ret = gda_ft_mlx5_sys->obj_destroy(cq->obj);
    if (ret != 0) {
        ucs_error("%s: destroying CQ 0x%x failed: %s",
                  hca_cq->dev->attr.info.name, hca_cq->cqn, strerror(ret));
    }
    gda_ft_mlx5_umem_dereg(&cq->dbr);
    ucs_free((void*)cq->dbrec);
    gda_ft_mlx5_umem_dereg(&cq->buf);
    ucs_free(cq);
}

/* The device reads the receive and send queues as one buffer, RQ first:
 * the caller's rq_buf must end where sq_buf starts */
static ucs_status_t
gda_ft_mlx5_qp_wq_reg(gda_ft_mlx5_dev_t *dev, gda_ft_mlx5_qp_t *qp,
                      const gda_ft_hca_qp_init_attr_t *attr)
{
    const char *name = dev->super.attr.info.name;
    size_t rq_len    = 0;
    void *wq_buf     = attr->sq_buf;

    if (attr->recv_cq != NULL) {
        rq_len = (size_t)attr->rq_wqe_cnt * attr->rq_wqe_size;
        wq_buf = attr->rq_buf;
        if ((char*)attr->rq_buf + rq_len != (char*)attr->sq_buf) {
            ucs_error("%s: the receive queue %p+%zu must end where the send"
                      " queue %p starts (one DEVX work queue buffer)", name,
                      attr->rq_buf, rq_len, attr->sq_buf);
            return UCS_ERR_UNSUPPORTED;
        }
    }

    /* any WQE-aligned start: the umem holds the pages around the buffer,
     * wq_umem_offset says where in them it starts */
    if ((uintptr_t)wq_buf % GDA_FT_MLX5_WQE_BB) {
        ucs_error("%s: the work queue buffer %p must be 64-byte aligned",
                  name, wq_buf);
        return UCS_ERR_INVALID_PARAM;
    }

    return gda_ft_mlx5_umem_reg(dev, wq_buf,
                                rq_len + (size_t)attr->sq_wqebb_cnt *
                                         GDA_FT_MLX5_WQE_BB,
                                attr->ring_mem, &qp->wq);
}

static void gda_ft_mlx5_qp_fill(gda_ft_mlx5_dev_t *dev, gda_ft_mlx5_qp_t *qp,
                                const gda_ft_hca_qp_init_attr_t *attr,
                                void *in)
{
    void *qpc = GDA_FT_MLX5_ADDR_OF(create_qp_in, in, qpc);

    GDA_FT_MLX5_SET(create_qp_in, in, opcode, GDA_FT_MLX5_CMD_OP_CREATE_QP);
    GDA_FT_MLX5_SET(create_qp_in, in, wq_umem_valid, 1);
    GDA_FT_MLX5_SET(create_qp_in, in, wq_umem_id,
                    gda_ft_mlx5_umem_id(&qp->wq));
    GDA_FT_MLX5_SET64(create_qp_in, in, wq_umem_offset, qp->wq.offset);

    GDA_FT_MLX5_SET(qpc, qpc, st, GDA_FT_MLX5_QPC_ST_RC);
    GDA_FT_MLX5_SET(qpc, qpc, pm_state, GDA_FT_MLX5_QPC_PM_STATE_MIGRATED);
    GDA_FT_MLX5_SET(qpc, qpc, pd, qp->super.pd->pdn);
    GDA_FT_MLX5_SET(qpc, qpc, uar_page, dev->uar->page_id);
    GDA_FT_MLX5_SET(qpc, qpc, ts_format, GDA_FT_MLX5_QPC_TS_FORMAT_DEFAULT);
    GDA_FT_MLX5_SET(qpc, qpc, log_page_size, gda_ft_mlx5_log_page_size());
    GDA_FT_MLX5_SET(qpc, qpc, log_sq_size, ucs_ilog2(attr->sq_wqebb_cnt));
    GDA_FT_MLX5_SET(qpc, qpc, cqn_snd, attr->send_cq->cqn);
    if (attr->recv_cq != NULL) {
        GDA_FT_MLX5_SET(qpc, qpc, log_rq_size, ucs_ilog2(attr->rq_wqe_cnt));
        /* the stride counts from 16 bytes */
        GDA_FT_MLX5_SET(qpc, qpc, log_rq_stride,
                        ucs_ilog2(attr->rq_wqe_size) - 4);
        GDA_FT_MLX5_SET(qpc, qpc, cqn_rcv, attr->recv_cq->cqn);
    } else {
        GDA_FT_MLX5_SET(qpc, qpc, rq_type, GDA_FT_MLX5_RQ_TYPE_ZERO_LEN);
        GDA_FT_MLX5_SET(qpc, qpc, cqn_rcv, attr->send_cq->cqn);
    }
    GDA_FT_MLX5_SET(qpc, qpc, dbr_umem_valid, 1);
    GDA_FT_MLX5_SET(qpc, qpc, dbr_umem_id, gda_ft_mlx5_umem_id(&qp->dbr));
    GDA_FT_MLX5_SET64(qpc, qpc, dbr_addr, qp->dbr.offset);
}

ucs_status_t gda_ft_mlx5_qp_create(gda_ft_hca_pd_t *pd,
                                   const gda_ft_hca_qp_init_attr_t *attr,
                                   gda_ft_hca_qp_t **qp_p)
{
    gda_ft_mlx5_dev_t *dev = ucs_derived_of(pd->dev, gda_ft_mlx5_dev_t);
    uint32_t in[GDA_FT_MLX5_ST_SZ_DW(create_qp_in)]   = {0};
    uint32_t out[GDA_FT_MLX5_ST_SZ_DW(create_qp_out)] = {0};
    gda_ft_mlx5_qp_t *qp;
    ucs_status_t status;

    qp = ucs_calloc(1, sizeof(*qp), "gda_ft_mlx5_qp");
    if (qp == NULL) {
        return UCS_ERR_NO_MEMORY;
    }

    qp->super.dev        = pd->dev;
    qp->super.pd         = pd;
    qp->super.state      = GDA_FT_HCA_QP_RESET;
    qp->super.init       = *attr;
    qp->super.uar        = dev->uar->reg_addr;
    qp->super.wake_fd    = -1;
    qp->super.wake_armed = NULL;

    /* rings a kernel posts to: the kernel rings the doorbell too */
    if (attr->ring_mem != GDA_FT_HCA_MEM_HOST) {
        status = gda_ft_mlx5_dev_gpu_doorbell(dev, &qp->super.dev_uar);
        if (status != UCS_OK) {
            goto err_free;
        }
    }

    status = gda_ft_mlx5_qp_wq_reg(dev, qp, attr);
    if (status != UCS_OK) {
        goto err_free;
    }

    status = gda_ft_mlx5_umem_reg(dev, (void*)attr->dbrec,
                                  2 * sizeof(uint32_t), attr->ring_mem,
                                  &qp->dbr);
    if (status != UCS_OK) {
        goto err_dereg_wq;
    }

    gda_ft_mlx5_qp_fill(dev, qp, attr, in);
    qp->obj = gda_ft_mlx5_sys->obj_create(dev->ctx, in, sizeof(in), out,
                                          sizeof(out));
    if (!gda_ft_mlx5_cmd_done(pd->dev->attr.info.name, in, sizeof(in), out,
                              qp->obj != NULL)) {
        status = UCS_ERR_IO_ERROR;
        goto err_dereg_dbr;
    }

    qp->super.qpn = GDA_FT_MLX5_GET(create_qp_out, out, qpn);
    if (gda_ft_mlx5_sys->qp_wake != NULL) {
        gda_ft_mlx5_sys->qp_wake(qp->obj, &qp->super.wake_fd,
                                 &qp->super.wake_armed);
    }
    *qp_p         = &qp->super;
    return UCS_OK;

err_dereg_dbr:
    gda_ft_mlx5_umem_dereg(&qp->dbr);
err_dereg_wq:
    gda_ft_mlx5_umem_dereg(&qp->wq);
err_free:
    ucs_free(qp);
    return status;
}

void gda_ft_mlx5_qp_destroy(gda_ft_hca_qp_t *hca_qp)
{
    gda_ft_mlx5_qp_t *qp = ucs_derived_of(hca_qp, gda_ft_mlx5_qp_t);
    int ret;

    ret = gda_ft_mlx5_sys->obj_destroy(qp->obj);
    if (ret != 0) {
        ucs_error("%s: destroying QP 0x%x failed: %s",
                  hca_qp->dev->attr.info.name, hca_qp->qpn, strerror(ret));
    }
    gda_ft_mlx5_umem_dereg(&qp->dbr);
    gda_ft_mlx5_umem_dereg(&qp->wq);
    ucs_free(qp);
}

unsigned gda_ft_mlx5_mtu_code(unsigned bytes)
{
    switch (bytes) {
    case 256:  return GDA_FT_MLX5_QPC_MTU_256_BYTES;
    case 512:  return GDA_FT_MLX5_QPC_MTU_512_BYTES;
    case 1024: return GDA_FT_MLX5_QPC_MTU_1K_BYTES;
    case 2048: return GDA_FT_MLX5_QPC_MTU_2K_BYTES;
    case 4096: return GDA_FT_MLX5_QPC_MTU_4K_BYTES;
    default:   return 0;
    }
}

unsigned gda_ft_mlx5_mtu_bytes(unsigned code)
{
    return ((code >= GDA_FT_MLX5_QPC_MTU_256_BYTES) &&
            (code <= GDA_FT_MLX5_QPC_MTU_4K_BYTES)) ? (128u << code) : 0;
}

int gda_ft_mlx5_qp_state_from_prm(unsigned prm_state,
                                  gda_ft_hca_qp_state_t *state_p)
{
    switch (prm_state) {
    case GDA_FT_MLX5_QPC_STATE_RST:  *state_p = GDA_FT_HCA_QP_RESET; return 1;
    case GDA_FT_MLX5_QPC_STATE_INIT: *state_p = GDA_FT_HCA_QP_INIT;  return 1;
    case GDA_FT_MLX5_QPC_STATE_RTR:  *state_p = GDA_FT_HCA_QP_RTR;   return 1;
    case GDA_FT_MLX5_QPC_STATE_RTS:  *state_p = GDA_FT_HCA_QP_RTS;   return 1;
    case GDA_FT_MLX5_QPC_STATE_SQER:
    case GDA_FT_MLX5_QPC_STATE_ERR:  *state_p = GDA_FT_HCA_QP_ERR;   return 1;
    default:                         return 0;
    }
}

ucs_status_t gda_ft_mlx5_syndrome_status(uint8_t syndrome)
{
    switch (syndrome) {
    case GDA_FT_MLX5_SYND_LOCAL_LENGTH_ERR:
        return UCS_ERR_MESSAGE_TRUNCATED;
    case GDA_FT_MLX5_SYND_LOCAL_PROT_ERR:
    case GDA_FT_MLX5_SYND_LOCAL_ACCESS_ERR:
    case GDA_FT_MLX5_SYND_REMOTE_ACCESS_ERR:
        return UCS_ERR_INVALID_ADDR;
    case GDA_FT_MLX5_SYND_WR_FLUSH_ERR:
        return UCS_ERR_CANCELED;
    case GDA_FT_MLX5_SYND_REMOTE_INVAL_REQ_ERR:
        return UCS_ERR_INVALID_PARAM;
    case GDA_FT_MLX5_SYND_TRANSPORT_RETRY_EXC_ERR:
        return UCS_ERR_ENDPOINT_TIMEOUT;
    case GDA_FT_MLX5_SYND_RNR_RETRY_EXC_ERR:
        return UCS_ERR_BUSY;
    case GDA_FT_MLX5_SYND_REMOTE_ABORTED_ERR:
        return UCS_ERR_CONNECTION_RESET;
    default:
        return UCS_ERR_IO_ERROR;
    }
}

int gda_ft_mlx5_syndrome_is_path_error(uint8_t syndrome)
{
    /* Only an exhausted retransmission says the path is gone. A WR_FLUSH
     * is the echo of an earlier error; on a collapsed CQ it may be all
     * that is left of it, so its owner must judge the path by its own
     * deadline, not by this CQE. */
    return syndrome == GDA_FT_MLX5_SYND_TRANSPORT_RETRY_EXC_ERR;
}

uint16_t gda_ft_mlx5_udp_sport(uint32_t local_qpn, uint32_t remote_qpn)
{
    uint32_t h = (local_qpn * 0x9e3779b1u) ^ (remote_qpn * 0x85ebca6bu);

    h ^= h >> 16;
    /* RoCE v2 source ports come from the dynamic range 0xc000..0xffff */
    return 0xc000 | (h & 0x3fff);
}
