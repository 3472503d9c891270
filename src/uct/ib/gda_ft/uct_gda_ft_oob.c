/*
 * gda_ft UCT transport: the out-of-band wireup channel's interface (see
 * uct_gda_ft_oob.h): its listener, progress over the accepted connections
 * (uct_gda_ft_oob_conn.c) and the endpoints (uct_gda_ft_oob_ep.c), its
 * addresses and the operations table. Byte layouts are in
 * uct_gda_ft_wire.h; threads, handlers and file descriptors in
 * uct_gda_ft_oob_types.h.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "uct_gda_ft_oob_conn.h"
#include "uct_gda_ft_oob_ep.h"
#include "uct_gda_ft_iface.h"
#include "uct_gda_ft_perf.h"

#include <gda_ft_uct_compat.h>
#include <uct/base/uct_worker.h>
#include <ucs/async/async.h>
#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <ucs/type/class.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>


int uct_gda_ft_oob_is_dev_name(const char *dev_name)
{
    const char *colon = strrchr(dev_name, ':');

    return (colon != NULL) && !strcmp(colon + 1, UCT_GDA_FT_OOB_DEV_SUFFIX);
}

ucs_status_t uct_gda_ft_oob_ipv4(uct_md_h tl_md, uint32_t *ipv4_be)
{
    uct_gda_ft_md_t *md = ucs_derived_of(tl_md, uct_gda_ft_md_t);
    gda_ft_hca_port_attr_t attr;
    ucs_status_t status;

    status = gda_ft_hca_port_query(md->dev[UCT_GDA_FT_PATH_PRIMARY]->hca, 1,
                                   &attr);
    if (status != UCS_OK) {
        return status;
    }
    return gda_ft_hca_gid_to_ipv4(attr.gid, ipv4_be) ? UCS_OK :
                                                      UCS_ERR_UNSUPPORTED;
}

void uct_gda_ft_oob_iface_stats(uct_iface_h tl_iface,
                                uct_gda_ft_oob_stats_t *stats)
{
    uct_gda_ft_oob_iface_t *iface = ucs_derived_of(tl_iface,
                                                   uct_gda_ft_oob_iface_t);
    ucs_async_context_t *async    = uct_gda_ft_oob_async(iface);

    UCS_ASYNC_BLOCK(async);
    *stats = iface->stats;
    UCS_ASYNC_UNBLOCK(async);
}



/* ---- progress ------------------------------------------------------------ */

/* The fds of destroyed endpoints, whose handlers are gone */
static void uct_gda_ft_oob_close_retired(uct_gda_ft_oob_iface_t *iface)
{
    unsigned i;

    for (i = 0; i < iface->num_retired; ++i) {
        close(iface->retired_fds[i]);
    }
    iface->num_retired = 0;
}

static unsigned uct_gda_ft_oob_iface_progress(uct_iface_h tl_iface)
{
    uct_gda_ft_oob_iface_t *iface = ucs_derived_of(tl_iface,
                                                   uct_gda_ft_oob_iface_t);
    ucs_async_context_t *async    = uct_gda_ft_oob_async(iface);
    uct_gda_ft_oob_conn_t *conn, *next;
    uct_gda_ft_oob_ep_t *ep, *tmp;
    UCS_LIST_HEAD(ended);
    unsigned count = 0;
    int reported;

    UCS_ASYNC_BLOCK(async);
    ucs_list_for_each_safe(conn, next, &iface->conns, list) {
        count += uct_gda_ft_oob_conn_progress(conn, 0);
        if (!conn->closed) {
            continue;
        }
        /* Every whole message ran above: nothing more will come. What is
         * left is part of one (a stranger's, or a peer killed while it
         * wrote). The connection goes now, not with the interface, so
         * that connections that come and go hold no descriptors. */
        if (conn->length > 0) {
            ucs_debug("oob: connection on fd %d ended %zu bytes into "
                      "a message; dropped", conn->fd, conn->length);
            ++iface->stats.truncated;
        }
        ucs_list_del(&conn->list);
        ucs_list_add_tail(&ended, &conn->list);
    }
    ucs_list_for_each_safe(ep, tmp, &iface->eps, list) {
        count += uct_gda_ft_oob_ep_tx_progress(iface, ep);
    }
    UCS_ASYNC_UNBLOCK(async);

    /* off the list, so that the async timer no longer sees them; their
     * handlers go, once a call in progress returns, and their fds, and
     * those of destroyed endpoints, once no event waits under their
     * numbers */
    if (!ucs_list_is_empty(&ended) || (iface->num_retired > 0)) {
        ucs_list_for_each(conn, &ended, list) {
            UCS_ASYNC_BLOCK(async);
            uct_gda_ft_oob_conn_unwatch(conn);
            UCS_ASYNC_UNBLOCK(async);
        }
        uct_gda_ft_oob_drain_missed(async);
        ucs_list_for_each_safe(conn, next, &ended, list) {
            UCS_ASYNC_BLOCK(async);
            uct_gda_ft_oob_conn_free(conn);
            UCS_ASYNC_UNBLOCK(async);
        }
        uct_gda_ft_oob_close_retired(iface);
    }

    /* Broken connections of our endpoints, once each; the handler may
     * destroy the endpoint: restart after every report */
    for (;;) {
        reported = 0;
        ucs_list_for_each(ep, &iface->eps, list) {
            if (ep->failed && !ep->reported) {
                ep->reported = 1;
                reported     = 1;
                uct_iface_handle_ep_err(&iface->super.super, &ep->super.super,
                                        UCS_ERR_CONNECTION_RESET);
                break;
            }
        }
        if (!reported) {
            return count;
        }
        ++count;
    }
}


/* ---- interface ----------------------------------------------------------- */

static ucs_status_t uct_gda_ft_oob_iface_query(uct_iface_h tl_iface,
                                               uct_iface_attr_t *attr)
{
    uct_gda_ft_oob_iface_t *iface = ucs_derived_of(tl_iface,
                                                   uct_gda_ft_oob_iface_t);

    uct_base_iface_query(&iface->super, attr);
    attr->cap.flags = UCT_IFACE_FLAG_CONNECT_TO_IFACE |
                      UCT_IFACE_FLAG_AM_BCOPY |
                      UCT_IFACE_FLAG_PENDING |
                      UCT_IFACE_FLAG_CB_SYNC |
                      UCT_IFACE_FLAG_CB_ASYNC |
                      UCT_IFACE_FLAG_ERRHANDLE_PEER_FAILURE |
                      UCT_IFACE_FLAG_EP_CHECK;
    attr->cap.am.max_bcopy = UCT_GDA_FT_OOB_MAX_PAYLOAD;
    attr->cap.am.max_iov   = 1;
    attr->device_addr_len  = sizeof(uct_gda_ft_wire_oob_dev_addr_t);
    attr->iface_addr_len   = sizeof(uint16_t);
    attr->ep_addr_len      = 0;

    /* A slow path on purpose (a TCP connection to the peer process): UCP
     * picks it only where nothing else connects to interfaces; estimates
     * the peer receives exactly (uct_gda_ft_perf.h) */
    attr->latency             = ucs_linear_func_make(
                                        UCT_GDA_FT_PERF_OOB_LATENCY, 0);
    attr->bandwidth.dedicated = 0;
    attr->bandwidth.shared    = UCT_GDA_FT_PERF_OOB_BANDWIDTH;
    attr->overhead            = UCT_GDA_FT_PERF_OOB_OVERHEAD;
    attr->priority            = 0;
    return UCS_OK;
}

static ucs_status_t
uct_gda_ft_oob_iface_get_device_address(uct_iface_h tl_iface,
                                        uct_device_addr_t *addr)
{
    uct_gda_ft_oob_iface_t *iface = ucs_derived_of(tl_iface,
                                                   uct_gda_ft_oob_iface_t);
    uint16_t port;

    return uct_gda_ft_wire_oob_addr_pack(iface->ipv4_be, iface->port_be, addr,
                                         sizeof(uct_gda_ft_wire_oob_dev_addr_t),
                                         &port, sizeof(port));
}

static ucs_status_t uct_gda_ft_oob_iface_get_address(uct_iface_h tl_iface,
                                                     uct_iface_addr_t *addr)
{
    uct_gda_ft_oob_iface_t *iface = ucs_derived_of(tl_iface,
                                                   uct_gda_ft_oob_iface_t);
    uct_gda_ft_wire_oob_dev_addr_t dev_addr;

    return uct_gda_ft_wire_oob_addr_pack(iface->ipv4_be, iface->port_be,
                                         &dev_addr, sizeof(dev_addr), addr,
                                         sizeof(uint16_t));
}

static int uct_gda_ft_oob_iface_is_reachable(const uct_iface_h tl_iface,
                                             const uct_device_addr_t *dev_addr,
                                             const uct_iface_addr_t *iface_addr)
{
    uint32_t ipv4;
    uint16_t port;

    /* UCT gives no lengths: the header decides before anything more is
     * read, and an HCA's device address fails it */
    return uct_gda_ft_wire_oob_addr_unpack(
                   dev_addr, sizeof(uct_gda_ft_wire_oob_dev_addr_t),
                   iface_addr, sizeof(port), &ipv4, &port, NULL) == UCS_OK;
}

/* Done when every endpoint's socket has taken everything; until then
 * progress writes, and the caller asks again */
static ucs_status_t uct_gda_ft_oob_iface_flush(uct_iface_h tl_iface,
                                               unsigned flags,
                                               uct_completion_t *comp)
{
    uct_gda_ft_oob_iface_t *iface = ucs_derived_of(tl_iface,
                                                   uct_gda_ft_oob_iface_t);
    ucs_async_context_t *async    = uct_gda_ft_oob_async(iface);
    ucs_status_t status           = UCS_OK;
    uct_gda_ft_oob_ep_t *ep;

    UCT_CHECK_PARAM(comp == NULL, "oob: iface flush with a "
                    "completion is not supported");

    UCS_ASYNC_BLOCK(async);
    ucs_list_for_each(ep, &iface->eps, list) {
        if (!ep->failed &&
            ((uct_gda_ft_oob_ep_unwritten(ep) > 0) ||
             !ucs_queue_is_empty(&ep->pending_q))) {
            status = UCS_INPROGRESS;
            break;
        }
    }
    UCS_ASYNC_UNBLOCK(async);

    if (status == UCS_OK) {
        UCT_TL_IFACE_STAT_FLUSH(&iface->super);
    } else {
        UCT_TL_IFACE_STAT_FLUSH_WAIT(&iface->super);
    }
    return status;
}

static uct_iface_ops_t uct_gda_ft_oob_iface_ops;

static uct_iface_internal_ops_t uct_gda_ft_oob_iface_internal_ops = {
    .iface_estimate_perf = uct_base_iface_estimate_perf,
    .iface_vfs_refresh   = (uct_iface_vfs_refresh_func_t)ucs_empty_function,
    .ep_query            = (uct_ep_query_func_t)
                           ucs_empty_function_return_unsupported,
    .ep_invalidate       = (uct_ep_invalidate_func_t)
                           ucs_empty_function_return_unsupported,
    GDA_FT_INTERNAL_OPS_SINCE_1_13
};

static ucs_status_t uct_gda_ft_oob_listen(uct_gda_ft_oob_iface_t *iface)
{
    struct sockaddr_in addr;
    socklen_t len = sizeof(addr);

    iface->listen_fd = socket(AF_INET,
                              SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (iface->listen_fd < 0) {
        ucs_error("oob: socket() failed: %m");
        return UCS_ERR_IO_ERROR;
    }

    memset(&addr, 0, sizeof(addr));
    addr.sin_family      = AF_INET;
    addr.sin_addr.s_addr = iface->ipv4_be;
    if ((bind(iface->listen_fd, (struct sockaddr*)&addr, sizeof(addr)) < 0) ||
        (listen(iface->listen_fd, SOMAXCONN) < 0) ||
        (getsockname(iface->listen_fd, (struct sockaddr*)&addr, &len) < 0)) {
        ucs_error("oob: cannot listen on %s: %m",
                  inet_ntoa(addr.sin_addr));
        close(iface->listen_fd);
        return UCS_ERR_IO_ERROR;
    }

    iface->port_be = addr.sin_port;
    return UCS_OK;
}

static UCS_CLASS_INIT_FUNC(uct_gda_ft_oob_iface_t, uct_md_h tl_md,
                           uct_worker_h worker,
                           const uct_iface_params_t *params,
                           const uct_iface_config_t *tl_config)
{
    const uct_gda_ft_iface_config_t *config =
            ucs_derived_of(tl_config, uct_gda_ft_iface_config_t);
    ucs_status_t status;

    status = uct_gda_ft_check_open_mode(params);
    if (status != UCS_OK) {
        return status;
    }

    status = uct_gda_ft_check_am_alignment(params,
                                           UCT_GDA_FT_OOB_MAX_PAYLOAD);
    if (status != UCS_OK) {
        return status;
    }

    UCS_CLASS_CALL_SUPER_INIT(
            uct_base_iface_t, &uct_gda_ft_oob_iface_ops,
            &uct_gda_ft_oob_iface_internal_ops, tl_md, worker, params,
            tl_config UCS_STATS_ARG(
                    (params->field_mask & UCT_IFACE_PARAM_FIELD_STATS_ROOT) ?
                            params->stats_root : NULL)
            UCS_STATS_ARG(params->mode.device.dev_name));

    ucs_list_head_init(&self->conns);
    ucs_list_head_init(&self->eps);
    self->retired_fds = NULL;
    self->num_retired = 0;
    self->timer_id    = -1;
    memset(&self->stats, 0, sizeof(self->stats));

    if ((config->oob_tx_queue < UCT_GDA_FT_OOB_MSG_MAX) ||
        (config->oob_tx_max_msgs == 0)) {
        ucs_error("oob: OOB_TX_QUEUE=%zu must hold a largest message "
                  "(%zu bytes) and OOB_TX_MAX_MSGS=%u at least one",
                  config->oob_tx_queue, UCT_GDA_FT_OOB_MSG_MAX,
                  config->oob_tx_max_msgs);
        return UCS_ERR_INVALID_PARAM;
    }
    self->config.tx_queue    = config->oob_tx_queue;
    self->config.tx_max_msgs = config->oob_tx_max_msgs;

    status = uct_gda_ft_oob_ipv4(tl_md, &self->ipv4_be);
    if (status != UCS_OK) {
        ucs_error("oob: device %s has no IPv4 address to listen on",
                  params->mode.device.dev_name);
        return status;
    }

    status = uct_gda_ft_oob_listen(self);
    if (status != UCS_OK) {
        return status;
    }

    status = uct_gda_ft_oob_watch(self, self->listen_fd, UCS_EVENT_SET_EVREAD,
                                  uct_gda_ft_oob_accept_event, self);
    if (status != UCS_OK) {
        goto err_close;
    }

    if (config->oob_async_tick > 0) {
        status = ucs_async_add_timer(uct_gda_ft_oob_async(self)->mode,
                                     config->oob_async_tick,
                                     uct_gda_ft_oob_async_timer, self,
                                     uct_gda_ft_oob_async(self),
                                     &self->timer_id);
        if (status != UCS_OK) {
            ucs_error("oob: cannot add the async timer: %s",
                      ucs_status_string(status));
            goto err_remove_listener;
        }
    }

    ucs_debug("oob: iface %p listens on %s:%u", self,
              inet_ntoa(*(struct in_addr*)&self->ipv4_be),
              ntohs(self->port_be));
    return UCS_OK;

err_remove_listener:
    ucs_async_remove_handler(self->listen_fd, 1);
err_close:
    close(self->listen_fd);
    return status;
}

static UCS_CLASS_CLEANUP_FUNC(uct_gda_ft_oob_iface_t)
{
    uct_gda_ft_oob_conn_t *conn, *tmp;

    /* the worker must not call our progress once we are gone */
    uct_base_iface_progress_disable(&self->super.super,
                                    UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);
    if (self->timer_id >= 0) {
        /* waits for a call in progress, as the fd handlers' removal */
        ucs_async_remove_handler(self->timer_id, 1);
    }
    ucs_async_remove_handler(self->listen_fd, 1);
    close(self->listen_fd);
    ucs_list_for_each_safe(conn, tmp, &self->conns, list) {
        uct_gda_ft_oob_conn_free(conn);
    }
    if ((self->stats.refused + self->stats.truncated) > 0) {
        ucs_diag("oob: of %" PRIu64 " connections accepted, %" PRIu64
                 " were refused (malformed) and %" PRIu64 " ended in the "
                 "middle of a message", self->stats.accepted,
                 self->stats.refused, self->stats.truncated);
    }
    uct_gda_ft_oob_close_retired(self);
    ucs_free(self->retired_fds);
    if (!ucs_list_is_empty(&self->eps)) {
        ucs_warn("oob: iface %p closed with endpoints open", self);
    }
}

UCS_CLASS_DEFINE(uct_gda_ft_oob_iface_t, uct_base_iface_t);
static UCS_CLASS_DEFINE_NEW_FUNC(uct_gda_ft_oob_iface_t, uct_iface_t,
                                 uct_md_h, uct_worker_h,
                                 const uct_iface_params_t*,
                                 const uct_iface_config_t*);
static UCS_CLASS_DEFINE_DELETE_FUNC(uct_gda_ft_oob_iface_t, uct_iface_t);

ucs_status_t uct_gda_ft_oob_iface_open(uct_md_h md, uct_worker_h worker,
                                       const uct_iface_params_t *params,
                                       const uct_iface_config_t *config,
                                       uct_iface_h *iface_p)
{
    return UCS_CLASS_NEW_FUNC_NAME(uct_gda_ft_oob_iface_t)(md, worker, params,
                                                           config, iface_p);
}

static uct_iface_ops_t uct_gda_ft_oob_iface_ops = {
    .ep_am_bcopy              = uct_gda_ft_oob_ep_am_bcopy,
    .ep_pending_add           = uct_gda_ft_oob_ep_pending_add,
    .ep_pending_purge         = uct_gda_ft_oob_ep_pending_purge,
    .ep_flush                 = uct_gda_ft_oob_ep_flush,
    .ep_fence                 = (uct_ep_fence_func_t)
                                ucs_empty_function_return_success,
    .ep_check                 = uct_gda_ft_oob_ep_check,
    .ep_create                = UCS_CLASS_NEW_FUNC_NAME(uct_gda_ft_oob_ep_t),
    .ep_destroy               = UCS_CLASS_DELETE_FUNC_NAME(uct_gda_ft_oob_ep_t),
    .iface_flush              = uct_gda_ft_oob_iface_flush,
    .iface_fence              = (uct_iface_fence_func_t)
                                ucs_empty_function_return_success,
    .iface_progress_enable    = uct_base_iface_progress_enable,
    .iface_progress_disable   = uct_base_iface_progress_disable,
    .iface_progress           = uct_gda_ft_oob_iface_progress,
    .iface_event_fd_get       = (uct_iface_event_fd_get_func_t)
                                ucs_empty_function_return_unsupported,
    .iface_event_arm          = (uct_iface_event_arm_func_t)
                                ucs_empty_function_return_unsupported,
    .iface_close              = UCS_CLASS_DELETE_FUNC_NAME(
                                        uct_gda_ft_oob_iface_t),
    .iface_query              = uct_gda_ft_oob_iface_query,
    .iface_get_device_address = uct_gda_ft_oob_iface_get_device_address,
    .iface_get_address        = uct_gda_ft_oob_iface_get_address,
    .iface_is_reachable       = uct_gda_ft_oob_iface_is_reachable
};
