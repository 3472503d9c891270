/*
 * DEVX emulator: the rules firmware applies to a command's own bytes
 * (gda_ft_mlx5_emu_check.h).
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "gda_ft_mlx5_emu_check.h"
#include "gda_ft_mlx5_prm.h"

#include <stddef.h>

int gda_ft_mlx5_emu_refuse(gda_ft_mlx5_emu_refusal_t *refusal,
                           uint8_t status, uint32_t syndrome,
                           const char *why)
{
    refusal->status   = status;
    refusal->syndrome = syndrome;
    refusal->why      = why;
    return 0;
}

void gda_ft_mlx5_emu_refusal_out(const gda_ft_mlx5_emu_refusal_t *refusal,
                                 void *out)
{
    GDA_FT_MLX5_SET(modify_qp_out, out, status, refusal->status);
    GDA_FT_MLX5_SET(modify_qp_out, out, syndrome, refusal->syndrome);
}

/* The state a transition starts from; -1 for any state or no transition */
static int gda_ft_mlx5_emu_transition_from(uint16_t opcode)
{
    switch (opcode) {
    case GDA_FT_MLX5_CMD_OP_RST2INIT_QP:
        return GDA_FT_MLX5_QPC_STATE_RST;
    case GDA_FT_MLX5_CMD_OP_INIT2INIT_QP:
    case GDA_FT_MLX5_CMD_OP_INIT2RTR_QP:
        return GDA_FT_MLX5_QPC_STATE_INIT;
    case GDA_FT_MLX5_CMD_OP_RTR2RTS_QP:
        return GDA_FT_MLX5_QPC_STATE_RTR;
    case GDA_FT_MLX5_CMD_OP_RTS2RTS_QP:
        return GDA_FT_MLX5_QPC_STATE_RTS;
    default:
        return -1;
    }
}

int gda_ft_mlx5_emu_transition_to(uint16_t opcode)
{
    switch (opcode) {
    case GDA_FT_MLX5_CMD_OP_RST2INIT_QP:
    case GDA_FT_MLX5_CMD_OP_INIT2INIT_QP:
        return GDA_FT_MLX5_QPC_STATE_INIT;
    case GDA_FT_MLX5_CMD_OP_INIT2RTR_QP:
        return GDA_FT_MLX5_QPC_STATE_RTR;
    case GDA_FT_MLX5_CMD_OP_RTR2RTS_QP:
    case GDA_FT_MLX5_CMD_OP_RTS2RTS_QP:
        return GDA_FT_MLX5_QPC_STATE_RTS;
    case GDA_FT_MLX5_CMD_OP_2ERR_QP:
        return GDA_FT_MLX5_QPC_STATE_ERR;
    case GDA_FT_MLX5_CMD_OP_2RST_QP:
        return GDA_FT_MLX5_QPC_STATE_RST;
    default:
        return -1;
    }
}

int gda_ft_mlx5_emu_check_transition(const void *in, unsigned prm_state,
                                     gda_ft_mlx5_emu_refusal_t *refusal)
{
    int from = gda_ft_mlx5_emu_transition_from(
            GDA_FT_MLX5_GET(modify_qp_in, in, opcode));

    if ((from >= 0) && ((unsigned)from != prm_state)) {
        return gda_ft_mlx5_emu_refuse(refusal,
                                      GDA_FT_MLX5_CMD_STAT_BAD_QP_STATE,
                                      GDA_FT_MLX5_EMU_SYND_QP_STATE,
                                      "the QP is not in the state the "
                                      "transition starts from");
    }
    return 1;
}

int gda_ft_mlx5_emu_check_create_cq(const void *in,
                                    const gda_ft_mlx5_emu_caps_t *caps,
                                    gda_ft_mlx5_emu_refusal_t *refusal)
{
    const void *cqc = GDA_FT_MLX5_ADDR_OF(create_cq_in, in, cqc);

    if (!GDA_FT_MLX5_GET(create_cq_in, in, cq_umem_valid) ||
        !GDA_FT_MLX5_GET(cqc, cqc, dbr_umem_valid)) {
        /* no PAS list follows: the buffer and record are umems or none */
        return gda_ft_mlx5_emu_refuse(refusal,
                                      GDA_FT_MLX5_CMD_STAT_BAD_PARAM,
                                      GDA_FT_MLX5_EMU_SYND_UMEM_MISSING,
                                      "CQ buffer or doorbell record given "
                                      "by no umem");
    }
    if (GDA_FT_MLX5_GET(cqc, cqc, cqe_sz) != 0) {
        /* 128-byte CQEs are a real mode, which the engine does not write */
        return gda_ft_mlx5_emu_refuse(refusal,
                                      GDA_FT_MLX5_CMD_STAT_BAD_PARAM,
                                      GDA_FT_MLX5_EMU_SYND_CQE_SIZE,
                                      "CQE size other than 64 bytes");
    }
    if (GDA_FT_MLX5_GET(cqc, cqc, log_cq_size) > caps->log_max_cq_sz) {
        return gda_ft_mlx5_emu_refuse(refusal,
                                      GDA_FT_MLX5_CMD_STAT_BAD_PARAM,
                                      GDA_FT_MLX5_EMU_SYND_LOG_SIZE,
                                      "log_cq_size past log_max_cq_sz");
    }
    if ((GDA_FT_MLX5_GET64(create_cq_in, in, cq_umem_offset) %
         GDA_FT_MLX5_CQE_SIZE) ||
        (GDA_FT_MLX5_GET64(cqc, cqc, dbr_addr) % 8)) {
        return gda_ft_mlx5_emu_refuse(refusal,
                                      GDA_FT_MLX5_CMD_STAT_BAD_PARAM,
                                      GDA_FT_MLX5_EMU_SYND_ALIGN,
                                      "CQ buffer not on a CQE or doorbell "
                                      "record not on 8 bytes");
    }
    return 1;
}

int gda_ft_mlx5_emu_check_create_qp(const void *in,
                                    const gda_ft_mlx5_emu_caps_t *caps,
                                    gda_ft_mlx5_emu_refusal_t *refusal)
{
    const void *qpc = GDA_FT_MLX5_ADDR_OF(create_qp_in, in, qpc);
    unsigned rq_type = GDA_FT_MLX5_GET(qpc, qpc, rq_type);

    if (!GDA_FT_MLX5_GET(create_qp_in, in, wq_umem_valid) ||
        !GDA_FT_MLX5_GET(qpc, qpc, dbr_umem_valid)) {
        return gda_ft_mlx5_emu_refuse(refusal,
                                      GDA_FT_MLX5_CMD_STAT_BAD_PARAM,
                                      GDA_FT_MLX5_EMU_SYND_UMEM_MISSING,
                                      "work queue or doorbell record given "
                                      "by no umem");
    }
    if (GDA_FT_MLX5_GET(qpc, qpc, st) != GDA_FT_MLX5_QPC_ST_RC) {
        return gda_ft_mlx5_emu_refuse(refusal,
                                      GDA_FT_MLX5_CMD_STAT_BAD_PARAM,
                                      GDA_FT_MLX5_EMU_SYND_ST,
                                      "service type other than RC");
    }
    if (GDA_FT_MLX5_GET(qpc, qpc, pm_state) !=
        GDA_FT_MLX5_QPC_PM_STATE_MIGRATED) {
        return gda_ft_mlx5_emu_refuse(refusal,
                                      GDA_FT_MLX5_CMD_STAT_BAD_PARAM,
                                      GDA_FT_MLX5_EMU_SYND_PM_STATE,
                                      "pm_state not MIGRATED");
    }
    if (GDA_FT_MLX5_GET(qpc, qpc, ts_format) > 2) {
        return gda_ft_mlx5_emu_refuse(refusal,
                                      GDA_FT_MLX5_CMD_STAT_BAD_PARAM,
                                      GDA_FT_MLX5_EMU_SYND_TS_FORMAT,
                                      "reserved ts_format");
    }
    if ((rq_type != 0) && (rq_type != 3)) {
        return gda_ft_mlx5_emu_refuse(refusal,
                                      GDA_FT_MLX5_CMD_STAT_BAD_PARAM,
                                      GDA_FT_MLX5_EMU_SYND_RQ_TYPE,
                                      "RQ neither regular nor zero-length");
    }
    if (GDA_FT_MLX5_GET(qpc, qpc, no_sq) ||
        (GDA_FT_MLX5_GET(qpc, qpc, log_sq_size) > caps->log_max_qp_sz) ||
        ((rq_type == 0) &&
         ((GDA_FT_MLX5_GET(qpc, qpc, log_rq_size) > caps->log_max_qp_sz) ||
          (GDA_FT_MLX5_GET(qpc, qpc, log_rq_stride) > 7)))) {
        return gda_ft_mlx5_emu_refuse(refusal,
                                      GDA_FT_MLX5_CMD_STAT_BAD_PARAM,
                                      GDA_FT_MLX5_EMU_SYND_LOG_SIZE,
                                      "no send queue, or a queue size or "
                                      "stride past the caps");
    }
    if ((GDA_FT_MLX5_GET64(create_qp_in, in, wq_umem_offset) %
         GDA_FT_MLX5_WQE_BB) ||
        (GDA_FT_MLX5_GET64(qpc, qpc, dbr_addr) % 8)) {
        return gda_ft_mlx5_emu_refuse(refusal,
                                      GDA_FT_MLX5_CMD_STAT_BAD_PARAM,
                                      GDA_FT_MLX5_EMU_SYND_ALIGN,
                                      "work queue not on 64 bytes or "
                                      "doorbell record not on 8 bytes");
    }
    return 1;
}

/* RST2INIT and INIT2INIT: the port, and the atomics it may answer */
static int gda_ft_mlx5_emu_check_to_init(const void *qpc,
                                         const gda_ft_mlx5_emu_caps_t *caps,
                                         unsigned num_ports,
                                         gda_ft_mlx5_emu_refusal_t *refusal)
{
    unsigned port = GDA_FT_MLX5_GET(qpc, qpc, primary_path_vhca_port_num);

    if ((port < 1) || (port > num_ports)) {
        return gda_ft_mlx5_emu_refuse(refusal,
                                      GDA_FT_MLX5_CMD_STAT_BAD_PARAM,
                                      GDA_FT_MLX5_EMU_SYND_PORT,
                                      "primary path port is not a port of "
                                      "the device");
    }
    if (GDA_FT_MLX5_GET(qpc, qpc, atomic_mode) > caps->max_atomic_mode) {
        return gda_ft_mlx5_emu_refuse(refusal,
                                      GDA_FT_MLX5_CMD_STAT_BAD_PARAM,
                                      GDA_FT_MLX5_EMU_SYND_ATOMIC_MODE,
                                      "atomic_mode past the atomic caps");
    }
    return 1;
}

static int gda_ft_mlx5_emu_zero(const uint8_t *bytes, size_t len)
{
    size_t i;

    for (i = 0; i < len; ++i) {
        if (bytes[i] != 0) {
            return 0;
        }
    }
    return 1;
}

/* INIT2RTR over RoCE: the path and the receive side */
static int gda_ft_mlx5_emu_check_rtr(const void *qpc,
                                     const gda_ft_mlx5_emu_caps_t *caps,
                                     gda_ft_mlx5_emu_refusal_t *refusal)
{
    unsigned mtu    = GDA_FT_MLX5_GET(qpc, qpc, mtu);
    unsigned tclass = GDA_FT_MLX5_GET(qpc, qpc, primary_path_tclass);

    if ((mtu < GDA_FT_MLX5_QPC_MTU_256_BYTES) ||
        (mtu > GDA_FT_MLX5_QPC_MTU_4K_BYTES)) {
        return gda_ft_mlx5_emu_refuse(refusal,
                                      GDA_FT_MLX5_CMD_STAT_BAD_PARAM,
                                      GDA_FT_MLX5_EMU_SYND_MTU,
                                      "no path MTU code");
    }
    if ((GDA_FT_MLX5_GET(qpc, qpc, log_msg_max) == 0) ||
        (GDA_FT_MLX5_GET(qpc, qpc, log_msg_max) > caps->log_max_msg)) {
        return gda_ft_mlx5_emu_refuse(refusal,
                                      GDA_FT_MLX5_CMD_STAT_BAD_PARAM,
                                      GDA_FT_MLX5_EMU_SYND_MSG_MAX,
                                      "log_msg_max 0 or past log_max_msg");
    }
    /* the pairing mlx5_ib_modify_qp checks max_dest_rd_atomic and
     * max_rd_atomic with */
    if (GDA_FT_MLX5_GET(qpc, qpc, log_rra_max) > caps->log_max_ra_req_qp) {
        return gda_ft_mlx5_emu_refuse(refusal,
                                      GDA_FT_MLX5_CMD_STAT_BAD_PARAM,
                                      GDA_FT_MLX5_EMU_SYND_RA_MAX,
                                      "log_rra_max past log_max_ra_req_qp");
    }
    if (gda_ft_mlx5_emu_zero(GDA_FT_MLX5_ADDR_OF(qpc, qpc,
                                                 primary_path_rgid_rip),
                             16)) {
        return gda_ft_mlx5_emu_refuse(refusal,
                                      GDA_FT_MLX5_CMD_STAT_BAD_PARAM,
                                      GDA_FT_MLX5_EMU_SYND_RGID,
                                      "RoCE path without a remote GID");
    }
    if ((GDA_FT_MLX5_GET(qpc, qpc, primary_path_rmac_47_32) == 0) &&
        (GDA_FT_MLX5_GET(qpc, qpc, primary_path_rmac_31_0) == 0)) {
        return gda_ft_mlx5_emu_refuse(refusal,
                                      GDA_FT_MLX5_CMD_STAT_BAD_PARAM,
                                      GDA_FT_MLX5_EMU_SYND_RMAC,
                                      "RoCE path without a destination "
                                      "MAC");
    }
    if (GDA_FT_MLX5_GET(qpc, qpc, primary_path_hop_limit) == 0) {
        return gda_ft_mlx5_emu_refuse(refusal,
                                      GDA_FT_MLX5_CMD_STAT_BAD_PARAM,
                                      GDA_FT_MLX5_EMU_SYND_HOP_LIMIT,
                                      "hop_limit 0");
    }
    if (GDA_FT_MLX5_GET(qpc, qpc, primary_path_dscp) != (tclass >> 2)) {
        /* RoCE v2 marks packets with the DSCP field alone */
        return gda_ft_mlx5_emu_refuse(refusal,
                                      GDA_FT_MLX5_CMD_STAT_BAD_PARAM,
                                      GDA_FT_MLX5_EMU_SYND_DSCP,
                                      "DSCP is not the traffic class's "
                                      "upper six bits");
    }
    return 1;
}

int gda_ft_mlx5_emu_check_modify_qp(const void *in,
                                    const gda_ft_mlx5_emu_caps_t *caps,
                                    unsigned num_ports,
                                    gda_ft_mlx5_emu_refusal_t *refusal)
{
    const void *qpc = GDA_FT_MLX5_ADDR_OF(rst2init_qp_in, in, qpc);

    switch (GDA_FT_MLX5_GET(modify_qp_in, in, opcode)) {
    case GDA_FT_MLX5_CMD_OP_RST2INIT_QP:
        if (GDA_FT_MLX5_GET(qpc, qpc, pm_state) !=
            GDA_FT_MLX5_QPC_PM_STATE_MIGRATED) {
            return gda_ft_mlx5_emu_refuse(refusal,
                                          GDA_FT_MLX5_CMD_STAT_BAD_PARAM,
                                          GDA_FT_MLX5_EMU_SYND_PM_STATE,
                                          "pm_state not MIGRATED");
        }
        return gda_ft_mlx5_emu_check_to_init(qpc, caps, num_ports, refusal);
    case GDA_FT_MLX5_CMD_OP_INIT2INIT_QP:
        return gda_ft_mlx5_emu_check_to_init(qpc, caps, num_ports, refusal);
    case GDA_FT_MLX5_CMD_OP_INIT2RTR_QP:
        return gda_ft_mlx5_emu_check_rtr(qpc, caps, refusal);
    case GDA_FT_MLX5_CMD_OP_RTR2RTS_QP:
        if (GDA_FT_MLX5_GET(qpc, qpc, log_sra_max) >
            caps->log_max_ra_res_qp) {
            return gda_ft_mlx5_emu_refuse(refusal,
                                          GDA_FT_MLX5_CMD_STAT_BAD_PARAM,
                                          GDA_FT_MLX5_EMU_SYND_RA_MAX,
                                          "log_sra_max past "
                                          "log_max_ra_res_qp");
        }
        return 1;
    default:
        return 1;
    }
}
