/*
 * gda_ft device datapath: a dual-path endpoint with failover and replay.
 *
 * An endpoint owns two send queues to one peer: path 0 (primary QP on the
 * primary HCA) and path 1 (backup QP on the backup HCA). Every operation is
 * posted on the active path, signalled, and recorded in a log in post order
 * with the keys of both paths. When the oldest incomplete operation misses
 * its deadline, or an error CQE arrives on its path, the poster switches the
 * endpoint to the other path and replays, in order, every logged operation
 * that has no completion: the WQE is copied from the old ring into the new
 * one with QPN, lkey and rkey rewritten (design §5, rules 1-2). Puts and gets
 * are idempotent and replayed; an atomic whose completion was lost is not:
 * it completes as GDA_FT_DEV_IN_DOUBT (rule 4). With both paths gone every
 * incomplete operation completes as GDA_FT_DEV_NO_PATH (rule 5).
 *
 * Every operation also records the PSNs it occupies on its path. When the
 * peer can say which PSN its end of the abandoned path expected next (after
 * fencing it), gda_ft_ep_replay_resolved() completes what the peer executed
 * and replays only the rest: atomics and sends then happen exactly once, and
 * only a fetching atomic whose reply was lost stays in doubt.
 *
 * Fencing the abandoned QP and re-arming it for failback need the host
 * (verbs-like calls); gda_ft_ep_failback() is the datapath half of it.
 *
 * One poster at a time per endpoint, like the send queues under it.
 */
#ifndef GDA_FT_EP_H_
#define GDA_FT_EP_H_

#include "gda_ft_cq.h"
#include "gda_ft_dev_common.h"

#define GDA_FT_PATH_PRIMARY  0
#define GDA_FT_PATH_BACKUP   1

/* Endpoint states */
enum {
    GDA_FT_EP_HEALTHY     = 0, /* traffic on the primary */
    GDA_FT_EP_FAILED_OVER = 1, /* traffic on the backup */
    GDA_FT_EP_NO_PATH     = 2  /* both paths failed */
};

/* Kind of a logged operation */
enum {
    GDA_FT_OP_PUT    = 1,  /* RDMA WRITE (with or without immediate) */
    GDA_FT_OP_GET    = 2,  /* RDMA READ */
    GDA_FT_OP_ATOMIC = 3,  /* any atomic: never replayed */
    GDA_FT_OP_NOP    = 4,  /* flush marker */
    GDA_FT_OP_SEND   = 5,  /* SEND: replayed (receiver dedups if it must) */
    GDA_FT_OP_PROBE  = 6   /* health probe of one path: never replayed */
};

/* Endpoint flags */
enum {
    /* Strict fencing: a switch does not replay by itself; the host fences
     * the abandoned QP first, then calls gda_ft_ep_replay_pending() */
    GDA_FT_EP_F_DEFER_REPLAY = 1u << 0
};

/* Log entry flags */
enum {
    GDA_FT_OP_F_DONE   = 1u << 0,
    GDA_FT_OP_F_HAS_RADDR = 1u << 1, /* WQE has a raddr segment */
    GDA_FT_OP_F_HAS_DATA  = 1u << 2, /* WQE has a pointer data segment */
    GDA_FT_OP_F_FETCH     = 1u << 3  /* an atomic whose old value is wanted */
};

typedef struct gda_ft_dev_op {
    uint8_t  kind;        /*  0: GDA_FT_OP_* */
    uint8_t  flags;       /*  1: GDA_FT_OP_F_* */
    uint8_t  path;        /*  2: path it is posted on now */
    uint8_t  status;      /*  3: gda_ft_dev_status_t once done */
    uint16_t wqe_idx;     /*  4: index on that path's send queue */
    uint8_t  syndrome;    /*  6: of an error completion */
    uint8_t  replays;     /*  7: times it was replayed */
    uint32_t lkey[2];     /*  8: local key on each path */
    uint32_t rkey[2];     /* 16: remote key on each path */
    uint64_t post_ns;     /* 24: when it was posted; when replayed, the
                             oldest post the new path still owed */
    uint64_t user;        /* 32: caller's cookie */
    uint32_t psn;         /* 40: first PSN on its path (24 bits) */
    uint32_t npkts;       /* 44: PSNs it occupies (0 for a NOP) */
} gda_ft_dev_op_t;

GDA_FT_STATIC_ASSERT(sizeof(gda_ft_dev_op_t) == 48, dev_op_size);

typedef struct gda_ft_dev_ep_counters {
    uint32_t switches;    /* moves to the other path */
    uint32_t replays;     /* operations posted again */
    uint32_t in_doubt;    /* atomics completed in doubt */
    uint32_t failbacks;   /* returns to the primary */
    uint32_t no_path;     /* operations failed for lack of a path */
    uint32_t fences;      /* abandoned QPs moved to ERR (by the host) */
    uint32_t op_errors;   /* operations failed by their own fault */
    uint32_t confirmed;   /* lost completions the peer confirmed executed */
} gda_ft_dev_ep_counters_t;

typedef struct gda_ft_dev_ep {
    uint16_t                 version;       /*   0 */
    uint8_t                  active;        /*   2: path new posts use */
    uint8_t                  state;         /*   3: GDA_FT_EP_* */
    uint8_t                  path_failed[2];/*   4 */
    uint8_t                  flags;         /*   6: GDA_FT_EP_F_* */
    uint8_t                  replay_pending;/*   7: paths to replay from */
    uint32_t                 log_mask;      /*   8: log size - 1 */
    uint32_t                 log_head;      /*  12: oldest not popped */
    uint32_t                 log_tail;      /*  16: next free */
    uint32_t                 mtu;           /*  20: path MTU, 0 = unknown */
    uint64_t                 deadline_ns;   /*  24: 0 = no deadline */
    gda_ft_dev_op_t         *log;           /*  32 */
    uint64_t                 last_cqe_ns[2];/*  40: last completion per path */
    gda_ft_dev_ep_counters_t counters;      /*  56 */
    gda_ft_dev_sq_t          sq[2];         /*  88 */
    uint32_t                 next_psn[2];   /* 216: next PSN of each QP */
    uint32_t                 ring_mask;     /* 224: ring_log entries per
                                               path - 1 */
    uint32_t                 reserved;      /* 228 */
    uint32_t                *ring_log;      /* 232: per path and ring
                                               position, the log index of
                                               the operation whose WQE
                                               starts there */
} gda_ft_dev_ep_t;

GDA_FT_STATIC_ASSERT(sizeof(gda_ft_dev_ep_t) == 240, dev_ep_size);
GDA_FT_STATIC_ASSERT(offsetof(gda_ft_dev_ep_t, sq) == 88, dev_ep_sq_offset);


/*
 * log: log_size entries (power of 2). Each send queue must hold log_size
 * WQEs of the largest kind posted, so that a replay always fits.
 * ring_log: 2 * ring_size entries, ring_size (a power of 2) at least the
 * WQEBBs of either send queue: a completion finds the operations it
 * covers there, in the WQEBBs it retires, instead of scanning the log.
 */
GDA_FT_DEV_FUNC void gda_ft_dev_ep_init(gda_ft_dev_ep_t *ep,
                                        gda_ft_dev_op_t *log,
                                        uint32_t log_size,
                                        uint32_t *ring_log,
                                        uint32_t ring_size,
                                        uint64_t deadline_ns)
{
    uint32_t i;

    ep->version        = GDA_FT_DEV_VERSION;
    ep->active         = GDA_FT_PATH_PRIMARY;
    ep->state          = GDA_FT_EP_HEALTHY;
    ep->path_failed[0] = 0;
    ep->path_failed[1] = 0;
    ep->flags          = 0;
    ep->replay_pending = 0;
    ep->log_mask       = log_size - 1;
    ep->log_head       = 0;
    ep->log_tail       = 0;
    ep->mtu            = 0;
    ep->next_psn[0]    = 0;
    ep->next_psn[1]    = 0;
    ep->deadline_ns    = deadline_ns;
    ep->log            = log;
    ep->ring_log       = ring_log;
    ep->ring_mask      = ring_size - 1;
    ep->reserved       = 0;
    ep->last_cqe_ns[0] = 0;
    ep->last_cqe_ns[1] = 0;
    for (i = 0; i < sizeof(ep->counters) / sizeof(uint32_t); ++i) {
        ((uint32_t*)&ep->counters)[i] = 0;
    }
}

/* Packets (PSNs) a message of `length` bytes occupies on the wire */
GDA_FT_DEV_FUNC uint32_t gda_ft_ep_npkts(const gda_ft_dev_ep_t *ep,
                                         uint32_t length)
{
    uint32_t mtu = (ep->mtu != 0) ? ep->mtu : 4096;

    return (length == 0) ? 1 : (length + mtu - 1) / mtu;
}

GDA_FT_DEV_FUNC gda_ft_dev_op_t *gda_ft_ep_op(const gda_ft_dev_ep_t *ep,
                                              uint32_t idx)
{
    return &ep->log[idx & ep->log_mask];
}

/* The log index of an entry (between log_head and log_tail) */
GDA_FT_DEV_FUNC uint32_t gda_ft_ep_op_index(const gda_ft_dev_ep_t *ep,
                                            const gda_ft_dev_op_t *op)
{
    return ep->log_head + (((uint32_t)(op - ep->log) - ep->log_head) &
                           ep->log_mask);
}

/* Where ring position pos of path names the operation that starts there */
GDA_FT_DEV_FUNC uint32_t *gda_ft_ep_ring_entry(const gda_ft_dev_ep_t *ep,
                                               uint8_t path, uint16_t pos)
{
    return &ep->ring_log[(path * (ep->ring_mask + 1)) + (pos & ep->ring_mask)];
}

GDA_FT_DEV_FUNC uint32_t gda_ft_ep_outstanding(const gda_ft_dev_ep_t *ep)
{
    return ep->log_tail - ep->log_head;
}

/*
 * Reserves a log entry for an operation about to be posted on the active
 * path. Returns NULL when the log is full (retire completions first) or the
 * endpoint has no path.
 */
GDA_FT_DEV_FUNC gda_ft_dev_op_t *
gda_ft_ep_log_begin(gda_ft_dev_ep_t *ep, uint8_t kind, const uint32_t *lkey,
                    const uint32_t *rkey, uint64_t user)
{
    gda_ft_dev_op_t *op;

    if ((ep->state == GDA_FT_EP_NO_PATH) ||
        (gda_ft_ep_outstanding(ep) > ep->log_mask)) {
        return NULL;
    }

    op           = gda_ft_ep_op(ep, ep->log_tail);
    op->kind     = kind;
    op->flags    = 0;
    op->path     = ep->active;
    op->status   = GDA_FT_DEV_INPROGRESS;
    op->syndrome = 0;
    op->replays  = 0;
    op->lkey[0]  = lkey ? lkey[0] : 0;
    op->lkey[1]  = lkey ? lkey[1] : 0;
    op->rkey[0]  = rkey ? rkey[0] : 0;
    op->rkey[1]  = rkey ? rkey[1] : 0;
    op->user     = user;
    return op;
}

/* Gives op the next npkts PSNs of the path it is posted on */
GDA_FT_DEV_FUNC void gda_ft_ep_take_psns(gda_ft_dev_ep_t *ep,
                                         gda_ft_dev_op_t *op, uint32_t npkts)
{
    op->psn                = ep->next_psn[op->path];
    op->npkts              = npkts;
    ep->next_psn[op->path] = gda_ft_dev_psn_add(op->psn, npkts);
}

/*
 * Commits the entry reserved by gda_ft_ep_log_begin() after a post of a
 * message of npkts packets on the wire
 */
GDA_FT_DEV_FUNC gda_ft_dev_status_t
gda_ft_ep_log_commit(gda_ft_dev_ep_t *ep, gda_ft_dev_op_t *op,
                     gda_ft_dev_status_t post_status, uint16_t wqe_idx,
                     unsigned op_flags, uint32_t npkts)
{
    if (post_status != GDA_FT_DEV_OK) {
        return post_status;  /* entry stays free */
    }
    op->wqe_idx = wqe_idx;
    op->flags   = (uint8_t)op_flags;
    op->post_ns = gda_ft_dev_now_ns();
    gda_ft_ep_take_psns(ep, op, npkts);
    *gda_ft_ep_ring_entry(ep, op->path, wqe_idx) = ep->log_tail;
    ++ep->log_tail;
    return GDA_FT_DEV_OK;
}


/* ---- operations ---------------------------------------------------------- */

/* Why no log entry could be had */
GDA_FT_DEV_FUNC gda_ft_dev_status_t
gda_ft_ep_no_entry_status(const gda_ft_dev_ep_t *ep)
{
    return (ep->state == GDA_FT_EP_NO_PATH) ? GDA_FT_DEV_NO_PATH :
                                              GDA_FT_DEV_NO_RESOURCE;
}

/* RDMA WRITE or READ of a registered buffer on the active path */
GDA_FT_DEV_FUNC gda_ft_dev_status_t
gda_ft_ep_rdma(gda_ft_dev_ep_t *ep, uint8_t kind, uint8_t opcode,
               uint64_t laddr, const uint32_t *lkey, uint32_t length,
               uint64_t raddr, const uint32_t *rkey, uint64_t user)
{
    gda_ft_dev_op_t *op = gda_ft_ep_log_begin(ep, kind, lkey, rkey, user);
    uint16_t idx        = 0;
    gda_ft_dev_status_t status;

    if (op == NULL) {
        return gda_ft_ep_no_entry_status(ep);
    }
    /* the post writes idx: call it before reading idx */
    status = gda_ft_sq_post_rdma(&ep->sq[ep->active], opcode, laddr,
                                 lkey[ep->active], length, raddr,
                                 rkey[ep->active], 0, GDA_FT_WQE_SIGNALED,
                                 &idx);
    return gda_ft_ep_log_commit(ep, op, status, idx,
                                GDA_FT_OP_F_HAS_RADDR |
                                ((length != 0) ? GDA_FT_OP_F_HAS_DATA : 0),
                                gda_ft_ep_npkts(ep, length));
}

GDA_FT_DEV_FUNC gda_ft_dev_status_t
gda_ft_ep_put(gda_ft_dev_ep_t *ep, uint64_t laddr, const uint32_t *lkey,
              uint32_t length, uint64_t raddr, const uint32_t *rkey,
              uint64_t user)
{
    return gda_ft_ep_rdma(ep, GDA_FT_OP_PUT, GDA_FT_MLX5_OPCODE_RDMA_WRITE,
                          laddr, lkey, length, raddr, rkey, user);
}

GDA_FT_DEV_FUNC gda_ft_dev_status_t
gda_ft_ep_get(gda_ft_dev_ep_t *ep, uint64_t laddr, const uint32_t *lkey,
              uint32_t length, uint64_t raddr, const uint32_t *rkey,
              uint64_t user)
{
    return gda_ft_ep_rdma(ep, GDA_FT_OP_GET, GDA_FT_MLX5_OPCODE_RDMA_READ,
                          laddr, lkey, length, raddr, rkey, user);
}

GDA_FT_DEV_FUNC gda_ft_dev_status_t
gda_ft_ep_put_inline(gda_ft_dev_ep_t *ep, const void *data, uint32_t length,
                     uint64_t raddr, const uint32_t *rkey, uint64_t user)
{
    gda_ft_dev_op_t *op = gda_ft_ep_log_begin(ep, GDA_FT_OP_PUT, NULL, rkey,
                                              user);
    uint16_t idx        = 0;
    gda_ft_dev_status_t status;

    if (op == NULL) {
        return gda_ft_ep_no_entry_status(ep);
    }
    status = gda_ft_sq_post_rdma_write_inline(&ep->sq[ep->active], data,
                                              length, raddr,
                                              rkey[ep->active],
                                              GDA_FT_WQE_SIGNALED, &idx);
    return gda_ft_ep_log_commit(ep, op, status, idx, GDA_FT_OP_F_HAS_RADDR,
                                gda_ft_ep_npkts(ep, length));
}

/*
 * SEND with immediate of a registered buffer (one pointer data segment) on
 * the active path: the peer's next receive WQE takes the data, its CQE the
 * immediate (host order here). Replayed like a put; with the peer's word
 * after a failover (RESOLVE) a send it executed is not sent again, without
 * it the receiver must drop duplicates (the UCT AM header carries a
 * sequence number in the immediate for that).
 */
GDA_FT_DEV_FUNC gda_ft_dev_status_t
gda_ft_ep_send(gda_ft_dev_ep_t *ep, uint64_t laddr, const uint32_t *lkey,
               uint32_t length, uint32_t imm, uint64_t user)
{
    gda_ft_dev_op_t *op = gda_ft_ep_log_begin(ep, GDA_FT_OP_SEND, lkey, NULL,
                                              user);
    uint16_t idx        = 0;
    gda_ft_dev_status_t status;

    if (op == NULL) {
        return gda_ft_ep_no_entry_status(ep);
    }
    status = gda_ft_sq_post_send_imm(&ep->sq[ep->active], laddr,
                                     (lkey != NULL) ? lkey[ep->active] : 0,
                                     length, imm, GDA_FT_WQE_SIGNALED, &idx);
    return gda_ft_ep_log_commit(ep, op, status, idx,
                                (length != 0) ? GDA_FT_OP_F_HAS_DATA : 0,
                                gda_ft_ep_npkts(ep, length));
}

/* SEND with immediate of up to sq->max_inline bytes copied into the WQE */
GDA_FT_DEV_FUNC gda_ft_dev_status_t
gda_ft_ep_send_inline(gda_ft_dev_ep_t *ep, const void *data, uint32_t length,
                      uint32_t imm, uint64_t user)
{
    gda_ft_dev_op_t *op = gda_ft_ep_log_begin(ep, GDA_FT_OP_SEND, NULL, NULL,
                                              user);
    uint16_t idx        = 0;
    gda_ft_dev_status_t status;

    if (op == NULL) {
        return gda_ft_ep_no_entry_status(ep);
    }
    status = gda_ft_sq_post_send_inline_imm(&ep->sq[ep->active], data, length,
                                            imm, GDA_FT_WQE_SIGNALED, &idx);
    return gda_ft_ep_log_commit(ep, op, status, idx, 0,
                                gda_ft_ep_npkts(ep, length));
}

/* Atomic opcodes of gda_ft_ep_atomic() */
enum {
    GDA_FT_ATOMIC_FADD64 = 0,  /* operand[0] = add */
    GDA_FT_ATOMIC_CSWAP64,     /* operand[0] = compare, [1] = swap */
    GDA_FT_ATOMIC_MASKED_CS,   /* compare, swap, compare_mask, swap_mask */
    GDA_FT_ATOMIC_MASKED_FA,   /* add, field boundary */
    /* Flag: the caller does not want the old value, so an atomic the peer
     * is known to have executed completes without it after a failover */
    GDA_FT_ATOMIC_F_POSTED = 1u << 8
};

/*
 * Posts an atomic of size 4 or 8 (4 only for the masked kinds). The old
 * remote value lands big-endian at laddr (size bytes).
 */
GDA_FT_DEV_FUNC gda_ft_dev_status_t
gda_ft_ep_atomic(gda_ft_dev_ep_t *ep, unsigned kind, unsigned size,
                 const uint64_t *operand, uint64_t laddr,
                 const uint32_t *lkey, uint64_t raddr, const uint32_t *rkey,
                 uint64_t user)
{
    gda_ft_dev_op_t *op = gda_ft_ep_log_begin(ep, GDA_FT_OP_ATOMIC, lkey,
                                              rkey, user);
    gda_ft_dev_sq_t *sq = &ep->sq[ep->active];
    uint32_t lk         = lkey[ep->active], rk = rkey[ep->active];
    gda_ft_dev_status_t status;
    uint16_t idx        = 0;

    if (op == NULL) {
        return gda_ft_ep_no_entry_status(ep);
    }

    switch (kind & ~GDA_FT_ATOMIC_F_POSTED) {
    case GDA_FT_ATOMIC_FADD64:
        status = gda_ft_sq_post_atomic_fa(sq, laddr, lk, raddr, rk,
                                          operand[0], GDA_FT_WQE_SIGNALED,
                                          &idx);
        break;
    case GDA_FT_ATOMIC_CSWAP64:
        status = gda_ft_sq_post_atomic_cs(sq, laddr, lk, raddr, rk,
                                          operand[0], operand[1],
                                          GDA_FT_WQE_SIGNALED, &idx);
        break;
    case GDA_FT_ATOMIC_MASKED_CS:
        status = (size == 4) ?
                 gda_ft_sq_post_masked_cs32(sq, laddr, lk, raddr, rk,
                                            (uint32_t)operand[0],
                                            (uint32_t)operand[1],
                                            (uint32_t)operand[2],
                                            (uint32_t)operand[3],
                                            GDA_FT_WQE_SIGNALED, &idx) :
                 gda_ft_sq_post_masked_cs64(sq, laddr, lk, raddr, rk,
                                            operand[0], operand[1],
                                            operand[2], operand[3],
                                            GDA_FT_WQE_SIGNALED, &idx);
        break;
    case GDA_FT_ATOMIC_MASKED_FA:
        status = (size == 4) ?
                 gda_ft_sq_post_masked_fa32(sq, laddr, lk, raddr, rk,
                                            (uint32_t)operand[0],
                                            (uint32_t)operand[1],
                                            GDA_FT_WQE_SIGNALED, &idx) :
                 gda_ft_sq_post_masked_fa64(sq, laddr, lk, raddr, rk,
                                            operand[0], operand[1],
                                            GDA_FT_WQE_SIGNALED, &idx);
        break;
    default:
        status = GDA_FT_DEV_ERROR;
        break;
    }

    return gda_ft_ep_log_commit(ep, op, status, idx,
                                GDA_FT_OP_F_HAS_RADDR | GDA_FT_OP_F_HAS_DATA |
                                ((kind & GDA_FT_ATOMIC_F_POSTED) ? 0 :
                                 GDA_FT_OP_F_FETCH), 1);
}

/* A signalled NOP: completes after everything posted before it */
GDA_FT_DEV_FUNC gda_ft_dev_status_t gda_ft_ep_nop(gda_ft_dev_ep_t *ep,
                                                  uint64_t user)
{
    gda_ft_dev_op_t *op = gda_ft_ep_log_begin(ep, GDA_FT_OP_NOP, NULL, NULL,
                                              user);
    uint16_t idx        = 0;
    gda_ft_dev_status_t status;

    if (op == NULL) {
        return gda_ft_ep_no_entry_status(ep);
    }
    status = gda_ft_sq_post_nop(&ep->sq[ep->active], GDA_FT_WQE_SIGNALED,
                                &idx);
    return gda_ft_ep_log_commit(ep, op, status, idx, 0, 0);
}

/* Rings the doorbell of the active path (and of the other one if used) */
GDA_FT_DEV_FUNC void gda_ft_ep_ring(gda_ft_dev_ep_t *ep)
{
    gda_ft_sq_ring_db(&ep->sq[ep->active]);
}

/* Whether operations are outstanding on a path */
GDA_FT_DEV_FUNC int gda_ft_ep_path_busy(const gda_ft_dev_ep_t *ep,
                                        uint8_t path)
{
    const gda_ft_dev_op_t *op;
    uint32_t idx;

    for (idx = ep->log_head; idx != ep->log_tail; ++idx) {
        op = gda_ft_ep_op(ep, idx);
        if (!(op->flags & GDA_FT_OP_F_DONE) && (op->path == path)) {
            return 1;
        }
    }
    return 0;
}

/* ---- completions --------------------------------------------------------- */

/* Marks op done with a status; the counters see in-doubt and no-path */
GDA_FT_DEV_FUNC void gda_ft_ep_op_done(gda_ft_dev_ep_t *ep,
                                       gda_ft_dev_op_t *op,
                                       gda_ft_dev_status_t status)
{
    op->status  = (uint8_t)status;
    op->flags  |= GDA_FT_OP_F_DONE;
    if (op->kind == GDA_FT_OP_PROBE) {
        return;     /* the host's own traffic: not counted */
    }
    if (status == GDA_FT_DEV_IN_DOUBT) {
        ++ep->counters.in_doubt;
    } else if (status == GDA_FT_DEV_NO_PATH) {
        ++ep->counters.no_path;
    }
}

GDA_FT_DEV_FUNC gda_ft_dev_status_t gda_ft_ep_switch(gda_ft_dev_ep_t *ep,
                                                     uint8_t failed_path);

GDA_FT_DEV_FUNC void gda_ft_ep_replay_from(gda_ft_dev_ep_t *ep,
                                           uint8_t failed_path);

/*
 * Applies a CQE of this endpoint's QP on `path`: every operation posted on
 * that path up to the completed WQE is done (completions are in order). An
 * error CQE on a path with outstanding operations fails the path over. CQEs
 * naming no outstanding operation (flush errors of an abandoned QP) are
 * ignored. Returns PATH_SWITCHED when the CQE caused a switch.
 */
GDA_FT_DEV_FUNC gda_ft_dev_status_t
gda_ft_ep_handle_cqe(gda_ft_dev_ep_t *ep, uint8_t path,
                     const gda_ft_dev_cqe_info_t *info)
{
    uint16_t ci, span, pos;
    gda_ft_dev_op_t *op;
    uint32_t idx;

    if (gda_ft_cq_opcode_is_error(info->opcode)) {
        if (ep->replay_pending & (1u << path)) {
            /* flush of a path already abandoned: its operations await a
             * deferred replay */
            return GDA_FT_DEV_OK;
        }
        for (idx = ep->log_head; idx != ep->log_tail; ++idx) {
            op = gda_ft_ep_op(ep, idx);
            if ((op->flags & GDA_FT_OP_F_DONE) || (op->path != path)) {
                continue;
            }
            op->syndrome = info->syndrome;
            if (gda_ft_dev_syndrome_is_op_error(info->syndrome)) {
                /* The operation itself is wrong (bad key, bounds, rights):
                 * another path would refuse it too. It fails alone; its QP
                 * is in ERR now, so the others move to the other path. */
                gda_ft_ep_op_done(ep, op, GDA_FT_DEV_ERROR);
                ++ep->counters.op_errors;
            }
            return gda_ft_ep_switch(ep, path);
        }
        return GDA_FT_DEV_OK;   /* flush of an abandoned path */
    }

    /* The CQE completes the ring's WQEs from its oldest one (ci) through
     * wqe_counter. Match operations by ring position, not log order: a
     * deferred replay appends old operations behind the guardian's newer
     * probes. Each retired position names the operation that started
     * there, if one still does: the work is the WQEBBs retired, not the
     * operations outstanding, which a scan of the log visited for every
     * CQE (docs/benchmarks.md: no difference on the software HCA, whose
     * engine dominates; a scan of 256 entries outlasts a hardware
     * completion). A CQE outside the ring (of a ring since reset)
     * completes nothing. */
    ci = ep->sq[path].ci;
    if (!gda_ft_sq_retire(&ep->sq[path], info->wqe_counter)) {
        return GDA_FT_DEV_OK;
    }
    span = (uint16_t)(info->wqe_counter - ci);
    ep->last_cqe_ns[path] = gda_ft_dev_now_ns();
    for (pos = ci; (uint16_t)(pos - ci) <= span; ++pos) {
        idx = *gda_ft_ep_ring_entry(ep, path, pos);
        if ((uint32_t)(idx - ep->log_head) >=
            (uint32_t)(ep->log_tail - ep->log_head)) {
            continue;   /* no operation of the log starts there */
        }
        op = gda_ft_ep_op(ep, idx);
        if ((op->flags & GDA_FT_OP_F_DONE) || (op->path != path) ||
            (op->wqe_idx != pos)) {
            continue;
        }
        gda_ft_ep_op_done(ep, op, (op->replays > 0) ?
                                  GDA_FT_DEV_PATH_SWITCHED : GDA_FT_DEV_OK);
    }
    return GDA_FT_DEV_OK;
}

/*
 * Pops the oldest operation if it is done; returns 1 and fills *out, or 0.
 * Completion callbacks run in post order.
 */
GDA_FT_DEV_FUNC int gda_ft_ep_pop(gda_ft_dev_ep_t *ep, gda_ft_dev_op_t *out)
{
    gda_ft_dev_op_t *op;

    if (ep->log_head == ep->log_tail) {
        return 0;
    }
    op = gda_ft_ep_op(ep, ep->log_head);
    if (!(op->flags & GDA_FT_OP_F_DONE)) {
        return 0;
    }
    *out = *op;
    ++ep->log_head;
    return 1;
}

/* ---- failover ------------------------------------------------------------ */

/*
 * Since when path has owed a completion: the post time of its oldest
 * incomplete operation, or now_ns when it owes none
 */
GDA_FT_DEV_FUNC uint64_t gda_ft_ep_path_owes_since(const gda_ft_dev_ep_t *ep,
                                                   uint8_t path,
                                                   uint64_t now_ns)
{
    uint64_t since = now_ns;
    const gda_ft_dev_op_t *op;
    uint32_t idx;

    for (idx = ep->log_head; idx != ep->log_tail; ++idx) {
        op = gda_ft_ep_op(ep, idx);
        if (!(op->flags & GDA_FT_OP_F_DONE) && (op->path == path) &&
            ((int64_t)(op->post_ns - since) < 0)) {
            since = op->post_ns;
        }
    }
    return since;
}

/*
 * Copies a WQE from one ring to the other, rewriting QPN and keys. The copy
 * queues behind what path `to` already owes, so it takes post time
 * owed_since: a replay must not restart the clock of a path that has
 * answered nothing since before it (the deadline check reads the log in
 * order and would find the fresh copy first).
 */
GDA_FT_DEV_FUNC gda_ft_dev_status_t
gda_ft_ep_replay_op(gda_ft_dev_ep_t *ep, gda_ft_dev_op_t *op, uint8_t to,
                    uint64_t owed_since)
{
    const gda_ft_dev_sq_t *from_sq = &ep->sq[op->path];
    gda_ft_dev_sq_t *to_sq         = &ep->sq[to];
    const gda_ft_mlx5_ctrl_seg_t *ctrl =
            (const gda_ft_mlx5_ctrl_seg_t*)gda_ft_wqe_seg(from_sq,
                                                          op->wqe_idx, 0);
    unsigned ds = GDA_FT_MLX5_CTRL_DS(ctrl), seg, i;
    gda_ft_mlx5_ctrl_seg_t *new_ctrl;
    gda_ft_mlx5_raddr_seg_t *raddr;
    gda_ft_mlx5_data_seg_t *data;
    gda_ft_dev_status_t status;
    uint8_t *dst, *src;
    uint16_t idx;

    if (GDA_FT_MLX5_CTRL_WQE_IDX(ctrl) != op->wqe_idx) {
        /* the old ring no longer holds this operation's WQE */
        return GDA_FT_DEV_ERROR;
    }

    status = gda_ft_sq_reserve(to_sq, ds, &idx);
    if (status != GDA_FT_DEV_OK) {
        return status;
    }

    for (seg = 0; seg < ds; ++seg) {
        src = (uint8_t*)gda_ft_wqe_seg(from_sq, op->wqe_idx, seg);
        dst = (uint8_t*)gda_ft_wqe_seg(to_sq, idx, seg);
        for (i = 0; i < GDA_FT_MLX5_DS_SIZE; ++i) {
            dst[i] = src[i];
        }
    }

    if (op->flags & GDA_FT_OP_F_HAS_RADDR) {
        raddr       = (gda_ft_mlx5_raddr_seg_t*)gda_ft_wqe_seg(to_sq, idx, 1);
        raddr->rkey = gda_ft_htobe32(op->rkey[to]);
    }
    if (op->flags & GDA_FT_OP_F_HAS_DATA) {
        /* the local buffer is the last segment of every such WQE */
        data       = (gda_ft_mlx5_data_seg_t*)gda_ft_wqe_seg(to_sq, idx,
                                                             ds - 1);
        data->lkey = gda_ft_htobe32(op->lkey[to]);
    }

    /* The copied ctrl keeps opcode, opmod, flags and immediate; only the
     * WQE index and the QPN change */
    new_ctrl = (gda_ft_mlx5_ctrl_seg_t*)gda_ft_wqe_seg(to_sq, idx, 0);
    new_ctrl->opmod_idx_opcode = gda_ft_htobe32(
            (GDA_FT_MLX5_CTRL_OPMOD(ctrl) << 24) | ((uint32_t)idx << 8) |
            GDA_FT_MLX5_CTRL_OPCODE(ctrl));
    new_ctrl->qpn_ds = gda_ft_htobe32((to_sq->qpn << 8) | ds);
    to_sq->last_wqe_idx = idx;
    op->path    = to;
    op->wqe_idx = idx;
    *gda_ft_ep_ring_entry(ep, to, idx) = gda_ft_ep_op_index(ep, op);
    op->post_ns = owed_since;
    gda_ft_ep_take_psns(ep, op, op->npkts);
    ++op->replays;
    ++ep->counters.replays;
    return GDA_FT_DEV_OK;
}

/*
 * The path failed_path is gone: new posts go to the other path, and every
 * operation outstanding on failed_path is replayed there in order (atomics
 * complete in doubt instead). With no path left, everything outstanding
 * completes as NO_PATH. Returns PATH_SWITCHED or NO_PATH.
 */
GDA_FT_DEV_FUNC gda_ft_dev_status_t gda_ft_ep_switch(gda_ft_dev_ep_t *ep,
                                                     uint8_t failed_path)
{
    uint8_t other = (uint8_t)(1 - failed_path);
    gda_ft_dev_op_t *op;
    uint32_t idx;

    ep->path_failed[failed_path] = 1;
    if (ep->path_failed[other]) {
        ep->state = GDA_FT_EP_NO_PATH;
        for (idx = ep->log_head; idx != ep->log_tail; ++idx) {
            op = gda_ft_ep_op(ep, idx);
            if (!(op->flags & GDA_FT_OP_F_DONE)) {
                gda_ft_ep_op_done(ep, op, GDA_FT_DEV_NO_PATH);
            }
        }
        return GDA_FT_DEV_NO_PATH;
    }

    if (ep->active == failed_path) {
        ep->active = other;
        ep->state  = (other == GDA_FT_PATH_PRIMARY) ? GDA_FT_EP_HEALTHY :
                                                      GDA_FT_EP_FAILED_OVER;
        ++ep->counters.switches;
    }

    if (ep->flags & GDA_FT_EP_F_DEFER_REPLAY) {
        ep->replay_pending |= (uint8_t)(1u << failed_path);
    } else {
        gda_ft_ep_replay_from(ep, failed_path);
    }
    return GDA_FT_DEV_PATH_SWITCHED;
}

/*
 * Whether the peer executed op, given the PSN its end of op's path expected
 * next after it was fenced: every packet of op lies below it
 */
GDA_FT_DEV_FUNC int gda_ft_ep_op_executed(const gda_ft_dev_op_t *op,
                                          uint32_t epsn)
{
    return gda_ft_dev_psn_diff(gda_ft_dev_psn_add(op->psn, op->npkts),
                               epsn) <= 0;
}

/*
 * Settles what failed_path left outstanding, in order. With the peer's word
 * (known != 0: epsn is what its fenced end of the path expected next), an
 * operation it executed is complete, except that a get and a fetching
 * atomic lost their data on the way back: the get is replayed, the atomic
 * is in doubt. Without it, atomics are in doubt and the rest is replayed.
 * Probes fail either way: they test a path, not the peer.
 */
GDA_FT_DEV_FUNC void gda_ft_ep_settle(gda_ft_dev_ep_t *ep, uint8_t failed_path,
                                      int known, uint32_t epsn)
{
    uint8_t other = (uint8_t)(1 - failed_path);
    uint64_t owed_since;
    gda_ft_dev_op_t *op;
    uint32_t idx;
    int replayed = 0;

    owed_since = gda_ft_ep_path_owes_since(ep, other, gda_ft_dev_now_ns());
    for (idx = ep->log_head; idx != ep->log_tail; ++idx) {
        op = gda_ft_ep_op(ep, idx);
        if ((op->flags & GDA_FT_OP_F_DONE) || (op->path != failed_path)) {
            continue;
        }
        if (op->kind == GDA_FT_OP_PROBE) {
            gda_ft_ep_op_done(ep, op, GDA_FT_DEV_ERROR);  /* path is bad */
            continue;
        }
        if (known && gda_ft_ep_op_executed(op, epsn) &&
            (op->kind != GDA_FT_OP_GET)) {
            if (op->flags & GDA_FT_OP_F_FETCH) {
                gda_ft_ep_op_done(ep, op, GDA_FT_DEV_IN_DOUBT);
            } else {
                gda_ft_ep_op_done(ep, op, GDA_FT_DEV_OK);
                ++ep->counters.confirmed;
            }
            continue;
        }
        if (!known && (op->kind == GDA_FT_OP_ATOMIC)) {
            /* It may or may not have been applied: never apply it twice */
            gda_ft_ep_op_done(ep, op, GDA_FT_DEV_IN_DOUBT);
            continue;
        }
        if (gda_ft_ep_replay_op(ep, op, other, owed_since) !=
            GDA_FT_DEV_OK) {
            gda_ft_ep_op_done(ep, op, GDA_FT_DEV_ERROR);
            continue;
        }
        replayed = 1;
    }

    /* The abandoned ring will never complete anything: forget it */
    ep->sq[failed_path].ci = ep->sq[failed_path].pi;
    ep->replay_pending    &= (uint8_t)~(1u << failed_path);
    if (replayed) {
        gda_ft_sq_ring_db(&ep->sq[other]);
    }
}

/* Replays what failed_path left outstanding, not knowing what the peer
 * executed: atomics complete in doubt */
GDA_FT_DEV_FUNC void gda_ft_ep_replay_from(gda_ft_dev_ep_t *ep,
                                           uint8_t failed_path)
{
    gda_ft_ep_settle(ep, failed_path, 0, 0);
}

/*
 * Deferred replay with the peer's word: it fenced its end of failed_path
 * and reports the PSN that end expected next. Needs ep->mtu.
 */
GDA_FT_DEV_FUNC void gda_ft_ep_replay_resolved(gda_ft_dev_ep_t *ep,
                                               uint8_t failed_path,
                                               uint32_t epsn)
{
    if ((ep->replay_pending & (1u << failed_path)) &&
        (ep->state != GDA_FT_EP_NO_PATH)) {
        gda_ft_ep_settle(ep, failed_path, ep->mtu != 0, epsn);
    }
}

/* Strict fencing: the host fenced the abandoned QPs, now replay */
GDA_FT_DEV_FUNC void gda_ft_ep_replay_pending(gda_ft_dev_ep_t *ep)
{
    uint8_t path;

    for (path = 0; path < GDA_FT_NUM_PATHS; ++path) {
        if ((ep->replay_pending & (1u << path)) &&
            (ep->state != GDA_FT_EP_NO_PATH)) {
            gda_ft_ep_replay_from(ep, path);
        }
    }
    ep->replay_pending = 0;
}

/*
 * Posts a health probe on `path`, active or not: an inline RDMA WRITE of
 * `length` bytes, signalled and logged like any operation, except that a
 * failure of the path fails the probe instead of moving it.
 */
GDA_FT_DEV_FUNC gda_ft_dev_status_t
gda_ft_ep_probe(gda_ft_dev_ep_t *ep, uint8_t path, const void *data,
                uint32_t length, uint64_t raddr, const uint32_t *rkey,
                uint64_t user)
{
    uint8_t active = ep->active;
    gda_ft_dev_op_t *op;
    gda_ft_dev_status_t status;
    uint16_t idx = 0;

    ep->active = path;     /* log_begin records the posting path */
    op         = gda_ft_ep_log_begin(ep, GDA_FT_OP_PROBE, NULL, rkey, user);
    ep->active = active;
    if (op == NULL) {
        return gda_ft_ep_no_entry_status(ep);
    }

    status = gda_ft_sq_post_rdma_write_inline(&ep->sq[path], data, length,
                                              raddr, rkey[path],
                                              GDA_FT_WQE_SIGNALED, &idx);
    status = gda_ft_ep_log_commit(ep, op, status, idx,
                                  GDA_FT_OP_F_HAS_RADDR,
                                  gda_ft_ep_npkts(ep, length));
    if (status == GDA_FT_DEV_OK) {
        gda_ft_sq_ring_db(&ep->sq[path]);
    }
    return status;
}

/*
 * Deadline check: fails over the path of the oldest incomplete operation
 * when that path has made no progress for deadline_ns: nothing completed on
 * it since the operation was posted, or since its last completion. Queueing
 * behind a long transfer that keeps completing is not a failure. Poll the
 * CQs first, so that a completion already written is not mistaken for a
 * lost one. Returns PATH_SWITCHED, NO_PATH, or OK when nothing is late.
 */
GDA_FT_DEV_FUNC gda_ft_dev_status_t gda_ft_ep_check_deadline(
        gda_ft_dev_ep_t *ep, uint64_t now_ns)
{
    gda_ft_dev_op_t *op;
    uint64_t since;
    uint32_t idx;

    if ((ep->deadline_ns == 0) || (ep->state == GDA_FT_EP_NO_PATH)) {
        return GDA_FT_DEV_OK;
    }

    for (idx = ep->log_head; idx != ep->log_tail; ++idx) {
        op = gda_ft_ep_op(ep, idx);
        if ((op->flags & GDA_FT_OP_F_DONE) ||
            (ep->replay_pending & (1u << op->path))) {
            continue;   /* done, or awaiting a deferred replay */
        }
        since = (op->post_ns > ep->last_cqe_ns[op->path]) ? op->post_ns :
                ep->last_cqe_ns[op->path];
        if ((int64_t)(now_ns - since) > (int64_t)ep->deadline_ns) {
            return gda_ft_ep_switch(ep, op->path);
        }
        return GDA_FT_DEV_OK;
    }
    return GDA_FT_DEV_OK;
}

/*
 * Datapath half of failback: the host re-armed the primary QP (RESET ->
 * RTS with fresh PSNs on both sides, its CQ drained of the old QP's
 * completions and then its ring reset to index 0: a CQE names only a ring
 * index) and probed it. New posts go to the primary again; what is
 * outstanding on the backup completes there.
 */
GDA_FT_DEV_FUNC void gda_ft_ep_failback(gda_ft_dev_ep_t *ep)
{
    ep->path_failed[GDA_FT_PATH_PRIMARY] = 0;
    if (ep->state == GDA_FT_EP_NO_PATH) {
        ep->path_failed[GDA_FT_PATH_BACKUP] = 1;
    }
    ep->active = GDA_FT_PATH_PRIMARY;
    ep->state  = GDA_FT_EP_HEALTHY;
    ++ep->counters.failbacks;
}

/* The backup path came back (re-armed by the host) */
GDA_FT_DEV_FUNC void gda_ft_ep_path_restored(gda_ft_dev_ep_t *ep,
                                             uint8_t path)
{
    ep->path_failed[path] = 0;
    if (ep->state == GDA_FT_EP_NO_PATH) {
        ep->active = path;
        ep->state  = (path == GDA_FT_PATH_PRIMARY) ? GDA_FT_EP_HEALTHY :
                                                     GDA_FT_EP_FAILED_OVER;
    }
}

#endif
