/*
 * The PRM layouts the mlx5 provider takes from UCX's ib_mlx5_ifc.h, checked
 * against a second source of the same layouts: the Linux kernel's
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

#ifdef HAVE_KERNEL_MLX5_IFC

#include <stdio.h>

/* what the kernel's header takes from the kernel's own headers */
typedef uint8_t u8;
#define BIT(_n)     (1UL << (_n))
#define BIT_ULL(_n) (1ULL << (_n))
#include <mlx5_ifc.h>

typedef struct {
    const char *name;
    size_t      off, bits;          /* UCX's header */
    size_t      k_off, k_bits;      /* the kernel's */
} test_mlx5_pair_t;

/* a field of UCX's struct _ut and the kernel's struct _kt */
#define PAIR(_ut, _uf, _kt, _kf) \
    {#_ut "." #_uf, __uct_bit_off(_ut, _uf), __uct_bit_sz(_ut, _uf), \
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
    SAME(ads, udp_sport),
    SAME(ads, eth_prio),
    SAME(ads, vhca_port_num),
    SAME(ads, rmac_47_32),
    SAME(ads, rmac_31_0),
    SAME(rst2init_qp_in, opcode),
    SAME(rst2init_qp_in, qpn),
    SAME(rst2init_qp_in, qpc),
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
    SAME(query_qp_out, qpc)
};

GDA_FT_TEST(mlx5_prm_kernel, fields_match_the_kernels_layout)
{
    int errors = 0;
    unsigned i;

    for (i = 0; i < sizeof(test_mlx5_pairs) / sizeof(test_mlx5_pairs[0]);
         ++i) {
        if ((test_mlx5_pairs[i].off != test_mlx5_pairs[i].k_off) ||
            (test_mlx5_pairs[i].bits != test_mlx5_pairs[i].k_bits)) {
            printf("%s: UCX %#zx+%zu, kernel %#zx+%zu\n",
                   test_mlx5_pairs[i].name, test_mlx5_pairs[i].off,
                   test_mlx5_pairs[i].bits, test_mlx5_pairs[i].k_off,
                   test_mlx5_pairs[i].k_bits);
            ++errors;
        }
    }
    GDA_FT_ASSERT_EQ(errors, 0);
}

/* UCX's header keeps 8 bits of the kernel's 32-bit EQ field: its low byte
 * (the provider refuses an EQ number above 0xff) */
GDA_FT_TEST(mlx5_prm_kernel, c_eqn_is_the_low_byte_of_the_kernels_field)
{
    GDA_FT_ASSERT_EQ(__uct_bit_sz(cqc, c_eqn), 8);
    GDA_FT_ASSERT_EQ(__devx_bit_sz(cqc, c_eqn_or_apu_element), 32);
    GDA_FT_ASSERT_EQ(__uct_bit_off(cqc, c_eqn),
                     __devx_bit_off(cqc, c_eqn_or_apu_element) + 24);
}

GDA_FT_TEST(mlx5_prm_kernel, command_sizes_and_codes_match)
{
    GDA_FT_ASSERT_EQ(UCT_IB_MLX5DV_ST_SZ_BYTES(create_cq_in),
                     DEVX_ST_SZ_BYTES(create_cq_in));
    GDA_FT_ASSERT_EQ(UCT_IB_MLX5DV_ST_SZ_BYTES(cqc), DEVX_ST_SZ_BYTES(cqc));
    GDA_FT_ASSERT_EQ(UCT_IB_MLX5DV_ST_SZ_BYTES(create_qp_in),
                     DEVX_ST_SZ_BYTES(create_qp_in));
    GDA_FT_ASSERT_EQ(UCT_IB_MLX5DV_ST_SZ_BYTES(qpc), DEVX_ST_SZ_BYTES(qpc));
    GDA_FT_ASSERT_EQ(UCT_IB_MLX5DV_ST_SZ_BYTES(ads), DEVX_ST_SZ_BYTES(ads));
    GDA_FT_ASSERT_EQ(UCT_IB_MLX5DV_ST_SZ_BYTES(rst2init_qp_in),
                     DEVX_ST_SZ_BYTES(rst2init_qp_in));
    GDA_FT_ASSERT_EQ(UCT_IB_MLX5DV_ST_SZ_BYTES(init2rtr_qp_in),
                     DEVX_ST_SZ_BYTES(init2rtr_qp_in));
    GDA_FT_ASSERT_EQ(UCT_IB_MLX5DV_ST_SZ_BYTES(rtr2rts_qp_in),
                     DEVX_ST_SZ_BYTES(rtr2rts_qp_in));
    GDA_FT_ASSERT_EQ(UCT_IB_MLX5DV_ST_SZ_BYTES(modify_qp_in),
                     DEVX_ST_SZ_BYTES(qp_2err_in));
    GDA_FT_ASSERT_EQ(UCT_IB_MLX5DV_ST_SZ_BYTES(modify_qp_in),
                     DEVX_ST_SZ_BYTES(qp_2rst_in));
    GDA_FT_ASSERT_EQ(UCT_IB_MLX5DV_ST_SZ_BYTES(query_qp_out),
                     DEVX_ST_SZ_BYTES(query_qp_out));

    GDA_FT_ASSERT_EQ(UCT_IB_MLX5_CMD_OP_CREATE_CQ, MLX5_CMD_OP_CREATE_CQ);
    GDA_FT_ASSERT_EQ(UCT_IB_MLX5_CMD_OP_CREATE_QP, MLX5_CMD_OP_CREATE_QP);
    GDA_FT_ASSERT_EQ(UCT_IB_MLX5_CMD_OP_RST2INIT_QP,
                     MLX5_CMD_OP_RST2INIT_QP);
    GDA_FT_ASSERT_EQ(UCT_IB_MLX5_CMD_OP_INIT2RTR_QP,
                     MLX5_CMD_OP_INIT2RTR_QP);
    GDA_FT_ASSERT_EQ(UCT_IB_MLX5_CMD_OP_RTR2RTS_QP, MLX5_CMD_OP_RTR2RTS_QP);
    GDA_FT_ASSERT_EQ(UCT_IB_MLX5_CMD_OP_2ERR_QP, MLX5_CMD_OP_2ERR_QP);
    GDA_FT_ASSERT_EQ(UCT_IB_MLX5_CMD_OP_2RST_QP, MLX5_CMD_OP_2RST_QP);
    GDA_FT_ASSERT_EQ(UCT_IB_MLX5_CMD_OP_QUERY_QP, MLX5_CMD_OP_QUERY_QP);
    GDA_FT_ASSERT_EQ(UCT_IB_MLX5_QPC_ST_RC, MLX5_QPC_ST_RC);
    GDA_FT_ASSERT_EQ(UCT_IB_MLX5_QPC_PM_STATE_MIGRATED,
                     MLX5_QPC_PM_STATE_MIGRATED);
    GDA_FT_ASSERT_EQ(UCT_IB_MLX5_QPC_MTU_1K_BYTES, MLX5_QPC_MTU_1K_BYTES);
    GDA_FT_ASSERT_EQ(UCT_IB_MLX5_QPC_ATOMIC_MODE_UP_TO_8B,
                     MLX5_QPC_ATOMIC_MODE_UP_TO_8B);
    GDA_FT_ASSERT_EQ(UCT_IB_MLX5_QPC_STATE_ERR, MLX5_QPC_STATE_ERR);
    GDA_FT_ASSERT_EQ(UCT_IB_MLX5_QPC_STATE_SQER, MLX5_QPC_STATE_SQER);
}

#else

GDA_FT_TEST(mlx5_prm_kernel, fields_match_the_kernels_layout)
{
    GDA_FT_SKIP("configured without the kernel's mlx5_ifc.h "
                "(contrib/setup.sh fetches it): the provider's PRM layouts "
                "were not checked against a second source");
}

#endif
