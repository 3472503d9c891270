/*
 * Test world of concurrent device channels over software HCAs.
 */
#include "chan_harness.h"
#include "soft_harness.h"
#include "gda_ft_test.h"

#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <unistd.h>

static void *chan_host_alloc(size_t size, void *arg)
{
    void *ptr;

    (void)arg;
    if (posix_memalign(&ptr, 64, (size + 63) & ~(size_t)63) != 0) {
        return NULL;
    }
    memset(ptr, 0, size);
    return ptr;
}

static void chan_host_free(void *ptr, void *arg)
{
    (void)arg;
    free(ptr);
}

const gda_ft_chan_host_mem_t chan_host_mem = {
    chan_host_alloc, chan_host_free, NULL, GDA_FT_HCA_MEM_HOST
};

static void chan_host_copy(void *dst, const void *src, size_t len)
{
    memcpy(dst, src, len);
}

const chan_world_mem_t chan_world_host_mem = {
    {chan_host_alloc, chan_host_free, NULL, GDA_FT_HCA_MEM_HOST},
    {chan_host_alloc, chan_host_free, NULL, GDA_FT_HCA_MEM_HOST},
    {chan_host_alloc, chan_host_free, NULL, GDA_FT_HCA_MEM_HOST},
    {chan_host_alloc, chan_host_free, NULL, GDA_FT_HCA_MEM_HOST},
    chan_host_copy
};

uint64_t chan_world_time_scale(void)
{
    const char *scale = getenv("GDA_FT_TEST_TIMEOUT_SCALE");

    return ((scale != NULL) && (atoi(scale) > 1)) ? atoi(scale) : 1;
}

void chan_world_default_params(chan_world_params_t *params)
{
    memset(params, 0, sizeof(*params));
    params->nchan       = 2;
    params->data_len    = 1024 * 1024;
    params->signal_len  = 4096;
    params->counter_len = 64 * 1024;
    params->wqebb_cnt   = 4096;
    params->deadline_ns = 100000000ull; /* a 2-core machine stalls the
                                            software HCA for ~20 ms at times */
    params->resolve_ns  = 200000000ull;
    params->recovery_ns = 20000000ull;
    params->grace_ns    = 5000000ull;
    params->max_chunk   = 64 * 1024;
    params->first_psn   = 0xfffe00;   /* every test crosses the PSN wrap */
    params->timeout     = 10;         /* 4.2 ms, 7 retries: 29 ms: the
                                         software HCA drops datagrams when
                                         its socket buffers fill */
    params->retry_cnt   = 7;
    params->mem         = chan_world_host_mem;
    chan_world_scale(params, chan_world_time_scale());
}

uint8_t chan_world_scaled_timeout(uint8_t timeout)
{
    uint64_t scale = chan_world_time_scale(), d;

    for (d = 1; d < scale; d *= 2) {
        ++timeout;
    }
    return timeout;
}

void chan_world_scale(chan_world_params_t *params, uint64_t scale)
{
    params->deadline_ns *= scale;
    params->resolve_ns  *= scale;
    params->recovery_ns *= scale;
    params->grace_ns    *= scale;
}

/* ---- the peer's end, for the guardian (both ends are in this process) */

static ucs_status_t chan_peer_fence(void *arg, gda_ft_chan_host_t *ch,
                                    unsigned path, unsigned why,
                                    uint32_t *epsn_p)
{
    chan_world_t *w = (chan_world_t*)arg;

    (void)why;   /* B posts nothing that could follow */
    return gda_ft_chan_host_fence_qp(w->b[ch->chan.id].path[path].qp,
                                     epsn_p);
}

static ucs_status_t chan_peer_rearm(void *arg, gda_ft_chan_host_t *ch,
                                    unsigned path,
                                    const gda_ft_hca_qp_attr_t *local)
{
    chan_world_t *w = (chan_world_t*)arg;

    return gda_ft_chan_host_reconnect(&w->b[ch->chan.id], path,
                                      local->sq_psn, local->rq_psn);
}

static int chan_peer_port_up(void *arg, gda_ft_chan_host_t *ch, unsigned path)
{
    chan_world_t *w = (chan_world_t*)arg;
    gda_ft_hca_port_attr_t attr;

    (void)ch;
    return (gda_ft_hca_port_query(w->dev[2 + path], 1, &attr) == UCS_OK) &&
           (attr.state == GDA_FT_HCA_PORT_ACTIVE);
}

/* B's guardian is this one: it takes part in every question */
static int chan_peer_guardian_active(void *arg, gda_ft_chan_host_t *ch,
                                     uint64_t ns)
{
    (void)arg;
    (void)ch;
    (void)ns;
    return 1;
}

const gda_ft_chan_peer_ops_t chan_peer_ops = {
    chan_peer_fence, chan_peer_rearm, chan_peer_port_up,
    chan_peer_guardian_active
};

/* ---- setup ------------------------------------------------------------- */

static void *chan_world_alloc(const gda_ft_chan_host_mem_t *mem, size_t size)
{
    void *ptr = mem->alloc(size, mem->arg);

    GDA_FT_ASSERT(ptr != NULL);
    return ptr;
}

/* Allocates poster or data memory holding a copy of host bytes */
static void *chan_world_alloc_copy(chan_world_t *w,
                                   const gda_ft_chan_host_mem_t *mem,
                                   const void *src, size_t size)
{
    void *ptr = chan_world_alloc(mem, size);

    w->params.mem.copy(ptr, src, size);
    return ptr;
}

static uint32_t chan_world_reg(chan_world_t *w, unsigned dev, void *buf,
                               size_t len, gda_ft_hca_mem_type_t type,
                               unsigned access, int remote)
{
    gda_ft_hca_mr_attr_t attr = {buf, len, access, type};
    gda_ft_hca_mr_t *mr;

    GDA_FT_ASSERT_OK(gda_ft_hca_mr_reg(w->pd[dev], &attr, &mr));
    return remote ? mr->rkey : mr->lkey;
}

static void chan_world_elem(chan_world_t *w, gda_ft_dev_mem_elem_t *elems,
                            unsigned idx, const gda_ft_chan_host_mem_t *mem,
                            void *local, void *remote, size_t len)
{
    gda_ft_dev_mem_elem_t *e = &elems[idx];
    unsigned p;

    e->laddr  = (uintptr_t)local;
    e->raddr  = (uintptr_t)remote;
    e->length  = len;
    e->rlength = len;
    for (p = 0; p < 2; ++p) {
        e->lkey[p] = chan_world_reg(w, p, local, len, mem->type,
                                    GDA_FT_HCA_ACCESS_LOCAL_WRITE, 0);
        e->rkey[p] = chan_world_reg(w, 2 + p, remote, len, mem->type,
                                    GDA_FT_HCA_ACCESS_ALL, 1);
    }
}

static void chan_world_connect(chan_world_t *w, unsigned i, unsigned path)
{
    gda_ft_chan_host_t *a     = &w->a[i], *b = &w->b[i];
    gda_ft_hca_qp_attr_t attr = {0};

    attr.access             = GDA_FT_HCA_ACCESS_ALL;
    attr.path_mtu           = CHAN_WORLD_MTU;
    attr.hop_limit          = 64;
    attr.max_dest_rd_atomic = 16;
    attr.max_rd_atomic      = 16;
    attr.timeout            = w->params.timeout;
    attr.retry_cnt          = w->params.retry_cnt;
    attr.rnr_retry          = 7;
    attr.rq_psn             = w->params.first_psn;
    attr.sq_psn             = w->params.first_psn;

    attr.dest_qpn = b->path[path].qp->qpn;
    soft_test_gid(w->dev[2 + path], 1, attr.dest_gid);
    GDA_FT_ASSERT_OK(gda_ft_chan_host_connect(a, path, &attr));
    attr.dest_qpn = a->path[path].qp->qpn;
    soft_test_gid(w->dev[path], 1, attr.dest_gid);
    GDA_FT_ASSERT_OK(gda_ft_chan_host_connect(b, path, &attr));
}

/* "counters" of the control socket (gda_ft_softctl counters): a line per
 * channel of side A */
static void chan_world_ctl_counters(void *arg, int argc, char **argv,
                                    char *reply, size_t max)
{
    chan_world_t *w = (chan_world_t*)arg;
    const gda_ft_chan_t *poster;
    gda_ft_chan_query_t q;
    gda_ft_chan_t view;
    size_t len = 0;
    unsigned c;

    (void)argc;
    (void)argv;
    for (c = 0; c < w->params.nchan; ++c) {
        poster = &w->chans[c];
        if (w->params.mem.read != NULL) {
            w->params.mem.read(&view, poster, sizeof(view));
            poster = &view;
        }
        gda_ft_chan_host_query(&w->a[c], poster, &q);
        len += gda_ft_chan_query_format(&q, "chan_world ", reply + len,
                                        (len < max) ? max - len : 0);
    }
}

void chan_world_init(chan_world_t *w, const chan_world_params_t *params)
{
    gda_ft_dev_mem_elem_t elems[CHAN_ELEM_COUNT];
    gda_ft_chan_t chans[CHAN_WORLD_MAX_CHANNELS];
    gda_ft_chan_health_t health  = {0};
    gda_ft_chan_host_params_t hp = {0};
    gda_ft_hca_pd_t *pd[2];
    uint8_t *pattern;
    uint8_t ports[2]             = {1, 1};
    char name[16];
    unsigned i, p;

    GDA_FT_ASSERT(params->nchan <= CHAN_WORLD_MAX_CHANNELS);
    memset(w, 0, sizeof(*w));
    w->params = *params;
    if (params->reverse_of == NULL) {
        soft_test_env(4, NULL);
    }
    for (i = 0; i < 4; ++i) {
        if (params->reverse_of != NULL) {
            w->dev[i] = params->reverse_of->dev[(i + 2) % 4];
        } else {
            snprintf(name, sizeof(name), "tsoft%u", i);
            w->dev[i] = soft_open(name);
        }
        GDA_FT_ASSERT_OK(gda_ft_hca_pd_alloc(w->dev[i], &w->pd[i]));
    }

    w->health = chan_world_alloc_copy(w, &params->mem.poster, &health,
                                      sizeof(health));
    hp.wqebb_cnt   = params->wqebb_cnt;
    hp.deadline_ns = params->deadline_ns;
    hp.resolve_ns  = params->resolve_ns;
    hp.max_chunk   = params->max_chunk;
    hp.db_defer    = params->db_defer;
    hp.recovery_ns = params->recovery_ns;
    hp.grace_ns    = params->grace_ns;
    hp.mem         = params->mem.rings;
    hp.slot_mem    = params->mem.poster;
    for (i = 0; i < params->nchan; ++i) {
        pd[0] = w->pd[0];
        pd[1] = w->pd[1];
        GDA_FT_ASSERT_OK(gda_ft_chan_host_init(&w->a[i], pd, ports, i,
                                               w->health, &hp));
        pd[0] = w->pd[2];
        pd[1] = w->pd[3];
        GDA_FT_ASSERT_OK(gda_ft_chan_host_init(&w->b[i], pd, ports, i, NULL,
                                               &hp));
        for (p = 0; p < 2; ++p) {
            chan_world_connect(w, i, p);
        }
    }

    pattern = malloc(params->data_len);
    soft_fill(pattern, params->data_len, 7);
    w->src      = chan_world_alloc_copy(w, &params->mem.data, pattern,
                                        params->data_len);
    free(pattern);
    w->dst      = chan_world_alloc(&params->mem.data, params->data_len);
    w->signals  = chan_world_alloc(&params->mem.words, params->signal_len);
    w->results  = chan_world_alloc(&params->mem.words, params->counter_len);
    w->counters = chan_world_alloc(&params->mem.words, params->counter_len);
    chan_world_elem(w, elems, CHAN_ELEM_DATA, &params->mem.data, w->src,
                    w->dst, params->data_len);
    chan_world_elem(w, elems, CHAN_ELEM_SIGNAL, &params->mem.words,
                    w->results, w->signals,
                    params->signal_len < params->counter_len ?
                    params->signal_len : params->counter_len);
    chan_world_elem(w, elems, CHAN_ELEM_COUNTER, &params->mem.words,
                    w->results, w->counters, params->counter_len);
    w->elems      = chan_world_alloc_copy(w, &params->mem.poster, elems,
                                          sizeof(elems));
    w->ml.version = GDA_FT_DEV_VERSION;
    w->ml.count   = CHAN_ELEM_COUNT;
    w->ml.elems   = w->elems;

    for (i = 0; i < params->nchan; ++i) {
        chans[i] = w->a[i].chan;
    }
    w->chans = chan_world_alloc_copy(w, &params->mem.poster, chans,
                                     params->nchan * sizeof(*chans));
    w->ep.version      = GDA_FT_DEV_VERSION;
    w->ep.num_channels = (uint16_t)params->nchan;
    w->ep.flags        = (w->dev[0]->attr.flags &
                          GDA_FT_HCA_DEV_FLAG_ATOMIC_HOST_ORDER) ?
                         GDA_FT_DEV_EP_F_FETCH_HOST_ORDER : 0;
    w->ep.channels     = w->chans;
    GDA_FT_ASSERT_OK(gda_ft_soft_ctl_register("counters",
                                              chan_world_ctl_counters, w));
}

void chan_world_fini(chan_world_t *w)
{
    const gda_ft_chan_host_mem_t *data   = &w->params.mem.data;
    const gda_ft_chan_host_mem_t *words  = &w->params.mem.words;
    const gda_ft_chan_host_mem_t *poster = &w->params.mem.poster;
    unsigned i;

    chan_world_guard_stop(w);
    gda_ft_soft_ctl_unregister(chan_world_ctl_counters, w);
    for (i = 0; i < w->params.nchan; ++i) {
        gda_ft_chan_host_cleanup(&w->a[i]);
        gda_ft_chan_host_cleanup(&w->b[i]);
    }
    for (i = 0; i < 4; ++i) {
        gda_ft_hca_pd_free(w->pd[i]);
        if (w->params.reverse_of == NULL) {
            gda_ft_hca_close(w->dev[i]);  /* releases the MRs */
        }
    }
    data->free(w->src, data->arg);
    data->free(w->dst, data->arg);
    words->free(w->signals, words->arg);
    words->free(w->results, words->arg);
    words->free(w->counters, words->arg);
    poster->free(w->elems, poster->arg);
    poster->free(w->chans, poster->arg);
    poster->free(w->health, poster->arg);
}

/* The guardian's pause between passes: 20 us, or GDA_FT_TEST_GUARD_PAUSE_US
 * (0: a yield) */
static unsigned chan_world_guard_pause_us(void)
{
    const char *pause = getenv("GDA_FT_TEST_GUARD_PAUSE_US");

    return (pause != NULL) ? (unsigned)atoi(pause) : 20;
}

static void *chan_world_guard_loop(void *arg)
{
    chan_world_t *w                    = (chan_world_t*)arg;
    const gda_ft_chan_peer_ops_t *peer = (w->guard_peer != NULL) ?
                                         w->guard_peer : &chan_peer_ops;
    unsigned pause                     = chan_world_guard_pause_us();
    unsigned i;

    while (!__atomic_load_n(&w->guard_stop, __ATOMIC_ACQUIRE)) {
        for (i = 0; i < w->params.nchan; ++i) {
            gda_ft_chan_host_guard(&w->a[i], peer, w, gda_ft_dev_now_ns());
        }
        if (pause == 0) {
            sched_yield();
        } else {
            usleep(pause);
        }
    }
    return NULL;
}

void chan_world_guard_start(chan_world_t *w)
{
    GDA_FT_ASSERT_EQ(pthread_create(&w->guard_thread, NULL,
                                    chan_world_guard_loop, w), 0);
    w->guard_running = 1;
}

void chan_world_guard_stop(chan_world_t *w)
{
    if (w->guard_running) {
        __atomic_store_n(&w->guard_stop, 1, __ATOMIC_RELEASE);
        pthread_join(w->guard_thread, NULL);
        w->guard_running = 0;
    }
}

uint64_t chan_world_completed(chan_world_t *w)
{
    uint64_t sum = 0;
    unsigned k;

    for (k = 0; k < w->params.nchan; ++k) {
        sum += gda_ft_chan_completed(&w->chans[k]);
    }
    return sum;
}

void chan_world_port(chan_world_t *w, unsigned path, int up)
{
    GDA_FT_ASSERT_OK(soft_port_set_up(w->dev[2 + path], 1, up));
}

int chan_cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t*)a, y = *(const uint64_t*)b;

    return (x > y) - (x < y);
}
