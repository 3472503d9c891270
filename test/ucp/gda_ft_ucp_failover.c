/*
 * gda_ft_ucp_failover: UCP puts and atomics through a NIC port failure,
 * verified byte by byte and increment by increment on the receiver.
 *
 * Two processes, a server (the target of the RMA) and a client (the
 * initiator), each with two software HCAs: a primary and a backup.
 *
 *  - The server registers a region: a 64-bit counter, then one slot per
 *    message size (1 byte .. 3 MiB), each slot between guard bytes.
 *  - The client writes slot i % nslots with generation i / nslots of a
 *    checksummed pattern (ucp_put_nbx), and adds 1 to the counter
 *    (ucp_atomic_op_nbx UCP_ATOMIC_OP_ADD, 64-bit; posted, fetched, or both
 *    in turns), keeping a window of operations in flight.
 *  - With --get the client also reads a piece of a read-only area of the
 *    server (ucp_get_nbx: 1 byte to the largest slot, at any offset) each
 *    iteration, and checks every byte it got against the area's pattern;
 *    the server checks that the area never changed.
 *  - With --am the client also sends an active message each iteration
 *    (ucp_am_send_nbx: a short one, one by bcopy, one by rendezvous, in
 *    turns) whose header is the iteration and whose data a checksummed
 *    pattern; the server checks each one, once, and counts them.
 *  - At iteration --fault-at the client asks the server, over the
 *    out-of-band UNIX socket, to take its primary soft port down (in-process
 *    through the soft HCA's control command, or with gda_ft_softctl); with
 *    --mode updown the port comes back at --up-at; with --mode both both of
 *    the server's ports go down.
 *  - The client flushes and sends what it saw complete (per slot, the last
 *    generation that completed successfully and any generation that
 *    completed with an error; the number and sum of successful and failed
 *    increments); the server checks every byte of the region (pattern,
 *    checksum, guards) and the exact counter value, and both print a
 *    summary. Exit status 0 when everything holds.
 *
 * Without --role the program is a launcher: it forks and re-executes
 * itself as server and client, each with its own UCX_GDA_FT_SOFT_DEVICES
 * (server s0=127.0.0.1:P,s1=127.0.0.2:P, client c0=127.0.0.3:P,
 * c1=127.0.0.4:P, P from the pid), and exits 0 when both do.
 *
 * Run it with the plugin preloaded:
 *   contrib/gda_ft-run.sh build/test/ucp/gda_ft_ucp_failover --mode down
 */
#include "gda_ft_ucp_failover.h"

/* ---- launcher ------------------------------------------------------------ */

static const char *fo_argv0;
static char       **fo_argv;
static int          fo_argc;

static pid_t fo_spawn(const char *role, const char *devices,
                      const char *faults, const char *sock_path)
{
    char **argv = calloc(fo_argc + 8, sizeof(char*));
    pid_t pid;
    int i, n = 0;

    argv[n++] = (char*)fo_argv0;
    for (i = 1; i < fo_argc; ++i) {
        argv[n++] = fo_argv[i];
    }
    argv[n++] = "--role";
    argv[n++] = (char*)role;
    argv[n++] = "--sock";
    argv[n++] = (char*)sock_path;
    argv[n]   = NULL;

    fflush(stdout);
    pid = fork();
    if (pid < 0) {
        fo_die("fork: %s", strerror(errno));
    }
    if (pid == 0) {
        setenv("UCX_GDA_FT_SOFT_DEVICES", devices, 1);
        if (faults != NULL) {
            setenv("UCX_GDA_FT_SOFT_FAULTS", faults, 1);
        } else {
            unsetenv("UCX_GDA_FT_SOFT_FAULTS");
        }
        execv("/proc/self/exe", argv);
        fprintf(stderr, "execv: %s\n", strerror(errno));
        _exit(127);
    }
    free(argv);
    return pid;
}

static int fo_launch(void)
{
    char sdev[256], cdev[256], sock_path[108];
    pid_t server, client, pid;
    int status, server_rc = -1, client_rc = -1, left = 2;
    double deadline;
    unsigned port;

    port = opt.udp_port ? opt.udp_port : 20000 + (getpid() % 40000);
    if (opt.server_devices != NULL) {
        snprintf(sdev, sizeof(sdev), "%s", opt.server_devices);
    } else {
        snprintf(sdev, sizeof(sdev), "s0=127.0.0.1:%u,s1=127.0.0.2:%u",
                 port, port);
    }
    if (opt.client_devices != NULL) {
        snprintf(cdev, sizeof(cdev), "%s", opt.client_devices);
    } else {
        snprintf(cdev, sizeof(cdev), "c0=127.0.0.3:%u,c1=127.0.0.4:%u",
                 port, port);
    }
    if (opt.sock_path != NULL) {
        snprintf(sock_path, sizeof(sock_path), "%s", opt.sock_path);
    } else {
        snprintf(sock_path, sizeof(sock_path),
                 "/tmp/gda_ft_ucp_failover.%d.sock", (int)getpid());
    }
    fo_log("server devices %s%s%s, client devices %s, socket %s", sdev,
           opt.server_faults ? ", faults " : "",
           opt.server_faults ? opt.server_faults : "", cdev, sock_path);

    server = fo_spawn("server", sdev, opt.server_faults, sock_path);
    client = fo_spawn("client", cdev, NULL, sock_path);

    /* nothing may hang: a generous bound over both */
    deadline = fo_now() + opt.op_timeout * 2 + opt.err_bound + 30;
    while (left > 0) {
        pid = waitpid(-1, &status, WNOHANG);
        if (pid == 0) {
            if (fo_now() > deadline) {
                fo_log("HANG: killing server %d and client %d", (int)server,
                       (int)client);
                if (server_rc < 0) kill(server, SIGKILL);
                if (client_rc < 0) kill(client, SIGKILL);
                deadline = fo_now() + 3600;
            }
            usleep(20000);
            continue;
        }
        if (pid < 0) {
            break;
        }
        --left;
        if (pid == server) {
            server_rc = WIFEXITED(status) ? WEXITSTATUS(status) :
                        128 + WTERMSIG(status);
        } else if (pid == client) {
            client_rc = WIFEXITED(status) ? WEXITSTATUS(status) :
                        128 + WTERMSIG(status);
        }
    }
    unlink(sock_path);

    fo_log("server exit %d, client exit %d", server_rc, client_rc);
    if ((server_rc == 0) && (client_rc == 0)) {
        printf("[launcher] RESULT PASS\n");
        return 0;
    }
    printf("[launcher] RESULT FAIL: server exit %d, client exit %d\n",
           server_rc, client_rc);
    return 1;
}


/* ---- options ------------------------------------------------------------- */

static void fo_usage(FILE *f)
{
    fprintf(f,
"Usage: gda_ft_ucp_failover [OPTIONS]\n"
"UCP puts and 64-bit atomic adds through a soft HCA port failure, verified\n"
"byte by byte on the receiver. Run it with contrib/gda_ft-run.sh.\n"
"\n"
"  -m, --mode MODE       none | down (default) | updown | both\n"
"  -n, --iters N         puts (and as many atomics) to issue (400)\n"
"  -f, --fault-at I      iteration of the fault (iters/3)\n"
"  -u, --up-at I         updown: iteration the port comes back (2*iters/3)\n"
"      --after-up SEC    updown: go on for at least SEC after that (0)\n"
"      --poll-pause SEC  pause between two progress calls of a side that\n"
"                        waits for a message (the server, all run):\n"
"                        0.001; 0: none. Its guardian answers the\n"
"                        client's fence request from progress\n"
"  -w, --window W        operations of each kind in flight (8)\n"
"  -b, --flush-every N   flush the endpoint every N iterations (50; 0: at\n"
"                        the end only); a put or posted atomic counts as\n"
"                        done once a flush after it succeeded\n"
"  -a, --amo KIND        fetch | post | mixed (default) | none\n"
"  -s, --max-size BYTES  largest put, slots up to 3 MiB (3145728)\n"
"      --get             a get too each iteration, of the read-only area\n"
"                        (1 byte to the largest slot, at any offset)\n"
"      --am              an active message too each iteration\n"
"                        (ucp_am_send_nbx: short, bcopy, rendezvous)\n"
"  -t, --timeout SEC     longest wait for one operation (60): a hang\n"
"  -e, --err-bound SEC   both: the error must come this soon (30)\n"
"  -F, --fault-via HOW   ctl (in-process, default) | softctl | env\n"
"      --softctl PATH    gda_ft_softctl for --fault-via softctl\n"
"      --fault-delay SEC pause after injecting the fault (0)\n"
"      --primary DEV:P   server's port to fail (1st soft device, port 1)\n"
"      --backup DEV:P    server's other port, for mode both (2nd device)\n"
"  -p, --udp-port P      UDP port of the soft fabric (from the pid)\n"
"      --server-devices S, --client-devices S  UCX_GDA_FT_SOFT_DEVICES\n"
"      --server-faults S UCX_GDA_FT_SOFT_FAULTS of the server (--fault-via env)\n"
"      --seed N          pattern seed\n"
"      --role server|client --sock PATH  run one side only\n"
"  -v, --verbose         endpoint configuration and progress\n"
"\n"
"Output: 'SUMMARY' lines of both sides, 'FAILOVER' timings, 'counters:'\n"
"lines when the transport offers them, and 'RESULT PASS|FAIL' per process.\n"
"Exit status 0 when both sides pass.\n");
}

static int fo_parse_enum(const char *arg, const char **names, int n,
                         const char *what)
{
    int i;

    for (i = 0; i < n; ++i) {
        if (!strcmp(arg, names[i])) {
            return i;
        }
    }
    fprintf(stderr, "invalid %s '%s'\n", what, arg);
    exit(2);
}

int main(int argc, char **argv)
{
    enum {
        OPT_ROLE = 256, OPT_SOCK, OPT_SOFTCTL, OPT_SDEV, OPT_CDEV, OPT_SFAULTS,
        OPT_SEED, OPT_PRIMARY, OPT_BACKUP, OPT_FDELAY, OPT_AFTER_UP, OPT_AM,
        OPT_GET,
        OPT_PAUSE
    };
    static const struct option longopts[] = {
        {"mode",           required_argument, NULL, 'm'},
        {"iters",          required_argument, NULL, 'n'},
        {"fault-at",       required_argument, NULL, 'f'},
        {"up-at",          required_argument, NULL, 'u'},
        {"window",         required_argument, NULL, 'w'},
        {"flush-every",    required_argument, NULL, 'b'},
        {"amo",            required_argument, NULL, 'a'},
        {"max-size",       required_argument, NULL, 's'},
        {"timeout",        required_argument, NULL, 't'},
        {"err-bound",      required_argument, NULL, 'e'},
        {"fault-via",      required_argument, NULL, 'F'},
        {"udp-port",       required_argument, NULL, 'p'},
        {"verbose",        no_argument,       NULL, 'v'},
        {"help",           no_argument,       NULL, 'h'},
        {"role",           required_argument, NULL, OPT_ROLE},
        {"sock",           required_argument, NULL, OPT_SOCK},
        {"softctl",        required_argument, NULL, OPT_SOFTCTL},
        {"server-devices", required_argument, NULL, OPT_SDEV},
        {"client-devices", required_argument, NULL, OPT_CDEV},
        {"server-faults",  required_argument, NULL, OPT_SFAULTS},
        {"seed",           required_argument, NULL, OPT_SEED},
        {"primary",        required_argument, NULL, OPT_PRIMARY},
        {"backup",         required_argument, NULL, OPT_BACKUP},
        {"fault-delay",    required_argument, NULL, OPT_FDELAY},
        {"after-up",       required_argument, NULL, OPT_AFTER_UP},
        {"poll-pause",     required_argument, NULL, OPT_PAUSE},
        {"am",             no_argument,       NULL, OPT_AM},
        {"get",            no_argument,       NULL, OPT_GET},
        {NULL, 0, NULL, 0}
    };
    static char softctl_default[PATH_MAX];
    char exe[PATH_MAX], *slash;
    ssize_t n;
    int c;

    /* launcher: remember argv to re-execute without --role/--sock */
    fo_argv0 = argv[0];
    fo_argv  = argv;
    fo_argc  = argc;

    while ((c = getopt_long(argc, argv, "m:n:f:u:w:b:a:s:t:e:F:p:vh", longopts,
                            NULL)) != -1) {
        switch (c) {
        case 'm': opt.mode = fo_parse_enum(optarg, fo_mode_names, 4, "mode");
                  break;
        case 'n': opt.iters = strtoul(optarg, NULL, 0); break;
        case 'f': opt.fault_at = strtol(optarg, NULL, 0); break;
        case 'u': opt.up_at = strtol(optarg, NULL, 0); break;
        case 'w': opt.window = strtoul(optarg, NULL, 0); break;
        case 'b': opt.flush_every = strtoul(optarg, NULL, 0); break;
        case 'a': opt.amo = fo_parse_enum(optarg, fo_amo_names, 4, "amo");
                  break;
        case 's': opt.max_size = strtoul(optarg, NULL, 0); break;
        case 't': opt.op_timeout = strtod(optarg, NULL); break;
        case 'e': opt.err_bound = strtod(optarg, NULL); break;
        case 'F': opt.fault_via = fo_parse_enum(optarg, fo_fault_via_names, 3,
                                                "fault-via");
                  break;
        case 'p': opt.udp_port = strtoul(optarg, NULL, 0); break;
        case 'v': opt.verbose = 1; break;
        case 'h': fo_usage(stdout); return 0;
        case OPT_ROLE: opt.role = optarg; break;
        case OPT_SOCK: opt.sock_path = optarg; break;
        case OPT_SOFTCTL: opt.softctl = optarg; break;
        case OPT_SDEV: opt.server_devices = optarg; break;
        case OPT_CDEV: opt.client_devices = optarg; break;
        case OPT_SFAULTS: opt.server_faults = optarg; break;
        case OPT_SEED: opt.seed = strtoull(optarg, NULL, 0); break;
        case OPT_PRIMARY: opt.primary = optarg; break;
        case OPT_BACKUP: opt.backup = optarg; break;
        case OPT_FDELAY: opt.fault_delay = strtod(optarg, NULL); break;
        case OPT_AFTER_UP: opt.after_up = strtod(optarg, NULL); break;
        case OPT_PAUSE: opt.poll_pause = strtod(optarg, NULL); break;
        case OPT_AM: opt.am = 1; break;
        case OPT_GET: opt.get = 1; break;
        default: fo_usage(stderr); return 2;
        }
    }
    if (optind != argc) {
        fo_usage(stderr);
        return 2;
    }

    if (opt.iters == 0) {
        opt.iters = 1;
    }
    if (opt.window == 0) {
        opt.window = 1;
    }
    if (opt.fault_at < 0) {
        opt.fault_at = opt.iters / 3;
    }
    if (opt.up_at < 0) {
        opt.up_at = (2 * opt.iters) / 3;
    }
    if (opt.max_size < 1) {
        opt.max_size = 1;
    }
    if (opt.softctl == NULL) {
        /* <build>/test/ucp/gda_ft_ucp_failover -> <build>/src/tools/ */
        n = readlink("/proc/self/exe", exe, sizeof(exe) - 64);
        exe[(n > 0) ? n : 0] = '\0';
        slash = strrchr(exe, '/');
        if (slash != NULL) {
            *slash = '\0';
        }
        snprintf(softctl_default, sizeof(softctl_default),
                 "%.*s/../../src/tools/gda_ft_softctl",
                 (int)(sizeof(exe) - 64), exe);
        opt.softctl = softctl_default;
    }

    if (opt.role == NULL) {
        return fo_launch();
    }
    if (opt.sock_path == NULL) {
        fprintf(stderr, "--role needs --sock PATH\n");
        return 2;
    }
    if (!strcmp(opt.role, "server")) {
        return fo_server();
    }
    if (!strcmp(opt.role, "client")) {
        return fo_client();
    }
    fprintf(stderr, "invalid role '%s'\n", opt.role);
    return 2;
}
