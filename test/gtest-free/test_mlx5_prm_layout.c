/*
 * The PRM layouts the mlx5 provider writes, as its own header
 * (gda_ft_mlx5_ifc.h) lays them out: the bit offset and width of every
 * field the provider sets or reads, the size of every command, and the
 * command and context codes, against the PRM's numbers. An edit that
 * moved a field fails here rather than on a NIC.
 */
#include "gda_ft_test.h"
#include "gda_ft_mlx5_int.h"

#include <stdio.h>

typedef struct {
    const char *name;
    size_t      off, bits;          /* in the header */
    size_t      prm_off, prm_bits;  /* the PRM's */
} test_mlx5_field_t;

#define FIELD(_typ, _fld, _off, _bits) \
    {#_typ "." #_fld, GDA_FT_MLX5_BIT_OFF(_typ, _fld), \
     GDA_FT_MLX5_BIT_SZ(_typ, _fld), \
     (_off), (_bits)}
#define SIZE(_typ, _bytes) \
    {#_typ, 0, GDA_FT_MLX5_ST_SZ_BYTES(_typ), 0, (_bytes)}

static const test_mlx5_field_t test_mlx5_sizes[] = {
    SIZE(create_cq_in, 272),
    SIZE(create_cq_out, 16),
    SIZE(cqc, 64),
    SIZE(create_qp_in, 272),
    SIZE(create_qp_out, 16),
    SIZE(qpc, 232),
    SIZE(ads, 44),
    SIZE(rst2init_qp_in, 272),
    SIZE(init2init_qp_in, 272),
    SIZE(init2rtr_qp_in, 272),
    SIZE(rtr2rts_qp_in, 272),
    SIZE(modify_qp_in, 16),
    SIZE(modify_qp_out, 16),
    SIZE(query_qp_in, 16),
    SIZE(query_qp_out, 272),
    SIZE(query_hca_cap_in, 16),
    SIZE(query_hca_cap_out, 4112),
};

static const test_mlx5_field_t test_mlx5_fields[] = {
    FIELD(create_cq_in, opcode, 0x0, 16),
    FIELD(create_cq_in, cqc, 0x80, 512),
    FIELD(create_cq_in, cq_umem_offset, 0x280, 64),
    FIELD(create_cq_in, cq_umem_id, 0x2c0, 32),
    FIELD(create_cq_in, cq_umem_valid, 0x2e0, 1),
    FIELD(create_cq_out, cqn, 0x48, 24),
    FIELD(cqc, dbr_umem_valid, 0x6, 1),
    FIELD(cqc, cqe_sz, 0x8, 3),
    FIELD(cqc, cc, 0xb, 1),
    FIELD(cqc, oi, 0xe, 1),
    FIELD(cqc, dbr_umem_id, 0x20, 32),
    FIELD(cqc, page_offset, 0x54, 6),
    FIELD(cqc, log_cq_size, 0x63, 5),
    FIELD(cqc, uar_page, 0x68, 24),
    FIELD(cqc, c_eqn, 0xb8, 8),
    FIELD(cqc, log_page_size, 0xc3, 5),
    FIELD(cqc, dbr_addr, 0x1c0, 64),
    FIELD(create_qp_in, opcode, 0x0, 16),
    FIELD(create_qp_in, qpc, 0xc0, 1856),
    FIELD(create_qp_in, wq_umem_offset, 0x800, 64),
    FIELD(create_qp_in, wq_umem_id, 0x840, 32),
    FIELD(create_qp_in, wq_umem_valid, 0x860, 1),
    FIELD(create_qp_out, qpn, 0x48, 24),
    FIELD(qpc, state, 0x0, 4),
    FIELD(qpc, st, 0x8, 8),
    FIELD(qpc, pm_state, 0x13, 2),
    FIELD(qpc, pd, 0x28, 24),
    FIELD(qpc, mtu, 0x40, 3),
    FIELD(qpc, log_msg_max, 0x43, 5),
    FIELD(qpc, log_rq_size, 0x49, 4),
    FIELD(qpc, log_rq_stride, 0x4d, 3),
    FIELD(qpc, no_sq, 0x50, 1),
    FIELD(qpc, log_sq_size, 0x51, 4),
    FIELD(qpc, ts_format, 0x58, 2),
    FIELD(qpc, uar_page, 0x68, 24),
    FIELD(qpc, log_page_size, 0xa3, 5),
    FIELD(qpc, remote_qpn, 0xa8, 24),
    FIELD(qpc, primary_address_path, 0xc0, 352),
    FIELD(qpc, log_sra_max, 0x388, 3),
    FIELD(qpc, retry_count, 0x38d, 3),
    FIELD(qpc, rnr_retry, 0x390, 3),
    FIELD(qpc, next_send_psn, 0x3c8, 24),
    FIELD(qpc, cqn_snd, 0x3e8, 24),
    FIELD(qpc, log_rra_max, 0x488, 3),
    FIELD(qpc, atomic_mode, 0x48c, 4),
    FIELD(qpc, rre, 0x490, 1),
    FIELD(qpc, rwe, 0x491, 1),
    FIELD(qpc, rae, 0x492, 1),
    FIELD(qpc, min_rnr_nak, 0x4a3, 5),
    FIELD(qpc, next_rcv_psn, 0x4a8, 24),
    FIELD(qpc, cqn_rcv, 0x4e8, 24),
    FIELD(qpc, dbr_addr, 0x500, 64),
    FIELD(qpc, rq_type, 0x565, 3),
    FIELD(qpc, dbr_umem_valid, 0x683, 1),
    FIELD(qpc, dbr_umem_id, 0x720, 32),
    FIELD(ads, grh, 0x28, 1),
    FIELD(ads, ack_timeout, 0x40, 5),
    FIELD(ads, src_addr_index, 0x48, 8),
    FIELD(ads, hop_limit, 0x58, 8),
    FIELD(ads, tclass, 0x64, 8),
    FIELD(ads, rgid_rip, 0x80, 128),
    FIELD(ads, dscp, 0x10a, 6),
    FIELD(ads, udp_sport, 0x110, 16),
    FIELD(ads, eth_prio, 0x121, 3),
    FIELD(ads, sl, 0x124, 4),
    FIELD(ads, vhca_port_num, 0x128, 8),
    FIELD(ads, rmac_47_32, 0x130, 16),
    FIELD(ads, rmac_31_0, 0x140, 32),
    FIELD(rst2init_qp_in, opcode, 0x0, 16),
    FIELD(rst2init_qp_in, qpn, 0x48, 24),
    FIELD(rst2init_qp_in, qpc, 0xc0, 1856),
    FIELD(init2init_qp_in, opcode, 0x0, 16),
    FIELD(init2init_qp_in, qpn, 0x48, 24),
    FIELD(init2init_qp_in, qpc, 0xc0, 1856),
    FIELD(qpc, primary_path_grh, 0xc0 + 0x28, 1),
    FIELD(qpc, primary_path_dscp, 0xc0 + 0x10a, 6),
    FIELD(qpc, primary_path_rmac_31_0, 0xc0 + 0x140, 32),
    FIELD(init2rtr_qp_in, opcode, 0x0, 16),
    FIELD(init2rtr_qp_in, qpn, 0x48, 24),
    FIELD(init2rtr_qp_in, qpc, 0xc0, 1856),
    FIELD(rtr2rts_qp_in, opcode, 0x0, 16),
    FIELD(rtr2rts_qp_in, qpn, 0x48, 24),
    FIELD(rtr2rts_qp_in, qpc, 0xc0, 1856),
    FIELD(modify_qp_in, opcode, 0x0, 16),
    FIELD(modify_qp_in, qpn, 0x48, 24),
    FIELD(modify_qp_out, status, 0x0, 8),
    FIELD(modify_qp_out, syndrome, 0x20, 32),
    FIELD(query_qp_in, opcode, 0x0, 16),
    FIELD(query_qp_in, qpn, 0x48, 24),
    FIELD(query_qp_out, qpc, 0xc0, 1856),
    FIELD(query_hca_cap_in, opcode, 0x0, 16),
    FIELD(query_hca_cap_in, op_mod, 0x30, 16),
    FIELD(query_hca_cap_out, capability, 0x80, 32768),
    FIELD(cmd_hca_cap, atomic, 0x21e, 1),
    FIELD(cmd_hca_cap, max_wqe_sz_sq, 0x290, 16),
    FIELD(atomic_caps, atomic_req_8B_endianness_mode, 0x40, 2),
};

static int test_mlx5_check(const test_mlx5_field_t *fields, unsigned count)
{
    int errors = 0;
    unsigned i;

    for (i = 0; i < count; ++i) {
        if ((fields[i].off != fields[i].prm_off) ||
            (fields[i].bits != fields[i].prm_bits)) {
            printf("%s: header %#zx+%zu, PRM %#zx+%zu\n", fields[i].name,
                   fields[i].off, fields[i].bits, fields[i].prm_off,
                   fields[i].prm_bits);
            ++errors;
        }
    }
    return errors;
}

GDA_FT_TEST(mlx5_prm_layout, command_sizes_match_the_prm)
{
    GDA_FT_ASSERT_EQ(test_mlx5_check(test_mlx5_sizes,
                                     sizeof(test_mlx5_sizes) /
                                     sizeof(test_mlx5_sizes[0])), 0);
}

GDA_FT_TEST(mlx5_prm_layout, fields_written_match_the_prm)
{
    GDA_FT_ASSERT_EQ(test_mlx5_check(test_mlx5_fields,
                                     sizeof(test_mlx5_fields) /
                                     sizeof(test_mlx5_fields[0])), 0);
}

GDA_FT_TEST(mlx5_prm_layout, command_and_context_codes_match_the_prm)
{
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_CMD_OP_CREATE_CQ,    0x400);
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_CMD_OP_CREATE_QP,    0x500);
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_CMD_OP_RST2INIT_QP,  0x502);
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_CMD_OP_INIT2RTR_QP,  0x503);
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_CMD_OP_RTS2RTS_QP,   0x505);
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_CMD_OP_INIT2INIT_QP, 0x50e);
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_CMD_OP_QUERY_HCA_CAP, 0x100);
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_CMD_OP_RTR2RTS_QP,   0x504);
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_CMD_OP_2ERR_QP,      0x507);
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_CMD_OP_2RST_QP,      0x50a);
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_CMD_OP_QUERY_QP,     0x50b);
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_QPC_ST_RC,           0x0);
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_QPC_PM_STATE_MIGRATED, 0x3);
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_QPC_MTU_256_BYTES,   0x1);
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_QPC_MTU_4K_BYTES,    0x5);
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_QPC_ATOMIC_MODE_UP_TO_8B, 0x3);
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_QPC_TS_FORMAT_DEFAULT, 0x1);
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_QPC_STATE_RST,       0x0);
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_QPC_STATE_INIT,      0x1);
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_QPC_STATE_RTR,       0x2);
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_QPC_STATE_RTS,       0x3);
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_QPC_STATE_SQER,      0x4);
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_QPC_STATE_SQD,       0x5);
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_QPC_STATE_ERR,       0x6);
}

/* The accessors the provider uses write where the PRM says */
GDA_FT_TEST(mlx5_prm_layout, set_and_get_round_trip_at_field_edges)
{
    uint32_t in[GDA_FT_MLX5_ST_SZ_DW(create_qp_in)] = {0};
    void *qpc = GDA_FT_MLX5_ADDR_OF(create_qp_in, in, qpc);

    /* neighbours of 24-bit and 3-bit fields keep their bits */
    GDA_FT_MLX5_SET(qpc, qpc, next_send_psn, 0xffffff);
    GDA_FT_MLX5_SET(qpc, qpc, retry_count, 7);
    GDA_FT_MLX5_SET(qpc, qpc, rnr_retry, 0);
    GDA_FT_MLX5_SET(qpc, qpc, log_sra_max, 5);
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_GET(qpc, qpc, next_send_psn), 0xffffff);
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_GET(qpc, qpc, retry_count), 7);
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_GET(qpc, qpc, rnr_retry), 0);
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_GET(qpc, qpc, log_sra_max), 5);
    /* big-endian dwords, bits counted from the most significant one:
     * log_sra_max is bits 8..10 and retry_count bits 13..15 of the dword
     * at bit 0x380 of the QP context */
    GDA_FT_ASSERT_EQ(be32toh(in[(0xc0 + 0x380) / 32]),
                     (5u << (32 - 8 - 3)) | (7u << (32 - 13 - 3)));
}
