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

/*
 * CUDA runtime entry points, by hand: cudaMemcpyAsync on the engine's own
 * non-blocking stream, then cudaStreamSynchronize of that stream alone. A
 * plain cudaMemcpy waits for every kernel on a blocking stream, and a
 * kernel that spins on its completions would then never finish.
 */
typedef int (*gda_ft_cuda_stream_create_func_t)(void **stream,
                                                unsigned flags);
typedef int (*gda_ft_cuda_memcpy_async_func_t)(void*, const void*, size_t,
                                               int, void *stream);
typedef int (*gda_ft_cuda_stream_sync_func_t)(void *stream);
typedef int (*gda_ft_cuda_device_func_t)(int *device);
typedef int (*gda_ft_cuda_set_device_func_t)(int device);
#define GDA_FT_CUDA_MEMCPY_DEFAULT   4
#define GDA_FT_CUDA_STREAM_NONBLOCKING 1

static struct {
    gda_ft_cuda_memcpy_async_func_t memcpy_async;
    gda_ft_cuda_stream_sync_func_t  stream_sync;
    gda_ft_cuda_set_device_func_t   set_device;
    void                           *stream;
    int                             device;  /* the stream's */
} gda_ft_soft_cuda;

/* Whether this thread (an engine thread) has the stream's device current */
static __thread int gda_ft_soft_cuda_thread_ready;
static pthread_once_t gda_ft_soft_cuda_once = PTHREAD_ONCE_INIT;

static void gda_ft_soft_cuda_load(void)
{
    static const char *names[] = {"libcudart.so", "libcudart.so.13",
                                  "libcudart.so.12", NULL};
    gda_ft_cuda_stream_create_func_t stream_create;
    gda_ft_cuda_device_func_t get_device;
    void *handle = NULL;
    const char **name;
    int ret;

    for (name = names; (*name != NULL) && (handle == NULL); ++name) {
        handle = dlopen(*name, RTLD_NOW | RTLD_GLOBAL);
    }

    if (handle == NULL) {
        ucs_error("soft HCA: CUDA memory registered but no CUDA runtime "
                  "(libcudart) could be loaded");
        return;
    }
    get_device    = (gda_ft_cuda_device_func_t)dlsym(handle,
                                                     "cudaGetDevice");
    gda_ft_soft_cuda.set_device = (gda_ft_cuda_set_device_func_t)
                                  dlsym(handle, "cudaSetDevice");
    stream_create = (gda_ft_cuda_stream_create_func_t)
                    dlsym(handle, "cudaStreamCreateWithFlags");
    gda_ft_soft_cuda.memcpy_async = (gda_ft_cuda_memcpy_async_func_t)
                                    dlsym(handle, "cudaMemcpyAsync");
    gda_ft_soft_cuda.stream_sync  = (gda_ft_cuda_stream_sync_func_t)
                                    dlsym(handle, "cudaStreamSynchronize");
    if ((stream_create == NULL) || (gda_ft_soft_cuda.memcpy_async == NULL) ||
        (gda_ft_soft_cuda.stream_sync == NULL) || (get_device == NULL) ||
        (gda_ft_soft_cuda.set_device == NULL) ||
        (get_device(&gda_ft_soft_cuda.device) != 0)) {
        ucs_error("soft HCA: the CUDA runtime lacks cudaMemcpyAsync or "
                  "its stream calls");
        gda_ft_soft_cuda.memcpy_async = NULL;
        return;
    }
    ret = stream_create(&gda_ft_soft_cuda.stream,
                        GDA_FT_CUDA_STREAM_NONBLOCKING);
    if (ret != 0) {
        ucs_error("soft HCA: cudaStreamCreateWithFlags failed: %d", ret);
        gda_ft_soft_cuda.memcpy_async = NULL;
    }
}

ucs_status_t gda_ft_soft_mem_prepare(gda_ft_hca_mem_type_t type)
{
    if (type != GDA_FT_HCA_MEM_CUDA) {
        return UCS_OK;
    }
    pthread_once(&gda_ft_soft_cuda_once, gda_ft_soft_cuda_load);
    return (gda_ft_soft_cuda.memcpy_async != NULL) ? UCS_OK :
                                                     UCS_ERR_UNSUPPORTED;
}

#if defined(__SANITIZE_THREAD__)
/* Copies up to this size are placed as ordered word stores under TSan */
#define GDA_FT_SOFT_ORDERED_COPY_MAX 64

/*
 * A copy as ThreadSanitizer should see the HCA's DMA: stores in address
 * order, each a release store of the largest aligned word. A CPU that reads
 * a word an RDMA write stores last (a mailbox's epoch) with an acquire load
 * then reads what came before it after it, as the transport's protocol
 * has it; plain memcpy stores would make every such read a reported race.
 * Only small writes (the words of a mailbox) go this way: bulk data is
 * read after its completion, whose CQE orders it, and word by word it
 * slowed the engine enough to change the soft HCA tests' timing.
 */
static void gda_ft_soft_mem_copy_ordered(void *dst, const void *src,
                                         size_t len)
{
    uint8_t *d       = dst;
    const uint8_t *s = src;
    uint64_t w64;
    uint32_t w32;
    uint16_t w16;
    size_t size;

    for (; len > 0; d += size, s += size, len -= size) {
        if ((len >= 8) && !((uintptr_t)d & 7)) {
            memcpy(&w64, s, sizeof(w64));
            __atomic_store_n((uint64_t*)d, w64, __ATOMIC_RELEASE);
            size = sizeof(w64);
        } else if ((len >= 4) && !((uintptr_t)d & 3)) {
            memcpy(&w32, s, sizeof(w32));
            __atomic_store_n((uint32_t*)d, w32, __ATOMIC_RELEASE);
            size = sizeof(w32);
        } else if ((len >= 2) && !((uintptr_t)d & 1)) {
            memcpy(&w16, s, sizeof(w16));
            __atomic_store_n((uint16_t*)d, w16, __ATOMIC_RELEASE);
            size = sizeof(w16);
        } else {
            __atomic_store_n(d, *s, __ATOMIC_RELEASE);
            size = 1;
        }
    }
}
#endif

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
#if defined(__SANITIZE_THREAD__)
        if (len <= GDA_FT_SOFT_ORDERED_COPY_MAX) {
            gda_ft_soft_mem_copy_ordered(dst, src, len);
            return UCS_OK;
        }
#endif
        memcpy(dst, src, len);
        return UCS_OK;
    }

    if (gda_ft_soft_mem_prepare(GDA_FT_HCA_MEM_CUDA) != UCS_OK) {
        return UCS_ERR_UNSUPPORTED;
    }

    /* The engine thread works on the device whose memory the program
     * registered (current when the first CUDA region was: one process
     * per GPU). Without it the thread's copies ran from device 0's
     * context, across the GPUs, for a rank on another one. */
    if (!gda_ft_soft_cuda_thread_ready) {
        ret = gda_ft_soft_cuda.set_device(gda_ft_soft_cuda.device);
        if (ret != 0) {
            ucs_error("soft HCA: cudaSetDevice(%d) failed: %d",
                      gda_ft_soft_cuda.device, ret);
            return UCS_ERR_IO_ERROR;
        }
        gda_ft_soft_cuda_thread_ready = 1;
    }

    ret = gda_ft_soft_cuda.memcpy_async(dst, src, len,
                                        GDA_FT_CUDA_MEMCPY_DEFAULT,
                                        gda_ft_soft_cuda.stream);
    if (ret == 0) {
        ret = gda_ft_soft_cuda.stream_sync(gda_ft_soft_cuda.stream);
    }
    if (ret != 0) {
        ucs_error("soft HCA: cudaMemcpyAsync(%p, %p, %zu) failed: %d", dst,
                  src, len, ret);
        return UCS_ERR_IO_ERROR;
    }
    return UCS_OK;
}
