/*
 * mlx5 provider: the PRM layouts of the DEVX commands and contexts it
 * writes and reads, transcribed field by field from the ConnectX PRM.
 *
 * Each field is a (bit offset, bit width) pair counted from the start of
 * its structure, bits numbered from the most significant bit of the first
 * big-endian dword, as the PRM draws them. Only the fields this provider
 * uses are named. test_mlx5_prm_layout.c asserts every offset, width and
 * size; test_mlx5_prm_kernel.c checks each one that the Linux kernel's
 * include/linux/mlx5/mlx5_ifc.h also names against that header (the umem
 * fields, which the kernel leaves reserved, only against the PRM table).
 *
 * A field of type T is GDA_FT_MLX5_PRM_<T>__<field>; the size of T in
 * bytes is GDA_FT_MLX5_PRM_SIZE_<T>.
 */
#ifndef GDA_FT_MLX5_IFC_H_
#define GDA_FT_MLX5_IFC_H_

#include <endian.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>


/* ---- command opcodes and context codes ---------------------------------- */

#define GDA_FT_MLX5_CMD_OP_QUERY_HCA_CAP    0x100
#define GDA_FT_MLX5_CMD_OP_CREATE_CQ        0x400
#define GDA_FT_MLX5_CMD_OP_CREATE_QP        0x500
#define GDA_FT_MLX5_CMD_OP_RST2INIT_QP      0x502
#define GDA_FT_MLX5_CMD_OP_INIT2RTR_QP      0x503
#define GDA_FT_MLX5_CMD_OP_RTR2RTS_QP       0x504
#define GDA_FT_MLX5_CMD_OP_RTS2RTS_QP       0x505
#define GDA_FT_MLX5_CMD_OP_2ERR_QP          0x507
#define GDA_FT_MLX5_CMD_OP_2RST_QP          0x50a
#define GDA_FT_MLX5_CMD_OP_QUERY_QP         0x50b
#define GDA_FT_MLX5_CMD_OP_INIT2INIT_QP     0x50e

/* qpc.st, qpc.pm_state, qpc.ts_format, qpc.atomic_mode */
#define GDA_FT_MLX5_QPC_ST_RC               0x0
#define GDA_FT_MLX5_QPC_PM_STATE_MIGRATED   0x3
#define GDA_FT_MLX5_QPC_TS_FORMAT_DEFAULT   0x1
#define GDA_FT_MLX5_QPC_ATOMIC_MODE_UP_TO_8B 0x3

/* qpc.mtu */
#define GDA_FT_MLX5_QPC_MTU_256_BYTES       0x1
#define GDA_FT_MLX5_QPC_MTU_512_BYTES       0x2
#define GDA_FT_MLX5_QPC_MTU_1K_BYTES        0x3
#define GDA_FT_MLX5_QPC_MTU_2K_BYTES        0x4
#define GDA_FT_MLX5_QPC_MTU_4K_BYTES        0x5

/* qpc.state */
#define GDA_FT_MLX5_QPC_STATE_RST           0x0
#define GDA_FT_MLX5_QPC_STATE_INIT          0x1
#define GDA_FT_MLX5_QPC_STATE_RTR           0x2
#define GDA_FT_MLX5_QPC_STATE_RTS           0x3
#define GDA_FT_MLX5_QPC_STATE_SQER          0x4
#define GDA_FT_MLX5_QPC_STATE_SQD           0x5
#define GDA_FT_MLX5_QPC_STATE_ERR           0x6

/* Command status (the status field of every command's output); the
 * kernel turns any but OK into EREMOTEIO for a DEVX command */
#define GDA_FT_MLX5_CMD_STAT_OK             0x00
#define GDA_FT_MLX5_CMD_STAT_INT_ERR        0x01
#define GDA_FT_MLX5_CMD_STAT_BAD_OP         0x02
#define GDA_FT_MLX5_CMD_STAT_BAD_PARAM      0x03
#define GDA_FT_MLX5_CMD_STAT_BAD_RES        0x05
#define GDA_FT_MLX5_CMD_STAT_RES_BUSY       0x06
#define GDA_FT_MLX5_CMD_STAT_LIM            0x08
#define GDA_FT_MLX5_CMD_STAT_BAD_RES_STATE  0x09
#define GDA_FT_MLX5_CMD_STAT_BAD_QP_STATE   0x10
#define GDA_FT_MLX5_CMD_STAT_BAD_INP_LEN    0x50
#define GDA_FT_MLX5_CMD_STAT_BAD_OUTP_LEN   0x51

/* ---- sizes (bytes) ------------------------------------------------------- */

#define GDA_FT_MLX5_PRM_SIZE_create_cq_in   272
#define GDA_FT_MLX5_PRM_SIZE_create_cq_out  16
#define GDA_FT_MLX5_PRM_SIZE_cqc            64
#define GDA_FT_MLX5_PRM_SIZE_create_qp_in   272
#define GDA_FT_MLX5_PRM_SIZE_create_qp_out  16
#define GDA_FT_MLX5_PRM_SIZE_qpc            232
#define GDA_FT_MLX5_PRM_SIZE_ads            44
#define GDA_FT_MLX5_PRM_SIZE_rst2init_qp_in 272
#define GDA_FT_MLX5_PRM_SIZE_init2init_qp_in 272
#define GDA_FT_MLX5_PRM_SIZE_init2rtr_qp_in 272
#define GDA_FT_MLX5_PRM_SIZE_rtr2rts_qp_in  272
#define GDA_FT_MLX5_PRM_SIZE_modify_qp_in   16
#define GDA_FT_MLX5_PRM_SIZE_modify_qp_out  16
#define GDA_FT_MLX5_PRM_SIZE_query_qp_in    16
#define GDA_FT_MLX5_PRM_SIZE_query_qp_out   272
#define GDA_FT_MLX5_PRM_SIZE_query_hca_cap_in  16
#define GDA_FT_MLX5_PRM_SIZE_query_hca_cap_out 4112


/* ---- fields: bit offset, bit width --------------------------------------- */

/* CREATE_CQ */
#define GDA_FT_MLX5_PRM_create_cq_in__opcode          0x000, 16
#define GDA_FT_MLX5_PRM_create_cq_in__cqc             0x080, 512
#define GDA_FT_MLX5_PRM_create_cq_in__cq_umem_offset  0x280, 64
#define GDA_FT_MLX5_PRM_create_cq_in__cq_umem_id      0x2c0, 32
#define GDA_FT_MLX5_PRM_create_cq_in__cq_umem_valid   0x2e0, 1
#define GDA_FT_MLX5_PRM_create_cq_out__status         0x000, 8
#define GDA_FT_MLX5_PRM_create_cq_out__syndrome       0x020, 32
#define GDA_FT_MLX5_PRM_create_cq_out__cqn            0x048, 24

/* CQ context */
#define GDA_FT_MLX5_PRM_cqc__dbr_umem_valid           0x006, 1
#define GDA_FT_MLX5_PRM_cqc__cqe_sz                   0x008, 3
#define GDA_FT_MLX5_PRM_cqc__cc                       0x00b, 1
#define GDA_FT_MLX5_PRM_cqc__oi                       0x00e, 1
#define GDA_FT_MLX5_PRM_cqc__dbr_umem_id              0x020, 32
#define GDA_FT_MLX5_PRM_cqc__page_offset              0x054, 6
#define GDA_FT_MLX5_PRM_cqc__log_cq_size              0x063, 5
#define GDA_FT_MLX5_PRM_cqc__uar_page                 0x068, 24
#define GDA_FT_MLX5_PRM_cqc__c_eqn                    0x0b8, 8
#define GDA_FT_MLX5_PRM_cqc__log_page_size            0x0c3, 5
#define GDA_FT_MLX5_PRM_cqc__dbr_addr                 0x1c0, 64

/* CREATE_QP */
#define GDA_FT_MLX5_PRM_create_qp_in__opcode          0x000, 16
#define GDA_FT_MLX5_PRM_create_qp_in__qpc             0x0c0, 1856
#define GDA_FT_MLX5_PRM_create_qp_in__wq_umem_offset  0x800, 64
#define GDA_FT_MLX5_PRM_create_qp_in__wq_umem_id      0x840, 32
#define GDA_FT_MLX5_PRM_create_qp_in__wq_umem_valid   0x860, 1
#define GDA_FT_MLX5_PRM_create_qp_out__status         0x000, 8
#define GDA_FT_MLX5_PRM_create_qp_out__syndrome       0x020, 32
#define GDA_FT_MLX5_PRM_create_qp_out__qpn            0x048, 24

/* Address path (ads), as it sits in the QP context */
#define GDA_FT_MLX5_PRM_ads__grh                      0x028, 1
#define GDA_FT_MLX5_PRM_ads__ack_timeout              0x040, 5
#define GDA_FT_MLX5_PRM_ads__src_addr_index           0x048, 8
#define GDA_FT_MLX5_PRM_ads__hop_limit                0x058, 8
#define GDA_FT_MLX5_PRM_ads__tclass                   0x064, 8
#define GDA_FT_MLX5_PRM_ads__rgid_rip                 0x080, 128
#define GDA_FT_MLX5_PRM_ads__dscp                     0x10a, 6
#define GDA_FT_MLX5_PRM_ads__udp_sport                0x110, 16
#define GDA_FT_MLX5_PRM_ads__eth_prio                 0x121, 3
#define GDA_FT_MLX5_PRM_ads__sl                       0x124, 4
#define GDA_FT_MLX5_PRM_ads__vhca_port_num            0x128, 8
#define GDA_FT_MLX5_PRM_ads__rmac_47_32               0x130, 16
#define GDA_FT_MLX5_PRM_ads__rmac_31_0                0x140, 32

/* QP context; primary_path_<f> is ads.<f> of its primary address path */
#define GDA_FT_MLX5_QPC_PRIMARY_PATH                  0x0c0
#define GDA_FT_MLX5_PRM_qpc__state                    0x000, 4
#define GDA_FT_MLX5_PRM_qpc__st                       0x008, 8
#define GDA_FT_MLX5_PRM_qpc__pm_state                 0x013, 2
#define GDA_FT_MLX5_PRM_qpc__pd                       0x028, 24
#define GDA_FT_MLX5_PRM_qpc__mtu                      0x040, 3
#define GDA_FT_MLX5_PRM_qpc__log_msg_max              0x043, 5
#define GDA_FT_MLX5_PRM_qpc__log_rq_size              0x049, 4
#define GDA_FT_MLX5_PRM_qpc__log_rq_stride            0x04d, 3
#define GDA_FT_MLX5_PRM_qpc__no_sq                    0x050, 1
#define GDA_FT_MLX5_PRM_qpc__log_sq_size              0x051, 4
#define GDA_FT_MLX5_PRM_qpc__ts_format                0x058, 2
#define GDA_FT_MLX5_PRM_qpc__uar_page                 0x068, 24
#define GDA_FT_MLX5_PRM_qpc__log_page_size            0x0a3, 5
#define GDA_FT_MLX5_PRM_qpc__remote_qpn               0x0a8, 24
#define GDA_FT_MLX5_PRM_qpc__primary_address_path \
    GDA_FT_MLX5_QPC_PRIMARY_PATH, 352
#define GDA_FT_MLX5_PRM_qpc__log_sra_max              0x388, 3
#define GDA_FT_MLX5_PRM_qpc__retry_count              0x38d, 3
#define GDA_FT_MLX5_PRM_qpc__rnr_retry                0x390, 3
#define GDA_FT_MLX5_PRM_qpc__next_send_psn            0x3c8, 24
#define GDA_FT_MLX5_PRM_qpc__cqn_snd                  0x3e8, 24
#define GDA_FT_MLX5_PRM_qpc__log_rra_max              0x488, 3
#define GDA_FT_MLX5_PRM_qpc__atomic_mode              0x48c, 4
#define GDA_FT_MLX5_PRM_qpc__rre                      0x490, 1
#define GDA_FT_MLX5_PRM_qpc__rwe                      0x491, 1
#define GDA_FT_MLX5_PRM_qpc__rae                      0x492, 1
#define GDA_FT_MLX5_PRM_qpc__min_rnr_nak              0x4a3, 5
#define GDA_FT_MLX5_PRM_qpc__next_rcv_psn             0x4a8, 24
#define GDA_FT_MLX5_PRM_qpc__cqn_rcv                  0x4e8, 24
#define GDA_FT_MLX5_PRM_qpc__dbr_addr                 0x500, 64
#define GDA_FT_MLX5_PRM_qpc__rq_type                  0x565, 3
#define GDA_FT_MLX5_PRM_qpc__dbr_umem_valid           0x683, 1
#define GDA_FT_MLX5_PRM_qpc__dbr_umem_id              0x720, 32

#define GDA_FT_MLX5_QPC_ADS(_f) \
    (GDA_FT_MLX5_QPC_PRIMARY_PATH + \
     GDA_FT_MLX5_ARG1_(GDA_FT_MLX5_PRM_ads__##_f)), \
    GDA_FT_MLX5_ARG2_(GDA_FT_MLX5_PRM_ads__##_f)
#define GDA_FT_MLX5_PRM_qpc__primary_path_grh         GDA_FT_MLX5_QPC_ADS(grh)
#define GDA_FT_MLX5_PRM_qpc__primary_path_ack_timeout \
    GDA_FT_MLX5_QPC_ADS(ack_timeout)
#define GDA_FT_MLX5_PRM_qpc__primary_path_src_addr_index \
    GDA_FT_MLX5_QPC_ADS(src_addr_index)
#define GDA_FT_MLX5_PRM_qpc__primary_path_hop_limit \
    GDA_FT_MLX5_QPC_ADS(hop_limit)
#define GDA_FT_MLX5_PRM_qpc__primary_path_tclass \
    GDA_FT_MLX5_QPC_ADS(tclass)
#define GDA_FT_MLX5_PRM_qpc__primary_path_rgid_rip \
    GDA_FT_MLX5_QPC_ADS(rgid_rip)
#define GDA_FT_MLX5_PRM_qpc__primary_path_dscp        GDA_FT_MLX5_QPC_ADS(dscp)
#define GDA_FT_MLX5_PRM_qpc__primary_path_udp_sport \
    GDA_FT_MLX5_QPC_ADS(udp_sport)
#define GDA_FT_MLX5_PRM_qpc__primary_path_eth_prio \
    GDA_FT_MLX5_QPC_ADS(eth_prio)
#define GDA_FT_MLX5_PRM_qpc__primary_path_sl          GDA_FT_MLX5_QPC_ADS(sl)
#define GDA_FT_MLX5_PRM_qpc__primary_path_vhca_port_num \
    GDA_FT_MLX5_QPC_ADS(vhca_port_num)
#define GDA_FT_MLX5_PRM_qpc__primary_path_rmac_47_32 \
    GDA_FT_MLX5_QPC_ADS(rmac_47_32)
#define GDA_FT_MLX5_PRM_qpc__primary_path_rmac_31_0 \
    GDA_FT_MLX5_QPC_ADS(rmac_31_0)

/* QP state transitions: one input layout, the opcode tells them apart */
#define GDA_FT_MLX5_PRM_rst2init_qp_in__opcode        0x000, 16
#define GDA_FT_MLX5_PRM_rst2init_qp_in__qpn           0x048, 24
#define GDA_FT_MLX5_PRM_rst2init_qp_in__qpc           0x0c0, 1856
#define GDA_FT_MLX5_PRM_init2init_qp_in__opcode       0x000, 16
#define GDA_FT_MLX5_PRM_init2init_qp_in__qpn          0x048, 24
#define GDA_FT_MLX5_PRM_init2init_qp_in__qpc          0x0c0, 1856
#define GDA_FT_MLX5_PRM_init2rtr_qp_in__opcode        0x000, 16
#define GDA_FT_MLX5_PRM_init2rtr_qp_in__qpn           0x048, 24
#define GDA_FT_MLX5_PRM_init2rtr_qp_in__qpc           0x0c0, 1856
#define GDA_FT_MLX5_PRM_rtr2rts_qp_in__opcode         0x000, 16
#define GDA_FT_MLX5_PRM_rtr2rts_qp_in__qpn            0x048, 24
#define GDA_FT_MLX5_PRM_rtr2rts_qp_in__qpc            0x0c0, 1856

/* 2ERR, 2RST (and the output of every transition) */
#define GDA_FT_MLX5_PRM_modify_qp_in__opcode          0x000, 16
#define GDA_FT_MLX5_PRM_modify_qp_in__qpn             0x048, 24
#define GDA_FT_MLX5_PRM_modify_qp_out__status         0x000, 8
#define GDA_FT_MLX5_PRM_modify_qp_out__syndrome       0x020, 32

#define GDA_FT_MLX5_PRM_query_qp_in__opcode           0x000, 16
#define GDA_FT_MLX5_PRM_query_qp_in__qpn              0x048, 24
#define GDA_FT_MLX5_PRM_query_qp_out__qpc             0x0c0, 1856


/* QUERY_HCA_CAP: op_mod is the capability type << 1 | 1 (current) */
#define GDA_FT_MLX5_HCA_CAP_GENERAL         0x0
#define GDA_FT_MLX5_HCA_CAP_ATOMIC          0x3
#define GDA_FT_MLX5_HCA_CAP_OP_MOD(_type)   (((_type) << 1) | 1)
#define GDA_FT_MLX5_PRM_query_hca_cap_in__opcode      0x000, 16
#define GDA_FT_MLX5_PRM_query_hca_cap_in__op_mod      0x030, 16
#define GDA_FT_MLX5_PRM_query_hca_cap_out__status     0x000, 8
#define GDA_FT_MLX5_PRM_query_hca_cap_out__syndrome   0x020, 32
#define GDA_FT_MLX5_PRM_query_hca_cap_out__capability 0x080, 32768

/* General device capabilities (cmd_hca_cap) */
#define GDA_FT_MLX5_PRM_cmd_hca_cap__atomic           0x21e, 1
#define GDA_FT_MLX5_PRM_cmd_hca_cap__max_wqe_sz_sq    0x290, 16

/* Atomic capabilities; the mode's value 1: 8-byte fetching atomics
 * return the old value in host byte order (mlx5_core selects it where the
 * device offers it), 0: big-endian */
#define GDA_FT_MLX5_ATOMIC_REQ_MODE_HOST_ENDIANNESS 0x1
#define GDA_FT_MLX5_PRM_atomic_caps__atomic_req_8B_endianness_mode 0x040, 2


/* ---- accessors ----------------------------------------------------------- */

#define GDA_FT_MLX5_ARG1(_a, _b)  (_a)
#define GDA_FT_MLX5_ARG2(_a, _b)  (_b)
#define GDA_FT_MLX5_ARG1_(_pair)  GDA_FT_MLX5_ARG1(_pair)
#define GDA_FT_MLX5_ARG2_(_pair)  GDA_FT_MLX5_ARG2(_pair)

/* Bit offset and width of a field; constant expressions */
#define GDA_FT_MLX5_BIT_OFF(_typ, _fld) \
    GDA_FT_MLX5_ARG1_(GDA_FT_MLX5_PRM_##_typ##__##_fld)
#define GDA_FT_MLX5_BIT_SZ(_typ, _fld) \
    GDA_FT_MLX5_ARG2_(GDA_FT_MLX5_PRM_##_typ##__##_fld)

#define GDA_FT_MLX5_ST_SZ_BYTES(_typ) (GDA_FT_MLX5_PRM_SIZE_##_typ)
#define GDA_FT_MLX5_ST_SZ_DW(_typ)    (GDA_FT_MLX5_PRM_SIZE_##_typ / 4)

static inline uint32_t gda_ft_mlx5_prm_mask(size_t bits)
{
    return (bits >= 32) ? 0xffffffffu : ((1u << bits) - 1);
}

static inline void gda_ft_mlx5_prm_set(void *buf, size_t off, size_t bits,
                                       uint64_t value)
{
    uint32_t *dw   = (uint32_t*)buf + off / 32;
    unsigned shift = (unsigned)(32 - (off % 32) - bits);
    uint32_t mask  = gda_ft_mlx5_prm_mask(bits) << shift;
    uint32_t host  = be32toh(*dw);

    host = (host & ~mask) | (((uint32_t)value << shift) & mask);
    *dw  = htobe32(host);
}

static inline uint32_t gda_ft_mlx5_prm_get(const void *buf, size_t off,
                                           size_t bits)
{
    const uint32_t *dw = (const uint32_t*)buf + off / 32;
    unsigned shift     = (unsigned)(32 - (off % 32) - bits);

    return (be32toh(*dw) >> shift) & gda_ft_mlx5_prm_mask(bits);
}

static inline void gda_ft_mlx5_prm_set64(void *buf, size_t off, size_t bits,
                                         uint64_t value)
{
    uint64_t be = htobe64(value);

    (void)bits;
    memcpy((uint8_t*)buf + off / 8, &be, sizeof(be));
}

static inline uint64_t gda_ft_mlx5_prm_get64(const void *buf, size_t off,
                                             size_t bits)
{
    uint64_t be;

    (void)bits;
    memcpy(&be, (const uint8_t*)buf + off / 8, sizeof(be));
    return be64toh(be);
}

/* Field _fld of the structure of type _typ at _p (any pointer type) */
#define GDA_FT_MLX5_SET(_typ, _p, _fld, _v) \
    gda_ft_mlx5_prm_set((void*)(_p), GDA_FT_MLX5_PRM_##_typ##__##_fld, (_v))
#define GDA_FT_MLX5_GET(_typ, _p, _fld) \
    gda_ft_mlx5_prm_get((const void*)(_p), GDA_FT_MLX5_PRM_##_typ##__##_fld)
#define GDA_FT_MLX5_SET64(_typ, _p, _fld, _v) \
    gda_ft_mlx5_prm_set64((void*)(_p), GDA_FT_MLX5_PRM_##_typ##__##_fld, \
                          (_v))
#define GDA_FT_MLX5_GET64(_typ, _p, _fld) \
    gda_ft_mlx5_prm_get64((const void*)(_p), \
                          GDA_FT_MLX5_PRM_##_typ##__##_fld)
#define GDA_FT_MLX5_ADDR_OF(_typ, _p, _fld) \
    ((void*)((uint8_t*)(_p) + GDA_FT_MLX5_BIT_OFF(_typ, _fld) / 8))

#endif
