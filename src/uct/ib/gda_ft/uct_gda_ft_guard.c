/*
 * gda_ft guardian: the host half of failover (design §5 rules 3, 6 and 7),
 * and the path events and deadline checks that decide a switch.
 *
 * - Fence: as soon as a path is abandoned its QP goes to ERR, so hardware
 *   retransmission cannot deliver stale data later; in strict mode the
 *   replay waits for that fence.
 * - Resolution: with RESOLVE, the replay also waits for the peer's word.
 *   Over the path that works we ask it to fence its end of the failed path
 *   and to write back the PSN that end expected next; what lies below was
 *   executed and is not replayed (exactly-once atomics and sends). The
 *   peer's end is then dead too, so it leaves the path as well.
 * - Failback: while an endpoint runs on its backup and the local primary
 *   port is up, it asks the peer, over the backup path, to re-arm the
 *   primary QP pair with fresh PSNs (a request and an acknowledgement
 *   written into each side's mailbox), re-arms its own QP, probes the
 *   primary, and after a quiet recovery window moves traffic back. Failed
 *   attempts back off exponentially, and a path that fails again soon after
 *   failing back keeps its longer back-off: flapping is damped.
 * - Visibility: counters per endpoint, printed by "gda_ft_softctl counters"
 *   through the transport's control socket (uct_gda_ft_ctl.c).
 *
 * It runs in the interface progress, the endpoints' only poster.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "uct_gda_ft_ep.inl"
#include "uct_gda_ft_chan.h"

#include <ucs/debug/log.h>
#include <ucs/sys/string.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/random.h>

/* Which side initiates when both want to re-arm: the lower primary QPN */
static int uct_gda_ft_guard_is_initiator(uct_gda_ft_ep_t *ep)
{
    return ep->path[UCT_GDA_FT_PATH_PRIMARY].qp->qpn <
           ep->path[UCT_GDA_FT_PATH_PRIMARY].dest_qpn;
}

static uint32_t uct_gda_ft_guard_new_psn(void)
{
    uint32_t psn;

    if (getrandom(&psn, sizeof(psn), 0) != sizeof(psn)) {
        psn = (uint32_t)random();
    }
    return psn & 0xffffff;
}

/*
 * Writes fields of the peer's mailbox over `path`: the backup for the
 * failback handshake, the one known to work while the primary pair is
 * re-armed (the primary may be our active path when the peer asks and ours
 * looked healthy); the surviving path for a resolution. Posted like a
 * probe: should that path fail too, the write is not moved anywhere.
 */
ucs_status_t uct_gda_ft_ep_guard_write(uct_gda_ft_ep_t *ep, unsigned path,
                                       size_t offset, const void *data,
                                       size_t length)
{
    uct_gda_ft_iface_t *iface = uct_gda_ft_ep_iface(ep);
    gda_ft_dev_status_t status;

    status = gda_ft_ep_probe(&ep->dev, path, data, length,
                             ep->guard.peer_mbox + offset,
                             ep->guard.peer_mbox_rkey, 0);
    if (status != GDA_FT_DEV_OK) {
        return UCS_ERR_NO_RESOURCE;
    }
    uct_gda_ft_ep_posted_no_ring(iface, ep);
    return UCS_OK;
}

/* Request first, epoch last: RC writes land in order */
static ucs_status_t uct_gda_ft_guard_send(uct_gda_ft_ep_t *ep, unsigned path,
                                          size_t arg_offset, uint32_t arg,
                                          size_t epoch_offset, uint32_t epoch)
{
    ucs_status_t status;

    status = uct_gda_ft_ep_guard_write(ep, path, arg_offset, &arg,
                                       sizeof(arg));
    if (status == UCS_OK) {
        status = uct_gda_ft_ep_guard_write(ep, path, epoch_offset, &epoch,
                                           sizeof(epoch));
    }
    return status;
}

/* Back to RESET, then INIT (for the initiator) or all the way to RTS */
static ucs_status_t uct_gda_ft_guard_rearm_qp(uct_gda_ft_ep_t *ep,
                                              int to_rts, uint32_t rq_psn,
                                              uint32_t sq_psn)
{
    uct_gda_ft_iface_t *iface = uct_gda_ft_ep_iface(ep);
    uct_gda_ft_ep_path_t *path = &ep->path[UCT_GDA_FT_PATH_PRIMARY];
    gda_ft_hca_qp_attr_t attr;
    ucs_status_t status;

    status = gda_ft_hca_qp_modify(path->qp, GDA_FT_HCA_QP_RESET, NULL);
    if (status != UCS_OK) {
        return status;
    }

    /* A fresh ring: the QP starts where the producer index is (0) */
    path->dbrec[GDA_FT_MLX5_RCV_DBR] = 0;
    path->dbrec[GDA_FT_MLX5_SND_DBR] = 0;
    gda_ft_dev_sq_init(&ep->dev.sq[UCT_GDA_FT_PATH_PRIMARY], path->sq_buf,
                       iface->config.sq_wqebbs, path->qp->qpn, path->dbrec,
                       path->qp->uar, path->qp->wake_fd,
                       path->qp->wake_armed, iface->config.max_inline);
    ep->guard.fenced[UCT_GDA_FT_PATH_PRIMARY] = 0;

    uct_gda_ft_ep_qp_attr(ep, UCT_GDA_FT_PATH_PRIMARY, rq_psn, sq_psn, &attr);
    status = gda_ft_hca_qp_modify(path->qp, GDA_FT_HCA_QP_INIT, &attr);
    if (status != UCS_OK) {
        return status;
    }

    /* Fresh receive buffers, posted in INIT (the QP takes the RQ producer
     * index at RESET -> INIT) and before RTR */
    uct_gda_ft_rxq_rearm(ep, &path->rx);
    if (!to_rts) {
        return UCS_OK;
    }

    status = gda_ft_hca_qp_modify(path->qp, GDA_FT_HCA_QP_RTR, &attr);
    if (status == UCS_OK) {
        status = gda_ft_hca_qp_modify(path->qp, GDA_FT_HCA_QP_RTS, &attr);
    }
    ep->dev.next_psn[UCT_GDA_FT_PATH_PRIMARY] = sq_psn;
    return status;
}

static void uct_gda_ft_guard_fail_attempt(uct_gda_ft_ep_t *ep, uint64_t now,
                                          const char *why)
{
    uct_gda_ft_iface_t *iface = uct_gda_ft_ep_iface(ep);
    uct_gda_ft_ep_guard_t *g  = &ep->guard;

    g->state       = UCT_GDA_FT_GUARD_IDLE;
    g->backoff_ns  = ucs_min(g->backoff_ns * 2,
                             iface->config.rearm_backoff_max_ns);
    g->next_try_ns = now + g->backoff_ns;
    ucs_debug("gda_ft: ep %p: failback attempt %u failed (%s); next in "
              "%.0f ms", ep, g->epoch, why, g->backoff_ns / 1e6);
}

static void uct_gda_ft_guard_probe_done(uct_gda_ft_op_t *op,
                                        ucs_status_t status)
{
    uct_gda_ft_ep_t *ep      = op->ep;
    uct_gda_ft_ep_guard_t *g = &ep->guard;
    uint64_t now             = gda_ft_dev_now_ns();

    ucs_mpool_put_inline(op);
    if (g->state != UCT_GDA_FT_GUARD_PROBING) {
        return;
    }

    if (status != UCS_OK) {
        uct_gda_ft_guard_fail_attempt(ep, now, "probe of the primary failed");
        return;
    }

    g->state          = UCT_GDA_FT_GUARD_RECOVERING;
    g->recover_at_ns  = now + uct_gda_ft_ep_iface(ep)->config.recovery_ns;
    ucs_debug("gda_ft: ep %p: primary path answers again; failback after the"
              " recovery window", ep);
}

/* Probes the re-armed primary by writing the epoch into the peer's
 * mailbox over it */
static void uct_gda_ft_guard_probe(uct_gda_ft_ep_t *ep, uint64_t now)
{
    uct_gda_ft_iface_t *iface = uct_gda_ft_ep_iface(ep);
    uct_gda_ft_ep_guard_t *g  = &ep->guard;
    uint32_t epoch            = g->epoch;
    gda_ft_dev_status_t status;
    uct_gda_ft_op_t *op;

    op = ucs_mpool_get_inline(&iface->op_mp);
    if (op == NULL) {
        uct_gda_ft_guard_fail_attempt(ep, now, "no descriptor for the probe");
        return;
    }

    op->handler = uct_gda_ft_guard_probe_done;
    op->comp    = NULL;
    op->ep      = ep;
    op->raddr   = g->peer_mbox + ucs_offsetof(uct_gda_ft_mbox_t, probe_epoch);
    status      = gda_ft_ep_probe(&ep->dev, UCT_GDA_FT_PATH_PRIMARY, &epoch,
                                  sizeof(epoch), op->raddr,
                                  g->peer_mbox_rkey, (uintptr_t)op);
    if (status != GDA_FT_DEV_OK) {
        ucs_mpool_put_inline(op);
        uct_gda_ft_guard_fail_attempt(ep, now, "cannot post the probe");
        return;
    }

    uct_gda_ft_ep_posted_no_ring(iface, ep);
    g->state = UCT_GDA_FT_GUARD_PROBING;
}

/* The peer asks us to re-arm our end of the primary pair */
static void uct_gda_ft_guard_answer(uct_gda_ft_ep_t *ep, uint64_t now)
{
    uct_gda_ft_iface_t *iface = uct_gda_ft_ep_iface(ep);
    uct_gda_ft_ep_guard_t *g  = &ep->guard;
    uct_gda_ft_mbox_t *mbox   = g->mbox;
    uint32_t epoch            = uct_gda_ft_mbox_epoch(&mbox->req_epoch);
    uint32_t psn;
    int in_place;

    g->seen_req_epoch = epoch;
    if ((g->state == UCT_GDA_FT_GUARD_REQUESTED) &&
        uct_gda_ft_guard_is_initiator(ep)) {
        return;     /* both asked: ours wins, the peer answers it */
    }

    if (!uct_gda_ft_iface_port_up(iface, UCT_GDA_FT_PATH_PRIMARY)) {
        return;     /* the initiator retries after its back-off */
    }

    /* Operations still on our primary move to the backup first; an idle
     * primary is re-armed in place and keeps the traffic */
    in_place = !ep->dev.path_failed[UCT_GDA_FT_PATH_PRIMARY] &&
               !gda_ft_ep_path_busy(&ep->dev, UCT_GDA_FT_PATH_PRIMARY);
    if (!in_place && !ep->dev.path_failed[UCT_GDA_FT_PATH_PRIMARY]) {
        uct_gda_ft_ep_path_event(ep, UCT_GDA_FT_PATH_PRIMARY,
                                 gda_ft_ep_switch(&ep->dev,
                                                  UCT_GDA_FT_PATH_PRIMARY),
                                 NULL, "the peer re-arms it");
        if (ep->dev.state == GDA_FT_EP_NO_PATH) {
            return;
        }
    }

    psn = uct_gda_ft_guard_new_psn();
    if ((uct_gda_ft_guard_rearm_qp(ep, 1, mbox->req_psn, psn) != UCS_OK) ||
        (uct_gda_ft_guard_send(ep, UCT_GDA_FT_PATH_BACKUP,
                               ucs_offsetof(uct_gda_ft_mbox_t, ack_psn),
                               psn,
                               ucs_offsetof(uct_gda_ft_mbox_t, ack_epoch),
                               epoch) != UCS_OK)) {
        uct_gda_ft_guard_fail_attempt(ep, now, "cannot answer the peer");
        return;
    }

    /* Our side probes once the initiator's probe shows the pair is up */
    g->epoch      = epoch;
    g->state      = in_place ? UCT_GDA_FT_GUARD_IDLE :
                               UCT_GDA_FT_GUARD_ANSWERED;
    g->started_ns = now;
}

static void uct_gda_ft_guard_request(uct_gda_ft_ep_t *ep, uint64_t now)
{
    uct_gda_ft_ep_guard_t *g = &ep->guard;

    g->epoch  = ucs_max(g->epoch, g->seen_req_epoch) + 1;
    g->my_psn = uct_gda_ft_guard_new_psn();
    if ((uct_gda_ft_guard_rearm_qp(ep, 0, 0, 0) != UCS_OK) ||
        (uct_gda_ft_guard_send(ep, UCT_GDA_FT_PATH_BACKUP,
                               ucs_offsetof(uct_gda_ft_mbox_t, req_psn),
                               g->my_psn,
                               ucs_offsetof(uct_gda_ft_mbox_t, req_epoch),
                               g->epoch) != UCS_OK)) {
        uct_gda_ft_guard_fail_attempt(ep, now, "cannot send the request");
        return;
    }

    g->state      = UCT_GDA_FT_GUARD_REQUESTED;
    g->started_ns = now;
    ucs_debug("gda_ft: ep %p: asking the peer to re-arm the primary path "
              "(attempt %u)", ep, g->epoch);
}

/* The peer acknowledged: finish our end of the pair and probe it */
static void uct_gda_ft_guard_acknowledged(uct_gda_ft_ep_t *ep, uint64_t now)
{
    uct_gda_ft_ep_path_t *path = &ep->path[UCT_GDA_FT_PATH_PRIMARY];
    uct_gda_ft_ep_guard_t *g   = &ep->guard;
    gda_ft_hca_qp_attr_t attr;

    uct_gda_ft_ep_qp_attr(ep, UCT_GDA_FT_PATH_PRIMARY, g->mbox->ack_psn,
                          g->my_psn, &attr);
    if ((gda_ft_hca_qp_modify(path->qp, GDA_FT_HCA_QP_RTR, &attr) !=
         UCS_OK) ||
        (gda_ft_hca_qp_modify(path->qp, GDA_FT_HCA_QP_RTS, &attr) !=
         UCS_OK)) {
        uct_gda_ft_guard_fail_attempt(ep, now, "cannot re-arm our QP");
        return;
    }
    ep->dev.next_psn[UCT_GDA_FT_PATH_PRIMARY] = g->my_psn;
    uct_gda_ft_guard_probe(ep, now);
}

static void uct_gda_ft_guard_failback(uct_gda_ft_ep_t *ep, uint64_t now)
{
    uct_gda_ft_iface_t *iface = uct_gda_ft_ep_iface(ep);
    uct_gda_ft_ep_guard_t *g  = &ep->guard;

    ep->flags        &= ~UCT_GDA_FT_EP_FLAG_FAILBACK_DRAIN;
    gda_ft_ep_failback(&ep->dev);
    /* posts that waited for the backup to drain may go now */
    ucs_arbiter_group_schedule(&iface->arbiter, &ep->arb_group);
    g->state          = UCT_GDA_FT_GUARD_IDLE;
    g->failback_ns    = now;
    ep->reported      = ep->dev.counters;
    if (uct_gda_ft_ep_on_chan(ep) &&
        (gda_ft_atomic_load_acq32(&ep->hchan.chan->active) ==
         UCT_GDA_FT_PATH_PRIMARY)) {
        /* its host channel is back already, and said so: one line for
         * the endpoint's failback */
        ucs_diag("gda_ft: ep %p: primary path to peer QP 0x%x is back, as "
                 "its host channel's (failback %u)", ep,
                 ep->path[UCT_GDA_FT_PATH_PRIMARY].dest_qpn,
                 ep->dev.counters.failbacks);
    } else {
        ucs_diag("gda_ft: ep %p: primary path to peer QP 0x%x is back: "
                 "traffic returns to it (failback %u)", ep,
                 ep->path[UCT_GDA_FT_PATH_PRIMARY].dest_qpn,
                 ep->dev.counters.failbacks);
    }
}

/* Reports how the operations a failed path left were settled, once */
static void uct_gda_ft_guard_settled(uct_gda_ft_ep_t *ep, unsigned path,
                                     const char *how)
{
    const gda_ft_dev_ep_counters_t *c = &ep->dev.counters;
    unsigned in_doubt = c->in_doubt - ep->reported.in_doubt;

    ucs_log(in_doubt ? UCS_LOG_LEVEL_WARN : UCS_LOG_LEVEL_DIAG,
            "gda_ft: ep %p: %s path settled %s: %u operations replayed, %u "
            "confirmed executed by the peer, %u atomics in doubt", ep,
            (path == UCT_GDA_FT_PATH_PRIMARY) ? "primary" : "backup", how,
            c->replays - ep->reported.replays,
            c->confirmed - ep->reported.confirmed, in_doubt);
    ep->reported = *c;

    /* operations held back by the replay may go now */
    ucs_arbiter_group_schedule(&uct_gda_ft_ep_iface(ep)->arbiter,
                               &ep->arb_group);
}

static int uct_gda_ft_guard_can_resolve(uct_gda_ft_ep_t *ep, unsigned path)
{
    return uct_gda_ft_ep_iface(ep)->config.resolve &&
           (ep->guard.mbox != NULL) && (ep->guard.peer_mbox != 0) &&
           (ep->dev.mtu != 0) && !ep->guard.resolving &&
           gda_ft_ep_path_busy(&ep->dev, path);
}

/*
 * Asks the peer, over the other path, to fence its end of `path` and to
 * tell which PSN it expected next there. Replays at once if it cannot ask.
 */
static void uct_gda_ft_guard_ask_fence(uct_gda_ft_ep_t *ep, unsigned path,
                                       uint64_t now)
{
    uct_gda_ft_ep_guard_t *g = &ep->guard;

    if (uct_gda_ft_guard_send(ep, 1 - path,
                              ucs_offsetof(uct_gda_ft_mbox_t, fence_path),
                              path,
                              ucs_offsetof(uct_gda_ft_mbox_t, fence_epoch),
                              ++g->fence_epoch) != UCS_OK) {
        gda_ft_ep_replay_pending(&ep->dev);
        uct_gda_ft_guard_settled(ep, path, "without the peer (cannot ask)");
        return;
    }
    g->resolving        = (uint8_t)(path + 1);
    g->resolve_start_ns = now;
}

/* The peer asks us to fence our end of a path it left, and for its PSN */
static void uct_gda_ft_guard_fence_for_peer(uct_gda_ft_ep_t *ep)
{
    uct_gda_ft_ep_guard_t *g = &ep->guard;
    uint32_t epoch           = uct_gda_ft_mbox_epoch(&g->mbox->fence_epoch);
    uint32_t path            = g->mbox->fence_path;
    uint32_t psn             = UCT_GDA_FT_PSN_UNKNOWN;
    gda_ft_hca_qp_query_attr_t attr;

    g->seen_fence_epoch = epoch;
    if ((path >= GDA_FT_NUM_PATHS) || (ep->path[path].qp == NULL)) {
        ucs_diag("gda_ft: ep %p: ignoring the peer's fence request for "
                 "path %u", ep, path);
        return;
    }

    if (!ep->dev.path_failed[path]) {
        /* It left the path: we leave it too, fencing our QP */
        uct_gda_ft_ep_path_event(ep, path, gda_ft_ep_switch(&ep->dev, path),
                                 NULL, "the peer left it");
        if (ep->dev.state == GDA_FT_EP_NO_PATH) {
            return;
        }
    }

    /* A QP re-armed since it failed (a failback under way) knows nothing
     * of the operations the peer asks about */
    if (g->fenced[path] &&
        (gda_ft_hca_qp_query(ep->path[path].qp, &attr) == UCS_OK)) {
        psn = attr.rq_psn;
    }
    if (uct_gda_ft_guard_send(ep, 1 - path,
                              ucs_offsetof(uct_gda_ft_mbox_t, fenced_psn),
                              psn,
                              ucs_offsetof(uct_gda_ft_mbox_t, fenced_epoch),
                              epoch) != UCS_OK) {
        ucs_diag("gda_ft: ep %p: cannot answer the peer's fence request",
                 ep);
    }
}

/* Waits for the peer's answer; settles with it, or without it in time */
static void uct_gda_ft_guard_resolve(uct_gda_ft_ep_t *ep, uint64_t now)
{
    uct_gda_ft_iface_t *iface = uct_gda_ft_ep_iface(ep);
    uct_gda_ft_ep_guard_t *g  = &ep->guard;
    unsigned path             = g->resolving - 1;
    uint64_t timeout          = iface->config.deadline_ns ?
                                iface->config.deadline_ns :
                                iface->config.recovery_ns;
    uint32_t psn;

    if (uct_gda_ft_mbox_epoch(&g->mbox->fenced_epoch) == g->fence_epoch) {
        psn = g->mbox->fenced_psn;
        if (psn == UCT_GDA_FT_PSN_UNKNOWN) {
            gda_ft_ep_replay_pending(&ep->dev);
            uct_gda_ft_guard_settled(ep, path, "without the peer (it does "
                                     "not know)");
        } else {
            gda_ft_ep_replay_resolved(&ep->dev, path, psn);
            uct_gda_ft_guard_settled(ep, path, "with the peer's word");
        }
    } else if ((int64_t)(now - g->resolve_start_ns) > (int64_t)timeout) {
        /* signed: the question may be younger than this pass's `now` */
        gda_ft_ep_replay_pending(&ep->dev);
        uct_gda_ft_guard_settled(ep, path, "without the peer (no answer)");
    } else {
        return;
    }

    g->resolving = 0;
    uct_gda_ft_iface_ep_ready(iface, ep);
}

void uct_gda_ft_ep_guard_on_switch(uct_gda_ft_ep_t *ep, unsigned path)
{
    uct_gda_ft_iface_t *iface = uct_gda_ft_ep_iface(ep);
    uct_gda_ft_ep_guard_t *g  = &ep->guard;
    uint64_t now              = gda_ft_dev_now_ns();
    unsigned p;

    /* Fence every abandoned QP now (rule 3), then replay if strict */
    for (p = 0; p < GDA_FT_NUM_PATHS; ++p) {
        if (ep->dev.path_failed[p] && !g->fenced[p] &&
            (ep->path[p].qp != NULL) &&
            (gda_ft_hca_qp_modify(ep->path[p].qp, GDA_FT_HCA_QP_ERR, NULL) ==
             UCS_OK)) {
            g->fenced[p] = 1;
            ++ep->dev.counters.fences;
        }
    }

    if (ep->dev.state == GDA_FT_EP_NO_PATH) {
        g->resolving = 0;
        ep->dev.replay_pending = 0;
    } else if (uct_gda_ft_guard_can_resolve(ep, path) &&
               (ep->dev.replay_pending & (1u << path))) {
        uct_gda_ft_guard_ask_fence(ep, path, now);
    } else if (!g->resolving) {
        gda_ft_ep_replay_pending(&ep->dev);
        uct_gda_ft_guard_settled(ep, path, "at once");
    }

    if (path != UCT_GDA_FT_PATH_PRIMARY) {
        return;
    }

    /* A failure soon after a failback keeps the longer back-off */
    if ((g->failback_ns != 0) &&
        ((now - g->failback_ns) < 10 * iface->config.recovery_ns)) {
        g->backoff_ns = ucs_min(g->backoff_ns * 2,
                                iface->config.rearm_backoff_max_ns);
    } else {
        g->backoff_ns = iface->config.rearm_backoff_ns;
    }
    g->state       = UCT_GDA_FT_GUARD_IDLE;
    g->next_try_ns = now + g->backoff_ns;
}

void uct_gda_ft_ep_guard_progress(uct_gda_ft_ep_t *ep, uint64_t now)
{
    uct_gda_ft_iface_t *iface = uct_gda_ft_ep_iface(ep);
    uct_gda_ft_ep_guard_t *g  = &ep->guard;
    uct_gda_ft_mbox_t *mbox   = g->mbox;

    /* a canceled endpoint's QPs stay in ERR: nothing is re-armed or
     * posted (the cancel promised the HCA is done with its buffers) */
    if ((mbox == NULL) || (g->peer_mbox == 0) ||
        !(ep->flags & UCT_GDA_FT_EP_FLAG_CONNECTED) ||
        (ep->flags & UCT_GDA_FT_EP_FLAG_CANCELED) ||
        (ep->path[UCT_GDA_FT_PATH_BACKUP].qp == NULL) ||
        (ep->dev.state == GDA_FT_EP_NO_PATH)) {
        return;
    }

    if (uct_gda_ft_mbox_epoch(&mbox->fence_epoch) != g->seen_fence_epoch) {
        uct_gda_ft_guard_fence_for_peer(ep);
        if (ep->dev.state == GDA_FT_EP_NO_PATH) {
            return;
        }
    }

    if (g->resolving) {
        uct_gda_ft_guard_resolve(ep, now);
        return;     /* no failback before the failover is settled */
    }

    if (uct_gda_ft_mbox_epoch(&mbox->req_epoch) != g->seen_req_epoch) {
        uct_gda_ft_guard_answer(ep, now);
    }

    switch (g->state) {
    case UCT_GDA_FT_GUARD_IDLE:
        if (iface->config.failback && ep->dev.path_failed[0] &&
            (now >= g->next_try_ns) &&
            uct_gda_ft_iface_port_up(iface, UCT_GDA_FT_PATH_PRIMARY)) {
            uct_gda_ft_guard_request(ep, now);
        }
        break;
    case UCT_GDA_FT_GUARD_REQUESTED:
        if (uct_gda_ft_mbox_epoch(&mbox->ack_epoch) == g->epoch) {
            uct_gda_ft_guard_acknowledged(ep, now);
        } else if ((now - g->started_ns) > iface->config.recovery_ns) {
            uct_gda_ft_guard_fail_attempt(ep, now, "no answer from the peer");
        }
        break;
    case UCT_GDA_FT_GUARD_ANSWERED:
        if (uct_gda_ft_mbox_epoch(&mbox->probe_epoch) == g->epoch) {
            uct_gda_ft_guard_probe(ep, now);
        } else if ((now - g->started_ns) > iface->config.recovery_ns) {
            uct_gda_ft_guard_fail_attempt(ep, now, "no probe from the peer");
        }
        break;
    case UCT_GDA_FT_GUARD_RECOVERING:
        if (ep->dev.state != GDA_FT_EP_FAILED_OVER) {
            g->state   = UCT_GDA_FT_GUARD_IDLE;
            ep->flags &= ~UCT_GDA_FT_EP_FLAG_FAILBACK_DRAIN;
            ucs_arbiter_group_schedule(&iface->arbiter, &ep->arb_group);
        } else if (now < g->recover_at_ns) {
            break;
        } else if (gda_ft_ep_path_busy(&ep->dev, UCT_GDA_FT_PATH_BACKUP)) {
            /* Two QPs keep no order between them: what the backup still
             * carries (an active message, a put before a flag) completes
             * before anything is posted on the primary */
            ep->flags |= UCT_GDA_FT_EP_FLAG_FAILBACK_DRAIN;
        } else {
            uct_gda_ft_guard_failback(ep, now);
        }
        break;
    default:  /* PROBING: the probe's completion moves on */
        break;
    }
}


/* ---- path events and the deadline ---------------------------------------- */

void uct_gda_ft_ep_path_event(uct_gda_ft_ep_t *ep, unsigned path,
                              gda_ft_dev_status_t status,
                              const gda_ft_dev_cqe_info_t *info,
                              const char *why)
{
    uct_gda_ft_iface_t *iface          = uct_gda_ft_ep_iface(ep);
    const gda_ft_dev_ep_counters_t *cn = &ep->dev.counters;
    char reason[96];

    if (why != NULL) {
        ucs_snprintf_zero(reason, sizeof(reason), "%s", why);
    } else if ((info != NULL) && gda_ft_cq_opcode_is_error(info->opcode)) {
        ucs_snprintf_zero(reason, sizeof(reason), "error completion %s",
                          gda_ft_hca_syndrome_str(info->syndrome));
    } else {
        ucs_snprintf_zero(reason, sizeof(reason),
                          "no completion for %.0f ms",
                          iface->config.deadline_ns / 1e6);
    }

    if ((status == GDA_FT_DEV_PATH_SWITCHED) && (why == NULL) &&
        uct_gda_ft_ep_on_chan(ep) &&
        (gda_ft_atomic_load_acq32(&ep->hchan.chan->active) ==
         ep->dev.active)) {
        /* its host channel switched first and said so: one line for the
         * endpoint's failover */
        ucs_diag("gda_ft: ep %p: %s path to peer QP 0x%x failed (%s): "
                 "moved to the %s path with its host channel", ep,
                 uct_gda_ft_path_name(path), ep->path[path].dest_qpn, reason,
                 uct_gda_ft_path_name(ep->dev.active));
        uct_gda_ft_ep_guard_on_switch(ep, path);
    } else if ((status == GDA_FT_DEV_PATH_SWITCHED) && (why != NULL)) {
        /* not a failure seen here: the peer's guardian decided */
        ucs_diag("gda_ft: ep %p: %s path to peer QP 0x%x abandoned (%s): "
                 "moved to the %s path", ep, uct_gda_ft_path_name(path),
                 ep->path[path].dest_qpn, reason,
                 uct_gda_ft_path_name(ep->dev.active));
        uct_gda_ft_ep_guard_on_switch(ep, path);
    } else if (status == GDA_FT_DEV_PATH_SWITCHED) {
        if ((path == UCT_GDA_FT_PATH_PRIMARY) && uct_gda_ft_ep_on_chan(ep)) {
            /* its host channel shares the ports: it follows at its next
             * pass (gda_ft_chan_health_t), with the device channels */
            gda_ft_atomic_fetch_add32(&ep->chans->health->fail_gen, 1);
        }
        /* Expected and survived: a diagnostic, as UCX reports such events;
         * the counters keep the record, and what the user must know (in
         * doubt, no path left) is a warning or an error */
        ucs_diag("gda_ft: ep %p: %s path to peer QP 0x%x failed (%s): "
                 "switched to the %s path", ep, uct_gda_ft_path_name(path),
                 ep->path[path].dest_qpn, reason,
                 uct_gda_ft_path_name(ep->dev.active));
        /* Fence the abandoned QP; the guardian settles what it left (at
         * once, or after the fence and the peer's word) and schedules the
         * failback (uct_gda_ft_guard.c) */
        uct_gda_ft_ep_guard_on_switch(ep, path);
    } else if (status == GDA_FT_DEV_NO_PATH) {
        ucs_error("gda_ft: ep %p: %s path to peer QP 0x%x failed (%s) and "
                  "no other path is left: %u operations fail", ep,
                  uct_gda_ft_path_name(path), ep->path[path].dest_qpn,
                  reason, cn->no_path - ep->reported.no_path);
        /* Both QPs are fenced; the endpoint error is reported by
         * uct_gda_ft_ep_deliver_one() once every operation has completed
         * with an error */
        uct_gda_ft_ep_guard_on_switch(ep, path);
    }

    ep->reported = *cn;
    uct_gda_ft_iface_ep_ready(iface, ep);
}

void uct_gda_ft_ep_follow_hchan(uct_gda_ft_ep_t *ep)
{
    uint8_t left = ep->hchan.left;
    unsigned path;

    /* taken first: a switch below may have news of its own */
    ucs_list_del(&ep->hchan.left_list);
    ep->hchan.left = 0;
    for (path = 0; path < GDA_FT_NUM_PATHS; ++path) {
        if ((left & UCS_BIT(path)) && !ep->dev.path_failed[path] &&
            (ep->dev.state != GDA_FT_EP_NO_PATH)) {
            uct_gda_ft_ep_path_event(ep, path,
                                     gda_ft_ep_switch(&ep->dev, path), NULL,
                                     "its host channel left it");
        }
    }
}

/*
 * Whether a silence of the endpoint's last path is sat out. Behind a host
 * channel the endpoint's QPs carry only the guardians' questions and
 * answers, and the host channel judges the same ports by its traffic: it
 * leaves a path that is gone, and the endpoint follows it
 * (uct_gda_ft_ep_follow_hchan). A question held back by a slow path is no
 * lost path, and leaving the last one fails the endpoint: UCP destroys it,
 * and the device channels lose their host half while kernels post. So the
 * silence of the last path is sat out while its local port is up, for at
 * most GDA_FT_CHAN_LAST_PATH_DEADLINES deadlines; an error completion
 * still ends the path at once. A silence with the other path still
 * usable switches as it would without a host channel: the endpoint's
 * guardian traffic finds a dead path sooner than a host channel that
 * carries little, and the host channel follows it.
 */
static int uct_gda_ft_ep_last_path_sat_out(uct_gda_ft_ep_t *ep,
                                           uint64_t now_ns)
{
    uint8_t path = ep->dev.active;
    uint64_t since;

    if (!uct_gda_ft_ep_on_chan(ep) || !ep->dev.path_failed[1 - path] ||
        (gda_ft_atomic_load_acq32(&ep->hchan.chan->mbox->link_up[path]) ==
         GDA_FT_CHAN_LINK_DOWN)) {
        return 0;
    }
    since = gda_ft_ep_path_owes_since(&ep->dev, path, now_ns);
    if ((int64_t)(ep->dev.last_cqe_ns[path] - since) > 0) {
        since = ep->dev.last_cqe_ns[path];
    }
    return (int64_t)(now_ns - since) <=
           (int64_t)(GDA_FT_CHAN_LAST_PATH_DEADLINES * ep->dev.deadline_ns);
}

void uct_gda_ft_ep_check_deadline(uct_gda_ft_ep_t *ep, uint64_t now_ns)
{
    uint8_t active = ep->dev.active;
    gda_ft_dev_status_t status;

    if (uct_gda_ft_ep_last_path_sat_out(ep, now_ns)) {
        return;
    }

    status = gda_ft_ep_check_deadline(&ep->dev, now_ns);
    if (status == GDA_FT_DEV_PATH_SWITCHED) {
        uct_gda_ft_ep_path_event(ep, 1 - ep->dev.active, status, NULL,
                                 NULL);
    } else if (status == GDA_FT_DEV_NO_PATH) {
        uct_gda_ft_ep_path_event(ep, active, status, NULL, NULL);
    }
}
