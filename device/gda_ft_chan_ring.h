/*
 * gda_ft device datapath: where a logical index of a concurrent channel
 * lies, and the indices every thread reads.
 *
 * A logical index names a WQEBB of the channel whichever path carries it;
 * on path p it sits at ring index logical - ring_off, with its slot and
 * its segments there. `completed` and `ready` are the channel's shared
 * indices (with the epoch they count in), and the outcome table keeps what
 * a switch settled for a WQE until its request reads it.
 */
#ifndef GDA_FT_CHAN_RING_H_
#define GDA_FT_CHAN_RING_H_

#include "gda_ft_chan_types.h"
#include "gda_ft_dev_atomic.h"
#include "gda_ft_wqe.h"

/* After a successful CAS, before reading what the unfreezer published */
GDA_FT_DEV_FUNC void gda_ft_chan_acquire_fence(void)
{
#if GDA_FT_ON_DEVICE
    __threadfence();   /* atomicCAS itself is relaxed */
#endif
}

/* The outcome table's entry for logical index seq */
GDA_FT_DEV_FUNC uint64_t *gda_ft_chan_outcome_entry(const gda_ft_chan_t *chan,
                                                    uint64_t seq)
{
    return &chan->outcomes[seq &
                           (GDA_FT_CHAN_OUTCOME_CNT(chan->wqebb_cnt) - 1)];
}

/*
 * The failure a switch settled for the WQE at logical index seq, or OK.
 * The request that owns it (`owner`) marks it read: what the switch that
 * overwrites it counts as lost is a failure nobody read.
 */
GDA_FT_DEV_FUNC gda_ft_dev_status_t gda_ft_chan_outcome(gda_ft_chan_t *chan,
                                                        uint64_t seq,
                                                        int owner)
{
    uint64_t *entry = gda_ft_chan_outcome_entry(chan, seq);
    uint64_t e      = gda_ft_atomic_load_acq64(entry);

    if (GDA_FT_CHAN_OUTCOME_SEQ(e) != seq) {
        return GDA_FT_DEV_OK;
    }
    if (owner && ((e & (GDA_FT_CHAN_OUTCOME_OWNED |
                        GDA_FT_CHAN_OUTCOME_READ)) ==
                  GDA_FT_CHAN_OUTCOME_OWNED)) {
        gda_ft_atomic_fetch_or64(entry, GDA_FT_CHAN_OUTCOME_READ);
    }
    return GDA_FT_CHAN_OUTCOME_STATUS(e);
}

/* Ring index (64-bit, free-running) of a logical index on path p */
GDA_FT_DEV_FUNC uint64_t gda_ft_chan_ring_idx(const gda_ft_chan_path_t *p,
                                              uint64_t seq)
{
    /* a switch rewrites the offset of the path it moves to while stale
     * readers (a request's outcome, a preempted poller) may look at it:
     * what they compute is checked against the slot's own index */
    return seq - gda_ft_atomic_load_rlx64(&p->ring_off);
}

/* The slot of path p at (free-running) ring index `ring` */
GDA_FT_DEV_FUNC gda_ft_chan_slot_t *
gda_ft_chan_slot_at(const gda_ft_chan_t *chan, const gda_ft_chan_path_t *p,
                    uint64_t ring)
{
    return &p->slots[ring & (chan->wqebb_cnt - 1)];
}

GDA_FT_DEV_FUNC gda_ft_chan_slot_t *
gda_ft_chan_slot(const gda_ft_chan_t *chan, const gda_ft_chan_path_t *p,
                 uint64_t seq)
{
    return gda_ft_chan_slot_at(chan, p, gda_ft_chan_ring_idx(p, seq));
}

GDA_FT_DEV_FUNC void *gda_ft_chan_seg(const gda_ft_chan_path_t *p,
                                      uint64_t seq, unsigned seg)
{
    return gda_ft_wqe_seg(&p->sq, (uint16_t)gda_ft_chan_ring_idx(p, seq),
                          seg);
}

/* A byte of a slot, as a poller reads it beside a poster that may be
 * rewriting it */
GDA_FT_DEV_FUNC uint8_t gda_ft_chan_slot_byte(const uint8_t *field)
{
#if GDA_FT_ON_DEVICE
    return gda_ft_dev_read_once_u8(field);
#else
    return __atomic_load_n(field, __ATOMIC_RELAXED);
#endif
}

/* The size of the WQE at a slot */
GDA_FT_DEV_FUNC uint8_t gda_ft_chan_slot_wqebbs(const gda_ft_chan_slot_t *slot)
{
    return gda_ft_chan_slot_byte(&slot->wqebbs);
}

/* `completed` holds the epoch it counts in beside the logical index, so
 * that a poller that read the CQE of a path the channel has since left
 * cannot move it: its update fails on the epoch */
GDA_FT_DEV_FUNC uint64_t gda_ft_chan_completed(const gda_ft_chan_t *chan)
{
    return GDA_FT_CHAN_WORD_INDEX(gda_ft_atomic_load_acq64(&chan->completed));
}

/* The logical index published up to (acquired: the slots before it are
 * filled) */
GDA_FT_DEV_FUNC uint64_t gda_ft_chan_ready(const gda_ft_chan_t *chan)
{
    return GDA_FT_CHAN_WORD_INDEX(gda_ft_atomic_load_acq64(&chan->ready));
}

/* Raises `completed` to end if it still counts in epoch; returns 1 when it
 * moved */
GDA_FT_DEV_FUNC int gda_ft_chan_complete_to(gda_ft_chan_t *chan,
                                            uint64_t epoch, uint64_t end)
{
    uint64_t old = gda_ft_atomic_load_acq64(&chan->completed), found;

    while ((GDA_FT_CHAN_WORD_EPOCH(old) == epoch) &&
           (GDA_FT_CHAN_WORD_INDEX(old) < end)) {
        found = gda_ft_atomic_cas64(&chan->completed, old,
                                    GDA_FT_CHAN_WORD(epoch, end));
        if (found == old) {
            return 1;
        }
        old = found;
    }
    return 0;
}

/*
 * Ends the counting of completions in `epoch`, the epoch a switch leaves:
 * `completed` moves to the next epoch at the index it reached, so that no
 * poller counts a late completion of the path left any more (its CAS fails
 * on the epoch). Returns that index, final from now on: the switch moves
 * only what lies beyond it.
 */
GDA_FT_DEV_FUNC uint64_t gda_ft_chan_close_epoch(gda_ft_chan_t *chan,
                                                 uint64_t epoch)
{
    uint64_t old = gda_ft_atomic_load_acq64(&chan->completed), found;

    for (;;) {
        found = gda_ft_atomic_cas64(&chan->completed, old,
                                    GDA_FT_CHAN_WORD(epoch + 1,
                                            GDA_FT_CHAN_WORD_INDEX(old)));
        if (found == old) {
            return GDA_FT_CHAN_WORD_INDEX(old);
        }
        old = found;
    }
}

#endif
