/*
 * mlx5 provider: protection domain, memory regions (host memory, CUDA
 * memory through dma-buf or peer memory) and DEVX user memory.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "gda_ft_mlx5_int.h"

#include <ucs/debug/assert.h>
#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <ucs/sys/math.h>
#include <ucs/sys/string.h>
#include <ucs/type/class.h>
#include <errno.h>
#include <string.h>
#include <unistd.h>

ucs_status_t gda_ft_mlx5_pd_alloc(gda_ft_hca_dev_t *hca_dev,
                                  gda_ft_hca_pd_t **pd_p)
{
    gda_ft_mlx5_dev_t *dev = ucs_derived_of(hca_dev, gda_ft_mlx5_dev_t);
    gda_ft_mlx5_pd_t *pd;
    int ret;

    pd = ucs_calloc(1, sizeof(*pd), "gda_ft_mlx5_pd");
    if (pd == NULL) {
        return UCS_ERR_NO_MEMORY;
    }

    pd->pd = gda_ft_mlx5_sys->alloc_pd(dev->ctx);
    if (pd->pd == NULL) {
        ucs_error("%s: ibv_alloc_pd failed: %m", hca_dev->attr.info.name);
        goto err_free;
    }

    /* DEVX objects name the PD by its number */
    ret = gda_ft_mlx5_sys->pd_number(pd->pd, &pd->super.pdn);
    if (ret != 0) {
        ucs_error("%s: mlx5dv_init_obj(PD) failed: %s",
                  hca_dev->attr.info.name, strerror(ret));
        goto err_dealloc;
    }

    pd->super.dev = hca_dev;
    *pd_p         = &pd->super;
    return UCS_OK;

err_dealloc:
    gda_ft_mlx5_sys->dealloc_pd(pd->pd);
err_free:
    ucs_free(pd);
    return UCS_ERR_IO_ERROR;
}

void gda_ft_mlx5_pd_free(gda_ft_hca_pd_t *hca_pd)
{
    gda_ft_mlx5_pd_t *pd = ucs_derived_of(hca_pd, gda_ft_mlx5_pd_t);

    gda_ft_mlx5_sys->dealloc_pd(pd->pd);
    ucs_free(pd);
}

static int gda_ft_mlx5_ibv_access(unsigned access)
{
    int ibv_access = 0;

    if (access & GDA_FT_HCA_ACCESS_LOCAL_WRITE) {
        ibv_access |= IBV_ACCESS_LOCAL_WRITE;
    }
    if (access & GDA_FT_HCA_ACCESS_REMOTE_WRITE) {
        ibv_access |= IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE;
    }
    if (access & GDA_FT_HCA_ACCESS_REMOTE_READ) {
        ibv_access |= IBV_ACCESS_REMOTE_READ;
    }
    if (access & GDA_FT_HCA_ACCESS_REMOTE_ATOMIC) {
        ibv_access |= IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_LOCAL_WRITE;
    }
    return ibv_access;
}

/* CUDA memory through a dma-buf of the pages around it; NULL with errno
 * ENOSYS when the driver or the kernel cannot export one */
static struct ibv_mr *gda_ft_mlx5_reg_cuda_dmabuf(struct ibv_pd *pd,
                                                  void *addr, size_t length,
                                                  int access)
{
    size_t page    = sysconf(_SC_PAGESIZE);
    uintptr_t base = ucs_align_down((uintptr_t)addr, page);
    size_t size    = ucs_align_up((uintptr_t)addr + length, page) - base;
    struct ibv_mr *mr;
    int fd, ret;

    ret = gda_ft_mlx5_sys->cuda_dmabuf_fd((void*)base, size, &fd);
    if (ret != 0) {
        errno = ret;
        return NULL;
    }

    /* the MR holds its own reference to the dma-buf */
    mr = gda_ft_mlx5_sys->reg_dmabuf_mr(pd, (uintptr_t)addr - base, length,
                                        (uintptr_t)addr, fd, access);
    ret = errno;
    gda_ft_mlx5_sys->close_fd(fd);
    errno = ret;
    return mr;
}

ucs_status_t gda_ft_mlx5_mr_reg(gda_ft_hca_pd_t *hca_pd,
                                const gda_ft_hca_mr_attr_t *attr,
                                gda_ft_hca_mr_t **mr_p)
{
    gda_ft_mlx5_pd_t *pd = ucs_derived_of(hca_pd, gda_ft_mlx5_pd_t);
    int access           = gda_ft_mlx5_ibv_access(attr->access);
    gda_ft_mlx5_mr_t *mr;

    mr = ucs_calloc(1, sizeof(*mr), "gda_ft_mlx5_mr");
    if (mr == NULL) {
        return UCS_ERR_NO_MEMORY;
    }

    if (attr->mem_type == GDA_FT_HCA_MEM_CUDA) {
        mr->mr     = gda_ft_mlx5_reg_cuda_dmabuf(pd->pd, attr->addr,
                                                 attr->length, access);
        mr->dmabuf = (mr->mr != NULL);
        if (mr->mr == NULL) {
            /* peer memory (nvidia-peermem) registers it as plain memory */
            ucs_debug("%s: no dma-buf for CUDA memory %p (%m): trying "
                      "peer memory", hca_pd->dev->attr.info.name,
                      attr->addr);
        }
    }

    if (mr->mr == NULL) {
        mr->mr = gda_ft_mlx5_sys->reg_mr(pd->pd, attr->addr, attr->length,
                                         access);
    }

    if (mr->mr == NULL) {
        ucs_error("%s: cannot register %p+%zu (memory type %d): %m",
                  hca_pd->dev->attr.info.name, attr->addr, attr->length,
                  attr->mem_type);
        ucs_free(mr);
        return UCS_ERR_IO_ERROR;
    }

    mr->super.pd       = hca_pd;
    mr->super.addr     = attr->addr;
    mr->super.length   = attr->length;
    mr->super.lkey     = mr->mr->lkey;
    mr->super.rkey     = mr->mr->rkey;
    mr->super.access   = attr->access;
    mr->super.mem_type = attr->mem_type;
    *mr_p              = &mr->super;
    return UCS_OK;
}

void gda_ft_mlx5_mr_dereg(gda_ft_hca_mr_t *hca_mr)
{
    gda_ft_mlx5_mr_t *mr = ucs_derived_of(hca_mr, gda_ft_mlx5_mr_t);

    gda_ft_mlx5_sys->dereg_mr(mr->mr);
    ucs_free(mr);
}

ucs_status_t gda_ft_mlx5_umem_reg(gda_ft_mlx5_dev_t *dev, void *addr,
                                  size_t length, gda_ft_hca_mem_type_t type,
                                  gda_ft_mlx5_umem_t *umem)
{
    size_t page    = sysconf(_SC_PAGESIZE);
    uintptr_t base = ucs_align_down((uintptr_t)addr, page);
    size_t size    = ucs_align_up((uintptr_t)addr + length, page) - base;
    uint32_t access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                      IBV_ACCESS_REMOTE_READ;
    int fd         = -1;

    if ((type == GDA_FT_HCA_MEM_CUDA) &&
        (gda_ft_mlx5_sys->cuda_dmabuf_fd((void*)base, size, &fd) != 0)) {
        fd = -1;  /* peer memory, as for MRs */
    }

    /* A dma-buf umem is named by its offset into the dma-buf, which was
     * exported from `base` on: 0 (mlx5dv_devx_umem_reg_ex). A host or
     * peer-memory umem by its address. */
    umem->umem   = gda_ft_mlx5_sys->umem_reg(dev->ctx,
                                             (fd >= 0) ? NULL : (void*)base,
                                             size, access, fd);
    umem->offset = (uintptr_t)addr - base;
    if (fd >= 0) {
        gda_ft_mlx5_sys->close_fd(fd);
    }

    if (umem->umem == NULL) {
        ucs_error("%s: mlx5dv_devx_umem_reg(%p+%zu) failed: %m",
                  dev->super.attr.info.name, (void*)base, size);
        return UCS_ERR_IO_ERROR;
    }
    return UCS_OK;
}

void gda_ft_mlx5_umem_dereg(gda_ft_mlx5_umem_t *umem)
{
    gda_ft_mlx5_sys->umem_dereg(umem->umem);
}

uint32_t gda_ft_mlx5_umem_id(const gda_ft_mlx5_umem_t *umem)
{
    return umem->umem->umem_id;
}
