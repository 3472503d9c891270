/*
 * gda_ft device API: what a CUDA kernel (or a CPU thread) calls to post
 * RDMA into a peer's memory and survive the loss of a port (design §6.5).
 *
 * Shaped like UCX's device API (ucp_device_*: memory lists, channel ids,
 * thread and warp levels, request handles), so that porting is a rename:
 *
 *   gda_ft_dev_put_single   ~ ucp_device_put_single
 *   gda_ft_dev_put_signal   ~ ucp_device_put_multi (data, then the signal)
 *   gda_ft_dev_signal       ~ ucp_device_counter_inc
 *   gda_ft_dev_progress     ~ ucp_device_progress_req
 *
 * Every call returns a gda_ft_dev_status_t: OK, INPROGRESS, NO_RESOURCE,
 * IN_DOUBT, NO_PATH, PEER_GONE, TIMEOUT, ERROR (syndrome in the channel's
 * `error`). A path switch is not an error: it shows in the request
 * (PATH_SWITCHED is never returned by the posting calls) and in the
 * channel's counters.
 *
 * A request ends OK only when its operation executed exactly once (a
 * fetched value in place), also when the ring was full across a path
 * switch. A failure that a switch settled (IN_DOUBT, ERROR) is kept in the
 * channel's outcome table by the request's index, whatever paths the
 * channel takes after: it stays readable until the channel has posted
 * GDA_FT_CHAN_OUTCOME_RINGS (16) rings beyond it. Read requests before
 * then; the channel counts failures overwritten unread (`outcomes_lost`).
 * The outcome is the last WQE's: put_signal reports its signal's.
 *
 * What each failure means, per request:
 *   IN_DOUBT  an operation that must not run twice (a signal, put_signal's
 *             signal, a fetching atomic) was in flight on a path that
 *             failed, and the peer's word on whether it ran did not come
 *             (or, for a fetching atomic, it ran but its reply was lost):
 *             it ran once or not at all, never twice. Puts and gets are
 *             never in doubt: they run again.
 *   PEER_GONE the host half gave the peer up (both paths dead, nothing
 *             heard from it for UCX_GDA_FT_PEER_TIMEOUT): posts and waits
 *             to it return at once, what was in flight to it is lost with
 *             it, and other peers' channels go on (gda_ft_dev_peer_state,
 *             gda_ft_chan_peer.h). A restarted peer comes back on a new
 *             device endpoint.
 *   NO_PATH   both paths failed. From a port failure with work in flight:
 *             a deadline to leave the first path, then the switch's
 *             settlement (the grace and the wait for the peer's word, a
 *             deadline or so while the peer is not heard), then a deadline
 *             of silence on the second and the wait for a re-arm of the
 *             first: about 3 to 5 deadlines in all, never the HCA's retry
 *             window. A channel whose path is up on both ends sits out a
 *             silence instead (design §8). Every request in flight on the
 *             channel then ends NO_PATH: its operation ran once or not at
 *             all (a put may have landed, a signal or atomic is as
 *             IN_DOUBT), never twice. The channel takes back the first
 *             path the host re-arms (both of its ends up again for the
 *             recovery window): posts after that go on, in a new epoch,
 *             and the failed requests keep reporting NO_PATH
 *             (`regains` counts it).
 *   ERROR     the operation itself was refused (bad key, bounds, rights):
 *             it fails alone, and another path would refuse it too.
 * gda_ft_dev_quiet() reports the first failure of the channel since the
 * last quiet, whichever thread's request it was, and clears it: a program
 * whose threads share a channel reads each request's own outcome instead.
 *
 * Thread level: each calling thread posts its own operation. Warp level
 * (GPU only, the *_warp functions): every active lane brings its own
 * operation; the lowest lane reserves room for all of them with one CAS,
 * every lane writes its WQE, and one doorbell announces the batch.
 * gda_ft_dev_post() is the batch entry CPU threads use for the same path.
 */
#ifndef GDA_FT_DEVICE_API_H_
#define GDA_FT_DEVICE_API_H_

#include "gda_ft_chan_failover.h"

/* One registered buffer pair: local part and the peer's part, each with
 * its own length (a remote counter word beside a large local area of
 * results) */
typedef struct gda_ft_dev_mem_elem {
    uint64_t laddr;      /*  0 */
    uint64_t raddr;      /*  8 */
    uint64_t length;     /* 16: bytes valid at the local end */
    uint32_t lkey[2];    /* 24: on the primary and the backup HCA */
    uint32_t rkey[2];    /* 32 */
    uint64_t rlength;    /* 40: bytes valid at the peer's end */
} gda_ft_dev_mem_elem_t;

typedef struct gda_ft_dev_mem_list {
    uint16_t               version;  /* 0: GDA_FT_DEV_VERSION */
    uint16_t               reserved;
    uint32_t               count;    /* 4 */
    gda_ft_dev_mem_elem_t *elems;    /* 8 */
} gda_ft_dev_mem_list_t;

/* Device endpoint: the channels to one peer */
typedef struct gda_ft_dev_endpoint {
    uint16_t       version;       /* 0: GDA_FT_DEV_VERSION */
    uint16_t       num_channels;  /* 2 */
    uint32_t       flags;         /* 4: GDA_FT_DEV_EP_F_* */
    gda_ft_chan_t *channels;      /* 8 */
} gda_ft_dev_endpoint_t;

enum {
    /* The endpoint's HCAs write an 8-byte fetched value in host byte
     * order (a ConnectX in the mode mlx5_core selects where it can);
     * without it, big-endian. gda_ft_dev_fetched() follows it. */
    GDA_FT_DEV_EP_F_FETCH_HOST_ORDER = (1u << 0)
};

/* Handle of a posted operation: complete when `completed` passes end */
typedef struct gda_ft_dev_request {
    gda_ft_chan_t *chan;
    uint64_t       seq;          /* logical index of its last WQE */
    uint64_t       end;          /* logical index after it */
} gda_ft_dev_request_t;

GDA_FT_STATIC_ASSERT(sizeof(gda_ft_dev_mem_elem_t) == 48, dev_mem_elem_size);
GDA_FT_STATIC_ASSERT(sizeof(gda_ft_dev_mem_list_t) == 16, dev_mem_list_size);
GDA_FT_STATIC_ASSERT(sizeof(gda_ft_dev_endpoint_t) == 16, dev_endpoint_size);

/*
 * How long a post may wait for a switch or for ring space that stopped
 * draining while the peer is not heard: longer than the channel itself
 * may wait with a path left. A silent last path whose link is up is sat
 * out for GDA_FT_TIMING_SIT_OUT_DEADLINES deadlines before the channel
 * moves or ends in NO_PATH, and a switch takes a few more; a post that
 * gave up sooner reported TIMEOUT for a ring that then drained.
 */
GDA_FT_DEV_FUNC uint64_t gda_ft_dev_post_wait_ns(const gda_ft_chan_t *chan)
{
    return gda_ft_timing_post_wait_ns(chan->deadline_ns, chan->resolve_ns);
}

/*
 * Reserves room for n WQEBBs (the way a poster's memo remembers the
 * channel first, if it has one, else from *look when the post read it
 * beside the geometry, or NULL), helping progress while the ring is full
 * and waiting while a switch holds the channel. A full ring that drains is
 * waited for however long it takes (many posters share it), and so is one
 * that stops draining while the host hears the peer; one that stops
 * draining for post_wait_ns while the peer is not heard gives TIMEOUT.
 * Returns OK, NO_PATH, TIMEOUT, or ERROR when n WQEBBs can never fit (more
 * than half the ring).
 */
GDA_FT_DEV_FUNC gda_ft_dev_status_t
gda_ft_dev_reserve_wait(gda_ft_chan_t *chan, uint32_t n,
                        gda_ft_chan_memo_t *memo,
                        const gda_ft_chan_geom_t *geom,
                        const gda_ft_chan_look_t *look,
                        gda_ft_chan_resv_t *resv)
{
    uint64_t start = 0, seen = 0, now, completed;
    gda_ft_dev_status_t status;

    /* the memo's way once, before the loop: tried inside it (through
     * gda_ft_chan_reserve_as), a warp's post through a poster was 15 %
     * slower on an H200 */
    if ((memo != NULL) && gda_ft_chan_reserve_memo(chan, n, memo, resv)) {
        return GDA_FT_DEV_OK;
    }
    status = (look != NULL) ?
             gda_ft_chan_reserve_after(chan, n, geom, look, resv) :
             gda_ft_chan_reserve(chan, n, resv);
    for (;;) {
        if ((status == GDA_FT_DEV_OK) || (status == GDA_FT_DEV_NO_PATH)) {
            return status;
        }
        if ((status == GDA_FT_DEV_NO_RESOURCE) &&
            (n > geom->wqebb_cnt / 2)) {
            return GDA_FT_DEV_ERROR;   /* it would never fit */
        }
        /* ring full: completions free it; frozen: a parked switch waits
         * for a progress pass */
        gda_ft_chan_progress(chan);
        if (gda_ft_chan_peer_gone(geom->health)) {
            return GDA_FT_DEV_PEER_GONE;
        }
        now       = gda_ft_dev_now_ns();
        completed = gda_ft_atomic_load_acq64(&chan->completed);
        if ((start == 0) || (completed != seen)) {
            start = now;
            seen  = completed;
        } else if ((now - start) > gda_ft_dev_post_wait_ns(chan)) {
            /* while the host hears the peer, the channel sits out a
             * silence however long it lasts (gda_ft_chan_last_path_stalls):
             * so does the post. The mailbox is host memory, read once a
             * post wait: many waiters reading it in every loop slow a GPU's
             * copies, and a software HCA's with them. */
            if ((chan->mbox == NULL) || !gda_ft_chan_peer_heard(chan)) {
                return GDA_FT_DEV_TIMEOUT;
            }
            start = now;
        }
        gda_ft_cpu_relax();
        status = gda_ft_chan_reserve(chan, n, resv);
    }
}

/* Reads into *look what a post without a memo of the channel reserves
 * from, beside its geometry; returns look, or NULL when the memo holds */
GDA_FT_DEV_FUNC const gda_ft_chan_look_t *
gda_ft_dev_look(const gda_ft_chan_t *chan, const gda_ft_chan_memo_t *memo,
                gda_ft_chan_look_t *look)
{
    if ((memo != NULL) && memo->valid) {
        return NULL;
    }
    gda_ft_chan_look(chan, look);
    return look;
}

/* After a publication: a channel that posted on the primary the peer's
 * other channels have left follows them now (progress() re-reads the hint
 * in order), so that its next post goes to the backup */
GDA_FT_DEV_FUNC void gda_ft_dev_follow(gda_ft_chan_t *chan,
                                       const gda_ft_chan_resv_t *resv)
{
    if (gda_ft_chan_resv_follow(resv)) {
        gda_ft_chan_progress(chan);
    }
}

GDA_FT_DEV_FUNC void gda_ft_dev_request_set(gda_ft_dev_request_t *req,
                                            gda_ft_chan_t *chan,
                                            uint64_t last, uint64_t end)
{
    if (req != NULL) {
        req->chan = chan;
        req->seq  = last;
        req->end  = end;
    }
}

/*
 * Posts n operations on one channel: one reservation, one doorbell, the
 * last WQE signalled (and every chunk of a long transfer). A poster's memo
 * of the channel (or NULL) is used and kept.
 */
GDA_FT_DEV_FUNC gda_ft_dev_status_t
gda_ft_dev_post_memo(gda_ft_chan_t *chan, gda_ft_chan_memo_t *memo,
                     const gda_ft_chan_op_t *ops, unsigned n,
                     gda_ft_dev_request_t *req)
{
    uint64_t end, last = 0, db = 0;
    uint32_t wqebbs = 0;
    gda_ft_dev_status_t status;
    gda_ft_chan_shape_t shape;
    const gda_ft_chan_look_t *look_p;
    gda_ft_chan_resv_t resv = {0, 0, 0, 0, 0, 0, 0, 0};
    gda_ft_chan_look_t look;
    gda_ft_chan_dest_t dest;
    gda_ft_chan_geom_t geom;
    unsigned i;

    gda_ft_chan_geom_of(chan, memo, &geom);
    look_p = gda_ft_dev_look(chan, memo, &look);
    /* after the look's loads, so that they are under way together */
    if (gda_ft_chan_peer_gone(geom.health)) {
        return GDA_FT_DEV_PEER_GONE;
    }
    for (i = 0; i < n; ++i) {
        gda_ft_chan_shape(&geom, &ops[i], &shape);
        if (!shape.valid) {
            return GDA_FT_DEV_ERROR;
        }
        wqebbs += shape.wqebbs;
    }
    if ((n == 0) || (wqebbs > geom.wqebb_cnt / 2)) {
        return GDA_FT_DEV_ERROR;
    }

    status = gda_ft_dev_reserve_wait(chan, wqebbs, memo, &geom, look_p,
                                     &resv);
    if (status != GDA_FT_DEV_OK) {
        return status;
    }
    gda_ft_chan_dest_init(&dest, chan, resv.path, resv.off, &geom);
    end = resv.seq;
    for (i = 0; i < n; ++i) {
        gda_ft_chan_shape(&geom, &ops[i], &shape);
        end = gda_ft_chan_write_op(&dest, &ops[i], &shape, end, i + 1 == n,
                                   &last, &db);
    }
    gda_ft_chan_publish(chan, &dest, &resv, ops, n, db, memo, req != NULL);
    gda_ft_dev_request_set(req, chan, last, end);
    gda_ft_dev_follow(chan, &resv);
    return GDA_FT_DEV_OK;
}

GDA_FT_DEV_FUNC gda_ft_dev_status_t
gda_ft_dev_post(gda_ft_chan_t *chan, const gda_ft_chan_op_t *ops, unsigned n,
                gda_ft_dev_request_t *req)
{
    return gda_ft_dev_post_memo(chan, NULL, ops, n, req);
}


/* ---- building operations from a memory list ----------------------------- */

GDA_FT_DEV_FUNC gda_ft_chan_t *
gda_ft_dev_channel(const gda_ft_dev_endpoint_t *ep, unsigned channel_id)
{
    return (channel_id < ep->num_channels) ? &ep->channels[channel_id] :
                                             NULL;
}

/*
 * The peer's state, without posting or waiting: GDA_FT_PEER_REACHABLE,
 * GDA_FT_PEER_GONE (the host half gave it up: posts and waits to it
 * return GDA_FT_DEV_PEER_GONE at once) or GDA_FT_PEER_BACK (a restarted
 * peer, connected again on a new device endpoint). The word is set by the
 * host half within UCX_GDA_FT_PEER_TIMEOUT of the peer's last answer
 * (auto: 1.5 deadlines on ConnectX, 1 s on a soft HCA; gda_ft_chan_peer.h);
 * on a GPU it reaches kernels at the next progress pass of any channel to
 * the peer. gda_ft_dev_peer_word() is the whole word, with its generation
 * (bumped at every change): a kernel keeps the health pointer
 * (gda_ft_dev_peer()) in a register, and each check is one load.
 */
GDA_FT_DEV_FUNC const gda_ft_chan_health_t *
gda_ft_dev_peer(const gda_ft_dev_endpoint_t *ep)
{
    return (ep->num_channels > 0) ? ep->channels[0].health : NULL;
}

GDA_FT_DEV_FUNC uint32_t
gda_ft_dev_peer_word(const gda_ft_chan_health_t *peer)
{
    return gda_ft_chan_peer_word(peer);
}

GDA_FT_DEV_FUNC uint32_t
gda_ft_dev_peer_state(const gda_ft_dev_endpoint_t *ep)
{
    return GDA_FT_PEER_STATE(gda_ft_chan_peer_word(gda_ft_dev_peer(ep)));
}

/*
 * A poster: one caller's handle on one channel, a warp's or a CPU thread's,
 * kept in its registers across its posts. It remembers where its last post
 * left the channel (gda_ft_chan_memo_t): while nobody else posted there or
 * switched it since, the next post takes its room with one CAS and reads
 * no other shared word, which is most of what one warp's post costs beyond
 * writing its WQEs. Posters may share a channel with each other and with
 * plain posts: every post stays correct, and one that finds the channel
 * moved on takes the shared way (one round trip more than a plain post).
 */
typedef struct gda_ft_dev_poster {
    gda_ft_chan_t      *chan;
    gda_ft_chan_memo_t  memo;
} gda_ft_dev_poster_t;

/* A poster on channel_id of ep: OK, or ERROR for no such channel */
GDA_FT_DEV_FUNC gda_ft_dev_status_t
gda_ft_dev_poster_init(gda_ft_dev_poster_t *poster,
                       const gda_ft_dev_endpoint_t *ep, unsigned channel_id)
{
    poster->chan       = gda_ft_dev_channel(ep, channel_id);
    gda_ft_chan_memo_init(&poster->memo);
    return (poster->chan != NULL) ? GDA_FT_DEV_OK : GDA_FT_DEV_ERROR;
}

/* gda_ft_dev_post() through a poster */
GDA_FT_DEV_FUNC gda_ft_dev_status_t
gda_ft_dev_poster_post(gda_ft_dev_poster_t *poster,
                       const gda_ft_chan_op_t *ops, unsigned n,
                       gda_ft_dev_request_t *req)
{
    return gda_ft_dev_post_memo(poster->chan, &poster->memo, ops, n, req);
}

/* Fills op's addresses and keys from element idx; 0 when out of bounds */
GDA_FT_DEV_FUNC int gda_ft_dev_op_mem(gda_ft_chan_op_t *op,
                                      const gda_ft_dev_mem_list_t *ml,
                                      unsigned idx, uint64_t loff,
                                      uint64_t roff, uint64_t length)
{
    const gda_ft_dev_mem_elem_t *e;

    if (idx >= ml->count) {
        return 0;
    }
    e = &ml->elems[idx];
    if ((loff > e->length) || (length > e->length - loff) ||
        (roff > e->rlength) || (length > e->rlength - roff)) {
        return 0;
    }
    gda_ft_chan_op_init(op, e->laddr + loff, e->lkey, (uint32_t)length,
                        e->raddr + roff, e->rkey);
    return 1;
}

GDA_FT_DEV_FUNC int gda_ft_dev_op_rdma(gda_ft_chan_op_t *op, uint8_t kind,
                                       const gda_ft_dev_mem_list_t *ml,
                                       unsigned idx, uint64_t loff,
                                       uint64_t roff, uint64_t length)
{
    op->kind   = kind;
    op->opcode = (kind == GDA_FT_CHAN_OP_GET) ?
                 GDA_FT_MLX5_OPCODE_RDMA_READ : GDA_FT_MLX5_OPCODE_RDMA_WRITE;
    return (length >> 31 == 0) &&
           gda_ft_dev_op_mem(op, ml, idx, loff, roff, length);
}

/* A 64-bit atomic on element idx at roff; the old value lands at loff */
GDA_FT_DEV_FUNC int gda_ft_dev_op_atomic(gda_ft_chan_op_t *op, uint8_t kind,
                                         uint8_t opcode,
                                         const gda_ft_dev_mem_list_t *ml,
                                         unsigned idx, uint64_t loff,
                                         uint64_t roff, uint64_t operand0,
                                         uint64_t operand1)
{
    if (!gda_ft_dev_op_mem(op, ml, idx, loff, roff, sizeof(uint64_t)) ||
        (roff % sizeof(uint64_t) != 0)) {
        return 0;
    }
    op->kind       = kind;
    op->opcode     = opcode;
    op->operand[0] = operand0;
    op->operand[1] = operand1;
    return 1;
}

/* An atomic's old value goes to the channel's scratch word: not fetched */
GDA_FT_DEV_FUNC void gda_ft_dev_op_unfetched(gda_ft_chan_op_t *op,
                                             const gda_ft_chan_t *chan)
{
    op->laddr   = chan->scratch_addr;
    op->lkey[0] = chan->scratch_lkey[0];
    op->lkey[1] = chan->scratch_lkey[1];
}

/* A non-fetching add */
GDA_FT_DEV_FUNC int gda_ft_dev_op_signal(gda_ft_chan_op_t *op,
                                         const gda_ft_chan_t *chan,
                                         const gda_ft_dev_mem_list_t *ml,
                                         unsigned sig_idx, uint64_t sig_off,
                                         uint64_t inc)
{
    if (!gda_ft_dev_op_atomic(op, GDA_FT_CHAN_OP_SIGNAL,
                              GDA_FT_MLX5_OPCODE_ATOMIC_FA, ml, sig_idx, 0,
                              sig_off, inc, 0)) {
        return 0;
    }
    gda_ft_dev_op_unfetched(op, chan);
    return 1;
}


/* ---- thread level ------------------------------------------------------- */

/* Posts op alone, if the channel exists and op could be built */
GDA_FT_DEV_FUNC gda_ft_dev_status_t
gda_ft_dev_post_one(gda_ft_chan_t *chan, int built, const gda_ft_chan_op_t *op,
                    gda_ft_dev_request_t *req)
{
    return ((chan != NULL) && built) ? gda_ft_dev_post(chan, op, 1, req) :
                                       GDA_FT_DEV_ERROR;
}

/* A put or get of one element's bytes, alone on a channel */
GDA_FT_DEV_FUNC gda_ft_dev_status_t
gda_ft_dev_rdma(const gda_ft_dev_endpoint_t *ep, uint8_t kind,
                const gda_ft_dev_mem_list_t *ml, unsigned idx, uint64_t loff,
                uint64_t roff, uint64_t length, unsigned channel_id,
                gda_ft_dev_request_t *req)
{
    gda_ft_chan_t *chan = gda_ft_dev_channel(ep, channel_id);
    gda_ft_chan_op_t op;
    int built;

    built = gda_ft_dev_op_rdma(&op, kind, ml, idx, loff, roff, length);
    return gda_ft_dev_post_one(chan, built, &op, req);
}

GDA_FT_DEV_FUNC gda_ft_dev_status_t
gda_ft_dev_put_single(const gda_ft_dev_endpoint_t *ep,
                      const gda_ft_dev_mem_list_t *ml, unsigned idx,
                      uint64_t loff, uint64_t roff, uint64_t length,
                      unsigned channel_id, gda_ft_dev_request_t *req)
{
    return gda_ft_dev_rdma(ep, GDA_FT_CHAN_OP_PUT, ml, idx, loff, roff,
                           length, channel_id, req);
}

GDA_FT_DEV_FUNC gda_ft_dev_status_t
gda_ft_dev_get(const gda_ft_dev_endpoint_t *ep,
               const gda_ft_dev_mem_list_t *ml, unsigned idx, uint64_t loff,
               uint64_t roff, uint64_t length, unsigned channel_id,
               gda_ft_dev_request_t *req)
{
    return gda_ft_dev_rdma(ep, GDA_FT_CHAN_OP_GET, ml, idx, loff, roff,
                           length, channel_id, req);
}

/* Up to 16 bytes of the caller's data, carried inside the WQE */
GDA_FT_DEV_FUNC gda_ft_dev_status_t
gda_ft_dev_put_inline(const gda_ft_dev_endpoint_t *ep,
                      const gda_ft_dev_mem_list_t *ml, unsigned idx,
                      const void *data, uint32_t length, uint64_t roff,
                      unsigned channel_id, gda_ft_dev_request_t *req)
{
    gda_ft_chan_t *chan = gda_ft_dev_channel(ep, channel_id);
    gda_ft_chan_op_t op;

    if ((chan == NULL) || (length > sizeof(op.operand)) ||
        !gda_ft_dev_op_rdma(&op, GDA_FT_CHAN_OP_PUT, ml, idx, 0, roff,
                            length)) {
        return GDA_FT_DEV_ERROR;
    }
    op.inl = 1;
    gda_ft_wqe_copy_bytes(op.operand, data, length);
    return gda_ft_dev_post(chan, &op, 1, req);
}

/* RDMA WRITE, then a non-fetching add on the signal word: ordered, one
 * reservation, one doorbell */
GDA_FT_DEV_FUNC gda_ft_dev_status_t
gda_ft_dev_put_signal(const gda_ft_dev_endpoint_t *ep,
                      const gda_ft_dev_mem_list_t *ml, unsigned idx,
                      uint64_t loff, uint64_t roff, uint64_t length,
                      unsigned sig_idx, uint64_t sig_off, uint64_t inc,
                      unsigned channel_id, gda_ft_dev_request_t *req)
{
    gda_ft_chan_t *chan = gda_ft_dev_channel(ep, channel_id);
    gda_ft_chan_op_t ops[2];

    if ((chan == NULL) ||
        !gda_ft_dev_op_rdma(&ops[0], GDA_FT_CHAN_OP_PUT, ml, idx, loff, roff,
                            length) ||
        !gda_ft_dev_op_signal(&ops[1], chan, ml, sig_idx, sig_off, inc)) {
        return GDA_FT_DEV_ERROR;
    }
    return gda_ft_dev_post(chan, ops, 2, req);
}

GDA_FT_DEV_FUNC gda_ft_dev_status_t
gda_ft_dev_signal(const gda_ft_dev_endpoint_t *ep,
                  const gda_ft_dev_mem_list_t *ml, unsigned sig_idx,
                  uint64_t sig_off, uint64_t inc, unsigned channel_id,
                  gda_ft_dev_request_t *req)
{
    gda_ft_chan_t *chan = gda_ft_dev_channel(ep, channel_id);
    gda_ft_chan_op_t op;

    return gda_ft_dev_post_one(chan, (chan != NULL) &&
                               gda_ft_dev_op_signal(&op, chan, ml, sig_idx,
                                                    sig_off, inc),
                               &op, req);
}

/* A fetching 64-bit atomic on element idx at roff, alone on a channel */
GDA_FT_DEV_FUNC gda_ft_dev_status_t
gda_ft_dev_atomic(const gda_ft_dev_endpoint_t *ep, uint8_t opcode,
                  const gda_ft_dev_mem_list_t *ml, unsigned idx,
                  uint64_t loff, uint64_t roff, uint64_t operand0,
                  uint64_t operand1, unsigned channel_id,
                  gda_ft_dev_request_t *req)
{
    gda_ft_chan_t *chan = gda_ft_dev_channel(ep, channel_id);
    gda_ft_chan_op_t op;
    int built;

    built = gda_ft_dev_op_atomic(&op, GDA_FT_CHAN_OP_ATOMIC, opcode, ml, idx,
                                 loff, roff, operand0, operand1);
    return gda_ft_dev_post_one(chan, built, &op, req);
}

/*
 * Sets the bits of value in the 64-bit word at roff of element idx's
 * remote part, without fetching it: a masked compare-swap that compares
 * no bit and swaps those of value (the old value goes to the channel's
 * scratch word, as a signal's).
 */
GDA_FT_DEV_FUNC gda_ft_dev_status_t
gda_ft_dev_atomic_or(const gda_ft_dev_endpoint_t *ep,
                     const gda_ft_dev_mem_list_t *ml, unsigned idx,
                     uint64_t roff, uint64_t value, unsigned channel_id,
                     gda_ft_dev_request_t *req)
{
    gda_ft_chan_t *chan = gda_ft_dev_channel(ep, channel_id);
    gda_ft_chan_op_t op;
    int built;

    built = (chan != NULL) &&
            gda_ft_dev_op_atomic(&op, GDA_FT_CHAN_OP_ATOMIC,
                                 GDA_FT_MLX5_OPCODE_ATOMIC_MASKED_CS, ml, idx,
                                 0, roff, value, 0);
    if (built) {
        op.mask[0] = value;   /* swap mask; the compare mask stays 0 */
        gda_ft_dev_op_unfetched(&op, chan);
    }
    return gda_ft_dev_post_one(chan, built, &op, req);
}

/* The old value lands at loff of element idx's local buffer in the HCA's
 * byte order; gda_ft_dev_fetched() reads it once the request is complete */
GDA_FT_DEV_FUNC gda_ft_dev_status_t
gda_ft_dev_atomic_fetch_add(const gda_ft_dev_endpoint_t *ep,
                            const gda_ft_dev_mem_list_t *ml, unsigned idx,
                            uint64_t loff, uint64_t roff, uint64_t value,
                            unsigned channel_id, gda_ft_dev_request_t *req)
{
    return gda_ft_dev_atomic(ep, GDA_FT_MLX5_OPCODE_ATOMIC_FA, ml, idx, loff,
                             roff, value, 0, channel_id, req);
}

GDA_FT_DEV_FUNC gda_ft_dev_status_t
gda_ft_dev_atomic_cswap(const gda_ft_dev_endpoint_t *ep,
                        const gda_ft_dev_mem_list_t *ml, unsigned idx,
                        uint64_t loff, uint64_t roff, uint64_t compare,
                        uint64_t swap, unsigned channel_id,
                        gda_ft_dev_request_t *req)
{
    return gda_ft_dev_atomic(ep, GDA_FT_MLX5_OPCODE_ATOMIC_CS, ml, idx, loff,
                             roff, swap, compare, channel_id, req);
}

/* The 8-byte value a fetch-add or compare-swap on endpoint ep fetched into
 * result, in host byte order; callable from host code too, on a copy of
 * the result and of the endpoint in host memory */
GDA_FT_HOST_DEV_FUNC uint64_t
gda_ft_dev_fetched(const gda_ft_dev_endpoint_t *ep, const void *result)
{
    uint64_t value = *(const volatile uint64_t*)result;

    return (ep->flags & GDA_FT_DEV_EP_F_FETCH_HOST_ORDER) ?
           value : gda_ft_be64toh(value);
}


/* ---- completion --------------------------------------------------------- */

/* Outcome of a request whose WQEs completed: the failure a switch
 * settled for it, or OK. Reading it lets the ring move past it. */
GDA_FT_DEV_FUNC gda_ft_dev_status_t
gda_ft_dev_request_outcome(const gda_ft_dev_request_t *req)
{
    return gda_ft_chan_outcome(req->chan, req->seq, 1);
}

/* One check of a request: OK, INPROGRESS, IN_DOUBT, NO_PATH, PEER_GONE
 * (the request had not completed when its peer went) or ERROR */
GDA_FT_DEV_FUNC gda_ft_dev_status_t
gda_ft_dev_progress(gda_ft_dev_request_t *req)
{
    gda_ft_chan_t *chan = req->chan;
    gda_ft_dev_status_t status;

    if (gda_ft_chan_completed(chan) >= req->end) {
        return gda_ft_dev_request_outcome(req);
    }
    status = gda_ft_chan_progress(chan);
    if (gda_ft_chan_peer_gone(chan->health)) {
        return GDA_FT_DEV_PEER_GONE;
    }
    if (status == GDA_FT_DEV_NO_PATH) {
        return status;
    }
    return (gda_ft_chan_completed(chan) >= req->end) ?
           gda_ft_dev_request_outcome(req) : GDA_FT_DEV_INPROGRESS;
}

/*
 * Waits until everything posted on the channel before the call completed.
 * Returns OK, NO_PATH, TIMEOUT (timeout_ns, 0: none), or the first failure
 * of an operation since the last quiet (IN_DOUBT, ERROR), which it clears.
 */
GDA_FT_DEV_FUNC gda_ft_dev_status_t
gda_ft_dev_quiet(const gda_ft_dev_endpoint_t *ep, unsigned channel_id,
                 uint64_t timeout_ns)
{
    gda_ft_chan_t *chan = gda_ft_dev_channel(ep, channel_id);
    uint64_t target, start;
    uint32_t error;

    if (chan == NULL) {
        return GDA_FT_DEV_ERROR;
    }
    target = GDA_FT_CHAN_WORD_INDEX(gda_ft_atomic_load_acq64(&chan->word));
    start  = gda_ft_dev_now_ns();
    while (gda_ft_chan_completed(chan) < target) {
        if (gda_ft_chan_progress(chan) == GDA_FT_DEV_NO_PATH) {
            return gda_ft_chan_peer_gone(chan->health) ?
                   GDA_FT_DEV_PEER_GONE : GDA_FT_DEV_NO_PATH;
        }
        if (gda_ft_chan_peer_gone(chan->health)) {
            return GDA_FT_DEV_PEER_GONE;
        }
        if ((timeout_ns != 0) &&
            ((gda_ft_dev_now_ns() - start) > timeout_ns)) {
            return GDA_FT_DEV_TIMEOUT;
        }
        gda_ft_cpu_relax();
    }
    error = gda_ft_atomic_load_acq32(&chan->error);
    if ((error != 0) &&
        (gda_ft_atomic_cas32(&chan->error, error, 0) == error)) {
        return GDA_FT_DEV_RESULT_STATUS(error);
    }
    return GDA_FT_DEV_OK;
}

/* Waits until *signal reaches value, progressing chan (if not NULL) */
GDA_FT_DEV_FUNC gda_ft_dev_status_t
gda_ft_dev_wait_word(gda_ft_chan_t *chan, const uint64_t *signal,
                     uint64_t value, uint64_t timeout_ns)
{
    uint64_t start = gda_ft_dev_now_ns();

    while (gda_ft_atomic_load_acq64(signal) < value) {
        if ((chan != NULL) &&
            (gda_ft_chan_progress(chan) == GDA_FT_DEV_NO_PATH)) {
            return gda_ft_chan_peer_gone(chan->health) ?
                   GDA_FT_DEV_PEER_GONE : GDA_FT_DEV_NO_PATH;
        }
        if ((chan != NULL) && gda_ft_chan_peer_gone(chan->health)) {
            return GDA_FT_DEV_PEER_GONE;
        }
        if ((timeout_ns != 0) &&
            ((gda_ft_dev_now_ns() - start) > timeout_ns)) {
            return GDA_FT_DEV_TIMEOUT;
        }
        gda_ft_cpu_relax();
    }
    return GDA_FT_DEV_OK;
}

/* Waits until the 64-bit word a peer's signals add to reaches value */
GDA_FT_DEV_FUNC gda_ft_dev_status_t
gda_ft_dev_wait_signal(const uint64_t *signal, uint64_t value,
                       uint64_t timeout_ns)
{
    return gda_ft_dev_wait_word(NULL, signal, value, timeout_ns);
}

/*
 * The same while progressing a channel: a poster that waits for the peer's
 * answer to what it posted there finds a dead path while it waits, and
 * moves it (a plain wait would sit out the HCA's retry window). Returns
 * OK, TIMEOUT, NO_PATH when the channel lost both paths, or PEER_GONE
 * once the host half gave the peer up (at once, the signal unreached).
 */
GDA_FT_DEV_FUNC gda_ft_dev_status_t
gda_ft_dev_wait_signal_on(const gda_ft_dev_endpoint_t *ep,
                          unsigned channel_id, const uint64_t *signal,
                          uint64_t value, uint64_t timeout_ns)
{
    gda_ft_chan_t *chan = gda_ft_dev_channel(ep, channel_id);

    return (chan == NULL) ? GDA_FT_DEV_ERROR :
           gda_ft_dev_wait_word(chan, signal, value, timeout_ns);
}


/* ---- warp level (GPU) --------------------------------------------------- */

#if GDA_FT_ON_DEVICE
/* Where a benchmark may time the steps of a warp's post (empty otherwise):
 * 1 reserved, 2 written, 3 its turn came, 4 stamped, 5 published */
#ifndef GDA_FT_DEV_POST_MARK
#  define GDA_FT_DEV_POST_MARK(_step)
#endif

/*
 * The sum of v over the active lanes below this one; over all of them in
 * *total_p. Lanes that bring equal values (the usual batch: one kind and
 * size of operation) need no shuffle, a full warp scans in five, another
 * set of lanes walks its members.
 */
GDA_FT_DEV_FUNC uint64_t gda_ft_dev_warp_prefix(unsigned mask, unsigned lane,
                                                uint64_t v, uint64_t *total_p)
{
    uint64_t before = 0, total = 0, incl, x;
    unsigned bits, src, d;
    int uniform;

    __match_all_sync(mask, (unsigned long long)v, &uniform);
    if (uniform) {
        *total_p = __popc(mask) * v;
        return __popc(mask & ((1u << lane) - 1)) * v;
    }
    if (mask == 0xffffffffu) {
        incl = v;
        for (d = 1; d < 32; d <<= 1) {
            x     = __shfl_up_sync(mask, (unsigned long long)incl, d);
            incl += (lane >= d) ? x : 0;
        }
        *total_p = __shfl_sync(mask, (unsigned long long)incl, 31);
        return incl - v;
    }
    for (bits = mask; bits != 0; bits &= bits - 1) {
        src     = __ffs(bits) - 1;
        x       = __shfl_sync(mask, (unsigned long long)v, src);
        before += (src < lane) ? x : 0;
        total  += x;
    }
    *total_p = total;
    return before;
}

/* A lane's WQEBBs (low word) and packets (high word), scanned as one */
#define GDA_FT_DEV_WARP_WQEBBS(_v) ((uint32_t)(_v))
#define GDA_FT_DEV_WARP_PKTS(_v)   ((uint32_t)((_v) >> 32))

/*
 * The lanes in mask (the active ones) each post their own operation; one
 * reservation (by the lowest lane), one doorbell, the batch's last WQE
 * signalled. Every lane's request completes with the batch. The lowest
 * lane's memo of the channel (or NULL) is used; every lane's keeps the
 * batch, so that each knows the geometry, and whichever is lowest next
 * time can take the memo's way.
 *
 * Nothing of the channel is read after the reservation's CAS that could
 * be read before it: the operations' shapes come from the memo's geometry
 * (without a memo, the geometry and the look share one round trip), and
 * the path the memo names is read while the CAS is under way (again after
 * it, if the reservation went elsewhere). Each lane writes its WQEs, then,
 * in the warp's turn, its slots whole.
 */
GDA_FT_DEV_FUNC gda_ft_dev_status_t
gda_ft_dev_post_warp_lanes(gda_ft_chan_t *chan, gda_ft_chan_memo_t *memo,
                           const gda_ft_chan_op_t *op,
                           gda_ft_dev_request_t *req, unsigned mask)
{
    unsigned lane   = threadIdx.x % 32;
    unsigned leader = __ffs(mask) - 1;
    unsigned last   = 31 - __clz(mask);
    gda_ft_dev_status_t status = GDA_FT_DEV_OK;
    gda_ft_chan_resv_t resv    = {0, 0, 0, 0, 0, 0, 0, 0};
    unsigned long long last_wqe = 0, db = 0;
    uint64_t before, total, seq;
    const gda_ft_chan_look_t *look_p;
    gda_ft_chan_shape_t shape;
    gda_ft_chan_look_t look;
    gda_ft_chan_dest_t dest;
    gda_ft_chan_geom_t geom;
    uint32_t psn = 0;
    uint8_t guess;

    gda_ft_chan_geom_of(chan, memo, &geom);
    look_p = gda_ft_dev_look(chan, memo, &look);
    if (gda_ft_chan_peer_gone(geom.health)) {
        return GDA_FT_DEV_PEER_GONE;   /* the same word in every lane */
    }
    gda_ft_chan_shape(&geom, op, &shape);
    if (__any_sync(mask, !shape.valid)) {
        return GDA_FT_DEV_ERROR;
    }
    /* where each lane's WQEs and PSNs start */
    before = gda_ft_dev_warp_prefix(mask, lane, shape.wqebbs |
                                    ((uint64_t)shape.npkts << 32), &total);

    guess = ((memo != NULL) && memo->valid) ?
            GDA_FT_CHAN_WORD_PATH(memo->word) : GDA_FT_CHAN_PRIMARY;
    gda_ft_chan_dest_init(&dest, chan, guess, 0, &geom);
    if (lane == leader) {
        status = gda_ft_dev_reserve_wait(chan, GDA_FT_DEV_WARP_WQEBBS(total),
                                         memo, &geom, look_p, &resv);
    }
    status = (gda_ft_dev_status_t)__shfl_sync(mask, (int)status, leader);
    if (status != GDA_FT_DEV_OK) {
        return status;
    }
    resv.seq  = __shfl_sync(mask, (unsigned long long)resv.seq, leader);
    resv.word = __shfl_sync(mask, (unsigned long long)resv.word, leader);
    resv.off  = __shfl_sync(mask, (unsigned long long)resv.off, leader);
    resv.path = (uint8_t)__shfl_sync(mask, (int)resv.path, leader);
    if (resv.path != guess) {
        gda_ft_chan_dest_init(&dest, chan, resv.path, 0, &geom);
    }
    dest.off = resv.off;
    seq      = resv.seq;
    GDA_FT_DEV_POST_MARK(1);

    gda_ft_chan_write_op(&dest, op, &shape,
                         seq + GDA_FT_DEV_WARP_WQEBBS(before), lane == last,
                         (uint64_t*)&last_wqe, (uint64_t*)&db);
    GDA_FT_DEV_POST_MARK(2);

    /* the PSNs from where the path is when the warp's turn comes */
    if (lane == leader) {
        psn = gda_ft_chan_take_turn(chan, &resv);
    }
    psn = __shfl_sync(mask, psn, leader);
    GDA_FT_DEV_POST_MARK(3);
    gda_ft_chan_write_slots(&dest, op, &shape,
                            seq + GDA_FT_DEV_WARP_WQEBBS(before),
                            gda_ft_dev_now_ns(),
                            gda_ft_dev_psn_add(psn,
                                               GDA_FT_DEV_WARP_PKTS(before)),
                            (req != NULL) ? GDA_FT_CHAN_SLOT_OWNED : 0);
    db = __shfl_sync(mask, db, last);   /* the batch's last WQE's */
    __syncwarp(mask);
    GDA_FT_DEV_POST_MARK(4);
    psn = gda_ft_dev_psn_add(psn, GDA_FT_DEV_WARP_PKTS(total));
    if (lane == leader) {
        gda_ft_chan_release(chan, &dest, resv.word, psn, db, !resv.turn);
    }
    gda_ft_chan_remember(memo, &resv, psn, &geom);
    __syncwarp(mask);
    GDA_FT_DEV_POST_MARK(5);
    gda_ft_dev_request_set(req, chan, last_wqe,
                           seq + GDA_FT_DEV_WARP_WQEBBS(total));
    if (lane == leader) {
        gda_ft_dev_follow(chan, &resv);
    }
    return GDA_FT_DEV_OK;
}

/* A whole warp's post is the same code with its lanes known (no shuffle
 * checks that its lanes converged, no scan of the mask) */
GDA_FT_DEV_FUNC gda_ft_dev_status_t
gda_ft_dev_post_warp_memo(gda_ft_chan_t *chan, gda_ft_chan_memo_t *memo,
                          const gda_ft_chan_op_t *op,
                          gda_ft_dev_request_t *req)
{
    unsigned mask = __activemask();

    if (mask == 0xffffffffu) {
        return gda_ft_dev_post_warp_lanes(chan, memo, op, req, 0xffffffffu);
    }
    return gda_ft_dev_post_warp_lanes(chan, memo, op, req, mask);
}

GDA_FT_DEV_FUNC gda_ft_dev_status_t
gda_ft_dev_post_warp(gda_ft_chan_t *chan, const gda_ft_chan_op_t *op,
                     gda_ft_dev_request_t *req)
{
    return gda_ft_dev_post_warp_memo(chan, NULL, op, req);
}

/* gda_ft_dev_post_warp() through the lanes' poster (the same one in every
 * lane: the lowest active lane's copy is used and kept) */
GDA_FT_DEV_FUNC gda_ft_dev_status_t
gda_ft_dev_poster_post_warp(gda_ft_dev_poster_t *poster,
                            const gda_ft_chan_op_t *op,
                            gda_ft_dev_request_t *req)
{
    return gda_ft_dev_post_warp_memo(poster->chan, &poster->memo, op, req);
}
#endif

#endif
