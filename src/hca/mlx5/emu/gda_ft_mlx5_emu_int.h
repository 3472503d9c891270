/*
 * DEVX emulator internals: emulated devices, contexts and the objects a
 * context owns, each backed by an object of a soft device (their tables:
 * gda_ft_mlx5_emu_table.h).
 *
 * Locking: one mutex guards every table of the emulator; the control path
 * holds it for the whole of a call. The datapath never enters the
 * emulator: the soft engine reads the rings and writes the CQs itself.
 */
#ifndef GDA_FT_MLX5_EMU_INT_H_
#define GDA_FT_MLX5_EMU_INT_H_

#include "gda_ft_mlx5_emu.h"
#include "gda_ft_mlx5_emu_check.h"
#include "gda_ft_hca.h"

#include <ucs/datastruct/list.h>
#include <pthread.h>

/* The completion EQ every CQ names (query_eqn of vector 0) */
#define GDA_FT_MLX5_EMU_EQN        7
/* Entries of every port's GID table (gid_tbl_len). A port shows its
 * link-local address and its IPv4 address, each as RoCE v1 then v2, the
 * rest empty; after gda_ft_mlx5_emu_gid_move() an IPv6 address holds the
 * IPv4 address's entries and the IPv4 address the two after them, as when
 * the netdev lost and regained its IPv4 address across a flap and the
 * kernel filled the free entries in the order the addresses came. */
#define GDA_FT_MLX5_EMU_GID_TBL_LEN 8
/* Where a UAR page's doorbell register sits (the first BlueFlame
 * register, as on ConnectX) */
#define GDA_FT_MLX5_EMU_UAR_REG_OFFSET 0x800


/* A device as enumerated: a soft device's name */
typedef struct gda_ft_mlx5_emu_device {
    struct ibv_device     super;
    gda_ft_hca_dev_info_t soft_info;
} gda_ft_mlx5_emu_device_t;


/* A soft device while contexts of its emulated device are open */
typedef struct gda_ft_mlx5_emu_hca {
    ucs_list_link_t   list;
    char              name[GDA_FT_HCA_NAME_MAX];
    gda_ft_hca_dev_t *soft;
    gda_ft_mlx5_emu_caps_t caps;    /* the device it plays */
    unsigned          refcount;     /* contexts */
    ucs_list_link_t   ctxs;
    uint32_t          next_uar_page;
    int               gid_moved[GDA_FT_HCA_MAX_PORTS]; /* per port: the
                                       IPv4 entries moved (GID_TBL_LEN) */
} gda_ft_mlx5_emu_hca_t;


/* An opened device. Object tables are the context's: firmware refuses a
 * command that names another context's object. */
typedef struct gda_ft_mlx5_emu_ctx {
    struct ibv_context     super;
    gda_ft_mlx5_emu_hca_t *hca;
    ucs_list_link_t        list;       /* in the hca's */
    ucs_list_link_t        umems;
    ucs_list_link_t        uars;
    ucs_list_link_t        pds;
    ucs_list_link_t        objs;       /* CQs and QPs */
} gda_ft_mlx5_emu_ctx_t;


typedef struct gda_ft_mlx5_emu_umem {
    struct mlx5dv_devx_umem super;
    ucs_list_link_t         list;
    gda_ft_mlx5_emu_ctx_t  *ctx;
    uint8_t                *addr;
    size_t                  size;
    unsigned                users;     /* CQs and QPs on it */
} gda_ft_mlx5_emu_umem_t;


typedef struct gda_ft_mlx5_emu_uar {
    struct mlx5dv_devx_uar super;
    ucs_list_link_t        list;
    void                  *page;
} gda_ft_mlx5_emu_uar_t;


typedef struct gda_ft_mlx5_emu_pd {
    struct ibv_pd          super;
    ucs_list_link_t        list;
    gda_ft_hca_pd_t       *soft;
    unsigned               users;      /* MRs and QPs */
} gda_ft_mlx5_emu_pd_t;


typedef struct gda_ft_mlx5_emu_mr {
    struct ibv_mr          super;
    gda_ft_mlx5_emu_pd_t  *pd;
    gda_ft_hca_mr_t       *soft;
} gda_ft_mlx5_emu_mr_t;


/* A CQ or QP created by a DEVX command */
typedef struct gda_ft_mlx5_emu_obj {
    ucs_list_link_t         list;
    gda_ft_mlx5_emu_ctx_t  *ctx;
    uint16_t                type;      /* its CREATE_* opcode */
    uint32_t                id;        /* cqn or qpn */
    gda_ft_mlx5_emu_umem_t *umem;      /* its buffer's */
    gda_ft_mlx5_emu_umem_t *dbr_umem;
    unsigned                users;     /* CQ: QPs completing into it */
    /* CQ */
    gda_ft_hca_cq_t        *soft_cq;
    /* QP */
    gda_ft_hca_qp_t        *soft_qp;
    gda_ft_mlx5_emu_pd_t   *pd;
    struct gda_ft_mlx5_emu_obj *scq, *rcq;
    unsigned                state;     /* PRM state, as commands left it */
    int                     sgid_index; /* its INIT2RTR's source GID; -1
                                           before */
} gda_ft_mlx5_emu_obj_t;

#endif
