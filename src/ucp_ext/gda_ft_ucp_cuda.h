/*
 * The few CUDA runtime calls the device API's host side makes, loaded on
 * first use (dlopen), so that the library runs where no GPU exists. Copies
 * and fills run on a non-blocking stream of their own: a blocking one would
 * wait for every kernel, and a kernel spinning on its completions would
 * never finish.
 */
#ifndef GDA_FT_UCP_CUDA_H_
#define GDA_FT_UCP_CUDA_H_

#include <ucs/type/status.h>
#include <stddef.h>

/* Loads the runtime once; UCS_ERR_UNSUPPORTED (logged) without one */
ucs_status_t gda_ft_ucp_cuda_load(void);

ucs_status_t gda_ft_ucp_cuda_malloc(void **ptr_p, size_t size);
void gda_ft_ucp_cuda_free(void *ptr);

/* Host to device, device to host: synchronous on the library's stream */
ucs_status_t gda_ft_ucp_cuda_copy(void *dst, const void *src, size_t size);
ucs_status_t gda_ft_ucp_cuda_zero(void *ptr, size_t size);

/* Maps host pages into the GPU; *dev_p: the address kernels use */
ucs_status_t gda_ft_ucp_cuda_map(void *ptr, size_t size, void **dev_p);
void gda_ft_ucp_cuda_unmap(void *ptr);

#endif
