/*
 * CUDA runtime calls of the device API's host side (see gda_ft_ucp_cuda.h).
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "gda_ft_ucp_cuda.h"
#include "gda_ft_cudart.h"

#include <ucs/debug/log.h>
#include <dlfcn.h>
#include <pthread.h>

#define GDA_FT_UCP_CUDA_MEMCPY_DEFAULT    4
#define GDA_FT_UCP_CUDA_STREAM_NONBLOCK   1
#define GDA_FT_UCP_CUDA_HOST_REG_MAPPED   2

static struct {
    int   (*malloc)(void **ptr, size_t size);
    int   (*free)(void *ptr);
    int   (*memcpy_async)(void *dst, const void *src, size_t size, int kind,
                          void *stream);
    int   (*memset_async)(void *ptr, int value, size_t size, void *stream);
    int   (*stream_sync)(void *stream);
    int   (*host_register)(void *ptr, size_t size, unsigned flags);
    int   (*host_unregister)(void *ptr);
    int   (*host_dev_ptr)(void **dev_p, void *host, unsigned flags);
    const char *(*error_string)(int error);
    void  *stream;
    ucs_status_t status;
} gda_ft_ucp_cuda = {.status = UCS_ERR_UNSUPPORTED};

static pthread_once_t gda_ft_ucp_cuda_once = PTHREAD_ONCE_INIT;

static void *gda_ft_ucp_cuda_sym(void *handle, const char *name, int *missing)
{
    void *sym = dlsym(handle, name);

    *missing |= (sym == NULL);
    return sym;
}

static void gda_ft_ucp_cuda_do_load(void)
{
    int (*stream_create)(void **stream, unsigned flags);
    void *handle = gda_ft_cudart_open();
    int missing  = 0;
    int ret;

    if (handle == NULL) {
        ucs_error("GPU placement needs the CUDA runtime, and no "
                  "libcudart could be loaded");
        return;
    }

#define GDA_FT_UCP_CUDA_SYM(_field, _name) \
    *(void**)&gda_ft_ucp_cuda._field = gda_ft_ucp_cuda_sym(handle, _name, \
                                                           &missing)
    GDA_FT_UCP_CUDA_SYM(malloc, "cudaMalloc");
    GDA_FT_UCP_CUDA_SYM(free, "cudaFree");
    GDA_FT_UCP_CUDA_SYM(memcpy_async, "cudaMemcpyAsync");
    GDA_FT_UCP_CUDA_SYM(memset_async, "cudaMemsetAsync");
    GDA_FT_UCP_CUDA_SYM(stream_sync, "cudaStreamSynchronize");
    GDA_FT_UCP_CUDA_SYM(host_register, "cudaHostRegister");
    GDA_FT_UCP_CUDA_SYM(host_unregister, "cudaHostUnregister");
    GDA_FT_UCP_CUDA_SYM(host_dev_ptr, "cudaHostGetDevicePointer");
    GDA_FT_UCP_CUDA_SYM(error_string, "cudaGetErrorString");
    *(void**)&stream_create = gda_ft_ucp_cuda_sym(handle,
                                                  "cudaStreamCreateWithFlags",
                                                  &missing);
#undef GDA_FT_UCP_CUDA_SYM
    if (missing) {
        ucs_error("the CUDA runtime lacks a call the device API's "
                  "host side needs");
        return;
    }

    ret = stream_create(&gda_ft_ucp_cuda.stream,
                        GDA_FT_UCP_CUDA_STREAM_NONBLOCK);
    if (ret != 0) {
        ucs_error("cudaStreamCreateWithFlags failed: %s",
                  gda_ft_ucp_cuda.error_string(ret));
        return;
    }
    gda_ft_ucp_cuda.status = UCS_OK;
}

ucs_status_t gda_ft_ucp_cuda_load(void)
{
    pthread_once(&gda_ft_ucp_cuda_once, gda_ft_ucp_cuda_do_load);
    return gda_ft_ucp_cuda.status;
}

static ucs_status_t gda_ft_ucp_cuda_check(int ret, const char *what)
{
    if (ret != 0) {
        ucs_error("%s failed: %s", what,
                  gda_ft_ucp_cuda.error_string(ret));
        return UCS_ERR_IO_ERROR;
    }
    return UCS_OK;
}

ucs_status_t gda_ft_ucp_cuda_malloc(void **ptr_p, size_t size)
{
    return gda_ft_ucp_cuda_check(gda_ft_ucp_cuda.malloc(ptr_p, size),
                                 "cudaMalloc");
}

void gda_ft_ucp_cuda_free(void *ptr)
{
    if (ptr != NULL) {
        (void)gda_ft_ucp_cuda.free(ptr);
    }
}

ucs_status_t gda_ft_ucp_cuda_copy(void *dst, const void *src, size_t size)
{
    int ret = gda_ft_ucp_cuda.memcpy_async(dst, src, size,
                                           GDA_FT_UCP_CUDA_MEMCPY_DEFAULT,
                                           gda_ft_ucp_cuda.stream);

    if (ret == 0) {
        ret = gda_ft_ucp_cuda.stream_sync(gda_ft_ucp_cuda.stream);
    }
    return gda_ft_ucp_cuda_check(ret, "cudaMemcpyAsync");
}

ucs_status_t gda_ft_ucp_cuda_zero(void *ptr, size_t size)
{
    int ret = gda_ft_ucp_cuda.memset_async(ptr, 0, size,
                                           gda_ft_ucp_cuda.stream);

    if (ret == 0) {
        ret = gda_ft_ucp_cuda.stream_sync(gda_ft_ucp_cuda.stream);
    }
    return gda_ft_ucp_cuda_check(ret, "cudaMemsetAsync");
}

ucs_status_t gda_ft_ucp_cuda_map(void *ptr, size_t size, void **dev_p)
{
    ucs_status_t status;

    status = gda_ft_ucp_cuda_check(
            gda_ft_ucp_cuda.host_register(ptr, size,
                                          GDA_FT_UCP_CUDA_HOST_REG_MAPPED),
            "cudaHostRegister");
    if (status != UCS_OK) {
        return status;
    }
    status = gda_ft_ucp_cuda_check(gda_ft_ucp_cuda.host_dev_ptr(dev_p, ptr,
                                                                0),
                                   "cudaHostGetDevicePointer");
    if (status != UCS_OK) {
        (void)gda_ft_ucp_cuda.host_unregister(ptr);
    }
    return status;
}

void gda_ft_ucp_cuda_unmap(void *ptr)
{
    (void)gda_ft_ucp_cuda.host_unregister(ptr);
}
