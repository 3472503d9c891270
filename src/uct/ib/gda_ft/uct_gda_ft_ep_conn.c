/*
 * gda_ft UCT transport: endpoint lifetime. Its address and the connection
 * of both paths to the peer's (wireup), the QPs with their rings, the
 * mailbox the peer writes, and creation and destruction.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "uct_gda_ft_ep.inl"
#include "uct_gda_ft_chan.h"

#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <ucs/sys/string.h>
#include <stdlib.h>
#include <string.h>


/* ---- connection ---------------------------------------------------------- */

ucs_status_t uct_gda_ft_ep_get_address(uct_ep_h tl_ep, uct_ep_addr_t *addr)
{
    uct_gda_ft_ep_t *ep = ucs_derived_of(tl_ep, uct_gda_ft_ep_t);
    uct_gda_ft_ep_addr_info_t info;

    info.has_backup = (ep->path[UCT_GDA_FT_PATH_BACKUP].qp != NULL);
    info.qpn[0]     = ep->path[UCT_GDA_FT_PATH_PRIMARY].qp->qpn;
    info.qpn[1]     = info.has_backup ?
                      ep->path[UCT_GDA_FT_PATH_BACKUP].qp->qpn : 0;
    info.mbox_va    = (ep->guard.mbox_memh != NULL) ?
                      (uintptr_t)ep->guard.mbox : 0;
    info.mbox_rkey[0] = (ep->guard.mbox_memh != NULL) ?
                        ep->guard.mbox_memh->rkey[0] : 0;
    info.mbox_rkey[1] = (ep->guard.mbox_memh != NULL) ?
                        ep->guard.mbox_memh->rkey[1] : 0;
    uct_gda_ft_ep_chans_pack(ep, &info);
    return uct_gda_ft_wire_ep_addr_pack(&info, addr,
                                        uct_gda_ft_wire_ep_addr_size(
                                                info.num_chan));
}

static ucs_status_t uct_gda_ft_ep_connect_path(uct_gda_ft_ep_t *ep,
                                               unsigned path)
{
    uct_gda_ft_ep_path_t *ep_path = &ep->path[path];
    gda_ft_hca_qp_attr_t attr;
    ucs_status_t status;

    uct_gda_ft_ep_qp_attr(ep, path, 0, 0, &attr);
    status = gda_ft_hca_qp_connect(ep_path->qp, &attr);
    if (status != UCS_OK) {
        ucs_error("gda_ft: ep %p: failed to connect the %s QP 0x%x to peer QP"
                  " 0x%x: %s", ep, uct_gda_ft_path_name(path),
                  ep_path->qp->qpn, ep_path->dest_qpn,
                  ucs_status_string(status));
    }
    return status;
}

/*
 * The datapath counts the PSNs of every operation (a failover asks the peer
 * which it executed): it needs the MTU the QPs really use, the same on both
 * paths. Without it a failover settles without the peer's word.
 */
static void uct_gda_ft_ep_learn_mtu(uct_gda_ft_ep_t *ep)
{
    gda_ft_hca_qp_query_attr_t attr;
    unsigned path, mtu = 0;

    for (path = 0; path < GDA_FT_NUM_PATHS; ++path) {
        if (ep->dev.path_failed[path]) {
            continue;   /* no backup */
        }
        if ((gda_ft_hca_qp_query(ep->path[path].qp, &attr) != UCS_OK) ||
            (attr.path_mtu == 0) || ((mtu != 0) && (attr.path_mtu != mtu))) {
            ucs_debug("gda_ft: ep %p: path MTUs unknown or different: "
                      "failovers settle without the peer", ep);
            mtu = 0;
            break;
        }
        mtu = attr.path_mtu;
    }
    ep->dev.mtu = mtu;
}

ucs_status_t uct_gda_ft_ep_connect_to_ep(uct_ep_h tl_ep,
                                         const uct_device_addr_t *dev_addr,
                                         const uct_ep_addr_t *ep_addr)
{
    uct_gda_ft_ep_t *ep = ucs_derived_of(tl_ep, uct_gda_ft_ep_t);
    uct_gda_ft_dev_addr_info_t dev_info;
    uct_gda_ft_ep_addr_info_t ep_info;
    const char *reason;
    ucs_status_t status;
    unsigned path;

    status = uct_gda_ft_wire_dev_addr_unpack(dev_addr,
                                             uct_gda_ft_ep_iface(ep)->
                                                     dev_addr_len,
                                             &dev_info, &reason);
    if (status != UCS_OK) {
        ucs_error("gda_ft: ep %p: invalid peer device address: %s", ep,
                  reason);
        return status;
    }

    /* UCT passes no length: the address is as long as its flags and
     * channel count say, which the peer packed into UCP's address */
    status = uct_gda_ft_wire_ep_addr_unpack(ep_addr,
                                            UCT_GDA_FT_WIRE_EP_ADDR_MAX,
                                            &ep_info, &reason);
    if (status != UCS_OK) {
        ucs_error("gda_ft: ep %p: invalid peer endpoint address: %s", ep,
                  reason);
        return status;
    }

    if (ep->flags & UCT_GDA_FT_EP_FLAG_CONNECTED) {
        ucs_error("gda_ft: ep %p is already connected", ep);
        return UCS_ERR_ALREADY_EXISTS;
    }

    ep->guard.peer_mbox         = ep_info.mbox_va;
    ep->guard.peer_mbox_rkey[0] = ep_info.mbox_rkey[0];
    ep->guard.peer_mbox_rkey[1] = ep_info.mbox_rkey[1];
    for (path = 0; path < GDA_FT_NUM_PATHS; ++path) {
        ep->path[path].dest_qpn = ep_info.qpn[path];
        ep->path[path].dest_lid = dev_info.lid[path];
        memcpy(ep->path[path].dest_gid, dev_info.gid[path],
               GDA_FT_HCA_GID_LEN);
    }

    status = uct_gda_ft_ep_connect_path(ep, UCT_GDA_FT_PATH_PRIMARY);
    if (status != UCS_OK) {
        return status;
    }

    /* The backup QP is brought to RTS now too (design §4) but carries no
     * traffic until the primary fails. Both ends need one. */
    if ((ep->path[UCT_GDA_FT_PATH_BACKUP].qp != NULL) &&
        dev_info.has_backup && ep_info.has_backup) {
        status = uct_gda_ft_ep_connect_path(ep, UCT_GDA_FT_PATH_BACKUP);
        if (status != UCS_OK) {
            return status;
        }
    } else {
        ep->dev.path_failed[UCT_GDA_FT_PATH_BACKUP] = 1;
        ucs_debug("gda_ft: ep %p: no backup path (local %s, peer %s)", ep,
                  (ep->path[UCT_GDA_FT_PATH_BACKUP].qp != NULL) ? "yes" :
                  "no", (dev_info.has_backup && ep_info.has_backup) ? "yes" :
                  "no");
    }

    if (ep->dev.path_failed[UCT_GDA_FT_PATH_BACKUP]) {
        ep_info.num_chan = 0;   /* a channel needs both paths */
    }
    status = uct_gda_ft_ep_chans_connect(ep, &ep_info);
    if (status != UCS_OK) {
        return status;
    }
    status = uct_gda_ft_hchan_connect(ep, ep_info.host_channel);
    if (status != UCS_OK) {
        return status;
    }

    uct_gda_ft_ep_learn_mtu(ep);
    ep->flags |= UCT_GDA_FT_EP_FLAG_CONNECTED;
    ucs_debug("gda_ft: ep %p connected: primary QP 0x%x -> 0x%x, backup QP "
              "0x%x -> 0x%x%s", ep,
              ep->path[UCT_GDA_FT_PATH_PRIMARY].qp->qpn,
              ep->path[UCT_GDA_FT_PATH_PRIMARY].dest_qpn,
              (ep->path[UCT_GDA_FT_PATH_BACKUP].qp != NULL) ?
              ep->path[UCT_GDA_FT_PATH_BACKUP].qp->qpn : 0,
              ep->path[UCT_GDA_FT_PATH_BACKUP].dest_qpn,
              ep->dev.path_failed[UCT_GDA_FT_PATH_BACKUP] ? " (unused)" : "");
    return UCS_OK;
}


/* ---- lifetime ------------------------------------------------------------ */

static void *uct_gda_ft_ep_alloc_ring(size_t size, const char *name)
{
    void *ptr = NULL;

    if (posix_memalign(&ptr, 4096, size) != 0) {
        ucs_error("gda_ft: failed to allocate %zu bytes for %s", size, name);
        return NULL;
    }
    memset(ptr, 0, size);
    return ptr;
}

static ucs_status_t uct_gda_ft_ep_create_qp(uct_gda_ft_ep_t *ep,
                                            uct_gda_ft_iface_t *iface,
                                            unsigned path)
{
    uct_gda_ft_iface_path_t *ipath = &iface->path[path];
    uct_gda_ft_ep_path_t *ep_path  = &ep->path[path];
    unsigned rx_len                = iface->config.rx_queue_len;
    gda_ft_hca_qp_init_attr_t init;
    uct_gda_ft_rx_cq_t *rx_cq;
    size_t rq_len;
    gda_ft_hca_qp_attr_t attr;
    ucs_status_t status;

    /* Every receive WQE may complete into the receive CQ of the QP */
    status = uct_gda_ft_iface_rx_cq_get(iface, path, &rx_cq);
    if (status != UCS_OK) {
        return status;
    }

    /* One work queue buffer, the RQ then the SQ, as a ConnectX reads a
     * QP's (mlx5 provider); freed with the receive side
     * (uct_gda_ft_ep_rx_cleanup), after the QP */
    rq_len           = (size_t)rx_len * GDA_FT_MLX5_DS_SIZE;
    ep_path->rq_buf  = uct_gda_ft_ep_alloc_ring(
            rq_len + (size_t)iface->config.sq_wqebbs * GDA_FT_MLX5_WQE_BB,
            "a work queue");
    ep_path->sq_buf  = (ep_path->rq_buf == NULL) ? NULL :
                       UCS_PTR_BYTE_OFFSET(ep_path->rq_buf, rq_len);
    ep_path->dbrec   = uct_gda_ft_ep_alloc_ring(64, "a doorbell record");
    if ((ep_path->rq_buf == NULL) || (ep_path->dbrec == NULL)) {
        status = UCS_ERR_NO_MEMORY;
        goto err_free;
    }

    memset(&init, 0, sizeof(init));
    init.send_cq      = ipath->cq;
    init.recv_cq      = rx_cq->cq;
    init.sq_buf       = ep_path->sq_buf;
    init.sq_wqebb_cnt = iface->config.sq_wqebbs;
    init.rq_buf       = ep_path->rq_buf;
    init.rq_wqe_cnt   = rx_len;
    init.rq_wqe_size  = GDA_FT_MLX5_DS_SIZE;   /* one data segment */
    init.dbrec        = ep_path->dbrec;
    init.ring_mem     = GDA_FT_HCA_MEM_HOST;
    init.port_num     = ipath->port_num;
    init.response_ns  = iface->config.deadline_ns;
    status = gda_ft_hca_qp_create(ipath->dev->pd, &init, &ep_path->qp);
    if (status != UCS_OK) {
        ucs_error("gda_ft: failed to create the %s QP on %s: %s",
                  uct_gda_ft_path_name(path),
                  ipath->dev->hca->attr.info.name, ucs_status_string(status));
        goto err_free;
    }

    memset(&attr, 0, sizeof(attr));
    attr.access = GDA_FT_HCA_ACCESS_ALL;
    status      = gda_ft_hca_qp_modify(ep_path->qp, GDA_FT_HCA_QP_INIT, &attr);
    if (status != UCS_OK) {
        goto err_destroy;
    }

    status = uct_gda_ft_iface_qp_add(iface, path, ep_path->qp->qpn, ep);
    if (status != UCS_OK) {
        goto err_destroy;
    }

    gda_ft_dev_sq_init(&ep->dev.sq[path], ep_path->sq_buf,
                       iface->config.sq_wqebbs, ep_path->qp->qpn,
                       ep_path->dbrec, ep_path->qp->uar,
                       ep_path->qp->wake_fd, ep_path->qp->wake_armed,
                       iface->config.max_inline);

    /* Receive buffers go up in INIT, before RTR: the first SEND finds
     * them (the QP takes the RQ producer index at RESET -> INIT) */
    status = uct_gda_ft_rxq_init(iface, &ep_path->rx, path, 0, ep_path->qp,
                                 ep_path->rq_buf, ep_path->dbrec, rx_cq);
    if (status != UCS_OK) {
        goto err_del;
    }
    status = uct_gda_ft_rxq_fill(iface, ep, &ep_path->rx);
    if (status != UCS_OK) {
        goto err_cleanup_rx;
    }
    return UCS_OK;

err_cleanup_rx:
    uct_gda_ft_rxq_cleanup(iface, &ep_path->rx); /* returns rx_cq's share */
    rx_cq = NULL;
err_del:
    uct_gda_ft_iface_qp_del(iface, path, ep_path->qp->qpn, ep);
err_destroy:
    gda_ft_hca_qp_destroy(ep_path->qp);
    ep_path->qp = NULL;
err_free:
    free(ep_path->dbrec);
    free(ep_path->rq_buf);
    ep_path->dbrec   = NULL;
    ep_path->rq_buf  = NULL;
    ep_path->sq_buf  = NULL;
    if (rx_cq != NULL) {
        uct_gda_ft_iface_rx_cq_put(iface, rx_cq);
    }
    return status;
}


static void uct_gda_ft_ep_destroy_qp(uct_gda_ft_ep_t *ep,
                                     uct_gda_ft_iface_t *iface,
                                     unsigned path)
{
    uct_gda_ft_ep_path_t *ep_path = &ep->path[path];

    if (ep_path->qp == NULL) {
        return;
    }

    uct_gda_ft_iface_qp_del(iface, path, ep_path->qp->qpn, ep);

    gda_ft_hca_qp_destroy(ep_path->qp);
    free(ep_path->dbrec);
    ep_path->qp     = NULL;
    ep_path->dbrec  = NULL;
    ep_path->sq_buf = NULL;
}

/* The failback mailbox: 64 bytes the peer writes, registered on both
 * paths */
static ucs_status_t uct_gda_ft_ep_mbox_alloc(uct_gda_ft_ep_t *ep,
                                             uct_gda_ft_iface_t *iface)
{
    uct_gda_ft_md_t *md = ucs_derived_of(iface->super.md, uct_gda_ft_md_t);
    ucs_status_t status;

    ep->guard.mbox = uct_gda_ft_ep_alloc_ring(sizeof(uct_gda_ft_mbox_t),
                                              "a failback mailbox");
    if (ep->guard.mbox == NULL) {
        return UCS_ERR_NO_MEMORY;
    }

    status = uct_gda_ft_md_reg(md, ep->guard.mbox, sizeof(uct_gda_ft_mbox_t),
                               UCT_MD_MEM_ACCESS_ALL, &ep->guard.mbox_memh);
    if (status != UCS_OK) {
        free(ep->guard.mbox);
        ep->guard.mbox = NULL;
    }
    return status;
}

static void uct_gda_ft_ep_mbox_free(uct_gda_ft_ep_t *ep,
                                    uct_gda_ft_iface_t *iface)
{
    uct_gda_ft_md_t *md = ucs_derived_of(iface->super.md, uct_gda_ft_md_t);

    if (ep->guard.mbox_memh != NULL) {
        uct_gda_ft_md_dereg(md, ep->guard.mbox_memh);
        ep->guard.mbox_memh = NULL;
    }
    free(ep->guard.mbox);
    ep->guard.mbox = NULL;
}

UCS_CLASS_INIT_FUNC(uct_gda_ft_ep_t, const uct_ep_params_t *params)
{
    uct_gda_ft_iface_t *iface = ucs_derived_of(params->iface,
                                               uct_gda_ft_iface_t);
    ucs_status_t status;
    unsigned path;

    UCS_CLASS_CALL_SUPER_INIT(uct_base_ep_t, &iface->super);

    self->flags             = 0;
    self->cancel_sn         = 0;
    self->unreported_status = UCS_OK;
    memset(self->path, 0, sizeof(self->path));
    memset(&self->reported, 0, sizeof(self->reported));
    memset(self->dev.sq, 0, sizeof(self->dev.sq));
    ucs_arbiter_group_init(&self->arb_group);
    ucs_queue_head_init(&self->flush_q);
    memset(&self->am, 0, sizeof(self->am));
    memset(&self->hchan, 0, sizeof(self->hchan));
    memset(self->chan_rx, 0, sizeof(self->chan_rx));
    memset(&self->fence, 0, sizeof(self->fence));
    ucs_queue_head_init(&self->am.held);

    /* the log, then the ring positions' map into it, for both paths */
    self->log = ucs_calloc(1, (iface->config.log_size * sizeof(*self->log)) +
                              (GDA_FT_NUM_PATHS * iface->config.sq_wqebbs *
                               sizeof(uint32_t)),
                           "gda_ft_op_log");
    if (self->log == NULL) {
        status = UCS_ERR_NO_MEMORY;
        goto err;
    }

    gda_ft_dev_ep_init(&self->dev, self->log, iface->config.log_size,
                       (uint32_t*)(self->log + iface->config.log_size),
                       iface->config.sq_wqebbs, iface->config.deadline_ns);
    if (iface->config.strict_fence || iface->config.resolve) {
        /* the guardian replays, after the fence (and the peer's word) */
        self->dev.flags |= GDA_FT_EP_F_DEFER_REPLAY;
    }

    memset(&self->guard, 0, sizeof(self->guard));
    self->guard.backoff_ns = iface->config.rearm_backoff_ns;
    if ((iface->config.failback || iface->config.resolve ||
         iface->config.num_channels) &&
        uct_gda_ft_iface_has_backup(iface)) {
        status = uct_gda_ft_ep_mbox_alloc(self, iface);
        if (status != UCS_OK) {
            goto err_free_log;
        }
    }

    for (path = 0; path < GDA_FT_NUM_PATHS; ++path) {
        if (iface->path[path].dev == NULL) {
            continue;
        }
        status = uct_gda_ft_ep_create_qp(self, iface, path);
        if (status != UCS_OK) {
            goto err_destroy_qps;
        }
    }

    if (self->path[UCT_GDA_FT_PATH_BACKUP].qp == NULL) {
        /* a failure of the primary is a failure of the endpoint */
        self->dev.path_failed[UCT_GDA_FT_PATH_BACKUP] = 1;
    }

    status = uct_gda_ft_ep_chans_create(self, iface);
    if (status != UCS_OK) {
        goto err_destroy_qps;
    }

    pthread_mutex_lock(&iface->eps_lock);
    ucs_list_add_tail(&iface->eps, &self->list);
    pthread_mutex_unlock(&iface->eps_lock);
    ucs_debug("gda_ft: created ep %p: primary QP 0x%x, backup QP 0x%x", self,
              self->path[UCT_GDA_FT_PATH_PRIMARY].qp->qpn,
              (self->path[UCT_GDA_FT_PATH_BACKUP].qp != NULL) ?
              self->path[UCT_GDA_FT_PATH_BACKUP].qp->qpn : 0);
    return UCS_OK;

err_destroy_qps:
    for (path = 0; path < GDA_FT_NUM_PATHS; ++path) {
        uct_gda_ft_ep_destroy_qp(self, iface, path);
    }
    for (path = 0; path < GDA_FT_NUM_PATHS; ++path) {
        /* nothing was received: the QPs were never connected */
        uct_gda_ft_ep_rx_cleanup(self, iface, path);
    }
    uct_gda_ft_ep_mbox_free(self, iface);
err_free_log:
    ucs_free(self->log);
err:
    return status;
}

static void uct_gda_ft_ep_pending_purge_warn_cb(uct_pending_req_t *req,
                                                void *arg)
{
    ucs_warn("gda_ft: ep %p: pending request %p was not purged", arg, req);
}

UCS_CLASS_CLEANUP_FUNC(uct_gda_ft_ep_t)
{
    uct_gda_ft_iface_t *iface = uct_gda_ft_ep_iface(self);
    uct_gda_ft_op_t *desc;
    gda_ft_dev_op_t *op;
    unsigned path;
    uint32_t idx;
    int drained;

    uct_gda_ft_ep_pending_purge(&self->super.super,
                                uct_gda_ft_ep_pending_purge_warn_cb, self);

    if (self->flags & UCT_GDA_FT_EP_FLAG_ACTIVE) {
        ucs_list_del(&self->active);
    }
    if (self->flags & UCT_GDA_FT_EP_FLAG_READY) {
        ucs_list_del(&self->ready);
    }
    pthread_mutex_lock(&iface->eps_lock);
    ucs_list_del(&self->list);
    pthread_mutex_unlock(&iface->eps_lock);

    /* The QPs stop first; then the CQs are drained, so that no completion
     * of theirs is left to be taken for one of a later QP with the same
     * number */
    for (path = 0; path < GDA_FT_NUM_PATHS; ++path) {
        uct_gda_ft_ep_destroy_qp(self, iface, path);
    }
    do {
        uct_gda_ft_iface_poll_cqs(iface, &drained);
    } while (!drained);

    /* Receive completions of the other endpoints wait in them; ours are
     * dropped, and our buffers, posted or held, go back */
    uct_gda_ft_ep_chan_rx_stop(self);
    for (path = 0; path < GDA_FT_NUM_PATHS; ++path) {
        uct_gda_ft_iface_poll_rx(iface, path, UINT_MAX);
        uct_gda_ft_ep_rx_cleanup(self, iface, path);
    }
    uct_gda_ft_ep_chan_rx_cleanup(self);
    while (!ucs_queue_is_empty(&self->am.held)) {
        desc = ucs_queue_pull_elem_non_empty(&self->am.held, uct_gda_ft_op_t,
                                             queue);
        ucs_mpool_put_inline(desc);
    }
    if (iface->am_dispatch_ep == self) {
        iface->am_dispatch_ep = NULL;   /* destroyed by its AM handler */
    }

    /*
     * Operations still in flight, and the flushes waiting for them (a
     * flush(CANCEL) of UCP's discard among them), complete as canceled, in
     * order, as UCT asks of a destroyed endpoint: UCP releases an endpoint
     * it discards only when that flush completes. Their handlers do not
     * run: what they would do (unpack a get, take a probe's answer) is for
     * an endpoint that lives on.
     */
    if (self->dev.log_head != self->dev.log_tail) {
        ucs_debug("gda_ft: ep %p destroyed with %u operations in flight",
                  self, self->dev.log_tail - self->dev.log_head);
    }
    for (idx = self->dev.log_head; idx != self->dev.log_tail; ++idx) {
        op = gda_ft_ep_op(&self->dev, idx);
        ucs_assert(iface->outstanding > 0);
        --iface->outstanding;
        uct_gda_ft_cookie_cancel(op->user);
    }
    uct_gda_ft_hchan_cleanup(self);
    while (!ucs_queue_is_empty(&self->flush_q)) {
        uct_gda_ft_op_cancel(ucs_queue_pull_elem_non_empty(&self->flush_q,
                                                           uct_gda_ft_op_t,
                                                           queue));
    }

    uct_gda_ft_ep_chans_destroy(self);
    uct_gda_ft_ep_mbox_free(self, iface);
    ucs_free(self->log);
}

UCS_CLASS_DEFINE(uct_gda_ft_ep_t, uct_base_ep_t);
UCS_CLASS_DEFINE_NEW_FUNC(uct_gda_ft_ep_t, uct_ep_t, const uct_ep_params_t*);
UCS_CLASS_DEFINE_DELETE_FUNC(uct_gda_ft_ep_t, uct_ep_t);
