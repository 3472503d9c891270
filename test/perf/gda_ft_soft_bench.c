/*
 * Software HCA benchmark: two processes on loopback, each with its own soft
 * device and engine thread, one RC QP between them, driven through the
 * device/ datapath compiled for the host (the code GPU kernels run).
 *
 *  - write_bw: rank 0 RDMA-WRITEs messages of each size into one buffer of
 *    rank 1, many outstanding, signalled every N, for a fixed time;
 *    MBps = 2^20 bytes per second, as ucx_perftest counts them.
 *  - lat: 8-byte inline RDMA WRITE ping-pong; each side polls its own memory
 *    for the peer's write; half round trip, median and p99.
 *
 * The processes exchange QPN, GID, address and rkey over pipes. Output is
 * one machine-readable line per measurement on stdout:
 *
 *     soft write_bw size=65536 MBps=... msgs=... sec=... retransmits=...
 *          wire_ratio=... rx_dup=... rx_oos=...
 *     soft lat size=8 usec_median=... usec_p99=... usec_avg=... iters=...
 *
 * wire_ratio is data packets sent per packet the messages need (1.00: no
 * retransmission). The benchmark threads sched_yield() when a poll finds
 * nothing (-P yield, the default): on a machine with fewer cores than busy
 * threads, spinning starves the engine threads that do the work.
 *
 * This is a benchmark, not a test: it checks the bytes it moved (and exits
 * with an error if they are wrong) but asserts nothing about speed.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "gda_ft_hca.h"
#include "gda_ft_soft.h"
#include "gda_ft_wqe.h"
#include "gda_ft_cq.h"

#include <ucs/algorithm/crc.h>

#include <ucs/sys/math.h>

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define BENCH_SQ_SIZE       256   /* WQEBBs; a WRITE takes one */
#define BENCH_CQ_SIZE       256
#define BENCH_LAT_SIGNAL    16    /* latency: signal every N writes */
#define BENCH_MAX_SIZES     16
#define BENCH_LAT_SLOT      64    /* bytes per ping-pong flag, own line */
#define BENCH_STALL_SEC     10.0  /* no progress this long: give up */


typedef enum {
    BENCH_POLL_YIELD, /* sched_yield() when a poll finds nothing */
    BENCH_POLL_SPIN
} bench_poll_t;


typedef struct bench_opts {
    size_t       sizes[BENCH_MAX_SIZES];
    unsigned     num_sizes;
    double       bw_time;      /* seconds per size */
    double       warmup_time;  /* seconds per size, not measured */
    unsigned     outstanding;  /* messages in flight, at most */
    size_t       max_bytes;    /* bytes in flight, at most */
    unsigned     signal;       /* every N-th message is signalled, at most */
    unsigned     lat_iters;
    unsigned     lat_warmup;
    unsigned     udp_port;
    unsigned     mtu;
    bench_poll_t poll;
    int          do_bw;
    int          do_lat;
    int          do_icrc;
} bench_opts_t;


/* What one side tells the other */
typedef struct bench_peer_info {
    uint32_t qpn;
    uint8_t  gid[GDA_FT_HCA_GID_LEN];
    uint64_t bw_addr;
    uint32_t bw_rkey;
    uint64_t lat_addr;
    uint32_t lat_rkey;
} bench_peer_info_t;


typedef struct bench_ctx {
    int                   rank;
    int                   rfd, wfd;   /* pipes from / to the peer */
    gda_ft_hca_dev_t     *dev;
    gda_ft_hca_pd_t      *pd;
    gda_ft_hca_cq_t      *scq, *rcq;
    gda_ft_hca_qp_t      *qp;
    void                 *sq_buf, *scq_buf, *rcq_buf;
    uint32_t             *dbrec;
    gda_ft_dev_sq_t       sq;
    gda_ft_dev_cq_t       dscq;
    uint8_t              *bw_buf;     /* rank 0: source, rank 1: target */
    size_t                bw_len;
    gda_ft_hca_mr_t      *bw_mr;
    uint8_t              *lat_buf;    /* [0]: flag the peer writes */
    gda_ft_hca_mr_t      *lat_mr;
    bench_peer_info_t     peer;
    const bench_opts_t   *opts;
} bench_ctx_t;


static void bench_die(const char *fmt, ...)
    __attribute__((noreturn, format(printf, 1, 2)));

static void bench_die(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    fprintf(stderr, "gda_ft_soft_bench: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    exit(1);
}

#define BENCH_CHECK(_status, _what) \
    do { \
        ucs_status_t _s = (_status); \
        if (_s != UCS_OK) { \
            bench_die("%s: %s", (_what), ucs_status_string(_s)); \
        } \
    } while (0)


static double bench_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void *bench_alloc(size_t size)
{
    void *ptr = NULL;

    if (posix_memalign(&ptr, 4096, size) != 0) {
        bench_die("cannot allocate %zu bytes", size);
    }
    memset(ptr, 0, size);
    return ptr;
}

/* Same bytes on both sides for a given offset */
static void bench_fill(uint8_t *buf, size_t len)
{
    uint32_t x = 0x9e3779b9u;
    size_t i;

    for (i = 0; i < len; ++i) {
        x      = x * 1103515245u + 12345u;
        buf[i] = (uint8_t)(x >> 16);
    }
}


/* ---- pipes between the two processes ------------------------------------ */

static void bench_write_all(int fd, const void *buf, size_t len)
{
    const uint8_t *p = buf;
    ssize_t ret;

    while (len > 0) {
        ret = write(fd, p, len);
        if (ret < 0) {
            if (errno == EINTR) {
                continue;
            }
            bench_die("pipe write: %m");
        }
        p   += ret;
        len -= ret;
    }
}

static void bench_read_all(int fd, void *buf, size_t len)
{
    uint8_t *p = buf;
    ssize_t ret;

    while (len > 0) {
        ret = read(fd, p, len);
        if (ret < 0) {
            if (errno == EINTR) {
                continue;
            }
            bench_die("pipe read: %m");
        } else if (ret == 0) {
            bench_die("peer process exited");
        }
        p   += ret;
        len -= ret;
    }
}

static void bench_send_u64(bench_ctx_t *ctx, uint64_t value)
{
    bench_write_all(ctx->wfd, &value, sizeof(value));
}

static uint64_t bench_recv_u64(bench_ctx_t *ctx)
{
    uint64_t value;

    bench_read_all(ctx->rfd, &value, sizeof(value));
    return value;
}

static void bench_barrier(bench_ctx_t *ctx)
{
    bench_send_u64(ctx, 0xba77);
    if (bench_recv_u64(ctx) != 0xba77) {
        bench_die("rank %d: barrier out of step", ctx->rank);
    }
}


/* ---- setup --------------------------------------------------------------- */

static void bench_open(bench_ctx_t *ctx, size_t bw_len)
{
    const bench_opts_t *opts = ctx->opts;
    gda_ft_hca_cq_attr_t cq_attr = {0};
    gda_ft_hca_qp_init_attr_t qp_attr = {0};
    gda_ft_hca_mr_attr_t mr_attr;
    char spec[128], name[32], mtu[16];

    /* Each process declares only its own device: bench0 on 127.0.0.1,
     * bench1 on 127.0.0.2, same UDP port */
    snprintf(name, sizeof(name), "bench%d", ctx->rank);
    snprintf(spec, sizeof(spec), "%s=127.0.0.%d:%u", name, ctx->rank + 1,
             opts->udp_port);
    snprintf(mtu, sizeof(mtu), "%u", opts->mtu);
    setenv("UCX_GDA_FT_SOFT_DEVICES", spec, 1);
    setenv("UCX_GDA_FT_SOFT_MTU", mtu, 1);
    setenv("UCX_GDA_FT_SOFT_CTL_DIR", "", 0);
    BENCH_CHECK(gda_ft_soft_reload_config(), "soft HCA configuration");
    BENCH_CHECK(gda_ft_hca_open(name, &ctx->dev), name);
    BENCH_CHECK(gda_ft_hca_pd_alloc(ctx->dev, &ctx->pd), "pd_alloc");

    ctx->scq_buf = bench_alloc(BENCH_CQ_SIZE * GDA_FT_MLX5_CQE_SIZE);
    ctx->rcq_buf = bench_alloc(BENCH_CQ_SIZE * GDA_FT_MLX5_CQE_SIZE);
    gda_ft_cq_init_buf(ctx->scq_buf, BENCH_CQ_SIZE);
    gda_ft_cq_init_buf(ctx->rcq_buf, BENCH_CQ_SIZE);
    gda_ft_dev_cq_init(&ctx->dscq, ctx->scq_buf, BENCH_CQ_SIZE, 0);

    cq_attr.cqe_cnt  = BENCH_CQ_SIZE;
    cq_attr.mem_type = GDA_FT_HCA_MEM_HOST;
    cq_attr.buf      = ctx->scq_buf;
    BENCH_CHECK(gda_ft_hca_cq_create(ctx->dev, &cq_attr, &ctx->scq),
                "send cq_create");
    cq_attr.buf      = ctx->rcq_buf;
    BENCH_CHECK(gda_ft_hca_cq_create(ctx->dev, &cq_attr, &ctx->rcq),
                "recv cq_create");

    ctx->sq_buf = bench_alloc(BENCH_SQ_SIZE * GDA_FT_MLX5_WQE_BB);
    ctx->dbrec  = bench_alloc(64);

    qp_attr.send_cq      = ctx->scq;
    qp_attr.recv_cq      = NULL;
    qp_attr.sq_buf       = ctx->sq_buf;
    qp_attr.sq_wqebb_cnt = BENCH_SQ_SIZE;
    qp_attr.dbrec        = ctx->dbrec;
    qp_attr.ring_mem     = GDA_FT_HCA_MEM_HOST;
    qp_attr.port_num     = 1;
    BENCH_CHECK(gda_ft_hca_qp_create(ctx->pd, &qp_attr, &ctx->qp),
                "qp_create");
    gda_ft_dev_sq_init(&ctx->sq, ctx->sq_buf, BENCH_SQ_SIZE, ctx->qp->qpn,
                       ctx->dbrec, ctx->qp->uar, ctx->qp->wake_fd,
                       ctx->qp->wake_armed, ctx->dev->attr.max_inline);

    ctx->bw_len = bw_len;
    ctx->bw_buf = bench_alloc(bw_len);
    if (ctx->rank == 0) {
        bench_fill(ctx->bw_buf, bw_len);
    }
    mr_attr.addr     = ctx->bw_buf;
    mr_attr.length   = bw_len;
    mr_attr.access   = GDA_FT_HCA_ACCESS_LOCAL_WRITE |
                       GDA_FT_HCA_ACCESS_REMOTE_WRITE;
    mr_attr.mem_type = GDA_FT_HCA_MEM_HOST;
    BENCH_CHECK(gda_ft_hca_mr_reg(ctx->pd, &mr_attr, &ctx->bw_mr), "mr_reg");

    ctx->lat_buf     = bench_alloc(2 * BENCH_LAT_SLOT);
    mr_attr.addr     = ctx->lat_buf;
    mr_attr.length   = 2 * BENCH_LAT_SLOT;
    BENCH_CHECK(gda_ft_hca_mr_reg(ctx->pd, &mr_attr, &ctx->lat_mr), "mr_reg");
}

static void bench_connect(bench_ctx_t *ctx)
{
    gda_ft_hca_qp_attr_t attr = {0};
    gda_ft_hca_port_attr_t port_attr;
    bench_peer_info_t mine = {0};

    BENCH_CHECK(gda_ft_hca_port_query(ctx->dev, 1, &port_attr),
                "port_query");
    mine.qpn      = ctx->qp->qpn;
    memcpy(mine.gid, port_attr.gid, sizeof(mine.gid));
    mine.bw_addr  = (uintptr_t)ctx->bw_buf;
    mine.bw_rkey  = ctx->bw_mr->rkey;
    mine.lat_addr = (uintptr_t)ctx->lat_buf;
    mine.lat_rkey = ctx->lat_mr->rkey;
    bench_write_all(ctx->wfd, &mine, sizeof(mine));
    bench_read_all(ctx->rfd, &ctx->peer, sizeof(ctx->peer));

    attr.access             = GDA_FT_HCA_ACCESS_ALL;
    attr.dest_qpn           = ctx->peer.qpn;
    memcpy(attr.dest_gid, ctx->peer.gid, GDA_FT_HCA_GID_LEN);
    attr.rq_psn             = 0x1000;
    attr.path_mtu           = ucs_min(ctx->opts->mtu, port_attr.active_mtu);
    attr.hop_limit          = 64;
    attr.min_rnr_timer      = 1;
    attr.max_dest_rd_atomic = 16;
    attr.sq_psn             = 0x1000;
    attr.timeout            = 14;    /* 67 ms */
    attr.retry_cnt          = 7;
    attr.rnr_retry          = 7;
    attr.max_rd_atomic      = 16;
    BENCH_CHECK(gda_ft_hca_qp_connect(ctx->qp, &attr), "qp_connect");
    bench_barrier(ctx);
}

static void bench_close(bench_ctx_t *ctx)
{
    gda_ft_hca_mr_dereg(ctx->bw_mr);
    gda_ft_hca_mr_dereg(ctx->lat_mr);
    gda_ft_hca_qp_destroy(ctx->qp);
    gda_ft_hca_cq_destroy(ctx->scq);
    gda_ft_hca_cq_destroy(ctx->rcq);
    gda_ft_hca_pd_free(ctx->pd);
    gda_ft_hca_close(ctx->dev);
    free(ctx->bw_buf);
    free(ctx->lat_buf);
    free(ctx->sq_buf);
    free(ctx->scq_buf);
    free(ctx->rcq_buf);
    free(ctx->dbrec);
}


/* ---- completions --------------------------------------------------------- */

/* Consumes the send CQEs present; returns the WQEBBs they retired */
static unsigned bench_poll_send(bench_ctx_t *ctx)
{
    gda_ft_dev_cqe_info_t info;
    gda_ft_dev_status_t status;
    unsigned freed = 0;

    for (;;) {
        status = gda_ft_cq_poll_ring(&ctx->dscq, &info);
        if (status == GDA_FT_DEV_INPROGRESS) {
            return freed;
        } else if (status != GDA_FT_DEV_OK) {
            bench_die("rank %d: error CQE: opcode 0x%x syndrome %s "
                      "(wqe %u)", ctx->rank, info.opcode,
                      gda_ft_hca_syndrome_str(info.syndrome),
                      info.wqe_counter);
        }
        freed += gda_ft_sq_retire(&ctx->sq, info.wqe_counter);
    }
}

static void bench_idle(const bench_opts_t *opts)
{
    if (opts->poll == BENCH_POLL_YIELD) {
        sched_yield();
    }
}

static gda_ft_soft_port_stats_t bench_stats(bench_ctx_t *ctx)
{
    gda_ft_soft_port_stats_t stats;

    BENCH_CHECK(gda_ft_soft_port_stats(ctx->dev, 1, &stats), "port_stats");
    return stats;
}


/* ---- bandwidth ----------------------------------------------------------- */

typedef struct bench_bw_result {
    uint64_t msgs;
    double   sec;
} bench_bw_result_t;

/* Window of one size: opts->outstanding messages but at most
 * opts->max_bytes (so that 1 MiB messages do not queue a long tail), and
 * at least 4 signalled groups in it, so that posting never waits for the
 * whole window to drain */
static void bench_bw_window(const bench_opts_t *opts, size_t size,
                            unsigned *outstanding_p, unsigned *signal_p)
{
    unsigned outstanding = opts->outstanding;

    if ((opts->max_bytes / size) < outstanding) {
        outstanding = ucs_max(2, opts->max_bytes / size);
    }
    *outstanding_p = outstanding;
    *signal_p      = ucs_max(1, ucs_min(opts->signal, outstanding / 4));
}

/*
 * Rank 0: posts WRITEs of `size` bytes in groups of opts->signal (the last
 * of each group signalled), keeping opts->outstanding in flight, until
 * `duration` has passed, then waits for all of them. Each WRITE is one
 * WQEBB, so retired WQEBBs count completed messages.
 */
static bench_bw_result_t bench_bw_run(bench_ctx_t *ctx, size_t size,
                                      double duration)
{
    const bench_opts_t *opts = ctx->opts;
    bench_bw_result_t result;
    uint64_t posted = 0, completed = 0;
    double start, now, last_progress;
    unsigned i, freed, group, outstanding;
    uint16_t idx;
    int posting = 1, work;

    bench_bw_window(opts, size, &outstanding, &group);
    start = now = last_progress = bench_now();
    while (posting || (completed < posted)) {
        work = 0;
        if (posting) {
            while ((posted - completed + group) <= outstanding) {
                for (i = 0; i < group; ++i) {
                    if (gda_ft_sq_post_rdma_write(
                                &ctx->sq, (uintptr_t)ctx->bw_buf,
                                ctx->bw_mr->lkey, (uint32_t)size,
                                ctx->peer.bw_addr, ctx->peer.bw_rkey,
                                (i == group - 1) ? GDA_FT_WQE_SIGNALED : 0,
                                &idx) != GDA_FT_DEV_OK) {
                        bench_die("post failed with %" PRIu64 " posted, %"
                                  PRIu64 " completed", posted, completed);
                    }
                }
                posted += group;
                work    = 1;
            }
            gda_ft_sq_ring_db(&ctx->sq);
        }

        freed      = bench_poll_send(ctx);
        completed += freed;
        now        = bench_now();
        if (posting && ((now - start) >= duration)) {
            posting = 0;
        }
        if (freed) {
            last_progress = now;
        } else if ((now - last_progress) > BENCH_STALL_SEC) {
            bench_die("write_bw size=%zu: no completion within %.0f s",
                      size, BENCH_STALL_SEC);
        }
        if (!freed && !work) {
            bench_idle(opts);
        }
    }

    result.msgs = posted;
    result.sec  = now - start;
    return result;
}

/* Rank 1: the written bytes must be the source pattern */
static int bench_bw_verify(bench_ctx_t *ctx, size_t size)
{
    uint8_t *ref = bench_alloc(size);
    int ok;

    bench_fill(ref, size);
    ok = (memcmp(ref, ctx->bw_buf, size) == 0);
    memset(ctx->bw_buf, 0, size);
    free(ref);
    return ok;
}

/* Packets of one message on the wire */
static uint64_t bench_pkts_per_msg(const bench_opts_t *opts, size_t size)
{
    return (size + opts->mtu - 1) / opts->mtu;
}

/*
 * Per size: rank 0 measures; rank 1 checks the bytes and reports what its
 * port saw, so that the line also shows the wire overhead: data packets
 * sent by rank 0 per packet the messages need (1.00 = no retransmission),
 * and duplicates dropped by rank 1.
 */
static void bench_bw(bench_ctx_t *ctx)
{
    const bench_opts_t *opts = ctx->opts;
    gda_ft_soft_port_stats_t before, after;
    bench_bw_result_t warm = {0}, result;
    uint64_t needed, dup, oos;
    unsigned s, outstanding, signal;
    size_t size;

    for (s = 0; s < opts->num_sizes; ++s) {
        size = opts->sizes[s];
        bench_barrier(ctx);
        before = bench_stats(ctx);
        if (ctx->rank == 0) {
            if (opts->warmup_time > 0) {
                warm = bench_bw_run(ctx, size, opts->warmup_time);
            }
            result = bench_bw_run(ctx, size, opts->bw_time);
            after  = bench_stats(ctx);
            bench_send_u64(ctx, size);         /* done: verify */
            if (bench_recv_u64(ctx) != 1) {
                bench_die("write_bw size=%zu: data mismatch at the target",
                          size);
            }
            dup    = bench_recv_u64(ctx);
            oos    = bench_recv_u64(ctx);
            needed = (warm.msgs + result.msgs) * bench_pkts_per_msg(opts, size);
            bench_bw_window(opts, size, &outstanding, &signal);
            printf("soft write_bw size=%zu MBps=%.2f msgs=%" PRIu64
                   " sec=%.3f outstanding=%u signal=%u retransmits=%" PRIu64
                   " wire_ratio=%.2f rx_dup=%" PRIu64 " rx_oos=%" PRIu64 "\n",
                   size,
                   result.msgs * (double)size / result.sec / (1024.0 * 1024.0),
                   result.msgs, result.sec, outstanding, signal,
                   after.retransmits - before.retransmits,
                   (double)(after.tx_pkts - before.tx_pkts) / needed,
                   dup, oos);
            fflush(stdout);
        } else {
            if (bench_recv_u64(ctx) != size) {
                bench_die("rank 1: out of step");
            }
            after = bench_stats(ctx);
            bench_send_u64(ctx, bench_bw_verify(ctx, size));
            bench_send_u64(ctx, after.rx_duplicate - before.rx_duplicate);
            bench_send_u64(ctx, after.rx_out_of_seq - before.rx_out_of_seq);
        }
    }
}


/* ---- latency ------------------------------------------------------------- */

static int bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double*)a, y = *(const double*)b;

    return (x < y) ? -1 : (x > y);
}

/* Writes `value` into the peer's flag: 8 bytes inline */
static void bench_lat_put(bench_ctx_t *ctx, uint64_t value, uint64_t seq)
{
    unsigned flags = ((seq % BENCH_LAT_SIGNAL) == 0) ? GDA_FT_WQE_SIGNALED : 0;
    gda_ft_dev_status_t status;
    uint16_t idx;

    for (;;) {
        status = gda_ft_sq_post_rdma_write_inline(&ctx->sq, &value,
                                                  sizeof(value),
                                                  ctx->peer.lat_addr,
                                                  ctx->peer.lat_rkey, flags,
                                                  &idx);
        if (status == GDA_FT_DEV_OK) {
            break;
        } else if (status != GDA_FT_DEV_NO_RESOURCE) {
            bench_die("inline post: %s", gda_ft_dev_status_str(status));
        }
        bench_poll_send(ctx);
    }
    gda_ft_sq_ring_db(&ctx->sq);
}

/* Waits until the peer has written `value` into our flag */
static void bench_lat_wait(bench_ctx_t *ctx, uint64_t value)
{
    volatile uint64_t *flag = (volatile uint64_t*)ctx->lat_buf;
    double deadline         = 0;
    unsigned spins          = 0;

    while (*flag != value) {
        if (!bench_poll_send(ctx)) {
            bench_idle(ctx->opts);
        }
        if ((++spins % 4096) == 0) {
            if (deadline == 0) {
                deadline = bench_now() + BENCH_STALL_SEC;
            } else if (bench_now() > deadline) {
                bench_die("rank %d: no ping-pong message %" PRIu64
                          " within %.0f s", ctx->rank, value,
                          BENCH_STALL_SEC);
            }
        }
    }
}

static void bench_lat(bench_ctx_t *ctx)
{
    const bench_opts_t *opts = ctx->opts;
    unsigned total = opts->lat_warmup + opts->lat_iters;
    double *samples = NULL, sum = 0, t0;
    unsigned i, p99;
    uint64_t seq;

    bench_barrier(ctx);
    if (ctx->rank == 0) {
        samples = calloc(opts->lat_iters, sizeof(*samples));
        for (seq = 1; seq <= total; ++seq) {
            t0 = bench_now();
            bench_lat_put(ctx, seq, seq);
            bench_lat_wait(ctx, seq);
            if (seq > opts->lat_warmup) {
                samples[seq - opts->lat_warmup - 1] =
                        (bench_now() - t0) * 1e6 / 2;
            }
        }
    } else {
        for (seq = 1; seq <= total; ++seq) {
            bench_lat_wait(ctx, seq);
            bench_lat_put(ctx, seq, seq);
        }
    }
    bench_barrier(ctx);

    if (ctx->rank == 0) {
        for (i = 0; i < opts->lat_iters; ++i) {
            sum += samples[i];
        }
        qsort(samples, opts->lat_iters, sizeof(*samples), bench_cmp_double);
        p99 = (unsigned)((opts->lat_iters - 1) * 0.99);
        printf("soft lat size=8 usec_median=%.3f usec_p99=%.3f "
               "usec_avg=%.3f usec_min=%.3f iters=%u\n",
               samples[(opts->lat_iters - 1) / 2], samples[p99],
               sum / opts->lat_iters, samples[0], opts->lat_iters);
        fflush(stdout);
        free(samples);
    }
}


/* ---- ICRC cost: what every packet pays twice (sender and receiver) ------ */

static void bench_icrc(const bench_opts_t *opts)
{
    size_t len = opts->mtu + 40;
    uint8_t *buf = bench_alloc(len);
    volatile uint32_t sink = 0;
    unsigned i, n = 0;
    double start = bench_now(), sec;

    bench_fill(buf, len);
    do {
        for (i = 0; i < 64; ++i) {
            sink ^= ucs_crc32(0, buf, len);
        }
        n  += 64;
        sec = bench_now() - start;
    } while (sec < 0.2);

    printf("soft icrc size=%zu usec_per_pkt=%.3f MBps=%.2f\n", len,
           sec * 1e6 / n, n * (double)len / sec / (1024.0 * 1024.0));
    fflush(stdout);
    free(buf);
}


/* ---- main ---------------------------------------------------------------- */

static void bench_usage(void)
{
    printf("Usage: gda_ft_soft_bench [options]\n"
           "  -s LIST   write_bw message sizes (4096,65536,1048576)\n"
           "  -t SEC    seconds per write_bw size (1.0)\n"
           "  -W SEC    warm-up seconds per size, not measured (0.2)\n"
           "  -O N      outstanding WRITEs, at most (64)\n"
           "  -M BYTES  outstanding bytes, at most (16777216)\n"
           "  -S N      signal every N-th WRITE, at most (8; at least 4\n"
           "            signalled WRITEs in flight)\n"
           "  -n N      latency iterations (20000)\n"
           "  -w N      latency warm-up iterations (1000)\n"
           "  -p PORT   UDP port of both soft devices (from the pid)\n"
           "  -m MTU    soft port MTU (4096)\n"
           "  -P MODE   poll mode of the benchmark threads: yield|spin (yield)\n"
           "  -B        bandwidth only     -L  latency only\n"
           "  -C        also print the cost of one ICRC (ucs_crc32)\n"
           "  -h        this help\n");
}

static void bench_parse_sizes(bench_opts_t *opts, const char *list)
{
    char *copy = strdup(list), *tok, *save = NULL;

    opts->num_sizes = 0;
    for (tok = strtok_r(copy, ",", &save); tok != NULL;
         tok = strtok_r(NULL, ",", &save)) {
        if (opts->num_sizes == BENCH_MAX_SIZES) {
            bench_die("at most %d sizes", BENCH_MAX_SIZES);
        }
        opts->sizes[opts->num_sizes] = strtoul(tok, NULL, 0);
        if ((opts->sizes[opts->num_sizes] == 0) ||
            (opts->sizes[opts->num_sizes] > (1ul << 30))) {
            bench_die("bad size '%s'", tok);
        }
        ++opts->num_sizes;
    }
    free(copy);
}

static void bench_parse(bench_opts_t *opts, int argc, char **argv)
{
    int c;

    memset(opts, 0, sizeof(*opts));
    bench_parse_sizes(opts, "4096,65536,1048576");
    opts->bw_time     = 1.0;
    opts->warmup_time = 0.2;
    opts->outstanding = 64;
    opts->max_bytes   = 16ul << 20;
    opts->signal      = 8;
    opts->lat_iters   = 20000;
    opts->lat_warmup  = 1000;
    opts->udp_port    = 40000 + (getpid() % 20000);
    opts->mtu         = 4096;
    opts->poll        = BENCH_POLL_YIELD;
    opts->do_bw       = 1;
    opts->do_lat      = 1;

    while ((c = getopt(argc, argv, "s:t:W:O:M:S:n:w:p:m:P:BLCh")) != -1) {
        switch (c) {
        case 's': bench_parse_sizes(opts, optarg); break;
        case 't': opts->bw_time = atof(optarg); break;
        case 'W': opts->warmup_time = atof(optarg); break;
        case 'O': opts->outstanding = strtoul(optarg, NULL, 0); break;
        case 'M': opts->max_bytes = strtoul(optarg, NULL, 0); break;
        case 'S': opts->signal = strtoul(optarg, NULL, 0); break;
        case 'n': opts->lat_iters = strtoul(optarg, NULL, 0); break;
        case 'w': opts->lat_warmup = strtoul(optarg, NULL, 0); break;
        case 'p': opts->udp_port = strtoul(optarg, NULL, 0); break;
        case 'm': opts->mtu = strtoul(optarg, NULL, 0); break;
        case 'P':
            if (!strcmp(optarg, "yield")) {
                opts->poll = BENCH_POLL_YIELD;
            } else if (!strcmp(optarg, "spin")) {
                opts->poll = BENCH_POLL_SPIN;
            } else {
                bench_die("poll mode: yield or spin");
            }
            break;
        case 'B': opts->do_lat = 0; break;
        case 'L': opts->do_bw = 0; break;
        case 'C': opts->do_icrc = 1; break;
        case 'h': bench_usage(); exit(0);
        default:  bench_usage(); exit(2);
        }
    }

    if ((opts->signal == 0) || (opts->outstanding < 2) ||
        (opts->outstanding > BENCH_SQ_SIZE)) {
        bench_die("need -S >= 1 and 2 <= -O <= %d", BENCH_SQ_SIZE);
    }
    if ((opts->bw_time <= 0) || (opts->lat_iters == 0) ||
        (opts->udp_port == 0) || (opts->udp_port > 65535)) {
        bench_die("bad -t, -n or -p");
    }
}

static int bench_rank(const bench_opts_t *opts, int rank, int rfd, int wfd)
{
    bench_ctx_t ctx = {0};
    size_t max_size = 64;
    unsigned s;

    for (s = 0; s < opts->num_sizes; ++s) {
        max_size = ucs_max(max_size, opts->sizes[s]);
    }

    ctx.rank = rank;
    ctx.rfd  = rfd;
    ctx.wfd  = wfd;
    ctx.opts = opts;
    bench_open(&ctx, max_size);
    bench_connect(&ctx);
    if (opts->do_bw) {
        bench_bw(&ctx);
    }
    if (opts->do_lat) {
        bench_lat(&ctx);
    }
    bench_barrier(&ctx);
    bench_close(&ctx);
    return 0;
}

int main(int argc, char **argv)
{
    int to_child[2], to_parent[2], wstatus, ret;
    bench_opts_t opts;
    pid_t pid;

    bench_parse(&opts, argc, argv);
    setvbuf(stdout, NULL, _IOLBF, 0);
    printf("# gda_ft_soft_bench: 2 processes, bench0=127.0.0.1:%u "
           "bench1=127.0.0.2:%u mtu=%u poll=%s\n", opts.udp_port,
           opts.udp_port, opts.mtu,
           (opts.poll == BENCH_POLL_YIELD) ? "yield" : "spin");

    if (opts.do_icrc) {
        bench_icrc(&opts);
    }

    if ((pipe(to_child) < 0) || (pipe(to_parent) < 0)) {
        bench_die("pipe: %m");
    }

    pid = fork();
    if (pid < 0) {
        bench_die("fork: %m");
    } else if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        close(to_child[1]);
        close(to_parent[0]);
        ret = bench_rank(&opts, 1, to_child[0], to_parent[1]);
        _exit(ret);
    }

    close(to_child[0]);
    close(to_parent[1]);
    ret = bench_rank(&opts, 0, to_parent[0], to_child[1]);
    close(to_child[1]);
    close(to_parent[0]);

    if (waitpid(pid, &wstatus, 0) < 0) {
        bench_die("waitpid: %m");
    }
    if (!WIFEXITED(wstatus) || (WEXITSTATUS(wstatus) != 0)) {
        fprintf(stderr, "gda_ft_soft_bench: rank 1 failed (status 0x%x)\n",
                wstatus);
        return 1;
    }
    return ret;
}
