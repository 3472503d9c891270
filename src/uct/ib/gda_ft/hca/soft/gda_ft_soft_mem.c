/*
 * Memory access of the software HCA: plain copies for host memory, the CUDA
 * runtime for device memory. The runtime is loaded on first use, so the
 * provider runs (and is tested) on machines without a GPU driver.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "gda_ft_soft_int.h"

#include <ucs/debug/log.h>
#include <dlfcn.h>
#include <pthread.h>
#include <string.h>

/* cudaMemcpy(dst, src, count, cudaMemcpyDefault) */
typedef int (*gda_ft_cuda_memcpy_func_t)(void*, const void*, size_t, int);
#define GDA_FT_CUDA_MEMCPY_DEFAULT 4

static gda_ft_cuda_memcpy_func_t gda_ft_soft_cuda_memcpy;
static pthread_once_t gda_ft_soft_cuda_once = PTHREAD_ONCE_INIT;

static void gda_ft_soft_cuda_load(void)
{
    static const char *names[] = {"libcudart.so", "libcudart.so.13",
                                  "libcudart.so.12", NULL};
    void *handle = NULL;
    const char **name;

    for (name = names; (*name != NULL) && (handle == NULL); ++name) {
        handle = dlopen(*name, RTLD_NOW | RTLD_GLOBAL);
    }

    if (handle == NULL) {
        ucs_error("soft HCA: CUDA memory registered but no CUDA runtime "
                  "(libcudart) could be loaded");
        return;
    }
    gda_ft_soft_cuda_memcpy = (gda_ft_cuda_memcpy_func_t)dlsym(handle,
                                                               "cudaMemcpy");
}

ucs_status_t gda_ft_soft_mem_copy(void *dst, gda_ft_hca_mem_type_t dst_type,
                                  const void *src,
                                  gda_ft_hca_mem_type_t src_type, size_t len)
{
    int ret;

    if (len == 0) {
        return UCS_OK;
    }

    if ((dst_type != GDA_FT_HCA_MEM_CUDA) &&
        (src_type != GDA_FT_HCA_MEM_CUDA)) {
        memcpy(dst, src, len);
        return UCS_OK;
    }

    pthread_once(&gda_ft_soft_cuda_once, gda_ft_soft_cuda_load);
    if (gda_ft_soft_cuda_memcpy == NULL) {
        return UCS_ERR_UNSUPPORTED;
    }

    ret = gda_ft_soft_cuda_memcpy(dst, src, len, GDA_FT_CUDA_MEMCPY_DEFAULT);
    if (ret != 0) {
        ucs_error("soft HCA: cudaMemcpy(%p, %p, %zu) failed: %d", dst, src,
                  len, ret);
        return UCS_ERR_IO_ERROR;
    }
    return UCS_OK;
}
