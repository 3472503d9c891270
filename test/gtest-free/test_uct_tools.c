/*
 * The gda_ft transport seen by UCX's own tools, run through the launcher
 * contrib/gda_ft-run.sh with the built plugin: ucx_info lists its memory
 * domains, devices, capabilities and each primary's backup, and documents
 * every UCX_GDA_FT_* setting; ucx_perftest runs UCT and UCP tests between
 * a server and a client process on software HCAs over loopback addresses,
 * and their results are parsed and checked.
 */
#ifndef _GNU_SOURCE
#  define _GNU_SOURCE  /* dl_iterate_phdr */
#endif

#include "gda_ft_test.h"
#include "uct_harness.h"

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <link.h>
#include <signal.h>
#include <stdarg.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>


#define TOOLS_OUT_MAX (512 * 1024)


/* ---- helpers ------------------------------------------------------------- */

static unsigned tools_udp_port(void)
{
    return 21000 + (getpid() % 20000);
}

/* A TCP port free right now, for one perftest server: a fixed one may be
 * taken by another connection (the ephemeral range) or still linger from
 * the previous run */
static unsigned tools_tcp_port(void)
{
    struct sockaddr_in addr = {.sin_family = AF_INET};
    socklen_t len           = sizeof(addr);
    int fd;

    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    fd = socket(AF_INET, SOCK_STREAM, 0);
    GDA_FT_ASSERT(fd >= 0);
    GDA_FT_ASSERT(bind(fd, (struct sockaddr*)&addr, sizeof(addr)) == 0);
    GDA_FT_ASSERT(getsockname(fd, (struct sockaddr*)&addr, &len) == 0);
    close(fd);
    return ntohs(addr.sin_port);
}

/*
 * Environment of one "node": soft HCAs <prefix>0..<n-1> on 127.0.0.<base+i>,
 * no control socket, the plugin of this build tree. extra: more
 * assignments, or "".
 */
#ifdef __SANITIZE_ADDRESS__
static int tools_find_asan(struct dl_phdr_info *info, size_t size, void *arg)
{
    if (strstr(info->dlpi_name, "libasan.so") != NULL) {
        snprintf(arg, PATH_MAX, "%s", info->dlpi_name);
        return 1;
    }
    return 0;
}
#endif

/*
 * A sanitizer build's plugin needs the ASan runtime first in the library
 * list of the (uninstrumented) UCX tools; their own leaks are not ours.
 */
static void tools_sanitizer_env(char *env, size_t max)
{
#ifdef __SANITIZE_ADDRESS__
    char asan[PATH_MAX] = "";

    dl_iterate_phdr(tools_find_asan, asan);
    GDA_FT_ASSERT(asan[0] != '\0');
    snprintf(env, max, "LD_PRELOAD='%s' ASAN_OPTIONS=detect_leaks=0 ", asan);
#else
    env[0] = '\0';
#endif
}

static void tools_env(char *env, size_t max, const char *prefix,
                      unsigned ndev, unsigned base, const char *extra)
{
    size_t len;
    unsigned i;

    tools_sanitizer_env(env, max);
    len  = strlen(env);
    len += snprintf(env + len, max - len, "GDA_FT_BUILD_DIR='%s/.libs' "
                    "UCX_GDA_FT_SOFT_CTL_DIR= UCX_GDA_FT_SOFT_DEVICES=",
                    gda_ft_test_builddir());
    for (i = 0; i < ndev; ++i) {
        len += snprintf(env + len, max - len, "%s%s%u=127.0.0.%u:%u",
                        (i > 0) ? "," : "", prefix, i, base + i,
                        tools_udp_port());
    }
    snprintf(env + len, max - len, " %s", extra);
}

static void tools_expect(const char *out, const char *text)
{
    if (strstr(out, text) == NULL) {
        printf("%s\n", out);
        GDA_FT_FAIL("the output above does not contain \"%s\"", text);
    }
}

static char *tools_ucx_info(const char *env, const char *args, char *out)
{
    char cmd[2048];
    int ret;

    snprintf(cmd, sizeof(cmd), "%s %s/contrib/gda_ft-run.sh ucx_info %s 2>&1",
             env, gda_ft_test_srcdir(), args);
    ret = gda_ft_test_shell(cmd, out, TOOLS_OUT_MAX);
    if (ret != 0) {
        printf("%s\n", out);
        GDA_FT_FAIL("'%s' exited with %d", cmd, ret);
    }
    return out;
}


/* ---- ucx_info ------------------------------------------------------------ */

GDA_FT_TEST(uct_tools, ucx_info_lists_devices_and_backups)
{
    char env[1024], *out = malloc(TOOLS_OUT_MAX);
    static const char *expected[] = {
        "# Memory domain: gda_ft_tsoft0",
        "# Memory domain: gda_ft_tsoft1",
        "# Memory domain: gda_ft_tsoft2",
        "# Memory domain: gda_ft_tsoft3",
        "#     Component: gda_ft",
        "#           remote key: 16 bytes",
        "#      Transport: gda_ft",
        "#         Device: tsoft0:1",
        "#         Device: tsoft3:1",
        "#         Backup: tsoft0:1 -> backup tsoft1:1 (adjacent pair)",
        "#         Backup: tsoft1:1 -> backup tsoft0:1 (adjacent pair)",
        "#         Backup: tsoft2:1 -> backup tsoft3:1 (adjacent pair)",
        "#         Backup: tsoft3:1 -> backup tsoft2:1 (adjacent pair)",
        "#            put_short: <= 128",
        "#            put_bcopy: <= 8K",
        "#            get_zcopy: <= 16M, up to 1 iov",
        "#           atomic_add: 32, 64 bit",
        "#         atomic_cswap: 32, 64 bit",
        "#           connection: to ep",
        "#       device address: 10 bytes",
        "#       error handling: peer failure",
        NULL
    };
    unsigned i;

    tools_env(env, sizeof(env), "tsoft", 4, 1, "");
    tools_ucx_info(env, "-d -t gda_ft", out);
    for (i = 0; expected[i] != NULL; ++i) {
        tools_expect(out, expected[i]);
    }
    /* mailbox, count and control QPs; the host channel's QPNs */
    tools_expect(out, "#           ep address: 36 bytes");
    GDA_FT_ASSERT(strstr(out, "failed to open interface") == NULL);
    GDA_FT_ASSERT(strstr(out, "failed to open memory domain") == NULL);
    GDA_FT_ASSERT(strstr(out, "failed to query") == NULL);
    free(out);
}

/* A single-NIC machine: one path, and ucx_info says that it has no
 * failover */
GDA_FT_TEST(uct_tools, ucx_info_single_device_has_no_backup)
{
    char env[1024], *out = malloc(TOOLS_OUT_MAX);

    tools_env(env, sizeof(env), "tsoft", 1, 1, "");
    tools_ucx_info(env, "-d -t gda_ft", out);
    tools_expect(out, "# Memory domain: gda_ft_tsoft0");
    tools_expect(out, "#         Backup: tsoft0:1 -> no backup (one path, "
                      "no failover)");
    tools_expect(out, "#           connection: to ep");
    free(out);
}

GDA_FT_TEST(uct_tools, ucx_info_explicit_backup_map)
{
    char env[1024], *out = malloc(TOOLS_OUT_MAX);

    tools_env(env, sizeof(env), "tsoft", 4, 1,
              "UCX_GDA_FT_BACKUP_MAP=tsoft0:1=tsoft3:1");
    tools_ucx_info(env, "-d -t gda_ft", out);
    tools_expect(out, "Backup: tsoft0:1 -> backup tsoft3:1 (explicit map)");
    free(out);
}

GDA_FT_TEST(uct_tools, ucx_info_documents_every_setting)
{
    static const char *names[] = {
        "FAILOVER", "DEADLINE", "TIMEOUT", "RETRY_COUNT", "RNR_RETRY",
        "TRAFFIC_CLASS", "TX_MAX_POLL", "SEG_SIZE", "PRINT_BACKUP",
        "TX_MAX_BUFS", "TX_BUFS_GROW", "BACKUP_MAP", "TOPO_FILE", "CUDA_REG",
        "SOFT_DEVICES", "OOB_TX_QUEUE", "OOB_TX_MAX_MSGS", NULL
    };
    char env[1024], line[128], *out = malloc(TOOLS_OUT_MAX);
    unsigned i;

    tools_env(env, sizeof(env), "tsoft", 2, 1, "");
    tools_ucx_info(env, "-c", out);
    for (i = 0; names[i] != NULL; ++i) {
        snprintf(line, sizeof(line), "\nUCX_GDA_FT_%s=", names[i]);
        tools_expect(out, line);
    }
    tools_expect(out, "\nUCX_GDA_FT_DEADLINE=auto");
    tools_expect(out, "\nUCX_GDA_FT_FAILOVER=y");
    /* the endpoint datapath's settings are gone with it */
    GDA_FT_ASSERT(strstr(out, "\nUCX_GDA_FT_HOST_CHANNEL=") == NULL);
    GDA_FT_ASSERT(strstr(out, "\nUCX_GDA_FT_LOG_SIZE=") == NULL);

    /* with documentation */
    tools_ucx_info(env, "-cf", out);
    tools_expect(out, "is failed over");
    tools_expect(out, "Explicit backup ports");
    free(out);
}


/* ---- ucx_perftest -------------------------------------------------------- */

/* Whether a TCP port is listening (the server is ready for the client) */
static int tools_tcp_listening(unsigned port)
{
    char line[512];
    unsigned local_port, state;
    FILE *f;
    int found = 0;

    f = fopen("/proc/net/tcp", "r");
    if (f == NULL) {
        return 0;
    }
    while (fgets(line, sizeof(line), f) != NULL) {
        if ((sscanf(line, " %*d: %*x:%x %*x:%*x %x", &local_port,
                    &state) == 2) && (local_port == port) && (state == 0x0a)) {
            found = 1;
        }
    }
    fclose(f);
    return found;
}

typedef struct {
    unsigned long iters;
    double        lat_typical, lat_avg, lat_overall;
    double        bw_avg, bw_overall, mr_avg, mr_overall;
} perf_result_t;

/* "Final: N lat50 lat_avg lat_all bw_avg bw_all mr_avg mr_all" */
static void tools_parse_final(const char *out, perf_result_t *r)
{
    const char *final = strstr(out, "Final:");

    if ((final == NULL) ||
        (sscanf(final, "Final: %lu %lf %lf %lf %lf %lf %lf %lf", &r->iters,
                &r->lat_typical, &r->lat_avg, &r->lat_overall, &r->bw_avg,
                &r->bw_overall, &r->mr_avg, &r->mr_overall) != 8)) {
        printf("%s\n", out);
        GDA_FT_FAIL("no result line in the perftest output above");
    }
}

/*
 * Payload bytes the client's soft HCA ports carried, both directions, from
 * the lines each port logs at close ("<dev>:<port> carried tx N packets B
 * bytes, rx N packets B bytes"); -1 when none logged
 */
static double tools_carried_bytes(const char *out)
{
    double sum = -1;
    unsigned long tx, rx;
    const char *p;

    for (p = out; (p = strstr(p, " carried tx ")) != NULL; ++p) {
        if (sscanf(p, " carried tx %*u packets %lu bytes, rx %*u packets "
                   "%lu bytes", &tx, &rx) == 2) {
            sum = ((sum < 0) ? 0 : sum) + (double)tx + (double)rx;
        }
    }
    return sum;
}

/* The message size of perftest arguments: -s, else 8 (the atomics') */
static double tools_msg_size(const char *args)
{
    const char *s = strstr(args, "-s ");

    return (s != NULL) ? strtod(s + 3, NULL) : 8;
}

/*
 * Runs ucx_perftest as a server (soft HCAs gda0/gda1 on 127.0.0.1/.2) and a
 * client (gda0/gda1 on 127.0.0.3/.4): same device names, other addresses,
 * as two hosts would have. Both must exit 0; returns the client's result.
 * The client's soft HCA ports must have carried at least the payload the
 * run moved (iterations times the message size): gda_ft carried the
 * traffic, not another transport. ucx_perftest cannot check the data it
 * moves; the UCP programs' tests do that.
 */
static void tools_perftest_ex(const char *args, const char *extra_env,
                              const char *server_env, unsigned long iters,
                              const char *client_expect, perf_result_t *r,
                              char **client_out)
{
    char senv[1024], cenv[1024], cmd[4096], log[256];
    char *out = malloc(TOOLS_OUT_MAX), *sout = malloc(TOOLS_OUT_MAX);
    unsigned port = tools_tcp_port();
    double deadline, carried;
    int ret, status;
    pid_t server;
    FILE *f;
    size_t n;

    tools_env(senv, sizeof(senv), "gda", 2, 1, extra_env);
    tools_env(cenv, sizeof(cenv), "gda", 2, 3, extra_env);
    /* info: the ports' "carried" lines at close */
    if (strstr(extra_env, "UCX_LOG_LEVEL=") == NULL) {
        strncat(cenv, " UCX_LOG_LEVEL=info", sizeof(cenv) - strlen(cenv) - 1);
    }
    if (server_env != NULL) {
        strncat(senv, " ", sizeof(senv) - strlen(senv) - 1);
        strncat(senv, server_env, sizeof(senv) - strlen(senv) - 1);
    }
    snprintf(log, sizeof(log), "/tmp/gda_ft_perftest_server.%d.log",
             (int)getpid());

    snprintf(cmd, sizeof(cmd), "%s exec %s/contrib/gda_ft-run.sh ucx_perftest"
             " -p %u %s >%s 2>&1", senv, gda_ft_test_srcdir(), port, args,
             log);
    server = fork();
    GDA_FT_ASSERT(server >= 0);
    if (server == 0) {
        execl("/bin/sh", "sh", "-c", cmd, (char*)NULL);
        _exit(127);
    }

    deadline = time(NULL) + 20;
    while (!tools_tcp_listening(port)) {
        if ((time(NULL) > deadline) ||
            (waitpid(server, &status, WNOHANG) == server)) {
            kill(server, SIGKILL);
            f = fopen(log, "r");
            n = (f != NULL) ? fread(sout, 1, TOOLS_OUT_MAX - 1, f) : 0;
            sout[n] = '\0';
            if (f != NULL) {
                fclose(f);
            }
            unlink(log);
            printf("server:\n%s\n", sout);
            GDA_FT_FAIL("the perftest server did not start");
        }
        usleep(20000);
    }

    snprintf(cmd, sizeof(cmd), "%s timeout -k 5 150 %s/contrib/gda_ft-run.sh "
             "ucx_perftest 127.0.0.1 -p %u %s 2>&1", cenv,
             gda_ft_test_srcdir(), port, args);
    ret = gda_ft_test_shell(cmd, out, TOOLS_OUT_MAX);

    deadline = time(NULL) + 30;
    while (waitpid(server, &status, WNOHANG) != server) {
        if (time(NULL) > deadline) {
            kill(server, SIGKILL);
            waitpid(server, &status, 0);
            break;
        }
        usleep(20000);
    }

    f = fopen(log, "r");
    n = (f != NULL) ? fread(sout, 1, TOOLS_OUT_MAX - 1, f) : 0;
    sout[n] = '\0';
    if (f != NULL) {
        fclose(f);
    }
    unlink(log);

    if ((ret != 0) || !WIFEXITED(status) || (WEXITSTATUS(status) != 0) ||
        (strstr(out, "UCX  ERROR") != NULL) ||
        (strstr(sout, "UCX  ERROR") != NULL)) {
        printf("client:\n%s\nserver:\n%s\n", out, sout);
        GDA_FT_FAIL("ucx_perftest %s: client exit %d, server status 0x%x",
                    args, ret, status);
    }

    if (client_expect != NULL) {
        tools_expect(out, client_expect);
    }
    tools_parse_final(out, r);
    printf("%s: %s", args, strstr(out, "Final:"));
    GDA_FT_ASSERT_EQ(r->iters, iters);
    carried = tools_carried_bytes(out);
    if (carried < (double)iters * tools_msg_size(args)) {
        printf("client:\n%s\n", out);
        GDA_FT_FAIL("the client's soft HCA ports carried %.0f bytes, less "
                    "than the %lu x %.0f the run moved", carried, iters,
                    tools_msg_size(args));
    }
    GDA_FT_ASSERT(r->lat_avg > 0);
    GDA_FT_ASSERT(r->mr_overall > 0);
    if (client_out != NULL) {
        *client_out = out;
    } else {
        free(out);
    }
    free(sout);
}

static void tools_perftest(const char *args, const char *extra_env,
                           unsigned long iters, const char *client_expect,
                           perf_result_t *r)
{
    char env[1024];

    /* No failure is injected here: a retry window (and a deadline) of
     * seconds keeps a sanitizer build on a loaded 2-core machine, whose
     * engine threads can stall for half a second, from failing over */
    snprintf(env, sizeof(env), "%s UCX_GDA_FT_TIMEOUT=500ms "
             "UCX_GDA_FT_DEADLINE=5s", extra_env);
    tools_perftest_ex(args, env, NULL, iters, client_expect, r, NULL);
}

static unsigned tools_count(const char *out, const char *text)
{
    unsigned count = 0;

    for (; (out = strstr(out, text)) != NULL; out += strlen(text)) {
        ++count;
    }
    return count;
}

/*
 * The server's primary port goes down 300 ms into the run and returns at
 * 2.3 s: the run finishes without an error, the client switched exactly
 * once, and failed back once. The deadline (400 ms) and the QP retry window
 * (8 x 200 ms) leave room for the stalls of a loaded 2-core machine on the
 * backup path, and both end long before the port returns.
 */
static void tools_perftest_failover(const char *args, const char *env,
                                    unsigned long iters)
{
    char full_env[1024];
    perf_result_t r;
    char *out;

    snprintf(full_env, sizeof(full_env), "%s UCX_LOG_LEVEL=info "
             "UCX_GDA_FT_DEADLINE=400ms UCX_GDA_FT_TIMEOUT=200ms "
             "UCX_GDA_FT_RECOVERY_WINDOW=100ms "
             "UCX_GDA_FT_REARM_BACKOFF=50ms", env);
    tools_perftest_ex(args, full_env,
                      "UCX_GDA_FT_SOFT_FAULTS='300ms:gda0:1:down;"
                      "2300ms:gda0:1:up'", iters, NULL, &r, &out);
    if ((tools_count(out, "switched to the backup path") != 1) ||
        (tools_count(out, "traffic returns to it") != 1)) {
        printf("%s\n", out);
        GDA_FT_FAIL("expected one switch and one failback in the client "
                    "output above");
    }
    free(out);
}
#define UCT_ARGS "-x gda_ft -d gda0:1 -w 100"

GDA_FT_TEST_TIMEOUT(uct_perftest, put_bw_short_bcopy_zcopy, 240)
{
    perf_result_t r;

    tools_perftest("-t put_bw -D short -s 8 -n 20000 " UCT_ARGS, "", 20000,
                   NULL, &r);
    GDA_FT_ASSERT(r.bw_overall > 0);
    tools_perftest("-t put_bw -D bcopy -s 4096 -n 5000 " UCT_ARGS, "", 5000,
                   NULL, &r);
    /* 5000 x 4 KiB at well above 1 MB/s */
    GDA_FT_ASSERT(r.bw_overall > 1.0);
    tools_perftest("-t put_bw -D zcopy -s 65536 -n 1000 " UCT_ARGS, "", 1000,
                   NULL, &r);
    GDA_FT_ASSERT(r.bw_overall > 1.0);
}

GDA_FT_TEST_TIMEOUT(uct_perftest, put_lat, 120)
{
    perf_result_t r;

    tools_perftest("-t put_lat -D short -s 8 -n 1000 " UCT_ARGS, "", 1000,
                   NULL, &r);
    /* a software HCA round trip: microseconds to milliseconds on a loaded
     * machine, never seconds */
    GDA_FT_ASSERT(r.lat_typical < 100000.0);
}

GDA_FT_TEST_TIMEOUT(uct_perftest, get_bcopy_zcopy, 240)
{
    perf_result_t r;

    tools_perftest("-t get -D bcopy -s 4096 -n 2000 " UCT_ARGS, "", 2000,
                   NULL, &r);
    tools_perftest("-t get -D zcopy -s 65536 -n 500 " UCT_ARGS, "", 500,
                   NULL, &r);
    GDA_FT_ASSERT(r.bw_overall > 1.0);
}

GDA_FT_TEST_TIMEOUT(uct_perftest, atomics, 240)
{
    perf_result_t r;

    tools_perftest("-t add_mr -n 10000 " UCT_ARGS, "", 10000, NULL, &r);
    tools_perftest("-t add_lat -n 2000 " UCT_ARGS, "", 2000, NULL, &r);
    tools_perftest("-t fadd -n 2000 " UCT_ARGS, "", 2000, NULL, &r);
    tools_perftest("-t swap -n 2000 " UCT_ARGS, "", 2000, NULL, &r);
    tools_perftest("-t cswap -n 2000 " UCT_ARGS, "", 2000, NULL, &r);
}

/* UCP over gda_ft, with tcp for wireup and active messages */
#define UCP_ENV  "UCX_TLS=gda_ft,tcp UCX_NET_DEVICES=all UCX_LOG_LEVEL=info"
#define UCP_ARGS "-w 100"
/* the lanes UCP chose, as its info log shows them */
#define UCP_RMA  "rma(gda_ft/gda0:1)"
#define UCP_AMO  "amo(gda_ft/gda0:1)"

GDA_FT_TEST_TIMEOUT(ucp_perftest, put_bw_and_lat, 240)
{
    perf_result_t r;

    tools_perftest("-t ucp_put_bw -s 65536 -n 1000 " UCP_ARGS, UCP_ENV, 1000,
                   UCP_RMA, &r);
    GDA_FT_ASSERT(r.bw_overall > 1.0);
    tools_perftest("-t ucp_put_lat -s 8 -n 2000 " UCP_ARGS, UCP_ENV, 2000,
                   UCP_RMA, &r);
}

GDA_FT_TEST_TIMEOUT(ucp_perftest, get_and_atomic_add, 240)
{
    perf_result_t r;

    tools_perftest("-t ucp_get -s 65536 -n 1000 " UCP_ARGS, UCP_ENV, 1000,
                   UCP_RMA, &r);
    tools_perftest("-t ucp_add -n 5000 " UCP_ARGS, UCP_ENV, 5000, UCP_AMO,
                   &r);
    tools_perftest("-t ucp_fadd -n 2000 " UCP_ARGS, UCP_ENV, 2000, UCP_AMO,
                   &r);
}

GDA_FT_TEST_TIMEOUT(uct_perftest, put_bw_through_failover_and_back, 240)
{
    /* long enough to outlast the failback on a fast machine too: 25000
     * ended before it on the 16-core H100 machine (2.8 s) */
    tools_perftest_failover("-t put_bw -D zcopy -s 65536 -n 60000 " UCT_ARGS,
                            "", 60000);
}

GDA_FT_TEST_TIMEOUT(ucp_perftest, put_bw_through_failover_and_back, 240)
{
    tools_perftest_failover("-t ucp_put_bw -s 65536 -n 80000 " UCP_ARGS,
                            "UCX_TLS=gda_ft,tcp UCX_NET_DEVICES=all", 80000);
}
