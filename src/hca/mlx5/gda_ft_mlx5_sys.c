/*
 * mlx5 provider: the real backend of gda_ft_mlx5_sys_t, libibverbs and
 * mlx5dv; libcuda is loaded when CUDA memory is first registered.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "gda_ft_mlx5.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* From the CUDA driver API (cuda.h is not needed for four calls) */
#define GDA_FT_CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD 0x1
#define GDA_FT_CUDA_ERROR_NOT_SUPPORTED            801

typedef int (*gda_ft_cu_get_handle_func_t)(void *handle,
                                           unsigned long long dptr,
                                           size_t size, int type,
                                           unsigned long long flags);
typedef int (*gda_ft_cu_host_register_func_t)(void *p, size_t size,
                                              unsigned flags);
typedef int (*gda_ft_cu_host_dev_ptr_func_t)(unsigned long long *dptr,
                                             void *p, unsigned flags);
typedef int (*gda_ft_cu_host_unregister_func_t)(void *p);

static struct {
    gda_ft_cu_get_handle_func_t      get_handle;
    gda_ft_cu_host_register_func_t   host_register;
    gda_ft_cu_host_dev_ptr_func_t    host_dev_ptr;
    gda_ft_cu_host_unregister_func_t host_unregister;
} gda_ft_mlx5_cu;
static pthread_once_t gda_ft_mlx5_cuda_once = PTHREAD_ONCE_INIT;

static int gda_ft_mlx5_verbs_errno(int ret)
{
    /* verbs calls return an errno value, or -1 with errno set */
    return (ret > 0) ? ret : ((ret < 0) ? (errno ? errno : EIO) : 0);
}

static int gda_ft_mlx5_verbs_read_sysfs(const char *dev_name,
                                        const char *path, char *buf,
                                        size_t max)
{
    char file[PATH_MAX], target[PATH_MAX];
    const char *base;
    ssize_t len;
    FILE *f;

    snprintf(file, sizeof(file), "/sys/class/infiniband/%s/%s", dev_name,
             path);
    len = readlink(file, target, sizeof(target) - 1);
    if (len > 0) {
        /* a link (the PCI device): its last component */
        target[len] = '\0';
        base        = strrchr(target, '/');
        snprintf(buf, max, "%s", (base != NULL) ? base + 1 : target);
        return 0;
    }

    f = fopen(file, "r");
    if (f == NULL) {
        return errno;
    }
    if (fgets(buf, max, f) == NULL) {
        fclose(f);
        return EIO;
    }
    fclose(f);
    buf[strcspn(buf, "\n")] = '\0';
    return 0;
}

static struct ibv_device **gda_ft_mlx5_verbs_get_device_list(int *num)
{
    return ibv_get_device_list(num);
}

static struct ibv_context *gda_ft_mlx5_verbs_open(struct ibv_device *device)
{
    struct mlx5dv_context_attr attr = {
        .flags = MLX5DV_CONTEXT_FLAGS_DEVX
    };

    return mlx5dv_open_device(device, &attr);
}

static int gda_ft_mlx5_verbs_query_device(struct ibv_context *ctx,
                                          struct ibv_device_attr *attr)
{
    return gda_ft_mlx5_verbs_errno(ibv_query_device(ctx, attr));
}

static int gda_ft_mlx5_verbs_query_port(struct ibv_context *ctx,
                                        uint8_t port_num,
                                        struct ibv_port_attr *attr)
{
    return gda_ft_mlx5_verbs_errno(ibv_query_port(ctx, port_num, attr));
}

static int gda_ft_mlx5_verbs_query_gid(struct ibv_context *ctx,
                                       uint8_t port_num, uint32_t index,
                                       struct ibv_gid_entry *entry)
{
    return gda_ft_mlx5_verbs_errno(ibv_query_gid_ex(ctx, port_num, index,
                                                    entry, 0));
}

static int gda_ft_mlx5_verbs_query_eqn(struct ibv_context *ctx,
                                       uint32_t vector, uint32_t *eqn)
{
    return gda_ft_mlx5_verbs_errno(mlx5dv_devx_query_eqn(ctx, vector, eqn));
}

/* The kernel resolves the peer's MAC when it makes an address handle:
 * make one, read the MAC from its mlx5 address vector, drop it */
static int gda_ft_mlx5_verbs_resolve_mac(struct ibv_context *ctx,
                                         uint8_t port_num, uint8_t gid_index,
                                         const uint8_t *dgid, uint8_t *mac)
{
    struct ibv_ah_attr ah_attr = {0};
    struct mlx5dv_obj obj      = {0};
    struct mlx5dv_ah dv_ah;
    struct ibv_pd *pd;
    struct ibv_ah *ah;
    int ret;

    pd = ibv_alloc_pd(ctx);
    if (pd == NULL) {
        return errno ? errno : ENOMEM;
    }

    ah_attr.port_num       = port_num;
    ah_attr.is_global      = 1;
    ah_attr.grh.sgid_index = gid_index;
    ah_attr.grh.hop_limit  = 1;
    memcpy(ah_attr.grh.dgid.raw, dgid, sizeof(ah_attr.grh.dgid.raw));
    ah = ibv_create_ah(pd, &ah_attr);
    if (ah == NULL) {
        ret = errno ? errno : EHOSTUNREACH;
        goto out_pd;
    }

    obj.ah.in  = ah;
    obj.ah.out = &dv_ah;
    ret        = mlx5dv_init_obj(&obj, MLX5DV_OBJ_AH);
    if (ret == 0) {
        memcpy(mac, dv_ah.av->rmac, 6);
    }
    ibv_destroy_ah(ah);
out_pd:
    ibv_dealloc_pd(pd);
    return gda_ft_mlx5_verbs_errno(ret);
}

static int gda_ft_mlx5_verbs_async_fd(struct ibv_context *ctx)
{
    return ctx->async_fd;
}

static int gda_ft_mlx5_verbs_get_async_event(struct ibv_context *ctx,
                                             struct ibv_async_event *event)
{
    return gda_ft_mlx5_verbs_errno(ibv_get_async_event(ctx, event));
}

static int gda_ft_mlx5_verbs_pd_number(struct ibv_pd *pd, uint32_t *pdn)
{
    struct mlx5dv_obj obj = {0};
    struct mlx5dv_pd dv_pd;
    int ret;

    obj.pd.in  = pd;
    obj.pd.out = &dv_pd;
    ret        = mlx5dv_init_obj(&obj, MLX5DV_OBJ_PD);
    if (ret == 0) {
        *pdn = dv_pd.pdn;
    }
    return gda_ft_mlx5_verbs_errno(ret);
}

static struct ibv_mr *gda_ft_mlx5_verbs_reg_mr(struct ibv_pd *pd,
                                               void *addr, size_t length,
                                               int access)
{
    return ibv_reg_mr(pd, addr, length, access);
}

static void gda_ft_mlx5_cuda_load(void)
{
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);

    if (lib == NULL) {
        return;
    }
    gda_ft_mlx5_cu.get_handle      = (gda_ft_cu_get_handle_func_t)
            dlsym(lib, "cuMemGetHandleForAddressRange");
    gda_ft_mlx5_cu.host_register   = (gda_ft_cu_host_register_func_t)
            dlsym(lib, "cuMemHostRegister_v2");
    gda_ft_mlx5_cu.host_dev_ptr    = (gda_ft_cu_host_dev_ptr_func_t)
            dlsym(lib, "cuMemHostGetDevicePointer_v2");
    gda_ft_mlx5_cu.host_unregister = (gda_ft_cu_host_unregister_func_t)
            dlsym(lib, "cuMemHostUnregister");
}

static int gda_ft_mlx5_verbs_cuda_dmabuf_fd(void *addr, size_t length,
                                            int *fd_p)
{
    int fd = -1;

    pthread_once(&gda_ft_mlx5_cuda_once, gda_ft_mlx5_cuda_load);
    if (gda_ft_mlx5_cu.get_handle == NULL) {
        return ENOSYS;   /* no libcuda, or one older than CUDA 11.7 */
    }

    if (gda_ft_mlx5_cu.get_handle(&fd, (uintptr_t)addr, length,
                                  GDA_FT_CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD,
                                  0) != 0) {
        return ENOSYS;   /* no dma-buf support in the driver or kernel */
    }

    *fd_p = fd;
    return 0;
}

static void gda_ft_mlx5_verbs_close_fd(int fd)
{
    close(fd);
}

/* The CUDA driver's errors as errno values: ENODEV where the driver or
 * the platform cannot map device registers (no IOMEMORY support), EINVAL
 * for the rest (no current context among them) */
static int gda_ft_mlx5_cu_errno(int cu_result)
{
    return (cu_result == GDA_FT_CUDA_ERROR_NOT_SUPPORTED) ? ENODEV : EINVAL;
}

static int gda_ft_mlx5_verbs_cuda_map_io(void *addr, size_t length,
                                         unsigned flags, void **dev_addr_p)
{
    unsigned long long dptr;
    int ret;

    pthread_once(&gda_ft_mlx5_cuda_once, gda_ft_mlx5_cuda_load);
    if ((gda_ft_mlx5_cu.host_register == NULL) ||
        (gda_ft_mlx5_cu.host_dev_ptr == NULL) ||
        (gda_ft_mlx5_cu.host_unregister == NULL)) {
        return ENOSYS;
    }

    ret = gda_ft_mlx5_cu.host_register(addr, length, flags);
    if (ret != 0) {
        return gda_ft_mlx5_cu_errno(ret);
    }

    ret = gda_ft_mlx5_cu.host_dev_ptr(&dptr, addr, 0);
    if (ret != 0) {
        gda_ft_mlx5_cu.host_unregister(addr);
        return gda_ft_mlx5_cu_errno(ret);
    }

    *dev_addr_p = (void*)(uintptr_t)dptr;
    return 0;
}

static int gda_ft_mlx5_verbs_cuda_unmap_io(void *addr)
{
    pthread_once(&gda_ft_mlx5_cuda_once, gda_ft_mlx5_cuda_load);
    if (gda_ft_mlx5_cu.host_unregister == NULL) {
        return ENOSYS;
    }
    return (gda_ft_mlx5_cu.host_unregister(addr) == 0) ? 0 : EINVAL;
}

static struct mlx5dv_devx_umem *
gda_ft_mlx5_verbs_umem_reg(struct ibv_context *ctx, void *addr, size_t size,
                           uint32_t access, int dmabuf_fd)
{
#if HAVE_DECL_MLX5DV_DEVX_UMEM_REG_EX
    struct mlx5dv_devx_umem_in in = {0};

    if (dmabuf_fd >= 0) {
        in.addr        = addr;
        in.size        = size;
        in.access      = access;
        in.pgsz_bitmap = UINT64_MAX & ~(sysconf(_SC_PAGESIZE) - 1);
        in.comp_mask   = MLX5DV_UMEM_MASK_DMABUF;
        in.dmabuf_fd   = dmabuf_fd;
        return mlx5dv_devx_umem_reg_ex(ctx, &in);
    }
#else
    if (dmabuf_fd >= 0) {
        errno = EOPNOTSUPP;  /* rdma-core without dma-buf umems */
        return NULL;
    }
#endif
    return mlx5dv_devx_umem_reg(ctx, addr, size, access);
}

static int gda_ft_mlx5_verbs_obj_modify(struct mlx5dv_devx_obj *obj,
                                        const void *in, size_t inlen,
                                        void *out, size_t outlen)
{
    return gda_ft_mlx5_verbs_errno(mlx5dv_devx_obj_modify(obj, in, inlen,
                                                          out, outlen));
}

static int gda_ft_mlx5_verbs_obj_query(struct mlx5dv_devx_obj *obj,
                                       const void *in, size_t inlen,
                                       void *out, size_t outlen)
{
    return gda_ft_mlx5_verbs_errno(mlx5dv_devx_obj_query(obj, in, inlen, out,
                                                         outlen));
}

static int gda_ft_mlx5_verbs_obj_destroy(struct mlx5dv_devx_obj *obj)
{
    return gda_ft_mlx5_verbs_errno(mlx5dv_devx_obj_destroy(obj));
}

static int gda_ft_mlx5_verbs_general_cmd(struct ibv_context *ctx,
                                         const void *in, size_t inlen,
                                         void *out, size_t outlen)
{
    return gda_ft_mlx5_verbs_errno(mlx5dv_devx_general_cmd(ctx, in, inlen,
                                                           out, outlen));
}

static int gda_ft_mlx5_verbs_dealloc_pd(struct ibv_pd *pd)
{
    return gda_ft_mlx5_verbs_errno(ibv_dealloc_pd(pd));
}

static int gda_ft_mlx5_verbs_dereg_mr(struct ibv_mr *mr)
{
    return gda_ft_mlx5_verbs_errno(ibv_dereg_mr(mr));
}

static int gda_ft_mlx5_verbs_umem_dereg(struct mlx5dv_devx_umem *umem)
{
    return gda_ft_mlx5_verbs_errno(mlx5dv_devx_umem_dereg(umem));
}

static int gda_ft_mlx5_verbs_close_device(struct ibv_context *ctx)
{
    return gda_ft_mlx5_verbs_errno(ibv_close_device(ctx));
}

const gda_ft_mlx5_sys_t gda_ft_mlx5_sys_verbs = {
    .name             = "verbs",
    .get_device_list  = gda_ft_mlx5_verbs_get_device_list,
    .free_device_list = ibv_free_device_list,
    .get_device_name  = ibv_get_device_name,
    .is_supported     = mlx5dv_is_supported,
    .read_sysfs       = gda_ft_mlx5_verbs_read_sysfs,
    .open_device      = gda_ft_mlx5_verbs_open,
    .close_device     = gda_ft_mlx5_verbs_close_device,
    .query_device     = gda_ft_mlx5_verbs_query_device,
    .query_port       = gda_ft_mlx5_verbs_query_port,
    .query_gid        = gda_ft_mlx5_verbs_query_gid,
    .query_eqn        = gda_ft_mlx5_verbs_query_eqn,
    .resolve_mac      = gda_ft_mlx5_verbs_resolve_mac,
    .async_fd         = gda_ft_mlx5_verbs_async_fd,
    .get_async_event  = gda_ft_mlx5_verbs_get_async_event,
    .ack_async_event  = ibv_ack_async_event,
    .alloc_pd         = ibv_alloc_pd,
    .dealloc_pd       = gda_ft_mlx5_verbs_dealloc_pd,
    .pd_number        = gda_ft_mlx5_verbs_pd_number,
    .reg_mr           = gda_ft_mlx5_verbs_reg_mr,
    .reg_dmabuf_mr    = ibv_reg_dmabuf_mr,
    .dereg_mr         = gda_ft_mlx5_verbs_dereg_mr,
    .cuda_dmabuf_fd   = gda_ft_mlx5_verbs_cuda_dmabuf_fd,
    .close_fd         = gda_ft_mlx5_verbs_close_fd,
    .cuda_map_io      = gda_ft_mlx5_verbs_cuda_map_io,
    .cuda_unmap_io    = gda_ft_mlx5_verbs_cuda_unmap_io,
    .umem_reg         = gda_ft_mlx5_verbs_umem_reg,
    .umem_dereg       = gda_ft_mlx5_verbs_umem_dereg,
    .alloc_uar        = mlx5dv_devx_alloc_uar,
    .free_uar         = mlx5dv_devx_free_uar,
    .obj_create       = mlx5dv_devx_obj_create,
    .obj_modify       = gda_ft_mlx5_verbs_obj_modify,
    .obj_query        = gda_ft_mlx5_verbs_obj_query,
    .obj_destroy      = gda_ft_mlx5_verbs_obj_destroy,
    .general_cmd      = gda_ft_mlx5_verbs_general_cmd
};
