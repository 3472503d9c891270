/*
 * The device API from a UCP program: gda_ft_perf's server and client
 * (contrib/gda_ft-perf-local.sh: two processes, two software HCAs each)
 * connect with UCP, build their device endpoints and memory lists through
 * src/ucp_ext, and post from CPU threads through the same posters a kernel
 * runs. Every test checks what arrived: the server every byte of the puts,
 * every signal and the counter, the client that no fetch-add value came
 * back twice. Through a port failure, the channels must switch, fail back
 * and lose nothing.
 */
#include "gda_ft_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define UDEV_OUT_MAX (256 * 1024)

typedef struct {
    char *out;
    int   exit_code;
} udev_run_t;

static void udev_run(const char *args, udev_run_t *r)
{
    char cmd[2048];
    size_t len = 0, n;
    FILE *pipe;
    int ret;

    r->out = malloc(UDEV_OUT_MAX);
    GDA_FT_ASSERT(r->out != NULL);
    snprintf(cmd, sizeof(cmd),
             "GDA_FT_PERF='%s/src/tools/gda_ft_perf' "
             "GDA_FT_PERF_SERVER_ARGS=--cpu UCX_GDA_FT_DEADLINE=100ms "
             "%s/contrib/gda_ft-perf-local.sh --cpu --timeout 30 %s 2>&1",
             gda_ft_test_builddir(), gda_ft_test_srcdir(), args);
    pipe = popen(cmd, "r");
    GDA_FT_ASSERT(pipe != NULL);
    while ((len + 1 < UDEV_OUT_MAX) &&
           ((n = fread(r->out + len, 1, UDEV_OUT_MAX - len - 1, pipe)) > 0)) {
        len += n;
    }
    r->out[len] = '\0';
    ret = pclose(pipe);
    GDA_FT_ASSERT(WIFEXITED(ret));
    r->exit_code = WEXITSTATUS(ret);
}

static void udev_expect(const udev_run_t *r, const char *text)
{
    if (strstr(r->out, text) == NULL) {
        printf("%s\n", r->out);
        GDA_FT_FAIL("the output above does not contain \"%s\"", text);
    }
}

/* Runs and requires both sides to pass with their checks */
static void udev_pass(const char *args, const char *check, udev_run_t *r)
{
    udev_run(args, r);
    if (r->exit_code != 0) {
        printf("%s\n", r->out);
        GDA_FT_FAIL("gda_ft_perf %s: exit %d", args, r->exit_code);
    }
    udev_expect(r, "RESULT PASS");
    udev_expect(r, "--- server");
    GDA_FT_ASSERT(strstr(strstr(r->out, "--- server"), "RESULT PASS") !=
                  NULL);
    udev_expect(r, check);
    udev_expect(r, "Final: ");
    printf("%s: %s", args, strstr(r->out, "Final: "));
}

/* "paths: switches S, replays R, failbacks F" */
static void udev_paths(const udev_run_t *r, unsigned *switches,
                       unsigned *failbacks)
{
    const char *line = strstr(r->out, "paths: ");
    unsigned replays;

    GDA_FT_ASSERT(line != NULL);
    GDA_FT_ASSERT_EQ(sscanf(line, "paths: switches %u, replays %u, "
                            "failbacks %u", switches, &replays, failbacks),
                     3);
}

GDA_FT_TEST_TIMEOUT(ucp_device, perf_tests_on_cpu_threads_are_exact, 300)
{
    static const struct {
        const char *args;
        const char *check;
    } runs[] = {
        {"-t put_lat -s 64 -n 500", "check: data exact"},
        {"-t put_bw -s 4096 -n 2000 -T 2 -c 2", "check: data exact"},
        {"-t put_bw -L warp -s 256 -n 100 -T 2 -c 3", "check: data exact"},
        {"-t signal_bw -n 3000 -T 3 -c 3", "check: data exact"},
        {"-t fadd_lat -n 300 -T 2 -c 2", "fetch-add values all distinct"}
    };
    unsigned i, switches, failbacks;
    udev_run_t r;

    for (i = 0; i < sizeof(runs) / sizeof(runs[0]); ++i) {
        udev_pass(runs[i].args, runs[i].check, &r);
        udev_paths(&r, &switches, &failbacks);
        GDA_FT_ASSERT_EQ(switches, 0);    /* no fault, no false switch */
        free(r.out);
    }
}

GDA_FT_TEST_TIMEOUT(ucp_device, perf_through_port_failure_and_back, 300)
{
    unsigned switches, failbacks;
    udev_run_t r;

    /* long enough that the posters still post once the port is back */
    udev_pass("-t put_bw -s 4096 -n 60000 -T 2 -c 2 --fault=250",
              "check: data exact", &r);
    udev_paths(&r, &switches, &failbacks);
    udev_expect(&r, "fault: port down for 2");
    udev_expect(&r, "first completion on the backup");
    GDA_FT_ASSERT(switches >= 1);
    GDA_FT_ASSERT(failbacks >= 1);
    free(r.out);

    udev_pass("-t fadd_lat -n 3000 -T 2 -c 2 --fault=400",
              "fetch-add values all distinct", &r);
    udev_paths(&r, &switches, &failbacks);
    GDA_FT_ASSERT(switches >= 1);
    free(r.out);
}
