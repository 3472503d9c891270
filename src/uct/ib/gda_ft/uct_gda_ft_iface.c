/*
 * gda_ft UCT transport: interface, transport registration (its settings:
 * uct_gda_ft_iface_config.c).
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "uct_gda_ft_iface_config.h"
#include "uct_gda_ft_ep.inl"
#include "uct_gda_ft_progress.h"
#include "uct_gda_ft_am.h"
#include "uct_gda_ft_ctl.h"
#include "uct_gda_ft_chan.h"
#include "uct_gda_ft_event.h"
#include "uct_gda_ft_oob.h"
#include "uct_gda_ft_perf.h"

#include <ucs/arch/bitops.h>
#include <ucs/arch/cpu.h>
#include <gda_ft_uct_compat.h>
#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <ucs/sys/string.h>
#include <ucs/sys/sys.h>
#include <ucs/time/time.h>
#include <libgen.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>




static uct_iface_internal_ops_t uct_gda_ft_iface_internal_ops = {
    .iface_estimate_perf = uct_base_iface_estimate_perf,
    .iface_vfs_refresh   = (uct_iface_vfs_refresh_func_t)ucs_empty_function,
    .ep_query            = (uct_ep_query_func_t)
                           ucs_empty_function_return_unsupported,
    .ep_invalidate       = (uct_ep_invalidate_func_t)
                           ucs_empty_function_return_unsupported,
    GDA_FT_INTERNAL_OPS_SINCE_1_13
};


/* ---- addresses and capabilities ------------------------------------------ */

static void uct_gda_ft_iface_dev_addr_info(uct_gda_ft_iface_t *iface,
                                           uct_gda_ft_dev_addr_info_t *info)
{
    unsigned path;

    memset(info, 0, sizeof(*info));
    info->has_backup = uct_gda_ft_iface_has_backup(iface);
    for (path = 0; path < GDA_FT_NUM_PATHS; ++path) {
        if (iface->path[path].dev == NULL) {
            continue;
        }
        memcpy(info->gid[path], iface->path[path].port_attr.gid,
               UCT_GDA_FT_WIRE_GID_LEN);
        info->lid[path] = iface->path[path].port_attr.lid;
    }
}

static ucs_status_t uct_gda_ft_iface_get_device_address(uct_iface_h tl_iface,
                                                        uct_device_addr_t *addr)
{
    uct_gda_ft_iface_t *iface = ucs_derived_of(tl_iface, uct_gda_ft_iface_t);
    uct_gda_ft_dev_addr_info_t info;

    uct_gda_ft_iface_dev_addr_info(iface, &info);
    return uct_gda_ft_wire_dev_addr_pack(&info, addr, iface->dev_addr_len);
}

static int uct_gda_ft_iface_is_reachable(const uct_iface_h tl_iface,
                                         const uct_device_addr_t *dev_addr,
                                         const uct_iface_addr_t *iface_addr)
{
    uct_gda_ft_iface_t *iface = ucs_derived_of(tl_iface, uct_gda_ft_iface_t);
    uct_gda_ft_dev_addr_info_t info;
    const char *reason;
    uint32_t ipv4;

    /* UCT passes no length: a peer on the same kind of fabric has an
     * address of our size, and a shorter form says so in its header */
    if (uct_gda_ft_wire_dev_addr_unpack(dev_addr, iface->dev_addr_len, &info,
                                        &reason) != UCS_OK) {
        ucs_debug("iface %p: peer unreachable: %s", iface, reason);
        return 0;
    }

    /* A software HCA speaks RoCEv2 over IPv4 only */
    if (uct_gda_ft_hca_has(iface->path[UCT_GDA_FT_PATH_PRIMARY].dev->hca,
                           GDA_FT_HCA_DEV_FLAG_IPV4_ONLY) &&
        !gda_ft_hca_gid_to_ipv4(info.gid[UCT_GDA_FT_PATH_PRIMARY], &ipv4)) {
        ucs_debug("iface %p: peer GID is not IPv4-mapped", iface);
        return 0;
    }

    return 1;
}

static ucs_status_t uct_gda_ft_iface_query(uct_iface_h tl_iface,
                                           uct_iface_attr_t *attr)
{
    uct_gda_ft_iface_t *iface = ucs_derived_of(tl_iface, uct_gda_ft_iface_t);
    uint64_t amo_post = UCS_BIT(UCT_ATOMIC_OP_ADD) |
                        UCS_BIT(UCT_ATOMIC_OP_AND) |
                        UCS_BIT(UCT_ATOMIC_OP_OR)  |
                        UCS_BIT(UCT_ATOMIC_OP_XOR);
    uint64_t amo_fetch = amo_post | UCS_BIT(UCT_ATOMIC_OP_SWAP) |
                         UCS_BIT(UCT_ATOMIC_OP_CSWAP);
    int soft = uct_gda_ft_hca_has(
                       iface->path[UCT_GDA_FT_PATH_PRIMARY].dev->hca,
                       GDA_FT_HCA_DEV_FLAG_CPU_ENGINE);

    uct_base_iface_query(&iface->super, attr);

    attr->cap.flags = UCT_IFACE_FLAG_CONNECT_TO_EP |
                      UCT_IFACE_FLAG_PUT_SHORT |
                      UCT_IFACE_FLAG_PUT_BCOPY |
                      UCT_IFACE_FLAG_PUT_ZCOPY |
                      UCT_IFACE_FLAG_GET_BCOPY |
                      UCT_IFACE_FLAG_GET_ZCOPY |
                      UCT_IFACE_FLAG_AM_SHORT |
                      UCT_IFACE_FLAG_AM_BCOPY |
                      UCT_IFACE_FLAG_ATOMIC_DEVICE |
                      UCT_IFACE_FLAG_PENDING |
                      UCT_IFACE_FLAG_CB_SYNC |
                      UCT_IFACE_FLAG_ERRHANDLE_PEER_FAILURE;
    /* ep_check probes an idle endpoint with a zero-length RDMA WRITE to
     * address 0 and R_Key 0 on its host channel, as UCX's rc_mlx5 does: no
     * HCA checks the R_Key of a zero-length access */
    attr->cap.flags |= UCT_IFACE_FLAG_EP_CHECK;
    if (uct_gda_ft_iface_event_enabled(iface)) {
        attr->cap.event_flags = UCT_IFACE_FLAG_EVENT_SEND_COMP |
                                UCT_IFACE_FLAG_EVENT_RECV |
                                UCT_IFACE_FLAG_EVENT_FD;
    }

    attr->cap.atomic32.op_flags  = amo_post;
    attr->cap.atomic32.fop_flags = amo_fetch;
    attr->cap.atomic64.op_flags  = amo_post;
    attr->cap.atomic64.fop_flags = amo_fetch;

    attr->cap.put.max_short       = UCT_GDA_FT_MAX_SHORT;
    attr->cap.put.max_bcopy       = iface->config.seg_size;
    attr->cap.put.min_zcopy       = 0;
    attr->cap.put.max_zcopy       = iface->config.max_msg;
    attr->cap.put.opt_zcopy_align = UCS_SYS_PCI_MAX_PAYLOAD;
    attr->cap.put.align_mtu       = iface->config.path_mtu;
    attr->cap.put.max_iov         = 1;

    attr->cap.get.max_short       = 0;
    attr->cap.get.max_bcopy       = iface->config.seg_size;
    attr->cap.get.min_zcopy       = 0;
    attr->cap.get.max_zcopy       = iface->config.max_msg;
    attr->cap.get.opt_zcopy_align = UCS_SYS_PCI_MAX_PAYLOAD;
    attr->cap.get.align_mtu       = iface->config.path_mtu;
    attr->cap.get.max_iov         = 1;

    /* Active messages: SEND with immediate into SEG_SIZE receive buffers;
     * am_short counts its 8-byte header */
    attr->cap.am.max_short       = iface->config.am_max_short;
    attr->cap.am.max_bcopy       = iface->config.seg_size;
    attr->cap.am.min_zcopy       = 0;
    attr->cap.am.max_zcopy       = 0;
    attr->cap.am.opt_zcopy_align = 1;
    attr->cap.am.align_mtu       = iface->config.path_mtu;
    attr->cap.am.max_hdr         = 0;
    attr->cap.am.max_iov         = UCT_GDA_FT_AM_MAX_IOV; /* am_short_iov */

    attr->device_addr_len = iface->dev_addr_len;
    attr->iface_addr_len  = 0;
    attr->ep_addr_len     = UCT_GDA_FT_WIRE_EP_ADDR_MAX;
    attr->max_conn_priv   = 0;

    /* Estimates the peer receives exactly: see uct_gda_ft_perf.h */
    if (soft) {
        attr->latency             = ucs_linear_func_make(
                                            UCT_GDA_FT_PERF_SOFT_LATENCY, 0);
        attr->bandwidth.dedicated = 0;
        attr->bandwidth.shared    = UCT_GDA_FT_PERF_SOFT_BANDWIDTH;
        attr->overhead            = UCT_GDA_FT_PERF_SOFT_OVERHEAD;
    } else {
        attr->latency             = ucs_linear_func_make(
                                            UCT_GDA_FT_PERF_HW_LATENCY, 0);
        attr->bandwidth.dedicated = 0;
        attr->bandwidth.shared    = UCT_GDA_FT_PERF_HW_BANDWIDTH;
        attr->overhead            = UCT_GDA_FT_PERF_HW_OVERHEAD;
    }
    attr->priority = 0;
    return UCS_OK;
}


static ucs_status_t uct_gda_ft_iface_flush(uct_iface_h tl_iface,
                                           unsigned flags,
                                           uct_completion_t *comp)
{
    uct_gda_ft_iface_t *iface = ucs_derived_of(tl_iface, uct_gda_ft_iface_t);
    uct_gda_ft_ep_t *ep;

    UCT_CHECK_PARAM(comp == NULL, "iface flush with a completion is "
                    "not supported");
    UCT_CHECK_PARAM(!(flags & UCT_FLUSH_FLAG_CANCEL),
                    "iface flush with CANCEL is not supported");

    /* requests waiting in pending queues are not flushed yet either */
    ucs_list_for_each(ep, &iface->eps, list) {
        if (!ucs_arbiter_group_is_empty(&ep->arb_group)) {
            UCT_TL_IFACE_STAT_FLUSH_WAIT(ucs_derived_of(tl_iface,
                                                        uct_base_iface_t));
            return UCS_INPROGRESS;
        }
    }

    if (ucs_list_is_empty(&iface->hchan_eps)) {
        UCT_TL_IFACE_STAT_FLUSH(ucs_derived_of(tl_iface, uct_base_iface_t));
        return UCS_OK;
    }

    UCT_TL_IFACE_STAT_FLUSH_WAIT(ucs_derived_of(tl_iface, uct_base_iface_t));
    return UCS_INPROGRESS;
}

static ucs_status_t uct_gda_ft_iface_fence(uct_iface_h tl_iface,
                                           unsigned flags)
{
    uct_gda_ft_iface_t *iface = ucs_derived_of(tl_iface, uct_gda_ft_iface_t);
    uct_gda_ft_ep_t *ep;

    ucs_list_for_each(ep, &iface->hchan_eps, hchan.list) {
        uct_gda_ft_ep_fence(&ep->super.super, 0);
    }
    UCT_TL_IFACE_STAT_FENCE(ucs_derived_of(tl_iface, uct_base_iface_t));
    return UCS_OK;
}


/* ---- registered descriptor pools ----------------------------------------- */

typedef struct uct_gda_ft_chunk_hdr {
    uct_gda_ft_memh_t *memh;
} UCS_V_ALIGNED(64) uct_gda_ft_chunk_hdr_t;

static uct_gda_ft_iface_t *uct_gda_ft_mp_iface(ucs_mpool_t *mp)
{
    return *(uct_gda_ft_iface_t**)ucs_mpool_priv(mp);
}

static ucs_status_t uct_gda_ft_mp_chunk_alloc(ucs_mpool_t *mp, size_t *size_p,
                                              void **chunk_p)
{
    uct_gda_ft_iface_t *iface = uct_gda_ft_mp_iface(mp);
    uct_gda_ft_md_t *md       = ucs_derived_of(iface->super.md,
                                               uct_gda_ft_md_t);
    uct_gda_ft_chunk_hdr_t *hdr;
    ucs_status_t status;
    size_t size;
    void *ptr;

    size = ucs_align_up_pow2(sizeof(*hdr) + *size_p, ucs_get_page_size());
    if (posix_memalign(&ptr, ucs_get_page_size(), size) != 0) {
        return UCS_ERR_NO_MEMORY;
    }

    hdr    = ptr;
    status = uct_gda_ft_md_reg(md, ptr, size, 0, &hdr->memh);
    if (status != UCS_OK) {
        free(ptr);
        return status;
    }

    *chunk_p = hdr + 1;
    *size_p  = size - sizeof(*hdr);
    return UCS_OK;
}

static void uct_gda_ft_mp_chunk_release(ucs_mpool_t *mp, void *chunk)
{
    uct_gda_ft_iface_t *iface   = uct_gda_ft_mp_iface(mp);
    uct_gda_ft_md_t *md         = ucs_derived_of(iface->super.md,
                                                 uct_gda_ft_md_t);
    uct_gda_ft_chunk_hdr_t *hdr = (uct_gda_ft_chunk_hdr_t*)chunk - 1;

    uct_gda_ft_md_dereg(md, hdr->memh);
    free(hdr);
}

static void uct_gda_ft_mp_obj_init(ucs_mpool_t *mp, void *obj, void *chunk)
{
    uct_gda_ft_chunk_hdr_t *hdr = (uct_gda_ft_chunk_hdr_t*)chunk - 1;
    uct_gda_ft_op_t *op         = obj;

    op->lkey[UCT_GDA_FT_PATH_PRIMARY] =
            hdr->memh->lkey[UCT_GDA_FT_PATH_PRIMARY];
    op->lkey[UCT_GDA_FT_PATH_BACKUP]  =
            hdr->memh->lkey[UCT_GDA_FT_PATH_BACKUP];
}

static ucs_mpool_ops_t uct_gda_ft_mp_ops = {
    .chunk_alloc   = uct_gda_ft_mp_chunk_alloc,
    .chunk_release = uct_gda_ft_mp_chunk_release,
    .obj_init      = uct_gda_ft_mp_obj_init,
    .obj_cleanup   = NULL,
    .obj_str       = NULL
};

static ucs_status_t uct_gda_ft_iface_mp_init(uct_gda_ft_iface_t *iface,
                                             ucs_mpool_t *mp,
                                             size_t payload, unsigned grow,
                                             int max, const char *name)
{
    ucs_status_t status;

    status = gda_ft_mpool_init(mp, sizeof(uct_gda_ft_iface_t*),
                               sizeof(uct_gda_ft_op_t) + payload,
                               UCS_SYS_CACHE_LINE_SIZE, grow,
                               (max < 0) ? UINT_MAX : (unsigned)max,
                               &uct_gda_ft_mp_ops, name);
    if (status != UCS_OK) {
        ucs_error("failed to create the %s pool: %s", name,
                  ucs_status_string(status));
        return status;
    }

    *(uct_gda_ft_iface_t**)ucs_mpool_priv(mp) = iface;
    return UCS_OK;
}


/* ---- interface ----------------------------------------------------------- */


static int uct_gda_ft_print_backup(const uct_gda_ft_iface_config_t *config)
{
    char exe[1024];

    if (config->print_backup != UCS_CONFIG_AUTO) {
        return config->print_backup == UCS_CONFIG_ON;
    }

    ucs_strncpy_zero(exe, ucs_get_exe(), sizeof(exe));
    return !strcmp(basename(exe), "ucx_info");
}

static ucs_status_t
uct_gda_ft_iface_open_path(uct_gda_ft_iface_t *iface, unsigned path,
                           uct_gda_ft_dev_t *dev, uint8_t port_num)
{
    uct_gda_ft_iface_path_t *ipath = &iface->path[path];
    ucs_status_t status;

    ipath->dev      = dev;
    ipath->port_num = port_num;

    status = gda_ft_hca_port_query(dev->hca, port_num, &ipath->port_attr);
    if (status != UCS_OK) {
        ucs_error("failed to query %s:%u: %s",
                  dev->hca->attr.info.name, port_num,
                  ucs_status_string(status));
        goto err;
    }
    if (ipath->port_attr.state != GDA_FT_HCA_PORT_ACTIVE) {
        ucs_diag("%s port %s:%u is down",
                 (path == UCT_GDA_FT_PATH_PRIMARY) ? "primary" : "backup",
                 dev->hca->attr.info.name, port_num);
    }

    /* Receive completions of our ends of the peers' host channels; the
     * first CQ opens now, so that a path that cannot have one fails here */
    ipath->rx_cqs       = NULL;
    ipath->num_rx_cqs   = 0;
    ipath->rx_poll_next = 0;
    status = uct_gda_ft_iface_rx_cq_open(iface, path);
    if (status != UCS_OK) {
        ucs_free(ipath->rx_cqs);
        ipath->rx_cqs = NULL;
        goto err;
    }
    return UCS_OK;

err:
    ipath->dev = NULL;
    return status;
}

static void uct_gda_ft_iface_close_path(uct_gda_ft_iface_t *iface,
                                        unsigned path)
{
    uct_gda_ft_iface_path_t *ipath = &iface->path[path];
    uct_gda_ft_rx_cq_t *rx_cq;

    if (ipath->dev == NULL) {
        return;
    }
    while (ipath->num_rx_cqs > 0) {
        rx_cq = ipath->rx_cqs[--ipath->num_rx_cqs];
        ucs_assertv(rx_cq->reserved == 0, "rx_cq %p reserved %u", rx_cq,
                    rx_cq->reserved);
        gda_ft_hca_cq_destroy(rx_cq->cq);
        free(rx_cq->buf);
        ucs_free(rx_cq);
    }
    ucs_free(ipath->rx_cqs);
    ipath->rx_cqs    = NULL;
    ipath->dev       = NULL;
}


static UCS_CLASS_INIT_FUNC(uct_gda_ft_iface_t, uct_md_h tl_md,
                           uct_worker_h worker,
                           const uct_iface_params_t *params,
                           const uct_iface_config_t *tl_config)
{
    uct_gda_ft_iface_config_t *config =
            ucs_derived_of(tl_config, uct_gda_ft_iface_config_t);
    uct_gda_ft_md_t *md = ucs_derived_of(tl_md, uct_gda_ft_md_t);
    const char *dev_name, *colon;
    uct_gda_ft_dev_addr_info_t addr_info;
    uct_gda_ft_md_port_t *mport;
    uint8_t port_num, backup_port;
    ucs_status_t status;
    char *end;
    unsigned long port;

    status = uct_gda_ft_check_open_mode(params);
    if (status != UCS_OK) {
        return status;
    }

    status = uct_gda_ft_check_am_alignment(params, config->seg_size);
    if (status != UCS_OK) {
        return status;
    }

    UCS_CLASS_CALL_SUPER_INIT(
            uct_base_iface_t, &uct_gda_ft_iface_ops,
            &uct_gda_ft_iface_internal_ops, tl_md, worker, params,
            tl_config UCS_STATS_ARG(
                    (params->field_mask & UCT_IFACE_PARAM_FIELD_STATS_ROOT) ?
                            params->stats_root : NULL)
            UCS_STATS_ARG(params->mode.device.dev_name));

    /* "<dev>:<port>", the device being the MD's primary */
    dev_name = params->mode.device.dev_name;
    colon    = strrchr(dev_name, ':');
    port     = (colon != NULL) ? strtoul(colon + 1, &end, 10) : 0;
    if ((colon == NULL) || (*end != '\0') || (port < 1) ||
        (port > md->num_ports) ||
        strncmp(dev_name, md->dev[UCT_GDA_FT_PATH_PRIMARY]->hca->attr.info.name,
                colon - dev_name) ||
        (md->dev[UCT_GDA_FT_PATH_PRIMARY]->hca->attr.info.name[colon -
                                                               dev_name] !=
         '\0')) {
        ucs_error("device '%s' does not belong to this memory domain",
                  dev_name);
        return UCS_ERR_NO_DEVICE;
    }
    port_num    = (uint8_t)port;
    mport       = &md->port[port_num - 1];
    backup_port = config->failover ? mport->backup_port : 0;

    memset(self->path, 0, sizeof(self->path));
    ucs_list_head_init(&self->eps);
    pthread_mutex_init(&self->eps_lock, NULL);
    self->last_chan_guard_ns = 0;
    self->dir_pending        = 0;
    ucs_list_head_init(&self->ready_eps);
    ucs_list_head_init(&self->hchan_eps);
    ucs_arbiter_init(&self->arbiter);
    kh_init_inplace(uct_gda_ft_qp, &self->qp_hash);

    status = uct_gda_ft_iface_init_config(self, config, md, backup_port);
    if (status != UCS_OK) {
        goto err_cleanup_hash;
    }

    /* before the paths' first receive CQs */
    status = uct_gda_ft_iface_event_init(
            self, md->dev[UCT_GDA_FT_PATH_PRIMARY]->hca,
            (backup_port != 0) ? md->dev[UCT_GDA_FT_PATH_BACKUP]->hca : NULL);
    if (status != UCS_OK) {
        goto err_cleanup_hash;
    }

    status = uct_gda_ft_iface_open_path(self, UCT_GDA_FT_PATH_PRIMARY,
                                        md->dev[UCT_GDA_FT_PATH_PRIMARY],
                                        port_num);
    if (status != UCS_OK) {
        goto err_cleanup_event;
    }

    self->config.path_mtu =
            self->path[UCT_GDA_FT_PATH_PRIMARY].port_attr.active_mtu;
    if (backup_port != 0) {
        status = uct_gda_ft_iface_open_path(self, UCT_GDA_FT_PATH_BACKUP,
                                            md->dev[UCT_GDA_FT_PATH_BACKUP],
                                            backup_port);
        if (status != UCS_OK) {
            goto err_close_primary;
        }
        self->config.path_mtu = ucs_min(
                self->config.path_mtu,
                self->path[UCT_GDA_FT_PATH_BACKUP].port_attr.active_mtu);
    }
    if ((self->config.path_mtu < 256) || (self->config.path_mtu > 4096)) {
        self->config.path_mtu = 1024;
    }

    uct_gda_ft_iface_dev_addr_info(self, &addr_info);
    self->dev_addr_len = uct_gda_ft_wire_dev_addr_size(&addr_info);
    if (self->dev_addr_len == 0) {
        ucs_error("%s: the GIDs of the primary and backup ports "
                  "fit no device address form (IPv4-mapped, or one subnet "
                  "prefix)", dev_name);
        status = UCS_ERR_UNSUPPORTED;
        goto err_close_backup;
    }

    status = uct_gda_ft_iface_mp_init(self, &self->tx_mp,
                                      self->config.seg_size,
                                      config->tx_mp.bufs_grow ?
                                      config->tx_mp.bufs_grow : 64,
                                      config->tx_mp.max_bufs,
                                      "gda_ft_tx_desc");
    if (status != UCS_OK) {
        goto err_close_backup;
    }

    status = uct_gda_ft_iface_mp_init(self, &self->op_mp,
                                      UCT_GDA_FT_OP_PAYLOAD, 256, -1,
                                      "gda_ft_op_desc");
    if (status != UCS_OK) {
        goto err_cleanup_tx_mp;
    }

    status = uct_gda_ft_iface_mp_init(self, &self->rx_mp,
                                      self->config.seg_size,
                                      config->rx_mp.bufs_grow ?
                                      config->rx_mp.bufs_grow : 256,
                                      config->rx_mp.max_bufs,
                                      "gda_ft_rx_desc");
    if (status != UCS_OK) {
        goto err_cleanup_op_mp;
    }
    self->am_dispatch_ep = NULL;

    if (!config->failover) {
        ucs_snprintf_zero(self->backup_desc, sizeof(self->backup_desc),
                          "%s (failover disabled by UCX_GDA_FT_FAILOVER=n: "
                          "one path, no failover)", mport->desc);
    } else if (backup_port == 0) {
        ucs_snprintf_zero(self->backup_desc, sizeof(self->backup_desc),
                          "%s (one path, no failover)", mport->desc);
    } else {
        ucs_strncpy_zero(self->backup_desc, mport->desc,
                         sizeof(self->backup_desc));
    }
    if (backup_port == 0) {
        ucs_diag("iface %p on %s: %s: a failure of the port fails its "
                 "endpoints", self, dev_name, self->backup_desc);
    }

    if (uct_gda_ft_print_backup(config)) {
        printf("#         Backup: %s\n", self->backup_desc);
        fflush(stdout);
    }

    uct_gda_ft_ctl_add(self, config->ctl_dir);

    ucs_debug("iface %p on %s: %s; %u channels per endpoint, host ring %u "
              "WQEBBs, deadline %.1f ms, QP timeout 2^%u*4.096us, retry %u",
              self, dev_name, self->backup_desc, self->config.num_channels,
              self->config.hchan_ring, self->config.deadline_ns / 1e6,
              self->config.timeout, self->config.retry_count);
    return UCS_OK;

err_cleanup_op_mp:
    ucs_mpool_cleanup(&self->op_mp, 1);
err_cleanup_tx_mp:
    ucs_mpool_cleanup(&self->tx_mp, 1);
err_close_backup:
    uct_gda_ft_iface_close_path(self, UCT_GDA_FT_PATH_BACKUP);
err_close_primary:
    uct_gda_ft_iface_close_path(self, UCT_GDA_FT_PATH_PRIMARY);
err_cleanup_event:
    uct_gda_ft_iface_event_cleanup(self);
err_cleanup_hash:
    kh_destroy_inplace(uct_gda_ft_qp, &self->qp_hash);
    ucs_arbiter_cleanup(&self->arbiter);
    pthread_mutex_destroy(&self->eps_lock);
    return status;
}

static UCS_CLASS_CLEANUP_FUNC(uct_gda_ft_iface_t)
{
    uct_base_iface_progress_disable(&self->super.super,
                                    UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);
    uct_gda_ft_ctl_remove(self);

    if (!ucs_list_is_empty(&self->eps)) {
        ucs_warn("iface %p closed with %zu endpoints", self,
                 ucs_list_length(&self->eps));
    }

    ucs_mpool_cleanup(&self->rx_mp, 1);
    ucs_mpool_cleanup(&self->op_mp, 1);
    ucs_mpool_cleanup(&self->tx_mp, 1);
    pthread_mutex_destroy(&self->eps_lock);
    uct_gda_ft_iface_close_path(self, UCT_GDA_FT_PATH_BACKUP);
    uct_gda_ft_iface_close_path(self, UCT_GDA_FT_PATH_PRIMARY);
    uct_gda_ft_iface_event_cleanup(self);
    kh_destroy_inplace(uct_gda_ft_qp, &self->qp_hash);
    ucs_arbiter_cleanup(&self->arbiter);
}

UCS_CLASS_DEFINE(uct_gda_ft_iface_t, uct_base_iface_t);

static UCS_CLASS_DEFINE_NEW_FUNC(uct_gda_ft_iface_t, uct_iface_t, uct_md_h,
                                 uct_worker_h, const uct_iface_params_t*,
                                 const uct_iface_config_t*);

static UCS_CLASS_DEFINE_DELETE_FUNC(uct_gda_ft_iface_t, uct_iface_t);


/* ---- transport ----------------------------------------------------------- */

static ucs_status_t
uct_gda_ft_query_tl_devices(uct_md_h tl_md,
                            uct_tl_device_resource_t **tl_devices_p,
                            unsigned *num_tl_devices_p)
{
    uct_gda_ft_md_t *md = ucs_derived_of(tl_md, uct_gda_ft_md_t);
    uct_tl_device_resource_t *devices;
    unsigned port, count;
    uint32_t ipv4;

    devices = ucs_calloc(md->num_ports + 1, sizeof(*devices),
                         "gda_ft_tl_devices");
    if (devices == NULL) {
        return UCS_ERR_NO_MEMORY;
    }

    for (port = 1; port <= md->num_ports; ++port) {
        ucs_snprintf_zero(devices[port - 1].name, sizeof(devices->name),
                          "%s:%u",
                          md->dev[UCT_GDA_FT_PATH_PRIMARY]->hca->attr.info.name,
                          port);
        devices[port - 1].type       = UCT_DEVICE_TYPE_NET;
        devices[port - 1].sys_device = UCS_SYS_DEVICE_ID_UNKNOWN;
    }

    /* The out-of-band wireup channel, where the HCA has an IPv4 address */
    count = md->num_ports;
    if (uct_gda_ft_oob_ipv4(tl_md, &ipv4) == UCS_OK) {
        ucs_snprintf_zero(devices[count].name, sizeof(devices->name), "%s:%s",
                          md->dev[UCT_GDA_FT_PATH_PRIMARY]->hca->attr.info.name,
                          UCT_GDA_FT_OOB_DEV_SUFFIX);
        devices[count].type       = UCT_DEVICE_TYPE_NET;
        devices[count].sys_device = UCS_SYS_DEVICE_ID_UNKNOWN;
        ++count;
    }

    *tl_devices_p     = devices;
    *num_tl_devices_p = count;
    return UCS_OK;
}

/* A device of the transport is an HCA port or the out-of-band channel */
static ucs_status_t uct_gda_ft_iface_open(uct_md_h md, uct_worker_h worker,
                                          const uct_iface_params_t *params,
                                          const uct_iface_config_t *config,
                                          uct_iface_h *iface_p)
{
    if ((params->field_mask & UCT_IFACE_PARAM_FIELD_OPEN_MODE) &&
        (params->open_mode & UCT_IFACE_OPEN_MODE_DEVICE) &&
        uct_gda_ft_oob_is_dev_name(params->mode.device.dev_name)) {
        return uct_gda_ft_oob_iface_open(md, worker, params, config, iface_p);
    }
    return UCS_CLASS_NEW_FUNC_NAME(uct_gda_ft_iface_t)(md, worker, params,
                                                       config, iface_p);
}

uct_iface_ops_t uct_gda_ft_iface_ops = {
    .ep_put_short             = uct_gda_ft_ep_put_short,
    .ep_am_short              = uct_gda_ft_ep_am_short,
    .ep_am_short_iov          = uct_gda_ft_ep_am_short_iov,
    .ep_am_bcopy              = uct_gda_ft_ep_am_bcopy,
    .ep_put_bcopy             = uct_gda_ft_ep_put_bcopy,
    .ep_put_zcopy             = uct_gda_ft_ep_put_zcopy,
    .ep_get_bcopy             = uct_gda_ft_ep_get_bcopy,
    .ep_get_zcopy             = uct_gda_ft_ep_get_zcopy,
    .ep_atomic_cswap64        = uct_gda_ft_ep_atomic_cswap64,
    .ep_atomic_cswap32        = uct_gda_ft_ep_atomic_cswap32,
    .ep_atomic32_post         = uct_gda_ft_ep_atomic32_post,
    .ep_atomic64_post         = uct_gda_ft_ep_atomic64_post,
    .ep_atomic32_fetch        = uct_gda_ft_ep_atomic32_fetch,
    .ep_atomic64_fetch        = uct_gda_ft_ep_atomic64_fetch,
    .ep_pending_add           = uct_gda_ft_ep_pending_add,
    .ep_pending_purge         = uct_gda_ft_ep_pending_purge,
    .ep_flush                 = uct_gda_ft_ep_flush,
    .ep_fence                 = uct_gda_ft_ep_fence,
    .ep_check                 = uct_gda_ft_ep_check,
    .ep_create                = UCS_CLASS_NEW_FUNC_NAME(uct_gda_ft_ep_t),
    .ep_destroy               = UCS_CLASS_DELETE_FUNC_NAME(uct_gda_ft_ep_t),
    .ep_get_address           = uct_gda_ft_ep_get_address,
    .ep_connect_to_ep         = uct_gda_ft_ep_connect_to_ep,
    .iface_flush              = uct_gda_ft_iface_flush,
    .iface_fence              = uct_gda_ft_iface_fence,
    .iface_progress_enable    = uct_base_iface_progress_enable,
    .iface_progress_disable   = uct_base_iface_progress_disable,
    .iface_progress           = uct_gda_ft_iface_progress,
    .iface_event_fd_get       = uct_gda_ft_iface_event_fd_get,
    .iface_event_arm          = uct_gda_ft_iface_event_arm,
    .iface_close              = UCS_CLASS_DELETE_FUNC_NAME(uct_gda_ft_iface_t),
    .iface_query              = uct_gda_ft_iface_query,
    .iface_get_device_address = uct_gda_ft_iface_get_device_address,
    .iface_get_address        = (uct_iface_get_address_func_t)
                                ucs_empty_function_return_success,
    .iface_is_reachable       = uct_gda_ft_iface_is_reachable
};

/* UCT_TL_DEFINE_ENTRY, with an open function that picks the device kind */
uct_tl_t UCT_TL_NAME(gda_ft) = {
    .name          = "gda_ft",
    .query_devices = uct_gda_ft_query_tl_devices,
    .iface_open    = uct_gda_ft_iface_open,
    .config = {
        .name      = "gda_ft transport",
        .prefix    = UCT_GDA_FT_CONFIG_PREFIX,
        .table     = uct_gda_ft_iface_config_table,
        .size      = sizeof(uct_gda_ft_iface_config_t),
    }
};

/* Registers the component and the transport when the library is loaded
 * (linked or LD_PRELOADed): UCX 1.13 loads only its own modules */
UCT_SINGLE_TL_INIT(&uct_gda_ft_component, gda_ft, ctor,,)
