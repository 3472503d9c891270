/*
 * gda_ft UCT transport: interface, progress, transport registration.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "uct_gda_ft_ep.inl"
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


/* ---- configuration ------------------------------------------------------- */

/* DEADLINE=auto, see its documentation below */
#define UCT_GDA_FT_DEADLINE_HW_NS    (100000000ull)   /* 100 ms */
#define UCT_GDA_FT_DEADLINE_SOFT_NS  (1000000000ull)  /* 1 s */
/* PEER_TIMEOUT=auto is never below this */
#define UCT_GDA_FT_PEER_TIMEOUT_MIN_NS (100000000ull) /* 100 ms */

static const char *uct_gda_ft_chan_rings_names[] = {"mapped", "host", NULL};

static ucs_config_field_t uct_gda_ft_iface_config_table[] = {
    {"", "", NULL,
     ucs_offsetof(uct_gda_ft_iface_config_t, super),
     UCS_CONFIG_TYPE_TABLE(uct_iface_config_table)},

    {"FAILOVER", "y",
     "Give every channel of an endpoint a backup path on the backup HCA and\n"
     "move its traffic there when the primary path fails. With 'n', or\n"
     "without a backup HCA at either end, the channels have the primary\n"
     "path alone (and with 'n' no deadline): a failure of that path is an\n"
     "endpoint error.",
     ucs_offsetof(uct_gda_ft_iface_config_t, failover), UCS_CONFIG_TYPE_BOOL},

    {"RECOVERY_WINDOW", "500ms",
     "How long both ports of a failed path must be up before the channels\n"
     "re-arm it with the peer, probe it and fail back (doubled for a path\n"
     "that fails again soon after); also how long a channel without a\n"
     "deadline waits for the peer's word.",
     ucs_offsetof(uct_gda_ft_iface_config_t, recovery_window),
     UCS_CONFIG_TYPE_TIME},

    {"REARM_BACKOFF", "100ms",
     "Wait after a failover before the first re-arm attempt; it doubles with\n"
     "every failed attempt, and a path that fails again within ten recovery\n"
     "windows of a failback keeps the doubled value (flap damping).",
     ucs_offsetof(uct_gda_ft_iface_config_t, rearm_backoff),
     UCS_CONFIG_TYPE_TIME},

    {"REARM_BACKOFF_MAX", "10s",
     "Longest wait between re-arm attempts.",
     ucs_offsetof(uct_gda_ft_iface_config_t, rearm_backoff_max),
     UCS_CONFIG_TYPE_TIME},

    {"RESOLVE", "y",
     "After a failover, ask the peer (over the path that works) to fence its\n"
     "end of the failed path and report the PSN it expected next there, and\n"
     "replay only what it did not execute: atomics and sends in flight then\n"
     "happen exactly once, and only a fetching atomic whose reply was lost\n"
     "completes in doubt. New operations wait for the answer (one round trip\n"
     "on the backup path); without one in time (about one DEADLINE, two more\n"
     "while the peer's traffic still arrives), atomics and signals in flight\n"
     "complete in doubt and the rest is replayed. n: replay at once.",
     ucs_offsetof(uct_gda_ft_iface_config_t, resolve), UCS_CONFIG_TYPE_BOOL},

    {"DEADLINE", "auto",
     "A path that completes nothing for this long while operations are\n"
     "outstanding on it is failed over. auto: 100ms, 1.5x the default\n"
     "TIMEOUT: one retransmission of a dropped packet completes before it,\n"
     "while a dead link is left long before the hardware retry window\n"
     "(TIMEOUT x (RETRY_COUNT+1), about 0.54 s with the defaults) runs out;\n"
     "1s on a software HCA, whose engine is a CPU thread that a loaded\n"
     "machine may not schedule for longer than 100ms (a dead soft link is\n"
     "still left after the 0.54 s retry window, by its error completion).\n"
     "0 or inf disables the deadline (error completions still fail over).\n"
     "Every other interval is derived from it (device/gda_ft_timing.h):\n"
     "a channel starved behind others on a moving path is left after 8x;\n"
     "the peer's word about a path left is awaited DEADLINE + 1/8 + four\n"
     "guardian passes, 2x more while the peer is heard; and a peer silent\n"
     "on links that are up is waited for 64x before operations to it fail\n"
     "(NO_PATH, IN_DOUBT): silence may be starvation, not death.",
     ucs_offsetof(uct_gda_ft_iface_config_t, deadline),
     UCS_CONFIG_TYPE_TIME_UNITS},

    {"PEER_TIMEOUT", "auto",
     "A peer that answers nothing on any path for this long (its control\n"
     "writes, and liveness probes on idle control paths, unacknowledged,\n"
     "and none of its traffic heard) is given up: its device channels say\n"
     "GONE and posts and waits to it fail at once with PEER_GONE; a restarted\n"
     "peer comes back on a new endpoint. auto: 1.5x DEADLINE, but at least\n"
     "two TIMEOUTs (a probe lost once is retransmitted after one) and 100ms,\n"
     "or 1s on a software HCA (its engine threads, on a loaded machine, held\n"
     "answers back for over 150ms through a port failure). Paths whose\n"
     "local port is down say nothing of the peer. Without a deadline, with\n"
     "DEVICE_FAILOVER=n, and with inf, a peer is given up only when its\n"
     "endpoint fails.",
     ucs_offsetof(uct_gda_ft_iface_config_t, peer_timeout),
     UCS_CONFIG_TYPE_TIME_UNITS},

    {"GUARD_INTERVAL", "auto",
     "Longest time between two passes of the channels' guardian in progress:\n"
     "the peer's fence and re-arm questions and the answers to ours (what\n"
     "settles a switch with atomics in flight), re-arms, probes and\n"
     "failback. Each pass reads every endpoint's mailbox. The guardian runs\n"
     "every fiftieth of DEADLINE (at least every 10us) within it. auto: a\n"
     "tenth of DEADLINE, within [10us, 1ms] (1ms without a deadline).",
     ucs_offsetof(uct_gda_ft_iface_config_t, guard_interval),
     UCS_CONFIG_TYPE_TIME_UNITS},

    {"TIMEOUT", "67ms",
     "QP transport retransmission timeout; rounded up to 4.096us * 2^N.",
     ucs_offsetof(uct_gda_ft_iface_config_t, timeout), UCS_CONFIG_TYPE_TIME},

    {"RETRY_COUNT", "7",
     "QP transport retry count (0..7): retransmissions before the QP fails.",
     ucs_offsetof(uct_gda_ft_iface_config_t, retry_count),
     UCS_CONFIG_TYPE_UINT},

    {"RNR_RETRY", "7",
     "QP receiver-not-ready retry count (0..7, 7 is infinite).",
     ucs_offsetof(uct_gda_ft_iface_config_t, rnr_retry), UCS_CONFIG_TYPE_UINT},

    {"TRAFFIC_CLASS", "0",
     "Traffic class of the QPs, the device channels' included (set\n"
     "explicitly: DevX QPs do not inherit the port's default). On RoCE v2\n"
     "its upper six bits are the packets' DSCP (the PFC/ECN class of a\n"
     "lossless fabric); the service level is UCX_GDA_FT_MLX5_SL.",
     ucs_offsetof(uct_gda_ft_iface_config_t, traffic_class),
     UCS_CONFIG_TYPE_UINT},

    {"RX_QUEUE_LEN", "64",
     "Receive queue length of each of our ends of the peer's host channel (a\n"
     "power of 2): active messages the peer may send before it must wait for\n"
     "the receiver's progress. Each endpoint posts this many SEG_SIZE\n"
     "buffers on each path, so that a switch finds the backup ready.",
     ucs_offsetof(uct_gda_ft_iface_config_t, rx_queue_len),
     UCS_CONFIG_TYPE_UINT},

    {"RX_CQ_LEN", "16384",
     "Length of each receive completion queue of a path (a power of 2).\n"
     "Every receive WQE may complete into it, so one serves RX_CQ_LEN /\n"
     "RX_QUEUE_LEN endpoints; a path opens another for the next ones, and\n"
     "progress polls them all. Send completions go to the channels' own\n"
     "CQs: a flood of messages never delays them, nor the failover deadline\n"
     "that depends on them.",
     ucs_offsetof(uct_gda_ft_iface_config_t, rx_cq_len), UCS_CONFIG_TYPE_UINT},

    {"TX_MAX_POLL", "16",
     "Receive completions polled per path in one progress call.",
     ucs_offsetof(uct_gda_ft_iface_config_t, max_poll), UCS_CONFIG_TYPE_UINT},

    {"SEG_SIZE", "8k",
     "Size of the bounce buffers of put_bcopy, get_bcopy and am_bcopy, and\n"
     "of the receive buffers of active messages (the largest am_bcopy).",
     ucs_offsetof(uct_gda_ft_iface_config_t, seg_size),
     UCS_CONFIG_TYPE_MEMUNITS},

    {"PRINT_BACKUP", "auto",
     "Print each interface's backup port when it opens, as a line of\n"
     "'ucx_info -d'; auto: only when the program is ucx_info.",
     ucs_offsetof(uct_gda_ft_iface_config_t, print_backup),
     UCS_CONFIG_TYPE_ON_OFF_AUTO},

    {"OOB_TX_QUEUE", "1m",
     "Out-of-band channel (device <hca>:oob): bytes an endpoint holds that\n"
     "its socket has not taken yet. am_bcopy returns UCS_ERR_NO_RESOURCE\n"
     "while a largest message (64 KiB and its 8-byte header) would not fit,\n"
     "until the interface progress has written them; at least that much.",
     ucs_offsetof(uct_gda_ft_iface_config_t, oob_tx_queue),
     UCS_CONFIG_TYPE_MEMUNITS},

    {"OOB_TX_MAX_MSGS", "256",
     "Out-of-band channel: messages an endpoint sends before the interface\n"
     "progress finds them all written to its socket. am_bcopy returns\n"
     "UCS_ERR_NO_RESOURCE beyond it, and pending requests wait for progress.",
     ucs_offsetof(uct_gda_ft_iface_config_t, oob_tx_max_msgs),
     UCS_CONFIG_TYPE_UINT},

    {"OOB_ASYNC_TICK", "100ms",
     "Out-of-band channel: interval at which UCX's async thread reads the\n"
     "connections itself, for asynchronous AM handlers whose socket event\n"
     "found the async context blocked (UCX defers such an event to the next\n"
     "progress). 0 disables it: such messages then wait for progress.",
     ucs_offsetof(uct_gda_ft_iface_config_t, oob_async_tick),
     UCS_CONFIG_TYPE_TIME_UNITS},

    {"DEVICE_CHANNELS", "0",
     "Device channels per endpoint, for GPU kernels (or CPU threads) that\n"
     "post through the device API: each a primary and a backup RC QP of\n"
     "their own (the primary alone without a backup HCA). 0: none; at most\n"
     "64. The endpoint address carries their count; their QP numbers go\n"
     "from endpoint to endpoint after it, over the control QPs, and the\n"
     "channels are handed out once both ends connected them. Channel 0,\n"
     "beside them, is the endpoint's host channel (its own RMA, atomics\n"
     "and active messages).",
     ucs_offsetof(uct_gda_ft_iface_config_t, dev_channels),
     UCS_CONFIG_TYPE_UINT},

    {"DEVICE_CHANNEL_RING", "1024",
     "Send ring of each device channel path, in 64-byte WQE building blocks\n"
     "(a power of 2, 64..16384): what posters may have in flight, and the\n"
     "largest replay.",
     ucs_offsetof(uct_gda_ft_iface_config_t, dev_channel_ring),
     UCS_CONFIG_TYPE_UINT},

    {"CTL_DIR", "/tmp",
     "Directory of the transport's control socket gda_ft-uct.<pid>.sock,\n"
     "which 'gda_ft_softctl counters' asks for every endpoint's counters,\n"
     "whatever the HCA provider; empty for none.",
     ucs_offsetof(uct_gda_ft_iface_config_t, ctl_dir),
     UCS_CONFIG_TYPE_STRING},

    {"DEVICE_FAILOVER", "y",
     "Whether device channels move to the backup path when the primary\n"
     "fails. With 'n' a channel waits for its primary as long as the HCA\n"
     "retries (TIMEOUT, RETRY_COUNT), then its posters get NO_PATH: what a\n"
     "device datapath without failover does. FAILOVER=n implies it.",
     ucs_offsetof(uct_gda_ft_iface_config_t, dev_failover),
     UCS_CONFIG_TYPE_BOOL},

    {"DEVICE_CHANNEL_RINGS", "mapped",
     "Where the device channels' rings are meant to be posted from:\n"
     " mapped - GPU kernels (and CPU threads): rings in whole pages of host\n"
     "          memory that the device API's host side maps into the GPU;\n"
     "          the HCA watches their doorbell records.\n"
     " host   - CPU threads only: they ring the HCA's doorbell.",
     ucs_offsetof(uct_gda_ft_iface_config_t, dev_channel_rings),
     UCS_CONFIG_TYPE_ENUM(uct_gda_ft_chan_rings_names)},

    {"DEVICE_CHANNEL_TARGETS", "host",
     "Where the rings of our ends of the peer's device channels live (they\n"
     "only respond: nobody posts on them, no GPU maps them):\n"
     " host   - host memory.\n"
     " mapped - whole pages of host memory, as DEVICE_CHANNEL_RINGS=mapped\n"
     "          (the software HCA's engine then stays awake while one\n"
     "          exists). Kept to measure the two side by side: the same\n"
     "          within noise on an H100 machine (docs/benchmarks.md).",
     ucs_offsetof(uct_gda_ft_iface_config_t, dev_channel_targets),
     UCS_CONFIG_TYPE_ENUM(uct_gda_ft_chan_rings_names)},

    GDA_FT_IFACE_MPOOL_CONFIG_FIELDS("TX_", -1, 64, "bounce",
                                     ucs_offsetof(uct_gda_ft_iface_config_t,
                                                  tx_mp), ""),

    GDA_FT_IFACE_MPOOL_CONFIG_FIELDS("RX_", -1, 256, "receive",
                                     ucs_offsetof(uct_gda_ft_iface_config_t,
                                                  rx_mp), ""),

    {NULL}
};


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

/* 4.096 us * 2^N >= timeout, as the IB QP timeout field encodes it */
static uint8_t uct_gda_ft_timeout_exp(double timeout)
{
    double n = ceil(log2(timeout / 4.096e-6));

    return (uint8_t)ucs_min(31, ucs_max(1, n));
}

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

/* Sizes of the queues from the configuration and the HCAs' limits */
static ucs_status_t
uct_gda_ft_iface_init_config(uct_gda_ft_iface_t *iface,
                             const uct_gda_ft_iface_config_t *config,
                             uct_gda_ft_md_t *md, uint8_t backup_port)
{
    uint64_t guard_ns;
    const gda_ft_hca_dev_attr_t *pattr =
            &md->dev[UCT_GDA_FT_PATH_PRIMARY]->hca->attr;
    const gda_ft_hca_dev_attr_t *battr =
            (backup_port != 0) ? &md->dev[UCT_GDA_FT_PATH_BACKUP]->hca->attr :
                                 pattr;
    /* an HCA played by CPU threads, which a loaded machine may not run */
    int cpu_engine = uct_gda_ft_hca_has(md->dev[UCT_GDA_FT_PATH_PRIMARY]->hca,
                                        GDA_FT_HCA_DEV_FLAG_CPU_ENGINE) ||
                     ((backup_port != 0) &&
                      uct_gda_ft_hca_has(md->dev[UCT_GDA_FT_PATH_BACKUP]->hca,
                                         GDA_FT_HCA_DEV_FLAG_CPU_ENGINE));

    if ((config->retry_count > 7) || (config->rnr_retry > 7) ||
        (config->traffic_class > 255)) {
        ucs_error("RETRY_COUNT=%u RNR_RETRY=%u (0..7) "
                  "TRAFFIC_CLASS=%u (0..255) out of range",
                  config->retry_count, config->rnr_retry,
                  config->traffic_class);
        return UCS_ERR_INVALID_PARAM;
    }

    if (config->max_poll == 0) {
        ucs_error("TX_MAX_POLL=%u (>0) out of range",
                  config->max_poll);
        return UCS_ERR_INVALID_PARAM;
    }

    if (config->seg_size < 64) {
        ucs_error("SEG_SIZE=%zu is too small", config->seg_size);
        return UCS_ERR_INVALID_PARAM;
    }

    if ((config->dev_channels > UCT_GDA_FT_WIRE_DEV_CHAN_MAX) ||
        (config->dev_channel_ring < 64) ||
        (config->dev_channel_ring > GDA_FT_CHAN_MAX_WQEBBS) ||
        !ucs_is_pow2(config->dev_channel_ring)) {
        ucs_error("DEVICE_CHANNELS=%u (0..%u per endpoint, beside its "
                  "host channel) or DEVICE_CHANNEL_RING=%u (a power of 2, "
                  "64..%u) out of range", config->dev_channels,
                  UCT_GDA_FT_WIRE_DEV_CHAN_MAX, config->dev_channel_ring,
                  GDA_FT_CHAN_MAX_WQEBBS);
        return UCS_ERR_INVALID_PARAM;
    }

    if ((config->rx_queue_len == 0) || !ucs_is_pow2(config->rx_queue_len) ||
        (config->rx_queue_len > ucs_min(pattr->max_rq_wqe,
                                        battr->max_rq_wqe)) ||
        (config->rx_queue_len > 32768) ||
        (config->rx_cq_len < config->rx_queue_len) ||
        !ucs_is_pow2(config->rx_cq_len)) {
        ucs_error("RX_QUEUE_LEN=%u (a power of 2, 1..%u) and "
                  "RX_CQ_LEN=%u (a power of 2, at least RX_QUEUE_LEN) out "
                  "of range", config->rx_queue_len,
                  ucs_min(32768, ucs_min(pattr->max_rq_wqe,
                                         battr->max_rq_wqe)),
                  config->rx_cq_len);
        return UCS_ERR_INVALID_PARAM;
    }

    /* A fetched value is read in one byte order whichever path ran it */
    iface->config.atomic_host_order =
            !!(pattr->flags & GDA_FT_HCA_DEV_FLAG_ATOMIC_HOST_ORDER);
    if (iface->config.atomic_host_order !=
        !!(battr->flags & GDA_FT_HCA_DEV_FLAG_ATOMIC_HOST_ORDER)) {
        ucs_error("%s and %s return 8-byte atomic results in "
                  "different byte orders: pair HCAs that answer alike",
                  pattr->info.name, battr->info.name);
        return UCS_ERR_UNSUPPORTED;
    }

    if (!config->failover || (config->deadline == UCS_TIME_INFINITY)) {
        iface->config.deadline_ns = 0;
    } else if (config->deadline == UCS_TIME_AUTO) {
        iface->config.deadline_ns = cpu_engine ?
                UCT_GDA_FT_DEADLINE_SOFT_NS : UCT_GDA_FT_DEADLINE_HW_NS;
    } else {
        iface->config.deadline_ns = (uint64_t)ucs_time_to_nsec(
                                            config->deadline);
    }
    if (config->guard_interval == UCS_TIME_AUTO) {
        guard_ns = gda_ft_timing_guard_ns(iface->config.deadline_ns);
    } else if (config->guard_interval == UCS_TIME_INFINITY) {
        ucs_error("GUARD_INTERVAL must be finite: the guardian "
                  "settles switches and fails back");
        return UCS_ERR_INVALID_PARAM;
    } else {
        guard_ns = (uint64_t)ucs_time_to_nsec(config->guard_interval);
    }
    iface->config.timeout       = uct_gda_ft_timeout_exp(config->timeout);
    if ((iface->config.deadline_ns == 0) || !config->dev_failover ||
        (config->peer_timeout == UCS_TIME_INFINITY)) {
        /* device channels that wait for the HCA give nobody up early */
        iface->config.peer_timeout_ns = 0;
    } else if (config->peer_timeout == UCS_TIME_AUTO) {
        /* two QP retransmission timeouts: a probe lost once still
         * answers */
        iface->config.peer_timeout_ns =
                ucs_max(cpu_engine ? UCT_GDA_FT_DEADLINE_SOFT_NS :
                                     UCT_GDA_FT_PEER_TIMEOUT_MIN_NS,
                        ucs_max((iface->config.deadline_ns * 3) / 2,
                                2 * uct_gda_ft_iface_retransmit_ns(iface)));
    } else {
        iface->config.peer_timeout_ns = (uint64_t)ucs_time_to_nsec(
                                                config->peer_timeout);
    }
    iface->config.retry_count   = config->retry_count;
    iface->config.rnr_retry     = config->rnr_retry;
    iface->config.traffic_class = config->traffic_class;
    iface->config.seg_size      = config->seg_size;
    iface->config.rx_queue_len  = config->rx_queue_len;
    iface->config.rx_cq_len     = config->rx_cq_len;
    iface->config.am_max_short  = ucs_min(config->seg_size,
                                          UCT_GDA_FT_MAX_SHORT);
    iface->config.max_poll      = config->max_poll;
    iface->config.resolve       = config->failover && config->resolve;
    iface->config.recovery_ns   = (uint64_t)(config->recovery_window * 1e9);
    iface->config.rearm_backoff_ns     = (uint64_t)(config->rearm_backoff *
                                                    1e9);
    iface->config.rearm_backoff_max_ns =
            ucs_max((uint64_t)(config->rearm_backoff_max * 1e9),
                    iface->config.rearm_backoff_ns);
    iface->config.cpu_engine    = cpu_engine;
    iface->config.soft_yield    =
            uct_gda_ft_hca_has(md->dev[UCT_GDA_FT_PATH_PRIMARY]->hca,
                               GDA_FT_HCA_DEV_FLAG_CPU_ENGINE);
    iface->config.dev_channels     = config->dev_channels;
    iface->config.dev_channel_ring = config->dev_channel_ring;
    iface->config.dev_channel_mapped = (config->dev_channel_rings == 0);
    iface->config.dev_target_mapped  = (config->dev_channel_targets == 0);
    iface->config.dev_failover     = config->failover && config->dev_failover;
    iface->config.num_channels     = 1 + config->dev_channels;
    iface->config.chan_guard_ns    =
            gda_ft_timing_chan_guard_ns(iface->config.deadline_ns, guard_ns);
    iface->config.max_rd_atomic = ucs_min(16, ucs_min(pattr->max_rd_atomic,
                                                      battr->max_rd_atomic));
    iface->config.max_msg       = ucs_min(UCT_GDA_FT_MAX_ZCOPY,
                                          ucs_min(pattr->max_msg_size,
                                                  battr->max_msg_size));
    /* the largest operation, a zero-copy transfer of max_msg bytes, is cut
     * into chunks of a WQEBB each; the ring holds two of them */
    iface->config.hchan_op_wqebbs  =
            ucs_max(2, ucs_div_round_up(iface->config.max_msg,
                                        UCT_GDA_FT_CHAN_MAX_CHUNK));
    iface->config.hchan_ring       =
            ucs_max(config->dev_channel_ring,
                    ucs_roundup_pow2(2 * iface->config.hchan_op_wqebbs));

    return UCS_OK;
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
