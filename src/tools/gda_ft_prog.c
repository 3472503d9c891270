/*
 * Helpers of the device API's programs (see gda_ft_prog.h).
 */
#include "gda_ft_prog.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int gda_ft_prog_write_all(int fd, const void *buf, size_t len)
{
    const uint8_t *p = buf;
    ssize_t n;

    while (len > 0) {
        n = write(fd, p, len);
        if ((n < 0) && (errno == EINTR)) {
            continue;
        }
        if (n <= 0) {
            return -1;
        }
        p   += n;
        len -= n;
    }
    return 0;
}

int gda_ft_prog_read_all(int fd, void *buf, size_t len)
{
    uint8_t *p = buf;
    ssize_t n;

    while (len > 0) {
        n = read(fd, p, len);
        if ((n < 0) && (errno == EINTR)) {
            continue;
        }
        if (n <= 0) {
            return -1;
        }
        p   += n;
        len -= n;
    }
    return 0;
}

int gda_ft_prog_parse_uint(const char *arg, unsigned min, unsigned max,
                           unsigned *value_p)
{
    unsigned long value;
    char *end;

    value = strtoul(arg, &end, 0);
    if ((*arg == '\0') || (*end != '\0') || (value < min) || (value > max)) {
        return -1;
    }
    *value_p = (unsigned)value;
    return 0;
}

/* The software HCA's calls, from the plugin these programs load (they are
 * not part of any installed header) */
ucs_status_t gda_ft_prog_soft_port(const char *dev, int up)
{
    void *(*find)(const char*)                  = NULL;
    ucs_status_t (*set_up)(void*, uint8_t, int) = NULL;
    void *hca;

    *(void**)&find   = dlsym(RTLD_DEFAULT, "gda_ft_soft_dev_find");
    *(void**)&set_up = dlsym(RTLD_DEFAULT, "gda_ft_soft_port_set_up");
    hca              = (find != NULL) ? find(dev) : NULL;
    if ((hca == NULL) || (set_up == NULL)) {
        return UCS_ERR_NO_DEVICE;
    }
    return set_up(hca, 1, up);
}

ucs_status_t gda_ft_prog_soft_stats(char *buf, size_t max)
{
    ucs_status_t (*exec)(const char*, char*, size_t) = NULL;

    *(void**)&exec = dlsym(RTLD_DEFAULT, "gda_ft_soft_ctl_exec");
    if (exec == NULL) {
        return UCS_ERR_NO_DEVICE;
    }
    return exec("stats", buf, max);
}

ucs_status_t gda_ft_prog_soft_engine_stats(char *buf, size_t max)
{
    char reply[4096], *line;
    ucs_status_t status;

    status = gda_ft_prog_soft_stats(reply, sizeof(reply));
    if (status != UCS_OK) {
        return status;
    }
    line = strstr(reply, "engine threads");
    snprintf(buf, max, "%s", (line != NULL) ? line : "");
    buf[strcspn(buf, "\n")] = '\0';
    return UCS_OK;
}

void *gda_ft_prog_open_beside(const char *name)
{
    char exe[PATH_MAX], path[PATH_MAX + 64], *slash;
    ssize_t len;
    void *handle;

    len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    exe[(len > 0) ? len : 0] = '\0';
    slash = strrchr(exe, '/');
    if (slash != NULL) {
        *slash = '\0';
    }
    snprintf(path, sizeof(path), "%s/%s", exe, name);
    handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (handle == NULL) {
        snprintf(path, sizeof(path), "%s/../%s", exe, name);
        handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    }
    return handle;
}
