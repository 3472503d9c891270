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
 *       [--plot FILE.png] [--gpu | --cpu]
 *
 * --kill-rank R --at K: rank R's process kills itself (SIGKILL) as
 * iteration K begins, having told the launcher when. The others mask it
 * (moe.h): the tokens routed to its experts are reported as masked, every
 * other token is checked, and the job must finish. --rejoin-at K2: as the
 * others begin iteration K2 they meet for a rendezvous, the launcher
 * starts rank R again (a new process: new QPs, new keys), and the others
 * connect to it and swap its device endpoint and memory list in; it runs
 * iterations K2 on, checked like every rank's.
 */
#ifndef _GNU_SOURCE
#  define _GNU_SOURCE
#endif

#include "moe.h"
#include "gda_ft_prog.h"
#include "gda_ft_ucp.h"

#include <dlfcn.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define MOE_MAX_ITERS 10000
#define MOE_MAX_WORKERS 1024    /* a block of GPU threads */
#define MOE_MIN(_a, _b) (((_a) < (_b)) ? (_a) : (_b))
#define MOE_MAX(_a, _b) (((_a) > (_b)) ? (_a) : (_b))

static double moe_now(void)
{
    return gda_ft_dev_now_ns() * 1e-9;
}

static struct {
    unsigned    ranks, experts, topk, hidden, tokens, iters, workers, nchan;
    unsigned    blocks;       /* GPU: CTAs of every phase's kernel */
    int         fault_rank, fault_at, up_at;
    int         kill_rank, kill_at;   /* -1: none */
    int         rejoin_at;            /* -1: none */
    int         rejoined;             /* this process is the restarted
                                         rank */
    int         failover;     /* 1: on, 0: off, -1: both (--compare) */
    int         use_gpu;      /* -1: auto */
    double      timeout;      /* of one wait, seconds */
    double      retry_window; /* failover off: the HCA's, seconds */
    const char *plot;
    uint64_t    seed;
    int         rank;         /* -1: launcher */
    int         sock;
} opt = {2, 4, 2, 1024, 64, 60, 2, 2, 1, 0, 20, 40, -1, -1, -1, 0, 1, -1,
         20.0, 8.0,
         "moe_timeline.png", 2026, -1, -1};

/* What a rank reports per iteration */
typedef struct {
    uint64_t dispatch_ns, combine_ns;
    uint32_t status;      /* gda_ft_dev_status_t; TIMEOUT: never finished */
    uint32_t on_backup;   /* channels of ours on the backup after it */
    uint32_t masked;      /* our (token, k) routed to a gone rank */
    uint32_t gone;        /* the ranks masked (bit r) */
} moe_iter_rec_t;

/* And once, at the end */
typedef struct {
    uint32_t done;        /* iterations that finished */
    uint32_t checked, wrong, signal_errors;
    uint32_t gpu;
    gda_ft_chan_counters_t chan;   /* of all our channels */
    double   first_backup_ms;  /* after the switch, 0: none */
    uint32_t masked;           /* tokens masked */
    uint32_t reserved;
    uint64_t gone_ns;          /* the transport gave a peer up (its clock,
                                  the latest of our peers), 0: never */
    uint64_t back_ns;          /* the restarted rank swapped in, 0: never */
} moe_summary_t;


/* ---- messages between a rank and the launcher ---------------------------- */

static void moe_die(const char *fmt, ...) __attribute__((format(printf, 1, 2),
                                                         noreturn));
static void moe_die(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    fprintf(stderr, "moe%s%d: ", (opt.rank >= 0) ? " rank " : "",
            (opt.rank >= 0) ? opt.rank : 0);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    exit(1);
}

static void moe_write(int fd, const void *buf, size_t len)
{
    if (gda_ft_prog_write_all(fd, buf, len) != 0) {
        moe_die("lost the launcher: %s", strerror(errno));
    }
}

static int moe_read(int fd, void *buf, size_t len)
{
    return gda_ft_prog_read_all(fd, buf, len);
}

/* Rank to launcher: a typed message; launcher to rank: blobs */
enum {
    MOE_MSG_GATHER = 1,   /* a contribution to an all-gather */
    MOE_MSG_REPORT = 2,   /* records and summary, once */
    MOE_MSG_BYE    = 3,   /* launcher: every rank reported */
    MOE_MSG_DYING  = 4    /* the rank kills itself now: its clock */
};

static void moe_send_blob(int fd, const void *buf, uint32_t len)
{
    moe_write(fd, &len, sizeof(len));
    moe_write(fd, buf, len);
}

static void moe_send_msg(int fd, uint32_t type, const void *buf,
                         uint32_t len)
{
    moe_write(fd, &type, sizeof(type));
    moe_send_blob(fd, buf, len);
}

static void *moe_recv_blob(int fd, uint32_t *len_p)
{
    uint32_t len;
    void *buf;

    if ((moe_read(fd, &len, sizeof(len)) != 0) || (len > (64u << 20))) {
        return NULL;
    }
    buf = malloc(len + 1);
    if (moe_read(fd, buf, len) != 0) {
        free(buf);
        return NULL;
    }
    if (len_p != NULL) {
        *len_p = len;
    }
    return buf;
}

/* Every rank's blob, in rank order (the launcher relays) */
static void **moe_allgather(const void *buf, uint32_t len, uint32_t *lens)
{
    void **all = calloc(opt.ranks, sizeof(*all));
    unsigned r;

    moe_send_msg(opt.sock, MOE_MSG_GATHER, buf, len);
    for (r = 0; r < opt.ranks; ++r) {
        all[r] = moe_recv_blob(opt.sock, (lens != NULL) ? &lens[r] : NULL);
        if (all[r] == NULL) {
            moe_die("the rendezvous broke");
        }
    }
    return all;
}

static void moe_free_all(void **all)
{
    unsigned r;

    for (r = 0; r < opt.ranks; ++r) {
        free(all[r]);
    }
    free(all);
}


/* ---- a rank -------------------------------------------------------------- */

typedef struct {
    ucp_context_h           context;
    ucp_worker_h            worker;
    ucp_ep_h                ep[MOE_MAX_RANKS];
    ucp_rkey_h              rkey[MOE_MAX_RANKS];
    gda_ft_ucp_device_ep_h  dev_ep[MOE_MAX_RANKS];
    gda_ft_ucp_mem_list_h   ml[MOE_MAX_RANKS];
    gda_ft_ucp_signal_mem_t region;
    gda_ft_ucp_place_t      place;
    moe_ctx_t               ctx;       /* host copy */
    moe_plan_t             *plan;      /* host */
    uint8_t                *staging;   /* GPU runs: tokens to copy in */
    struct {
        void *(*launch)(const moe_ctx_t *ctx, unsigned blocks,
                        unsigned threads, moe_result_t **results_p);
        int   (*done)(void *run);
        int   (*finish)(void *run);
        int   (*copy)(void *dst, const void *src, size_t len);
        void *(*alloc)(size_t len);
        int   id;                      /* the rank's GPU */
    } gpu;
    moe_plan_t             *dev_plan;
} moe_rank_t;

static void moe_check(ucs_status_t status, const char *what)
{
    if (status != UCS_OK) {
        moe_die("%s: %s", what, ucs_status_string(status));
    }
}

static int moe_gpu_load(moe_rank_t *m)
{
    void *h = gda_ft_prog_open_beside("libmoe_gpu.so");
    int (*available)(void), (*select)(unsigned);

    *(void**)&available = (h != NULL) ? dlsym(h, "moe_gpu_available") : NULL;
    if ((available == NULL) || !available()) {
        if (opt.use_gpu == 1) {
            moe_die("--gpu: no GPU, or no libmoe_gpu.so beside the program");
        }
        return 0;
    }
    /* before anything of CUDA: the device endpoint and the memory go to
     * the rank's own GPU */
    *(void**)&select = dlsym(h, "moe_gpu_select");
    m->gpu.id        = (select != NULL) ? select(opt.rank) : -1;
    if (m->gpu.id < 0) {
        moe_die("rank %u: cannot select its GPU", opt.rank);
    }
    fprintf(stderr, "rank %u: GPU %d\n", opt.rank, m->gpu.id);
    *(void**)&m->gpu.launch = dlsym(h, "moe_gpu_launch");
    *(void**)&m->gpu.done   = dlsym(h, "moe_gpu_done");
    *(void**)&m->gpu.finish = dlsym(h, "moe_gpu_finish");
    *(void**)&m->gpu.copy   = dlsym(h, "moe_gpu_copy");
    *(void**)&m->gpu.alloc  = dlsym(h, "moe_gpu_alloc");
    return (m->gpu.launch != NULL) && (m->gpu.done != NULL) &&
           (m->gpu.finish != NULL) && (m->gpu.copy != NULL) &&
           (m->gpu.alloc != NULL);
}

static void moe_layout(moe_ctx_t *c)
{
    uint64_t row  = moe_row(c);
    uint64_t slots = (uint64_t)c->experts * c->nranks * c->tokens * row;
    moe_layout_t *l = &c->layout;

    l->tokens = 0;
    l->recv   = l->tokens + (uint64_t)c->tokens * row;
    l->out    = l->recv + slots;
    l->back   = l->out + slots;
    l->dsig   = l->back + (uint64_t)c->tokens * c->topk * row;
    l->csig   = l->dsig + 2ull * c->experts * c->nranks * sizeof(uint64_t);
    l->gone   = l->csig + 2ull * c->nranks * c->experts * sizeof(uint64_t);
    l->total  = l->gone + sizeof(uint64_t);
}

/* Connects to peer p at addr: an endpoint, wired up once a flush of it
 * completes (the peer progresses its own meanwhile) */
static void moe_connect(moe_rank_t *m, unsigned p, const void *addr)
{
    ucp_request_param_t rparam = {0};
    ucp_ep_params_t eparams;
    void *req;

    memset(&eparams, 0, sizeof(eparams));
    eparams.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
    eparams.address    = addr;
    moe_check(ucp_ep_create(m->worker, &eparams, &m->ep[p]),
              "ucp_ep_create");
    req = ucp_ep_flush_nbx(m->ep[p], &rparam);
    if (UCS_PTR_IS_PTR(req)) {
        while (ucp_request_check_status(req) == UCS_INPROGRESS) {
            ucp_worker_progress(m->worker);
        }
        ucp_request_free(req);
    }
}

/* Every peer's worker address, ours among them (the launcher relays) */
static void **moe_gather_addresses(moe_rank_t *m)
{
    ucp_address_t *addr;
    size_t addr_len;
    void **addrs;

    moe_check(ucp_worker_get_address(m->worker, &addr, &addr_len),
              "ucp_worker_get_address");
    addrs = moe_allgather(addr, addr_len, NULL);
    ucp_worker_release_address(m->worker, addr);
    return addrs;
}

static void moe_ucp_setup(moe_rank_t *m)
{
    ucp_worker_params_t wparams = {0};
    ucp_params_t params         = {0};
    ucp_config_t *config;
    void **addrs;
    unsigned p;

    moe_check(ucp_config_read(NULL, NULL, &config), "ucp_config_read");
    params.field_mask = UCP_PARAM_FIELD_FEATURES;
    params.features   = UCP_FEATURE_RMA | UCP_FEATURE_AMO64;
    moe_check(ucp_init(&params, config, &m->context), "ucp_init");
    ucp_config_release(config);
    wparams.field_mask  = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    wparams.thread_mode = UCS_THREAD_MODE_SINGLE;
    moe_check(ucp_worker_create(m->context, &wparams, &m->worker),
              "ucp_worker_create");
    addrs = moe_gather_addresses(m);
    for (p = 0; p < opt.ranks; ++p) {
        if (p != (unsigned)opt.rank) {
            moe_connect(m, p, addrs[p]);
        }
    }
    moe_free_all(addrs);
}

/* Every peer's packed remote key and region address, ours among them */
static void moe_gather_keys(moe_rank_t *m, void ***rkeys_p, void ***bases_p)
{
    uint64_t my_base = (uintptr_t)m->ctx.base;
    void *rkey_buf;
    size_t rkey_len;

    moe_check(ucp_rkey_pack(m->context, m->region.memh, &rkey_buf,
                            &rkey_len), "ucp_rkey_pack");
    *rkeys_p = moe_allgather(rkey_buf, rkey_len, NULL);
    ucp_rkey_buffer_release(rkey_buf);
    *bases_p = moe_allgather(&my_base, sizeof(my_base), NULL);
}

/* Peer p's device endpoint (taking over from `gone`, the endpoint of the
 * process it replaces, or NULL) and memory list, from its key and base */
static void moe_peer_memory(moe_rank_t *m, unsigned p, const void *rkey,
                            uint64_t peer_base, gda_ft_ucp_device_ep_h gone)
{
    moe_ctx_t *c = &m->ctx;
    gda_ft_ucp_mem_elem_t e[MOE_NUM_ELEMS];
    uint64_t slots, back;
    ucs_status_t status;

    moe_check(ucp_ep_rkey_unpack(m->ep[p], rkey, &m->rkey[p]),
              "ucp_ep_rkey_unpack");
    do {
        status = (gone != NULL) ?
                 gda_ft_ucp_device_ep_rejoin(gone, m->ep[p], m->place,
                                             &m->dev_ep[p]) :
                 gda_ft_ucp_device_ep_create(m->ep[p], m->place,
                                             &m->dev_ep[p]);
        ucp_worker_progress(m->worker);
    } while (status == UCS_ERR_NOT_CONNECTED);
    moe_check(status, "device endpoint");

    slots = c->layout.out - c->layout.recv;
    back  = c->layout.dsig - c->layout.back;
    e[MOE_ELEM_DISPATCH] = (gda_ft_ucp_mem_elem_t){
            m->region.memh, c->base + c->layout.tokens, slots, m->rkey[p],
            peer_base + c->layout.recv};
    e[MOE_ELEM_DSIG]     = (gda_ft_ucp_mem_elem_t){
            NULL, NULL, c->layout.csig - c->layout.dsig, m->rkey[p],
            peer_base + c->layout.dsig};
    e[MOE_ELEM_COMBINE]  = (gda_ft_ucp_mem_elem_t){
            m->region.memh, c->base + c->layout.out, MOE_MAX(slots, back),
            m->rkey[p], peer_base + c->layout.back};
    e[MOE_ELEM_CSIG]     = (gda_ft_ucp_mem_elem_t){
            NULL, NULL, c->layout.gone - c->layout.csig, m->rkey[p],
            peer_base + c->layout.csig};
    moe_check(gda_ft_ucp_mem_list_create(m->ep[p], e, MOE_NUM_ELEMS,
                                         m->place, &m->ml[p]),
              "memory list");
    c->ep[p] = gda_ft_ucp_device_ep(m->dev_ep[p]);
    c->ml[p] = gda_ft_ucp_mem_list(m->ml[p]);
}

/* The region, and every peer's keys and base address */
static void moe_memory_setup(moe_rank_t *m)
{
    moe_ctx_t *c = &m->ctx;
    void **rkeys, **bases;
    unsigned p;

    moe_check(gda_ft_ucp_signal_alloc(m->context, c->layout.total, m->place,
                                      &m->region), "region");
    c->base = m->region.address;
    moe_gather_keys(m, &rkeys, &bases);
    for (p = 0; p < opt.ranks; ++p) {
        if (m->ep[p] != NULL) {
            moe_peer_memory(m, p, rkeys[p], *(uint64_t*)bases[p], NULL);
        }
    }
    moe_free_all(rkeys);
    moe_free_all(bases);
}

/*
 * --rejoin-at: the killed rank's new process goes through the setup, and
 * we through the same rendezvous for it alone: its address (we connect),
 * its key and region (its device endpoint takes over from the gone one's,
 * its state BACK), ready. Returns when it was swapped in, on our clock.
 * The old UCP endpoint stays: its peer is gone, and nothing waits on it.
 */
static uint64_t moe_rejoin(moe_rank_t *m, unsigned peer)
{
    gda_ft_ucp_device_ep_h gone  = m->dev_ep[peer];
    gda_ft_ucp_mem_list_h gone_ml = m->ml[peer];
    ucp_rkey_h gone_rkey          = m->rkey[peer];
    void **addrs, **rkeys, **bases;
    uint64_t back_ns;

    addrs = moe_gather_addresses(m);
    moe_connect(m, peer, addrs[peer]);
    moe_free_all(addrs);
    moe_gather_keys(m, &rkeys, &bases);
    moe_peer_memory(m, peer, rkeys[peer], *(uint64_t*)bases[peer], gone);
    back_ns = gda_ft_dev_now_ns();
    moe_free_all(rkeys);
    moe_free_all(bases);

    gda_ft_ucp_mem_list_destroy(gone_ml);
    gda_ft_ucp_device_ep_destroy(gone);
    ucp_rkey_destroy(gone_rkey);
    free(moe_allgather("", 1, NULL));       /* everyone is ready */
    return back_ns;
}

/* Distinct top-k experts of token (src, t): every rank computes the same */
static void moe_route(const moe_ctx_t *c, unsigned src, unsigned t,
                      unsigned *experts)
{
    unsigned g = c->nranks * c->experts, k, j, attempt = 0, e;

    for (k = 0; k < c->topk; ++k) {
        do {
            e = (unsigned)(moe_mix(c->seed * 31 + ((uint64_t)c->iter << 40) +
                                   ((uint64_t)src << 28) +
                                   ((uint64_t)t << 8) + k + 977 * attempt++)
                           % g);
            for (j = 0; (j < k) && (experts[j] != e); ++j) {
            }
        } while (j < k);
        experts[k] = e;
    }
}

/* The iteration's plan: where our tokens go, what comes to our experts */
static void moe_make_plan(const moe_ctx_t *c, moe_plan_t *plan)
{
    unsigned src, t, k, e, owner, le, experts[MOE_MAX_TOPK];
    uint16_t fill[MOE_MAX_RANKS * MOE_MAX_EXPERTS];

    memset(plan->sent, 0, sizeof(plan->sent));
    memset(plan->recv_count, 0, sizeof(plan->recv_count));
    for (src = 0; src < c->nranks; ++src) {
        memset(fill, 0, sizeof(fill));
        for (t = 0; t < c->tokens; ++t) {
            moe_route(c, src, t, experts);
            for (k = 0; k < c->topk; ++k) {
                e     = experts[k];
                owner = e / c->experts;
                le    = e % c->experts;
                if (src == c->rank) {
                    plan->send[t * c->topk + k].expert = e;
                    plan->send[t * c->topk + k].slot   = fill[e];
                    ++plan->sent[e];
                }
                if (owner == c->rank) {
                    plan->origin[(le * c->nranks + src) * c->tokens +
                                 fill[e]] = (moe_origin_t){t, k};
                    ++plan->recv_count[le * c->nranks + src];
                }
                ++fill[e];
            }
        }
    }
}

typedef struct {
    const moe_ctx_t *ctx;
    moe_result_t     result;
    unsigned         worker;
    int              done;
} moe_cpu_worker_t;

static pthread_barrier_t moe_cpu_barrier;

/* The phases in turn, meeting the other workers between two */
static void *moe_cpu_worker(void *arg)
{
    moe_cpu_worker_t *w = arg;
    unsigned phase;

    for (phase = 0; phase < MOE_NUM_PHASES; ++phase) {
        moe_phase(w->ctx, phase, w->worker, opt.workers, &w->result);
        pthread_barrier_wait(&moe_cpu_barrier);
    }
    __atomic_store_n(&w->done, 1, __ATOMIC_RELEASE);
    return NULL;
}

static void moe_port(const char *dev, int up)
{
    if (gda_ft_prog_soft_port(dev, up) != UCS_OK) {
        moe_die("cannot set the port of %s", dev);
    }
}

/* One iteration: posters run while this thread progresses UCP */
static void moe_run_iteration(moe_rank_t *m, moe_result_t *sum)
{
    static moe_cpu_worker_t w[MOE_MAX_WORKERS];
    static pthread_t th[MOE_MAX_WORKERS];
    moe_result_t *gpu_results = NULL;
    unsigned i, done;
    void *run = NULL;

    memset(sum, 0, sizeof(*sum));
    if (m->place == GDA_FT_UCP_PLACE_CUDA) {
        run = m->gpu.launch(&m->ctx, opt.blocks, opt.workers, &gpu_results);
        if (run == NULL) {
            moe_die("the kernel did not launch");
        }
    } else {
        for (i = 0; i < opt.workers; ++i) {
            memset(&w[i], 0, sizeof(w[i]));
            w[i].ctx    = &m->ctx;
            w[i].worker = i;
            pthread_create(&th[i], NULL, moe_cpu_worker, &w[i]);
        }
    }

    do {
        if (ucp_worker_progress(m->worker) == 0) {
            sched_yield();
        }
        done = (run != NULL) ? m->gpu.done(run) : 1;
        for (i = 0; (run == NULL) && (i < opt.workers); ++i) {
            done &= __atomic_load_n(&w[i].done, __ATOMIC_ACQUIRE);
        }
    } while (!done);

    for (i = 0; i < ((run != NULL) ? opt.blocks : 1) * opt.workers; ++i) {
        const moe_result_t *r = (run != NULL) ? &gpu_results[i] :
                                                &w[i].result;
        if (run == NULL) {
            pthread_join(th[i], NULL);
        }
        if (i == 0) {
            sum->dispatch_ns = r->dispatch_ns;
            sum->combine_ns  = r->combine_ns;
            sum->gone        = r->gone;
        }
        moe_fail(sum, (gda_ft_dev_status_t)r->status);
        sum->masked        += r->masked;
        sum->checked       += r->checked;
        sum->wrong         += r->wrong;
        sum->signal_errors += r->signal_errors;
    }
    if ((run != NULL) && (m->gpu.finish(run) != 0)) {
        moe_die("the kernel failed");
    }
}

/* Adds the counters of b to a */
static void moe_counters_add(gda_ft_chan_counters_t *a,
                             const gda_ft_chan_counters_t *b)
{
    a->switches  += b->switches;
    a->replays   += b->replays;
    a->resolved  += b->resolved;
    a->confirmed += b->confirmed;
    a->in_doubt  += b->in_doubt;
    a->failbacks += b->failbacks;
    a->no_path   += b->no_path;
    a->op_errors += b->op_errors;
}

static void moe_chan_totals(moe_rank_t *m, moe_summary_t *s,
                            uint32_t *on_backup)
{
    gda_ft_chan_query_t q;
    unsigned p, ch;

    *on_backup = 0;
    memset(&s->chan, 0, sizeof(s->chan));
    for (p = 0; p < opt.ranks; ++p) {
        for (ch = 0; (m->dev_ep[p] != NULL) && (ch < opt.nchan); ++ch) {
            if (gda_ft_ucp_device_ep_query(m->dev_ep[p], ch, &q) != UCS_OK) {
                continue;
            }
            /* a gone peer's channels stay where it left them */
            *on_backup += (q.active == GDA_FT_CHAN_BACKUP) &&
                          (gda_ft_ucp_device_ep_peer_state(m->dev_ep[p],
                                                           NULL) !=
                           GDA_FT_PEER_GONE);
            moe_counters_add(&s->chan, &q.poster);
            if ((q.recovered_ns > q.switch_ns) && (s->first_backup_ms == 0)) {
                s->first_backup_ms = (q.recovered_ns - q.switch_ns) / 1e6;
            }
        }
    }
}

/* The latest time the transport gave one of our peers up, or 0 */
static uint64_t moe_gone_ns(moe_rank_t *m)
{
    uint64_t gone_ns, latest = 0;
    unsigned p;

    for (p = 0; p < opt.ranks; ++p) {
        if ((m->dev_ep[p] != NULL) &&
            (gda_ft_ucp_device_ep_peer_state(m->dev_ep[p], &gone_ns) ==
             GDA_FT_PEER_GONE)) {
            latest = MOE_MAX(latest, gone_ns);
        }
    }
    return latest;
}

/* --kill-rank: tells the launcher when, and dies as a crash would */
static void moe_die_now(void)
{
    uint64_t now = gda_ft_dev_now_ns();

    moe_send_msg(opt.sock, MOE_MSG_DYING, &now, sizeof(now));
    raise(SIGKILL);
}

static int moe_rank_main(void)
{
    moe_iter_rec_t *recs = calloc(opt.iters, sizeof(*recs));
    moe_summary_t sum    = {0};
    struct pollfd pfd;
    uint32_t report_len;
    uint8_t *report;
    moe_rank_t m;
    moe_result_t r;
    char dev[32];
    unsigned it, t, h, p;
    moe_elem_t *tokens;

    memset(&m, 0, sizeof(m));
    m.place = GDA_FT_UCP_PLACE_HOST;
    if ((opt.use_gpu != 0) && moe_gpu_load(&m)) {
        m.place = GDA_FT_UCP_PLACE_CUDA;
    }
    if (m.place == GDA_FT_UCP_PLACE_HOST) {
        setenv("UCX_GDA_FT_DEVICE_CHANNEL_RINGS", "host", 0);
    }
    m.ctx.nranks     = opt.ranks;
    m.ctx.rank       = opt.rank;
    m.ctx.experts    = opt.experts;
    m.ctx.topk       = opt.topk;
    m.ctx.hidden     = opt.hidden;
    m.ctx.tokens     = opt.tokens;
    m.ctx.nchan      = opt.nchan;
    m.ctx.seed       = opt.seed;
    m.ctx.timeout_ns = (uint64_t)(opt.timeout * 1e9);
    moe_layout(&m.ctx);
    pthread_barrier_init(&moe_cpu_barrier, NULL, opt.workers);

    moe_ucp_setup(&m);
    moe_memory_setup(&m);
    m.plan = calloc(1, sizeof(*m.plan));
    tokens = calloc(opt.tokens, moe_row(&m.ctx));
    if (m.place == GDA_FT_UCP_PLACE_CUDA) {
        m.dev_plan = m.gpu.alloc(sizeof(*m.plan));
    }
    free(moe_allgather("", 1, NULL));       /* everyone is ready */

    snprintf(dev, sizeof(dev), "r%ua", opt.rank);
    it = opt.rejoined ? (unsigned)opt.rejoin_at : 0;
    sum.done = it;     /* the iterations before were the killed process's */
    for (; it < opt.iters; ++it) {
        if ((opt.rank == opt.kill_rank) && ((int)it == opt.kill_at)) {
            moe_die_now();
        }
        if ((opt.kill_rank >= 0) && (opt.rank != opt.kill_rank) &&
            ((int)it == opt.rejoin_at)) {
            sum.gone_ns = moe_gone_ns(&m);   /* before the endpoint goes */
            sum.back_ns = moe_rejoin(&m, opt.kill_rank);
        }
        if ((opt.rank == opt.fault_rank) && ((int)it == opt.fault_at)) {
            moe_port(dev, 0);
        }
        if ((opt.rank == opt.fault_rank) && ((int)it == opt.up_at)) {
            moe_port(dev, 1);
        }
        m.ctx.iter = it;
        moe_make_plan(&m.ctx, m.plan);
        for (t = 0; t < opt.tokens; ++t) {
            for (h = 0; h < opt.hidden; ++h) {
                tokens[t * opt.hidden + h] = moe_token(&m.ctx, opt.rank, t,
                                                       h);
            }
        }
        if (m.place == GDA_FT_UCP_PLACE_CUDA) {
            m.gpu.copy(m.ctx.base + m.ctx.layout.tokens, tokens,
                       (size_t)opt.tokens * moe_row(&m.ctx));
            m.gpu.copy(m.dev_plan, m.plan, sizeof(*m.plan));
            m.ctx.plan = m.dev_plan;
        } else {
            memcpy(m.ctx.base + m.ctx.layout.tokens, tokens,
                   (size_t)opt.tokens * moe_row(&m.ctx));
            m.ctx.plan = m.plan;
        }

        moe_run_iteration(&m, &r);
        moe_chan_totals(&m, &sum, &recs[it].on_backup);
        recs[it].dispatch_ns = r.dispatch_ns;
        recs[it].combine_ns  = r.combine_ns;
        recs[it].status      = r.status;
        recs[it].masked      = r.masked;
        recs[it].gone        = r.gone;
        sum.masked          += r.masked;
        sum.checked         += r.checked;
        sum.wrong           += r.wrong;
        sum.signal_errors   += r.signal_errors;
        if (r.status != GDA_FT_DEV_OK) {
            break;       /* this iteration never finished */
        }
        ++sum.done;
    }
    sum.gpu     = (m.place == GDA_FT_UCP_PLACE_CUDA);
    sum.gone_ns = MOE_MAX(sum.gone_ns, moe_gone_ns(&m));
    report_len = opt.iters * sizeof(*recs) + sizeof(sum);
    report     = malloc(report_len);
    memcpy(report, recs, opt.iters * sizeof(*recs));
    memcpy(report + opt.iters * sizeof(*recs), &sum, sizeof(sum));
    moe_send_msg(opt.sock, MOE_MSG_REPORT, report, report_len);
    free(report);

    /* leave together, progressing meanwhile: a rank that left first would
     * fail the others' last operations */
    pfd.fd     = opt.sock;
    pfd.events = POLLIN;
    while (poll(&pfd, 1, 0) == 0) {
        if (ucp_worker_progress(m.worker) == 0) {
            usleep(100);
        }
    }
    for (p = 0; p < opt.ranks; ++p) {
        if (m.dev_ep[p] != NULL) {
            gda_ft_ucp_mem_list_destroy(m.ml[p]);
            gda_ft_ucp_device_ep_destroy(m.dev_ep[p]);
            ucp_rkey_destroy(m.rkey[p]);
        }
    }
    free(tokens);
    free(m.plan);
    free(recs);
    return 0;
}


/* ---- the launcher -------------------------------------------------------- */

typedef struct {
    moe_iter_rec_t *recs[MOE_MAX_RANKS];
    moe_summary_t   sum[MOE_MAX_RANKS];
    int             got[MOE_MAX_RANKS];
    int             failover;
    uint64_t        kill_ns;    /* when the killed rank died, 0: none */
    uint64_t        restart_ns; /* when it was started again, 0: never */
} moe_job_t;

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
    /* the port is back for 20 iterations of 1-3 ms: a 50 ms window left
     * the failback to the job's last iteration, or after it */
    setenv("UCX_GDA_FT_RECOVERY_WINDOW", "10ms", 0);
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
        "found)\n");
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

static int moe_cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t*)a, y = *(const uint64_t*)b;

    return (x > y) - (x < y);
}

/* Whether rank r is the one --kill-rank kills and that never reports (it
 * is not started again) */
static int moe_killed(unsigned r)
{
    return ((int)r == opt.kill_rank) && (opt.rejoin_at < 0);
}

/* Whether rank r had no process at iteration it: killed, not back yet */
static int moe_absent(const moe_job_t *job, unsigned r, unsigned it)
{
    return !job->got[r] ||
           (((int)r == opt.kill_rank) && ((int)it >= opt.kill_at) &&
            ((opt.rejoin_at < 0) || ((int)it < opt.rejoin_at)));
}

/* Iterations every rank finished (the killed rank aside) */
static unsigned moe_job_done(const moe_job_t *job)
{
    unsigned r, done = opt.iters;

    for (r = 0; r < opt.ranks; ++r) {
        if (!moe_killed(r)) {
            done = MOE_MIN(done, job->got[r] ? job->sum[r].done : 0);
        }
    }
    return done;
}

/* An iteration's time: the slowest rank's dispatch + combine; 0 with
 * *failed when some rank never finished it */
static uint64_t moe_iter_ns(const moe_job_t *job, unsigned it, int *failed)
{
    uint64_t worst = 0;
    unsigned r;

    *failed = (it >= moe_job_done(job));
    for (r = 0; !*failed && (r < opt.ranks); ++r) {
        if (job->got[r]) {
            worst = MOE_MAX(worst, job->recs[r][it].dispatch_ns +
                                   job->recs[r][it].combine_ns);
        }
    }
    return *failed ? 0 : worst;
}

/* How long the ranks that reported spent on iteration it before they gave
 * up */
static uint64_t moe_stall_ns(const moe_job_t *job, unsigned it)
{
    uint64_t worst = 0;
    unsigned r;

    for (r = 0; r < opt.ranks; ++r) {
        if (job->got[r] && (it < opt.iters)) {
            worst = MOE_MAX(worst, job->recs[r][it].dispatch_ns +
                                   job->recs[r][it].combine_ns);
        }
    }
    return worst;
}

static void moe_print_iterations(const moe_job_t *job)
{
    unsigned it, r, done = moe_job_done(job), masked;
    uint64_t d, c;
    char paths[64];

    printf("iter  dispatch(ms)  combine(ms)  paths (rank:P primary, "
           "B backup)\n");
    for (it = 0; (it <= done) && (it < opt.iters); ++it) {
        d = c = 0;
        masked   = 0;
        paths[0] = '\0';
        for (r = 0; (it < done) && (r < opt.ranks); ++r) {
            if (moe_absent(job, r, it)) {
                snprintf(paths + strlen(paths),
                         sizeof(paths) - strlen(paths), " %u:-", r);
                continue;
            }
            masked += job->recs[r][it].masked;
            d = MOE_MAX(d, job->recs[r][it].dispatch_ns);
            c = MOE_MAX(c, job->recs[r][it].combine_ns);
            snprintf(paths + strlen(paths), sizeof(paths) - strlen(paths),
                     " %u:%c", r, job->recs[r][it].on_backup ? 'B' : 'P');
        }
        if (it == done) {
            printf("%4u  NEVER FINISHED (given up after %.2f s)\n", it,
                   moe_stall_ns(job, it) / 1e9);
            break;
        }
        printf("%4u  %12.3f  %11.3f %s%s%s%s%s", it, d / 1e6, c / 1e6,
               paths,
               ((int)it == opt.fault_at) && (opt.fault_rank >= 0) ?
               "   <- port down" : "",
               ((int)it == opt.up_at) && (opt.fault_rank >= 0) ?
               "   <- port up" : "",
               ((int)it == opt.kill_at) && (opt.kill_rank >= 0) ?
               "   <- rank killed" : "",
               ((int)it == opt.rejoin_at) && (opt.kill_rank >= 0) ?
               "   <- rank back" : "");
        if (masked > 0) {
            printf("   %u masked", masked);
        }
        printf("\n");
    }
}

static const char *moe_status_name(uint32_t status)
{
    static const char *names[] = {"OK", "INPROGRESS", "NO_RESOURCE",
                                  "PATH_SWITCHED", "IN_DOUBT", "NO_PATH",
                                  "ERROR", "TIMEOUT", "PEER_GONE"};

    return (status < 9) ? names[status] : "?";
}

/* The ranks' deadline (UCX_GDA_FT_DEADLINE as moe_spawn leaves it): what
 * the time from a kill to its mask is counted in */
static double moe_deadline_sec(void)
{
    const char *value = getenv("UCX_GDA_FT_DEADLINE");
    double number;
    char *unit;

    if (value == NULL) {
        return 0.1;
    }
    number = strtod(value, &unit);
    return !strcmp(unit, "ms") ? number * 1e-3 :
           !strcmp(unit, "us") ? number * 1e-6 :
           !strcmp(unit, "ns") ? number * 1e-9 :
           (!strcmp(unit, "s") || (*unit == '\0')) ? number : 0;
}

/* The latest of the survivors' times from the kill to its mask, in
 * seconds; -1 when one of them never masked it */
static double moe_mask_sec(const moe_job_t *job)
{
    uint64_t latest = 0;
    unsigned r;

    for (r = 0; r < opt.ranks; ++r) {
        if (((int)r == opt.kill_rank) || !job->got[r]) {
            continue;
        }
        if (job->sum[r].gone_ns < job->kill_ns) {
            return -1;
        }
        latest = MOE_MAX(latest, job->sum[r].gone_ns - job->kill_ns);
    }
    return latest / 1e9;
}

/* The latest of the survivors' times from the killed rank's restart to
 * its device endpoint swapped in, in seconds; -1 when one never did */
static double moe_rejoin_sec(const moe_job_t *job)
{
    uint64_t latest = 0;
    unsigned r;

    for (r = 0; r < opt.ranks; ++r) {
        if (((int)r == opt.kill_rank) || !job->got[r]) {
            continue;
        }
        if ((job->restart_ns == 0) ||
            (job->sum[r].back_ns < job->restart_ns)) {
            return -1;
        }
        latest = MOE_MAX(latest, job->sum[r].back_ns - job->restart_ns);
    }
    return latest / 1e9;
}

/* The summary of a job, as lines, for printing alone or side by side */
static unsigned moe_summary_lines(const moe_job_t *job, char lines[][80])
{
    moe_summary_t t = {0};
    unsigned r, it, n = 0, done = moe_job_done(job), k = 0;
    uint64_t *times = calloc(opt.iters, sizeof(*times)), med = 0, worst = 0;
    double mask;
    int failed;

    for (r = 0; r < opt.ranks; ++r) {
        t.masked        += job->sum[r].masked;
        t.checked       += job->sum[r].checked;
        t.wrong         += job->sum[r].wrong;
        t.signal_errors += job->sum[r].signal_errors;
        moe_counters_add(&t.chan, &job->sum[r].chan);
        t.first_backup_ms = MOE_MAX(t.first_backup_ms,
                                    job->sum[r].first_backup_ms);
        t.gpu          |= job->sum[r].gpu;
    }
    for (it = 0; it < done; ++it) {
        times[k++] = moe_iter_ns(job, it, &failed);
        worst      = MOE_MAX(worst, times[k - 1]);
    }
    if (k > 0) {
        qsort(times, k, sizeof(*times), moe_cmp_u64);
        med = times[k / 2];
    }
    free(times);

    snprintf(lines[n++], 80, "failover %s, %s", job->failover ? "ON" : "OFF",
             t.gpu ? "GPU kernels" : "CPU threads");
    snprintf(lines[n++], 80, "iterations finished   %u of %u", done,
             opt.iters);
    snprintf(lines[n++], 80, "switches / failbacks  %u / %u",
             t.chan.switches, t.chan.failbacks);
    snprintf(lines[n++], 80, "replays / resolved    %u / %u",
             t.chan.replays, t.chan.resolved);
    snprintf(lines[n++], 80, "atomics in doubt      %u", t.chan.in_doubt);
    snprintf(lines[n++], 80, "tokens checked        %u", t.checked);
    snprintf(lines[n++], 80, "lost / duplicated     %u / %u", t.wrong,
             t.signal_errors);
    snprintf(lines[n++], 80, "signals exact         %s",
             (t.signal_errors == 0) ? "yes" : "NO");
    snprintf(lines[n++], 80, "median iteration      %.2f ms", med / 1e6);
    snprintf(lines[n++], 80, "slowest iteration     %.2f ms (%.0fx median)",
             worst / 1e6, med ? (double)worst / med : 0.0);
    if (done < opt.iters) {
        snprintf(lines[n++], 80, "interruption          never recovered");
    } else {
        snprintf(lines[n++], 80, "interruption          %.1f ms",
                 (worst - med) / 1e6);
    }
    snprintf(lines[n++], 80, "first backup reply    %.2f ms after switch",
             t.first_backup_ms);
    if (opt.kill_rank >= 0) {
        mask = moe_mask_sec(job);
        snprintf(lines[n++], 80, "rank killed           %d, at iteration %d",
                 opt.kill_rank, opt.kill_at);
        snprintf(lines[n++], 80, "tokens masked         %u", t.masked);
        if ((job->kill_ns == 0) || (mask < 0)) {
            snprintf(lines[n++], 80, "kill -> mask          never");
        } else {
            snprintf(lines[n++], 80, "kill -> mask          %.1f ms (%.2f "
                     "deadlines)", mask * 1e3, mask / moe_deadline_sec());
        }
    }
    if ((opt.kill_rank >= 0) && (opt.rejoin_at >= 0)) {
        mask = moe_rejoin_sec(job);
        if (mask < 0) {
            snprintf(lines[n++], 80, "restart -> rejoin     never");
        } else {
            snprintf(lines[n++], 80, "restart -> rejoin     %.1f ms, at "
                     "iteration %d", mask * 1e3, opt.rejoin_at);
        }
    }
    if (done < opt.iters) {
        snprintf(lines[n++], 80, "iteration %-4u        NEVER FINISHED",
                 done);
        for (r = 0; r < opt.ranks; ++r) {
            it = job->got[r] ? job->sum[r].done : 0;
            if (moe_killed(r)) {
                continue;
            }
            if (!job->got[r]) {
                snprintf(lines[n++], 80, " rank %u died", r);
            } else if (it < opt.iters) {
                snprintf(lines[n++], 80, " rank %u: iteration %u, %s after "
                         "%.2f s", r, it,
                         moe_status_name(job->recs[r][it].status),
                         (job->recs[r][it].dispatch_ns +
                          job->recs[r][it].combine_ns) / 1e9);
            }
        }
    }
    return n;
}

static int moe_job_ok(const moe_job_t *job)
{
    unsigned r;
    uint32_t wrong = 0, sigerr = 0;

    for (r = 0; r < opt.ranks; ++r) {
        wrong  += job->sum[r].wrong;
        sigerr += job->sum[r].signal_errors;
    }
    /* a killed rank must have been masked: its tokens were not exact */
    return (moe_job_done(job) == opt.iters) && (wrong == 0) &&
           (sigerr == 0) &&
           ((opt.kill_rank < 0) || (moe_mask_sec(job) >= 0)) &&
           ((opt.rejoin_at < 0) || (moe_rejoin_sec(job) >= 0));
}

/* The first iteration after the fault with every rank's channels back on
 * their primaries, or -1 */
static int moe_failback_iter(const moe_job_t *job)
{
    unsigned it, r, back, done = moe_job_done(job);

    for (it = (opt.fault_at > 0) ? opt.fault_at : 0; it < done; ++it) {
        back = 0;
        for (r = 0; r < opt.ranks; ++r) {
            back += job->got[r] ? job->recs[r][it].on_backup : 0;
        }
        if ((back == 0) && ((int)it > opt.fault_at)) {
            return it;
        }
    }
    return -1;
}

/* CSV of iteration times and the gnuplot timeline */
static void moe_plot(const moe_job_t *jobs, unsigned njobs)
{
    char csv[PATH_MAX], cmd[PATH_MAX * 3], failback[160] = "";
    char ports[320] = "", killed[200] = "", back[200] = "";
    double rejoin = moe_rejoin_sec(&jobs[0]);
    int fb = ((opt.fault_rank >= 0) && jobs[0].failover) ?
             moe_failback_iter(&jobs[0]) : -1;
    double mask = moe_mask_sec(&jobs[0]);
    unsigned it, j;
    FILE *f;
    int failed;

    snprintf(csv, sizeof(csv), "%s.csv", opt.plot);
    f = fopen(csv, "w");
    if (f == NULL) {
        printf("cannot write %s\n", csv);
        return;
    }
    for (it = 0; it < opt.iters; ++it) {
        fprintf(f, "%u", it);
        for (j = 0; j < njobs; ++j) {
            uint64_t t = moe_iter_ns(&jobs[j], it, &failed);

            if (failed && (it == moe_job_done(&jobs[j]))) {
                /* the iteration that never finished: until it gave up */
                fprintf(f, " %.3f", moe_stall_ns(&jobs[j], it) / 1e6);
            } else if (failed) {
                fprintf(f, " NaN");
            } else {
                fprintf(f, " %.3f", t / 1e6);
            }
        }
        fprintf(f, "\n");
    }
    fclose(f);

    if (opt.fault_rank >= 0) {
        snprintf(ports, sizeof(ports),
                 "set arrow from %d, graph 0 to %d, graph 1 nohead lc 'red'; "
                 "set arrow from %d, graph 0 to %d, graph 1 nohead "
                 "lc 'green'; set label 'port down' at %d, graph 0.95 "
                 "tc 'red'; set label 'port up' at %d, graph 0.88 "
                 "tc 'green'; ", opt.fault_at, opt.fault_at, opt.up_at,
                 opt.up_at, opt.fault_at, opt.up_at);
    }
    if ((opt.kill_rank >= 0) && (mask >= 0)) {
        /* the mask comes within the kill's iteration */
        snprintf(killed, sizeof(killed),
                 "set arrow from %d, graph 0 to %d, graph 1 nohead "
                 "lc 'purple'; set label 'rank %d killed, masked %.0f ms "
                 "later' at %d, graph 0.74 tc 'purple'; ", opt.kill_at,
                 opt.kill_at, opt.kill_rank, mask * 1e3, opt.kill_at);
    }
    if ((opt.kill_rank >= 0) && (opt.rejoin_at >= 0) && (rejoin >= 0)) {
        snprintf(back, sizeof(back),
                 "set arrow from %d, graph 0 to %d, graph 1 nohead dt 2 "
                 "lc 'dark-green'; set label 'rank %d back, %.0f ms after "
                 "its restart' at %d, graph 0.67 tc 'dark-green'; ",
                 opt.rejoin_at, opt.rejoin_at, opt.kill_rank, rejoin * 1e3,
                 opt.rejoin_at);
    }
    if (fb >= 0) {
        snprintf(failback, sizeof(failback),
                 "set arrow from %d, graph 0 to %d, graph 1 nohead dt 2 "
                 "lc 'blue'; set label 'failback' at %d, graph 0.81 "
                 "tc 'blue'; ", fb, fb, fb);
    }
    snprintf(cmd, sizeof(cmd),
             "gnuplot -e \"set terminal png size 900,420; set output '%s'; "
             "set xlabel 'iteration'; set ylabel 'iteration time (ms)'; "
             "set logscale y; set key top left; set grid; %s%s%s%s"
             "plot '%s' using 1:2 with linespoints title 'failover %s'%s\" "
             "2>&1", opt.plot, ports, killed, back, failback, csv,
             jobs[0].failover ? "on" : "off",
             (njobs > 1) ? ", '' using 1:3 with linespoints "
                           "title 'failover off'" : "");
    if (system(cmd) == 0) {
        printf("timeline: %s (data: %s)\n", opt.plot, csv);
    } else {
        printf("timeline: gnuplot failed or is missing; data in %s\n", csv);
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
