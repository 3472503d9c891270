/*
 * gda_ft device datapath: the window of a switch, [completed, freeze) of
 * the path left (design §5, §6.3; the switch itself is
 * gda_ft_chan_failover.h's).
 *
 * The window goes to the other path's ring WQE for WQE, at the same
 * logical indices, while the host half answers the switch record: it
 * fences the path left and asks the peer for the PSN its end expected.
 * With that answer (or without it, when it does not come) each WQE is
 * settled: run again on the new path, or done, a NOP of the same size in
 * its place (executed by the peer, failed alone, or in doubt). Then the
 * new path is rung and the channel unfreezes there with a new epoch.
 *
 * Here too: the failures a switch records (the first one a wait reports,
 * a slot's), the phase clock of a switch, and what the host half reports
 * through the mailbox (its links, the end of a switch).
 */
#ifndef GDA_FT_CHAN_WINDOW_H_
#define GDA_FT_CHAN_WINDOW_H_

#include "gda_ft_chan_post.h"
#include "gda_ft_chan_poll.h"

/* Records the first failure a wait will report */
GDA_FT_DEV_FUNC void gda_ft_chan_note_error(gda_ft_chan_t *chan,
                                            gda_ft_dev_status_t status,
                                            uint8_t syndrome)
{
    gda_ft_atomic_cas32(&chan->error, 0,
                        GDA_FT_DEV_RESULT(status, syndrome, 0));
}

GDA_FT_DEV_FUNC void gda_ft_chan_slot_fail(gda_ft_chan_t *chan,
                                           gda_ft_chan_slot_t *slot,
                                           gda_ft_dev_status_t status)
{
    slot->flags  |= GDA_FT_CHAN_SLOT_FAILED;
    slot->status  = (uint8_t)status;
    gda_ft_chan_note_error(chan, status, slot->syndrome);
}

/* Copies the WQE at seq from path `from` into path `to`, same logical
 * index, rewriting its index, QPN and keys */
GDA_FT_DEV_FUNC void gda_ft_chan_copy_wqe(gda_ft_chan_t *chan, uint8_t from,
                                          uint8_t to, uint64_t seq,
                                          const gda_ft_chan_slot_t *slot)
{
    gda_ft_chan_path_t *op = &chan->path[from];
    gda_ft_chan_path_t *np = &chan->path[to];
    gda_ft_mlx5_raddr_seg_t *raddr;
    gda_ft_mlx5_data_seg_t *data;
    gda_ft_mlx5_ctrl_seg_t ctrl;
    unsigned ds, bb;

    /* WQEBB by WQEBB, its eight words loaded before any is stored: the old
     * ring may be across PCIe (host-mapped), where a load is a round trip,
     * and independent loads share one (a WQEBB never wraps the ring) */
    gda_ft_wqe_copy_bb(gda_ft_chan_seg(np, seq, 0), gda_ft_chan_seg(op, seq, 0),
                       &ctrl);
    for (bb = 1; bb < slot->wqebbs; ++bb) {
        gda_ft_wqe_copy_bb(gda_ft_chan_seg(np, seq, bb * 4),
                           gda_ft_chan_seg(op, seq, bb * 4), NULL);
    }
    ds = GDA_FT_MLX5_CTRL_DS(&ctrl);
    if (slot->flags & GDA_FT_CHAN_SLOT_RADDR) {
        raddr       = (gda_ft_mlx5_raddr_seg_t*)gda_ft_chan_seg(np, seq, 1);
        raddr->rkey = gda_ft_htobe32(slot->rkey[to]);
    }
    if (slot->flags & GDA_FT_CHAN_SLOT_DATA) {
        /* the local buffer is the last segment of every such WQE */
        data       = (gda_ft_mlx5_data_seg_t*)gda_ft_chan_seg(np, seq,
                                                              ds - 1);
        data->lkey = gda_ft_htobe32(slot->lkey[to]);
    }
    /* every replayed WQE is signalled: the new path shows progress from
     * its first WQE on, not from the end of the first batch, which on a
     * busy HCA comes later than its deadline allows */
    gda_ft_wqe_set_ctrl(gda_ft_chan_seg(np, seq, 0),
                        GDA_FT_MLX5_CTRL_OPCODE(&ctrl),
                        GDA_FT_MLX5_CTRL_OPMOD(&ctrl),
                        (uint16_t)gda_ft_chan_ring_idx(np, seq), np->sq.qpn,
                        ds, ctrl.fm_ce_se | GDA_FT_MLX5_WQE_CTRL_CQ_UPDATE,
                        gda_ft_be32toh(ctrl.imm));
}

/* A NOP as large as the WQE it stands for (it keeps logical indices) */
GDA_FT_DEV_FUNC void gda_ft_chan_write_nop(gda_ft_chan_path_t *p,
                                           uint64_t seq, unsigned wqebbs)
{
    gda_ft_chan_set_ctrl(p, seq, GDA_FT_MLX5_OPCODE_NOP,
                         wqebbs * (GDA_FT_MLX5_WQE_BB / GDA_FT_MLX5_DS_SIZE),
                         1);
}

/* Release ordering of plain stores before later ones, at the scope of
 * the threads that read slots (the GPU's; the host's in the CPU twin) */
GDA_FT_DEV_FUNC void gda_ft_chan_release_fence(void)
{
#if GDA_FT_ON_DEVICE
    __threadfence();
#else
    __atomic_thread_fence(__ATOMIC_RELEASE);
#endif
}

/* A settled slot's body, without its index (the window's indices are
 * written after every body, behind one fence: gda_ft_chan_move) */
GDA_FT_DEV_FUNC void gda_ft_chan_slot_fill(gda_ft_chan_slot_t *dst,
                                           const gda_ft_chan_slot_t *src)
{
    gda_ft_atomic_store_rlx64(&dst->post_ns, src->post_ns);
    dst->lkey[0]  = src->lkey[0];
    dst->lkey[1]  = src->lkey[1];
    dst->rkey[0]  = src->rkey[0];
    dst->rkey[1]  = src->rkey[1];
    dst->psn      = src->psn;
    dst->npkts    = src->npkts;
    dst->kind     = src->kind;
    dst->flags    = src->flags;
    dst->wqebbs   = src->wqebbs;
    dst->status   = src->status;
    dst->syndrome = src->syndrome;
    dst->strikes  = src->strikes;
}

/* Whether the peer executed a WQE, given the PSN its fenced end expected */
GDA_FT_DEV_FUNC int gda_ft_chan_executed(const gda_ft_chan_slot_t *slot,
                                         uint32_t epsn)
{
    return gda_ft_dev_psn_diff(gda_ft_dev_psn_add(slot->psn, slot->npkts),
                                epsn) <= 0;
}

/*
 * Writes the switch record if the mailbox has room: 1 with *seq_p (0 when
 * no host listens), 0 while the host has yet to empty it. The host answers
 * records that ask for no resolution at once, so room comes unless the
 * host is gone.
 */
GDA_FT_DEV_FUNC int gda_ft_chan_tell_host(gda_ft_chan_t *chan, uint8_t from,
                                          unsigned why, uint64_t freeze,
                                          int resolve, uint32_t *seq_p)
{
    gda_ft_chan_mbox_t *mbox = chan->mbox;
    gda_ft_chan_path_t *p    = &chan->path[from];
    uint64_t completed       = gda_ft_chan_completed(chan);
    gda_ft_chan_record_t *rec;
    uint32_t seq;

    *seq_p = 0;
    if (mbox == NULL) {
        return 1;
    }
    seq = mbox->req_seq + 1;
    if ((seq - gda_ft_atomic_load_acq32_sys(&mbox->ans_seq)) >
        GDA_FT_CHAN_MBOX_RECORDS) {
        return 0;
    }
    rec            = &mbox->rec[seq % GDA_FT_CHAN_MBOX_RECORDS];
    rec->epoch     = (uint32_t)GDA_FT_CHAN_WORD_EPOCH(
                             gda_ft_atomic_load_acq64(&chan->word));
    rec->failed    = from;
    rec->why       = why;
    rec->freeze    = freeze;
    rec->first_psn = (completed < freeze) ?
                     gda_ft_chan_slot(chan, p, completed)->psn : p->next_psn;
    rec->resolve   = (uint32_t)resolve;
    gda_ft_atomic_store_rel32_sys(&mbox->req_seq, seq);
    *seq_p = seq;
    return 1;
}

/* Enters a phase of the switch; its waits count from now */
GDA_FT_DEV_FUNC void gda_ft_chan_phase(gda_ft_chan_t *chan, uint32_t phase)
{
    chan->sw.phase    = phase;
    chan->sw.since_ns = gda_ft_dev_now_ns();
}

/* Whether the current phase has waited longer than limit_ns */
GDA_FT_DEV_FUNC int gda_ft_chan_phase_expired(const gda_ft_chan_t *chan,
                                              uint64_t limit_ns)
{
    return (gda_ft_dev_now_ns() - chan->sw.since_ns) > limit_ns;
}

/*
 * Whether the peer's word can be about the window [sw.first, sw.freeze) of
 * the path left: the PSN its end expected next lies between the window's
 * first PSN (everything before it completed, so the peer executed it) and
 * the next PSN the path would have sent. A word from another PSN space
 * (an end that a late question re-armed, an answer to another question)
 * compares with the window's PSNs by chance: WQEs that never ran would be
 * settled as executed, and their signals and puts lost.
 */
GDA_FT_DEV_FUNC int gda_ft_chan_word_fits(const gda_ft_chan_t *chan,
                                          uint32_t epsn)
{
    const gda_ft_chan_path_t *p = &chan->path[chan->sw.from];
    uint32_t first              = gda_ft_chan_slot(chan, p,
                                                   chan->sw.first)->psn;

    return (gda_ft_dev_psn_diff(epsn, first) >= 0) &&
           (gda_ft_dev_psn_diff(p->next_psn, epsn) >= 0);
}

/*
 * One look for the host's answer to a switch record that asked for the
 * peer's word, while late completions of the old path still count.
 * INPROGRESS: not yet. OK: done waiting, with *known_p 1 when the peer's
 * word *epsn_p came.
 */
GDA_FT_DEV_FUNC gda_ft_dev_status_t
gda_ft_chan_hear_host(gda_ft_chan_t *chan, int *known_p, uint32_t *epsn_p)
{
    gda_ft_chan_mbox_t *mbox = chan->mbox;
    uint8_t from             = (uint8_t)chan->sw.from;
    uint64_t err_seq;
    uint8_t synd;

    *known_p = 0;
    if (!chan->sw.asked || (chan->sw.record == 0)) {
        return GDA_FT_DEV_OK;   /* nothing to wait for */
    }
    gda_ft_chan_poll_path(chan, from, &err_seq, &synd);
    if (gda_ft_atomic_load_acq32_sys(&mbox->ans_seq) != chan->sw.record) {
        /* The host answers every record, with the peer's word or without,
         * within its pass, its grace, resolve_ns and
         * GDA_FT_TIMING_HEARD_EXTRA_DEADLINES deadlines of the record: giving
         * up first would settle without a word the host then gets (in
         * doubt where the peer's word was known). resolve_ns is at least a
         * deadline plus the grace, so this covers that; past it, the host
         * is gone. */
        return gda_ft_chan_phase_expired(chan,
                   gda_ft_timing_answer_wait_ns(chan->deadline_ns,
                                                chan->resolve_ns)) ?
               GDA_FT_DEV_OK : GDA_FT_DEV_INPROGRESS;
    }
    /* completions written before the host fenced the QP still count */
    gda_ft_chan_poll_path(chan, from, &err_seq, &synd);
    if (gda_ft_atomic_load_acq32_sys(&mbox->ans_known)) {
        *epsn_p  = gda_ft_atomic_load_acq32_sys(&mbox->ans_epsn);
        /* a word that cannot be about the window is no word: what it
         * would settle is replayed or in doubt */
        *known_p = gda_ft_chan_word_fits(chan, *epsn_p);
    }
    return GDA_FT_DEV_OK;
}

/*
 * Settles one WQE of the window on the way from `from` to `to`: 1 when it
 * must run again there, 0 when it is done (a NOP takes its place).
 */
GDA_FT_DEV_FUNC int gda_ft_chan_settle(gda_ft_chan_t *chan,
                                       gda_ft_chan_slot_t *slot, int asked,
                                       int known, uint32_t epsn)
{
    int once = (slot->kind == GDA_FT_CHAN_OP_SIGNAL) ||
               (slot->kind == GDA_FT_CHAN_OP_ATOMIC);

    if ((slot->flags & GDA_FT_CHAN_SLOT_FAILED) ||
        (slot->kind == GDA_FT_CHAN_OP_NOP)) {
        return 0;
    }
    if (slot->kind == GDA_FT_CHAN_OP_GET) {
        return 1;        /* its data never came back: read again */
    }
    if (known && gda_ft_chan_executed(slot, epsn)) {
        if (slot->kind == GDA_FT_CHAN_OP_ATOMIC) {
            /* executed, the old value lost with the reply */
            gda_ft_atomic_fetch_add32(&chan->counters.in_doubt, 1);
            gda_ft_chan_slot_fail(chan, slot, GDA_FT_DEV_IN_DOUBT);
        } else {
            gda_ft_atomic_fetch_add32(&chan->counters.confirmed, 1);
        }
        return 0;
    }
    if (once && asked && !known) {
        /* may or may not have run: never run it twice */
        gda_ft_atomic_fetch_add32(&chan->counters.in_doubt, 1);
        gda_ft_chan_slot_fail(chan, slot, GDA_FT_DEV_IN_DOUBT);
        return 0;
    }
    return 1;
}

/*
 * A collapsed CQ often ends holding a flush error rather than the root
 * cause. An error that names no culprit strikes the oldest WQE still to
 * run; one that follows it onto the other path is that WQE's fault: it
 * fails alone. Returns 1 when slot fails (a NOP takes its place).
 */
GDA_FT_DEV_FUNC int gda_ft_chan_strike(gda_ft_chan_t *chan,
                                       gda_ft_chan_slot_t *slot,
                                       int *strike_p)
{
    if (!*strike_p) {
        return 0;
    }
    *strike_p = 0;
    if (++slot->strikes < 2) {
        return 0;
    }
    gda_ft_chan_slot_fail(chan, slot, GDA_FT_DEV_ERROR);
    gda_ft_atomic_fetch_add32(&chan->counters.op_errors, 1);
    return 1;
}

/*
 * A post's request reads the outcome of its last WQE only. A WQE that
 * failed (alone, or in doubt) before the end of its post, a chunk of a
 * long put or get or the put of a put with signal, fails what follows it
 * in the post: the rest does not run, and the last WQE reports the
 * failure. gda_ft_chan_goes_on() takes the failure of the WQEs before slot
 * in its post (OK: none): 0 when slot fails with them;
 * gda_ft_chan_failure_on() gives what the next WQE takes.
 */
GDA_FT_DEV_FUNC int gda_ft_chan_goes_on(gda_ft_chan_slot_t *slot,
                                        uint8_t failure)
{
    if (failure == GDA_FT_DEV_OK) {
        return 1;
    }
    if (!(slot->flags & GDA_FT_CHAN_SLOT_FAILED)) {
        /* the channel noted the failure already, when the first failed */
        slot->flags  |= GDA_FT_CHAN_SLOT_FAILED;
        slot->status  = failure;
    }
    return 0;
}

GDA_FT_DEV_FUNC uint8_t
gda_ft_chan_failure_on(const gda_ft_chan_slot_t *slot)
{
    const uint8_t both = GDA_FT_CHAN_SLOT_FAILED | GDA_FT_CHAN_SLOT_MORE;

    return ((slot->flags & both) == both) ? slot->status :
                                            (uint8_t)GDA_FT_DEV_OK;
}

/* The switch that left epoch `epoch` is over: the host may re-arm the
 * path it left (its ring is read no more) */
GDA_FT_DEV_FUNC void gda_ft_chan_switch_ended(gda_ft_chan_t *chan,
                                              uint64_t epoch)
{
    if (chan->mbox != NULL) {
        gda_ft_atomic_store_rel32_sys(&chan->mbox->done_epoch,
                                      (uint32_t)((epoch + 1) &
                                                 GDA_FT_CHAN_EPOCH_MASK));
    }
}

/* Whether the host reports path p's ports up (as of its last pass): its
 * own, and the peer's as far as it knows them */
GDA_FT_DEV_FUNC int gda_ft_chan_link_up(const gda_ft_chan_t *chan, uint8_t p)
{
    return gda_ft_atomic_load_acq32_sys(&chan->mbox->link_up[p]) !=
           GDA_FT_CHAN_LINK_DOWN;
}

/* Whether the host knows both ends of path p up: only then is a silence
 * there sat out while the other path awaits its re-arm (a peer whose ports
 * died would be waited for) */
GDA_FT_DEV_FUNC int gda_ft_chan_link_known_up(const gda_ft_chan_t *chan,
                                              uint8_t p)
{
    return gda_ft_atomic_load_acq32_sys(&chan->mbox->link_up[p]) ==
           GDA_FT_CHAN_LINK_UP;
}

/*
 * How much longer than a deadline the first completion of a replay onto
 * path `to` may take. A whole window reaches the new path at once, and a
 * software HCA under load took up to a deadline to serve one (1 ms,
 * H200): judged at the deadline, a healthy backup was declared dead and
 * the channel lost both paths. So a replay onto a path whose ports the
 * host reports up gets one more deadline. One whose port is down gets
 * none, so that losing both paths still ends in about two deadlines.
 */
GDA_FT_DEV_FUNC uint64_t gda_ft_chan_replay_grace(gda_ft_chan_t *chan,
                                                  uint8_t to, unsigned why,
                                                  int replayed)
{
    if ((why == GDA_FT_CHAN_WHY_FAILBACK) || !replayed ||
        (chan->mbox == NULL) ||
        !gda_ft_chan_link_up(chan, to)) {
        return 0;
    }
    return chan->deadline_ns;
}

/*
 * Copies the window [first, freeze) from path `from` to the other path's
 * ring, to be settled once the host has answered (gda_ft_chan_finish).
 *
 * The window goes to the new ring while the host holds its grace period
 * and fences (a load from a host-mapped ring is a PCIe round trip, and a
 * window holds tens of WQEs). What completes or settles meanwhile becomes
 * a NOP then. Its slots on the new path are written where readers that
 * hold no turn (a request's outcome) may look: every index made invalid
 * now, then every body, then every index, one fence between passes (a
 * fence per slot cost a microsecond each on the GPU).
 */
GDA_FT_DEV_FUNC void gda_ft_chan_take_window(gda_ft_chan_t *chan,
                                             uint8_t from, uint64_t first,
                                             uint64_t freeze)
{
    uint8_t to             = (uint8_t)(1 - from);
    gda_ft_chan_path_t *op = &chan->path[from];
    gda_ft_chan_path_t *np = &chan->path[to];
    gda_ft_chan_slot_t *oslot;
    uint64_t seq;

    gda_ft_atomic_store_rel64(&np->ring_off, first - np->ring_next);
    for (seq = first; seq < freeze; seq += oslot->wqebbs) {
        oslot = gda_ft_chan_slot(chan, op, seq);
        gda_ft_chan_copy_wqe(chan, from, to, seq, oslot);
        gda_ft_atomic_store_rlx64(&gda_ft_chan_slot(chan, np, seq)->seq,
                                  UINT64_MAX);
    }
}

/*
 * Keeps the failure settled for the WQE at seq in the outcome table, once
 * (a failure that a later switch moves again is there already, and may
 * have been read). What it overwrites is a table older: counted as lost if
 * its request had yet to read it. `told`: its request was told already
 * (the entry counts as read).
 */
GDA_FT_DEV_FUNC void gda_ft_chan_keep_outcome(gda_ft_chan_t *chan,
                                              uint64_t seq,
                                              const gda_ft_chan_slot_t *slot,
                                              int told)
{
    uint64_t *entry = gda_ft_chan_outcome_entry(chan, seq);
    uint64_t old    = gda_ft_atomic_load_acq64(entry);

    if (GDA_FT_CHAN_OUTCOME_SEQ(old) == seq) {
        return;
    }
    if ((old & (GDA_FT_CHAN_OUTCOME_OWNED | GDA_FT_CHAN_OUTCOME_READ)) ==
        GDA_FT_CHAN_OUTCOME_OWNED) {
        gda_ft_atomic_fetch_add32(&chan->outcomes_lost, 1);
    }
    gda_ft_atomic_store_rel64(entry, GDA_FT_CHAN_OUTCOME(seq, slot->status,
            (slot->flags & GDA_FT_CHAN_SLOT_OWNED) ?
            (GDA_FT_CHAN_OUTCOME_OWNED |
             (told ? GDA_FT_CHAN_OUTCOME_READ : 0)) : 0));
}

/*
 * Ends the move of the window taken from sw.from: settles it with the
 * host's answer (known: the peer's word epsn came), rings the new path and
 * unfreezes there with a new epoch.
 */
GDA_FT_DEV_FUNC gda_ft_dev_status_t
gda_ft_chan_finish(gda_ft_chan_t *chan, int known, uint32_t epsn)
{
    const gda_ft_chan_switch_t *sw = &chan->sw;
    uint8_t from           = (uint8_t)sw->from;
    uint8_t to             = (uint8_t)(1 - from);
    gda_ft_chan_path_t *op = &chan->path[from];
    gda_ft_chan_path_t *np = &chan->path[to];
    uint64_t first         = sw->first;
    uint64_t freeze        = sw->freeze;
    int strike             = (int)sw->strike;
    uint32_t replays       = 0;
    uint8_t failure        = GDA_FT_DEV_OK;
    gda_ft_chan_slot_t *nslot, slot;
    uint64_t completed, seq, now, off, last = 0;
    uint32_t epoch;

    /* frozen: the epoch cannot change, but posters still try their CAS
     * on the word, so it is read atomically too */
    epoch = (uint32_t)GDA_FT_CHAN_WORD_EPOCH(
            gda_ft_atomic_load_acq64(&chan->word));
    gda_ft_atomic_store_rlx64(&chan->answered_ns,
                              sw->asked ? gda_ft_dev_now_ns() : 0);
    if (known) {
        gda_ft_atomic_fetch_add32(&chan->counters.resolved, 1);
    }
    /* late completions of the path left, counted while the host
     * answered, are final now */
    completed = gda_ft_chan_close_epoch(chan, epoch);
    if (completed > first) {
        /* the window's head completed late: the new ring starts at the
         * first WQE still to run. NOPs in its place would be WQEs the new
         * path's HCA has yet to consume below `completed`, where room is
         * counted from: posters would overwrite them. */
        first = completed;
        gda_ft_chan_take_window(chan, from, first, freeze);
    }
    off = gda_ft_atomic_load_rlx64(&np->ring_off);
    gda_ft_chan_release_fence();
    for (seq = first; seq < freeze; seq += slot.wqebbs) {
        slot = *gda_ft_chan_slot(chan, op, seq);
        if (gda_ft_chan_goes_on(&slot, failure) &&
            gda_ft_chan_settle(chan, &slot, sw->asked, known, epsn) &&
            !gda_ft_chan_strike(chan, &slot, &strike)) {
            ++replays;
        } else {
            gda_ft_chan_write_nop(np, seq, slot.wqebbs);
            slot.kind  = GDA_FT_CHAN_OP_NOP;
            slot.npkts = 0;
        }
        if (slot.flags & GDA_FT_CHAN_SLOT_FAILED) {
            gda_ft_chan_keep_outcome(chan, seq, &slot, 0);
        }
        failure = gda_ft_chan_failure_on(&slot);
        gda_ft_chan_slot_fill(gda_ft_chan_slot(chan, np, seq), &slot);
        last = seq;
    }
    gda_ft_chan_release_fence();
    for (seq = first; seq < freeze; seq += nslot->wqebbs) {
        nslot = gda_ft_chan_slot(chan, np, seq);
        gda_ft_atomic_store_rlx64(&nslot->seq, seq);
    }
    gda_ft_atomic_fetch_add32(&chan->counters.replays, replays);
    /* the new path is judged from the moment its work is handed to it,
     * not from before the copy */
    now = gda_ft_dev_now_ns();
    if (freeze != first) {
        np->next_psn = gda_ft_chan_stamp(chan, np, off, first, freeze,
                                         now, np->next_psn);
        /* this switch wrote that WQE: its doorbell word is read back */
        gda_ft_chan_ring_db(np, off, freeze,
                            *(const uint64_t*)gda_ft_chan_seg(np, last, 0));
        chan->rung   = freeze;
    }
    np->ring_next = gda_ft_chan_ring_idx(np, freeze);
    op->ring_next = gda_ft_chan_ring_idx(op, freeze);

    gda_ft_atomic_fetch_add32((sw->why == GDA_FT_CHAN_WHY_FAILBACK) ?
                              &chan->counters.failbacks :
                              &chan->counters.switches, 1);
    gda_ft_atomic_max64(&chan->last_progress_ns,
                        now + gda_ft_chan_replay_grace(chan, to, sw->why,
                                                       replays != 0));
    if (sw->why != GDA_FT_CHAN_WHY_FAILBACK) {
        gda_ft_atomic_store_rel64(&chan->switch_ns, now);
    }
    gda_ft_atomic_store_rel32(&chan->active, to);
    /* the next epoch names `to` (GDA_FT_CHAN_WORD_PATH): posters read
     * their path from the word they reserve in. The word before the
     * state, as in gda_ft_chan_unfreeze(), gda_ft_chan_failover.h. */
    gda_ft_atomic_store_rel64(&chan->word,
                              GDA_FT_CHAN_WORD(epoch + 1, freeze));
    gda_ft_atomic_store_rel32(&chan->state, GDA_FT_CHAN_ACTIVE);
    gda_ft_chan_switch_ended(chan, epoch);
    return GDA_FT_DEV_PATH_SWITCHED;
}

#endif
