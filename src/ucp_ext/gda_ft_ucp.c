/*
 * gda_ft for UCP programs (see gda_ft_ucp.h).
 *
 * The gda_ft lane of a UCP endpoint is found through UCP's internals (the
 * endpoint's configuration key and its lanes' resources), which the build
 * has from the UCX source tree it compiles against; the lane's UCT endpoint
 * gives its device channels, and the lane's memory domains give the keys
 * of each element on both HCAs.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "gda_ft_ucp.h"
#include "gda_ft_ucp_cuda.h"
#include "uct_gda_ft_chan.h"
#include "uct_gda_ft_md.h"

#include <ucp/core/ucp_context.h>
#include <ucp/core/ucp_ep.h>
#include <ucp/core/ucp_ep.inl>
#include <ucp/core/ucp_mm.h>
#include <ucp/core/ucp_rkey.h>
#include <ucp/core/ucp_worker.h>
#include <ucs/sys/string.h>
#include <ucp/wireup/wireup_ep.h>
#include <ucs/arch/bitops.h>
#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <ucs/sys/math.h>
#include <ucs/sys/sys.h>
#include <stdlib.h>
#include <string.h>

/* Host regions of one channel mapped into the GPU: both paths' rings, CQEs
 * and doorbell records, and its mailbox */
#define GDA_FT_UCP_CHAN_MAPS  (GDA_FT_NUM_PATHS * 3 + 1)

/* How long finding the lane progresses the worker while its device
 * channels are not connected yet */
#define GDA_FT_UCP_LANE_WAIT_NS  UCS_NSEC_PER_SEC

/* The posters' structures in one allocation: the header, then the array */
#define GDA_FT_UCP_HDR_SIZE   64

struct gda_ft_ucp_device_ep {
    gda_ft_ucp_place_t     place;
    uct_gda_ft_ep_chans_t *held;       /* the channels, held: they outlive
                                          a UCP endpoint that failed */
    unsigned               count;
    uint32_t               flags;      /* GDA_FT_DEV_EP_F_*, as `ep` has */
    void                  *mem;        /* endpoint, then channels */
    gda_ft_dev_endpoint_t *ep;         /* what posters take */
    gda_ft_chan_t         *chans;      /* the posters' channels */
    /* GDA_FT_UCP_PLACE_CUDA */
    void                  *health;
    void                  *slots[UCT_GDA_FT_WIRE_CHAN_MAX]
                                [GDA_FT_NUM_PATHS];
    void                  *outcomes[UCT_GDA_FT_WIRE_CHAN_MAX];
    void                  *mapped[UCT_GDA_FT_WIRE_CHAN_MAX *
                                  GDA_FT_UCP_CHAN_MAPS];
    unsigned               num_mapped;
};

struct gda_ft_ucp_mem_list {
    gda_ft_ucp_place_t     place;
    void                  *mem;        /* list, then elements */
};

/* The gda_ft lane of an endpoint */
typedef struct gda_ft_ucp_lane {
    uct_ep_h       uct_ep;
    uct_md_h       md;             /* local */
    ucp_md_index_t md_index;
    ucp_md_index_t dst_md_index;   /* the peer's */
    gda_ft_chan_t *chans;
    unsigned       count;
    uint32_t       flags;          /* GDA_FT_DEV_EP_F_* */
} gda_ft_ucp_lane_t;


/* ---- the gda_ft lane ----------------------------------------------------- */

static uct_ep_h gda_ft_ucp_lane_uct_ep(ucp_ep_h ep, ucp_lane_index_t lane)
{
    uct_ep_h uct_ep = ep->uct_eps[lane];

    /* a lane still being wired up holds UCP's proxy in front of it */
    if ((uct_ep != NULL) && ucp_wireup_ep_test(uct_ep)) {
        uct_ep = ucp_wireup_ep(uct_ep)->super.uct_ep;
    }
    return uct_ep;
}

/* The lane, or UCS_ERR_NOT_CONNECTED (quietly: not yet) */
static ucs_status_t gda_ft_ucp_lane_get(ucp_ep_h ep, gda_ft_ucp_lane_t *lane)
{
    ucp_context_h context = ep->worker->context;
    ucs_status_t status   = UCS_ERR_UNSUPPORTED;
    const ucp_ep_config_key_t *key;
    ucp_rsc_index_t rsc_index;
    ucp_lane_index_t i;
    uct_ep_h uct_ep;

    if (ep->cfg_index == UCP_WORKER_CFG_INDEX_NULL) {
        return UCS_ERR_NOT_CONNECTED;
    }

    key = &ucp_ep_config(ep)->key;
    for (i = 0; i < key->num_lanes; ++i) {
        rsc_index = key->lanes[i].rsc_index;
        if ((rsc_index == UCP_NULL_RESOURCE) ||
            strcmp(context->tl_rscs[rsc_index].tl_rsc.tl_name, "gda_ft")) {
            continue;
        }
        uct_ep = gda_ft_ucp_lane_uct_ep(ep, i);
        if (uct_ep == NULL) {
            continue;
        }
        /* the out-of-band device is a gda_ft resource without channels;
         * NOT_CONNECTED: not wired up yet, or its channel directories are
         * still being exchanged with the peer */
        status = uct_gda_ft_ep_device_channels(uct_ep, &lane->chans,
                                               &lane->count);
        if (status != UCS_OK) {
            if (status != UCS_ERR_UNSUPPORTED) {
                break;
            }
            continue;
        }
        lane->uct_ep       = uct_ep;
        lane->flags        = uct_gda_ft_ep_device_flags(uct_ep);
        lane->md_index     = context->tl_rscs[rsc_index].md_index;
        lane->md           = context->tl_mds[lane->md_index].md;
        lane->dst_md_index = key->lanes[i].dst_md_index;
        return UCS_OK;
    }
    return status;
}

/*
 * The gda_ft lane of an endpoint whose device channels are usable: while
 * they are not yet (wireup, then the exchange of the channels' QPNs with
 * the peer, which needs the peer to progress too), the worker progresses,
 * for up to GDA_FT_UCP_LANE_WAIT_NS; then UCS_ERR_NOT_CONNECTED, for the
 * caller to try again.
 */
static ucs_status_t gda_ft_ucp_find_lane(ucp_ep_h ep, gda_ft_ucp_lane_t *lane)
{
    uint64_t start = gda_ft_dev_now_ns();
    ucs_status_t status;

    for (;;) {
        status = gda_ft_ucp_lane_get(ep, lane);
        if ((status != UCS_ERR_NOT_CONNECTED) ||
            ((gda_ft_dev_now_ns() - start) > GDA_FT_UCP_LANE_WAIT_NS)) {
            break;
        }
        ucp_worker_progress(ep->worker);
    }

    if (status == UCS_ERR_NOT_CONNECTED) {
        ucs_debug("ep %p: its gda_ft device channels are not connected yet "
                  "(after %.1f s of progress)", ep,
                  (gda_ft_dev_now_ns() - start) / 1e9);
    } else if (status == UCS_ERR_UNSUPPORTED) {
        ucs_error("ep %p has no gda_ft lane with device channels "
                  "(UCX_TLS must include gda_ft, and "
                  "UCX_GDA_FT_DEVICE_CHANNELS must be 1 or more at both "
                  "ends)", ep);
    } else if (status != UCS_OK) {
        ucs_error("ep %p: the device channels of its gda_ft lane failed: %s",
                  ep, ucs_status_string(status));
    }
    return status;
}


/* ---- device endpoint ----------------------------------------------------- */

static void gda_ft_ucp_device_ep_free(gda_ft_ucp_device_ep_h dep)
{
    unsigned i, p;

    if ((dep->held != NULL) && (dep->place == GDA_FT_UCP_PLACE_CUDA)) {
        uct_gda_ft_channels_drop_view(dep->held, dep->chans);
    }
    while (dep->num_mapped > 0) {
        gda_ft_ucp_cuda_unmap(dep->mapped[--dep->num_mapped]);
    }
    if (dep->place == GDA_FT_UCP_PLACE_CUDA) {
        for (i = 0; i < UCT_GDA_FT_WIRE_CHAN_MAX; ++i) {
            for (p = 0; p < GDA_FT_NUM_PATHS; ++p) {
                gda_ft_ucp_cuda_free(dep->slots[i][p]);
            }
            gda_ft_ucp_cuda_free(dep->outcomes[i]);
        }
        gda_ft_ucp_cuda_free(dep->health);
        gda_ft_ucp_cuda_free(dep->mem);
    } else {
        free(dep->mem);
    }
    if (dep->held != NULL) {
        uct_gda_ft_channels_put(dep->held);
    }
    ucs_free(dep);
}

/* Maps a host region of the channels into the GPU; *ptr becomes the
 * address kernels use. Regions are whole pages (uct_gda_ft_chan.c). */
static ucs_status_t gda_ft_ucp_map(gda_ft_ucp_device_ep_h dep, void *ptr_p,
                                   size_t size)
{
    void **ptr = (void**)ptr_p;
    void *dev;
    ucs_status_t status;

    status = gda_ft_ucp_cuda_map(*ptr, ucs_align_up(size,
                                                    ucs_get_page_size()),
                                 &dev);
    if (status != UCS_OK) {
        return status;
    }
    dep->mapped[dep->num_mapped++] = *ptr;
    *ptr                           = dev;
    return UCS_OK;
}

/* The channel as kernels see it: rings, CQEs, doorbell records and the
 * mailbox mapped, slots, the outcome table and path health in GPU
 * memory */
static ucs_status_t gda_ft_ucp_chan_for_gpu(gda_ft_ucp_device_ep_h dep,
                                            unsigned id, gda_ft_chan_t *chan)
{
    gda_ft_chan_path_t *p;
    ucs_status_t status;
    size_t slots_size, size;
    ptrdiff_t uar_off;
    unsigned path;

    for (path = 0; path < GDA_FT_NUM_PATHS; ++path) {
        p = &chan->path[path];
        if (p->sq.wake_fd >= 0) {
            ucs_error("channels made for CPU threads "
                      "(UCX_GDA_FT_DEVICE_CHANNEL_RINGS=host) cannot serve "
                      "a kernel");
            return UCS_ERR_UNSUPPORTED;
        }
        uar_off = (const volatile uint8_t*)p->sq.uar -
                  (const volatile uint8_t*)p->sq.dbrec;
        status  = gda_ft_ucp_map(dep, &p->sq.buf,
                                 (size_t)chan->wqebb_cnt *
                                 GDA_FT_MLX5_WQE_BB);
        if (status == UCS_OK) {
            status = gda_ft_ucp_map(dep, &p->cqe, GDA_FT_MLX5_CQE_SIZE);
        }
        if (status == UCS_OK) {
            status = gda_ft_ucp_map(dep, &p->sq.dbrec, 64);
        }
        if (status != UCS_OK) {
            return status;
        }
        /* the doorbell lands beside the record (gda_ft_chan_host.c) */
        p->sq.uar  = (volatile uint64_t*)((volatile uint8_t*)p->sq.dbrec +
                                          uar_off);
        slots_size = (size_t)chan->wqebb_cnt * sizeof(gda_ft_chan_slot_t);
        status     = gda_ft_ucp_cuda_malloc(&dep->slots[id][path],
                                            slots_size);
        if (status == UCS_OK) {
            status = gda_ft_ucp_cuda_zero(dep->slots[id][path], slots_size);
        }
        if (status != UCS_OK) {
            return status;
        }
        p->slots = (gda_ft_chan_slot_t*)dep->slots[id][path];
    }

    size   = GDA_FT_CHAN_OUTCOME_CNT(chan->wqebb_cnt) *
             sizeof(*chan->outcomes);
    status = gda_ft_ucp_cuda_malloc(&dep->outcomes[id], size);
    if (status == UCS_OK) {
        status = gda_ft_ucp_cuda_zero(dep->outcomes[id], size);
    }
    if (status != UCS_OK) {
        return status;
    }
    chan->outcomes = (uint64_t*)dep->outcomes[id];

    chan->health = (gda_ft_chan_health_t*)dep->health;
    return gda_ft_ucp_map(dep, &chan->mbox, sizeof(gda_ft_chan_mbox_t));
}

static ucs_status_t gda_ft_ucp_device_ep_to_gpu(gda_ft_ucp_device_ep_h dep,
                                                const gda_ft_ucp_lane_t *lane)
{
    size_t size = GDA_FT_UCP_HDR_SIZE + lane->count * sizeof(gda_ft_chan_t);
    gda_ft_dev_endpoint_t host_ep;
    gda_ft_chan_t *host_chans;
    ucs_status_t status;
    unsigned i;

    status = gda_ft_ucp_cuda_load();
    if (status != UCS_OK) {
        return status;
    }

    host_chans = ucs_calloc(lane->count, sizeof(*host_chans),
                            "gda_ft_ucp_chans");
    if (host_chans == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    memcpy(host_chans, lane->chans, lane->count * sizeof(*host_chans));

    status = gda_ft_ucp_cuda_malloc(&dep->health,
                                    sizeof(gda_ft_chan_health_t));
    if (status == UCS_OK) {
        status = gda_ft_ucp_cuda_zero(dep->health,
                                      sizeof(gda_ft_chan_health_t));
    }
    for (i = 0; (status == UCS_OK) && (i < lane->count); ++i) {
        status = gda_ft_ucp_chan_for_gpu(dep, i, &host_chans[i]);
    }
    if (status == UCS_OK) {
        status = gda_ft_ucp_cuda_malloc(&dep->mem, size);
    }
    if (status == UCS_OK) {
        dep->ep    = (gda_ft_dev_endpoint_t*)dep->mem;
        dep->chans = (gda_ft_chan_t*)UCS_PTR_BYTE_OFFSET(dep->mem,
                                                         GDA_FT_UCP_HDR_SIZE);
        memset(&host_ep, 0, sizeof(host_ep));
        host_ep.version      = GDA_FT_DEV_VERSION;
        host_ep.num_channels = (uint16_t)lane->count;
        host_ep.flags        = lane->flags;
        host_ep.channels     = dep->chans;
        status = gda_ft_ucp_cuda_copy(dep->chans, host_chans,
                                      lane->count * sizeof(*host_chans));
    }
    if (status == UCS_OK) {
        status = gda_ft_ucp_cuda_copy(dep->ep, &host_ep, sizeof(host_ep));
    }
    ucs_free(host_chans);
    return status;
}

static ucs_status_t gda_ft_ucp_device_ep_on_host(gda_ft_ucp_device_ep_h dep,
                                                 const gda_ft_ucp_lane_t *lane)
{
    dep->mem = calloc(1, sizeof(gda_ft_dev_endpoint_t));
    if (dep->mem == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    dep->ep               = (gda_ft_dev_endpoint_t*)dep->mem;
    dep->chans            = lane->chans;   /* the transport's, in place */
    dep->ep->version      = GDA_FT_DEV_VERSION;
    dep->ep->num_channels = (uint16_t)lane->count;
    dep->ep->flags        = lane->flags;
    dep->ep->channels     = lane->chans;
    return UCS_OK;
}

ucs_status_t gda_ft_ucp_device_ep_create(ucp_ep_h ep, gda_ft_ucp_place_t place,
                                         gda_ft_ucp_device_ep_h *dev_ep_p)
{
    gda_ft_ucp_device_ep_h dep;
    gda_ft_ucp_lane_t lane;
    ucs_status_t status;

    if ((ep == NULL) || (dev_ep_p == NULL) ||
        ((place != GDA_FT_UCP_PLACE_HOST) &&
         (place != GDA_FT_UCP_PLACE_CUDA))) {
        ucs_error("device_ep_create: invalid arguments");
        return UCS_ERR_INVALID_PARAM;
    }

    status = gda_ft_ucp_find_lane(ep, &lane);
    if (status != UCS_OK) {
        return status;
    }

    dep = ucs_calloc(1, sizeof(*dep), "gda_ft_ucp_device_ep");
    if (dep == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    dep->place = place;
    dep->count = lane.count;
    dep->flags = lane.flags;
    status     = uct_gda_ft_ep_channels_get(lane.uct_ep, &dep->held);
    if (status == UCS_OK) {
        status = (place == GDA_FT_UCP_PLACE_CUDA) ?
                 gda_ft_ucp_device_ep_to_gpu(dep, &lane) :
                 gda_ft_ucp_device_ep_on_host(dep, &lane);
    }
    if (status != UCS_OK) {
        gda_ft_ucp_device_ep_free(dep);
        return status;
    }
    if (place == GDA_FT_UCP_PLACE_CUDA) {
        /* gda_ft_softctl counters shows what the kernels counted */
        uct_gda_ft_channels_set_view(dep->held, dep->chans,
                                     gda_ft_ucp_cuda_copy);
    }

    *dev_ep_p = dep;
    return UCS_OK;
}

const gda_ft_dev_endpoint_t *
gda_ft_ucp_device_ep(gda_ft_ucp_device_ep_h dev_ep)
{
    return dev_ep->ep;
}

ucs_status_t gda_ft_ucp_device_ep_attr(gda_ft_ucp_device_ep_h dev_ep,
                                       gda_ft_ucp_device_ep_attr_t *attr)
{
    const char *device;
    ucs_status_t status;
    unsigned path;

    memset(attr, 0, sizeof(*attr));
    attr->num_channels = dev_ep->count;
    for (path = 0; path < GDA_FT_NUM_PATHS; ++path) {
        status = uct_gda_ft_channels_path(dev_ep->held, path, &device,
                                          &attr->path[path].port);
        if (status != UCS_OK) {
            return status;
        }
        ucs_strncpy_zero(attr->path[path].device, device,
                         sizeof(attr->path[path].device));
    }
    return UCS_OK;
}

ucs_status_t gda_ft_ucp_device_ep_query(gda_ft_ucp_device_ep_h dev_ep,
                                        unsigned channel,
                                        gda_ft_chan_query_t *query)
{
    gda_ft_chan_t copy;
    ucs_status_t status;

    if (channel >= dev_ep->count) {
        return UCS_ERR_INVALID_PARAM;
    }
    if (dev_ep->place == GDA_FT_UCP_PLACE_HOST) {
        return uct_gda_ft_channels_query(dev_ep->held, channel,
                                         &dev_ep->chans[channel], query);
    }

    /* a snapshot from the GPU, beside the running kernels */
    status = gda_ft_ucp_cuda_copy(&copy, &dev_ep->chans[channel],
                                  sizeof(copy));
    if (status != UCS_OK) {
        return status;
    }
    return uct_gda_ft_channels_query(dev_ep->held, channel, &copy, query);
}

ucs_status_t gda_ft_ucp_device_ep_rejoin(gda_ft_ucp_device_ep_h gone,
                                         ucp_ep_h ep,
                                         gda_ft_ucp_place_t place,
                                         gda_ft_ucp_device_ep_h *dev_ep_p)
{
    uint32_t word = uct_gda_ft_peer_word(&gone->held->peer, NULL);
    ucs_status_t status;

    if (GDA_FT_PEER_STATE(word) != GDA_FT_PEER_GONE) {
        ucs_error("device endpoint %p: its peer is not gone (state "
                  "%u): nothing to rejoin", gone, GDA_FT_PEER_STATE(word));
        return UCS_ERR_INVALID_PARAM;
    }
    status = gda_ft_ucp_device_ep_create(ep, place, dev_ep_p);
    if (status != UCS_OK) {
        return status;
    }
    uct_gda_ft_peer_back((*dev_ep_p)->held, word);
    return UCS_OK;
}

unsigned gda_ft_ucp_device_ep_peer_state(gda_ft_ucp_device_ep_h dev_ep,
                                         uint64_t *gone_ns_p)
{
    return GDA_FT_PEER_STATE(uct_gda_ft_peer_word(&dev_ep->held->peer,
                                                  gone_ns_p));
}

uint64_t gda_ft_ucp_fetched(gda_ft_ucp_device_ep_h dev_ep, const void *result)
{
    gda_ft_dev_endpoint_t host_ep = {0};

    host_ep.flags = dev_ep->flags;
    return gda_ft_dev_fetched(&host_ep, result);
}

void gda_ft_ucp_device_ep_destroy(gda_ft_ucp_device_ep_h dev_ep)
{
    if (dev_ep != NULL) {
        gda_ft_ucp_device_ep_free(dev_ep);
    }
}


/* ---- memory lists -------------------------------------------------------- */

/* The local part of element i: keys and bounds from its registration */
static ucs_status_t gda_ft_ucp_elem_local(const gda_ft_ucp_lane_t *lane,
                                          unsigned i,
                                          const gda_ft_ucp_mem_elem_t *e,
                                          gda_ft_ucp_place_t place,
                                          gda_ft_dev_mem_elem_t *d)
{
    uintptr_t start = (uintptr_t)e->local_addr;
    ucs_status_t status;
    size_t reg_length;
    void *reg_address;
    uint32_t rkeys[2];

    if (e->memh == NULL) {
        if (e->local_addr != NULL) {
            ucs_error("element %u: a local address without its "
                      "memory handle", i);
            return UCS_ERR_INVALID_PARAM;
        }
        return UCS_OK;      /* no local part: signals */
    }

    if (!(e->memh->md_map & UCS_BIT(lane->md_index))) {
        ucs_error("element %u: memory handle %p is not registered "
                  "on gda_ft", i, e->memh);
        return UCS_ERR_INVALID_PARAM;
    }
    status = uct_gda_ft_md_mem_keys(lane->md, e->memh->uct[lane->md_index],
                                    d->lkey, rkeys, &reg_address,
                                    &reg_length);
    if (status != UCS_OK) {
        ucs_error("element %u: memory handle %p has no gda_ft "
                  "registration", i, e->memh);
        return status;
    }
    if ((start < (uintptr_t)reg_address) ||
        (e->length > reg_length) ||
        (start - (uintptr_t)reg_address > reg_length - e->length)) {
        ucs_error("element %u: [%p, +%zu) is outside its "
                  "registration [%p, +%zu)", i, e->local_addr, e->length,
                  reg_address, reg_length);
        return UCS_ERR_INVALID_PARAM;
    }
    if ((place == GDA_FT_UCP_PLACE_CUDA) && (e->length != 0) &&
        !uct_gda_ft_gpu_reaches(e->local_addr)) {
        ucs_error("element %u: %p is host memory that the GPU does "
                  "not map, and a kernel posts from it: register GPU "
                  "memory, or host memory mapped into the GPU "
                  "(cudaHostAllocMapped, cudaHostRegisterMapped)", i,
                  e->local_addr);
        return UCS_ERR_INVALID_PARAM;
    }
    d->laddr = start;
    return UCS_OK;
}

/* The remote part: the peer's keys of its gda_ft registration */
static ucs_status_t gda_ft_ucp_elem_remote(const gda_ft_ucp_lane_t *lane,
                                           unsigned i,
                                           const gda_ft_ucp_mem_elem_t *e,
                                           gda_ft_dev_mem_elem_t *d)
{
    ucp_rkey_h rkey = e->rkey;
    size_t rlength  = (e->remote_length != 0) ? e->remote_length :
                      e->length;
    unsigned index;
    uct_rkey_t tl_rkey;

    if (rkey == NULL) {
        ucs_error("element %u has no remote key", i);
        return UCS_ERR_INVALID_PARAM;
    }
    if (!(rkey->md_map & UCS_BIT(lane->dst_md_index))) {
        ucs_error("element %u: the remote key holds no gda_ft key "
                  "of the peer (memory it registered elsewhere)", i);
        return UCS_ERR_UNREACHABLE;
    }
    index = ucs_popcount(rkey->md_map & UCS_MASK(lane->dst_md_index));
    if (rkey->tl_rkey[index].cmpt != &uct_gda_ft_component) {
        ucs_error("element %u: the remote key's part for the "
                  "peer's gda_ft memory domain is foreign", i);
        return UCS_ERR_UNREACHABLE;
    }
    if (e->remote_addr + rlength < e->remote_addr) {
        ucs_error("element %u: remote range wraps around", i);
        return UCS_ERR_INVALID_PARAM;
    }

    tl_rkey     = rkey->tl_rkey[index].rkey.rkey;
    d->rkey[0]  = (uint32_t)tl_rkey;
    d->rkey[1]  = (uint32_t)(tl_rkey >> 32);
    d->raddr    = e->remote_addr;
    d->length   = e->length;
    d->rlength  = rlength;
    return UCS_OK;
}

ucs_status_t gda_ft_ucp_mem_list_create(ucp_ep_h ep,
                                        const gda_ft_ucp_mem_elem_t *elems,
                                        unsigned count,
                                        gda_ft_ucp_place_t place,
                                        gda_ft_ucp_mem_list_h *ml_p)
{
    size_t size = GDA_FT_UCP_HDR_SIZE + count * sizeof(gda_ft_dev_mem_elem_t);
    gda_ft_dev_mem_list_t *list;
    gda_ft_dev_mem_elem_t *elem;
    gda_ft_ucp_mem_list_h ml;
    gda_ft_ucp_lane_t lane;
    ucs_status_t status;
    void *host = NULL;
    unsigned i;

    if ((ep == NULL) || (ml_p == NULL) || ((elems == NULL) && count) ||
        ((place != GDA_FT_UCP_PLACE_HOST) &&
         (place != GDA_FT_UCP_PLACE_CUDA))) {
        ucs_error("mem_list_create: invalid arguments");
        return UCS_ERR_INVALID_PARAM;
    }

    status = gda_ft_ucp_find_lane(ep, &lane);
    if (status != UCS_OK) {
        return status;
    }

    /* every element is checked before anything is kept */
    host = calloc(1, size);
    if (host == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    list = (gda_ft_dev_mem_list_t*)host;
    elem = (gda_ft_dev_mem_elem_t*)UCS_PTR_BYTE_OFFSET(host,
                                                       GDA_FT_UCP_HDR_SIZE);
    for (i = 0; i < count; ++i) {
        status = gda_ft_ucp_elem_local(&lane, i, &elems[i], place, &elem[i]);
        if (status == UCS_OK) {
            status = gda_ft_ucp_elem_remote(&lane, i, &elems[i], &elem[i]);
        }
        if (status != UCS_OK) {
            goto err_free_host;
        }
    }

    ml = ucs_calloc(1, sizeof(*ml), "gda_ft_ucp_mem_list");
    if (ml == NULL) {
        status = UCS_ERR_NO_MEMORY;
        goto err_free_host;
    }
    ml->place = place;
    if (place == GDA_FT_UCP_PLACE_HOST) {
        ml->mem = host;
        host    = NULL;
    } else {
        status = gda_ft_ucp_cuda_load();
        if (status == UCS_OK) {
            status = gda_ft_ucp_cuda_malloc(&ml->mem, size);
        }
        if (status != UCS_OK) {
            goto err_free_ml;
        }
    }

    list->version = GDA_FT_DEV_VERSION;
    list->count   = count;
    list->elems   = (gda_ft_dev_mem_elem_t*)UCS_PTR_BYTE_OFFSET(
                            ml->mem, GDA_FT_UCP_HDR_SIZE);
    if (host != NULL) {
        status = gda_ft_ucp_cuda_copy(ml->mem, host, size);
        if (status != UCS_OK) {
            goto err_free_ml;
        }
        free(host);
    }
    *ml_p = ml;
    return UCS_OK;

err_free_ml:
    gda_ft_ucp_mem_list_destroy(ml);
err_free_host:
    free(host);
    return status;
}

const gda_ft_dev_mem_list_t *gda_ft_ucp_mem_list(gda_ft_ucp_mem_list_h ml)
{
    return (const gda_ft_dev_mem_list_t*)ml->mem;
}

void gda_ft_ucp_mem_list_destroy(gda_ft_ucp_mem_list_h ml)
{
    if (ml == NULL) {
        return;
    }
    if (ml->place == GDA_FT_UCP_PLACE_CUDA) {
        gda_ft_ucp_cuda_free(ml->mem);
    } else {
        free(ml->mem);
    }
    ucs_free(ml);
}


/* ---- signal memory ------------------------------------------------------- */

ucs_status_t gda_ft_ucp_signal_alloc(ucp_context_h context, size_t length,
                                     gda_ft_ucp_place_t place,
                                     gda_ft_ucp_signal_mem_t *sig)
{
    size_t size = ucs_align_up(length, ucs_get_page_size());
    ucp_mem_map_params_t params;
    ucs_status_t status;

    if ((context == NULL) || (sig == NULL) || (length == 0) ||
        ((place != GDA_FT_UCP_PLACE_HOST) &&
         (place != GDA_FT_UCP_PLACE_CUDA))) {
        ucs_error("signal_alloc: invalid arguments");
        return UCS_ERR_INVALID_PARAM;
    }

    memset(sig, 0, sizeof(*sig));
    sig->length = length;
    sig->place  = place;
    if (place == GDA_FT_UCP_PLACE_HOST) {
        if (posix_memalign(&sig->address, ucs_get_page_size(), size) != 0) {
            return UCS_ERR_NO_MEMORY;
        }
        memset(sig->address, 0, size);
    } else {
        status = gda_ft_ucp_cuda_load();
        if (status == UCS_OK) {
            status = gda_ft_ucp_cuda_malloc(&sig->address, size);
        }
        if (status == UCS_OK) {
            status = gda_ft_ucp_cuda_zero(sig->address, size);
        }
        if (status != UCS_OK) {
            gda_ft_ucp_signal_free(context, sig);
            return status;
        }
    }

    params.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS |
                        UCP_MEM_MAP_PARAM_FIELD_LENGTH;
    params.address    = sig->address;
    params.length     = length;
    status            = ucp_mem_map(context, &params, &sig->memh);
    if (status != UCS_OK) {
        ucs_error("cannot register %zu bytes of signal memory: %s",
                  length, ucs_status_string(status));
        sig->memh = NULL;
        gda_ft_ucp_signal_free(context, sig);
        return status;
    }
    return UCS_OK;
}

void gda_ft_ucp_signal_free(ucp_context_h context,
                            gda_ft_ucp_signal_mem_t *sig)
{
    if (sig->memh != NULL) {
        (void)ucp_mem_unmap(context, sig->memh);
    }
    if (sig->place == GDA_FT_UCP_PLACE_CUDA) {
        gda_ft_ucp_cuda_free(sig->address);
    } else {
        free(sig->address);
    }
    memset(sig, 0, sizeof(*sig));
}
