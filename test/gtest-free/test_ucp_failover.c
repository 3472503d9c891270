/*
 * UCP over gda_ft through a port failure: runs test/ucp/gda_ft_ucp_failover
 * (a server and a client process, two soft HCAs each, UCX_TLS=gda_ft,tcp)
 * through contrib/gda_ft-run.sh with the plugin of this build tree, and
 * checks its exit status and summary lines:
 *
 *   [client] SUMMARY client mode=... puts_err=N amo_err=N ... ep_error=...
 *   [server] SUMMARY server ... slots_bad=N guard_bad=N counter_ok=0|1 ...
 *   [client] FAILOVER fault_at_iter=I interruption_ms=T err_after_ms=T
 *            ep_err_after_ms=T
 *   [launcher] RESULT PASS|FAIL
 *
 * and the transport's failover log lines (UCX DIAG "switched to the backup
 * path" per switch, ERROR "no other path is left" when both paths died),
 * plus its counters when it offers a "counters" control command. A switch
 * that the endpoint survives is no warning: a run through one has none.
 */
#include "gda_ft_test.h"

#include <gda_ft_ucs_compat.h>
#include <ctype.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>


#define UFO_OUT_MAX     (1024 * 1024)
#define UFO_SWITCH_LINE "switched to the backup path"
#define UFO_NOPATH_LINE "no other path is left"


typedef struct {
    char *out;
    int   exit_code;
} ufo_run_t;

static void ufo_check_prereq(void)
{
    char path[1024];
    struct stat st;

    snprintf(path, sizeof(path), "%s/test/ucp/gda_ft_ucp_failover",
             gda_ft_test_builddir());
    if (stat(path, &st) != 0) {
        GDA_FT_FAIL("%s is missing: build it with 'make build-tests'", path);
    }
    snprintf(path, sizeof(path), "%s/.libs/libuct_gda_ft.so",
             gda_ft_test_builddir());
    if (stat(path, &st) != 0) {
        GDA_FT_FAIL("%s is missing: build it with 'make all'", path);
    }
}

/*
 * UCP's v2 protocols (the default since UCX 1.16, through 1.22 at least)
 * have no atomic protocol for an endpoint with error handling, whatever the
 * transport: amo_offload.c never sets UCP_PROTO_COMMON_INIT_FLAG_ERR_HANDLING,
 * and ucp_proto_single_init() refuses a lane without it unless the mode is
 * NONE. Every atomic then fails with "cannot find remote protocol". The
 * program's endpoints use UCP_ERR_HANDLING_MODE_PEER, so on those versions
 * it runs with the v1 protocols, which have atomics there.
 */
#if GDA_FT_UCX_AT_LEAST(1, 22)
/* 1.22 has no v1 RMA protocols left (ucp_put_nbx() returns UNSUPPORTED
 * without UCX_PROTO_ENABLE): the runs use v2, without atomics */
#  define UFO_PROTO_ENV  ""
#  define UFO_NO_ATOMICS " --amo none"
#elif GDA_FT_UCX_AT_LEAST(1, 16)
#  define UFO_PROTO_ENV  "UCX_PROTO_ENABLE=n"
#  define UFO_NO_ATOMICS ""
#else
#  define UFO_PROTO_ENV  ""
#  define UFO_NO_ATOMICS ""
#endif

/* How many of `iters` iterations post an atomic in this UCX */
#define UFO_AMO_ITERS(_iters) ((UFO_NO_ATOMICS[0] != '\0') ? 0 : (_iters))

/* A test about UCP atomics: skipped where UCP has none to offer */
#define UFO_NEED_ATOMICS() \
    do { \
        if (UFO_AMO_ITERS(1) == 0) { \
            GDA_FT_SKIP("UCX %s: UCP has no atomic protocol for endpoints " \
                        "with error handling (v2 protocols), and no v1 RMA " \
                        "protocols left", UCT_VERNO_STRING); \
            return; \
        } \
    } while (0)

/*
 * Runs the program with args; extra_env: more assignments, or "". The
 * whole output (both processes, UCX logs included) goes to r->out. With
 * --timeout 30 the program gives up on a hung operation after 30 s and its
 * launcher kills both sides after 30 * 2 + 30 + 30 s, within the test's
 * timeout.
 */
static void ufo_run(const char *args, const char *extra_env, ufo_run_t *r)
{
    char cmd[4096];

    ufo_check_prereq();
    r->out = malloc(UFO_OUT_MAX);
    GDA_FT_ASSERT(r->out != NULL);

    snprintf(cmd, sizeof(cmd),
             "env -u UCX_GDA_FT_SOFT_FAULTS -u UCX_GDA_FT_SOFT_DEVICES "
             "GDA_FT_BUILD_DIR='%s/.libs' UCX_GDA_FT_SOFT_CTL_DIR= "
             "UCX_TLS=gda_ft,tcp UCX_NET_DEVICES=all UCX_LOG_LEVEL=diag %s %s "
             "%s/contrib/gda_ft-run.sh %s/test/ucp/gda_ft_ucp_failover %s%s "
             "--timeout 30 2>&1", gda_ft_test_builddir(),
             UFO_PROTO_ENV, extra_env, gda_ft_test_srcdir(),
             gda_ft_test_builddir(), args, UFO_NO_ATOMICS);
    r->exit_code = gda_ft_test_shell(cmd, r->out, UFO_OUT_MAX);
}

static void ufo_fail(const ufo_run_t *r, const char *fmt, const char *what)
{
    printf("%s\n", r->out);
    GDA_FT_FAIL(fmt, what);
}

static void ufo_expect(const ufo_run_t *r, const char *text)
{
    if (strstr(r->out, text) == NULL) {
        ufo_fail(r, "the output above does not contain \"%s\"", text);
    }
}

static unsigned ufo_count(const char *out, const char *text)
{
    unsigned count = 0;
    const char *p  = out;

    while ((p = strstr(p, text)) != NULL) {
        ++count;
        p += strlen(text);
    }
    return count;
}

/*
 * Value of "key=" in the line that starts with prefix ("[client] SUMMARY");
 * the word after '=' is copied to value
 */
static int ufo_field(const ufo_run_t *r, const char *prefix, const char *key,
                     char *value, size_t max)
{
    const char *line = strstr(r->out, prefix), *p, *end;
    char pattern[64];
    size_t n;

    if (line == NULL) {
        return 0;
    }
    end = strchr(line, '\n');
    snprintf(pattern, sizeof(pattern), " %s=", key);
    p = strstr(line, pattern);
    if ((p == NULL) || ((end != NULL) && (p > end))) {
        return 0;
    }
    p += strlen(pattern);
    n  = strcspn(p, " \n");
    if (n >= max) {
        n = max - 1;
    }
    memcpy(value, p, n);
    value[n] = '\0';
    return 1;
}

static long long ufo_num(const ufo_run_t *r, const char *prefix,
                         const char *key)
{
    char value[64], what[128];

    if (!ufo_field(r, prefix, key, value, sizeof(value))) {
        snprintf(what, sizeof(what), "%s ... %s=", prefix, key);
        ufo_fail(r, "the output above has no \"%s\"", what);
    }
    return strtoll(value, NULL, 10);
}

static double ufo_double(const ufo_run_t *r, const char *prefix,
                         const char *key)
{
    char value[64], what[128];

    if (!ufo_field(r, prefix, key, value, sizeof(value))) {
        snprintf(what, sizeof(what), "%s ... %s=", prefix, key);
        ufo_fail(r, "the output above has no \"%s\"", what);
    }
    return strtod(value, NULL);
}

/*
 * A counter of the transport's "counters" control command output, "NAME=N"
 * or "NAME: N" on a "counters:" line, summed over the lines of the
 * client (a host channel's line is merged into its endpoint's already);
 * -1 when the transport does not offer one.
 */
static long long ufo_counter(const ufo_run_t *r, const char *name)
{
    const char *p = r->out, *line, *end, *q, *host;
    long long sum = -1;

    while ((line = strstr(p, "[client] counters: ")) != NULL) {
        end = strchr(line, '\n');
        q   = strstr(line, name);
        host = strstr(line, " host channel ");
        if ((host != NULL) && ((end == NULL) || (host < end))) {
            q = NULL;   /* merged into its endpoint's line */
        }
        if ((q != NULL) && ((end == NULL) || (q < end))) {
            q += strlen(name);
            while ((*q == ' ') || (*q == '=') || (*q == ':')) {
                ++q;
            }
            if (isdigit((unsigned char)*q)) {
                sum = ((sum < 0) ? 0 : sum) + strtoll(q, NULL, 10);
            }
        }
        p = (end != NULL) ? end : line + 1;
    }
    return sum;
}

/* Exit status 0, every byte and the counter verified, no put failed */
static void ufo_expect_pass(const ufo_run_t *r)
{
    if (r->exit_code != 0) {
        ufo_fail(r, "gda_ft_ucp_failover failed (output above)%s", "");
    }
    ufo_expect(r, "[client] RESULT PASS");
    ufo_expect(r, "[server] RESULT PASS");
    ufo_expect(r, "[launcher] RESULT PASS");
    GDA_FT_ASSERT_EQ(ufo_num(r, "[server] SUMMARY", "slots_bad"), 0);
    GDA_FT_ASSERT_EQ(ufo_num(r, "[server] SUMMARY", "guard_bad"), 0);
    GDA_FT_ASSERT_EQ(ufo_num(r, "[server] SUMMARY", "counter_ok"), 1);
    /* the whole region: slots up to 3 MiB, guards, the counter */
    GDA_FT_ASSERT(ufo_num(r, "[server] SUMMARY", "bytes_checked") >
                  (3ll << 20));
    GDA_FT_ASSERT_EQ(ufo_num(r, "[client] SUMMARY", "puts_err"), 0);
    GDA_FT_ASSERT_EQ(ufo_num(r, "[client] SUMMARY", "gets_err"), 0);
    GDA_FT_ASSERT_EQ(ufo_num(r, "[client] SUMMARY", "gets_bad"), 0);
    GDA_FT_ASSERT_EQ(ufo_num(r, "[client] SUMMARY", "fetch_dups"), 0);
    /* a flush may fail only to report posted atomics in doubt */
    GDA_FT_ASSERT_EQ(ufo_num(r, "[client] SUMMARY", "flush_errors"),
                     ufo_num(r, "[client] SUMMARY", "flush_errors_amo"));
}

/* A run through a failover: pass, one switch of the client's endpoint
 * (and of the server's, where it sends too: server_sends), counter exact
 * modulo the atomics reported in doubt */
static void ufo_expect_failover_of(const ufo_run_t *r, long long min_iters,
                                   int server_sends)
{
    long long amo_ok, amo_err, counter, switches, iters, lines;

    ufo_expect_pass(r);
    iters = ufo_num(r, "[client] SUMMARY", "iters");
    GDA_FT_ASSERT(iters >= min_iters);
    GDA_FT_ASSERT_EQ(ufo_num(r, "[client] SUMMARY", "puts_ok"), iters);
    amo_ok  = ufo_num(r, "[client] SUMMARY", "amo_ok");
    amo_err = ufo_num(r, "[client] SUMMARY", "amo_err");
    counter = ufo_num(r, "[server] SUMMARY", "counter");
    GDA_FT_ASSERT_EQ(amo_ok + amo_err, UFO_AMO_ITERS(iters));
    if (ufo_count(r->out, "peer's word: none in time") == 0) {
        /* every switch was settled with the peer's word (or had nothing
         * to settle): an atomic that completed in doubt had executed, its
         * reply alone was lost (design §5 rule 4), and the rest ran once */
        GDA_FT_ASSERT_EQ(counter, amo_ok + amo_err);
    } else {
        /* without it, an atomic in doubt may or may not have run */
        GDA_FT_ASSERT(counter >= amo_ok);
        GDA_FT_ASSERT(counter <= amo_ok + amo_err);
    }

    /* the transport logged exactly one switch (per side that sends), and
     * no lost path */
    lines = ufo_count(r->out, UFO_SWITCH_LINE);
    if ((lines < 1) || (lines > (server_sends ? 2 : 1))) {
        ufo_fail(r, "expected exactly one \"%s\" line per side that sends",
                 UFO_SWITCH_LINE);
    }
    GDA_FT_ASSERT_EQ(ufo_count(r->out, UFO_NOPATH_LINE), 0);
    if ((amo_err == 0) && (ufo_count(r->out, "UCX  WARN") != 0)) {
        ufo_fail(r, "%s", "a survived switch logged a warning");
    }
    /* the transport's counters are part of what is tested: a run that
     * prints none fails here (-1) */
    switches = ufo_counter(r, "switches");
    GDA_FT_ASSERT_EQ(switches, 1);
    printf("failover: %lld increments in doubt, counter %lld, "
           "interruption %.1f ms\n", amo_err, counter,
           ufo_double(r, "[client] FAILOVER", "interruption_ms"));
}

static void ufo_expect_failover(const ufo_run_t *r, long long min_iters)
{
    ufo_expect_failover_of(r, min_iters, 0);
}


/* ---- no failure ---------------------------------------------------------- */

GDA_FT_TEST_TIMEOUT(ucp_failover, no_failure, 180)
{
    ufo_run_t r;

    ufo_run("--mode none -n 300 --get", "", &r);
    ufo_expect_pass(&r);
    GDA_FT_ASSERT_EQ(ufo_num(&r, "[client] SUMMARY", "iters"), 300);
    GDA_FT_ASSERT_EQ(ufo_num(&r, "[client] SUMMARY", "puts_ok"), 300);
    /* each got 1 byte to 3 MiB of the read-only area, every byte right */
    GDA_FT_ASSERT_EQ(ufo_num(&r, "[client] SUMMARY", "gets_ok"), 300);
    GDA_FT_ASSERT_EQ(ufo_num(&r, "[client] SUMMARY", "amo_ok"),
                     UFO_AMO_ITERS(300));
    GDA_FT_ASSERT_EQ(ufo_num(&r, "[client] SUMMARY", "amo_err"), 0);
    GDA_FT_ASSERT_EQ(ufo_num(&r, "[server] SUMMARY", "counter"),
                     UFO_AMO_ITERS(300));
    /* every slot, 1 byte to 3 MiB, holds its last generation */
    GDA_FT_ASSERT_EQ(ufo_num(&r, "[server] SUMMARY", "slots_ok"),
                     ufo_num(&r, "[server] SUMMARY", "slots"));
    GDA_FT_ASSERT_EQ(ufo_count(r.out, UFO_SWITCH_LINE), 0);
    GDA_FT_ASSERT(strstr(r.out, "UCX  ERROR") == NULL);
    free(r.out);
}


/*
 * gda_ft alone (UCX_TLS=gda_ft): active messages over SEND/RECV on gda_ft's
 * QPs, wireup over its out-of-band channel, no tcp anywhere
 */
GDA_FT_TEST_TIMEOUT(ucp_failover, gda_ft_alone_primary_down, 180)
{
    ufo_run_t r;

    ufo_run("--mode down -n 400 -f 130 --amo fetch --get", "UCX_TLS=gda_ft",
            &r);
    ufo_expect_failover(&r, 400);
    /* reads in flight at the switch were replayed: every one completed,
     * with the right bytes */
    GDA_FT_ASSERT_EQ(ufo_num(&r, "[client] SUMMARY", "gets_ok"), 400);
    free(r.out);
}

/*
 * Active messages (ucp_am_send_nbx) over gda_ft alone: each iteration a
 * short one, one by bcopy or one by rendezvous, in turns, each checked by
 * the server once with its data; through a failure of the server's
 * primary port none is lost, none arrives twice
 */
static void ufo_expect_am(const ufo_run_t *r, long long iters)
{
    GDA_FT_ASSERT_EQ(ufo_num(r, "[client] SUMMARY", "am_sent"), iters);
    GDA_FT_ASSERT_EQ(ufo_num(r, "[client] SUMMARY", "am_err"), 0);
    GDA_FT_ASSERT_EQ(ufo_num(r, "[server] SUMMARY", "am_check"), 1);
    GDA_FT_ASSERT_EQ(ufo_num(r, "[server] SUMMARY", "am_recv"), iters);
    GDA_FT_ASSERT_EQ(ufo_num(r, "[server] SUMMARY", "am_rndv"),
                     (iters + 1) / 3);
    GDA_FT_ASSERT_EQ(ufo_num(r, "[server] SUMMARY", "am_dups"), 0);
    GDA_FT_ASSERT_EQ(ufo_num(r, "[server] SUMMARY", "am_bad"), 0);
}

GDA_FT_TEST_TIMEOUT(ucp_failover, am_gda_ft_alone_no_failure, 180)
{
    ufo_run_t r;

    ufo_run("--mode none -n 300 --am", "UCX_TLS=gda_ft", &r);
    ufo_expect_pass(&r);
    ufo_expect_am(&r, 300);
    GDA_FT_ASSERT_EQ(ufo_count(r.out, UFO_SWITCH_LINE), 0);
    GDA_FT_ASSERT(strstr(r.out, "UCX  ERROR") == NULL);
    free(r.out);
}

GDA_FT_TEST_TIMEOUT(ucp_failover, am_gda_ft_alone_primary_down, 180)
{
    ufo_run_t r;

    ufo_run("--mode down -n 400 -f 130 --amo fetch --am", "UCX_TLS=gda_ft",
            &r);
    /* the server sends too (rendezvous replies): its endpoint may switch */
    ufo_expect_failover_of(&r, 400, 1);
    ufo_expect_am(&r, 400);
    free(r.out);
}

/* ---- primary port down --------------------------------------------------- */

/* Fetching atomics: each one completes with its own status */
GDA_FT_TEST_TIMEOUT(ucp_failover, primary_down_fetching_atomics, 180)
{
    ufo_run_t r;

    UFO_NEED_ATOMICS();
    ufo_run("--mode down -n 400 -f 130 --amo fetch", "", &r);
    ufo_expect_failover(&r, 400);
    free(r.out);
}

/*
 * Posted atomics (no reply) and fetching ones in turns: a posted increment
 * has no completion of its own, so one that is in doubt after the failover
 * must make the next flush fail (the program then counts every posted
 * increment since the previous flush as in doubt); a flush that succeeds
 * promises that every increment before it was applied exactly once.
 */
GDA_FT_TEST_TIMEOUT(ucp_failover, primary_down_posted_atomics, 180)
{
    ufo_run_t r;

    UFO_NEED_ATOMICS();
    ufo_run("--mode down -n 400 -f 130 --amo mixed", "", &r);
    ufo_expect_failover(&r, 400);
    free(r.out);
}

/* The port taken down by gda_ft_softctl through the control socket */
GDA_FT_TEST_TIMEOUT(ucp_failover, primary_down_by_softctl, 180)
{
    char env[1024], dir[] = "/tmp/gda_ft_ucpfo.XXXXXX", path[1024];
    struct stat st;
    ufo_run_t r;

    snprintf(path, sizeof(path), "%s/src/tools/gda_ft_softctl",
             gda_ft_test_builddir());
    if (stat(path, &st) != 0) {
        GDA_FT_FAIL("%s is missing: build it with 'make all'", path);
    }
    GDA_FT_ASSERT(mkdtemp(dir) != NULL);
    snprintf(env, sizeof(env), "UCX_GDA_FT_SOFT_CTL_DIR=%s", dir);
    ufo_run("--mode down -n 400 -f 130 --amo fetch --fault-via softctl",
            env, &r);
    rmdir(dir);
    ufo_expect(&r, "port s0 1 down 2>&1 -> exit 0");
    ufo_expect_failover(&r, 400);
    free(r.out);
}

/* The port taken down by the server's fault schedule, 300 ms after start */
GDA_FT_TEST_TIMEOUT(ucp_failover, primary_down_by_schedule, 240)
{
    ufo_run_t r;

    ufo_run("--mode down -n 3000 --amo fetch --fault-via env "
            "--server-faults 300ms:s0:1:down", "", &r);
    /* the run must still have been going at 300 ms */
    ufo_expect_pass(&r);
    if (ufo_count(r.out, UFO_SWITCH_LINE) != 1) {
        ufo_fail(&r, "expected exactly one \"%s\" line (is the run shorter "
                 "than the 300 ms schedule?)", UFO_SWITCH_LINE);
    }
    GDA_FT_ASSERT_EQ(ufo_num(&r, "[client] SUMMARY", "puts_ok"), 3000);
    free(r.out);
}


/* ---- failback ------------------------------------------------------------ */

GDA_FT_TEST_TIMEOUT(ucp_failover, primary_down_then_up, 240)
{
    long long failbacks;
    ufo_run_t r;

    /* 2 s after the port is up: the recovery window (500 ms by default)
     * and the re-arm backoff have passed */
    ufo_run("--mode updown -n 900 -f 200 -u 450 --after-up 2 --amo fetch "
            "--get", "", &r);
    ufo_expect_failover(&r, 900);
    GDA_FT_ASSERT_EQ(ufo_num(&r, "[client] SUMMARY", "gets_ok"),
                     ufo_num(&r, "[client] SUMMARY", "iters"));
    ufo_expect(&r, "ok: s0 port 1 up");
    /* design §5 rule 6: traffic returns to the primary, in the counters
     * (a run that prints none fails: -1) and in the transport's log */
    failbacks = ufo_counter(&r, "failbacks");
    GDA_FT_ASSERT_EQ(failbacks, 1);
    ufo_expect(&r, "path primary");
    ufo_expect(&r, "traffic returns to it (failback 1)");
    free(r.out);
}


/* ---- both ports down ----------------------------------------------------- */

/*
 * Both paths gone: the endpoint's error handler runs within a bounded time
 * after the fault, every operation completes (with an error), the program
 * exits cleanly, and what the client saw succeed is in the server's memory
 */
GDA_FT_TEST_TIMEOUT(ucp_failover, both_ports_down_error_in_bounded_time, 180)
{
    char value[64];
    double err_ms;
    ufo_run_t r;

    /* deadline 400 ms; the HCA retries for 8 x 1 s */
    ufo_run("--mode both -n 400 -f 130 --err-bound 20",
            "UCX_GDA_FT_DEADLINE=400ms UCX_GDA_FT_TIMEOUT=1s", &r);
    if (r.exit_code != 0) {
        ufo_fail(&r, "gda_ft_ucp_failover failed (output above)%s", "");
    }
    ufo_expect(&r, "[client] RESULT PASS");
    ufo_expect(&r, "[server] RESULT PASS");
    ufo_expect(&r, "[client] endpoint error handler: ");
    GDA_FT_ASSERT(ufo_field(&r, "[client] SUMMARY", "ep_error", value,
                            sizeof(value)));
    GDA_FT_ASSERT(strcmp(value, "none") != 0);
    /* the primary's deadline D, the wait for the peer's word until the
     * peer has been unheard for two deadlines (it may be starved, not
     * gone) and R more (R = D + D/8 + 4 guardian passes), the backup's
     * deadline with its replay's grace (2 D) and the wait for a re-arm
     * (R): about 7 D (design §5, §8), and half a deadline for a loaded
     * machine; the output (the switches' times) shows which came late.
     * The endpoint's error, not the first operation's: an atomic in doubt
     * fails at the switch already. */
    err_ms = ufo_double(&r, "[client] FAILOVER", "ep_err_after_ms");
    if ((err_ms < 0) || (err_ms > 7.5 * 400.0)) {
        snprintf(value, sizeof(value), "%.1f", err_ms);
        ufo_fail(&r, "the endpoint's error came %s ms after the fault "
                 "(bound: 0 to 3000 ms)", value);
    }
    GDA_FT_ASSERT(ufo_num(&r, "[client] SUMMARY", "iters") < 400);
    GDA_FT_ASSERT_EQ(ufo_num(&r, "[server] SUMMARY", "slots_bad"), 0);
    GDA_FT_ASSERT_EQ(ufo_num(&r, "[server] SUMMARY", "guard_bad"), 0);
    GDA_FT_ASSERT_EQ(ufo_num(&r, "[server] SUMMARY", "counter_ok"), 1);
    GDA_FT_ASSERT_EQ(ufo_num(&r, "[client] SUMMARY", "fetch_dups"), 0);
    GDA_FT_ASSERT(ufo_count(r.out, UFO_NOPATH_LINE) >= 1);
    printf("both ports down: endpoint error after %.1f ms\n", err_ms);
    free(r.out);
}
