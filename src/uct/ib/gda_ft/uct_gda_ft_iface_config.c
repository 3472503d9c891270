/*
 * gda_ft UCT transport: the interface's settings (UCX_GDA_FT_*), and what
 * the interface derives from them and from its HCAs (see
 * uct_gda_ft_iface_config.h).
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "uct_gda_ft_iface_config.h"
#include "uct_gda_ft_ep.inl"
#include "uct_gda_ft_chan.h"

#include <gda_ft_uct_compat.h>
#include <ucs/debug/log.h>
#include <ucs/sys/math.h>
#include <ucs/time/time.h>
#include <math.h>


/* ---- configuration ------------------------------------------------------- */

/* DEADLINE=auto, see its documentation below */
#define UCT_GDA_FT_DEADLINE_HW_NS    (100000000ull)   /* 100 ms */
#define UCT_GDA_FT_DEADLINE_SOFT_NS  (1000000000ull)  /* 1 s */
/* PEER_TIMEOUT=auto is never below this */
#define UCT_GDA_FT_PEER_TIMEOUT_MIN_NS (100000000ull) /* 100 ms */

static const char *uct_gda_ft_chan_rings_names[] = {"mapped", "host", NULL};

ucs_config_field_t uct_gda_ft_iface_config_table[] = {
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
     "peer comes back on a new endpoint. Probes go only while someone may\n"
     "wait on the peer: its device channels were handed out, or an\n"
     "operation is in flight. auto: 1.5x DEADLINE, but at least two\n"
     "TIMEOUTs (a probe lost once is retransmitted after one) and 100ms,\n"
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

    {"DEVICE_DOORBELL_DEFER", "1024",
     "WQE building blocks a device channel's post may leave for the next\n"
     "post to ring the doorbell for, when that post has already reserved\n"
     "its place behind it (it rings at once, on the same path, for both).\n"
     "Posters that share a channel then ring it once for several posts:\n"
     "8 warps on a channel post 3x as fast (docs/device-datapath.md).\n"
     "0: every post rings. A post whose turn came without waiting (alone\n"
     "on the channel) always rings. A CPU thread descheduled between its\n"
     "reservation and its post holds the posts before it back as long.",
     ucs_offsetof(uct_gda_ft_iface_config_t, dev_db_defer),
     UCS_CONFIG_TYPE_UINT},

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

/* 4.096 us * 2^N >= timeout, as the IB QP timeout field encodes it */
static uint8_t uct_gda_ft_timeout_exp(double timeout)
{
    double n = ceil(log2(timeout / 4.096e-6));

    return (uint8_t)ucs_min(31, ucs_max(1, n));
}

/* Sizes of the queues from the configuration and the HCAs' limits */
ucs_status_t
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
    iface->config.dev_db_defer       = config->dev_db_defer;
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
