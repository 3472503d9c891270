/*
 * device/gda_ft_mlx5_prm.h keeps its own copy of the mlx5 WQE and CQE
 * layouts (rdma-core's header can't go into CUDA device code). Check every
 * field, size and constant against rdma-core's <infiniband/mlx5dv.h>, and the
 * masked-atomic segments, which rdma-core does not define, against the
 * layout UCX posts.
 */
#include "gda_ft_test.h"
#include "gda_ft_mlx5_prm.h"

#include <endian.h>
#include <infiniband/mlx5dv.h>
#include <stddef.h>

/*
 * Field-by-field comparison of one of our structs with its reference. The
 * fields must be listed in order: each must start where the previous one
 * ended and the last must end at sizeof, so a field missing from the list,
 * a hole or a tail is reported too.
 */
typedef struct gda_ft_layout {
    const char *name;
    size_t      size;       /* sizeof our struct */
    size_t      ref_size;   /* sizeof the reference struct */
    size_t      next;       /* where the next listed field must start */
    int         errors;
} gda_ft_layout_t;

static void gda_ft_layout_field(gda_ft_layout_t *layout, const char *field,
                                size_t offset, size_t size, size_t ref_offset,
                                size_t ref_size)
{
    if ((offset != ref_offset) || (size != ref_size)) {
        printf("%s.%s: offset %zu size %zu, reference offset %zu size %zu\n",
               layout->name, field, offset, size, ref_offset, ref_size);
        ++layout->errors;
    }

    if (offset != layout->next) {
        printf("%s.%s: starts at %zu, the field before ends at %zu\n",
               layout->name, field, offset, layout->next);
        ++layout->errors;
    }
    layout->next = offset + size;
}

static void gda_ft_layout_end(gda_ft_layout_t *layout)
{
    if (layout->size != layout->ref_size) {
        printf("%s: size %zu, reference size %zu\n", layout->name,
               layout->size, layout->ref_size);
        ++layout->errors;
    }

    if (layout->next != layout->size) {
        printf("%s: listed fields end at %zu of %zu bytes\n", layout->name,
               layout->next, layout->size);
        ++layout->errors;
    }

    GDA_FT_ASSERT_EQ(layout->errors, 0);
}

#define GDA_FT_LAYOUT_BEGIN_SIZE(_type, _ref_size) \
    typedef _type gda_ft_layout_type_t; \
    gda_ft_layout_t gda_ft_layout = {#_type, sizeof(_type), (_ref_size), 0, 0}

#define GDA_FT_LAYOUT_BEGIN(_type, _ref_type) \
    typedef _ref_type gda_ft_layout_ref_type_t; \
    GDA_FT_LAYOUT_BEGIN_SIZE(_type, sizeof(_ref_type))

/* Same field in both structs, possibly under different names */
#define GDA_FT_LAYOUT_FIELD(_field, _ref_field) \
    gda_ft_layout_field(&gda_ft_layout, #_field, \
                        offsetof(gda_ft_layout_type_t, _field), \
                        sizeof(((gda_ft_layout_type_t*)NULL)->_field), \
                        offsetof(gda_ft_layout_ref_type_t, _ref_field), \
                        sizeof(((gda_ft_layout_ref_type_t*)NULL)->_ref_field))

/* Field at a known offset and size, for layouts with no header to include */
#define GDA_FT_LAYOUT_FIELD_AT(_field, _ref_offset, _ref_size) \
    gda_ft_layout_field(&gda_ft_layout, #_field, \
                        offsetof(gda_ft_layout_type_t, _field), \
                        sizeof(((gda_ft_layout_type_t*)NULL)->_field), \
                        (_ref_offset), (_ref_size))

#define GDA_FT_LAYOUT_END() gda_ft_layout_end(&gda_ft_layout)


/* Constants: every mismatch is printed before the test fails */
static void gda_ft_layout_const(int *errors, const char *name,
                                const char *ref_name, long long value,
                                long long ref_value)
{
    if (value != ref_value) {
        printf("%s = 0x%llx, but %s = 0x%llx\n", name, value, ref_name,
               ref_value);
        ++(*errors);
    }
}

#define GDA_FT_LAYOUT_CONST(_errors, _name, _ref_name) \
    gda_ft_layout_const((_errors), #_name, #_ref_name, (_name), (_ref_name))


GDA_FT_TEST(mlx5_layout, ctrl_seg_matches_rdma_core)
{
    GDA_FT_LAYOUT_BEGIN(gda_ft_mlx5_ctrl_seg_t, struct mlx5_wqe_ctrl_seg);

    GDA_FT_LAYOUT_FIELD(opmod_idx_opcode, opmod_idx_opcode);
    GDA_FT_LAYOUT_FIELD(qpn_ds, qpn_ds);
    GDA_FT_LAYOUT_FIELD(signature, signature);
    /* reserved for RC; DCI stream id on DC */
    GDA_FT_LAYOUT_FIELD(rsvd, dci_stream_channel_id);
    GDA_FT_LAYOUT_FIELD(fm_ce_se, fm_ce_se);
    GDA_FT_LAYOUT_FIELD(imm, imm);
    GDA_FT_LAYOUT_END();
}

GDA_FT_TEST(mlx5_layout, raddr_seg_matches_rdma_core)
{
    GDA_FT_LAYOUT_BEGIN(gda_ft_mlx5_raddr_seg_t, struct mlx5_wqe_raddr_seg);

    GDA_FT_LAYOUT_FIELD(raddr, raddr);
    GDA_FT_LAYOUT_FIELD(rkey, rkey);
    GDA_FT_LAYOUT_FIELD(reserved, reserved);
    GDA_FT_LAYOUT_END();
}

GDA_FT_TEST(mlx5_layout, data_seg_matches_rdma_core)
{
    GDA_FT_LAYOUT_BEGIN(gda_ft_mlx5_data_seg_t, struct mlx5_wqe_data_seg);

    GDA_FT_LAYOUT_FIELD(byte_count, byte_count);
    GDA_FT_LAYOUT_FIELD(lkey, lkey);
    GDA_FT_LAYOUT_FIELD(addr, addr);
    GDA_FT_LAYOUT_END();
}

GDA_FT_TEST(mlx5_layout, inline_seg_matches_rdma_core)
{
    GDA_FT_LAYOUT_BEGIN(gda_ft_mlx5_inline_seg_t,
                        struct mlx5_wqe_inl_data_seg);

    GDA_FT_LAYOUT_FIELD(byte_count, byte_count);
    GDA_FT_LAYOUT_END();
}

GDA_FT_TEST(mlx5_layout, atomic_seg_matches_rdma_core)
{
    GDA_FT_LAYOUT_BEGIN(gda_ft_mlx5_atomic_seg_t, struct mlx5_wqe_atomic_seg);

    GDA_FT_LAYOUT_FIELD(swap_add, swap_add);
    GDA_FT_LAYOUT_FIELD(compare, compare);
    GDA_FT_LAYOUT_END();
}

/*
 * rdma-core has no masked-atomic segments. The expected numbers are the
 * layout UCX 1.13 posts (src/uct/ib/mlx5/ib_mlx5.h, struct
 * uct_ib_mlx5_atomic_masked_*, all packed; rc_mlx5.inl fills them).
 */
GDA_FT_TEST(mlx5_layout, masked_cs32_seg_matches_ucx)
{
    /* uct_ib_mlx5_atomic_masked_cswap32_seg: 4 x uint32_t */
    GDA_FT_LAYOUT_BEGIN_SIZE(gda_ft_mlx5_masked_cs32_seg_t, 16);

    GDA_FT_LAYOUT_FIELD_AT(swap, 0, 4);
    GDA_FT_LAYOUT_FIELD_AT(compare, 4, 4);
    GDA_FT_LAYOUT_FIELD_AT(swap_mask, 8, 4);
    GDA_FT_LAYOUT_FIELD_AT(compare_mask, 12, 4);
    GDA_FT_LAYOUT_END();
}

GDA_FT_TEST(mlx5_layout, masked_cs64_seg_matches_ucx)
{
    /*
     * uct_ib_mlx5_atomic_masked_cswap64_seg is 16 bytes {swap, compare}
     * and UCX posts two of them back to back: the second carries
     * {swap_mask, compare_mask} (rc_mlx5.inl, "2nd half ... can wrap").
     */
    GDA_FT_LAYOUT_BEGIN_SIZE(gda_ft_mlx5_masked_cs64_seg_t, 2 * 16);

    GDA_FT_LAYOUT_FIELD_AT(swap, 0, 8);
    GDA_FT_LAYOUT_FIELD_AT(compare, 8, 8);
    GDA_FT_LAYOUT_FIELD_AT(swap_mask, 16, 8);
    GDA_FT_LAYOUT_FIELD_AT(compare_mask, 24, 8);
    GDA_FT_LAYOUT_END();
}

GDA_FT_TEST(mlx5_layout, masked_fa32_seg_matches_ucx)
{
    /* uct_ib_mlx5_atomic_masked_fadd32_seg: add, filed_boundary (sic),
     * reserved[2] */
    GDA_FT_LAYOUT_BEGIN_SIZE(gda_ft_mlx5_masked_fa32_seg_t, 16);

    GDA_FT_LAYOUT_FIELD_AT(add, 0, 4);
    GDA_FT_LAYOUT_FIELD_AT(field_boundary, 4, 4);
    GDA_FT_LAYOUT_FIELD_AT(reserved, 8, 8);
    GDA_FT_LAYOUT_END();
}

GDA_FT_TEST(mlx5_layout, masked_fa64_seg_matches_ucx)
{
    /* uct_ib_mlx5_atomic_masked_fadd64_seg: add, filed_boundary (sic) */
    GDA_FT_LAYOUT_BEGIN_SIZE(gda_ft_mlx5_masked_fa64_seg_t, 16);

    GDA_FT_LAYOUT_FIELD_AT(add, 0, 8);
    GDA_FT_LAYOUT_FIELD_AT(field_boundary, 8, 8);
    GDA_FT_LAYOUT_END();
}

GDA_FT_TEST(mlx5_layout, cqe64_matches_rdma_core)
{
    GDA_FT_LAYOUT_BEGIN(gda_ft_mlx5_cqe64_t, struct mlx5_cqe64);

    /* rdma-core's first 32 bytes are a union; ours is its RC view */
    GDA_FT_LAYOUT_FIELD(rsvd0, rsvd0);
    GDA_FT_LAYOUT_FIELD(wqe_id, wqe_id);
    GDA_FT_LAYOUT_FIELD(rsvd4, rsvd4);
    GDA_FT_LAYOUT_FIELD(ml_path, ml_path);
    GDA_FT_LAYOUT_FIELD(rsvd20, rsvd20);
    GDA_FT_LAYOUT_FIELD(slid, slid);
    GDA_FT_LAYOUT_FIELD(flags_rqpn, flags_rqpn);
    GDA_FT_LAYOUT_FIELD(hds_ip_ext, hds_ip_ext);
    GDA_FT_LAYOUT_FIELD(l4_hdr_type_etc, l4_hdr_type_etc);
    GDA_FT_LAYOUT_FIELD(vlan_info, vlan_info);
    GDA_FT_LAYOUT_FIELD(srqn_uidx, srqn_uidx);
    GDA_FT_LAYOUT_FIELD(imm_inval_pkey, imm_inval_pkey);
    GDA_FT_LAYOUT_FIELD(app, app);
    GDA_FT_LAYOUT_FIELD(app_op, app_op);
    GDA_FT_LAYOUT_FIELD(app_info, app_info);
    GDA_FT_LAYOUT_FIELD(byte_cnt, byte_cnt);
    GDA_FT_LAYOUT_FIELD(timestamp, timestamp);
    GDA_FT_LAYOUT_FIELD(sop_drop_qpn, sop_drop_qpn);
    GDA_FT_LAYOUT_FIELD(wqe_counter, wqe_counter);
    GDA_FT_LAYOUT_FIELD(signature, signature);
    GDA_FT_LAYOUT_FIELD(op_own, op_own);
    GDA_FT_LAYOUT_END();
}

GDA_FT_TEST(mlx5_layout, err_cqe_matches_rdma_core)
{
    GDA_FT_LAYOUT_BEGIN(gda_ft_mlx5_err_cqe_t, struct mlx5_err_cqe);

    GDA_FT_LAYOUT_FIELD(rsvd0, rsvd0);
    GDA_FT_LAYOUT_FIELD(srqn, srqn);
    GDA_FT_LAYOUT_FIELD(rsvd1, rsvd1);
    GDA_FT_LAYOUT_FIELD(vendor_err_synd, vendor_err_synd);
    GDA_FT_LAYOUT_FIELD(syndrome, syndrome);
    GDA_FT_LAYOUT_FIELD(s_wqe_opcode_qpn, s_wqe_opcode_qpn);
    GDA_FT_LAYOUT_FIELD(wqe_counter, wqe_counter);
    GDA_FT_LAYOUT_FIELD(signature, signature);
    GDA_FT_LAYOUT_FIELD(op_own, op_own);
    GDA_FT_LAYOUT_END();
}

GDA_FT_TEST(mlx5_layout, send_opcodes_match_rdma_core)
{
    int errors = 0;

    GDA_FT_LAYOUT_CONST(&errors, GDA_FT_MLX5_OPCODE_NOP, MLX5_OPCODE_NOP);
    GDA_FT_LAYOUT_CONST(&errors, GDA_FT_MLX5_OPCODE_RDMA_WRITE,
                        MLX5_OPCODE_RDMA_WRITE);
    GDA_FT_LAYOUT_CONST(&errors, GDA_FT_MLX5_OPCODE_RDMA_WRITE_IMM,
                        MLX5_OPCODE_RDMA_WRITE_IMM);
    GDA_FT_LAYOUT_CONST(&errors, GDA_FT_MLX5_OPCODE_SEND, MLX5_OPCODE_SEND);
    GDA_FT_LAYOUT_CONST(&errors, GDA_FT_MLX5_OPCODE_SEND_IMM,
                        MLX5_OPCODE_SEND_IMM);
    GDA_FT_LAYOUT_CONST(&errors, GDA_FT_MLX5_OPCODE_RDMA_READ,
                        MLX5_OPCODE_RDMA_READ);
    GDA_FT_LAYOUT_CONST(&errors, GDA_FT_MLX5_OPCODE_ATOMIC_CS,
                        MLX5_OPCODE_ATOMIC_CS);
    GDA_FT_LAYOUT_CONST(&errors, GDA_FT_MLX5_OPCODE_ATOMIC_FA,
                        MLX5_OPCODE_ATOMIC_FA);
    GDA_FT_LAYOUT_CONST(&errors, GDA_FT_MLX5_OPCODE_ATOMIC_MASKED_CS,
                        MLX5_OPCODE_ATOMIC_MASKED_CS);
    GDA_FT_LAYOUT_CONST(&errors, GDA_FT_MLX5_OPCODE_ATOMIC_MASKED_FA,
                        MLX5_OPCODE_ATOMIC_MASKED_FA);

    /* UCT_IB_MLX5_OPMOD_EXT_ATOMIC(log2 size) of UCX 1.13: 4 B -> 0x8,
     * 8 B -> 0x9 */
    GDA_FT_LAYOUT_CONST(&errors, GDA_FT_MLX5_OPMOD_EXT_ATOMIC(2), 0x8);
    GDA_FT_LAYOUT_CONST(&errors, GDA_FT_MLX5_OPMOD_EXT_ATOMIC(3), 0x9);

    GDA_FT_ASSERT_EQ(errors, 0);
}

GDA_FT_TEST(mlx5_layout, cqe_opcodes_match_rdma_core)
{
    int errors = 0;

    GDA_FT_LAYOUT_CONST(&errors, GDA_FT_MLX5_CQE_REQ, MLX5_CQE_REQ);
    GDA_FT_LAYOUT_CONST(&errors, GDA_FT_MLX5_CQE_RESP_WR_IMM,
                        MLX5_CQE_RESP_WR_IMM);
    GDA_FT_LAYOUT_CONST(&errors, GDA_FT_MLX5_CQE_RESP_SEND,
                        MLX5_CQE_RESP_SEND);
    GDA_FT_LAYOUT_CONST(&errors, GDA_FT_MLX5_CQE_RESP_SEND_IMM,
                        MLX5_CQE_RESP_SEND_IMM);
    GDA_FT_LAYOUT_CONST(&errors, GDA_FT_MLX5_CQE_REQ_ERR, MLX5_CQE_REQ_ERR);
    GDA_FT_LAYOUT_CONST(&errors, GDA_FT_MLX5_CQE_RESP_ERR,
                        MLX5_CQE_RESP_ERR);
    GDA_FT_LAYOUT_CONST(&errors, GDA_FT_MLX5_CQE_INVALID, MLX5_CQE_INVALID);
    GDA_FT_LAYOUT_CONST(&errors, GDA_FT_MLX5_CQE_OWNER_MASK,
                        MLX5_CQE_OWNER_MASK);
    GDA_FT_ASSERT_EQ(errors, 0);
}

GDA_FT_TEST(mlx5_layout, cqe_syndromes_match_rdma_core)
{
    int errors = 0;

    GDA_FT_LAYOUT_CONST(&errors, GDA_FT_MLX5_SYND_LOCAL_LENGTH_ERR,
                        MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR);
    GDA_FT_LAYOUT_CONST(&errors, GDA_FT_MLX5_SYND_LOCAL_QP_OP_ERR,
                        MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR);
    GDA_FT_LAYOUT_CONST(&errors, GDA_FT_MLX5_SYND_LOCAL_PROT_ERR,
                        MLX5_CQE_SYNDROME_LOCAL_PROT_ERR);
    GDA_FT_LAYOUT_CONST(&errors, GDA_FT_MLX5_SYND_WR_FLUSH_ERR,
                        MLX5_CQE_SYNDROME_WR_FLUSH_ERR);
    GDA_FT_LAYOUT_CONST(&errors, GDA_FT_MLX5_SYND_BAD_RESP_ERR,
                        MLX5_CQE_SYNDROME_BAD_RESP_ERR);
    GDA_FT_LAYOUT_CONST(&errors, GDA_FT_MLX5_SYND_LOCAL_ACCESS_ERR,
                        MLX5_CQE_SYNDROME_LOCAL_ACCESS_ERR);
    GDA_FT_LAYOUT_CONST(&errors, GDA_FT_MLX5_SYND_REMOTE_INVAL_REQ_ERR,
                        MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR);
    GDA_FT_LAYOUT_CONST(&errors, GDA_FT_MLX5_SYND_REMOTE_ACCESS_ERR,
                        MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR);
    GDA_FT_LAYOUT_CONST(&errors, GDA_FT_MLX5_SYND_REMOTE_OP_ERR,
                        MLX5_CQE_SYNDROME_REMOTE_OP_ERR);
    GDA_FT_LAYOUT_CONST(&errors, GDA_FT_MLX5_SYND_TRANSPORT_RETRY_EXC_ERR,
                        MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR);
    GDA_FT_LAYOUT_CONST(&errors, GDA_FT_MLX5_SYND_RNR_RETRY_EXC_ERR,
                        MLX5_CQE_SYNDROME_RNR_RETRY_EXC_ERR);
    GDA_FT_LAYOUT_CONST(&errors, GDA_FT_MLX5_SYND_REMOTE_ABORTED_ERR,
                        MLX5_CQE_SYNDROME_REMOTE_ABORTED_ERR);
    GDA_FT_ASSERT_EQ(errors, 0);
}

GDA_FT_TEST(mlx5_layout, wqe_ctrl_flags_match_rdma_core)
{
    int errors = 0;

    GDA_FT_LAYOUT_CONST(&errors, GDA_FT_MLX5_WQE_CTRL_CQ_UPDATE,
                        MLX5_WQE_CTRL_CQ_UPDATE);
    GDA_FT_LAYOUT_CONST(&errors, GDA_FT_MLX5_WQE_CTRL_SOLICITED,
                        MLX5_WQE_CTRL_SOLICITED);
    GDA_FT_LAYOUT_CONST(&errors, GDA_FT_MLX5_WQE_CTRL_FENCE,
                        MLX5_WQE_CTRL_FENCE);
    GDA_FT_LAYOUT_CONST(&errors, GDA_FT_MLX5_WQE_CTRL_SMALL_FENCE,
                        MLX5_WQE_CTRL_INITIATOR_SMALL_FENCE);
    GDA_FT_ASSERT_EQ(errors, 0);

    /* the fence mode is the 3-bit field fm_ce_se[7:5]: it holds both
     * fences and nothing of CE / SE */
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_WQE_CTRL_FM_MASK, 0xe0);
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_WQE_CTRL_FM_MASK & MLX5_WQE_CTRL_FENCE,
                     MLX5_WQE_CTRL_FENCE);
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_WQE_CTRL_FM_MASK &
                     MLX5_WQE_CTRL_INITIATOR_SMALL_FENCE,
                     MLX5_WQE_CTRL_INITIATOR_SMALL_FENCE);
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_WQE_CTRL_FM_MASK &
                     (MLX5_WQE_CTRL_CQ_UPDATE | MLX5_WQE_CTRL_SOLICITED), 0);
}

GDA_FT_TEST(mlx5_layout, queue_constants_match_rdma_core)
{
    int errors = 0;

    GDA_FT_LAYOUT_CONST(&errors, GDA_FT_MLX5_WQE_BB, MLX5_SEND_WQE_BB);
    GDA_FT_LAYOUT_CONST(&errors, GDA_FT_MLX5_WQE_BB,
                        1 << MLX5_SEND_WQE_SHIFT);
    GDA_FT_LAYOUT_CONST(&errors, GDA_FT_MLX5_SND_DBR, MLX5_SND_DBR);
    GDA_FT_LAYOUT_CONST(&errors, GDA_FT_MLX5_RCV_DBR, MLX5_RCV_DBR);
    GDA_FT_LAYOUT_CONST(&errors, GDA_FT_MLX5_INLINE_SEG, MLX5_INLINE_SEG);
    GDA_FT_LAYOUT_CONST(&errors, GDA_FT_MLX5_CQE_SIZE,
                        sizeof(struct mlx5_cqe64));
    /* a ds unit is one data segment (mlx5dv_set_ctrl_seg: "octowords") */
    GDA_FT_LAYOUT_CONST(&errors, GDA_FT_MLX5_DS_SIZE,
                        sizeof(struct mlx5_wqe_data_seg));
    GDA_FT_ASSERT_EQ(errors, 0);
}

/* Decode a ctrl segment that rdma-core built with the given fields */
static void gda_ft_layout_check_ctrl(uint16_t pi, uint8_t opcode,
                                     uint8_t opmod, uint32_t qpn,
                                     uint8_t fm_ce_se, uint8_t ds)
{
    struct mlx5_wqe_ctrl_seg ref;
    gda_ft_mlx5_ctrl_seg_t ctrl;

    memset(&ref, 0xa5, sizeof(ref));
    mlx5dv_set_ctrl_seg(&ref, pi, opcode, opmod, qpn, fm_ce_se, ds, 0x5a,
                        htobe32(0xdeadbeef));
    memcpy(&ctrl, &ref, sizeof(ctrl));

    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_CTRL_OPCODE(&ctrl), opcode);
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_CTRL_OPMOD(&ctrl), opmod);
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_CTRL_WQE_IDX(&ctrl), pi);
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_CTRL_QPN(&ctrl), qpn);
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_CTRL_DS(&ctrl), ds);
    GDA_FT_ASSERT_EQ(ctrl.fm_ce_se, fm_ce_se);
    GDA_FT_ASSERT_EQ(ctrl.signature, 0x5a);
    GDA_FT_ASSERT_EQ(gda_ft_be32toh(ctrl.imm), 0xdeadbeef);
}

GDA_FT_TEST(mlx5_layout, ctrl_accessors_decode_rdma_core_seg)
{
    static const uint8_t opcodes[] = {
        GDA_FT_MLX5_OPCODE_NOP, GDA_FT_MLX5_OPCODE_RDMA_WRITE,
        GDA_FT_MLX5_OPCODE_RDMA_WRITE_IMM, GDA_FT_MLX5_OPCODE_SEND,
        GDA_FT_MLX5_OPCODE_SEND_IMM, GDA_FT_MLX5_OPCODE_RDMA_READ,
        GDA_FT_MLX5_OPCODE_ATOMIC_CS, GDA_FT_MLX5_OPCODE_ATOMIC_FA,
        GDA_FT_MLX5_OPCODE_ATOMIC_MASKED_CS,
        GDA_FT_MLX5_OPCODE_ATOMIC_MASKED_FA, 0xff
    };
    static const uint8_t opmods[]   = {0, 0x8, 0x9, 0xff};
    static const uint16_t pis[]     = {0, 1, 0x1234, 0x8000, 0xffff};
    static const uint32_t qpns[]    = {0, 1, 0x123456, 0xffffff};
    /* ds is 6 bits in the PRM (the kernel's MLX5_WQE_CTRL_DS_MASK): a WQE
     * is at most 63 16-byte units long */
    static const uint8_t ds_list[]  = {0, 1, 2, 4, 0x21, 0x3f};
    static const uint8_t fm_ce_se[] = {
        0, MLX5_WQE_CTRL_CQ_UPDATE,
        MLX5_WQE_CTRL_CQ_UPDATE | MLX5_WQE_CTRL_SOLICITED |
        MLX5_WQE_CTRL_FENCE,
        MLX5_WQE_CTRL_INITIATOR_SMALL_FENCE, 0xff
    };
    size_t i, j;

    for (i = 0; i < sizeof(opcodes); ++i) {
        for (j = 0; j < sizeof(opmods); ++j) {
            gda_ft_layout_check_ctrl(0x4321, opcodes[i], opmods[j], 0xabcdef,
                                     MLX5_WQE_CTRL_CQ_UPDATE, 3);
        }
    }

    for (i = 0; i < sizeof(pis) / sizeof(pis[0]); ++i) {
        for (j = 0; j < sizeof(qpns) / sizeof(qpns[0]); ++j) {
            gda_ft_layout_check_ctrl(pis[i], MLX5_OPCODE_RDMA_WRITE, 0xff,
                                     qpns[j], 0, 0x3f);
        }
    }

    for (i = 0; i < sizeof(ds_list); ++i) {
        for (j = 0; j < sizeof(fm_ce_se); ++j) {
            gda_ft_layout_check_ctrl(0xffff, 0xff, 0xff, 0xffffff,
                                     fm_ce_se[j], ds_list[i]);
        }
    }
}

GDA_FT_TEST(mlx5_layout, cqe_accessors_decode_op_own)
{
    struct mlx5_cqe64 ref;
    gda_ft_mlx5_cqe64_t cqe;
    unsigned op_own;

    memset(&ref, 0, sizeof(ref));
    for (op_own = 0; op_own <= 0xff; ++op_own) {
        ref.op_own = op_own;
        memcpy(&cqe, &ref, sizeof(cqe));
        GDA_FT_ASSERT_EQ(GDA_FT_MLX5_CQE_OPCODE(&cqe),
                         mlx5dv_get_cqe_opcode(&ref));
        GDA_FT_ASSERT_EQ(cqe.op_own & GDA_FT_MLX5_CQE_OWNER_MASK,
                         mlx5dv_get_cqe_owner(&ref));
    }
}

/* Segments filled through our structs and byte-order helpers hold the same
 * bytes as rdma-core's, built with its helpers and endian.h */
GDA_FT_TEST(mlx5_layout, segments_have_rdma_core_bytes)
{
    struct mlx5_wqe_ctrl_seg ref_ctrl;
    struct mlx5_wqe_data_seg ref_data;
    struct mlx5_wqe_raddr_seg ref_raddr;
    struct mlx5_wqe_atomic_seg ref_atomic;
    gda_ft_mlx5_ctrl_seg_t ctrl;
    gda_ft_mlx5_data_seg_t data;
    gda_ft_mlx5_raddr_seg_t raddr;
    gda_ft_mlx5_atomic_seg_t atomic;

    memset(&ref_ctrl, 0, sizeof(ref_ctrl));
    mlx5dv_set_ctrl_seg(&ref_ctrl, 0x1234, MLX5_OPCODE_ATOMIC_MASKED_FA, 0x9,
                        0x00beef, MLX5_WQE_CTRL_CQ_UPDATE, 4, 0,
                        htobe32(0x01020304));
    memset(&ctrl, 0, sizeof(ctrl));
    ctrl.opmod_idx_opcode = gda_ft_htobe32((0x9u << 24) | (0x1234u << 8) |
                                           GDA_FT_MLX5_OPCODE_ATOMIC_MASKED_FA);
    ctrl.qpn_ds           = gda_ft_htobe32((0x00beefu << 8) | 4);
    ctrl.fm_ce_se         = GDA_FT_MLX5_WQE_CTRL_CQ_UPDATE;
    ctrl.imm              = gda_ft_htobe32(0x01020304);
    GDA_FT_ASSERT_MEM_EQ(&ctrl, &ref_ctrl, sizeof(ctrl));

    mlx5dv_set_data_seg(&ref_data, 4096, 0x11223344, 0x0102030405060708ull);
    data.byte_count = gda_ft_htobe32(4096);
    data.lkey       = gda_ft_htobe32(0x11223344);
    data.addr       = gda_ft_htobe64(0x0102030405060708ull);
    GDA_FT_ASSERT_MEM_EQ(&data, &ref_data, sizeof(data));

    ref_raddr.raddr    = htobe64(0xfedcba9876543210ull);
    ref_raddr.rkey     = htobe32(0xcafef00d);
    ref_raddr.reserved = 0;
    raddr.raddr        = gda_ft_htobe64(0xfedcba9876543210ull);
    raddr.rkey         = gda_ft_htobe32(0xcafef00d);
    raddr.reserved     = 0;
    GDA_FT_ASSERT_MEM_EQ(&raddr, &ref_raddr, sizeof(raddr));

    ref_atomic.swap_add = htobe64(0x8000000000000001ull);
    ref_atomic.compare  = htobe64(0x00000000ffffffffull);
    atomic.swap_add     = gda_ft_htobe64(0x8000000000000001ull);
    atomic.compare      = gda_ft_htobe64(0x00000000ffffffffull);
    GDA_FT_ASSERT_MEM_EQ(&atomic, &ref_atomic, sizeof(atomic));

    /* and they read back through the be*toh helpers */
    GDA_FT_ASSERT_EQ(gda_ft_be64toh(raddr.raddr), 0xfedcba9876543210ull);
    GDA_FT_ASSERT_EQ(gda_ft_be32toh(ref_data.lkey), 0x11223344);
    GDA_FT_ASSERT_EQ(gda_ft_be16toh(gda_ft_htobe16(0xa1b2)), 0xa1b2);
    GDA_FT_ASSERT_EQ(gda_ft_htobe16(0xa1b2), htobe16(0xa1b2));
}

/* Fields of a CQE written by rdma-core's names read back through ours */
GDA_FT_TEST(mlx5_layout, cqe_fields_read_through_ours)
{
    struct mlx5_cqe64 ref;
    struct mlx5_err_cqe ref_err;
    gda_ft_mlx5_cqe64_t cqe;
    gda_ft_mlx5_err_cqe_t err;

    memset(&ref, 0, sizeof(ref));
    ref.wqe_id         = htobe16(0x0102);
    ref.flags_rqpn     = htobe32(0x00345678);
    ref.srqn_uidx      = htobe32(0x0a0b0c0d);
    ref.imm_inval_pkey = htobe32(0x11121314);
    ref.byte_cnt       = htobe32(0x00012345);
    ref.timestamp      = htobe64(0x2122232425262728ull);
    ref.sop_drop_qpn   = htobe32(0x00abcdef);
    ref.wqe_counter    = htobe16(0xfffe);
    ref.signature      = 0x77;
    ref.op_own         = (MLX5_CQE_RESP_SEND << 4) | 1;
    memcpy(&cqe, &ref, sizeof(cqe));

    GDA_FT_ASSERT_EQ(gda_ft_be16toh(cqe.wqe_id), 0x0102);
    GDA_FT_ASSERT_EQ(gda_ft_be32toh(cqe.flags_rqpn), 0x00345678);
    GDA_FT_ASSERT_EQ(gda_ft_be32toh(cqe.srqn_uidx), 0x0a0b0c0d);
    GDA_FT_ASSERT_EQ(gda_ft_be32toh(cqe.imm_inval_pkey), 0x11121314);
    GDA_FT_ASSERT_EQ(gda_ft_be32toh(cqe.byte_cnt), 0x00012345);
    GDA_FT_ASSERT_EQ(gda_ft_be64toh(cqe.timestamp), 0x2122232425262728ull);
    GDA_FT_ASSERT_EQ(gda_ft_be32toh(cqe.sop_drop_qpn) & 0xffffff, 0xabcdef);
    GDA_FT_ASSERT_EQ(gda_ft_be16toh(cqe.wqe_counter), 0xfffe);
    GDA_FT_ASSERT_EQ(cqe.signature, 0x77);
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_CQE_OPCODE(&cqe), GDA_FT_MLX5_CQE_RESP_SEND);

    memset(&ref_err, 0, sizeof(ref_err));
    ref_err.srqn             = htobe32(0x00000042);
    ref_err.vendor_err_synd  = 0x81;
    ref_err.syndrome         = MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR;
    ref_err.s_wqe_opcode_qpn = htobe32((MLX5_OPCODE_RDMA_WRITE << 24) |
                                       0x00123456);
    ref_err.wqe_counter      = htobe16(0x0007);
    ref_err.op_own           = MLX5_CQE_REQ_ERR << 4;
    memcpy(&err, &ref_err, sizeof(err));

    GDA_FT_ASSERT_EQ(gda_ft_be32toh(err.srqn), 0x42);
    GDA_FT_ASSERT_EQ(err.vendor_err_synd, 0x81);
    GDA_FT_ASSERT_EQ(err.syndrome,
                     GDA_FT_MLX5_SYND_TRANSPORT_RETRY_EXC_ERR);
    GDA_FT_ASSERT_EQ(gda_ft_be32toh(err.s_wqe_opcode_qpn) >> 24,
                     GDA_FT_MLX5_OPCODE_RDMA_WRITE);
    GDA_FT_ASSERT_EQ(gda_ft_be32toh(err.s_wqe_opcode_qpn) & 0xffffff,
                     0x123456);
    GDA_FT_ASSERT_EQ(gda_ft_be16toh(err.wqe_counter), 7);
    GDA_FT_ASSERT_EQ(GDA_FT_MLX5_CQE_OPCODE(&err), GDA_FT_MLX5_CQE_REQ_ERR);
}
