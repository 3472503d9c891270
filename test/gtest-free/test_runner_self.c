/*
 * The test runner tests itself: each case runs this very binary
 * (/proc/self/exe) with GDA_FT_RUNNER_SELFTEST=1, which registers hidden
 * tests that pass, fail, hang, crash, exit oddly and skip, and checks what
 * the runner printed and its exit status.
 */
#ifndef _GNU_SOURCE
#  define _GNU_SOURCE
#endif

#include "gda_ft_test.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Bound on one run of the inner runner; its slowest test hangs for 2.5 s */
#define GDA_FT_SELF_RUN_TIMEOUT_S 30

#define GDA_FT_SELF_ALL_HIDDEN    "runner_selfcheck.*"

static int gda_ft_self_enabled(void)
{
    const char *env = getenv("GDA_FT_RUNNER_SELFTEST");

    return (env != NULL) && !strcmp(env, "1");
}

/* Like GDA_FT_TEST_TIMEOUT, but registered only inside the inner runner */
#define GDA_FT_SELF_HIDDEN_TEST(_suite, _name, _timeout) \
    static void gda_ft_self_##_suite##_##_name(void); \
    static gda_ft_test_t gda_ft_self_desc_##_suite##_##_name = { \
        #_suite, #_name, gda_ft_self_##_suite##_##_name, (_timeout), NULL \
    }; \
    static void __attribute__((constructor)) \
    gda_ft_self_ctor_##_suite##_##_name(void) \
    { \
        if (gda_ft_self_enabled()) { \
            gda_ft_test_register(&gda_ft_self_desc_##_suite##_##_name); \
        } \
    } \
    static void gda_ft_self_##_suite##_##_name(void)


/*
 * Hidden tests, one per outcome
 */

GDA_FT_SELF_HIDDEN_TEST(runner_selfcheck, pass, 10)
{
    /* must not be shown: output of passing tests is dropped */
    printf("selfcheck-pass-output\n");
}

GDA_FT_SELF_HIDDEN_TEST(runner_selfcheck, fail, 10)
{
    printf("selfcheck-fail-output\n");
    GDA_FT_ASSERT_EQ(1 + 1, 3);
    printf("selfcheck-after-assert\n");
}

GDA_FT_SELF_HIDDEN_TEST(runner_selfcheck, hang, 1)
{
    pid_t helper = fork();

    if (helper == 0) {
        /* a helper process: the timeout must kill it too */
        for (;;) {
            pause();
        }
    }

    printf("selfcheck-helper-pid=%d\n", (int)helper);
    fflush(stdout);
    for (;;) {
        pause();
    }
}

GDA_FT_SELF_HIDDEN_TEST(runner_selfcheck, crash, 10)
{
    /* SIGABRT, not SIGSEGV: ASan turns a SEGV into a plain exit(1) */
    abort();
}

GDA_FT_SELF_HIDDEN_TEST(runner_selfcheck, exit_code, 10)
{
    exit(7);
}

/* a library that ends the process with status 0 in the middle of a test */
GDA_FT_SELF_HIDDEN_TEST(runner_selfcheck, exit_zero, 10)
{
    exit(0);
}

GDA_FT_SELF_HIDDEN_TEST(runner_selfcheck, skip, 10)
{
    GDA_FT_SKIP("no widget here (%d)", 42);
}

GDA_FT_SELF_HIDDEN_TEST(runner_selfstrict, unavailable, 10)
{
    GDA_FT_SKIP_UNAVAILABLE("no widget can be had (%d)", 7);
}

GDA_FT_SELF_HIDDEN_TEST(runner_selfstrict, missing, 10)
{
    GDA_FT_SKIP("the widget is not installed");
}

/* The assertion macros, each made to fail once */

GDA_FT_SELF_HIDDEN_TEST(runner_selfmacro, all_hold, 10)
{
    uint8_t a[4] = {1, 2, 3, 4}, b[4] = {1, 2, 3, 4};

    GDA_FT_ASSERT(a[0] == 1);
    GDA_FT_ASSERT_EQ(-1, -1);
    GDA_FT_ASSERT_NE(1, 2);
    GDA_FT_ASSERT_OK(0);
    GDA_FT_ASSERT_MEM_EQ(a, b, sizeof(a));
}

GDA_FT_SELF_HIDDEN_TEST(runner_selfmacro, assert_false, 10)
{
    int value = 5;

    GDA_FT_ASSERT(value < 3);
}

GDA_FT_SELF_HIDDEN_TEST(runner_selfmacro, eq_differs, 10)
{
    GDA_FT_ASSERT_EQ(0x10, 0x11);
}

GDA_FT_SELF_HIDDEN_TEST(runner_selfmacro, ne_same, 10)
{
    GDA_FT_ASSERT_NE(3, 3);
}

GDA_FT_SELF_HIDDEN_TEST(runner_selfmacro, ok_error, 10)
{
    GDA_FT_ASSERT_OK(-2);
}

GDA_FT_SELF_HIDDEN_TEST(runner_selfmacro, mem_differs, 10)
{
    uint8_t a[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    uint8_t b[8] = {0, 1, 2, 3, 4, 0xaa, 6, 7};

    GDA_FT_ASSERT_MEM_EQ(a, b, sizeof(a));
}


/*
 * Running the inner runner
 */

typedef struct gda_ft_self_run {
    int    status;      /* from waitpid() */
    char  *output;      /* stdout and stderr, NUL-terminated */
    size_t length;
    double elapsed_s;
} gda_ft_self_run_t;

static double gda_ft_self_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + (ts.tv_nsec * 1e-9);
}

/*
 * Run this binary with the given arguments (NULL-terminated). Unless NULL,
 * env_filter and timeout_scale set GDA_FT_TEST_FILTER and
 * GDA_FT_TEST_TIMEOUT_SCALE; otherwise they are cleared, so that the outer
 * run's settings do not leak in.
 */
static void gda_ft_self_run(gda_ft_self_run_t *run, int selftest,
                            const char *env_filter, const char *timeout_scale,
                            const char *const *args)
{
    const char *argv[16];
    char exe[4096];
    struct pollfd pfd;
    size_t capacity, nargs;
    double start;
    ssize_t ret;
    int fds[2];
    pid_t pid;

    ret = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    GDA_FT_ASSERT(ret > 0);
    exe[ret] = '\0';

    argv[0] = exe;
    for (nargs = 0; args[nargs] != NULL; ++nargs) {
        GDA_FT_ASSERT(nargs + 2 < sizeof(argv) / sizeof(argv[0]));
        argv[nargs + 1] = args[nargs];
    }
    argv[nargs + 1] = NULL;

    GDA_FT_ASSERT_EQ(pipe(fds), 0);
    fflush(stdout);
    fflush(stderr);

    start = gda_ft_self_now();
    pid   = fork();
    GDA_FT_ASSERT(pid >= 0);
    if (pid == 0) {
        close(fds[0]);
        dup2(fds[1], STDOUT_FILENO);
        dup2(fds[1], STDERR_FILENO);
        close(fds[1]);

        if (selftest) {
            setenv("GDA_FT_RUNNER_SELFTEST", "1", 1);
        } else {
            unsetenv("GDA_FT_RUNNER_SELFTEST");
        }
        if (env_filter != NULL) {
            setenv("GDA_FT_TEST_FILTER", env_filter, 1);
        } else {
            unsetenv("GDA_FT_TEST_FILTER");
        }
        if (timeout_scale != NULL) {
            setenv("GDA_FT_TEST_TIMEOUT_SCALE", timeout_scale, 1);
        } else {
            unsetenv("GDA_FT_TEST_TIMEOUT_SCALE");
        }
        /* the outer runner's strict mode (CI) is not the inner one's */
        if (getenv("GDA_FT_SELF_STRICT") != NULL) {
            setenv("GDA_FT_TEST_STRICT", "1", 1);
        } else {
            unsetenv("GDA_FT_TEST_STRICT");
        }

        execv(exe, (char *const*)argv);
        _exit(127);
    }
    close(fds[1]);

    capacity    = 4096;
    run->length = 0;
    run->output = malloc(capacity);
    GDA_FT_ASSERT(run->output != NULL);

    for (;;) {
        if (gda_ft_self_now() - start > GDA_FT_SELF_RUN_TIMEOUT_S) {
            kill(pid, SIGKILL);
            waitpid(pid, NULL, 0);
            GDA_FT_FAIL("inner runner did not finish in %d s",
                        GDA_FT_SELF_RUN_TIMEOUT_S);
        }

        pfd.fd     = fds[0];
        pfd.events = POLLIN;
        if (poll(&pfd, 1, 100) <= 0) {
            continue;
        }

        if (capacity - run->length < 1024) {
            capacity   *= 2;
            run->output = realloc(run->output, capacity);
            GDA_FT_ASSERT(run->output != NULL);
        }

        ret = read(fds[0], run->output + run->length,
                   capacity - run->length - 1);
        if (ret == 0) {
            break;
        } else if (ret < 0) {
            GDA_FT_ASSERT(errno == EINTR);
            continue;
        }
        run->length += ret;
    }
    run->output[run->length] = '\0';
    close(fds[0]);

    GDA_FT_ASSERT_EQ(waitpid(pid, &run->status, 0), pid);
    run->elapsed_s = gda_ft_self_now() - start;

    /* shown only if the calling test fails */
    printf("---- inner runner output ----\n%s----\n", run->output);
}

static int gda_ft_self_exit_code(const gda_ft_self_run_t *run)
{
    GDA_FT_ASSERT(WIFEXITED(run->status));
    return WEXITSTATUS(run->status);
}

/* Start of the line that begins with prefix, or NULL */
static const char *gda_ft_self_find_line(const char *output,
                                         const char *prefix)
{
    const char *line = output;
    size_t len       = strlen(prefix);

    while (*line != '\0') {
        if (!strncmp(line, prefix, len)) {
            return line;
        }
        line = strchr(line, '\n');
        if (line == NULL) {
            break;
        }
        ++line;
    }
    return NULL;
}

static const char *gda_ft_self_expect_line(const gda_ft_self_run_t *run,
                                           const char *prefix)
{
    const char *line = gda_ft_self_find_line(run->output, prefix);

    if (line == NULL) {
        GDA_FT_FAIL("no line starts with '%s'", prefix);
    }
    return line;
}

/* The output must end with exactly this line */
static void gda_ft_self_expect_last_line(const gda_ft_self_run_t *run,
                                         const char *expected)
{
    size_t len = strlen(expected);

    GDA_FT_ASSERT(run->length >= len + 1);
    GDA_FT_ASSERT_EQ(run->output[run->length - 1], '\n');
    GDA_FT_ASSERT((run->length == len + 1) ||
                  (run->output[run->length - len - 2] == '\n'));
    if (strncmp(run->output + run->length - len - 1, expected, len)) {
        GDA_FT_FAIL("last line is not '%s'", expected);
    }
}

/* Number of lines that start with prefix */
static int gda_ft_self_count_lines(const char *output, const char *prefix)
{
    const char *line;
    int count = 0;

    for (line = gda_ft_self_find_line(output, prefix); line != NULL;
         line = gda_ft_self_find_line(line + 1, prefix)) {
        ++count;
    }
    return count;
}

static int gda_ft_self_process_exists(pid_t pid)
{
    char path[64];

    snprintf(path, sizeof(path), "/proc/%d", (int)pid);
    return access(path, F_OK) == 0;
}

static void gda_ft_self_free(gda_ft_self_run_t *run)
{
    free(run->output);
    run->output = NULL;
}


/*
 * The tests
 */

GDA_FT_TEST(test_runner, reports_every_outcome)
{
    static const char *const args[] = {"-f", GDA_FT_SELF_ALL_HIDDEN, NULL};
    const char *crash, *exit_code, *exit_zero, *fail, *hang, *pass, *skip;
    const char *helper;
    gda_ft_self_run_t run;
    int helper_pid;

    gda_ft_self_run(&run, 1, NULL, "1", args);

    GDA_FT_ASSERT_EQ(gda_ft_self_exit_code(&run), 1);

    crash     = gda_ft_self_expect_line(&run,
                    "[FAIL] runner_selfcheck.crash (killed by SIGABRT");
    exit_code = gda_ft_self_expect_line(&run,
                    "[FAIL] runner_selfcheck.exit_code (exit code 7, ");
    exit_zero = gda_ft_self_expect_line(&run,
                    "[FAIL] runner_selfcheck.exit_zero (exited 0 before "
                    "its test finished, ");
    fail      = gda_ft_self_expect_line(&run,
                    "[FAIL] runner_selfcheck.fail (");
    hang      = gda_ft_self_expect_line(&run,
                    "[FAIL] runner_selfcheck.hang (TIMEOUT after 1.0 s)\n");
    pass      = gda_ft_self_expect_line(&run, "[ OK ] runner_selfcheck.pass (");
    skip      = gda_ft_self_expect_line(&run,
                    "[SKIP] runner_selfcheck.skip: no widget here (42)\n");

    /* sorted by "suite.name" */
    GDA_FT_ASSERT(crash < exit_code);
    GDA_FT_ASSERT(exit_code < exit_zero);
    GDA_FT_ASSERT(exit_zero < fail);
    GDA_FT_ASSERT(fail < hang);
    GDA_FT_ASSERT(hang < pass);
    GDA_FT_ASSERT(pass < skip);

    /* a failed test's output follows its line, in the order written, and
     * the test stopped at the assertion */
    GDA_FT_ASSERT(strstr(fail, "selfcheck-fail-output\n") != NULL);
    GDA_FT_ASSERT(strstr(fail, "selfcheck-fail-output\n") < hang);
    GDA_FT_ASSERT(strstr(fail, "test_runner_self.c:") <
                  strstr(fail, "1 + 1 == 3: 2 != 3"));
    GDA_FT_ASSERT(strstr(fail, "selfcheck-fail-output\n") <
                  strstr(fail, "1 + 1 == 3: 2 != 3"));
    GDA_FT_ASSERT(strstr(fail, "1 + 1 == 3: 2 != 3") < hang);
    GDA_FT_ASSERT(strstr(run.output, "selfcheck-after-assert") == NULL);

    /* a passing test's output is dropped */
    GDA_FT_ASSERT(strstr(run.output, "selfcheck-pass-output") == NULL);

    /* the hung test's helper process died with it, and was reaped */
    helper = strstr(hang, "selfcheck-helper-pid=");
    GDA_FT_ASSERT((helper != NULL) && (helper < pass));
    GDA_FT_ASSERT_EQ(sscanf(helper, "selfcheck-helper-pid=%d", &helper_pid),
                     1);
    GDA_FT_ASSERT(helper_pid > 0);
    /* killed and reaped (not left a zombie) before the runner went on */
    GDA_FT_ASSERT(!gda_ft_self_process_exists(helper_pid));

    /* one 1 s timeout, everything else quick */
    GDA_FT_ASSERT(run.elapsed_s < 15);

    GDA_FT_ASSERT_EQ(gda_ft_self_count_lines(run.output, "["), 7);
    gda_ft_self_expect_last_line(&run, "1 passed, 5 failed, 1 skipped");
    gda_ft_self_free(&run);
}

GDA_FT_TEST(test_runner, assert_macros_report_values)
{
    static const char *const args[] = {"-f", "runner_selfmacro.*", NULL};
    const char *line;
    gda_ft_self_run_t run;

    gda_ft_self_run(&run, 1, NULL, NULL, args);
    GDA_FT_ASSERT_EQ(gda_ft_self_exit_code(&run), 1);

    gda_ft_self_expect_line(&run, "[ OK ] runner_selfmacro.all_hold (");

    line = gda_ft_self_expect_line(&run,
                                   "[FAIL] runner_selfmacro.assert_false (");
    GDA_FT_ASSERT(strstr(line, "assertion failed: value < 3\n") != NULL);

    line = gda_ft_self_expect_line(&run,
                                   "[FAIL] runner_selfmacro.eq_differs (");
    GDA_FT_ASSERT(strstr(line, "0x10 == 0x11: 16 != 17 (0x10 != 0x11)\n") !=
                  NULL);

    line = gda_ft_self_expect_line(&run, "[FAIL] runner_selfmacro.ne_same (");
    GDA_FT_ASSERT(strstr(line, "3 != 3: both 3\n") != NULL);

    line = gda_ft_self_expect_line(&run, "[FAIL] runner_selfmacro.ok_error (");
    GDA_FT_ASSERT(strstr(line, "-2: status -2\n") != NULL);

    line = gda_ft_self_expect_line(&run,
                                   "[FAIL] runner_selfmacro.mem_differs (");
    GDA_FT_ASSERT(strstr(line, "a and b differ at byte 5 of 8: "
                               "0x05 != 0xaa\n") != NULL);

    gda_ft_self_expect_last_line(&run, "1 passed, 5 failed, 0 skipped");
    gda_ft_self_free(&run);
}

GDA_FT_TEST(test_runner, include_and_exclude_filters)
{
    static const char *const include[] = {
        "-f", "runner_selfcheck.pass", "-f", "*.skip", NULL
    };
    static const char *const exclude[] = {
        "-f", GDA_FT_SELF_ALL_HIDDEN, "-x", "*.fail", "-x", "*.hang",
        "-x", "runner_selfcheck.[ce]*", NULL
    };
    static const char *const none[] = {NULL};
    static const char *const cmdline_wins[] = {
        "-f", "runner_selfcheck.pass", NULL
    };
    const char *const *cases[] = {include, exclude};
    gda_ft_self_run_t run;
    size_t i;

    /* both sets select exactly pass and skip: success, and a skip noted */
    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); ++i) {
        gda_ft_self_run(&run, 1, NULL, NULL, cases[i]);
        GDA_FT_ASSERT_EQ(gda_ft_self_exit_code(&run), 0);
        gda_ft_self_expect_line(&run, "[ OK ] runner_selfcheck.pass (");
        gda_ft_self_expect_line(&run, "[SKIP] runner_selfcheck.skip: ");
        GDA_FT_ASSERT_EQ(gda_ft_self_count_lines(run.output, "["), 2);
        gda_ft_self_expect_last_line(&run, "1 passed, 0 failed, 1 skipped");
        gda_ft_self_free(&run);
    }

    /* the environment filter, ':'-separated */
    gda_ft_self_run(&run, 1, "runner_selfcheck.pass:*.exit_code", NULL,
                    none);
    GDA_FT_ASSERT_EQ(gda_ft_self_exit_code(&run), 1);
    GDA_FT_ASSERT_EQ(gda_ft_self_count_lines(run.output, "["), 2);
    gda_ft_self_expect_line(&run, "[ OK ] runner_selfcheck.pass (");
    gda_ft_self_expect_line(&run, "[FAIL] runner_selfcheck.exit_code (");
    gda_ft_self_expect_last_line(&run, "1 passed, 1 failed, 0 skipped");
    gda_ft_self_free(&run);

    /* -f replaces the environment filter */
    gda_ft_self_run(&run, 1, "*.exit_code", NULL, cmdline_wins);
    GDA_FT_ASSERT_EQ(gda_ft_self_exit_code(&run), 0);
    GDA_FT_ASSERT_EQ(gda_ft_self_count_lines(run.output, "["), 1);
    gda_ft_self_expect_last_line(&run, "1 passed, 0 failed, 0 skipped");
    gda_ft_self_free(&run);
}

GDA_FT_TEST(test_runner, no_match_is_an_error)
{
    static const char *const args[] = {"-f", "no_such_suite.*", NULL};
    gda_ft_self_run_t run;

    gda_ft_self_run(&run, 1, NULL, NULL, args);
    GDA_FT_ASSERT_EQ(gda_ft_self_exit_code(&run), 1);
    GDA_FT_ASSERT_EQ(gda_ft_self_count_lines(run.output, "["), 0);
    gda_ft_self_expect_last_line(&run, "0 passed, 0 failed, 0 skipped");
    gda_ft_self_free(&run);
}

/* Strict mode: a skip of what setup installs fails; one of what no setup
 * can give stays a skip */
GDA_FT_TEST(test_runner, strict_mode_fails_skips_setup_could_avoid)
{
    static const char *const args[] = {"-f", "runner_selfstrict.*", NULL};
    gda_ft_self_run_t run;

    setenv("GDA_FT_SELF_STRICT", "1", 1);
    gda_ft_self_run(&run, 1, NULL, NULL, args);
    unsetenv("GDA_FT_SELF_STRICT");
    GDA_FT_ASSERT_EQ(gda_ft_self_exit_code(&run), 1);
    gda_ft_self_expect_line(&run, "[FAIL] runner_selfstrict.missing "
                            "(skipped, and strict mode runs it: the widget "
                            "is not installed)\n");
    gda_ft_self_expect_line(&run, "[SKIP] runner_selfstrict.unavailable: "
                            "no widget can be had (7)\n");
    gda_ft_self_expect_last_line(&run, "0 passed, 1 failed, 1 skipped");
    gda_ft_self_free(&run);

    /* without it both are skips */
    gda_ft_self_run(&run, 1, NULL, NULL, args);
    GDA_FT_ASSERT_EQ(gda_ft_self_exit_code(&run), 0);
    gda_ft_self_expect_line(&run, "[SKIP] runner_selfstrict.missing: the "
                            "widget is not installed\n");
    gda_ft_self_expect_last_line(&run, "0 passed, 0 failed, 2 skipped");
    gda_ft_self_free(&run);
}

GDA_FT_TEST(test_runner, list_shows_sorted_names)
{
    static const char *const args[] = {"-l", "-f", GDA_FT_SELF_ALL_HIDDEN,
                                       NULL};
    static const char *const expected =
        "runner_selfcheck.crash\n"
        "runner_selfcheck.exit_code\n"
        "runner_selfcheck.exit_zero\n"
        "runner_selfcheck.fail\n"
        "runner_selfcheck.hang\n"
        "runner_selfcheck.pass\n"
        "runner_selfcheck.skip\n";
    gda_ft_self_run_t run;

    /* nothing runs: the hang would take a second */
    gda_ft_self_run(&run, 1, NULL, NULL, args);
    GDA_FT_ASSERT_EQ(gda_ft_self_exit_code(&run), 0);
    GDA_FT_ASSERT(!strcmp(run.output, expected));
    gda_ft_self_free(&run);

    /* without GDA_FT_RUNNER_SELFTEST the hidden tests do not exist */
    gda_ft_self_run(&run, 0, NULL, NULL, args);
    GDA_FT_ASSERT_NE(gda_ft_self_exit_code(&run), 0);
    GDA_FT_ASSERT_EQ(run.length, 0);
    gda_ft_self_free(&run);
}

GDA_FT_TEST(test_runner, verbose_shows_output_live)
{
    static const char *const args[] = {"-v", "-f", "runner_selfcheck.pass",
                                       NULL};
    const char *run_line, *ok_line, *output;
    gda_ft_self_run_t run;

    gda_ft_self_run(&run, 1, NULL, NULL, args);
    GDA_FT_ASSERT_EQ(gda_ft_self_exit_code(&run), 0);
    run_line = gda_ft_self_expect_line(&run, "[ RUN ] runner_selfcheck.pass\n");
    output   = gda_ft_self_expect_line(&run, "selfcheck-pass-output\n");
    ok_line  = gda_ft_self_expect_line(&run, "[ OK ] runner_selfcheck.pass (");
    GDA_FT_ASSERT(run_line < output);
    GDA_FT_ASSERT(output < ok_line);
    gda_ft_self_expect_last_line(&run, "1 passed, 0 failed, 0 skipped");
    gda_ft_self_free(&run);
}

GDA_FT_TEST(test_runner, timeout_scale_stretches_timeout)
{
    static const char *const args[] = {"-f", "runner_selfcheck.hang", NULL};
    static const char *const bad_args[] = {"-f", "runner_selfcheck.pass",
                                           NULL};
    gda_ft_self_run_t run;

    gda_ft_self_run(&run, 1, NULL, "2.5", args);
    GDA_FT_ASSERT_EQ(gda_ft_self_exit_code(&run), 1);
    gda_ft_self_expect_line(&run,
                            "[FAIL] runner_selfcheck.hang (TIMEOUT after "
                            "2.5 s)\n");
    GDA_FT_ASSERT(run.elapsed_s >= 2.4);
    gda_ft_self_expect_last_line(&run, "0 passed, 1 failed, 0 skipped");
    gda_ft_self_free(&run);

    /* a scale that is not a positive number is refused, not ignored */
    gda_ft_self_run(&run, 1, NULL, "zero", bad_args);
    GDA_FT_ASSERT_EQ(gda_ft_self_exit_code(&run), 2);
    GDA_FT_ASSERT(strstr(run.output, "GDA_FT_TEST_TIMEOUT_SCALE") != NULL);
    gda_ft_self_free(&run);
}

GDA_FT_TEST(test_runner, dirs_default_and_override)
{
    char path[4096];

    unsetenv("GDA_FT_BUILDDIR");
    unsetenv("GDA_FT_SRCDIR");
    GDA_FT_ASSERT(!strcmp(gda_ft_test_builddir(), GDA_FT_BUILDDIR));
    GDA_FT_ASSERT(!strcmp(gda_ft_test_srcdir(), GDA_FT_SRCDIR));

    /* the defaults point at this build and its sources */
    snprintf(path, sizeof(path), "%s/test/gtest-free/gda_ft_tests",
             gda_ft_test_builddir());
    GDA_FT_ASSERT_EQ(access(path, X_OK), 0);
    snprintf(path, sizeof(path), "%s/test/gtest-free/gda_ft_test.h",
             gda_ft_test_srcdir());
    GDA_FT_ASSERT_EQ(access(path, R_OK), 0);

    setenv("GDA_FT_BUILDDIR", "/nonexistent/build", 1);
    setenv("GDA_FT_SRCDIR", "/nonexistent/src", 1);
    GDA_FT_ASSERT(!strcmp(gda_ft_test_builddir(), "/nonexistent/build"));
    GDA_FT_ASSERT(!strcmp(gda_ft_test_srcdir(), "/nonexistent/src"));
}
