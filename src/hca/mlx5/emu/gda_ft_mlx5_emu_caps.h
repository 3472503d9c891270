/*
 * DEVX emulator: the device an emulated HCA plays, its capabilities as
 * QUERY_HCA_CAP and ibv_query_device answer them.
 *
 * A profile is the text `ibv_devinfo -v` prints for one device. The kernel
 * derives every number there from firmware's HCA_CAP fields by fixed
 * formulas (drivers/infiniband/hw/mlx5/main.c, mlx5_ib_query_device), so
 * the fields read back from it: max_qp_wr = 1 << log_max_qp_sz,
 * max_cqe = (1 << log_max_cq_sz) - 1, max_sge from max_wqe_sz_sq (up to
 * 512 bytes), max_qp_rd_atom = 1 << log_max_ra_req_qp, and atomic_cap
 * ATOMIC_HCA only where mlx5_core put the device in the mode that answers
 * 8-byte atomics in host order (otherwise ATOMIC_NONE).
 *
 * UCX_GDA_FT_MLX5_EMU_DEVICE names a built-in profile or a file holding
 * such a text (its first device; contrib/hw-check.sh's report holds one
 * per device).
 */
#ifndef GDA_FT_MLX5_EMU_CAPS_H_
#define GDA_FT_MLX5_EMU_CAPS_H_

#include <ucs/type/status.h>

/* The built-in profile: a ConnectX-6 Dx (vendor part 4125) with firmware
 * 22.36, as its ibv_devinfo -v reads in public reports */
#define GDA_FT_MLX5_EMU_CAPS_DEFAULT "connectx-6dx"


/* The capabilities the emulator answers and checks commands against */
typedef struct gda_ft_mlx5_emu_caps {
    char     name[64];            /* the profile's, for messages */
    char     fw_ver[64];
    unsigned vendor_part_id;
    unsigned log_max_qp;
    unsigned log_max_qp_sz;       /* WQEs (send: 64-byte blocks) */
    unsigned log_max_cq;
    unsigned log_max_cq_sz;
    unsigned log_max_msg;
    unsigned log_max_ra_req_qp;   /* max_qp_rd_atom: what the kernel
                                     bounds max_dest_rd_atomic with */
    unsigned log_max_ra_res_qp;   /* max_qp_init_rd_atom: max_rd_atomic */
    unsigned max_wqe_sz_sq;       /* bytes */
    unsigned max_atomic_mode;     /* qpc.atomic_mode the device takes */
    int      atomic_host_order;   /* 8-byte atomic replies in host order */
} gda_ft_mlx5_emu_caps_t;


/* Reads the profile from an `ibv_devinfo -v` text, its first device;
 * origin names the text in messages. UCS_ERR_INVALID_PARAM, with the
 * reason logged, for a text that lacks a field or holds a number no
 * device reports. */
ucs_status_t gda_ft_mlx5_emu_caps_parse(const char *text, const char *origin,
                                        gda_ft_mlx5_emu_caps_t *caps);

/* The profile UCX_GDA_FT_MLX5_EMU_DEVICE names: a built-in one's name or
 * a file's path; an error logged when neither reads */
ucs_status_t gda_ft_mlx5_emu_caps_configured(gda_ft_mlx5_emu_caps_t *caps);

#endif
