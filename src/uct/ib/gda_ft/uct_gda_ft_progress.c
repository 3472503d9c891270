/*
 * gda_ft UCT transport: progress. Polls the receive CQs of both paths,
 * runs the host channels' progress passes and the channels' guardian, and
 * delivers what completed, in post order, to the waiters; counters of
 * endpoints and interfaces.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "uct_gda_ft_ep.inl"
#include "uct_gda_ft_progress.h"
#include "uct_gda_ft_am.h"
#include "uct_gda_ft_chan.h"

#include <ucs/debug/log.h>
#include <sched.h>
#include <string.h>


/* ---- completions and failures -------------------------------------------- */

unsigned uct_gda_ft_ep_deliver_one(uct_gda_ft_ep_t *ep)
{
    uct_gda_ft_iface_t *iface = uct_gda_ft_ep_iface(ep);
    uct_completion_t *comp;
    uct_gda_ft_op_t *desc;
    ucs_status_t status, error;

    if (ucs_unlikely(ep->am.num_held != 0) && uct_gda_ft_ep_am_deliver(ep)) {
        return 1;
    }

    if (uct_gda_ft_hchan_deliver_one(ep)) {
        return 1;
    }

    if (!ucs_queue_is_empty(&ep->flush_q)) {
        desc = ucs_queue_head_elem_non_empty(&ep->flush_q, uct_gda_ft_op_t,
                                             queue);
        if (ep->hchan.delivered >= desc->flush.chan_end) {
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

    if ((uct_gda_ft_ep_no_path(ep) ||
         (ep->flags & UCT_GDA_FT_EP_FLAG_FAILED)) &&
        !(ep->flags & (UCT_GDA_FT_EP_FLAG_ERR_REPORTED |
                       UCT_GDA_FT_EP_FLAG_CANCELED))) {
        /* design §5 rule 5: no path is left; UCP's error handler runs.
         * Or the channel directories could not be exchanged (design §4).
         * The handler may destroy the endpoint: nothing touches ep after. */
        error      = (ep->flags & UCT_GDA_FT_EP_FLAG_FAILED) ?
                     ep->chans->dir.status : UCS_ERR_ENDPOINT_TIMEOUT;
        ep->flags |= UCT_GDA_FT_EP_FLAG_ERR_REPORTED;
        ep->flags &= ~UCT_GDA_FT_EP_FLAG_READY;
        ucs_list_del(&ep->ready);
        status = uct_iface_handle_ep_err(&iface->super.super,
                                         &ep->super.super, error);
        if (status != UCS_OK) {
            ucs_diag("ep %p: no error handler took its failure (%s): %s",
                     ep, ucs_status_string(error),
                     ucs_status_string(status));
        }
        return 1;
    }

    return 0;
}


ucs_status_t uct_gda_ft_ep_query_counters(uct_ep_h tl_ep,
                                          uct_gda_ft_ep_counters_t *counters)
{
    uct_gda_ft_ep_t *ep = ucs_derived_of(tl_ep, uct_gda_ft_ep_t);

    uct_gda_ft_hchan_counters(ep, counters);
    return UCS_OK;
}

ucs_status_t
uct_gda_ft_iface_query_counters(uct_iface_h tl_iface,
                                uct_gda_ft_ep_counters_t *counters)
{
    uct_gda_ft_iface_t *iface = ucs_derived_of(tl_iface, uct_gda_ft_iface_t);
    uct_gda_ft_ep_counters_t ep_counters;
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
        counters->probes    += ep_counters.probes;
    }
    return UCS_OK;
}


/* ---- progress ------------------------------------------------------------ */

/*
 * The channels' guardian (a fiftieth of the deadline, within GUARD_INTERVAL,
 * since posters wait for the answer to a switch): the peer's questions,
 * switch records, re-arms and failback; and the idle host channels, which
 * look at a peer that switched or a re-armed primary only when asked.
 */
static void uct_gda_ft_iface_guard(uct_gda_ft_iface_t *iface)
{
    uint64_t now = gda_ft_dev_now_ns();
    uct_gda_ft_ep_t *ep;

    if ((now - iface->last_chan_guard_ns) <= iface->config.chan_guard_ns) {
        /* the directories' exchange is a few writes each way: it does not
         * wait for the guardian's interval */
        if (iface->dir_pending > 0) {
            ucs_list_for_each(ep, &iface->eps, list) {
                uct_gda_ft_ep_chans_dir_progress(ep);
            }
        }
        return;
    }
    iface->last_chan_guard_ns = now;
    ucs_list_for_each(ep, &iface->eps, list) {
        uct_gda_ft_ep_chans_progress(ep, now);
        uct_gda_ft_hchan_idle_pass(ep);
    }
}

unsigned uct_gda_ft_iface_progress(uct_iface_h tl_iface)
{
    uct_gda_ft_iface_t *iface = ucs_derived_of(tl_iface, uct_gda_ft_iface_t);
    uct_gda_ft_ep_t *ep;
    unsigned count, path;

    count = 0;
    for (path = 0; path < GDA_FT_NUM_PATHS; ++path) {
        if (iface->path[path].dev != NULL) {
            count += uct_gda_ft_iface_poll_rx(iface, path,
                                              iface->config.max_poll);
        }
    }
    if (!ucs_list_is_empty(&iface->hchan_eps)) {
        count += uct_gda_ft_hchan_progress(iface);
    }
    uct_gda_ft_iface_guard(iface);

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
        !ucs_list_is_empty(&iface->hchan_eps)) {
        sched_yield();
    }

    return count;
}
