/*
 * Kernels posting through device channels (test/gpu/gda_ft_gpu_chan.cu):
 * run where a GPU and the program exist, skipped with the reason where not
 * (CI has no GPU). The program checks every byte, signal and fetched value
 * itself and prints one line per check.
 */
#include "gda_ft_test.h"

#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define GPU_PROGRAM_SKIP 77

static void gpu_run_program(const char *args)
{
    char path[512], cmd[768];
    int status;

    snprintf(path, sizeof(path), "%s/test/gpu/gda_ft_gpu_chan",
             gda_ft_test_builddir());
    if (access(path, X_OK) != 0) {
        GDA_FT_SKIP_UNAVAILABLE("%s was not built (no nvcc, or a "
                                "sanitizer build)", path);
    }
    snprintf(cmd, sizeof(cmd), "%s %s 2>&1", path, args);
    fflush(stdout);
    status = system(cmd);
    GDA_FT_ASSERT(WIFEXITED(status));
    if (WEXITSTATUS(status) == GPU_PROGRAM_SKIP) {
        GDA_FT_SKIP_UNAVAILABLE("no CUDA device on this machine");
    }
    GDA_FT_ASSERT_EQ(WEXITSTATUS(status), 0);
}

GDA_FT_TEST_TIMEOUT(gpu, warp_posts_primary_down_and_back, 300)
{
    gpu_run_program("-s warp_fault");
}

/* Warps posting through posters: four warps with a channel each (every
 * post after the first takes the memo's way, except across the switch
 * and the failback), then 512 warps on 4 channels (the memos mostly
 * stale) */
GDA_FT_TEST_TIMEOUT(gpu, poster_posts_primary_down_and_back, 300)
{
    gpu_run_program("-s poster_fault -b 4 -w 1 -i 20000");
    gpu_run_program("-s poster_fault");
}

GDA_FT_TEST_TIMEOUT(gpu, thread_posts_primary_down_and_back, 300)
{
    gpu_run_program("-s thread_fault");
}

GDA_FT_TEST_TIMEOUT(gpu, both_ports_down_kernels_exit, 300)
{
    gpu_run_program("-s both_down");
}

/* 512 warps keep the smallest rings full with data in GPU memory, at a
 * deadline the software HCA's load exceeds: paths switch without a fault,
 * and every operation is checked exactly once */
GDA_FT_TEST_TIMEOUT(gpu, full_rings_gpu_data_false_switches, 300)
{
    gpu_run_program("-s pressure -b 64 -w 8 -R 64 -i 20000 -D 1000 -T 20 "
                    "-m gpu_data");
}
