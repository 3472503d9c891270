/*
 * test/ucp/gda_ft_ucp_pressure on CPU threads: two ranks connected with UCP
 * post at each other through their device endpoints with the smallest
 * rings, a deadline short enough to switch without a fault, and ports of
 * both ranks failing in turn; every OK is proven by the program.
 */
#include "gda_ft_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PRESSURE_OUT_MAX (64 * 1024)

/* The sum over both ranks of the number after `key` in their lines */
static unsigned pressure_test_sum(const char *out, const char *key)
{
    const char *p = out;
    unsigned sum  = 0, value;

    while ((p = strstr(p, key)) != NULL) {
        p += strlen(key);
        if (sscanf(p, " %u", &value) == 1) {
            sum += value;
        }
    }
    return sum;
}

/* Runs the program with args and env: it passed, with at least
 * min_switches switches and min_faults port failures over both ranks */
static void pressure_test_run(const char *env, const char *args,
                              unsigned min_switches, unsigned min_faults)
{
    char *out = calloc(1, PRESSURE_OUT_MAX);
    unsigned switches, faults;
    char cmd[1024];
    int rc;

    snprintf(cmd, sizeof(cmd),
             "env -u UCX_TLS -u UCX_GDA_FT_SOFT_DEVICES %s "
             "%s/test/ucp/gda_ft_ucp_pressure --cpu %s 2>&1", env,
             gda_ft_test_builddir(), args);
    rc = gda_ft_test_shell(cmd, out, PRESSURE_OUT_MAX);
    if ((rc != 0) || (strstr(out, "RESULT PASS") == NULL)) {
        printf("%s\n%s\n", cmd, out);
    }
    GDA_FT_ASSERT_EQ(rc, 0);
    GDA_FT_ASSERT(strstr(out, "RESULT PASS") != NULL);
    switches = pressure_test_sum(out, ": switches");
    faults   = pressure_test_sum(out, " s,");
    printf("%u switches, %u port failures\n", switches, faults);
    GDA_FT_ASSERT(switches >= min_switches);
    GDA_FT_ASSERT(faults >= min_faults);
    free(out);
}

/* 2% of the packets held for two deadlines: paths switch with every link
 * up while 16 threads per rank keep rings of 64 WQEBBs full */
GDA_FT_TEST_TIMEOUT(ucp_pressure, full_rings_through_false_switches, 120)
{
    pressure_test_run("UCX_GDA_FT_SOFT_DELAY=0.02 "
                      "UCX_GDA_FT_SOFT_DELAY_TIME=10ms",
                      "--threads 16 --channels 3 --ring 64 --deadline 5ms "
                      "--seconds 8 --max-len 16384", 1, 0);
}

/* Ports of both ranks fail in turn (a path always up) */
GDA_FT_TEST_TIMEOUT(ucp_pressure, full_rings_through_port_failures_of_both,
                    120)
{
    pressure_test_run("", "--threads 16 --channels 3 --ring 64 "
                      "--deadline 20ms --seconds 8 --flaps 8 --down-ms 300 "
                      "--up-ms 700 --max-len 16384", 1, 2);
}

/* A deadline shorter than the software HCA's passes on a loaded machine:
 * paths switch all along with every link up, both paths of a channel fail
 * at once, and the peer answers late. With the peer heard, no operation
 * may end in NO_PATH, and every re-arm must come back (probes once failed
 * on the answer to a try given up, and channels gave both paths up). */
GDA_FT_TEST_TIMEOUT(ucp_pressure, deadline_shorter_than_the_hcas_passes,
                    120)
{
    pressure_test_run("", "--threads 16 --channels 3 --ring 64 "
                      "--deadline 1ms --seconds 8 --max-len 16384", 1, 0);
}

/* The same at 3 ms with ports of both ranks failing in turn: control QPs
 * fail and are re-armed while answers come late (the peer re-armed its
 * end again at every question asked again, and its guardian went
 * unheard) */
GDA_FT_TEST_TIMEOUT(ucp_pressure, short_deadline_through_port_failures, 120)
{
    pressure_test_run("", "--threads 16 --channels 3 --ring 64 "
                      "--deadline 3ms --seconds 8 --flaps 10 --down-ms 100 "
                      "--up-ms 200 --max-len 16384", 1, 2);
}
