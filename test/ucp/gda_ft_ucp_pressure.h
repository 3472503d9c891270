/*
 * gda_ft_ucp_pressure: two ranks, connected with UCP over UCX_TLS=gda_ft,
 * post at each other through device endpoints and memory lists built with
 * src/ucp_ext, the way an application does: puts of 8 B to 64 KiB,
 * put_signal, signal and fetch-add, many posters per channel, rings that
 * fill, deadlines short enough to switch paths without a fault, ports of
 * both ranks failing in turn. Every operation reported OK is proven: a
 * put's bytes are read back with a get, a fetch-add's result slot must be
 * written; at the end each rank checks the peer's memory against what it
 * was told (signal words, counters, fetched values, each region's last
 * put).
 *
 * The posters' code is written once: a CUDA kernel runs it (one poster per
 * warp, libgda_ft_ucp_pressure_gpu.so), CPU threads run it elsewhere.
 */
#ifndef GDA_FT_UCP_PRESSURE_H_
#define GDA_FT_UCP_PRESSURE_H_

#include "gda_ft_device_api.h"

#define PRESSURE_REGION     65536u  /* a poster's put area, and longest put */
#define PRESSURE_COUNTERS   8u      /* fetch-add words, poster % 8 */
#define PRESSURE_UNWRITTEN  0xffffffffffffffffull
#define PRESSURE_REGAIN_NS  20000000000ull  /* wait for a path back */

/* The memory list's elements */
enum {
    PRESSURE_ELEM_DATA,     /* our src and chk areas; the peer's dst area */
    PRESSURE_ELEM_SIGNAL,   /* the peer's signal words */
    PRESSURE_ELEM_COUNTER,  /* our result slots; the peer's counters */
    PRESSURE_NUM_ELEMS
};

/* What an operation is, by poster and iteration */
enum {
    PRESSURE_OP_PUT,
    PRESSURE_OP_PUT_SIGNAL,
    PRESSURE_OP_SIGNAL,
    PRESSURE_OP_FETCH_ADD,
    PRESSURE_OP_PUT_LARGE,  /* another put, as long as its poster allows */
    PRESSURE_NUM_OPS
};

/* An operation's end, as its poster saw it (outcome table) */
enum {
    PRESSURE_NOT_POSTED = 0,
    PRESSURE_OK         = 1,
    PRESSURE_DOUBT      = 2, /* in doubt or NO_PATH: ran once or not */
};

/* Reported OK, and yet (a poster's violation) */
enum {
    PRESSURE_VIOLATION_NONE     = 0,
    PRESSURE_VIOLATION_PUT_LOST = 1, /* a get after its OK read other bytes */
    PRESSURE_VIOLATION_FADD     = 2  /* a fetch-add's result never written */
};

/* One rank's memory, offsets from its base (the same at both ranks). A
 * slot is REGION bytes: a poster has one per request it keeps in flight */
typedef struct pressure_layout {
    uint64_t src;      /* slots: what puts send */
    uint64_t chk;      /* slots: what gets read back */
    uint64_t dst;      /* slots: where the peer's puts land */
    uint64_t sig;      /* posters x 8: the peer's signals */
    uint64_t cnt;      /* COUNTERS x 8: the peer's fetch-adds */
    uint64_t res;      /* posters x iters x 8: our fetch-adds' results */
    uint64_t outcome;  /* posters x iters bytes: PRESSURE_OK, ... */
    uint64_t out;      /* posters x pressure_out_t */
    uint64_t total;
} pressure_layout_t;

/* What a poster saw */
typedef struct pressure_out {
    uint32_t status;     /* GDA_FT_DEV_OK, or the failure it stopped on */
    uint32_t violation;  /* PRESSURE_VIOLATION_* */
    uint32_t bad_iter;   /* where */
    uint32_t iters;      /* operations posted */
    uint32_t no_path;    /* operations that ended NO_PATH (then went on) */
    uint32_t sig_ok;     /* signals (put_signal, signal) that ended OK */
    uint32_t sig_doubt;  /* ... in doubt or NO_PATH */
    uint32_t gets;       /* puts read back and compared */
} pressure_out_t;

#define PRESSURE_MAX_INFLIGHT 16

typedef struct pressure_ctx {
    const gda_ft_dev_endpoint_t *ep;
    const gda_ft_dev_mem_list_t *ml;
    uint8_t                     *base;
    pressure_layout_t            layout;
    unsigned                     posters;
    unsigned                     inflight;  /* requests per poster */
    unsigned                     iters;     /* at most, per poster */
    unsigned                     max_len;   /* longest put */
    unsigned                     rank;
    int                          read_back; /* a get after each put */
    const volatile int          *stop;      /* host memory, mapped */
} pressure_ctx_t;

GDA_FT_HOST_DEV_FUNC void pressure_layout(pressure_layout_t *l,
                                          unsigned posters, unsigned inflight,
                                          unsigned iters)
{
    uint64_t area = (uint64_t)posters * inflight * PRESSURE_REGION;

    l->src     = 0;
    l->chk     = l->src + area;
    l->dst     = l->chk + area;
    l->sig     = l->dst + area;
    l->cnt     = l->sig + (uint64_t)posters * 8;
    l->res     = l->cnt + PRESSURE_COUNTERS * 8;
    l->outcome = l->res + (uint64_t)posters * iters * 8;
    l->out     = (l->outcome + (uint64_t)posters * iters + 63) & ~63ull;
    l->total   = l->out + (uint64_t)posters * sizeof(pressure_out_t);
}

/* Offset of the slot of (poster, it) in an area */
GDA_FT_HOST_DEV_FUNC uint64_t pressure_slot(const pressure_ctx_t *c,
                                            unsigned poster, unsigned it)
{
    return ((uint64_t)poster * c->inflight + it % c->inflight) *
           PRESSURE_REGION;
}

GDA_FT_HOST_DEV_FUNC unsigned pressure_op(unsigned poster, unsigned it)
{
    return (poster + it) % PRESSURE_NUM_OPS;
}

/* A put's length: 8 B to max_len, a power of 2 that moves with the
 * iteration */
GDA_FT_HOST_DEV_FUNC uint32_t pressure_put_len(unsigned poster, unsigned it,
                                               unsigned max_len)
{
    uint32_t len = 8u << ((it * 5 + poster) % 14);

    if (pressure_op(poster, it) == PRESSURE_OP_PUT_LARGE) {
        len = max_len;
    }
    return (len > max_len) ? max_len : len;
}

/* Word k of the put of (rank, poster, it): new in every iteration */
GDA_FT_HOST_DEV_FUNC uint64_t pressure_word(unsigned rank, unsigned poster,
                                            unsigned it, uint32_t k)
{
    uint64_t x = ((uint64_t)rank << 56) ^ ((uint64_t)poster << 36) ^
                 ((uint64_t)it << 16) ^ k;

    x ^= x >> 31;
    x *= 0x9e3779b97f4a7c15ull;
    return x ^ (x >> 29);
}

GDA_FT_HOST_DEV_FUNC int pressure_is_signal(unsigned op)
{
    return (op == PRESSURE_OP_PUT_SIGNAL) || (op == PRESSURE_OP_SIGNAL);
}

GDA_FT_HOST_DEV_FUNC int pressure_is_put(unsigned op)
{
    return (op != PRESSURE_OP_SIGNAL) && (op != PRESSURE_OP_FETCH_ADD);
}

/* Waits for a request's end: OK, IN_DOUBT, NO_PATH, ... */
GDA_FT_DEV_FUNC gda_ft_dev_status_t
pressure_wait(gda_ft_dev_status_t posted, gda_ft_dev_request_t *req)
{
    gda_ft_dev_status_t status = posted;

    while (status == GDA_FT_DEV_OK) {
        status = gda_ft_dev_progress(req);
        if (status != GDA_FT_DEV_INPROGRESS) {
            return status;
        }
        status = GDA_FT_DEV_OK;
        gda_ft_cpu_relax();
    }
    return status;
}

/*
 * After NO_PATH, what a program that goes on does: waits until its
 * channel took a path back (the failure reported once by a quiet, then
 * OK). OK once it has; NO_PATH when it did not within REGAIN_NS.
 */
GDA_FT_DEV_FUNC gda_ft_dev_status_t
pressure_await_regain(const gda_ft_dev_endpoint_t *ep, unsigned channel)
{
    uint64_t start = gda_ft_dev_now_ns();
    gda_ft_dev_status_t status;

    do {
        status = gda_ft_dev_quiet(ep, channel, 1000000000ull);
        if ((status != GDA_FT_DEV_NO_PATH) &&
            (status != GDA_FT_DEV_IN_DOUBT) &&
            (status != GDA_FT_DEV_TIMEOUT)) {
            return status;
        }
    } while ((gda_ft_dev_now_ns() - start) < PRESSURE_REGAIN_NS);
    return GDA_FT_DEV_NO_PATH;
}

/* The put of (poster, it) read back into its chk slot: 1 when its bytes
 * are there, 0 when other bytes are, -1 when the get did not end OK */
GDA_FT_DEV_FUNC int pressure_read_back(const pressure_ctx_t *c,
                                       unsigned poster, unsigned it,
                                       uint32_t len, unsigned channel)
{
    uint64_t off = pressure_slot(c, poster, it);
    const volatile uint64_t *chk;
    gda_ft_dev_request_t req;
    uint32_t k;

    if (pressure_wait(gda_ft_dev_get(c->ep, c->ml, PRESSURE_ELEM_DATA,
                                     c->layout.chk + off, off, len, channel,
                                     &req),
                      &req) != GDA_FT_DEV_OK) {
        return -1;
    }
    chk = (const volatile uint64_t*)(c->base + c->layout.chk + off);
    for (k = 0; k < len / 8; ++k) {
        if (chk[k] != pressure_word(c->rank, poster, it, k)) {
            return 0;
        }
    }
    return 1;
}

/* Posts operation it of poster; its status as posted */
GDA_FT_DEV_FUNC gda_ft_dev_status_t
pressure_post(const pressure_ctx_t *c, unsigned poster, unsigned it,
              unsigned channel, gda_ft_dev_request_t *req)
{
    const gda_ft_dev_endpoint_t *ep = c->ep;
    unsigned op   = pressure_op(poster, it);
    uint32_t len  = pressure_put_len(poster, it, c->max_len);
    uint64_t off  = pressure_slot(c, poster, it);
    uint64_t loff = ((uint64_t)poster * c->iters + it) * 8;
    uint64_t *src = (uint64_t*)(c->base + c->layout.src + off);
    uint32_t k;

    if (pressure_is_put(op)) {
        for (k = 0; k < len / 8; ++k) {
            src[k] = pressure_word(c->rank, poster, it, k);
        }
    }
    switch (op) {
    case PRESSURE_OP_PUT_SIGNAL:
        return gda_ft_dev_put_signal(ep, c->ml, PRESSURE_ELEM_DATA, off, off,
                                     len, PRESSURE_ELEM_SIGNAL,
                                     (uint64_t)poster * 8, 1, channel, req);
    case PRESSURE_OP_SIGNAL:
        return gda_ft_dev_signal(ep, c->ml, PRESSURE_ELEM_SIGNAL,
                                 (uint64_t)poster * 8, 1, channel, req);
    case PRESSURE_OP_FETCH_ADD:
        /* the post's fence orders this before the HCA's write */
        *(volatile uint64_t*)(c->base + c->layout.res + loff) =
                PRESSURE_UNWRITTEN;
        return gda_ft_dev_atomic_fetch_add(ep, c->ml, PRESSURE_ELEM_COUNTER,
                                           loff,
                                           (poster % PRESSURE_COUNTERS) * 8,
                                           1, channel, req);
    default:
        return gda_ft_dev_put_single(ep, c->ml, PRESSURE_ELEM_DATA, off, off,
                                     len, channel, req);
    }
}

/*
 * Waits for operation it of poster and proves it when it ended OK.
 * Returns OK to go on (NO_PATH: once the channel has a path again), or the
 * failure or violation the poster stops on.
 */
GDA_FT_DEV_FUNC gda_ft_dev_status_t
pressure_settle(const pressure_ctx_t *c, unsigned poster, unsigned it,
                unsigned channel, gda_ft_dev_status_t posted,
                gda_ft_dev_request_t *req, pressure_out_t *o)
{
    uint8_t *outcome = c->base + c->layout.outcome +
                       (uint64_t)poster * c->iters + it;
    unsigned op      = pressure_op(poster, it);
    gda_ft_dev_status_t status = pressure_wait(posted, req);
    const volatile uint64_t *result;
    int back;

    if (status == GDA_FT_DEV_OK) {
        *outcome  = PRESSURE_OK;
        o->sig_ok += pressure_is_signal(op);
        if (op == PRESSURE_OP_FETCH_ADD) {
            result = (const volatile uint64_t*)(c->base + c->layout.res +
                     ((uint64_t)poster * c->iters + it) * 8);
            if (*result == PRESSURE_UNWRITTEN) {
                o->violation = PRESSURE_VIOLATION_FADD;
            }
        } else if (pressure_is_put(op) && c->read_back) {
            back = pressure_read_back(c, poster, it,
                                      pressure_put_len(poster, it,
                                                       c->max_len),
                                      channel);
            o->gets += (back >= 0);
            if (back == 0) {
                o->violation = PRESSURE_VIOLATION_PUT_LOST;
            } else if (back < 0) {
                status = GDA_FT_DEV_NO_PATH;   /* the get's end */
            }
        }
        if (o->violation != PRESSURE_VIOLATION_NONE) {
            o->bad_iter = it;
            return GDA_FT_DEV_ERROR;
        }
    } else if ((status == GDA_FT_DEV_IN_DOUBT) ||
               (status == GDA_FT_DEV_NO_PATH)) {
        *outcome      = PRESSURE_DOUBT;
        o->sig_doubt += pressure_is_signal(op);
    } else {
        *outcome = PRESSURE_DOUBT;
        return status;   /* ERROR, TIMEOUT, PEER_GONE */
    }
    if (status == GDA_FT_DEV_NO_PATH) {
        ++o->no_path;
        return pressure_await_regain(c->ep, channel);
    }
    return GDA_FT_DEV_OK;
}

/*
 * One poster: up to `inflight` operations in flight on channel poster %
 * channels, each proven when it ends OK; NO_PATH counts the operation in
 * doubt and goes on once the channel has a path again.
 */
GDA_FT_DEV_FUNC void pressure_poster(const pressure_ctx_t *c, unsigned poster)
{
    unsigned channel = poster % c->ep->num_channels;
    pressure_out_t *out = (pressure_out_t*)(c->base + c->layout.out) +
                          poster;
    gda_ft_dev_status_t posted[PRESSURE_MAX_INFLIGHT];
    gda_ft_dev_request_t req[PRESSURE_MAX_INFLIGHT];
    gda_ft_dev_status_t status = GDA_FT_DEV_OK;
    pressure_out_t o = {0};
    unsigned it, done, i;

    for (it = 0; (it < c->iters) && !*c->stop; ++it) {
        if (it >= c->inflight) {
            done   = it - c->inflight;
            i      = done % c->inflight;
            status = pressure_settle(c, poster, done, channel, posted[i],
                                     &req[i], &o);
            if (status != GDA_FT_DEV_OK) {
                o.bad_iter = done;
                break;
            }
        }
        i         = it % c->inflight;
        posted[i] = pressure_post(c, poster, it, channel, &req[i]);
    }
    done = (it > c->inflight) ? it - c->inflight : 0;
    if (status != GDA_FT_DEV_OK) {
        ++done;   /* the one it stopped on was settled */
    }
    for (; (status == GDA_FT_DEV_OK) && (done < it); ++done) {
        i          = done % c->inflight;
        status     = pressure_settle(c, poster, done, channel, posted[i],
                                     &req[i], &o);
        o.bad_iter = done;
    }
    /* a poster that stopped leaves what it still had in flight unread:
     * each may run or not */
    for (; done < it; ++done) {
        c->base[c->layout.outcome + (uint64_t)poster * c->iters + done] =
                PRESSURE_DOUBT;
        o.sig_doubt += pressure_is_signal(pressure_op(poster, done));
    }
    if (status == GDA_FT_DEV_OK) {
        status = gda_ft_dev_quiet(c->ep, channel, 0);
        if (status == GDA_FT_DEV_NO_PATH) {
            ++o.no_path;
            status = pressure_await_regain(c->ep, channel);
        }
        if (status == GDA_FT_DEV_IN_DOUBT) {
            status = GDA_FT_DEV_OK;   /* counted where its request saw it */
        }
    }
    o.status = status;
    o.iters  = it;
    *out     = o;
}

#endif
