/*
 * gda_ft device datapath: failover of a concurrent channel, decided and
 * carried out by whichever poster or waiter finds the path dead (design
 * §5, §6.3).
 *
 *  1. Detection (gda_ft_chan_progress): an error CQE, or no completion
 *     progress for DEADLINE since the later of the oldest outstanding
 *     WQE's post and the last completion. Large transfers are cut into
 *     signalled chunks (max_chunk), so progress is judged chunk by chunk.
 *     Another channel to the peer that left the primary (health fail_gen),
 *     or the peer's own finding (mailbox peer_left), moves it too.
 *  2. The detecting thread wins a CAS on the channel state, freezes the
 *     reservation word (its old value is the freeze index F) and waits
 *     until `ready` reaches F.
 *  3. It moves the window [completed, F) to the other path, one WQE for
 *     one WQE, in order: a WQE to run again is copied with QPN, lkey and
 *     rkey rewritten; a WQE settled without running (the peer executed it,
 *     or it failed alone, or it is in doubt) becomes a NOP of the same
 *     size. Logical indices do not change, PSNs are assigned anew.
 *  4. When the window holds anything, the host's resolution is awaited
 *     first (switch record in the mailbox; the host fences the abandoned
 *     QP, asks the peer to fence its end and for the PSN it expected,
 *     answers): nothing of the path left can land after that. What the
 *     peer executed is complete; a fetching atomic among it whose reply
 *     never came is IN_DOUBT. Without an answer within resolve_ns,
 *     signals and atomics are in doubt: never applied twice.
 *  5. It unfreezes with a new epoch. With no path left, the channel stays
 *     frozen in NO_PATH and every wait returns NO_PATH, until the host
 *     re-arms a path (both its ends up again): the channel takes it in a
 *     new epoch (gda_ft_chan_regain), what failed stays failed.
 *
 * Nobody waits inside a switch for the host, the peer or a re-arm: a
 * switch that must wait parks (state PARKED, its progress in `sw`), and
 * the next progress pass of any thread takes it up where it stopped
 * (gda_ft_chan_step). So a thread that is also the host half (a UCT
 * endpoint's) answers between passes, and a waiter's timeout holds.
 *
 * Failback is the same move, backup to primary, once the host re-armed the
 * primary QP and what the backup holds has completed.
 *
 * Steps 3 and 4, the move of the window and its settlement with the host's
 * answer, are gda_ft_chan_window.h's; this header detects, freezes, runs
 * the phases of a switch and ends it.
 */
#ifndef GDA_FT_CHAN_FAILOVER_H_
#define GDA_FT_CHAN_FAILOVER_H_

#include "gda_ft_chan_window.h"
#include "gda_ft_chan_peer.h"

/* Why an error CQE makes the channel leave its path */
GDA_FT_DEV_FUNC unsigned gda_ft_chan_error_why(uint8_t syndrome)
{
    if (gda_ft_dev_syndrome_is_op_error(syndrome)) {
        return GDA_FT_CHAN_WHY_OP_ERROR;
    }
    if ((syndrome == GDA_FT_MLX5_SYND_TRANSPORT_RETRY_EXC_ERR) ||
        (syndrome == GDA_FT_MLX5_SYND_RNR_RETRY_EXC_ERR)) {
        return GDA_FT_CHAN_WHY_RETRY;
    }
    return GDA_FT_CHAN_WHY_ERR_CQE;
}

/* An error CQE that blames one WQE (why OP_ERROR): that WQE fails alone,
 * its QP is in ERR, the rest moves. Returns 1 when it blamed one. */
GDA_FT_DEV_FUNC int gda_ft_chan_blame(gda_ft_chan_t *chan, uint8_t from,
                                      unsigned why, uint64_t err_seq,
                                      uint8_t synd)
{
    gda_ft_chan_slot_t *slot;

    if (why != GDA_FT_CHAN_WHY_OP_ERROR) {
        return 0;
    }
    slot           = gda_ft_chan_slot(chan, &chan->path[from], err_seq);
    slot->syndrome = synd;
    gda_ft_chan_slot_fail(chan, slot, GDA_FT_DEV_ERROR);
    gda_ft_atomic_fetch_add32(&chan->counters.op_errors, 1);
    return 1;
}

/* Fails everything outstanding: both paths are gone */
GDA_FT_DEV_FUNC gda_ft_dev_status_t gda_ft_chan_no_path(gda_ft_chan_t *chan,
                                                        uint8_t from,
                                                        uint64_t freeze)
{
    gda_ft_chan_path_t *p = &chan->path[from];
    gda_ft_chan_slot_t *slot;
    uint64_t seq;

    for (seq = gda_ft_chan_completed(chan); seq < freeze;
         seq += slot->wqebbs) {
        slot = gda_ft_chan_slot(chan, p, seq);
        if (!(slot->flags & GDA_FT_CHAN_SLOT_FAILED)) {
            slot->flags  |= GDA_FT_CHAN_SLOT_FAILED;
            slot->status  = GDA_FT_DEV_NO_PATH;
        }
    }
    gda_ft_chan_note_error(chan, GDA_FT_DEV_NO_PATH, 0);
    gda_ft_atomic_fetch_add32(&chan->counters.no_path, 1);
    gda_ft_atomic_store_rel32(&chan->state, GDA_FT_CHAN_NO_PATH);
    gda_ft_chan_switch_ended(chan, GDA_FT_CHAN_WORD_EPOCH(
            gda_ft_atomic_load_rlx64(&chan->word)));
    return GDA_FT_DEV_NO_PATH;   /* the word stays FROZEN until a regain */
}

/*
 * Applies the host's re-arm of path p (QP reset to RTS, probed: the ring
 * and the PSNs go on after the probe). A re-armed primary also repaired
 * what the peer and the other channels to it had found there so far,
 * whether the channel takes it back by a failback or by a switch off the
 * backup. Kept as news, those findings would send the channel off the
 * primary it has just taken while the backup awaits its own re-arm: both
 * paths lost with both links up.
 */
GDA_FT_DEV_FUNC void gda_ft_chan_apply_rearm(gda_ft_chan_t *chan, uint8_t p,
                                             uint32_t rearm)
{
    gda_ft_chan_path_t *path = &chan->path[p];

    path->next_psn   = gda_ft_atomic_load_acq32_sys(&chan->mbox->rearm_psn[p]);
    path->ring_next  = gda_ft_atomic_load_acq32_sys(
            &chan->mbox->rearm_ring[p]);
    gda_ft_atomic_store_rel32(&path->failed, 0);
    if (p == GDA_FT_CHAN_PRIMARY) {
        gda_ft_atomic_store_rel32(&path->seen_peer_left,
                gda_ft_atomic_load_acq32_sys(&chan->mbox->peer_left));
        if (chan->health != NULL) {
            gda_ft_atomic_store_rel32(&chan->seen_fail_gen,
                    gda_ft_atomic_load_acq32(&chan->health->fail_gen));
        }
    }
    gda_ft_atomic_store_rel32(&path->seen_rearm, rearm);
}

/*
 * A channel in NO_PATH takes back a path that the host re-armed since
 * (the primary first): both of its ends were up for the host's recovery
 * window, and the peer answered. Losing both paths to a stall, not to dead
 * links (a starved engine, a descheduled peer), cost the channel for good
 * otherwise.
 *
 * What failed stays failed: the window [completed, freeze) of the path
 * left goes to the outcome table as settled (NO_PATH, IN_DOUBT, ERROR),
 * since the slots are written again from now on. Nothing of it runs
 * again and nothing is copied: the new epoch starts at `freeze` on the
 * re-armed ring, empty after its probe. Its parity names the path, so a
 * regain of the path left skips an epoch. The QP left was fenced when the
 * channel gave it up (phase GONE); its peer's end restarts at its own
 * re-arm.
 *
 * Returns NO_PATH while there is nothing to take (looked at every half
 * deadline: the notices are across PCIe), PATH_SWITCHED when this thread
 * took a path, INPROGRESS when another thread is taking it.
 */
GDA_FT_DEV_FUNC gda_ft_dev_status_t gda_ft_chan_regain(gda_ft_chan_t *chan)
{
    gda_ft_chan_mbox_t *mbox = chan->mbox;
    uint64_t now             = gda_ft_dev_now_ns();
    uint32_t rearm           = 0;
    uint64_t epoch, next, first, freeze, seq;
    gda_ft_chan_slot_t *slot;
    gda_ft_chan_path_t *path;
    uint8_t from, p;

    if ((mbox == NULL) ||
        gda_ft_atomic_load_acq32_sys(&mbox->no_path_final) ||
        (now < gda_ft_atomic_load_rlx64(&chan->rearm_check_ns))) {
        return GDA_FT_DEV_NO_PATH;
    }
    gda_ft_atomic_store_rlx64(&chan->rearm_check_ns,
            now + gda_ft_timing_rearm_look_ns(chan->deadline_ns));
    for (p = 0; p < GDA_FT_NUM_PATHS; ++p) {
        rearm = gda_ft_atomic_load_acq32_sys(&mbox->rearm[p]);
        if ((rearm != gda_ft_atomic_load_acq32(&chan->path[p].seen_rearm)) &&
            gda_ft_chan_link_up(chan, p)) {
            break;
        }
    }
    if (p == GDA_FT_NUM_PATHS) {
        return GDA_FT_DEV_NO_PATH;
    }
    if (gda_ft_atomic_cas32(&chan->state, GDA_FT_CHAN_NO_PATH,
                            GDA_FT_CHAN_SWITCHING) != GDA_FT_CHAN_NO_PATH) {
        return GDA_FT_DEV_INPROGRESS;
    }
    gda_ft_chan_acquire_fence();

    from   = (uint8_t)chan->sw.from;
    freeze = chan->sw.freeze;
    epoch  = GDA_FT_CHAN_WORD_EPOCH(gda_ft_atomic_load_acq64(&chan->word));
    /* the table first: a late completion of the path left may still
     * count until the epoch closes (its request then reads the failure:
     * it ran once, as NO_PATH allows), a stale poller of the other path
     * after it, and neither may make a failure read as OK */
    first  = gda_ft_chan_completed(chan);
    for (seq = first; seq < freeze; seq += slot->wqebbs) {
        slot = gda_ft_chan_slot(chan, &chan->path[from], seq);
        /* told: while the channel had no path, every progress of these
         * requests said NO_PATH */
        gda_ft_chan_keep_outcome(chan, seq, slot, 1);
    }
    gda_ft_chan_close_epoch(chan, epoch);

    path = &chan->path[p];
    gda_ft_chan_apply_rearm(chan, p, rearm);
    gda_ft_atomic_store_rel64(&path->ring_off, freeze - path->ring_next);
    next = epoch + 1;
    if ((next & 1) != p) {
        ++next;
    }
    gda_ft_atomic_fetch_add32(&chan->regains, 1);
    gda_ft_atomic_store_rel64(&chan->last_progress_ns, gda_ft_dev_now_ns());
    gda_ft_atomic_store_rel64(&chan->completed, GDA_FT_CHAN_WORD(next, freeze));
    gda_ft_atomic_store_rel32(&chan->active, p);
    /* the word before the state, as in gda_ft_chan_finish() */
    gda_ft_atomic_store_rel64(&chan->word, GDA_FT_CHAN_WORD(next, freeze));
    gda_ft_atomic_store_rel32(&chan->state, GDA_FT_CHAN_ACTIVE);
    gda_ft_chan_switch_ended(chan, next - 1);
    return GDA_FT_DEV_PATH_SWITCHED;
}

/*
 * Gives up a freeze that found nothing to do: the epoch stays. The word
 * first, then the state: while the state says SWITCHING nobody else can
 * freeze, so nothing but this thread writes the frozen word. With the
 * state ACTIVE first, a thread that froze in between would lose its
 * FROZEN bit to this store, and wait for ever for `ready` to stop at its
 * freeze index while posters went on.
 */
GDA_FT_DEV_FUNC void gda_ft_chan_unfreeze(gda_ft_chan_t *chan)
{
    gda_ft_atomic_store_rel64(&chan->word,
                              gda_ft_atomic_load_acq64(&chan->word) &
                              ~GDA_FT_CHAN_FROZEN);
    gda_ft_atomic_store_rel32(&chan->state, GDA_FT_CHAN_ACTIVE);
}

/* Whether the host hears the peer (mailbox peer_quiet): then a silence on
 * links that are up is a slow path or a starved peer, never a dead one.
 * Without a deadline nothing is sat out: the HCA's retries decide. */
GDA_FT_DEV_FUNC int gda_ft_chan_peer_heard(const gda_ft_chan_t *chan)
{
    return (chan->deadline_ns != 0) &&
           !gda_ft_atomic_load_acq32_sys(&chan->mbox->peer_quiet);
}

/*
 * Whether a move that found the other path failed too may be called off:
 * the path was left for its silence alone, the host reports our port of
 * it up, and the peer is heard, or the path has been silent for less than
 * GDA_FT_TIMING_SIT_OUT_DEADLINES deadlines. Left for its own deadline
 * while the peer is not heard, the host must know both of its ends up;
 * left to follow the peer's channels, whose traffic then no longer shows
 * the peer's port, the host's own port up is enough: this channel saw
 * nothing wrong there, and a path that is dead fails its own deadline
 * next. A path left for an error completion has its QP in ERR: never.
 */
GDA_FT_DEV_FUNC int gda_ft_chan_may_stay(gda_ft_chan_t *chan)
{
    uint8_t from = (uint8_t)chan->sw.from;
    uint64_t now = gda_ft_dev_now_ns(), since;

    if ((chan->mbox == NULL) || !gda_ft_chan_link_up(chan, from) ||
        ((chan->sw.why != GDA_FT_CHAN_WHY_DEADLINE) &&
         (chan->sw.why != GDA_FT_CHAN_WHY_PEER))) {
        return 0;
    }
    if (gda_ft_chan_peer_heard(chan)) {
        return 1;
    }
    if ((chan->sw.why == GDA_FT_CHAN_WHY_DEADLINE) &&
        !gda_ft_chan_link_known_up(chan, from)) {
        return 0;
    }
    /* a replay's grace may put the last progress ahead of the clock */
    since = gda_ft_atomic_load_rlx64(&chan->silent_since_ns);
    return (since >= now) ||
           ((now - since) <= gda_ft_timing_sit_out_ns(chan->deadline_ns));
}

/*
 * Calls off the move (phase REARM, before anything was taken or told):
 * the channel goes on where it was, in the same epoch, and sits out the
 * silence there (gda_ft_chan_last_path_stalls). It ends as a switch does:
 * the posts it held go on.
 */
GDA_FT_DEV_FUNC gda_ft_dev_status_t gda_ft_chan_stay(gda_ft_chan_t *chan)
{
    gda_ft_atomic_store_rel32(&chan->path[chan->sw.from].failed, 0);
    gda_ft_chan_unfreeze(chan);
    return GDA_FT_DEV_PATH_SWITCHED;
}

/*
 * The other path failed too (phase REARM). It is usable again if the host
 * re-armed it meanwhile. While the host reports its link up (it was left
 * for an error completion, which the host re-arms at once, or for a
 * deadline that a stall, not a dead link, caused), the re-arm comes soon:
 * wait for it, within resolve_ns, or GDA_FT_TIMING_HEARD_EXTRA_DEADLINES
 * deadlines more where the peer is heard on that path. Then the move is
 * called off if the path left may still work (gda_ft_chan_may_stay): a
 * channel does not give up a path whose ends are up for one that cannot
 * take its traffic. Where it may not (our port of it is down), the re-arm
 * is waited for as long as the peer is heard. Else both paths are gone.
 */
GDA_FT_DEV_FUNC gda_ft_dev_status_t gda_ft_chan_step_rearm(gda_ft_chan_t *chan)
{
    uint8_t to = (uint8_t)(1 - chan->sw.from);
    uint32_t rearm;

    if (chan->mbox != NULL) {
        rearm = gda_ft_atomic_load_acq32_sys(&chan->mbox->rearm[to]);
        if (rearm != chan->path[to].seen_rearm) {
            gda_ft_atomic_store_rel32_sys(&chan->mbox->awaits_rearm, 0);
            gda_ft_chan_apply_rearm(chan, to, rearm);
            gda_ft_chan_phase(chan, GDA_FT_CHAN_PHASE_TELL);
            return GDA_FT_DEV_OK;
        }
        if (gda_ft_chan_link_up(chan, to)) {
            if (!gda_ft_chan_phase_expired(chan, gda_ft_timing_rearm_wait_ns(
                    chan->deadline_ns, chan->resolve_ns,
                    gda_ft_chan_link_known_up(chan, to)))) {
                /* the host re-arms it at once, without a recovery window */
                gda_ft_atomic_store_rel32_sys(&chan->mbox->awaits_rearm,
                                              to + 1);
                return GDA_FT_DEV_INPROGRESS;
            }
            if (gda_ft_chan_may_stay(chan)) {
                gda_ft_atomic_store_rel32_sys(&chan->mbox->awaits_rearm, 0);
                return gda_ft_chan_stay(chan);
            }
            if (gda_ft_chan_peer_heard(chan)) {
                /* our port of the path left is down: a heard peer answers
                 * the re-arm, however slowly */
                return GDA_FT_DEV_INPROGRESS;
            }
        }
        gda_ft_atomic_store_rel32_sys(&chan->mbox->awaits_rearm, 0);
        if (gda_ft_chan_may_stay(chan)) {
            return gda_ft_chan_stay(chan);
        }
    }
    gda_ft_chan_phase(chan, GDA_FT_CHAN_PHASE_GONE);
    return GDA_FT_DEV_OK;
}

/* Both paths are gone (phase GONE): the host hears of it (it fences the
 * path left), then everything outstanding fails */
GDA_FT_DEV_FUNC gda_ft_dev_status_t gda_ft_chan_step_gone(gda_ft_chan_t *chan)
{
    gda_ft_chan_switch_t *sw = &chan->sw;
    uint32_t record;

    if (!gda_ft_chan_tell_host(chan, (uint8_t)sw->from, sw->why, sw->freeze,
                               0, &record) &&
        !gda_ft_chan_phase_expired(chan, chan->resolve_ns)) {
        return GDA_FT_DEV_INPROGRESS;
    }
    return gda_ft_chan_no_path(chan, (uint8_t)sw->from, sw->freeze);
}

/*
 * The switch record (phase TELL): an error that names no culprit, or a
 * window holding signals, atomics or sends, asks for the peer's word. Then
 * the window is taken to the other ring while the host answers.
 */
GDA_FT_DEV_FUNC gda_ft_dev_status_t gda_ft_chan_step_tell(gda_ft_chan_t *chan)
{
    gda_ft_chan_switch_t *sw = &chan->sw;
    uint8_t from             = (uint8_t)sw->from;
    uint64_t first           = gda_ft_chan_completed(chan);
    /* Any WQE in the window waits for the peer's word, puts and gets too:
     * both ends of the path left are fenced first, so that a copy of a put
     * still on its way there (delayed, or retransmitted) cannot land after
     * the replay's OK, over what the buffer's next put wrote */
    int asked = (sw->why == GDA_FT_CHAN_WHY_ERR_CQE) || (first != sw->freeze);

    if (!gda_ft_chan_tell_host(chan, from, sw->why, sw->freeze, asked,
                               &sw->record) &&
        !gda_ft_chan_phase_expired(chan, chan->resolve_ns)) {
        return GDA_FT_DEV_INPROGRESS;
    }
    /* without a record (the host is gone) it decides alone */
    sw->first = first;
    sw->asked = (uint32_t)asked;
    gda_ft_chan_take_window(chan, from, first, sw->freeze);
    gda_ft_chan_phase(chan, GDA_FT_CHAN_PHASE_HEAR);
    return GDA_FT_DEV_OK;
}

/* The host's answer (phase HEAR), then the end of the move */
GDA_FT_DEV_FUNC gda_ft_dev_status_t gda_ft_chan_step_hear(gda_ft_chan_t *chan)
{
    uint32_t epsn = 0;
    int known;

    if (gda_ft_chan_hear_host(chan, &known, &epsn) ==
        GDA_FT_DEV_INPROGRESS) {
        return GDA_FT_DEV_INPROGRESS;
    }
    return gda_ft_chan_finish(chan, known, epsn);
}

/*
 * Whether path `from`'s HCA may have given up retrying the oldest WQE
 * still to run. An error completion that names no culprit (the flush of a
 * later WQE, which overwrote the first error in the collapsed CQE) is
 * blamed on that WQE (gda_ft_chan_strike); one that came a retry window
 * or more after it was posted may be the path's silence, the HCA giving
 * up (TRANSPORT_RETRY_EXC), which is no fault of the WQE: a path slow
 * twice in a row would otherwise fail it alone with both links up.
 * Sooner, the error is the peer's answer to that WQE.
 */
GDA_FT_DEV_FUNC int gda_ft_chan_hca_may_have_given_up(const gda_ft_chan_t *chan,
                                                      uint8_t from)
{
    const gda_ft_chan_path_t *p = &chan->path[from];
    uint64_t post_ns            = gda_ft_atomic_load_rlx64(
            &gda_ft_chan_slot(chan, p, gda_ft_chan_completed(chan))->post_ns);

    return (p->retry_us != 0) &&
           ((int64_t)(gda_ft_dev_now_ns() - post_ns) >=
            (int64_t)(p->retry_us * 1000ull));
}

/*
 * Starts moving the window [completed, sw.freeze) from path `from` to the
 * other path. A path left for a failure is marked failed; if the other
 * one is too, its re-arm is awaited first.
 */
GDA_FT_DEV_FUNC void gda_ft_chan_move(gda_ft_chan_t *chan, uint8_t from,
                                      unsigned why)
{
    chan->sw.from   = from;
    chan->sw.why    = why;
    chan->sw.strike = (why == GDA_FT_CHAN_WHY_ERR_CQE) &&
                      !gda_ft_chan_hca_may_have_given_up(chan, from);
    if (why != GDA_FT_CHAN_WHY_FAILBACK) {
        gda_ft_atomic_store_rel32(&chan->path[from].failed, why);
        if (chan->path[1 - from].failed) {
            gda_ft_chan_phase(chan, GDA_FT_CHAN_PHASE_REARM);
            return;
        }
    }
    gda_ft_chan_phase(chan, GDA_FT_CHAN_PHASE_TELL);
}

/*
 * Failback (phase DRAIN): the primary is re-armed; traffic returns to it
 * once what the backup holds has completed, within a deadline. If not,
 * the backup is the path that failed, and the move replays it.
 */
GDA_FT_DEV_FUNC gda_ft_dev_status_t gda_ft_chan_step_drain(gda_ft_chan_t *chan)
{
    uint64_t err_seq;
    uint8_t synd;
    unsigned why;

    if (gda_ft_chan_completed(chan) == chan->sw.freeze) {
        why = GDA_FT_CHAN_WHY_FAILBACK;
    } else if (gda_ft_chan_poll_path(chan, GDA_FT_CHAN_BACKUP, &err_seq,
                                     &synd) == GDA_FT_DEV_ERROR) {
        /* as a switch judges it: a WQE to blame fails alone, a path that
         * gave up retrying strikes no WQE */
        why = gda_ft_chan_error_why(synd);
        gda_ft_chan_blame(chan, GDA_FT_CHAN_BACKUP, why, err_seq, synd);
    } else if (gda_ft_chan_completed(chan) == chan->sw.freeze) {
        why = GDA_FT_CHAN_WHY_FAILBACK;
    } else if ((chan->deadline_ns != 0) &&
               gda_ft_chan_phase_expired(chan, chan->deadline_ns)) {
        why = GDA_FT_CHAN_WHY_DEADLINE;
    } else {
        return GDA_FT_DEV_INPROGRESS;
    }
    gda_ft_chan_move(chan, GDA_FT_CHAN_BACKUP, why);
    return GDA_FT_DEV_OK;
}

/*
 * Advances the switch this thread holds in SWITCHING as far as it goes
 * without waiting. Returns PATH_SWITCHED or NO_PATH when it ended, or
 * INPROGRESS with the channel PARKED: the next progress pass, by any
 * thread, takes it up (gda_ft_chan_resume). A kernel's waiter, and a UCT
 * endpoint whose thread also runs the host half, never wait inside it.
 */
GDA_FT_DEV_FUNC gda_ft_dev_status_t gda_ft_chan_step(gda_ft_chan_t *chan)
{
    gda_ft_dev_status_t status;

    do {
        switch (chan->sw.phase) {
        case GDA_FT_CHAN_PHASE_DRAIN:
            status = gda_ft_chan_step_drain(chan);
            break;
        case GDA_FT_CHAN_PHASE_REARM:
            status = gda_ft_chan_step_rearm(chan);
            break;
        case GDA_FT_CHAN_PHASE_TELL:
            status = gda_ft_chan_step_tell(chan);
            break;
        case GDA_FT_CHAN_PHASE_HEAR:
            status = gda_ft_chan_step_hear(chan);
            break;
        default:
            status = gda_ft_chan_step_gone(chan);
            break;
        }
    } while (status == GDA_FT_DEV_OK);

    if (status == GDA_FT_DEV_INPROGRESS) {
        gda_ft_atomic_store_rel32(&chan->state, GDA_FT_CHAN_PARKED);
    }
    return status;
}

/* Takes up a parked switch: INPROGRESS when another thread has it */
GDA_FT_DEV_FUNC gda_ft_dev_status_t gda_ft_chan_resume(gda_ft_chan_t *chan)
{
    if (gda_ft_atomic_cas32(&chan->state, GDA_FT_CHAN_PARKED,
                            GDA_FT_CHAN_SWITCHING) != GDA_FT_CHAN_PARKED) {
        return GDA_FT_DEV_INPROGRESS;
    }
    gda_ft_chan_acquire_fence();
    return gda_ft_chan_step(chan);
}

/* Takes the channel for a switch: state CAS, freeze, publication drained.
 * Returns 1 with the freeze index in sw.freeze, or 0 when another thread
 * owns it already */
GDA_FT_DEV_FUNC int gda_ft_chan_freeze(gda_ft_chan_t *chan)
{
    uint64_t w;

    if (gda_ft_atomic_cas32(&chan->state, GDA_FT_CHAN_ACTIVE,
                            GDA_FT_CHAN_SWITCHING) != GDA_FT_CHAN_ACTIVE) {
        return 0;
    }
    gda_ft_chan_acquire_fence();
    w = gda_ft_atomic_fetch_or64(&chan->word, GDA_FT_CHAN_FROZEN);
    chan->sw.freeze = GDA_FT_CHAN_WORD_INDEX(w);
    while (gda_ft_chan_ready(chan) != chan->sw.freeze) {
        gda_ft_cpu_relax();
    }
    return 1;
}

/*
 * Leaves path `from` for the other one. err_seq/synd: the error CQE that
 * caused it (why ERR_CQE or OP_ERROR). Returns PATH_SWITCHED, NO_PATH, or
 * INPROGRESS when the switch waits (parked), another thread is switching,
 * or the path is no longer the active one.
 */
GDA_FT_DEV_FUNC gda_ft_dev_status_t
gda_ft_chan_switch(gda_ft_chan_t *chan, uint8_t from, unsigned why,
                   uint64_t err_seq, uint8_t synd)
{
    if (!gda_ft_chan_freeze(chan)) {
        return GDA_FT_DEV_INPROGRESS;
    }
    if (gda_ft_atomic_load_acq32(&chan->active) != from) {
        gda_ft_chan_unfreeze(chan);   /* someone switched already */
        return GDA_FT_DEV_INPROGRESS;
    }

    /* when it was decided, after what silence: the parts of an
     * interruption (gda_ft_gpu_chan prints them) */
    gda_ft_atomic_store_rlx64(&chan->detect_ns, gda_ft_dev_now_ns());
    gda_ft_atomic_store_rlx64(&chan->silent_since_ns,
                              gda_ft_atomic_load_acq64(
                                      &chan->last_progress_ns));

    if (!gda_ft_chan_blame(chan, from, why, err_seq, synd) &&
        (from == GDA_FT_CHAN_PRIMARY) && (chan->health != NULL)) {
        /* the other channels to this peer follow at their next post */
        gda_ft_atomic_store_rel32(&chan->seen_fail_gen,
                (why == GDA_FT_CHAN_WHY_PEER) ?
                gda_ft_atomic_load_acq32(&chan->health->fail_gen) :
                gda_ft_atomic_fetch_add32(&chan->health->fail_gen, 1) + 1);
    }
    gda_ft_chan_move(chan, from, why);
    return gda_ft_chan_step(chan);
}

/*
 * Acts on the host's re-arm notices: a re-armed backup is usable again; a
 * re-armed primary takes the traffic back once what the backup holds has
 * completed (phase DRAIN).
 */
GDA_FT_DEV_FUNC gda_ft_dev_status_t gda_ft_chan_check_rearm(
        gda_ft_chan_t *chan)
{
    uint32_t rearm[2], active;
    uint8_t p;

    if (chan->mbox == NULL) {
        return GDA_FT_DEV_OK;
    }
    for (p = 0; p < GDA_FT_NUM_PATHS; ++p) {
        rearm[p] = gda_ft_atomic_load_acq32_sys(&chan->mbox->rearm[p]);
    }
    /* a primary re-armed while its link was up may have lost it since:
     * taking it back now would put the next posts on a dead path. The
     * notice waits until the host reports the link up again. */
    if ((rearm[0] != gda_ft_atomic_load_acq32(&chan->path[0].seen_rearm)) &&
        !gda_ft_chan_link_up(chan, GDA_FT_CHAN_PRIMARY)) {
        rearm[0] = gda_ft_atomic_load_acq32(&chan->path[0].seen_rearm);
    }
    if ((rearm[0] == gda_ft_atomic_load_acq32(&chan->path[0].seen_rearm)) &&
        (rearm[1] == gda_ft_atomic_load_acq32(&chan->path[1].seen_rearm))) {
        return GDA_FT_DEV_OK;
    }
    if (!gda_ft_chan_freeze(chan)) {
        return GDA_FT_DEV_INPROGRESS;
    }

    /* a notice about the path in use is stale: the host re-arms only
     * paths that were left */
    active = chan->active;
    gda_ft_atomic_store_rel32(&chan->path[active].seen_rearm, rearm[active]);
    if (rearm[1] != chan->path[1].seen_rearm) {
        gda_ft_chan_apply_rearm(chan, GDA_FT_CHAN_BACKUP, rearm[1]);
    }
    if (rearm[0] == chan->path[0].seen_rearm) {
        gda_ft_chan_unfreeze(chan);
        return GDA_FT_DEV_OK;
    }

    gda_ft_chan_apply_rearm(chan, GDA_FT_CHAN_PRIMARY, rearm[0]);
    gda_ft_chan_phase(chan, GDA_FT_CHAN_PHASE_DRAIN);
    return gda_ft_chan_step(chan);
}

/*
 * The peer's channels left the primary for its failure (the host heard it
 * in the peer's question, mailbox peer_left): a path is one link both
 * ways, so this channel follows now instead of waiting for a deadline of
 * its own (an idle side posting onto the dead path took a second deadline
 * after the other side had switched). Called on the primary with work in
 * flight.
 */
GDA_FT_DEV_FUNC gda_ft_dev_status_t
gda_ft_chan_check_peer_left(gda_ft_chan_t *chan)
{
    gda_ft_chan_path_t *p = &chan->path[GDA_FT_CHAN_PRIMARY];
    uint32_t left;

    if (chan->mbox == NULL) {
        return GDA_FT_DEV_OK;
    }
    left = gda_ft_atomic_load_acq32_sys(&chan->mbox->peer_left);
    if (left == gda_ft_atomic_load_acq32(&p->seen_peer_left)) {
        return GDA_FT_DEV_OK;
    }
    gda_ft_atomic_store_rel32(&p->seen_peer_left, left);
    return gda_ft_chan_switch(chan, GDA_FT_CHAN_PRIMARY, GDA_FT_CHAN_WHY_PEER,
                              0, 0);
}

/*
 * Whether the channel's silence since `since` is its turn waiting behind
 * other channels on a path that moves: some channel to the peer saw a
 * completion on `path` within the last deadline, and this one's own
 * silence is shorter than GDA_FT_TIMING_STARVED_DEADLINES deadlines.
 */
GDA_FT_DEV_FUNC int gda_ft_chan_path_moving(gda_ft_chan_t *chan,
                                            uint8_t path, uint64_t now,
                                            uint64_t since)
{
    uint64_t shared;

    if ((chan->health == NULL) ||
        ((now - since) >
         GDA_FT_TIMING_STARVED_DEADLINES * chan->deadline_ns)) {
        return 0;
    }
    shared = gda_ft_atomic_load_acq64(&chan->health->progress_ns[path]);
    return (shared >= now) || ((now - shared) <= chan->deadline_ns);
}

/*
 * Whether the silence of `path` since `since` is a stall to sit out: the
 * host reports its link up, and the other path's down, or not re-armed
 * since it was left while the peer is heard or both ends of this one are
 * known up, so leaving it could only end in NO_PATH or in a wait for that
 * re-arm. A soft HCA whose engine paused for a few deadlines made channels
 * on the backup, the primary's port down, lose both paths that way (200
 * us and 1 ms deadlines on an H200). While the peer is heard the wait
 * lasts; once it is not, it ends after GDA_FT_TIMING_SIT_OUT_DEADLINES
 * deadlines of silence. An error completion, or either link changing,
 * ends it at once.
 */
GDA_FT_DEV_FUNC int gda_ft_chan_last_path_stalls(gda_ft_chan_t *chan,
                                                 uint8_t path, uint64_t now,
                                                 uint64_t since)
{
    int heard;

    if (chan->mbox == NULL) {
        return 0;
    }
    heard = gda_ft_chan_peer_heard(chan);
    if (!heard &&
        ((now - since) > gda_ft_timing_sit_out_ns(chan->deadline_ns))) {
        return 0;
    }
    return gda_ft_chan_link_up(chan, path) &&
           (!gda_ft_chan_link_up(chan, (uint8_t)(1 - path)) ||
            (gda_ft_atomic_load_acq32(&chan->path[1 - path].failed) &&
             (heard || gda_ft_chan_link_known_up(chan, path))));
}

/*
 * One progress pass, `turn` saying whether it holds the channel's host
 * turn: only then does it read the host words (the CQE, the mailbox), or
 * judge the path's silence (whether a last path sits it out reads the
 * mailbox's link states), or advance a parked switch or a regain, whose
 * steps read them too. Without the turn a pass only follows another
 * channel's switch.
 */
GDA_FT_DEV_FUNC gda_ft_dev_status_t
gda_ft_chan_progress_pass(gda_ft_chan_t *chan, int turn)
{
    uint32_t state;
    uint64_t completed, ready, since, post_ns, err_seq, now;
    uint8_t active, synd;
    gda_ft_dev_status_t status;

    state = gda_ft_atomic_load_acq32(&chan->state);
    if ((state == GDA_FT_CHAN_NO_PATH) || (state == GDA_FT_CHAN_PARKED)) {
        if (!turn) {
            return (state == GDA_FT_CHAN_NO_PATH) ? GDA_FT_DEV_NO_PATH :
                                                    GDA_FT_DEV_INPROGRESS;
        }
        gda_ft_chan_peer_sync(chan);
        return (state == GDA_FT_CHAN_NO_PATH) ? gda_ft_chan_regain(chan) :
                                                gda_ft_chan_resume(chan);
    }
    if (state != GDA_FT_CHAN_ACTIVE) {
        return GDA_FT_DEV_INPROGRESS;    /* another thread advances it */
    }

    active = (uint8_t)gda_ft_atomic_load_acq32(&chan->active);
    status = GDA_FT_DEV_INPROGRESS;
    if (turn) {
        gda_ft_chan_peer_sync(chan);
        status = gda_ft_chan_poll_path(chan, active, &err_seq, &synd);
    }
    if (status == GDA_FT_DEV_ERROR) {
        return gda_ft_chan_switch(chan, active, gda_ft_chan_error_why(synd),
                                  err_seq, synd);
    }

    if ((active == GDA_FT_CHAN_PRIMARY) && (chan->health != NULL) &&
        (gda_ft_atomic_load_acq32(&chan->health->fail_gen) !=
         gda_ft_atomic_load_acq32(&chan->seen_fail_gen))) {
        return gda_ft_chan_switch(chan, active, GDA_FT_CHAN_WHY_PEER, 0, 0);
    }

    if (!turn) {
        return GDA_FT_DEV_OK;
    }

    /* the clock first: a poster preempted between reading the progress
     * stamps and the clock would blame the path for its own absence */
    now       = gda_ft_dev_now_ns();
    completed = gda_ft_chan_completed(chan);
    ready     = gda_ft_chan_ready(chan);
    if ((completed != ready) && (chan->deadline_ns != 0)) {
        post_ns = gda_ft_atomic_load_rlx64(
                &gda_ft_chan_slot(chan, &chan->path[active],
                                  completed)->post_ns);
        since   = gda_ft_atomic_load_acq64(&chan->last_progress_ns);
        since   = (post_ns > since) ? post_ns : since;
        if ((now > since) && ((now - since) > chan->deadline_ns) &&
            !gda_ft_chan_path_moving(chan, active, now, since) &&
            !gda_ft_chan_last_path_stalls(chan, active, now, since)) {
            return gda_ft_chan_switch(chan, active, GDA_FT_CHAN_WHY_DEADLINE,
                                      0, 0);
        }
        if (now < gda_ft_atomic_load_rlx64(&chan->rearm_check_ns)) {
            return GDA_FT_DEV_OK;
        }
        if (active == GDA_FT_CHAN_PRIMARY) {
            /* work in flight on the primary: every eighth of a deadline,
             * whether the peer found the path dead */
            gda_ft_atomic_store_rlx64(&chan->rearm_check_ns,
                    now + gda_ft_timing_peer_look_ns(chan->deadline_ns));
            return gda_ft_chan_check_peer_left(chan);
        }
        /* a channel that is never idle hears of re-arms too, every half
         * deadline (the notice is across PCIe): on a closed loop that
         * always has work in flight, the primary was never taken back */
        gda_ft_atomic_store_rlx64(&chan->rearm_check_ns,
                now + gda_ft_timing_rearm_look_ns(chan->deadline_ns));
    }
    return gda_ft_chan_check_rearm(chan);
}

/*
 * One progress pass of a waiter: completions of the active path, failure
 * detection, the peer's health, the host's re-arm notices, or a step of
 * the switch under way. Returns NO_PATH when the channel has no path, else
 * OK, PATH_SWITCHED, or INPROGRESS while a switch is under way. Out of
 * line on the GPU: the switch it may run is most of the datapath's code,
 * and every post that calls it (a full ring, a follow) would carry a copy.
 */
GDA_FT_DEV_COLD_FUNC gda_ft_dev_status_t
gda_ft_chan_progress(gda_ft_chan_t *chan)
{
    int turn                   = gda_ft_chan_host_turn_take(chan);
    gda_ft_dev_status_t status = gda_ft_chan_progress_pass(chan, turn);

    if (turn) {
        gda_ft_chan_host_turn_give(chan);
    }
    return status;
}

#endif
