/*
 * mlx5 provider: internal types. The PRM layouts of its DEVX commands are
 * its own (gda_ft_mlx5_ifc.h), so that it builds wherever rdma-core's
 * mlx5dv.h with DEVX is installed.
 */
#ifndef GDA_FT_MLX5_INT_H_
#define GDA_FT_MLX5_INT_H_

#include "gda_ft_mlx5.h"
#include "gda_ft_mlx5_ifc.h"

#include <gda_ft_ucs_compat.h>
#include <ucs/type/status.h>
#include <ucs/config/types.h>

/* The largest send WQE the datapath builds (16 basic blocks), and what
 * the control, remote address and inline headers take of it */
#define GDA_FT_MLX5_MAX_WQE_BYTES      (16 * 64)
#define GDA_FT_MLX5_INLINE_OVERHEAD    36

/* The PRM's page unit: log_page_size counts from 4 KiB */
#define GDA_FT_MLX5_ADAPTER_PAGE_SHIFT 12

/* rq_type of a QP without a receive queue */
#define GDA_FT_MLX5_RQ_TYPE_ZERO_LEN   3

/* GID table entries looked at when choosing one */
#define GDA_FT_MLX5_MAX_GIDS           256


typedef struct gda_ft_mlx5_config {
    unsigned long gid_index; /* UCS_ULUNITS_AUTO: chosen per port */
    unsigned      sl;        /* service level; eth priority on RoCE */
    char         *cmd_log;   /* file of every DEVX command, "": none */
    char         *sys;       /* operations table: "verbs", or the name a
                                registered one has ("emu") */
} gda_ft_mlx5_config_t;


typedef struct gda_ft_mlx5_port {
    int      link_layer;  /* IBV_LINK_LAYER_* */
    int      gid_index;   /* -1: none usable */
    uint8_t  gid[GDA_FT_HCA_GID_LEN];
} gda_ft_mlx5_port_t;


typedef struct gda_ft_mlx5_dev {
    gda_ft_hca_dev_t        super;
    struct ibv_context     *ctx;
    struct mlx5dv_devx_uar *uar;    /* doorbells of all QPs, CQ arming */
    void                   *uar_gpu; /* its page as the GPU sees it, once
                                        a QP with GPU-visible rings needs
                                        it; NULL before */
    uint32_t                eqn;    /* completion EQ of every CQ */
    gda_ft_mlx5_port_t      ports[GDA_FT_HCA_MAX_PORTS];
    unsigned                fatal_ports; /* port events still to report
                                            after a device fatal event */
} gda_ft_mlx5_dev_t;


typedef struct gda_ft_mlx5_pd {
    gda_ft_hca_pd_t  super;
    struct ibv_pd   *pd;
} gda_ft_mlx5_pd_t;


typedef struct gda_ft_mlx5_mr {
    gda_ft_hca_mr_t  super;
    struct ibv_mr   *mr;
    int              dmabuf;   /* registered through a dma-buf */
} gda_ft_mlx5_mr_t;


/* One region the device reads or writes: a umem and where the region
 * starts inside it */
typedef struct gda_ft_mlx5_umem {
    struct mlx5dv_devx_umem *umem;
    uint64_t                 offset;
} gda_ft_mlx5_umem_t;


typedef struct gda_ft_mlx5_cq {
    gda_ft_hca_cq_t          super;
    gda_ft_mlx5_umem_t       buf;
    gda_ft_mlx5_umem_t       dbr;
    volatile uint32_t       *dbrec;  /* [0]: consumer index, [1]: arm */
    struct mlx5dv_devx_obj  *obj;
} gda_ft_mlx5_cq_t;


typedef struct gda_ft_mlx5_qp {
    gda_ft_hca_qp_t          super;
    gda_ft_mlx5_umem_t       wq;
    gda_ft_mlx5_umem_t       dbr;
    struct mlx5dv_devx_obj  *obj;
} gda_ft_mlx5_qp_t;


extern const gda_ft_mlx5_sys_t *gda_ft_mlx5_sys;
extern gda_ft_mlx5_config_t     gda_ft_mlx5_config;

ucs_status_t gda_ft_mlx5_config_get(void);

/* Registers [addr, addr + length) as DEVX user memory: the pages around
 * it, with the region's offset inside them. CUDA memory goes through a
 * dma-buf where the call exists. */
ucs_status_t gda_ft_mlx5_umem_reg(gda_ft_mlx5_dev_t *dev, void *addr,
                                  size_t length, gda_ft_hca_mem_type_t type,
                                  gda_ft_mlx5_umem_t *umem);
void gda_ft_mlx5_umem_dereg(gda_ft_mlx5_umem_t *umem);
uint32_t gda_ft_mlx5_umem_id(const gda_ft_mlx5_umem_t *umem);

/* Reads the port's GID table again and keeps the entry to send from: a
 * link flap can move the netdev's address to another index */
ucs_status_t gda_ft_mlx5_port_refresh_gid(gda_ft_mlx5_dev_t *dev,
                                          uint8_t port_num);

/* After a DEVX command (named by the opcode of its input): appends it to
 * UCX_GDA_FT_MLX5_CMD_LOG, and logs the firmware's status and syndrome
 * when it failed (ok 0, errno set by the call). Returns ok. */
int gda_ft_mlx5_cmd_done(const char *dev_name, const void *in, size_t inlen,
                         const void *out, int ok);

/* Provider operations, one file per concern */
/* The doorbell register as a GPU reaches it: the device's UAR page is
 * mapped for the GPU on first use (and until the device closes) */
ucs_status_t gda_ft_mlx5_dev_gpu_doorbell(gda_ft_mlx5_dev_t *dev,
                                          volatile uint64_t **db_p);

ucs_status_t gda_ft_mlx5_pd_alloc(gda_ft_hca_dev_t *dev,
                                  gda_ft_hca_pd_t **pd_p);
void gda_ft_mlx5_pd_free(gda_ft_hca_pd_t *pd);
ucs_status_t gda_ft_mlx5_mr_reg(gda_ft_hca_pd_t *pd,
                                const gda_ft_hca_mr_attr_t *attr,
                                gda_ft_hca_mr_t **mr_p);
void gda_ft_mlx5_mr_dereg(gda_ft_hca_mr_t *mr);
ucs_status_t gda_ft_mlx5_cq_create(gda_ft_hca_dev_t *dev,
                                   const gda_ft_hca_cq_attr_t *attr,
                                   gda_ft_hca_cq_t **cq_p);
void gda_ft_mlx5_cq_destroy(gda_ft_hca_cq_t *cq);
ucs_status_t gda_ft_mlx5_qp_create(gda_ft_hca_pd_t *pd,
                                   const gda_ft_hca_qp_init_attr_t *attr,
                                   gda_ft_hca_qp_t **qp_p);
ucs_status_t gda_ft_mlx5_qp_modify(gda_ft_hca_qp_t *qp,
                                   gda_ft_hca_qp_state_t state,
                                   const gda_ft_hca_qp_attr_t *attr);
ucs_status_t gda_ft_mlx5_qp_query(gda_ft_hca_qp_t *qp,
                                  gda_ft_hca_qp_query_attr_t *attr);
void gda_ft_mlx5_qp_destroy(gda_ft_hca_qp_t *qp);

#endif
