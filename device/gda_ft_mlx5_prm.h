/*
 * mlx5 send WQE and CQE byte layouts, as consumed and produced by ConnectX
 * (and by the gda_ft software HCA, which implements the same formats).
 *
 * These are the only definitions of the layouts in the project. They mirror
 * rdma-core's <infiniband/mlx5dv.h> (struct mlx5_wqe_ctrl_seg, ...) without
 * including it, because that header drags host-only verbs declarations into
 * CUDA device code; test/gtest-free/test_layout.c checks every offset and
 * size against rdma-core.
 */
#ifndef GDA_FT_MLX5_PRM_H_
#define GDA_FT_MLX5_PRM_H_

#include "gda_ft_dev_def.h"

/* Send queue geometry */
#define GDA_FT_MLX5_WQE_BB            64   /* send WQE basic block */
#define GDA_FT_MLX5_DS_SIZE           16   /* "ds" unit of ctrl.qpn_ds */
#define GDA_FT_MLX5_SND_DBR           1    /* dbrec index of the SQ counter */
#define GDA_FT_MLX5_RCV_DBR           0    /* dbrec index of the RQ counter */
#define GDA_FT_MLX5_CQE_SIZE          64

/* Send opcodes (ctrl.opmod_idx_opcode & 0xff) */
#define GDA_FT_MLX5_OPCODE_NOP              0x00
#define GDA_FT_MLX5_OPCODE_RDMA_WRITE       0x08
#define GDA_FT_MLX5_OPCODE_RDMA_WRITE_IMM   0x09
#define GDA_FT_MLX5_OPCODE_SEND             0x0a
#define GDA_FT_MLX5_OPCODE_SEND_IMM         0x0b
#define GDA_FT_MLX5_OPCODE_RDMA_READ        0x10
#define GDA_FT_MLX5_OPCODE_ATOMIC_CS        0x11
#define GDA_FT_MLX5_OPCODE_ATOMIC_FA        0x12
#define GDA_FT_MLX5_OPCODE_ATOMIC_MASKED_CS 0x14
#define GDA_FT_MLX5_OPCODE_ATOMIC_MASKED_FA 0x15

/* opmod of the extended (masked) atomics: 8 | (log2(size) - 2) */
#define GDA_FT_MLX5_OPMOD_EXT_ATOMIC(_log_size) (8 | ((_log_size) - 2))

/* ctrl.fm_ce_se */
#define GDA_FT_MLX5_WQE_CTRL_CQ_UPDATE      (2 << 2)
#define GDA_FT_MLX5_WQE_CTRL_SOLICITED      (1 << 1)
#define GDA_FT_MLX5_WQE_CTRL_FENCE          (4 << 5) /* small and fence */
#define GDA_FT_MLX5_WQE_CTRL_SMALL_FENCE    (1 << 5) /* initiator small */
#define GDA_FT_MLX5_WQE_CTRL_FM_MASK        (7 << 5)

/* lkey ending a receive scatter list shorter than the WQE */
#define GDA_FT_MLX5_INVALID_LKEY            0x100

/* data segment byte_count flag marking an inline segment */
#define GDA_FT_MLX5_INLINE_SEG              0x80000000u

/* CQE opcodes (op_own >> 4) */
#define GDA_FT_MLX5_CQE_REQ                 0x0
#define GDA_FT_MLX5_CQE_RESP_WR_IMM         0x1
#define GDA_FT_MLX5_CQE_RESP_SEND           0x2
#define GDA_FT_MLX5_CQE_RESP_SEND_IMM       0x3
#define GDA_FT_MLX5_CQE_REQ_ERR             0xd
#define GDA_FT_MLX5_CQE_RESP_ERR            0xe
#define GDA_FT_MLX5_CQE_INVALID             0xf
#define GDA_FT_MLX5_CQE_OWNER_MASK          0x1

/* Error CQE syndromes */
#define GDA_FT_MLX5_SYND_LOCAL_LENGTH_ERR         0x01
#define GDA_FT_MLX5_SYND_LOCAL_QP_OP_ERR          0x02
#define GDA_FT_MLX5_SYND_LOCAL_PROT_ERR           0x04
#define GDA_FT_MLX5_SYND_WR_FLUSH_ERR             0x05
#define GDA_FT_MLX5_SYND_BAD_RESP_ERR             0x10
#define GDA_FT_MLX5_SYND_LOCAL_ACCESS_ERR         0x11
#define GDA_FT_MLX5_SYND_REMOTE_INVAL_REQ_ERR     0x12
#define GDA_FT_MLX5_SYND_REMOTE_ACCESS_ERR        0x13
#define GDA_FT_MLX5_SYND_REMOTE_OP_ERR            0x14
#define GDA_FT_MLX5_SYND_TRANSPORT_RETRY_EXC_ERR  0x15
#define GDA_FT_MLX5_SYND_RNR_RETRY_EXC_ERR        0x16
#define GDA_FT_MLX5_SYND_REMOTE_ABORTED_ERR       0x22

/* All multi-byte fields below are big-endian. */

typedef struct gda_ft_mlx5_ctrl_seg {
    uint32_t opmod_idx_opcode;  /* opmod:8 | wqe_index:16 | opcode:8 */
    uint32_t qpn_ds;            /* qpn:24 | ds:8 (16-byte units)     */
    uint8_t  signature;
    uint8_t  rsvd[2];
    uint8_t  fm_ce_se;
    uint32_t imm;
} gda_ft_mlx5_ctrl_seg_t;

typedef struct gda_ft_mlx5_raddr_seg {
    uint64_t raddr;
    uint32_t rkey;
    uint32_t reserved;
} gda_ft_mlx5_raddr_seg_t;

typedef struct gda_ft_mlx5_data_seg {
    uint32_t byte_count;
    uint32_t lkey;
    uint64_t addr;
} gda_ft_mlx5_data_seg_t;

typedef struct gda_ft_mlx5_inline_seg {
    uint32_t byte_count;        /* length | GDA_FT_MLX5_INLINE_SEG */
    /* data follows, padded to 16 bytes */
} gda_ft_mlx5_inline_seg_t;

typedef struct gda_ft_mlx5_atomic_seg {
    uint64_t swap_add;
    uint64_t compare;
} gda_ft_mlx5_atomic_seg_t;

/* Extended atomics: 4-byte masked compare-swap, one 16-byte segment */
typedef struct gda_ft_mlx5_masked_cs32_seg {
    uint32_t swap;
    uint32_t compare;
    uint32_t swap_mask;
    uint32_t compare_mask;
} gda_ft_mlx5_masked_cs32_seg_t;

/* 8-byte masked compare-swap: two 16-byte segments */
typedef struct gda_ft_mlx5_masked_cs64_seg {
    uint64_t swap;
    uint64_t compare;
    uint64_t swap_mask;
    uint64_t compare_mask;
} gda_ft_mlx5_masked_cs64_seg_t;

/* 4-byte masked fetch-add: add, field boundary bits */
typedef struct gda_ft_mlx5_masked_fa32_seg {
    uint32_t add;
    uint32_t field_boundary;
    uint32_t reserved[2];
} gda_ft_mlx5_masked_fa32_seg_t;

typedef struct gda_ft_mlx5_masked_fa64_seg {
    uint64_t add;
    uint64_t field_boundary;
} gda_ft_mlx5_masked_fa64_seg_t;

/* Receive WQE: scatter list of data segments (no ctrl segment). */

typedef struct gda_ft_mlx5_cqe64 {
    uint8_t  rsvd0[2];
    uint16_t wqe_id;
    uint8_t  rsvd4[13];
    uint8_t  ml_path;
    uint8_t  rsvd20[4];
    uint16_t slid;
    uint32_t flags_rqpn;
    uint8_t  hds_ip_ext;
    uint8_t  l4_hdr_type_etc;
    uint16_t vlan_info;
    uint32_t srqn_uidx;
    uint32_t imm_inval_pkey;
    uint8_t  app;
    uint8_t  app_op;
    uint16_t app_info;
    uint32_t byte_cnt;
    uint64_t timestamp;
    uint32_t sop_drop_qpn;      /* qpn in the low 24 bits */
    uint16_t wqe_counter;
    uint8_t  signature;
    uint8_t  op_own;            /* opcode:4 | rsvd:3 | owner:1 */
} gda_ft_mlx5_cqe64_t;

typedef struct gda_ft_mlx5_err_cqe {
    uint8_t  rsvd0[32];
    uint32_t srqn;
    uint8_t  rsvd1[18];
    uint8_t  vendor_err_synd;
    uint8_t  syndrome;
    uint32_t s_wqe_opcode_qpn;  /* opcode:8 | qpn:24 */
    uint16_t wqe_counter;
    uint8_t  signature;
    uint8_t  op_own;
} gda_ft_mlx5_err_cqe_t;

GDA_FT_STATIC_ASSERT(sizeof(gda_ft_mlx5_ctrl_seg_t) == 16, ctrl_seg_size);
GDA_FT_STATIC_ASSERT(sizeof(gda_ft_mlx5_raddr_seg_t) == 16, raddr_seg_size);
GDA_FT_STATIC_ASSERT(sizeof(gda_ft_mlx5_data_seg_t) == 16, data_seg_size);
GDA_FT_STATIC_ASSERT(sizeof(gda_ft_mlx5_atomic_seg_t) == 16, atomic_seg_size);
GDA_FT_STATIC_ASSERT(sizeof(gda_ft_mlx5_masked_cs32_seg_t) == 16, mcs32_size);
GDA_FT_STATIC_ASSERT(sizeof(gda_ft_mlx5_masked_cs64_seg_t) == 32, mcs64_size);
GDA_FT_STATIC_ASSERT(sizeof(gda_ft_mlx5_masked_fa32_seg_t) == 16, mfa32_size);
GDA_FT_STATIC_ASSERT(sizeof(gda_ft_mlx5_masked_fa64_seg_t) == 16, mfa64_size);
GDA_FT_STATIC_ASSERT(sizeof(gda_ft_mlx5_cqe64_t) == 64, cqe64_size);
GDA_FT_STATIC_ASSERT(sizeof(gda_ft_mlx5_err_cqe_t) == 64, err_cqe_size);

/* Field accessors shared by the software HCA and the datapath */
#define GDA_FT_MLX5_CTRL_OPCODE(_c)  (gda_ft_be32toh((_c)->opmod_idx_opcode) & 0xff)
#define GDA_FT_MLX5_CTRL_WQE_IDX(_c) \
    ((uint16_t)((gda_ft_be32toh((_c)->opmod_idx_opcode) >> 8) & 0xffff))
#define GDA_FT_MLX5_CTRL_OPMOD(_c)   (gda_ft_be32toh((_c)->opmod_idx_opcode) >> 24)
#define GDA_FT_MLX5_CTRL_DS(_c)      (gda_ft_be32toh((_c)->qpn_ds) & 0x3f)
#define GDA_FT_MLX5_CTRL_QPN(_c)     (gda_ft_be32toh((_c)->qpn_ds) >> 8)
#define GDA_FT_MLX5_CQE_OPCODE(_cqe) ((_cqe)->op_own >> 4)

#endif
