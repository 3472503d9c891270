/*
 * The CUDA runtime for the host code that needs one (the software HCA's
 * copies of GPU memory, src/ucp_ext's placement in GPU memory), loaded on
 * first use so that nothing links it.
 */
#ifndef GDA_FT_CUDART_H_
#define GDA_FT_CUDART_H_

/*
 * A handle for dlsym() on the CUDA runtime: the one the process has
 * already loaded, if any (a program linked to libcudart.so.13 must not
 * get a second runtime beside it, whose device state its own calls do
 * not see), else the newest one found. NULL when there is none; the
 * handle stays open for the life of the process.
 */
void *gda_ft_cudart_open(void);

#endif
