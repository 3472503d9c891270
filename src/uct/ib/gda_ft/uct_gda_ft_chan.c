/*
 * gda_ft UCT transport: the device channels of an endpoint (see
 * uct_gda_ft_chan.h).
 *
 * A channel is posted on by one side only. Our channel i has two initiator
 * QPs (primary, backup) connected to the peer's two target QPs of channel
 * i, and the peer's channel i the other way round. So when a guardian
 * fences or re-arms the far end of one of its paths, it touches a QP that
 * no poster of the peer uses: nothing the peer's kernels hold is reset
 * under them, and a peer whose kernels are idle still answers.
 *
 * Channel 0 is the endpoint's host channel (uct_gda_ft_hchan.c), the
 * others are device channels. Without a backup HCA at either end every
 * channel has one path: the backup is left failed from the start, never
 * re-armed, and a failure of the primary ends in NO_PATH once its re-arm
 * does not come.
 *
 * The guardian pass (uct_gda_ft_ep_chans_progress) runs the channels' host
 * halves, which ask the peer about their paths over the endpoint's control
 * QPs (uct_gda_ft_chan_ctl.c), and answers the peer's questions.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "uct_gda_ft_chan.h"
#include "uct_gda_ft_chan_ctl.h"
#include "gda_ft_device_api.h"
#include "uct_gda_ft_ep.inl"
#include "uct_gda_ft_am.h"
#include "uct_gda_ft_event.h"

#include <ucs/arch/bitops.h>
#include <ucs/arch/cpu.h>
#include <ucs/debug/log.h>
#include <ucs/sys/math.h>
#include <ucs/sys/sys.h>
#include <ucs/debug/memtrack_int.h>
#include <stdlib.h>
#include <string.h>

/* Ring of a target QP: it only responds */
#define UCT_GDA_FT_CHAN_TARGET_RING 64

/* Whole pages: the device API's host side maps each region into the GPU
 * on its own (cudaHostRegister), which a page shared with other data
 * would forbid */
static void *uct_gda_ft_chan_alloc(size_t size, void *arg)
{
    size_t page = ucs_get_page_size();
    void *ptr   = NULL;

    (void)arg;
    if (posix_memalign(&ptr, page, ucs_align_up(size, page)) != 0) {
        return NULL;
    }
    memset(ptr, 0, ucs_align_up(size, page));
    return ptr;
}

static void uct_gda_ft_chan_free(void *ptr, void *arg)
{
    (void)arg;
    free(ptr);
}


/* ---- lifetime ------------------------------------------------------------ */

static void uct_gda_ft_chan_params(uct_gda_ft_iface_t *iface,
                                   unsigned wqebb_cnt,
                                   gda_ft_chan_host_params_t *params)
{
    /* without failover a channel waits for its primary as long as the HCA
     * retries, like any RC QP */
    uint64_t deadline = iface->config.dev_failover ?
                        iface->config.deadline_ns : 0;

    memset(params, 0, sizeof(*params));
    params->wqebb_cnt   = wqebb_cnt;
    params->deadline_ns = deadline;
    params->grace_ns    = gda_ft_timing_grace_ns(deadline);
    params->resolve_ns  = (deadline != 0) ?
                          gda_ft_timing_resolve_ns(
                                  deadline, iface->config.chan_guard_ns) :
                          iface->config.recovery_ns;
    params->quiet_ns    = gda_ft_timing_quiet_ns(deadline,
                                                 iface->config.cpu_engine);
    params->max_chunk   = UCT_GDA_FT_CHAN_MAX_CHUNK;
    params->recovery_ns = iface->config.recovery_ns;
    params->rearm_backoff_ns     = iface->config.rearm_backoff_ns;
    params->rearm_backoff_max_ns = iface->config.rearm_backoff_max_ns;
    params->mem.alloc   = uct_gda_ft_chan_alloc;
    params->mem.free    = uct_gda_ft_chan_free;
    params->mem.type    = iface->config.dev_channel_mapped ?
                          GDA_FT_HCA_MEM_HOST_MAPPED : GDA_FT_HCA_MEM_HOST;
    uct_gda_ft_iface_event_cq_attr(iface, &params->event_armed,
                                   &params->event_fd);
}

static void uct_gda_ft_chans_free(uct_gda_ft_ep_chans_t *c)
{
    unsigned i;

    for (i = 0; i < c->num; ++i) {
        gda_ft_chan_host_cleanup(&c->init[i]);
        gda_ft_chan_host_cleanup(&c->target[i]);
    }
    if (c->has_ctl) {
        gda_ft_chan_host_cleanup(c->ctl);
    }
    ucs_free(c->ctl);
    ucs_free(c->init);
    ucs_free(c->target);
    free(c->poster);
    free(c->health);
    ucs_free(c);
}

void uct_gda_ft_channels_put(uct_gda_ft_ep_chans_t *chans)
{
    if (--chans->refs == 0) {
        uct_gda_ft_chans_free(chans);
    }
}

/* ---- the peer's host channel's active messages ---------------------------
 *
 * Our target QPs of channel 0 have receive queues: the peer's host channel
 * sends its active messages there (SEND with immediate, uct_gda_ft_am.c).
 * Their receive completions go to the interface's receive CQs.
 */

/* The interface's path that holds our QPs of `path`: without a backup
 * HCA, those of the backup are placeholders on the primary, never
 * connected, so that every channel has the same shape */
static unsigned uct_gda_ft_chan_local_path(uct_gda_ft_iface_t *iface,
                                           unsigned path)
{
    return uct_gda_ft_iface_has_backup(iface) ? path :
                                                UCT_GDA_FT_PATH_PRIMARY;
}

/* Before the target QPs of channel 0 are created: a share of a receive CQ
 * on each path */
static ucs_status_t uct_gda_ft_chan_rx_reserve(uct_gda_ft_ep_t *ep,
                                               uct_gda_ft_iface_t *iface,
                                               gda_ft_chan_host_params_t
                                               *params)
{
    ucs_status_t status;
    unsigned path;

    for (path = 0; path < GDA_FT_NUM_PATHS; ++path) {
        status = uct_gda_ft_iface_rx_cq_get(
                iface, uct_gda_ft_chan_local_path(iface, path),
                &ep->chan_rx[path].cq);
        if (status != UCS_OK) {
            return status;
        }
        params->recv_cq[path] = ep->chan_rx[path].cq->cq;
    }
    params->rq_wqe_cnt = iface->config.rx_queue_len;
    return UCS_OK;
}

/* Once they are: their receive queues, and their QPNs known to the
 * interface's receive progress (not a placeholder's) */
static ucs_status_t uct_gda_ft_chan_rx_init(uct_gda_ft_ep_t *ep,
                                            uct_gda_ft_iface_t *iface,
                                            gda_ft_chan_host_t *target)
{
    gda_ft_chan_host_path_t *p;
    ucs_status_t status;
    unsigned path;

    for (path = 0; path < GDA_FT_NUM_PATHS; ++path) {
        if (uct_gda_ft_chan_local_path(iface, path) != path) {
            continue;
        }
        p      = &target->path[path];
        status = uct_gda_ft_rxq_init(iface, &ep->chan_rx[path], path, p->qp,
                                     p->rq_buf, p->dbrec,
                                     ep->chan_rx[path].cq);
        if (status != UCS_OK) {
            return status;
        }
        status = uct_gda_ft_iface_qp_add(iface, path, p->qp->qpn, ep);
        if (status != UCS_OK) {
            return status;
        }
    }
    return UCS_OK;
}

void uct_gda_ft_ep_chan_rx_stop(uct_gda_ft_ep_t *ep)
{
    unsigned path;

    for (path = 0; path < GDA_FT_NUM_PATHS; ++path) {
        if (ep->chan_rx[path].qp != NULL) {
            /* its posted buffers complete as flushed */
            (void)gda_ft_hca_qp_modify(ep->chan_rx[path].qp,
                                       GDA_FT_HCA_QP_ERR, NULL);
        }
    }
}

void uct_gda_ft_ep_chan_rx_cleanup(uct_gda_ft_ep_t *ep)
{
    uct_gda_ft_iface_t *iface = uct_gda_ft_ep_iface(ep);
    uct_gda_ft_rxq_t *rxq;
    unsigned path;

    for (path = 0; path < GDA_FT_NUM_PATHS; ++path) {
        rxq = &ep->chan_rx[path];
        if (rxq->qp != NULL) {
            uct_gda_ft_iface_qp_del(iface, path, rxq->qp->qpn, ep);
        }
        if (rxq->desc != NULL) {
            uct_gda_ft_rxq_cleanup(iface, rxq);
        } else if (rxq->cq != NULL) {
            uct_gda_ft_iface_rx_cq_put(iface, rxq->cq);
            rxq->cq = NULL;
        }
    }
}

/* The exchange of channel directories is over, done or failed */
static void uct_gda_ft_chan_dir_end(uct_gda_ft_ep_t *ep)
{
    uct_gda_ft_ep_chans_t *c = ep->chans;

    if (c->dir.pending) {
        c->dir.pending = 0;
        --uct_gda_ft_ep_iface(ep)->dir_pending;
    }
}

/* Our channel directory, in our mailbox where it is pushed from: the QPNs
 * of the device channels, which never change (a re-arm keeps its QPs) */
static void uct_gda_ft_chan_dir_write(uct_gda_ft_ep_t *ep)
{
    uct_gda_ft_ep_chans_t *c = ep->chans;
    uct_gda_ft_chan_dir_info_t info;
    ucs_status_t status;
    unsigned i, path;

    if (c->num <= 1) {
        return;
    }
    info.mbox_va  = (uintptr_t)ep->mbox;
    info.num_chan = c->num - 1;
    for (i = 1; i < c->num; ++i) {
        for (path = 0; path < GDA_FT_NUM_PATHS; ++path) {
            info.chan[i - 1].init_qpn[path]   = c->init[i].path[path].qp->qpn;
            info.chan[i - 1].target_qpn[path] =
                    c->target[i].path[path].qp->qpn;
        }
    }
    status = uct_gda_ft_wire_chan_dir_pack(&info, ep->mbox->dir_out,
                                           sizeof(ep->mbox->dir_out));
    /* the QPNs are the HCA's, the count within the configuration's range */
    ucs_assert_always(status == UCS_OK);
}

void uct_gda_ft_ep_chans_destroy(uct_gda_ft_ep_t *ep)
{
    uct_gda_ft_ep_chans_t *c = ep->chans;

    if (c == NULL) {
        return;
    }
    uct_gda_ft_chan_dir_end(ep);
    ep->chans = NULL;
    c->ep     = NULL;   /* no guardian, no peer to ask: posters that go on
                           find out by their deadlines */
    if (c->refs > 1) {
        ucs_debug("ep %p destroyed while device endpoints use its "
                  "%u channels: they stay until released", ep, c->count);
    }
    uct_gda_ft_channels_put(c);
}

ucs_status_t uct_gda_ft_ep_chans_create(uct_gda_ft_ep_t *ep,
                                        uct_gda_ft_iface_t *iface)
{
    unsigned num             = iface->config.num_channels;
    gda_ft_hca_pd_t *pd[GDA_FT_NUM_PATHS];
    uct_gda_ft_ep_chans_t *c;
    uint8_t port[GDA_FT_NUM_PATHS];
    gda_ft_chan_host_params_t params, host_params, target_params;
    gda_ft_chan_host_params_t host_target_params, ctl_params;
    ucs_status_t status;
    unsigned i, path, local;

    c = ucs_calloc(1, sizeof(*c), "gda_ft_ep_chans");
    if (c == NULL) {
        ucs_error("ep %p: out of memory for its channels", ep);
        return UCS_ERR_NO_MEMORY;
    }
    c->refs   = 1;
    c->ep     = ep;
    ep->chans = c;

    for (path = 0; path < GDA_FT_NUM_PATHS; ++path) {
        local      = uct_gda_ft_chan_local_path(iface, path);
        pd[path]   = iface->path[local].dev->pd;
        port[path] = iface->path[local].port_num;
    }
    uct_gda_ft_chan_params(iface, iface->config.dev_channel_ring, &params);
    params.db_defer = iface->config.dev_db_defer;
    /* the host channel: CPU posters ring its doorbell, its ring holds the
     * largest UCT operation twice */
    uct_gda_ft_chan_params(iface, iface->config.hchan_ring, &host_params);
    host_params.mem.type = GDA_FT_HCA_MEM_HOST;
    /* an active message is one SEND of up to SEG_SIZE bytes */
    host_params.max_chunk = ucs_max(host_params.max_chunk,
                                    iface->config.seg_size);
    /* its operations' failure is the endpoint's: UCP fails it */
    host_params.no_path_final        = 1;
    /* Our ends of the peer's channels only respond: host memory
     * (DEVICE_CHANNEL_TARGETS). In mapped memory a target QP keeps the
     * software HCA's engine awake, and it answered a CPU poster's single
     * operation about 4 ms late on 2 cores (ucx_perftest put_bw -O 1, 38
     * us in host memory); side by side on an H100 machine the two placed
     * kernels' and threads' put_bw within noise. Our ends of the peer's
     * host channel take our control writes too: host memory whatever the
     * setting. */
    uct_gda_ft_chan_params(iface, UCT_GDA_FT_CHAN_TARGET_RING,
                           &target_params);
    target_params.mem.type = iface->config.dev_target_mapped ?
                             GDA_FT_HCA_MEM_HOST_MAPPED : GDA_FT_HCA_MEM_HOST;
    host_target_params          = target_params;
    host_target_params.mem.type = GDA_FT_HCA_MEM_HOST;
    status = uct_gda_ft_chan_rx_reserve(ep, iface, &host_target_params);
    if (status != UCS_OK) {
        goto err;
    }

    c->init   = ucs_calloc(num, sizeof(*c->init), "gda_ft_chan_init");
    c->target = ucs_calloc(num, sizeof(*c->target), "gda_ft_chan_target");
    c->ctl    = ucs_calloc(1, sizeof(*c->ctl), "gda_ft_chan_ctl");
    c->poster = uct_gda_ft_chan_alloc(num * sizeof(*c->poster), NULL);
    c->health = uct_gda_ft_chan_alloc(sizeof(*c->health), NULL);
    if ((c->init == NULL) || (c->target == NULL) || (c->ctl == NULL) ||
        (c->poster == NULL) || (c->health == NULL)) {
        ucs_error("ep %p: out of memory for %u channels", ep, num);
        status = UCS_ERR_NO_MEMORY;
        goto err;
    }

    /* the control QPs: host memory, a ring of the smallest size, no
     * receive queue, and no completion events: only the guardian, which
     * runs from progress, reads their completions, and a liveness probe
     * must not wake a sleeping worker */
    ctl_params             = target_params;
    ctl_params.mem.type    = GDA_FT_HCA_MEM_HOST;
    ctl_params.rq_wqe_cnt  = 0;
    ctl_params.event_armed = NULL;
    ctl_params.event_fd    = -1;
    status = gda_ft_chan_host_init(c->ctl, pd, port,
                                   UCT_GDA_FT_WIRE_CTL_SLOT, NULL,
                                   &ctl_params);
    if (status != UCS_OK) {
        goto err;
    }
    c->has_ctl = 1;

    for (i = 0; i < num; ++i) {
        status = gda_ft_chan_host_init(&c->init[i], pd, port, i, c->health,
                                       (i == 0) ? &host_params : &params);
        if (status != UCS_OK) {
            goto err;
        }
        status = gda_ft_chan_host_init(&c->target[i], pd, port, i, NULL,
                                       (i == 0) ? &host_target_params :
                                                  &target_params);
        if (status != UCS_OK) {
            gda_ft_chan_host_cleanup(&c->init[i]);
            goto err;
        }
        c->num = i + 1;
    }
    status = uct_gda_ft_chan_rx_init(ep, iface, &c->target[0]);
    if (status != UCS_OK) {
        goto err;
    }
    uct_gda_ft_chan_dir_write(ep);
    return UCS_OK;

err:
    /* nothing was received: the QPs were never connected */
    uct_gda_ft_ep_chan_rx_cleanup(ep);
    uct_gda_ft_ep_chans_destroy(ep);
    return status;
}


/* ---- connection ---------------------------------------------------------- */

void uct_gda_ft_ep_chans_pack(uct_gda_ft_ep_t *ep,
                              uct_gda_ft_ep_addr_info_t *info)
{
    uct_gda_ft_ep_chans_t *c = ep->chans;
    unsigned path;

    info->num_chan = c->num;
    for (path = 0; path < GDA_FT_NUM_PATHS; ++path) {
        info->ctl_qpn[path]         = c->ctl->path[path].qp->qpn;
        info->host.init_qpn[path]   = c->init[0].path[path].qp->qpn;
        info->host.target_qpn[path] = c->target[0].path[path].qp->qpn;
    }
}

/* Connects one of our QPs of `path` to the peer's QP dest_qpn */
static ucs_status_t uct_gda_ft_chan_connect_qp(uct_gda_ft_ep_t *ep,
                                               gda_ft_chan_host_t *ch,
                                               unsigned path,
                                               uint32_t dest_qpn)
{
    uint32_t qpn = ch->path[path].qp->qpn;
    gda_ft_hca_qp_attr_t attr;
    ucs_status_t status;

    uct_gda_ft_ep_qp_attr(ep, path, uct_gda_ft_chan_first_psn(dest_qpn, qpn),
                          uct_gda_ft_chan_first_psn(qpn, dest_qpn), &attr);
    attr.dest_qpn = dest_qpn;
    status        = gda_ft_chan_host_connect(ch, path, &attr);
    if (status != UCS_OK) {
        ucs_error("ep %p: failed to connect channel %u's %s QP 0x%x "
                  "to peer QP 0x%x: %s", ep, ch->chan.id,
                  (path == UCT_GDA_FT_PATH_PRIMARY) ? "primary" : "backup",
                  qpn, dest_qpn,
                  ucs_status_string(status));
    }
    return status;
}

/* Connects our channel i to the peer's, whose QPNs are `qpns`, on the
 * endpoint's paths */
static ucs_status_t
uct_gda_ft_chan_connect_one(uct_gda_ft_ep_t *ep, unsigned i,
                            const uct_gda_ft_chan_qpns_t *qpns)
{
    uct_gda_ft_iface_t *iface = uct_gda_ft_ep_iface(ep);
    uct_gda_ft_ep_chans_t *c  = ep->chans;
    ucs_status_t status;
    unsigned path;

    for (path = 0; path < c->num_paths; ++path) {
        status = uct_gda_ft_chan_connect_qp(ep, &c->init[i], path,
                                            qpns->target_qpn[path]);
        if (status != UCS_OK) {
            return status;
        }
        status = uct_gda_ft_chan_connect_qp(ep, &c->target[i], path,
                                            qpns->init_qpn[path]);
        if (status != UCS_OK) {
            return status;
        }
        if ((i == 0) && (ep->chan_rx[path].desc != NULL)) {
            /* after INIT, which takes the RQ's producer index: a message
             * that comes first waits for them (RNR) */
            status = uct_gda_ft_rxq_fill(iface, ep, &ep->chan_rx[path]);
            if (status != UCS_OK) {
                return status;
            }
        }
    }
    for (; path < GDA_FT_NUM_PATHS; ++path) {
        /* no backup HCA at one end: one path, without failover */
        gda_ft_chan_host_set_absent(&c->init[i], path);
        gda_ft_chan_host_set_absent(&c->target[i], path);
    }
    if (!iface->config.dev_failover) {
        /* DEVICE_FAILOVER=n: the backup is never taken, and an error of
         * the primary leaves the channel without a path */
        c->init[i].chan.path[UCT_GDA_FT_PATH_BACKUP].failed =
                GDA_FT_CHAN_WHY_RETRY;
    }
    /* the posters' copy, with the PSNs and MTU of the connection */
    c->poster[i] = c->init[i].chan;
    return UCS_OK;
}

/* Device channels that both ends have, so many are connected */
static unsigned uct_gda_ft_chan_both(const uct_gda_ft_ep_chans_t *c)
{
    return ucs_min(c->num, c->peer_num);
}

/* Writes one message of the exchange over control path `carrier` */
typedef ucs_status_t (*uct_gda_ft_dir_write_t)(uct_gda_ft_ep_t *ep,
                                               unsigned carrier,
                                               uct_gda_ft_ctl_mark_t *mark);

/*
 * A write of the directories' exchange over every control path, until one
 * landed: written over each path that takes it and has none of it on the
 * way (not written yet there, or lost with that path's control QP). A
 * path that died at the peer's end (a port down as it connects) delays
 * nothing: the other one carries it. 1 once one landed.
 */
static int uct_gda_ft_chan_dir_send(uct_gda_ft_ep_t *ep,
                                    uct_gda_ft_ctl_mark_t *marks,
                                    uct_gda_ft_dir_write_t write)
{
    uct_gda_ft_ep_chans_t *c = ep->chans;
    ucs_status_t status[GDA_FT_NUM_PATHS];
    unsigned path;

    for (path = 0; path < c->num_paths; ++path) {
        status[path] = uct_gda_ft_ctl_landed(ep, &marks[path]);
        if (status[path] == UCS_OK) {
            return 1;
        }
    }
    for (path = 0; path < c->num_paths; ++path) {
        if (status[path] == UCS_ERR_CANCELED) {
            /* no control path takes it now: the next pass writes it */
            (void)write(ep, path, &marks[path]);
        }
    }
    return 0;
}

/* Our directory, over control path `carrier` */
static ucs_status_t uct_gda_ft_chan_dir_push(uct_gda_ft_ep_t *ep,
                                             unsigned carrier,
                                             uct_gda_ft_ctl_mark_t *mark)
{
    uct_gda_ft_ep_chans_t *c = ep->chans;
    ucs_status_t status;

    status = uct_gda_ft_ctl_write_dir(ep, carrier,
                                      uct_gda_ft_wire_chan_dir_size(
                                              c->num - 1),
                                      c->dir.pushes + 1, mark);
    if (status == UCS_OK) {
        ++c->dir.pushes;
        ucs_trace("ep %p: channel directory pushed (%u) on the %s control "
                  "path", ep, c->dir.pushes, uct_gda_ft_path_name(carrier));
    }
    return status;
}

/* Our answer to the peer's directory, over control path `carrier` */
static ucs_status_t uct_gda_ft_chan_dir_answer(uct_gda_ft_ep_t *ep,
                                               unsigned carrier,
                                               uct_gda_ft_ctl_mark_t *mark)
{
    return uct_gda_ft_ctl_answer_dir(ep, carrier, ep->chans->dir.answer,
                                     mark);
}

/* The exchange failed: the device channels never come, and the endpoint
 * reports its error at the next progress */
static void uct_gda_ft_chan_dir_fail(uct_gda_ft_ep_t *ep, ucs_status_t status)
{
    uct_gda_ft_chan_dir_end(ep);
    ep->chans->dir.status = status;
    ep->flags            |= UCT_GDA_FT_EP_FLAG_FAILED;
    uct_gda_ft_iface_ep_ready(uct_gda_ft_ep_iface(ep), ep);
}

/* The peer's directory in our mailbox, as it came over control path
 * `carrier`: checked against its address, and our channels connected to
 * its own */
static ucs_status_t uct_gda_ft_chan_dir_take(uct_gda_ft_ep_t *ep,
                                             unsigned carrier)
{
    uct_gda_ft_ep_chans_t *c = ep->chans;
    uct_gda_ft_chan_dir_info_t info;
    const char *reason;
    ucs_status_t status;
    unsigned i;

    status = uct_gda_ft_wire_chan_dir_unpack(ep->mbox->dir_in[carrier],
                                             sizeof(ep->mbox->dir_in[carrier]),
                                             c->peer_num - 1, ep->peer_mbox,
                                             &info, &reason);
    if (status != UCS_OK) {
        ucs_error("ep %p: invalid peer channel directory: %s", ep, reason);
        return status;
    }
    for (i = 1; i < uct_gda_ft_chan_both(c); ++i) {
        status = uct_gda_ft_chan_connect_one(ep, i, &info.chan[i - 1]);
        if (status != UCS_OK) {
            return status;
        }
    }
    c->dir.connected = 1;
    return UCS_OK;
}

/*
 * The exchange of channel directories, while it goes on: the peer's taken
 * once (over whichever control path brought it first), our channels
 * connected to it, and answered; ours pushed until the peer answers. The
 * device channels are handed out once both ends connected them: then no
 * poster sends into a QP of the peer that is not ready to receive.
 */
static void uct_gda_ft_chan_dir_progress(uct_gda_ft_ep_t *ep)
{
    uct_gda_ft_ep_chans_t *c = ep->chans;
    ucs_status_t status      = UCS_OK;
    unsigned path, answered;
    uint32_t epoch;
    uint64_t word;

    /* the peer's, the first time it is seen */
    for (path = 0; !c->dir.taken && (path < c->num_paths); ++path) {
        epoch = uct_gda_ft_mbox_epoch(&ep->mbox->dir_epoch[path]);
        if (epoch != 0) {
            status        = uct_gda_ft_chan_dir_take(ep, path);
            c->dir.taken  = 1;
            c->dir.answer = UCT_GDA_FT_MBOX_ANSWER(epoch, status != UCS_OK,
                                                   0);
        }
    }
    answered = c->dir.taken &&
               uct_gda_ft_chan_dir_send(ep, c->dir.answered,
                                        uct_gda_ft_chan_dir_answer);
    if (status != UCS_OK) {
        /* its refusal written over the paths that took it now */
        uct_gda_ft_chan_dir_fail(ep, status);
        return;
    }

    /* ours, until the peer answers */
    for (path = 0; !c->dir.acked && (path < c->num_paths); ++path) {
        word = __atomic_load_n(&ep->mbox->dir_ack[path], __ATOMIC_ACQUIRE);
        if (UCT_GDA_FT_MBOX_ANSWER_EPOCH(word) == 0) {
            continue;
        }
        if (UCT_GDA_FT_MBOX_ANSWER_REFUSED(word)) {
            ucs_error("ep %p: the peer refused our channel directory", ep);
            uct_gda_ft_chan_dir_fail(ep, UCS_ERR_REJECTED);
            return;
        }
        c->dir.acked = 1;
    }
    if (!c->dir.acked) {
        (void)uct_gda_ft_chan_dir_send(ep, c->dir.push,
                                       uct_gda_ft_chan_dir_push);
    } else if (c->dir.connected && answered) {
        /* and our answer to the peer's directory landed: the peer may
         * wait for it without progressing us any more */
        c->count = uct_gda_ft_chan_both(c);
        uct_gda_ft_chan_dir_end(ep);
        ucs_debug("ep %p: %u device channels connected at both ends", ep,
                  c->count - 1);
    }
}

void uct_gda_ft_ep_chans_dir_progress(uct_gda_ft_ep_t *ep)
{
    uct_gda_ft_ep_chans_t *c = ep->chans;

    if ((c != NULL) && c->dir.pending &&
        !(ep->flags & UCT_GDA_FT_EP_FLAG_ERR_REPORTED) &&
        (c->peer.gone_ns == 0)) {
        uct_gda_ft_chan_dir_progress(ep);
    }
}

ucs_status_t uct_gda_ft_ep_chans_connect(uct_gda_ft_ep_t *ep,
                                         const uct_gda_ft_ep_addr_info_t *peer,
                                         unsigned num_paths)
{
    uct_gda_ft_iface_t *iface = uct_gda_ft_ep_iface(ep);
    uct_gda_ft_ep_chans_t *c  = ep->chans;
    ucs_status_t status;
    unsigned path;

    c->peer_num  = peer->num_chan;
    c->num_paths = num_paths;
    if (c->num != peer->num_chan) {
        ucs_diag("ep %p: %u channels here, %u at the peer: %u connected", ep,
                 c->num, peer->num_chan, uct_gda_ft_chan_both(c));
    }

    status = uct_gda_ft_chan_connect_one(ep, 0, &peer->host);
    if (status != UCS_OK) {
        return status;
    }
    c->count = 1;
    /* the peer's guardian took part in the connection: a switch soon
     * after it, before a probe or a question came, waits for its word as
     * a later one does */
    c->guardian_ns = gda_ft_dev_now_ns();

    /* the control QPs, on the paths the channels have */
    for (path = 0; path < GDA_FT_NUM_PATHS; ++path) {
        c->peer_ctl_qpn[path] = peer->ctl_qpn[path];
        if (path < num_paths) {
            status = uct_gda_ft_chan_connect_qp(ep, c->ctl, path,
                                                peer->ctl_qpn[path]);
            if (status != UCS_OK) {
                return status;
            }
        } else {
            gda_ft_chan_host_set_absent(c->ctl, path);
        }
        uct_gda_ft_ctl_reset(ep, path);
        ep->ctl[path].failed = (path >= num_paths);
    }

    /* the device channels, through the directories: ours is pushed now
     * (a peer not connected yet takes it from the HCA's retransmission,
     * or when our answer to its own follows it), the guardian does the
     * rest */
    if (uct_gda_ft_chan_both(c) > 1) {
        c->dir.pending = 1;
        ++iface->dir_pending;
        (void)uct_gda_ft_chan_dir_send(ep, c->dir.push,
                                       uct_gda_ft_chan_dir_push);
    }
    return UCS_OK;
}


void uct_gda_ft_ep_chans_progress(uct_gda_ft_ep_t *ep, uint64_t now)
{
    uct_gda_ft_ep_chans_t *c = ep->chans;
    uct_gda_ft_mbox_question_t question;
    unsigned i, path;
    uint32_t beat;
    int gone;

    /* An endpoint that UCT reported failed (its host channel lost every
     * path) rests: a re-arm would only ask nobody, and each resets a QP
     * (on the soft HCA, under its engine's lock; docs/ucx-conformance.md).
     * Of one whose peer is gone, only the host channel is guarded: UCT's
     * own endpoint ends on its own terms */
    if ((c == NULL) || (c->count == 0)) {
        return;
    }
    if (ep->flags & UCT_GDA_FT_EP_FLAG_ERR_REPORTED) {
        uct_gda_ft_peer_ep_failed(ep, now);
        return;
    }
    /* Our guardian did not run for longer than a silence is sat out (the
     * process computed, slept or waited elsewhere): it read no probe and
     * no question meanwhile, so the peer's guardian counts as active from
     * now, not as silent since before our pause */
    if ((c->guard_ns != 0) &&
        ((now - c->guard_ns) > gda_ft_timing_sit_out_ns(
                uct_gda_ft_ep_iface(ep)->config.deadline_ns))) {
        c->guardian_ns = gda_ft_timing_later(c->guardian_ns, now);
    }
    c->guard_ns = now;
    gone = uct_gda_ft_peer_check(ep, now);
    beat = uct_gda_ft_mbox_epoch(
            &ep->mbox->chan[UCT_GDA_FT_WIRE_CTL_SLOT].beat);
    if (beat != c->seen_beat) {
        c->seen_beat   = beat;
        c->guardian_ns = now;    /* the peer's guardian runs */
    }

    if (uct_gda_ft_mbox_read_question(
                &ep->mbox->chan[UCT_GDA_FT_WIRE_CTL_SLOT],
                c->q[UCT_GDA_FT_WIRE_CTL_SLOT].seen_epoch, &question)) {
        c->guardian_ns = now;
        uct_gda_ft_chan_answer_peer(ep, UCT_GDA_FT_WIRE_CTL_SLOT, &question);
    }
    for (path = 0; !gone && (path < c->num_paths); ++path) {
        uct_gda_ft_ctl_rearm(ep, path, now);
    }
    if (!gone) {
        uct_gda_ft_ep_chans_dir_progress(ep);
    }
    for (i = 0; i < (gone ? 1 : c->count); ++i) {
        if (uct_gda_ft_mbox_read_question(&ep->mbox->chan[i],
                                          c->q[i].seen_epoch, &question)) {
            c->guardian_ns = now;
            uct_gda_ft_chan_answer_peer(ep, i, &question);
        }
        gda_ft_chan_host_guard(&c->init[i], &uct_gda_ft_chan_peer_ops, ep,
                               now);
    }
}

size_t uct_gda_ft_ep_chans_format(uct_gda_ft_ep_t *ep, const char *prefix,
                                  char *buf, size_t max)
{
    uct_gda_ft_ep_chans_t *c = ep->chans;
    const gda_ft_chan_t *poster;
    char host_prefix[128];
    gda_ft_chan_query_t query;
    gda_ft_chan_t copy;
    size_t len = 0;
    unsigned i;
    int ret;

    snprintf(host_prefix, sizeof(host_prefix), "%shost ", prefix);
    for (i = 0; (c != NULL) && (i < c->count); ++i) {
        poster = &c->poster[i];
        if ((i >= 1) && (c->view != NULL) &&
            (c->read_view(&copy, &c->view[i - 1],
                          sizeof(copy)) == UCS_OK)) {
            poster = &copy;   /* the kernels' counters */
        }
        gda_ft_chan_host_query(&c->init[i], poster, &query);
        ret = gda_ft_chan_query_format(&query,
                                       (i == 0) ? host_prefix : prefix,
                                       buf + len,
                                       (len < max) ? max - len : 0);
        len += (ret > 0) ? ret : 0;
        if (len >= max) {
            break;
        }
    }
    return ucs_min(len, max);
}


/* ---- exported ------------------------------------------------------------ */

/* The channels of a connected HCA endpoint, or why there are none */
static ucs_status_t uct_gda_ft_chan_usable(uct_ep_h tl_ep,
                                           uct_gda_ft_ep_chans_t **chans_p)
{
    uct_gda_ft_ep_t *ep = uct_gda_ft_hca_ep(tl_ep);
    uct_gda_ft_ep_chans_t *c;

    if ((ep == NULL) || (ep->chans == NULL) || (ep->chans->num <= 1)) {
        return UCS_ERR_UNSUPPORTED;
    }
    c = ep->chans;
    if (!(ep->flags & UCT_GDA_FT_EP_FLAG_CONNECTED)) {
        return UCS_ERR_NOT_CONNECTED;
    }
    if (c->peer_num <= 1) {
        return UCS_ERR_UNSUPPORTED;    /* the peer has none */
    }
    if (c->dir.status != UCS_OK) {
        return c->dir.status;
    }
    if (c->count <= 1) {
        /* not yet: the directories are being exchanged, unless the
         * endpoint or its peer is gone */
        return ((ep->flags & UCT_GDA_FT_EP_FLAG_ERR_REPORTED) ||
                (c->peer.gone_ns != 0)) ? UCS_ERR_ENDPOINT_TIMEOUT :
                                          UCS_ERR_NOT_CONNECTED;
    }
    *chans_p = c;
    return UCS_OK;
}

ucs_status_t uct_gda_ft_ep_device_channels(uct_ep_h tl_ep,
                                           gda_ft_chan_t **chans_p,
                                           unsigned *count_p)
{
    uct_gda_ft_ep_chans_t *c;
    ucs_status_t status;

    status = uct_gda_ft_chan_usable(tl_ep, &c);
    if (status == UCS_OK) {
        *chans_p = uct_gda_ft_channels(c, count_p);
    }
    return status;
}

uint32_t uct_gda_ft_ep_device_flags(uct_ep_h tl_ep)
{
    uct_gda_ft_ep_t *ep = ucs_derived_of(tl_ep, uct_gda_ft_ep_t);

    return uct_gda_ft_ep_iface(ep)->config.atomic_host_order ?
           GDA_FT_DEV_EP_F_FETCH_HOST_ORDER : 0;
}

ucs_status_t uct_gda_ft_ep_channels_get(uct_ep_h tl_ep,
                                        uct_gda_ft_ep_chans_t **chans_p)
{
    ucs_status_t status = uct_gda_ft_chan_usable(tl_ep, chans_p);

    if (status == UCS_OK) {
        ++(*chans_p)->refs;
    }
    return status;
}

gda_ft_chan_t *uct_gda_ft_channels(uct_gda_ft_ep_chans_t *chans,
                                   unsigned *count_p)
{
    chans->handed_out = 1;
    *count_p          = chans->count - 1;
    return chans->poster + 1;
}

ucs_status_t uct_gda_ft_channels_query(uct_gda_ft_ep_chans_t *chans,
                                       unsigned id,
                                       const gda_ft_chan_t *poster,
                                       gda_ft_chan_query_t *query)
{
    unsigned index = 1 + id;

    if (index >= chans->count) {
        return UCS_ERR_INVALID_PARAM;
    }
    gda_ft_chan_host_query(&chans->init[index],
                           (poster != NULL) ? poster : &chans->poster[index],
                           query);
    return UCS_OK;
}

ucs_status_t uct_gda_ft_channels_path(const uct_gda_ft_ep_chans_t *chans,
                                      unsigned path, const char **device_p,
                                      unsigned *port_p)
{
    const gda_ft_chan_host_path_t *p;

    if ((chans->count <= 1) || (path >= chans->num_paths)) {
        return UCS_ERR_INVALID_PARAM;
    }
    p         = &chans->init[1].path[path];
    *device_p = p->pd->dev->attr.info.name;
    *port_p   = p->port;
    return UCS_OK;
}

/* Sets the view to `view` if it is `expect`; the counters command reads
 * it under the interface's eps_lock */
static void uct_gda_ft_channels_swap_view(uct_gda_ft_ep_chans_t *chans,
                                          const gda_ft_chan_t *expect,
                                          int any, const gda_ft_chan_t *view,
                                          ucs_status_t (*read)(void*,
                                                               const void*,
                                                               size_t))
{
    uct_gda_ft_iface_t *iface = (chans->ep != NULL) ?
                                uct_gda_ft_ep_iface(chans->ep) : NULL;

    if (iface != NULL) {
        pthread_mutex_lock(&iface->eps_lock);
    }
    if (any || (chans->view == expect)) {
        chans->view      = view;
        chans->read_view = read;
    }
    if (iface != NULL) {
        pthread_mutex_unlock(&iface->eps_lock);
    }
}

void uct_gda_ft_channels_set_view(uct_gda_ft_ep_chans_t *chans,
                                  const gda_ft_chan_t *view,
                                  ucs_status_t (*read)(void *dst,
                                                       const void *src,
                                                       size_t size))
{
    uct_gda_ft_channels_swap_view(chans, NULL, 1, view, read);
}

void uct_gda_ft_channels_drop_view(uct_gda_ft_ep_chans_t *chans,
                                   const gda_ft_chan_t *view)
{
    uct_gda_ft_channels_swap_view(chans, view, 0, NULL, NULL);
}

ucs_status_t uct_gda_ft_ep_query_channel(uct_ep_h tl_ep, unsigned id,
                                         const gda_ft_chan_t *poster,
                                         gda_ft_chan_query_t *query)
{
    uct_gda_ft_ep_chans_t *c;
    ucs_status_t status;

    status = uct_gda_ft_chan_usable(tl_ep, &c);
    return (status == UCS_OK) ?
           uct_gda_ft_channels_query(c, id, poster, query) : status;
}

gda_ft_hca_qp_t *uct_gda_ft_ep_control_qp(uct_ep_h tl_ep, unsigned path,
                                          int *usable_p)
{
    uct_gda_ft_ep_t *ep = uct_gda_ft_hca_ep(tl_ep);

    if ((ep == NULL) || !(ep->flags & UCT_GDA_FT_EP_FLAG_CONNECTED) ||
        (path >= GDA_FT_NUM_PATHS)) {
        return NULL;
    }
    uct_gda_ft_ctl_poll(ep, path);
    *usable_p = !ep->ctl[path].failed;
    return ep->chans->ctl->path[path].qp;
}

ucs_status_t uct_gda_ft_ep_query_host_channel(uct_ep_h tl_ep,
                                              gda_ft_chan_query_t *query)
{
    uct_gda_ft_ep_t *ep = uct_gda_ft_hca_ep(tl_ep);

    if ((ep == NULL) || (ep->hchan.chan == NULL)) {
        return UCS_ERR_UNSUPPORTED;
    }
    gda_ft_chan_host_query(&ep->chans->init[0], ep->hchan.chan, query);
    return UCS_OK;
}
