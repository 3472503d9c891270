/*
 * Exactly once under ring pressure (design §6.3, its invariants): the
 * concurrent device channel compiled for the CPU, with the smallest ring,
 * many threads per channel each keeping several requests in flight (so
 * the ring is full whenever a path switches), deadlines that the software
 * HCA's delays exceed without any fault, and ports of both sides flapping.
 *
 * Every operation is checked as its request completes, the way a user's
 * program depends on it: a put reported OK has its bytes at the target, a
 * get reported OK has the target's bytes, a fetch-add reported OK has
 * written its result slot; at the end, every signal word lies between the
 * OK signals and the OK plus in-doubt ones, the counter between the OK
 * fetch-adds and the OK plus in-doubt ones, every fetched value is
 * distinct and below it, and each put's target holds the last put that
 * was reported OK there (a replay after OK would have overwritten it).
 * Only signals and fetch-adds may end IN_DOUBT; anything else that is not
 * OK (NO_PATH with a path up, ERROR, TIMEOUT) fails the test.
 */
#include "chan_harness.h"
#include "soft_harness.h"
#include "gda_ft_soft.h"
#include "gda_ft_test.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PRESSURE_THREADS   8
#define PRESSURE_WINDOW    8       /* requests a thread keeps in flight */
#define PRESSURE_BLOCK     4096    /* bytes of one window slot's buffers */
#define PRESSURE_MAX_FADDS 65536
#define PRESSURE_SENTINEL  0xeeu   /* a get's buffer before it lands */
#define PRESSURE_WAIT_NS   30000000000ull

/* Operation kinds, in the proportions a thread draws them */
enum {
    PRESSURE_PUT,
    PRESSURE_PUT_SIGNAL,
    PRESSURE_SIGNAL,
    PRESSURE_FETCH_ADD,
    PRESSURE_GET,
    PRESSURE_KINDS
};

static const char *pressure_kind_name[PRESSURE_KINDS] = {
    "put", "put_signal", "signal", "fetch_add", "get"
};

typedef struct pressure_op {
    gda_ft_dev_request_t req;
    unsigned             kind;
    unsigned             iter;
    uint32_t             len;
    int                  live;
} pressure_op_t;

typedef struct pressure_thread {
    chan_world_t  *w;
    unsigned       id;
    unsigned       chan;
    unsigned       seed;
    int           *stop;
    pressure_op_t  win[PRESSURE_WINDOW];
    /* the last put reported OK into each slot's target (iter + 1, len),
     * 0 when unknown */
    unsigned       last_put[PRESSURE_WINDOW];
    uint32_t       last_len[PRESSURE_WINDOW];
    unsigned       posted[PRESSURE_KINDS];
    unsigned       ok[PRESSURE_KINDS];
    unsigned       in_doubt[PRESSURE_KINDS];
    uint64_t      *fetched;
    unsigned       nfetched;
    char           violation[256];
} pressure_thread_t;

typedef struct pressure_params {
    unsigned nchan;
    unsigned wqebb_cnt;
    uint64_t deadline_ns;
    double   seconds;
    double   delay;       /* probability a packet is held back */
    double   delay_time;  /* for this long (seconds) */
    int      flaps;       /* ports of both sides go down and up */
    unsigned seed;
    const gda_ft_chan_peer_ops_t *peer; /* the guardians' peer, NULL: the
                                           harness's */
    unsigned cuda_copy_us; /* != 0: data and words registered as GPU memory,
                              copied by the stand-in CUDA runtime, each
                              copy this late */
} pressure_params_t;

/* Byte at offset off of the target's get area (never the sentinel) */
static uint8_t pressure_get_byte(uint64_t off)
{
    uint8_t b = (uint8_t)((off * 131) ^ (off >> 7));

    return (b == PRESSURE_SENTINEL) ? 0x11 : b;
}

static uint64_t pressure_put_off(const pressure_thread_t *pt, unsigned k)
{
    return (pt->id * PRESSURE_WINDOW + k) * PRESSURE_BLOCK;
}

static uint64_t pressure_get_off(const pressure_thread_t *pt, unsigned k)
{
    return pt->w->params.data_len / 2 + pressure_put_off(pt, k);
}

static uint64_t pressure_result_off(const pressure_thread_t *pt, unsigned k)
{
    return (pt->id * PRESSURE_WINDOW + k) * sizeof(uint64_t);
}

static void pressure_violation(pressure_thread_t *pt, const char *what,
                               const pressure_op_t *op,
                               gda_ft_dev_status_t status)
{
    if (pt->violation[0] == '\0') {
        snprintf(pt->violation, sizeof(pt->violation),
                 "thread %u channel %u: %s %u (%u bytes, request [%lu, %lu))"
                 ": %s (%s)", pt->id, pt->chan, pressure_kind_name[op->kind],
                 op->iter, op->len,
                 (unsigned long)(op->req.end - 1),
                 (unsigned long)op->req.end, what,
                 gda_ft_dev_status_str(status));
    }
}

static unsigned pressure_rand(unsigned *seed)
{
    *seed = *seed * 1103515245u + 12345u;
    return (*seed >> 8) & 0xffffff;
}

/* Posts a new operation into window slot k */
static gda_ft_dev_status_t pressure_post(pressure_thread_t *pt, unsigned k,
                                         unsigned iter)
{
    chan_world_t *w   = pt->w;
    pressure_op_t *op = &pt->win[k];
    unsigned r        = pressure_rand(&pt->seed) % 100;
    uint64_t off      = pressure_put_off(pt, k);
    uint64_t loff     = pressure_result_off(pt, k);
    uint64_t sig_off  = pt->id * sizeof(uint64_t);
    uint32_t j;

    op->kind = (r < 40) ? PRESSURE_PUT : (r < 55) ? PRESSURE_PUT_SIGNAL :
               (r < 70) ? PRESSURE_SIGNAL : (r < 85) ? PRESSURE_FETCH_ADD :
               PRESSURE_GET;
    op->iter = iter;
    op->len  = 8 + pressure_rand(&pt->seed) % (PRESSURE_BLOCK - 8);
    op->live = 1;
    ++pt->posted[op->kind];

    switch (op->kind) {
    case PRESSURE_PUT:
    case PRESSURE_PUT_SIGNAL:
        /* the slot's previous operation is complete: its buffer is free */
        for (j = 0; j < op->len; ++j) {
            w->src[off + j] = chan_pattern_byte(pt->id, iter, j);
        }
        return (op->kind == PRESSURE_PUT) ?
               gda_ft_dev_put_single(&w->ep, &w->ml, CHAN_ELEM_DATA, off, off,
                                     op->len, pt->chan, &op->req) :
               gda_ft_dev_put_signal(&w->ep, &w->ml, CHAN_ELEM_DATA, off, off,
                                     op->len, CHAN_ELEM_SIGNAL, sig_off, 1,
                                     pt->chan, &op->req);
    case PRESSURE_SIGNAL:
        return gda_ft_dev_signal(&w->ep, &w->ml, CHAN_ELEM_SIGNAL, sig_off, 1,
                                 pt->chan, &op->req);
    case PRESSURE_FETCH_ADD:
        op->len = sizeof(uint64_t);
        __atomic_store_n((uint64_t*)((uint8_t*)w->results + loff), UINT64_MAX,
                         __ATOMIC_RELAXED);
        return gda_ft_dev_atomic_fetch_add(&w->ep, &w->ml, CHAN_ELEM_COUNTER,
                                           loff, 0, 1, pt->chan, &op->req);
    default:
        off = pressure_get_off(pt, k);
        memset(w->src + off, PRESSURE_SENTINEL, op->len);
        return gda_ft_dev_get(&w->ep, &w->ml, CHAN_ELEM_DATA, off, off,
                              op->len, pt->chan, &op->req);
    }
}

/* Checks what a completed operation reported against what happened */
static void pressure_check(pressure_thread_t *pt, unsigned k,
                           gda_ft_dev_status_t status)
{
    chan_world_t *w   = pt->w;
    pressure_op_t *op = &pt->win[k];
    uint64_t off      = pressure_put_off(pt, k), value;
    uint32_t j;

    op->live = 0;
    if (status == GDA_FT_DEV_IN_DOUBT) {
        if ((op->kind == PRESSURE_SIGNAL) ||
            (op->kind == PRESSURE_FETCH_ADD) ||
            (op->kind == PRESSURE_PUT_SIGNAL)) {
            ++pt->in_doubt[op->kind];
            if (op->kind == PRESSURE_PUT_SIGNAL) {
                pt->last_put[k] = 0;  /* its data may or may not be there */
            }
            return;
        }
    }
    if (status != GDA_FT_DEV_OK) {
        pressure_violation(pt, "failed with a path up", op, status);
        return;
    }

    ++pt->ok[op->kind];
    if (((op->kind == PRESSURE_SIGNAL) || (op->kind == PRESSURE_PUT_SIGNAL)) &&
        (__atomic_load_n(&w->signals[pt->id], __ATOMIC_ACQUIRE) <
         pt->ok[PRESSURE_SIGNAL] + pt->ok[PRESSURE_PUT_SIGNAL])) {
        /* what completed before it, its own included, has run */
        pressure_violation(pt, "reported OK, the signal word is below the "
                           "OK signals", op, status);
    }
    switch (op->kind) {
    case PRESSURE_PUT:
    case PRESSURE_PUT_SIGNAL:
        for (j = 0; j < op->len; ++j) {
            if (w->dst[off + j] != chan_pattern_byte(pt->id, op->iter, j)) {
                pressure_violation(pt, "reported OK, its bytes are not at "
                                   "the target", op, status);
                break;
            }
        }
        pt->last_put[k] = op->iter + 1;
        pt->last_len[k] = op->len;
        break;
    case PRESSURE_FETCH_ADD:
        value = gda_ft_dev_fetched(&w->ep, (uint8_t*)w->results +
                                   pressure_result_off(pt, k));
        if (value == UINT64_MAX) {
            pressure_violation(pt, "reported OK, its result slot was never "
                               "written", op, status);
        } else if (pt->nfetched < PRESSURE_MAX_FADDS) {
            pt->fetched[pt->nfetched++] = value;
        }
        break;
    case PRESSURE_GET:
        off = pressure_get_off(pt, k);
        for (j = 0; j < op->len; ++j) {
            if (w->src[off + j] != pressure_get_byte(off + j)) {
                pressure_violation(pt, "reported OK, the target's bytes did "
                                   "not arrive", op, status);
                break;
            }
        }
        break;
    default:
        break;
    }
}

/* Waits for window slot k's request; a request that never ends is a
 * violation too */
static void pressure_complete(pressure_thread_t *pt, unsigned k)
{
    pressure_op_t *op = &pt->win[k];
    uint64_t start    = gda_ft_dev_now_ns();
    gda_ft_dev_status_t status;

    if (!op->live) {
        return;
    }
    while ((status = gda_ft_dev_progress(&op->req)) ==
           GDA_FT_DEV_INPROGRESS) {
        if ((gda_ft_dev_now_ns() - start) > PRESSURE_WAIT_NS) {
            pressure_violation(pt, "never completed", op, status);
            op->live = 0;
            return;
        }
    }
    pressure_check(pt, k, status);
}

static void *pressure_run(void *arg)
{
    pressure_thread_t *pt = (pressure_thread_t*)arg;
    gda_ft_dev_status_t status;
    unsigned i, k;

    for (i = 0; !__atomic_load_n(pt->stop, __ATOMIC_ACQUIRE) &&
                (pt->violation[0] == '\0'); ++i) {
        k = i % PRESSURE_WINDOW;
        pressure_complete(pt, k);
        status = pressure_post(pt, k, i);
        if (status != GDA_FT_DEV_OK) {
            pressure_violation(pt, "could not be posted", &pt->win[k],
                               status);
            pt->win[k].live = 0;
        }
    }
    for (k = 0; k < PRESSURE_WINDOW; ++k) {
        pressure_complete(pt, k);
    }
    return NULL;
}

/* Ports of both sides go down and up, one at a time (one path is always
 * up), for random spans around the deadline */
typedef struct pressure_flapper {
    chan_world_t *w;
    uint64_t      deadline_ns;
    unsigned      seed;
    int          *stop;
    unsigned      flaps;
} pressure_flapper_t;

static void pressure_sleep_ns(uint64_t ns)
{
    usleep((useconds_t)(ns / 1000) + 1);
}

static void *pressure_flap(void *arg)
{
    pressure_flapper_t *f = (pressure_flapper_t*)arg;
    unsigned dev;

    while (!__atomic_load_n(f->stop, __ATOMIC_ACQUIRE)) {
        pressure_sleep_ns(f->deadline_ns *
                          (4 + pressure_rand(&f->seed) % 16));
        dev = pressure_rand(&f->seed) % 4;  /* A's or B's primary or backup */
        GDA_FT_ASSERT_OK(soft_port_set_up(f->w->dev[dev], 1, 0));
        pressure_sleep_ns(f->deadline_ns *
                          (1 + pressure_rand(&f->seed) % 8));
        GDA_FT_ASSERT_OK(soft_port_set_up(f->w->dev[dev], 1, 1));
        ++f->flaps;
    }
    return NULL;
}

/* The end of the run: every signal word, the counter and the fetched
 * values, and the last OK put of every slot */
static void pressure_verify(chan_world_t *w, pressure_thread_t *pt,
                            unsigned n)
{
    unsigned t, k, i, total = 0, ok = 0, doubt = 0, sig_ok, sig_doubt;
    uint64_t *vals, counter = w->counters[0], off;
    uint32_t j;

    for (t = 0; t < n; ++t) {
        if (pt[t].violation[0] != '\0') {
            GDA_FT_FAIL("%s", pt[t].violation);
        }
        sig_ok    = pt[t].ok[PRESSURE_SIGNAL] + pt[t].ok[PRESSURE_PUT_SIGNAL];
        sig_doubt = pt[t].in_doubt[PRESSURE_SIGNAL] +
                    pt[t].in_doubt[PRESSURE_PUT_SIGNAL];
        if ((w->signals[t] < sig_ok) ||
            (w->signals[t] > sig_ok + sig_doubt)) {
            GDA_FT_FAIL("thread %u: signal word %lu, %u signals OK and %u "
                        "in doubt", t, (unsigned long)w->signals[t], sig_ok,
                        sig_doubt);
        }
        for (k = 0; k < PRESSURE_WINDOW; ++k) {
            if (pt[t].last_put[k] == 0) {
                continue;
            }
            off = pressure_put_off(&pt[t], k);
            for (j = 0; j < pt[t].last_len[k]; ++j) {
                if (w->dst[off + j] !=
                    chan_pattern_byte(t, pt[t].last_put[k] - 1, j)) {
                    GDA_FT_FAIL("thread %u slot %u: put %u, the last one "
                                "reported OK there, was overwritten after "
                                "its OK (byte %u)", t, k,
                                pt[t].last_put[k] - 1, j);
                }
            }
        }
        total += pt[t].nfetched;
        ok    += pt[t].ok[PRESSURE_FETCH_ADD];
        doubt += pt[t].in_doubt[PRESSURE_FETCH_ADD];
    }

    if ((counter < ok) || (counter > ok + doubt)) {
        GDA_FT_FAIL("counter %lu, %u fetch-adds OK and %u in doubt",
                    (unsigned long)counter, ok, doubt);
    }
    vals = malloc((total + 1) * sizeof(*vals));
    for (t = 0, total = 0; t < n; ++t) {
        memcpy(vals + total, pt[t].fetched,
               pt[t].nfetched * sizeof(*vals));
        total += pt[t].nfetched;
    }
    qsort(vals, total, sizeof(*vals), chan_cmp_u64);
    for (i = 0; i < total; ++i) {
        if ((vals[i] >= counter) || ((i > 0) && (vals[i] == vals[i - 1]))) {
            GDA_FT_FAIL("fetched value %lu twice or beyond the counter %lu",
                        (unsigned long)vals[i], (unsigned long)counter);
        }
    }
    free(vals);
}

/* In-doubt outcomes the requests saw, all kinds together */
static unsigned pressure_sum_in_doubt(const pressure_thread_t *pt, unsigned n)
{
    unsigned t, k, sum = 0;

    for (t = 0; t < n; ++t) {
        for (k = 0; k < PRESSURE_KINDS; ++k) {
            sum += pt[t].in_doubt[k];
        }
    }
    return sum;
}

static void pressure_print(chan_world_t *w, pressure_thread_t *pt,
                           unsigned n, unsigned flaps)
{
    unsigned posted[PRESSURE_KINDS] = {0}, doubt[PRESSURE_KINDS] = {0};
    unsigned t, k;

    for (t = 0; t < n; ++t) {
        for (k = 0; k < PRESSURE_KINDS; ++k) {
            posted[k] += pt[t].posted[k];
            doubt[k]  += pt[t].in_doubt[k];
        }
    }
    for (k = 0; k < PRESSURE_KINDS; ++k) {
        printf("%s %u (in doubt %u)%s", pressure_kind_name[k], posted[k],
               doubt[k], (k + 1 < PRESSURE_KINDS) ? ", " : "\n");
    }
    printf("flaps %u switches %u failbacks %u replays %u resolved %u "
           "confirmed %u in doubt %u no_path %u\n", flaps,
           CHAN_WORLD_SUM(w, switches), CHAN_WORLD_SUM(w, failbacks),
           CHAN_WORLD_SUM(w, replays), CHAN_WORLD_SUM(w, resolved),
           CHAN_WORLD_SUM(w, confirmed), CHAN_WORLD_SUM(w, in_doubt),
           CHAN_WORLD_SUM(w, no_path));
}

/* What one world's posters did: the checks at the end of the run */
static void pressure_verify_world(chan_world_t *w, pressure_thread_t *pt,
                                  unsigned flaps)
{
    unsigned c;

    pressure_print(w, pt, PRESSURE_THREADS, flaps);
    pressure_verify(w, pt, PRESSURE_THREADS);
    /* the run did what it is for: paths switched under a full ring */
    GDA_FT_ASSERT(CHAN_WORLD_SUM(w, switches) > 0);
    GDA_FT_ASSERT_EQ(CHAN_WORLD_SUM(w, no_path), 0);
    /* every failure reached its request */
    GDA_FT_ASSERT_EQ(CHAN_WORLD_SUM(w, in_doubt),
                     pressure_sum_in_doubt(pt, PRESSURE_THREADS));
    for (c = 0; c < w->params.nchan; ++c) {
        GDA_FT_ASSERT_EQ(w->chans[c].outcomes_lost, 0);
    }
}

/*
 * Two worlds on the same four HCAs, one posting each way: every port
 * carries requests and answers of both, a flap hits both, and each side's
 * guardian fences and re-arms the far end of its paths while the other
 * side posts on its own QPs of the same ports.
 */
static void pressure_run_world(const pressure_params_t *pp)
{
    pressure_thread_t *pt = calloc(2 * PRESSURE_THREADS, sizeof(*pt));
    uint64_t scale        = chan_world_time_scale();
    pthread_t th[2 * PRESSURE_THREADS], flap_th;
    gda_ft_soft_fault_t fault;
    chan_world_params_t params;
    pressure_flapper_t flapper;
    chan_world_t *w           = calloc(2, sizeof(*w));
    int stop                  = 0;
    unsigned t, d;
    uint64_t off;

    GDA_FT_ASSERT((pt != NULL) && (w != NULL));
    chan_world_default_params(&params);
    params.nchan       = pp->nchan;
    params.wqebb_cnt   = pp->wqebb_cnt;
    params.deadline_ns = pp->deadline_ns * scale;
    params.max_chunk   = 1024;   /* a 4 KiB put takes four WQEBBs */
    if (pp->cuda_copy_us != 0) {
        (void)soft_fake_cudart_load(pp->cuda_copy_us);
        params.mem.data.type  = GDA_FT_HCA_MEM_CUDA;
        params.mem.words.type = GDA_FT_HCA_MEM_CUDA;
    }
    /* the HCA's retransmission stays slower than the deadline: a packet
     * held back stalls the path for longer than it allows */
    params.timeout     = chan_world_scaled_timeout(params.timeout);
    for (d = 0; d < 2; ++d) {
        params.reverse_of = (d == 0) ? NULL : &w[0];
        chan_world_init(&w[d], &params);
        for (off = params.data_len / 2; off < params.data_len; ++off) {
            w[d].dst[off] = pressure_get_byte(off);
        }
    }
    memset(&fault, 0, sizeof(fault));
    if (pp->delay > 0) {
        fault.delay      = pp->delay;
        fault.delay_time = pp->delay_time * scale;
        for (d = 0; d < 4; ++d) {
            GDA_FT_ASSERT_OK(soft_port_set_fault(w[0].dev[d], 1,
                                                        &fault));
        }
    }
    w[0].guard_peer = pp->peer;
    w[1].guard_peer = pp->peer;
    chan_world_guard_start(&w[0]);
    chan_world_guard_start(&w[1]);

    for (t = 0; t < 2 * PRESSURE_THREADS; ++t) {
        pt[t].w       = &w[t / PRESSURE_THREADS];
        pt[t].id      = t % PRESSURE_THREADS;
        pt[t].chan    = t % pp->nchan;
        pt[t].seed    = pp->seed * 31 + t;
        pt[t].stop    = &stop;
        pt[t].fetched = calloc(PRESSURE_MAX_FADDS, sizeof(uint64_t));
        GDA_FT_ASSERT(pt[t].fetched != NULL);
        GDA_FT_ASSERT_EQ(pthread_create(&th[t], NULL, pressure_run, &pt[t]),
                         0);
    }
    memset(&flapper, 0, sizeof(flapper));
    flapper.w           = &w[0];   /* all four HCAs */
    flapper.deadline_ns = params.deadline_ns;
    flapper.seed        = pp->seed;
    flapper.stop        = &stop;
    if (pp->flaps) {
        GDA_FT_ASSERT_EQ(pthread_create(&flap_th, NULL, pressure_flap,
                                        &flapper), 0);
    }

    /* the run, and then as long again at most until both worlds switched:
     * a path stalls only when a packet held back meets a full window,
     * which a slow or busy machine (a sanitizer build) may not bring about
     * in one run; packets are then held back more often, up to one in 32 */
    usleep((useconds_t)(pp->seconds * 1e6));
    for (t = 0; (t < 100) && ((CHAN_WORLD_SUM(&w[0], switches) == 0) ||
                              (CHAN_WORLD_SUM(&w[1], switches) == 0));
         ++t) {
        if ((pp->delay > 0) && ((t % 10) == 9) && (fault.delay < 1.0 / 32)) {
            fault.delay *= 2;
            for (d = 0; d < 4; ++d) {
                GDA_FT_ASSERT_OK(soft_port_set_fault(w[0].dev[d], 1,
                                                     &fault));
            }
        }
        usleep((useconds_t)(pp->seconds * 1e4));
    }
    __atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
    if (pp->flaps) {
        pthread_join(flap_th, NULL);
    }
    for (t = 0; t < 2 * PRESSURE_THREADS; ++t) {
        pthread_join(th[t], NULL);
    }

    for (d = 0; d < 2; ++d) {
        printf("%s: ", (d == 0) ? "A to B" : "B to A");
        pressure_verify_world(&w[d], &pt[d * PRESSURE_THREADS],
                              flapper.flaps);
    }

    for (t = 0; t < 2 * PRESSURE_THREADS; ++t) {
        free(pt[t].fetched);
    }
    free(pt);
    chan_world_fini(&w[1]);   /* on w[0]'s HCAs */
    chan_world_fini(&w[0]);
    free(w);
}

static unsigned pressure_seed(void)
{
    const char *seed = getenv("GDA_FT_TEST_SEED");
    unsigned value   = (seed != NULL) ? (unsigned)atoi(seed) : 1;

    printf("seed %u (GDA_FT_TEST_SEED)\n", value);
    return value;
}

/* No fault: packets held back for two deadlines make paths switch while
 * every link is up, and late completions arrive during the switches */
GDA_FT_TEST_TIMEOUT(dev_chan_pressure, full_rings_false_switches, 120)
{
    pressure_params_t pp = {2, 64, 3000000ull, 4.0, 0.002, 0.006, 0,
                            pressure_seed(), NULL};

    pressure_run_world(&pp);
}

/* The same with data, signals and results in GPU memory: every message
 * sent read through the CUDA runtime while the engine goes on, every
 * write and atomic placed through it */
GDA_FT_TEST_TIMEOUT(dev_chan_pressure, full_rings_false_switches_gpu_data,
                    120)
{
    pressure_params_t pp = {2, 64, 3000000ull, 4.0, 0.002, 0.006, 0,
                            pressure_seed(), NULL, 20};

    pressure_run_world(&pp);
}

/* The same with every GPU copy 300 us late: the software HCA serves
 * full-ring replays later than the 64 deadlines a last path is sat out,
 * while the peer answers. Such a channel used to give both paths up with
 * both links up (NO_PATH); it keeps its path now. One engine thread per
 * device, each spinning its copies on stand-in streams of its own: eight
 * spinning threads on a 2-core machine starve the engines until paths
 * time out, a get's chunk fails alone on a path the HCA gave up retrying,
 * and posts wait for rings that stop draining. Those used to end a get
 * reported OK without its first chunk's bytes, a get failed with ERROR
 * with both links up, and posts given up with TIMEOUT. */
GDA_FT_TEST_TIMEOUT(dev_chan_pressure, slow_gpu_copies_lose_no_path, 120)
{
    pressure_params_t pp = {2, 64, 3000000ull, 4.0, 0.002, 0.006, 0,
                            pressure_seed(), NULL, 300};

    setenv("UCX_GDA_FT_SOFT_THREADS", "4", 1);
    pressure_run_world(&pp);
}

/* full_rings_false_switches with ports of both sides flapping, one at a
 * time */
GDA_FT_TEST_TIMEOUT(dev_chan_pressure, full_rings_through_flaps, 120)
{
    pressure_params_t pp = {2, 64, 3000000ull, 4.0, 0.002, 0.006, 1,
                            pressure_seed(), NULL};

    pressure_run_world(&pp);
}

/*
 * A peer whose every other word about a path left comes from another PSN
 * space: what a stale question that re-armed its end, or an answer to
 * another question, reports. A word that cannot be about the window is
 * no word: puts are replayed, signals and fetch-adds end in doubt, and
 * nothing reported OK is lost (compared by chance with the window's PSNs,
 * such a word settled WQEs that never ran as executed).
 */
static unsigned pressure_words;

static ucs_status_t pressure_foreign_fence(void *arg, gda_ft_chan_host_t *ch,
                                           unsigned path, unsigned why,
                                           uint32_t *epsn_p)
{
    ucs_status_t status = chan_peer_ops.fence(arg, ch, path, why, epsn_p);

    if ((status == UCS_OK) &&
        (__atomic_fetch_add(&pressure_words, 1, __ATOMIC_RELAXED) & 1)) {
        *epsn_p = (*epsn_p + 0x400000) & 0xffffff;
    }
    return status;
}

GDA_FT_TEST_TIMEOUT(dev_chan_pressure, words_of_another_psn_space_settle_nothing,
                    120)
{
    static gda_ft_chan_peer_ops_t peer;
    pressure_params_t pp = {2, 64, 3000000ull, 4.0, 0.002, 0.006, 0,
                            pressure_seed(), &peer};

    peer       = chan_peer_ops;
    peer.fence = pressure_foreign_fence;
    pressure_words = 0;
    pressure_run_world(&pp);
    printf("%u words, every other one foreign\n", pressure_words);
    GDA_FT_ASSERT(pressure_words >= 2);
}
