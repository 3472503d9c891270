/*
 * mlx5 provider: QP state changes and queries through DEVX commands.
 *
 * Every parameter is written explicitly: a DevX QP does not inherit what
 * the kernel would set for a verbs QP (the port's default traffic class
 * among them).
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "gda_ft_mlx5_int.h"

#include <ucs/arch/bitops.h>
#include <ucs/debug/assert.h>
#include <ucs/debug/log.h>
#include <ucs/sys/math.h>
#include <ucs/type/class.h>
#include <errno.h>
#include <string.h>

/* Largest command input among the state changes */
#define GDA_FT_MLX5_MAX(_a, _b) (((_a) > (_b)) ? (_a) : (_b))
#define GDA_FT_MLX5_MODIFY_IN_DW \
    GDA_FT_MLX5_MAX(GDA_FT_MLX5_ST_SZ_DW(init2rtr_qp_in), \
                    GDA_FT_MLX5_MAX(GDA_FT_MLX5_ST_SZ_DW(rst2init_qp_in), \
                                    GDA_FT_MLX5_ST_SZ_DW(rtr2rts_qp_in)))

/* log2 of a count of outstanding reads or atomics, rounded up */
static unsigned gda_ft_mlx5_log_rd_atomic(unsigned count)
{
    return (count <= 1) ? 0 : ucs_ilog2(ucs_roundup_pow2(count));
}

/*
 * To INIT: RST2INIT from RESET, INIT2INIT from INIT (the transport moves a
 * QP to INIT at creation and asks again when it connects it); firmware
 * refuses RST2INIT in any state but RESET. Both inputs share a layout.
 */
static size_t gda_ft_mlx5_to_init(gda_ft_mlx5_qp_t *qp,
                                  const gda_ft_hca_qp_attr_t *attr, void *in)
{
    void *qpc = GDA_FT_MLX5_ADDR_OF(rst2init_qp_in, in, qpc);
    int atomic = !!(attr->access & GDA_FT_HCA_ACCESS_REMOTE_ATOMIC);

    GDA_FT_MLX5_SET(rst2init_qp_in, in, opcode,
                    (qp->super.state == GDA_FT_HCA_QP_INIT) ?
                    GDA_FT_MLX5_CMD_OP_INIT2INIT_QP :
                    GDA_FT_MLX5_CMD_OP_RST2INIT_QP);
    GDA_FT_MLX5_SET(rst2init_qp_in, in, qpn, qp->super.qpn);
    GDA_FT_MLX5_SET(qpc, qpc, pm_state, GDA_FT_MLX5_QPC_PM_STATE_MIGRATED);
    GDA_FT_MLX5_SET(qpc, qpc, primary_path_vhca_port_num,
                    qp->super.init.port_num);
    GDA_FT_MLX5_SET(qpc, qpc, rwe,
                    !!(attr->access & GDA_FT_HCA_ACCESS_REMOTE_WRITE));
    GDA_FT_MLX5_SET(qpc, qpc, rre,
                    !!(attr->access & GDA_FT_HCA_ACCESS_REMOTE_READ));
    GDA_FT_MLX5_SET(qpc, qpc, rae, atomic);
    /* 4- and 8-byte atomics, masked ones included */
    GDA_FT_MLX5_SET(qpc, qpc, atomic_mode,
                    atomic ? GDA_FT_MLX5_QPC_ATOMIC_MODE_UP_TO_8B : 0);
    return GDA_FT_MLX5_ST_SZ_DW(rst2init_qp_in) * 4;
}

/* The primary path to the peer over RoCE */
static ucs_status_t gda_ft_mlx5_path_roce(gda_ft_mlx5_qp_t *qp,
                                          const gda_ft_hca_qp_attr_t *attr,
                                          void *qpc)
{
    gda_ft_mlx5_dev_t *dev   = ucs_derived_of(qp->super.dev,
                                              gda_ft_mlx5_dev_t);
    uint8_t port_num         = qp->super.init.port_num;
    gda_ft_mlx5_port_t *port = &dev->ports[port_num - 1];
    ucs_status_t status;
    uint8_t mac[6];
    int ret;

    /* the table as it is now: a QP connected again after a link flap
     * (a re-arm, a failback) sends from where the address is now */
    status = gda_ft_mlx5_port_refresh_gid(dev, port_num);
    if (status != UCS_OK) {
        return status;
    }
    if (port->gid_index < 0) {
        ucs_error("%s: port %u has no RoCE v2 GID to send from",
                  dev->super.attr.info.name, port_num);
        return UCS_ERR_UNREACHABLE;
    }

    ret = gda_ft_mlx5_sys->resolve_mac(dev->ctx, port_num, port->gid_index,
                                       attr->dest_gid, mac);
    if (ret != 0) {
        ucs_error("%s: port %u: no route to the peer's GID: %s",
                  dev->super.attr.info.name, port_num, strerror(ret));
        return UCS_ERR_UNREACHABLE;
    }

    GDA_FT_MLX5_SET(qpc, qpc, primary_path_rmac_47_32,
                    ((uint32_t)mac[0] << 8) | mac[1]);
    GDA_FT_MLX5_SET(qpc, qpc, primary_path_rmac_31_0,
                    ((uint32_t)mac[2] << 24) | ((uint32_t)mac[3] << 16) |
                    ((uint32_t)mac[4] << 8) | mac[5]);
    /* The global route (the IP header) is RoCE's own: the grh bit is
     * InfiniBand's and stays 0, as the kernel leaves it for a RoCE path */
    memcpy(GDA_FT_MLX5_ADDR_OF(qpc, qpc, primary_path_rgid_rip),
           attr->dest_gid, GDA_FT_HCA_GID_LEN);
    GDA_FT_MLX5_SET(qpc, qpc, primary_path_src_addr_index,
                    port->gid_index);
    GDA_FT_MLX5_SET(qpc, qpc, primary_path_hop_limit,
                    attr->hop_limit);
    GDA_FT_MLX5_SET(qpc, qpc, primary_path_tclass,
                    attr->traffic_class);
    /* RoCE v2 (the only GID type chosen) marks packets with the DSCP
     * field, not the traffic class: without it they leave with DSCP 0,
     * in the wrong PFC/ECN class of a lossless fabric */
    GDA_FT_MLX5_SET(qpc, qpc, primary_path_dscp,
                    attr->traffic_class >> 2);
    GDA_FT_MLX5_SET(qpc, qpc, primary_path_eth_prio,
                    gda_ft_mlx5_config.sl & 7);
    GDA_FT_MLX5_SET(qpc, qpc, primary_path_udp_sport,
                    gda_ft_mlx5_udp_sport(qp->super.qpn, attr->dest_qpn));
    return UCS_OK;
}

static ucs_status_t gda_ft_mlx5_init2rtr(gda_ft_mlx5_qp_t *qp,
                                         const gda_ft_hca_qp_attr_t *attr,
                                         void *in, size_t *inlen_p)
{
    void *qpc = GDA_FT_MLX5_ADDR_OF(init2rtr_qp_in, in, qpc);
    gda_ft_mlx5_dev_t *dev = ucs_derived_of(qp->super.dev,
                                            gda_ft_mlx5_dev_t);
    uint8_t port_num       = qp->super.init.port_num;

    if (dev->ports[port_num - 1].link_layer != IBV_LINK_LAYER_ETHERNET) {
        /* a LID route needs the peer's LID, which the interface's
         * gda_ft_hca_qp_attr_t does not carry */
        ucs_error("%s: port %u is InfiniBand: only RoCE ports are "
                  "supported", dev->super.attr.info.name, port_num);
        return UCS_ERR_UNSUPPORTED;
    }

    GDA_FT_MLX5_SET(init2rtr_qp_in, in, opcode,
                    GDA_FT_MLX5_CMD_OP_INIT2RTR_QP);
    GDA_FT_MLX5_SET(init2rtr_qp_in, in, qpn, qp->super.qpn);
    GDA_FT_MLX5_SET(qpc, qpc, mtu, gda_ft_mlx5_mtu_code(attr->path_mtu));
    GDA_FT_MLX5_SET(qpc, qpc, log_msg_max, 30);
    GDA_FT_MLX5_SET(qpc, qpc, remote_qpn, attr->dest_qpn);
    GDA_FT_MLX5_SET(qpc, qpc, next_rcv_psn, attr->rq_psn);
    GDA_FT_MLX5_SET(qpc, qpc, min_rnr_nak, attr->min_rnr_timer);
    GDA_FT_MLX5_SET(qpc, qpc, log_rra_max,
                    gda_ft_mlx5_log_rd_atomic(attr->max_dest_rd_atomic));
    GDA_FT_MLX5_SET(qpc, qpc, primary_path_vhca_port_num, port_num);
    *inlen_p = GDA_FT_MLX5_ST_SZ_DW(init2rtr_qp_in) * 4;
    return gda_ft_mlx5_path_roce(qp, attr, qpc);
}

static size_t gda_ft_mlx5_rtr2rts(gda_ft_mlx5_qp_t *qp,
                                  const gda_ft_hca_qp_attr_t *attr, void *in)
{
    void *qpc = GDA_FT_MLX5_ADDR_OF(rtr2rts_qp_in, in, qpc);

    GDA_FT_MLX5_SET(rtr2rts_qp_in, in, opcode,
                    GDA_FT_MLX5_CMD_OP_RTR2RTS_QP);
    GDA_FT_MLX5_SET(rtr2rts_qp_in, in, qpn, qp->super.qpn);
    GDA_FT_MLX5_SET(qpc, qpc, next_send_psn, attr->sq_psn);
    /* The retransmission timeout is 4.096 us * 2^ack_timeout, retried
     * retry_count times. ConnectX firmware clamps each interval to about
     * 0.5 s unless a NIC setting disables the clamp, so the hardware
     * gives up later than these numbers say: the datapath keeps its own
     * deadline and does not wait for TRANSPORT_RETRY_EXC to fail over. */
    GDA_FT_MLX5_SET(qpc, qpc, primary_path_ack_timeout,
                    attr->timeout);
    GDA_FT_MLX5_SET(qpc, qpc, retry_count, attr->retry_cnt);
    GDA_FT_MLX5_SET(qpc, qpc, rnr_retry, attr->rnr_retry);
    GDA_FT_MLX5_SET(qpc, qpc, log_sra_max,
                    gda_ft_mlx5_log_rd_atomic(attr->max_rd_atomic));
    return GDA_FT_MLX5_ST_SZ_DW(rtr2rts_qp_in) * 4;
}

/* 2ERR and 2RST take the QP number only */
static size_t gda_ft_mlx5_to_err_rst(gda_ft_mlx5_qp_t *qp, uint16_t opcode,
                                     void *in)
{
    GDA_FT_MLX5_SET(modify_qp_in, in, opcode, opcode);
    GDA_FT_MLX5_SET(modify_qp_in, in, qpn, qp->super.qpn);
    return GDA_FT_MLX5_ST_SZ_DW(modify_qp_in) * 4;
}

ucs_status_t gda_ft_mlx5_qp_modify(gda_ft_hca_qp_t *hca_qp,
                                   gda_ft_hca_qp_state_t state,
                                   const gda_ft_hca_qp_attr_t *attr)
{
    gda_ft_mlx5_qp_t *qp = ucs_derived_of(hca_qp, gda_ft_mlx5_qp_t);
    uint32_t in[GDA_FT_MLX5_MODIFY_IN_DW]             = {0};
    uint32_t out[GDA_FT_MLX5_ST_SZ_DW(modify_qp_out)] = {0};
    ucs_status_t status = UCS_OK;
    size_t inlen;

    switch (state) {
    case GDA_FT_HCA_QP_RESET:
        inlen = gda_ft_mlx5_to_err_rst(qp, GDA_FT_MLX5_CMD_OP_2RST_QP, in);
        break;
    case GDA_FT_HCA_QP_ERR:
        inlen = gda_ft_mlx5_to_err_rst(qp, GDA_FT_MLX5_CMD_OP_2ERR_QP, in);
        break;
    case GDA_FT_HCA_QP_INIT:
        inlen = gda_ft_mlx5_to_init(qp, attr, in);
        break;
    case GDA_FT_HCA_QP_RTR:
        status = gda_ft_mlx5_init2rtr(qp, attr, in, &inlen);
        break;
    case GDA_FT_HCA_QP_RTS:
        inlen = gda_ft_mlx5_rtr2rts(qp, attr, in);
        break;
    default:
        return UCS_ERR_INVALID_PARAM;
    }
    if (status != UCS_OK) {
        return status;
    }

    if (!gda_ft_mlx5_cmd_done(hca_qp->dev->attr.info.name, in, inlen, out,
                              gda_ft_mlx5_sys->obj_modify(qp->obj, in, inlen,
                                                          out,
                                                          sizeof(out)) == 0)) {
        return UCS_ERR_IO_ERROR;
    }

    hca_qp->state = state;
    return UCS_OK;
}

ucs_status_t gda_ft_mlx5_qp_query(gda_ft_hca_qp_t *hca_qp,
                                  gda_ft_hca_qp_query_attr_t *attr)
{
    gda_ft_mlx5_qp_t *qp = ucs_derived_of(hca_qp, gda_ft_mlx5_qp_t);
    uint32_t in[GDA_FT_MLX5_ST_SZ_DW(query_qp_in)]   = {0};
    uint32_t out[GDA_FT_MLX5_ST_SZ_DW(query_qp_out)] = {0};
    void *qpc = GDA_FT_MLX5_ADDR_OF(query_qp_out, out, qpc);
    unsigned prm_state;

    GDA_FT_MLX5_SET(query_qp_in, in, opcode, GDA_FT_MLX5_CMD_OP_QUERY_QP);
    GDA_FT_MLX5_SET(query_qp_in, in, qpn, hca_qp->qpn);
    if (!gda_ft_mlx5_cmd_done(hca_qp->dev->attr.info.name, in, sizeof(in),
                              out,
                              gda_ft_mlx5_sys->obj_query(qp->obj, in,
                                                         sizeof(in), out,
                                                         sizeof(out)) == 0)) {
        return UCS_ERR_IO_ERROR;
    }

    prm_state = GDA_FT_MLX5_GET(qpc, qpc, state);
    if (!gda_ft_mlx5_qp_state_from_prm(prm_state, &attr->state)) {
        ucs_error("%s: QP 0x%x is in state 0x%x, which gda_ft does not use",
                  hca_qp->dev->attr.info.name, hca_qp->qpn, prm_state);
        return UCS_ERR_IO_ERROR;
    }

    attr->sq_psn   = GDA_FT_MLX5_GET(qpc, qpc, next_send_psn);
    attr->rq_psn   = GDA_FT_MLX5_GET(qpc, qpc, next_rcv_psn);
    attr->path_mtu = gda_ft_mlx5_mtu_bytes(GDA_FT_MLX5_GET(qpc, qpc, mtu));
    return UCS_OK;
}
