/*
 * What ConnectX firmware checks in the DEVX commands the mlx5 provider
 * sends, on their PRM bytes alone: the QP state a transition needs, and
 * the fields each command must carry, within the device's capabilities.
 * The emulator (gda_ft_mlx5_emu_cmd.c) and the tests' recording backend
 * both refuse through these checks.
 *
 * A refusal carries the PRM's command status and a syndrome. Firmware's
 * syndromes are its own undocumented numbers: the emulator's are the
 * GDA_FT_MLX5_EMU_SYND_* below, one per rule, so that a test can name the
 * rule that refused a command.
 */
#ifndef GDA_FT_MLX5_EMU_CHECK_H_
#define GDA_FT_MLX5_EMU_CHECK_H_

#include "gda_ft_mlx5_emu_caps.h"
#include "gda_ft_mlx5_ifc.h"

#include <stdint.h>


enum {
    GDA_FT_MLX5_EMU_SYND_QP_STATE = 0x1a2b3c, /* transition from a state
                                                  it does not start in */
    GDA_FT_MLX5_EMU_SYND_BAD_OPCODE = 0xe50001,
    GDA_FT_MLX5_EMU_SYND_INLEN,          /* input shorter than the layout */
    GDA_FT_MLX5_EMU_SYND_OUTLEN,         /* output shorter than the layout */
    GDA_FT_MLX5_EMU_SYND_QPN,            /* qpn is not the object's */
    GDA_FT_MLX5_EMU_SYND_UMEM_MISSING,   /* *_umem_valid is 0 */
    GDA_FT_MLX5_EMU_SYND_UMEM_UNKNOWN,   /* no such umem in the context */
    GDA_FT_MLX5_EMU_SYND_UMEM_RANGE,     /* offset + size past the umem */
    GDA_FT_MLX5_EMU_SYND_ALIGN,          /* buffer or record misaligned */
    GDA_FT_MLX5_EMU_SYND_CQE_SIZE,
    GDA_FT_MLX5_EMU_SYND_LOG_SIZE,       /* a log size past the caps */
    GDA_FT_MLX5_EMU_SYND_UAR_UNKNOWN,
    GDA_FT_MLX5_EMU_SYND_EQN_UNKNOWN,
    GDA_FT_MLX5_EMU_SYND_PD_UNKNOWN,
    GDA_FT_MLX5_EMU_SYND_CQN_UNKNOWN,
    GDA_FT_MLX5_EMU_SYND_ST,             /* a service type not RC */
    GDA_FT_MLX5_EMU_SYND_PM_STATE,       /* pm_state not MIGRATED */
    GDA_FT_MLX5_EMU_SYND_TS_FORMAT,
    GDA_FT_MLX5_EMU_SYND_RQ_TYPE,
    GDA_FT_MLX5_EMU_SYND_PORT,           /* vhca_port_num not a port */
    GDA_FT_MLX5_EMU_SYND_ATOMIC_MODE,    /* past the atomic caps */
    GDA_FT_MLX5_EMU_SYND_MTU,            /* no MTU code, or past the port's */
    GDA_FT_MLX5_EMU_SYND_MSG_MAX,
    GDA_FT_MLX5_EMU_SYND_RGID,           /* no remote GID on a RoCE path */
    GDA_FT_MLX5_EMU_SYND_GID_INDEX,      /* src_addr_index not in the table,
                                            or not a RoCE v2 entry */
    GDA_FT_MLX5_EMU_SYND_GID_NETWORK,    /* the source GID an IPv6 address,
                                            the remote one IPv4-mapped, or
                                            the other way round */
    GDA_FT_MLX5_EMU_SYND_HOP_LIMIT,      /* 0: the packet cannot leave */
    GDA_FT_MLX5_EMU_SYND_DSCP,           /* the DSCP is not the traffic
                                            class's upper six bits */
    GDA_FT_MLX5_EMU_SYND_RMAC,           /* no destination MAC */
    GDA_FT_MLX5_EMU_SYND_RA_MAX,         /* log_rra_max, log_sra_max past
                                            the caps */
    GDA_FT_MLX5_EMU_SYND_IN_USE,         /* destroyed while referenced */
    GDA_FT_MLX5_EMU_SYND_NOT_EMULATED    /* a command the emulator does not
                                            serve */
};


/* Why a command was refused */
typedef struct gda_ft_mlx5_emu_refusal {
    uint8_t     status;    /* GDA_FT_MLX5_CMD_STAT_* */
    uint32_t    syndrome;  /* GDA_FT_MLX5_EMU_SYND_* */
    const char *why;
} gda_ft_mlx5_emu_refusal_t;


/* The PRM state a QP transition command needs the QP in: 1 when the QP's
 * state allows it or the command is no transition (2ERR and 2RST are
 * allowed in any state); 0 with the refusal filled */
int gda_ft_mlx5_emu_check_transition(const void *in, unsigned prm_state,
                                     gda_ft_mlx5_emu_refusal_t *refusal);

/* The state a transition leaves the QP in; -1 for no transition */
int gda_ft_mlx5_emu_transition_to(uint16_t opcode);

/* The fields of CREATE_CQ that need nothing but the capabilities */
int gda_ft_mlx5_emu_check_create_cq(const void *in,
                                    const gda_ft_mlx5_emu_caps_t *caps,
                                    gda_ft_mlx5_emu_refusal_t *refusal);

/* The same of CREATE_QP */
int gda_ft_mlx5_emu_check_create_qp(const void *in,
                                    const gda_ft_mlx5_emu_caps_t *caps,
                                    gda_ft_mlx5_emu_refusal_t *refusal);

/* The same of RST2INIT, INIT2INIT, INIT2RTR and RTR2RTS; num_ports: of the
 * device, 1-based port numbers */
int gda_ft_mlx5_emu_check_modify_qp(const void *in,
                                    const gda_ft_mlx5_emu_caps_t *caps,
                                    unsigned num_ports,
                                    gda_ft_mlx5_emu_refusal_t *refusal);

/* Sets a refusal; returns 0 */
int gda_ft_mlx5_emu_refuse(gda_ft_mlx5_emu_refusal_t *refusal,
                           uint8_t status, uint32_t syndrome,
                           const char *why);

/* A command's output for a refusal: status and syndrome */
void gda_ft_mlx5_emu_refusal_out(const gda_ft_mlx5_emu_refusal_t *refusal,
                                 void *out);

#endif
