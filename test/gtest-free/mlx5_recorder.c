/*
 * The recording backend of the mlx5 provider's tests (mlx5_recorder.h).
 */
#include "mlx5_recorder.h"

#include "gda_ft_mlx5_ifc.h"
#include "gda_ft_mlx5_emu_check.h"
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

mlx5_rec_t mlx5_rec;

/* A DEVX object of the model */
typedef struct mlx5_rec_obj {
    uint16_t type;      /* creating opcode */
    uint32_t id;        /* cqn or qpn */
    unsigned state;     /* QP: PRM state */
    uint32_t sq_psn;
    uint32_t rq_psn;
    unsigned mtu;
} mlx5_rec_obj_t;

/* a UAR page, page-aligned as the kernel maps one */
static uint32_t mlx5_rec_uar_page[1024] UCS_V_ALIGNED(4096);
/* where cuda_map_io says a GPU sees that page */
static uint32_t mlx5_rec_uar_page_gpu[1024] UCS_V_ALIGNED(4096);

static const char *mlx5_rec_names[] = {
    "get_device_list", "read_sysfs", "open_device", "close_device",
    "query_device", "query_port", "query_gid", "query_eqn", "resolve_mac",
    "get_async_event", "ack_async_event", "alloc_pd", "dealloc_pd",
    "pd_number", "reg_mr", "reg_dmabuf_mr", "dereg_mr", "cuda_dmabuf_fd",
    "close_fd", "cuda_map_io", "cuda_unmap_io", "umem_reg", "umem_dereg",
    "alloc_uar", "free_uar",
    "obj_create", "obj_modify", "obj_query", "obj_destroy", "general_cmd"
};

const char *mlx5_rec_call_name(mlx5_rec_call_t call)
{
    return (call < MLX5_REC_LAST) ? mlx5_rec_names[call] : "?";
}

/* Records a call; returns nonzero when it must fail. Only calls that
 * acquire or ask something can fail: releases always succeed. */
static int mlx5_rec_call(mlx5_rec_call_t call, int can_fail,
                         mlx5_rec_entry_t **entry_p)
{
    static mlx5_rec_entry_t overflow;
    mlx5_rec_entry_t *entry;

    entry = (mlx5_rec.num_calls < MLX5_REC_MAX_CALLS) ?
            &mlx5_rec.calls[mlx5_rec.num_calls++] : &overflow;
    memset(entry, 0, sizeof(*entry));
    entry->call = call;
    if (entry_p != NULL) {
        *entry_p = entry;
    }

    if (can_fail && (mlx5_rec.num_failable++ == mlx5_rec.fail_at)) {
        entry->failed = 1;
        errno         = EIO;
        return 1;
    }
    return 0;
}

static mlx5_rec_dev_t *mlx5_rec_ctx_dev(struct ibv_context *ctx)
{
    return (mlx5_rec_dev_t*)ctx->device;
}

static struct ibv_device **mlx5_rec_get_device_list(int *num)
{
    struct ibv_device **list;
    unsigned i;

    if (mlx5_rec_call(MLX5_REC_GET_DEVICE_LIST, 1, NULL)) {
        return NULL;
    }
    if (mlx5_rec.no_rdma) {
        errno = ENOSYS;
        return NULL;
    }

    list = calloc(mlx5_rec.num_devs + 1, sizeof(*list));
    for (i = 0; i < mlx5_rec.num_devs; ++i) {
        list[i] = (struct ibv_device*)&mlx5_rec.devs[i];
    }
    *num = mlx5_rec.num_devs;
    ++mlx5_rec.live[MLX5_REC_GET_DEVICE_LIST];
    return list;
}

static void mlx5_rec_free_device_list(struct ibv_device **list)
{
    --mlx5_rec.live[MLX5_REC_GET_DEVICE_LIST];
    free(list);
}

static const char *mlx5_rec_get_device_name(struct ibv_device *device)
{
    return ((mlx5_rec_dev_t*)device)->name;
}

static bool mlx5_rec_is_supported(struct ibv_device *device)
{
    return ((mlx5_rec_dev_t*)device)->supported;
}

static int mlx5_rec_read_sysfs(const char *dev_name, const char *path,
                               char *buf, size_t max)
{
    unsigned i;

    if (mlx5_rec_call(MLX5_REC_READ_SYSFS, 1, NULL)) {
        return EIO;
    }
    for (i = 0; i < mlx5_rec.num_devs; ++i) {
        if (strcmp(mlx5_rec.devs[i].name, dev_name)) {
            continue;
        }
        if (!strcmp(path, "device/numa_node")) {
            snprintf(buf, max, "%d", mlx5_rec.devs[i].numa_node);
            return 0;
        }
        if (!strcmp(path, "device") && (mlx5_rec.devs[i].pci_bus_id != NULL)) {
            snprintf(buf, max, "%s", mlx5_rec.devs[i].pci_bus_id);
            return 0;
        }
    }
    return ENOENT;
}

static struct ibv_context *mlx5_rec_open_device(struct ibv_device *device)
{
    mlx5_rec_entry_t *entry;
    struct ibv_context *ctx;
    int fds[2];

    if (mlx5_rec_call(MLX5_REC_OPEN_DEVICE, 1, &entry)) {
        return NULL;
    }
    entry->arg[0] = (mlx5_rec_dev_t*)device - mlx5_rec.devs;

    ctx = calloc(1, sizeof(*ctx));
    if (pipe(fds) != 0) {
        abort();
    }
    close(fds[1]);
    ctx->device   = device;
    ctx->async_fd = fds[0];
    ++mlx5_rec.live[MLX5_REC_OPEN_DEVICE];
    return ctx;
}

static int mlx5_rec_close_device(struct ibv_context *ctx)
{
    mlx5_rec_call(MLX5_REC_CLOSE_DEVICE, 0, NULL);
    close(ctx->async_fd);
    free(ctx);
    --mlx5_rec.live[MLX5_REC_OPEN_DEVICE];
    return 0;
}

static int mlx5_rec_query_device(struct ibv_context *ctx,
                                 struct ibv_device_attr *attr)
{
    if (mlx5_rec_call(MLX5_REC_QUERY_DEVICE, 1, NULL)) {
        return EIO;
    }
    memset(attr, 0, sizeof(*attr));
    attr->phys_port_cnt  = mlx5_rec_ctx_dev(ctx)->num_ports;
    attr->max_qp_wr      = 32768 + 100;
    attr->max_qp_rd_atom = 16;
    return 0;
}

static int mlx5_rec_query_port(struct ibv_context *ctx, uint8_t port_num,
                               struct ibv_port_attr *attr)
{
    mlx5_rec_dev_t *dev = mlx5_rec_ctx_dev(ctx);
    mlx5_rec_entry_t *entry;

    if (mlx5_rec_call(MLX5_REC_QUERY_PORT, 1, &entry)) {
        return EIO;
    }
    entry->arg[0] = port_num;
    memset(attr, 0, sizeof(*attr));
    attr->state       = dev->port_state[port_num - 1];
    attr->link_layer  = dev->link_layer[port_num - 1];
    attr->active_mtu  = dev->active_mtu;
    attr->lid         = dev->lid;
    attr->gid_tbl_len = dev->num_gids;
    return 0;
}

static int mlx5_rec_query_gid(struct ibv_context *ctx, uint8_t port_num,
                              uint32_t index, struct ibv_gid_entry *gid)
{
    mlx5_rec_dev_t *dev = mlx5_rec_ctx_dev(ctx);
    mlx5_rec_entry_t *entry;

    if (mlx5_rec_call(MLX5_REC_QUERY_GID, 1, &entry)) {
        return EIO;
    }
    entry->arg[0] = port_num;
    entry->arg[1] = index;
    if ((index >= dev->num_gids) || dev->gid_missing[index]) {
        return ENODATA;
    }
    *gid          = dev->gids[index];
    gid->port_num = port_num;
    return 0;
}

static int mlx5_rec_query_eqn(struct ibv_context *ctx, uint32_t vector,
                              uint32_t *eqn)
{
    mlx5_rec_entry_t *entry;

    if (mlx5_rec_call(MLX5_REC_QUERY_EQN, 1, &entry)) {
        return EIO;
    }
    entry->arg[0] = vector;
    *eqn          = mlx5_rec.eqn;
    return 0;
}

static int mlx5_rec_resolve_mac(struct ibv_context *ctx, uint8_t port_num,
                                uint8_t gid_index, const uint8_t *dgid,
                                uint8_t *mac)
{
    mlx5_rec_entry_t *entry;

    if (mlx5_rec_call(MLX5_REC_RESOLVE_MAC, 1, &entry)) {
        return EHOSTUNREACH;
    }
    entry->arg[0] = port_num;
    entry->arg[1] = gid_index;
    memcpy(entry->in, dgid, 16);
    entry->inlen = 16;
    memcpy(mac, mlx5_rec.mac, 6);
    return 0;
}

static int mlx5_rec_async_fd(struct ibv_context *ctx)
{
    return ctx->async_fd;
}

static int mlx5_rec_get_async_event(struct ibv_context *ctx,
                                    struct ibv_async_event *event)
{
    if (mlx5_rec_call(MLX5_REC_GET_ASYNC_EVENT, 1, NULL)) {
        return EIO;
    }
    if (mlx5_rec.next_event >= mlx5_rec.num_events) {
        return EAGAIN;
    }
    *event = mlx5_rec.events[mlx5_rec.next_event++];
    ++mlx5_rec.unacked_events;
    return 0;
}

static void mlx5_rec_ack_async_event(struct ibv_async_event *event)
{
    mlx5_rec_call(MLX5_REC_ACK_ASYNC_EVENT, 0, NULL);
    --mlx5_rec.unacked_events;
}

static struct ibv_pd *mlx5_rec_alloc_pd(struct ibv_context *ctx)
{
    struct ibv_pd *pd;

    if (mlx5_rec_call(MLX5_REC_ALLOC_PD, 1, NULL)) {
        return NULL;
    }
    pd          = calloc(1, sizeof(*pd));
    pd->context = ctx;
    ++mlx5_rec.live[MLX5_REC_ALLOC_PD];
    return pd;
}

static int mlx5_rec_dealloc_pd(struct ibv_pd *pd)
{
    mlx5_rec_call(MLX5_REC_DEALLOC_PD, 0, NULL);
    free(pd);
    --mlx5_rec.live[MLX5_REC_ALLOC_PD];
    return 0;
}

static int mlx5_rec_pd_number(struct ibv_pd *pd, uint32_t *pdn)
{
    if (mlx5_rec_call(MLX5_REC_PD_NUMBER, 1, NULL)) {
        return EIO;
    }
    *pdn = mlx5_rec.pdn;
    return 0;
}

static struct ibv_mr *mlx5_rec_new_mr(struct ibv_pd *pd, void *addr,
                                      size_t length)
{
    static uint32_t next_key = 0x1000;
    struct ibv_mr *mr        = calloc(1, sizeof(*mr));

    mr->pd     = pd;
    mr->addr   = addr;
    mr->length = length;
    mr->lkey   = next_key++;
    mr->rkey   = next_key++;
    ++mlx5_rec.live[MLX5_REC_REG_MR];
    return mr;
}

static struct ibv_mr *mlx5_rec_reg_mr(struct ibv_pd *pd, void *addr,
                                      size_t length, int access)
{
    mlx5_rec_entry_t *entry;

    if (mlx5_rec_call(MLX5_REC_REG_MR, 1, &entry)) {
        return NULL;
    }
    entry->arg[0] = (uintptr_t)addr;
    entry->arg[1] = length;
    entry->arg[2] = access;
    return mlx5_rec_new_mr(pd, addr, length);
}

static struct ibv_mr *mlx5_rec_reg_dmabuf_mr(struct ibv_pd *pd,
                                             uint64_t offset, size_t length,
                                             uint64_t iova, int fd,
                                             int access)
{
    mlx5_rec_entry_t *entry;

    if (mlx5_rec_call(MLX5_REC_REG_DMABUF_MR, 1, &entry)) {
        return NULL;
    }
    entry->arg[0] = offset;
    entry->arg[1] = length;
    entry->arg[2] = iova;
    entry->arg[3] = fd;
    entry->arg[4] = access;
    return mlx5_rec_new_mr(pd, (void*)(uintptr_t)iova, length);
}

static int mlx5_rec_dereg_mr(struct ibv_mr *mr)
{
    mlx5_rec_call(MLX5_REC_DEREG_MR, 0, NULL);
    free(mr);
    --mlx5_rec.live[MLX5_REC_REG_MR];
    return 0;
}

static int mlx5_rec_cuda_dmabuf_fd(void *addr, size_t length, int *fd_p)
{
    mlx5_rec_entry_t *entry;

    if (mlx5_rec_call(MLX5_REC_CUDA_DMABUF_FD, 1, &entry)) {
        return ENOSYS;
    }
    entry->arg[0] = (uintptr_t)addr;
    entry->arg[1] = length;
    if (!mlx5_rec.have_cuda_dmabuf) {
        return ENOSYS;
    }
    *fd_p = open("/dev/null", O_RDONLY);
    mlx5_rec.dmabuf_fd  = *fd_p;
    mlx5_rec.dmabuf_len = length;
    ++mlx5_rec.live[MLX5_REC_CUDA_DMABUF_FD];
    return 0;
}

static void mlx5_rec_close_fd(int fd)
{
    mlx5_rec_entry_t *entry;

    mlx5_rec_call(MLX5_REC_CLOSE_FD, 0, &entry);
    entry->arg[0] = fd;
    close(fd);
    --mlx5_rec.live[MLX5_REC_CUDA_DMABUF_FD];
}

static int mlx5_rec_cuda_map_io(void *addr, size_t length, unsigned flags,
                                void **dev_addr_p)
{
    mlx5_rec_entry_t *entry;

    if (mlx5_rec_call(MLX5_REC_CUDA_MAP_IO, 1, &entry)) {
        return EINVAL;
    }
    entry->arg[0] = (uintptr_t)addr;
    entry->arg[1] = length;
    entry->arg[2] = flags;
    if (mlx5_rec.cuda_io_error != 0) {
        return mlx5_rec.cuda_io_error;
    }
    *dev_addr_p = (addr == (void*)mlx5_rec_uar_page) ?
                  (void*)mlx5_rec_uar_page_gpu : NULL;
    ++mlx5_rec.live[MLX5_REC_CUDA_MAP_IO];
    return 0;
}

static int mlx5_rec_cuda_unmap_io(void *addr)
{
    mlx5_rec_entry_t *entry;

    mlx5_rec_call(MLX5_REC_CUDA_UNMAP_IO, 0, &entry);
    entry->arg[0] = (uintptr_t)addr;
    --mlx5_rec.live[MLX5_REC_CUDA_MAP_IO];
    return 0;
}

static struct mlx5dv_devx_umem *
mlx5_rec_umem_reg(struct ibv_context *ctx, void *addr, size_t size,
                  uint32_t access, int dmabuf_fd)
{
    struct mlx5dv_devx_umem *umem;
    mlx5_rec_entry_t *entry;

    if (mlx5_rec_call(MLX5_REC_UMEM_REG, 1, &entry)) {
        return NULL;
    }
    entry->arg[0] = (uintptr_t)addr;
    entry->arg[1] = size;
    entry->arg[2] = access;
    entry->arg[3] = (uint64_t)(int64_t)dmabuf_fd;
    /* A dma-buf umem's address is its offset into the dma-buf (the
     * mlx5dv_devx_umem_reg_ex contract): the range must lie inside it */
    if ((dmabuf_fd >= 0) &&
        ((dmabuf_fd != mlx5_rec.dmabuf_fd) ||
         ((uintptr_t)addr + size > mlx5_rec.dmabuf_len))) {
        entry->failed = 1;
        errno         = EINVAL;
        return NULL;
    }
    umem          = calloc(1, sizeof(*umem));
    umem->umem_id = mlx5_rec.next_umem_id++;
    ++mlx5_rec.live[MLX5_REC_UMEM_REG];
    return umem;
}

static int mlx5_rec_umem_dereg(struct mlx5dv_devx_umem *umem)
{
    mlx5_rec_entry_t *entry;

    mlx5_rec_call(MLX5_REC_UMEM_DEREG, 0, &entry);
    entry->arg[0] = umem->umem_id;
    free(umem);
    --mlx5_rec.live[MLX5_REC_UMEM_REG];
    return 0;
}

static struct mlx5dv_devx_uar *mlx5_rec_alloc_uar(struct ibv_context *ctx,
                                                  uint32_t flags)
{
    struct mlx5dv_devx_uar *uar;
    mlx5_rec_entry_t *entry;

    if (mlx5_rec_call(MLX5_REC_ALLOC_UAR, 1, &entry)) {
        return NULL;
    }
    entry->arg[0] = flags;
    if (mlx5_rec.uar_nc_fails && (flags != MLX5DV_UAR_ALLOC_TYPE_BF)) {
        errno = EOPNOTSUPP;
        return NULL;
    }
    uar           = calloc(1, sizeof(*uar));
    uar->page_id  = mlx5_rec.uar_page_id;
    uar->base_addr = mlx5_rec_uar_page;
    uar->reg_addr = (char*)mlx5_rec_uar_page + 0x800;
    ++mlx5_rec.live[MLX5_REC_ALLOC_UAR];
    return uar;
}

static void mlx5_rec_free_uar(struct mlx5dv_devx_uar *uar)
{
    mlx5_rec_call(MLX5_REC_FREE_UAR, 0, NULL);
    free(uar);
    --mlx5_rec.live[MLX5_REC_ALLOC_UAR];
}

static uint16_t mlx5_rec_opcode(const void *in)
{
    return GDA_FT_MLX5_GET(modify_qp_in, in, opcode);
}

static void mlx5_rec_copy_in(mlx5_rec_entry_t *entry, const void *in,
                             size_t inlen)
{
    if (inlen > sizeof(entry->in)) {
        fprintf(stderr, "mlx5 recorder: command input of %zu bytes\n", inlen);
        abort();
    }
    memcpy(entry->in, in, inlen);
    entry->inlen = inlen;
}

/* A failed command answers a status and a syndrome, as firmware does */
static void mlx5_rec_cmd_fail(void *out)
{
    GDA_FT_MLX5_SET(modify_qp_out, out, status, 0x3);
    GDA_FT_MLX5_SET(modify_qp_out, out, syndrome, 0x5a5a5a);
}

static struct mlx5dv_devx_obj *
mlx5_rec_obj_create(struct ibv_context *ctx, const void *in, size_t inlen,
                    void *out, size_t outlen)
{
    mlx5_rec_entry_t *entry;
    mlx5_rec_obj_t *obj;

    if (mlx5_rec_call(MLX5_REC_OBJ_CREATE, 1, &entry)) {
        mlx5_rec_copy_in(entry, in, inlen);
        mlx5_rec_cmd_fail(out);
        return NULL;
    }
    mlx5_rec_copy_in(entry, in, inlen);

    obj       = calloc(1, sizeof(*obj));
    obj->type = mlx5_rec_opcode(in);
    if (obj->type == GDA_FT_MLX5_CMD_OP_CREATE_CQ) {
        obj->id = mlx5_rec.next_cqn++;
        GDA_FT_MLX5_SET(create_cq_out, out, cqn, obj->id);
    } else if (obj->type == GDA_FT_MLX5_CMD_OP_CREATE_QP) {
        obj->id    = mlx5_rec.next_qpn++;
        obj->state = GDA_FT_MLX5_QPC_STATE_RST;
        GDA_FT_MLX5_SET(create_qp_out, out, qpn, obj->id);
    }
    ++mlx5_rec.live[MLX5_REC_OBJ_CREATE];
    return (struct mlx5dv_devx_obj*)obj;
}

static int mlx5_rec_obj_modify(struct mlx5dv_devx_obj *devx_obj,
                               const void *in, size_t inlen, void *out,
                               size_t outlen)
{
    mlx5_rec_obj_t *obj = (mlx5_rec_obj_t*)devx_obj;
    const void *qpc     = GDA_FT_MLX5_ADDR_OF(init2rtr_qp_in, in, qpc);
    gda_ft_mlx5_emu_refusal_t refusal;
    mlx5_rec_entry_t *entry;

    if (mlx5_rec_call(MLX5_REC_OBJ_MODIFY, 1, &entry)) {
        mlx5_rec_copy_in(entry, in, inlen);
        mlx5_rec_cmd_fail(out);
        return EIO;
    }
    mlx5_rec_copy_in(entry, in, inlen);

    /* the QP state a transition needs, as the emulator checks it */
    if (!gda_ft_mlx5_emu_check_transition(in, obj->state, &refusal)) {
        ++mlx5_rec.refused;
        gda_ft_mlx5_emu_refusal_out(&refusal, out);
        return EREMOTEIO;
    }

    switch (mlx5_rec_opcode(in)) {
    case GDA_FT_MLX5_CMD_OP_RST2INIT_QP:
    case GDA_FT_MLX5_CMD_OP_INIT2INIT_QP:
        obj->state = GDA_FT_MLX5_QPC_STATE_INIT;
        break;
    case GDA_FT_MLX5_CMD_OP_INIT2RTR_QP:
        obj->state  = GDA_FT_MLX5_QPC_STATE_RTR;
        obj->rq_psn = GDA_FT_MLX5_GET(qpc, qpc, next_rcv_psn);
        obj->mtu    = GDA_FT_MLX5_GET(qpc, qpc, mtu);
        break;
    case GDA_FT_MLX5_CMD_OP_RTR2RTS_QP:
        obj->state  = GDA_FT_MLX5_QPC_STATE_RTS;
        obj->sq_psn = GDA_FT_MLX5_GET(qpc, qpc, next_send_psn);
        break;
    case GDA_FT_MLX5_CMD_OP_2ERR_QP:
        obj->state = GDA_FT_MLX5_QPC_STATE_ERR;
        break;
    case GDA_FT_MLX5_CMD_OP_2RST_QP:
        obj->state = GDA_FT_MLX5_QPC_STATE_RST;
        break;
    default:
        return EINVAL;
    }
    return 0;
}

static int mlx5_rec_obj_query(struct mlx5dv_devx_obj *devx_obj,
                              const void *in, size_t inlen, void *out,
                              size_t outlen)
{
    mlx5_rec_obj_t *obj = (mlx5_rec_obj_t*)devx_obj;
    void *qpc           = GDA_FT_MLX5_ADDR_OF(query_qp_out, out, qpc);
    mlx5_rec_entry_t *entry;

    if (mlx5_rec_call(MLX5_REC_OBJ_QUERY, 1, &entry)) {
        mlx5_rec_copy_in(entry, in, inlen);
        mlx5_rec_cmd_fail(out);
        return EIO;
    }
    mlx5_rec_copy_in(entry, in, inlen);
    if (outlen < GDA_FT_MLX5_ST_SZ_BYTES(query_qp_out)) {
        return EINVAL;
    }
    GDA_FT_MLX5_SET(qpc, qpc, state, obj->state);
    GDA_FT_MLX5_SET(qpc, qpc, next_send_psn, obj->sq_psn);
    GDA_FT_MLX5_SET(qpc, qpc, next_rcv_psn, obj->rq_psn);
    GDA_FT_MLX5_SET(qpc, qpc, mtu, obj->mtu);
    return 0;
}

static int mlx5_rec_obj_destroy(struct mlx5dv_devx_obj *obj)
{
    mlx5_rec_entry_t *entry;

    mlx5_rec_call(MLX5_REC_OBJ_DESTROY, 0, &entry);
    entry->arg[0] = ((mlx5_rec_obj_t*)obj)->id;
    free(obj);
    --mlx5_rec.live[MLX5_REC_OBJ_CREATE];
    return 0;
}

/* QUERY_HCA_CAP, current values, of the general and atomic types */
static int mlx5_rec_general_cmd(struct ibv_context *ctx, const void *in,
                                size_t inlen, void *out, size_t outlen)
{
    void *cap = GDA_FT_MLX5_ADDR_OF(query_hca_cap_out, out, capability);
    mlx5_rec_entry_t *entry;
    unsigned op_mod;

    if (mlx5_rec_call(MLX5_REC_GENERAL_CMD, 1, &entry)) {
        mlx5_rec_copy_in(entry, in, inlen);
        mlx5_rec_cmd_fail(out);
        return EIO;
    }
    mlx5_rec_copy_in(entry, in, inlen);
    op_mod = GDA_FT_MLX5_GET(query_hca_cap_in, in, op_mod);
    if ((mlx5_rec_opcode(in) != GDA_FT_MLX5_CMD_OP_QUERY_HCA_CAP) ||
        (outlen < GDA_FT_MLX5_ST_SZ_BYTES(query_hca_cap_out))) {
        return EINVAL;
    }
    if (op_mod ==
        GDA_FT_MLX5_HCA_CAP_OP_MOD(GDA_FT_MLX5_HCA_CAP_GENERAL)) {
        GDA_FT_MLX5_SET(cmd_hca_cap, cap, max_wqe_sz_sq,
                        mlx5_rec.max_wqe_sz_sq);
        GDA_FT_MLX5_SET(cmd_hca_cap, cap, atomic, mlx5_rec.atomic);
    } else if (op_mod ==
               GDA_FT_MLX5_HCA_CAP_OP_MOD(GDA_FT_MLX5_HCA_CAP_ATOMIC)) {
        if (!mlx5_rec.atomic) {
            GDA_FT_MLX5_SET(query_hca_cap_out, out, status, 0x3);
            return EIO;
        }
        GDA_FT_MLX5_SET(atomic_caps, cap, atomic_req_8B_endianness_mode,
                        mlx5_rec.atomic_host_order ?
                        GDA_FT_MLX5_ATOMIC_REQ_MODE_HOST_ENDIANNESS : 0);
    } else {
        return EINVAL;
    }
    return 0;
}

const gda_ft_mlx5_sys_t mlx5_rec_sys = {
    .name             = "recorder",
    .get_device_list  = mlx5_rec_get_device_list,
    .free_device_list = mlx5_rec_free_device_list,
    .get_device_name  = mlx5_rec_get_device_name,
    .is_supported     = mlx5_rec_is_supported,
    .read_sysfs       = mlx5_rec_read_sysfs,
    .open_device      = mlx5_rec_open_device,
    .close_device     = mlx5_rec_close_device,
    .query_device     = mlx5_rec_query_device,
    .query_port       = mlx5_rec_query_port,
    .query_gid        = mlx5_rec_query_gid,
    .query_eqn        = mlx5_rec_query_eqn,
    .resolve_mac      = mlx5_rec_resolve_mac,
    .async_fd         = mlx5_rec_async_fd,
    .get_async_event  = mlx5_rec_get_async_event,
    .ack_async_event  = mlx5_rec_ack_async_event,
    .alloc_pd         = mlx5_rec_alloc_pd,
    .dealloc_pd       = mlx5_rec_dealloc_pd,
    .pd_number        = mlx5_rec_pd_number,
    .reg_mr           = mlx5_rec_reg_mr,
    .reg_dmabuf_mr    = mlx5_rec_reg_dmabuf_mr,
    .dereg_mr         = mlx5_rec_dereg_mr,
    .cuda_dmabuf_fd   = mlx5_rec_cuda_dmabuf_fd,
    .close_fd         = mlx5_rec_close_fd,
    .cuda_map_io      = mlx5_rec_cuda_map_io,
    .cuda_unmap_io    = mlx5_rec_cuda_unmap_io,
    .umem_reg         = mlx5_rec_umem_reg,
    .umem_dereg       = mlx5_rec_umem_dereg,
    .alloc_uar        = mlx5_rec_alloc_uar,
    .free_uar         = mlx5_rec_free_uar,
    .obj_create       = mlx5_rec_obj_create,
    .obj_modify       = mlx5_rec_obj_modify,
    .obj_query        = mlx5_rec_obj_query,
    .obj_destroy      = mlx5_rec_obj_destroy,
    .general_cmd      = mlx5_rec_general_cmd
};

static void mlx5_rec_gid(struct ibv_gid_entry *entry, unsigned index,
                         enum ibv_gid_type type, const uint8_t *raw)
{
    memcpy(entry->gid.raw, raw, 16);
    entry->gid_index = index;
    entry->gid_type  = type;
}

void mlx5_rec_init(void)
{
    static const uint8_t link_local[16] = {0xfe, 0x80, 0, 0, 0, 0, 0, 0,
                                           0x02, 0x11, 0x22, 0xff, 0xfe,
                                           0x33, 0x44, 0x55};
    static const uint8_t v4[16]         = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                                           0xff, 0xff, 10, 1, 2, 3};
    static const uint8_t mac[6]         = {0x02, 0x11, 0x22, 0x33, 0x44,
                                           0x55};
    mlx5_rec_dev_t *dev = &mlx5_rec.devs[0];

    memset(&mlx5_rec, 0, sizeof(mlx5_rec));
    mlx5_rec.num_devs     = 1;
    mlx5_rec.pdn          = 0x1234;
    mlx5_rec.eqn          = 0x17;
    mlx5_rec.uar_page_id  = 0xabc;
    mlx5_rec.next_umem_id = 0x100;
    mlx5_rec.next_cqn     = 0x400;
    mlx5_rec.next_qpn     = 0x2a0;
    mlx5_rec.fail_at      = -1;
    mlx5_rec.dmabuf_fd    = -1;
    mlx5_rec.max_wqe_sz_sq = 1024;
    mlx5_rec.atomic        = 1;
    memcpy(mlx5_rec.mac, mac, sizeof(mac));

    /* GIDs as a RoCE port shows them: link-local v1 and v2, then the
     * IPv4 address as v1 and v2 */
    dev->name          = "mlx5_0";
    dev->supported     = 1;
    dev->num_ports     = 2;
    dev->numa_node     = 1;
    dev->pci_bus_id    = "0000:17:00.0";
    dev->port_state[0] = IBV_PORT_ACTIVE;
    dev->port_state[1] = IBV_PORT_DOWN;
    dev->link_layer[0] = IBV_LINK_LAYER_ETHERNET;
    dev->link_layer[1] = IBV_LINK_LAYER_ETHERNET;
    dev->active_mtu    = IBV_MTU_4096;
    dev->num_gids      = 4;
    mlx5_rec_gid(&dev->gids[0], 0, IBV_GID_TYPE_ROCE_V1, link_local);
    mlx5_rec_gid(&dev->gids[1], 1, IBV_GID_TYPE_ROCE_V2, link_local);
    mlx5_rec_gid(&dev->gids[2], 2, IBV_GID_TYPE_ROCE_V1, v4);
    mlx5_rec_gid(&dev->gids[3], 3, IBV_GID_TYPE_ROCE_V2, v4);

    gda_ft_mlx5_sys_set(&mlx5_rec_sys);
}

unsigned mlx5_rec_count(mlx5_rec_call_t call)
{
    unsigned i, count = 0;

    for (i = 0; i < mlx5_rec.num_calls; ++i) {
        count += (mlx5_rec.calls[i].call == call);
    }
    return count;
}

const mlx5_rec_entry_t *mlx5_rec_find(mlx5_rec_call_t call, unsigned nth)
{
    unsigned i;

    for (i = 0; i < mlx5_rec.num_calls; ++i) {
        if ((mlx5_rec.calls[i].call == call) && (nth-- == 0)) {
            return &mlx5_rec.calls[i];
        }
    }
    return NULL;
}

const mlx5_rec_entry_t *mlx5_rec_find_cmd(uint16_t opcode, unsigned nth)
{
    const mlx5_rec_entry_t *entry;
    unsigned i;

    for (i = 0; i < mlx5_rec.num_calls; ++i) {
        entry = &mlx5_rec.calls[i];
        if (((entry->call == MLX5_REC_OBJ_CREATE) ||
             (entry->call == MLX5_REC_OBJ_MODIFY) ||
             (entry->call == MLX5_REC_OBJ_QUERY) ||
             (entry->call == MLX5_REC_GENERAL_CMD)) && !entry->failed &&
            (mlx5_rec_opcode(entry->in) == opcode) && (nth-- == 0)) {
            return entry;
        }
    }
    return NULL;
}

int mlx5_rec_leaks(void)
{
    int i, leaks = mlx5_rec.unacked_events;

    for (i = 0; i < MLX5_REC_LAST; ++i) {
        if (mlx5_rec.live[i] != 0) {
            printf("mlx5 recorder: %d left of %s\n", mlx5_rec.live[i],
                   mlx5_rec_call_name(i));
            leaks += abs(mlx5_rec.live[i]);
        }
    }
    return leaks;
}

unsigned mlx5_rec_count_cmd(uint16_t opcode)
{
    unsigned n = 0;

    while (mlx5_rec_find_cmd(opcode, n) != NULL) {
        ++n;
    }
    return n;
}
