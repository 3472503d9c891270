/*
 * gda_ft device datapath: the operation a channel posts, and what it
 * occupies there.
 *
 * What a post needs of the channel that does not change (its geometry) is
 * read once, before the reservation's atomics where a poster's memo names
 * it: an operation's shape (WQEs, segments, WQEBBs, packets) is worked out
 * once per post, from the operation and the geometry alone.
 */
#ifndef GDA_FT_CHAN_OP_H_
#define GDA_FT_CHAN_OP_H_

#include "gda_ft_chan_types.h"
#include "gda_ft_wqe.h"
#include "gda_ft_dev_common.h"

/* One operation of a post, as the channel functions take it */
typedef struct gda_ft_chan_op {
    uint8_t  kind;        /* GDA_FT_CHAN_OP_* */
    uint8_t  opcode;      /* GDA_FT_MLX5_OPCODE_* */
    uint8_t  inl;         /* put, send: data inline from `operand`
                             (<= 16 bytes) */
    uint8_t  flags;       /* GDA_FT_CHAN_OP_F_* */
    uint32_t length;      /* put/get/send bytes; atomics: 8, or 4
                             (masked) */
    uint64_t laddr;       /* local buffer (atomics: where the old value
                             lands, big-endian) */
    uint32_t lkey[2];
    uint64_t raddr;       /* send: its immediate data (low 32 bits) */
    uint32_t rkey[2];
    uint64_t operand[2];  /* atomics: add or swap, compare; inline data */
    uint64_t mask[2];     /* masked atomics: swap mask or field boundary,
                             compare mask */
} gda_ft_chan_op_t;

/* Operation flags */
enum {
    /* The WQE waits for every earlier one of the channel to complete
     * (reads and atomics included): a UCT fence. A replay keeps it. */
    GDA_FT_CHAN_OP_F_FENCE = 1u << 0
};


/* The buffers of an operation: [laddr, +length) and raddr with both
 * paths' keys; its operands, masks and flags zero. What every builder
 * starts from (the device API's from a memory list, the UCT host
 * channel's); the kind and opcode are the builder's. */
GDA_FT_DEV_FUNC void gda_ft_chan_op_init(gda_ft_chan_op_t *op,
                                         uint64_t laddr, const uint32_t *lkey,
                                         uint32_t length, uint64_t raddr,
                                         const uint32_t *rkey)
{
    op->inl        = 0;
    op->flags      = 0;
    op->length     = length;
    op->laddr      = laddr;
    op->lkey[0]    = lkey[0];
    op->lkey[1]    = lkey[1];
    op->raddr      = raddr;
    op->rkey[0]    = rkey[0];
    op->rkey[1]    = rkey[1];
    op->operand[0] = 0;
    op->operand[1] = 0;
    op->mask[0]    = 0;
    op->mask[1]    = 0;
}


/* The channel's geometry, as a post reads it when no memo holds it */
GDA_FT_DEV_FUNC void gda_ft_chan_geom_load(const gda_ft_chan_t *chan,
                                           gda_ft_chan_geom_t *geom)
{
    geom->health    = chan->health;
    geom->wqebb_cnt = chan->wqebb_cnt;
    geom->max_chunk = chan->max_chunk;
    geom->mtu_shift = gda_ft_dev_log2((chan->mtu != 0) ? chan->mtu : 4096);
}

/* Packets of one WQE carrying `length` bytes (none: one packet) */
GDA_FT_DEV_FUNC uint32_t gda_ft_chan_pkts(const gda_ft_chan_geom_t *geom,
                                          uint32_t length)
{
    return (length == 0) ? 1 : ((length - 1) >> geom->mtu_shift) + 1;
}

/*
 * What an operation occupies, worked out once per post from the operation
 * and the geometry alone: a warp's post reads nothing of the channel for
 * it, and nothing after its reservation's atomics has to read it again.
 */
typedef struct gda_ft_chan_shape {
    uint32_t wqebbs;   /* of all its WQEs */
    uint32_t npkts;    /* PSNs of all its WQEs */
    uint32_t nwqe;     /* its WQEs: more than one for a put or get longer
                          than max_chunk, cut into signalled chunks */
    uint8_t  ds;       /* segments of each WQE */
    uint8_t  valid;    /* well formed, and within half the ring */
} gda_ft_chan_shape_t;

GDA_FT_DEV_FUNC void gda_ft_chan_shape(const gda_ft_chan_geom_t *geom,
                                       const gda_ft_chan_op_t *op,
                                       gda_ft_chan_shape_t *shape)
{
    uint32_t length = op->length, nwqe = 1, tail;
    unsigned ds;
    int valid;

    switch (op->kind) {
    case GDA_FT_CHAN_OP_SIGNAL:
    case GDA_FT_CHAN_OP_ATOMIC:
        /* ctrl raddr atomic data; an 8-byte masked compare-swap has two
         * atomic segments */
        valid = !op->inl &&
                ((length == sizeof(uint64_t)) ||
                 ((length == sizeof(uint32_t)) &&
                  ((op->opcode == GDA_FT_MLX5_OPCODE_ATOMIC_MASKED_CS) ||
                   (op->opcode == GDA_FT_MLX5_OPCODE_ATOMIC_MASKED_FA))));
        ds    = ((op->opcode == GDA_FT_MLX5_OPCODE_ATOMIC_MASKED_CS) &&
                 (length == sizeof(uint64_t))) ? 5 : 4;
        shape->npkts = 1;
        break;
    case GDA_FT_CHAN_OP_SEND:
        /* ctrl, then the data: one WQE, a message is not cut */
        if (op->inl) {
            valid = (length <= sizeof(op->operand));
            ds    = 1 + gda_ft_wqe_inline_ds(length);
        } else {
            valid = (length <= geom->max_chunk);
            ds    = (length != 0) ? 2 : 1;
        }
        shape->npkts = gda_ft_chan_pkts(geom, length);
        break;
    case GDA_FT_CHAN_OP_PUT:
    case GDA_FT_CHAN_OP_GET:
        /* ctrl raddr [data] */
        if (op->inl) {
            valid = (op->kind == GDA_FT_CHAN_OP_PUT) &&
                    (length <= sizeof(op->operand));
            ds    = 2 + gda_ft_wqe_inline_ds(length);
            shape->npkts = 1;
            break;
        }
        valid = gda_ft_wqe_length_valid(length);
        ds    = (length != 0) ? 3 : 2;
        if (length <= geom->max_chunk) {
            shape->npkts = gda_ft_chan_pkts(geom, length);
            break;
        }
        nwqe  = (length + geom->max_chunk - 1) / geom->max_chunk;
        tail  = length - (nwqe - 1) * geom->max_chunk;
        shape->npkts = (nwqe - 1) * gda_ft_chan_pkts(geom, geom->max_chunk) +
                       gda_ft_chan_pkts(geom, tail);
        break;
    default:
        valid        = 0;
        ds           = 1;
        shape->npkts = 1;
        break;
    }
    shape->nwqe   = nwqe;
    shape->ds     = (uint8_t)ds;
    shape->wqebbs = nwqe * gda_ft_wqe_ds_to_wqebbs(ds);
    shape->valid  = valid && (shape->wqebbs <= geom->wqebb_cnt / 2);
}

/* Whether an operation is well formed (keys of both paths are needed), for
 * a caller that has only the channel */
GDA_FT_DEV_FUNC int gda_ft_chan_op_valid(const gda_ft_chan_t *chan,
                                         const gda_ft_chan_op_t *op)
{
    gda_ft_chan_geom_t geom;
    gda_ft_chan_shape_t shape;

    gda_ft_chan_geom_load(chan, &geom);
    gda_ft_chan_shape(&geom, op, &shape);
    return shape.valid;
}

#endif
