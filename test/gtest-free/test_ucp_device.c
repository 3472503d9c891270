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

/* Runs a shell command; its output and exit code go to r */
static void udev_shell(const char *cmd, udev_run_t *r)
{
    r->out = malloc(UDEV_OUT_MAX);
    GDA_FT_ASSERT(r->out != NULL);
    r->exit_code = gda_ft_test_shell(cmd, r->out, UDEV_OUT_MAX);
}

static void udev_run(const char *args, udev_run_t *r)
{
    char cmd[2048];

    snprintf(cmd, sizeof(cmd),
             "GDA_FT_PERF='%s/src/tools/gda_ft_perf' "
             "GDA_FT_PERF_SERVER_ARGS=--cpu UCX_GDA_FT_DEADLINE=100ms "
             "%s/contrib/gda_ft-perf-local.sh --cpu --timeout 30 %s 2>&1",
             gda_ft_test_builddir(), gda_ft_test_srcdir(), args);
    udev_shell(cmd, r);
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
        {"-t put_bw -L warp -s 256 -n 100 -T 2 -c 2", "check: data exact"},
        {"-t signal_bw -n 3000 -T 3 -c 2", "check: data exact"},
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

/* The server takes a free TCP port (-p 0) and prints it, so that runs
 * never meet a port someone else holds; a client cannot connect to 0 */
GDA_FT_TEST(ucp_device, perf_client_refuses_port_0)
{
    char cmd[1024];
    udev_run_t r;

    snprintf(cmd, sizeof(cmd), "%s/src/tools/gda_ft_perf --cpu -p 0 "
             "127.0.0.1 2>&1", gda_ft_test_builddir());
    udev_shell(cmd, &r);
    GDA_FT_ASSERT(r.exit_code != 0);
    udev_expect(&r, "-p 0 is for the server");
    free(r.out);
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

    /* the ping-pong's waits progress the channel: no retry window */
    udev_pass("-t put_lat -n 30000 --fault=250", "check: data exact", &r);
    udev_paths(&r, &switches, &failbacks);
    GDA_FT_ASSERT(switches >= 1);
    free(r.out);

    udev_pass("-t fadd_lat -n 3000 -T 2 -c 2 --fault=400",
              "fetch-add values all distinct", &r);
    udev_paths(&r, &switches, &failbacks);
    GDA_FT_ASSERT(switches >= 1);
    free(r.out);
}

/* As many channels as DeepEP's low-latency mode uses per peer, through
 * UCP's wireup: one poster each, exact through a port failure and back */
GDA_FT_TEST_TIMEOUT(ucp_device, perf_on_32_channels_through_port_failure, 300)
{
    unsigned switches, failbacks;
    udev_run_t r;

    udev_pass("-t put_bw -s 1024 -n 20000 -T 32 -c 32 --fault=250",
              "check: data exact", &r);
    udev_expect(&r, "32 workers on 32 channels");
    udev_paths(&r, &switches, &failbacks);
    GDA_FT_ASSERT(switches >= 32);
    GDA_FT_ASSERT(failbacks >= 1);
    free(r.out);
}

/* src/ucp_ext's host API in one process (test/ucp/gda_ft_ucp_ext_check):
 * the keys and data of a good list, and each refusal with its status */
GDA_FT_TEST_TIMEOUT(ucp_device, host_api_builds_and_refuses, 120)
{
    unsigned port = 22000 + getpid() % 20000;
    char cmd[2048];
    udev_run_t r;

    snprintf(cmd, sizeof(cmd),
             "env -u UCX_TLS UCX_NET_DEVICES=all UCX_GDA_FT_SOFT_CTL_DIR= "
             "UCX_GDA_FT_SOFT_DEVICES=t0=127.0.0.1:%u,t1=127.0.0.2:%u,"
             "t2=127.0.0.3:%u,t3=127.0.0.4:%u "
             "%s/test/ucp/gda_ft_ucp_ext_check 2>&1", port, port, port,
             port, gda_ft_test_builddir());
    udev_shell(cmd, &r);
    if (r.exit_code != 0) {
        printf("%s\n", r.out);
    }
    GDA_FT_ASSERT_EQ(r.exit_code, 0);
    udev_expect(&r, "RESULT PASS (0 failures)");
    udev_expect(&r, "paths: primary t");
    /* each refusal said why, once */
    udev_expect(&r, "has no gda_ft lane with device channels");
    udev_expect(&r, "is not registered on gda_ft");
    udev_expect(&r, "is outside its registration");
    udev_expect(&r, "is host memory that the GPU does not map");
    udev_expect(&r, "holds no gda_ft key of the peer");
    udev_expect(&r, "cannot unpack remote key");
    free(r.out);
}

/*
 * What a user does with an installed gda_ft (docs/programming.md): the
 * tree installed into a scratch root, contrib/examples/hello built with
 * nothing but pkg-config's flags from there (installed headers and
 * libraries), and run: two ranks, a put with a signal and a fetch-add.
 */
GDA_FT_TEST_TIMEOUT(ucp_device, hello_builds_and_runs_from_the_installed_tree,
                    300)
{
    char root[128], cmd[4096];
    udev_run_t r;

    snprintf(root, sizeof(root), "/tmp/gda_ft_install.%d", (int)getpid());
    snprintf(cmd, sizeof(cmd),
             "set -e; rm -rf %s; "
             "make -s -C '%s' install DESTDIR=%s >/dev/null 2>&1 || "
             "{ echo 'make install failed'; exit 1; }; "
             "pc=$(find %s -name gda_ft.pc); "
             "export PKG_CONFIG_PATH=$(dirname $pc) "
             "PKG_CONFIG_SYSROOT_DIR=%s; "
             "cc '%s/contrib/examples/hello/gda_ft_hello.c' "
             "$(pkg-config --cflags gda_ft) "
             "$(pkg-config --libs gda_ft | sed 's|-Wl,-rpath,[^ ]*||') "
             "-o %s/gda_ft_hello; "
             "env -u UCX_TLS -u UCX_GDA_FT_SOFT_DEVICES "
             "LD_LIBRARY_PATH=$(dirname $(find %s -name libgda_ft_ucp.so)) "
             "%s/gda_ft_hello 2>&1; rm -rf %s",
             root, gda_ft_test_builddir(), root, root, root,
             gda_ft_test_srcdir(), root, root, root, root);
    udev_shell(cmd, &r);
    if (r.exit_code != 0) {
        printf("%s\n", r.out);
    }
    GDA_FT_ASSERT_EQ(r.exit_code, 0);
    udev_expect(&r, "rank 1: signal 1, 0 of 256 bytes differ, counter 10");
    udev_expect(&r, "rank 0: fetch-add: OK, fetched 0");
    udev_expect(&r, "RESULT PASS");
    free(r.out);
}
