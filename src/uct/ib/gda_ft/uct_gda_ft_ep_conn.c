/*
 * gda_ft UCT transport: endpoint lifetime. Its address and the connection
 * of its channels to the peer's (wireup), the mailbox the peer writes, and
 * creation and destruction.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "uct_gda_ft_ep.inl"
#include "uct_gda_ft_am.h"
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

    info.mbox_va      = (uintptr_t)ep->mbox;
    info.mbox_rkey[0] = ep->mbox_memh->rkey[0];
    info.mbox_rkey[1] = ep->mbox_memh->rkey[1];
    uct_gda_ft_ep_chans_pack(ep, &info);
    return uct_gda_ft_wire_ep_addr_pack(&info, addr,
                                        UCT_GDA_FT_WIRE_EP_ADDR_MAX);
}

ucs_status_t uct_gda_ft_ep_connect_to_ep(uct_ep_h tl_ep,
                                         const uct_device_addr_t *dev_addr,
                                         const uct_ep_addr_t *ep_addr)
{
    uct_gda_ft_ep_t *ep       = ucs_derived_of(tl_ep, uct_gda_ft_ep_t);
    uct_gda_ft_iface_t *iface = uct_gda_ft_ep_iface(ep);
    uct_gda_ft_dev_addr_info_t dev_info;
    uct_gda_ft_ep_addr_info_t ep_info;
    const char *reason;
    ucs_status_t status;
    unsigned path, num_paths;

    status = uct_gda_ft_wire_dev_addr_unpack(dev_addr, iface->dev_addr_len,
                                             &dev_info, &reason);
    if (status != UCS_OK) {
        ucs_error("ep %p: invalid peer device address: %s", ep, reason);
        return status;
    }

    /* UCT passes no length: the address has one length, which the peer
     * packed into UCP's address */
    status = uct_gda_ft_wire_ep_addr_unpack(ep_addr,
                                            UCT_GDA_FT_WIRE_EP_ADDR_MAX,
                                            &ep_info, &reason);
    if (status != UCS_OK) {
        ucs_error("ep %p: invalid peer endpoint address: %s", ep, reason);
        return status;
    }

    if (ep->flags & UCT_GDA_FT_EP_FLAG_CONNECTED) {
        ucs_error("ep %p is already connected", ep);
        return UCS_ERR_ALREADY_EXISTS;
    }

    ep->peer_mbox         = ep_info.mbox_va;
    ep->peer_mbox_rkey[0] = ep_info.mbox_rkey[0];
    ep->peer_mbox_rkey[1] = ep_info.mbox_rkey[1];
    for (path = 0; path < GDA_FT_NUM_PATHS; ++path) {
        ep->peer[path].lid = dev_info.lid[path];
        memcpy(ep->peer[path].gid, dev_info.gid[path], GDA_FT_HCA_GID_LEN);
    }

    /* The backup path is connected now too (design §4) but carries no
     * traffic until the primary fails. Both ends need a backup HCA; else
     * the channels have the primary alone. */
    num_paths = (uct_gda_ft_iface_has_backup(iface) && dev_info.has_backup) ?
                GDA_FT_NUM_PATHS : 1;
    if (num_paths == 1) {
        ucs_diag("ep %p: no backup path (%s): a failure of the primary path "
                 "fails the endpoint", ep,
                 uct_gda_ft_iface_has_backup(iface) ?
                 "the peer has no backup HCA" : "no backup HCA here");
    }

    status = uct_gda_ft_ep_chans_connect(ep, &ep_info, num_paths);
    if (status != UCS_OK) {
        return status;
    }
    status = uct_gda_ft_hchan_connect(ep);
    if (status != UCS_OK) {
        return status;
    }

    ep->flags |= UCT_GDA_FT_EP_FLAG_CONNECTED;
    ucs_debug("ep %p connected: %u paths, %u channels here and %u at the "
              "peer, the device ones through their directories", ep,
              num_paths, ep->chans->num, ep->chans->peer_num);
    return UCS_OK;
}


/* ---- lifetime ------------------------------------------------------------ */

/* The mailbox the peer's guardian writes: registered on both paths */
static ucs_status_t uct_gda_ft_ep_mbox_alloc(uct_gda_ft_ep_t *ep,
                                             uct_gda_ft_iface_t *iface)
{
    uct_gda_ft_md_t *md = ucs_derived_of(iface->super.md, uct_gda_ft_md_t);
    ucs_status_t status;

    if (posix_memalign((void**)&ep->mbox, 4096,
                       sizeof(uct_gda_ft_mbox_t)) != 0) {
        ucs_error("ep %p: failed to allocate its mailbox", ep);
        ep->mbox = NULL;
        return UCS_ERR_NO_MEMORY;
    }
    memset(ep->mbox, 0, sizeof(uct_gda_ft_mbox_t));

    status = uct_gda_ft_md_reg(md, ep->mbox, sizeof(uct_gda_ft_mbox_t),
                               UCT_MD_MEM_ACCESS_ALL, &ep->mbox_memh);
    if (status != UCS_OK) {
        free(ep->mbox);
        ep->mbox = NULL;
    }
    return status;
}

static void uct_gda_ft_ep_mbox_free(uct_gda_ft_ep_t *ep,
                                    uct_gda_ft_iface_t *iface)
{
    uct_gda_ft_md_t *md = ucs_derived_of(iface->super.md, uct_gda_ft_md_t);

    if (ep->mbox_memh != NULL) {
        uct_gda_ft_md_dereg(md, ep->mbox_memh);
        ep->mbox_memh = NULL;
    }
    free(ep->mbox);
    ep->mbox = NULL;
}

UCS_CLASS_INIT_FUNC(uct_gda_ft_ep_t, const uct_ep_params_t *params)
{
    uct_gda_ft_iface_t *iface = ucs_derived_of(params->iface,
                                               uct_gda_ft_iface_t);
    ucs_status_t status;

    UCS_CLASS_CALL_SUPER_INIT(uct_base_ep_t, &iface->super);

    self->flags             = 0;
    self->unreported_status = UCS_OK;
    self->mbox              = NULL;
    self->mbox_memh         = NULL;
    self->peer_mbox         = 0;
    memset(self->peer, 0, sizeof(self->peer));
    memset(self->peer_mbox_rkey, 0, sizeof(self->peer_mbox_rkey));
    memset(self->ctl, 0, sizeof(self->ctl));
    ucs_arbiter_group_init(&self->arb_group);
    ucs_queue_head_init(&self->flush_q);
    memset(&self->am, 0, sizeof(self->am));
    memset(&self->hchan, 0, sizeof(self->hchan));
    memset(self->chan_rx, 0, sizeof(self->chan_rx));
    ucs_queue_head_init(&self->am.held);

    status = uct_gda_ft_ep_mbox_alloc(self, iface);
    if (status != UCS_OK) {
        goto err;
    }

    status = uct_gda_ft_ep_chans_create(self, iface);
    if (status != UCS_OK) {
        goto err_free_mbox;
    }

    pthread_mutex_lock(&iface->eps_lock);
    ucs_list_add_tail(&iface->eps, &self->list);
    pthread_mutex_unlock(&iface->eps_lock);
    ucs_debug("created ep %p: %u channels", self, self->chans->num);
    return UCS_OK;

err_free_mbox:
    uct_gda_ft_ep_mbox_free(self, iface);
err:
    return status;
}

static void uct_gda_ft_ep_pending_purge_warn_cb(uct_pending_req_t *req,
                                                void *arg)
{
    ucs_warn("ep %p: pending request %p was not purged", arg, req);
}

UCS_CLASS_CLEANUP_FUNC(uct_gda_ft_ep_t)
{
    uct_gda_ft_iface_t *iface = uct_gda_ft_ep_iface(self);
    uct_gda_ft_op_t *desc;
    unsigned path;

    uct_gda_ft_ep_pending_purge(&self->super.super,
                                uct_gda_ft_ep_pending_purge_warn_cb, self);

    if (self->flags & UCT_GDA_FT_EP_FLAG_READY) {
        ucs_list_del(&self->ready);
    }
    pthread_mutex_lock(&iface->eps_lock);
    ucs_list_del(&self->list);
    pthread_mutex_unlock(&iface->eps_lock);

    /* Receive completions of the other endpoints wait in the receive CQs;
     * ours are dropped, and our buffers, posted or held, go back */
    uct_gda_ft_ep_chan_rx_stop(self);
    for (path = 0; path < GDA_FT_NUM_PATHS; ++path) {
        if (iface->path[path].dev != NULL) {
            uct_gda_ft_iface_poll_rx(iface, path, UINT_MAX);
        }
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
     * run: what they would do (unpack a get) is for an endpoint that lives
     * on.
     */
    uct_gda_ft_hchan_cleanup(self);
    while (!ucs_queue_is_empty(&self->flush_q)) {
        uct_gda_ft_op_cancel(ucs_queue_pull_elem_non_empty(&self->flush_q,
                                                           uct_gda_ft_op_t,
                                                           queue));
    }

    uct_gda_ft_ep_chans_destroy(self);
    uct_gda_ft_ep_mbox_free(self, iface);
}

UCS_CLASS_DEFINE(uct_gda_ft_ep_t, uct_base_ep_t);
UCS_CLASS_DEFINE_NEW_FUNC(uct_gda_ft_ep_t, uct_ep_t, const uct_ep_params_t*);
UCS_CLASS_DEFINE_DELETE_FUNC(uct_gda_ft_ep_t, uct_ep_t);
