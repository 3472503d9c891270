/*
 * gtest-free test runner.
 *
 * Tests register themselves from constructors (see gda_ft_test.h). The runner
 * sorts them by "suite.name", applies the filters, and runs each one in a
 * forked child that leads its own process group, so that a crash, a hang or a
 * stray helper process fails one test and never the run. A child's stdout and
 * stderr go to a temporary file that is printed only if the test fails.
 *
 * Child exit status: GDA_FT_TEST_EXIT_PASS (with GDA_FT_TEST_FINISHED on
 * the status pipe, or it is a failure), _FAIL or _SKIP (a skip reason
 * travels back through a pipe); anything else, or a signal, is a failure.
 *
 * The last line printed is always "N passed, N failed, N skipped".
 */
#ifndef _GNU_SOURCE
#  define _GNU_SOURCE
#endif

#include "gda_ft_test.h"

#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define GDA_FT_TEST_EXIT_PASS     0
#define GDA_FT_TEST_EXIT_FAIL     97
#define GDA_FT_TEST_EXIT_SKIP     98

/* What a child writes on its status pipe once its test returned: an exit
 * status 0 without it is a test that something ended half-way */
#define GDA_FT_TEST_FINISHED      "\001finished"

/* Only the tail of a failed test's output is printed, to keep logs short */
#define GDA_FT_TEST_OUTPUT_MAX    (64 * 1024)
#define GDA_FT_TEST_REASON_MAX    256

/* Upper bound of one sleep while waiting for a child; SIGCHLD ends it early */
#define GDA_FT_TEST_POLL_NS       100000000L

typedef enum {
    GDA_FT_TEST_RESULT_PASS,
    GDA_FT_TEST_RESULT_FAIL,
    GDA_FT_TEST_RESULT_SKIP
} gda_ft_test_result_t;

typedef struct gda_ft_test_entry {
    gda_ft_test_t *test;
    char          *full_name;   /* "suite.name" */
} gda_ft_test_entry_t;

typedef struct gda_ft_test_opts {
    const char **include;       /* run tests matching any of these */
    size_t       num_include;
    const char **exclude;       /* ... and none of these */
    size_t       num_exclude;
    char        *env_filter;    /* GDA_FT_TEST_FILTER, split in place */
    int          list;
    int          verbose;
    int          strict;        /* GDA_FT_TEST_STRICT=1: skips of what
                                   setup installs are failures */
    double       timeout_scale;
} gda_ft_test_opts_t;

static gda_ft_test_t *gda_ft_test_head;
static size_t         gda_ft_test_count;

/* In a test child: write end of the pipe that carries a skip reason */
static int gda_ft_test_status_fd = -1;

/* In the runner: process group of the running test, killed on SIGINT */
static volatile sig_atomic_t gda_ft_test_running_pgid;


void gda_ft_test_register(gda_ft_test_t *test)
{
    test->next       = gda_ft_test_head;
    gda_ft_test_head = test;
    ++gda_ft_test_count;
}

void gda_ft_test_fail(const char *file, int line, const char *fmt, ...)
{
    va_list ap;

    /* keep the test's own prints ahead of the failure message */
    fflush(stdout);
    fprintf(stderr, "%s:%d: ", file, line);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);

    /* _exit: a test stopped half-way leaks by design, and LeakSanitizer
     * would turn the failure into a leak report */
    fflush(NULL);
    _exit(GDA_FT_TEST_EXIT_FAIL);
}

/* A skip reason starting with this is of something no setup can give */
#define GDA_FT_TEST_UNAVAILABLE  '\002'

static void gda_ft_test_vskip(int unavailable, const char *fmt, va_list ap)
    __attribute__((noreturn));

static void gda_ft_test_vskip(int unavailable, const char *fmt, va_list ap)
{
    char reason[GDA_FT_TEST_REASON_MAX];
    ssize_t ret;

    reason[0] = GDA_FT_TEST_UNAVAILABLE;
    vsnprintf(reason + !!unavailable, sizeof(reason) - 1, fmt, ap);

    if (gda_ft_test_status_fd >= 0) {
        /* shorter than PIPE_BUF: one atomic write */
        do {
            ret = write(gda_ft_test_status_fd, reason, strlen(reason));
        } while ((ret < 0) && (errno == EINTR));
    } else {
        printf("skipped: %s\n", reason + !!unavailable);
    }
    fflush(NULL);
    _exit(GDA_FT_TEST_EXIT_SKIP);
}

void gda_ft_test_skip(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    gda_ft_test_vskip(0, fmt, ap);
}

void gda_ft_test_skip_unavailable(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    gda_ft_test_vskip(1, fmt, ap);
}

static const char *gda_ft_test_dir(const char *env_name, const char *dflt)
{
    const char *value = getenv(env_name);

    return ((value != NULL) && (value[0] != '\0')) ? value : dflt;
}

const char *gda_ft_test_builddir(void)
{
#ifdef GDA_FT_BUILDDIR
    return gda_ft_test_dir("GDA_FT_BUILDDIR", GDA_FT_BUILDDIR);
#else
    return gda_ft_test_dir("GDA_FT_BUILDDIR", ".");
#endif
}

const char *gda_ft_test_srcdir(void)
{
#ifdef GDA_FT_SRCDIR
    return gda_ft_test_dir("GDA_FT_SRCDIR", GDA_FT_SRCDIR);
#else
    return gda_ft_test_dir("GDA_FT_SRCDIR", ".");
#endif
}

int gda_ft_test_shell(const char *cmd, char *out, size_t max)
{
    size_t len = 0, n;
    FILE *pipe;
    int ret;

    pipe = popen(cmd, "r");
    if (pipe == NULL) {
        gda_ft_test_fail(__FILE__, __LINE__, "popen(%s): %s", cmd,
                         strerror(errno));
    }
    while ((len + 1 < max) &&
           ((n = fread(out + len, 1, max - len - 1, pipe)) > 0)) {
        len += n;
    }
    out[len] = '\0';
    ret = pclose(pipe);
    if (!WIFEXITED(ret)) {
        gda_ft_test_fail(__FILE__, __LINE__, "'%s' did not exit (status "
                         "0x%x)", cmd, ret);
    }
    return WEXITSTATUS(ret);
}

static double gda_ft_test_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + (ts.tv_nsec * 1e-9);
}

static const char *gda_ft_test_signal_name(int sig)
{
#define GDA_FT_TEST_SIG(_name) case _name: return #_name
    switch (sig) {
    GDA_FT_TEST_SIG(SIGHUP);
    GDA_FT_TEST_SIG(SIGINT);
    GDA_FT_TEST_SIG(SIGQUIT);
    GDA_FT_TEST_SIG(SIGILL);
    GDA_FT_TEST_SIG(SIGTRAP);
    GDA_FT_TEST_SIG(SIGABRT);
    GDA_FT_TEST_SIG(SIGBUS);
    GDA_FT_TEST_SIG(SIGFPE);
    GDA_FT_TEST_SIG(SIGKILL);
    GDA_FT_TEST_SIG(SIGUSR1);
    GDA_FT_TEST_SIG(SIGSEGV);
    GDA_FT_TEST_SIG(SIGUSR2);
    GDA_FT_TEST_SIG(SIGPIPE);
    GDA_FT_TEST_SIG(SIGALRM);
    GDA_FT_TEST_SIG(SIGTERM);
    GDA_FT_TEST_SIG(SIGSYS);
    GDA_FT_TEST_SIG(SIGXCPU);
    GDA_FT_TEST_SIG(SIGXFSZ);
    default:
        return strsignal(sig);
    }
#undef GDA_FT_TEST_SIG
}

static void gda_ft_test_usage(const char *prog, FILE *stream)
{
    fprintf(stream,
            "Usage: %s [-l] [-v] [-f PATTERN]... [-x PATTERN]...\n"
            "  -f PATTERN  run tests whose \"suite.name\" matches the glob\n"
            "              (may repeat; default: env GDA_FT_TEST_FILTER,\n"
            "              ':'-separated, else all)\n"
            "  -x PATTERN  exclude tests matching the glob (may repeat)\n"
            "  -l          list the selected tests and exit\n"
            "  -v          show test output live instead of on failure\n"
            "Environment: GDA_FT_TEST_TIMEOUT_SCALE multiplies every "
            "timeout;\n"
            "GDA_FT_TEST_STRICT=1 fails a test skipped for want of what "
            "setup installs\n(skips for want of a GPU and the like stay "
            "skips).\n", prog);
}

static void gda_ft_test_add_pattern(const char ***patterns, size_t *count,
                                    const char *pattern)
{
    const char **grown;

    grown = realloc(*patterns, (*count + 1) * sizeof(*grown));
    if (grown == NULL) {
        fprintf(stderr, "out of memory\n");
        exit(2);
    }
    grown[(*count)++] = pattern;
    *patterns         = grown;
}

static void gda_ft_test_parse_env_filter(gda_ft_test_opts_t *opts)
{
    const char *env = getenv("GDA_FT_TEST_FILTER");
    char *saveptr, *token;

    if ((env == NULL) || (env[0] == '\0')) {
        return;
    }

    /* the patterns point into the copy */
    opts->env_filter = strdup(env);
    if (opts->env_filter == NULL) {
        fprintf(stderr, "out of memory\n");
        exit(2);
    }
    for (token = strtok_r(opts->env_filter, ":", &saveptr); token != NULL;
         token = strtok_r(NULL, ":", &saveptr)) {
        gda_ft_test_add_pattern(&opts->include, &opts->num_include, token);
    }
}

static void gda_ft_test_parse_opts(int argc, char **argv,
                                   gda_ft_test_opts_t *opts)
{
    const char *scale_env;
    char *end;
    int c;

    memset(opts, 0, sizeof(*opts));
    opts->timeout_scale = 1.0;

    while ((c = getopt(argc, argv, "f:x:lvh")) != -1) {
        switch (c) {
        case 'f':
            gda_ft_test_add_pattern(&opts->include, &opts->num_include,
                                    optarg);
            break;
        case 'x':
            gda_ft_test_add_pattern(&opts->exclude, &opts->num_exclude,
                                    optarg);
            break;
        case 'l':
            opts->list = 1;
            break;
        case 'v':
            opts->verbose = 1;
            break;
        case 'h':
            gda_ft_test_usage(argv[0], stdout);
            exit(0);
        default:
            gda_ft_test_usage(argv[0], stderr);
            exit(2);
        }
    }

    if (optind < argc) {
        fprintf(stderr, "%s: unexpected argument '%s'\n", argv[0],
                argv[optind]);
        gda_ft_test_usage(argv[0], stderr);
        exit(2);
    }

    /* the command line wins over the environment, as in googletest */
    if (opts->num_include == 0) {
        gda_ft_test_parse_env_filter(opts);
    }

    opts->strict = (getenv("GDA_FT_TEST_STRICT") != NULL) &&
                   !strcmp(getenv("GDA_FT_TEST_STRICT"), "1");

    scale_env = getenv("GDA_FT_TEST_TIMEOUT_SCALE");
    if ((scale_env != NULL) && (scale_env[0] != '\0')) {
        opts->timeout_scale = strtod(scale_env, &end);
        if ((*end != '\0') || !(opts->timeout_scale > 0)) {
            fprintf(stderr, "%s: invalid GDA_FT_TEST_TIMEOUT_SCALE '%s'\n",
                    argv[0], scale_env);
            exit(2);
        }
    }
}

static int gda_ft_test_selected(const gda_ft_test_opts_t *opts,
                                const char *full_name)
{
    size_t i;

    for (i = 0; i < opts->num_exclude; ++i) {
        if (fnmatch(opts->exclude[i], full_name, 0) == 0) {
            return 0;
        }
    }

    if (opts->num_include == 0) {
        return 1;
    }

    for (i = 0; i < opts->num_include; ++i) {
        if (fnmatch(opts->include[i], full_name, 0) == 0) {
            return 1;
        }
    }
    return 0;
}

static int gda_ft_test_entry_cmp(const void *a, const void *b)
{
    const gda_ft_test_entry_t *ea = a, *eb = b;

    return strcmp(ea->full_name, eb->full_name);
}

static gda_ft_test_entry_t *gda_ft_test_sorted_entries(void)
{
    gda_ft_test_entry_t *entries;
    gda_ft_test_t *test;
    size_t i, len;

    entries = calloc(gda_ft_test_count + 1, sizeof(*entries));
    if (entries == NULL) {
        fprintf(stderr, "out of memory\n");
        exit(2);
    }

    for (test = gda_ft_test_head, i = 0; test != NULL;
         test = test->next, ++i) {
        len                   = strlen(test->suite) + strlen(test->name) + 2;
        entries[i].test       = test;
        entries[i].full_name  = malloc(len);
        if (entries[i].full_name == NULL) {
            fprintf(stderr, "out of memory\n");
            exit(2);
        }
        snprintf(entries[i].full_name, len, "%s.%s", test->suite, test->name);
    }

    qsort(entries, gda_ft_test_count, sizeof(*entries),
          gda_ft_test_entry_cmp);
    return entries;
}

/* An unlinked temporary file: nothing to clean up if the runner dies */
static int gda_ft_test_tmpfile(void)
{
    const char *tmpdir = getenv("TMPDIR");
    char path[4096];
    int fd;

    if ((tmpdir == NULL) || (tmpdir[0] == '\0')) {
        tmpdir = "/tmp";
    }

    snprintf(path, sizeof(path), "%s/gda_ft_test.XXXXXX", tmpdir);
    fd = mkostemp(path, O_CLOEXEC);
    if (fd < 0) {
        fprintf(stderr, "cannot create %s: %s\n", path, strerror(errno));
        exit(2);
    }
    unlink(path);
    return fd;
}

static void gda_ft_test_child(const gda_ft_test_t *test, pid_t runner_pid,
                              int output_fd, int status_fd)
{
    sigset_t sigset;
    int null_fd;

    /* own process group, so that a timeout kills helpers too */
    setpgid(0, 0);

    /* don't outlive a runner that was killed outright */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != runner_pid) {
        _exit(GDA_FT_TEST_EXIT_FAIL);
    }

    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    signal(SIGHUP, SIG_DFL);
    sigemptyset(&sigset);
    sigprocmask(SIG_SETMASK, &sigset, NULL);

    null_fd = open("/dev/null", O_RDONLY);
    if (null_fd >= 0) {
        dup2(null_fd, STDIN_FILENO);
        close(null_fd);
    }

    if (output_fd >= 0) {
        dup2(output_fd, STDOUT_FILENO);
        dup2(output_fd, STDERR_FILENO);
        close(output_fd);
    }

    /* stdout was flushed before fork: line buffering keeps the captured
     * stdout and stderr in the order they were written */
    setvbuf(stdout, NULL, _IOLBF, 0);

    gda_ft_test_status_fd = status_fd;
    test->func();
    while ((write(status_fd, GDA_FT_TEST_FINISHED,
                  strlen(GDA_FT_TEST_FINISHED)) < 0) && (errno == EINTR)) {
    }
    exit(GDA_FT_TEST_EXIT_PASS);
}

/*
 * Wait for the child until the deadline. The zombie is left in place
 * (WNOWAIT) until its process group is killed, so that the group id cannot
 * be reused by an unrelated process in between.
 */
static int gda_ft_test_wait(pid_t pid, double deadline, int *status)
{
    int timed_out = 0;
    struct timespec ts;
    sigset_t chld_set;
    siginfo_t info;
    double left;

    sigemptyset(&chld_set);
    sigaddset(&chld_set, SIGCHLD);

    for (;;) {
        memset(&info, 0, sizeof(info));
        if ((waitid(P_PID, pid, &info, WEXITED | WNOHANG | WNOWAIT) == 0) &&
            (info.si_pid == pid)) {
            break;
        }

        left = deadline - gda_ft_test_now();
        if (left <= 0) {
            timed_out = 1;
            break;
        }

        ts.tv_sec  = (time_t)left;
        ts.tv_nsec = (long)((left - ts.tv_sec) * 1e9);
        if ((ts.tv_sec > 0) || (ts.tv_nsec > GDA_FT_TEST_POLL_NS)) {
            ts.tv_sec  = 0;
            ts.tv_nsec = GDA_FT_TEST_POLL_NS;
        }
        sigtimedwait(&chld_set, NULL, &ts);
    }

    /* leftover helpers of a finished test, or the whole hung test */
    kill(-pid, SIGKILL);
    if (timed_out) {
        kill(pid, SIGKILL);
    }

    while (waitpid(pid, status, 0) < 0) {
        if (errno != EINTR) {
            /* the outcome is unknown: a failure, not a pass */
            printf("waitpid(%d): %s\n", (int)pid, strerror(errno));
            *status = GDA_FT_TEST_EXIT_FAIL << 8;
            break;
        }
    }

    /* as subreaper we inherited the group's orphans: reap them, or they
     * would stay zombies where init does not reap (containers) */
    while ((waitpid(-pid, NULL, 0) >= 0) || (errno == EINTR)) {
    }
    while (waitpid(-1, NULL, WNOHANG) > 0) {
        /* orphans that had left the group, if they have exited */
    }
    return timed_out;
}

static void gda_ft_test_print_output(int fd)
{
    char buffer[GDA_FT_TEST_OUTPUT_MAX];
    struct stat st;
    off_t offset;
    ssize_t nread;

    if ((fd < 0) || (fstat(fd, &st) != 0) || (st.st_size == 0)) {
        return;
    }

    offset = 0;
    if (st.st_size > (off_t)sizeof(buffer)) {
        offset = st.st_size - sizeof(buffer);
        printf("... (%lld bytes of output omitted)\n", (long long)offset);
    }

    nread = pread(fd, buffer, sizeof(buffer), offset);
    if (nread <= 0) {
        return;
    }

    fwrite(buffer, 1, nread, stdout);
    if (buffer[nread - 1] != '\n') {
        fputc('\n', stdout);
    }
}

static gda_ft_test_result_t
gda_ft_test_run_one(const gda_ft_test_entry_t *entry,
                    const gda_ft_test_opts_t *opts)
{
    char reason[GDA_FT_TEST_REASON_MAX] = "";
    gda_ft_test_result_t result;
    int status_pipe[2];
    int output_fd, status, timed_out, code;
    double timeout_s, start, elapsed;
    pid_t pid, runner_pid;
    ssize_t nread;

    timeout_s = entry->test->timeout_s;
    if (timeout_s == 0) {
        timeout_s = GDA_FT_TEST_DEFAULT_TIMEOUT;
    }
    timeout_s *= opts->timeout_scale;

    if (opts->verbose) {
        printf("[ RUN ] %s\n", entry->full_name);
    }

    output_fd = opts->verbose ? -1 : gda_ft_test_tmpfile();
    if (pipe2(status_pipe, O_CLOEXEC) != 0) {
        fprintf(stderr, "pipe: %s\n", strerror(errno));
        exit(2);
    }

    /* nothing buffered may be printed twice by the child */
    fflush(stdout);
    fflush(stderr);

    runner_pid = getpid();
    start      = gda_ft_test_now();
    pid        = fork();
    if (pid < 0) {
        fprintf(stderr, "fork: %s\n", strerror(errno));
        exit(2);
    } else if (pid == 0) {
        close(status_pipe[0]);
        gda_ft_test_child(entry->test, runner_pid, output_fd, status_pipe[1]);
    }

    /* also here: kill(-pid) must work before the child gets to run */
    setpgid(pid, pid);
    gda_ft_test_running_pgid = pid;
    close(status_pipe[1]);

    timed_out = gda_ft_test_wait(pid, start + timeout_s, &status);
    elapsed   = gda_ft_test_now() - start;
    gda_ft_test_running_pgid = 0;

    /* writers are gone by now; non-blocking in case a helper escaped */
    fcntl(status_pipe[0], F_SETFL, O_NONBLOCK);
    nread = read(status_pipe[0], reason, sizeof(reason) - 1);
    reason[(nread > 0) ? nread : 0] = '\0';
    close(status_pipe[0]);

    if (timed_out) {
        printf("[FAIL] %s (TIMEOUT after %.1f s)\n", entry->full_name,
               timeout_s);
        result = GDA_FT_TEST_RESULT_FAIL;
    } else if (WIFSIGNALED(status)) {
        printf("[FAIL] %s (killed by %s%s, %.2f s)\n", entry->full_name,
               gda_ft_test_signal_name(WTERMSIG(status)),
               WCOREDUMP(status) ? ", core dumped" : "", elapsed);
        result = GDA_FT_TEST_RESULT_FAIL;
    } else if (((code = WEXITSTATUS(status)) == GDA_FT_TEST_EXIT_PASS) &&
               strncmp(reason, GDA_FT_TEST_FINISHED,
                       strlen(GDA_FT_TEST_FINISHED))) {
        printf("[FAIL] %s (exited 0 before its test finished, %.2f s)\n",
               entry->full_name, elapsed);
        result = GDA_FT_TEST_RESULT_FAIL;
    } else if (code == GDA_FT_TEST_EXIT_PASS) {
        printf("[ OK ] %s (%.2f s)\n", entry->full_name, elapsed);
        result = GDA_FT_TEST_RESULT_PASS;
    } else if ((code == GDA_FT_TEST_EXIT_SKIP) && opts->strict &&
               (reason[0] != GDA_FT_TEST_UNAVAILABLE)) {
        printf("[FAIL] %s (skipped, and strict mode runs it: %s)\n",
               entry->full_name,
               (reason[0] != '\0') ? reason : "(no reason given)");
        result = GDA_FT_TEST_RESULT_FAIL;
    } else if (code == GDA_FT_TEST_EXIT_SKIP) {
        printf("[SKIP] %s: %s\n", entry->full_name,
               (reason[0] == GDA_FT_TEST_UNAVAILABLE) ? reason + 1 :
               (reason[0] != '\0') ? reason : "(no reason given)");
        result = GDA_FT_TEST_RESULT_SKIP;
    } else if (code == GDA_FT_TEST_EXIT_FAIL) {
        printf("[FAIL] %s (%.2f s)\n", entry->full_name, elapsed);
        result = GDA_FT_TEST_RESULT_FAIL;
    } else {
        printf("[FAIL] %s (exit code %d, %.2f s)\n", entry->full_name, code,
               elapsed);
        result = GDA_FT_TEST_RESULT_FAIL;
    }

    if (result == GDA_FT_TEST_RESULT_FAIL) {
        gda_ft_test_print_output(output_fd);
    }
    if (output_fd >= 0) {
        close(output_fd);
    }
    fflush(stdout);
    return result;
}

/* Everything is freed, so that LeakSanitizer reports only tests' leaks */
static void gda_ft_test_cleanup(gda_ft_test_entry_t *entries,
                                gda_ft_test_opts_t *opts)
{
    size_t i;

    for (i = 0; i < gda_ft_test_count; ++i) {
        free(entries[i].full_name);
    }
    free(entries);
    free(opts->include);
    free(opts->exclude);
    free(opts->env_filter);
}

/* Ctrl-C must not leave a test group running: it has its own pgid */
static void gda_ft_test_signal_handler(int sig)
{
    pid_t pgid = gda_ft_test_running_pgid;

    if (pgid > 0) {
        kill(-pgid, SIGKILL);
    }
    signal(sig, SIG_DFL);
    raise(sig);
}

static void gda_ft_test_setup_signals(void)
{
    sigset_t chld_set;

    /* an inherited SIG_IGN would make children reap themselves */
    signal(SIGCHLD, SIG_DFL);
    signal(SIGINT, gda_ft_test_signal_handler);
    signal(SIGTERM, gda_ft_test_signal_handler);
    signal(SIGHUP, gda_ft_test_signal_handler);

    /* orphaned helpers of a test become our children, see above */
    prctl(PR_SET_CHILD_SUBREAPER, 1);

    /* blocked, so that sigtimedwait() can wait for a child's exit */
    sigemptyset(&chld_set);
    sigaddset(&chld_set, SIGCHLD);
    sigprocmask(SIG_BLOCK, &chld_set, NULL);
}

/* The tests run ucx_info and ucx_perftest by name: those of the UCX this
 * tree was configured with, whatever else is installed (a tool of another
 * version would load this version's libraries and crash) */
static void gda_ft_test_ucx_tools_first(void)
{
#ifdef GDA_FT_UCX_BINDIR
    const char *path = getenv("PATH");
    char *joined;

    if (asprintf(&joined, "%s:%s", GDA_FT_UCX_BINDIR,
                 (path != NULL) ? path : "/usr/bin:/bin") >= 0) {
        setenv("PATH", joined, 1);
        free(joined);
    }
#endif
}

int main(int argc, char **argv)
{
    size_t passed = 0, failed = 0, skipped = 0, matched = 0;
    gda_ft_test_entry_t *entries;
    gda_ft_test_opts_t opts;
    size_t i;

    gda_ft_test_parse_opts(argc, argv, &opts);
    entries = gda_ft_test_sorted_entries();

    if (opts.list) {
        for (i = 0; i < gda_ft_test_count; ++i) {
            if (gda_ft_test_selected(&opts, entries[i].full_name)) {
                printf("%s\n", entries[i].full_name);
                ++matched;
            }
        }
        gda_ft_test_cleanup(entries, &opts);
        return (matched > 0) ? 0 : 1;
    }

    gda_ft_test_setup_signals();
    gda_ft_test_ucx_tools_first();

    for (i = 0; i < gda_ft_test_count; ++i) {
        if (!gda_ft_test_selected(&opts, entries[i].full_name)) {
            continue;
        }

        ++matched;
        /* two files picked the same name: one of them would be hidden */
        if ((i > 0) &&
            !strcmp(entries[i].full_name, entries[i - 1].full_name)) {
            printf("[FAIL] %s (registered more than once)\n",
                   entries[i].full_name);
            ++failed;
            continue;
        }

        switch (gda_ft_test_run_one(&entries[i], &opts)) {
        case GDA_FT_TEST_RESULT_PASS:
            ++passed;
            break;
        case GDA_FT_TEST_RESULT_SKIP:
            ++skipped;
            break;
        default:
            ++failed;
            break;
        }
    }

    if (matched == 0) {
        printf("no test matches the filter\n");
    }
    printf("%zu passed, %zu failed, %zu skipped\n", passed, failed, skipped);
    fflush(stdout);

    gda_ft_test_cleanup(entries, &opts);
    return ((failed > 0) || (matched == 0)) ? 1 : 0;
}
