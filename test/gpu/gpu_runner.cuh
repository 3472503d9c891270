/*
 * What the test harness asks of its runner, for a GPU program: a failure
 * prints and exits 1, a skip exits GPU_SKIP. Included once, by the file
 * that holds main; the rest of the world is gpu_world.cuh's.
 */
#ifndef GDA_FT_GPU_RUNNER_CUH_
#define GDA_FT_GPU_RUNNER_CUH_

#include "gpu_world.cuh"

extern "C" void gda_ft_test_fail(const char *file, int line,
                                 const char *fmt, ...)
{
    va_list ap;

    fprintf(stdout, "FAIL %s:%d: ", file, line);
    va_start(ap, fmt);
    vfprintf(stdout, fmt, ap);
    va_end(ap);
    fprintf(stdout, "\n");
    exit(1);
}

extern "C" void gda_ft_test_skip(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vfprintf(stdout, fmt, ap);
    va_end(ap);
    exit(GPU_SKIP);
}

#endif
