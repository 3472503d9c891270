/*
 * DEVX emulator: the verbs side. Device list, contexts, ports and GIDs,
 * async events, PDs and MRs, umems and UAR pages; the operations table
 * and its registration. The tables they fill and their lookups are
 * gda_ft_mlx5_emu_table.c's, the DEVX commands gda_ft_mlx5_emu_cmd.c's.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "gda_ft_mlx5_emu_table.h"
#include "gda_ft_mlx5_emu_cmd.h"
#include "gda_ft_soft.h"

#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <ucs/sys/compiler_def.h>
#include <ucs/sys/string.h>
#include <ucs/type/class.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static UCS_LIST_HEAD(gda_ft_mlx5_emu_hcas);

static gda_ft_mlx5_emu_ctx_t *gda_ft_mlx5_emu_ctx(struct ibv_context *ctx)
{
    return ucs_derived_of(ctx, gda_ft_mlx5_emu_ctx_t);
}

/* Every soft device of the configuration, as an mlx5 device */
static struct ibv_device **gda_ft_mlx5_emu_get_device_list(int *num_p)
{
    gda_ft_hca_dev_info_t *infos;
    gda_ft_mlx5_emu_device_t *devices;
    struct ibv_device **list;
    unsigned count, i;

    if (gda_ft_soft_provider.query_devices(&infos, &count) != UCS_OK) {
        errno = ENOSYS;
        return NULL;
    }

    /* the list and its devices in one allocation, freed together */
    list = ucs_calloc(1, (count + 1) * sizeof(*list) +
                         count * sizeof(*devices), "gda_ft_mlx5_emu_list");
    if (list == NULL) {
        free(infos);
        errno = ENOMEM;
        return NULL;
    }

    devices = (gda_ft_mlx5_emu_device_t*)(list + count + 1);
    for (i = 0; i < count; ++i) {
        devices[i].soft_info = infos[i];
        ucs_strncpy_zero(devices[i].super.name, infos[i].name,
                         sizeof(devices[i].super.name));
        devices[i].super.node_type      = IBV_NODE_CA;
        devices[i].super.transport_type = IBV_TRANSPORT_IB;
        list[i] = &devices[i].super;
    }
    free(infos);
    *num_p = count;
    return list;
}

static void gda_ft_mlx5_emu_free_device_list(struct ibv_device **list)
{
    ucs_free(list);
}

static const char *gda_ft_mlx5_emu_get_device_name(struct ibv_device *device)
{
    return device->name;
}

static bool gda_ft_mlx5_emu_is_supported(struct ibv_device *device)
{
    return true;
}

/* An emulated device has no sysfs directory: no NUMA node, no PCI
 * function, as a device behind a virtual function may show */
static int gda_ft_mlx5_emu_read_sysfs(const char *dev_name, const char *path,
                                      char *buf, size_t max)
{
    return ENOENT;
}

/* The soft device behind an emulated one, opened at its first context */
static gda_ft_mlx5_emu_hca_t *
gda_ft_mlx5_emu_hca_get(const gda_ft_mlx5_emu_device_t *device)
{
    gda_ft_mlx5_emu_hca_t *hca;
    ucs_status_t status;

    ucs_list_for_each(hca, &gda_ft_mlx5_emu_hcas, list) {
        if (!strcmp(hca->name, device->soft_info.name)) {
            ++hca->refcount;
            return hca;
        }
    }

    hca = ucs_calloc(1, sizeof(*hca), "gda_ft_mlx5_emu_hca");
    if (hca == NULL) {
        errno = ENOMEM;
        return NULL;
    }

    status = gda_ft_mlx5_emu_caps_configured(&hca->caps);
    if (status != UCS_OK) {
        errno = EINVAL;
        goto err_free;
    }

    status = gda_ft_soft_provider.dev_open(&device->soft_info, &hca->soft);
    if (status != UCS_OK) {
        ucs_error("mlx5 emulator: cannot open soft HCA %s behind it: %s",
                  device->soft_info.name, ucs_status_string(status));
        errno = ENODEV;
        goto err_free;
    }

    /* the engine writes 8-byte atomic replies in the order mlx5_core put
     * the device in, which it can only where firmware supports it */
    if ((hca->soft->attr.flags & GDA_FT_HCA_DEV_FLAG_ATOMIC_HOST_ORDER) &&
        !hca->caps.atomic_host_order) {
        ucs_error("mlx5 emulator: %s plays %s, whose 8-byte atomic replies "
                  "are big-endian (atomic_cap ATOMIC_NONE), but its soft "
                  "HCA answers in host order "
                  "(UCX_GDA_FT_SOFT_ATOMIC_HOST_ORDER=y)",
                  device->soft_info.name, hca->caps.name);
        gda_ft_soft_provider.dev_close(hca->soft);
        errno = EINVAL;
        goto err_free;
    }

    ucs_strncpy_zero(hca->name, device->soft_info.name, sizeof(hca->name));
    hca->refcount      = 1;
    ucs_list_head_init(&hca->ctxs);
    hca->next_uar_page = 0x10;
    ucs_list_add_tail(&gda_ft_mlx5_emu_hcas, &hca->list);
    return hca;

err_free:
    ucs_free(hca);
    return NULL;
}

static void gda_ft_mlx5_emu_hca_put(gda_ft_mlx5_emu_hca_t *hca)
{
    if (--hca->refcount > 0) {
        return;
    }
    ucs_list_del(&hca->list);
    gda_ft_soft_provider.dev_close(hca->soft);
    ucs_free(hca);
}

static struct ibv_context *
gda_ft_mlx5_emu_open_device(struct ibv_device *device)
{
    gda_ft_mlx5_emu_ctx_t *ctx;

    ctx = ucs_calloc(1, sizeof(*ctx), "gda_ft_mlx5_emu_ctx");
    if (ctx == NULL) {
        errno = ENOMEM;
        return NULL;
    }

    pthread_mutex_lock(&gda_ft_mlx5_emu_lock);
    ctx->hca = gda_ft_mlx5_emu_hca_get(
            ucs_derived_of(device, gda_ft_mlx5_emu_device_t));
    if (ctx->hca == NULL) {
        pthread_mutex_unlock(&gda_ft_mlx5_emu_lock);
        ucs_free(ctx);
        return NULL;
    }

    /* Contexts of one device share the soft device's event queue: one
     * context reads events, as the provider keeps one per device */
    ctx->super.device           = device;
    ctx->super.async_fd         = gda_ft_soft_provider.event_fd(
                                          ctx->hca->soft);
    ctx->super.cmd_fd           = -1;
    ctx->super.num_comp_vectors = 1;
    ucs_list_head_init(&ctx->umems);
    ucs_list_head_init(&ctx->uars);
    ucs_list_head_init(&ctx->pds);
    ucs_list_head_init(&ctx->objs);
    ucs_list_add_tail(&ctx->hca->ctxs, &ctx->list);
    ++gda_ft_mlx5_emu_live;
    pthread_mutex_unlock(&gda_ft_mlx5_emu_lock);
    return &ctx->super;
}

/* Closing a context releases what it still holds, as the kernel does for
 * a closed file; a leak shows in gda_ft_mlx5_emu_live_objects() */
static int gda_ft_mlx5_emu_close_device(struct ibv_context *ibv_ctx)
{
    gda_ft_mlx5_emu_ctx_t *ctx = gda_ft_mlx5_emu_ctx(ibv_ctx);

    pthread_mutex_lock(&gda_ft_mlx5_emu_lock);
    if (!ucs_list_is_empty(&ctx->objs) || !ucs_list_is_empty(&ctx->pds) ||
        !ucs_list_is_empty(&ctx->umems) || !ucs_list_is_empty(&ctx->uars)) {
        ucs_error("mlx5 emulator: %s closed with objects left",
                  ctx->hca->name);
    }
    ucs_list_del(&ctx->list);
    gda_ft_mlx5_emu_hca_put(ctx->hca);
    --gda_ft_mlx5_emu_live;
    pthread_mutex_unlock(&gda_ft_mlx5_emu_lock);
    ucs_free(ctx);
    return 0;
}

static int gda_ft_mlx5_emu_query_device(struct ibv_context *ibv_ctx,
                                        struct ibv_device_attr *attr)
{
    gda_ft_mlx5_emu_ctx_t *ctx = gda_ft_mlx5_emu_ctx(ibv_ctx);
    const gda_ft_mlx5_emu_caps_t *caps = &ctx->hca->caps;

    /* as mlx5_ib_query_device derives them from HCA_CAP */
    memset(attr, 0, sizeof(*attr));
    ucs_strncpy_zero(attr->fw_ver, caps->fw_ver, sizeof(attr->fw_ver));
    attr->vendor_id      = 0x02c9;   /* Mellanox */
    attr->vendor_part_id = caps->vendor_part_id;
    attr->max_mr_size    = UINT64_MAX;
    attr->max_qp         = 1 << caps->log_max_qp;
    attr->max_qp_wr      = 1 << caps->log_max_qp_sz;
    attr->max_cq         = 1 << caps->log_max_cq;
    attr->max_cqe        = (1 << caps->log_max_cq_sz) - 1;
    attr->max_qp_rd_atom = 1 << caps->log_max_ra_req_qp;
    attr->max_qp_init_rd_atom = 1 << caps->log_max_ra_res_qp;
    attr->max_sge        = (caps->max_wqe_sz_sq - 32) / 16;
    attr->atomic_cap     = (ctx->hca->soft->attr.flags &
                            GDA_FT_HCA_DEV_FLAG_ATOMIC_HOST_ORDER) ?
                           IBV_ATOMIC_HCA : IBV_ATOMIC_NONE;
    attr->phys_port_cnt  = ctx->hca->soft->attr.info.num_ports;
    return 0;
}

static enum ibv_mtu gda_ft_mlx5_emu_ibv_mtu(unsigned bytes)
{
    switch (bytes) {
    case 256:  return IBV_MTU_256;
    case 512:  return IBV_MTU_512;
    case 1024: return IBV_MTU_1024;
    case 2048: return IBV_MTU_2048;
    default:   return IBV_MTU_4096;
    }
}

static int gda_ft_mlx5_emu_query_port(struct ibv_context *ibv_ctx,
                                      uint8_t port_num,
                                      struct ibv_port_attr *attr)
{
    gda_ft_mlx5_emu_ctx_t *ctx = gda_ft_mlx5_emu_ctx(ibv_ctx);
    gda_ft_hca_port_attr_t soft_attr;

    if ((port_num < 1) || (port_num > ctx->hca->soft->attr.info.num_ports) ||
        (gda_ft_soft_provider.port_query(ctx->hca->soft, port_num,
                                         &soft_attr) != UCS_OK)) {
        return EINVAL;
    }

    memset(attr, 0, sizeof(*attr));
    attr->state       = (soft_attr.state == GDA_FT_HCA_PORT_ACTIVE) ?
                        IBV_PORT_ACTIVE : IBV_PORT_DOWN;
    attr->max_mtu     = IBV_MTU_4096;
    attr->active_mtu  = gda_ft_mlx5_emu_ibv_mtu(soft_attr.active_mtu);
    attr->gid_tbl_len = GDA_FT_MLX5_EMU_GID_TBL_LEN;
    attr->link_layer  = IBV_LINK_LAYER_ETHERNET;
    return 0;
}

/* The opened device of that name; NULL when none. With the lock held. */
static gda_ft_mlx5_emu_hca_t *gda_ft_mlx5_emu_hca_find(const char *dev_name)
{
    gda_ft_mlx5_emu_hca_t *hca;

    ucs_list_for_each(hca, &gda_ft_mlx5_emu_hcas, list) {
        if (!strcmp(hca->name, dev_name)) {
            return hca;
        }
    }
    return NULL;
}

ucs_status_t gda_ft_mlx5_emu_gid_move(const char *dev_name, uint8_t port_num,
                                      int moved)
{
    ucs_status_t status = UCS_OK;
    gda_ft_mlx5_emu_hca_t *hca;

    pthread_mutex_lock(&gda_ft_mlx5_emu_lock);
    hca = gda_ft_mlx5_emu_hca_find(dev_name);
    if (hca == NULL) {
        status = UCS_ERR_NO_DEVICE;
    } else if ((port_num < 1) ||
               (port_num > hca->soft->attr.info.num_ports)) {
        status = UCS_ERR_INVALID_PARAM;
    } else {
        hca->gid_moved[port_num - 1] = !!moved;
        ucs_diag("mlx5 emulator %s:%u: IPv4 address at GID index %u now",
                 dev_name, port_num, moved ? 5 : 3);
    }
    pthread_mutex_unlock(&gda_ft_mlx5_emu_lock);
    return status;
}

unsigned gda_ft_mlx5_emu_qps_sending_from(const char *dev_name,
                                          uint8_t port_num,
                                          unsigned gid_index)
{
    gda_ft_mlx5_emu_hca_t *hca;
    gda_ft_mlx5_emu_ctx_t *ctx;
    unsigned count = 0;

    pthread_mutex_lock(&gda_ft_mlx5_emu_lock);
    hca = gda_ft_mlx5_emu_hca_find(dev_name);
    if (hca != NULL) {
        ucs_list_for_each(ctx, &hca->ctxs, list) {
            count += gda_ft_mlx5_emu_ctx_qps_sending_from(ctx, port_num,
                                                          gid_index);
        }
    }
    pthread_mutex_unlock(&gda_ft_mlx5_emu_lock);
    return count;
}

static int gda_ft_mlx5_emu_query_gid(struct ibv_context *ibv_ctx,
                                     uint8_t port_num, uint32_t index,
                                     struct ibv_gid_entry *entry)
{
    return gda_ft_mlx5_emu_gid(gda_ft_mlx5_emu_ctx(ibv_ctx), port_num,
                               index, entry);
}

static int gda_ft_mlx5_emu_query_eqn(struct ibv_context *ibv_ctx,
                                     uint32_t vector, uint32_t *eqn)
{
    if (vector >= (uint32_t)ibv_ctx->num_comp_vectors) {
        return EINVAL;
    }
    *eqn = GDA_FT_MLX5_EMU_EQN;
    return 0;
}

/* The soft HCAs speak IPv4 only: the MAC of a peer is made of its IPv4
 * address (02:00:a.b.c.d), and a GID without one has no neighbour */
static int gda_ft_mlx5_emu_resolve_mac(struct ibv_context *ibv_ctx,
                                       uint8_t port_num, uint8_t gid_index,
                                       const uint8_t *dgid, uint8_t *mac)
{
    uint32_t addr;

    if (!gda_ft_hca_gid_to_ipv4(dgid, &addr)) {
        return EHOSTUNREACH;
    }
    mac[0] = 0x02;
    mac[1] = 0x00;
    memcpy(&mac[2], &addr, 4);
    return 0;
}

static int gda_ft_mlx5_emu_async_fd(struct ibv_context *ctx)
{
    return ctx->async_fd;
}

/* Port changes of the soft device. Errors of DEVX QPs never come here
 * (their CQEs and DEVX event channels carry them): the soft device's QP
 * events are dropped. */
static int gda_ft_mlx5_emu_get_async_event(struct ibv_context *ibv_ctx,
                                           struct ibv_async_event *event)
{
    gda_ft_mlx5_emu_ctx_t *ctx = gda_ft_mlx5_emu_ctx(ibv_ctx);
    gda_ft_hca_event_t soft_event;

    while (gda_ft_soft_provider.get_event(ctx->hca->soft, &soft_event) ==
           UCS_OK) {
        if (soft_event.type == GDA_FT_HCA_EVENT_QP_FATAL) {
            continue;
        }
        memset(event, 0, sizeof(*event));
        event->event_type       = (soft_event.type ==
                                   GDA_FT_HCA_EVENT_PORT_ACTIVE) ?
                                  IBV_EVENT_PORT_ACTIVE : IBV_EVENT_PORT_ERR;
        event->element.port_num = soft_event.port_num;
        __atomic_fetch_add(&gda_ft_mlx5_emu_live, 1, __ATOMIC_RELAXED);
        return 0;
    }
    return EAGAIN;
}

static void gda_ft_mlx5_emu_ack_async_event(struct ibv_async_event *event)
{
    __atomic_fetch_sub(&gda_ft_mlx5_emu_live, 1, __ATOMIC_RELAXED);
}

static struct ibv_pd *gda_ft_mlx5_emu_alloc_pd(struct ibv_context *ibv_ctx)
{
    gda_ft_mlx5_emu_ctx_t *ctx = gda_ft_mlx5_emu_ctx(ibv_ctx);
    gda_ft_mlx5_emu_pd_t *pd;

    pd = ucs_calloc(1, sizeof(*pd), "gda_ft_mlx5_emu_pd");
    if (pd == NULL) {
        errno = ENOMEM;
        return NULL;
    }

    if (gda_ft_soft_provider.pd_alloc(ctx->hca->soft, &pd->soft) != UCS_OK) {
        ucs_free(pd);
        errno = ENOMEM;
        return NULL;
    }

    pd->super.context = ibv_ctx;
    pd->super.handle  = pd->soft->pdn;
    pthread_mutex_lock(&gda_ft_mlx5_emu_lock);
    ucs_list_add_tail(&ctx->pds, &pd->list);
    ++gda_ft_mlx5_emu_live;
    pthread_mutex_unlock(&gda_ft_mlx5_emu_lock);
    return &pd->super;
}

static int gda_ft_mlx5_emu_dealloc_pd(struct ibv_pd *ibv_pd)
{
    gda_ft_mlx5_emu_pd_t *pd = ucs_derived_of(ibv_pd, gda_ft_mlx5_emu_pd_t);

    pthread_mutex_lock(&gda_ft_mlx5_emu_lock);
    if (pd->users > 0) {
        /* the kernel's answer to a PD with MRs or QPs on it */
        pthread_mutex_unlock(&gda_ft_mlx5_emu_lock);
        return EBUSY;
    }
    ucs_list_del(&pd->list);
    --gda_ft_mlx5_emu_live;
    pthread_mutex_unlock(&gda_ft_mlx5_emu_lock);
    gda_ft_soft_provider.pd_free(pd->soft);
    ucs_free(pd);
    return 0;
}

static int gda_ft_mlx5_emu_pd_number(struct ibv_pd *ibv_pd, uint32_t *pdn)
{
    *pdn = ucs_derived_of(ibv_pd, gda_ft_mlx5_emu_pd_t)->soft->pdn;
    return 0;
}

/* Verbs' access flags as the interface's; -1 for a combination the kernel
 * refuses (remote write or atomic access without local write) */
static int gda_ft_mlx5_emu_access(int access)
{
    unsigned hca_access = 0;

    if ((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
        !(access & IBV_ACCESS_LOCAL_WRITE)) {
        return -1;
    }
    if (access & IBV_ACCESS_LOCAL_WRITE) {
        hca_access |= GDA_FT_HCA_ACCESS_LOCAL_WRITE;
    }
    if (access & IBV_ACCESS_REMOTE_WRITE) {
        hca_access |= GDA_FT_HCA_ACCESS_REMOTE_WRITE;
    }
    if (access & IBV_ACCESS_REMOTE_READ) {
        hca_access |= GDA_FT_HCA_ACCESS_REMOTE_READ;
    }
    if (access & IBV_ACCESS_REMOTE_ATOMIC) {
        hca_access |= GDA_FT_HCA_ACCESS_REMOTE_ATOMIC;
    }
    return hca_access;
}

static struct ibv_mr *gda_ft_mlx5_emu_reg_mr(struct ibv_pd *ibv_pd,
                                             void *addr, size_t length,
                                             int access)
{
    gda_ft_mlx5_emu_pd_t *pd  = ucs_derived_of(ibv_pd, gda_ft_mlx5_emu_pd_t);
    gda_ft_hca_mr_attr_t attr = {addr, length, 0, GDA_FT_HCA_MEM_HOST};
    int hca_access            = gda_ft_mlx5_emu_access(access);
    gda_ft_mlx5_emu_mr_t *mr;

    if (hca_access < 0) {
        errno = EINVAL;
        return NULL;
    }

    mr = ucs_calloc(1, sizeof(*mr), "gda_ft_mlx5_emu_mr");
    if (mr == NULL) {
        errno = ENOMEM;
        return NULL;
    }

    attr.access = hca_access;
    if (gda_ft_soft_provider.mr_reg(pd->soft, &attr, &mr->soft) != UCS_OK) {
        ucs_free(mr);
        errno = EFAULT;
        return NULL;
    }

    mr->pd            = pd;
    mr->super.context = ibv_pd->context;
    mr->super.pd      = ibv_pd;
    mr->super.addr    = addr;
    mr->super.length  = length;
    mr->super.lkey    = mr->soft->lkey;
    mr->super.rkey    = mr->soft->rkey;
    pthread_mutex_lock(&gda_ft_mlx5_emu_lock);
    ++pd->users;
    ++gda_ft_mlx5_emu_live;
    pthread_mutex_unlock(&gda_ft_mlx5_emu_lock);
    return &mr->super;
}

/* Emulated devices reach host memory only */
static struct ibv_mr *gda_ft_mlx5_emu_reg_dmabuf_mr(struct ibv_pd *pd,
                                                    uint64_t offset,
                                                    size_t length,
                                                    uint64_t iova, int fd,
                                                    int access)
{
    errno = EOPNOTSUPP;
    return NULL;
}

static int gda_ft_mlx5_emu_dereg_mr(struct ibv_mr *ibv_mr)
{
    gda_ft_mlx5_emu_mr_t *mr = ucs_derived_of(ibv_mr, gda_ft_mlx5_emu_mr_t);

    gda_ft_soft_provider.mr_dereg(mr->soft);
    pthread_mutex_lock(&gda_ft_mlx5_emu_lock);
    --mr->pd->users;
    --gda_ft_mlx5_emu_live;
    pthread_mutex_unlock(&gda_ft_mlx5_emu_lock);
    ucs_free(mr);
    return 0;
}

static int gda_ft_mlx5_emu_cuda_dmabuf_fd(void *addr, size_t length,
                                          int *fd_p)
{
    return ENOSYS;
}

static void gda_ft_mlx5_emu_close_fd(int fd)
{
    close(fd);
}

/* A UAR page as a GPU would see it: without a GPU, the CPU stands in for
 * it and reaches the page where it is */
static int gda_ft_mlx5_emu_cuda_map_io(void *addr, size_t length,
                                       unsigned flags, void **dev_addr_p)
{
    *dev_addr_p = addr;
    return 0;
}

static int gda_ft_mlx5_emu_cuda_unmap_io(void *addr)
{
    return 0;
}

static struct mlx5dv_devx_umem *
gda_ft_mlx5_emu_umem_reg(struct ibv_context *ibv_ctx, void *addr,
                         size_t size, uint32_t access, int dmabuf_fd)
{
    static uint32_t next_umem_id = 0x100;
    gda_ft_mlx5_emu_ctx_t *ctx   = gda_ft_mlx5_emu_ctx(ibv_ctx);
    gda_ft_mlx5_emu_umem_t *umem;

    if (dmabuf_fd >= 0) {
        errno = EOPNOTSUPP;   /* host memory only */
        return NULL;
    }
    if ((size == 0) || (addr == NULL) ||
        (access & ~(uint32_t)(IBV_ACCESS_LOCAL_WRITE |
                              IBV_ACCESS_REMOTE_WRITE |
                              IBV_ACCESS_REMOTE_READ |
                              IBV_ACCESS_REMOTE_ATOMIC))) {
        errno = EINVAL;
        return NULL;
    }

    umem = ucs_calloc(1, sizeof(*umem), "gda_ft_mlx5_emu_umem");
    if (umem == NULL) {
        errno = ENOMEM;
        return NULL;
    }

    umem->ctx  = ctx;
    umem->addr = addr;
    umem->size = size;
    pthread_mutex_lock(&gda_ft_mlx5_emu_lock);
    umem->super.umem_id = next_umem_id++;
    ucs_list_add_tail(&ctx->umems, &umem->list);
    ++gda_ft_mlx5_emu_live;
    pthread_mutex_unlock(&gda_ft_mlx5_emu_lock);
    return &umem->super;
}

static int gda_ft_mlx5_emu_umem_dereg(struct mlx5dv_devx_umem *devx_umem)
{
    gda_ft_mlx5_emu_umem_t *umem = ucs_derived_of(devx_umem,
                                                  gda_ft_mlx5_emu_umem_t);

    pthread_mutex_lock(&gda_ft_mlx5_emu_lock);
    if (umem->users > 0) {
        /* firmware keeps a umem that a CQ or QP still uses */
        pthread_mutex_unlock(&gda_ft_mlx5_emu_lock);
        ucs_error("mlx5 emulator: umem 0x%x deregistered while %u objects "
                  "use it", umem->super.umem_id, umem->users);
        return EBUSY;
    }
    ucs_list_del(&umem->list);
    --gda_ft_mlx5_emu_live;
    pthread_mutex_unlock(&gda_ft_mlx5_emu_lock);
    ucs_free(umem);
    return 0;
}

static struct mlx5dv_devx_uar *
gda_ft_mlx5_emu_alloc_uar(struct ibv_context *ibv_ctx, uint32_t flags)
{
    gda_ft_mlx5_emu_ctx_t *ctx = gda_ft_mlx5_emu_ctx(ibv_ctx);
    gda_ft_mlx5_emu_uar_t *uar;

    if ((flags != MLX5DV_UAR_ALLOC_TYPE_BF) &&
        (flags != MLX5DV_UAR_ALLOC_TYPE_NC)
#if HAVE_DECL_MLX5DV_UAR_ALLOC_TYPE_NC_DEDICATED
        && (flags != MLX5DV_UAR_ALLOC_TYPE_NC_DEDICATED)
#endif
        ) {
        errno = EINVAL;
        return NULL;
    }

    uar = ucs_calloc(1, sizeof(*uar), "gda_ft_mlx5_emu_uar");
    if (uar == NULL) {
        errno = ENOMEM;
        return NULL;
    }

    /* The page the doorbells are written to. The engine does not read
     * it: it polls the doorbell records, which the poster writes first. */
    if (ucs_posix_memalign(&uar->page, sysconf(_SC_PAGESIZE),
                           sysconf(_SC_PAGESIZE), "gda_ft_mlx5_emu_uar") !=
        0) {
        ucs_free(uar);
        errno = ENOMEM;
        return NULL;
    }
    memset(uar->page, 0, sysconf(_SC_PAGESIZE));

    uar->super.base_addr = uar->page;
    uar->super.reg_addr  = (char*)uar->page + GDA_FT_MLX5_EMU_UAR_REG_OFFSET;
    pthread_mutex_lock(&gda_ft_mlx5_emu_lock);
    uar->super.page_id   = ctx->hca->next_uar_page++;
    ucs_list_add_tail(&ctx->uars, &uar->list);
    ++gda_ft_mlx5_emu_live;
    pthread_mutex_unlock(&gda_ft_mlx5_emu_lock);
    return &uar->super;
}

static void gda_ft_mlx5_emu_free_uar(struct mlx5dv_devx_uar *devx_uar)
{
    gda_ft_mlx5_emu_uar_t *uar = ucs_derived_of(devx_uar,
                                                gda_ft_mlx5_emu_uar_t);

    pthread_mutex_lock(&gda_ft_mlx5_emu_lock);
    ucs_list_del(&uar->list);
    --gda_ft_mlx5_emu_live;
    pthread_mutex_unlock(&gda_ft_mlx5_emu_lock);
    ucs_free(uar->page);
    ucs_free(uar);
}

/* The emulated device is the soft HCA's engine, a CPU thread: the
 * transport must yield it the cores while it waits for completions, and
 * judge its paths with a software HCA's deadlines */
static unsigned gda_ft_mlx5_emu_dev_flags(struct ibv_context *ibv_ctx)
{
    return gda_ft_mlx5_emu_ctx(ibv_ctx)->hca->soft->attr.flags &
           GDA_FT_HCA_DEV_FLAG_CPU_ENGINE;
}

/* Selected by UCX_GDA_FT_MLX5_SYS=emu: the soft devices serve the
 * emulated ones only, and are not devices of their own */
static void gda_ft_mlx5_emu_selected(void)
{
    gda_ft_hca_provider_hide(&gda_ft_soft_provider);
}

const gda_ft_mlx5_sys_t gda_ft_mlx5_sys_emu = {
    .name             = "emu",
    .get_device_list  = gda_ft_mlx5_emu_get_device_list,
    .free_device_list = gda_ft_mlx5_emu_free_device_list,
    .get_device_name  = gda_ft_mlx5_emu_get_device_name,
    .is_supported     = gda_ft_mlx5_emu_is_supported,
    .read_sysfs       = gda_ft_mlx5_emu_read_sysfs,
    .open_device      = gda_ft_mlx5_emu_open_device,
    .close_device     = gda_ft_mlx5_emu_close_device,
    .query_device     = gda_ft_mlx5_emu_query_device,
    .query_port       = gda_ft_mlx5_emu_query_port,
    .query_gid        = gda_ft_mlx5_emu_query_gid,
    .query_eqn        = gda_ft_mlx5_emu_query_eqn,
    .resolve_mac      = gda_ft_mlx5_emu_resolve_mac,
    .async_fd         = gda_ft_mlx5_emu_async_fd,
    .get_async_event  = gda_ft_mlx5_emu_get_async_event,
    .ack_async_event  = gda_ft_mlx5_emu_ack_async_event,
    .alloc_pd         = gda_ft_mlx5_emu_alloc_pd,
    .dealloc_pd       = gda_ft_mlx5_emu_dealloc_pd,
    .pd_number        = gda_ft_mlx5_emu_pd_number,
    .reg_mr           = gda_ft_mlx5_emu_reg_mr,
    .reg_dmabuf_mr    = gda_ft_mlx5_emu_reg_dmabuf_mr,
    .dereg_mr         = gda_ft_mlx5_emu_dereg_mr,
    .cuda_dmabuf_fd   = gda_ft_mlx5_emu_cuda_dmabuf_fd,
    .close_fd         = gda_ft_mlx5_emu_close_fd,
    .cuda_map_io      = gda_ft_mlx5_emu_cuda_map_io,
    .cuda_unmap_io    = gda_ft_mlx5_emu_cuda_unmap_io,
    .umem_reg         = gda_ft_mlx5_emu_umem_reg,
    .umem_dereg       = gda_ft_mlx5_emu_umem_dereg,
    .alloc_uar        = gda_ft_mlx5_emu_alloc_uar,
    .free_uar         = gda_ft_mlx5_emu_free_uar,
    .obj_create       = gda_ft_mlx5_emu_obj_create,
    .obj_modify       = gda_ft_mlx5_emu_obj_modify,
    .obj_query        = gda_ft_mlx5_emu_obj_query,
    .obj_destroy      = gda_ft_mlx5_emu_obj_destroy,
    .general_cmd      = gda_ft_mlx5_emu_general_cmd,
    .dev_flags        = gda_ft_mlx5_emu_dev_flags,
    .qp_wake          = gda_ft_mlx5_emu_qp_wake,
    .selected         = gda_ft_mlx5_emu_selected
};

static void UCS_F_CTOR gda_ft_mlx5_emu_register(void)
{
    gda_ft_mlx5_sys_register(&gda_ft_mlx5_sys_emu);
}
