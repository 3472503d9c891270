/*
 * moe: DeepEP-style MoE dispatch and combine over gda_ft, surviving a port
 * failure. The launcher (no --rank) forks N ranks, each with two software
 * HCAs; they connect with UCP over UCX_TLS=gda_ft, build their device
 * endpoints and memory lists with src/ucp_ext, and run moe.h's iterations
 * from a CUDA kernel (where a GPU and libmoe_gpu.so are found, or --gpu)
 * or from CPU threads. The launcher relays the ranks' rendezvous, prints
 * one line per iteration and the summary, and plots the timeline.
 *
 *   moe [--ranks N] [--experts E] [--topk K] [--hidden H] [--tokens T]
 *       [--iters I] [--fault-rank R --fault-at I1 --up-at I2]
 *       [--kill-rank R --at K [--rejoin-at K2]] [--no-failover | --compare]
 *       [--plot FILE.png] [--gpu | --cpu] [--engine-stats]
 *
 * --kill-rank R --at K: rank R's process kills itself (SIGKILL) as
 * iteration K begins, having told the launcher when. The others mask it
 * (moe.h): the tokens routed to its experts are reported as masked, every
 * other token is checked, and the job must finish. --rejoin-at K2: as the
 * others begin iteration K2 they meet for a rendezvous, the launcher
 * starts rank R again (a new process: new QPs, new keys), and the others
 * connect to it and swap its device endpoint and memory list in; it runs
 * iterations K2 on, checked like every rank's.
 *
 * Here: the options, the launcher and main; a rank is moe_rank.c, the
 * report of a job moe_report.c, the messages between them moe_msg.c.
 */
#ifndef _GNU_SOURCE
#  define _GNU_SOURCE
#endif

#include "moe_int.h"
#include "gda_ft_prog.h"

#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

static double moe_now(void)
{
    return gda_ft_dev_now_ns() * 1e-9;
}

moe_opt_t opt = {
    .ranks        = 2,
    .experts      = 4,
    .topk         = 2,
    .hidden       = 1024,
    .tokens       = 64,
    .iters        = 60,
    .workers      = 2,
    .nchan        = 2,
    .blocks       = 1,
    .fault_rank   = 0,
    .fault_at     = 20,
    .up_at        = 40,
    .kill_rank    = -1,
    .kill_at      = -1,
    .rejoin_at    = -1,
    .failover     = 1,
    .use_gpu      = -1,
    .timeout      = 20.0,
    .retry_window = 8.0,
    .plot         = "moe_timeline.png",
    .seed         = 2026,
    .rank         = -1,
    .sock         = -1
};


/* ---- the launcher -------------------------------------------------------- */

/* The ranks of a job, and how to start one again */
typedef struct {
    int      fds[MOE_MAX_RANKS];
    pid_t    pids[MOE_MAX_RANKS];
    int      failover;
    unsigned port;
    char   **argv;
} moe_ranks_t;

static pid_t moe_spawn(unsigned rank, int fd, int failover, unsigned port,
                       int rejoined, char **argv)
{
    char devices[160], val[32];
    pid_t pid;

    fflush(stdout);
    pid = fork();
    if (pid != 0) {
        return pid;
    }
    snprintf(devices, sizeof(devices), "r%ua=127.0.%u.%u:%u,"
             "r%ub=127.0.%u.%u:%u", rank, 10 + rank, 1, port, rank,
             10 + rank, 2, port);
    setenv("UCX_GDA_FT_SOFT_DEVICES", devices, 1);
    setenv("UCX_TLS", "gda_ft", 0);
    setenv("UCX_NET_DEVICES", "all", 0);
    setenv("UCX_GDA_FT_SOFT_CTL_DIR", "", 0);
    setenv("UCX_GDA_FT_DEADLINE", "100ms", 0);
    /* a dead rank masked within two deadlines (auto waits 1 s on a soft
     * HCA: a loaded machine may hold its engine threads that long) */
    setenv("UCX_GDA_FT_PEER_TIMEOUT", "150ms", 0);
    /* the port is back for 20 iterations of 1-3 ms: a 50 ms window, or
     * the 100 ms wait before a path's first re-arm, left the failback to
     * the job's last iteration, or after it */
    setenv("UCX_GDA_FT_RECOVERY_WINDOW", "10ms", 0);
    setenv("UCX_GDA_FT_REARM_BACKOFF", "10ms", 0);
    snprintf(val, sizeof(val), "%u", opt.nchan);
    setenv("UCX_GDA_FT_DEVICE_CHANNELS", val, 1);
    if (!failover) {
        /* what users live with today: the HCA retries, then fails */
        setenv("UCX_GDA_FT_DEVICE_FAILOVER", "n", 1);
        snprintf(val, sizeof(val), "%.0fms", opt.retry_window * 1000 / 7);
        setenv("UCX_GDA_FT_TIMEOUT", val, 1);
        /* the others give up soon after the failing rank did */
        snprintf(val, sizeof(val), "%.0f", opt.retry_window + 3);
        setenv("MOE_TIMEOUT", val, 1);
    }
    snprintf(val, sizeof(val), "%u", rank);
    setenv("MOE_RANK", val, 1);
    if (rejoined) {
        setenv("MOE_REJOINED", "1", 1);
    }
    snprintf(val, sizeof(val), "%d", fd);
    setenv("MOE_SOCK", val, 1);
    execv("/proc/self/exe", argv);
    fprintf(stderr, "execv: %s\n", strerror(errno));
    _exit(127);
}

/* Starts rank r (again, with rejoined) on a socket of its own */
static void moe_start_rank(moe_ranks_t *ranks, unsigned r, int rejoined)
{
    int pair[2];

    if (socketpair(AF_UNIX, SOCK_STREAM, 0, pair) != 0) {
        moe_die("socketpair: %s", strerror(errno));
    }
    ranks->pids[r] = moe_spawn(r, pair[1], ranks->failover, ranks->port,
                               rejoined, ranks->argv);
    close(pair[1]);
    ranks->fds[r] = pair[0];
}

/* Relays the ranks' all-gathers until every rank has reported (or died);
 * with --rejoin-at, starts the killed rank again once the others have
 * begun the rendezvous that takes it back */
static void moe_relay(moe_ranks_t *ranks, moe_job_t *job, double limit_sec)
{
    int *fds = ranks->fds, status;
    void *blobs[MOE_MAX_RANKS] = {NULL};
    uint32_t lens[MOE_MAX_RANKS], type, len;
    struct pollfd pfd[MOE_MAX_RANKS];
    unsigned r, q, gathered = 0, over = 0;
    int open_[MOE_MAX_RANKS];
    double deadline = moe_now() + limit_sec;
    void *blob;

    for (r = 0; r < opt.ranks; ++r) {
        open_[r] = 1;
    }
    while (over < opt.ranks) {
        r = (unsigned)opt.kill_rank;
        if ((opt.rejoin_at >= 0) && (job->restart_ns == 0) &&
            (job->kill_ns != 0) && !open_[r] &&
            (gathered == opt.ranks - 1)) {
            waitpid(ranks->pids[r], &status, 0);
            close(fds[r]);
            job->restart_ns = gda_ft_dev_now_ns();
            moe_start_rank(ranks, r, 1);
            open_[r] = 1;
            --over;
        }
        for (r = 0; r < opt.ranks; ++r) {
            pfd[r].fd     = open_[r] ? fds[r] : -1;
            pfd[r].events = POLLIN;
        }
        if (poll(pfd, opt.ranks, 200) == 0) {
            if (moe_now() > deadline) {
                printf("launcher: a rank hangs; ending the job\n");
                break;
            }
            continue;
        }
        for (r = 0; r < opt.ranks; ++r) {
            if (!open_[r] || !(pfd[r].revents & (POLLIN | POLLHUP))) {
                continue;
            }
            if ((moe_read(fds[r], &type, sizeof(type)) != 0) ||
                ((blob = moe_recv_blob(fds[r], &len)) == NULL)) {
                open_[r] = 0;          /* it died before reporting */
                ++over;
                continue;
            }
            if ((type == MOE_MSG_DYING) && (len == sizeof(uint64_t))) {
                memcpy(&job->kill_ns, blob, sizeof(uint64_t));
                free(blob);
                continue;             /* its end of file comes next */
            }
            if (type == MOE_MSG_REPORT) {
                if (len == opt.iters * sizeof(moe_iter_rec_t) +
                           sizeof(moe_summary_t)) {
                    job->recs[r] = blob;
                    memcpy(&job->sum[r], (uint8_t*)blob + opt.iters *
                           sizeof(moe_iter_rec_t), sizeof(moe_summary_t));
                    job->got[r] = 1;
                }
                open_[r] = 0;
                ++over;
                continue;
            }
            blobs[r] = blob;
            lens[r]  = len;
            if (++gathered < opt.ranks) {
                continue;
            }
            for (q = 0; q < opt.ranks; ++q) {
                for (r = 0; r < opt.ranks; ++r) {
                    moe_send_blob(fds[q], blobs[r], lens[r]);
                }
            }
            for (q = 0; q < opt.ranks; ++q) {
                free(blobs[q]);
                blobs[q] = NULL;
            }
            gathered = 0;
            break;
        }
    }
    type = MOE_MSG_BYE;
    for (r = 0; r < opt.ranks; ++r) {
        (void)!write(fds[r], &type, sizeof(type));
    }
}

static int moe_usage(FILE *f, int rc)
{
    fprintf(f,
        "usage: moe [options]\n"
        "  --ranks N        ranks (processes), 2..8 (default 2)\n"
        "  --experts E      experts per rank (default 4)\n"
        "  --topk K         experts per token (default 2)\n"
        "  --hidden H       elements per token vector (default 1024)\n"
        "  --tokens T       tokens per rank and iteration (default 64)\n"
        "  --iters I        iterations (default 60)\n"
        "  --workers W      CPU threads, or GPU threads per block, per rank "
        "(default 2)\n"
        "  --blocks B       GPU: CTAs of each phase's kernel (default 1; "
        "132 fill an H100)\n"
        "  --channels C     device channels per peer, 1..64 (default 2)\n"
        "  --fault-rank R   rank whose primary port fails (default 0; "
        "-1: none)\n"
        "  --fault-at I1    ... at iteration I1 (default 20)\n"
        "  --up-at I2       ... and comes back at I2 (default 40)\n"
        "  --kill-rank R    rank whose process is killed (default -1: "
        "none); the others\n"
        "                   mask it: its experts' tokens are masked\n"
        "  --at K           ... as iteration K begins (default 10)\n"
        "  --rejoin-at K2   ... and started again at K2, taken back by the "
        "others\n"
        "  --no-failover    UCX_GDA_FT_DEVICE_FAILOVER=n: what users have "
        "today\n"
        "  --compare        both runs, their summaries side by side\n"
        "  --retry-window S the HCA's retry window without failover "
        "(default 8 s; ConnectX: about 30)\n"
        "  --timeout S      longest wait for a signal (default 20)\n"
        "  --plot FILE.png  the timeline (default moe_timeline.png; needs "
        "gnuplot)\n"
        "  --gpu | --cpu    kernels | CPU threads (default: the GPU where "
        "found)\n"
        "  --engine-stats   each rank prints its software HCAs' port "
        "counters (packets,\n"
        "                   retransmissions, losses) and where their "
        "engine spent its\n"
        "                   time (passes, GPU copies and waits)\n");
    return rc;
}

/* One job: N ranks through all iterations (or until one never finishes) */
static void moe_job(int failover, char **argv, moe_job_t *job)
{
    moe_ranks_t ranks;
    unsigned r;
    int status;

    memset(job, 0, sizeof(*job));
    job->failover = failover;
    ranks.failover = failover;
    ranks.port     = 30000 + (getpid() * 7 + failover * 13) % 20000;
    ranks.argv     = argv;
    for (r = 0; r < opt.ranks; ++r) {
        moe_start_rank(&ranks, r, 0);
    }
    moe_relay(&ranks, job, opt.iters * 2.0 + opt.timeout * 3 +
              opt.retry_window + 60);
    for (r = 0; r < opt.ranks; ++r) {
        close(ranks.fds[r]);
        kill(ranks.pids[r], SIGTERM);   /* gone already, unless it hangs */
        waitpid(ranks.pids[r], &status, 0);
    }
}


static int moe_launcher(char **argv)
{
    signal(SIGPIPE, SIG_IGN);     /* a rank that died leaves a closed fd */
    moe_job_t jobs[2];
    char lines[2][32][80];
    unsigned n[2] = {0, 0}, j, i, njobs = 0;
    int ok = 1;

    printf("MoE dispatch/combine over gda_ft: %u ranks, %u experts each, "
           "top-%u, %u tokens of %u elements per rank, %u iterations; ",
           opt.ranks, opt.experts, opt.topk, opt.tokens, opt.hidden,
           opt.iters);
    if (opt.fault_rank >= 0) {
        printf("rank %d's primary port down at iteration %d, up at %d\n",
               opt.fault_rank, opt.fault_at, opt.up_at);
    } else {
        printf((opt.kill_rank < 0) ? "no fault\n" : "no port fault\n");
    }
    if (opt.kill_rank >= 0) {
        printf("rank %d's process killed at iteration %d\n", opt.kill_rank,
               opt.kill_at);
    }

    if (opt.failover != 0) {
        moe_job(1, argv, &jobs[njobs]);
        moe_print_iterations(&jobs[njobs]);
        ++njobs;
    }
    if (opt.failover != 1) {
        printf("\nThe same job with failover off (UCX_GDA_FT_DEVICE_FAILOVER"
               "=n, a retry window of %.0f s):\n", opt.retry_window);
        moe_job(0, argv, &jobs[njobs]);
        moe_print_iterations(&jobs[njobs]);
        ++njobs;
    }

    printf("\n");
    for (j = 0; j < njobs; ++j) {
        n[j] = moe_summary_lines(&jobs[j], lines[j]);
    }
    for (i = 0; i < (unsigned)MOE_MAX(n[0], n[1]); ++i) {
        printf("  %-44s %s\n", (i < n[0]) ? lines[0][i] : "",
               ((njobs > 1) && (i < n[1])) ? lines[1][i] : "");
    }
    moe_plot(jobs, njobs);

    /* the failover job must be exact and finish; a job without failover
     * through a fault is expected not to */
    if (jobs[0].failover) {
        ok = moe_job_ok(&jobs[0]);
    } else {
        ok = (opt.fault_rank < 0) ? moe_job_ok(&jobs[0]) :
             (moe_job_done(&jobs[0]) < opt.iters);
    }
    printf("RESULT %s\n", ok ? "PASS" : "FAIL");
    for (j = 0; j < njobs; ++j) {
        for (i = 0; i < opt.ranks; ++i) {
            free(jobs[j].recs[i]);
        }
    }
    return ok ? 0 : 1;
}

static unsigned moe_uint(const char *arg, unsigned min, unsigned max,
                         const char *what)
{
    unsigned value;

    if (gda_ft_prog_parse_uint(arg, min, max, &value) != 0) {
        moe_die("%s must be in [%u, %u], not '%s'", what, min, max, arg);
    }
    return value;
}

int main(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"ranks", required_argument, NULL, 'N'},
        {"experts", required_argument, NULL, 'E'},
        {"topk", required_argument, NULL, 'K'},
        {"hidden", required_argument, NULL, 'H'},
        {"tokens", required_argument, NULL, 'T'},
        {"iters", required_argument, NULL, 'I'},
        {"workers", required_argument, NULL, 'W'},
        {"channels", required_argument, NULL, 'C'},
        {"blocks", required_argument, NULL, 'B'},
        {"fault-rank", required_argument, NULL, 'R'},
        {"fault-at", required_argument, NULL, 'a'},
        {"up-at", required_argument, NULL, 'u'},
        {"kill-rank", required_argument, NULL, 'k'},
        {"at", required_argument, NULL, 'A'},
        {"rejoin-at", required_argument, NULL, 'J'},
        {"no-failover", no_argument, NULL, 'n'},
        {"compare", no_argument, NULL, 'c'},
        {"retry-window", required_argument, NULL, 'r'},
        {"timeout", required_argument, NULL, 't'},
        {"plot", required_argument, NULL, 'p'},
        {"seed", required_argument, NULL, 's'},
        {"gpu", no_argument, NULL, 'G'},
        {"cpu", no_argument, NULL, 'P'},
        {"engine-stats", no_argument, NULL, 'S'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}
    };
    int c;

    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (c) {
        case 'N': opt.ranks   = moe_uint(optarg, 2, MOE_MAX_RANKS, "--ranks");
                  break;
        case 'E': opt.experts = moe_uint(optarg, 1, MOE_MAX_EXPERTS,
                                         "--experts"); break;
        case 'K': opt.topk    = moe_uint(optarg, 1, MOE_MAX_TOPK, "--topk");
                  break;
        case 'H': opt.hidden  = moe_uint(optarg, 1, 65536, "--hidden");
                  break;
        case 'T': opt.tokens  = moe_uint(optarg, 1, MOE_MAX_TOKENS,
                                         "--tokens"); break;
        case 'I': opt.iters   = moe_uint(optarg, 1, MOE_MAX_ITERS,
                                         "--iters"); break;
        case 'W': opt.workers = moe_uint(optarg, 1, MOE_MAX_WORKERS,
                                         "--workers"); break;
        case 'C': opt.nchan   = moe_uint(optarg, 1, 64, "--channels"); break;
        case 'B': opt.blocks  = moe_uint(optarg, 1, 65535, "--blocks");
                  break;
        case 'R': opt.fault_rank = (atoi(optarg) < 0) ? -1 :
                                   (int)moe_uint(optarg, 0, MOE_MAX_RANKS - 1,
                                                 "--fault-rank"); break;
        case 'a': opt.fault_at = moe_uint(optarg, 0, MOE_MAX_ITERS,
                                          "--fault-at"); break;
        case 'u': opt.up_at    = moe_uint(optarg, 0, MOE_MAX_ITERS,
                                          "--up-at"); break;
        case 'k': opt.kill_rank = (atoi(optarg) < 0) ? -1 :
                                  (int)moe_uint(optarg, 0, MOE_MAX_RANKS - 1,
                                                "--kill-rank"); break;
        case 'A': opt.kill_at = moe_uint(optarg, 0, MOE_MAX_ITERS, "--at");
                  break;
        case 'J': opt.rejoin_at = moe_uint(optarg, 1, MOE_MAX_ITERS,
                                           "--rejoin-at"); break;
        case 'n': opt.failover = 0; break;
        case 'c': opt.failover = -1; break;
        case 'r': opt.retry_window = moe_uint(optarg, 1, 600,
                                              "--retry-window"); break;
        case 't': opt.timeout = moe_uint(optarg, 1, 3600, "--timeout");
                  break;
        case 'p': opt.plot = optarg; break;
        case 's': opt.seed = strtoull(optarg, NULL, 0); break;
        case 'G': opt.use_gpu = 1; break;
        case 'P': opt.use_gpu = 0; break;
        case 'S': opt.engine_stats = 1; break;
        case 'h': return moe_usage(stdout, 0);
        default:  return moe_usage(stderr, 2);
        }
    }
    if (optind < argc) {
        return moe_usage(stderr, 2);
    }
    if ((opt.fault_rank >= (int)opt.ranks) ||
        (opt.topk > opt.ranks * opt.experts)) {
        moe_die("--fault-rank or --topk out of range for %u ranks of %u "
                "experts", opt.ranks, opt.experts);
    }
    if (opt.kill_rank >= (int)opt.ranks) {
        moe_die("--kill-rank %d out of range for %u ranks", opt.kill_rank,
                opt.ranks);
    }
    if ((opt.kill_rank >= 0) && (opt.kill_at < 0)) {
        opt.kill_at = 10;
    }
    if ((opt.rejoin_at >= 0) &&
        ((opt.kill_rank < 0) || (opt.rejoin_at <= opt.kill_at) ||
         (opt.rejoin_at >= (int)opt.iters))) {
        moe_die("--rejoin-at %d needs --kill-rank, and an iteration after "
                "--at %d and before --iters %u", opt.rejoin_at, opt.kill_at,
                opt.iters);
    }
    if ((opt.kill_rank >= 0) && (opt.failover != 1)) {
        moe_die("--kill-rank needs failover on (a peer is given up on the "
                "deadline)");
    }
    if (getenv("MOE_RANK") != NULL) {
        if (getenv("MOE_TIMEOUT") != NULL) {
            opt.timeout = atof(getenv("MOE_TIMEOUT"));
        }
        opt.rank     = atoi(getenv("MOE_RANK"));
        opt.rejoined = (getenv("MOE_REJOINED") != NULL);
        opt.sock = atoi(getenv("MOE_SOCK"));
        return moe_rank_main();
    }
    return moe_launcher(argv);
}
