/*
 * DeepEP-style MoE dispatch and combine over gda_ft's device API, written
 * once: CUDA threads run these functions in moe_gpu.cu, CPU threads run
 * them in moe_rank.c, phase by phase (moe_phase).
 *
 * Every rank holds E experts; each of its T tokens per iteration goes to
 * its top-k experts (from a seeded RNG: every rank can replay any rank's
 * routing, which the host turns into this iteration's plan). An iteration:
 *
 *  1. dispatch: each token vector is put into the receive slot of each of
 *     its experts; then one signal per (expert, source rank) adds the
 *     token count + 1, on the channel that carried those tokens, so that
 *     it lands after them;
 *  2. every rank waits for its E x N dispatch signals and checks counts;
 *  3. each expert computes, a deterministic function of the token;
 *  4. combine: each output is put back into the source's slot for
 *     (token, k), on the expert's channel; the last one of each (expert,
 *     source) goes with put_signal, whose signal adds the result count + 1
 *     after them (an expert with nothing for a source signals 1);
 *  5. every rank waits for its N x E combine signals, checks counts, and
 *     checks every result against the expert function of its own token.
 *
 * Signal words alternate between two banks by iteration parity; a rank
 * clears a bank once its iteration is over, which no peer can be ahead of
 * by two.
 *
 * A rank that dies is masked: once the transport gives it up (its state
 * GONE, gda_ft_dev_peer_state), posts to it return PEER_GONE at once and
 * waits for its signals too. Whoever meets that sets the rank's bit in
 * this rank's gone word for the iteration; our tokens routed to its
 * experts count as masked, not checked and not lost, and every other
 * token is checked as ever. The word is cleared with the banks: each
 * iteration finds its gone ranks anew (at once, while they stay gone).
 */
#ifndef MOE_H_
#define MOE_H_

#include "gda_ft_device_api.h"

#define MOE_MAX_RANKS   8
#define MOE_MAX_EXPERTS 16      /* per rank */
#define MOE_MAX_TOPK    8
#define MOE_MAX_TOKENS  512     /* per rank and iteration */


typedef uint16_t moe_elem_t;  /* bf16-sized: the check is exact integers */

/* Elements of the memory list to each peer */
enum {
    MOE_ELEM_DISPATCH = 0, /* our tokens -> the peer's receive slots */
    MOE_ELEM_DSIG     = 1, /* -> the peer's dispatch signal words */
    MOE_ELEM_COMBINE  = 2, /* our expert outputs -> the peer's result slots */
    MOE_ELEM_CSIG     = 3, /* -> the peer's combine signal words */
    MOE_NUM_ELEMS
};

/* Byte offsets in every rank's region */
typedef struct moe_layout {
    uint64_t tokens;  /* [T][H] our tokens */
    uint64_t recv;    /* [E][N][T][H] tokens our experts received */
    uint64_t out;     /* [E][N][T][H] our experts' outputs */
    uint64_t back;    /* [T][K][H] the outputs for our tokens */
    uint64_t dsig;    /* [2][E][N] dispatch signal words */
    uint64_t csig;    /* [2][N * E] combine signal words, by global
                         expert */
    uint64_t gone;    /* ranks masked this iteration: bit r */
    uint64_t total;
} moe_layout_t;

/* Where token (t, k) goes, and where an expert's slot came from */
typedef struct moe_route {
    uint16_t expert;  /* global: owner = expert / E */
    uint16_t slot;    /* in the owner's receive slots for (expert, us) */
} moe_route_t;

typedef struct moe_origin {
    uint16_t token;
    uint16_t k;
} moe_origin_t;

/* The iteration's plan, from the routing of every rank */
typedef struct moe_plan {
    moe_route_t  send[MOE_MAX_TOKENS * MOE_MAX_TOPK]; /* [T][K]: ours */
    uint16_t     sent[MOE_MAX_RANKS * MOE_MAX_EXPERTS]; /* [N * E]: our
                                                 tokens for each expert */
    uint16_t     recv_count[MOE_MAX_EXPERTS * MOE_MAX_RANKS]; /* [E][N] */
    moe_origin_t origin[MOE_MAX_EXPERTS * MOE_MAX_RANKS * MOE_MAX_TOKENS];
                                              /* [E][N][T] */
} moe_plan_t;

/* What the posters of one rank share; in memory they reach */
typedef struct moe_ctx {
    uint32_t                     nranks, rank, experts, topk, hidden,
                                 tokens, nchan, iter;
    uint8_t                     *base;            /* our region */
    moe_layout_t                 layout;
    const gda_ft_dev_endpoint_t *ep[MOE_MAX_RANKS]; /* NULL for us */
    const gda_ft_dev_mem_list_t *ml[MOE_MAX_RANKS];
    const moe_plan_t            *plan;
    uint64_t                     timeout_ns;
    uint64_t                     seed;
} moe_ctx_t;

/* What an iteration found; one per worker, summed by the host */
typedef struct moe_result {
    uint64_t start_ns;      /* worker 0: the iteration's start */
    uint64_t dispatch_ns;   /* from the start to all dispatch signals */
    uint64_t combine_ns;    /* from then to all results back */
    uint32_t status;        /* first failure: gda_ft_dev_status_t */
    uint32_t checked;       /* results compared */
    uint32_t wrong;         /* results that differ (lost) */
    uint32_t signal_errors; /* counts that differ (lost or duplicated) */
    uint32_t masked;        /* our (token, k) routed to a gone rank */
    uint32_t gone;          /* worker 0: the ranks masked (bit r) */
} moe_result_t;


GDA_FT_DEV_FUNC uint64_t moe_mix(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    return x ^ (x >> 33);
}

/* Element h of token t of rank r at iteration it */
GDA_FT_DEV_FUNC moe_elem_t moe_token(const moe_ctx_t *c, uint32_t r,
                                     uint32_t t, uint32_t h)
{
    return (moe_elem_t)moe_mix(c->seed ^ ((uint64_t)c->iter << 40) ^
                               ((uint64_t)r << 32) ^ ((uint64_t)t << 16) ^ h);
}

/* The expert: a deterministic function of its input */
GDA_FT_DEV_FUNC moe_elem_t moe_expert_fn(uint32_t expert, moe_elem_t x)
{
    return (moe_elem_t)(x * (2 * expert + 3) + expert + 1);
}

GDA_FT_DEV_FUNC uint64_t moe_row(const moe_ctx_t *c)
{
    return (uint64_t)c->hidden * sizeof(moe_elem_t);
}

/* Offset of receive (and output) slot (le, src, slot) */
GDA_FT_DEV_FUNC uint64_t moe_slot_off(const moe_ctx_t *c, uint32_t le,
                                      uint32_t src, uint32_t slot)
{
    return (((uint64_t)le * c->nranks + src) * c->tokens + slot) *
           moe_row(c);
}

GDA_FT_DEV_FUNC uint64_t *moe_dsig(const moe_ctx_t *c, uint32_t le,
                                   uint32_t src)
{
    return (uint64_t*)(c->base + c->layout.dsig) +
           ((c->iter % 2) * c->experts + le) * c->nranks + src;
}

/* The combine signal word of global expert e */
GDA_FT_DEV_FUNC uint64_t moe_csig_off(const moe_ctx_t *c, uint32_t e)
{
    return ((c->iter % 2) * c->nranks * c->experts + e) * sizeof(uint64_t);
}

GDA_FT_DEV_FUNC uint64_t *moe_csig(const moe_ctx_t *c, uint32_t e)
{
    return (uint64_t*)(c->base + c->layout.csig + moe_csig_off(c, e));
}

GDA_FT_DEV_FUNC void moe_copy_row(const moe_ctx_t *c, uint8_t *dst,
                                  const uint8_t *src)
{
    uint64_t i;

    for (i = 0; i < moe_row(c); ++i) {
        dst[i] = src[i];
    }
}

GDA_FT_DEV_FUNC void moe_fail(moe_result_t *r, gda_ft_dev_status_t status)
{
    if ((r->status == GDA_FT_DEV_OK) && (status != GDA_FT_DEV_OK)) {
        r->status = status;
    }
}

/* The ranks masked this iteration */
GDA_FT_DEV_FUNC uint64_t *moe_gone_word(const moe_ctx_t *c)
{
    return (uint64_t*)(c->base + c->layout.gone);
}

GDA_FT_DEV_FUNC int moe_masked(const moe_ctx_t *c, uint32_t peer)
{
    return (gda_ft_atomic_load_acq64(moe_gone_word(c)) >> peer) & 1;
}

/* Whether peer is gone: masked already, or the transport says so now (then
 * masked from here on) */
GDA_FT_DEV_FUNC int moe_gone(const moe_ctx_t *c, uint32_t peer)
{
    if ((c->ep[peer] == NULL) || moe_masked(c, peer)) {
        return c->ep[peer] != NULL;
    }
    if (gda_ft_dev_peer_state(c->ep[peer]) != GDA_FT_PEER_GONE) {
        return 0;
    }
    gda_ft_atomic_fetch_or64(moe_gone_word(c), 1ull << peer);
    return 1;
}

/* The status of a post to peer: PEER_GONE masks it, anything else but OK
 * fails the iteration */
GDA_FT_DEV_FUNC void moe_posted(const moe_ctx_t *c, uint32_t peer,
                                gda_ft_dev_status_t status, moe_result_t *r)
{
    if (status == GDA_FT_DEV_PEER_GONE) {
        gda_ft_atomic_fetch_or64(moe_gone_word(c), 1ull << peer);
    } else {
        moe_fail(r, status);
    }
}

/* Progresses every channel once: detection by any waiter */
GDA_FT_DEV_FUNC gda_ft_dev_status_t moe_progress(const moe_ctx_t *c)
{
    uint32_t peer, ch;

    for (peer = 0; peer < c->nranks; ++peer) {
        for (ch = 0; (c->ep[peer] != NULL) && (ch < c->nchan); ++ch) {
            if ((gda_ft_chan_progress(gda_ft_dev_channel(c->ep[peer], ch)) ==
                 GDA_FT_DEV_NO_PATH) && !moe_gone(c, peer)) {
                return GDA_FT_DEV_NO_PATH;
            }
        }
    }
    return GDA_FT_DEV_OK;
}

/* Waits until a signal word from peer is set, progressing our channels
 * meanwhile; checks the count it carries (word - 1). A gone peer's word is
 * not waited for: OK, the peer masked. */
GDA_FT_DEV_FUNC gda_ft_dev_status_t moe_wait_word(const moe_ctx_t *c,
                                                  uint32_t peer,
                                                  const uint64_t *word,
                                                  uint32_t expect,
                                                  moe_result_t *r)
{
    uint64_t start = gda_ft_dev_now_ns();

    while (gda_ft_atomic_load_acq64(word) == 0) {
        if (moe_gone(c, peer)) {
            return GDA_FT_DEV_OK;
        }
        if (moe_progress(c) == GDA_FT_DEV_NO_PATH) {
            return GDA_FT_DEV_NO_PATH;
        }
        if ((gda_ft_dev_now_ns() - start) > c->timeout_ns) {
            return GDA_FT_DEV_TIMEOUT;
        }
        gda_ft_cpu_relax();
    }
    r->signal_errors += (gda_ft_atomic_load_acq64(word) !=
                         (uint64_t)expect + 1);
    return GDA_FT_DEV_OK;
}

/* Until everything this rank posted has completed, progressing its
 * channels: the next iteration rewrites the tokens its puts read (a put
 * replayed after a switch would carry the new ones), and a rank that left
 * with posts in flight, or parked in a switch, would never send them */
GDA_FT_DEV_FUNC gda_ft_dev_status_t moe_quiet(const moe_ctx_t *c)
{
    gda_ft_dev_status_t status;
    uint32_t peer, ch;

    for (peer = 0; peer < c->nranks; ++peer) {
        for (ch = 0; (c->ep[peer] != NULL) && (ch < c->nchan); ++ch) {
            status = gda_ft_dev_quiet(c->ep[peer], ch, c->timeout_ns);
            if (((status == GDA_FT_DEV_PEER_GONE) ||
                 (status == GDA_FT_DEV_NO_PATH)) && moe_gone(c, peer)) {
                break;        /* masked: nothing of it to wait for */
            }
            if ((status == GDA_FT_DEV_NO_PATH) ||
                (status == GDA_FT_DEV_TIMEOUT)) {
                return status;
            }
        }
    }
    return GDA_FT_DEV_OK;
}

/* All E x N dispatch signals of the iteration */
GDA_FT_DEV_FUNC gda_ft_dev_status_t moe_wait_dispatch(const moe_ctx_t *c,
                                                      moe_result_t *r)
{
    gda_ft_dev_status_t status = GDA_FT_DEV_OK;
    uint32_t le, src;

    for (le = 0; le < c->experts; ++le) {
        for (src = 0; (src < c->nranks) && (status == GDA_FT_DEV_OK);
             ++src) {
            status = moe_wait_word(c, src, moe_dsig(c, le, src),
                                   c->plan->recv_count[le * c->nranks + src],
                                   r);
        }
    }
    return status;
}

/* All N x E combine signals of the iteration: each expert returns as
 * many results as we sent it tokens */
GDA_FT_DEV_FUNC gda_ft_dev_status_t moe_wait_combine(const moe_ctx_t *c,
                                                     moe_result_t *r)
{
    gda_ft_dev_status_t status = GDA_FT_DEV_OK;
    uint32_t e;

    for (e = 0; (e < c->nranks * c->experts) && (status == GDA_FT_DEV_OK);
         ++e) {
        status = moe_wait_word(c, e / c->experts, moe_csig(c, e),
                               c->plan->sent[e], r);
    }
    return status;
}

/* ---- the phases, for worker w of nw ------------------------------------- */

/* Puts each of our (token, k) into its expert's receive slot */
GDA_FT_DEV_FUNC void moe_dispatch_puts(const moe_ctx_t *c, unsigned w,
                                       unsigned nw, moe_result_t *r)
{
    gda_ft_dev_request_t req;
    uint32_t idx, t, owner, le;
    const moe_route_t *route;
    uint64_t roff;

    for (idx = w; idx < c->tokens * c->topk; idx += nw) {
        t     = idx / c->topk;
        route = &c->plan->send[idx];
        owner = route->expert / c->experts;
        le    = route->expert % c->experts;
        roff  = moe_slot_off(c, le, c->rank, route->slot);
        if (owner == c->rank) {
            moe_copy_row(c, c->base + c->layout.recv + roff,
                         c->base + c->layout.tokens + t * moe_row(c));
            continue;
        }
        moe_posted(c, owner,
                   gda_ft_dev_put_single(c->ep[owner], c->ml[owner],
                                         MOE_ELEM_DISPATCH, t * moe_row(c),
                                         roff, moe_row(c), le % c->nchan,
                                         &req), r);
    }
}

/* One signal per global expert: the count of our tokens it got, + 1, on
 * the channel its tokens took */
GDA_FT_DEV_FUNC void moe_dispatch_signals(const moe_ctx_t *c, unsigned w,
                                          unsigned nw, moe_result_t *r)
{
    uint32_t e, owner, le, count;
    gda_ft_dev_request_t req;
    uint64_t off;

    for (e = w; e < c->nranks * c->experts; e += nw) {
        owner = e / c->experts;
        le    = e % c->experts;
        count = c->plan->sent[e];
        off   = (((c->iter % 2) * c->experts + le) * c->nranks + c->rank) *
                sizeof(uint64_t);
        if (owner == c->rank) {
            gda_ft_atomic_store_rel64(moe_dsig(c, le, c->rank), count + 1);
            continue;
        }
        moe_posted(c, owner,
                   gda_ft_dev_signal(c->ep[owner], c->ml[owner],
                                     MOE_ELEM_DSIG, off, count + 1,
                                     le % c->nchan, &req), r);
    }
}

/* Our experts on what they received */
GDA_FT_DEV_FUNC void moe_compute(const moe_ctx_t *c, unsigned w, unsigned nw)
{
    uint32_t le, src, slot, h, n = c->experts * c->nranks, i;
    const moe_elem_t *in;
    moe_elem_t *out;

    for (i = w; i < n * c->tokens; i += nw) {
        le   = i / (c->nranks * c->tokens);
        src  = (i / c->tokens) % c->nranks;
        slot = i % c->tokens;
        if (slot >= c->plan->recv_count[le * c->nranks + src]) {
            continue;
        }
        in  = (const moe_elem_t*)(c->base + c->layout.recv +
                                  moe_slot_off(c, le, src, slot));
        out = (moe_elem_t*)(c->base + c->layout.out +
                            moe_slot_off(c, le, src, slot));
        for (h = 0; h < c->hidden; ++h) {
            out[h] = moe_expert_fn(c->rank * c->experts + le, in[h]);
        }
    }
}

/* Where output `slot` of (le, src) goes at its source */
GDA_FT_DEV_FUNC uint64_t moe_back_off(const moe_ctx_t *c, uint32_t le,
                                      uint32_t src, uint32_t slot)
{
    const moe_origin_t *o = &c->plan->origin[(le * c->nranks + src) *
                                             c->tokens + slot];

    return ((uint64_t)o->token * c->topk + o->k) * moe_row(c);
}

/* Each output but the last of every (expert, source) back to its token's
 * slot (token, k), on the expert's channel */
GDA_FT_DEV_FUNC void moe_combine_puts(const moe_ctx_t *c, unsigned w,
                                      unsigned nw, moe_result_t *r)
{
    uint32_t le, src, slot, i, n = c->experts * c->nranks;
    gda_ft_dev_request_t req;
    uint64_t loff, roff;

    for (i = w; i < n * c->tokens; i += nw) {
        le   = i / (c->nranks * c->tokens);
        src  = (i / c->tokens) % c->nranks;
        slot = i % c->tokens;
        if (slot + 1 >= c->plan->recv_count[le * c->nranks + src]) {
            continue;       /* none, or the last: it goes with its signal */
        }
        loff = moe_slot_off(c, le, src, slot);
        roff = moe_back_off(c, le, src, slot);
        if (src == c->rank) {
            moe_copy_row(c, c->base + c->layout.back + roff,
                         c->base + c->layout.out + loff);
            continue;
        }
        moe_posted(c, src,
                   gda_ft_dev_put_single(c->ep[src], c->ml[src],
                                         MOE_ELEM_COMBINE, loff, roff,
                                         moe_row(c), le % c->nchan, &req),
                   r);
    }
}

/* The last output of every (expert, source) with put_signal: its signal
 * lands after all of them, which took the same channel */
GDA_FT_DEV_FUNC void moe_combine_signals(const moe_ctx_t *c, unsigned w,
                                         unsigned nw, moe_result_t *r)
{
    uint32_t i, le, src, count, e;
    gda_ft_dev_request_t req;
    uint64_t loff, roff, soff;

    for (i = w; i < c->experts * c->nranks; i += nw) {
        le    = i / c->nranks;
        src   = i % c->nranks;
        e     = c->rank * c->experts + le;
        count = c->plan->recv_count[le * c->nranks + src];
        soff  = moe_csig_off(c, e);
        loff  = (count > 0) ? moe_slot_off(c, le, src, count - 1) : 0;
        roff  = (count > 0) ? moe_back_off(c, le, src, count - 1) : 0;
        if (src == c->rank) {
            if (count > 0) {
                moe_copy_row(c, c->base + c->layout.back + roff,
                             c->base + c->layout.out + loff);
            }
            gda_ft_atomic_store_rel64(moe_csig(c, e), count + 1);
        } else if (count > 0) {
            moe_posted(c, src,
                       gda_ft_dev_put_signal(c->ep[src], c->ml[src],
                                             MOE_ELEM_COMBINE, loff, roff,
                                             moe_row(c), MOE_ELEM_CSIG,
                                             soff, count + 1,
                                             le % c->nchan, &req), r);
        } else {
            moe_posted(c, src,
                       gda_ft_dev_signal(c->ep[src], c->ml[src],
                                         MOE_ELEM_CSIG, soff, 1,
                                         le % c->nchan, &req), r);
        }
    }
}

/* Every result of our tokens against the expert function, but those
 * routed to a rank masked this iteration */
GDA_FT_DEV_FUNC void moe_verify(const moe_ctx_t *c, unsigned w, unsigned nw,
                                moe_result_t *r)
{
    uint32_t idx, t, h;
    const moe_elem_t *got;
    uint32_t expert;

    for (idx = w; idx < c->tokens * c->topk; idx += nw) {
        t      = idx / c->topk;
        expert = c->plan->send[idx].expert;
        if (moe_masked(c, expert / c->experts)) {
            ++r->masked;
            continue;
        }
        got    = (const moe_elem_t*)(c->base + c->layout.back +
                                     (uint64_t)idx * moe_row(c));
        for (h = 0; h < c->hidden; ++h) {
            if (got[h] != moe_expert_fn(expert,
                                        moe_token(c, c->rank, t, h))) {
                ++r->wrong;
                break;
            }
        }
        ++r->checked;
    }
}

/*
 * The phases of an iteration. Between two phases every worker of the rank
 * has finished the first: CPU threads meet at a barrier, and a GPU runs
 * each phase as a kernel of its own, over as many CTAs as it likes. The
 * waits and the clock are worker 0's.
 */
enum {
    MOE_PHASE_DISPATCH_PUTS,
    MOE_PHASE_DISPATCH_SIGNALS,
    MOE_PHASE_DISPATCH_WAIT,     /* worker 0 */
    MOE_PHASE_COMPUTE,
    MOE_PHASE_COMBINE_PUTS,
    MOE_PHASE_COMBINE_SIGNALS,
    MOE_PHASE_COMBINE_WAIT,      /* worker 0 */
    MOE_PHASE_VERIFY,
    MOE_PHASE_CLEAR,             /* worker 0 */
    MOE_NUM_PHASES
};

/* A phase of worker 0 alone (a macro: the GPU runner's host code asks) */
#define MOE_PHASE_SINGLE(_phase) \
    (((_phase) == MOE_PHASE_DISPATCH_WAIT) || \
     ((_phase) == MOE_PHASE_COMBINE_WAIT) || ((_phase) == MOE_PHASE_CLEAR))

/* Phase `phase` of the iteration, for worker w of nw */
GDA_FT_DEV_FUNC void moe_phase(const moe_ctx_t *c, unsigned phase,
                               unsigned w, unsigned nw, moe_result_t *r)
{
    uint64_t *bank;
    uint32_t i;

    if (MOE_PHASE_SINGLE(phase) && (w != 0)) {
        return;
    }
    switch (phase) {
    case MOE_PHASE_DISPATCH_PUTS:
        if (w == 0) {
            r->start_ns = gda_ft_dev_now_ns();
        }
        moe_dispatch_puts(c, w, nw, r);
        break;
    case MOE_PHASE_DISPATCH_SIGNALS:
        moe_dispatch_signals(c, w, nw, r);
        break;
    case MOE_PHASE_DISPATCH_WAIT:
        moe_fail(r, moe_wait_dispatch(c, r));
        r->dispatch_ns = gda_ft_dev_now_ns() - r->start_ns;
        break;
    case MOE_PHASE_COMPUTE:
        moe_compute(c, w, nw);
        break;
    case MOE_PHASE_COMBINE_PUTS:
        moe_combine_puts(c, w, nw, r);
        break;
    case MOE_PHASE_COMBINE_SIGNALS:
        moe_combine_signals(c, w, nw, r);
        break;
    case MOE_PHASE_COMBINE_WAIT:
        moe_fail(r, moe_wait_combine(c, r));
        moe_fail(r, moe_quiet(c));
        r->combine_ns = gda_ft_dev_now_ns() - r->start_ns - r->dispatch_ns;
        break;
    case MOE_PHASE_VERIFY:
        moe_verify(c, w, nw, r);
        if (w == 0) {
            r->gone = (uint32_t)gda_ft_atomic_load_acq64(moe_gone_word(c));
        }
        break;
    default:
        gda_ft_atomic_store_rel64(moe_gone_word(c), 0);
        /* this parity's bank is free until two iterations on */
        bank = moe_dsig(c, 0, 0);
        for (i = 0; i < c->experts * c->nranks; ++i) {
            bank[i] = 0;
        }
        bank = moe_csig(c, 0);
        for (i = 0; i < c->nranks * c->experts; ++i) {
            bank[i] = 0;
        }
        break;
    }
}

#endif
