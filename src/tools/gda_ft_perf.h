/*
 * gda_ft_perf: the posters of the device perftest, written once in the
 * device API's C subset. A CUDA thread or warp runs them in
 * gda_ft_perf_gpu.cu; a CPU thread runs the same functions in
 * gda_ft_perf.c where no GPU is used.
 *
 * A worker is a thread (level "thread") or a warp (level "warp": each lane
 * posts its own operation, one reservation and one doorbell per warp; a CPU
 * thread stands for a warp by posting 32 operations as one batch).
 */
#ifndef GDA_FT_PERF_H_
#define GDA_FT_PERF_H_

#include "gda_ft_device_api.h"

#define GDA_FT_PERF_WARP_SIZE   32

typedef enum {
    GDA_FT_PERF_PUT_LAT,   /* ping-pong of put_signal, half the round trip */
    GDA_FT_PERF_PUT_BW,    /* puts streamed, quiet every window */
    GDA_FT_PERF_SIGNAL_BW, /* non-fetching adds streamed */
    GDA_FT_PERF_FADD_LAT,  /* fetch-add, each waited for */
    GDA_FT_PERF_NUM_TESTS
} gda_ft_perf_test_t;

typedef enum {
    GDA_FT_PERF_LEVEL_THREAD,
    GDA_FT_PERF_LEVEL_WARP
} gda_ft_perf_level_t;

/* Elements of the memory list: each side's region holds its source, the
 * peer's destination, the signal words and the counter, and its fetch
 * results (gda_ft_perf.c: gda_ft_perf_layout_t) */
enum {
    GDA_FT_PERF_ELEM_DATA    = 0, /* our source -> the peer's destination */
    GDA_FT_PERF_ELEM_SIGNAL  = 1, /* -> the peer's signal words */
    GDA_FT_PERF_ELEM_COUNTER = 2, /* our results <- the peer's counter */
    GDA_FT_PERF_NUM_ELEMS
};

/* What every worker reads; in memory the posters reach */
typedef struct gda_ft_perf_params {
    const gda_ft_dev_endpoint_t *ep;
    const gda_ft_dev_mem_list_t *ml;
    const uint64_t              *signals;      /* ours: the peer adds */
    uint64_t                     worker_bytes; /* data per worker */
    uint64_t                     timeout_ns;   /* of one wait */
    uint32_t                     test;         /* gda_ft_perf_test_t */
    uint32_t                     level;        /* gda_ft_perf_level_t */
    uint32_t                     size;         /* bytes per put */
    uint32_t                     iters;        /* per worker */
    uint32_t                     nchan;
    uint32_t                     window;       /* quiet every window */
    uint32_t                     server;       /* the passive side */
    uint32_t                     reserved;
} gda_ft_perf_params_t;

/* What a worker reports; the host reads iters_done while it runs */
typedef struct gda_ft_perf_worker {
    uint64_t start_ns;
    uint64_t end_ns;
    uint64_t lat_sum_ns;   /* latency tests */
    uint32_t iters_done;
    uint32_t status;       /* gda_ft_dev_status_t of the first failure */
    uint32_t in_doubt;     /* fetch-adds whose reply a failure lost: they
                              ran once, and their slot keeps its filler */
    uint32_t reserved;
} gda_ft_perf_worker_t;

/* Lanes that post for a worker */
GDA_FT_DEV_FUNC unsigned gda_ft_perf_lanes(const gda_ft_perf_params_t *p)
{
    return (p->level == GDA_FT_PERF_LEVEL_WARP) ? GDA_FT_PERF_WARP_SIZE : 1;
}

/* Data offset of a worker's (lane's) i-th put: its slots, round robin */
GDA_FT_DEV_FUNC uint64_t gda_ft_perf_put_offset(const gda_ft_perf_params_t *p,
                                                unsigned worker, unsigned lane,
                                                unsigned i)
{
    uint64_t slots = p->worker_bytes / p->size;
    uint64_t n     = (uint64_t)i * gda_ft_perf_lanes(p) + lane;

    return worker * p->worker_bytes + (n % slots) * p->size;
}

/* The i-th streamed operation of one lane, built */
GDA_FT_DEV_FUNC int gda_ft_perf_build(const gda_ft_perf_params_t *p,
                                      gda_ft_chan_t *chan, unsigned worker,
                                      unsigned lane, unsigned i,
                                      gda_ft_chan_op_t *op)
{
    uint64_t off;

    if (p->test == GDA_FT_PERF_SIGNAL_BW) {
        return gda_ft_dev_op_signal(op, chan, p->ml, GDA_FT_PERF_ELEM_SIGNAL,
                                    worker * sizeof(uint64_t), 1);
    }
    off = gda_ft_perf_put_offset(p, worker, lane, i);
    return gda_ft_dev_op_rdma(op, GDA_FT_CHAN_OP_PUT, p->ml,
                              GDA_FT_PERF_ELEM_DATA, off, off, p->size);
}

/* Posts the i-th operation of the worker: one, or a warp's worth */
GDA_FT_DEV_FUNC gda_ft_dev_status_t
gda_ft_perf_post(const gda_ft_perf_params_t *p, gda_ft_chan_t *chan,
                 unsigned worker, unsigned i)
{
    gda_ft_dev_request_t req;
#if GDA_FT_ON_DEVICE
    gda_ft_chan_op_t op;
    unsigned lane = (p->level == GDA_FT_PERF_LEVEL_WARP) ?
                    threadIdx.x % GDA_FT_PERF_WARP_SIZE : 0;

    if (!gda_ft_perf_build(p, chan, worker, lane, i, &op)) {
        return GDA_FT_DEV_ERROR;
    }
    return (p->level == GDA_FT_PERF_LEVEL_WARP) ?
           gda_ft_dev_post_warp(chan, &op, &req) :
           gda_ft_dev_post(chan, &op, 1, &req);
#else
    gda_ft_chan_op_t ops[GDA_FT_PERF_WARP_SIZE];
    unsigned lane, n = gda_ft_perf_lanes(p);

    for (lane = 0; lane < n; ++lane) {
        if (!gda_ft_perf_build(p, chan, worker, lane, i, &ops[lane])) {
            return GDA_FT_DEV_ERROR;
        }
    }
    return gda_ft_dev_post(chan, ops, n, &req);
#endif
}

/* put_bw and signal_bw: stream, quiet every window and at the end */
GDA_FT_DEV_FUNC gda_ft_dev_status_t
gda_ft_perf_stream(const gda_ft_perf_params_t *p, unsigned worker,
                   gda_ft_perf_worker_t *r)
{
    unsigned channel   = worker % p->nchan;
    gda_ft_chan_t *chan = gda_ft_dev_channel(p->ep, channel);
    gda_ft_dev_status_t status = GDA_FT_DEV_OK;
    unsigned i;

    for (i = 0; (i < p->iters) && (status == GDA_FT_DEV_OK); ++i) {
        status = gda_ft_perf_post(p, chan, worker, i);
        if ((status == GDA_FT_DEV_OK) &&
            ((i % p->window) == p->window - 1)) {
            status = gda_ft_dev_quiet(p->ep, channel, p->timeout_ns);
        }
        r->iters_done = i + 1;
    }
    if (status == GDA_FT_DEV_OK) {
        status = gda_ft_dev_quiet(p->ep, channel, p->timeout_ns);
    }
    return status;
}

/* put_lat: the client puts and signals, the server answers in kind; one
 * round trip each. Only worker 0 (lane 0) takes part. */
GDA_FT_DEV_FUNC gda_ft_dev_status_t
gda_ft_perf_pingpong(const gda_ft_perf_params_t *p, gda_ft_perf_worker_t *r)
{
    gda_ft_dev_status_t status = GDA_FT_DEV_OK;
    gda_ft_dev_request_t req;
    uint64_t start;
    unsigned i;

    for (i = 0; (i < p->iters) && (status == GDA_FT_DEV_OK); ++i) {
        start = gda_ft_dev_now_ns();
        /* waiting, each side progresses its channel: a path that dies
         * under the ping-pong is found and left */
        if (p->server) {
            status = gda_ft_dev_wait_signal_on(p->ep, 0, p->signals, i + 1,
                                               p->timeout_ns);
        }
        if (status == GDA_FT_DEV_OK) {
            status = gda_ft_dev_put_signal(p->ep, p->ml,
                                           GDA_FT_PERF_ELEM_DATA, 0, 0,
                                           p->size, GDA_FT_PERF_ELEM_SIGNAL,
                                           0, 1, 0, &req);
        }
        if ((status == GDA_FT_DEV_OK) && !p->server) {
            status = gda_ft_dev_wait_signal_on(p->ep, 0, p->signals, i + 1,
                                               p->timeout_ns);
        }
        r->lat_sum_ns += (gda_ft_dev_now_ns() - start) / 2;
        r->iters_done  = i + 1;
    }
    if (status == GDA_FT_DEV_OK) {
        status = gda_ft_dev_quiet(p->ep, 0, p->timeout_ns);
    }
    return status;
}

/* fadd_lat: fetch-adds on the peer's counter, each waited for; the value
 * fetched lands in the worker's own result slot */
GDA_FT_DEV_FUNC gda_ft_dev_status_t
gda_ft_perf_fadd(const gda_ft_perf_params_t *p, unsigned worker,
                 gda_ft_perf_worker_t *r)
{
    unsigned channel           = worker % p->nchan;
    gda_ft_dev_status_t status = GDA_FT_DEV_OK;
    gda_ft_dev_request_t req;
    uint64_t start, loff;
    unsigned i;

    for (i = 0; (i < p->iters) && (status == GDA_FT_DEV_OK); ++i) {
        start  = gda_ft_dev_now_ns();
        loff   = ((uint64_t)worker * p->iters + i) * sizeof(uint64_t);
        status = gda_ft_dev_atomic_fetch_add(p->ep, p->ml,
                                             GDA_FT_PERF_ELEM_COUNTER, loff,
                                             0, 1, channel, &req);
        while (status == GDA_FT_DEV_OK) {
            status = gda_ft_dev_progress(&req);
            if (status != GDA_FT_DEV_INPROGRESS) {
                break;
            }
            status = GDA_FT_DEV_OK;
        }
        if (status == GDA_FT_DEV_IN_DOUBT) {
            ++r->in_doubt;      /* an outcome, not a failure */
            status = GDA_FT_DEV_OK;
        }
        r->lat_sum_ns += gda_ft_dev_now_ns() - start;
        r->iters_done  = i + 1;
    }
    return status;
}

/* One worker's whole test */
GDA_FT_DEV_FUNC void gda_ft_perf_worker_run(const gda_ft_perf_params_t *p,
                                            unsigned worker,
                                            gda_ft_perf_worker_t *r)
{
    gda_ft_dev_status_t status;

    r->start_ns = gda_ft_dev_now_ns();
    switch (p->test) {
    case GDA_FT_PERF_PUT_LAT:
        status = (worker == 0) ? gda_ft_perf_pingpong(p, r) : GDA_FT_DEV_OK;
        break;
    case GDA_FT_PERF_FADD_LAT:
        status = gda_ft_perf_fadd(p, worker, r);
        break;
    default:
        status = gda_ft_perf_stream(p, worker, r);
        break;
    }
    r->end_ns = gda_ft_dev_now_ns();
    r->status = status;
}

#endif
