/*
 * The software HCA's fault schedule of the environment
 * (UCX_GDA_FT_SOFT_FAULTS): invalid specifications fail the open, valid
 * ones take a port down and up on time, with its events.
 */
#include "soft_harness.h"
#include "gda_ft_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- the fault schedule of the environment ------------------------------ */

/* Opens tsoft0 with UCX_GDA_FT_SOFT_FAULTS=spec; the log goes to log */
static ucs_status_t p2_open_with_faults(const char *spec,
                                        gda_ft_hca_dev_t **dev_p, char *log,
                                        size_t max)
{
    char path[] = "/tmp/gda_ft_sched.XXXXXX";
    int fd, saved_out, saved_err;
    ucs_status_t status;
    ssize_t len;

    setenv("UCX_GDA_FT_SOFT_FAULTS", spec, 1);
    soft_test_env(1, NULL);

    fd = mkstemp(path);
    GDA_FT_ASSERT(fd >= 0);
    unlink(path);
    fflush(NULL);
    saved_out = dup(STDOUT_FILENO);
    saved_err = dup(STDERR_FILENO);
    dup2(fd, STDOUT_FILENO);
    dup2(fd, STDERR_FILENO);
    status = gda_ft_hca_open("tsoft0", dev_p);
    fflush(NULL);
    dup2(saved_out, STDOUT_FILENO);
    dup2(saved_err, STDERR_FILENO);
    close(saved_out);
    close(saved_err);

    len = pread(fd, log, max - 1, 0);
    log[(len > 0) ? len : 0] = '\0';
    close(fd);
    printf("UCX_GDA_FT_SOFT_FAULTS='%s': %s\n%s", spec,
           ucs_status_string(status), log);
    return status;
}

GDA_FT_TEST(soft_fault_sched, invalid_specs_fail_open)
{
    static const char *specs[] = {
        "100:tsoft0:1:down",            /* no unit */
        "100ms:tsoft0:1:sideways",      /* neither up nor down */
        "100ms:tsoft0:3:down",          /* no such port number */
        "100ms:tsoft0:0:down",
        "100ms:tsoft0:1",               /* a field missing */
        "100ms:tsoft0:1:down:later",    /* one too many */
        "-5ms:tsoft0:1:down",           /* before the start */
        "100 ms:tsoft0:1:down",
        "1s:tsoft0:one:down",
        "100ms:tsoft0:1:down;garbage",  /* one bad entry spoils the list */
        "100ms:a_device_name_longer_than_thirty_two:1:down"
    };
    gda_ft_hca_dev_t *dev = NULL;
    char log[8192];
    unsigned i;

    for (i = 0; i < sizeof(specs) / sizeof(specs[0]); ++i) {
        GDA_FT_ASSERT_EQ(p2_open_with_faults(specs[i], &dev, log,
                                             sizeof(log)),
                         UCS_ERR_INVALID_PARAM);
        /* the error names the variable, the value and the syntax */
        GDA_FT_ASSERT(strstr(log, "UCX_GDA_FT_SOFT_FAULTS") != NULL);
        GDA_FT_ASSERT(strstr(log, specs[i]) != NULL);
        GDA_FT_ASSERT(strstr(log, "TIME{s|ms|us}:DEVICE:PORT:down|up") !=
                      NULL);
    }

    /* a failed open leaves nothing behind: a valid schedule opens */
    GDA_FT_ASSERT_OK(p2_open_with_faults("", &dev, log, sizeof(log)));
    gda_ft_hca_close(dev);
    unsetenv("UCX_GDA_FT_SOFT_FAULTS");
}

/* Waits for a port event of dev; returns seconds since t0 */
static double p2_wait_port_event(gda_ft_hca_dev_t *dev,
                                 gda_ft_hca_event_type_t type, double t0)
{
    gda_ft_hca_event_t event;
    double deadline = soft_now_sec() + 5;

    while (soft_now_sec() < deadline) {
        if (gda_ft_hca_get_event(dev, &event) == UCS_OK) {
            GDA_FT_ASSERT_EQ(event.type, type);
            GDA_FT_ASSERT_EQ(event.port_num, 1);
            return soft_now_sec() - t0;
        }
        usleep(1000);
    }
    GDA_FT_FAIL("no port event %d within 5 s", type);
}

static gda_ft_hca_port_state_t p2_port_state(gda_ft_hca_dev_t *dev)
{
    gda_ft_hca_port_attr_t attr;

    GDA_FT_ASSERT_OK(gda_ft_hca_port_query(dev, 1, &attr));
    return attr.state;
}

GDA_FT_TEST(soft_fault_sched, valid_specs_take_port_down_and_up)
{
    static const char *specs[] = {
        "150ms:tsoft0:1:down;400ms:tsoft0:1:up",
        "0.15s:tsoft0:1:down;400000us:tsoft0:1:up",
        /* entries in any order; one for a device this process lacks */
        "400ms:tsoft0:1:up;50ms:nosuch:1:down;150ms:tsoft0:1:down"
    };
    gda_ft_hca_dev_t *dev;
    char log[8192];
    double t0, t;
    unsigned i;

    for (i = 0; i < sizeof(specs) / sizeof(specs[0]); ++i) {
        t0 = soft_now_sec();
        GDA_FT_ASSERT_OK(p2_open_with_faults(specs[i], &dev, log,
                                             sizeof(log)));
        GDA_FT_ASSERT_EQ(p2_port_state(dev), GDA_FT_HCA_PORT_ACTIVE);

        t = p2_wait_port_event(dev, GDA_FT_HCA_EVENT_PORT_ERR, t0);
        GDA_FT_ASSERT(t >= 0.149);
        GDA_FT_ASSERT_EQ(p2_port_state(dev), GDA_FT_HCA_PORT_DOWN);

        t = p2_wait_port_event(dev, GDA_FT_HCA_EVENT_PORT_ACTIVE, t0);
        GDA_FT_ASSERT(t >= 0.399);
        GDA_FT_ASSERT_EQ(p2_port_state(dev), GDA_FT_HCA_PORT_ACTIVE);
        gda_ft_hca_close(dev);
    }
    unsetenv("UCX_GDA_FT_SOFT_FAULTS");
}
