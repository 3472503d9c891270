/*
 * gda_ft "mlx5" provider: ConnectX HCAs through rdma-core's DEVX API.
 *
 * The provider speaks to libibverbs and mlx5dv only through the small
 * operations table below. gda_ft_mlx5_sys.c fills it with the real calls;
 * the unit tests put a recording table in its place, so that the whole
 * control path (enumeration, queues, every QP state change, every error
 * ladder) runs without a NIC. Other tables register themselves by name
 * (the DEVX emulator, src/hca/mlx5/emu) and UCX_GDA_FT_MLX5_SYS selects
 * one.
 */
#ifndef GDA_FT_MLX5_H_
#define GDA_FT_MLX5_H_

#include "gda_ft_hca.h"

#include <infiniband/verbs.h>
#include <infiniband/mlx5dv.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Everything the provider asks of rdma-core (and of libcuda). Calls that
 * return an int return 0 or an errno value; calls that return a pointer
 * return NULL with errno set. */
typedef struct gda_ft_mlx5_sys {
    const char *name;

    /* Enumeration: device list, names, mlx5 test, sysfs attributes */
    struct ibv_device **(*get_device_list)(int *num_devices);
    void (*free_device_list)(struct ibv_device **list);
    const char *(*get_device_name)(struct ibv_device *device);
    bool (*is_supported)(struct ibv_device *device);
    /* Reads /sys/class/infiniband/<dev>/<path> into buf (NUL-terminated,
     * trailing newline removed) */
    int (*read_sysfs)(const char *dev_name, const char *path, char *buf,
                      size_t max);

    /* Device: opened for DEVX */
    struct ibv_context *(*open_device)(struct ibv_device *device);
    int (*close_device)(struct ibv_context *ctx);
    int (*query_device)(struct ibv_context *ctx,
                        struct ibv_device_attr *attr);
    int (*query_port)(struct ibv_context *ctx, uint8_t port_num,
                      struct ibv_port_attr *attr);
    int (*query_gid)(struct ibv_context *ctx, uint8_t port_num,
                     uint32_t index, struct ibv_gid_entry *entry);
    int (*query_eqn)(struct ibv_context *ctx, uint32_t vector,
                     uint32_t *eqn);
    /* Destination MAC of a RoCE peer, as the kernel resolves it for an
     * address handle (neighbour table) */
    int (*resolve_mac)(struct ibv_context *ctx, uint8_t port_num,
                       uint8_t gid_index, const uint8_t *dgid,
                       uint8_t *mac);

    /* Async events; the event fd is made non-blocking by the provider */
    int (*async_fd)(struct ibv_context *ctx);
    int (*get_async_event)(struct ibv_context *ctx,
                           struct ibv_async_event *event);
    void (*ack_async_event)(struct ibv_async_event *event);

    /* Protection domain and memory regions */
    struct ibv_pd *(*alloc_pd)(struct ibv_context *ctx);
    int (*dealloc_pd)(struct ibv_pd *pd);
    int (*pd_number)(struct ibv_pd *pd, uint32_t *pdn);
    struct ibv_mr *(*reg_mr)(struct ibv_pd *pd, void *addr, size_t length,
                             int access);
    struct ibv_mr *(*reg_dmabuf_mr)(struct ibv_pd *pd, uint64_t offset,
                                    size_t length, uint64_t iova, int fd,
                                    int access);
    int (*dereg_mr)(struct ibv_mr *mr);
    /* dma-buf file of a CUDA range (cuMemGetHandleForAddressRange);
     * ENOSYS without libcuda or without the call */
    int (*cuda_dmabuf_fd)(void *addr, size_t length, int *fd_p);
    void (*close_fd)(int fd);
    /* A page of device registers (the UAR) made reachable from the GPU:
     * cuMemHostRegister(flags: GDA_FT_CU_MEMHOSTREGISTER_*), then its
     * device address; ENOSYS without libcuda, or the CUDA error as
     * EINVAL/ENODEV. Needs a current CUDA context (the caller's). */
    int (*cuda_map_io)(void *addr, size_t length, unsigned flags,
                       void **dev_addr_p);
    int (*cuda_unmap_io)(void *addr);

    /* DEVX: user memory, UAR, objects */
    /* addr: the memory's address, or with a dmabuf_fd (>= 0) the offset
     * into that dma-buf where the umem starts */
    struct mlx5dv_devx_umem *(*umem_reg)(struct ibv_context *ctx,
                                         void *addr, size_t size,
                                         uint32_t access, int dmabuf_fd);
    int (*umem_dereg)(struct mlx5dv_devx_umem *umem);
    struct mlx5dv_devx_uar *(*alloc_uar)(struct ibv_context *ctx,
                                         uint32_t flags);
    void (*free_uar)(struct mlx5dv_devx_uar *uar);
    struct mlx5dv_devx_obj *(*obj_create)(struct ibv_context *ctx,
                                          const void *in, size_t inlen,
                                          void *out, size_t outlen);
    int (*obj_modify)(struct mlx5dv_devx_obj *obj, const void *in,
                      size_t inlen, void *out, size_t outlen);
    int (*obj_query)(struct mlx5dv_devx_obj *obj, const void *in,
                     size_t inlen, void *out, size_t outlen);
    int (*obj_destroy)(struct mlx5dv_devx_obj *obj);
    /* A command on no object (QUERY_HCA_CAP) */
    int (*general_cmd)(struct ibv_context *ctx, const void *in,
                       size_t inlen, void *out, size_t outlen);

    /* What no command of firmware tells about the machine behind the
     * device: GDA_FT_HCA_DEV_FLAG_CPU_ENGINE where a CPU thread plays the
     * HCA and shares the cores with the program (the emulator). NULL: a
     * NIC, no such flag. */
    unsigned (*dev_flags)(struct ibv_context *ctx);
    /* Where a CPU thread plays the HCA, the eventfd that wakes it after a
     * doorbell and the word saying it sleeps (gda_ft_hca_qp_t's wake_fd
     * and wake_armed) for a QP object. NULL: a NIC, which sees the
     * doorbell register itself. */
    void (*qp_wake)(struct mlx5dv_devx_obj *qp, int *wake_fd_p,
                    const int32_t **wake_armed_p);

    /* Called once when UCX_GDA_FT_MLX5_SYS selects this table; NULL:
     * nothing to do */
    void (*selected)(void);
} gda_ft_mlx5_sys_t;


/* cuMemHostRegister's flags (the CUDA driver API's values) */
#define GDA_FT_CU_MEMHOSTREGISTER_PORTABLE  0x1
#define GDA_FT_CU_MEMHOSTREGISTER_DEVICEMAP 0x2
#define GDA_FT_CU_MEMHOSTREGISTER_IOMEMORY  0x4

extern const gda_ft_hca_provider_t gda_ft_mlx5_provider;
extern const gda_ft_mlx5_sys_t     gda_ft_mlx5_sys_verbs;

/* Replaces the operations table (tests); returns the previous one */
const gda_ft_mlx5_sys_t *gda_ft_mlx5_sys_set(const gda_ft_mlx5_sys_t *sys);

/* Makes a table selectable by its name with UCX_GDA_FT_MLX5_SYS (from a
 * constructor) */
void gda_ft_mlx5_sys_register(const gda_ft_mlx5_sys_t *sys);


/* Mappings, exported for the tests */

/* An IB path MTU in bytes as the PRM's mtu code (1..5); 0 if invalid */
unsigned gda_ft_mlx5_mtu_code(unsigned bytes);
unsigned gda_ft_mlx5_mtu_bytes(unsigned code);

/* The PRM's QP state codes as the interface's, and back */
int gda_ft_mlx5_qp_state_from_prm(unsigned prm_state,
                                  gda_ft_hca_qp_state_t *state_p);

/* What an error CQE's syndrome means for the operation that got it */
ucs_status_t gda_ft_mlx5_syndrome_status(uint8_t syndrome);

/* Whether a syndrome says the path (port, link, peer) failed, rather than
 * the operation; WR_FLUSH says neither (see gda_ft_mlx5_qp.c) */
int gda_ft_mlx5_syndrome_is_path_error(uint8_t syndrome);

/* An async verbs event as the interface's event; 0 when it has none */
int gda_ft_mlx5_event_map(const struct ibv_async_event *ibv_event,
                          gda_ft_hca_event_t *event);

/* RoCE v2 UDP source port of the flow between two QPs: spread over the
 * dynamic port range, the same for the same pair */
uint16_t gda_ft_mlx5_udp_sport(uint32_t local_qpn, uint32_t remote_qpn);

/* The GID table entry to use on a port: a RoCE v2 IPv4-mapped entry first,
 * then any RoCE v2 entry, then (InfiniBand) index 0; -1 when none */
int gda_ft_mlx5_gid_choose(const struct ibv_gid_entry *entries,
                           unsigned count, int link_layer);

#endif
