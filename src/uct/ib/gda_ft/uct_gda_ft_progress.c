/*
 * gda_ft UCT transport: progress. Polls the send and receive CQs of both
 * paths, hands each completion to the datapath endpoint, and delivers what
 * completed, in post order, to the waiters; counters of endpoints and
 * interfaces.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "uct_gda_ft_ep.inl"
#include "uct_gda_ft_chan.h"

#include <ucs/debug/log.h>
#include <sched.h>
#include <string.h>


/* ---- completions and failures -------------------------------------------- */

static ucs_status_t uct_gda_ft_ep_op_status(uct_gda_ft_ep_t *ep,
                                            const gda_ft_dev_op_t *op,
                                            uint32_t idx)
{
    if ((op->status == GDA_FT_DEV_OK) ||
        (op->status == GDA_FT_DEV_PATH_SWITCHED)) {
        return UCS_OK;
    }

    if ((ep->flags & UCT_GDA_FT_EP_FLAG_CANCELED) &&
        ((int32_t)(idx - ep->cancel_sn) < 0) &&
        (op->status == GDA_FT_DEV_ERROR)) {
        return UCS_ERR_CANCELED;
    }

    switch (op->status) {
    case GDA_FT_DEV_NO_PATH:
        return UCS_ERR_ENDPOINT_TIMEOUT;
    case GDA_FT_DEV_IN_DOUBT:
    default:
        return UCS_ERR_IO_ERROR;
    }
}

static void uct_gda_ft_ep_op_failed(uct_gda_ft_ep_t *ep,
                                    const gda_ft_dev_op_t *op,
                                    ucs_status_t status)
{
    /* only a descriptor keeps the address (a short or zero-copy
     * operation has none) */
    const uct_gda_ft_op_t *desc = uct_gda_ft_cookie_desc(op->user);
    uint64_t raddr              = (desc != NULL) ? desc->raddr : 0;

    if (op->status == GDA_FT_DEV_IN_DOUBT) {
        /* design §5 rule 4: reported once, never applied twice */
        ucs_error("gda_ft: ep %p: atomic operation on remote address "
                  "0x%" PRIx64 " (rkey 0x%x/0x%x) is in doubt: its "
                  "completion was lost when the %s path failed; it may or "
                  "may not have been applied and is not retried", ep, raddr,
                  op->rkey[0], op->rkey[1], uct_gda_ft_path_name(op->path));
    } else if (status != UCS_ERR_CANCELED) {
        ucs_debug("gda_ft: ep %p: operation kind %u on 0x%" PRIx64 "%s "
                  "(rkey 0x%x/0x%x) failed: %s (syndrome %s)", ep, op->kind,
                  raddr, (desc != NULL) ? "" : " (address not kept)",
                  op->rkey[0], op->rkey[1],
                  gda_ft_dev_status_str((gda_ft_dev_status_t)op->status),
                  gda_ft_hca_syndrome_str(op->syndrome));
    }
}


unsigned uct_gda_ft_ep_deliver_one(uct_gda_ft_ep_t *ep)
{
    uct_gda_ft_iface_t *iface = uct_gda_ft_ep_iface(ep);
    uint32_t idx              = ep->dev.log_head;
    uct_completion_t *comp;
    uct_gda_ft_op_t *desc;
    gda_ft_dev_op_t op;
    ucs_status_t status;

    if (ucs_unlikely(ep->am.num_held != 0) && uct_gda_ft_ep_am_deliver(ep)) {
        return 1;
    }

    if (uct_gda_ft_hchan_deliver_one(ep)) {
        return 1;
    }

    if (gda_ft_ep_pop(&ep->dev, &op)) {
        ucs_assert(iface->outstanding > 0);
        --iface->outstanding;
        status = uct_gda_ft_ep_op_status(ep, &op, idx);
        if (ucs_unlikely(status != UCS_OK)) {
            uct_gda_ft_ep_op_failed(ep, &op, status);
        }
        /* the endpoint has room again: let its pending requests in */
        ucs_arbiter_group_schedule(&iface->arbiter, &ep->arb_group);
        if ((status != UCS_OK) && (status != UCS_ERR_CANCELED) &&
            (op.kind != GDA_FT_OP_PROBE) &&
            (uct_gda_ft_cookie_comp(op.user) == NULL)) {
            /* Nobody waits for this operation (a posted atomic in doubt):
             * the next flush reports that not everything before it was
             * applied. A failback probe is the guardian's own: its failure
             * only keeps the path failed. */
            ep->unreported_status = status;
        }
        uct_gda_ft_cookie_complete(op.user, status);
        return 1;
    }

    if (!ucs_queue_is_empty(&ep->flush_q)) {
        desc = ucs_queue_head_elem_non_empty(&ep->flush_q, uct_gda_ft_op_t,
                                             queue);
        if (((int32_t)(ep->dev.log_head - desc->sn) >= 0) &&
            (ep->hchan.delivered >= desc->flush.chan_end)) {
            ucs_queue_pull_non_empty(&ep->flush_q);
            status = (uct_gda_ft_ep_no_path(ep) &&
                      !(ep->flags & UCT_GDA_FT_EP_FLAG_CANCELED)) ?
                     UCS_ERR_ENDPOINT_TIMEOUT :
                     uct_gda_ft_ep_take_unreported(ep);
            comp   = desc->comp;
            ucs_mpool_put_inline(desc);
            uct_invoke_completion(comp, status);
            return 1;
        }
    }

    if (uct_gda_ft_ep_no_path(ep) &&
        !(ep->flags & (UCT_GDA_FT_EP_FLAG_ERR_REPORTED |
                       UCT_GDA_FT_EP_FLAG_CANCELED))) {
        /* design §5 rule 5: both paths are gone; UCP's error handler runs.
         * The handler may destroy the endpoint: nothing touches ep after. */
        ep->flags |= UCT_GDA_FT_EP_FLAG_ERR_REPORTED;
        ep->flags &= ~UCT_GDA_FT_EP_FLAG_READY;
        ucs_list_del(&ep->ready);
        status = uct_iface_handle_ep_err(&iface->super.super,
                                         &ep->super.super,
                                         UCS_ERR_ENDPOINT_TIMEOUT);
        if (status != UCS_OK) {
            ucs_diag("gda_ft: ep %p: no error handler took the failure of "
                     "both paths: %s", ep, ucs_status_string(status));
        }
        return 1;
    }

    return 0;
}


ucs_status_t uct_gda_ft_ep_query_counters(uct_ep_h tl_ep,
                                          gda_ft_dev_ep_counters_t *counters)
{
    uct_gda_ft_ep_t *ep = ucs_derived_of(tl_ep, uct_gda_ft_ep_t);

    *counters = ep->dev.counters;
    uct_gda_ft_hchan_add_counters(ep, counters);
    return UCS_OK;
}

ucs_status_t
uct_gda_ft_iface_query_counters(uct_iface_h tl_iface,
                                gda_ft_dev_ep_counters_t *counters)
{
    uct_gda_ft_iface_t *iface = ucs_derived_of(tl_iface, uct_gda_ft_iface_t);
    gda_ft_dev_ep_counters_t ep_counters;
    uct_gda_ft_ep_t *ep;

    memset(counters, 0, sizeof(*counters));
    ucs_list_for_each(ep, &iface->eps, list) {
        uct_gda_ft_ep_query_counters(&ep->super.super, &ep_counters);
        counters->switches  += ep_counters.switches;
        counters->replays   += ep_counters.replays;
        counters->in_doubt  += ep_counters.in_doubt;
        counters->failbacks += ep_counters.failbacks;
        counters->no_path   += ep_counters.no_path;
        counters->fences    += ep_counters.fences;
        counters->op_errors += ep_counters.op_errors;
        counters->confirmed += ep_counters.confirmed;
    }
    return UCS_OK;
}


/* ---- progress ------------------------------------------------------------ */

unsigned uct_gda_ft_iface_poll_cqs(uct_gda_ft_iface_t *iface, int *drained)
{
    uct_gda_ft_iface_path_t *ipath;
    gda_ft_dev_cqe_info_t info;
    gda_ft_dev_status_t status;
    uct_gda_ft_ep_t *ep;
    unsigned path, i, count = 0;

    *drained = 1;
    for (path = 0; path < GDA_FT_NUM_PATHS; ++path) {
        ipath = &iface->path[path];
        if (ipath->cq == NULL) {
            continue;
        }

        for (i = 0; i < iface->config.max_poll; ++i) {
            if (gda_ft_cq_poll_ring(&ipath->dcq, &info) ==
                GDA_FT_DEV_INPROGRESS) {
                break;
            }
            ++count;

            ep = uct_gda_ft_iface_qp_find(iface, path, info.qpn);
            if (ep == NULL) {
                ucs_trace_data("gda_ft: iface %p: CQE of unknown %s QP 0x%x",
                               iface, uct_gda_ft_path_name(path), info.qpn);
                continue;
            }

            status = gda_ft_ep_handle_cqe(&ep->dev, path, &info);
            if ((status == GDA_FT_DEV_PATH_SWITCHED) ||
                (status == GDA_FT_DEV_NO_PATH)) {
                uct_gda_ft_ep_path_event(ep, path, status, &info, NULL);
            } else {
                uct_gda_ft_iface_ep_ready(iface, ep);
            }
        }

        if (i == iface->config.max_poll) {
            *drained = 0;
        }
    }
    return count;
}

/*
 * The paths' work, which hands nothing to the user: send completions read,
 * deadlines checked, guardians run (among them the host half of a host
 * channel's switch, which the next pass takes up).
 */
static unsigned uct_gda_ft_iface_progress_paths(uct_gda_ft_iface_t *iface)
{
    uct_gda_ft_ep_t *ep, *tmp;
    unsigned count, rounds;
    uint64_t now;
    int drained;

    count = uct_gda_ft_iface_poll_cqs(iface, &drained);

    /*
     * Deadlines only after the CQs are drained: a completion the HCA has
     * written must not be taken for a lost one. A CQ that stays busier than
     * one poll budget (other endpoints' traffic) is drained in full at
     * least every quarter deadline, so that one dead path among busy ones
     * is still found in time.
     */
    if ((iface->config.deadline_ns != 0) &&
        !ucs_list_is_empty(&iface->active_eps)) {
        now = gda_ft_dev_now_ns();
        if (!drained && ((now - iface->last_deadline_check_ns) >
                         (iface->config.deadline_ns / 4))) {
            for (rounds = 0; !drained && (rounds < iface->config.cq_len);
                 rounds += iface->config.max_poll) {
                count += uct_gda_ft_iface_poll_cqs(iface, &drained);
            }
        }
        if (drained) {
            iface->last_deadline_check_ns = now;
            ucs_list_for_each_safe(ep, tmp, &iface->active_eps, active) {
                if (gda_ft_ep_outstanding(&ep->dev) == 0) {
                    ucs_list_del(&ep->active);
                    ep->flags &= ~UCT_GDA_FT_EP_FLAG_ACTIVE;
                    continue;
                }
                uct_gda_ft_ep_check_deadline(ep, now);
            }
        }
    }

    /* Guardians: the endpoints' mailboxes, resolution and failback every
     * GUARD_INTERVAL; their channels' more often (a fiftieth of the
     * deadline), since posters wait for the answer to a switch */
    if (iface->config.failback || iface->config.resolve ||
        iface->config.num_channels) {
        now = gda_ft_dev_now_ns();
        if ((iface->config.failback || iface->config.resolve) &&
            ((now - iface->last_guard_ns) > iface->config.guard_ns)) {
            iface->last_guard_ns = now;
            ucs_list_for_each(ep, &iface->eps, list) {
                uct_gda_ft_ep_guard_progress(ep, now);
            }
        }
        if (iface->config.num_channels &&
            ((now - iface->last_chan_guard_ns) >
             iface->config.chan_guard_ns)) {
            iface->last_chan_guard_ns = now;
            ucs_list_for_each(ep, &iface->eps, list) {
                uct_gda_ft_ep_chans_progress(ep, now);
                uct_gda_ft_hchan_idle_pass(ep);
            }
        }
    }
    return count;
}

/* Endpoints whose host channel left a path: their QPs leave it too */
static void uct_gda_ft_iface_follow_hchans(uct_gda_ft_iface_t *iface)
{
    while (!ucs_list_is_empty(&iface->hchan_left)) {
        uct_gda_ft_ep_follow_hchan(ucs_list_head(&iface->hchan_left,
                                                 uct_gda_ft_ep_t,
                                                 hchan.left_list));
    }
}

unsigned uct_gda_ft_iface_progress(uct_iface_h tl_iface)
{
    uct_gda_ft_iface_t *iface = ucs_derived_of(tl_iface, uct_gda_ft_iface_t);
    uct_gda_ft_ep_t *ep;
    unsigned count, path;

    count = 0;
    for (path = 0; path < GDA_FT_NUM_PATHS; ++path) {
        count += uct_gda_ft_iface_poll_rx(iface, path,
                                          iface->config.max_poll);
    }
    if (!ucs_list_is_empty(&iface->hchan_eps)) {
        count += uct_gda_ft_hchan_progress(iface);
    }
    uct_gda_ft_iface_follow_hchans(iface);
    count += uct_gda_ft_iface_progress_paths(iface);
    uct_gda_ft_iface_follow_hchans(iface);

    /* Callbacks may destroy endpoints: always restart from the list head */
    while (!ucs_list_is_empty(&iface->ready_eps)) {
        ep = ucs_list_head(&iface->ready_eps, uct_gda_ft_ep_t, ready);
        if (uct_gda_ft_ep_deliver_one(ep)) {
            ++count;
            continue;
        }
        ucs_list_del(&ep->ready);
        ep->flags &= ~UCT_GDA_FT_EP_FLAG_READY;
    }

    if (!ucs_arbiter_is_empty(&iface->arbiter)) {
        ucs_arbiter_dispatch(&iface->arbiter, 1,
                             uct_gda_ft_ep_process_pending, NULL);
    }

    /* A software HCA is a CPU thread: a poller that spins on an empty CQ
     * while operations are outstanding takes the CPU it needs to complete
     * them, on a machine with fewer cores than busy threads */
    if ((count == 0) && iface->config.soft_yield &&
        ((iface->outstanding > 0) || !ucs_list_is_empty(&iface->hchan_eps))) {
        sched_yield();
    }

    return count;
}
