/*
 * gda_ft device datapath: posting into a concurrent channel (design §6.2).
 *
 * A post is three steps, none of which holds anything while it waits for
 * ring space:
 *   1. reserve: one CAS on the reservation word takes n WQEBBs, if the
 *      channel is not FROZEN and the ring has room beyond `completed`
 *      (expecting the word the last publication left, when nobody
 *      reserved since: then the post's turn has come);
 *   2. write:   the WQEs, at ring index logical - ring_off of the path
 *      the reservation names (it cannot change before the reservation is
 *      published: a switch waits for that);
 *   3. publish: in ring order, when `ready` reaches the reservation: the
 *      slots, whole (their PSNs are known only now), doorbell record,
 *      doorbell, then `ready` moves on.
 *
 * The operation and its shape are gda_ft_chan_op.h's, ring indices and the
 * channel's shared indices gda_ft_chan_ring.h's, reading completions
 * gda_ft_chan_poll.h's.
 */
#ifndef GDA_FT_CHAN_POST_H_
#define GDA_FT_CHAN_POST_H_

#include "gda_ft_chan_op.h"
#include "gda_ft_chan_ring.h"
#include "gda_ft_dev_atomic.h"
#include "gda_ft_wqe.h"
#include "gda_ft_dev_common.h"

/* A reservation: where a post writes and publishes */
typedef struct gda_ft_chan_resv {
    uint64_t seq;     /* logical index of its first WQEBB */
    uint64_t off;     /* its path's ring_off: ring index = seq - off (fixed
                         while the reservation is unpublished; a post uses
                         its low 16 bits only) */
    uint64_t word;    /* the word its CAS left (what a memo remembers) */
    uint32_t psn;     /* the path's next PSN, when `turn` */
    uint8_t  path;
    uint8_t  turn;    /* its turn has come and psn is known: its CAS
                         proved that nobody reserved since the publication
                         that a memo, or `published`, remembers */
    uint32_t gen;     /* the peer's health generation, and the one this */
    uint32_t seen;    /* channel applied (gda_ft_chan_resv_follow) */
} gda_ft_chan_resv_t;


/* ---- 1. reserve ---------------------------------------------------------- */

/* The peer's switch hint for a reservation: loaded with it, each load on
 * its own, and looked at only after the publication
 * (gda_ft_chan_resv_follow), so that neither the CAS nor anything else
 * waits for it */
GDA_FT_DEV_FUNC void gda_ft_chan_resv_hint(gda_ft_chan_resv_t *resv,
                                           const gda_ft_chan_t *chan,
                                           const gda_ft_chan_health_t *health)
{
    resv->gen  = 0;
    resv->seen = 0;
    if (health != NULL) {
        resv->seen = gda_ft_atomic_load_rlx32(&chan->seen_fail_gen);
        resv->gen  = gda_ft_atomic_load_rlx32(&health->fail_gen);
    }
}

/* Whether the peer's channels left the primary the reservation posts on:
 * the poster progresses the channel after publishing */
GDA_FT_DEV_FUNC int gda_ft_chan_resv_follow(const gda_ft_chan_resv_t *resv)
{
    return (resv->gen != resv->seen) && (resv->path == GDA_FT_CHAN_PRIMARY);
}

/* A reservation whose CAS found the word `w`, n WQEBBs at ring offset
 * off. `turn`: the CAS expected w as a publication left it, which left
 * psn too; else psn is read in its turn */
GDA_FT_DEV_FUNC void gda_ft_chan_resv_set(gda_ft_chan_resv_t *resv,
                                          uint64_t w, uint32_t n,
                                          uint64_t off, uint32_t psn,
                                          uint8_t turn)
{
    resv->seq  = GDA_FT_CHAN_WORD_INDEX(w);
    resv->off  = off;
    resv->word = w + n;
    resv->psn  = psn;
    resv->path = GDA_FT_CHAN_WORD_PATH(w);
    resv->turn = turn;
}

/* Whether n WQEBBs from logical index idx fit in a ring of wqebb_cnt
 * whose WQEBBs before `completed` are free */
GDA_FT_DEV_FUNC int gda_ft_chan_fits(uint64_t idx, uint32_t n,
                                     uint64_t completed, uint32_t wqebb_cnt)
{
    return (idx + n - completed) <= wqebb_cnt;
}

/*
 * `completed` as a room check reads it: room there lets a poster write
 * ring positions that the HCA has read. On the CPU an acquire costs
 * nothing and orders those reads before the writes (ThreadSanitizer sees
 * it). On the GPU a WQE's stores wait for the reservation's CAS, which
 * the check decides, and a relaxed load keeps the post's loads in one
 * round trip to L2.
 */
GDA_FT_DEV_FUNC uint64_t gda_ft_chan_load_room(const gda_ft_chan_t *chan)
{
#if GDA_FT_ON_DEVICE
    return gda_ft_atomic_load_rlx64(&chan->completed);
#else
    return gda_ft_atomic_load_acq64(&chan->completed);
#endif
}

/* The shared words a reservation starts from, read in one round: a post
 * reads them beside the channel's geometry (gda_ft_chan_look), before it
 * works out its shape */
typedef struct gda_ft_chan_look {
    uint64_t completed;  /* relaxed: a stale one only understates the room */
    uint64_t published;  /* the last publication's PSN and ring offset */
    uint64_t ready;      /* the word it left, acquired: read last, so that
                            the loads before it share its round trip */
} gda_ft_chan_look_t;

GDA_FT_DEV_FUNC void gda_ft_chan_look(const gda_ft_chan_t *chan,
                                      gda_ft_chan_look_t *look)
{
    look->completed = gda_ft_chan_load_room(chan);
    look->published = gda_ft_atomic_load_rlx64(&chan->published);
    look->ready     = gda_ft_atomic_load_acq64(&chan->ready);
}

/*
 * Takes n WQEBBs into *resv, from what *look saw of the channel whose
 * geometry is *geom. Returns OK, NO_RESOURCE when the ring is full (retire
 * completions and try again), INPROGRESS while a switch holds the channel
 * FROZEN, NO_PATH when both paths are gone.
 *
 * A warp's post is a chain of round trips to L2 (about 260 ns each on an
 * H200), so the reads share them: the geometry and the look in the first
 * round, then the CAS, expecting the word the last publication left, and
 * the peer's switch hint beside it (looked at only after the
 * publication). When nobody reserved since that publication, the CAS
 * takes the room with the turn proven: the PSN and ring offset come from
 * `published` (read whole: its check matches). Otherwise the CAS's answer
 * is the word, acquired, and the path's ring_off is read beside the next
 * CAS: between a word and its successful CAS nothing can move it (a switch
 * changes the word: the epoch, or the FROZEN bit while it lasts). That
 * reservation waits for its turn.
 */
GDA_FT_DEV_FUNC gda_ft_dev_status_t
gda_ft_chan_reserve_after(gda_ft_chan_t *chan, uint32_t n,
                          const gda_ft_chan_geom_t *geom,
                          const gda_ft_chan_look_t *look,
                          gda_ft_chan_resv_t *resv)
{
    uint64_t completed = look->completed;
    uint64_t w         = look->ready;
    uint64_t idx, off, found;
    uint8_t path;

    gda_ft_chan_resv_hint(resv, chan, geom->health);
    idx = GDA_FT_CHAN_WORD_INDEX(w);
    if (GDA_FT_CHAN_PUB_MATCH(look->published, w) &&
        ((idx + n - GDA_FT_CHAN_WORD_INDEX(completed)) <= geom->wqebb_cnt)) {
        found = gda_ft_atomic_cas64(&chan->word, w, w + n);
        if (found == w) {
            gda_ft_chan_resv_set(resv, w, n,
                                 GDA_FT_CHAN_PUB_OFF(look->published),
                                 GDA_FT_CHAN_PUB_PSN(look->published), 1);
            return GDA_FT_DEV_OK;
        }
        /* somebody reserved, or the channel froze or switched: the word
         * it found, ordered like an acquire's */
        gda_ft_chan_acquire_fence();
        w = found;
    } else {
        w = gda_ft_atomic_load_acq64(&chan->word);
    }

    /* the room check and the fields are written out here: through
     * gda_ft_chan_fits() and gda_ft_chan_resv_set(), the same logic made
     * a warp's plain post 2-9 % slower on an H200 (measured in turns) */
    for (;;) {
        if (w & GDA_FT_CHAN_FROZEN) {
            return (gda_ft_atomic_load_acq32(&chan->state) ==
                    GDA_FT_CHAN_NO_PATH) ? GDA_FT_DEV_NO_PATH :
                                           GDA_FT_DEV_INPROGRESS;
        }
        idx = GDA_FT_CHAN_WORD_INDEX(w);
        if ((idx + n - GDA_FT_CHAN_WORD_INDEX(completed)) > geom->wqebb_cnt) {
            return GDA_FT_DEV_NO_RESOURCE;
        }
        path  = GDA_FT_CHAN_WORD_PATH(w);
        off   = gda_ft_atomic_load_rlx64(&chan->path[path].ring_off);
        found = gda_ft_atomic_cas64_acq(&chan->word, w, w + n);
        if (found == w) {
            resv->seq    = idx;
            resv->off    = off;
            resv->word   = w + n;
            resv->psn    = 0;
            resv->path   = path;
            resv->turn   = 0;
            return GDA_FT_DEV_OK;
        }
        w         = found;
        completed = gda_ft_chan_load_room(chan);
    }
}

/* gda_ft_chan_reserve_after() from what the channel says now */
GDA_FT_DEV_FUNC gda_ft_dev_status_t
gda_ft_chan_reserve(gda_ft_chan_t *chan, uint32_t n, gda_ft_chan_resv_t *resv)
{
    gda_ft_chan_geom_t geom;
    gda_ft_chan_look_t look;

    gda_ft_chan_geom_load(chan, &geom);
    gda_ft_chan_look(chan, &look);
    return gda_ft_chan_reserve_after(chan, n, &geom, &look, resv);
}

/* A memo that remembers nothing yet: `completed` 0 understates the room
 * of any ring (a memo's room check trusts it) */
GDA_FT_DEV_FUNC void gda_ft_chan_memo_init(gda_ft_chan_memo_t *memo)
{
    memo->valid     = 0;
    memo->completed = 0;
}

/*
 * Takes n WQEBBs the way *memo remembers the channel: one relaxed CAS.
 * Returns 1 with *resv on its turn, or 0, the memo forgotten, when the
 * shared way must be taken (gda_ft_chan_reserve): somebody else reserved
 * or switched since, or the ring looks full.
 */
GDA_FT_DEV_FUNC int gda_ft_chan_reserve_memo(gda_ft_chan_t *chan, uint32_t n,
                                             gda_ft_chan_memo_t *memo,
                                             gda_ft_chan_resv_t *resv)
{
    uint64_t w   = memo->word;
    uint64_t idx = GDA_FT_CHAN_WORD_INDEX(w);

    if (!memo->valid) {
        return 0;
    }
    gda_ft_chan_resv_hint(resv, chan, memo->geom.health);
    if (!gda_ft_chan_fits(idx, n, memo->completed, memo->geom.wqebb_cnt)) {
        memo->completed = GDA_FT_CHAN_WORD_INDEX(
                gda_ft_chan_load_room(chan));
    }
    memo->valid = 0;
    if (!gda_ft_chan_fits(idx, n, memo->completed, memo->geom.wqebb_cnt) ||
        (gda_ft_atomic_cas64(&chan->word, w, w + n) != w)) {
        return 0;
    }
    gda_ft_chan_resv_set(resv, w, n, memo->off, memo->psn, 1);
    return 1;
}

/* The channel's geometry: the memo's, when it holds one */
GDA_FT_DEV_FUNC void gda_ft_chan_geom_of(const gda_ft_chan_t *chan,
                                         const gda_ft_chan_memo_t *memo,
                                         gda_ft_chan_geom_t *geom)
{
    if ((memo != NULL) && memo->valid) {
        *geom = memo->geom;
    } else {
        gda_ft_chan_geom_load(chan, geom);
    }
}

/* One reservation attempt: the way memo remembers the channel when there
 * is one (NULL: none) and it holds, else the shared way; statuses as
 * gda_ft_chan_reserve's */
GDA_FT_DEV_FUNC gda_ft_dev_status_t
gda_ft_chan_reserve_as(gda_ft_chan_t *chan, uint32_t n,
                       gda_ft_chan_memo_t *memo, gda_ft_chan_resv_t *resv)
{
    if ((memo != NULL) && gda_ft_chan_reserve_memo(chan, n, memo, resv)) {
        return GDA_FT_DEV_OK;
    }
    return gda_ft_chan_reserve(chan, n, resv);
}


/* ---- 2. write ------------------------------------------------------------ */

/*
 * Where a reservation's WQEs and slots go: a copy of its path's send queue
 * (ring, QPN, doorbell) and its slots, read once, the ring offset, and the
 * geometry. A warp's post reads the path its memo names while its CAS is
 * under way, not after it.
 */
typedef struct gda_ft_chan_dest {
    gda_ft_dev_sq_t     sq;
    gda_ft_chan_slot_t *slots;
    uint64_t            off;    /* ring index = logical index - off */
    gda_ft_chan_geom_t  geom;
    uint8_t             path;
} gda_ft_chan_dest_t;

GDA_FT_DEV_FUNC void gda_ft_chan_dest_init(gda_ft_chan_dest_t *dest,
                                           const gda_ft_chan_t *chan,
                                           uint8_t path, uint64_t off,
                                           const gda_ft_chan_geom_t *geom)
{
    dest->sq    = chan->path[path].sq;
    dest->slots = chan->path[path].slots;
    dest->off   = off;
    dest->geom  = *geom;
    dest->path  = path;
}

/* A key of one path, chosen without indexing: an operation indexed by a
 * run-time path would live in local memory (see
 * gda_ft_wqe_set_inline_words) */
GDA_FT_DEV_FUNC uint32_t gda_ft_chan_key(const uint32_t key[2], uint8_t path)
{
    return (path == GDA_FT_CHAN_PRIMARY) ? key[0] : key[1];
}

/* A control segment of path p at logical index seq (a switch's NOP) */
GDA_FT_DEV_FUNC void gda_ft_chan_set_ctrl(gda_ft_chan_path_t *p, uint64_t seq,
                                          uint8_t opcode, unsigned ds,
                                          int signaled)
{
    gda_ft_wqe_set_ctrl(gda_ft_chan_seg(p, seq, 0), opcode, 0,
                        (uint16_t)gda_ft_chan_ring_idx(p, seq), p->sq.qpn, ds,
                        signaled ? GDA_FT_MLX5_WQE_CTRL_CQ_UPDATE : 0, 0);
}

/* The atomic segments of op's WQE at ring index idx; returns its opmod
 * (masked atomics are the extended ones of their size) */
GDA_FT_DEV_FUNC uint8_t gda_ft_chan_write_atomic(const gda_ft_dev_sq_t *sq,
                                                 uint16_t idx,
                                                 const gda_ft_chan_op_t *op)
{
    void *seg   = gda_ft_wqe_seg(sq, idx, 2);
    int   wide  = (op->length == sizeof(uint64_t));
    uint8_t ext = GDA_FT_MLX5_OPMOD_EXT_ATOMIC(wide ? 3 : 2);

    if (op->opcode == GDA_FT_MLX5_OPCODE_ATOMIC_MASKED_CS) {
        if (wide) {
            gda_ft_wqe_set_masked_cs64(seg, gda_ft_wqe_seg(sq, idx, 3),
                                       op->operand[0], op->operand[1],
                                       op->mask[0], op->mask[1]);
        } else {
            gda_ft_wqe_set_masked_cs32(seg, (uint32_t)op->operand[0],
                                       (uint32_t)op->operand[1],
                                       (uint32_t)op->mask[0],
                                       (uint32_t)op->mask[1]);
        }
        return ext;
    }
    if (op->opcode == GDA_FT_MLX5_OPCODE_ATOMIC_MASKED_FA) {
        if (wide) {
            gda_ft_wqe_set_masked_fa64(seg, op->operand[0], op->mask[0]);
        } else {
            gda_ft_wqe_set_masked_fa32(seg, (uint32_t)op->operand[0],
                                       (uint32_t)op->mask[0]);
        }
        return ext;
    }
    gda_ft_wqe_set_atomic(seg, op->operand[0], op->operand[1]);
    return 0;
}

/*
 * Writes into the ring one WQE of op, of ds segments, at logical index
 * seq: bytes [offset, offset + length) of a put or get, or the whole
 * atomic or send. Returns its doorbell word. Its slot is written when the
 * post's turn has come (gda_ft_chan_write_slots).
 */
GDA_FT_DEV_FUNC uint64_t
gda_ft_chan_write_wqe(const gda_ft_chan_dest_t *dest,
                      const gda_ft_chan_op_t *op, unsigned ds, uint64_t seq,
                      uint32_t offset, uint32_t length, int signaled)
{
    const gda_ft_dev_sq_t *sq = &dest->sq;
    uint8_t  path             = dest->path;
    uint16_t idx              = (uint16_t)(seq - dest->off);
    uint8_t  opmod            = 0;
    uint32_t imm              = 0;

    if (op->kind == GDA_FT_CHAN_OP_SEND) {
        /* ctrl, then the data: no remote address */
        imm = (uint32_t)op->raddr;
        if (op->inl) {
            gda_ft_wqe_set_inline_words(sq, idx, 1, op->operand[0],
                                        op->operand[1], length);
        } else if (length != 0) {
            gda_ft_wqe_set_data(gda_ft_wqe_seg(sq, idx, 1), length,
                                gda_ft_chan_key(op->lkey, path), op->laddr);
        }
    } else if ((op->kind == GDA_FT_CHAN_OP_SIGNAL) ||
               (op->kind == GDA_FT_CHAN_OP_ATOMIC)) {
        gda_ft_wqe_set_raddr(gda_ft_wqe_seg(sq, idx, 1), op->raddr,
                             gda_ft_chan_key(op->rkey, path));
        opmod = gda_ft_chan_write_atomic(sq, idx, op);
        gda_ft_wqe_set_data(gda_ft_wqe_seg(sq, idx, ds - 1), op->length,
                            gda_ft_chan_key(op->lkey, path), op->laddr);
    } else {
        gda_ft_wqe_set_raddr(gda_ft_wqe_seg(sq, idx, 1), op->raddr + offset,
                             gda_ft_chan_key(op->rkey, path));
        if (op->inl) {
            gda_ft_wqe_set_inline_words(sq, idx, 2, op->operand[0],
                                        op->operand[1], length);
        } else if (length != 0) {
            gda_ft_wqe_set_data(gda_ft_wqe_seg(sq, idx, 2), length,
                                gda_ft_chan_key(op->lkey, path),
                                op->laddr + offset);
        }
    }
    return gda_ft_wqe_set_ctrl(gda_ft_wqe_seg(sq, idx, 0), op->opcode, opmod,
                               idx, sq->qpn, ds,
                               (signaled ? GDA_FT_MLX5_WQE_CTRL_CQ_UPDATE :
                                           0) |
                               ((op->flags & GDA_FT_CHAN_OP_F_FENCE) ?
                                GDA_FT_MLX5_WQE_CTRL_FENCE : 0), imm);
}

/* Bytes of WQE i of op (a chunk of a long put or get, or the whole) */
GDA_FT_DEV_FUNC uint32_t
gda_ft_chan_wqe_length(const gda_ft_chan_geom_t *geom,
                       const gda_ft_chan_op_t *op,
                       const gda_ft_chan_shape_t *shape, uint32_t i)
{
    uint32_t offset = i * geom->max_chunk;

    if (shape->nwqe == 1) {
        return op->length;
    }
    return ((op->length - offset) < geom->max_chunk) ?
           (op->length - offset) : geom->max_chunk;
}

/*
 * Writes every WQE of op from seq on; a put or get longer than max_chunk
 * is cut into chunks, each signalled so that the deadline judges progress
 * chunk by chunk (a long transfer is not a dead path). The last WQE is
 * signalled when last_signaled, or when the op ends past a multiple of
 * GDA_FT_CHAN_SIGNAL_WQEBBS. Returns the logical index after it; in
 * *last_p that of its last WQE and in *db_p its doorbell word.
 */
GDA_FT_DEV_FUNC uint64_t
gda_ft_chan_write_op(const gda_ft_chan_dest_t *dest,
                     const gda_ft_chan_op_t *op,
                     const gda_ft_chan_shape_t *shape, uint64_t seq,
                     int last_signaled, uint64_t *last_p, uint64_t *db_p)
{
    uint64_t end    = seq + shape->wqebbs;
    unsigned wqebbs = gda_ft_wqe_ds_to_wqebbs(shape->ds);
    uint32_t i;

    /* a multiple k * N with seq < k * N <= end */
    last_signaled |= (seq / GDA_FT_CHAN_SIGNAL_WQEBBS) !=
                     (end / GDA_FT_CHAN_SIGNAL_WQEBBS);
    if (shape->nwqe == 1) {
        *last_p = seq;
        *db_p   = gda_ft_chan_write_wqe(dest, op, shape->ds, seq, 0,
                                        op->length, last_signaled);
        return end;
    }
    for (i = 0; i < shape->nwqe; ++i, seq += wqebbs) {
        *last_p = seq;
        *db_p   = gda_ft_chan_write_wqe(dest, op, shape->ds, seq,
                                        i * dest->geom.max_chunk,
                                        gda_ft_chan_wqe_length(&dest->geom, op,
                                                               shape, i),
                                        1);
    }
    return end;
}

/* What a slot says of the segments a replay rewrites the keys of */
GDA_FT_DEV_FUNC uint8_t gda_ft_chan_slot_flags(const gda_ft_chan_op_t *op)
{
    uint8_t data = (!op->inl && (op->length != 0)) ? GDA_FT_CHAN_SLOT_DATA :
                                                     0;

    if (op->kind == GDA_FT_CHAN_OP_SEND) {
        return data;
    }
    if ((op->kind == GDA_FT_CHAN_OP_SIGNAL) ||
        (op->kind == GDA_FT_CHAN_OP_ATOMIC)) {
        return GDA_FT_CHAN_SLOT_RADDR | GDA_FT_CHAN_SLOT_DATA;
    }
    return GDA_FT_CHAN_SLOT_RADDR | data;
}

/* A new WQE's slot, whole: its keys, when it was posted, its logical
 * index and first PSN, its packets, kind, flags and size, no failure. On
 * the GPU three 16-byte stores (slots are 16-byte aligned: 48 bytes each,
 * in arrays from the allocator). */
GDA_FT_DEV_FUNC void gda_ft_chan_slot_write(gda_ft_chan_slot_t *slot,
                                            const gda_ft_chan_op_t *op,
                                            uint64_t seq, uint64_t now,
                                            uint32_t psn, uint16_t npkts,
                                            uint8_t flags, uint8_t wqebbs)
{
#if GDA_FT_ON_DEVICE
    *(uint4*)slot->lkey       = make_uint4(op->lkey[0], op->lkey[1],
                                           op->rkey[0], op->rkey[1]);
    *(ulonglong2*)&slot->post_ns = make_ulonglong2(now, seq);
    /* status OK (0), syndrome and strikes 0 */
    *(uint4*)&slot->psn       = make_uint4(psn, npkts |
                                           ((uint32_t)op->kind << 16) |
                                           ((uint32_t)flags << 24),
                                           wqebbs, 0);
#else
    slot->lkey[0]  = op->lkey[0];
    slot->lkey[1]  = op->lkey[1];
    slot->rkey[0]  = op->rkey[0];
    slot->rkey[1]  = op->rkey[1];
    gda_ft_atomic_store_rlx64(&slot->post_ns, now);
    slot->psn      = psn;
    slot->npkts    = npkts;
    /* kind and size are read by pollers beside this write
     * (gda_ft_chan_reached_peer) */
    __atomic_store_n(&slot->kind, op->kind, __ATOMIC_RELAXED);
    slot->flags    = flags;
    __atomic_store_n(&slot->wqebbs, wqebbs, __ATOMIC_RELAXED);
    slot->status   = GDA_FT_DEV_OK;
    slot->syndrome = 0;
    slot->strikes  = 0;
    /* pollers read seq after acquiring `ready`, which the publication
     * releases: the slot needs no fence of its own */
    gda_ft_atomic_store_rlx64(&slot->seq, seq);
#endif
}

/*
 * The slots of op's WQEs from seq on, in its turn: their PSNs from psn on
 * and their post time, now. Every one but the last is MORE (a chunk: the
 * operation goes on); the last one has last_flags: MORE when another
 * operation of the same post follows, OWNED when a request will read the
 * post's outcome there. Returns the PSN after them. A slot is written
 * once, whole, when its PSN is known: nothing is read back.
 */
GDA_FT_DEV_FUNC uint32_t
gda_ft_chan_write_slots(const gda_ft_chan_dest_t *dest,
                        const gda_ft_chan_op_t *op,
                        const gda_ft_chan_shape_t *shape, uint64_t seq,
                        uint64_t now, uint32_t psn, uint8_t last_flags)
{
    unsigned wqebbs = gda_ft_wqe_ds_to_wqebbs(shape->ds);
    uint8_t  flags  = gda_ft_chan_slot_flags(op);
    uint32_t i, npkts;

    for (i = 0; i < shape->nwqe; ++i, seq += wqebbs) {
        npkts = (shape->nwqe == 1) ? shape->npkts :
                gda_ft_chan_pkts(&dest->geom,
                                 gda_ft_chan_wqe_length(&dest->geom, op,
                                                        shape, i));
        gda_ft_chan_slot_write(&dest->slots[(seq - dest->off) &
                                            (dest->geom.wqebb_cnt - 1)],
                               op, seq, now, psn, (uint16_t)npkts,
                               flags | ((i + 1 < shape->nwqe) ?
                                        GDA_FT_CHAN_SLOT_MORE : last_flags),
                               (uint8_t)wqebbs);
        psn = gda_ft_dev_psn_add(psn, npkts);
    }
    return psn;
}


/* ---- 3. publish ---------------------------------------------------------- */

/* Doorbell record up to end_seq (the ring offset being off), then the
 * doorbell with the last WQE's first 8 bytes, db (gda_ft_wqe_set_ctrl gave
 * them) */
GDA_FT_DEV_FUNC void gda_ft_chan_ring_sq(const gda_ft_dev_sq_t *sq,
                                         uint64_t off, uint64_t end_seq,
                                         uint64_t db)
{
    /* a release store, which serves as gda_ft_dev_fence_store(): the WQEs
     * are visible to whoever reads it (a fence before it as well cost 0.55
     * us a batch on an H200, waiting for the WQEs' PCIe writes twice) */
    gda_ft_atomic_store_rel32_sys((uint32_t*)&sq->dbrec[GDA_FT_MLX5_SND_DBR],
                                  gda_ft_htobe32((uint16_t)(end_seq - off)));
    gda_ft_dev_fence_mmio();
    gda_ft_dev_write_once_u64(sq->uar, db);
#if !GDA_FT_ON_DEVICE
    gda_ft_dev_fence_mmio();
#endif
    gda_ft_sq_wake(sq);
}

GDA_FT_DEV_FUNC void gda_ft_chan_ring_db(gda_ft_chan_path_t *p, uint64_t off,
                                         uint64_t end_seq, uint64_t db)
{
    gda_ft_chan_ring_sq(&p->sq, off, end_seq, db);
}

/*
 * Gives the WQEs in [seq, end) of path p (ring_off off), whose slots are
 * filled, the PSNs from psn on, in ring order, and the post time now;
 * returns the PSN after them. What a switch does to the WQEs it replays
 * (a new post writes its slots whole: gda_ft_chan_write_slots). Only the
 * switcher, with the channel frozen, calls it.
 */
GDA_FT_DEV_FUNC uint32_t gda_ft_chan_stamp(gda_ft_chan_t *chan,
                                           gda_ft_chan_path_t *p, uint64_t off,
                                           uint64_t seq, uint64_t end,
                                           uint64_t now, uint32_t psn)
{
    gda_ft_chan_slot_t *slot;

    for (; seq != end; seq += slot->wqebbs) {
        slot      = gda_ft_chan_slot_at(chan, p, seq - off);
        slot->psn = psn;
        gda_ft_atomic_store_rlx64(&slot->post_ns, now);
        psn       = gda_ft_dev_psn_add(psn, slot->npkts);
    }
    return psn;
}

/* Waits for the turn of the reservation at seq: the posters before it are
 * writing, never waiting on anything */
GDA_FT_DEV_FUNC void gda_ft_chan_wait_turn(gda_ft_chan_t *chan, uint64_t seq)
{
    while (gda_ft_chan_ready(chan) != seq) {
        gda_ft_cpu_relax();
    }
}

/*
 * Whether a publication ending at `end`, whose poster waited for its turn
 * (`waited`), leaves its doorbell to the next one: the next reservation
 * is made (the word's index is past end), so that its poster is writing
 * or waiting for this turn and rings at once, on the same path (a switch
 * freezes the word at the index where the last publication ends, which
 * then rings), and the WQEBBs left unrung stay within db_defer. A poster
 * whose turn came without a wait posts alone: it rings.
 */
GDA_FT_DEV_FUNC int gda_ft_chan_ring_later(const gda_ft_chan_t *chan,
                                           uint64_t end, int waited)
{
    return waited && (chan->db_defer != 0) &&
           ((end - chan->rung) <= chan->db_defer) &&
           (GDA_FT_CHAN_WORD_INDEX(gda_ft_atomic_load_rlx64(&chan->word)) !=
            end);
}

/* Announces the reservation's WQEs up to the index of `word` (what its CAS
 * left), whose PSNs end before psn, to the HCA (db: the last WQE's
 * doorbell word), or leaves that to the next publication
 * (gda_ft_chan_ring_later), and to the next poster: `ready` and
 * `published` */
GDA_FT_DEV_FUNC void gda_ft_chan_release(gda_ft_chan_t *chan,
                                         const gda_ft_chan_dest_t *dest,
                                         uint64_t word, uint32_t psn,
                                         uint64_t db, int waited)
{
    uint64_t end = GDA_FT_CHAN_WORD_INDEX(word);
    uint64_t pub = GDA_FT_CHAN_PUB(psn, dest->off, end);

    chan->path[dest->path].next_psn = psn;
    if (gda_ft_chan_ring_later(chan, end, waited)) {
        /* the next poster's doorbell, a release at system scope after it
         * acquired `ready`, makes these WQEs visible with its own */
        gda_ft_atomic_store_rlx64(&chan->published, pub);
        gda_ft_atomic_store_rel64(&chan->ready, word);
        return;
    }
    chan->rung = end;
    gda_ft_chan_ring_sq(&dest->sq, dest->off, end, db);
    gda_ft_atomic_store_rlx64(&chan->published, pub);
#if GDA_FT_ON_DEVICE
    /* the doorbell's release fence orders the slots and the PSN before
     * these stores as well (a fence, then a strong store: a release); a
     * release store of its own waited for the doorbell's PCIe write */
    gda_ft_atomic_store_rlx64(&chan->ready, word);
#else
    gda_ft_atomic_store_rel64(&chan->ready, word);
#endif
}

/* The path's next PSN when the reservation's turn has come (waiting for
 * it unless a memo proved it) */
GDA_FT_DEV_FUNC uint32_t gda_ft_chan_take_turn(gda_ft_chan_t *chan,
                                               const gda_ft_chan_resv_t *resv)
{
    if (resv->turn) {
        return resv->psn;
    }
    gda_ft_chan_wait_turn(chan, resv->seq);
    return chan->path[resv->path].next_psn;
}

/* After the publication of resv, whose PSNs end before psn: what the
 * poster's memo (if any) remembers */
GDA_FT_DEV_FUNC void gda_ft_chan_remember(gda_ft_chan_memo_t *memo,
                                          const gda_ft_chan_resv_t *resv,
                                          uint32_t psn,
                                          const gda_ft_chan_geom_t *geom)
{
    if (memo != NULL) {
        memo->word  = resv->word;
        memo->off   = resv->off;
        memo->psn   = psn;
        memo->geom  = *geom;
        memo->valid = 1;
    }
}

/*
 * Publishes the reservation resv of ops[0..n) written to dest, whose last
 * WQE has the doorbell word db: in its turn, the slots, the doorbell, and
 * ready moves to the reservation's end. A memo (or NULL) remembers it.
 * `owned`: a request will read the outcome of the last WQE.
 */
GDA_FT_DEV_FUNC void gda_ft_chan_publish(gda_ft_chan_t *chan,
                                         const gda_ft_chan_dest_t *dest,
                                         const gda_ft_chan_resv_t *resv,
                                         const gda_ft_chan_op_t *ops,
                                         unsigned n, uint64_t db,
                                         gda_ft_chan_memo_t *memo, int owned)
{
    uint32_t psn = gda_ft_chan_take_turn(chan, resv);
    uint64_t now = gda_ft_dev_now_ns();
    uint64_t seq = resv->seq;
    gda_ft_chan_shape_t shape;
    unsigned i;

    for (i = 0; i < n; ++i) {
        gda_ft_chan_shape(&dest->geom, &ops[i], &shape);
        psn  = gda_ft_chan_write_slots(dest, &ops[i], &shape, seq, now, psn,
                                       (i + 1 < n) ? GDA_FT_CHAN_SLOT_MORE :
                                       owned ? GDA_FT_CHAN_SLOT_OWNED : 0);
        seq += shape.wqebbs;
    }
    gda_ft_chan_release(chan, dest, resv->word, psn, db, !resv->turn);
    gda_ft_chan_remember(memo, resv, psn, &dest->geom);
}

#endif
