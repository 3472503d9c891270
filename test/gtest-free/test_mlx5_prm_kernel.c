/*
 * The PRM layouts of the mlx5 provider's own header (gda_ft_mlx5_ifc.h),
 * checked against a second source of the same layouts: the Linux kernel's
 * include/linux/mlx5/mlx5_ifc.h (contrib/setup.sh takes it from Debian's
 * linux-headers-*-common), read through rdma-core's DEVX_* accessors. Every
 * field the provider writes or reads that the kernel's header names must
 * sit at the same bit with the same width; the umem fields, which the
 * kernel's header leaves reserved, are checked by test_mlx5_prm_layout.c.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "gda_ft_test.h"
#include "gda_ft_mlx5_int.h"
#include "mlx5_recorder.h"

#ifdef HAVE_KERNEL_MLX5_IFC

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* what the kernel's header takes from the kernel's own headers */
typedef uint8_t u8;
#define BIT(_n)     (1UL << (_n))
#define BIT_ULL(_n) (1ULL << (_n))
#include <mlx5_ifc.h>

typedef struct {
    const char *name;
    size_t      off, bits;          /* ours */
    size_t      k_off, k_bits;      /* the kernel's */
} test_mlx5_pair_t;

/* a field of our struct _ut and the kernel's struct _kt */
#define PAIR(_ut, _uf, _kt, _kf) \
    {#_ut "." #_uf, GDA_FT_MLX5_BIT_OFF(_ut, _uf), \
     GDA_FT_MLX5_BIT_SZ(_ut, _uf), \
     __devx_bit_off(_kt, _kf), __devx_bit_sz(_kt, _kf)}
#define SAME(_typ, _fld) PAIR(_typ, _fld, _typ, _fld)

static const test_mlx5_pair_t test_mlx5_pairs[] = {
    SAME(create_cq_in, opcode),
    PAIR(create_cq_in, cqc, create_cq_in, cq_context),
    SAME(create_cq_in, cq_umem_valid),
    SAME(create_cq_out, cqn),
    SAME(cqc, dbr_umem_valid),
    SAME(cqc, cqe_sz),
    SAME(cqc, cc),
    SAME(cqc, oi),
    SAME(cqc, page_offset),
    SAME(cqc, log_cq_size),
    SAME(cqc, uar_page),
    SAME(cqc, log_page_size),
    SAME(cqc, dbr_addr),
    SAME(create_qp_in, opcode),
    SAME(create_qp_in, qpc),
    SAME(create_qp_in, wq_umem_valid),
    SAME(create_qp_out, qpn),
    SAME(qpc, state),
    SAME(qpc, st),
    SAME(qpc, pm_state),
    SAME(qpc, pd),
    SAME(qpc, mtu),
    SAME(qpc, log_msg_max),
    SAME(qpc, log_rq_size),
    SAME(qpc, log_rq_stride),
    SAME(qpc, no_sq),
    SAME(qpc, log_sq_size),
    SAME(qpc, ts_format),
    SAME(qpc, uar_page),
    SAME(qpc, log_page_size),
    SAME(qpc, remote_qpn),
    SAME(qpc, primary_address_path),
    SAME(qpc, log_sra_max),
    SAME(qpc, retry_count),
    SAME(qpc, rnr_retry),
    SAME(qpc, next_send_psn),
    SAME(qpc, cqn_snd),
    SAME(qpc, log_rra_max),
    SAME(qpc, atomic_mode),
    SAME(qpc, rre),
    SAME(qpc, rwe),
    SAME(qpc, rae),
    SAME(qpc, min_rnr_nak),
    SAME(qpc, next_rcv_psn),
    SAME(qpc, cqn_rcv),
    SAME(qpc, dbr_addr),
    SAME(qpc, rq_type),
    SAME(qpc, dbr_umem_valid),
    SAME(ads, grh),
    SAME(ads, ack_timeout),
    SAME(ads, src_addr_index),
    SAME(ads, hop_limit),
    SAME(ads, tclass),
    SAME(ads, rgid_rip),
    SAME(ads, dscp),
    SAME(ads, udp_sport),
    SAME(ads, sl),
    SAME(ads, eth_prio),
    SAME(ads, vhca_port_num),
    SAME(ads, rmac_47_32),
    SAME(ads, rmac_31_0),
    SAME(rst2init_qp_in, opcode),
    SAME(rst2init_qp_in, qpn),
    SAME(rst2init_qp_in, qpc),
    SAME(init2init_qp_in, opcode),
    SAME(init2init_qp_in, qpn),
    SAME(init2init_qp_in, qpc),
    SAME(init2rtr_qp_in, opcode),
    SAME(init2rtr_qp_in, qpn),
    SAME(init2rtr_qp_in, qpc),
    SAME(rtr2rts_qp_in, opcode),
    SAME(rtr2rts_qp_in, qpn),
    SAME(rtr2rts_qp_in, qpc),
    /* 2ERR and 2RST: the provider writes both through modify_qp_in */
    PAIR(modify_qp_in, opcode, qp_2err_in, opcode),
    PAIR(modify_qp_in, qpn, qp_2err_in, qpn),
    PAIR(modify_qp_in, opcode, qp_2rst_in, opcode),
    PAIR(modify_qp_in, qpn, qp_2rst_in, qpn),
    PAIR(modify_qp_out, status, qp_2err_out, status),
    PAIR(modify_qp_out, syndrome, qp_2err_out, syndrome),
    SAME(query_qp_in, opcode),
    SAME(query_qp_in, qpn),
    SAME(query_qp_out, qpc),
    SAME(query_hca_cap_in, opcode),
    SAME(query_hca_cap_in, op_mod),
    SAME(query_hca_cap_out, capability),
    SAME(cmd_hca_cap, atomic),
    SAME(cmd_hca_cap, max_wqe_sz_sq),
    SAME(atomic_caps, atomic_req_8B_endianness_mode)
};

GDA_FT_TEST(mlx5_prm_kernel, fields_match_the_kernels_layout)
{
    int errors = 0;
    unsigned i;

    for (i = 0; i < sizeof(test_mlx5_pairs) / sizeof(test_mlx5_pairs[0]);
         ++i) {
        if ((test_mlx5_pairs[i].off != test_mlx5_pairs[i].k_off) ||
            (test_mlx5_pairs[i].bits != test_mlx5_pairs[i].k_bits)) {
            printf("%s: ours %#zx+%zu, kernel %#zx+%zu\n",
                   test_mlx5_pairs[i].name, test_mlx5_pairs[i].off,
                   test_mlx5_pairs[i].bits, test_mlx5_pairs[i].k_off,
                   test_mlx5_pairs[i].k_bits);
            ++errors;
        }
    }
    GDA_FT_ASSERT_EQ(errors, 0);
}

/* Our header keeps 8 bits of the kernel's 32-bit EQ field: its low byte
 * (the provider refuses an EQ number above 0xff) */
GDA_FT_TEST(mlx5_prm_kernel, c_eqn_is_the_low_byte_of_the_kernels_field)
{
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_BIT_SZ(cqc, c_eqn), 8);
    GDA_FT_ASSERT_EQ(__devx_bit_sz(cqc, c_eqn_or_apu_element), 32);
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_BIT_OFF(cqc, c_eqn),
                     __devx_bit_off(cqc, c_eqn_or_apu_element) + 24);
}

GDA_FT_TEST(mlx5_prm_kernel, command_sizes_and_codes_match)
{
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_ST_SZ_BYTES(create_cq_in),
                     DEVX_ST_SZ_BYTES(create_cq_in));
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_ST_SZ_BYTES(cqc), DEVX_ST_SZ_BYTES(cqc));
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_ST_SZ_BYTES(create_qp_in),
                     DEVX_ST_SZ_BYTES(create_qp_in));
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_ST_SZ_BYTES(qpc), DEVX_ST_SZ_BYTES(qpc));
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_ST_SZ_BYTES(ads), DEVX_ST_SZ_BYTES(ads));
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_ST_SZ_BYTES(rst2init_qp_in),
                     DEVX_ST_SZ_BYTES(rst2init_qp_in));
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_ST_SZ_BYTES(init2rtr_qp_in),
                     DEVX_ST_SZ_BYTES(init2rtr_qp_in));
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_ST_SZ_BYTES(rtr2rts_qp_in),
                     DEVX_ST_SZ_BYTES(rtr2rts_qp_in));
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_ST_SZ_BYTES(modify_qp_in),
                     DEVX_ST_SZ_BYTES(qp_2err_in));
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_ST_SZ_BYTES(modify_qp_in),
                     DEVX_ST_SZ_BYTES(qp_2rst_in));
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_ST_SZ_BYTES(query_qp_out),
                     DEVX_ST_SZ_BYTES(query_qp_out));

    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_CMD_OP_CREATE_CQ, MLX5_CMD_OP_CREATE_CQ);
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_CMD_OP_CREATE_QP, MLX5_CMD_OP_CREATE_QP);
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_CMD_OP_RST2INIT_QP,
                     MLX5_CMD_OP_RST2INIT_QP);
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_CMD_OP_INIT2RTR_QP,
                     MLX5_CMD_OP_INIT2RTR_QP);
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_CMD_OP_RTR2RTS_QP, MLX5_CMD_OP_RTR2RTS_QP);
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_CMD_OP_2ERR_QP, MLX5_CMD_OP_2ERR_QP);
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_CMD_OP_2RST_QP, MLX5_CMD_OP_2RST_QP);
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_CMD_OP_QUERY_QP, MLX5_CMD_OP_QUERY_QP);
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_QPC_ST_RC, MLX5_QPC_ST_RC);
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_QPC_PM_STATE_MIGRATED,
                     MLX5_QPC_PM_STATE_MIGRATED);
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_QPC_MTU_1K_BYTES, MLX5_QPC_MTU_1K_BYTES);
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_QPC_ATOMIC_MODE_UP_TO_8B,
                     MLX5_QPC_ATOMIC_MODE_UP_TO_8B);
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_QPC_STATE_ERR, MLX5_QPC_STATE_ERR);
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_QPC_STATE_SQER, MLX5_QPC_STATE_SQER);
}

/* The provider's commands, as the recording backend caught them, read
 * back with rdma-core's DEVX_GET through the kernel's layouts: a second
 * reader of what test_mlx5_provider.c reads with our accessors */
GDA_FT_TEST(mlx5_prm_kernel, provider_commands_read_with_devx_get)
{
    static const uint8_t dgid[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff,
                                     0xff, 10, 9, 8, 7};
    gda_ft_hca_cq_attr_t cq_attr = {NULL, 1, GDA_FT_HCA_CQ_COLLAPSED,
                                    GDA_FT_HCA_MEM_HOST};
    gda_ft_hca_dev_info_t info   = {.name = "mlx5_0"};
    gda_ft_hca_qp_init_attr_t init;
    const mlx5_rec_entry_t *cmd;
    gda_ft_hca_qp_attr_t attr;
    const void *qpc, *cqc;
    gda_ft_hca_dev_t *dev;
    gda_ft_hca_pd_t *pd;
    gda_ft_hca_cq_t *cq;
    gda_ft_hca_qp_t *qp;
    void *pages;

    GDA_FT_ASSERT(posix_memalign(&pages, 4096, 3 * 4096) == 0);
    memset(pages, 0, 3 * 4096);
    mlx5_rec_init();
    GDA_FT_ASSERT_OK(gda_ft_mlx5_provider.dev_open(&info, &dev));
    GDA_FT_ASSERT_OK(gda_ft_hca_pd_alloc(dev, &pd));
    cq_attr.buf = pages;
    GDA_FT_ASSERT_OK(gda_ft_hca_cq_create(dev, &cq_attr, &cq));

    memset(&init, 0, sizeof(init));
    init.send_cq      = cq;
    init.sq_buf       = (char*)pages + 4096;
    init.sq_wqebb_cnt = 64;
    init.dbrec        = (uint32_t*)((char*)pages + 2 * 4096);
    init.ring_mem     = GDA_FT_HCA_MEM_HOST;
    init.port_num     = 1;
    GDA_FT_ASSERT_OK(gda_ft_hca_qp_create(pd, &init, &qp));

    memset(&attr, 0, sizeof(attr));
    attr.access        = GDA_FT_HCA_ACCESS_REMOTE_WRITE;
    attr.dest_qpn      = 0x3c3c3;
    memcpy(attr.dest_gid, dgid, sizeof(dgid));
    attr.rq_psn        = 0xfedcba;
    attr.path_mtu      = 4096;
    attr.traffic_class = 0xb8;
    attr.hop_limit     = 64;
    attr.min_rnr_timer = 31;
    attr.sq_psn        = 0x0a0b0c;
    attr.timeout       = 20;
    attr.retry_cnt     = 7;
    attr.rnr_retry     = 7;
    attr.max_rd_atomic = 1;
    GDA_FT_ASSERT_OK(gda_ft_hca_qp_connect(qp, &attr));

    cmd = mlx5_rec_find_cmd(MLX5_CMD_OP_CREATE_CQ, 0);
    cqc = DEVX_ADDR_OF(create_cq_in, cmd->in, cq_context);
    GDA_FT_ASSERT_EQ(DEVX_GET(create_cq_in, cmd->in, opcode), 0x400);
    GDA_FT_ASSERT_EQ(DEVX_GET(create_cq_in, cmd->in, cq_umem_valid), 1);
    GDA_FT_ASSERT_EQ(DEVX_GET(cqc, cqc, cc), 1);
    GDA_FT_ASSERT_EQ(DEVX_GET(cqc, cqc, oi), 1);
    GDA_FT_ASSERT_EQ(DEVX_GET(cqc, cqc, cqe_sz), MLX5_CQC_CQE_SZ_64_BYTES);
    GDA_FT_ASSERT_EQ(DEVX_GET(cqc, cqc, log_cq_size), 0);
    GDA_FT_ASSERT_EQ(DEVX_GET(cqc, cqc, uar_page), mlx5_rec.uar_page_id);
    /* the whole 32-bit field: the high bits our layout lacks stay 0 */
    GDA_FT_ASSERT_EQ(DEVX_GET(cqc, cqc, c_eqn_or_apu_element), mlx5_rec.eqn);
    GDA_FT_ASSERT_EQ(DEVX_GET(cqc, cqc, dbr_umem_valid), 1);

    cmd = mlx5_rec_find_cmd(MLX5_CMD_OP_CREATE_QP, 0);
    qpc = DEVX_ADDR_OF(create_qp_in, cmd->in, qpc);
    GDA_FT_ASSERT_EQ(DEVX_GET(qpc, qpc, st), MLX5_QPC_ST_RC);
    GDA_FT_ASSERT_EQ(DEVX_GET(qpc, qpc, pm_state),
                     MLX5_QPC_PM_STATE_MIGRATED);
    GDA_FT_ASSERT_EQ(DEVX_GET(qpc, qpc, pd), mlx5_rec.pdn);
    GDA_FT_ASSERT_EQ(DEVX_GET(qpc, qpc, log_sq_size), 6);
    GDA_FT_ASSERT_EQ(DEVX_GET(qpc, qpc, rq_type), 3);
    GDA_FT_ASSERT_EQ(DEVX_GET(qpc, qpc, cqn_snd), cq->cqn);
    GDA_FT_ASSERT_EQ(DEVX_GET(qpc, qpc, cqn_rcv), cq->cqn);
    GDA_FT_ASSERT_EQ(DEVX_GET(qpc, qpc, dbr_umem_valid), 1);
    GDA_FT_ASSERT_EQ(DEVX_GET64(qpc, qpc, dbr_addr), 0);
    GDA_FT_ASSERT_EQ(DEVX_GET(create_qp_in, cmd->in, wq_umem_valid), 1);

    cmd = mlx5_rec_find_cmd(MLX5_CMD_OP_RST2INIT_QP, 0);
    qpc = DEVX_ADDR_OF(rst2init_qp_in, cmd->in, qpc);
    GDA_FT_ASSERT_EQ(DEVX_GET(rst2init_qp_in, cmd->in, qpn), qp->qpn);
    GDA_FT_ASSERT_EQ(DEVX_GET(qpc, qpc, rwe), 1);
    GDA_FT_ASSERT_EQ(DEVX_GET(qpc, qpc, rre), 0);
    GDA_FT_ASSERT_EQ(DEVX_GET(qpc, qpc, rae), 0);
    GDA_FT_ASSERT_EQ(DEVX_GET(qpc, qpc, primary_address_path.vhca_port_num),
                     1);

    cmd = mlx5_rec_find_cmd(MLX5_CMD_OP_INIT2RTR_QP, 0);
    qpc = DEVX_ADDR_OF(init2rtr_qp_in, cmd->in, qpc);
    GDA_FT_ASSERT_EQ(DEVX_GET(init2rtr_qp_in, cmd->in, qpn), qp->qpn);
    GDA_FT_ASSERT_EQ(DEVX_GET(qpc, qpc, mtu), MLX5_QPC_MTU_4K_BYTES);
    GDA_FT_ASSERT_EQ(DEVX_GET(qpc, qpc, remote_qpn), 0x3c3c3);
    GDA_FT_ASSERT_EQ(DEVX_GET(qpc, qpc, next_rcv_psn), 0xfedcba);
    GDA_FT_ASSERT_EQ(DEVX_GET(qpc, qpc, min_rnr_nak), 31);
    GDA_FT_ASSERT_EQ(DEVX_GET(qpc, qpc, primary_address_path.grh), 0);
    GDA_FT_ASSERT_EQ(DEVX_GET(qpc, qpc, primary_address_path.dscp),
                     0xb8 >> 2);
    GDA_FT_ASSERT_EQ(DEVX_GET(qpc, qpc, primary_address_path.tclass), 0xb8);
    GDA_FT_ASSERT_EQ(DEVX_GET(qpc, qpc, primary_address_path.hop_limit), 64);
    GDA_FT_ASSERT_EQ(DEVX_GET(qpc, qpc, primary_address_path.src_addr_index),
                     3);
    GDA_FT_ASSERT_EQ(DEVX_GET(qpc, qpc, primary_address_path.rmac_47_32),
                     0x0211);
    GDA_FT_ASSERT_EQ(DEVX_GET(qpc, qpc, primary_address_path.rmac_31_0),
                     0x22334455);
    GDA_FT_ASSERT_MEM_EQ(DEVX_ADDR_OF(qpc, qpc,
                                      primary_address_path.rgid_rip),
                         dgid, 16);

    cmd = mlx5_rec_find_cmd(MLX5_CMD_OP_RTR2RTS_QP, 0);
    qpc = DEVX_ADDR_OF(rtr2rts_qp_in, cmd->in, qpc);
    GDA_FT_ASSERT_EQ(DEVX_GET(rtr2rts_qp_in, cmd->in, qpn), qp->qpn);
    GDA_FT_ASSERT_EQ(DEVX_GET(qpc, qpc, next_send_psn), 0x0a0b0c);
    GDA_FT_ASSERT_EQ(DEVX_GET(qpc, qpc, primary_address_path.ack_timeout),
                     20);
    GDA_FT_ASSERT_EQ(DEVX_GET(qpc, qpc, retry_count), 7);
    GDA_FT_ASSERT_EQ(DEVX_GET(qpc, qpc, rnr_retry), 7);
    GDA_FT_ASSERT_EQ(DEVX_GET(qpc, qpc, log_sra_max), 0);

    GDA_FT_ASSERT_OK(gda_ft_hca_qp_modify(qp, GDA_FT_HCA_QP_ERR, NULL));
    cmd = mlx5_rec_find_cmd(MLX5_CMD_OP_2ERR_QP, 0);
    GDA_FT_ASSERT_EQ(DEVX_GET(qp_2err_in, cmd->in, qpn), qp->qpn);

    gda_ft_hca_qp_destroy(qp);
    gda_ft_hca_cq_destroy(cq);
    gda_ft_hca_pd_free(pd);
    gda_ft_hca_close(dev);
    free(pages);
    GDA_FT_ASSERT_EQ(mlx5_rec_leaks(), 0);
}

#else

GDA_FT_TEST(mlx5_prm_kernel, fields_match_the_kernels_layout)
{
    GDA_FT_SKIP("configured without the kernel's mlx5_ifc.h "
                "(contrib/setup.sh fetches it): the provider's PRM layouts "
                "were not checked against a second source");
}

#endif
