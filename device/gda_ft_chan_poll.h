/*
 * gda_ft device datapath: reading a concurrent channel's completions.
 *
 * Every path has a collapsed CQ. Any thread may read it and raise
 * `completed` with an atomic max; a CQE is turned into a logical index
 * through a wrap-safe 16-bit difference from `completed`. A completion
 * stamps the progress that failure detection judges
 * (gda_ft_chan_failover.h).
 */
#ifndef GDA_FT_CHAN_POLL_H_
#define GDA_FT_CHAN_POLL_H_

#include "gda_ft_chan_ring.h"
#include "gda_ft_cq.h"
#include "gda_ft_dev_common.h"

/*
 * A completion on `path` at `now`: the channel's progress, the path's (for
 * every channel to the peer; written only when it moved by a sixteenth of
 * a deadline, the word being shared), and the end of an interruption.
 */
GDA_FT_DEV_FUNC void gda_ft_chan_note_progress(gda_ft_chan_t *chan,
                                               uint8_t path, uint64_t now)
{
    uint64_t *shared, switched, recovered;

    gda_ft_atomic_max64(&chan->last_progress_ns, now);
    if (chan->health != NULL) {
        shared = &chan->health->progress_ns[path];
        if (now > gda_ft_atomic_load_rlx64(shared) +
                  gda_ft_timing_stamp_step_ns(chan->deadline_ns)) {
            gda_ft_atomic_max64(shared, now);
        }
    }
    switched  = gda_ft_atomic_load_acq64(&chan->switch_ns);
    recovered = gda_ft_atomic_load_rlx64(&chan->recovered_ns);
    if ((recovered < switched) &&
        (gda_ft_atomic_load_acq32(&chan->active) == path)) {
        gda_ft_atomic_cas64(&chan->recovered_ns, recovered, now);
    }
}

/* Reads the collapsed CQE's last word: wqe_counter, signature, op_own */
GDA_FT_DEV_FUNC uint8_t gda_ft_chan_read_cqe_tail(const gda_ft_chan_path_t *p,
                                                  uint16_t *counter_p)
{
    const volatile gda_ft_mlx5_cqe64_t *cqe =
            (const volatile gda_ft_mlx5_cqe64_t*)p->cqe;
    /* one acquire load: the HCA writes this word last, in one store */
    return gda_ft_cq_split_tail(gda_ft_atomic_load_acq32_sys(
            (const uint32_t*)&cqe->wqe_counter), counter_p);
}

/*
 * The turn to read a channel's host words in a progress pass: the active
 * path's CQE, the mailbox's peer state, re-arm notices and the words a
 * parked switch or a regain waits for. One reader at a time: on a GPU
 * those words are in host memory, and a GPU's reads across PCIe queue
 * with each other and with the copy engines' transfers. With 512 warps
 * each reading one host word per pass (H200), a 4 KiB copy into GPU
 * memory took 1 ms instead of 8 us (test/perf/gda_ft_gpu_pcie), and the
 * software HCA's engine, which moves GPU-resident data with such copies,
 * made passes of 200 ms. Waiters without the turn read only what the
 * channel keeps in its own memory. A turn held longer than
 * GDA_FT_CHAN_HOST_TURN_NS (its holder stalled) lapses.
 */
#define GDA_FT_CHAN_HOST_TURN_NS 20000ull

GDA_FT_DEV_FUNC int gda_ft_chan_host_turn_take(gda_ft_chan_t *chan)
{
    uint64_t until = gda_ft_atomic_load_rlx64(&chan->host_turn_ns);
    uint64_t now   = gda_ft_dev_now_ns();

    return (now >= until) &&
           (gda_ft_atomic_cas64(&chan->host_turn_ns, until,
                                now + GDA_FT_CHAN_HOST_TURN_NS) == until);
}

/* Gives the turn back (a lapsed turn another reader took may be given
 * back for it: two readers for a while, which costs only their reads) */
GDA_FT_DEV_FUNC void gda_ft_chan_host_turn_give(gda_ft_chan_t *chan)
{
    gda_ft_atomic_store_rel64(&chan->host_turn_ns, 0);
}

/*
 * Whether WQEs [from, end) of path p hold one that went to the peer. The
 * NOPs a switch writes in place of settled WQEs complete on their own HCA:
 * a completion of those alone says nothing of the peer or the path (taken
 * for progress, it would keep a peer whose ports died heard, and end an
 * interruption that goes on).
 */
GDA_FT_DEV_FUNC int gda_ft_chan_reached_peer(const gda_ft_chan_t *chan,
                                             const gda_ft_chan_path_t *p,
                                             uint64_t from, uint64_t end)
{
    const gda_ft_chan_slot_t *slot;
    uint8_t wqebbs;

    for (; from < end; from += wqebbs) {
        slot   = gda_ft_chan_slot(chan, p, from);
        wqebbs = gda_ft_chan_slot_wqebbs(slot);
        if ((wqebbs == 0) ||
            (gda_ft_chan_slot_byte(&slot->kind) != GDA_FT_CHAN_OP_NOP)) {
            return 1;
        }
    }
    return 0;
}

/*
 * Reads path p's CQE and raises `completed`. Returns OK when it moved,
 * INPROGRESS when nothing is new, ERROR for an error CQE with its logical
 * index in *err_seq_p and its syndrome in *synd_p (everything before it
 * completed: an error CQE names the first WQE that failed).
 */
GDA_FT_DEV_FUNC gda_ft_dev_status_t
gda_ft_chan_poll_path(gda_ft_chan_t *chan, uint8_t path, uint64_t *err_seq_p,
                      uint8_t *synd_p)
{
    gda_ft_chan_path_t *p = &chan->path[path];
    const gda_ft_mlx5_err_cqe_t *err;
    uint64_t cword, epoch, completed, ready, ring_c, seq, end;
    gda_ft_chan_slot_t *slot;
    uint16_t counter, counter2;
    int16_t ahead;
    uint8_t op_own;
    int reached;

    cword     = gda_ft_atomic_load_acq64(&chan->completed);
    epoch     = GDA_FT_CHAN_WORD_EPOCH(cword);
    completed = GDA_FT_CHAN_WORD_INDEX(cword);
    if (GDA_FT_CHAN_WORD_PATH(cword) != path) {
        /* a poller that chose the path before a switch left it: what that
         * path completes now counts for nothing (its WQEs run again on
         * the other path, whose ring positions are not free before that
         * path's own completions say so) */
        return GDA_FT_DEV_INPROGRESS;
    }
    op_own    = gda_ft_chan_read_cqe_tail(p, &counter);
    if ((op_own >> 4) == GDA_FT_MLX5_CQE_INVALID) {
        return GDA_FT_DEV_INPROGRESS;
    }

    ready     = gda_ft_chan_ready(chan);
    ring_c    = gda_ft_chan_ring_idx(p, completed);
    ahead     = (int16_t)(uint16_t)(counter - (uint16_t)ring_c);
    seq       = completed + ahead;
    if ((ahead < 0) || (seq >= ready)) {
        return GDA_FT_DEV_INPROGRESS;   /* already counted, or stale */
    }

    if (gda_ft_cq_opcode_is_error(op_own >> 4)) {
        /* the syndrome must belong to the CQE whose counter was read: a
         * later error (a flush) may be overwriting it */
        err     = (const gda_ft_mlx5_err_cqe_t*)p->cqe;
        *synd_p = gda_ft_dev_read_once_u8(&err->syndrome);
        gda_ft_dev_fence_load();
        if ((gda_ft_chan_read_cqe_tail(p, &counter2) != op_own) ||
            (counter2 != counter)) {
            return GDA_FT_DEV_INPROGRESS;   /* read it again next time */
        }
        *err_seq_p = seq;
        if (*synd_p != GDA_FT_MLX5_SYND_WR_FLUSH_ERR) {
            /* the first failure: everything before it completed (a flush
             * error names a WQE that never ran, and says nothing of those
             * before it) */
            gda_ft_chan_complete_to(chan, epoch, seq);
        }
        return GDA_FT_DEV_ERROR;
    }

    slot = gda_ft_chan_slot(chan, p, seq);
    if (gda_ft_atomic_load_rlx64(&slot->seq) != seq) {
        return GDA_FT_DEV_INPROGRESS;   /* not the start of a WQE: stale */
    }
    end     = seq + gda_ft_chan_slot_wqebbs(slot);
    reached = gda_ft_chan_reached_peer(chan, p, completed, end);
    /* from the `completed` read before the slots: while it holds, nobody
     * could reserve them again, so what was read is these WQEs' (a poller
     * that read `completed` long ago may find the slots rewritten) */
    if (gda_ft_atomic_cas64(&chan->completed, cword,
                            GDA_FT_CHAN_WORD(epoch, end)) != cword) {
        return GDA_FT_DEV_INPROGRESS;
    }
    if (reached) {
        gda_ft_chan_note_progress(chan, path, gda_ft_dev_now_ns());
    }
    if (p->cq_dbrec != NULL) {
        /* publish the consumer index, as mlx5 hardware needs; racing
         * pollers may leave an older one, which only delays overrun
         * checks that a collapsed CQ does not make */
        gda_ft_atomic_store_rel32_sys((uint32_t*)p->cq_dbrec, gda_ft_htobe32(
                (uint32_t)gda_ft_chan_ring_idx(p, end) & 0xffffff));
    }
    return GDA_FT_DEV_OK;
}

#endif
