/*
 * gda_ft_softctl: controls the software HCA of a running process through its
 * control socket ($UCX_GDA_FT_SOFT_CTL_DIR/gda_ft-soft.<pid>.sock): take
 * ports down and up, inject packet loss, delay and reordering, read the
 * port counters. `counters` asks the transport instead, through its own
 * socket ($UCX_GDA_FT_CTL_DIR/gda_ft-uct.<pid>.sock), whatever HCA provider
 * the process runs on; a process without one (the test worlds) answers it
 * on the soft HCA's socket.
 *
 * The control socket is a UNIX datagram socket; the engine of the process
 * executes one text command per datagram and sends its reply back to the
 * sender's address. This client binds a socket of its own in a private
 * temporary directory (a path, not an abstract name, so that a process in
 * another network namespace can still answer).
 */
#ifndef _GNU_SOURCE
#  define _GNU_SOURCE
#endif

#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define SOFTCTL_SOCK_PREFIX  "gda_ft-soft."
#define SOFTCTL_UCT_PREFIX   "gda_ft-uct."
#define SOFTCTL_SOCK_SUFFIX  ".sock"
#define SOFTCTL_CMD_MAX      255      /* the engine reads 256-byte commands */
#define SOFTCTL_REPLY_MAX    65536

/* Exit status */
enum {
    SOFTCTL_EXIT_OK       = 0,
    SOFTCTL_EXIT_ERROR    = 1,   /* a process replied "error: ..." */
    SOFTCTL_EXIT_USAGE    = 2,
    SOFTCTL_EXIT_NO_REPLY = 3    /* nobody to talk to, or no reply in time */
};

typedef struct softctl_target {
    int  pid;                    /* -1 when given by path */
    char path[sizeof(((struct sockaddr_un*)0)->sun_path)];
} softctl_target_t;

/* The client's own socket, removed on exit and on SIGINT/SIGTERM */
static char softctl_tmpdir[64];
static char softctl_client_path[128];

static const char *softctl_prog = "gda_ft_softctl";


static void softctl_usage(FILE *stream)
{
    fprintf(stream,
            "Usage: %s [-d DIR] [-t SEC] (-p PID | -s SOCKET | -a) COMMAND...\n"
            "       %s [-d DIR] list\n"
            "\n"
            "Sends COMMAND to the software HCA of a running process and prints"
            " its reply.\n"
            "\n"
            "Commands:\n"
            "  stats                          counters and state of every soft"
            " port\n"
            "  port DEV PORT up|down          administrative port state\n"
            "  drop|delay|reorder DEV PORT P  fault probability P in [0, 1]\n"
            "  ackloss DEV PORT P             lose responses only (ACKs, read"
            " and atomic\n"
            "                                 responses) with probability P;"
            " 1: all\n"
            "  counters                       the transport's counters of every"
            " endpoint and\n"
            "                                 device channel (its socket "
            "gda_ft-uct.<pid>.sock\n"
            "                                 in $UCX_GDA_FT_CTL_DIR, else DIR)"
            "\n"
            "  list                           live processes with a control "
            "socket in DIR, or a\n"
            "                                 transport's socket (no target)"
            "\n"
            "\n"
            "Options:\n"
            "  -d DIR   directory of the control sockets (default: "
            "$UCX_GDA_FT_SOFT_CTL_DIR, else /tmp)\n"
            "  -p PID   the process with this pid\n"
            "  -s PATH  the control socket at PATH\n"
            "  -a       every live process with a control socket in DIR\n"
            "  -t SEC   how long to wait for each reply (default 2)\n"
            "  -h       this help\n"
            "\n"
            "Exit status: 0 every process replied ok, 1 a process replied "
            "\"error: ...\",\n"
            "2 usage error, 3 no process reachable or no reply in time.\n",
            softctl_prog, softctl_prog);
}

static void softctl_cleanup(void)
{
    if (softctl_client_path[0] != '\0') {
        unlink(softctl_client_path);
        softctl_client_path[0] = '\0';
    }
    if (softctl_tmpdir[0] != '\0') {
        rmdir(softctl_tmpdir);
        softctl_tmpdir[0] = '\0';
    }
}

static void softctl_signal(int sig)
{
    /* async-signal-safe: unlink, rmdir and _exit only */
    if (softctl_client_path[0] != '\0') {
        unlink(softctl_client_path);
    }
    if (softctl_tmpdir[0] != '\0') {
        rmdir(softctl_tmpdir);
    }
    _exit(128 + sig);
}

static double softctl_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static const char *softctl_default_dir(void)
{
    const char *dir = getenv("UCX_GDA_FT_SOFT_CTL_DIR");

    return ((dir != NULL) && (dir[0] != '\0')) ? dir : "/tmp";
}

static int softctl_pid_alive(int pid)
{
    return (pid > 0) && ((kill(pid, 0) == 0) || (errno == EPERM));
}

/* The directory of the transport's sockets */
static const char *softctl_transport_dir(const char *dir)
{
    const char *tdir = getenv("UCX_GDA_FT_CTL_DIR");

    return ((tdir != NULL) && (tdir[0] != '\0')) ? tdir : dir;
}

/* pid of "<prefix><pid>.sock", or -1 for any other name */
static int softctl_parse_prefixed(const char *name, const char *prefix)
{
    size_t plen = strlen(prefix);
    size_t slen = strlen(SOFTCTL_SOCK_SUFFIX);
    size_t len  = strlen(name);
    char *end;
    long pid;

    if ((len <= plen + slen) || strncmp(name, prefix, plen) ||
        strcmp(name + len - slen, SOFTCTL_SOCK_SUFFIX)) {
        return -1;
    }

    pid = strtol(name + plen, &end, 10);
    if ((end != name + len - slen) || (pid <= 0) || (pid > 0x7fffffff)) {
        return -1;
    }
    return (int)pid;
}

/* pid of a soft HCA's or a transport's socket name, or -1 */
static int softctl_parse_name(const char *name)
{
    int pid = softctl_parse_prefixed(name, SOFTCTL_SOCK_PREFIX);

    return (pid >= 0) ? pid : softctl_parse_prefixed(name, SOFTCTL_UCT_PREFIX);
}

static int softctl_target_cmp(const void *a, const void *b)
{
    return ((const softctl_target_t*)a)->pid -
           ((const softctl_target_t*)b)->pid;
}

/* The transport's socket of pid in tdir into path; 0 when it has none */
static int softctl_transport_path(const char *tdir, int pid, char *path)
{
    char buf[sizeof(((softctl_target_t*)0)->path)];
    struct stat st;

    if (((size_t)snprintf(buf, sizeof(buf), "%s/" SOFTCTL_UCT_PREFIX "%d"
                          SOFTCTL_SOCK_SUFFIX, tdir, pid) >= sizeof(buf)) ||
        (stat(buf, &st) < 0) || !S_ISSOCK(st.st_mode)) {
        return 0;
    }
    strcpy(path, buf);
    return 1;
}

/* Live processes with a control socket named prefix<pid>.sock in dir,
 * sorted by pid; -1 on error */
static int softctl_scan(const char *dir, const char *prefix,
                        softctl_target_t **targets_p, unsigned *count_p)
{
    softctl_target_t *targets = NULL, *tmp;
    unsigned count = 0;
    struct dirent *entry;
    struct stat st;
    DIR *d;
    int pid;

    d = opendir(dir);
    if (d == NULL) {
        fprintf(stderr, "%s: cannot read directory %s: %s\n", softctl_prog,
                dir, strerror(errno));
        return -1;
    }

    while ((entry = readdir(d)) != NULL) {
        pid = softctl_parse_prefixed(entry->d_name, prefix);
        if ((pid < 0) || !softctl_pid_alive(pid)) {
            continue;
        }

        tmp = realloc(targets, (count + 1) * sizeof(*targets));
        if (tmp == NULL) {
            fprintf(stderr, "%s: out of memory\n", softctl_prog);
            free(targets);
            closedir(d);
            return -1;
        }
        targets = tmp;
        if ((size_t)snprintf(targets[count].path, sizeof(targets[count].path),
                             "%s/%s", dir, entry->d_name) >=
            sizeof(targets[count].path)) {
            continue;   /* a path the engine could not have bound either */
        }
        if ((stat(targets[count].path, &st) < 0) || !S_ISSOCK(st.st_mode)) {
            continue;
        }
        targets[count].pid = pid;
        ++count;
    }
    closedir(d);

    if (count > 0) {
        qsort(targets, count, sizeof(*targets), softctl_target_cmp);
    }
    *targets_p = targets;
    *count_p   = count;
    return 0;
}

/* `counters` with -a: every process with a transport socket in tdir asked
 * there, the others (soft HCA only) on their soft socket. Sorted by pid;
 * -1 on error */
static int softctl_add_transports(const char *tdir,
                                  softctl_target_t **targets_p,
                                  unsigned *count_p)
{
    softctl_target_t *uct, *tmp, *found;
    unsigned n, i;

    if (softctl_scan(tdir, SOFTCTL_UCT_PREFIX, &uct, &n) < 0) {
        return -1;
    }
    for (i = 0; i < n; ++i) {
        found = (*count_p == 0) ? NULL :
                bsearch(&uct[i], *targets_p, *count_p, sizeof(uct[i]),
                        softctl_target_cmp);
        if (found != NULL) {
            strcpy(found->path, uct[i].path);
            continue;
        }
        tmp = realloc(*targets_p, (*count_p + 1) * sizeof(*tmp));
        if (tmp == NULL) {
            fprintf(stderr, "%s: out of memory\n", softctl_prog);
            free(uct);
            return -1;
        }
        tmp[(*count_p)++] = uct[i];
        *targets_p        = tmp;
        qsort(*targets_p, *count_p, sizeof(*tmp), softctl_target_cmp);
    }
    free(uct);
    return 0;
}

/* Binds the client's socket in a private directory; -1 on error */
static int softctl_client_socket(void)
{
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    const char *tmp         = getenv("TMPDIR");
    int fd;

    if ((tmp == NULL) || (tmp[0] == '\0') ||
        (strlen(tmp) > sizeof(softctl_tmpdir) - 32)) {
        tmp = "/tmp";
    }
    snprintf(softctl_tmpdir, sizeof(softctl_tmpdir), "%s/gda_ft-softctl.XXXXXX",
             tmp);
    if (mkdtemp(softctl_tmpdir) == NULL) {
        fprintf(stderr, "%s: cannot create a directory in %s: %s\n",
                softctl_prog, tmp, strerror(errno));
        softctl_tmpdir[0] = '\0';
        return -1;
    }
    snprintf(softctl_client_path, sizeof(softctl_client_path), "%s/c.sock",
             softctl_tmpdir);

    fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        fprintf(stderr, "%s: socket(AF_UNIX): %s\n", softctl_prog,
                strerror(errno));
        return -1;
    }

    strcpy(addr.sun_path, softctl_client_path);
    if (bind(fd, (struct sockaddr*)&addr, sizeof(addr)) < 0) {
        fprintf(stderr, "%s: bind %s: %s\n", softctl_prog, addr.sun_path,
                strerror(errno));
        close(fd);
        softctl_client_path[0] = '\0';
        return -1;
    }
    return fd;
}

/*
 * Sends cmd to one target and prints the reply (after a header when
 * header is set). Returns a SOFTCTL_EXIT_* code.
 */
static int softctl_exec(int fd, const softctl_target_t *target,
                        const char *cmd, double timeout, int header)
{
    struct sockaddr_un dst = {.sun_family = AF_UNIX}, from;
    char who[64], *reply;
    double deadline;
    socklen_t from_len;
    struct pollfd pfd;
    ssize_t len;
    int ret;

    if (target->pid > 0) {
        snprintf(who, sizeof(who), "process %d", target->pid);
    } else {
        snprintf(who, sizeof(who), "the process");
    }
    strcpy(dst.sun_path, target->path);

    if (header) {
        printf("==> pid %d (%s) <==\n", target->pid, target->path);
        fflush(stdout);
    }

    if (sendto(fd, cmd, strlen(cmd), 0, (struct sockaddr*)&dst,
               sizeof(dst)) < 0) {
        switch (errno) {
        case ENOENT:
            fprintf(stderr, "%s: no control socket %s\n", softctl_prog,
                    target->path);
            break;
        case ECONNREFUSED:
            fprintf(stderr, "%s: nobody listens on %s (a stale socket: %s "
                    "exited or closed its soft HCAs)\n", softctl_prog,
                    target->path, who);
            break;
        case EACCES:
        case EPERM:
            fprintf(stderr, "%s: %s: permission denied (run as the owner of"
                    " %s or as root)\n", softctl_prog, target->path, who);
            break;
        default:
            fprintf(stderr, "%s: cannot send to %s: %s\n", softctl_prog,
                    target->path, strerror(errno));
            break;
        }
        return SOFTCTL_EXIT_NO_REPLY;
    }

    reply = malloc(SOFTCTL_REPLY_MAX + 1);
    if (reply == NULL) {
        fprintf(stderr, "%s: out of memory\n", softctl_prog);
        return SOFTCTL_EXIT_NO_REPLY;
    }

    deadline = softctl_now() + timeout;
    for (;;) {
        pfd.fd     = fd;
        pfd.events = POLLIN;
        ret = poll(&pfd, 1, (int)((deadline - softctl_now()) * 1000) + 1);
        if ((ret < 0) && (errno == EINTR)) {
            continue;
        }
        if ((ret <= 0) || (softctl_now() > deadline + 0.001)) {
            fprintf(stderr, "%s: no reply from %s (%s) within %g s: is its "
                    "soft HCA engine running?\n", softctl_prog, who,
                    target->path, timeout);
            free(reply);
            return SOFTCTL_EXIT_NO_REPLY;
        }

        from_len = sizeof(from);
        len = recvfrom(fd, reply, SOFTCTL_REPLY_MAX, 0,
                       (struct sockaddr*)&from, &from_len);
        if (len < 0) {
            if (errno == EINTR) {
                continue;
            }
            fprintf(stderr, "%s: recvfrom: %s\n", softctl_prog,
                    strerror(errno));
            free(reply);
            return SOFTCTL_EXIT_NO_REPLY;
        }

        /* a late reply of a previous target, or a stray datagram */
        if ((from_len <= sizeof(sa_family_t)) ||
            strncmp(from.sun_path, target->path, sizeof(from.sun_path))) {
            continue;
        }
        break;
    }

    reply[len] = '\0';
    fputs(reply, stdout);
    if ((len > 0) && (reply[len - 1] != '\n')) {
        fputc('\n', stdout);
    }
    fflush(stdout);
    ret = !strncmp(reply, "error:", 6) ? SOFTCTL_EXIT_ERROR : SOFTCTL_EXIT_OK;
    free(reply);
    return ret;
}

/* Live processes with a soft HCA's socket in dir or a transport's in
 * its directory, a line per socket */
static int softctl_list(const char *dir)
{
    static const char *prefixes[] = {SOFTCTL_SOCK_PREFIX, SOFTCTL_UCT_PREFIX};
    softctl_target_t *targets;
    unsigned count, i, k, total = 0;

    for (k = 0; k < 2; ++k) {
        if (softctl_scan((k == 0) ? dir : softctl_transport_dir(dir),
                         prefixes[k], &targets, &count) < 0) {
            return SOFTCTL_EXIT_NO_REPLY;
        }
        for (i = 0; i < count; ++i) {
            printf("%-8d %s\n", targets[i].pid, targets[i].path);
        }
        total += count;
        free(targets);
    }
    if (total == 0) {
        fprintf(stderr, "%s: no live process with a control socket in %s\n",
                softctl_prog, dir);
    }
    return SOFTCTL_EXIT_OK;
}

/* Joins argv[0..argc) with spaces; NULL when too long for the engine */
static char *softctl_join(int argc, char **argv)
{
    size_t len = 0;
    char *cmd;
    int i;

    for (i = 0; i < argc; ++i) {
        len += strlen(argv[i]) + 1;
    }
    if (len - 1 > SOFTCTL_CMD_MAX) {
        fprintf(stderr, "%s: command is %zu bytes long, at most %d are "
                "accepted\n", softctl_prog, len - 1, SOFTCTL_CMD_MAX);
        return NULL;
    }

    cmd = calloc(1, len);
    if (cmd == NULL) {
        return NULL;
    }
    for (i = 0; i < argc; ++i) {
        strcat(cmd, argv[i]);
        if (i + 1 < argc) {
            strcat(cmd, " ");
        }
    }
    return cmd;
}

int main(int argc, char **argv)
{
    const char *dir = NULL, *path = NULL;
    softctl_target_t *targets = NULL, single;
    double timeout = 2.0;
    unsigned count = 0, i;
    int all = 0, pid = -1, to_transport, opt, fd, ret, result;
    char *end, *cmd;

    if (argv[0] != NULL) {
        softctl_prog = strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 :
                                               argv[0];
    }

    /* '+': options end at the first word of the command */
    while ((opt = getopt(argc, argv, "+d:p:s:at:h")) != -1) {
        switch (opt) {
        case 'd':
            dir = optarg;
            break;
        case 'p':
            pid = (int)strtol(optarg, &end, 10);
            if ((*end != '\0') || (pid <= 0)) {
                fprintf(stderr, "%s: invalid pid '%s'\n", softctl_prog,
                        optarg);
                return SOFTCTL_EXIT_USAGE;
            }
            break;
        case 's':
            path = optarg;
            break;
        case 'a':
            all = 1;
            break;
        case 't':
            timeout = strtod(optarg, &end);
            if ((*end != '\0') || !(timeout > 0) || (timeout > 3600)) {
                fprintf(stderr, "%s: invalid timeout '%s'\n", softctl_prog,
                        optarg);
                return SOFTCTL_EXIT_USAGE;
            }
            break;
        case 'h':
            softctl_usage(stdout);
            return SOFTCTL_EXIT_OK;
        default:
            softctl_usage(stderr);
            return SOFTCTL_EXIT_USAGE;
        }
    }

    if (dir == NULL) {
        dir = softctl_default_dir();
    }

    if (optind >= argc) {
        fprintf(stderr, "%s: missing command\n", softctl_prog);
        softctl_usage(stderr);
        return SOFTCTL_EXIT_USAGE;
    }

    if (!strcmp(argv[optind], "list") && (optind + 1 == argc) &&
        (pid < 0) && (path == NULL) && !all) {
        return softctl_list(dir);
    }

    if ((pid > 0) + (path != NULL) + all != 1) {
        fprintf(stderr, "%s: give exactly one of -p PID, -s SOCKET and -a\n",
                softctl_prog);
        softctl_usage(stderr);
        return SOFTCTL_EXIT_USAGE;
    }

    cmd = softctl_join(argc - optind, argv + optind);
    if (cmd == NULL) {
        return SOFTCTL_EXIT_USAGE;
    }
    to_transport = !strcmp(argv[optind], "counters");

    /* targets */
    if (all) {
        if ((softctl_scan(dir, SOFTCTL_SOCK_PREFIX, &targets, &count) < 0) ||
            (to_transport &&
             (softctl_add_transports(softctl_transport_dir(dir), &targets,
                                     &count) < 0))) {
            free(targets);
            free(cmd);
            return SOFTCTL_EXIT_NO_REPLY;
        }
        if (count == 0) {
            fprintf(stderr, "%s: no live process with a control socket in "
                    "%s\n", softctl_prog, dir);
            free(cmd);
            return SOFTCTL_EXIT_NO_REPLY;
        }
    } else {
        memset(&single, 0, sizeof(single));
        single.pid = pid;
        if (path != NULL) {
            if (strlen(path) >= sizeof(single.path)) {
                fprintf(stderr, "%s: socket path '%s' is too long\n",
                        softctl_prog, path);
                free(cmd);
                return SOFTCTL_EXIT_USAGE;
            }
            strcpy(single.path, path);
            single.pid = softctl_parse_name(strrchr(path, '/') ?
                                            strrchr(path, '/') + 1 : path);
        } else if (to_transport &&
                   softctl_transport_path(softctl_transport_dir(dir), pid,
                                          single.path)) {
            /* the transport's socket answers `counters` */
        } else {
            if ((size_t)snprintf(single.path, sizeof(single.path),
                                 "%s/" SOFTCTL_SOCK_PREFIX "%d"
                                 SOFTCTL_SOCK_SUFFIX, dir, pid) >=
                sizeof(single.path)) {
                fprintf(stderr, "%s: directory '%s' is too long\n",
                        softctl_prog, dir);
                free(cmd);
                return SOFTCTL_EXIT_USAGE;
            }
            if (!softctl_pid_alive(pid)) {
                fprintf(stderr, "%s: no process %d\n", softctl_prog, pid);
                free(cmd);
                return SOFTCTL_EXIT_NO_REPLY;
            }
            if (access(single.path, F_OK) < 0) {
                fprintf(stderr, "%s: process %d has no control socket %s (it "
                        "opened no soft HCA, or its UCX_GDA_FT_SOFT_CTL_DIR "
                        "is not %s: try -d)\n", softctl_prog, pid,
                        single.path, dir);
                free(cmd);
                return SOFTCTL_EXIT_NO_REPLY;
            }
        }
        targets = &single;
        count   = 1;
    }

    atexit(softctl_cleanup);
    signal(SIGINT, softctl_signal);
    signal(SIGTERM, softctl_signal);
    signal(SIGHUP, softctl_signal);

    fd = softctl_client_socket();
    if (fd < 0) {
        result = SOFTCTL_EXIT_NO_REPLY;
        goto out;
    }

    result = SOFTCTL_EXIT_OK;
    for (i = 0; i < count; ++i) {
        ret = softctl_exec(fd, &targets[i], cmd, timeout, all);
        /* the worst outcome decides: no reply > error reply > ok */
        if (ret > result) {
            result = ret;
        }
    }
    close(fd);

out:
    if (targets != &single) {
        free(targets);
    }
    free(cmd);
    return result;
}
