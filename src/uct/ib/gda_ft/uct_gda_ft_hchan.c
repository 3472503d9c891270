/*
 * gda_ft UCT transport: the endpoint's host channel (see
 * uct_gda_ft_hchan.h).
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "uct_gda_ft_ep.inl"
#include "uct_gda_ft_chan.h"
#include "gda_ft_device_api.h"

#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>


/* An operation canceled by flush(CANCEL), beside gda_ft_dev_status_t */
#define UCT_GDA_FT_HCHAN_CANCELED 0x80


static const char *uct_gda_ft_hchan_why(unsigned why)
{
    switch (why) {
    case GDA_FT_CHAN_WHY_DEADLINE:
        return "no progress within the deadline";
    case GDA_FT_CHAN_WHY_ERR_CQE:
        return "error completion";
    case GDA_FT_CHAN_WHY_OP_ERROR:
        return "an operation's error completion";
    case GDA_FT_CHAN_WHY_RETRY:
        return "the HCA gave up retrying";
    case GDA_FT_CHAN_WHY_PEER:
        return "with the peer's other channels";
    default:
        return "unknown reason";
    }
}

/*
 * What a pass of the channel did since the last report: a switch it
 * survives is a diagnostic (the counters keep the record), no path left is
 * an error.
 */
static void uct_gda_ft_hchan_report(uct_gda_ft_ep_t *ep)
{
    gda_ft_chan_counters_t *seen = &ep->hchan.reported;
    const gda_ft_chan_t *chan    = ep->hchan.chan;
    unsigned switches  = gda_ft_atomic_load_rlx32(&chan->counters.switches);
    unsigned failbacks = gda_ft_atomic_load_rlx32(&chan->counters.failbacks);
    unsigned no_path   = gda_ft_atomic_load_rlx32(&chan->counters.no_path);
    unsigned left;

    if (switches != seen->switches) {
        /* every switch toggles the path: the one left is not the active */
        left = 1 - gda_ft_atomic_load_acq32(&chan->active);
        if (chan->path[left].failed == GDA_FT_CHAN_WHY_PEER) {
            ucs_diag("ep %p: %s path of its host channel left (%s): moved "
                     "to the %s path", ep, uct_gda_ft_path_name(left),
                     uct_gda_ft_hchan_why(chan->path[left].failed),
                     uct_gda_ft_path_name(1 - left));
        } else {
            ucs_diag("ep %p: %s path of its host channel failed (%s): "
                     "switched to the %s path", ep,
                     uct_gda_ft_path_name(left),
                     uct_gda_ft_hchan_why(chan->path[left].failed),
                     uct_gda_ft_path_name(1 - left));
        }
    }
    if (failbacks != seen->failbacks) {
        ucs_diag("ep %p: primary path of its host channel is back: traffic "
                 "returns to it (failback %u)", ep, failbacks);
    }
    if (no_path != seen->no_path) {
        ucs_error("ep %p: the %s path of its host channel failed and no "
                  "other path is left%s: its operations fail", ep,
                  (ep->chans->num_paths == 1) ? "only" : "last",
                  (ep->chans->num_paths == 1) ? " (no backup HCA)" : "");
    }
    seen->switches  = switches;
    seen->failbacks = failbacks;
    seen->no_path   = no_path;
}

static void uct_gda_ft_hchan_list_add(uct_gda_ft_iface_t *iface,
                                      uct_gda_ft_ep_t *ep)
{
    if (!ep->hchan.in_list) {
        ucs_list_add_tail(&iface->hchan_eps, &ep->hchan.list);
        ep->hchan.in_list = 1;
    }
}

static void uct_gda_ft_hchan_list_del(uct_gda_ft_ep_t *ep)
{
    if (ep->hchan.in_list) {
        ucs_list_del(&ep->hchan.list);
        ep->hchan.in_list = 0;
    }
}

/* Whether an abort stopped the channel (its QPs in ERR) with nothing
 * posted since: it is not progressed any more */
static int uct_gda_ft_hchan_stopped(const uct_gda_ft_ep_t *ep)
{
    return (ep->hchan.abort_status != 0) &&
           (ep->hchan.aborted == ep->hchan.posted);
}

/* Whether a switch holds a channel that is still progressed (its steps
 * wait for progress passes) */
static int uct_gda_ft_hchan_switching(const uct_gda_ft_ep_t *ep)
{
    uint32_t state = gda_ft_atomic_load_acq32(&ep->hchan.chan->state);

    return ((state == GDA_FT_CHAN_SWITCHING) ||
            (state == GDA_FT_CHAN_PARKED)) && !uct_gda_ft_hchan_stopped(ep);
}

/* On the interface's list while it has something in flight or a switch
 * under way: every progress pass advances it. An interface flush waits
 * for the list to empty. */
static void uct_gda_ft_hchan_list_update(uct_gda_ft_ep_t *ep)
{
    if ((ep->hchan.delivered == ep->hchan.posted) &&
        !uct_gda_ft_hchan_switching(ep)) {
        uct_gda_ft_hchan_list_del(ep);
    }
}

/* The channel's progress pass (completions, deadline, a step of a switch) */
static gda_ft_dev_status_t uct_gda_ft_hchan_chan_progress(uct_gda_ft_ep_t *ep)
{
    uct_gda_ft_iface_t *iface = uct_gda_ft_ep_iface(ep);
    gda_ft_dev_status_t status;

    status = gda_ft_chan_progress(ep->hchan.chan);
    uct_gda_ft_hchan_report(ep);
    if (uct_gda_ft_hchan_switching(ep)) {
        uct_gda_ft_hchan_list_add(iface, ep);
    } else if ((status == GDA_FT_DEV_PATH_SWITCHED) ||
               (status == GDA_FT_DEV_NO_PATH)) {
        /* the switch that held new posts ended: let pending ones in */
        ucs_arbiter_group_schedule(&iface->arbiter, &ep->arb_group);
        uct_gda_ft_hchan_list_update(ep);
    }
    return status;
}


/* Its QPs to ERR: the HCA touches no buffer of ours after */
static void uct_gda_ft_hchan_stop(uct_gda_ft_ep_t *ep)
{
    gda_ft_hca_qp_attr_t qp_attr = {0};
    gda_ft_chan_host_t *ch       = &ep->chans->init[0];
    ucs_status_t status;
    unsigned path;

    for (path = 0; path < ep->chans->num_paths; ++path) {
        status = gda_ft_hca_qp_modify(ch->path[path].qp, GDA_FT_HCA_QP_ERR,
                                      &qp_attr);
        if (status != UCS_OK) {
            ucs_warn("ep %p: failed to move the %s QP 0x%x of its "
                     "host channel to ERR: %s", ep,
                     uct_gda_ft_path_name(path), ch->path[path].qp->qpn,
                     ucs_status_string(status));
        }
    }
}

/* What was posted completes with `status` (canceled) as soon as it is
 * handed out; the channel is not progressed any more */
static void uct_gda_ft_hchan_abort(uct_gda_ft_ep_t *ep, unsigned status)
{
    if (ep->hchan.aborted == ep->hchan.posted) {
        return;
    }
    uct_gda_ft_hchan_stop(ep);
    ep->hchan.aborted      = ep->hchan.posted;
    ep->hchan.abort_status = status;
    uct_gda_ft_iface_ep_ready(uct_gda_ft_ep_iface(ep), ep);
}


/* ---- posting ------------------------------------------------------------- */

ucs_status_t uct_gda_ft_hchan_post(uct_gda_ft_ep_t *ep,
                                   const gda_ft_chan_op_t *op,
                                   uint64_t cookie)
{
    uct_gda_ft_ep_hchan_t *hchan = &ep->hchan;
    gda_ft_chan_t *chan          = hchan->chan;
    uint64_t end, last = 0, db = 0;
    gda_ft_chan_op_t fenced_op;
    gda_ft_dev_status_t status;
    gda_ft_chan_shape_t shape;
    gda_ft_chan_resv_t resv;
    gda_ft_chan_dest_t dest;
    gda_ft_chan_geom_t geom;
    uint32_t n;

    if (ucs_unlikely(ep->flags & UCT_GDA_FT_EP_FLAG_FENCE)) {
        /* after a fence: this WQE waits for the channel's earlier ones,
         * and those after it are behind it */
        fenced_op        = *op;
        fenced_op.flags |= GDA_FT_CHAN_OP_F_FENCE;
        op               = &fenced_op;
    }

    gda_ft_chan_geom_of(chan, &hchan->memo, &geom);
    gda_ft_chan_shape(&geom, op, &shape);
    if (ucs_unlikely(!shape.valid)) {
        ucs_error("ep %p: operation kind %u of %u bytes does not fit "
                  "its host channel", ep, op->kind, op->length);
        return UCS_ERR_INVALID_PARAM;
    }

    n = shape.wqebbs;
    if (uct_gda_ft_hchan_outstanding(ep) + n > chan->wqebb_cnt) {
        return UCS_ERR_NO_RESOURCE;
    }

    status = gda_ft_chan_reserve_as(chan, n, &hchan->memo, &resv);
    if (ucs_unlikely(status != GDA_FT_DEV_OK)) {
        return (status == GDA_FT_DEV_NO_PATH) ? UCS_ERR_ENDPOINT_TIMEOUT :
                                                UCS_ERR_NO_RESOURCE;
    }

    /* the only poster: the channel's index is ours */
    ucs_assert(resv.seq == hchan->posted);
    gda_ft_chan_dest_init(&dest, chan, resv.path, resv.off, &geom);
    end = gda_ft_chan_write_op(&dest, op, &shape, resv.seq, 1, &last, &db);
    hchan->cookies[last & (chan->wqebb_cnt - 1)] =
            (cookie != 0) ? cookie : UCT_GDA_FT_HCHAN_END;
    /* its outcomes are read in ring order (deliver_one): they hold no
     * ring room of their own */
    gda_ft_chan_publish(chan, &dest, &resv, op, 1, db, &hchan->memo, 0);
    hchan->posted = end;
    ++hchan->ops;
    ep->flags    &= ~UCT_GDA_FT_EP_FLAG_FENCE;
    uct_gda_ft_hchan_list_add(uct_gda_ft_ep_iface(ep), ep);

    if (gda_ft_chan_resv_follow(&resv)) {
        /* the peer's other channels left the primary: follow them now */
        uct_gda_ft_hchan_chan_progress(ep);
    }
    return UCS_OK;
}


/* ---- completion ---------------------------------------------------------- */

/* A WQE's outcome: a settled failure in its slot on either path, or OK */
static gda_ft_dev_status_t uct_gda_ft_hchan_wqe_status(gda_ft_chan_t *chan,
                                                       uint64_t seq)
{
    return gda_ft_chan_outcome(chan, seq, 0);
}

static ucs_status_t uct_gda_ft_hchan_status(unsigned status)
{
    switch (status) {
    case GDA_FT_DEV_OK:
    case GDA_FT_DEV_PATH_SWITCHED:
        return UCS_OK;
    case GDA_FT_DEV_NO_PATH:
        return UCS_ERR_ENDPOINT_TIMEOUT;
    case UCT_GDA_FT_HCHAN_CANCELED:
        return UCS_ERR_CANCELED;
    default:   /* IN_DOUBT, ERROR */
        return UCS_ERR_IO_ERROR;
    }
}

static void uct_gda_ft_hchan_op_failed(uct_gda_ft_ep_t *ep, uint64_t user,
                                       unsigned status)
{
    const uct_gda_ft_op_t *desc = uct_gda_ft_cookie_desc(user);
    uint64_t raddr              = (desc != NULL) ? desc->raddr : 0;

    if (status == GDA_FT_DEV_IN_DOUBT) {
        /* design §5 rule 4: reported once, never applied twice */
        ucs_error("ep %p: atomic operation on remote address 0x%" PRIx64
                  " is in doubt: its completion was lost when a path of its "
                  "host channel failed; it may or may not have been applied "
                  "and is not retried", ep, raddr);
    } else if (status != UCT_GDA_FT_HCHAN_CANCELED) {
        ucs_debug("ep %p: host channel operation on 0x%" PRIx64 "%s "
                  "failed: %s", ep, raddr,
                  (desc != NULL) ? "" : " (address not kept)",
                  gda_ft_dev_status_str((gda_ft_dev_status_t)status));
    }
}

unsigned uct_gda_ft_hchan_deliver_one(uct_gda_ft_ep_t *ep)
{
    uct_gda_ft_ep_hchan_t *hchan = &ep->hchan;
    gda_ft_chan_t *chan          = hchan->chan;
    uct_gda_ft_iface_t *iface;
    unsigned wqe_status;
    uint64_t seq, completed, stored;
    ucs_status_t status;
    int gone;

    if (chan == NULL) {
        return 0;
    }
    if (hchan->delivered == hchan->posted) {
        uct_gda_ft_hchan_list_update(ep);
        return 0;
    }

    completed = gda_ft_chan_completed(chan);
    gone      = gda_ft_atomic_load_acq32(&chan->state) == GDA_FT_CHAN_NO_PATH;
    while (hchan->delivered != hchan->posted) {
        seq = hchan->delivered;
        if (seq < completed) {
            wqe_status = uct_gda_ft_hchan_wqe_status(chan, seq);
        } else if (seq < hchan->aborted) {
            wqe_status = hchan->abort_status;
        } else if (gone) {
            wqe_status = GDA_FT_DEV_NO_PATH;
        } else {
            return 0;
        }

        /* a chunk's failure is its operation's (an operation's cookie is
         * at its last WQE, and a WQE may span WQEBBs after it) */
        if (hchan->op_status == GDA_FT_DEV_OK) {
            hchan->op_status = wqe_status;
        }
        stored = hchan->cookies[seq & (chan->wqebb_cnt - 1)];
        hchan->cookies[seq & (chan->wqebb_cnt - 1)] = 0;
        hchan->delivered = seq + 1;
        if (stored == 0) {
            continue;   /* not the last WQE of an operation */
        }

        wqe_status       = hchan->op_status;
        hchan->op_status = GDA_FT_DEV_OK;
        --hchan->ops;
        stored           = (stored == UCT_GDA_FT_HCHAN_END) ? 0 : stored;
        status           = uct_gda_ft_hchan_status(wqe_status);
        hchan->no_path_ops += (status == UCS_ERR_ENDPOINT_TIMEOUT);
        if (ucs_unlikely(status != UCS_OK)) {
            uct_gda_ft_hchan_op_failed(ep, stored, wqe_status);
            if ((status != UCS_ERR_CANCELED) &&
                (uct_gda_ft_cookie_comp(stored) == NULL)) {
                /* nobody waits for it: the next flush reports it */
                ep->unreported_status = status;
            }
        }

        iface = uct_gda_ft_ep_iface(ep);
        uct_gda_ft_hchan_list_update(ep);
        /* the endpoint has room again: let its pending requests in */
        ucs_arbiter_group_schedule(&iface->arbiter, &ep->arb_group);
        uct_gda_ft_cookie_complete(stored, status);
        return 1;
    }
    uct_gda_ft_hchan_list_update(ep);
    return 0;
}

unsigned uct_gda_ft_hchan_progress(uct_gda_ft_iface_t *iface)
{
    unsigned count = 0;
    uct_gda_ft_ep_t *ep, *tmp;
    gda_ft_chan_t *chan;

    /* the end of a switch may take an endpoint off the list */
    ucs_list_for_each_safe(ep, tmp, &iface->hchan_eps, hchan.list) {
        chan = ep->hchan.chan;
        if (!uct_gda_ft_hchan_stopped(ep) &&
                   ((ep->hchan.aborted != ep->hchan.posted) ||
                    uct_gda_ft_hchan_switching(ep))) {
            /* a switch goes on with nothing posted: a channel follows
             * the peer's others before its first post */
            uct_gda_ft_hchan_chan_progress(ep);
        }
        if ((gda_ft_chan_completed(chan) > ep->hchan.delivered) ||
            (ep->hchan.aborted > ep->hchan.delivered) ||
            (gda_ft_atomic_load_acq32(&chan->state) == GDA_FT_CHAN_NO_PATH)) {
            uct_gda_ft_iface_ep_ready(iface, ep);
            ++count;
        }
    }
    return count;
}

void uct_gda_ft_hchan_idle_pass(uct_gda_ft_ep_t *ep)
{
    if ((ep->hchan.chan == NULL) || ep->hchan.in_list ||
        (ep->flags & UCT_GDA_FT_EP_FLAG_CANCELED)) {
        return;
    }
    if (uct_gda_ft_hchan_chan_progress(ep) == GDA_FT_DEV_NO_PATH) {
        /* the endpoint's error goes out with its next delivery */
        uct_gda_ft_iface_ep_ready(uct_gda_ft_ep_iface(ep), ep);
    }
}


/* ---- lifetime ------------------------------------------------------------ */

ucs_status_t uct_gda_ft_hchan_connect(uct_gda_ft_ep_t *ep)
{
    uct_gda_ft_ep_hchan_t *hchan = &ep->hchan;
    gda_ft_chan_t *chan          = &ep->chans->poster[0];

    hchan->cookies = ucs_calloc(chan->wqebb_cnt, sizeof(*hchan->cookies),
                                "gda_ft_hchan_cookies");
    if (hchan->cookies == NULL) {
        ucs_error("ep %p: out of memory for its host channel", ep);
        return UCS_ERR_NO_MEMORY;
    }
    hchan->posted       = GDA_FT_CHAN_WORD_INDEX(chan->word);
    gda_ft_chan_memo_init(&hchan->memo);
    hchan->delivered    = hchan->posted;
    hchan->aborted      = hchan->posted;
    hchan->abort_status = 0;
    hchan->op_status    = GDA_FT_DEV_OK;
    hchan->chan         = chan;
    return UCS_OK;
}

void uct_gda_ft_hchan_cancel(uct_gda_ft_ep_t *ep)
{
    if (ep->hchan.chan != NULL) {
        uct_gda_ft_hchan_abort(ep, UCT_GDA_FT_HCHAN_CANCELED);
    }
}

void uct_gda_ft_hchan_cleanup(uct_gda_ft_ep_t *ep)
{
    uct_gda_ft_ep_hchan_t *hchan = &ep->hchan;
    uint64_t seq, stored;

    if (hchan->chan == NULL) {
        return;
    }
    uct_gda_ft_hchan_list_del(ep);
    uct_gda_ft_hchan_stop(ep);
    if (hchan->delivered != hchan->posted) {
        ucs_debug("ep %p destroyed with %" PRIu64 " WQEBBs in flight on "
                  "its host channel", ep,
                  hchan->posted - hchan->delivered);
    }
    for (seq = hchan->delivered; seq != hchan->posted; ++seq) {
        stored = hchan->cookies[seq & (hchan->chan->wqebb_cnt - 1)];
        if ((stored != 0) && (stored != UCT_GDA_FT_HCHAN_END)) {
            uct_gda_ft_cookie_cancel(stored);
        }
    }
    ucs_free(hchan->cookies);
    hchan->cookies = NULL;
    hchan->chan    = NULL;
}

void uct_gda_ft_hchan_counters(const uct_gda_ft_ep_t *ep,
                               uct_gda_ft_ep_counters_t *counters)
{
    gda_ft_chan_query_t q;

    memset(counters, 0, sizeof(*counters));
    if (ep->hchan.chan == NULL) {
        return;
    }
    gda_ft_chan_host_query(&ep->chans->init[0], ep->hchan.chan, &q);
    counters->switches  = q.poster.switches;
    counters->failbacks = q.poster.failbacks;
    counters->fences    = q.host.fences;
    counters->no_path   = ep->hchan.no_path_ops;
    counters->replays   = q.poster.replays;
    counters->in_doubt  = q.poster.in_doubt;
    counters->op_errors = q.poster.op_errors;
    counters->confirmed = q.poster.confirmed;
    counters->probes    = ep->chans->peer.beats;
}
