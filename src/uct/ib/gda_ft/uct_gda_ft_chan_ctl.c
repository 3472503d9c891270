/*
 * gda_ft UCT transport: the control QPs of an endpoint's channels, and the
 * questions that the channel guardians ask the peer over them (see
 * uct_gda_ft_chan_ctl.h).
 *
 * The guardian of each initiator channel (gda_ft_chan_host_guard) asks the
 * peer through gda_ft_chan_peer_ops_t: here, a question written into the
 * peer endpoint's mailbox by a control operation over the other path (the
 * one the channel did not leave), answered in ours the same way. One
 * question is in flight per channel; the channel guardian bounds how long
 * it waits.
 *
 * Control operations are RDMA WRITEs that the guardian posts on the
 * endpoint's control QPs (uct_gda_ft_ep_ctl_t), one per path, connected
 * to the peer's: a channel that nobody posts on through the datapath. No
 * switch of any channel fences them, so a control write waits neither for
 * a channel's ring nor for a switch, and its path stays usable while the
 * channels come and go on it. A control QP leaves service only on an error
 * completion; the end whose control QP has the lower number then re-arms
 * the pair, asking the peer over the other control path (mailbox slot
 * UCT_GDA_FT_WIRE_CTL_SLOT). A write that cannot go out, or that is silent
 * for a deadline, is asked again at the next pass.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "uct_gda_ft_chan_ctl.h"
#include "gda_ft_device_api.h"
#include "uct_gda_ft_ep.inl"

#include <ucs/debug/log.h>
#include <ucs/sys/math.h>


/* First PSN of the direction src -> dst, which both ends compute alike:
 * connections start anywhere in the 24-bit space */
uint32_t uct_gda_ft_chan_first_psn(uint32_t src_qpn, uint32_t dst_qpn)
{
    return ((src_qpn * 2654435761u) ^ (dst_qpn * 0x9e3779b1u) ^
            (src_qpn >> 7)) & 0xffffff;
}


/* ---- control operations ------------------------------------------------- */

/* The control ring of `path` starts over once its QP was connected or
 * re-armed (RESET -> RTS: ring index 0, an empty CQE) */
void uct_gda_ft_ctl_reset(uct_gda_ft_ep_t *ep, unsigned path)
{
    uct_gda_ft_ep_ctl_t *ctl = &ep->ctl[path];

    ctl->sq              = ep->chans->ctl->chan.path[path].sq;
    ctl->sq.pi           = 0;
    ctl->sq.ci           = 0;
    ctl->sq.db_pi        = 0;
    ctl->sq.last_wqe_idx = 0;
    ctl->busy_ns         = 0;
    ctl->failed          = 0;
    ctl->unacked         = 0;
    ctl->rearming        = 0;
    ++ctl->gen;
}

/*
 * A control QP that the peer has not answered once since the connection
 * may have written to a peer that had not connected its end yet: UCP
 * connects the two ends one after the other, and the first end's writes
 * meet a QP that drops them until then, maybe past the HCA's retries.
 * Rather than taken for dead (both control paths would be, at both ends,
 * with nothing left to re-arm them over), it starts over from its
 * connection: it sends from the PSN of the connection again, which the
 * peer still expects (nothing it sent landed, or the peer would have
 * acknowledged it), and goes on receiving from the PSN it expects now
 * (the peer's writes may have landed). What it carried is written again:
 * the directory at once, a question at its next pass.
 */
static void uct_gda_ft_ctl_restart(uct_gda_ft_ep_t *ep, unsigned path,
                                   const char *why)
{
    uct_gda_ft_ep_chans_t *c   = ep->chans;
    gda_ft_chan_host_path_t *p = &c->ctl->path[path];
    uint32_t rq_psn;

    /* stopped first: what it received is then final */
    if ((gda_ft_chan_host_fence_qp(p->qp, &rq_psn) != UCS_OK) ||
        (gda_ft_chan_host_reconnect(c->ctl, path, rq_psn,
                                    p->conn.sq_psn) != UCS_OK)) {
        return;    /* tried again at the next poll */
    }
    uct_gda_ft_ctl_reset(ep, path);
    ucs_debug("ep %p: control QP of the %s path not answered yet (%s): "
              "starts over from its connection", ep,
              uct_gda_ft_path_name(path), why);
}

/* Whether the control path other than `path` serves: not failed, its
 * QP there and our port of it up (flags only: no poll) */
static int uct_gda_ft_ctl_other_serves(uct_gda_ft_ep_t *ep, unsigned path)
{
    unsigned other = 1 - path;

    return (other < ep->chans->num_paths) && !ep->ctl[other].failed &&
           !ep->chans->ctl->path[other].absent &&
           uct_gda_ft_iface_port_up(uct_gda_ft_ep_iface(ep), other);
}

/* Retires what the peer acknowledged; an error completion, or silence
 * beside another control path that serves, leaves the control path
 * unusable until its re-arm once the peer has answered on it */
void uct_gda_ft_ctl_poll(uct_gda_ft_ep_t *ep, unsigned path)
{
    uct_gda_ft_ep_ctl_t *ctl = &ep->ctl[path];
    uint64_t deadline        = uct_gda_ft_ep_iface(ep)->config.deadline_ns;
    gda_ft_dev_cqe_info_t info;
    gda_ft_dev_cq_t cq;
    uint64_t now, since;

    if (ctl->failed || (ctl->sq.ci == ctl->sq.pi)) {
        return;
    }
    gda_ft_dev_cq_init(&cq, ep->chans->ctl->path[path].cqe, 1, 0);
    if (gda_ft_cq_poll_collapsed(&cq, ctl->sq.ci, &info) != GDA_FT_DEV_OK) {
        now   = gda_ft_dev_now_ns();
        since = gda_ft_timing_later(ctl->done_ns, ctl->busy_ns);
        if ((deadline != 0) &&
            ((now - since) >
             ucs_max(GDA_FT_TIMING_CTL_DEAD_DEADLINES * deadline,
                     2 * uct_gda_ft_iface_retransmit_ns(
                             uct_gda_ft_ep_iface(ep))))) {
            if (ctl->done_ns == 0) {
                uct_gda_ft_ctl_restart(ep, path, "silent");
                return;
            }
            if (!uct_gda_ft_ctl_other_serves(ep, path)) {
                /* the last control path: its re-arm's question would
                 * ride on the other one, so failed both would stay
                 * failed with every link up. Its silence is sat out:
                 * the write lands once the ports are back, or the HCA's
                 * retries run out (an error completion), or the peer is
                 * given up. */
                return;
            }
            ctl->failed    = 1;
            ctl->failed_ns = now;
            ++ctl->gen;
            ucs_diag("ep %p: control QP of the %s path answered nothing "
                     "for %.0f ms: control writes take the other path until "
                     "it is re-armed", ep, uct_gda_ft_path_name(path),
                     (now - since) / 1e6);
        }
        return;
    }
    if (gda_ft_cq_opcode_is_error(info.opcode)) {
        if (ctl->done_ns == 0) {
            uct_gda_ft_ctl_restart(ep, path,
                                   gda_ft_hca_syndrome_str(info.syndrome));
            return;
        }
        ctl->failed    = 1;
        ++ctl->gen;
        ctl->unacked   = (info.syndrome ==
                          GDA_FT_MLX5_SYND_TRANSPORT_RETRY_EXC_ERR);
        ctl->failed_ns = gda_ft_dev_now_ns();
        ucs_diag("ep %p: control QP of the %s path failed (%s): control "
                 "writes take the other path until it is re-armed", ep,
                 uct_gda_ft_path_name(path),
                 gda_ft_hca_syndrome_str(info.syndrome));
        return;
    }
    gda_ft_sq_retire(&ctl->sq, info.wqe_counter);
    ctl->done_ns = gda_ft_dev_now_ns();
}

/*
 * Whether a control path takes a write now: not failed, room for a
 * question, and no write silent on it for a deadline. A dead link answers
 * nothing until the HCA's retries run out, which takes many deadlines:
 * questions are asked again on the other path meanwhile.
 */
static int uct_gda_ft_ctl_usable(uct_gda_ft_ep_t *ep, unsigned path,
                                 uint64_t now)
{
    uct_gda_ft_ep_ctl_t *ctl = &ep->ctl[path];
    uint64_t deadline        = uct_gda_ft_ep_iface(ep)->config.deadline_ns;
    uint64_t since;

    uct_gda_ft_ctl_poll(ep, path);
    if (ctl->failed || (gda_ft_sq_free_wqebbs(&ctl->sq) < 2)) {
        return 0;
    }
    if ((ctl->sq.ci == ctl->sq.pi) || (deadline == 0)) {
        return 1;
    }
    since = gda_ft_timing_later(ctl->done_ns, ctl->busy_ns);
    return (now - since) <= deadline;
}

/*
 * The control path that carries a question or answer about a channel's
 * `path`: the other one, so that it does not ride on the ports in
 * question, unless that one is unusable now; -1 when neither is.
 */
static int uct_gda_ft_ctl_carrier(uct_gda_ft_ep_t *ep, unsigned path,
                                  uint64_t now)
{
    unsigned other = 1 - path;

    if (uct_gda_ft_ctl_usable(ep, other, now)) {
        return other;
    }
    return uct_gda_ft_ctl_usable(ep, path, now) ? (int)path : -1;
}

/* Control path `carrier`, which takes a write now (the caller posts at
 * most two WQEBBs on it and rings its doorbell) */
static uct_gda_ft_ep_ctl_t *uct_gda_ft_ctl_take(uct_gda_ft_ep_t *ep,
                                                unsigned carrier,
                                                uint64_t now)
{
    uct_gda_ft_ep_ctl_t *ctl = &ep->ctl[carrier];

    if (ctl->sq.ci == ctl->sq.pi) {
        ctl->busy_ns = now;
    }
    return ctl;
}

/* The control path that takes a write about `path` now, or NULL */
static uct_gda_ft_ep_ctl_t *uct_gda_ft_ctl_begin(uct_gda_ft_ep_t *ep,
                                                 unsigned path,
                                                 unsigned *carrier_p)
{
    uint64_t now = gda_ft_dev_now_ns();
    int carrier  = uct_gda_ft_ctl_carrier(ep, path, now);

    if (carrier < 0) {
        return NULL;
    }
    *carrier_p = carrier;
    return uct_gda_ft_ctl_take(ep, carrier, now);
}

/* Control path `carrier` if it takes a write now, else NULL */
static uct_gda_ft_ep_ctl_t *uct_gda_ft_ctl_begin_on(uct_gda_ft_ep_t *ep,
                                                    unsigned carrier)
{
    uint64_t now = gda_ft_dev_now_ns();

    return uct_gda_ft_ctl_usable(ep, carrier, now) ?
           uct_gda_ft_ctl_take(ep, carrier, now) : NULL;
}

/* Marks the write just posted on the control QP of `carrier` */
static void uct_gda_ft_ctl_mark(uct_gda_ft_ep_t *ep, unsigned carrier,
                                uct_gda_ft_ctl_mark_t *mark)
{
    mark->gen     = ep->ctl[carrier].gen;
    mark->pi      = ep->ctl[carrier].sq.pi;
    mark->carrier = carrier;
    mark->valid   = 1;
}

void uct_gda_ft_ctl_post_inline(uct_gda_ft_ep_t *ep, unsigned carrier,
                                size_t offset, const void *arg,
                                size_t length)
{
    uct_gda_ft_ep_ctl_t *ctl = &ep->ctl[carrier];

    (void)gda_ft_sq_post_rdma_write_inline(&ctl->sq, arg, length,
                                           ep->peer_mbox + offset,
                                           ep->peer_mbox_rkey[carrier],
                                           GDA_FT_WQE_SIGNALED, NULL);
}

/* RC: the two writes land in that order */
ucs_status_t uct_gda_ft_ctl_write(uct_gda_ft_ep_t *ep, unsigned path,
                                 size_t arg_offset, const void *arg,
                                 size_t arg_length, size_t epoch_offset,
                                 const uint32_t *epoch, unsigned *carrier_p)
{
    uct_gda_ft_ep_ctl_t *ctl = uct_gda_ft_ctl_begin(ep, path, carrier_p);

    if (ctl == NULL) {
        return UCS_ERR_NO_RESOURCE;
    }
    /* two WQEs of ctrl, raddr and at most 16 bytes inline: the room that
     * uct_gda_ft_ctl_usable() found */
    uct_gda_ft_ctl_post_inline(ep, *carrier_p, arg_offset, arg,
                               arg_length);
    if (epoch != NULL) {
        uct_gda_ft_ctl_post_inline(ep, *carrier_p, epoch_offset, epoch,
                                   sizeof(*epoch));
    }
    gda_ft_sq_ring_db(&ctl->sq);
    return UCS_OK;
}

ucs_status_t uct_gda_ft_ctl_landed(uct_gda_ft_ep_t *ep,
                                   const uct_gda_ft_ctl_mark_t *mark)
{
    uct_gda_ft_ep_ctl_t *ctl;

    if (!mark->valid) {
        return UCS_ERR_CANCELED;
    }
    ctl = &ep->ctl[mark->carrier];
    uct_gda_ft_ctl_poll(ep, mark->carrier);
    if (ctl->gen != mark->gen) {
        return UCS_ERR_CANCELED;
    }
    /* retired up to the write's last WQEBB: the peer acknowledged it */
    return ((int16_t)(ctl->sq.ci - mark->pi) >= 0) ? UCS_OK :
                                                     UCS_INPROGRESS;
}

ucs_status_t uct_gda_ft_ctl_write_dir(uct_gda_ft_ep_t *ep, unsigned carrier,
                                     size_t length, uint32_t epoch,
                                     uct_gda_ft_ctl_mark_t *mark)
{
    uct_gda_ft_ep_ctl_t *ctl = uct_gda_ft_ctl_begin_on(ep, carrier);

    if (ctl == NULL) {
        return UCS_ERR_NO_RESOURCE;
    }
    /* a WQE of ctrl, raddr and one data segment, then an inline one: the
     * two WQEBBs uct_gda_ft_ctl_usable() found */
    (void)gda_ft_sq_post_rdma_write(&ctl->sq, (uintptr_t)ep->mbox->dir_out,
                                    ep->mbox_memh->lkey[carrier], length,
                                    ep->peer_mbox +
                                    ucs_offsetof(uct_gda_ft_mbox_t,
                                                 dir_in[carrier]),
                                    ep->peer_mbox_rkey[carrier],
                                    GDA_FT_WQE_SIGNALED, NULL);
    uct_gda_ft_ctl_post_inline(ep, carrier,
                               ucs_offsetof(uct_gda_ft_mbox_t,
                                            dir_epoch[carrier]),
                               &epoch, sizeof(epoch));
    gda_ft_sq_ring_db(&ctl->sq);
    uct_gda_ft_ctl_mark(ep, carrier, mark);
    return UCS_OK;
}

ucs_status_t uct_gda_ft_ctl_answer_dir(uct_gda_ft_ep_t *ep, unsigned carrier,
                                      uint64_t answer,
                                      uct_gda_ft_ctl_mark_t *mark)
{
    uct_gda_ft_ep_ctl_t *ctl = uct_gda_ft_ctl_begin_on(ep, carrier);

    if (ctl == NULL) {
        return UCS_ERR_NO_RESOURCE;
    }
    uct_gda_ft_ctl_post_inline(ep, carrier,
                               ucs_offsetof(uct_gda_ft_mbox_t,
                                            dir_ack[carrier]),
                               &answer, sizeof(answer));
    gda_ft_sq_ring_db(&ctl->sq);
    uct_gda_ft_ctl_mark(ep, carrier, mark);
    return UCS_OK;
}


/* Which end's PSNs a control path takes when both ends re-arm it at once:
 * those of the end whose control QP there has the lower number (then the
 * lower mailbox address); the other end's question is refused */
static int uct_gda_ft_ctl_rearms(uct_gda_ft_ep_t *ep, unsigned path)
{
    uct_gda_ft_ep_chans_t *c = ep->chans;
    uint32_t qpn             = c->ctl->path[path].qp->qpn;

    return (qpn != c->peer_ctl_qpn[path]) ? (qpn < c->peer_ctl_qpn[path]) :
           ((uintptr_t)ep->mbox < ep->peer_mbox);
}


/* ---- questions to the peer ----------------------------------------------- */

/*
 * Asks the peer to do `op` to its end of channel ch's `path`, or collects
 * the answer: UCS_OK (with *psn_p), UCS_ERR_REJECTED, or UCS_INPROGRESS
 * while it is on its way. Each channel has its own question slot in the
 * peer's mailbox, and one question in flight. A question is its kind, path
 * and arguments: the answer to one asked before with other arguments (a
 * re-arm try given up, whose PSNs the next try replaced) does not answer
 * it, however late it comes.
 */
static ucs_status_t uct_gda_ft_chan_ask(uct_gda_ft_ep_t *ep, unsigned op,
                                        gda_ft_chan_host_t *ch, unsigned path,
                                        uint32_t psn0, uint32_t psn1,
                                        uint32_t *psn_p)
{
    unsigned id              = ch->chan.id;
    uct_gda_ft_ep_chans_t *c = ep->chans;
    uct_gda_ft_mbox_t *mbox  = ep->mbox;
    uint32_t key             = UCT_GDA_FT_MBOX_REQ(op, path);
    uint64_t now             = gda_ft_dev_now_ns();
    uint32_t args[4];
    unsigned carrier, refused;
    uint32_t epoch;

    if ((op == UCT_GDA_FT_CHAN_ASK_FENCE) &&
        !uct_gda_ft_ep_iface(ep)->config.resolve) {
        /* not to be asked (RESOLVE=n: what a failed path left is in
         * doubt) */
        return UCS_ERR_UNSUPPORTED;
    }
    if (c->peer.gone_ns != 0) {
        /* a peer given up answers nothing, and its control QPs are
         * fenced: the channel settles without its word at once */
        return UCS_ERR_UNREACHABLE;
    }

    if ((c->q[id].ask == key) && (c->q[id].ask_psn[0] == psn0) &&
        (c->q[id].ask_psn[1] == psn1)) {
        if (uct_gda_ft_mbox_read_answer(&mbox->chan[id], c->q[id].ask_epoch,
                                        &refused, psn_p)) {
            c->q[id].ask   = 0;
            c->guardian_ns = now;
            return (refused == 0) ? UCS_OK : UCS_ERR_REJECTED;
        }
        if (((now - c->q[id].ask_ns) < ch->params.resolve_ns) &&
            uct_gda_ft_ctl_usable(ep, c->q[id].carrier, now)) {
            return UCS_INPROGRESS;
        }
        /* lost, or its control path fell silent: asked again, within the
         * channel guardian's own bound */
    }

    epoch   = c->q[id].ask_epoch + 1;
    args[0] = epoch;
    args[1] = key;
    args[2] = psn0;
    args[3] = psn1;
    if (uct_gda_ft_ctl_write(ep, path,
                             ucs_offsetof(uct_gda_ft_mbox_t,
                                          chan[id].req_tag),
                             args, sizeof(args),
                             ucs_offsetof(uct_gda_ft_mbox_t,
                                          chan[id].req_epoch),
                             &epoch, &carrier) != UCS_OK) {
        return UCS_INPROGRESS;        /* no room now: the next pass asks */
    }
    c->q[id].ask        = key;
    c->q[id].ask_epoch  = epoch;
    c->q[id].ask_psn[0] = psn0;
    c->q[id].ask_psn[1] = psn1;
    c->q[id].ask_ns    = now;
    c->q[id].carrier   = (uint8_t)carrier;
    return UCS_INPROGRESS;
}

/* A fence question carries why the channel left the path (req_psn[0]) */
static ucs_status_t uct_gda_ft_chan_peer_fence(void *arg,
                                               gda_ft_chan_host_t *ch,
                                               unsigned path, unsigned why,
                                               uint32_t *epsn_p)
{
    return uct_gda_ft_chan_ask((uct_gda_ft_ep_t*)arg,
                               UCT_GDA_FT_CHAN_ASK_FENCE, ch, path, why, 0,
                               epsn_p);
}

static ucs_status_t
uct_gda_ft_chan_peer_rearm(void *arg, gda_ft_chan_host_t *ch, unsigned path,
                           const gda_ft_hca_qp_attr_t *local)
{
    uint32_t unused;

    return uct_gda_ft_chan_ask((uct_gda_ft_ep_t*)arg,
                               UCT_GDA_FT_CHAN_ASK_REARM, ch, path,
                               local->sq_psn, local->rq_psn, &unused);
}

uint64_t uct_gda_ft_chan_heard_ns(uct_gda_ft_ep_t *ep, unsigned path,
                                  uint64_t now)
{
    uct_gda_ft_ep_chans_t *c = ep->chans;
    uint64_t deadline        = uct_gda_ft_ep_iface(ep)->config.deadline_ns;
    gda_ft_hca_qp_query_attr_t attr;
    uint32_t rq_psns = 0;
    uint64_t progress, latest;
    unsigned i;

    if ((now - c->heard[path].read_ns) >=
        gda_ft_timing_peer_look_ns(deadline)) {
        c->heard[path].read_ns = now;
        /* A completion of any of our channels on the path is the peer's
         * acknowledgement through its port there, and so is one of the
         * control QP's (a probe's): free to read, where a target's PSN is
         * a QUERY_QP command to the NIC's firmware each (64 channels, 2
         * paths, every eighth of a 100 ms deadline: 10 000 commands a
         * second per peer). The targets are read only where somebody may
         * wait on the peer, and neither said anything for 1.5 deadlines
         * (the peer counts as heard for 2; while probes go, one goes at
         * least every deadline). */
        progress = gda_ft_atomic_load_acq64(&c->health->progress_ns[path]);
        if (progress != c->heard[path].progress) {
            c->heard[path].progress = progress;
            c->heard[path].moved_ns = now;
            return now;
        }
        latest = gda_ft_timing_later(c->heard[path].moved_ns,
                                     ep->ctl[path].done_ns);
        if (!uct_gda_ft_ep_peer_awaited(ep) ||
            ((int64_t)(now - latest) <
             (int64_t)((GDA_FT_TIMING_HEARD_DEADLINES - 1) * deadline +
                       deadline / 2))) {
            return c->heard[path].moved_ns;
        }
        for (i = 0; i < c->count; ++i) {
            if (gda_ft_hca_qp_query(c->target[i].path[path].qp, &attr) ==
                UCS_OK) {
                rq_psns += attr.rq_psn;
            }
        }
        /* a sum that moved says the peer's packets came after the read
         * before: heard then, not now (after a pause in the reads, the
         * peer's traffic of the pause would count as heard now, 1.5
         * deadlines after its last sign); a guardian whose passes are
         * further apart than a look still hears a busy peer */
        if ((rq_psns != c->heard[path].rq_psns) &&
            (c->heard[path].queried_ns != 0)) {
            c->heard[path].moved_ns =
                    gda_ft_timing_later(c->heard[path].moved_ns,
                                        c->heard[path].queried_ns);
        }
        c->heard[path].rq_psns    = rq_psns;
        c->heard[path].queried_ns = now;
    }
    return c->heard[path].moved_ns;
}

/*
 * Whether the peer's port of `path` is up, as far as its traffic shows:
 * within GDA_FT_TIMING_HEARD_DEADLINES deadlines, the PSN our target QPs
 * of that path expect next moved (packets of the peer came in through that
 * port), or the endpoint's own QP of that path saw a completion (the peer
 * acknowledged through it). Nothing is posted for it; the targets are read
 * at most every eighth of a deadline. Older, or a peer that sends nothing,
 * is not known (-1), never "down": a path is sat out on the peer's behalf
 * only while the peer is heard, and a peer whose ports died falls silent.
 */
static int uct_gda_ft_chan_peer_port_up(void *arg, gda_ft_chan_host_t *ch,
                                        unsigned path)
{
    uct_gda_ft_ep_t *ep      = (uct_gda_ft_ep_t*)arg;
    uint64_t deadline        = ch->params.deadline_ns;
    uint64_t now             = gda_ft_dev_now_ns();
    uint64_t heard_ns;

    if ((deadline == 0) || (path >= ep->chans->num_paths)) {
        return -1;
    }
    heard_ns = uct_gda_ft_chan_heard_ns(ep, path, now);
    uct_gda_ft_ctl_poll(ep, path);
    heard_ns = gda_ft_timing_later(heard_ns, ep->ctl[path].done_ns);
    return ((heard_ns != 0) &&
            ((int64_t)(now - heard_ns) <
             (int64_t)(GDA_FT_TIMING_HEARD_DEADLINES * deadline))) ? 1 : -1;
}

/* Whether the peer's guardian answered or asked a question, or sent a
 * liveness probe, within `ns`: the peer runs its progress (a peer given
 * up does not: nothing waits for it) */
static int uct_gda_ft_chan_peer_guardian_active(void *arg,
                                                gda_ft_chan_host_t *ch,
                                                uint64_t ns)
{
    uct_gda_ft_ep_chans_t *c = ((uct_gda_ft_ep_t*)arg)->chans;

    (void)ch;
    return (c->peer.gone_ns == 0) && (c->guardian_ns != 0) &&
           ((gda_ft_dev_now_ns() - c->guardian_ns) <= ns);
}

const gda_ft_chan_peer_ops_t uct_gda_ft_chan_peer_ops = {
    uct_gda_ft_chan_peer_fence,
    uct_gda_ft_chan_peer_rearm,
    uct_gda_ft_chan_peer_port_up,
    uct_gda_ft_chan_peer_guardian_active
};

/* The peer's channels left the primary for its failure: ours follow */
static void uct_gda_ft_chan_peer_left(uct_gda_ft_ep_chans_t *c)
{
    unsigned i;

    for (i = 0; i < c->count; ++i) {
        gda_ft_chan_host_peer_left(&c->init[i]);
    }
}

/* The peer asks about our target end of its channel `id` */
void uct_gda_ft_chan_answer_peer(uct_gda_ft_ep_t *ep, unsigned id,
                                 const uct_gda_ft_mbox_question_t *question)
{
    uct_gda_ft_iface_t *iface  = uct_gda_ft_ep_iface(ep);
    uct_gda_ft_ep_chans_t *c   = ep->chans;
    gda_ft_chan_host_t *target = (id == UCT_GDA_FT_WIRE_CTL_SLOT) ?
                                 c->ctl : &c->target[id];
    unsigned op                = question->op;
    unsigned path              = question->path;
    uint32_t psn0              = question->psn[0];
    uint32_t psn1              = question->psn[1];
    uint32_t req               = UCT_GDA_FT_MBOX_REQ(op, path);
    uint32_t refused           = 1;
    uint32_t psn               = 0;
    unsigned carrier;
    uint64_t answer;

    if (path >= c->num_paths) {
        ucs_diag("ep %p: ignoring the peer's question %u about path %u of "
                 "channel %u: no such path", ep, op, path, id);
        c->q[id].seen_epoch = question->epoch;
        return;
    }

    if ((c->q[id].done_epoch == question->epoch) ||
        ((op == UCT_GDA_FT_CHAN_ASK_REARM) && (c->q[id].done_req == req) &&
         (c->q[id].done_psn[0] == psn0) && (c->q[id].done_psn[1] == psn1))) {
        /* done at an earlier pass, or the same re-arm asked again (its
         * answer was late): only the answer is still to go. Re-armed
         * again, the QP would lose what the peer sent since, the answer
         * to the question before among it. */
        refused = c->q[id].done_refused;
        psn     = c->q[id].done_answer_psn;
        goto send;
    }

    if ((op == UCT_GDA_FT_CHAN_ASK_FENCE) &&
        (id != UCT_GDA_FT_WIRE_CTL_SLOT)) {
        if (gda_ft_chan_host_fence_qp(target->path[path].qp, &psn) ==
            UCS_OK) {
            refused = 0;
        }
        if ((path == UCT_GDA_FT_PATH_PRIMARY) &&
            gda_ft_chan_why_path_failed(psn0)) {
            /* the peer found the primary dead: our channels on it follow
             * rather than each wait for a deadline of its own */
            uct_gda_ft_chan_peer_left(c);
        }
    } else if ((op == UCT_GDA_FT_CHAN_ASK_REARM) &&
               (id == UCT_GDA_FT_WIRE_CTL_SLOT) &&
               ep->ctl[path].rearming && uct_gda_ft_ctl_rearms(ep, path)) {
        /* we re-arm this control path too, and our PSNs win: refused */
    } else if (op == UCT_GDA_FT_CHAN_ASK_REARM) {
        if (uct_gda_ft_iface_port_up(iface, path) &&
            (gda_ft_chan_host_reconnect(target, path, psn0, psn1) ==
             UCS_OK)) {
            if (id == 0) {
                /* the peer's host channel: what the QP received before is
                 * taken, and fresh buffers go up */
                uct_gda_ft_rxq_rearm(ep, &ep->chan_rx[path]);
            } else if (id == UCT_GDA_FT_WIRE_CTL_SLOT) {
                uct_gda_ft_ctl_reset(ep, path);
                ucs_diag("ep %p: control QP of the %s path re-armed by the "
                         "peer", ep, uct_gda_ft_path_name(path));
            }
            refused = 0;
        }
    } else {
        ucs_diag("ep %p: ignoring the peer's question of unknown kind %u "
                 "about channel %u", ep, op, id);
    }

    c->q[id].done_epoch      = question->epoch;
    c->q[id].done_req        = req;
    c->q[id].done_psn[0]     = psn0;
    c->q[id].done_psn[1]     = psn1;
    c->q[id].done_refused    = refused;
    c->q[id].done_answer_psn = psn;
    ucs_debug("ep %p: channel %u path %u: the peer's %s %s", ep, id,
              path, (op == UCT_GDA_FT_CHAN_ASK_FENCE) ? "fence" : "re-arm",
              refused ? "refused" : "done");

send:
    answer = UCT_GDA_FT_MBOX_ANSWER(question->epoch, refused, psn);
    if (uct_gda_ft_ctl_write(ep, path,
                             ucs_offsetof(uct_gda_ft_mbox_t,
                                          chan[id].answer),
                             &answer, sizeof(answer), 0, NULL,
                             &carrier) != UCS_OK) {
        return;    /* no room now: answered again at the next pass */
    }
    c->q[id].seen_epoch = question->epoch;
}


/*
 * A control path that failed: once its port is up and the re-arm back-off
 * passed, our control QP goes RESET -> RTS with fresh PSNs, and the peer
 * is asked over the other control path to do the same with its own; the
 * path serves again once it answers. A try that is refused (the peer
 * re-arms it too, with its PSNs) or gets no answer in two resolve windows
 * waits for the back-off again.
 */
void uct_gda_ft_ctl_rearm(uct_gda_ft_ep_t *ep, unsigned path, uint64_t now)
{
    uct_gda_ft_iface_t *iface  = uct_gda_ft_ep_iface(ep);
    uct_gda_ft_ep_ctl_t *ctl   = &ep->ctl[path];
    gda_ft_chan_host_t *ch     = ep->chans->ctl;
    gda_ft_chan_host_path_t *p = &ch->path[path];
    uint32_t unused;
    ucs_status_t status;

    if (!ctl->failed || p->absent ||
        !uct_gda_ft_iface_port_up(iface, path)) {
        return;
    }
    if (!ctl->rearming) {
        if ((now - ctl->failed_ns) < iface->config.rearm_backoff_ns) {
            return;
        }
        ctl->failed_ns = now;
        status = gda_ft_chan_host_reconnect(
                ch, path, uct_gda_ft_chan_first_psn((uint32_t)(now >> 10),
                                                    p->qp->qpn),
                uct_gda_ft_chan_first_psn(p->qp->qpn,
                                          (uint32_t)(now >> 10)));
        if (status != UCS_OK) {
            return;
        }
        ctl->rearming = 1;
    }

    status = uct_gda_ft_chan_ask(ep, UCT_GDA_FT_CHAN_ASK_REARM, ch, path,
                                 p->conn.sq_psn, p->conn.rq_psn, &unused);
    if (status == UCS_INPROGRESS) {
        if ((now - ctl->failed_ns) <
            gda_ft_timing_rearm_answer_ns(ch->params.resolve_ns,
                                          ch->params.quiet_ns)) {
            return;
        }
        status = UCS_ERR_TIMED_OUT;
    }
    ctl->rearming = 0;
    if (status != UCS_OK) {
        ctl->failed_ns = now;   /* tried again after the back-off */
        return;
    }
    uct_gda_ft_ctl_reset(ep, path);
    ucs_diag("ep %p: control QP of the %s path re-armed", ep,
             uct_gda_ft_path_name(path));
}
