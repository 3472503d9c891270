/*
 * DEVX emulator: the commands. CREATE_CQ and CREATE_QP make soft CQs and
 * QPs over the rings the umems name; the QP transitions move the soft QP
 * with what their QP context says; QUERY_QP reads it back; QUERY_HCA_CAP
 * answers the capabilities the checks use.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "gda_ft_mlx5_emu_cmd.h"
#include "gda_ft_mlx5_emu_table.h"
#include "gda_ft_mlx5_prm.h"
#include "gda_ft_soft.h"

#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <ucs/type/class.h>
#include <errno.h>
#include <string.h>

/* Every command's output has its status and syndrome where modify_qp_out
 * has them; a refusal is EREMOTEIO, as the kernel returns it for DEVX */
static int gda_ft_mlx5_emu_refused(const char *dev_name, const void *in,
                                   const gda_ft_mlx5_emu_refusal_t *refusal,
                                   void *out)
{
    ucs_diag("mlx5 emulator %s: command 0x%x refused (status 0x%x syndrome "
             "0x%x): %s", dev_name,
             (unsigned)GDA_FT_MLX5_GET(modify_qp_in, in, opcode),
             refusal->status, refusal->syndrome, refusal->why);
    gda_ft_mlx5_emu_refusal_out(refusal, out);
    return EREMOTEIO;
}

/* The input and output lengths a command's layout needs */
static int gda_ft_mlx5_emu_check_len(size_t inlen, size_t in_size,
                                     size_t outlen, size_t out_size,
                                     gda_ft_mlx5_emu_refusal_t *refusal)
{
    if (inlen < in_size) {
        return gda_ft_mlx5_emu_refuse(refusal,
                                      GDA_FT_MLX5_CMD_STAT_BAD_INP_LEN,
                                      GDA_FT_MLX5_EMU_SYND_INLEN,
                                      "input shorter than its layout");
    }
    if (outlen < out_size) {
        return gda_ft_mlx5_emu_refuse(refusal,
                                      GDA_FT_MLX5_CMD_STAT_BAD_OUTP_LEN,
                                      GDA_FT_MLX5_EMU_SYND_OUTLEN,
                                      "output shorter than its layout");
    }
    return 1;
}

/* The umem a command names, and the region [offset, offset + size) of it */
static int gda_ft_mlx5_emu_region(gda_ft_mlx5_emu_ctx_t *ctx, uint32_t id,
                                  uint64_t offset, size_t size,
                                  gda_ft_mlx5_emu_umem_t **umem_p,
                                  gda_ft_mlx5_emu_refusal_t *refusal)
{
    gda_ft_mlx5_emu_umem_t *umem = gda_ft_mlx5_emu_umem_find(ctx, id);

    if (umem == NULL) {
        return gda_ft_mlx5_emu_refuse(refusal, GDA_FT_MLX5_CMD_STAT_BAD_RES,
                                      GDA_FT_MLX5_EMU_SYND_UMEM_UNKNOWN,
                                      "no such umem in the context");
    }
    if ((offset > umem->size) || (size > umem->size - offset)) {
        return gda_ft_mlx5_emu_refuse(refusal,
                                      GDA_FT_MLX5_CMD_STAT_BAD_PARAM,
                                      GDA_FT_MLX5_EMU_SYND_UMEM_RANGE,
                                      "offset and size past the umem");
    }
    *umem_p = umem;
    return 1;
}

static gda_ft_mlx5_emu_obj_t *
gda_ft_mlx5_emu_cq_find(gda_ft_mlx5_emu_ctx_t *ctx, uint32_t cqn)
{
    gda_ft_mlx5_emu_obj_t *obj;

    ucs_list_for_each(obj, &ctx->objs, list) {
        if ((obj->type == GDA_FT_MLX5_CMD_OP_CREATE_CQ) && (obj->id == cqn)) {
            return obj;
        }
    }
    return NULL;
}

static int gda_ft_mlx5_emu_create_cq(gda_ft_mlx5_emu_ctx_t *ctx,
                                     const void *in,
                                     gda_ft_mlx5_emu_obj_t *obj,
                                     gda_ft_mlx5_emu_refusal_t *refusal)
{
    const void *cqc = GDA_FT_MLX5_ADDR_OF(create_cq_in, in, cqc);
    unsigned cqe_cnt = 1u << GDA_FT_MLX5_GET(cqc, cqc, log_cq_size);
    uint64_t offset  = GDA_FT_MLX5_GET64(create_cq_in, in, cq_umem_offset);
    uint64_t dbr     = GDA_FT_MLX5_GET64(cqc, cqc, dbr_addr);
    gda_ft_hca_cq_attr_t attr = {0};

    if (!gda_ft_mlx5_emu_check_create_cq(in, &ctx->hca->caps,
                                         refusal) ||
        !gda_ft_mlx5_emu_region(ctx,
                                GDA_FT_MLX5_GET(create_cq_in, in,
                                                cq_umem_id),
                                offset, (size_t)cqe_cnt * GDA_FT_MLX5_CQE_SIZE,
                                &obj->umem, refusal) ||
        !gda_ft_mlx5_emu_region(ctx, GDA_FT_MLX5_GET(cqc, cqc, dbr_umem_id),
                                dbr, 8, &obj->dbr_umem, refusal)) {
        return 0;
    }
    if (!gda_ft_mlx5_emu_uar_known(ctx, GDA_FT_MLX5_GET(cqc, cqc,
                                                        uar_page))) {
        return gda_ft_mlx5_emu_refuse(refusal, GDA_FT_MLX5_CMD_STAT_BAD_RES,
                                      GDA_FT_MLX5_EMU_SYND_UAR_UNKNOWN,
                                      "no such UAR page in the context");
    }
    if (GDA_FT_MLX5_GET(cqc, cqc, c_eqn) != GDA_FT_MLX5_EMU_EQN) {
        return gda_ft_mlx5_emu_refuse(refusal, GDA_FT_MLX5_CMD_STAT_BAD_RES,
                                      GDA_FT_MLX5_EMU_SYND_EQN_UNKNOWN,
                                      "no such completion EQ");
    }

    attr.buf      = obj->umem->addr + offset;
    attr.cqe_cnt  = cqe_cnt;
    attr.flags    = GDA_FT_MLX5_GET(cqc, cqc, cc) ? GDA_FT_HCA_CQ_COLLAPSED :
                                                    0;
    attr.mem_type = GDA_FT_HCA_MEM_HOST;
    if (gda_ft_soft_provider.cq_create(ctx->hca->soft, &attr,
                                       &obj->soft_cq) != UCS_OK) {
        return gda_ft_mlx5_emu_refuse(refusal,
                                      GDA_FT_MLX5_CMD_STAT_INT_ERR,
                                      GDA_FT_MLX5_EMU_SYND_NOT_EMULATED,
                                      "the soft HCA refused the CQ");
    }
    obj->id = obj->soft_cq->cqn;
    return 1;
}

/* The QP's receive and send queues, one buffer from wq_umem_offset on */
static int gda_ft_mlx5_emu_create_qp(gda_ft_mlx5_emu_ctx_t *ctx,
                                     const void *in,
                                     gda_ft_mlx5_emu_obj_t *obj,
                                     gda_ft_mlx5_emu_refusal_t *refusal)
{
    const void *qpc  = GDA_FT_MLX5_ADDR_OF(create_qp_in, in, qpc);
    int has_rq       = (GDA_FT_MLX5_GET(qpc, qpc, rq_type) == 0);
    unsigned rq_cnt  = has_rq ? (1u << GDA_FT_MLX5_GET(qpc, qpc,
                                                       log_rq_size)) : 0;
    unsigned rq_size = 16u << GDA_FT_MLX5_GET(qpc, qpc, log_rq_stride);
    unsigned sq_cnt  = 1u << GDA_FT_MLX5_GET(qpc, qpc, log_sq_size);
    uint64_t offset  = GDA_FT_MLX5_GET64(create_qp_in, in, wq_umem_offset);
    uint64_t dbr     = GDA_FT_MLX5_GET64(qpc, qpc, dbr_addr);
    size_t rq_len    = (size_t)rq_cnt * rq_size;
    gda_ft_hca_qp_init_attr_t attr = {0};

    if (!gda_ft_mlx5_emu_check_create_qp(in, &ctx->hca->caps, refusal) ||
        !gda_ft_mlx5_emu_region(ctx,
                                GDA_FT_MLX5_GET(create_qp_in, in,
                                                wq_umem_id),
                                offset,
                                rq_len + (size_t)sq_cnt * GDA_FT_MLX5_WQE_BB,
                                &obj->umem, refusal) ||
        !gda_ft_mlx5_emu_region(ctx, GDA_FT_MLX5_GET(qpc, qpc, dbr_umem_id),
                                dbr, 8, &obj->dbr_umem, refusal)) {
        return 0;
    }

    obj->pd  = gda_ft_mlx5_emu_pd_find(ctx, GDA_FT_MLX5_GET(qpc, qpc, pd));
    obj->scq = gda_ft_mlx5_emu_cq_find(ctx, GDA_FT_MLX5_GET(qpc, qpc,
                                                            cqn_snd));
    obj->rcq = gda_ft_mlx5_emu_cq_find(ctx, GDA_FT_MLX5_GET(qpc, qpc,
                                                            cqn_rcv));
    if (obj->pd == NULL) {
        return gda_ft_mlx5_emu_refuse(refusal, GDA_FT_MLX5_CMD_STAT_BAD_RES,
                                      GDA_FT_MLX5_EMU_SYND_PD_UNKNOWN,
                                      "no such PD in the context");
    }
    if ((obj->scq == NULL) || (obj->rcq == NULL)) {
        /* a QP without a receive queue still names a receive CQ */
        return gda_ft_mlx5_emu_refuse(refusal, GDA_FT_MLX5_CMD_STAT_BAD_RES,
                                      GDA_FT_MLX5_EMU_SYND_CQN_UNKNOWN,
                                      "cqn_snd or cqn_rcv is no CQ of the "
                                      "context");
    }
    if (!gda_ft_mlx5_emu_uar_known(ctx, GDA_FT_MLX5_GET(qpc, qpc,
                                                        uar_page))) {
        return gda_ft_mlx5_emu_refuse(refusal, GDA_FT_MLX5_CMD_STAT_BAD_RES,
                                      GDA_FT_MLX5_EMU_SYND_UAR_UNKNOWN,
                                      "no such UAR page in the context");
    }

    attr.send_cq      = obj->scq->soft_cq;
    attr.recv_cq      = has_rq ? obj->rcq->soft_cq : NULL;
    attr.rq_buf       = has_rq ? (obj->umem->addr + offset) : NULL;
    attr.rq_wqe_cnt   = rq_cnt;
    attr.rq_wqe_size  = has_rq ? rq_size : 0;
    attr.sq_buf       = obj->umem->addr + offset + rq_len;
    attr.sq_wqebb_cnt = sq_cnt;
    attr.dbrec        = (volatile uint32_t*)(obj->dbr_umem->addr + dbr);
    attr.ring_mem     = GDA_FT_HCA_MEM_HOST;
    attr.port_num     = 1;    /* RST2INIT names the port */
    if (gda_ft_soft_provider.qp_create(obj->pd->soft, &attr,
                                       &obj->soft_qp) != UCS_OK) {
        return gda_ft_mlx5_emu_refuse(refusal,
                                      GDA_FT_MLX5_CMD_STAT_INT_ERR,
                                      GDA_FT_MLX5_EMU_SYND_NOT_EMULATED,
                                      "the soft HCA refused the QP");
    }

    obj->id         = obj->soft_qp->qpn;
    obj->state      = GDA_FT_MLX5_QPC_STATE_RST;
    obj->sgid_index = -1;
    ++obj->pd->users;
    ++obj->scq->users;
    ++obj->rcq->users;
    return 1;
}

struct mlx5dv_devx_obj *
gda_ft_mlx5_emu_obj_create(struct ibv_context *ibv_ctx, const void *in,
                           size_t inlen, void *out, size_t outlen)
{
    gda_ft_mlx5_emu_ctx_t *ctx = ucs_derived_of(ibv_ctx,
                                                gda_ft_mlx5_emu_ctx_t);
    uint16_t opcode = GDA_FT_MLX5_GET(modify_qp_in, in, opcode);
    gda_ft_mlx5_emu_refusal_t refusal;
    gda_ft_mlx5_emu_obj_t *obj;
    int ok;

    obj = ucs_calloc(1, sizeof(*obj), "gda_ft_mlx5_emu_obj");
    if (obj == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    obj->ctx  = ctx;
    obj->type = opcode;

    pthread_mutex_lock(&gda_ft_mlx5_emu_lock);
    if (opcode == GDA_FT_MLX5_CMD_OP_CREATE_CQ) {
        ok = gda_ft_mlx5_emu_check_len(inlen,
                                       GDA_FT_MLX5_ST_SZ_BYTES(create_cq_in),
                                       outlen,
                                       GDA_FT_MLX5_ST_SZ_BYTES(create_cq_out),
                                       &refusal) &&
             gda_ft_mlx5_emu_create_cq(ctx, in, obj, &refusal);
        if (ok) {
            GDA_FT_MLX5_SET(create_cq_out, out, cqn, obj->id);
        }
    } else if (opcode == GDA_FT_MLX5_CMD_OP_CREATE_QP) {
        ok = gda_ft_mlx5_emu_check_len(inlen,
                                       GDA_FT_MLX5_ST_SZ_BYTES(create_qp_in),
                                       outlen,
                                       GDA_FT_MLX5_ST_SZ_BYTES(create_qp_out),
                                       &refusal) &&
             gda_ft_mlx5_emu_create_qp(ctx, in, obj, &refusal);
        if (ok) {
            GDA_FT_MLX5_SET(create_qp_out, out, qpn, obj->id);
        }
    } else {
        ok = gda_ft_mlx5_emu_refuse(&refusal, GDA_FT_MLX5_CMD_STAT_BAD_OP,
                                    GDA_FT_MLX5_EMU_SYND_BAD_OPCODE,
                                    "not an object the emulator creates");
    }

    if (!ok) {
        errno = gda_ft_mlx5_emu_refused(ctx->hca->name, in, &refusal, out);
        pthread_mutex_unlock(&gda_ft_mlx5_emu_lock);
        ucs_free(obj);
        return NULL;
    }

    ++obj->umem->users;
    ++obj->dbr_umem->users;
    ucs_list_add_tail(&ctx->objs, &obj->list);
    ++gda_ft_mlx5_emu_live;
    GDA_FT_MLX5_SET(modify_qp_out, out, status, GDA_FT_MLX5_CMD_STAT_OK);
    pthread_mutex_unlock(&gda_ft_mlx5_emu_lock);
    return (struct mlx5dv_devx_obj*)obj;
}

/* The QP's state: as the commands left it, unless the engine moved it to
 * ERR (a failed operation) */
static unsigned gda_ft_mlx5_emu_qp_state(gda_ft_mlx5_emu_obj_t *obj,
                                         gda_ft_hca_qp_query_attr_t *attr)
{
    gda_ft_soft_provider.qp_query(obj->soft_qp, attr);
    if (attr->state == GDA_FT_HCA_QP_ERR) {
        obj->state = GDA_FT_MLX5_QPC_STATE_ERR;
    }
    return obj->state;
}

/* What the transition's QP context says, as the interface's parameters */
static void gda_ft_mlx5_emu_qp_attr(const void *qpc, unsigned port_num,
                                    gda_ft_hca_qp_attr_t *attr)
{
    memset(attr, 0, sizeof(*attr));
    attr->access = (GDA_FT_MLX5_GET(qpc, qpc, rwe) ?
                    GDA_FT_HCA_ACCESS_REMOTE_WRITE : 0) |
                   (GDA_FT_MLX5_GET(qpc, qpc, rre) ?
                    GDA_FT_HCA_ACCESS_REMOTE_READ : 0) |
                   (GDA_FT_MLX5_GET(qpc, qpc, rae) ?
                    GDA_FT_HCA_ACCESS_REMOTE_ATOMIC : 0);
    attr->dest_qpn      = GDA_FT_MLX5_GET(qpc, qpc, remote_qpn);
    memcpy(attr->dest_gid,
           GDA_FT_MLX5_ADDR_OF(qpc, qpc, primary_path_rgid_rip),
           GDA_FT_HCA_GID_LEN);
    attr->rq_psn        = GDA_FT_MLX5_GET(qpc, qpc, next_rcv_psn);
    attr->path_mtu      = gda_ft_mlx5_mtu_bytes(GDA_FT_MLX5_GET(qpc, qpc,
                                                                mtu));
    /* RoCE v2 carries the DSCP: the ECN bits stay the engine's */
    attr->traffic_class = GDA_FT_MLX5_GET(qpc, qpc, primary_path_dscp) << 2;
    attr->hop_limit     = GDA_FT_MLX5_GET(qpc, qpc, primary_path_hop_limit);
    attr->min_rnr_timer = GDA_FT_MLX5_GET(qpc, qpc, min_rnr_nak);
    attr->max_dest_rd_atomic = 1u << GDA_FT_MLX5_GET(qpc, qpc, log_rra_max);
    attr->sq_psn        = GDA_FT_MLX5_GET(qpc, qpc, next_send_psn);
    attr->timeout       = GDA_FT_MLX5_GET(qpc, qpc,
                                          primary_path_ack_timeout);
    attr->retry_cnt     = GDA_FT_MLX5_GET(qpc, qpc, retry_count);
    attr->rnr_retry     = GDA_FT_MLX5_GET(qpc, qpc, rnr_retry);
    attr->max_rd_atomic = 1u << GDA_FT_MLX5_GET(qpc, qpc, log_sra_max);
    (void)port_num;
}

/* INIT2RTR: the GID to send from must be a RoCE v2 entry of the port's
 * table (the engine speaks RoCE v2 only) of the remote GID's IP version,
 * and the path MTU at most the port's. Firmware takes a source GID of the
 * other version and sends packets that no router delivers (the QP falls
 * silent); the emulator refuses them, so that a stale GID index shows at
 * the command. */
static int gda_ft_mlx5_emu_check_path(gda_ft_mlx5_emu_obj_t *obj,
                                      const void *qpc,
                                      gda_ft_mlx5_emu_refusal_t *refusal)
{
    uint8_t port = obj->soft_qp->init.port_num;
    const uint8_t *rgid = GDA_FT_MLX5_ADDR_OF(qpc, qpc,
                                              primary_path_rgid_rip);
    gda_ft_hca_port_attr_t port_attr;
    struct ibv_gid_entry gid;
    uint32_t ipv4;

    if ((gda_ft_mlx5_emu_gid(obj->ctx, port,
                             GDA_FT_MLX5_GET(qpc, qpc,
                                             primary_path_src_addr_index),
                             &gid) != 0) ||
        (gid.gid_type != IBV_GID_TYPE_ROCE_V2)) {
        return gda_ft_mlx5_emu_refuse(refusal,
                                      GDA_FT_MLX5_CMD_STAT_BAD_PARAM,
                                      GDA_FT_MLX5_EMU_SYND_GID_INDEX,
                                      "src_addr_index is no RoCE v2 entry "
                                      "of the port's GID table");
    }
    if (gda_ft_hca_gid_to_ipv4(gid.gid.raw, &ipv4) !=
        gda_ft_hca_gid_to_ipv4(rgid, &ipv4)) {
        return gda_ft_mlx5_emu_refuse(refusal,
                                      GDA_FT_MLX5_CMD_STAT_BAD_PARAM,
                                      GDA_FT_MLX5_EMU_SYND_GID_NETWORK,
                                      "the GID at src_addr_index and the "
                                      "remote GID are of different IP "
                                      "versions");
    }
    if ((gda_ft_soft_provider.port_query(obj->ctx->hca->soft, port,
                                         &port_attr) != UCS_OK) ||
        (gda_ft_mlx5_mtu_bytes(GDA_FT_MLX5_GET(qpc, qpc, mtu)) >
         port_attr.active_mtu)) {
        return gda_ft_mlx5_emu_refuse(refusal,
                                      GDA_FT_MLX5_CMD_STAT_BAD_PARAM,
                                      GDA_FT_MLX5_EMU_SYND_MTU,
                                      "path MTU past the port's");
    }
    return 1;
}

static int gda_ft_mlx5_emu_modify(gda_ft_mlx5_emu_obj_t *obj, const void *in,
                                  size_t inlen, size_t outlen,
                                  gda_ft_mlx5_emu_refusal_t *refusal)
{
    uint16_t opcode    = GDA_FT_MLX5_GET(modify_qp_in, in, opcode);
    int to             = gda_ft_mlx5_emu_transition_to(opcode);
    int full           = (opcode != GDA_FT_MLX5_CMD_OP_2ERR_QP) &&
                         (opcode != GDA_FT_MLX5_CMD_OP_2RST_QP);
    const void *qpc    = GDA_FT_MLX5_ADDR_OF(rst2init_qp_in, in, qpc);
    unsigned num_ports = obj->ctx->hca->soft->attr.info.num_ports;
    gda_ft_hca_qp_query_attr_t query;
    gda_ft_hca_qp_attr_t attr;
    gda_ft_hca_qp_state_t state;

    if ((obj->type != GDA_FT_MLX5_CMD_OP_CREATE_QP) || (to < 0) ||
        (opcode == GDA_FT_MLX5_CMD_OP_RTS2RTS_QP)) {
        return gda_ft_mlx5_emu_refuse(refusal, GDA_FT_MLX5_CMD_STAT_BAD_OP,
                                      GDA_FT_MLX5_EMU_SYND_NOT_EMULATED,
                                      "not a QP transition the emulator "
                                      "serves");
    }
    if (!gda_ft_mlx5_emu_check_len(inlen,
                                   full ?
                                   GDA_FT_MLX5_ST_SZ_BYTES(rst2init_qp_in) :
                                   GDA_FT_MLX5_ST_SZ_BYTES(modify_qp_in),
                                   outlen,
                                   GDA_FT_MLX5_ST_SZ_BYTES(modify_qp_out),
                                   refusal)) {
        return 0;
    }
    if (GDA_FT_MLX5_GET(modify_qp_in, in, qpn) != obj->id) {
        return gda_ft_mlx5_emu_refuse(refusal,
                                      GDA_FT_MLX5_CMD_STAT_BAD_PARAM,
                                      GDA_FT_MLX5_EMU_SYND_QPN,
                                      "qpn is not the object's");
    }
    if (!gda_ft_mlx5_emu_check_transition(
                in, gda_ft_mlx5_emu_qp_state(obj, &query), refusal) ||
        (full && !gda_ft_mlx5_emu_check_modify_qp(in, &obj->ctx->hca->caps,
                                                  num_ports, refusal)) ||
        ((opcode == GDA_FT_MLX5_CMD_OP_INIT2RTR_QP) &&
         !gda_ft_mlx5_emu_check_path(obj, qpc, refusal))) {
        return 0;
    }

    if (full) {
        gda_ft_mlx5_emu_qp_attr(qpc, obj->soft_qp->init.port_num, &attr);
    }
    if ((opcode == GDA_FT_MLX5_CMD_OP_RST2INIT_QP) ||
        (opcode == GDA_FT_MLX5_CMD_OP_INIT2INIT_QP)) {
        /* the soft QP takes its port from its creation attributes: it is
         * not sending or receiving before RTR */
        obj->soft_qp->init.port_num = GDA_FT_MLX5_GET(
                qpc, qpc, primary_path_vhca_port_num);
    }

    gda_ft_mlx5_qp_state_from_prm(to, &state);
    if (gda_ft_soft_provider.qp_modify(obj->soft_qp, state,
                                       full ? &attr : NULL) != UCS_OK) {
        return gda_ft_mlx5_emu_refuse(refusal,
                                      GDA_FT_MLX5_CMD_STAT_BAD_PARAM,
                                      GDA_FT_MLX5_EMU_SYND_NOT_EMULATED,
                                      "the soft HCA refused the "
                                      "transition");
    }
    obj->state = to;
    if (opcode == GDA_FT_MLX5_CMD_OP_INIT2RTR_QP) {
        obj->sgid_index = GDA_FT_MLX5_GET(qpc, qpc,
                                          primary_path_src_addr_index);
    } else if (opcode == GDA_FT_MLX5_CMD_OP_2RST_QP) {
        obj->sgid_index = -1;
    }
    return 1;
}

unsigned gda_ft_mlx5_emu_ctx_qps_sending_from(gda_ft_mlx5_emu_ctx_t *ctx,
                                              uint8_t port_num,
                                              unsigned gid_index)
{
    gda_ft_hca_qp_query_attr_t query;
    gda_ft_mlx5_emu_obj_t *obj;
    unsigned count = 0, state;

    ucs_list_for_each(obj, &ctx->objs, list) {
        if ((obj->type != GDA_FT_MLX5_CMD_OP_CREATE_QP) ||
            (obj->soft_qp->init.port_num != port_num) ||
            (obj->sgid_index != (int)gid_index)) {
            continue;
        }
        state  = gda_ft_mlx5_emu_qp_state(obj, &query);
        count += (state == GDA_FT_MLX5_QPC_STATE_RTR) ||
                 (state == GDA_FT_MLX5_QPC_STATE_RTS);
    }
    return count;
}

int gda_ft_mlx5_emu_obj_modify(struct mlx5dv_devx_obj *devx_obj,
                               const void *in, size_t inlen, void *out,
                               size_t outlen)
{
    gda_ft_mlx5_emu_obj_t *obj = (gda_ft_mlx5_emu_obj_t*)devx_obj;
    gda_ft_mlx5_emu_refusal_t refusal;
    int ret = 0;

    pthread_mutex_lock(&gda_ft_mlx5_emu_lock);
    if (!gda_ft_mlx5_emu_modify(obj, in, inlen, outlen, &refusal)) {
        ret = gda_ft_mlx5_emu_refused(obj->ctx->hca->name, in, &refusal,
                                      out);
    } else {
        GDA_FT_MLX5_SET(modify_qp_out, out, status, GDA_FT_MLX5_CMD_STAT_OK);
    }
    pthread_mutex_unlock(&gda_ft_mlx5_emu_lock);
    return ret;
}

int gda_ft_mlx5_emu_obj_query(struct mlx5dv_devx_obj *devx_obj,
                              const void *in, size_t inlen, void *out,
                              size_t outlen)
{
    gda_ft_mlx5_emu_obj_t *obj = (gda_ft_mlx5_emu_obj_t*)devx_obj;
    void *qpc = GDA_FT_MLX5_ADDR_OF(query_qp_out, out, qpc);
    gda_ft_mlx5_emu_refusal_t refusal;
    gda_ft_hca_qp_query_attr_t query;
    int ok, ret = 0;

    pthread_mutex_lock(&gda_ft_mlx5_emu_lock);
    ok = gda_ft_mlx5_emu_check_len(inlen,
                                   GDA_FT_MLX5_ST_SZ_BYTES(query_qp_in),
                                   outlen,
                                   GDA_FT_MLX5_ST_SZ_BYTES(query_qp_out),
                                   &refusal);
    if (ok && ((obj->type != GDA_FT_MLX5_CMD_OP_CREATE_QP) ||
               (GDA_FT_MLX5_GET(query_qp_in, in, opcode) !=
                GDA_FT_MLX5_CMD_OP_QUERY_QP))) {
        ok = gda_ft_mlx5_emu_refuse(&refusal, GDA_FT_MLX5_CMD_STAT_BAD_OP,
                                    GDA_FT_MLX5_EMU_SYND_NOT_EMULATED,
                                    "not a query the emulator serves");
    } else if (ok && (GDA_FT_MLX5_GET(query_qp_in, in, qpn) != obj->id)) {
        ok = gda_ft_mlx5_emu_refuse(&refusal, GDA_FT_MLX5_CMD_STAT_BAD_PARAM,
                                    GDA_FT_MLX5_EMU_SYND_QPN,
                                    "qpn is not the object's");
    }

    if (!ok) {
        ret = gda_ft_mlx5_emu_refused(obj->ctx->hca->name, in, &refusal,
                                      out);
    } else {
        memset(out, 0, GDA_FT_MLX5_ST_SZ_BYTES(query_qp_out));
        GDA_FT_MLX5_SET(qpc, qpc, state,
                        gda_ft_mlx5_emu_qp_state(obj, &query));
        GDA_FT_MLX5_SET(qpc, qpc, next_send_psn, query.sq_psn);
        GDA_FT_MLX5_SET(qpc, qpc, next_rcv_psn, query.rq_psn);
        GDA_FT_MLX5_SET(qpc, qpc, mtu, gda_ft_mlx5_mtu_code(query.path_mtu));
    }
    pthread_mutex_unlock(&gda_ft_mlx5_emu_lock);
    return ret;
}

int gda_ft_mlx5_emu_obj_destroy(struct mlx5dv_devx_obj *devx_obj)
{
    gda_ft_mlx5_emu_obj_t *obj = (gda_ft_mlx5_emu_obj_t*)devx_obj;

    pthread_mutex_lock(&gda_ft_mlx5_emu_lock);
    if (obj->users > 0) {
        /* a CQ that QPs still complete into */
        pthread_mutex_unlock(&gda_ft_mlx5_emu_lock);
        ucs_error("mlx5 emulator %s: CQ 0x%x destroyed while %u QPs use it",
                  obj->ctx->hca->name, obj->id, obj->users);
        return EBUSY;
    }

    if (obj->type == GDA_FT_MLX5_CMD_OP_CREATE_QP) {
        gda_ft_soft_provider.qp_destroy(obj->soft_qp);
        --obj->pd->users;
        --obj->scq->users;
        --obj->rcq->users;
    } else {
        gda_ft_soft_provider.cq_destroy(obj->soft_cq);
    }
    --obj->umem->users;
    --obj->dbr_umem->users;
    ucs_list_del(&obj->list);
    --gda_ft_mlx5_emu_live;
    pthread_mutex_unlock(&gda_ft_mlx5_emu_lock);
    ucs_free(obj);
    return 0;
}

/* The soft QP's: a doorbell the CPU rings wakes a sleeping engine at
 * once instead of at its next idle poll */
void gda_ft_mlx5_emu_qp_wake(struct mlx5dv_devx_obj *devx_obj, int *wake_fd_p,
                             const int32_t **wake_armed_p)
{
    gda_ft_mlx5_emu_obj_t *obj = (gda_ft_mlx5_emu_obj_t*)devx_obj;

    *wake_fd_p    = obj->soft_qp->wake_fd;
    *wake_armed_p = obj->soft_qp->wake_armed;
}

/* QUERY_HCA_CAP, maximum or current, general or atomic */
static int gda_ft_mlx5_emu_query_hca_cap(gda_ft_mlx5_emu_ctx_t *ctx,
                                         const void *in, void *out,
                                         gda_ft_mlx5_emu_refusal_t *refusal)
{
    const gda_ft_mlx5_emu_caps_t *caps = &ctx->hca->caps;
    void *cap = GDA_FT_MLX5_ADDR_OF(query_hca_cap_out, out, capability);
    unsigned type = GDA_FT_MLX5_GET(query_hca_cap_in, in, op_mod) >> 1;

    if (type == GDA_FT_MLX5_HCA_CAP_GENERAL) {
        GDA_FT_MLX5_SET(cmd_hca_cap, cap, max_wqe_sz_sq,
                        caps->max_wqe_sz_sq);
        GDA_FT_MLX5_SET(cmd_hca_cap, cap, atomic, 1);
    } else if (type == GDA_FT_MLX5_HCA_CAP_ATOMIC) {
        /* the order the engine writes 8-byte fetched values in */
        GDA_FT_MLX5_SET(atomic_caps, cap, atomic_req_8B_endianness_mode,
                        (ctx->hca->soft->attr.flags &
                         GDA_FT_HCA_DEV_FLAG_ATOMIC_HOST_ORDER) ?
                        GDA_FT_MLX5_ATOMIC_REQ_MODE_HOST_ENDIANNESS : 0);
    } else {
        return gda_ft_mlx5_emu_refuse(refusal,
                                      GDA_FT_MLX5_CMD_STAT_BAD_PARAM,
                                      GDA_FT_MLX5_EMU_SYND_NOT_EMULATED,
                                      "a capability type the emulator "
                                      "does not answer");
    }
    return 1;
}

int gda_ft_mlx5_emu_general_cmd(struct ibv_context *ibv_ctx, const void *in,
                                size_t inlen, void *out, size_t outlen)
{
    gda_ft_mlx5_emu_ctx_t *ctx = ucs_derived_of(ibv_ctx,
                                                gda_ft_mlx5_emu_ctx_t);
    gda_ft_mlx5_emu_refusal_t refusal;
    int ok;

    ok = gda_ft_mlx5_emu_check_len(inlen,
                                   GDA_FT_MLX5_ST_SZ_BYTES(query_hca_cap_in),
                                   outlen,
                                   GDA_FT_MLX5_ST_SZ_BYTES(query_hca_cap_out),
                                   &refusal);
    if (ok && (GDA_FT_MLX5_GET(query_hca_cap_in, in, opcode) !=
               GDA_FT_MLX5_CMD_OP_QUERY_HCA_CAP)) {
        ok = gda_ft_mlx5_emu_refuse(&refusal, GDA_FT_MLX5_CMD_STAT_BAD_OP,
                                    GDA_FT_MLX5_EMU_SYND_BAD_OPCODE,
                                    "not a command the emulator serves");
    }
    if (ok) {
        memset(out, 0, GDA_FT_MLX5_ST_SZ_BYTES(query_hca_cap_out));
        ok = gda_ft_mlx5_emu_query_hca_cap(ctx, in, out, &refusal);
    }
    return ok ? 0 : gda_ft_mlx5_emu_refused(ctx->hca->name, in, &refusal,
                                            out);
}
