/*
 * The CUDA runtime, as loaded by the process or found (gda_ft_cudart.h).
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "gda_ft_cudart.h"

#include <ucs/debug/log.h>
#include <dlfcn.h>
#include <stddef.h>

void *gda_ft_cudart_open(void)
{
    /* versioned names first: that is what a program links */
    static const char *names[] = {"libcudart.so.13", "libcudart.so.12",
                                  "libcudart.so", NULL};
    const char **name;
    void *handle;

    for (name = names; *name != NULL; ++name) {
        handle = dlopen(*name, RTLD_NOW | RTLD_NOLOAD);
        if (handle != NULL) {
            ucs_debug("using the process's CUDA runtime %s", *name);
            return handle;
        }
    }
    for (name = names; *name != NULL; ++name) {
        handle = dlopen(*name, RTLD_NOW | RTLD_GLOBAL);
        if (handle != NULL) {
            ucs_debug("loaded the CUDA runtime %s", *name);
            return handle;
        }
    }
    return NULL;
}
