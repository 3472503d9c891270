/*
 * A recording gda_ft_mlx5_sys_t for the mlx5 provider's tests: every call
 * is recorded (DEVX command inputs copied whole), answers come from a
 * small model of one or more ConnectX devices, and any call can be made
 * to fail. Live objects are counted, so that a test sees a leak.
 */
#ifndef MLX5_RECORDER_H_
#define MLX5_RECORDER_H_

#include "gda_ft_mlx5.h"

#define MLX5_REC_MAX_CALLS   512
#define MLX5_REC_MAX_IN_DW   256
#define MLX5_REC_MAX_DEVS    4
#define MLX5_REC_MAX_GIDS    8
#define MLX5_REC_MAX_EVENTS  8

typedef enum {
    MLX5_REC_GET_DEVICE_LIST,
    MLX5_REC_READ_SYSFS,
    MLX5_REC_OPEN_DEVICE,
    MLX5_REC_CLOSE_DEVICE,
    MLX5_REC_QUERY_DEVICE,
    MLX5_REC_QUERY_PORT,
    MLX5_REC_QUERY_GID,
    MLX5_REC_QUERY_EQN,
    MLX5_REC_RESOLVE_MAC,
    MLX5_REC_GET_ASYNC_EVENT,
    MLX5_REC_ACK_ASYNC_EVENT,
    MLX5_REC_ALLOC_PD,
    MLX5_REC_DEALLOC_PD,
    MLX5_REC_PD_NUMBER,
    MLX5_REC_REG_MR,
    MLX5_REC_REG_DMABUF_MR,
    MLX5_REC_DEREG_MR,
    MLX5_REC_CUDA_DMABUF_FD,
    MLX5_REC_CLOSE_FD,
    MLX5_REC_CUDA_MAP_IO,
    MLX5_REC_CUDA_UNMAP_IO,
    MLX5_REC_UMEM_REG,
    MLX5_REC_UMEM_DEREG,
    MLX5_REC_ALLOC_UAR,
    MLX5_REC_FREE_UAR,
    MLX5_REC_OBJ_CREATE,
    MLX5_REC_OBJ_MODIFY,
    MLX5_REC_OBJ_QUERY,
    MLX5_REC_OBJ_DESTROY,
    MLX5_REC_GENERAL_CMD,
    MLX5_REC_LAST
} mlx5_rec_call_t;

typedef struct mlx5_rec_entry {
    mlx5_rec_call_t call;
    uint64_t        arg[5];   /* the call's scalar arguments, in order */
    uint32_t        in[MLX5_REC_MAX_IN_DW]; /* DEVX: the command input */
    size_t          inlen;
    int             failed;   /* made to fail */
} mlx5_rec_entry_t;

typedef struct mlx5_rec_dev {
    const char          *name;
    int                  supported;     /* mlx5dv_is_supported */
    unsigned             num_ports;
    int                  numa_node;
    const char          *pci_bus_id;
    enum ibv_port_state  port_state[2];
    uint8_t              link_layer[2];
    enum ibv_mtu         active_mtu;
    uint16_t             lid;
    unsigned             num_gids;      /* gid_tbl_len */
    struct ibv_gid_entry gids[MLX5_REC_MAX_GIDS];
    int                  gid_missing[MLX5_REC_MAX_GIDS]; /* ENODATA */
} mlx5_rec_dev_t;

typedef struct mlx5_rec {
    /* the model: devices and canned answers */
    mlx5_rec_dev_t          devs[MLX5_REC_MAX_DEVS];
    unsigned                num_devs;
    int                     no_rdma;        /* device list: NULL, ENOSYS */
    uint32_t                pdn;
    uint32_t                eqn;
    uint32_t                uar_page_id;
    uint32_t                next_umem_id;
    uint32_t                next_cqn;
    uint32_t                next_qpn;
    uint8_t                 mac[6];
    int                     have_cuda_dmabuf;
    int                     cuda_io_error;  /* cuda_map_io's answer: 0,
                                               ENOSYS, EINVAL, ENODEV */
    int                     uar_nc_fails;   /* non-cached UARs refused: BF
                                               next */
    /* QUERY_HCA_CAP's answers: the largest send WQE, whether the device
     * has atomics, and the 8-byte atomic reply order mlx5_core chose */
    unsigned                max_wqe_sz_sq;
    int                     atomic;
    int                     atomic_host_order;
    struct ibv_async_event  events[MLX5_REC_MAX_EVENTS];
    unsigned                num_events;
    unsigned                next_event;

    /* fault injection: call number fail_at (0-based, counting all calls)
     * fails; -1: none */
    int                     fail_at;
    int                     num_failable;  /* calls that could fail */

    /* what happened */
    mlx5_rec_entry_t        calls[MLX5_REC_MAX_CALLS];
    unsigned                num_calls;
    int                     live[MLX5_REC_LAST]; /* objects not released,
                                                   by creating call */
    int                     unacked_events;
    int                     dmabuf_fd;      /* the last one exported */
    size_t                  dmabuf_len;     /* and its length */
    unsigned                refused;        /* QP transitions refused in
                                               the QP's state, as firmware
                                               refuses them */
} mlx5_rec_t;

extern mlx5_rec_t              mlx5_rec;
extern const gda_ft_mlx5_sys_t mlx5_rec_sys;

/* A model of one dual-port RoCE ConnectX ("mlx5_0"), no faults, and the
 * recording backend installed in the provider */
void mlx5_rec_init(void);

/* The nth (0-based) recorded call of a kind; NULL if there are fewer */
const mlx5_rec_entry_t *mlx5_rec_find(mlx5_rec_call_t call, unsigned nth);
unsigned mlx5_rec_count(mlx5_rec_call_t call);

/* The nth DEVX command (create, modify, query or general) with this
 * opcode */
const mlx5_rec_entry_t *mlx5_rec_find_cmd(uint16_t opcode, unsigned nth);
unsigned mlx5_rec_count_cmd(uint16_t opcode);

/* Objects, memory and events still held: 0 when all was released */
int mlx5_rec_leaks(void);

const char *mlx5_rec_call_name(mlx5_rec_call_t call);

#endif
