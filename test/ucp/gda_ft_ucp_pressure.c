/*
 * gda_ft_ucp_pressure (see gda_ft_ucp_pressure.h): two ranks, this process
 * and a child, one GPU each where there are GPUs (rank r on GPU r mod the
 * GPUs it sees), posting at each other through UCP-built device endpoints
 * under pressure; every OK proven, every failure counted.
 *
 *   gda_ft_ucp_pressure [--cpu | --gpu] [--blocks B --warps W | --threads N]
 *       [--channels C] [--ring WQEBBS] [--deadline TIME] [--seconds S]
 *       [--flaps F --down-ms D --up-ms U] [--max-len BYTES] [--no-path-ok]
 *
 * Exits 0 and prints "RESULT PASS" when both ranks' checks pass.
 */
#include "gda_ft_ucp_pressure.h"

#include <gda_ft_ucp.h>
#include "gda_ft_prog.h"

#include <dlfcn.h>
#include <getopt.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PRESSURE_MAX_POSTERS 4096
#define PRESSURE_RES_BYTES   (64u << 20)  /* result slots, at most */
#define PRESSURE_WATCHDOG_S  60.0         /* after --seconds */

static struct {
    int      gpu;          /* 1 kernels, 0 CPU threads, -1 where found */
    unsigned blocks;
    unsigned warps;
    unsigned threads;
    unsigned inflight;     /* 0: 1 on GPUs, 8 on CPU threads */
    unsigned channels;
    unsigned ring;
    char     deadline[32];
    unsigned seconds;
    unsigned flaps;
    unsigned down_ms;
    unsigned up_ms;
    unsigned max_len;
    unsigned pause_ms;     /* before the posters start, without progress */
    int      no_get;       /* puts checked at the end only */
    int      no_path_ok;   /* NO_PATH is no failure (ports of both ends
                              down at once, or a dead peer) */
} opt = {-1, 64, 8, 8, 0, 3, 64, "", 10, 0, 300, 700, PRESSURE_REGION, 200,
         0, 0};

typedef struct {
    int  (*select)(unsigned index);
    int  (*copy)(void *dst, const void *src, size_t len);
    void *(*host_alloc)(size_t len);
    void *(*launch)(const pressure_ctx_t *ctx, unsigned blocks,
                    unsigned warps);
    int  (*done)(void *run);
    int  (*finish)(void *run);
} pressure_gpu_t;

typedef struct {
    unsigned                rank;
    int                     fd;        /* to the other rank */
    gda_ft_ucp_place_t      place;
    pressure_gpu_t          gpu;
    ucp_context_h           context;
    ucp_worker_h            worker;
    ucp_ep_h                ep;
    ucp_rkey_h              rkey;
    gda_ft_ucp_signal_mem_t region;
    gda_ft_ucp_device_ep_h  dev_ep;
    gda_ft_ucp_mem_list_h   ml;
    pressure_ctx_t          ctx;
    volatile int           *stop;
    uint8_t                *host;      /* the region, read back */
} pressure_rank_t;

static void pressure_die(pressure_rank_t *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3), noreturn));

static void pressure_die(pressure_rank_t *r, const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, "gda_ft_ucp_pressure: rank %u: ", r->rank);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n");
    exit(1);
}

static void pressure_check_status(pressure_rank_t *r, ucs_status_t status,
                                  const char *what)
{
    if (status != UCS_OK) {
        pressure_die(r, "%s: %s", what, ucs_status_string(status));
    }
}

static double pressure_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static unsigned pressure_posters(void)
{
    return opt.gpu ? opt.blocks * opt.warps : opt.threads;
}

/* A message to the other rank: its length, then its bytes */
static void pressure_send(pressure_rank_t *r, const void *data, size_t len)
{
    uint64_t n = len;

    if ((gda_ft_prog_write_all(r->fd, &n, sizeof(n)) != 0) ||
        (gda_ft_prog_write_all(r->fd, data, len) != 0)) {
        pressure_die(r, "the other rank is gone");
    }
}

/* The other rank's next message, progressing our worker while it comes */
static void *pressure_recv(pressure_rank_t *r, size_t *len_p)
{
    struct pollfd pfd = {.fd = r->fd, .events = POLLIN};
    uint64_t n;
    void *data;

    while (poll(&pfd, 1, 0) == 0) {
        if (r->worker != NULL) {
            ucp_worker_progress(r->worker);
        }
    }
    if (gda_ft_prog_read_all(r->fd, &n, sizeof(n)) != 0) {
        pressure_die(r, "the other rank is gone");
    }
    data = malloc(n + 1);
    if ((data == NULL) || (gda_ft_prog_read_all(r->fd, data, n) != 0)) {
        pressure_die(r, "the other rank is gone");
    }
    if (len_p != NULL) {
        *len_p = n;
    }
    return data;
}

static void pressure_barrier(pressure_rank_t *r)
{
    pressure_send(r, "", 1);
    free(pressure_recv(r, NULL));
}

static int pressure_gpu_load(pressure_rank_t *r)
{
    void *h = gda_ft_prog_open_beside("libgda_ft_ucp_pressure_gpu.so");

    if (h == NULL) {
        return 0;
    }
    *(void**)&r->gpu.select     = dlsym(h, "pressure_gpu_select");
    *(void**)&r->gpu.copy       = dlsym(h, "pressure_gpu_copy");
    *(void**)&r->gpu.host_alloc = dlsym(h, "pressure_gpu_host_alloc");
    *(void**)&r->gpu.launch     = dlsym(h, "pressure_gpu_launch");
    *(void**)&r->gpu.done       = dlsym(h, "pressure_gpu_done");
    *(void**)&r->gpu.finish     = dlsym(h, "pressure_gpu_finish");
    return (r->gpu.select != NULL) && (r->gpu.copy != NULL) &&
           (r->gpu.host_alloc != NULL) && (r->gpu.launch != NULL) &&
           (r->gpu.done != NULL) && (r->gpu.finish != NULL) &&
           (r->gpu.select(r->rank) >= 0);
}

/* UCP over gda_ft, an endpoint to the other rank, wired up */
static void pressure_ucp_init(pressure_rank_t *r, int port)
{
    ucp_params_t params          = {0};
    ucp_worker_params_t wparams  = {0};
    ucp_ep_params_t eparams      = {0};
    ucp_request_param_t rparam   = {0};
    char value[128];
    ucp_address_t *addr;
    void *peer_addr, *req;
    size_t len;

    if (getenv("UCX_GDA_FT_SOFT_DEVICES") == NULL) {
        snprintf(value, sizeof(value),
                 "h%ua=127.0.%u.1:%d,h%ub=127.0.%u.2:%d", r->rank,
                 70 + r->rank, port, r->rank, 70 + r->rank, port);
        setenv("UCX_GDA_FT_SOFT_DEVICES", value, 1);
    }
    setenv("UCX_TLS", "gda_ft", 0);
    snprintf(value, sizeof(value), "%u", opt.channels);
    setenv("UCX_GDA_FT_DEVICE_CHANNELS", value, 1);
    snprintf(value, sizeof(value), "%u", opt.ring);
    setenv("UCX_GDA_FT_DEVICE_CHANNEL_RING", value, 1);
    if (opt.deadline[0] != '\0') {
        setenv("UCX_GDA_FT_DEADLINE", opt.deadline, 1);
    }
    if (r->place == GDA_FT_UCP_PLACE_HOST) {
        setenv("UCX_GDA_FT_DEVICE_CHANNEL_RINGS", "host", 0);
    }

    params.field_mask = UCP_PARAM_FIELD_FEATURES;
    params.features   = UCP_FEATURE_RMA | UCP_FEATURE_AMO64;
    pressure_check_status(r, ucp_init(&params, NULL, &r->context),
                          "ucp_init");
    wparams.field_mask  = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    wparams.thread_mode = UCS_THREAD_MODE_SINGLE;
    pressure_check_status(r, ucp_worker_create(r->context, &wparams,
                                               &r->worker),
                          "ucp_worker_create");
    pressure_check_status(r, ucp_worker_get_address(r->worker, &addr, &len),
                          "ucp_worker_get_address");
    pressure_send(r, addr, len);
    ucp_worker_release_address(r->worker, addr);
    peer_addr          = pressure_recv(r, NULL);
    eparams.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
    eparams.address    = peer_addr;
    pressure_check_status(r, ucp_ep_create(r->worker, &eparams, &r->ep),
                          "ucp_ep_create");
    free(peer_addr);
    req = ucp_ep_flush_nbx(r->ep, &rparam);
    if (UCS_PTR_IS_PTR(req)) {
        while (ucp_request_check_status(req) == UCS_INPROGRESS) {
            ucp_worker_progress(r->worker);
        }
        ucp_request_free(req);
    }
}

/* The region, the peer's key and base, the device endpoint and the
 * memory list */
static void pressure_memory_init(pressure_rank_t *r)
{
    pressure_ctx_t *c = &r->ctx;
    const pressure_layout_t *l = &c->layout;
    uint64_t area = l->chk - l->src;
    uint64_t base = 0, peer_base;
    gda_ft_ucp_mem_elem_t e[PRESSURE_NUM_ELEMS];
    ucs_status_t status;
    size_t rkey_len;
    void *rkey_buf, *msg;
    uint8_t *res;

    pressure_check_status(r, gda_ft_ucp_signal_alloc(r->context, l->total,
                                                     r->place, &r->region),
                          "region");
    c->base = r->region.address;
    /* result slots unwritten (all ones): in place in host memory, through
     * a host copy into GPU memory */
    if (r->place == GDA_FT_UCP_PLACE_CUDA) {
        res = malloc(l->outcome - l->res);
        if (res == NULL) {
            pressure_die(r, "no memory for the result slots");
        }
        memset(res, 0xff, l->outcome - l->res);
        if (r->gpu.copy(c->base + l->res, res, l->outcome - l->res) != 0) {
            pressure_die(r, "cannot write the result slots");
        }
        free(res);
    } else {
        memset(c->base + l->res, 0xff, l->outcome - l->res);
    }

    pressure_check_status(r, ucp_rkey_pack(r->context, r->region.memh,
                                           &rkey_buf, &rkey_len),
                          "ucp_rkey_pack");
    pressure_send(r, rkey_buf, rkey_len);
    ucp_rkey_buffer_release(rkey_buf);
    base = (uintptr_t)c->base;
    pressure_send(r, &base, sizeof(base));
    rkey_buf  = pressure_recv(r, NULL);
    msg       = pressure_recv(r, NULL);
    peer_base = *(uint64_t*)msg;
    free(msg);
    pressure_check_status(r, ucp_ep_rkey_unpack(r->ep, rkey_buf, &r->rkey),
                          "ucp_ep_rkey_unpack");
    free(rkey_buf);

    do {
        status = gda_ft_ucp_device_ep_create(r->ep, r->place, &r->dev_ep);
        ucp_worker_progress(r->worker);
    } while (status == UCS_ERR_NOT_CONNECTED);
    pressure_check_status(r, status, "device endpoint");

    memset(e, 0, sizeof(e));
    e[PRESSURE_ELEM_DATA].memh           = r->region.memh;
    e[PRESSURE_ELEM_DATA].local_addr     = c->base + l->src;
    e[PRESSURE_ELEM_DATA].length         = 2 * area;   /* src, chk */
    e[PRESSURE_ELEM_DATA].rkey           = r->rkey;
    e[PRESSURE_ELEM_DATA].remote_addr    = peer_base + l->dst;
    e[PRESSURE_ELEM_DATA].remote_length  = area;
    e[PRESSURE_ELEM_SIGNAL].length       = (uint64_t)c->posters * 8;
    e[PRESSURE_ELEM_SIGNAL].rkey         = r->rkey;
    e[PRESSURE_ELEM_SIGNAL].remote_addr  = peer_base + l->sig;
    e[PRESSURE_ELEM_COUNTER].memh        = r->region.memh;
    e[PRESSURE_ELEM_COUNTER].local_addr  = c->base + l->res;
    e[PRESSURE_ELEM_COUNTER].length      = l->outcome - l->res;
    e[PRESSURE_ELEM_COUNTER].rkey        = r->rkey;
    e[PRESSURE_ELEM_COUNTER].remote_addr = peer_base + l->cnt;
    e[PRESSURE_ELEM_COUNTER].remote_length = PRESSURE_COUNTERS * 8;
    pressure_check_status(r, gda_ft_ucp_mem_list_create(r->ep, e,
                                                        PRESSURE_NUM_ELEMS,
                                                        r->place, &r->ml),
                          "memory list");
    c->ep = gda_ft_ucp_device_ep(r->dev_ep);
    c->ml = gda_ft_ucp_mem_list(r->ml);
}

/* Ports fail in turn, one at a time: slot k takes down the port of rank
 * (k / 2) % 2's HCA k % 2 (its primary, then its backup), so that a path
 * stays up; each rank takes its own down */
typedef struct {
    pressure_rank_t *r;
    double           t0;
    unsigned         done;
} pressure_flapper_t;

static void pressure_sleep_until(double t)
{
    double left = t - pressure_now();

    if (left > 0) {
        usleep((useconds_t)(left * 1e6));
    }
}

static void *pressure_flap(void *arg)
{
    pressure_flapper_t *f = arg;
    double period         = (opt.down_ms + opt.up_ms) / 1e3;
    char dev[32];
    unsigned k;

    for (k = 0; (k < opt.flaps) && !*f->r->stop; ++k) {
        if (((k / 2) % 2) != f->r->rank) {
            continue;
        }
        snprintf(dev, sizeof(dev), "h%u%c", f->r->rank, 'a' + (k % 2));
        pressure_sleep_until(f->t0 + k * period + opt.up_ms / 1e3);
        if (*f->r->stop) {
            break;
        }
        if ((gda_ft_prog_soft_port(dev, 0) != UCS_OK)) {
            pressure_die(f->r, "cannot take %s down", dev);
        }
        pressure_sleep_until(f->t0 + (k + 1) * period);
        gda_ft_prog_soft_port(dev, 1);
        ++f->done;
    }
    return NULL;
}

typedef struct {
    const pressure_ctx_t *ctx;
    unsigned              poster;
    pthread_t             thread;
    volatile int          done;
} pressure_cpu_poster_t;

static void *pressure_cpu_poster(void *arg)
{
    pressure_cpu_poster_t *p = arg;

    pressure_poster(p->ctx, p->poster);
    __atomic_store_n(&p->done, 1, __ATOMIC_RELEASE);
    return NULL;
}

/* Runs the posters for opt.seconds (then stops them), progressing the
 * worker meanwhile; the seconds they ran */
static double pressure_run(pressure_rank_t *r, double t0)
{
    pressure_cpu_poster_t *cpu = NULL;
    pressure_flapper_t flapper = {r, t0, 0};
    pthread_t flap_thread;
    void *gpu_run = NULL;
    double start, end, now, last_query;
    unsigned i, done;

    pressure_sleep_until(t0);
    start = pressure_now();
    if (r->place == GDA_FT_UCP_PLACE_CUDA) {
        gpu_run = r->gpu.launch(&r->ctx, opt.blocks, opt.warps);
        if (gpu_run == NULL) {
            pressure_die(r, "the kernel did not launch");
        }
    } else {
        cpu = calloc(opt.threads, sizeof(*cpu));
        for (i = 0; i < opt.threads; ++i) {
            cpu[i].ctx    = &r->ctx;
            cpu[i].poster = i;
            pthread_create(&cpu[i].thread, NULL, pressure_cpu_poster, &cpu[i]);
        }
    }
    pthread_create(&flap_thread, NULL, pressure_flap, &flapper);

    for (last_query = 0;;) {
        ucp_worker_progress(r->worker);
        if (gpu_run != NULL) {
            /* the kernel's stream once a millisecond, between progress
             * calls that the guardian needs more often */
            now  = pressure_now();
            done = 0;
            if ((now - last_query) > 1e-3) {
                last_query = now;
                done       = r->gpu.done(gpu_run);
            }
        } else {
            for (i = 0, done = 1; i < opt.threads; ++i) {
                done &= __atomic_load_n(&cpu[i].done, __ATOMIC_ACQUIRE);
            }
        }
        if (done) {
            break;
        }
        if ((pressure_now() - start) > opt.seconds) {
            *r->stop = 1;
        }
        if ((pressure_now() - start) > opt.seconds + PRESSURE_WATCHDOG_S) {
            fprintf(stderr, "gda_ft_ucp_pressure: rank %u: the posters did "
                    "not return\n", r->rank);
            fflush(stdout);
            _exit(1);
        }
    }
    end      = pressure_now();
    *r->stop = 1;
    pthread_join(flap_thread, NULL);
    if (gpu_run != NULL) {
        if (r->gpu.finish(gpu_run) != 0) {
            pressure_die(r, "the kernel failed");
        }
    } else {
        for (i = 0; i < opt.threads; ++i) {
            pthread_join(cpu[i].thread, NULL);
        }
        free(cpu);
    }
    printf("rank %u: posters ran %.2f s, %u port failures\n", r->rank,
           end - start, flapper.done);
    return end - start;
}

static int pressure_cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t*)a, y = *(const uint64_t*)b;

    return (x > y) - (x < y);
}

/* Prints one check and returns 1 when it failed */
static int pressure_report(unsigned rank, int ok, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int pressure_report(unsigned rank, int ok, const char *fmt, ...)
{
    va_list ap;

    printf("rank %u: %s ", rank, ok ? "ok  " : "FAIL");
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    return !ok;
}

/*
 * Our posters' records against the peer's memory (peer: its dst, sig and
 * cnt areas as it read them after the run): returns the failed checks.
 */
static unsigned pressure_verify(pressure_rank_t *r, const uint8_t *peer,
                                double secs)
{
    const pressure_ctx_t *c    = &r->ctx;
    const pressure_layout_t *l = &c->layout;
    const pressure_out_t *out  = (const pressure_out_t*)(r->host + l->out);
    const uint64_t *sig = (const uint64_t*)(peer + (l->sig - l->dst));
    const uint64_t *cnt = (const uint64_t*)(peer + (l->cnt - l->dst));
    uint64_t ok[PRESSURE_COUNTERS] = {0}, doubt[PRESSURE_COUNTERS] = {0};
    uint64_t *vals = malloc((size_t)c->posters * c->iters * sizeof(*vals));
    unsigned bad_posters = 0, bad_sig = 0, bad_cnt = 0, dup = 0, failed = 0;
    unsigned no_path = 0, w, it, last, i, n, s;
    uint64_t ops_ok = 0, ops_doubt = 0, gets = 0, bad_bytes = 0, nvals;
    const uint8_t *outcome;
    const uint64_t *dst;
    uint32_t len, k;

    for (w = 0; w < c->posters; ++w) {
        outcome  = r->host + l->outcome + (uint64_t)w * c->iters;
        no_path += out[w].no_path;
        gets    += out[w].gets;
        if ((out[w].status != GDA_FT_DEV_OK) ||
            (out[w].violation != PRESSURE_VIOLATION_NONE)) {
            if (bad_posters++ < 4) {
                printf("rank %u: poster %u: %s at iteration %u\n", r->rank,
                       w, (out[w].violation == PRESSURE_VIOLATION_PUT_LOST) ?
                       "a put reported OK, other bytes read back" :
                       (out[w].violation == PRESSURE_VIOLATION_FADD) ?
                       "a fetch-add reported OK, its result never written" :
                       gda_ft_dev_status_str(
                               (gda_ft_dev_status_t)out[w].status),
                       out[w].bad_iter);
            }
        }
        bad_sig += (sig[w] < out[w].sig_ok) ||
                   (sig[w] > out[w].sig_ok + out[w].sig_doubt);
        for (it = 0; it < out[w].iters; ++it) {
            ops_ok    += (outcome[it] == PRESSURE_OK);
            ops_doubt += (outcome[it] == PRESSURE_DOUBT);
            if (pressure_op(w, it) == PRESSURE_OP_FETCH_ADD) {
                i         = w % PRESSURE_COUNTERS;
                ok[i]    += (outcome[it] == PRESSURE_OK);
                doubt[i] += (outcome[it] == PRESSURE_DOUBT);
            }
        }
        /* each slot holds its last put: nothing ran again after an OK */
        for (s = 0; s < c->inflight; ++s) {
            last = c->iters;
            for (it = s; it < out[w].iters; it += c->inflight) {
                last = pressure_is_put(pressure_op(w, it)) ? it : last;
            }
            if ((last == c->iters) || (outcome[last] != PRESSURE_OK)) {
                continue;
            }
            dst = (const uint64_t*)(peer + pressure_slot(c, w, last));
            len = pressure_put_len(w, last, c->max_len);
            for (k = 0; k < len / 8; ++k) {
                bad_bytes += (dst[k] != pressure_word(r->rank, w, last, k));
            }
        }
    }
    /* each counter between its OK and OK + in-doubt adds; the values our
     * fetch-adds fetched from it distinct and below it */
    for (i = 0; i < PRESSURE_COUNTERS; ++i) {
        bad_cnt += (cnt[i] < ok[i]) || (cnt[i] > ok[i] + doubt[i]);
        for (w = i, nvals = 0; w < c->posters; w += PRESSURE_COUNTERS) {
            outcome = r->host + l->outcome + (uint64_t)w * c->iters;
            for (it = 0; it < out[w].iters; ++it) {
                if ((pressure_op(w, it) == PRESSURE_OP_FETCH_ADD) &&
                    (outcome[it] == PRESSURE_OK)) {
                    vals[nvals++] = gda_ft_ucp_fetched(
                            r->dev_ep, r->host + l->res +
                            ((uint64_t)w * c->iters + it) * 8);
                }
            }
        }
        qsort(vals, nvals, sizeof(*vals), pressure_cmp_u64);
        for (n = 0; n < nvals; ++n) {
            dup += (vals[n] >= cnt[i]) || ((n > 0) && (vals[n] == vals[n - 1]));
        }
    }
    free(vals);

    printf("rank %u: %lu operations OK, %lu in doubt or NO_PATH (%.0f/s); "
           "%lu puts read back\n", r->rank, (unsigned long)ops_ok,
           (unsigned long)ops_doubt, (ops_ok + ops_doubt) / secs,
           (unsigned long)gets);
    failed += pressure_report(r->rank, bad_posters == 0, "every OK proven "
                              "when it completed, no poster stopped (%u "
                              "posters not)", bad_posters);
    failed += pressure_report(r->rank, bad_sig == 0, "every signal word "
                              "between its OK and OK + in-doubt signals "
                              "(%u not)", bad_sig);
    failed += pressure_report(r->rank, bad_cnt == 0, "every counter between "
                              "its OK and OK + in-doubt fetch-adds (%u not)",
                              bad_cnt);
    failed += pressure_report(r->rank, dup == 0, "fetched values distinct "
                              "and below their counter (%u not)", dup);
    failed += pressure_report(r->rank, bad_bytes == 0, "every region holds "
                              "its last put reported OK (%lu words differ)",
                              (unsigned long)bad_bytes);
    failed += pressure_report(r->rank, opt.no_path_ok || (no_path == 0),
                              "no NO_PATH while a path was up (%u)",
                              no_path);
    return failed;
}

/* Where each channel that is not active on its primary stands (CPU
 * threads: the channels are in host memory) */
static void pressure_print_channels(pressure_rank_t *r)
{
    const gda_ft_chan_mbox_t *m;
    const gda_ft_chan_t *ch;
    unsigned k;

    for (k = 0; k < r->ctx.ep->num_channels; ++k) {
        ch = gda_ft_dev_channel(r->ctx.ep, k);
        m  = ch->mbox;
        if ((ch->active == GDA_FT_CHAN_PRIMARY) &&
            (ch->state == GDA_FT_CHAN_ACTIVE)) {
            continue;
        }
        printf("rank %u: channel %u: state %u phase %u active %u; records "
               "%u answered %u; re-arms seen %u/%u of %u/%u; links %u/%u; "
               "awaits re-arm %u; peer quiet %u; no path final %u\n",
               r->rank, k, ch->state, ch->sw.phase, ch->active, m->req_seq,
               m->ans_seq, ch->path[0].seen_rearm, ch->path[1].seen_rearm,
               m->rearm[0], m->rearm[1], m->link_up[0], m->link_up[1],
               m->awaits_rearm, m->peer_quiet, m->no_path_final);
    }
}

/* The channels' counters, summed */
static unsigned pressure_counters(pressure_rank_t *r)
{
    gda_ft_chan_counters_t sum = {0};
    unsigned ch, lost = 0, regains = 0;
    gda_ft_chan_query_t q;
    char stats[1024];

    for (ch = 0; ch < opt.channels; ++ch) {
        if (gda_ft_ucp_device_ep_query(r->dev_ep, ch, &q) != UCS_OK) {
            continue;
        }
        sum.switches  += q.poster.switches;
        sum.replays   += q.poster.replays;
        sum.resolved  += q.poster.resolved;
        sum.in_doubt  += q.poster.in_doubt;
        sum.failbacks += q.poster.failbacks;
        sum.no_path   += q.poster.no_path;
        lost          += q.outcomes_lost;
        regains       += q.regains;
    }
    printf("rank %u: switches %u failbacks %u replays %u resolved %u in "
           "doubt %u no_path %u regains %u\n", r->rank, sum.switches,
           sum.failbacks, sum.replays, sum.resolved, sum.in_doubt,
           sum.no_path, regains);
    if (gda_ft_prog_soft_engine_stats(stats, sizeof(stats)) == UCS_OK) {
        printf("rank %u: soft HCA %s\n", r->rank, stats);
    }
    return pressure_report(r->rank, lost == 0, "no failure overwritten "
                           "before its request read it (%u)", lost);
}

static int pressure_rank(pressure_rank_t *r, int port)
{
    const pressure_layout_t *l = &r->ctx.layout;
    size_t theirs_len;
    unsigned failed = 0;
    uint8_t *peer;
    double t0, secs;

    r->place = GDA_FT_UCP_PLACE_HOST;
    if (opt.gpu && pressure_gpu_load(r)) {
        r->place = GDA_FT_UCP_PLACE_CUDA;
        r->stop  = r->gpu.host_alloc(sizeof(*r->stop));
    } else if (opt.gpu) {
        pressure_die(r, "no GPU runner or no GPU (--cpu runs CPU threads)");
    } else {
        r->stop = calloc(1, sizeof(*r->stop));
    }
    if (r->stop == NULL) {
        pressure_die(r, "no memory for the stop word");
    }
    *r->stop         = 0;
    r->ctx.rank      = r->rank;
    r->ctx.posters   = pressure_posters();
    r->ctx.inflight  = (opt.inflight != 0) ? opt.inflight :
                       (r->place == GDA_FT_UCP_PLACE_CUDA) ? 1 : 8;
    r->ctx.iters     = PRESSURE_RES_BYTES / 8 / r->ctx.posters;
    r->ctx.max_len   = opt.max_len;
    r->ctx.stop      = r->stop;
    r->ctx.read_back = !opt.no_get;
    pressure_layout(&r->ctx.layout, r->ctx.posters, r->ctx.inflight,
                    r->ctx.iters);
    theirs_len = l->cnt + PRESSURE_COUNTERS * 8 - l->dst;
    pressure_ucp_init(r, port);
    pressure_memory_init(r);
    printf("rank %u: %s, %u posters with %u requests in flight on %u "
           "channels of %u WQEBBs, puts of 8 to %u bytes, deadline %s, %u "
           "port failures\n", r->rank,
           (r->place == GDA_FT_UCP_PLACE_CUDA) ? "kernels, GPU memory" :
           "CPU threads, host memory", r->ctx.posters, r->ctx.inflight,
           opt.channels, opt.ring, opt.max_len, getenv("UCX_GDA_FT_DEADLINE") ?
           getenv("UCX_GDA_FT_DEADLINE") : "default", opt.flaps);

    /* both start at rank 0's time, after a pause without progress (as a
     * program computes before it communicates) */
    if (r->rank == 0) {
        t0 = pressure_now() + opt.pause_ms / 1e3;
        pressure_send(r, &t0, sizeof(t0));
    } else {
        void *msg = pressure_recv(r, NULL);

        t0 = *(double*)msg;
        free(msg);
    }
    secs = pressure_run(r, t0);
    failed += pressure_counters(r);

    /* the region read back once both ranks' posters returned; the
     * peer's view of what we put there */
    pressure_barrier(r);
    r->host = malloc(l->total);
    if (r->place == GDA_FT_UCP_PLACE_CUDA) {
        if (r->gpu.copy(r->host, r->ctx.base, l->total) != 0) {
            pressure_die(r, "cannot read the region back");
        }
    } else {
        memcpy(r->host, r->ctx.base, l->total);
    }
    if (r->rank == 0) {
        pressure_send(r, r->host + l->dst, theirs_len);
        peer = pressure_recv(r, NULL);
    } else {
        peer = pressure_recv(r, NULL);
        pressure_send(r, r->host + l->dst, theirs_len);
    }
    failed += pressure_verify(r, peer, secs);
    if ((failed != 0) && (r->place == GDA_FT_UCP_PLACE_HOST)) {
        pressure_print_channels(r);
    }
    free(peer);
    pressure_barrier(r);
    return (failed == 0) ? 0 : 1;
}

static void pressure_fini(pressure_rank_t *r)
{
    ucp_request_param_t param = {0};
    void *req;

    gda_ft_ucp_mem_list_destroy(r->ml);
    gda_ft_ucp_device_ep_destroy(r->dev_ep);
    ucp_rkey_destroy(r->rkey);
    param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    param.flags        = UCP_EP_CLOSE_FLAG_FORCE;
    req = ucp_ep_close_nbx(r->ep, &param);
    if (UCS_PTR_IS_PTR(req)) {
        while (ucp_request_check_status(req) == UCS_INPROGRESS) {
            ucp_worker_progress(r->worker);
        }
        ucp_request_free(req);
    }
    gda_ft_ucp_signal_free(r->context, &r->region);
    ucp_worker_destroy(r->worker);
    ucp_cleanup(r->context);
    free(r->host);
}

static int pressure_usage(FILE *f, int rc)
{
    fprintf(f,
        "usage: gda_ft_ucp_pressure [options]\n"
        "  --gpu | --cpu     kernels | CPU threads (default: the GPU where "
        "found)\n"
        "  --blocks B        GPU: CTAs per rank (default 64)\n"
        "  --warps W         GPU: warps per CTA, a poster each (default 8)\n"
        "  --threads N       CPU: posting threads per rank (default 8)\n"
        "  --inflight K      requests each poster keeps in flight, 1..16 "
        "(default: 1 on GPUs, 8 on CPU threads)\n"
        "  --channels C      device channels per endpoint (default 3)\n"
        "  --ring N          WQEBBs per channel path, 64..16384 (default 64)\n"
        "  --deadline T      UCX_GDA_FT_DEADLINE (e.g. 1ms; default: "
        "the transport's)\n"
        "  --seconds S       how long the posters post (default 10)\n"
        "  --flaps F         port failures, both ranks' HCAs in turn "
        "(default 0)\n"
        "  --down-ms D       ... each D ms down (default 300)\n"
        "  --up-ms U         ... after U ms up (default 700)\n"
        "  --max-len BYTES   longest put, 8..65536 (default 65536)\n"
        "  --pause-ms P      both ranks pause P ms without progress before "
        "posting (default 200)\n"
        "  --no-get          no get after each put: its bytes are checked "
        "at the end only\n"
        "  --no-path-ok      NO_PATH is not a failure\n");
    return rc;
}

static unsigned pressure_uint(const char *arg, unsigned min, unsigned max,
                              const char *name)
{
    unsigned value;

    if (gda_ft_prog_parse_uint(arg, min, max, &value) != 0) {
        fprintf(stderr, "gda_ft_ucp_pressure: %s: '%s' is not a number of "
                "%u..%u\n", name, arg, min, max);
        exit(2);
    }
    return value;
}

int main(int argc, char **argv)
{
    static const struct option lopts[] = {
        {"gpu", no_argument, NULL, 'G'},
        {"cpu", no_argument, NULL, 'C'},
        {"blocks", required_argument, NULL, 'b'},
        {"warps", required_argument, NULL, 'w'},
        {"threads", required_argument, NULL, 't'},
        {"inflight", required_argument, NULL, 'k'},
        {"channels", required_argument, NULL, 'c'},
        {"ring", required_argument, NULL, 'r'},
        {"deadline", required_argument, NULL, 'D'},
        {"seconds", required_argument, NULL, 's'},
        {"flaps", required_argument, NULL, 'F'},
        {"down-ms", required_argument, NULL, 'd'},
        {"up-ms", required_argument, NULL, 'u'},
        {"max-len", required_argument, NULL, 'm'},
        {"pause-ms", required_argument, NULL, 'P'},
        {"no-get", no_argument, NULL, 'g'},
        {"no-path-ok", no_argument, NULL, 'N'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}
    };
    pressure_rank_t r;
    int sv[2], c, rc, status, port;
    pid_t child;

    while ((c = getopt_long(argc, argv, "", lopts, NULL)) != -1) {
        switch (c) {
        case 'G': opt.gpu = 1; break;
        case 'C': opt.gpu = 0; break;
        case 'b': opt.blocks = pressure_uint(optarg, 1, 1024, "--blocks");
                  break;
        case 'w': opt.warps = pressure_uint(optarg, 1, 32, "--warps"); break;
        case 't': opt.threads = pressure_uint(optarg, 1, 256, "--threads");
                  break;
        case 'k': opt.inflight = pressure_uint(optarg, 1,
                                               PRESSURE_MAX_INFLIGHT,
                                               "--inflight"); break;
        case 'c': opt.channels = pressure_uint(optarg, 1, 64, "--channels");
                  break;
        case 'r': opt.ring = pressure_uint(optarg, 64, 16384, "--ring");
                  break;
        case 'D': snprintf(opt.deadline, sizeof(opt.deadline), "%s", optarg);
                  break;
        case 's': opt.seconds = pressure_uint(optarg, 1, 3600, "--seconds");
                  break;
        case 'F': opt.flaps = pressure_uint(optarg, 0, 100000, "--flaps");
                  break;
        case 'd': opt.down_ms = pressure_uint(optarg, 1, 600000,
                                              "--down-ms"); break;
        case 'u': opt.up_ms = pressure_uint(optarg, 1, 600000, "--up-ms");
                  break;
        case 'm': opt.max_len = pressure_uint(optarg, 8, PRESSURE_REGION,
                                              "--max-len"); break;
        case 'P': opt.pause_ms = pressure_uint(optarg, 0, 600000,
                                               "--pause-ms"); break;
        case 'g': opt.no_get = 1; break;
        case 'N': opt.no_path_ok = 1; break;
        case 'h': return pressure_usage(stdout, 0);
        default:  return pressure_usage(stderr, 2);
        }
    }
    if ((optind != argc) || ((opt.max_len % 8) != 0)) {
        fprintf(stderr, "gda_ft_ucp_pressure: --max-len is a multiple of 8, "
                "and no operand is taken\n");
        return pressure_usage(stderr, 2);
    }
    if (opt.gpu < 0) {
        opt.gpu = system("nvidia-smi -L >/dev/null 2>&1") == 0;
    }
    if (pressure_posters() > PRESSURE_MAX_POSTERS) {
        fprintf(stderr, "gda_ft_ucp_pressure: at most %u posters per rank\n",
                PRESSURE_MAX_POSTERS);
        return 2;
    }

    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) {
        perror("gda_ft_ucp_pressure: socketpair");
        return 1;
    }
    port  = 40000 + (int)(getpid() % 20000);
    fflush(stdout);
    child = fork();
    if (child < 0) {
        perror("gda_ft_ucp_pressure: fork");
        return 1;
    }
    memset(&r, 0, sizeof(r));
    r.rank = (child == 0) ? 1 : 0;
    r.fd   = sv[r.rank];
    close(sv[1 - r.rank]);
    rc = pressure_rank(&r, port);
    fflush(stdout);
    pressure_fini(&r);
    if (r.rank == 1) {
        return rc;
    }
    if ((waitpid(child, &status, 0) != child) || !WIFEXITED(status) ||
        (WEXITSTATUS(status) != 0)) {
        rc = 1;
    }
    printf("RESULT %s\n", (rc == 0) ? "PASS" : "FAIL");
    return rc;
}
