/*
 * moe: a rank. It connects to the others with UCP over gda_ft, builds its
 * device endpoints and memory lists with src/ucp_ext, runs moe.h's
 * iterations from a CUDA kernel or CPU threads, takes its primary port
 * down and up or kills itself when told, masks a rank gone and swaps a
 * restarted one in, and reports to the launcher (see moe_int.h).
 */
#ifndef _GNU_SOURCE
#  define _GNU_SOURCE
#endif

#include "moe_int.h"
#include "gda_ft_prog.h"
#include "gda_ft_ucp.h"

#include <dlfcn.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

/* What a rank does while it waits for the launcher: its worker's progress
 * (moe_allgather) */
static unsigned moe_worker_idle(void *arg)
{
    return ucp_worker_progress(((moe_rank_t*)arg)->worker);
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
    moe_set_idle(moe_worker_idle, m);
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

/* Our software HCAs' statistics, a line each, on stderr */
static void moe_print_stats(void)
{
    char stats[4096], *line, *next;

    if (gda_ft_prog_soft_stats(stats, sizeof(stats)) != UCS_OK) {
        return;
    }
    for (line = stats; *line != '\0'; line = next) {
        next = line + strcspn(line, "\n");
        if (*next != '\0') {
            *next++ = '\0';
        }
        fprintf(stderr, "rank %u: %s\n", opt.rank, line);
    }
}

int moe_rank_main(void)
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
    /* before the report: the launcher ends the job once it has them all */
    if (opt.engine_stats) {
        moe_print_stats();
    }
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
