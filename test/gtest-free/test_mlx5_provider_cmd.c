/*
 * The mlx5 provider's commands over the recording backend (suite
 * mlx5_provider, as test_mlx5_provider.c): every PRM field CREATE_CQ,
 * CREATE_QP and each QP transition write is read back and compared with
 * what the provider was asked for; a flap makes it read the GID table
 * again; the command log records inputs and answers.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "mlx5_harness.h"
#include "gda_ft_test.h"

#include <ucs/arch/bitops.h>
#include <ucs/sys/math.h>

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

GDA_FT_TEST(mlx5_provider, create_cq_writes_every_field)
{
    const mlx5_rec_entry_t *cmd, *buf_umem, *dbr_umem;
    gda_ft_mlx5_cq_t *mcq;
    gda_ft_hca_cq_t *cq;
    unsigned collapsed;
    test_mlx5_t t;

    test_mlx5_setup(&t);
    test_mlx5_open(&t);
    for (collapsed = 0; collapsed <= 1; ++collapsed) {
        cq  = test_mlx5_cq(&t, collapsed ? 1 : CQ_CNT,
                           collapsed ? GDA_FT_HCA_CQ_COLLAPSED : 0);
        mcq = ucs_derived_of(cq, gda_ft_mlx5_cq_t);
        cmd = mlx5_rec_find_cmd(GDA_FT_MLX5_CMD_OP_CREATE_CQ, collapsed);
        buf_umem = mlx5_rec_find(MLX5_REC_UMEM_REG, 2 * collapsed);
        dbr_umem = mlx5_rec_find(MLX5_REC_UMEM_REG, 2 * collapsed + 1);
        GDA_FT_ASSERT(cmd != NULL);
        GDA_FT_ASSERT_EQ(cq->cqn, 0x400 + collapsed);
        GDA_FT_ASSERT_EQ(buf_umem->arg[0], (uintptr_t)t.cq_buf);
        GDA_FT_ASSERT_EQ(buf_umem->arg[1],
                         ucs_align_up((collapsed ? 1 : CQ_CNT) * 64,
                                      sysconf(_SC_PAGESIZE)));
        GDA_FT_ASSERT_EQ(buf_umem->arg[3], (uint64_t)-1);   /* no dma-buf */
        GDA_FT_ASSERT_EQ(GDA_FT_MLX5_GET(create_cq_in, cmd->in,
                                           cq_umem_valid), 1);
        GDA_FT_ASSERT_EQ(GDA_FT_MLX5_GET(create_cq_in, cmd->in, cq_umem_id),
                         0x100 + 2 * collapsed);
        GDA_FT_ASSERT_EQ(GDA_FT_MLX5_GET64(create_cq_in, cmd->in,
                                             cq_umem_offset), 0);
        GDA_FT_ASSERT_EQ(CQC_GET(cmd, cqe_sz), 0);
        GDA_FT_ASSERT_EQ(CQC_GET(cmd, cc), collapsed);
        GDA_FT_ASSERT_EQ(CQC_GET(cmd, oi), 1);
        GDA_FT_ASSERT_EQ(CQC_GET(cmd, log_cq_size), collapsed ? 0 : 8);
        GDA_FT_ASSERT_EQ(CQC_GET(cmd, uar_page), 0xabc);
        GDA_FT_ASSERT_EQ(CQC_GET(cmd, c_eqn), 0x17);
        GDA_FT_ASSERT_EQ(CQC_GET(cmd, log_page_size),
                         ucs_ilog2(sysconf(_SC_PAGESIZE)) - 12);
        GDA_FT_ASSERT_EQ(CQC_GET(cmd, page_offset), 0);
        GDA_FT_ASSERT_EQ(CQC_GET(cmd, dbr_umem_valid), 1);
        GDA_FT_ASSERT_EQ(CQC_GET(cmd, dbr_umem_id), 0x101 + 2 * collapsed);
        /* the DBR umem covers its page; dbr_addr is its offset there */
        GDA_FT_ASSERT_EQ(dbr_umem->arg[0] + GDA_FT_MLX5_GET64(cqc,
                         GDA_FT_MLX5_ADDR_OF(create_cq_in, cmd->in, cqc),
                         dbr_addr), (uintptr_t)mcq->dbrec);
        gda_ft_hca_cq_destroy(cq);
    }
    GDA_FT_ASSERT_EQ(mlx5_rec_count(MLX5_REC_OBJ_DESTROY), 2);
    test_mlx5_close(&t);
}

GDA_FT_TEST(mlx5_provider, create_qp_writes_every_field)
{
    const mlx5_rec_entry_t *cmd, *wq_umem, *dbr_umem;
    gda_ft_hca_qp_init_attr_t init;
    gda_ft_hca_cq_t *scq, *rcq;
    gda_ft_hca_qp_t *qp;
    test_mlx5_t t;

    test_mlx5_setup(&t);
    test_mlx5_open(&t);
    scq = test_mlx5_cq(&t, 1, GDA_FT_HCA_CQ_COLLAPSED);
    rcq = test_mlx5_cq(&t, CQ_CNT, 0);
    test_mlx5_qp_init(&t, scq, rcq, &init);
    GDA_FT_ASSERT_OK(gda_ft_hca_qp_create(t.pd, &init, &qp));

    cmd      = mlx5_rec_find_cmd(GDA_FT_MLX5_CMD_OP_CREATE_QP, 0);
    wq_umem  = mlx5_rec_find(MLX5_REC_UMEM_REG, 4);
    dbr_umem = mlx5_rec_find(MLX5_REC_UMEM_REG, 5);
    GDA_FT_ASSERT(cmd != NULL);
    GDA_FT_ASSERT_EQ(qp->qpn, 0x2a0);
    GDA_FT_ASSERT_EQ(qp->state, GDA_FT_HCA_QP_RESET);
    GDA_FT_ASSERT((void*)qp->uar ==
                  ucs_derived_of(t.dev, gda_ft_mlx5_dev_t)->uar->reg_addr);
    GDA_FT_ASSERT_EQ(qp->wake_fd, -1);
    GDA_FT_ASSERT_EQ(wq_umem->arg[0], (uintptr_t)t.wq_buf);
    GDA_FT_ASSERT_EQ(wq_umem->arg[1], ucs_align_up((RQ_CNT + SQ_CNT) * 64,
                                                   sysconf(_SC_PAGESIZE)));
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_GET(create_qp_in, cmd->in, wq_umem_valid),
                     1);
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_GET(create_qp_in, cmd->in, wq_umem_id),
                     0x104);
    GDA_FT_ASSERT_EQ(QPC_GET(cmd, create_qp_in, st), GDA_FT_MLX5_QPC_ST_RC);
    GDA_FT_ASSERT_EQ(QPC_GET(cmd, create_qp_in, pm_state),
                     GDA_FT_MLX5_QPC_PM_STATE_MIGRATED);
    GDA_FT_ASSERT_EQ(QPC_GET(cmd, create_qp_in, pd), 0x1234);
    GDA_FT_ASSERT_EQ(QPC_GET(cmd, create_qp_in, uar_page), 0xabc);
    GDA_FT_ASSERT_EQ(QPC_GET(cmd, create_qp_in, ts_format),
                     GDA_FT_MLX5_QPC_TS_FORMAT_DEFAULT);
    GDA_FT_ASSERT_EQ(QPC_GET(cmd, create_qp_in, log_page_size),
                     ucs_ilog2(sysconf(_SC_PAGESIZE)) - 12);
    GDA_FT_ASSERT_EQ(QPC_GET(cmd, create_qp_in, log_sq_size), 6);
    GDA_FT_ASSERT_EQ(QPC_GET(cmd, create_qp_in, log_rq_size), 4);
    GDA_FT_ASSERT_EQ(QPC_GET(cmd, create_qp_in, log_rq_stride), 2);
    GDA_FT_ASSERT_EQ(QPC_GET(cmd, create_qp_in, rq_type), 0);
    GDA_FT_ASSERT_EQ(QPC_GET(cmd, create_qp_in, no_sq), 0);
    GDA_FT_ASSERT_EQ(QPC_GET(cmd, create_qp_in, cqn_snd), scq->cqn);
    GDA_FT_ASSERT_EQ(QPC_GET(cmd, create_qp_in, cqn_rcv), rcq->cqn);
    GDA_FT_ASSERT_EQ(QPC_GET(cmd, create_qp_in, dbr_umem_valid), 1);
    GDA_FT_ASSERT_EQ(QPC_GET(cmd, create_qp_in, dbr_umem_id), 0x105);
    GDA_FT_ASSERT_EQ(dbr_umem->arg[0], (uintptr_t)t.dbrec);
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_GET64(qpc, GDA_FT_MLX5_ADDR_OF(
                     create_qp_in, cmd->in, qpc), dbr_addr), 32);
    gda_ft_hca_qp_destroy(qp);

    /* without a receive queue: a zero-length RQ, completions on scq */
    test_mlx5_qp_init(&t, scq, NULL, &init);
    GDA_FT_ASSERT_OK(gda_ft_hca_qp_create(t.pd, &init, &qp));
    cmd = mlx5_rec_find_cmd(GDA_FT_MLX5_CMD_OP_CREATE_QP, 1);
    GDA_FT_ASSERT_EQ(QPC_GET(cmd, create_qp_in, rq_type), 3);
    GDA_FT_ASSERT_EQ(QPC_GET(cmd, create_qp_in, log_rq_size), 0);
    GDA_FT_ASSERT_EQ(QPC_GET(cmd, create_qp_in, cqn_rcv), scq->cqn);
    GDA_FT_ASSERT_EQ(mlx5_rec_find(MLX5_REC_UMEM_REG, 6)->arg[0],
                     (uintptr_t)t.wq_buf);
    gda_ft_hca_qp_destroy(qp);
    gda_ft_hca_cq_destroy(rcq);
    gda_ft_hca_cq_destroy(scq);
    test_mlx5_close(&t);
}

/* An opened device with one RC QP on port 1 over a collapsed CQ, and the
 * attributes to connect it with */
static gda_ft_hca_qp_t *test_mlx5_open_qp(test_mlx5_t *t,
                                          gda_ft_hca_cq_t **cq_p,
                                          gda_ft_hca_qp_attr_t *attr)
{
    gda_ft_hca_qp_init_attr_t init;
    gda_ft_hca_qp_t *qp;

    test_mlx5_open(t);
    *cq_p = test_mlx5_cq(t, 1, GDA_FT_HCA_CQ_COLLAPSED);
    test_mlx5_qp_init(t, *cq_p, NULL, &init);
    GDA_FT_ASSERT_OK(gda_ft_hca_qp_create(t->pd, &init, &qp));
    test_mlx5_qp_attr(attr);
    return qp;
}

static void test_mlx5_close_qp(test_mlx5_t *t, gda_ft_hca_cq_t *cq,
                               gda_ft_hca_qp_t *qp)
{
    gda_ft_hca_qp_destroy(qp);
    gda_ft_hca_cq_destroy(cq);
    test_mlx5_close(t);
}

static void test_mlx5_check_rtr(const mlx5_rec_entry_t *cmd,
                                const gda_ft_hca_qp_attr_t *attr,
                                uint32_t qpn)
{
    const void *qpc = GDA_FT_MLX5_ADDR_OF(init2rtr_qp_in, cmd->in, qpc);

    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_GET(init2rtr_qp_in, cmd->in, qpn), qpn);
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_GET(qpc, qpc, mtu),
                     GDA_FT_MLX5_QPC_MTU_1K_BYTES);
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_GET(qpc, qpc, log_msg_max), 30);
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_GET(qpc, qpc, remote_qpn), 0xabcde);
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_GET(qpc, qpc, next_rcv_psn), 0x123456);
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_GET(qpc, qpc, min_rnr_nak), 12);
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_GET(qpc, qpc, log_rra_max), 4);
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_GET(qpc, qpc,
                     primary_path_vhca_port_num), 1);
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_GET(qpc, qpc,
                     primary_path_rmac_47_32), 0x0211);
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_GET(qpc, qpc,
                     primary_path_rmac_31_0), 0x22334455);
    /* RoCE: no GRH bit (InfiniBand's), and RoCE v2's DSCP from the
     * traffic class, as the kernel sets a verbs QP's path */
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_GET(qpc, qpc, primary_path_grh), 0);
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_GET(qpc, qpc, primary_path_dscp),
                     0x68 >> 2);
    GDA_FT_ASSERT_MEM_EQ(GDA_FT_MLX5_ADDR_OF(qpc, qpc,
                         primary_path_rgid_rip), attr->dest_gid, 16);
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_GET(qpc, qpc,
                     primary_path_src_addr_index), 3);
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_GET(qpc, qpc,
                     primary_path_hop_limit), 33);
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_GET(qpc, qpc,
                     primary_path_tclass), 0x68);
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_GET(qpc, qpc,
                     primary_path_eth_prio), 5);
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_GET(qpc, qpc,
                     primary_path_udp_sport),
                     gda_ft_mlx5_udp_sport(qpn, 0xabcde));
}

static void test_mlx5_check_rts(const mlx5_rec_entry_t *cmd, uint32_t qpn)
{
    const void *qpc = GDA_FT_MLX5_ADDR_OF(rtr2rts_qp_in, cmd->in, qpc);

    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_GET(rtr2rts_qp_in, cmd->in, qpn), qpn);
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_GET(qpc, qpc, next_send_psn), 0x654321);
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_GET(qpc, qpc,
                     primary_path_ack_timeout), 14);
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_GET(qpc, qpc, retry_count), 5);
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_GET(qpc, qpc, rnr_retry), 6);
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_GET(qpc, qpc, log_sra_max), 3);
}

static void test_mlx5_check_state(gda_ft_hca_qp_t *qp,
                                  gda_ft_hca_qp_state_t state)
{
    gda_ft_hca_qp_query_attr_t q;

    GDA_FT_ASSERT_OK(gda_ft_hca_qp_query(qp, &q));
    GDA_FT_ASSERT_EQ(q.state, state);
    GDA_FT_ASSERT_EQ(qp->state, state);
}

GDA_FT_TEST(mlx5_provider, modify_through_every_state_writes_every_field)
{
    const mlx5_rec_entry_t *cmd, *mac;
    gda_ft_hca_qp_init_attr_t init;
    gda_ft_hca_qp_query_attr_t q;
    gda_ft_hca_qp_attr_t attr;
    gda_ft_hca_cq_t *cq;
    gda_ft_hca_qp_t *qp;
    test_mlx5_t t;
    const void *qpc;

    setenv("UCX_GDA_FT_MLX5_SL", "5", 1);
    test_mlx5_setup(&t);
    test_mlx5_open(&t);
    cq = test_mlx5_cq(&t, 1, GDA_FT_HCA_CQ_COLLAPSED);
    test_mlx5_qp_init(&t, cq, NULL, &init);
    GDA_FT_ASSERT_OK(gda_ft_hca_qp_create(t.pd, &init, &qp));
    test_mlx5_qp_attr(&attr);
    GDA_FT_ASSERT_OK(gda_ft_hca_qp_connect(qp, &attr));

    cmd = mlx5_rec_find_cmd(GDA_FT_MLX5_CMD_OP_RST2INIT_QP, 0);
    qpc = GDA_FT_MLX5_ADDR_OF(rst2init_qp_in, cmd->in, qpc);
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_GET(rst2init_qp_in, cmd->in, qpn),
                     qp->qpn);
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_GET(qpc, qpc, pm_state),
                     GDA_FT_MLX5_QPC_PM_STATE_MIGRATED);
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_GET(qpc, qpc,
                     primary_path_vhca_port_num), 1);
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_GET(qpc, qpc, rwe), 1);
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_GET(qpc, qpc, rre), 1);
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_GET(qpc, qpc, rae), 1);
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_GET(qpc, qpc, atomic_mode),
                     GDA_FT_MLX5_QPC_ATOMIC_MODE_UP_TO_8B);

    test_mlx5_check_rtr(mlx5_rec_find_cmd(GDA_FT_MLX5_CMD_OP_INIT2RTR_QP, 0),
                        &attr, qp->qpn);
    mac = mlx5_rec_find(MLX5_REC_RESOLVE_MAC, 0);
    GDA_FT_ASSERT_EQ(mac->arg[0], 1);
    GDA_FT_ASSERT_EQ(mac->arg[1], 3);
    GDA_FT_ASSERT_MEM_EQ(mac->in, attr.dest_gid, 16);
    test_mlx5_check_rts(mlx5_rec_find_cmd(GDA_FT_MLX5_CMD_OP_RTR2RTS_QP, 0),
                        qp->qpn);

    GDA_FT_ASSERT_OK(gda_ft_hca_qp_query(qp, &q));
    cmd = mlx5_rec_find_cmd(GDA_FT_MLX5_CMD_OP_QUERY_QP, 0);
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_GET(query_qp_in, cmd->in, qpn), qp->qpn);
    GDA_FT_ASSERT_EQ(q.state, GDA_FT_HCA_QP_RTS);
    GDA_FT_ASSERT_EQ(q.sq_psn, 0x654321);
    GDA_FT_ASSERT_EQ(q.rq_psn, 0x123456);
    GDA_FT_ASSERT_EQ(q.path_mtu, 1024);

    GDA_FT_ASSERT_OK(gda_ft_hca_qp_modify(qp, GDA_FT_HCA_QP_ERR, NULL));
    cmd = mlx5_rec_find_cmd(GDA_FT_MLX5_CMD_OP_2ERR_QP, 0);
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_GET(modify_qp_in, cmd->in, qpn), qp->qpn);
    test_mlx5_check_state(qp, GDA_FT_HCA_QP_ERR);
    GDA_FT_ASSERT_OK(gda_ft_hca_qp_modify(qp, GDA_FT_HCA_QP_RESET, NULL));
    cmd = mlx5_rec_find_cmd(GDA_FT_MLX5_CMD_OP_2RST_QP, 0);
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_GET(modify_qp_in, cmd->in, qpn), qp->qpn);
    test_mlx5_check_state(qp, GDA_FT_HCA_QP_RESET);

    /* every command went whole: inputs as long as the PRM's commands */
    GDA_FT_ASSERT_EQ(mlx5_rec_find_cmd(GDA_FT_MLX5_CMD_OP_CREATE_QP, 0)->inlen,
                     GDA_FT_MLX5_ST_SZ_BYTES(create_qp_in));
    GDA_FT_ASSERT_EQ(mlx5_rec_find_cmd(GDA_FT_MLX5_CMD_OP_CREATE_CQ, 0)->inlen,
                     GDA_FT_MLX5_ST_SZ_BYTES(create_cq_in));
    GDA_FT_ASSERT_EQ(mlx5_rec_find_cmd(GDA_FT_MLX5_CMD_OP_RST2INIT_QP,
                                       0)->inlen,
                     GDA_FT_MLX5_ST_SZ_BYTES(rst2init_qp_in));
    GDA_FT_ASSERT_EQ(mlx5_rec_find_cmd(GDA_FT_MLX5_CMD_OP_INIT2RTR_QP,
                                       0)->inlen,
                     GDA_FT_MLX5_ST_SZ_BYTES(init2rtr_qp_in));
    GDA_FT_ASSERT_EQ(mlx5_rec_find_cmd(GDA_FT_MLX5_CMD_OP_RTR2RTS_QP,
                                       0)->inlen,
                     GDA_FT_MLX5_ST_SZ_BYTES(rtr2rts_qp_in));
    GDA_FT_ASSERT_EQ(mlx5_rec_find_cmd(GDA_FT_MLX5_CMD_OP_2ERR_QP, 0)->inlen,
                     GDA_FT_MLX5_ST_SZ_BYTES(modify_qp_in));
    GDA_FT_ASSERT_EQ(mlx5_rec_find_cmd(GDA_FT_MLX5_CMD_OP_2RST_QP, 0)->inlen,
                     GDA_FT_MLX5_ST_SZ_BYTES(modify_qp_in));
    GDA_FT_ASSERT_EQ(mlx5_rec_find_cmd(GDA_FT_MLX5_CMD_OP_QUERY_QP, 0)->inlen,
                     GDA_FT_MLX5_ST_SZ_BYTES(query_qp_in));

    /* and again from RESET: a failed-over path comes back this way */
    GDA_FT_ASSERT_OK(gda_ft_hca_qp_connect(qp, &attr));
    test_mlx5_check_state(qp, GDA_FT_HCA_QP_RTS);
    GDA_FT_ASSERT_EQ(test_mlx5_errors, 0);
    gda_ft_hca_qp_destroy(qp);
    gda_ft_hca_cq_destroy(cq);
    test_mlx5_close(&t);
}

/*
 * The transport moves an endpoint's QPs to INIT when it creates them and
 * connects them later (gda_ft_hca_qp_connect asks for INIT again).
 * Firmware takes RST2INIT only from RESET: from INIT the move is
 * INIT2INIT, with the same access rights and port.
 */
GDA_FT_TEST(mlx5_provider, init_again_is_init2init)
{
    const mlx5_rec_entry_t *cmd;
    gda_ft_hca_qp_attr_t attr;
    gda_ft_hca_cq_t *cq;
    gda_ft_hca_qp_t *qp;
    test_mlx5_t t;
    const void *qpc;

    test_mlx5_setup(&t);
    qp = test_mlx5_open_qp(&t, &cq, &attr);
    GDA_FT_ASSERT_OK(gda_ft_hca_qp_modify(qp, GDA_FT_HCA_QP_INIT, &attr));
    GDA_FT_ASSERT_OK(gda_ft_hca_qp_connect(qp, &attr));
    test_mlx5_check_state(qp, GDA_FT_HCA_QP_RTS);
    GDA_FT_ASSERT_EQ(mlx5_rec.refused, 0);

    GDA_FT_ASSERT_EQ(mlx5_rec_count_cmd(GDA_FT_MLX5_CMD_OP_RST2INIT_QP), 1);
    cmd = mlx5_rec_find_cmd(GDA_FT_MLX5_CMD_OP_INIT2INIT_QP, 0);
    GDA_FT_ASSERT(cmd != NULL);
    GDA_FT_ASSERT_EQ(cmd->inlen, GDA_FT_MLX5_ST_SZ_BYTES(init2init_qp_in));
    qpc = GDA_FT_MLX5_ADDR_OF(init2init_qp_in, cmd->in, qpc);
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_GET(init2init_qp_in, cmd->in, qpn),
                     qp->qpn);
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_GET(qpc, qpc, primary_path_vhca_port_num),
                     1);
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_GET(qpc, qpc, rwe), 1);
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_GET(qpc, qpc, rae), 1);

    /* what firmware refuses (INIT2RTR of a QP in RTS), the provider
     * reports with its status and syndrome */
    GDA_FT_ASSERT(qp->dev->provider->qp_modify(qp, GDA_FT_HCA_QP_RTR,
                                               &attr) != UCS_OK);
    GDA_FT_ASSERT(strstr(test_mlx5_last_error, "0x1a2b3c") != NULL);
    GDA_FT_ASSERT_EQ(mlx5_rec.refused, 1);
    GDA_FT_ASSERT_EQ(test_mlx5_errors, 1);
    test_mlx5_close_qp(&t, cq, qp);
}

/*
 * A link flap can change the port's GID table (the netdev's address goes
 * and comes back at another index). A QP connected again after it (a
 * re-arm, a failback) must send from the entry that holds the address
 * now, not from the index chosen at open: the table is read again at
 * every INIT2RTR.
 */
GDA_FT_TEST(mlx5_provider, connect_after_a_flap_reads_the_gid_table_again)
{
    static const uint8_t v4[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff,
                                   10, 1, 2, 3};
    mlx5_rec_dev_t *rdev = &mlx5_rec.devs[0];
    gda_ft_hca_qp_attr_t attr;
    gda_ft_hca_cq_t *cq;
    gda_ft_hca_qp_t *qp;
    test_mlx5_t t;
    const void *qpc;

    test_mlx5_setup(&t);
    qp = test_mlx5_open_qp(&t, &cq, &attr);
    GDA_FT_ASSERT_OK(gda_ft_hca_qp_connect(qp, &attr));
    qpc = GDA_FT_MLX5_ADDR_OF(init2rtr_qp_in,
                              mlx5_rec_find_cmd(GDA_FT_MLX5_CMD_OP_INIT2RTR_QP,
                                                0)->in, qpc);
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_GET(qpc, qpc, primary_path_src_addr_index),
                     3);

    /* the flap: the RoCE v2 IPv4 entry is now at index 5 */
    rdev->gid_missing[3] = 1;
    rdev->gid_missing[4] = 1;
    rdev->num_gids       = 6;
    rdev->gids[5]          = rdev->gids[3];
    rdev->gids[5].gid_index = 5;
    memcpy(rdev->gids[5].gid.raw, v4, sizeof(v4));
    GDA_FT_ASSERT_OK(gda_ft_hca_qp_modify(qp, GDA_FT_HCA_QP_RESET, NULL));
    GDA_FT_ASSERT_OK(gda_ft_hca_qp_connect(qp, &attr));
    qpc = GDA_FT_MLX5_ADDR_OF(init2rtr_qp_in,
                              mlx5_rec_find_cmd(GDA_FT_MLX5_CMD_OP_INIT2RTR_QP,
                                                1)->in, qpc);
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_GET(qpc, qpc, primary_path_src_addr_index),
                     5);
    GDA_FT_ASSERT_EQ(test_mlx5_errors, 0);
    test_mlx5_close_qp(&t, cq, qp);
}

/* UCX_GDA_FT_MLX5_CMD_LOG: every command as sent and what firmware said,
 * a line each, the refused one with its status and syndrome */
GDA_FT_TEST(mlx5_provider, command_log_records_inputs_and_answers)
{
    gda_ft_hca_qp_attr_t attr;
    gda_ft_hca_cq_t *cq;
    gda_ft_hca_qp_t *qp;
    char path[64], log[16384];
    test_mlx5_t t;
    size_t len;
    FILE *file;

    snprintf(path, sizeof(path), "/tmp/gda_ft_mlx5_cmds.%d", (int)getpid());
    unlink(path);
    setenv("UCX_GDA_FT_MLX5_CMD_LOG", path, 1);
    test_mlx5_setup(&t);
    qp = test_mlx5_open_qp(&t, &cq, &attr);
    GDA_FT_ASSERT_OK(gda_ft_hca_qp_connect(qp, &attr));
    GDA_FT_ASSERT(qp->dev->provider->qp_modify(qp, GDA_FT_HCA_QP_RTR,
                                               &attr) != UCS_OK);
    test_mlx5_close_qp(&t, cq, qp);
    unsetenv("UCX_GDA_FT_MLX5_CMD_LOG");

    file = fopen(path, "r");
    GDA_FT_ASSERT(file != NULL);
    len      = fread(log, 1, sizeof(log) - 1, file);
    log[len] = '\0';
    fclose(file);
    unlink(path);
    GDA_FT_ASSERT(strstr(log, "mlx5_0 QUERY_HCA_CAP opcode 0x100 op_mod "
                              "0x1 ok") != NULL);
    GDA_FT_ASSERT(strstr(log, "QUERY_HCA_CAP opcode 0x100 op_mod 0x7 ok")
                  != NULL);
    GDA_FT_ASSERT(strstr(log, "CREATE_CQ opcode 0x400") != NULL);
    GDA_FT_ASSERT(strstr(log, "CREATE_QP opcode 0x500") != NULL);
    GDA_FT_ASSERT(strstr(log, "RTR2RTS_QP opcode 0x504 op_mod 0x0 ok")
                  != NULL);
    /* the input as sent: INIT2RTR's first dword, opcode 0x503 */
    GDA_FT_ASSERT(strstr(log, "opcode 0x503 op_mod 0x0 ok status 0x0 "
                              "syndrome 0x0 in 05030000") != NULL);
    GDA_FT_ASSERT(strstr(log, "INIT2RTR_QP opcode 0x503 op_mod 0x0 FAILED "
                              "status 0x10 syndrome 0x1a2b3c") != NULL);
}
